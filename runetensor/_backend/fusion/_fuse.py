"""The compiled fast path of ``rt.jit``: groups of elementwise steps become one C loop each.

What fuses (docs/jit.md, "What compiles"): a dependency-aware grouping of elementwise steps of one
result shape (float32/float64 arithmetic, float16/bfloat16 arithmetic rounded back after every op
as eager rounds it, comparisons, where, casts, integer wrap arithmetic,
float32 transcendentals evaluated in double by the C library), with a sum/max/min over all or
trailing axes at the end of a chain.  Correctly rounded operations give eager's bits; the
transcendentals' ulp bound vs eager and the reduction order are documented and tested.

The NumPy backend offers this to ``rt.jit`` through the contract (``Backend.fusion``: the ``Fuser``
of :mod:`runetensor._backend.fusion`); it reads the jit's program steps (``runetensor._tracers._jit``:
``Step``, whose operands are ``Slot``/``Const``) and calls kernels through ``.._jitrun``.

The C source is compiled with the system compiler (``$CC`` or ``cc``) into a shared library
named by the source's hash, in ``$RUNETENSOR_JIT_CACHE`` (default: ``$XDG_CACHE_HOME`` or
``~/.cache``, then ``runetensor/jit``); ``RUNETENSOR_JIT_CACHE=0`` turns the compiled path off.
The folder must be private to the user and a library is sealed with its SHA-256 and verified
before it is loaded (``._cache``: the trust model).  A library is written under a temporary name
and renamed into place (atomic), so processes compiling the same kernel at once are safe.
Without a compiler, ``rt.jit`` warns once and replays.
"""
from __future__ import annotations

import hashlib
import math
import os
import platform
import shutil
import subprocess
import tempfile
import warnings
from typing import Any

from ... import _dtypes as D
from ..._tracers._jit import EFFECTS, WRITES, Const, Slot, Step, fresh
from .. import _fast
from .._jitrun import Kernel, Reduction, Stride, c_layout_as2d_strides, make_matmul, make_runner, round_to
from . import _cache
from ._cache import cache_dir, disk_cache_limit  # noqa: F401  (part of this module's interface)

# C types of the fusable dtypes; ``_UT``: the unsigned type integer arithmetic wraps in (no UB)
_CTYPE = {D.float32: "float", D.float64: "double", D.int8: "int8_t", D.int16: "int16_t", D.int32: "int32_t",
          D.int64: "int64_t", D.uint8: "uint8_t", D.uint16: "uint16_t", D.uint32: "uint32_t", D.uint64: "uint64_t",
          D.bool: "uint8_t", D.float16: "uint16_t", D.bfloat16: "uint16_t"}
_FLOAT = (D.float32, D.float64)
#: float16/bfloat16: stored as their 16-bit patterns (``_CTYPE``: uint16_t), held in the kernel as
#: float values that are exactly representable in the format: loads widen (exact), every op computes
#: in float and rounds its result back as eager does (nearest even), stores take the bits (exact)
_HALF = (D.float16, D.bfloat16)
#: exact conversions to a 16-bit format: from float32, bool and the integers that float holds exactly
_TO_HALF = (D.float32, D.bool, D.int8, D.uint8, D.int16, D.uint16)
#: float16 kernels: None (auto) = only on CPUs without F16C.  With F16C, eager's float16 loops convert
#: 8 values per instruction and beat the kernels' bit-manipulation conversions (``a*b + c`` on 1e7:
#: eager ~7 ms, kernel ~25 ms here), so float16 steps replay; True/False force (tests force True).
#: bfloat16 (a shift to widen) always fuses.
FUSE_FLOAT16: bool | None = None


def _half_fuses(d: Any) -> bool:
    if d is not D.float16:
        return True
    if FUSE_FLOAT16 is not None:
        return FUSE_FLOAT16
    st = _CC_STATE.get("f16c")
    if st is None:
        try:
            with open("/proc/cpuinfo") as fh:
                st = " f16c" in fh.read(200000)
        except OSError:
            st = False
        _CC_STATE["f16c"] = st
    return not st
_INT = (D.int8, D.int16, D.int32, D.int64, D.uint8, D.uint16, D.uint32, D.uint64)
_UT = {D.int8: "uint32_t", D.int16: "uint32_t", D.int32: "uint32_t", D.int64: "uint64_t", D.uint8: "uint32_t",
       D.uint16: "uint32_t", D.uint32: "uint32_t", D.uint64: "uint64_t"}
_IMIN = {D.int32: "INT32_MIN", D.int64: "INT64_MIN"}
_ILIM = {D.int32: "0x1p31", D.int64: "0x1p63"}

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
# float binary ops: correctly rounded; maximum/minimum follow NumPy (NaN propagates, ties keep the first)
_FBIN = {"add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "div": "({a} / {b})",
         "maximum": "(({a} >= {b} || {a} != {a}) ? {a} : {b})",
         "minimum": "(({a} <= {b} || {a} != {a}) ? {a} : {b})"}
_IBIN = {"add": "+", "sub": "-", "mul": "*"}
_BITS = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}
_LOGIC = {"logical_and": "&&", "logical_or": "||"}
#: transcendentals, evaluated by the C library in double (float32: then rounded once); the bound vs
#: eager is tested over the float32 range in tests/test_jit_fusion.py (docs/jit.md)
TRANSCENDENTAL = ("exp", "log", "sin", "cos", "tanh", "expm1", "log1p")
#: float32 transcendentals evaluated by the C library's float function (sinf...: with libmvec 8 lanes,
#: ~3x faster than the double route); the others (log: its float vector version is up to 6 ulp from
#: eager) go through double.  Bounds vs eager: tests/test_jit_fusion.py's ULP_BOUND
F32_LIBM = frozenset({"sin", "cos", "exp", "tanh", "expm1", "log1p"})
_FUN = {"sqrt": None, "neg": None, "abs": None}
#: exact float unary ops (C's result is NumPy's bit for bit): name -> C expression of a float{T} ``{a}``
_FEXACT = {"recip": "(({T})1 / {a})", "square": "({a} * {a})", "trunc": "trunc{f}({a})", "ceil": "ceil{f}({a})",
           "floor": "floor{f}({a})", "rint": "rint{f}({a})",
           # half away from zero as the NumPy backend computes it: trunc(x + copysign(largest below 0.5, x))
           "round": "trunc{f}({a} + copysign{f}({h}, {a}))"}
#: float -> bool tests
_FTEST = {"isnan": "({a} != {a})", "isinf": "isinf({a})", "isfinite": "isfinite({a})", "signbit": "signbit({a})"}
_REDUCE = {"reduce.sum": "sum", "reduce.max": "max", "reduce.min": "min",
           "arg_reduce.argmax": "argmax", "arg_reduce.argmin": "argmin",
           # scans over the last axis: a full-size result, sequential per row as NumPy's accumulate
           "scan.cumsum": "cumsum", "scan.cumprod": "cumprod", "scan.cummax": "cummax", "scan.cummin": "cummin"}
_SCAN_OP = {"cumsum": "({a} + {b})", "cumprod": "({a} * {b})", "cummax": _FBIN["maximum"],
            "cummin": _FBIN["minimum"]}

_CC_STATE: dict = {}
_WARNED: list = []
#: loaded kernels by source hash (bounded: ``_cache.MEMORY_KERNELS``)
_MEM = _cache.Memo()
#: turned off by tests to compare the fused and replayed programs
ENABLED = True


def clear_memory_cache() -> None:
    """Forget the kernels loaded in this process (the disk cache stays); those no cached program
    uses are unloaded, the others once their programs are gone."""
    _MEM.clear()


