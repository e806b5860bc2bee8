"""Shared oracle helpers of the math tests (elementwise, reductions, products, sorting).

Inputs are NumPy views with random strides (negative steps, steps of 2,
transposes) filled with random values, including the extremes of integer types
and NaN/inf/-0.0 for floats; ``check`` compares a tensor with an oracle's result
exactly for integers and bool, to the dtype's precision for floats.

The elementwise oracles (``BIN``, ``OPS``, ``UN``, ``binary_oracle``, ``unary_oracle``) compute
expected results independently of runetensor: exact Python integer arithmetic wrapped to the
type's width for integers, NumPy ufuncs for floats (low-precision floats in float32, rounded
once), with NumPy's floating-point warnings silenced (the inputs hold inf/NaN on purpose).
"""
import math

import numpy as np
from hypothesis import strategies as st

import runetensor as rt

from helpers import NP

ALL = list(NP)
FLOATS = [d for d in ALL if d.kind == "f"]
INTS = [d for d in ALL if d.kind in "iu"]
LOWP = {rt.float16, rt.bfloat16, rt.float8_e4m3, rt.float8_e5m2}
TOL = {rt.float64: 1e-12, rt.float32: 1e-5, rt.float16: 2e-3, rt.bfloat16: 1e-2, rt.float8_e4m3: 0.13,
       rt.float8_e5m2: 0.26, rt.complex64: 1e-5, rt.complex128: 1e-12}


# ---------------------------------------------------------------------------
# strategies: random values in random strided views
# ---------------------------------------------------------------------------
def int_range(d):
    if d.kind == "i":
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


def wrap_int(v, d):
    """Python int ``v`` wrapped to dtype ``d`` (two's complement)."""
    m = 1 << d.bits
    v %= m
    if d.kind == "i" and v >= m // 2:
        v -= m
    return v


def gen_values(rng, d, shape, specials=True):
    """A C-contiguous NumPy array of dtype ``d`` with random values."""
    n = int(np.prod(shape)) if shape else 1
    if d.kind == "b":
        v = rng.random(n) < 0.5
    elif d.kind in "iu":
        lo, hi = int_range(d)
        small = rng.integers(max(lo, -5), min(hi, 5) + 1, size=n)
        edge = np.array([lo, hi, lo + 1, hi - 1, 0, 1, -1 if lo < 0 else 2], dtype=object)
        vals = [int(x) for x in small]
        for i in range(n):
            r = rng.random()
            if r < 0.3:
                vals[i] = int(rng.integers(lo, hi, endpoint=True, dtype=np.uint64 if d is rt.uint64 else np.int64))
            elif r < 0.45:
                vals[i] = int(edge[rng.integers(len(edge))])
        v = np.array(vals, dtype=object)
        if d.bits > 8:
            v = v.astype(NP[d])
        else:
            v = v.astype(np.int16).astype(NP[d])
    else:
        scale = rng.choice([1.0, 4.0, 100.0])
        v = rng.standard_normal(n) * scale
        v = np.where(rng.random(n) < 0.3, np.round(v), v)
        if d.kind == "c":
            v = v + 1j * rng.standard_normal(n) * scale
        if specials:
            sp = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.5, 1.0])
            mask = rng.random(n) < 0.15
            v = np.where(mask, sp[rng.integers(len(sp), size=n)], v)
    return np.asarray(v).astype(NP[d]).reshape(shape)


@st.composite
def strided(draw, d, shape=None, specials=True, max_dims=3):
    """A NumPy view of dtype ``d`` (random strides) holding random values."""
    if shape is None:
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=max_dims)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    vals = gen_values(rng, d, shape, specials)
    steps = [draw(st.sampled_from([1, -1, 2, -2])) for _ in shape]
    perm = list(range(len(shape)))
    if len(shape) > 1 and draw(st.booleans()):
        perm = draw(st.permutations(perm))
    pshape = [shape[p] for p in perm]
    base = np.zeros([2 * s + 1 for s in pshape], dtype=NP[d])
    key = []
    for s, st_ in zip(pshape, [steps[p] for p in perm]):
        if st_ == 1:
            key.append(slice(1, s + 1))
        elif st_ == -1:
            key.append(slice(s, 0, -1) if s else slice(0, 0))
        elif st_ == 2:
            key.append(slice(0, 2 * s, 2))
        else:
            key.append(slice(2 * s, 0, -2) if s else slice(0, 0))
    view = base[tuple(key)] if key else base[...]
    inv = np.argsort(perm)
    view = view.transpose(inv) if len(shape) > 1 else view
    assert view.shape == tuple(shape), (view.shape, shape)
    view[...] = vals
    return view


