"""Functional random numbers with explicit keys (``rt.random``), in the manner of JAX's ``jax.random``.

A *key* is a uint32 tensor of shape ``(2,)``: the two 32-bit words ``(k0, k1)`` of a
Philox4x32-10 key.  Nothing is stateful: a sampler's values are a pure function of the key
(and of the arguments), and new keys come from :func:`split` and :func:`fold_in`.

Derivation scheme (``docs/random_keys.md``).  Write ``P_K(c0, c1, c2, c3)`` for the
Philox4x32-10 block (four uint32 words) of the counter ``(c0, c1, c2, c3)`` under the key
``K = (k0, k1)``; the *domain-d stream* of ``K`` is the blocks ``P_K(b mod 2**32, b >> 32, 0, d)``
for ``b = 0, 1, 2, ...``, flattened word by word.

* ``key(seed)`` is ``(seed mod 2**32, (seed >> 32) mod 2**32)`` (negative seeds modulo ``2**64``).
* Samplers read domain 0, which is exactly the backend's ``random_bits(k0 + 2**32 k1, n)``:
  ``uniform(key(s), shape)`` equals ``rt.rand(float32, shape, seed=s)`` and
  ``normal(key(s), shape, d)`` equals ``rt.randn(d, shape, seed=s)``.
* ``split(key, n)``: the first ``2n`` words of domain 1, child ``j`` = words ``2j, 2j+1``.
* ``fold_in(key, data)``: words 0 and 1 of ``P_K(data mod 2**32, (data >> 32) mod 2**32, 0, 2)``
  (``data`` modulo ``2**64``).
* Samplers that need several independent streams (rejection rounds, the two gammas of
  ``beta``) use sub-keys: words 0 and 1 of ``P_K(j, 0, 0, 3)`` for ``j = 0, 1, ...``.

Every derived key is the Philox block cipher applied to a distinct counter under the same key,
so keys from different domains, indices or data never coincide by construction and are as
independent as Philox outputs are.  ``split`` and ``fold_in`` compute Philox with tensor
operations on the key tensor (so they take the key's value through tensor operations); the
samplers read the key's two words as Python integers and call the backend's fast Philox
stream (``random_bits``), the same words bit for bit (tested).
"""
from __future__ import annotations

import builtins
import math
import struct
from typing import Any, Sequence

import runetensor as rt  # the public namespace (imported first: this module loads after it)

from . import _dtypes as D
from ._backend import get_backend
from ._dtypes import DType
from ._backend.contract import BatchedValueError, TracedValueError
from ._guards import check_true, check_values
from ._seeded_random import _MANT, _float_dtype, _randint, _randn, _uniform_handle
from ._creation import int_range
from ._tensor import Tensor, wrap
from ._validate import alloc_error, as_dtype, as_int, as_shape, broadcast_shapes, check_alloc
from ._seeded_random import _ROUND_STEP

__all__ = ["key", "split", "fold_in", "key_data", "uniform", "normal", "truncated_normal", "bernoulli",
           "categorical", "randint", "permutation", "choice", "shuffle", "gamma", "beta"]

_U32 = 1 << 32
_U64 = 1 << 64
_MASK32 = 0xFFFFFFFF
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
#: counter word 3 of each derivation domain
_DOMAIN_STREAM, _DOMAIN_SPLIT, _DOMAIN_FOLD, _DOMAIN_SUB = 0, 1, 2, 3


# ---------------------------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------------------------

def _u64_of(v: Any, fname: str, what: str) -> int:
    """An integer in ``[-2**63, 2**64)`` taken modulo ``2**64``."""
    s = as_int(v, fname, what)
    if not -(1 << 63) <= s < _U64:
        raise ValueError(f"{fname}: {what} {s} is out of range; expected an integer in [-2**63, 2**64)")
    return s % _U64


def key(seed: int) -> Tensor:
    """A random key from an integer seed: the uint32 tensor ``[seed mod 2**32, (seed >> 32) mod 2**32]``.

    Args:
        seed: an integer in ``[-2**63, 2**64)`` (negative seeds are taken modulo ``2**64``).
    Returns:
        A uint32 tensor of shape ``(2,)``; samplers given ``key(s)`` read the same Philox stream
        as the seeded functions given ``seed=s``.
    Raises:
        TypeError: if ``seed`` is not an integer.
        ValueError: if ``seed`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.random.key(42))
    [42, 0]
    >>> print(rt.random.key(-1))
    [4294967295, 4294967295]
    """
    s = _u64_of(seed, "key", "seed")
    return rt.create(D.uint32, [2], [s & _MASK32, s >> 32])


def _check_key(k: Any, fname: str) -> Tensor:
    if not isinstance(k, Tensor):
        raise TypeError(f"{fname}: key must be a uint32 tensor of shape (2,) (from rt.random.key), "
                        f"got {type(k).__name__}")
    if k.dtype is not D.uint32:
        raise TypeError(f"{fname}: key must have dtype uint32, got {k.dtype}")
    if tuple(k.shape) != (2,):
        raise ValueError(f"{fname}: key must have shape (2,), got {tuple(k.shape)}")
    return k


def key_data(k: Tensor) -> tuple[int, int]:
    """The two words ``(k0, k1)`` of a key as Python integers.

    Args:
        k: a key (uint32 tensor of shape ``(2,)``).
    Returns:
        ``(k0, k1)``; the Philox key (and the seed of the equivalent seeded functions) is
        ``k0 + 2**32 * k1``.
    Raises:
        TypeError, ValueError: if ``k`` is not a key.
        TypeError: (``TracedValueError``) on a key traced by ``rt.jit``: Python integers are read
            from the values, which a traced key does not have; the only function of this module
            that cannot run under jit (use the key tensor itself, ``k[0]``, ``k[1]``).

    >>> import runetensor as rt
    >>> rt.random.key_data(rt.random.key(2**32 + 5))
    (5, 1)
    """
    k = _check_key(k, "key_data")
    w = rt.to_array(k)
    return int(w[0]), int(w[1])


def _seed_of(k: Any, fname: str) -> int:
    """The 64-bit seed of the backend stream of key ``k`` (domain 0)."""
    _check_key(k, fname)
    w = rt.to_array(k)
    return int(w[0]) | (int(w[1]) << 32)