def _compiler() -> str | None:
    cc = os.environ.get("CC") or "cc"
    st = _CC_STATE.get(cc)
    if st is None:
        path = shutil.which(cc)
        st = _CC_STATE[cc] = (path, None if path else f"no C compiler found ({cc!r} is not on PATH; set $CC)")
    return st[0]


def compiler_available() -> bool:
    return _compiler() is not None


def _warn(reason: str) -> None:
    if not _WARNED:
        _WARNED.append(reason)
        warnings.warn(f"rt.jit: not compiling ({reason}); jitted functions run by replaying their traced "
                      f"programs", RuntimeWarning, stacklevel=4)


def _avx2() -> bool:
    """Whether this CPU has AVX2 (vector kernels and glibc's vector math library, libmvec)."""
    st = _CC_STATE.get("avx2")
    if st is None:
        try:
            with open("/proc/cpuinfo") as fh:
                st = " avx2" in fh.read(200000) and platform.machine() in ("x86_64", "AMD64")
        except OSError:
            st = False
        _CC_STATE["avx2"] = st
    return st


def _avx512() -> bool:
    """Whether kernels are compiled for AVX-512 (``-mavx512f``: 16 float lanes, libmvec's 16-lane
    functions): the CPU has it and compiling for it has not failed in this process."""
    st = _CC_STATE.get("avx512")
    if st is None:
        try:
            with open("/proc/cpuinfo") as fh:
                st = _avx2() and " avx512f" in fh.read(200000)
        except OSError:
            st = False
        _CC_STATE["avx512"] = st
    return st


def _half_literal(v: Any, d: Any, use: str) -> str | None:
    """The float value eager gives Python scalar ``v`` in a float16/bfloat16 op, as a C literal:
    float16 rounds it to float16 first (NumPy's weak scalars); bfloat16 computes in float32, so an
    arithmetic operand (``use == "op"``) is float32(v), unrounded, while a fill (``"fill"``: float32,
    then bfloat16, as eager's full) or a where operand (``"where"``: only when float32 holds v
    exactly, so that no double rounding can differ) is rounded to bfloat16."""
    if isinstance(v, int) and abs(v) > 1 << 24:
        return None
    f = float(v)
    if d is D.float16:
        h = round_to(f, D.float16)
    else:
        x32 = round_to(f, D.float32)
        if use == "where" and f == f and x32 != f:
            return None
        h = x32 if use == "op" else round_to(x32, D.bfloat16)
    if h != h:
        return "(-(float)NAN)" if math.copysign(1.0, h) < 0 else "((float)NAN)"
    if h in (float("inf"), float("-inf")):
        return ("-" if h < 0 else "") + "((float)INFINITY)"
    return f"((float){h.hex()})"


def _int_range(d: Any) -> tuple[int, int]:
    """The smallest and largest value of integer dtype ``d``."""
    if d.kind == "i":
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


def _literal(v: Any, d: Any, use: str = "op") -> str | None:
    """An exact C literal of Python scalar ``v`` in dtype ``d`` (NumPy's conversion), or None;
    float16/bfloat16: ``_half_literal``."""
    if isinstance(v, bool):
        v = int(v)
    if not isinstance(v, (int, float)):
        return None
    if d in _HALF:
        return _half_literal(v, d, use)
    if d in _INT:
        if not isinstance(v, int):
            return None
        lo, hi = _int_range(d)
        if not lo <= v <= hi:
            return None
        return f"(({_CTYPE[d]}){v}{'ULL' if v > 0 else 'LL'})" if v != lo else f"(({_CTYPE[d]})({v + 1}LL - 1))"
    if d not in _FLOAT:
        return None
    f = float(v)
    if isinstance(v, int) and f != v:
        return None
    if f != f:
        return "((double)NAN)" if d is D.float64 else "((float)NAN)"
    if f in (float("inf"), float("-inf")):
        return ("-" if f < 0 else "") + ("((double)INFINITY)" if d is D.float64 else "((float)INFINITY)")
    return f"((float){f.hex()})" if d is D.float32 else f"({f.hex()})"


class _Op:
    """One fusable step: its C expression builder, result dtype and operand dtypes."""

    __slots__ = ("step", "dtype", "in_dtypes", "red")

    def __init__(self, step: Step, dtype: Any, in_dtypes: list, red: str | None = None):
        self.step = step
        self.dtype = dtype
        self.in_dtypes = in_dtypes
        self.red = red


def _dt_of(spec: Slot | Const, avals: list, P: Any) -> Any:
    if type(spec) is Slot:
        a = avals[spec.index] if spec.index < len(avals) else None
        return None if a is None else a[1]
    v = spec.value
    if hasattr(v, "shape") and not isinstance(v, (int, float, bool)):
        try:
            return P.dtype(v)
        except Exception:
            return None
    return "scalar"


def _half_nan_rule(x: Any, name: str, ds: list) -> int:
    """For a float16/bfloat16 binary op: add/sub/mul/div's NaN rule (which NaN operand, quieted, a
    NaN-NaN op returns: ``_fast._NAN_RULES``, probed from NumPy's loops: float16's own for float16,
    float32's for bfloat16, which eager computes in float32), maximum/minimum's tie rule (1: the
    second operand on a tie; float16 keeps the first); -1: not reproducible here (replayed)."""
    lay = "sa" if ds[0] == "scalar" else "as" if len(ds) > 1 and ds[1] == "scalar" else "aa"
    if name in ("maximum", "minimum"):
        return 0 if x is D.float16 else _fast._TIES.get((name, lay), 0)
    return _fast._NAN_RULES.get(("f16" if x is D.float16 else "f32", name, lay), -1)


