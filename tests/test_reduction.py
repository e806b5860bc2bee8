"""Reductions and cumulative ops: seed examples, NumPy/Python oracles over dtypes x strides x axes, errors."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runetensor as rt
from oracle import (ALL, LOWP, NP, TOL, check, exact_int, host, strided, to_dtype, wrap_int)

FEW = settings(max_examples=max(10, settings.default.max_examples // 2))
REAL = [d for d in ALL if d.kind != "c"]


@st.composite
def axes_for(draw, ndim):
    """(rt axes argument, normalised NumPy axis tuple)."""
    kind = draw(st.sampled_from(["none", "list", "list", "empty"]))
    if kind == "none" or ndim == 0:
        return (None, tuple(range(ndim))) if kind != "empty" else ([], ())
    if kind == "empty":
        return [], ()
    ax = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    given_ = [a - ndim if draw(st.booleans()) else a for a in ax]
    return given_, tuple(sorted(ax))


@st.composite
def reduce_case(draw, dtypes, specials=True):
    """(dtype, strided NumPy input, rt axes argument, normalised axis tuple, keepdims)."""
    d = draw(st.sampled_from(dtypes))
    a = draw(strided(d, specials=specials))
    axes, ax = draw(axes_for(a.ndim))
    return d, a, axes, ax, draw(st.booleans())


def cdt(d):
    """The NumPy dtype a float reduction computes in."""
    return np.float32 if d in LOWP else NP[d]


def int_reduce(fn, a, ax, keepdims, d):
    X = exact_int(a)
    r = fn(X, axis=ax, keepdims=keepdims) if ax else X.copy()
    r = np.asarray(r, dtype=object)
    out = np.empty(r.shape, dtype=object)
    for i in np.ndindex(r.shape):
        out[i] = wrap_int(int(r[i]), d)
    return to_dtype(out, d)


@pytest.mark.parametrize("name", ["sum", "prod"])
@FEW
@given(data=st.data())
def test_sum_prod_match_oracle(name, data):
    d, a, axes, ax, keep = data.draw(reduce_case(ALL, specials=False))
    r = getattr(rt, name)(rt.from_numpy(a), axes=axes, keepdims=keep)
    npf = np.sum if name == "sum" else np.prod
    if d.kind in "biu":
        rd = rt.int64 if d is rt.bool else d
        check(r, int_reduce(npf, a, ax, keep, rd), rd)
    else:
        with np.errstate(all="ignore"):
            e = npf(a.astype(cdt(d)), axis=ax, keepdims=keep, dtype=cdt(d)) if ax else a.astype(cdt(d))
        n = max(1, int(np.prod([a.shape[i] for i in ax])))
        assert r.dtype is d and r.shape == np.shape(e)
        got = host(r).astype(np.complex128 if d.kind == "c" else np.float64)
        exp = np.asarray(e).astype(NP[d]).astype(got.dtype)
        np.testing.assert_allclose(got, exp, rtol=TOL[d] * (n + 1), atol=TOL[d] * n * 100, equal_nan=True)


@pytest.mark.parametrize("name", ["max", "min"])
@FEW
@given(data=st.data())
def test_max_min_match_numpy(name, data):
    d, a, axes, ax, keep = data.draw(reduce_case(REAL))
    fn = getattr(rt, name)
    if any(a.shape[i] == 0 for i in ax):
        with pytest.raises(ValueError, match=f"{name}: cannot reduce an empty tensor"):
            fn(rt.from_numpy(a), axes=axes, keepdims=keep)
        return
    r = fn(rt.from_numpy(a), axes=axes, keepdims=keep)
    src = exact_int(a) if d.kind in "biu" else a.astype(cdt(d))
    e = getattr(np, name)(src, axis=ax, keepdims=keep) if ax else src
    if d.kind in "iu":
        e = to_dtype(np.asarray(e, dtype=object), d)
    elif d is rt.bool:
        e = np.asarray(e).astype(bool)
    check(r, np.asarray(e).astype(NP[d]) if d.kind == "f" else e, d)


@pytest.mark.parametrize("name", ["all", "any"])
@FEW
@given(data=st.data())
def test_all_any_match_numpy(name, data):
    d, a, axes, ax, keep = data.draw(reduce_case(ALL))
    r = getattr(rt, name)(rt.from_numpy(a), axes=axes, keepdims=keep)
    nz = a.astype(np.float32) != 0 if d in LOWP or d.kind == "i" and d.bits == 4 or d is rt.uint4 else a != 0
    e = getattr(np, name)(nz, axis=ax, keepdims=keep) if ax else nz
    check(r, np.asarray(e), rt.bool)


@FEW
@given(data=st.data())
def test_mean_matches_numpy(data):
    d, a, axes, ax, keep = data.draw(reduce_case(ALL, specials=False))
    r = rt.mean(rt.from_numpy(a), axes=axes, keepdims=keep)
    rd = rt.float64 if d.kind in "biu" else d
    src = a.astype(np.float64) if d.kind in "biu" else a.astype(cdt(d))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "Mean of empty slice" (the oracle's NaN)
        e = np.mean(src, axis=ax, keepdims=keep, dtype=src.dtype) if ax else src
    n = max(1, int(np.prod([a.shape[i] for i in ax])))
    assert r.dtype is rd and r.shape == np.shape(e)
    got = host(r).astype(np.complex128 if rd.kind == "c" else np.float64)
    np.testing.assert_allclose(got, np.asarray(e).astype(NP[rd]).astype(got.dtype), rtol=TOL[rd] * (n + 1),
                               atol=TOL[rd] * 100, equal_nan=True)


@pytest.mark.parametrize("name", ["var", "std"])
@FEW
@given(data=st.data())
def test_var_std_match_numpy(name, data):
    d, a, axes, ax, keep = data.draw(reduce_case(ALL, specials=False))
    ddof = data.draw(st.integers(0, 2))
    n = int(np.prod([a.shape[i] for i in ax]))
    fn = getattr(rt, name)
    if ddof >= n:
        with pytest.raises(ValueError, match=f"{name}: ddof={ddof} must be smaller"):
            fn(rt.from_numpy(a), axes=axes, keepdims=keep, ddof=ddof)
        return
    r = fn(rt.from_numpy(a), axes=axes, keepdims=keep, ddof=ddof)
    rd = (rt.float64 if d.kind in "biu" else d).real_dtype
    src = a.astype(np.float64) if d.kind in "biu" else a.astype(cdt(d))
    e = getattr(np, name)(src, axis=ax, keepdims=keep, ddof=ddof)
    assert r.dtype is rd and r.shape == np.shape(e)
    got = host(r).astype(np.float64)
    scale = np.max(np.abs(src.astype(np.complex128))) ** (2 if name == "var" else 1) if src.size else 1
    np.testing.assert_allclose(got, np.asarray(e).astype(NP[rd]).astype(np.float64), rtol=TOL[rd] * (n + 4),
                               atol=TOL[rd] * scale * (n + 4), equal_nan=True)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@FEW
@given(data=st.data())
def test_argmax_argmin_match_numpy(name, data):
    d = data.draw(st.sampled_from(REAL))
    a = data.draw(strided(d))
    keep = data.draw(st.booleans())
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    fn = getattr(rt, name)
    src = exact_int(a) if d.kind in "biu" else a.astype(cdt(d))
    size0 = a.size == 0 if axis is None else a.shape[axis] == 0
    if size0:
        with pytest.raises(ValueError, match=name):
            fn(rt.from_numpy(a), axis=axis, keepdims=keep)
        return
    r = fn(rt.from_numpy(a), axis=axis, keepdims=keep)
    e = getattr(np, name)(src, axis=axis, keepdims=keep)
    check(r, np.asarray(e).astype(np.int32), rt.int32)


CUM = {"cumsum": (np.cumsum, np.add), "cumprod": (np.cumprod, np.multiply),
       "cummax": (None, np.maximum), "cummin": (None, np.minimum)}


@pytest.mark.parametrize("name", sorted(CUM))
@FEW
@given(data=st.data())
def test_cumulative_match_numpy(name, data):
    ordered = name in ("cummax", "cummin")
    d = data.draw(st.sampled_from(REAL if ordered else ALL))
    a = data.draw(strided(d, specials=ordered))
    axis = data.draw(st.none() | st.integers(-a.ndim, a.ndim - 1)) if a.ndim else None
    r = getattr(rt, name)(rt.from_numpy(a), axis=axis)
    src = a.reshape(-1) if axis is None else a
    ax = 0 if axis is None else axis
    ufunc = CUM[name][1]
    if d.kind in "biu":
        rd = rt.int64 if d is rt.bool and not ordered else d
        X = exact_int(src)
        e = ufunc.accumulate(X, axis=ax) if X.size else X
        out = np.empty(e.shape, dtype=object)
        for i in np.ndindex(e.shape):
            out[i] = wrap_int(int(e[i]), rd) if rd is not rt.bool else bool(e[i])
        check(r, to_dtype(out, rd), rd)
    else:
        with np.errstate(all="ignore"):
            e = ufunc.accumulate(src.astype(cdt(d)), axis=ax, dtype=cdt(d))
        n = src.shape[ax] if src.ndim else 1
        assert r.dtype is d and r.shape == e.shape
        got = host(r).astype(np.complex128 if d.kind == "c" else np.float64)
        np.testing.assert_allclose(got, e.astype(NP[d]).astype(got.dtype), rtol=TOL[d] * (n + 1),
                                   atol=TOL[d] * 100, equal_nan=True)


# ---------------------------------------------------------------------------
# special values, empty tensors, errors
# ---------------------------------------------------------------------------
def test_nan_propagates():
    x = rt.create(rt.float32, [2, 3], [1., float("nan"), 3., 4., 5., 6.])
    assert str(rt.max(x)) == "nan" and str(rt.min(x)) == "nan" and str(rt.mean(x)) == "nan"
    assert str(rt.max(x, axes=[1])) == "[nan, 6]" and str(rt.min(x, axes=[0])) == "[1, nan, 3]"
    assert str(rt.cummax(x, axis=1)) == "[[1, nan, nan],\n [4, 5, 6]]"
    assert str(rt.cummin(x)) == "[1, nan, nan, nan, nan, nan]"
    assert str(rt.argmax(x)) == "1" and str(rt.argmin(x)) == "1"  # NaN counts as the extreme


def test_empty_tensors():
    e = rt.zeros(rt.float32, [0, 3])
    assert str(rt.sum(e)) == "0" and str(rt.prod(e)) == "1"
    assert rt.sum(e, axes=[0]).shape == (3,) and str(rt.sum(e, axes=[0])) == "[0, 0, 0]"
    assert str(rt.prod(e, axes=[0])) == "[1, 1, 1]"
    assert rt.max(e, axes=[1]).shape == (0,)
    assert str(rt.all(e)) == "true" and str(rt.any(e)) == "false"
    assert str(rt.mean(e)) == "nan"
    assert rt.cumsum(e).shape == (0,)
    with pytest.raises(ValueError, match=r"max: cannot reduce an empty tensor of shape \(0, 3\)"):
        rt.max(e)
    with pytest.raises(ValueError, match="min: cannot reduce an empty tensor"):
        rt.min(e, axes=[0])
    with pytest.raises(ValueError, match="argmax: cannot take max of an empty tensor"):
        rt.argmax(e)
    with pytest.raises(ValueError, match="argmin: cannot take min along axis 0 of size 0"):
        rt.argmin(e, axis=0)
    with pytest.raises(ValueError, match="var: ddof=0 must be smaller"):
        rt.var(e)


def test_empty_axes_and_zero_d():
    x = rt.create(rt.int32, [2], [3, -4])
    assert str(rt.sum(x, axes=[])) == "[3, -4]" and rt.sum(x, axes=[]).dtype is rt.int32
    assert str(rt.all(x, axes=[])) == "[true, true]"
    assert str(rt.mean(x, axes=[])) == "[3, -4]" and rt.mean(x, axes=[]).dtype is rt.float64
    assert str(rt.var(x, axes=[])) == "[0, 0]"
    s = rt.scalar(rt.float32, 2.5)
    assert str(rt.sum(s)) == "2.5" and str(rt.max(s)) == "2.5" and str(rt.argmax(s)) == "0"
    assert rt.cumsum(s).shape == (1,)
    r = rt.sum(x)
    assert r is not x and rt.sum(x, axes=[]) is not x  # results never alias the input


def test_integer_sums_keep_dtype_and_wrap():
    x = rt.create(rt.int8, [3], [100, 100, 100])
    assert str(rt.sum(x)) == "44" and rt.sum(x).dtype is rt.int8
    assert str(rt.cumsum(x)) == "[100, -56, 44]"
    assert str(rt.prod(rt.create(rt.uint8, [2], [16, 16]))) == "0"
    b = rt.create(rt.bool, [3], [True, True, False])
    assert str(rt.sum(b)) == "2" and rt.sum(b).dtype is rt.int64
    assert str(rt.cumsum(b)) == "[1, 2, 2]"


def test_keepdims_and_negative_axes():
    x = rt.from_numpy(np.arange(24.).reshape(2, 3, 4))
    assert rt.sum(x, axes=[-1, 0], keepdims=True).shape == (1, 3, 1)
    assert rt.argmax(x, axis=-2, keepdims=True).shape == (2, 1, 4)
    assert rt.argmax(x, keepdims=True).shape == (1, 1, 1)
    assert rt.var(x, axes=[1], keepdims=True).shape == (2, 1, 4)


def test_low_precision_reductions_round_once():
    x = rt.create(rt.bfloat16, [3], [1., 2., 4.])
    assert rt.mean(x).dtype is rt.bfloat16 and abs(rt.mean(x).item() - 7 / 3) < 0.02
    assert rt.std(x).dtype is rt.bfloat16
    h = rt.create(rt.float16, [4096], [1.] * 4096)
    assert str(rt.sum(h)) == "4096"  # accumulated in float32 (float16 stalls at 2048)


def test_reduction_errors():
    x = rt.ones(rt.float32, [2, 3])
    with pytest.raises(IndexError, match="sum: axis 2 is out of bounds"):
        rt.sum(x, axes=[2])
    with pytest.raises(ValueError, match="repeat an axis"):
        rt.sum(x, axes=[0, -2])
    with pytest.raises(IndexError, match="argmax: axis -3 is out of bounds"):
        rt.argmax(x, axis=-3)
    with pytest.raises(IndexError, match="cumsum"):
        rt.cumsum(x, axis=5)
    c = rt.create(rt.complex64, [1], [1j])
    for f in (rt.max, rt.min, rt.argmax, rt.argmin, rt.cummax, rt.cummin):
        with pytest.raises(TypeError, match=f.__name__):
            f(c)
    with pytest.raises(ValueError, match=r"var: ddof=5 must be smaller than the number of reduced elements \(3\)"):
        rt.var(x, axes=[1], ddof=5)
    with pytest.raises(ValueError, match="std: ddof=2"):
        rt.std(x, axes=[0], ddof=2)


def test_methods_are_attached():
    x = rt.create(rt.float32, [2, 2], [1., 2., 3., 4.])
    assert str(x.sum(axes=[0])) == "[4, 6]" and str(x.max()) == "4" and str(x.argmax(axis=1)) == "[1, 1]"
    assert str(x.cumsum(axis=0)) == "[[1, 2],\n [4, 6]]" and str(x.var(ddof=1)) == "1.66667"


# ---------------------------------------------------------------------------
# seed examples (exact printed output)
# ---------------------------------------------------------------------------
def item(t):
    return rt.item(t, [])


def test_seed_sum():
    x = rt.create(rt.float32, [2, 2], [1., 2., 3., 4.])
    assert item(rt.sum(x)) == 10.
    assert str(rt.sum(x, axes=[0])) == "[4, 6]"
    assert str(rt.sum(rt.create(rt.float32, [1, 2], [1., 2.]), axes=[1], keepdims=True)) == "[[3]]"
    assert str(rt.sum(rt.create(rt.float32, [1, 3], [1., 2., 3.]), axes=[-1])) == "[6]"


def test_seed_max_min():
    x = rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])
    assert item(rt.max(x)) == 6.
    assert str(rt.max(rt.create(rt.float32, [2, 2], [1., 2., 3., 4.]), axes=[0])) == "[3, 4]"
    assert str(rt.max(rt.create(rt.float32, [1, 2], [1., 2.]), axes=[1], keepdims=True)) == "[[2]]"
    assert item(rt.min(x)) == 1.
    assert str(rt.min(rt.create(rt.float32, [2, 2], [1., 2., 3., 4.]), axes=[0])) == "[1, 2]"


def test_seed_prod():
    p = rt.prod(rt.create(rt.int32, [3], [2, 3, 4]))
    assert item(p) == 24 and p.dtype is rt.int32
    assert str(rt.prod(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]), axes=[0])) == "[3, 8]"


def test_seed_mean():
    assert item(rt.mean(rt.create(rt.float32, [4], [1., 2., 3., 4.]))) == 2.5
    assert str(rt.mean(rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.]), axes=[1])) == "[2, 5]"


def test_seed_var_std():
    x = rt.create(rt.float32, [5], [1., 2., 3., 4., 5.])
    assert item(rt.var(x)) == 2.
    assert item(rt.var(x, ddof=1)) == 2.5
    assert round(item(rt.std(x))) == 1.
    assert round(item(rt.std(x, ddof=1))) == 2.


def test_seed_all_any():
    assert item(rt.all(rt.create(rt.int32, [3], [1, 2, 3]))) is True
    assert item(rt.all(rt.create(rt.int32, [3], [1, 0, 3]))) is False
    assert str(rt.all(rt.create(rt.int32, [2, 2], [1, 0, 1, 1]), axes=[1])) == "[false, true]"
    assert item(rt.any(rt.create(rt.int32, [3], [0, 0, 1]))) is True
    assert item(rt.any(rt.create(rt.int32, [3], [0, 0, 0]))) is False
    assert str(rt.any(rt.create(rt.int32, [2, 2], [0, 0, 0, 1]), axes=[1])) == "[false, true]"


def test_seed_argmax_argmin():
    x = rt.create(rt.int32, [5], [3, 1, 4, 1, 5])
    assert item(rt.argmax(x)) == 4 and rt.argmax(x).dtype is rt.int32
    r = rt.argmax(rt.create(rt.int32, [2, 3], [1, 5, 3, 2, 4, 6]), axis=1)
    assert str(r) == "[1, 2]" and r.dtype is rt.int32
    assert item(rt.argmin(x)) == 1
    assert str(rt.argmin(rt.create(rt.int32, [2, 3], [5, 2, 3, 1, 4, 0]), axis=1)) == "[1, 2]"