def _philox(k: Tensor, c0: Tensor, c1: Any, c2: Any, c3: Any) -> Tensor:
    """Philox4x32-10 blocks in tensor operations: counters ``(c0, c1, c2, c3)`` (uint64 tensors
    of shape ``(m,)`` or ints, values below ``2**32``) under the key tensor ``k`` -> ``(m, 4)`` uint32."""
    kk = rt.cast(k, D.uint64)
    k0, k1 = kk[0], kk[1]
    m = c0.shape[0]
    cs = [c if isinstance(c, Tensor) else rt.full(D.uint64, [m], c) for c in (c0, c1, c2, c3)]
    x0, x1, x2, x3 = cs
    for r in range(10):
        if r:
            k0 = rt.bitwise_and(k0 + _PHILOX_W[0], _MASK32)
            k1 = rt.bitwise_and(k1 + _PHILOX_W[1], _MASK32)
        p0 = x0 * _PHILOX_M[0]          # exact: both factors are below 2**32
        p1 = x2 * _PHILOX_M[1]
        x0, x1, x2, x3 = (rt.bitwise_xor(rt.bitwise_xor(rt.rshift(p1, 32), x1), k0),
                          rt.bitwise_and(p1, _MASK32),
                          rt.bitwise_xor(rt.bitwise_xor(rt.rshift(p0, 32), x3), k1),
                          rt.bitwise_and(p0, _MASK32))
    return rt.cast(rt.stack([x0, x1, x2, x3], axis=1), D.uint32)


def _domain_words(k: Tensor, domain: int, nwords: int) -> Tensor:
    """The first ``nwords`` words of the domain-``domain`` stream of key ``k`` (uint32, 1-d)."""
    blocks = (nwords + 3) // 4
    b = rt.arange(D.uint64, 0, blocks, 1)
    out = _philox(k, rt.bitwise_and(b, _MASK32), rt.rshift(b, 32), 0, domain)
    return rt.reshape(out, [4 * blocks])[:nwords]


def split(key: Tensor, num: int = 2) -> Tensor:
    """``num`` new keys from a key: the first ``2 * num`` words of the key's domain-1 Philox stream.

    Child ``j`` is words ``2j, 2j+1`` of the blocks ``P_K(b, 0, 0, 1)``; the children are
    independent of each other, of the parent's samples and of :func:`fold_in`'s keys.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        num: how many keys, ``>= 0``.
    Returns:
        A uint32 tensor of shape ``(num, 2)``; ``split(key, num)[j]`` is a key.
    Raises:
        TypeError: if ``key`` is not a uint32 tensor, or ``num`` is not an integer.
        ValueError: if ``key`` does not have shape ``(2,)``, or ``num < 0``.

    >>> import runetensor as rt
    >>> k1, k2 = rt.random.split(rt.random.key(0))
    >>> k1.shape, k1.dtype
    ((2,), rt.uint32)
    >>> rt.to_array(rt.random.split(rt.random.key(0), 3)[:2]) == rt.to_array(rt.random.split(rt.random.key(0)))
    True
    """
    k = _check_key(key, "split")
    n = as_int(num, "split", "num")
    if n < 0:
        raise ValueError(f"split: num must be >= 0, got {n}")
    if n > (1 << 40):
        raise ValueError(f"split: num={n} is too large; expected at most 2**40")
    return rt.reshape(_domain_words(k, _DOMAIN_SPLIT, 2 * n), [n, 2])


def fold_in(key: Tensor, data: Any) -> Tensor:
    """A new key from a key and an integer: words 0, 1 of ``P_K(data mod 2**32, data >> 32, 0, 2)``.

    Different ``data`` give independent keys (as if indexing an endless :func:`split`).

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        data: an integer in ``[-2**63, 2**64)`` (taken modulo ``2**64``), or a 0-d integer tensor.
    Returns:
        A key.
    Raises:
        TypeError: if ``key`` is not a uint32 tensor, or ``data`` is not an integer.
        ValueError: if ``key`` does not have shape ``(2,)``, or ``data`` is out of range.

    >>> import runetensor as rt
    >>> k = rt.random.fold_in(rt.random.key(0), 7)
    >>> k.shape, k.dtype
    ((2,), rt.uint32)
    >>> rt.to_array(k) != rt.to_array(rt.random.fold_in(rt.random.key(0), 8))
    True
    """
    k = _check_key(key, "fold_in")
    if isinstance(data, Tensor):
        if not data.dtype.is_int or data.ndim != 0:
            raise TypeError(f"fold_in: data must be an integer or a 0-d integer tensor, got a {data.dtype} "
                            f"tensor of shape {tuple(data.shape)}")
        d = rt.reshape(rt.cast(data, D.uint64), [1])   # two's-complement wrap: modulo 2**64
        lo, hi = rt.bitwise_and(d, _MASK32), rt.rshift(d, 32)
    else:
        v = _u64_of(data, "fold_in", "data")
        lo, hi = rt.full(D.uint64, [1], v & _MASK32), rt.full(D.uint64, [1], v >> 32)
    return rt.reshape(_philox(k, lo, hi, 0, _DOMAIN_FOLD), [4])[:2]


def _sub(k: Tensor, j: int) -> Tensor:
    """Sub-key ``j`` of ``k``: words 0, 1 of ``P_K(j, 0, 0, 3)`` (``0 <= j < 2**32``), a key tensor."""
    c = rt.full(D.uint64, [1], j)
    return rt.reshape(_philox(k, c, 0, 0, _DOMAIN_SUB), [4])[:2]


# ---------------------------------------------------------------------------------------------
# argument helpers
# ---------------------------------------------------------------------------------------------

def _shape(shape: Any, fname: str) -> tuple[int, ...]:
    return as_shape(shape, fname)


def _is_num(v: Any) -> bool:
    return isinstance(v, (builtins.int, builtins.float)) and not isinstance(v, builtins.bool)


def _num(v: Any, fname: str, what: str) -> Any:
    """A Python float for a real number, or a tensor as is."""
    if isinstance(v, Tensor):
        if v.dtype.kind not in "fiu":
            raise TypeError(f"{fname}: {what} must be a real number or a real tensor, got a {v.dtype} tensor")
        return v
    if isinstance(v, builtins.bool) or not isinstance(v, (builtins.int, builtins.float)):
        try:
            return builtins.float(v)  # NumPy scalars
        except (TypeError, ValueError):
            raise TypeError(f"{fname}: {what} must be a real number or a tensor, got {type(v).__name__} {v!r}") \
                from None
    return builtins.float(v)


def _shape_of(v: Any) -> tuple[int, ...]:
    return tuple(v.shape) if isinstance(v, Tensor) else ()


def _result_shape(shape: Any, params: Sequence[Any], fname: str) -> tuple[int, ...]:
    """``shape`` (checked to broadcast every parameter's shape to it) or, when None, the parameters'
    broadcast shape."""
    pshape = broadcast_shapes(*[_shape_of(p) for p in params], fname=fname) if params else ()
    if shape is None:
        return pshape
    shp = _shape(shape, fname)
    try:
        full = broadcast_shapes(shp, pshape, fname=fname)
    except ValueError:
        full = None
    if full != shp:
        raise ValueError(f"{fname}: shape {shp} is not compatible with the parameters' broadcast shape {pshape}; "
                         "the parameters must broadcast to shape")
    return shp