#: C helpers of the float16/bfloat16 kernels (branch-free bit manipulation, so that loops vectorise;
#: the conversions of runetensor/_backend/_kernels.c, which eager uses)
_HALF_C = r"""#ifndef RT_HALF_HELPERS
#define RT_HALF_HELPERS
#include <string.h>
static inline float rt_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t rt_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
/* bfloat16 bits -> float (exact) */
static inline float rt_bf2f(uint16_t h) { return rt_u2f((uint32_t)h << 16); }
/* a float that bfloat16 holds exactly -> its bits */
static inline uint16_t rt_f2bf(float f) { return (uint16_t)(rt_f2u(f) >> 16); }
/* float -> bfloat16 (nearest even; NaN: the quiet NaN of its sign), as a float (f32_to_bf16) */
static inline float rt_rbf(float f) {
  uint32_t u = rt_f2u(f);
  uint32_t nan = (u & 0x80000000u) | 0x7fc00000u;
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return rt_u2f((u & 0x7fffffffu) > 0x7f800000u ? nan : r);
}
/* float16 bits -> float (exact; NaN payload kept) (f16_to_f32) */
static inline float rt_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t em = h & 0x7fffu;
  uint32_t normal = (em << 13) + ((uint32_t)(127 - 15) << 23);
  uint32_t special = (em << 13) | 0x7f800000u;
  uint32_t subu = rt_f2u((float)(int32_t)em * 5.9604644775390625e-8f);
  uint32_t ms = 0u - (uint32_t)(em >= 0x7c00u);
  uint32_t mn = 0u - (uint32_t)(em >= 0x0400u);
  return rt_u2f(((special & ms) | (normal & mn & ~ms) | (subu & ~mn)) | sign);
}
/* float -> float16 bits: nearest even, overflow to inf, gradual underflow; NaN keeps its sign and
   top 10 payload bits, at least one set (f32_to_f16, NumPy's npy_float_to_half) */
static inline uint16_t rt_f2h(float x) {
  uint32_t u = rt_f2u(x);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  uint32_t pay = (a & 0x007fffffu) >> 13;
  uint32_t big = 0x7c00u | ((pay | (uint32_t)(pay == 0u)) & (0u - (uint32_t)(a > 0x7f800000u)));
  uint32_t subn = rt_f2u(rt_u2f(a) + 0.5f) - 0x3f000000u;
  uint32_t norm = (a + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  uint32_t mb = 0u - (uint32_t)(a >= 0x47800000u);
  uint32_t mu = 0u - (uint32_t)(a < 0x38800000u);
  return (uint16_t)(((big & mb) | (subn & mu) | (norm & ~mb & ~mu)) | sign);
}
/* float -> float16, as a float: rt_h2f(rt_f2h(f)) computed on the float's bits (checked equal on
   every float32 bit pattern): nearest even at bit 13, >= 65520 to inf; |f| < 2^-14 rounded to a
   multiple of 2^-24 by the FPU (+ 0.5f - 0.5f); NaN: its top 10 payload bits, at least one set */
static inline float rt_rh(float f) {
  uint32_t u = rt_f2u(f);
  uint32_t a = u & 0x7fffffffu;
  uint32_t norm = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
  norm = norm >= 0x47800000u ? 0x7f800000u : norm;
  uint32_t subn = rt_f2u((rt_u2f(a) + 0.5f) - 0.5f);
  uint32_t nan = (a & 0xffffe000u) | ((uint32_t)((a & 0x7fe000u) == 0u) << 13);
  uint32_t r = a > 0x7f800000u ? nan : a < 0x38800000u ? subn : norm;
  return rt_u2f(r | (u & 0x80000000u));
}
/* float (a widened float16) -> double, NaN payload kept as it is (NumPy's half -> double) */
static inline double rt_h2d(float f) {
  uint32_t u = rt_f2u(f);
  uint64_t nb = ((uint64_t)(u & 0x80000000u) << 32) | 0x7ff0000000000000ull | ((uint64_t)(u & 0x7fffffu) << 29);
  double d = (double)f, n;
  memcpy(&n, &nb, 8);
  return (f != f) ? n : d;
}
/* an arithmetic op's result r = a op b, rounded, with the NaN eager picks: a NaN operand, quieted
   (the op itself returns it: IEEE 754 propagation, x86 and Arm); both NaN: bit
   (2 * quiet(a) + quiet(b)) of rule set means a (nan_fix; rule 0 / 15 fold to one select) */
static inline float rt_rh2(float a, float b, float r, int rule) {
  uint32_t ua = rt_f2u(a), ub = rt_f2u(b);
  uint32_t idx = ((ua >> 21) & 2u) | ((ub >> 22) & 1u);
  uint32_t pick = ((((uint32_t)rule >> idx) & 1u) ? ua : ub) | 0x400000u;
  return rt_rh(((a != a) & (b != b)) ? rt_u2f(pick) : r);
}
/* bfloat16: a NaN rounds to the quiet NaN of its sign, so only the picked NaN's sign matters */
static inline float rt_rbf2(float a, float b, float r, int rule) {
  uint32_t ua = rt_f2u(a), ub = rt_f2u(b), ur = rt_f2u(r);
  uint32_t idx = ((ua >> 21) & 2u) | ((ub >> 22) & 1u);
  uint32_t u = ((a != a) & (b != b)) ? ((((uint32_t)rule >> idx) & 1u) ? ua : ub) : ur;
  uint32_t rr = (ur + 0x7fffu + ((ur >> 16) & 1u)) & 0xffff0000u;
  return rt_u2f((r != r) ? ((u & 0x80000000u) | 0x7fc00000u) : rr);
}
#endif"""


def _ndim_in(s: Step, avals: list) -> int:
    """The number of axes of step ``s``'s first operand when it is a slot, else -1."""
    x = s.ins[0]
    return len(avals[x.index][0]) if type(x) is Slot else -1


def _classify(s: Step, avals: list, P: Any) -> _Op | None:
    """The fusable view of step ``s``, or None (it replays)."""
    if s.aval is None or type(s.outs) is not int or s.name in WRITES:
        return None
    shape, d, contig = s.aval[:3]
    if d not in _CTYPE or not contig or 0 in shape:
        return None
    ds = [_dt_of(sp, avals, P) for sp in s.ins]
    if any(x is None for x in ds) or (D.float16 in ds or d is D.float16) and not _half_fuses(D.float16):
        return None
    name = s.name
    kind = s.params.get("kind")
    if name == "full":  # a scalar fill: a literal in the kernel, no buffer
        return _Op(s, d, []) if not s.ins and _literal(s.params.get("value"), d, "fill") is not None else None
    red = _REDUCE.get(name)
    if red is not None and red.startswith("cum"):
        x = ds[0]
        nd = _ndim_in(s, avals)
        ax = s.params.get("axis")
        if x not in _FLOAT or d is not x or nd <= 0 or ax is None or ax % nd != nd - 1:
            return None
        return _Op(s, d, [x], red)
    if red is not None and red.startswith("arg"):
        # argmax/argmin over the last axis (int64 result): the first index of the extreme, or of the
        # first NaN (NumPy's rule); one scalar pass per row
        x = ds[0]
        nd = _ndim_in(s, avals)
        ax = s.params.get("axis")
        if x not in _FLOAT or d is not D.int64 or nd <= 0 or ax is None or ax % nd != nd - 1:
            return None
        return _Op(s, d, [x], red)
    if red is not None:
        x = ds[0]
        nd = _ndim_in(s, avals)
        axes = tuple(sorted(a % nd for a in s.params["axes"])) if nd > 0 else ()
        if x is not d or d not in _FLOAT or nd <= 0 or not axes:
            return None
        if axes == tuple(range(nd - len(axes), nd)):
            return _Op(s, d, [x], red)
        if axes == tuple(range(len(axes))):  # leading axes: one running value per kept column
            return _Op(s, d, [x], "col" + red)
        return None
    if kind == "binary":
        od = [x for x in ds if x != "scalar"]
        if not od or any(x is not od[0] for x in od):
            return None
        x = od[0]
        if name == "pow":  # x ** 2 is x * x, correctly rounded either way (NumPy's power included)
            e = s.ins[1].value if type(s.ins[1]) is Const else None
            two = type(e) in (int, float) and e == 2 and ds[0] is x
            return _Op(s, d, [x, x]) if two and x in _FLOAT and d is x else None
        ok = ((x in _FLOAT and name in _FBIN and d is x) or
              (x in _INT and (name in _IBIN or name in _BITS or name in ("maximum", "minimum")) and d is x) or
              (x is D.bool and (name in _BITS or name in _LOGIC) and d is D.bool) or
              (x in _CTYPE and x is not D.bool and name in _CMP and d is D.bool) or
              (x is D.bool and name in _LOGIC and d is D.bool) or
              (x in _HALF and name in _FBIN and d is x and _half_nan_rule(x, name, ds) >= 0))
        return _Op(s, d, [x, x]) if ok else None
    if kind == "unary":
        x = ds[0]
        if (x in _FLOAT or x in _HALF) and name in _FTEST and d is D.bool:
            return _Op(s, d, [x])
        if name == "logical_not" and x in _CTYPE and d is D.bool:
            return _Op(s, d, [x])
        if x is not d:
            return None
        if x in _FLOAT and (name in _FUN or name in _FEXACT or name in TRANSCENDENTAL):
            return _Op(s, d, [x])
        if x in _INT and name == "neg":
            return _Op(s, d, [x])
        if x in _HALF and (name in _FUN or name in _FEXACT):  # transcendentals replay (docs/jit.md)
            return _Op(s, d, [x])
        return None
    if name == "where":
        if ds[0] is not D.bool:
            return None
        od = [x for x in ds[1:] if x != "scalar"]
        if not od or any(x is not d for x in od) or d is D.bool:
            return None
        return _Op(s, d, [D.bool, d, d])
    if name == "cast":
        x = ds[0]
        if x not in _CTYPE or x == "scalar":
            return None
        if x in _FLOAT and d in _INT and d not in _IMIN:
            return None  # float -> narrow int: NumPy's result is platform-specific; replayed
        if x in _HALF and d not in (D.float32, D.float64, D.bool):
            return None  # to ints (eager: float16 and bfloat16 differ), to the other 16-bit format: replayed
        if d in _HALF and x not in _TO_HALF:
            return None  # float64/int32/int64 -> 16 bits: one rounding of a value float cannot hold
        return _Op(s, d, [x])
    return None