@st.composite
def broadcast_pair(draw, da, db, specials=True):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
    k = draw(st.integers(0, len(shape)))
    other = tuple(1 if draw(st.booleans()) else s for s in shape[len(shape) - k:])
    if draw(st.booleans()):
        shape, other = other, shape
    return draw(strided(da, shape, specials)), draw(strided(db, other, specials))


def host(t):
    return np.array(rt.to_numpy(t))


def exact_int(a):
    """NumPy int/bool array -> object array of Python ints."""
    if a.dtype.kind == "b":
        return a.astype(np.int64).astype(object)
    if a.dtype.itemsize == 1 and a.dtype.kind not in "iu":  # int4 / uint4 (ml_dtypes)
        return a.astype(np.int16).astype(object)
    return a.astype(object)


def to_dtype(obj, d):
    """Object array of Python ints -> NumPy array of dtype ``d`` (values already in range)."""
    a = np.asarray(obj, dtype=object)
    if d.kind == "b":
        return a.astype(bool)
    if d.bits <= 8:
        return a.astype(np.int16).astype(NP[d])
    return a.astype(NP[d])


def check(t, expected, d, zero_sign=True):
    """``t`` has dtype ``d`` and matches ``expected`` (exactly for ints/bool; to the dtype's precision for floats)."""
    assert t.dtype is d, (t.dtype, d)
    got = host(t)
    exp = np.asarray(expected)
    assert got.shape == exp.shape, (got.shape, exp.shape)
    if d.kind in "biu":
        np.testing.assert_array_equal(exact_int(got), exact_int(exp.astype(NP[d])))
    elif d.kind == "c":
        np.testing.assert_allclose(got.astype(np.complex128), exp.astype(np.complex128), rtol=TOL[d], atol=1e-30,
                                   equal_nan=True)
    else:
        g, e = got.astype(np.float64), exp.astype(NP[d]).astype(np.float64)
        np.testing.assert_allclose(g, e, rtol=TOL[d], atol=1e-30, equal_nan=True)
        fin = np.isfinite(e) & (e == 0) & zero_sign
        np.testing.assert_array_equal(np.signbit(g[fin]), np.signbit(e[fin]))


# ---------------------------------------------------------------------------
# elementwise oracles: float computation
# ---------------------------------------------------------------------------
def compute(fn, arrays, d, bool_result=False):
    """NumPy oracle on float/complex arrays: low-precision floats in float32, rounded once."""
    with np.errstate(all="ignore"):  # the oracle meets inf/NaN/overflow on purpose: no warnings
        if d in LOWP:
            r = fn(*[np.asarray(a).astype(np.float32) for a in arrays])
            return r if bool_result else np.asarray(r).astype(NP[d])
        return fn(*[np.asarray(a) for a in arrays])


# ---------------------------------------------------------------------------
# elementwise oracles (tests/test_elementwise.py): binary functions
# ---------------------------------------------------------------------------
def tdiv(x, y):
    if y == 0:
        return 0
    q = abs(x) // abs(y)
    return -q if (x < 0) != (y < 0) else q


def ipow(x, y, d):
    if y >= 0:
        return pow(x, y, 1 << d.bits)
    if x == 1:
        return 1
    if x == -1:
        return -1 if y % 2 else 1
    return 0