def _f32_below(x: float) -> float:
    """The largest float32 strictly below the float32 value ``x`` (finite)."""
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    if x > 0:
        b -= 1
    elif x == 0:
        b = 0x80000001
    else:
        b += 1
    return struct.unpack("<f", struct.pack("<I", b))[0]


def _compute_dtype(d: DType) -> DType:
    return D.float64 if d is D.float64 else D.float32


def _words(k: Tensor, n: int, fname: str) -> Tensor:
    """The first ``n`` words (uint32, 1-d) of domain 0 of key ``k``: the backend's stream for a key
    with one value, the same words by Philox in tensor operations for a batch of keys (under
    ``rt.vmap``, where the key is not one pair of Python ints)."""
    try:
        seed = _seed_of(k, fname)
    except BatchedValueError:
        return _domain_words(k, 0, n)
    be = get_backend()
    return wrap(be.random_bits(seed, n), D.uint32, be)


def _uniform01_words(k: Tensor, shp: tuple[int, ...], d: DType) -> Tensor:
    """``_uniform01`` in tensor operations (the contract's ``random_uniform`` formulas, bit for bit)."""
    n = math.prod(shp)
    if d is D.float64:
        w = rt.reshape(_domain_words(k, 0, 2 * n), [n, 2])
        hi = rt.cast(rt.rshift(w[:, 0], 5), D.float64)
        lo = rt.cast(rt.rshift(w[:, 1], 6), D.float64)
        return rt.reshape((hi * 67108864.0 + lo) * 2.0 ** -53, list(shp))
    u = rt.cast(rt.rshift(_domain_words(k, 0, n), 8), D.float32) * 2.0 ** -24
    if d is not D.float32:
        r = rt.cast(u, d)
        u = rt.where(r >= 1.0, rt.full(d, [], 1.0 - 2.0 ** -(_MANT[d.name] + 1)), r)
    return rt.reshape(u, list(shp))


def _uniform01(k: Tensor, shp: tuple[int, ...], d: DType, fname: str) -> Tensor:
    """Uniform [0, 1) values of float dtype ``d`` from domain 0 of key ``k`` (as ``rt.rand``)."""
    try:
        seed = _seed_of(k, fname)
    except BatchedValueError:
        return _uniform01_words(k, shp, d)
    be = get_backend()
    n = math.prod(shp)
    try:
        return wrap(be.reshape(_uniform_handle(be, seed, n, d), shp), d, be)
    except MemoryError:
        raise alloc_error(fname, shp, d) from None


def _open01(k: Tensor, n: int, fname: str) -> Tensor:
    """``n`` float64 uniforms in the open interval (0, 1): ``(m + 0.5) * 2**-53`` for the 53-bit ``m``."""
    u = _uniform01(k, (n,), D.float64, fname)
    return u + 2.0 ** -54


# ---------------------------------------------------------------------------------------------
# samplers
# ---------------------------------------------------------------------------------------------

def uniform(key: Tensor, shape: Sequence[int] = (), dtype: Any = D.float32, minval: Any = 0.0,
            maxval: Any = 1.0) -> Tensor:
    """Uniform random values in ``[minval, maxval)``.

    ``u`` is ``rt.rand``'s uniform on ``[0, 1)`` (24 random bits for float32, 53 for float64),
    and the value is ``minval + u * (maxval - minval)`` computed in float32 (float64 for
    float64), then rounded to ``dtype``.  With scalar bounds and float32/float64 the result
    is clamped below ``maxval`` (the product can round up to it); for low-precision dtypes
    and tensor bounds, rounding can reach ``maxval``.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        shape: the result's shape (default ``()``); tensor bounds must broadcast to it.
        dtype: a real floating dtype (default float32).
        minval: the lower bound (a number or a tensor), inclusive.
        maxval: the upper bound (a number or a tensor), exclusive.
    Returns:
        A new tensor of ``shape`` and ``dtype``.
    Raises:
        TypeError: for a bad key, a non-float dtype or non-numeric bounds.
        ValueError: for a bad key shape or ``shape``, or scalar bounds that are not finite with
            ``minval <= maxval``.

    >>> import runetensor as rt
    >>> k = rt.random.key(0)
    >>> u = rt.random.uniform(k, (2, 3))
    >>> u.shape, u.dtype
    ((2, 3), rt.float32)
    >>> rt.to_array(u) == rt.to_array(rt.rand(rt.float32, [2, 3], seed=0))
    True
    >>> v = rt.random.uniform(k, (1000,), rt.float64, minval=-2, maxval=3)
    >>> -2 <= rt.item(rt.min(v)) and rt.item(rt.max(v)) < 3
    True
    """
    fname = "uniform"
    _check_key(key, fname)
    d = _float_dtype(dtype, fname)
    lo, hi = _num(minval, fname, "minval"), _num(maxval, fname, "maxval")
    scalars = not isinstance(lo, Tensor) and not isinstance(hi, Tensor)
    if scalars:
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise ValueError(f"uniform: expected finite bounds with minval <= maxval, got minval={lo}, "
                             f"maxval={hi}")
    shp = check_alloc(_result_shape(shape, [lo, hi], fname), D.float64, fname)
    if scalars and lo == 0.0 and hi == 1.0:
        return _uniform01(key, shp, d, fname)
    cd = _compute_dtype(d)
    u = _uniform01(key, shp, cd, fname)
    if scalars:
        r = u * (hi - lo) + lo
        if hi > lo:
            top = math.nextafter(hi, -math.inf) if cd is D.float64 else _f32_below(struct.unpack(
                "<f", struct.pack("<f", hi))[0]) if abs(hi) < 3.4e38 else hi
            r = rt.clip(r, lo, top) if top >= lo else r
    else:
        lo_t = rt.cast(lo, cd) if isinstance(lo, Tensor) else lo
        hi_t = rt.cast(hi, cd) if isinstance(hi, Tensor) else hi
        r = u * (hi_t - lo_t) + lo_t
        r = rt.broadcast_to(r, shp) if tuple(r.shape) != shp else r
        r = rt.contiguous(r)
    return rt.cast(r, d) if d is not cd else r


def normal(key: Tensor, shape: Sequence[int] = (), dtype: Any = D.float32) -> Tensor:
    """Standard normal random values (mean 0, variance 1): ``rt.randn``'s Box-Muller values.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        shape: the result's shape (default ``()``).
        dtype: a real floating dtype (default float32).
    Returns:
        A new tensor; ``normal(key(s), shape, d)`` equals ``rt.randn(d, shape, seed=s)``.
    Raises:
        TypeError: for a bad key or a non-float dtype.
        ValueError: for a bad key shape or ``shape``.

    >>> import runetensor as rt
    >>> z = rt.random.normal(rt.random.key(0), (4,), rt.float64)
    >>> print(z)
    [-0.090473, -1.00513, -0.923834, -2.51295]
    """
    fname = "normal"
    _check_key(key, fname)
    d = _float_dtype(dtype, fname)
    shp = check_alloc(_shape(shape, fname), D.float64 if d is D.float64 else D.float32, fname)
    try:
        seed = _seed_of(key, fname)
    except BatchedValueError:
        return _normal_words(key, shp, d)
    try:
        return _randn(d, shp, seed, math.prod(shp))
    except MemoryError:
        raise alloc_error(fname, shp, d) from None


