"""Random tensors: ``rand randn randint dropout`` (seed section "random").

Every function is *counter-based*: its values are a pure function of the
seed and of each element's position, computed from the backend primitive
``random_bits(seed, n)`` (Philox4x32-10; word ``i`` depends only on
``(seed, i)``).  There is no hidden generator state, so

* the same ``seed`` gives the same values on every run, machine and backend;
* a result never depends on what was drawn before (no state advances);
* ``seed=None`` draws a fresh 64-bit seed from the operating system
  (:func:`secrets.randbits`), giving fresh values on every call;
* element ``i`` of a result depends only on ``(seed, i)``: a longer request
  with the same seed extends a shorter one (``rand(d, [5], seed=s)`` starts
  with ``rand(d, [3], seed=s)``).

The methods (uniform from 24 / 53 random bits, Box-Muller normals,
rejection-sampled integers) are described in ``docs/random.md``.
"""
from __future__ import annotations

import builtins
import math
import secrets
from typing import Any, Sequence

from . import _dtypes as D
from ._backend import get_backend
from ._creation import int_range
from ._dtypes import DType
from ._tensor import Tensor, as_tensor, attach, wrap
from ._validate import alloc_error, as_dtype, as_int, as_shape, check_alloc

__all__ = ["rand", "randn", "randint", "dropout"]

_U64 = 1 << 64
#: the golden-ratio increment that separates the keys of rejection rounds
_ROUND_STEP = 0x9E3779B97F4A7C15
#: significand bits (without the implicit bit) of each real float type
_MANT = {"float16": 10, "bfloat16": 7, "float8_e4m3": 3, "float8_e5m2": 2, "float32": 23, "float64": 52}


def _seed(seed: Any, fname: str) -> int:
    """The 64-bit key for ``seed`` (fresh from the OS when None)."""
    if seed is None:
        return secrets.randbits(64)
    s = as_int(seed, fname, "seed")
    if not -(1 << 63) <= s < _U64:
        raise ValueError(f"{fname}: seed {s} is out of range; expected an integer in [-2**63, 2**64)")
    return s % _U64


def _float_dtype(dtype: Any, fname: str) -> DType:
    d = as_dtype(dtype, fname)
    if d.kind != "f":
        raise TypeError(f"{fname}: dtype must be a real floating type (float16, float32, float64, bfloat16, "
                        f"float8_e4m3, float8_e5m2), got {d}")
    return d


def _words(be: Any, key: int, n: int, per: int) -> Any:
    """``n * per`` random words as an ``(n, per)`` uint32 handle (``(n,)`` when ``per`` is 1)."""
    w = be.random_bits(key, n * per)
    return w if per == 1 else be.reshape(w, (n, per))


def _column(be: Any, h: Any, j: int) -> Any:
    """Column ``j`` of a 2-d handle (a view)."""
    return be.view_index(h, (slice(0, h.shape[0], 1), j))


def _uniform_handle(be: Any, key: int, n: int, d: DType) -> Any:
    """``n`` uniform values in [0, 1) of real float dtype ``d`` (a 1-d handle)."""
    if d is D.float64:
        # 53 bits from two words: (a >> 5) * 2**26 + (b >> 6), scaled by 2**-53 (the contract's
        # random_uniform; all exact in float64)
        return be.random_uniform(key, n, D.float64)
    # 24 bits: (w >> 8) * 2**-24, exact in float32
    u = be.random_uniform(key, n, D.float32)
    if d is D.float32:
        return u
    # low precision: round the float32 value to d; a value that rounds up to 1
    # becomes the largest value of d below 1, so the result stays in [0, 1)
    r = be.cast(u, d)
    below_one = 1.0 - 2.0 ** -(_MANT[d.name] + 1)
    return be.where(be.binary("ge", r, 1.0), be.full((), below_one, d), r)


