"""The NumPy backend: handles are ``numpy.ndarray`` views.

A NumPy view already carries shape, strides and offset over a base buffer, so
every movement primitive is one NumPy call and every elementwise primitive is
one ufunc call on the common float32/float64/int path.  The types NumPy lacks
come from ml_dtypes (bfloat16, float8, int4, uint4); they are computed in a
wider type (float32, int8, uint8) and rounded back once.
"""
from __future__ import annotations

import ctypes
import math
import sys
import threading
import warnings

import numpy as np
from numpy.lib.array_utils import byte_bounds

from .. import _dtypes as D
from .._dtypes import DType
from .._validate import named_memory_error
from .contract import CAPABILITIES, Backend, Fuser, NumericalFailure
from . import _fast  # fast paths (buffer reuse, threads, blocked copies); same results
from . import _blas  # how many threads a matrix product gets

_FAST_MIN = 1 << 17  # from here large ops try the fast paths (threads from _fast.PAR_MIN / PAR_MIN_CHEAP)
_CLIP = np._core.umath.clip  # np.clip's own ufunc (3 operands)
_ND = np.ndarray

# NumPy reports FP exceptions (x/0, overflow, invalid casts) as warnings from
# the frame that called the ufunc: this module.  The contract promises silent
# IEEE results, so we ignore them here, at no per-operation cost.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"runetensor\._backend\.(numpy_backend|_fast)")
warnings.filterwarnings("ignore", category=np.exceptions.ComplexWarning,
                        module=r"runetensor\._backend\.(numpy_backend|_fast)")

#: the dtypes whose NumPy dtype comes from ml_dtypes; importing it costs ~0.5 s of CPU (it registers its types
#: with NumPy), so it is imported when one of them is first needed (:func:`load_lowp`), not with runetensor
_LOWP_RT = frozenset({D.bfloat16, D.float8_e4m3, D.float8_e5m2, D.int4, D.uint4})


class _NpDtypes(dict):
    """``NP_DTYPE``'s dict: a low-precision dtype not there yet loads ml_dtypes's types (:func:`load_lowp`)."""

    def __missing__(self, key):
        if key in _LOWP_RT and load_lowp():
            return dict.__getitem__(self, key)
        raise KeyError(key)


NP_DTYPE: dict[DType, np.dtype] = _NpDtypes({
    D.float16: np.dtype(np.float16), D.float32: np.dtype(np.float32), D.float64: np.dtype(np.float64),
    D.int8: np.dtype(np.int8), D.uint8: np.dtype(np.uint8),
    D.int16: np.dtype(np.int16), D.uint16: np.dtype(np.uint16), D.int32: np.dtype(np.int32),
    D.uint32: np.dtype(np.uint32), D.int64: np.dtype(np.int64), D.uint64: np.dtype(np.uint64),
    D.bool: np.dtype(np.bool_), D.complex64: np.dtype(np.complex64),
    D.complex128: np.dtype(np.complex128), D.object_: np.dtype(object),
})  # + bfloat16, float8_e4m3, float8_e5m2, int4, uint4 (load_lowp)
RT_DTYPE: dict[np.dtype, DType] = {v: k for k, v in NP_DTYPE.items()}
_F32 = np.dtype(np.float32)
#: storage dtype -> the dtype ufuncs compute in (absent: compute natively); the ml_dtypes types: load_lowp
_COMPUTE: dict[np.dtype, np.dtype] = {}
_LOWP_FLOAT: set[np.dtype] = set()  # bfloat16, float8 (load_lowp)
_ACCUM: dict[np.dtype, np.dtype] = {np.dtype(np.float16): _F32}
_mld = None  # the ml_dtypes module, once loaded
_lowp_lock = threading.Lock()


def load_lowp() -> bool:
    """Import ml_dtypes and add its types (bfloat16, float8_e4m3fn, float8_e5m2, int4, uint4) to the dtype
    tables of this module and of ``_fast``; once, thread-safe.  Returns whether they are there (False: ml_dtypes
    is not installed).

    Called when a low-precision dtype is first asked for (``NP_DTYPE[D.bfloat16]``) and when an array of an
    ml_dtypes type made elsewhere (the user imported ml_dtypes) first reaches the backend.

    >>> load_lowp() and NP_DTYPE[D.bfloat16].name
    'bfloat16'
    """
    if _mld is not None:
        return True
    try:
        # deferred: ml_dtypes takes ~0.5 s to import; loaded at the first low-precision dtype.  (No lock of
        # ours is held across the import: the finder below fills the tables from inside it, under _lowp_lock,
        # while the import system holds ml_dtypes's module lock; taking them in the other order too could
        # deadlock two threads.)
        import ml_dtypes as m
    except ImportError:
        return False
    _fill_lowp(m)
    return True


def _fill_lowp(m) -> None:
    """Add the types of the ml_dtypes module ``m`` to the tables (once, under ``_lowp_lock``)."""
    global _mld
    with _lowp_lock:
        if _mld is not None:
            return
        nds = {D.bfloat16: np.dtype(m.bfloat16), D.float8_e4m3: np.dtype(m.float8_e4m3fn),
               D.float8_e5m2: np.dtype(m.float8_e5m2), D.int4: np.dtype(m.int4), D.uint4: np.dtype(m.uint4)}
        # the tables that tell an array's dtype is a low-precision one are filled first, NP_DTYPE last: another
        # thread finding a dtype there finds the rest too
        f32, lowf = _F32, (nds[D.bfloat16], nds[D.float8_e4m3], nds[D.float8_e5m2])
        _fast.set_lowp(*lowf)
        comp = {nd: f32 for nd in lowf}
        comp.update({nds[D.int4]: np.dtype(np.int8), nds[D.uint4]: np.dtype(np.uint8)})
        _COMPUTE.update(comp)
        _ACCUM.update(comp)
        _LOWP_FLOAT.update(lowf)
        _DLPACK_EXTENDED.update({lowf[0]: (4, 16), lowf[1]: (10, 8), lowf[2]: (12, 8)})
        _DLPACK_FROM_CODE.update({v: k for k, v in _DLPACK_EXTENDED.items()})
        RT_DTYPE.update({nd: d for d, nd in nds.items()})
        dict.update(NP_DTYPE, nds)
        _mld = m


class _WhenImported:
    """A finder on ``sys.meta_path`` that fills the tables (:func:`load_lowp`) right after anyone imports
    ml_dtypes (the user, a test, JAX): an array of its types can only exist once it is imported, so every array
    the backend sees has its dtype in the tables, with no per-operation check.  It finds nothing itself."""

    def find_spec(self, name, path=None, target=None):
        if name != "ml_dtypes":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                break
        else:
            return None
        run = getattr(spec.loader, "exec_module", None)
        if run is not None:
            def exec_module(module, _run=run):
                _run(module)
                _fill_lowp(module)
            spec.loader.exec_module = exec_module
        return spec