def _normal_words(k: Tensor, shp: tuple[int, ...], d: DType) -> Tensor:
    """``normal`` in tensor operations for a batch of keys: ``rt.randn``'s Box-Muller on the same words."""
    n = math.prod(shp)
    cd = D.float64 if d is D.float64 else D.float32
    pairs = (n + 1) // 2
    u = rt.reshape(_uniform01_words(k, (2 * pairs,), cd), [pairs, 2])
    u1 = 1.0 - rt.contiguous(u[:, 0])
    theta = rt.contiguous(u[:, 1]) * (2.0 * math.pi)
    r = rt.sqrt(rt.log(u1) * -2.0)
    out = rt.reshape(rt.stack([r * rt.cos(theta), r * rt.sin(theta)], axis=1), [2 * pairs])[:n]
    out = rt.reshape(out, list(shp))
    return out if cd is d else rt.cast(out, d)


def _check_prob(p: Any, fname: str, what: str = "p") -> Any:
    p = _num(p, fname, what)
    if isinstance(p, Tensor):
        if not p.dtype.is_float:
            p = rt.cast(p, D.float64)
        if p.size:  # a run-time guard under rt.jit
            check_true(rt.logical_and(p >= 0, p <= 1),
                       lambda: ValueError(f"{fname}: every {what} must be in [0, 1] (and not NaN)"))
    elif not 0.0 <= p <= 1.0:
        raise ValueError(f"{fname}: {what} must be in [0, 1], got {p}")
    return p


def bernoulli(key: Tensor, p: Any = 0.5, shape: Sequence[int] | None = None) -> Tensor:
    """Random booleans, True with probability ``p``.

    Element ``i`` is True when word ``i`` of the key's stream, times ``2**-32``, is below ``p``
    (so the probability is ``ceil(p * 2**32) / 2**32``, within ``2**-32`` of ``p``; exactly 0
    and 1 for ``p`` 0 and 1).

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        p: the probability of True, a number or a tensor with values in ``[0, 1]``.
        shape: the result's shape; ``p`` must broadcast to it.  None (default): ``p``'s shape.
    Returns:
        A new bool tensor.
    Raises:
        TypeError: for a bad key or a non-numeric ``p``.
        ValueError: for a bad key shape or ``shape``, ``p`` outside ``[0, 1]``, or a ``shape``
            that ``p`` does not broadcast to.

    >>> import runetensor as rt
    >>> b = rt.random.bernoulli(rt.random.key(0), 0.3, (10000,))
    >>> b.dtype, abs(rt.item(rt.mean(rt.cast(b, rt.float64))) - 0.3) < 0.02
    (rt.bool, True)
    """
    fname = "bernoulli"
    _check_key(key, fname)
    p = _check_prob(p, fname)
    shp = check_alloc(_result_shape(shape, [p], fname), D.float64, fname)
    n = math.prod(shp)
    try:
        w = rt.reshape(_words(key, n, fname), list(shp))
        u = rt.cast(w, D.float64) * 2.0 ** -32       # exact: multiples of 2**-32 in [0, 1)
        if isinstance(p, Tensor):
            p = rt.cast(p, D.float64)
        return rt.contiguous(rt.broadcast_to(u < p, shp))
    except MemoryError:
        raise alloc_error(fname, shp, D.bool) from None


# ---------------------------------------------------------------------------------------------
# rejection sampling (truncated_normal, gamma)
# ---------------------------------------------------------------------------------------------

#: rejection rounds before giving up (each round redraws only the rejected elements)
_MAX_ROUNDS = 1000
#: rounds under rt.jit, where the loop cannot stop when all are accepted: every sampler here accepts
#: with probability at least about 0.49 per round (the worst truncated-normal interval, ``[0, 2.51]``),
#: so an element is left after 48 rounds with probability below 1e-14
_JIT_ROUNDS = 48


def _rejection(k: Tensor, n: int, nu: int, propose: Any, fname: str) -> Tensor:
    """``n`` float64 values by vectorised rejection sampling, element by element.

    Round ``j`` draws ``nu`` open-interval uniforms for every element from sub-key ``j`` of ``k``
    (words 0, 1 of ``P_K(j, 0, 0, 3)``; element ``i`` takes row ``i``); ``propose(u, idx)``
    returns ``(value, accepted)`` given ``u`` of shape ``(n, nu)`` and ``idx = arange(n)``.  Each
    element keeps the value of the first round that accepts it.  No step depends on how many
    were accepted, so the same values come out for a key under ``rt.vmap`` as for it alone.
    """
    out = rt.zeros(D.float64, [n])
    if n == 0:
        return out
    idx = rt.arange(D.int64, 0, n, 1)
    pending = rt.full(D.bool, [n], True)
    rounds = _MAX_ROUNDS
    for j in range(_MAX_ROUNDS):
        u = rt.reshape(_open01(_sub(k, j), n * nu, fname), [n, nu])
        z, ok = propose(u, idx)
        take = rt.logical_and(pending, ok)
        out = rt.where(take, z, out)
        pending = rt.logical_and(pending, rt.logical_not(ok))
        if j + 1 >= rounds:
            break
        try:
            if _all_true(rt.logical_not(pending)):
                return out
        except TracedValueError:
            # under rt.jit: a fixed number of rounds (a round leaves an accepted element as it
            # is, so the values are the eager ones), then a run-time check that none is left
            rounds = _JIT_ROUNDS
    check_true(rt.logical_not(pending), lambda: RuntimeError(
        f"{fname}: elements still rejected after {rounds} rounds"))
    return out


def _flat_param(v: Any, shp: tuple[int, ...]) -> Any:
    """A parameter as a flat float64 tensor of ``prod(shp)`` elements (a float stays a float)."""
    if not isinstance(v, Tensor):
        return v
    return rt.reshape(rt.contiguous(rt.broadcast_to(rt.cast(v, D.float64), shp)), [math.prod(shp)])


def _pick(v: Any, idx: Tensor) -> Any:
    return rt.take(v, idx) if isinstance(v, Tensor) else v


def _require(cond: Any, error: Any) -> None:
    """Raise ``error()`` unless ``cond`` (a bool or a bool tensor) is all True: now, or for a
    tensor traced by ``rt.jit`` at each run of the program (a run-time guard)."""
    if isinstance(cond, Tensor):
        if cond.size:
            check_true(rt.cast(cond, D.bool), error)
    elif not cond:
        raise error()