def _half_expr(op: _Op, a: list) -> str:
    """``_expr`` of a step on float16/bfloat16 values (held as floats the format holds exactly): the
    op in float, its result rounded back to the format (``rt_rh``/``rt_rbf``) as eager rounds it;
    neg/abs/where/maximum/minimum of held values round nothing (neg/abs keep a NaN's payload, as
    eager's sign-bit operations do)."""
    s = op.step
    name = s.name
    d = op.dtype
    x = op.in_dtypes[-1] if op.in_dtypes else d
    h = d if d in _HALF else x
    R = "rt_rh" if h is D.float16 else "rt_rbf"
    if name == "full":
        return _literal(s.params["value"], d, "fill")  # type: ignore[return-value]  # checked by _classify
    if name == "where":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    if name == "cast":
        x = op.in_dtypes[0]
        if d in _HALF:
            return f"{R}((float){a[0]})"
        if d is D.bool:
            return f"((uint8_t)({a[0]} != 0))"
        if d is D.float32:
            return f"({a[0]})"
        return f"rt_h2d({a[0]})" if x is D.float16 else f"((double){a[0]})"
    if s.params.get("kind") == "binary":
        if name in _CMP:
            return f"((uint8_t)({a[0]} {_CMP[name]} {a[1]}))"
        ds = ["scalar" if type(i) is Const and not hasattr(i.value, "shape") else x for i in s.ins]
        rule = _half_nan_rule(x, name, ds)
        if name in ("maximum", "minimum"):
            c = (">" if rule else ">=") if name == "maximum" else ("<" if rule else "<=")
            return f"{R}((({a[0]} != {a[0]}) || ({a[0]} {c} {a[1]})) ? {a[0]} : {a[1]})"
        return f"{R}2({a[0]}, {a[1]}, {_FBIN[name].format(a=a[0], b=a[1])}, {rule})"
    e = _unary_exact(name, a[0], D.float32)
    # tests, neg and abs round nothing (a NaN's payload is kept, as eager's sign-bit operations keep it)
    return e if name in _FTEST or name in ("logical_not", "neg", "abs") else f"{R}({e})"


def _unary_exact(name: str, a: str, x: Any) -> str:
    """C expression of an exact unary op (``_FTEST``, logical_not, neg, abs, sqrt, ``_FEXACT``) of
    operand ``a``, computed in float type ``x``."""
    f = "f" if x is D.float32 else ""
    if name in _FTEST:
        return f"((uint8_t)({_FTEST[name].format(a=a)} != 0))"
    if name == "logical_not":
        return f"((uint8_t)({a} == 0))"
    if name == "neg":
        return f"(-{a})"
    if name == "abs":
        return f"fabs{f}({a})"
    if name == "sqrt":
        return f"sqrt{f}({a})"
    h = "0x1.fffffep-2f" if x is D.float32 else "0x1.fffffffffffffp-2"
    return _FEXACT[name].format(a=a, T=_CTYPE[x], f=f, h=h)


def _expr(op: _Op, a: list) -> str:
    s = op.step
    name = s.name
    d = op.dtype
    if d in _HALF or any(x in _HALF for x in op.in_dtypes):
        return _half_expr(op, a)
    T = _CTYPE[d]
    if name == "full":
        return _literal(s.params["value"], d)  # type: ignore[return-value]  # checked by _classify
    if name == "where":
        return f"({a[0]} ? {a[1]} : {a[2]})"
    if name == "cast":
        x = op.in_dtypes[0]
        if d is D.bool:
            return f"((uint8_t)({a[0]} != 0))"
        if x in _FLOAT and d in _INT:
            # the contract: truncation; NaN and infinities give 0; finite values out of range give the
            # minimum (what the x86 conversion, hence eager NumPy, gives), never C's undefined cast
            lim = _ILIM[d]
            return (f"(({a[0]} != {a[0]} || fabs((double){a[0]}) == (double)INFINITY) ? ({T})0 : "
                    f"(((double){a[0]} < {lim} && (double){a[0]} > -{lim}) ? ({T}){a[0]} : "
                    f"(((double){a[0]} == -{lim}) ? ({T}){a[0]} : ({T}){_IMIN[d]})))")
        return f"(({T}){a[0]})"
    kind = s.params.get("kind")
    if kind == "binary":
        x = op.in_dtypes[0]
        if name == "pow":  # the exponent is 2 (_classify)
            return f"({a[0]} * {a[0]})"
        if name in _CMP:
            return f"((uint8_t)({a[0]} {_CMP[name]} {a[1]}))"
        if name in _LOGIC:
            return f"((uint8_t)({a[0]} {_LOGIC[name]} {a[1]}))"
        if name in _BITS:
            return f"(({T})({a[0]} {_BITS[name]} {a[1]}))"
        if x in _FLOAT:
            return _FBIN[name].format(a=a[0], b=a[1])
        if name in ("maximum", "minimum"):
            c = ">=" if name == "maximum" else "<="
            return f"(({a[0]} {c} {a[1]}) ? {a[0]} : {a[1]})"
        U = _UT[x]
        return f"(({T})(({U}){a[0]} {_IBIN[name]} ({U}){a[1]}))"
    # unary
    if d in _INT:  # neg: wraps (NumPy's -INT_MIN == INT_MIN)
        return f"(({T})(0u - ({_UT[d]}){a[0]}))"
    if name not in TRANSCENDENTAL:
        return _unary_exact(name, a[0], op.in_dtypes[0])
    if d is D.float32 and name in F32_LIBM:
        return f"{name}f({a[0]})"
    if d is D.float32:
        return f"((float){name}((double){a[0]}))"
    return f"{name}({a[0]})"


class Group:
    """Fusable steps of one result shape, in program order, executed at the position of the last.
    ``copies``: slots of steps of an earlier group recomputed here (rematerialised) instead of read."""

    def __init__(self, shape: tuple):
        self.shape = shape
        self.ops: list[_Op] = []
        self.slots: set = set()
        self.copies: set = set()
        self.closed = False
        self.wmark = 0
        self.row_feed = False  # reads a row reduction's result (worth a kernel: it joins a row chain)

    @property
    def red(self) -> _Op | None:
        return self.ops[-1] if self.ops and self.ops[-1].red else None

    def own(self) -> list[Step]:
        return [o.step for o in self.ops if o.step.outs not in self.copies]

    def worth(self) -> bool:
        n = len(self.ops)
        if self.red is not None:
            return True
        return n >= 2 or (n == 1 and (self.ops[0].step.name in TRANSCENDENTAL or (ROW_CHAINS and self.row_feed)))


#: at most this many steps are recomputed in a later group instead of storing their result
REMAT_MAX = 8