def _lowp_array(nd: np.dtype) -> bool:
    """Whether ``nd``, a dtype not in ``RT_DTYPE``, is one of ml_dtypes' types after all (an array made with
    ml_dtypes, imported by the user, before runetensor needed it): then the tables are loaded."""
    return _mld is None and "ml_dtypes" in sys.modules and load_lowp() and nd in RT_DTYPE


#: the largest float below 0.5: trunc(x + copysign(it, x)) rounds half away from zero exactly
#: (x + 0.5 would carry 0.49999999999999994 up to 1) and keeps the sign of zero
_BELOW_HALF = {np.dtype(np.float32): np.nextafter(np.float32(0.5), np.float32(0)),
               np.dtype(np.float64): np.nextafter(0.5, 0.0)}


def _round_half_away(x, out=None):
    if x.dtype.kind not in "fc":
        return _copy_into(x, out)
    if x.dtype.kind == "c":
        r = _round_half_away(x.real) + 1j * _round_half_away(x.imag)
        return _copy_into(r.astype(x.dtype), out)
    src = x if x.dtype in _BELOW_HALF else x.astype(np.float32)  # float16: in float32, rounded once
    r = np.copysign(_BELOW_HALF[src.dtype], src, out=np.empty(src.shape, src.dtype))
    np.add(r, src, out=r)
    np.trunc(r, out=r)
    if r.dtype != x.dtype or out is not None:
        return _copy_into(r.astype(x.dtype, copy=False), out) if out is not None else r.astype(x.dtype)
    return r


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
            # integer 1/x truncates toward zero: 1 for 1, -1 for -1, 0 otherwise (1/0 -> 0)
            r = np.where(x == 1, 1, np.where(x == -1, -1, 0)).astype(x.dtype) if x.dtype.kind == "i" \
                else (x == 1).astype(x.dtype)
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
    "real": lambda x, out=None: _copy_into(np.real(x), out),  # np.real/imag take no out=
    "imag": lambda x, out=None: _copy_into(np.imag(x), out), "erf": None,  # set below
}


def _erf(x, out=None):
    """The error function: SciPy's ufunc when installed, else ``math.erf`` per element (exact, slower)."""
    if x.dtype.kind == "c":
        raise TypeError("erf is not defined for complex input")
    src = x if x.dtype.kind == "f" else x.astype(np.float64)
    try:
        from scipy.special import erf as fn  # deferred: SciPy is heavy and optional
    except ImportError:  # pragma: no cover  (scipy is an optional extra)
        fn = np.frompyfunc(math.erf, 1, 1)
    r = np.asarray(fn(src)).astype(x.dtype, copy=False)
    return _copy_into(r, out) if out is not None else r


_UNARY["erf"] = _erf


def _expm1_complex(x, out=None):
    """Complex ``expm1`` with the Array API's special cases at zeros, infinities and NaNs.

    NumPy's loop is kept for finite non-zero input; where a part is infinite or NaN, or
    ``x`` is a zero, the result is the standard's: ``expm1(+-0 + 0j) == 0 + 0j``,
    ``expm1(+inf + 0j) == inf + 0j``, ``expm1(-inf + bj) == -1 + 0*sin(b)j``, ``expm1(inf + bj) ==
    inf*cis(b) - 1`` for finite non-zero ``b``, ``inf + NaNj`` for ``b`` infinite or NaN, ``NaN +- 0j``
    for ``NaN +- 0j`` (``expm1(conj(x)) == conj(expm1(x))`` throughout).
    """
    with np.errstate(all="ignore"):
        r = np.expm1(x, out=out)
        special = ~np.isfinite(x) | (x == 0)
        if not special.any():
            return r if type(r) is _ND else np.asarray(r)
        r = r if type(r) is _ND else np.asarray(r)
        z = np.asarray(x)[special]
        a, b = z.real, z.imag
        re = np.full(a.shape, np.nan, a.dtype)
        im = np.full(a.shape, np.nan, a.dtype)
        bz, bf = b == 0, np.isfinite(b)
        m = (a == 0) & bz                      # +-0 +- 0j -> 0 +- 0j
        re[m], im[m] = 0, b[m]
        pinf, ninf = np.isposinf(a), np.isneginf(a)
        m = pinf & bz                          # +inf +- 0j -> +inf +- 0j
        re[m], im[m] = np.inf, b[m]
        m = pinf & bf & ~bz                    # +inf * cis(b) - 1
        re[m], im[m] = np.inf * np.cos(b[m]), np.inf * np.sin(b[m])
        re[pinf & ~bf] = np.inf                # +inf + (inf or NaN)j -> inf + NaNj
        m = ninf & bf                          # +0 * cis(b) - 1
        re[m], im[m] = -1, np.copysign(0, np.sin(b[m]))
        m = ninf & ~bf                         # -inf + (inf or NaN)j -> -1 + 0j
        re[m], im[m] = -1, np.copysign(0, np.where(np.isnan(b[m]), 1, b[m]))
        m = np.isnan(a) & bz                   # NaN +- 0j -> NaN +- 0j
        im[m] = b[m]
        fixed = np.empty(z.shape, z.dtype)
        fixed.real, fixed.imag = re, im
        r[special] = fixed
        return r


def _floordiv(be, x, y, out):
    """Floor division: NumPy's (Python's) for integers and finite floats; where a float operand is
    infinite, the Array API's ``floor(x / y)``, so ``inf // 2 == inf`` and ``1 // -inf == -0.0``
    (NumPy and Python give ``nan`` and ``-1.0``, pairing ``//`` with ``%``)."""
    dt = x.dtype if isinstance(x, np.ndarray) else y.dtype
    if dt.kind != "f" and dt not in _LOWP_FLOAT:
        return be.binary("pyfloordiv", x, y, out)
    with np.errstate(all="ignore"):
        m = np.logical_or(np.isinf(x), np.isinf(y))  # before the op: ``out`` may be ``x``
        if m.any():
            xa = x.astype(_F64) if isinstance(x, np.ndarray) else x
            ya = y.astype(_F64) if isinstance(y, np.ndarray) else y
            q = np.floor(np.true_divide(xa, ya)).astype(dt)
        else:
            q = None
    r = be.binary("pyfloordiv", x, y, out)
    if q is not None:
        if r.ndim == 0:
            r[()] = q
        else:
            np.copyto(r, np.broadcast_to(q, r.shape), where=np.broadcast_to(m, r.shape))
    return r


_SIGN_OPS = frozenset({"neg", "abs"})  # sign-bit ops on the 2- and 1-byte floats (_fast.sign_op)
_BIT_OPS = _SIGN_OPS | {"isnan", "isinf", "isfinite", "signbit"}  # and tests read off their bits (_fast.bit_test)
_UNARY_BOOL = frozenset({"isnan", "isinf", "isfinite", "signbit", "logical_not"})


def _div(a, b, out=None):
    dt = a.dtype if isinstance(a, np.ndarray) else b.dtype
    if dt.kind in "fcO":
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


def _float_to_int(src, out):
    """float32/float64 ``src`` into the integer array ``out``: truncation, NaN and infinities to 0."""
    fin = np.isfinite(src)
    if not fin.all():
        src = np.where(fin, src, 0)
    np.copyto(out, src, casting="unsafe")
    return out


