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

from . import _dtypes as D
from ._backend import get_backend
from ._dtypes import DType
from ._random import _float_dtype, _randint, _randn, _uniform_handle
from ._creation import int_range
from ._tensor import Tensor, wrap
from ._validate import alloc_error, as_dtype, as_int, as_shape, broadcast_shapes, check_alloc

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

def _rt() -> Any:
    import runetensor as rt
    return rt


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
    return _rt().create(D.uint32, [2], [s & _MASK32, s >> 32])


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

    >>> import runetensor as rt
    >>> rt.random.key_data(rt.random.key(2**32 + 5))
    (5, 1)
    """
    k = _check_key(k, "key_data")
    w = _rt().to_array(k)
    return int(w[0]), int(w[1])


def _seed_of(k: Any, fname: str) -> int:
    """The 64-bit seed of the backend stream of key ``k`` (domain 0)."""
    _check_key(k, fname)
    w = _rt().to_array(k)
    return int(w[0]) | (int(w[1]) << 32)


def _philox(k: Tensor, c0: Tensor, c1: Any, c2: Any, c3: Any) -> Tensor:
    """Philox4x32-10 blocks in tensor operations: counters ``(c0, c1, c2, c3)`` (uint64 tensors
    of shape ``(m,)`` or ints, values below ``2**32``) under the key tensor ``k`` -> ``(m, 4)`` uint32."""
    rt = _rt()
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
    rt = _rt()
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
    return _rt().reshape(_domain_words(k, _DOMAIN_SPLIT, 2 * n), [n, 2])


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
    rt = _rt()
    k = _check_key(key, "fold_in")
    if isinstance(data, Tensor):
        if data.dtype.kind not in "iu" or data.ndim != 0:
            raise TypeError(f"fold_in: data must be an integer or a 0-d integer tensor, got a {data.dtype} "
                            f"tensor of shape {tuple(data.shape)}")
        d = rt.reshape(rt.cast(data, D.uint64), [1])   # two's-complement wrap: modulo 2**64
        lo, hi = rt.bitwise_and(d, _MASK32), rt.rshift(d, 32)
    else:
        v = _u64_of(data, "fold_in", "data")
        lo, hi = rt.full(D.uint64, [1], v & _MASK32), rt.full(D.uint64, [1], v >> 32)
    return rt.reshape(_philox(k, lo, hi, 0, _DOMAIN_FOLD), [4])[:2]


def _subkeys(k: Tensor, n: int) -> list[int]:
    """``n`` sub-key seeds (words 0, 1 of ``P_K(j, 0, 0, 3)``) as 64-bit ints."""
    rt = _rt()
    j = rt.arange(D.uint64, 0, n, 1)
    w = rt.to_array(_philox(k, j, 0, 0, _DOMAIN_SUB))
    return [int(r[0]) | (int(r[1]) << 32) for r in w]


def _sub(k: Tensor, j: int) -> Tensor:
    """Sub-key ``j`` of ``k`` as a key tensor."""
    s = _subkeys(k, j + 1)[j]
    return _rt().create(D.uint32, [2], [s & _MASK32, s >> 32])


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


def _uniform01(k: Tensor, shp: tuple[int, ...], d: DType, fname: str) -> Tensor:
    """Uniform [0, 1) values of float dtype ``d`` from domain 0 of key ``k`` (as ``rt.rand``)."""
    seed = _seed_of(k, fname)
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
    rt = _rt()
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
    seed = _seed_of(key, fname)
    try:
        return _randn(d, shp, seed, math.prod(shp))
    except MemoryError:
        raise alloc_error(fname, shp, d) from None


def _check_prob(p: Any, fname: str, what: str = "p") -> Any:
    rt = _rt()
    p = _num(p, fname, what)
    if isinstance(p, Tensor):
        if p.dtype.kind != "f":
            p = rt.cast(p, D.float64)
        if p.size and not rt.item(rt.all(rt.logical_and(p >= 0, p <= 1))):
            raise ValueError(f"{fname}: every {what} must be in [0, 1] (and not NaN)")
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
    rt = _rt()
    seed = _seed_of(key, fname)
    be = get_backend()
    n = math.prod(shp)
    try:
        w = wrap(be.reshape(be.random_bits(seed, n), shp), D.uint32, be)
        u = rt.cast(w, D.float64) * 2.0 ** -32       # exact: multiples of 2**-32 in [0, 1)
        if isinstance(p, Tensor):
            p = rt.cast(p, D.float64)
        return rt.contiguous(rt.broadcast_to(u < p, shp))
    except MemoryError:
        raise alloc_error(fname, shp, D.bool) from None