#: in ``_groups``, the buffer a slot lives in when it is an input's or of unknown origin (any write to
#: such a buffer may have touched any other)
_OUTSIDE = "outside"


def _groups(steps: list[Step], avals: list, P: Any, keep: set) -> list[Group]:
    """Dependency-aware grouping (a linear scan): a fusable step joins the open group of its result
    shape; a group closes when a step outside it (or a write) reads one of its results, at a write,
    or after a reduction (which ends a chain).  A closed group runs where its last step was: only its
    members move, later, past steps that do not read them, and never past a write.

    Rematerialisation: a step reading a result of an earlier closed group of its shape recomputes it
    (up to ``REMAT_MAX`` elementwise steps, from that group's own operands) when no write since then
    can have touched those operands; the earlier group then stores the result only if someone else
    reads it."""
    closed: list[Group] = []
    open_: dict[tuple, Group] = {}
    member: dict[int, Group] = {}  # slot -> its open group
    done: dict[int, tuple] = {}    # slot -> (closed group, its op): elementwise results of closed groups
    base: dict[int, Any] = {}      # slot -> the buffer it lives in (_OUTSIDE: an input or unknown)
    writes: list = []              # the buffers written so far, in order
    red_slots: set = set()         # results of reductions

    def close(g: Group) -> None:
        if not g.closed:
            g.closed = True
            g.wmark = len(writes)
            if open_.get(g.shape) is g:  # (a reduction's own group is not the open one of its shape)
                del open_[g.shape]
            if g.worth():
                closed.append(g)
                for o in g.ops:
                    if o.red is None and o.step.outs not in g.copies:
                        done[o.step.outs] = (g, o)
            for o in g.ops:
                member.pop(o.step.outs, None)

    def remat(v: int, g: Group) -> list[_Op] | None:
        """The ops of closed group ``G`` computing slot ``v`` from G's operands, if safe and small."""
        G, _ = done[v]
        need: list[_Op] = []
        ext: set = set()
        seen: set = set()

        def walk(u: int) -> bool:
            if u in seen:
                return True
            seen.add(u)
            d = done.get(u)
            if d is None or d[0] is not G:
                ext.add(base.get(u, _OUTSIDE))
                return True
            for w in d[1].step.ins:
                if type(w) is Slot:
                    walk(w.index)
                elif hasattr(w.value, "shape"):
                    ext.add(_OUTSIDE)
            need.append(d[1])
            ext.add(base.get(u, _OUTSIDE))  # a write into the stored result itself also forbids recomputing it
            return len(need) <= REMAT_MAX
        if not walk(v):
            return None
        if ROW_CHAINS and G.red is not None and any(o.step.name in TRANSCENDENTAL for o in need):
            return None  # stored instead: a row chain reads it back from cache (and writes over it)
        for wb in writes[G.wmark:]:
            if wb == _OUTSIDE or wb in ext:
                return None
        order = {id(o): i for i, o in enumerate(G.ops)}
        return sorted((o for o in need if o.step.outs not in g.slots), key=lambda o: order[id(o)])

    for s in steps:
        op = _classify(s, avals, P)
        reads = [x.index for x in s.ins if type(x) is Slot]
        if s.name in WRITES:
            for g in list(open_.values()):
                close(g)  # before the write is counted: a recompute must see it as coming after the group
            if s.name not in EFFECTS:
                dst = s.ins[-1] if s.name == "out" else s.ins[0]
                writes.append(base.get(dst.index, _OUTSIDE) if type(dst) is Slot else _OUTSIDE)
            continue
        if type(s.outs) is int:
            is_fresh = fresh(s)
            first = next((x.index for x in s.ins if type(x) is Slot), None)
            base[s.outs] = s.outs if is_fresh else base.get(first, _OUTSIDE) if first is not None else _OUTSIDE
        elif isinstance(s.outs, tuple):
            for o in s.outs:
                if type(o) is int:
                    base[o] = _OUTSIDE  # multi-result steps (linalg...): unknown, conservatively
        if op is not None and op.red is not None:
            g = member.get(s.ins[0].index)  # (a fusable reduction reads a slot: _classify)
            src_shape = avals[s.ins[0].index][0]
            if g is None or g.shape != src_shape:
                if g is not None:
                    close(g)
                g = Group(src_shape)
            g.ops.append(op)
            g.slots.add(s.outs)
            if not op.red.startswith("cum"):
                red_slots.add(s.outs)
            close(g)
            continue
        shape = s.aval[0] if op is not None else None
        for v in reads:
            g = member.get(v)
            if g is not None and (op is None or g.shape != shape):
                close(g)
        if op is None:
            continue
        g = open_.get(shape)
        if g is None:
            g = open_[shape] = Group(shape)
        for v in reads:
            if v in done and v not in g.slots and done[v][0].shape == shape:
                ops = remat(v, g)
                if ops is not None:
                    for o in ops:
                        g.ops.append(o)
                        g.slots.add(o.step.outs)
                        g.copies.add(o.step.outs)
        g.ops.append(op)
        g.slots.add(s.outs)
        member[s.outs] = g
        if any(v in red_slots for v in reads):
            g.row_feed = True
    for g in list(open_.values()):
        close(g)
    return closed


def _pattern(spec: Slot | Const, dt: Any, avals: list, P: Any, shape: tuple, n0: int, n1: int) -> str:
    """How input ``spec`` is read in the (n0, n1) loop: a :class:`Stride` (``UNIT``, ``BROADCAST``
    along the row, or ``GENERAL``: a stride passed at run time)."""
    strides = None
    if type(spec) is Slot:
        a = avals[spec.index]
        if a is None:
            return Stride.GENERAL
        if not a[2]:  # a view (expand, slice...): the witness's strides, checked again at run time
            strides = a[3]
        ishape = a[0]
    else:
        v = spec.value
        ishape = tuple(v.shape)
        if not P.is_c_contiguous(v):
            return Stride.GENERAL
    isz = dt.itemsize
    st = c_layout_as2d_strides(ishape, isz, shape, n0, n1, strides)
    if st is None:
        return Stride.GENERAL
    return Stride.UNIT if st[1] == isz else Stride.BROADCAST if st[1] == 0 else Stride.GENERAL


class FusedLoop:
    """The C loop of one fused group (what ``_emit`` makes; a fused step keeps it as
    ``params["loop"]``): ``source`` (a ``kernel(n0, n1, ...)`` function), ``ins`` (the operands,
    ``Slot``/``Const``), ``in_dtypes``, ``patterns`` (per operand, how the loop reads it along a row:
    a ``_jitrun.Stride``), ``outs`` (the slots of the stored results) and
    ``loop`` (the ``(n0, n1)`` shape the group's shape collapses to)."""

    __slots__ = ("source", "ins", "in_dtypes", "patterns", "outs", "loop")

    def __init__(self, source: str, ins: list, in_dtypes: list, patterns: list, outs: list, loop: tuple):
        self.source = source
        self.ins = ins
        self.in_dtypes = in_dtypes
        self.patterns = patterns
        self.outs = outs
        self.loop = loop