def _int_quiet(fn):
    """Integer division/modulo by zero give 0 as the contract says, without a warning even
    when the user turned warnings into errors (the module filter only covers the defaults)."""
    def f(a, b, out=None):
        dt = a.dtype if isinstance(a, np.ndarray) else b.dtype
        if dt.kind in "iu":
            with np.errstate(all="ignore"):
                return fn(a, b, out=out)
        return fn(a, b, out=out)
    f.__name__ = getattr(fn, "__name__", "int_quiet")
    return f


_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": _int_quiet(_div),
    "floordiv": None,  # binary() calls _floordiv, which calls "pyfloordiv" (Python's //)
    "pyfloordiv": _int_quiet(np.floor_divide), "mod": _int_quiet(np.fmod),
    "pymod": _int_quiet(np.remainder), "pow": _pow,
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "nextafter": np.nextafter, "logaddexp": np.logaddexp,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift,
}
#: on float and complex operands these ops are plain ufuncs (the fast paths take ufuncs only)
_FLOAT_UFUNC = {"div": np.true_divide, "pyfloordiv": np.floor_divide, "mod": np.fmod, "pymod": np.remainder,
                "pow": np.power}
_FLOAT_UNARY = {"sign": np.sign, "recip": np.reciprocal, "trunc": np.trunc, "ceil": np.ceil, "floor": np.floor,
                "rint": np.rint}
#: on integer operands (the wrappers only silence division by zero, which the fast paths do too)
_INT_UFUNC = {"pyfloordiv": np.floor_divide, "mod": np.fmod, "pymod": np.remainder}
_BINARY_BOOL = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"})
_BOOL_DT = np.dtype(np.bool_)
#: ``_dispatch.backend_binary`` once ``_fastops.install`` has set it up (None: not built, or turned off)
_cbinary = None
#: NumPy's bool loops for these read a broadcast (stride 0) operand's byte as it is (2 ^ 1 is 3: True), while
#: their other loops read any nonzero byte as True (a bool's byte may be anything: ``np.frombuffer``, views)
_BOOL_BYTEWISE = frozenset({"bitwise_xor", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge"})


def _bool01(x, y):
    """Bool operands ``x``, ``y`` with each broadcast one (another shape, or a zero stride) as 0/1 bytes:
    every loop then reads a nonzero byte as True (the other operand's loop already does)."""
    shape = x.shape if x.shape == y.shape else np.broadcast_shapes(x.shape, y.shape)
    if x.shape != shape or 0 in x.strides:
        x = x.view(np.uint8) != 0
    if y.shape != shape or 0 in y.strides:
        y = y.view(np.uint8) != 0
    return x, y

# float16 ops whose NumPy loops are generic (per element, ~10-30x slower than float32's) and whose
# result is float32's, rounded once: exact (comparisons, rounding to integers, copysign, sign,
# tests; not fmax/fmin: NumPy's float16 and float32 loops break +0/-0 ties differently), or
# correctly rounded in float32 with innocuous double rounding (square: exact in float32; sqrt,
# reciprocal: float32 has >= 2 * 11 + 2 bits).  These go through the low-precision
# pipeline (chunks widened to float32, computed, rounded back): the same bits as NumPy's loops
# (tests/test_fast_paths.py checks every float16 value).  Transcendental ops are left to NumPy:
# its float32 loops (SIMD) and its float16 loops (libm or AVX512-FP16) need not agree.
_F16 = np.dtype(np.float16)
_F64 = np.dtype(np.float64)
_F16_UNARY = {"sign": np.sign, "square": np.square, "sqrt": np.sqrt, "recip": np.reciprocal,
              "trunc": np.trunc, "ceil": np.ceil, "floor": np.floor, "rint": np.rint,
              "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
              "round": _round_half_away}
_F16_BINARY = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "copysign"})

_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)


#: blocks per chunk: the working set (a few uint64 arrays) stays in cache
_PHILOX_CHUNK = 1 << 13


def _philox_rounds(c0, c1, c2, c3, key, rounds, out):
    """Philox rounds on four uint64 word arrays (values < 2**32), in place; words -> ``out`` (m, 4) uint32."""
    k0, k1 = key[0] & 0xFFFFFFFF, key[1] & 0xFFFFFFFF
    p0 = np.empty_like(c0)
    p1 = np.empty_like(c0)
    s32 = np.uint64(32)
    for r in range(rounds):
        if r:
            k0 = (k0 + _PHILOX_W[0]) & 0xFFFFFFFF
            k1 = (k1 + _PHILOX_W[1]) & 0xFFFFFFFF
        np.multiply(c0, _PHILOX_M[0], out=p0)
        np.multiply(c2, _PHILOX_M[1], out=p1)
        np.right_shift(p1, s32, out=c0)          # new c0 = hi(p1) ^ c1 ^ k0
        np.bitwise_xor(c0, c1, out=c0)
        np.bitwise_xor(c0, np.uint64(k0), out=c0)
        np.bitwise_and(p1, _MASK32, out=c1)      # new c1 = lo(p1)
        np.right_shift(p0, s32, out=c2)          # new c2 = hi(p0) ^ c3 ^ k1
        np.bitwise_xor(c2, c3, out=c2)
        np.bitwise_xor(c2, np.uint64(k1), out=c2)
        np.bitwise_and(p0, _MASK32, out=c3)      # new c3 = lo(p0)
    for i, c in enumerate((c0, c1, c2, c3)):
        out[:, i] = c


def philox4x32(counters: np.ndarray, key: tuple[int, int], rounds: int = 10) -> np.ndarray:
    """Philox4x32-``rounds`` of an (n, 4) uint32 counter array under a 2-word key -> (n, 4) uint32."""
    n = counters.shape[0]
    out = np.empty((n, 4), np.uint32)
    for s in range(0, n, _PHILOX_CHUNK):
        c = counters[s:s + _PHILOX_CHUNK]
        _philox_rounds(*(c[:, i].astype(np.uint64) for i in range(4)), key, rounds, out[s:s + _PHILOX_CHUNK])
    return out


def _philox_stream(key: tuple[int, int], blocks: int, first: int = 0) -> np.ndarray:
    """Blocks ``first .. blocks-1`` (counter ``(i mod 2**32, i >> 32, 0, 0)``) as one flat uint32 array."""
    out = np.empty((blocks - first, 4), np.uint32)
    for s in range(first, blocks, _PHILOX_CHUNK):
        e = min(s + _PHILOX_CHUNK, blocks)
        idx = np.arange(s, e, dtype=np.uint64)
        z = np.zeros(e - s, np.uint64)
        _philox_rounds(idx & _MASK32, idx >> np.uint64(32), z, z.copy(), key, 10, out[s - first:e - first])
    return out.reshape(-1)