def _all_true(cond: Any) -> bool:
    if isinstance(cond, Tensor):
        if cond.size == 0:
            return True
        r = cond._backend.value_range(rt.cast(cond, D.bool)._data)  # every lane under vmap
        return r is None or builtins.bool(r[0])
    return builtins.bool(cond)


def truncated_normal(key: Tensor, lower: Any, upper: Any, shape: Sequence[int] | None = None,
                     dtype: Any = D.float32) -> Tensor:
    """Standard normal values conditioned on ``lower <= x <= upper``, by exact rejection sampling.

    Robert's (1995) samplers, chosen per element after mirroring ``[lower, upper]`` to
    ``lower >= 0`` when ``upper <= 0``: for an interval containing 0, normal proposals (uniform
    proposals accepted with ``exp(-z**2/2)`` when it is narrower than ``sqrt(2 pi)``); for a
    tail ``[a, b]`` with ``a >= 0``, translated exponential proposals of rate
    ``(a + sqrt(a**2 + 4)) / 2`` (uniform proposals for short intervals).  Every method is
    exact; the tails are right however far out (``lower = 30`` works).  Computed in float64,
    rounded once to ``dtype``.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        lower: the lower bound (a number, ``-inf``, or a tensor).
        upper: the upper bound (a number, ``inf``, or a tensor); ``lower < upper``.
        shape: the result's shape; the bounds must broadcast to it.  None (default): their
            broadcast shape.
        dtype: a real floating dtype (default float32).
    Returns:
        A new tensor of ``shape`` and ``dtype``.
    Raises:
        TypeError: for a bad key, a non-float dtype or non-numeric bounds.
        ValueError: if ``lower < upper`` fails somewhere (or a bound is NaN), or for a bad shape.

    >>> import runetensor as rt
    >>> x = rt.random.truncated_normal(rt.random.key(0), -1.0, 2.0, (1000,))
    >>> x.dtype, -1 <= rt.item(rt.min(x)) and rt.item(rt.max(x)) <= 2
    (rt.float32, True)
    >>> t = rt.random.truncated_normal(rt.random.key(1), 8.0, float('inf'), (3,), rt.float64)
    >>> bool(rt.item(rt.min(t)) >= 8)
    True
    """
    fname = "truncated_normal"
    _check_key(key, fname)
    d = _float_dtype(dtype, fname)
    lo, hi = _num(lower, fname, "lower"), _num(upper, fname, "upper")
    _require(lo < hi, lambda: ValueError(f"truncated_normal: expected lower < upper (and no NaN), got "
                                         f"lower={lower!r}, upper={upper!r}"))
    shp = check_alloc(_result_shape(shape, [lo, hi], fname), D.float64, fname)
    n = math.prod(shp)
    a0, b0 = _flat_param(lo, shp), _flat_param(hi, shp)

    def prop(u: Tensor, idx: Tensor) -> tuple[Tensor, Tensor]:
        a, b = _pick(a0, idx), _pick(b0, idx)
        m = idx.shape[0]
        a = rt.broadcast_to(rt.asarray(a, dtype=D.float64) if not isinstance(a, Tensor) else a, [m])
        b = rt.broadcast_to(rt.asarray(b, dtype=D.float64) if not isinstance(b, Tensor) else b, [m])
        flip = b <= 0.0
        a, b = rt.where(flip, -b, a), rt.where(flip, -a, b)
        u0, u1 = u[:, 0], u[:, 1]
        w = b - a
        # the interval contains 0: normal proposals, or uniform ones when narrow
        zn = rt.sqrt(rt.log(u0) * -2.0) * rt.cos(u1 * (2.0 * math.pi))
        okn = rt.logical_and(zn >= a, zn <= b)
        zu = a + w * u0
        mid_uniform = w < math.sqrt(2.0 * math.pi)
        oku_mid = u1 <= rt.exp(zu * zu * -0.5)
        # a tail [a, b], a >= 0: exponential proposals, or uniform ones when short
        sq = rt.sqrt(a * a + 4.0)
        alpha = (a + sq) * 0.5
        ze = a - rt.log(u0) / alpha
        oke = rt.logical_and(u1 <= rt.exp((ze - alpha) * (ze - alpha) * -0.5), ze <= b)
        short = w < (2.0 * math.sqrt(math.e)) / (a + sq) * rt.exp((a * a - a * sq) * 0.25)
        oku_tail = u1 <= rt.exp((a * a - zu * zu) * 0.5)
        tail = a >= 0.0
        z = rt.where(tail, rt.where(short, zu, ze), rt.where(mid_uniform, zu, zn))
        ok = rt.where(tail, rt.where(short, oku_tail, oke), rt.where(mid_uniform, oku_mid, okn))
        return rt.where(flip, -z, z), ok

    try:
        r = _rejection(key, n, 2, prop, fname)
    except MemoryError:
        raise alloc_error(fname, shp, d) from None
    r = rt.reshape(r, shp)
    return rt.cast(r, d) if d is not D.float64 else r


def _log_gamma(k: Tensor, a: Any, shp: tuple[int, ...], fname: str) -> Tensor:
    """Logarithms of Gamma(a, 1) samples (float64, shape ``shp``): Marsaglia and Tsang (2000) for
    ``a >= 1``; for ``a < 1``, ``Gamma(a + 1) * U**(1/a)`` (in logs: ``+ log(U) / a``)."""
    n = math.prod(shp)
    a0 = _flat_param(a, shp)

    def prop(u: Tensor, idx: Tensor) -> tuple[Tensor, Tensor]:
        al = _pick(a0, idx)
        m = idx.shape[0]
        if not isinstance(al, Tensor):
            al = rt.full(D.float64, [m], al)
        small = al < 1.0
        ab = rt.where(small, al + 1.0, al)
        dd = ab - 1.0 / 3.0
        c = 1.0 / rt.sqrt(dd * 9.0)
        x = rt.sqrt(rt.log(u[:, 0]) * -2.0) * rt.cos(u[:, 1] * (2.0 * math.pi))
        t = x * c + 1.0
        ok = t > 0.0
        tp = rt.where(ok, t, 1.0)
        v = tp * tp * tp
        logv = rt.log(v)
        ok = rt.logical_and(ok, rt.log(u[:, 2]) < x * x * 0.5 + dd - dd * v + dd * logv)
        lz = rt.log(dd) + logv
        lz = rt.where(small, lz + rt.log(u[:, 3]) / al, lz)
        return lz, ok

    return rt.reshape(_rejection(k, n, 4, prop, fname), shp)


def _check_positive(v: Any, fname: str, what: str) -> Any:
    v = _num(v, fname, what)
    _require(rt.logical_and(v > 0, v < math.inf) if isinstance(v, Tensor) else 0 < v < math.inf,
             lambda: ValueError(f"{fname}: {what} must be positive and finite, got {v!r}"))
    return v