def _emit(g: Group, later_reads: set, out_slots: set, avals: list, P: Any,
          through: dict | None = None) -> FusedLoop | None:
    """The C loop of group ``g`` (None: it cannot be compiled)."""
    red = g.red
    shape = g.shape
    if red is not None:
        nd = len(shape)
        k = len(red.step.params["axes"]) if "axes" in red.step.params else 1
        if red.red.startswith("col"):  # rows: the reduced (leading) axes; columns: the kept ones
            n0, n1 = math.prod(shape[:k]), math.prod(shape[k:])
        else:
            n0, n1 = math.prod(shape[:nd - k]), math.prod(shape[nd - k:])
    else:
        n1 = shape[-1] if shape else 1
        n0 = math.prod(shape[:-1]) if shape else 1
    made: dict[int, str] = {}
    ins: list = []
    in_dts: list = []
    pats: list = []
    in_names: dict[Any, str] = {}
    body: list[str] = []
    elem = [o for o in g.ops if o.red is None]
    for o in elem:
        s = o.step
        args = []
        for x, dt in zip(s.ins, o.in_dtypes):
            if type(x) is Slot and x.index in made:
                args.append(made[x.index])
                continue
            if type(x) is Const and not hasattr(x.value, "shape"):
                lit = _literal(x.value, dt, "where" if s.name == "where" else "op")
                if lit is None:
                    return None
                args.append(lit)
                continue
            if type(x) is Slot and through and x.index in through:
                # an expand (broadcast) of u: the kernel reads u itself, broadcast to the loop's shape
                x = Slot(through[x.index])
                if x.index in made:
                    args.append(made[x.index])
                    continue
            nm = in_names.get(x)
            if nm is None:
                j = len(ins)
                nm = in_names[x] = f"x{j}"
                ins.append(x)
                in_dts.append(dt)
                pats.append(_pattern(x, dt, avals, P, shape, n0, n1))
            args.append(nm)
        tv = f"t{s.outs}"
        body.append(f"const {'float' if o.dtype in _HALF else _CTYPE[o.dtype]} {tv} = {_expr(o, args)};")
        made[s.outs] = tv
    outs = [o.step.outs for o in elem if (o.step.outs in later_reads or o.step.outs in out_slots)
            and o.step.outs not in g.copies]
    racc = None
    if red is not None:
        src = red.step.ins[0]
        if type(src) is Slot and src.index in made:
            racc = made[src.index]
        else:
            if src not in in_names:
                in_names[src] = f"x{len(ins)}"
                ins.append(src)
                in_dts.append(red.in_dtypes[0])
                pats.append(_pattern(src, red.in_dtypes[0], avals, P, shape, n0, n1))
            racc = in_names[src]
    elif not outs:
        return None
    params = ["long n0", "long n1"]
    for j, (dt, pt) in enumerate(zip(in_dts, pats)):
        extra = f", long x{j}b" if pt == Stride.GENERAL else ""
        params.append(f"const {_CTYPE[dt]}* restrict x{j}p, long x{j}a{extra}")
    for j, o in enumerate(outs):
        params.append(f"{_CTYPE[avals[o][1]]}* restrict y{j}p")
    if red is not None:
        if red.red.startswith("cum"):  # the scan's result: the kernel's last output
            params.append(f"{_CTYPE[red.dtype]}* restrict y{len(outs)}p")
        elif red.red in ("colmax", "colmin"):
            params.append(f"{_CTYPE[red.dtype]}* restrict red")
        else:
            params.append("int64_t* restrict red" if red.red.startswith("arg") else "double* restrict red")

    def loads(cv: str) -> list[str]:
        res = []
        for j, (dt, pt) in enumerate(zip(in_dts, pats)):
            idx = {Stride.UNIT: f"r * x{j}a + {cv}", Stride.BROADCAST: f"r * x{j}a",
                   Stride.GENERAL: f"r * x{j}a + {cv} * x{j}b"}[pt]
            if dt in _HALF:  # the 16-bit pattern, widened (exact)
                res.append(f"const float x{j} = {'rt_h2f' if dt is D.float16 else 'rt_bf2f'}(x{j}p[{idx}]);")
            elif dt is D.bool:  # any nonzero byte is True (as eager's ops read it): 0/1 from here on
                res.append(f"const uint8_t x{j} = (uint8_t)(x{j}p[{idx}] != 0);")
            else:
                res.append(f"const {_CTYPE[dt]} x{j} = x{j}p[{idx}];")
        return res

    def stores(cv: str) -> list[str]:
        cvt = {D.float16: "rt_f2h", D.bfloat16: "rt_f2bf"}  # exact: held values are the format's
        return [f"y{j}p[r * n1 + {cv}] = {cvt.get(avals[o][1], '')}(t{o});" for j, o in enumerate(outs)]

    lines = ["#include <math.h>", "#include <stdint.h>"]
    if any(dt in _HALF for dt in in_dts) or any(o.dtype in _HALF or any(x in _HALF for x in o.in_dtypes)
                                                for o in elem):
        lines.append(_HALF_C)
    if _avx2():
        # glibc's vector math (libmvec, <= 4 ulp in double per its manual): used when the loop vectorises
        for f in TRANSCENDENTAL:
            lines.append(f"#ifdef RT_MVEC\n__attribute__((simd(\"notinbranch\"))) extern double {f}(double);\n"
                         f"__attribute__((simd(\"notinbranch\"))) extern float {f}f(float);\n#endif")
    lines.append(f"void kernel({', '.join(params)}) {{")
    lines.append("  for (long r = 0; r < n0; r++) {")
    if red is None:
        lines.append("    for (long c = 0; c < n1; c++) {")
        lines += ["      " + x for x in loads("c") + body + stores("c")]
        lines.append("    }")
    elif red.red.startswith("col"):
        # red[c]: this chunk's running value of column c, in double (sum) or the element type
        # (max/min, NaN propagating); the runner combines the chunks' rows of partials
        op = red.red[3:]
        T = "double" if op == "sum" else _CTYPE[red.dtype]
        lines.insert(-1, "  for (long c = 0; c < n1; c++) red[c] = "
                     + ("0.0;" if op == "sum" else f"({T}){'-' if op == 'max' else ''}INFINITY;"))
        lines.append("    for (long c = 0; c < n1; c++) {")
        lines += ["      " + x for x in loads("c") + body + stores("c")]
        lines.append(f"      const {T} v = ({T}){racc};")
        if op == "sum":
            lines.append("      red[c] = red[c] + v;")
        else:
            rel = ">" if op == "max" else "<"
            lines.append(f"      red[c] = (red[c] != red[c] || !(v {rel} red[c] || v != v)) ? red[c] : v;")
        lines.append("    }")
    elif red.red.startswith("cum"):
        T = _CTYPE[red.dtype]
        step = _SCAN_OP[red.red].format(a="acc", b="v")
        lines.append(f"    {T} acc = 0;")
        lines.append("    for (long c = 0; c < n1; c++) {")
        lines += ["      " + x for x in loads("c") + body + stores("c")]
        lines.append(f"      const {T} v = {racc};")
        lines.append(f"      acc = (c == 0) ? v : {step};")
        lines.append(f"      y{len(outs)}p[r * n1 + c] = acc;")
        lines.append("    }")
    elif red.red.startswith("arg"):
        T = _CTYPE[red.in_dtypes[0]]
        rel = ">" if red.red == "argmax" else "<"
        lines.append(f"    {T} best = 0; long bi = -1; int nan = 0;")
        lines.append("    for (long c = 0; c < n1; c++) {")
        lines += ["      " + x for x in loads("c") + body + stores("c")]
        lines.append(f"      const {T} v = {racc};")
        lines.append("      if (!nan) {")
        lines.append("        if (v != v) { nan = 1; bi = c; }")
        lines.append(f"        else if (bi < 0 || v {rel} best) {{ best = v; bi = c; }}")
        lines.append("      }")
        lines.append("    }")
        lines.append("    red[r] = (int64_t)bi;")
    else:
        rop = red.red
        # per row, blocks of 256 columns: one vectorisable loop computes the chain into buf (and
        # stores what is written out), then the block is reduced
        # sum: in double; max/min: in the element type (exact either way)
        BT = "double" if rop == "sum" else _CTYPE[red.dtype]
        lines.append(f"    {BT} buf[256];")
        if rop == "sum":
            # element c goes to lane c % 8 (8 lanes, in order), except a row's last n1 % 8 elements,
            # which go to `tail`; lanes combined pairwise, then + tail: all in double
            lines.append("    double a[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};")
            lines.append("    double tail = 0.0;")
        else:
            inf = "-INFINITY" if rop == "max" else "INFINITY"
            lines.append(f"    {BT} a[8] = {{{', '.join([f'({BT}){inf}'] * 8)}}};")
            lines.append(f"    {BT} q[8] = {{{', '.join(['0'] * 8)}}};")
        lines.append("    for (long b0 = 0; b0 < n1; b0 += 256) {")
        lines.append("      const long nb = (n1 - b0 < 256) ? n1 - b0 : 256;")
        lines.append("      for (long i = 0; i < nb; i++) {")
        lines.append("        const long c = b0 + i;")
        lines += ["        " + x for x in loads("c") + body + stores("c")]
        lines.append(f"        buf[i] = ({BT}){racc};")
        lines.append("      }")
        if rop == "sum":
            lines.append("      const long n8 = nb & ~7L;")
            lines.append("      for (long j = 0; j < n8; j += 8)")
            lines.append("        for (int l = 0; l < 8; l++) a[l] = a[l] + buf[j + l];")
            lines.append("      for (long j = n8; j < nb; j++) tail = tail + buf[j];")
        else:
            rel = ">" if rop == "max" else "<"
            # 8 lanes of selects (vectorised); NaN is tracked apart and wins (exact: max/min round
            # nothing; which of -0. and 0. wins a tie is not specified)
            # (the NaN tracker is a select in the element type, so the loop vectorises)
            lines.append("      const long n8 = nb & ~7L;")
            IT = "int32_t" if BT == "float" else "int64_t"
            lines.append(f"      typedef {BT} vT __attribute__((vector_size(8 * sizeof({BT}))));")
            lines.append(f"      typedef {IT} vI __attribute__((vector_size(8 * sizeof({BT}))));")
            lines.append("      vT av; vI qv = {0};")
            lines.append("      __builtin_memcpy(&av, a, sizeof av);")
            lines.append("      for (long j = 0; j < n8; j += 8) {")
            lines.append("        vT v; __builtin_memcpy(&v, buf + j, sizeof v);")
            lines.append(f"        const vI mk = v {rel} av;")
            lines.append("        av = (vT)(((vI)v & mk) | ((vI)av & ~mk));")
            lines.append("        qv |= (v != v);")
            lines.append("      }")
            lines.append("      __builtin_memcpy(a, &av, sizeof av);")
            lines.append("      for (int l = 0; l < 8; l++) q[l] = qv[l] ? (" + BT + ")NAN : q[l];")
            lines.append("      for (long j = n8; j < nb; j++) {")
            lines.append(f"        const {BT} v = buf[j];")
            lines.append(f"        a[0] = (v {rel} a[0]) ? v : a[0];")
            lines.append("        q[0] = (v != v) ? v : q[0];")
            lines.append("      }")
        lines.append("    }")
        if rop == "sum":
            lines.append("    red[r] = (((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))) + tail;")
        else:
            lines.append(f"    {BT} m = a[0];")
            lines.append(f"    for (int l = 1; l < 8; l++) m = (a[l] {rel} m) ? a[l] : m;")
            lines.append("    int nn = 0;")
            lines.append("    for (int l = 0; l < 8; l++) nn |= (q[l] != q[l]);")
            lines.append("    red[r] = nn ? (double)NAN : m;")
    lines.append("  }")
    lines.append("}")
    return FusedLoop("\n".join(lines) + "\n", ins, in_dts, pats, outs, (n0, n1))