#: name -> (rule, int oracle on Python ints, float oracle on NumPy arrays)
BIN = {
    "add": ("num", lambda x, y, d: x + y, np.add),
    "sub": ("num", lambda x, y, d: x - y, np.subtract),
    "mul": ("num", lambda x, y, d: x * y, np.multiply),
    "div": ("int", lambda x, y, d: tdiv(x, y), np.true_divide),
    "pow": ("int", ipow, np.power),
    "mod_": ("intord", lambda x, y, d: 0 if y == 0 else x - tdiv(x, y) * y, np.fmod),
    "maximum": ("ord", lambda x, y, d: max(x, y), np.maximum),
    "minimum": ("ord", lambda x, y, d: min(x, y), np.minimum),
    "atan2": ("real", None, np.arctan2),
    "hypot": ("real", None, np.hypot),
    "cmplt": ("cmp", lambda x, y, d: x < y, np.less), "less": ("cmp", lambda x, y, d: x < y, np.less),
    "cmpgt": ("cmp", lambda x, y, d: x > y, np.greater), "greater": ("cmp", lambda x, y, d: x > y, np.greater),
    "cmple": ("cmp", lambda x, y, d: x <= y, np.less_equal),
    "less_equal": ("cmp", lambda x, y, d: x <= y, np.less_equal),
    "cmpge": ("cmp", lambda x, y, d: x >= y, np.greater_equal),
    "greater_equal": ("cmp", lambda x, y, d: x >= y, np.greater_equal),
    "cmpeq": ("eq", lambda x, y, d: x == y, np.equal), "equal": ("eq", lambda x, y, d: x == y, np.equal),
    "cmpne": ("eq", lambda x, y, d: x != y, np.not_equal),
    "not_equal": ("eq", lambda x, y, d: x != y, np.not_equal),
    "logical_and": ("logic", lambda x, y, d: bool(x) and bool(y), np.logical_and),
    "logical_or": ("logic", lambda x, y, d: bool(x) or bool(y), np.logical_or),
    "logical_xor": ("logic", lambda x, y, d: bool(x) != bool(y), np.logical_xor),
    "bitwise_and": ("bits", lambda x, y, d: x & y, None),
    "bitwise_or": ("bits", lambda x, y, d: x | y, None),
    "bitwise_xor": ("bits", lambda x, y, d: x ^ y, None),
}
def floordiv_std(a, b):
    """NumPy's floor_divide, but ``floor(a / b)`` where a float operand is infinite (the Array API's
    rule, which runetensor's ``//`` follows: ``inf // 2 == inf``, ``1 // -inf == -0.0``)."""
    r = np.floor_divide(a, b)
    if r.dtype.kind != "f":
        return r
    return np.where(np.isinf(a) | np.isinf(b), np.floor(np.true_divide(a, b)), r).astype(r.dtype)