def gamma(key: Tensor, a: Any, shape: Sequence[int] | None = None, dtype: Any = D.float32) -> Tensor:
    """Gamma(a, 1) random values (density ``x**(a-1) exp(-x) / Gamma(a)``, mean and variance ``a``).

    Marsaglia and Tsang's (2000) squeeze-rejection method for ``a >= 1`` (acceptance above
    95%), and ``Gamma(a + 1) * U**(1/a)`` for ``a < 1``; computed in float64 and rounded once.
    Very small ``a`` (below about 0.01 for float32) gives many values that underflow to 0,
    as the distribution does; :func:`beta` works in logarithms and is unaffected.  Scale by
    ``theta`` yourself for Gamma(a, theta).

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        a: the shape parameter, a positive finite number or tensor.
        shape: the result's shape; ``a`` must broadcast to it.  None (default): ``a``'s shape.
        dtype: a real floating dtype (default float32).
    Returns:
        A new tensor of ``shape`` and ``dtype``.
    Raises:
        TypeError: for a bad key, a non-float dtype or a non-numeric ``a``.
        ValueError: if ``a`` is not positive and finite, or for a bad shape.

    >>> import runetensor as rt
    >>> g = rt.random.gamma(rt.random.key(0), 3.0, (20000,), rt.float64)
    >>> abs(rt.item(rt.mean(g)) - 3.0) < 0.05
    True
    """
    fname = "gamma"
    _check_key(key, fname)
    d = _float_dtype(dtype, fname)
    a = _check_positive(a, fname, "a")
    shp = check_alloc(_result_shape(shape, [a], fname), D.float64, fname)
    try:
        r = rt.exp(_log_gamma(key, a, shp, fname))
    except MemoryError:
        raise alloc_error(fname, shp, d) from None
    return rt.cast(r, d) if d is not D.float64 else r


def beta(key: Tensor, a: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = D.float32) -> Tensor:
    """Beta(a, b) random values (density ``x**(a-1) (1-x)**(b-1) / B(a, b)`` on ``[0, 1]``).

    ``X / (X + Y)`` for ``X ~ Gamma(a)`` and ``Y ~ Gamma(b)`` drawn from the two keys of
    ``split(key)``, computed from their logarithms (``1 / (1 + exp(log Y - log X))``) so that
    small ``a``, ``b`` give no 0/0.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        a, b: the shape parameters, positive finite numbers or tensors.
        shape: the result's shape; ``a`` and ``b`` must broadcast to it.  None (default): their
            broadcast shape.
        dtype: a real floating dtype (default float32).
    Returns:
        A new tensor of ``shape`` and ``dtype``, values in ``[0, 1]``.
    Raises:
        TypeError: for a bad key, a non-float dtype or non-numeric parameters.
        ValueError: if a parameter is not positive and finite, or for a bad shape.

    >>> import runetensor as rt
    >>> x = rt.random.beta(rt.random.key(0), 2.0, 5.0, (20000,), rt.float64)
    >>> abs(rt.item(rt.mean(x)) - 2 / 7) < 0.01
    True
    """
    fname = "beta"
    _check_key(key, fname)
    d = _float_dtype(dtype, fname)
    a = _check_positive(a, fname, "a")
    b = _check_positive(b, fname, "b")
    shp = check_alloc(_result_shape(shape, [a, b], fname), D.float64, fname)
    ka, kb = split(key, 2)
    try:
        lx = _log_gamma(ka, a, shp, fname)
        ly = _log_gamma(kb, b, shp, fname)
        r = 1.0 / (rt.exp(ly - lx) + 1.0)
    except MemoryError:
        raise alloc_error(fname, shp, d) from None
    return rt.cast(r, d) if d is not D.float64 else r


# ---------------------------------------------------------------------------------------------
# discrete samplers
# ---------------------------------------------------------------------------------------------

def randint(key: Tensor, shape: Sequence[int], minval: int, maxval: int, dtype: Any = D.int32) -> Tensor:
    """Uniform random integers in ``[minval, maxval)``: ``rt.randint``'s unbiased rejection method.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        shape: the result's shape.
        minval: the smallest value (an int, inclusive).
        maxval: one past the largest value (an int, exclusive).
        dtype: an integer dtype (default int32).
    Returns:
        A new tensor; ``randint(key(s), shape, lo, hi, d)`` equals
        ``rt.randint(d, shape, lo, seed=s, high=hi)``.
    Raises:
        TypeError: for a bad key, a non-integer dtype, or non-integer bounds.
        ValueError: if ``minval >= maxval``, or the range does not fit ``dtype``.

    >>> import runetensor as rt
    >>> print(rt.random.randint(rt.random.key(1), (6,), -3, 3))
    [1, -3, -1, -2, 2, 1]
    """
    fname = "randint"
    _check_key(key, fname)
    d = as_dtype(dtype, fname)
    if not d.is_int:
        raise TypeError(f"randint: dtype must be an integer type (int4 ... uint64), got {d}")
    shp = check_alloc(_shape(shape, fname), D.uint64, fname)
    lo = as_int(minval, fname, "minval")
    hi = as_int(maxval, fname, "maxval")
    if lo >= hi:
        raise ValueError(f"randint: minval must be less than maxval, got minval={lo} >= maxval={hi}")
    dmin, dmax = int_range(d)
    if lo < dmin or hi - 1 > dmax:
        raise ValueError(f"randint: range [{lo}, {hi}) does not fit {d}; expected {dmin} <= minval and "
                         f"maxval <= {dmax + 1}")
    try:
        seed = _seed_of(key, fname)
    except BatchedValueError:  # under rt.jit or rt.vmap: the same values in tensor operations
        return _randint_words(key, d, shp, lo, hi)
    try:
        return _randint(d, shp, seed, lo, hi)
    except MemoryError:
        raise alloc_error(fname, shp, d) from None


#: rounds of randint's rejection under rt.jit (a round rejects an element with probability below 1/2)
_RANDINT_JIT_ROUNDS = 64