def _grid(h: np.ndarray) -> tuple[int, int, int, int, int]:
    """``(data, offset, size, lo, hi)``: h's first byte, its element offset and the buffer's size in
    elements on h's item grid (see ``NumpyBackend.offset``), and the root buffer's bytes ``[lo, hi)``."""
    lo, hi = byte_bounds(_root(h))
    data = h.__array_interface__["data"][0]
    isz = h.itemsize
    if not isz:
        return data, 0, 0, lo, hi
    off, phase = divmod(data - lo, isz)
    return data, off, max(0, (hi - lo - phase) // isz), lo, hi


def _memory_error(e: MemoryError) -> MemoryError:
    """A failed allocation's ``MemoryError`` (NumPy's or the pool's, carrying shape and dtype),
    reworded as ``add: cannot allocate 4.0 TiB for shape (2**20, 2**20) float32`` naming the
    function the user called.  Only on the error path: the primitives' ``try`` costs nothing."""
    return named_memory_error(e, lambda dt: RT_DTYPE.get(np.dtype(dt), dt))


def _bad_element(obj, dtype):
    """The message for the first element of nested lists ``obj`` that ``dtype`` cannot hold (None if
    none is found): an integer dtype takes finite numbers within its range (floats are truncated
    toward zero first, as ``astype`` does); a float dtype takes numbers within float64's range."""
    kind = dtype.kind
    if kind in "iu":
        lo, hi = (-(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1) if kind == "i" else (0, (1 << dtype.bits) - 1)
    stack = [obj]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
            continue
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            continue
        if kind in "iu":
            if isinstance(v, (float, np.floating)):
                if not math.isfinite(v):
                    return f"asarray: value {v} cannot be converted to {dtype} (expected a finite number)"
                v = int(v)
            if not lo <= int(v) <= hi:
                return f"asarray: value {v} is out of range for {dtype} (expected {lo} <= value <= {hi})"
        elif kind in "fc" and isinstance(v, int):
            try:
                float(v)
            except OverflowError:
                return f"asarray: value {v} is out of range for {dtype} (beyond the float64 range, about 1.8e308)"
    return None


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


_REV = slice(None, None, -1)
_ALL = slice(None)


def _astype(x, nd):
    """``x.astype(nd)`` (NumPy dtype ``nd``) through the conversion fast paths when large."""
    if x.size >= _FAST_MIN:
        r = _fast.astype(x, nd)
        if r is not None:
            return r
    return x.astype(nd)


def _large_binary(op, fn, x, y, xd):
    """The fast paths of a large binary op on NumPy-native dtypes (``None``: take the plain call)."""
    if xd == _F16 and op in _F16_BINARY and type(x) is _ND and type(y) is _ND \
            and y.dtype == _F16:  # arrays only: a Python scalar is first rounded to float16
        r = _fast.lowp_call(fn, (x, y), _F16, op in _BINARY_BOOL)
        if r is not None:
            return r
    # division/modulo/power: the ufunc itself where there is one (the wrappers add integer
    # rules); integer division truncating toward zero is a composite: its passes chunk by chunk
    k = xd.kind
    if op == "pow" and k == "f" and type(x) is _ND and type(y) in (int, float) and y in (1, 2):
        # x ** 2 as x * x (NumPy's own ``x ** 2`` squares; its general power loop is ~3x slower and gives
        # the same bits for every float32 pattern, NaN payloads aside), and x ** 1 as x * 1
        return _fast.ufunc_call(np.multiply, x, x if y == 2 else 1.0)
    if k in "fc":
        return _fast.ufunc_call(_FLOAT_UFUNC.get(op, fn), x, y)
    if k in "iu" and op in _INT_UFUNC:
        return _fast.ufunc_call(_INT_UFUNC[op], x, y)
    if k in "iu" and op == "div":
        return _fast.chunked(fn, (x, y), xd)
    return _fast.ufunc_call(fn, x, y)


class NumpyBackend(Backend):
    """The default backend.  See :mod:`runetensor._backend.contract` for each primitive."""

    name = "numpy"
    #: every capability, ``"fusion"`` included
    capabilities = CAPABILITIES

    def fusion(self) -> Fuser:
        """The fuser of ``rt.jit`` programs over NumPy tensors: C loops compiled at run time
        (``runetensor._backend.fusion``, docs/jit.md "What compiles")."""
        from .fusion import fuser  # loaded on first use: the C code generator and the kernel cache
        return fuser

    # -- introspection -------------------------------------------------
    def dtype(self, h):
        try:
            return RT_DTYPE[h.dtype]
        except KeyError:
            if _lowp_array(h.dtype):
                return RT_DTYPE[h.dtype]
            raise TypeError(f"numpy dtype {h.dtype} has no runetensor equivalent") from None

    def strides(self, h):
        isz = h.itemsize
        return tuple(s // isz for s in h.strides)

    # The buffer as the element model sees it: the items of h's dtype on the grid through h's
    # first element, from the first that starts at or after the root's first byte to the last
    # that ends at or before its last byte.  A view at an odd byte offset (np.frombuffer(...,
    # offset=1), a uint8 array reinterpreted) has its grid shifted by `phase` bytes: element k
    # is at byte lo + phase + k * itemsize, so the last whole item ends before byte hi.
    def offset(self, h):
        return _grid(h)[1]

    def buffer_size(self, h):
        return _grid(h)[2]

    def is_c_contiguous(self, h):
        return bool(h.flags.c_contiguous)

    def shares_memory(self, a, b):
        return bool(np.may_share_memory(a, b))

    # -- creation --------------------------------------------------------
    def empty(self, shape, dtype):
        try:
            return _fast.empty(tuple(shape), NP_DTYPE[dtype])  # large: a recycled buffer (no page faults)
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def full(self, shape, value, dtype):
        try:
            nd = NP_DTYPE[dtype]
            cd = _COMPUTE.get(nd)
            if cd is not None:
                return np.full(shape, np.asarray(value).astype(cd), cd).astype(nd)
            r = _fast.fill(tuple(shape), value, nd)
            if r is not None:
                return r
            if type(value) in (int, float, bool) and value == 0 and not nd.hasobject \
                    and not (type(value) is float and math.copysign(1.0, value) < 0):
                return np.zeros(shape, nd)  # calloc: the zero pages are mapped lazily
            with np.errstate(all="ignore"):  # 1e10 into float16 is inf; NumPy warns from its own module
                return np.full(shape, value, nd)
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def arange(self, start, stop, step, dtype):
        try:
            nd = NP_DTYPE[dtype]
            if nd not in _COMPUTE and nd.kind in "iuf":
                r = _fast.arange(start, stop, step, nd)  # large: filled in threaded chunks, same values
                if r is not None:
                    return r
            if all(isinstance(v, int) for v in (start, stop, step)):
                if all(-(1 << 63) <= v < (1 << 63) for v in (start, stop, step)):
                    r = np.arange(start, stop, step, dtype=np.int64)
                else:  # uint64 values beyond int64: exact offsets in uint64 arithmetic
                    n = len(range(start, stop, step))
                    off = np.arange(n, dtype=np.uint64) * np.uint64(abs(step) % (1 << 64))
                    base = np.uint64(start % (1 << 64))
                    r = base + off if step > 0 else base - off
            else:
                r = np.arange(start, stop, step, dtype=np.float64)
            return r.astype(nd)
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def asarray(self, obj, dtype, copy):
        nd = NP_DTYPE[dtype] if dtype is not None else None
        asked = copy
        if not isinstance(obj, (np.ndarray, list, tuple)) and hasattr(obj, "__dlpack__"):
            try:  # DLPack first: shares memory and carries bfloat16/float8 (e.g. torch tensors)
                obj = _dlpack_import(obj, None)
            except (BufferError, TypeError, ValueError, RuntimeError):
                pass  # fall back to __array__ / __array_interface__ / the buffer protocol
        if isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
            a = np.asarray(obj)
        else:
            seq = nd is not None and isinstance(obj, (list, tuple))
            try:
                a = np.asarray(obj, dtype=_COMPUTE.get(nd, nd) if seq else None)
            except (OverflowError, ValueError) as e:
                # NumPy's "Python int too large to convert to C long" / "cannot convert float NaN to
                # integer": name the element and the dtype's range instead
                msg = _bad_element(obj, dtype) if seq else None
                if msg is None:
                    if not isinstance(e, OverflowError):
                        raise  # ragged lists...: as before
                    msg = f"asarray: the values cannot be converted to {dtype}"
                raise ValueError(msg) from None
            if seq and nd in _COMPUTE and dtype.kind in "iu" and a.size:  # int4/uint4: computed in int8/uint8
                info = _mld.iinfo(nd)
                if a.min() < int(info.min) or a.max() > int(info.max):
                    raise ValueError(_bad_element(obj, dtype) or f"asarray: the values do not fit {dtype}")
            if nd is not None:
                a = a.astype(nd, copy=False)
            elif a.dtype.kind in "US":
                a = np.asarray(obj, dtype=object)
            copy = False if copy is None else copy
        if a.dtype not in RT_DTYPE and not _lowp_array(a.dtype):
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
        isz = a.itemsize
        if isz > 1 and any(n > 1 and s % isz for n, s in zip(a.shape, a.strides)):
            # byte strides that are not multiples of the item size (a structured array's field,
            # a hand-made view) have no description in elements (strides, offset, as_strided):
            # such an array is copied, not shared
            if asked is False:
                raise ValueError(f"asarray: the array's byte strides {a.strides} are not multiples of its "
                                 f"item size {isz}, so it cannot be shared; expected copy=None or True, "
                                 f"got copy=False")
            a = a.copy()
        return a, RT_DTYPE[a.dtype]

    def random_bits(self, seed, n):
        r = _fast.philox_words(seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF, n)
        if r is not None:
            return r
        out = _philox_stream((seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF), (n + 3) // 4)
        return out[:n] if out.shape[0] == n else out[:n].copy()

    def random_uniform(self, seed, n, dtype):
        if dtype is D.float32 or dtype is D.float64:
            r = _fast.philox_uniform(seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF, n, dtype is D.float64)
            if r is not None:
                return r
        return super().random_uniform(seed, n, dtype)

    # -- movement ----------------------------------------------------------
    def reshape(self, h, shape):
        try:
            return h.reshape(shape, copy=False)  # the method: ~2x faster than np.reshape
        except ValueError:
            return None

    def expand(self, h, shape):
        if h.flags.c_contiguous and h.size:
            # the read-only view built directly (np.broadcast_to costs ~2 us in Python checks)
            nd = len(shape)
            lead = nd - h.ndim
            hs, st = h.shape, h.strides
            strides = []
            for i in range(nd):
                if i < lead:
                    strides.append(0)
                    continue
                n = hs[i - lead]
                if n == shape[i]:
                    strides.append(st[i - lead] if n != 1 else 0)
                elif n == 1:
                    strides.append(0)
                else:
                    return np.broadcast_to(h, shape)  # not broadcastable: NumPy's error
            if lead >= 0:
                r = np.ndarray(shape, h.dtype, h, 0, tuple(strides))
                r.flags.writeable = False
                return r
        return np.broadcast_to(h, shape)

    def permute(self, h, axes):
        return h.transpose(axes)

    def view_index(self, h, key):
        return h[tuple(key) + (Ellipsis,)]  # the Ellipsis keeps an all-int key a 0-d view, not a scalar

    def flip(self, h, axes):
        # negative-step slicing: the same view as np.flip, several times faster
        return h[tuple(_REV if i in axes else _ALL for i in range(h.ndim)) + (Ellipsis,)]

    def as_strided(self, h, shape, strides, offset):
        isz = h.itemsize
        start, first, _, lo, hi = _grid(h)
        if 0 not in shape:
            # the bytes [a, b) the view touches, against the root buffer's bytes [lo, hi): whatever
            # the caller checked in elements, no view reaches outside the memory it came from (an
            # empty view touches nothing)
            a = start + (offset - first) * isz  # element `offset`'s first byte
            b = a + isz
            for n, s in zip(shape, strides):
                ext = (n - 1) * s * isz
                if ext < 0:
                    a += ext
                else:
                    b += ext
            if a < lo or b > hi:
                raise ValueError(f"as_strided: the view (shape {tuple(shape)}, strides {tuple(strides)}, offset "
                                 f"{offset}, in elements of {isz} bytes) touches bytes {a - lo}..{b - lo - 1} of "
                                 f"its buffer; expected bytes within 0..{hi - lo - 1}")
        delta = (offset - first) * isz
        dt = h.dtype
        if dt in _COMPUTE or dt.kind == "V":
            # NumPy's as_strided cannot rebuild ml_dtypes types from their typestr: go through
            # a same-size unsigned view and view the result back
            h = h.view(np.dtype(f"u{isz}"))
        # a one-element anchor at buffer element `offset`, then the requested view from it
        anchor = np.lib.stride_tricks.as_strided(h, shape=(2,), strides=(delta,))[1:]
        r = np.lib.stride_tricks.as_strided(anchor, shape=tuple(shape),
                                            strides=tuple(s * isz for s in strides))
        return r if r.dtype == dt else r.view(dt)

    # -- elementwise -----------------------------------------------------------
    def unary(self, op, x, out=None):
        try:
            fn = _UNARY[op]
            if fn is np.expm1 and x.dtype.kind == "c":  # the Array API's special cases
                return _expm1_complex(x, out)
            if op in _BIT_OPS and x.dtype in _fast._SIGN:  # with or without out=: the same bits
                r = _fast.sign_op(op, x) if op in _SIGN_OPS else _fast.bit_test(op, x)
                if out is None:
                    return r
                out[...] = r
                return out
            cd = _COMPUTE.get(x.dtype)
            if cd is None:
                if out is not None:
                    r = fn(x, out=out)
                else:
                    if x.size >= _FAST_MIN:
                        f16 = _F16_UNARY.get(op) if x.dtype == _F16 else None
                        if f16 is not None:
                            r = _fast.lowp_call(f16, (x,), _F16, op in _UNARY_BOOL)
                        elif op == "round" and x.dtype.kind == "f":
                            r = _fast.round_half_away(x)  # one compiled pass
                            if r is None:
                                r = _fast.chunked(fn, (x,), x.dtype)  # a composite: its passes per chunk
                        else:
                            r = _fast.ufunc_call(_FLOAT_UNARY.get(op, fn) if x.dtype.kind in "fc" else fn, x)
                        if r is not None:
                            return r
                    r = fn(x)
                return r if type(r) is _ND else np.asarray(r)  # 0-d: a 0-d array, not a NumPy scalar
            if out is None and x.size >= _fast.LOWP_MIN and (isinstance(fn, np.ufunc) or op in _F16_UNARY):
                # on the float formats, sign/recip/trunc/... are float32's ufuncs (the wrappers only
                # add integer cases); lowp_call declines int4/uint4
                r = _fast.lowp_call(_F16_UNARY.get(op, fn), (x,), x.dtype, op in _UNARY_BOOL, op)
                if r is not None:
                    return r
            r = fn(x.astype(cd))
            if op not in _UNARY_BOOL:
                r = r.astype(x.dtype)
            if out is None:
                return r if type(r) is np.ndarray else np.asarray(r)
            out[...] = r
            return out
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def binary(self, op, x, y, out=None):
        if out is None and _cbinary is not None:
            r = _cbinary(op, x, y)  # small operands of one plain dtype: the ufunc below, called in C
            if r is not NotImplemented:
                return r
        try:
            if op == "floordiv":  # Python's floor division, then floor(x / y) at infinities
                return _floordiv(self, x, y, out)
            fn = _BINARY[op]
            if type(x) is _ND:
                xd = x.dtype
                big = x.size >= _FAST_MIN or type(y) is _ND and y.size >= _FAST_MIN
            else:
                xd = x.dtype if isinstance(x, np.ndarray) else y.dtype
                big = type(y) is _ND and y.size >= _FAST_MIN
            if xd is _BOOL_DT and op in _BOOL_BYTEWISE and type(y) is _ND and type(x) is _ND and (
                    x.shape != y.shape or 0 in x.strides or 0 in y.strides):
                x, y = _bool01(x, y)
            if xd not in _COMPUTE:
                if out is not None:
                    r = fn(x, y, out=out)
                else:
                    if big:
                        r = _large_binary(op, fn, x, y, xd)
                        if r is not None:
                            return r
                    r = fn(x, y)
                return r if type(r) is _ND else np.asarray(r)  # 0-d: a 0-d array, not a NumPy scalar
            cd = _COMPUTE[xd]
            if out is None and (isinstance(fn, np.ufunc) or op in ("div", "pow")):
                r = _fast.lowp_call(fn, (x, y), xd, op in _BINARY_BOOL, op)
                if r is not None:
                    return r
            xa = x.astype(cd) if isinstance(x, np.ndarray) else np.asarray(x, dtype=cd)
            ya = y.astype(cd) if isinstance(y, np.ndarray) else np.asarray(y, dtype=cd)
            r = fn(xa, ya)
            if op not in _BINARY_BOOL:
                r = r.astype(xd)
            if out is None:
                return r if type(r) is np.ndarray else np.asarray(r)
            out[...] = r
            return out
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def where(self, cond, x, y):
        try:
            r = _fast.where(cond, x, y)
            return r if r is not None else np.where(cond, x, y)
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def clip(self, x, lo, hi):
        try:
            cd = _COMPUTE.get(x.dtype)
            if cd is None:
                if x.size >= _FAST_MIN:  # NumPy's clip is these ufuncs: take their fast path
                    fn, ops = (_CLIP, (x, lo, hi)) if lo is not None and hi is not None else \
                        (np.minimum, (x, hi)) if lo is None else (np.maximum, (x, lo))
                    r = _fast.ufunc_call(fn, *ops)
                    if r is not None:
                        return r
                return np.asarray(np.clip(x, lo, hi))  # 0-d: a 0-d array, not a NumPy scalar
            lo = None if lo is None else lo.astype(cd)
            hi = None if hi is None else hi.astype(cd)
            return np.asarray(np.clip(x.astype(cd), lo, hi).astype(x.dtype))
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def cast(self, x, dtype):
        try:
            nd = NP_DTYPE[dtype]
            if x.dtype == nd:
                return self.copy(x)
            if x.dtype.kind == "b" and nd in _COMPUTE:  # ml_dtypes' casts read a bool's byte: nonzero is True
                x = x.astype(np.uint8)
            if x.dtype.kind in "fc" and nd.kind in "iu" and x.dtype.kind != "O":
                src = x.real if x.dtype.kind == "c" else x
                if x.size >= _FAST_MIN and nd not in _COMPUTE and src.dtype in (_F32, _F64):
                    r = _fast.chunked(_float_to_int, (src,), nd)  # its passes chunk by chunk, threaded
                    if r is not None:
                        return r
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
            return _astype(x, nd)
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    # -- reductions ----------------------------------------------------------------
    def reduce(self, op, x, axes, keepdims):
        acc = _ACCUM.get(x.dtype)
        if op == "sum" and acc is None and x.size >= _fast.RED_MIN:
            r = _fast.reduce_sum(x, axes, keepdims)
            if r is not None:
                return r
        if (op == "max" or op == "min") and acc is None and x.size >= _fast.PAR_MIN_CHEAP:
            r = _fast.reduce_minmax(op, x, axes, keepdims)
            if r is not None:
                return r
        src = x if acc is None else _astype(x, acc)
        if op == "sum" and acc is not None and x.size >= _fast.RED_MIN:  # low precision: summed in float32
            r = _fast.reduce_sum(src, axes, keepdims)
            if r is not None:
                return _astype(np.asarray(r), x.dtype)
        # the ufuncs' reduce directly: what np.sum/np.max call, without ~1 us of Python wrapping
        if op == "sum":
            r = np.add.reduce(src, axis=axes, keepdims=keepdims, dtype=src.dtype)
        elif op == "prod":
            r = np.multiply.reduce(src, axis=axes, keepdims=keepdims, dtype=src.dtype)
        elif op == "max":
            r = np.maximum.reduce(src, axis=axes, keepdims=keepdims)
        elif op == "min":
            r = np.minimum.reduce(src, axis=axes, keepdims=keepdims)
        elif op == "all":
            return np.asarray(np.all(x, axis=axes, keepdims=keepdims))
        elif op == "any":
            return np.asarray(np.any(x, axis=axes, keepdims=keepdims))
        else:
            raise ValueError(f"reduce: unknown op {op!r}")
        r = np.asarray(r)
        return r if acc is None else r.astype(x.dtype)

    def arg_reduce(self, op, x, axis, keepdims):
        if not keepdims and x.size >= _fast.PAR_MIN_CHEAP and x.dtype not in _COMPUTE:
            r = _fast.arg_reduce(op, x, axis)
            if r is not None:
                return r
        src = x.astype(_COMPUTE[x.dtype]) if x.dtype in _COMPUTE else x
        fn = np.argmax if op == "argmax" else np.argmin
        return np.asarray(fn(src, axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)

    def scan(self, op, x, axis):
        try:
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
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def argsort(self, x, axis, descending):
        try:
            src = x.astype(_COMPUTE[x.dtype]) if x.dtype in _COMPUTE else x
            fast = _fast.argsort(src, axis, descending)
            if fast is not None:
                return fast
            if not descending:
                return np.argsort(src, axis=axis, kind="stable").astype(np.int64, copy=False)
            n = src.shape[axis]
            rev = np.flip(src, axis)
            idx = np.argsort(rev, axis=axis, kind="stable")
            return (n - 1 - np.flip(idx, axis)).astype(np.int64, copy=False)
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def sort(self, x, axis, descending):
        try:
            idx = self.argsort(x, axis, descending)
            return np.take_along_axis(x, idx, axis=axis), idx
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    # -- gather / scatter ------------------------------------------------------------
    def gather(self, x, key):
        try:
            r = _fast.take_rows(x, key)
            if r is not None:
                return r
            r = x[key]
            return r if type(r) is np.ndarray else np.asarray(r)  # 0-d index arrays give NumPy scalars
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def scatter(self, x, key, values, mode="set"):
        if mode == "set":
            x[key] = values
            return
        if mode != "add":
            raise ValueError(f"scatter: mode must be 'set' or 'add', got {mode!r}")
        cd = _COMPUTE.get(x.dtype)
        if cd is None:
            np.add.at(x, key, values)
            return
        tmp = x.astype(cd)  # low precision: accumulate in float32, round once
        np.add.at(tmp, key, values.astype(cd) if isinstance(values, np.ndarray) else values)
        x[...] = tmp.astype(x.dtype)

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
        try:
            if x.size >= _FAST_MIN:
                r = _fast.copy(x)
                if r is not None:
                    return r
            return x.copy()
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    def contiguous(self, x):
        return x if x.flags.c_contiguous else self.copy(x)

    def assign(self, dst, src):
        if _fast.copy_into(dst, src):
            return
        if isinstance(src, np.ndarray) or dst.dtype not in _COMPUTE:
            dst[...] = src
        else:
            dst[...] = np.asarray(src, dtype=_COMPUTE[dst.dtype]).astype(dst.dtype)

    # -- products ---------------------------------------------------------------------------
    def matmul(self, a, b):
        try:
            # _blas.matmul: BLAS single-threaded, large products split on runetensor's pool (see there)
            cd = _ACCUM.get(a.dtype)
            if cd is None:
                return np.asarray(_blas.matmul(a, b))  # vector @ vector: a 0-d array, not a NumPy scalar
            return np.asarray(_blas.matmul(a.astype(cd), b.astype(cd)).astype(a.dtype))
        except MemoryError as e:  # name the user's function, shape and dtype (contract: MemoryError)
            raise _memory_error(e) from None

    # -- host -----------------------------------------------------------------------------------
    def to_host(self, x):
        return x

    def to_list(self, x):
        cd = _COMPUTE.get(x.dtype)
        if cd is not None:
            x = x.astype(cd)
        return x.tolist()

    # -- linear algebra and FFT ---------------------------------------------------------------------
    def linalg(self, op, *args, **params):
        if op == "einsum":  # einsum does no floating-point error checking: skip the errstate cost
            return _la_einsum(*args, **params)
        try:
            with np.errstate(all="ignore"):
                return _LINALG[op](*args, **params)
        except np.linalg.LinAlgError as e:
            raise NumericalFailure(str(e)) from None

    def fft(self, op, x, s, axes, norm):
        if op == "hfft" or op == "ihfft":
            r = getattr(np.fft, op)(x, n=s[0], axis=axes[0], norm=norm)
        elif len(axes) == 1 and op in _FFT1:  # the 1-D entry points skip fftn's per-axis loop
            r = _FFT1[op](x, n=s[0], axis=axes[0], norm=norm)
        else:
            r = _FFTN[op](x, s=s, axes=axes, norm=norm)
        want = _FFT_RESULT[op](x.dtype)
        return r if r.dtype == want else r.astype(want)

    # -- raw bytes and foreign buffers ------------------------------------------------------------------
    def to_bytes(self, x):
        return np.ascontiguousarray(x).tobytes()

    def from_buffer(self, buf, dtype, shape, offset):
        nd = NP_DTYPE[dtype]
        n = 1
        for d in shape:
            n *= d
        return np.frombuffer(buf, dtype=nd, count=n, offset=offset).reshape(shape)

    def dlpack(self, x, stream, max_version, dl_device, copy):
        kw = {"stream": stream}
        if max_version is not None:
            kw["max_version"] = max_version
        if dl_device is not None:
            kw["dl_device"] = dl_device
        if copy is not None:
            kw["copy"] = copy
        bits = _DLPACK_EXTENDED.get(x.dtype)
        if bits is None:
            return x.__dlpack__(**kw)
        return _dlpack_export_extended(x, bits, kw)

    def dlpack_device(self, x):
        return (1, 0)

    def from_dlpack(self, obj, copy):
        a = _dlpack_import(obj, copy)
        if a.dtype not in RT_DTYPE and not _lowp_array(a.dtype):
            raise BufferError(f"from_dlpack: numpy dtype {a.dtype} has no runetensor equivalent")
        return a, RT_DTYPE[a.dtype]


numpy_backend = NumpyBackend()


# ---------------------------------------------------------------------------
# linalg / fft helpers (the ``linalg`` and ``fft`` primitives)
# ---------------------------------------------------------------------------
def _complex_of(dt):
    return np.dtype(np.complex64) if dt in (np.dtype(np.float32), np.dtype(np.complex64)) \
        else np.dtype(np.complex128)


def _real_of(dt):
    return np.dtype(np.float32) if dt in (np.dtype(np.float32), np.dtype(np.complex64)) \
        else np.dtype(np.float64)


def _la_eig(a):
    w, v = np.linalg.eig(a)
    cd = _complex_of(a.dtype)
    return w.astype(cd, copy=False), v.astype(cd, copy=False)


def _la_eigvals(a):
    return np.linalg.eigvals(a).astype(_complex_of(a.dtype), copy=False)


def _la_pinv(a, rtol=None, hermitian=False):
    if rtol is None:
        return np.linalg.pinv(a, hermitian=hermitian)
    return np.linalg.pinv(a, hermitian=hermitian, rtol=rtol)


def _la_lstsq(a, b, rcond=None):
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        # LAPACK's gelsd would print "illegal value" to the terminal before failing
        raise np.linalg.LinAlgError("SVD did not converge in Linear Least Squares (input contains inf or NaN)")
    if a.ndim == 2 and b.ndim == 2:
        x, res, rank, sv = np.linalg.lstsq(a, b, rcond=rcond)
        return x, res.astype(_real_of(a.dtype), copy=False), int(rank), sv
    # batched: through the SVD, with NumPy's conventions per matrix
    m, n = a.shape[-2], a.shape[-1]
    eps = np.finfo(_real_of(a.dtype)).eps
    rc = eps * max(m, n) if rcond is None else rcond
    u, sv, vh = np.linalg.svd(a, full_matrices=False)
    smax = sv[..., :1] if sv.shape[-1] else np.zeros(sv.shape[:-1] + (1,), sv.dtype)
    keep = sv > rc * smax
    inv_s = np.where(keep, 1 / np.where(keep, sv, 1), 0).astype(sv.dtype)
    uhb = np.matmul(np.conj(np.swapaxes(u, -1, -2)), b)
    x = np.matmul(np.conj(np.swapaxes(vh, -1, -2)), inv_s[..., :, None] * uhb)
    rank = keep.sum(axis=-1).astype(np.int64)
    if m > n and np.all(rank == n):
        r = np.matmul(a, x) - b
        res = (np.abs(r) ** 2).sum(axis=-2).astype(_real_of(a.dtype))
    else:
        res = np.empty((0,), _real_of(a.dtype))
    return x.astype(a.dtype, copy=False), res, rank, sv


def _la_einsum(*ops, subscripts):
    cd = _ACCUM.get(ops[0].dtype) if ops else None
    if cd is None:
        return np.asarray(np.einsum(subscripts, *ops, optimize=len(ops) > 2))
    r = np.einsum(subscripts, *(o.astype(cd) for o in ops), optimize=len(ops) > 2)
    return np.asarray(r).astype(ops[0].dtype)


_LINALG = {
    "cholesky": lambda a, upper=False: np.linalg.cholesky(a, upper=upper),
    "qr": lambda a, mode="reduced": tuple(np.linalg.qr(a, mode=mode)),
    "svd": lambda a, full_matrices=False: tuple(np.linalg.svd(a, full_matrices=full_matrices)),
    "svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
    "eig": _la_eig, "eigvals": _la_eigvals,
    "eigh": lambda a, uplo="L": tuple(np.linalg.eigh(a, UPLO=uplo)),
    "eigvalsh": lambda a, uplo="L": np.linalg.eigvalsh(a, UPLO=uplo),
    "det": lambda a: np.asarray(np.linalg.det(a)),
    "slogdet": lambda a: tuple(np.asarray(v) for v in np.linalg.slogdet(a)),
    "inv": np.linalg.inv, "pinv": _la_pinv, "solve": np.linalg.solve,
    "lstsq": _la_lstsq, "einsum": _la_einsum,
}
_FFT1 = {"fft": np.fft.fft, "ifft": np.fft.ifft, "rfft": np.fft.rfft, "irfft": np.fft.irfft}
_FFTN = {"fft": np.fft.fftn, "ifft": np.fft.ifftn, "rfft": np.fft.rfftn, "irfft": np.fft.irfftn}
_FFT_RESULT = {"fft": _complex_of, "ifft": _complex_of, "rfft": _complex_of, "ihfft": _complex_of,
               "irfft": _real_of, "hfft": _real_of}


# ---------------------------------------------------------------------------
# DLPack.  NumPy exports and imports the standard integer/float/complex/bool
# types itself; bfloat16 and float8 (which NumPy's DLPack support refuses) go
# through a same-size unsigned-integer capsule whose DLDataType we rewrite
# (DLPack type codes: kDLBfloat = 4, kDLFloat8_e4m3fn = 10, kDLFloat8_e5m2 = 12).
# int4/uint4 are not exported: DLPack's 4-bit types are packed two per byte.
# ---------------------------------------------------------------------------
_DLPACK_EXTENDED: dict[np.dtype, tuple[int, int]] = {}  # bfloat16 (4, 16), float8 (10, 8), (12, 8): load_lowp
_DLPACK_FROM_CODE: dict[tuple[int, int], np.dtype] = {}


def _capsule_tensor_ptr(capsule):
    """(address of the DLTensor inside the capsule's managed tensor, versioned?)."""
    getname = ctypes.pythonapi.PyCapsule_GetName
    getname.restype = ctypes.c_char_p
    getname.argtypes = [ctypes.py_object]
    name = getname(capsule)
    getptr = ctypes.pythonapi.PyCapsule_GetPointer
    getptr.restype = ctypes.c_void_p
    getptr.argtypes = [ctypes.py_object, ctypes.c_char_p]
    p = getptr(capsule, name)
    if name == b"dltensor_versioned":
        # DLManagedTensorVersioned: {u32 major, u32 minor}, manager_ctx*, deleter*, u64 flags, DLTensor
        return p + 8 + 2 * ctypes.sizeof(ctypes.c_void_p) + 8, name
    if name == b"dltensor":
        return p, name  # DLManagedTensor: DLTensor first
    raise BufferError(f"from_dlpack: unexpected capsule name {name!r}")


def _dtype_field(tensor_ptr):
    """Address of DLTensor.dtype: after void* data, DLDevice (2 x i32), i32 ndim."""
    return tensor_ptr + ctypes.sizeof(ctypes.c_void_p) + 8 + 4


def _dlpack_export_extended(x, code_bits, kw):
    code, bits = code_bits
    carrier = x.view(np.uint16 if bits == 16 else np.uint8)
    cap = carrier.__dlpack__(**kw)
    tp, _ = _capsule_tensor_ptr(cap)
    f = _dtype_field(tp)
    ctypes.c_uint8.from_address(f).value = code
    return cap


class _CapsuleHolder:
    """Presents an already obtained capsule to ``np.from_dlpack``."""

    def __init__(self, cap, device):
        self._cap, self._device = cap, device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self._cap

    def __dlpack_device__(self):
        return self._device


def _dlpack_import(obj, copy):
    if isinstance(obj, np.ndarray):  # includes ml_dtypes arrays, which NumPy's own __dlpack__ refuses
        return obj.copy() if copy else obj
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(obj).__name__} has no __dlpack__ method")
    dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
    if tuple(dev)[0] not in (1, 3):  # CPU, CUDA-host
        raise BufferError(f"from_dlpack: data lives on DLPack device {tuple(dev)}; only CPU memory can be imported")
    cap = None
    for kw in ({"max_version": (1, 0), "copy": copy} if copy is not None else {"max_version": (1, 0)},
               {}):
        try:
            cap = obj.__dlpack__(**kw)
            break
        except TypeError:
            continue
    if cap is None:
        raise BufferError(f"from_dlpack: {type(obj).__name__}.__dlpack__ did not produce a capsule")
    tp, _ = _capsule_tensor_ptr(cap)
    f = _dtype_field(tp)
    code = ctypes.c_uint8.from_address(f).value
    bits = ctypes.c_uint8.from_address(f + 1).value
    if code in (4, 10, 12):  # bfloat16, float8: ml_dtypes's types
        load_lowp()
    target = _DLPACK_FROM_CODE.get((code, bits))
    if target is not None:
        ctypes.c_uint8.from_address(f).value = 1  # kDLUInt of the same width
    a = np.from_dlpack(_CapsuleHolder(cap, (1, 0)))
    if target is not None:
        a = a.view(target)
    if copy:
        a = a.copy()
    return a

# (last: load_lowp fills tables defined above)
if "ml_dtypes" in sys.modules:  # imported before runetensor: nothing left to save
    load_lowp()
else:
    sys.meta_path.insert(0, _WhenImported())