#: the compiler flags (part of a kernel's cache key).  -fno-trapping-math: floating-point exception
#: flags are not part of the contract, and without it GCC keeps ``where``'s selects as branches (no
#: vector loop; a data-dependent branch per element); values are unchanged (no fast-math, no contraction)
_FLAGS = ("-O3", "-fno-fast-math", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math", "-shared", "-fPIC")
#: (plus -mavx2 where the CPU has AVX2, and -mavx512f where it has AVX-512F: softmax's row chain, whose
#: time is mostly expf, ran 20-35% faster with libmvec's 16-lane functions in interleaved runs)


def _compile(cc: str, tmp_c: str, tmp_so: str, mvec: bool) -> subprocess.CompletedProcess:
    flags = list(_FLAGS)
    if _avx2():
        flags += ["-mavx2"]
    if _avx512():
        flags += ["-mavx512f"]
    if mvec:
        flags += ["-DRT_MVEC"]
    libs = ["-lmvec", "-lm"] if mvec else ["-lm"]
    return subprocess.run([cc, *flags, "-o", tmp_so, tmp_c, *libs], capture_output=True, text=True, timeout=60)


def _entry_v(src: str) -> str:
    """``kernel_v(const int64_t *A)``: the entry point calling ``src``'s ``kernel`` with its arguments
    read from one vector (integers as they are, pointers from their addresses)."""
    line = next(ln for ln in src.splitlines() if ln.startswith("void kernel("))
    params = line[len("void kernel("):line.rindex(")")].split(", ")
    args = []
    for i, p in enumerate(params):
        name = p.split()[-1]
        ctype = " ".join(w for w in p[:-len(name)].split() if w != "restrict")
        args.append(f"({ctype})(intptr_t)A[{i}]" if "*" in ctype else f"({ctype})A[{i}]")
    return f"void kernel_v(const int64_t* A) {{\n  kernel({', '.join(args)});\n}}\n"


def _load(src: str) -> Any:
    """The compiled kernel of ``src`` (memory cache, then disk cache, then the compiler), or None.

    The disk cache is trusted only as ``_cache`` verifies it: a private folder, a library that is a
    regular file of the user with an intact seal; anything else (a truncated or altered library, one
    without the entry points) is compiled again, never loaded."""
    src = src + _entry_v(src)
    h = hashlib.sha256((src + f"|avx2={_avx2()}|avx512={_avx512()}|{' '.join(_FLAGS)}").encode()).hexdigest()[:32]
    fn = _MEM.get(h)
    if fn is not None:
        return fn
    configured = cache_dir()
    if configured is None:
        return None
    cc = _compiler()
    if cc is None:
        _warn(_CC_STATE[os.environ.get("CC") or "cc"][1])
        return None
    try:
        folder = _cache.private_folder(configured)
    except OSError as e:
        _warn(f"cannot create the cache folder {configured!r}: {e}")
        return None
    name = f"k{h}.so"
    for attempt in range(2):
        data = _cache.read_kernel(folder, name) if attempt == 0 else None
        if data is None:
            data = _build(cc, src, h, folder, name)
            if data is None:
                return None
        try:
            lib = _cache.load_verified(folder, data, f"k{h}")
        except OSError as e:
            _warn(f"cannot load the kernel {name!r} of {folder.path!r}: {e}")
            return None
        try:
            fn = Kernel(lib)
        except AttributeError:  # no entry point: not a kernel of this library; compiled again
            _cache.remove(folder, name)
            continue
        _MEM.put(h, fn)
        return fn
    _warn(f"the kernel {name!r} compiled by {cc} has no entry point")
    return None


def _build(cc: str, src: str, h: str, folder: Any, name: str) -> bytes | None:
    """Compile ``src`` into ``folder`` as ``name`` (sealed); its bytes, or None (warned)."""
    fd, tmp_c = tempfile.mkstemp(suffix=".c", prefix=f"k{h}.tmp", dir=folder.path)
    tmp_so = tmp_c[:-2] + ".so"
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(src)
        while True:
            mvec = _avx2() and _CC_STATE.get("mvec", True)
            r = _compile(cc, tmp_c, tmp_so, mvec)
            if r.returncode == 0:
                break
            if _avx512():  # e.g. a compiler or libmvec without AVX-512: AVX2 from now on
                _CC_STATE["avx512"] = False
            elif mvec:  # no libmvec: scalar libm calls from now on
                _CC_STATE["mvec"] = False
            else:
                break
        if r.returncode != 0:
            _warn(f"{cc} failed: {r.stderr.strip()[:300]}")
            return None
        # sealed and renamed into place (atomic: a concurrent compiler's identical library may win)
        data = _cache.seal_file(folder, os.path.basename(tmp_so), name)
        _cache.trim(folder, keep=name)
        return data
    except (OSError, subprocess.SubprocessError) as e:
        _warn(f"running {cc} failed: {e}")
        return None
    finally:
        for p in (tmp_c, tmp_so):
            try:
                os.unlink(p)
            except OSError:
                pass


def load_in_place(src: str) -> Any:
    """Kernel ``src`` compiled without ``restrict`` (a result may then share memory with an operand
    read at the same element: ``rt.jit(..., donate_argnums=...)``), or None."""
    # same-element reads and writes: vectorising stays right (each vector is loaded before it is
    # stored); ivdep spares the loop GCC's overlap test, which would pick the scalar version
    src = src.replace(" restrict ", " ").replace("    for (long c = 0;", "    #pragma GCC ivdep\n    for (long c = 0;")
    return _load(src)


def _trim_disk_cache(folder: str, keep: str) -> None:
    """Delete the kernel libraries of ``folder`` used least recently until they fit
    ``disk_cache_limit()``; never ``keep`` (a library's name)  (``_cache.trim``)."""
    try:
        f = _cache.private_folder(folder)
    except OSError:
        return
    _cache.trim(f, os.path.basename(keep))


def _expands_read(members: list[Step], expands: dict) -> list[Step]:
    """The expand steps (and the expands they read) whose results ``members`` read, in order."""
    need: list[Step] = []
    seen: set = set()

    def add(v: int) -> None:
        st = expands.get(v)
        if st is None or v in seen:
            return
        seen.add(v)
        add(st.ins[0].index)
        need.append(st)
    for m in members:
        for x in m.ins:
            if type(x) is Slot:
                add(x.index)
    return need


def _replayer(members: list[Step], in_specs: list, outs: list, pre: list | tuple = ()) -> Any:
    """Runs a group's original steps (the fallback of a fused step); ``pre``: the expands whose
    results the kernel read through their operands (recomputed first)."""
    # (operands, result slot) per step; the environment maps operands (Slot, Const) to values
    pre_ops = [(s.fn, s.ins[0], Slot(s.outs)) for s in pre]
    ops = [(s.fn, s.ins, Slot(s.outs)) for s in members]
    res = [Slot(o) for o in outs]

    def run(*xs: Any) -> tuple:
        env: dict = dict(zip(in_specs, xs))
        for fn, x, o in pre_ops:
            env[o] = fn(env[x])
        for fn, ins, o in ops:
            env[o] = fn(*[env[x] if x in env else x.value for x in ins])
        return tuple(env[o] for o in res)
    return run


def _ext_reads(g: Group) -> set:
    """Slots group ``g`` reads from outside (its kernel's slot operands)."""
    made = set()
    res = set()
    for o in g.ops:
        ins = o.step.ins if o.red is None else o.step.ins[:1]
        for x in ins:
            if type(x) is Slot and x.index not in made:
                res.add(x.index)
        if o.red is None:
            made.add(o.step.outs)
    return res


def fuse_program(prog: Any) -> int:
    """Replace the fusable groups of ``prog.steps`` (a program of the NumPy backend) by compiled steps;
    the number of kernels made.  Row chains (``._chains``) are formed afterwards by the caller."""
    if cache_dir() is None or not ENABLED:
        return 0
    steps = prog.steps
    avals = prog.avals
    out_slots = set(prog.out_slots)
    groups = _groups(steps, avals, prog.P, out_slots)
    if not groups:
        return 0
    # expand (broadcast) results read by kernels: the kernel reads the expand's operand instead
    expands: dict[int, Step] = {}
    through: dict[int, int] = {}
    for st in steps:
        if st.name == "expand" and type(st.outs) is int and st.ins and type(st.ins[0]) is Slot \
                and avals[st.ins[0].index] is not None:
            expands[st.outs] = st
            u = st.ins[0].index
            through[st.outs] = through.get(u, u)
    built: dict[int, Step] = {}
    for _ in range(len(groups) + 1):
        # what must be stored: program outputs, reads of the steps left in the list, groups' operands
        dropped = {id(st) for g in groups for st in g.own()}
        needed = set(out_slots)
        for st in steps:
            if id(st) not in dropped:
                needed.update(x.index for x in st.ins if type(x) is Slot)
        for g in groups:
            needed |= _ext_reads(g)
        built = {}
        failed = None
        for g in groups:
            fl = _emit(g, needed, set(), avals, prog.P, through)
            fn = None if fl is None else _load(fl.source)
            if fn is None:
                failed = g
                break
            red = g.red
            reduction = None
            res = list(fl.outs)
            odts = [avals[o][1] for o in fl.outs]
            scan = red is not None and red.red.startswith("cum")
            if scan:  # the scan's result is the kernel's last output, of the loop's shape
                odts.append(red.dtype)
                res.append(red.step.outs)
            elif red is not None:
                axes = red.step.params.get("axes", (-1,))
                reduction = Reduction(red.red, red.dtype, red.step.aval[0],
                                      len(axes) == len(g.shape) and "axes" in red.step.params)
                res.append(red.step.outs)
            members = [o.step for o in g.ops]
            run = make_runner(fn, g.shape, fl.in_dtypes, fl.patterns, odts, fl.loop, reduction,
                              _replayer(members, fl.ins, res, _expands_read(members, expands)), rows_only=scan)
            built[id(g)] = Step("fused", run, tuple(fl.ins), tuple(res),
                                {"n_ops": len(g.ops), "source": fl.source, "loop": fl, "reduction": reduction,
                                 "gshape": g.shape, "scan": scan})
        if failed is None:
            break
        groups = [g for g in groups if g is not failed]
    replace = {id(g.ops[-1].step): built[id(g)] for g in groups if id(g) in built}
    drop = {id(st) for g in groups if id(g) in built for st in g.own()}
    new = []
    for st in steps:
        if id(st) in replace:
            new.append(replace[id(st)])
        elif id(st) not in drop:
            new.append(st)
    prog.steps = new
    return len(built)


def recycle_outputs(prog: Any) -> int:
    """Matrix products of float32/float64 write into a buffer their step keeps between calls
    (``_jitrun.Outputs``: reused once nothing refers to the previous result); the number of steps."""
    if cache_dir() is None or not ENABLED:
        return 0
    n = 0
    for i, st in enumerate(prog.steps):
        av = st.aval
        if st.name == "matmul" and av is not None and av[1] in _FLOAT and av[2] and len(av[0]) >= 2 \
                and not st.params.get("recycled"):
            new = Step("matmul", make_matmul(st.fn, av[0], av[1]), st.ins, st.outs, {**st.params, "recycled": True})
            new.aval = av
            prog.steps[i] = new
            n += 1
    return n


#: turned off by tests to compare row-chained and separate kernels
ROW_CHAINS = True
