"""The NumPy backend: handles are ``numpy.ndarray`` views.

A NumPy view already carries shape, strides and offset over a base buffer, so
every movement primitive is one NumPy call and every elementwise primitive is
one ufunc call on the common float32/float64/int path.  The types NumPy lacks
come from ml_dtypes (bfloat16, float8, int4, uint4); they are computed in a
wider type (float32, int8, uint8) and rounded back once.
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

import ml_dtypes
import numpy as np
from numpy.lib.array_utils import byte_bounds

from .. import _dtypes as D
from .._dtypes import DType
from .contract import Backend

# NumPy reports FP exceptions (x/0, overflow, invalid casts) as warnings from
# the frame that called the ufunc: this module.  The contract promises silent
# IEEE results, so we ignore them here, at no per-operation cost.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"runetensor\._backend\.numpy_backend")
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning,
                        module=r"runetensor\._backend\.numpy_backend")

NP_DTYPE: dict[DType, np.dtype] = {
    D.float16: np.dtype(np.float16), D.float32: np.dtype(np.float32), D.float64: np.dtype(np.float64),
    D.bfloat16: np.dtype(ml_dtypes.bfloat16), D.float8_e4m3: np.dtype(ml_dtypes.float8_e4m3fn),
    D.float8_e5m2: np.dtype(ml_dtypes.float8_e5m2), D.int4: np.dtype(ml_dtypes.int4),
    D.uint4: np.dtype(ml_dtypes.uint4), D.int8: np.dtype(np.int8), D.uint8: np.dtype(np.uint8),
    D.int16: np.dtype(np.int16), D.uint16: np.dtype(np.uint16), D.int32: np.dtype(np.int32),
    D.uint32: np.dtype(np.uint32), D.int64: np.dtype(np.int64), D.uint64: np.dtype(np.uint64),
    D.bool: np.dtype(np.bool_), D.complex64: np.dtype(np.complex64),
    D.complex128: np.dtype(np.complex128), D.object_: np.dtype(object),
}
RT_DTYPE: dict[np.dtype, DType] = {v: k for k, v in NP_DTYPE.items()}
_F32 = np.dtype(np.float32)
#: storage dtype -> the dtype ufuncs compute in (absent: compute natively)
_COMPUTE: dict[np.dtype, np.dtype] = {
    NP_DTYPE[D.bfloat16]: _F32, NP_DTYPE[D.float8_e4m3]: _F32, NP_DTYPE[D.float8_e5m2]: _F32,
    NP_DTYPE[D.int4]: np.dtype(np.int8), NP_DTYPE[D.uint4]: np.dtype(np.uint8),
}
_ACCUM: dict[np.dtype, np.dtype] = dict(_COMPUTE)
_ACCUM[np.dtype(np.float16)] = _F32


def _round_half_away(x, out=None):
    if x.dtype.kind not in "fc":
        return _copy_into(x, out)
    t = np.trunc(x)
    frac = x - t
    adj = np.where(np.abs(frac) >= 0.5, np.sign(x), 0).astype(x.dtype, copy=False)
    return np.add(t, adj, out=out)


def _copy_into(x, out):
    if out is None:
        return x.copy()
    out[...] = x
    return out


def _int_identity(fn):
    def f(x, out=None):
        if x.dtype.kind in "biu":
            return _copy_into(x, out)
        return fn(x, out=out)
    return f


def _recip(x, out=None):
    if x.dtype.kind in "iu":
        with np.errstate(all="ignore"):
            r = np.where(x == 0, 0, np.floor_divide(1, np.where(x == 0, 1, x))).astype(x.dtype)
            # integer 1/x truncates toward zero: 1 for 1, -1 for -1, 0 otherwise
        return _copy_into(r, out)
    return np.reciprocal(x, out=out)


def _sign(x, out=None):
    if x.dtype.kind == "b":
        return _copy_into(x, out)
    return np.sign(x, out=out)


_UNARY = {
    "neg": np.negative, "abs": np.absolute, "sign": _sign, "square": np.square, "sqrt": np.sqrt,
    "recip": _recip, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "trunc": _int_identity(np.trunc), "ceil": _int_identity(np.ceil),
    "floor": _int_identity(np.floor), "round": _round_half_away, "rint": _int_identity(np.rint),
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
    "bitwise_not": np.invert, "logical_not": np.logical_not, "conj": np.conjugate,
    "real": np.real, "imag": np.imag,
}
_UNARY_BOOL = frozenset({"isnan", "isinf", "isfinite", "signbit", "logical_not"})


def _div(a, b, out=None):
    dt = a.dtype if isinstance(a, np.ndarray) else b.dtype
    if dt.kind in "fc":
        return np.true_divide(a, b, out=out)
    if dt.kind == "u" or dt.kind == "b":
        return np.floor_divide(a, b, out=out)
    r = np.fmod(a, b)
    return np.floor_divide(np.subtract(a, r), b, out=out)


def _pow(a, b, out=None):
    dt = a.dtype if isinstance(a, np.ndarray) else b.dtype
    if dt.kind in "iu":
        bneg = np.less(b, 0) if dt.kind == "i" else False
        if dt.kind == "i" and np.any(bneg):
            safe = np.where(bneg, 0, b)
            pos = np.power(a, safe)
            # x ** -n for integers truncates 1 / x**n: 1 for x == 1, +-1 for x == -1, else 0
            odd = np.bitwise_and(b, 1).astype(bool)
            negr = np.where(np.equal(a, 1), 1, np.where(np.equal(a, -1), np.where(odd, -1, 1), 0))
            r = np.where(bneg, negr, pos).astype(dt, copy=False)
            return _copy_into(r, out)
    return np.power(a, b, out=out)


_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _div,
    "floordiv": np.floor_divide, "mod": np.fmod, "pymod": np.remainder, "pow": _pow,
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "nextafter": np.nextafter, "logaddexp": np.logaddexp,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift,
}
_BINARY_BOOL = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"})

_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)


def philox4x32(counters: np.ndarray, key: tuple[int, int], rounds: int = 10) -> np.ndarray:
    """Philox4x32-``rounds`` of an (n, 4) uint32 counter array under a 2-word key -> (n, 4) uint32."""
    c = [counters[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = key[0] & 0xFFFFFFFF, key[1] & 0xFFFFFFFF
    s32 = np.uint64(32)
    for r in range(rounds):
        if r:
            k0 = (k0 + _PHILOX_W[0]) & 0xFFFFFFFF
            k1 = (k1 + _PHILOX_W[1]) & 0xFFFFFFFF
        p0 = c[0] * _PHILOX_M[0]
        p1 = c[2] * _PHILOX_M[1]
        c = [(p1 >> s32) ^ c[1] ^ np.uint64(k0), p1 & _MASK32,
             (p0 >> s32) ^ c[3] ^ np.uint64(k1), p0 & _MASK32]
    return np.stack(c, axis=1).astype(np.uint32)


def _root(x: np.ndarray) -> np.ndarray:
    r = x
    while True:
        b = r.base
        if isinstance(b, np.ndarray):
            r = b
            continue
        bb = getattr(b, "base", None)
        if isinstance(bb, np.ndarray) and hasattr(b, "__array_interface__"):
            r = bb
            continue
        return r


class NumpyBackend(Backend):
    """The default backend.  See :mod:`runetensor._backend.contract` for each primitive."""

    name = "numpy"

    # -- introspection -------------------------------------------------
    def dtype(self, h):
        try:
            return RT_DTYPE[h.dtype]
        except KeyError:
            raise TypeError(f"numpy dtype {h.dtype} has no runetensor equivalent") from None

    def strides(self, h):
        isz = h.itemsize
        return tuple(s // isz for s in h.strides)

    def offset(self, h):
        lo, _ = byte_bounds(_root(h))
        return (h.__array_interface__["data"][0] - lo) // h.itemsize if h.itemsize else 0

    def buffer_size(self, h):
        lo, hi = byte_bounds(_root(h))
        return (hi - lo) // h.itemsize if h.itemsize else 0

    def is_c_contiguous(self, h):
        return bool(h.flags.c_contiguous)

    def shares_memory(self, a, b):
        return bool(np.may_share_memory(a, b))

    # -- creation --------------------------------------------------------
    def empty(self, shape, dtype):
        return np.empty(shape, NP_DTYPE[dtype])

    def full(self, shape, value, dtype):
        nd = NP_DTYPE[dtype]
        cd = _COMPUTE.get(nd)
        if cd is not None:
            return np.full(shape, np.asarray(value).astype(cd), cd).astype(nd)
        return np.full(shape, value, nd)

    def arange(self, start, stop, step, dtype):
        nd = NP_DTYPE[dtype]
        if all(isinstance(v, int) for v in (start, stop, step)):
            r = np.arange(start, stop, step, dtype=np.int64)
        else:
            r = np.arange(start, stop, step, dtype=np.float64)
        return r.astype(nd)

    def asarray(self, obj, dtype, copy):
        nd = NP_DTYPE[dtype] if dtype is not None else None
        if isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
            a = np.asarray(obj)
        else:
            try:
                a = np.asarray(obj, dtype=_COMPUTE.get(nd, nd) if nd is not None and isinstance(obj, (list, tuple)) else None)
            except OverflowError as e:
                raise ValueError(f"asarray: value out of range for {dtype}: {e}") from None
            if nd is not None:
                a = a.astype(nd, copy=False)
            elif a.dtype.kind in "US":
                a = np.asarray(obj, dtype=object)
            copy = False if copy is None else copy
        if a.dtype not in RT_DTYPE:
            if a.dtype.kind in "US":
                raise TypeError(f"asarray: strings are not a runetensor dtype (got numpy {a.dtype})")
            if a.dtype.kind == "V" or a.dtype.kind in "mM":
                raise TypeError(f"asarray: numpy dtype {a.dtype} has no runetensor equivalent")
            a = a.astype(a.dtype.newbyteorder("="))  # non-native byte order -> native copy
        if nd is not None and a.dtype != nd:
            if copy is False:
                raise ValueError(f"asarray: converting {RT_DTYPE[a.dtype]} to {dtype} needs a copy, but copy=False")
            a = self.cast(a, dtype)
        elif copy:
            a = a.copy()
        return a, RT_DTYPE[a.dtype]

    def random_bits(self, seed, n):
        blocks = (n + 3) // 4
        idx = np.arange(blocks, dtype=np.uint64)
        ctr = np.zeros((blocks, 4), np.uint32)
        ctr[:, 0] = (idx & _MASK32).astype(np.uint32)
        ctr[:, 1] = (idx >> np.uint64(32)).astype(np.uint32)
        out = philox4x32(ctr, (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF))
        return out.reshape(-1)[:n]

    # -- movement ----------------------------------------------------------
    def reshape(self, h, shape):
        try:
            return np.reshape(h, shape, copy=False)
        except ValueError:
            return None

    def expand(self, h, shape):
        return np.broadcast_to(h, shape)

    def permute(self, h, axes):
        return h.transpose(axes)

    def view_index(self, h, key):
        return h[key]

    def flip(self, h, axes):
        return np.flip(h, axes)

    def as_strided(self, h, shape, strides, offset):
        isz = h.itemsize
        delta = (offset - self.offset(h)) * isz
        # a one-element anchor at buffer element `offset`, then the requested view from it
        anchor = np.lib.stride_tricks.as_strided(h, shape=(2,), strides=(delta,))[1:]
        return np.lib.stride_tricks.as_strided(anchor, shape=tuple(shape),
                                               strides=tuple(s * isz for s in strides))

    # -- elementwise -----------------------------------------------------------
    def unary(self, op, x, out=None):
        fn = _UNARY[op]
        cd = _COMPUTE.get(x.dtype)
        if cd is None:
            return fn(x, out=out)
        r = fn(x.astype(cd))
        if op not in _UNARY_BOOL:
            r = r.astype(x.dtype)
        if out is None:
            return r
        out[...] = r
        return out

    def binary(self, op, x, y, out=None):
        fn = _BINARY[op]
        xd = x.dtype if isinstance(x, np.ndarray) else y.dtype
        cd = _COMPUTE.get(xd)
        if cd is None:
            return fn(x, y, out=out)
        xa = x.astype(cd) if isinstance(x, np.ndarray) else np.asarray(x, dtype=cd)
        ya = y.astype(cd) if isinstance(y, np.ndarray) else np.asarray(y, dtype=cd)
        r = fn(xa, ya)
        if op not in _BINARY_BOOL:
            r = r.astype(xd)
        if out is None:
            return r
        out[...] = r
        return out

    def where(self, cond, x, y):
        return np.where(cond, x, y)

    def cast(self, x, dtype):
        nd = NP_DTYPE[dtype]
        if x.dtype == nd:
            return x.copy()
        if x.dtype.kind in "fc" and nd.kind in "iu" and x.dtype.kind != "O":
            src = x.real if x.dtype.kind == "c" else x
            fin = np.isfinite(src)
            if not fin.all():
                src = np.where(fin, src, 0)
            cd = _COMPUTE.get(nd)
            if cd is not None:  # int4/uint4: wrap through the wider integer
                return src.astype(np.int64).astype(nd)
            if src.dtype.kind == "f" and src.dtype.itemsize <= 2 or src.dtype in _COMPUTE:
                src = src.astype(np.float32)
            return src.astype(nd)
        if x.dtype in _COMPUTE and nd.kind not in "f":
            return x.astype(_COMPUTE[x.dtype]).astype(nd)
        if nd in _COMPUTE and x.dtype.kind in "iub" and nd.kind in "iu":
            return x.astype(np.int64).astype(nd)
        return x.astype(nd)

    # -- reductions ----------------------------------------------------------------
    def reduce(self, op, x, axes, keepdims):
        acc = _ACCUM.get(x.dtype)
        src = x if acc is None else x.astype(acc)
        if op == "sum":
            r = np.sum(src, axis=axes, keepdims=keepdims, dtype=src.dtype)
        elif op == "prod":
            r = np.prod(src, axis=axes, keepdims=keepdims, dtype=src.dtype)
        elif op == "max":
            r = np.max(src, axis=axes, keepdims=keepdims)
        elif op == "min":
            r = np.min(src, axis=axes, keepdims=keepdims)
        elif op == "all":
            return np.asarray(np.all(x, axis=axes, keepdims=keepdims))
        elif op == "any":
            return np.asarray(np.any(x, axis=axes, keepdims=keepdims))
        else:
            raise ValueError(f"reduce: unknown op {op!r}")
        r = np.asarray(r)
        return r if acc is None else r.astype(x.dtype)

    def arg_reduce(self, op, x, axis, keepdims):
        src = x.astype(_COMPUTE[x.dtype]) if x.dtype in _COMPUTE else x
        fn = np.argmax if op == "argmax" else np.argmin
        return np.asarray(fn(src, axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)

    def scan(self, op, x, axis):
        acc = _ACCUM.get(x.dtype)
        src = x if acc is None else x.astype(acc)
        if op == "cumsum":
            r = np.cumsum(src, axis=axis, dtype=src.dtype)
        elif op == "cumprod":
            r = np.cumprod(src, axis=axis, dtype=src.dtype)
        elif op == "cummax":
            r = np.maximum.accumulate(src, axis=axis)
        elif op == "cummin":
            r = np.minimum.accumulate(src, axis=axis)
        else:
            raise ValueError(f"scan: unknown op {op!r}")
        return r if acc is None else r.astype(x.dtype)

    def argsort(self, x, axis, descending):
        src = x.astype(_COMPUTE[x.dtype]) if x.dtype in _COMPUTE else x
        if not descending:
            return np.argsort(src, axis=axis, kind="stable").astype(np.int64, copy=False)
        n = src.shape[axis]
        rev = np.flip(src, axis)
        idx = np.argsort(rev, axis=axis, kind="stable")
        return (n - 1 - np.flip(idx, axis)).astype(np.int64, copy=False)

    def sort(self, x, axis, descending):
        idx = self.argsort(x, axis, descending)
        return np.take_along_axis(x, idx, axis=axis), idx

    # -- gather / scatter ------------------------------------------------------------
    def gather(self, x, key):
        return x[key]

    def scatter(self, x, key, values):
        x[key] = values

    def searchsorted(self, sorted_, values, side):
        cd = _COMPUTE.get(sorted_.dtype)
        if cd is not None:
            sorted_, values = sorted_.astype(cd), values.astype(cd)
        return np.asarray(np.searchsorted(sorted_, values, side=side)).astype(np.int64, copy=False)

    def nonzero(self, x):
        src = x.astype(_COMPUTE[x.dtype]) if x.dtype in _COMPUTE else x
        return tuple(i.astype(np.int64, copy=False) for i in np.nonzero(src))

    # -- memory --------------------------------------------------------------------------
    def copy(self, x):
        return x.copy()

    def contiguous(self, x):
        return x if x.flags.c_contiguous else x.copy()

    def assign(self, dst, src):
        if isinstance(src, np.ndarray) or dst.dtype not in _COMPUTE:
            dst[...] = src
        else:
            dst[...] = np.asarray(src, dtype=_COMPUTE[dst.dtype]).astype(dst.dtype)

    # -- products ---------------------------------------------------------------------------
    def matmul(self, a, b):
        cd = _ACCUM.get(a.dtype)
        if cd is None:
            return np.matmul(a, b)
        return np.matmul(a.astype(cd), b.astype(cd)).astype(a.dtype)

    # -- host -----------------------------------------------------------------------------------
    def to_host(self, x):
        return x

    def to_list(self, x):
        cd = _COMPUTE.get(x.dtype)
        if cd is not None:
            x = x.astype(cd)
        return x.tolist()


numpy_backend = NumpyBackend()