#: Python operators: name -> (operator, BIN-style entry)
OPS = {
    "+": (lambda a, b: a + b, "num", lambda x, y, d: x + y, np.add),
    "-": (lambda a, b: a - b, "num", lambda x, y, d: x - y, np.subtract),
    "*": (lambda a, b: a * b, "num", lambda x, y, d: x * y, np.multiply),
    "/": (lambda a, b: a / b, "true", None, np.true_divide),
    "//": (lambda a, b: a // b, "intord", lambda x, y, d: 0 if y == 0 else x // y, floordiv_std),
    "%": (lambda a, b: a % b, "intord", lambda x, y, d: 0 if y == 0 else x % y, np.remainder),
    "**": (lambda a, b: a ** b, "int", ipow, np.power),
    "&": (lambda a, b: a & b, "bits", lambda x, y, d: x & y, None),
    "|": (lambda a, b: a | b, "bits", lambda x, y, d: x | y, None),
    "^": (lambda a, b: a ^ b, "bits", lambda x, y, d: x ^ y, None),
    "<": (lambda a, b: a < b, "cmp", lambda x, y, d: x < y, np.less),
    "<=": (lambda a, b: a <= b, "cmp", lambda x, y, d: x <= y, np.less_equal),
    ">": (lambda a, b: a > b, "cmp", lambda x, y, d: x > y, np.greater),
    ">=": (lambda a, b: a >= b, "cmp", lambda x, y, d: x >= y, np.greater_equal),
    "==": (lambda a, b: a == b, "eq", lambda x, y, d: x == y, np.equal),
    "!=": (lambda a, b: a != b, "eq", lambda x, y, d: x != y, np.not_equal),
}


def expected_dtype(rule, d):
    """(result dtype, compute dtype) for a same-dtype binary op, or None if it must raise TypeError."""
    k = d.kind
    if rule in ("cmp", "ord", "intord") and k == "c":
        return None
    if rule == "bits" and k not in "biu":
        return None
    if rule in ("real",) and k == "c":
        return None
    if rule in ("cmp", "eq", "logic"):
        return rt.bool, d
    if rule in ("int", "intord") and k == "b":
        return rt.int64, rt.int64
    if rule in ("real", "true") and k in "biu":
        return rt.float64, rt.float64
    return d, d


def binary_oracle(rule, ifn, ffn, a, b, d):
    """Expected (dtype, values) for ``a op b`` with both of dtype ``d``; None if TypeError is expected."""
    e = expected_dtype(rule, d)
    if e is None:
        return None
    rd, cd = e
    if rule == "num" and d is rt.bool and ifn is not None and ffn is np.subtract:
        return None  # NumPy: no boolean subtract
    A, B = np.broadcast_arrays(a, b)
    if cd.kind in "biu" and ifn is not None:
        X, Y = exact_int(A), exact_int(B)
        out = np.empty(X.shape, dtype=object)
        for i in np.ndindex(X.shape):
            v = ifn(X[i], Y[i], cd)
            out[i] = v if rd is rt.bool else wrap_int(int(v), rd)
        return rd, to_dtype(out, rd)
    if cd.kind in "biu" and ffn is None:
        return None
    if cd is not d:  # integers computed as float64
        A, B = A.astype(np.float64), B.astype(np.float64)
    return rd, compute(ffn, (A, B), cd, rd is rt.bool)


# ---------------------------------------------------------------------------
# elementwise oracles: unary functions
# ---------------------------------------------------------------------------
def round_half_away(x):
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    for i in np.ndindex(x.shape):
        v = float(x[i])
        if not math.isfinite(v):
            out[i] = v
            continue
        f = math.floor(abs(v))
        r = f + (1 if abs(v) - f >= 0.5 else 0)
        out[i] = math.copysign(r, v)
    return out


def int_sign(x, d):
    return (x > 0) - (x < 0)


def int_recip(x, d):
    return {1: 1, -1: -1}.get(x, 0)


#: name -> (rule, int oracle, float oracle)
#:  rules: "float" (integers -> float64), "num", "realnum" (no complex; integers unchanged),
#:         "pred" (-> bool), "bits"
UN = {
    "neg": ("num", lambda x, d: -x, np.negative),
    "abs": ("num", lambda x, d: abs(x), np.abs),
    "sign": ("num", int_sign, np.sign),
    "square": ("num", lambda x, d: x * x, np.square),
    "recip": ("num", int_recip, np.reciprocal),
    "conjugate": ("num", lambda x, d: x, np.conjugate),
    "sqrt": ("float", None, np.sqrt), "rsqrt": ("float", None, lambda x: 1 / np.sqrt(x)),
    "log": ("float", None, np.log), "log2": ("float", None, np.log2), "exp": ("float", None, np.exp),
    "exp2": ("float", None, np.exp2), "sin": ("float", None, np.sin), "cos": ("float", None, np.cos),
    "tan": ("float", None, np.tan), "asin": ("float", None, np.arcsin), "acos": ("float", None, np.arccos),
    "atan": ("float", None, np.arctan), "sinh": ("float", None, np.sinh), "cosh": ("float", None, np.cosh),
    "tanh": ("float", None, np.tanh), "asinh": ("float", None, np.arcsinh),
    "acosh": ("float", None, np.arccosh), "atanh": ("float", None, np.arctanh),
    "trunc": ("realnum", lambda x, d: x, np.trunc), "ceil": ("realnum", lambda x, d: x, np.ceil),
    "floor": ("realnum", lambda x, d: x, np.floor), "round": ("realnum", lambda x, d: x, round_half_away),
    "isnan": ("pred", lambda x, d: False, np.isnan), "isinf": ("pred", lambda x, d: False, np.isinf),
    "isfinite": ("pred", lambda x, d: True, np.isfinite),
    "logical_not": ("num", lambda x, d: 1 - x, lambda x: 1 - x),
    "bitwise_not": ("bits", lambda x, d: ~x, None), "invert": ("bits", lambda x, d: ~x, None),
}


def unary_oracle(name, a, d):
    rule, ifn, ffn = UN[name]
    k = d.kind
    if d is rt.bool:
        if name in ("neg", "recip"):
            return None
        if name == "logical_not":
            return rt.bool, ~a
        if name in ("bitwise_not", "invert"):
            return rt.bool, ~a
        if name == "square":
            return rt.int64, a.astype(np.int64)
        if rule == "num" or rule == "realnum":
            return rt.bool, a
    if rule == "bits" and k not in "biu":
        return None
    if rule == "realnum" and k == "c":
        return None
    if k in "iu":
        if rule == "float":
            return rt.float64, compute(ffn, (a.astype(np.float64),), rt.float64)
        X = exact_int(a)
        out = np.empty(X.shape, dtype=object)
        for i in np.ndindex(X.shape):
            v = ifn(X[i], d)
            out[i] = v if rule == "pred" else wrap_int(int(v), d)
        rd = rt.bool if rule == "pred" else d
        return rd, to_dtype(out, rd)
    if k == "b" and rule == "float":
        return rt.float64, compute(ffn, (a.astype(np.float64),), rt.float64)
    if rule == "pred":
        return rt.bool, compute(ffn, (a,), d, True)
    rd = d.real_dtype if name == "abs" else d
    if name == "logical_not" and d in LOWP:
        return d, (1 - a.astype(np.float32)).astype(NP[d])
    return rd, compute(ffn, (a,), d)