def _float_args(dtype: Any, shape: Any, seed: Any, fname: str) -> tuple[DType, tuple[int, ...], int, int]:
    """The checked (dtype, shape, seed, element count) of ``rand``/``randn``, checked in that order."""
    d = _float_dtype(dtype, fname)
    shp = check_alloc(as_shape(shape, fname), D.float64 if d is D.float64 else D.float32, fname)
    return d, shp, _seed(seed, fname), math.prod(shp)


def rand(dtype: Any, shape: Sequence[int], seed: int | None = None, backend: Any = None) -> Tensor:
    """Uniform random values in ``[0, 1)``.

    float32 values use 24 random bits, float64 values 53 bits (two words);
    float16, bfloat16 and the float8 types are drawn in float32 and rounded
    (values that would round to 1 become the largest value below 1).

    Args:
        dtype: a real floating dtype.
        shape: the result's shape.
        seed: an integer in ``[-2**63, 2**64)``; the same seed gives the same
            values everywhere.  None (default) draws a fresh seed.
    Returns:
        A new C-contiguous tensor.
    Raises:
        TypeError: if ``dtype`` is not a real floating type, or ``seed`` is not an int.
        ValueError: for a bad shape or an out-of-range seed.

    >>> import runetensor as rt
    >>> t = rt.rand(rt.float32, [2, 3], seed=42)
    >>> t.shape, t.dtype
    ((2, 3), rt.float32)
    >>> rt.to_array(t) == rt.to_array(rt.rand(rt.float32, [2, 3], seed=42))
    True
    >>> print(rt.rand(rt.float64, [3], seed=0))
    [0.399046, 0.735713, 0.972241]
    """
    d, shp, key, n = _float_args(dtype, shape, seed, "rand")
    be = get_backend(backend)
    try:
        return wrap(be.reshape(_uniform_handle(be, key, n, d), shp), d, be)
    except MemoryError:
        raise alloc_error("rand", shp, d) from None


def randn(dtype: Any, shape: Sequence[int], seed: int | None = None, backend: Any = None) -> Tensor:
    """Standard normal random values (mean 0, variance 1), by the Box-Muller transform.

    Pairs of uniforms ``(u1, u2)`` give the pair ``r cos(2 pi u2), r sin(2 pi u2)``
    with ``r = sqrt(-2 log(1 - u1))``; float64 results use 53-bit uniforms and
    float64 arithmetic, the other float types float32 arithmetic, rounded once.

    Args:
        dtype: a real floating dtype.
        shape: the result's shape.
        seed: as in :func:`rand`.
    Returns:
        A new C-contiguous tensor.
    Raises:
        TypeError: if ``dtype`` is not a real floating type, or ``seed`` is not an int.
        ValueError: for a bad shape or an out-of-range seed.

    >>> import runetensor as rt
    >>> print(rt.randn(rt.float64, [4], seed=0))
    [-0.090473, -1.00513, -0.923834, -2.51295]
    """
    d, shp, key, n = _float_args(dtype, shape, seed, "randn")
    try:
        return _randn(d, shp, key, n, backend)
    except MemoryError:
        raise alloc_error("randn", shp, d) from None


def _randn(d: DType, shp: tuple[int, ...], key: int, n: int, backend: Any = None) -> Tensor:
    be = get_backend(backend)
    cd = D.float64 if d is D.float64 else D.float32
    pairs = (n + 1) // 2
    u = be.reshape(_uniform_handle(be, key, 2 * pairs, cd), (pairs, 2))
    # the two columns copied out once, so that every elementwise step runs on contiguous data
    # (the backends' fast paths: threads, reused buffers); the same operations as on the columns
    u1 = be.binary("sub", 1.0, be.contiguous(_column(be, u, 0)))  # in (0, 1]: log is finite
    theta = be.binary("mul", be.contiguous(_column(be, u, 1)), 2.0 * math.pi)
    r = be.unary("sqrt", be.binary("mul", be.unary("log", u1), -2.0))
    out = be.empty((pairs, 2), cd)
    be.assign(_column(be, out, 0), be.binary("mul", r, be.unary("cos", theta)))
    be.assign(_column(be, out, 1), be.binary("mul", r, be.unary("sin", theta)))
    flat = be.view_index(be.reshape(out, (2 * pairs,)), (slice(0, n, 1),))
    h = be.reshape(be.contiguous(flat), shp)
    if cd is not d:
        h = be.cast(h, d)
    return wrap(h, d, be)