def _randint_words(key: Tensor, d: DType, shp: tuple[int, ...], lo: int, hi: int) -> Tensor:
    """:func:`randint` for a traced key, in tensor operations, value for value the backend's
    (``runetensor._seeded_random._uniform_below``): the ``x mod r`` of the key's words, an element
    rejected in round ``j`` taking the next accepted word of the stream of seed
    ``seed + j * 0x9E3779B97F4A7C15`` in row-major order of the rejected ones (a cumulative count
    instead of a compaction); a fixed number of rounds, then a run-time check that none is left."""
    n = math.prod(shp)
    r = hi - lo
    wide = r > (1 << 32)
    span = _U64 if wide else 1 << 32
    wd = D.uint64 if wide else D.uint32
    k64 = rt.cast(_check_key(key, "randint"), D.uint64)
    seed = rt.bitwise_or(k64[0], rt.lshift(k64[1], 32))

    def draw(j: int) -> Tensor:
        s = seed if j == 0 else seed + rt.full(D.uint64, [], (j * _ROUND_STEP) % _U64)  # wraps mod 2**64
        kj = rt.cast(rt.stack([rt.bitwise_and(s, _MASK32), rt.rshift(s, 32)]), D.uint32)
        if not wide:
            return _domain_words(kj, 0, n)
        w = rt.reshape(rt.cast(_domain_words(kj, 0, 2 * n), D.uint64), [n, 2])
        return rt.bitwise_or(rt.lshift(w[:, 0], 32), w[:, 1])

    x = draw(0)
    if r == span or n == 0:
        v = x
    else:
        limit = span - (span % r)
        rr = rt.full(wd, [], r)
        v = x % rr
        if limit != span:
            lim = rt.full(wd, [], limit)
            ok = x < lim
            for j in range(1, _RANDINT_JIT_ROUNDS + 1):
                bad = rt.logical_not(ok)
                rank = rt.cumsum(rt.cast(bad, D.int64)) - 1  # the k-th rejected element takes word k
                xj = rt.take(draw(j), rt.maximum(rank, 0))
                okj = xj < lim
                take = rt.logical_and(bad, okj)
                v = rt.where(take, xj % rr, v)
                ok = rt.logical_or(ok, take)
            check_true(ok, lambda: RuntimeError(f"randint: elements still rejected after {_RANDINT_JIT_ROUNDS} "
                                                f"rounds"))
    if d is D.uint64:
        h = rt.cast(v, D.uint64)
        if lo:
            h = h + rt.full(D.uint64, [], lo)
    else:
        h = rt.cast(v, D.int64)  # two's-complement wrap: (v + lo) mod 2**64 is the value, and it fits int64
        if lo:
            h = h + rt.full(D.int64, [], lo)
        if d is not D.int64:
            h = rt.cast(h, d)
    return rt.reshape(h, list(shp))


def _gumbel(k: Tensor, shp: tuple[int, ...], fname: str) -> Tensor:
    """Standard Gumbel noise ``-log(-log(u))`` (float64) from open uniforms of the key's stream."""
    u = _open01(k, math.prod(shp), fname)
    return rt.reshape(-rt.log(-rt.log(u)), shp)


def categorical(key: Tensor, logits: Tensor, axis: int = -1, shape: Sequence[int] | None = None) -> Tensor:
    """Random category indices with probabilities ``softmax(logits)`` along ``axis``.

    The Gumbel-max method: ``argmax(logits + G)`` along ``axis`` for independent standard Gumbel
    ``G = -log(-log(U))`` (53-bit uniforms in the open interval ``(0, 1)``, float64).  A logit of
    ``-inf`` is never drawn.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        logits: a real float tensor of unnormalised log-probabilities.
        axis: the categories' axis (default -1).
        shape: the result's shape; the batch shape (``logits.shape`` without ``axis``) must
            broadcast to it.  None (default): the batch shape.
    Returns:
        A new int32 tensor of ``shape`` with values in ``[0, logits.shape[axis])``.
    Raises:
        TypeError: for a bad key or non-float logits.
        ValueError: for an axis out of range, an empty category axis, or a bad shape.

    >>> import runetensor as rt
    >>> logits = rt.log(rt.create(rt.float32, [3], [0.2, 0.3, 0.5]))
    >>> c = rt.random.categorical(rt.random.key(0), logits, shape=(5,))
    >>> c.shape, c.dtype
    ((5,), rt.int32)
    """
    fname = "categorical"
    _check_key(key, fname)
    if not isinstance(logits, Tensor):
        raise TypeError(f"categorical: logits must be a tensor, got {type(logits).__name__}")
    if not logits.dtype.is_float:
        raise TypeError(f"categorical: logits must have a real floating dtype, got {logits.dtype}")
    if logits.ndim == 0:
        raise ValueError("categorical: logits must have at least one dimension (the categories)")
    ax = as_int(axis, fname, "axis")
    if not -logits.ndim <= ax < logits.ndim:
        raise ValueError(f"categorical: axis {ax} is out of range for logits of rank {logits.ndim}")
    ax %= logits.ndim
    ncat = logits.shape[ax]
    if ncat == 0:
        raise ValueError("categorical: the category axis is empty")
    lg = rt.moveaxis(rt.cast(logits, D.float64), ax, -1)
    batch = tuple(lg.shape[:-1])
    if shape is None:
        shp = batch
    else:
        shp = _shape(shape, fname)
        try:
            ok = broadcast_shapes(shp, batch, fname=fname) == shp
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"categorical: shape {shp} is not compatible with the batch shape {batch} "
                             "(logits.shape without axis)")
    check_alloc(shp + (ncat,), D.float64, fname)
    g = _gumbel(key, shp + (ncat,), fname)
    return rt.cast(rt.argmax(g + lg, axis=-1), D.int32)


def _sort_keys(k: Tensor, shp: tuple[int, ...], fname: str) -> Tensor:
    """Random uint64 sort keys of shape ``shp`` (words ``2i``, ``2i+1`` of the key's stream)."""
    n = math.prod(shp)
    w = rt.reshape(_words(k, 2 * n, fname), [n, 2])
    hi = rt.lshift(rt.cast(rt.contiguous(w[:, 0]), D.uint64), 32)
    return rt.reshape(rt.bitwise_or(hi, rt.cast(rt.contiguous(w[:, 1]), D.uint64)), shp)


def _random_perm(k: Tensor, n: int, fname: str) -> Tensor:
    """A uniformly random permutation of ``0 .. n-1`` (int32): the stable argsort of ``n`` random 64-bit words."""
    return rt.argsort(_sort_keys(k, (n,), fname))


def permutation(key: Tensor, x: Any, axis: int = 0, independent: bool = False) -> Tensor:
    """A random permutation of ``range(x)``, or of a tensor's slices along ``axis``.

    The permutation is the stable argsort of independent random 64-bit words (one per
    position): uniform over all ``n!`` orders except for ties of two 64-bit words, which
    happen with probability below ``n**2 / 2**65``.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        x: an integer ``n >= 0`` (permute ``0 .. n-1``) or a tensor (permute along ``axis``).
        axis: the axis of a tensor ``x`` (default 0).
        independent: for a tensor, permute every 1-d slice along ``axis`` independently
            (default False: one permutation of the whole slices).
    Returns:
        An int32 tensor for an integer ``x``; a new tensor of ``x``'s shape and dtype otherwise.
    Raises:
        TypeError: for a bad key, or an ``x`` that is neither an int nor a tensor.
        ValueError: for a negative ``x``, or an axis out of range (a 0-d tensor has none).

    >>> import runetensor as rt
    >>> p = rt.random.permutation(rt.random.key(0), 6)
    >>> sorted(rt.to_array(p))
    [0, 1, 2, 3, 4, 5]
    >>> t = rt.random.permutation(rt.random.key(0), rt.arange(rt.int32, 0, 6, 1))
    >>> rt.to_array(t) == rt.to_array(p)
    True
    """
    return _permute(key, x, axis, independent, "permutation")


