"""Shared oracle helpers of the math tests (elementwise, reductions, products, sorting).

Inputs are NumPy views with random strides (negative steps, steps of 2,
transposes) filled with random values, including the extremes of integer types
and NaN/inf/-0.0 for floats; ``check`` compares a tensor with an oracle's result
exactly for integers and bool, to the dtype's precision for floats.
"""
import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import runetensor as rt

NP = {rt.float16: np.float16, rt.float32: np.float32, rt.float64: np.float64, rt.bfloat16: ml_dtypes.bfloat16,
      rt.float8_e4m3: ml_dtypes.float8_e4m3fn, rt.float8_e5m2: ml_dtypes.float8_e5m2, rt.int4: ml_dtypes.int4,
      rt.uint4: ml_dtypes.uint4, rt.int8: np.int8, rt.uint8: np.uint8, rt.int16: np.int16, rt.uint16: np.uint16,
      rt.int32: np.int32, rt.uint32: np.uint32, rt.int64: np.int64, rt.uint64: np.uint64, rt.bool: np.bool_,
      rt.complex64: np.complex64, rt.complex128: np.complex128}
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