def _uniform_below(be: Any, key: int, n: int, r: int) -> Any:
    """``n`` values uniform on ``[0, r)``, ``1 <= r <= 2**64``, without bias.

    Each element takes a ``B``-bit number ``x`` (``B = 32``, one word, when
    ``r <= 2**32``; else ``B = 64``, two words); ``x mod r`` is accepted when
    ``x < 2**B - (2**B mod r)`` (below that limit every residue is equally
    likely).  The elements rejected in a round retry in the next round, which
    draws from the key ``seed + j * 0x9E3779B97F4A7C15``: the ``k``-th rejected
    element (in row-major order) takes number ``k`` of that round's stream, so
    element ``i`` still depends only on the seed and the elements before it.  A
    round rejects with probability below 1/2 and costs time in proportion to
    the elements it redraws.  Returns a uint32 (``B = 32``) or uint64 handle.
    """
    wide = r > (1 << 32)
    span = _U64 if wide else 1 << 32

    def draw(k: int, m: int) -> Any:
        if not wide:
            return _words(be, k, m, 1)
        w = _words(be, k, m, 2)
        hi = be.binary("lshift", be.cast(_column(be, w, 0), D.uint64), 32)
        return be.binary("bitwise_or", hi, be.cast(_column(be, w, 1), D.uint64))

    x = draw(key, n)
    if r == span:
        return x
    limit = span - (span % r)
    result = be.binary("mod", x, r)
    if limit == span or n == 0:
        return result
    ok = be.binary("lt", x, limit)
    for j in range(1, 1024):
        if be.to_list(be.reduce("all", ok, (0,), False)):
            return result
        (bad,) = be.nonzero(be.unary("logical_not", ok))
        xj = draw((key + j * _ROUND_STEP) % _U64, bad.shape[0])
        okj = be.binary("lt", xj, limit)
        be.scatter(result, (bad,), be.where(okj, be.binary("mod", xj, r), be.gather(result, (bad,))))
        be.scatter(ok, (bad,), okj)
    return result  # pragma: no cover  (below 2**-1000 per element: the plain residue stays)


def randint(dtype: Any, shape: Sequence[int], low: int, seed: int | None = None, high: int = 10,
            backend: Any = None) -> Tensor:
    """Uniform random integers in ``[low, high)`` (``high`` exclusive).

    Works for every integer dtype, including ranges up to ``2**64`` wide for
    int64/uint64.  Values come from 32 random bits per element (64 for ranges
    wider than ``2**32``) by rejection sampling, so there is no modulo bias at
    all (see ``docs/random.md``).

    Args:
        dtype: an integer dtype (int4 ... uint64).
        shape: the result's shape.
        low: the smallest value (inclusive).
        seed: as in :func:`rand`.
        high: one past the largest value (exclusive); default 10.
    Returns:
        A new C-contiguous tensor.
    Raises:
        TypeError: if ``dtype`` is not an integer type, or ``low``/``high``/``seed`` are not ints.
        ValueError: if ``low >= high``, or ``[low, high)`` does not fit the dtype.

    >>> import runetensor as rt
    >>> t = rt.randint(rt.int32, [2, 4], 0, seed=7, high=5)
    >>> t.shape, all(0 <= v < 5 for v in rt.to_array(t))
    ((2, 4), True)
    >>> print(rt.randint(rt.int32, [6], -3, seed=1, high=3))
    [1, -3, -1, -2, 2, 1]
    """
    d = as_dtype(dtype, "randint")
    if d.kind not in "iu":
        raise TypeError(f"randint: dtype must be an integer type (int4 ... uint64), got {d}")
    shp = check_alloc(as_shape(shape, "randint"), D.uint64, "randint")
    lo = as_int(low, "randint", "low")
    hi = as_int(high, "randint", "high")
    if lo >= hi:
        raise ValueError(f"randint: low must be less than high, got low={lo} >= high={hi}")
    dmin, dmax = int_range(d)
    if lo < dmin or hi - 1 > dmax:
        raise ValueError(f"randint: range [{lo}, {hi}) does not fit {d}; expected {dmin} <= low and "
                         f"high <= {dmax + 1}")
    key = _seed(seed, "randint")
    try:
        return _randint(d, shp, key, lo, hi, backend)
    except MemoryError:
        raise alloc_error("randint", shp, d) from None