def _permute(key: Tensor, x: Any, axis: int, independent: bool, fname: str) -> Tensor:
    _check_key(key, fname)
    if not isinstance(x, Tensor):
        if isinstance(x, builtins.bool) or not isinstance(x, builtins.int) and not hasattr(x, "__index__"):
            raise TypeError(f"{fname}: x must be an integer or a tensor, got {type(x).__name__} {x!r}")
        n = as_int(x, fname, "x")
        if n < 0:
            raise ValueError(f"{fname}: x must be >= 0 for a permutation of range(x), got {n}")
        check_alloc((n,), D.uint64, fname)
        return _random_perm(key, n, fname)
    if x.ndim == 0:
        raise ValueError(f"{fname}: x must have at least one dimension, got a 0-d tensor")
    ax = as_int(axis, fname, "axis")
    if not -x.ndim <= ax < x.ndim:
        raise ValueError(f"{fname}: axis {ax} is out of range for a tensor of rank {x.ndim}")
    ax %= x.ndim
    if not independent:
        return rt.take(x, _random_perm(key, x.shape[ax], fname), axis=ax)
    order = rt.argsort(_sort_keys(key, tuple(x.shape), fname), axis=ax)
    return rt.take_along_axis(x, order, axis=ax)


def shuffle(key: Tensor, x: Tensor, axis: int = 0) -> Tensor:
    """``x`` with its slices along ``axis`` in a random order: ``permutation(key, x, axis)``.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        x: a tensor of at least one dimension.
        axis: the axis to shuffle (default 0).
    Returns:
        A new tensor of ``x``'s shape and dtype (``x`` is not modified).
    Raises:
        TypeError: for a bad key or a non-tensor ``x``.
        ValueError: for a 0-d ``x`` or an axis out of range.

    >>> import runetensor as rt
    >>> t = rt.random.shuffle(rt.random.key(3), rt.arange(rt.int32, 0, 5, 1))
    >>> sorted(rt.to_array(t))
    [0, 1, 2, 3, 4]
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"shuffle: x must be a tensor, got {type(x).__name__}")
    return _permute(key, x, axis, False, "shuffle")


def choice(key: Tensor, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0) -> Tensor:
    """Random elements of ``range(a)`` (or slices of a tensor ``a`` along ``axis``).

    With replacement: uniform indices by :func:`randint` (``p`` None) or Gumbel-max
    :func:`categorical` draws with ``log(p)`` (``p`` given).  Without replacement: the first
    entries of a :func:`permutation` (``p`` None), or the Gumbel-top-k trick (the ``k``
    largest ``log(p) + G``), which draws exactly as successive weighted draws without
    replacement would.

    Args:
        key: a key (uint32 tensor of shape ``(2,)``).
        a: an integer ``n >= 1`` (choose from ``0 .. n-1``) or a tensor (choose slices along ``axis``).
        shape: the shape of the draws (default ``()``: one draw).
        replace: draw with replacement (default True).
        p: None (uniform) or a 1-d tensor/sequence of ``n`` non-negative weights with a positive
            sum (normalised here).
        axis: the axis of a tensor ``a`` (default 0).
    Returns:
        int32 indices of ``shape`` for an integer ``a``; for a tensor, the chosen slices:
        shape ``a.shape[:axis] + shape + a.shape[axis+1:]``.
    Raises:
        TypeError: for a bad key or an ``a`` that is neither an int nor a tensor.
        ValueError: for an empty population, bad weights, an axis out of range, or more draws
            without replacement than there are (non-zero-weight) elements.

    >>> import runetensor as rt
    >>> c = rt.random.choice(rt.random.key(0), 10, (4,), replace=False)
    >>> len(set(rt.to_array(c))), c.dtype
    (4, rt.int32)
    """
    fname = "choice"
    _check_key(key, fname)
    if isinstance(a, Tensor):
        if a.ndim == 0:
            raise ValueError("choice: a must be an integer or a tensor with at least one dimension")
        ax = as_int(axis, fname, "axis")
        if not -a.ndim <= ax < a.ndim:
            raise ValueError(f"choice: axis {ax} is out of range for a tensor of rank {a.ndim}")
        ax %= a.ndim
        n = a.shape[ax]
    else:
        if isinstance(a, builtins.bool) or not isinstance(a, builtins.int) and not hasattr(a, "__index__"):
            raise TypeError(f"choice: a must be an integer or a tensor, got {type(a).__name__} {a!r}")
        n = as_int(a, fname, "a")
    if n <= 0:
        raise ValueError(f"choice: the population is empty (size {n}); expected at least one element")
    shp = _shape(shape, fname)
    m = math.prod(shp)
    logp = None
    if p is not None:
        pt = p if isinstance(p, Tensor) else rt.asarray(list(p), dtype=D.float64)
        if pt.dtype.kind not in "fiu":
            raise TypeError(f"choice: p must hold real numbers, got {pt.dtype}")
        if tuple(pt.shape) != (n,):
            raise ValueError(f"choice: p must have shape ({n},), got {tuple(pt.shape)}")
        pt = rt.cast(pt, D.float64)
        bad_p = ValueError("choice: p must be non-negative and finite with a positive sum")
        _require(rt.logical_and(pt >= 0, pt < math.inf), lambda: bad_p)
        _require(rt.sum(pt) > 0, lambda: bad_p)
        logp = rt.log(pt / rt.sum(pt))
        if not replace:
            nz = rt.sum(rt.cast(pt > 0, D.int64))

            def enough(lo: Any, hi: Any) -> None:
                if m > lo:
                    raise ValueError(f"choice: cannot draw {m} elements without replacement from {lo} with "
                                     f"non-zero probability")

            check_values(nz, enough)
    if not replace and m > n:
        raise ValueError(f"choice: cannot draw {m} elements without replacement from a population of {n}")
    check_alloc(shp, D.uint64, fname)
    if replace:
        if logp is None:
            idx = randint(key, shp, 0, n, D.int32)
        else:
            idx = categorical(key, logp, shape=shp)
    else:
        if logp is None:
            order = _random_perm(key, n, fname)
        else:
            order = rt.argsort(_gumbel(key, (n,), fname) + logp, descending=True)
        idx = rt.reshape(rt.contiguous(order[:m]), shp)
    if not isinstance(a, Tensor):
        return rt.cast(idx, D.int32)
    picked = rt.take(a, rt.reshape(idx, [m]), axis=ax)
    return rt.reshape(picked, list(a.shape[:ax]) + list(shp) + list(a.shape[ax + 1:]))

# the __future__ import binds the name ``annotations``: not part of this namespace
del annotations