def _randint(d: DType, shp: tuple[int, ...], key: int, lo: int, hi: int, backend: Any = None) -> Tensor:
    be = get_backend(backend)
    n = math.prod(shp)
    v = _uniform_below(be, key, n, hi - lo)       # uint32 or uint64 in [0, hi - lo)
    if d is D.uint64:
        if be.dtype(v) is not D.uint64:
            v = be.cast(v, D.uint64)
        h = be.binary("add", v, lo) if lo else v
    else:
        # two's-complement wrap: (v + lo) mod 2**64 is the value, and it fits int64
        h = be.cast(v, D.int64)
        if lo:
            h = be.binary("add", h, lo)
        if d is not D.int64:
            h = be.cast(h, d)
    return wrap(be.reshape(h, shp), d, be)


@attach()
def dropout(x: Tensor, *, seed: int | None = None, rate: float) -> Tensor:
    """Zero each element with probability ``rate``, scaling the rest by ``1 / (1 - rate)``.

    The expected value of every element is unchanged.  Element ``i`` is kept
    when random word ``i`` is at least ``ceil(rate * 2**32)``, so the mask
    depends only on ``seed`` and the element's row-major position.

    Args:
        x: a tensor of a real floating dtype (any layout; the result is a new tensor).
        seed: as in :func:`rand`; the same seed reproduces the same mask.
        rate: the drop probability, in ``[0, 1)`` (keyword only).
    Returns:
        A new tensor with ``x``'s shape and dtype.
    Raises:
        TypeError: if ``x`` is not of a real floating dtype, or ``rate`` is not a number.
        ValueError: if ``rate`` is not in ``[0, 1)``.

    >>> import runetensor as rt
    >>> y = rt.dropout(rt.ones(rt.float32, [8]), seed=3, rate=0.5)
    >>> sorted(set(rt.to_array(y))) in ([0.0, 2.0], [0.0], [2.0])
    True
    >>> print(rt.dropout(rt.ones(rt.float32, [8]), seed=3, rate=0.5))
    [2, 0, 2, 2, 0, 2, 0, 2]
    """
    x = as_tensor(x, "dropout")
    if x._dtype.kind != "f":
        raise TypeError(f"dropout: x must have a real floating dtype, got {x._dtype}")
    if isinstance(rate, builtins.bool) or not isinstance(rate, (builtins.int, builtins.float)):
        try:
            rate = builtins.float(rate)  # NumPy scalars, 0-d tensors
        except (TypeError, ValueError):
            raise TypeError(f"dropout: rate must be a number in [0, 1), got {type(rate).__name__} {rate!r}") \
                from None
    rate = builtins.float(rate)
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout: rate must be in [0, 1), got {rate}")
    key = _seed(seed, "dropout")
    be = x._backend
    d = x._dtype
    if rate == 0.0:
        return wrap(be.copy(x._data), d, be)
    n = x.size
    threshold = min(math.ceil(rate * 4294967296.0), 4294967295)
    try:
        keep = be.binary("ge", be.reshape(_words(be, key, n, 1), x.shape), threshold)
        scaled = be.binary("mul", x._data, 1.0 / (1.0 - rate))
        return wrap(be.where(keep, scaled, be.full((), 0, d)), d, be)
    except MemoryError:
        raise alloc_error("dropout", x.shape, d) from None
