"""sort / argsort: seed examples, stability and NaN placement against an independent oracle, errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runetensor as rt
from oracle import ALL, check, exact_int, host, strided

REAL = [d for d in ALL if d.kind != "c"]


def oracle_order(a, d, axis, descending):
    """Stable order along ``axis`` by Python's sort: NaN last ascending, first descending."""
    if d.kind in "biu":
        keys = exact_int(a)
    else:
        keys = a.astype(np.float64) if d.kind != "c" else a.astype(np.complex128)
    moved = np.moveaxis(keys, axis, -1)
    out = np.empty(moved.shape, dtype=np.int64)
    for idx in np.ndindex(moved.shape[:-1]):
        row = list(moved[idx])

        def key(i):
            v = row[i]
            if isinstance(v, complex) or isinstance(v, np.complexfloating):
                nan = bool(np.isnan(v.real) or np.isnan(v.imag))
                k = (0.0, 0.0) if nan else (float(v.real), float(v.imag))
            else:
                nan = isinstance(v, float) and v != v
                k = 0 if nan else v
            if descending:  # NaN first, then largest first; ties keep their order (stable)
                return (0 if nan else 1, _neg(k))
            return (1 if nan else 0, k)
        out[idx] = sorted(range(len(row)), key=key)
    return np.moveaxis(out, -1, axis)


def _neg(k):
    return tuple(-x for x in k) if isinstance(k, tuple) else -k


@settings(max_examples=max(20, settings.default.max_examples))
@given(data=st.data())
def test_sort_matches_stable_oracle(data):
    d = data.draw(st.sampled_from(ALL))
    a = data.draw(strided(d).filter(lambda x: x.ndim > 0))
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    desc = data.draw(st.booleans())
    v, i = rt.sort(rt.from_numpy(a), descending=desc, axis=axis)
    exp_i = oracle_order(a, d, axis, desc)
    check(i, exp_i.astype(np.int32), rt.int32)
    exp_v = np.take_along_axis(a, exp_i, axis=axis)
    assert v.dtype is d
    np.testing.assert_array_equal(host(v).view(np.uint8), np.ascontiguousarray(exp_v).view(np.uint8)) \
        if d.kind not in "fc" else np.testing.assert_array_equal(host(v).astype(np.complex128),
                                                                exp_v.astype(np.complex128))
    check(rt.argsort(rt.from_numpy(a), descending=desc, axis=axis), exp_i.astype(np.int32), rt.int32)


def test_stability_with_ties_and_signed_zeros():
    x = rt.create(rt.float32, [6], [0., -0., 1., 0., float("nan"), -0.])
    v, i = rt.sort(x)
    assert str(i) == "[0, 1, 3, 5, 2, 4]" and str(v) == "[0, -0, 0, -0, 1, nan]"
    v, i = rt.sort(x, descending=True)
    assert str(i) == "[4, 2, 0, 1, 3, 5]" and str(v) == "[nan, 1, 0, -0, 0, -0]"
    big = rt.from_numpy(np.repeat(np.arange(5, dtype=np.int32), 200)[::-1].copy())  # long rows take other paths
    i = rt.argsort(big)
    assert rt.to_array(i)[:3] == [800, 801, 802]


def test_sort_special_values_and_dtypes():
    inf, nan = float("inf"), float("nan")
    x = rt.create(rt.float64, [5], [nan, -inf, 3., inf, -1.])
    assert str(rt.sort(x)[0]) == "[-inf, -1, 3, inf, nan]"
    assert str(rt.sort(x, descending=True)[0]) == "[nan, inf, 3, -1, -inf]"
    b = rt.create(rt.bfloat16, [3], [2., nan, -1.])
    assert str(rt.sort(b)[0]) == "[-1, 2, nan]" and rt.sort(b)[0].dtype is rt.bfloat16
    u = rt.create(rt.uint64, [3], [2 ** 64 - 1, 0, 5])
    assert rt.to_array(rt.sort(u)[0]) == [0, 5, 2 ** 64 - 1]
    assert str(rt.sort(rt.create(rt.bool, [3], [True, False, True]))[1]) == "[1, 0, 2]"
    e = rt.zeros(rt.float32, [0, 3])
    assert rt.sort(e, axis=0)[0].shape == (0, 3) and rt.argsort(e).shape == (0, 3)


def test_sort_strided_view():
    base = np.arange(12, dtype=np.int16).reshape(3, 4)[::-1, ::2]
    v, i = rt.sort(rt.from_numpy(base), descending=True, axis=0)
    np.testing.assert_array_equal(host(v), base)
    assert str(i) == "[[0, 0],\n [1, 1],\n [2, 2]]"


def test_sort_errors():
    x = rt.ones(rt.float32, [2, 3])
    with pytest.raises(IndexError, match="sort: axis 2 is out of bounds"):
        rt.sort(x, axis=2)
    with pytest.raises(IndexError, match="argsort: axis -3 is out of bounds"):
        rt.argsort(x, axis=-3)
    with pytest.raises(IndexError, match="sort: axis -1 is out of bounds for a 0-d tensor"):
        rt.sort(rt.scalar(rt.float32, 1.))


def test_methods_are_attached():
    x = rt.create(rt.int32, [3], [3, 1, 2])
    assert str(x.argsort()) == "[1, 2, 0]" and str(x.sort(descending=True)[0]) == "[3, 2, 1]"


# ---------------------------------------------------------------------------
# seed examples (exact printed output)
# ---------------------------------------------------------------------------
def test_seed_sort():
    v, i = rt.sort(rt.create(rt.int32, [5], [3, 1, 4, 1, 5]))
    assert (str(v), str(i)) == ("[1, 1, 3, 4, 5]", "[1, 3, 0, 2, 4]")
    assert v.dtype is rt.int32 and i.dtype is rt.int32
    v, i = rt.sort(rt.create(rt.int32, [2, 2], [3, 1, 1, 4]), descending=True, axis=0)
    assert str(v) == "[[3, 4],\n [1, 1]]"
    assert str(i) == "[[0, 1],\n [1, 0]]"
    v, _ = rt.sort(rt.create(rt.float32, [4], [float("nan"), 1., 2., float("nan")]))
    assert str(v) == "[1, 2, nan, nan]"


def test_seed_argsort():
    assert str(rt.argsort(rt.create(rt.int32, [5], [3, 1, 4, 1, 5]))) == "[1, 3, 0, 2, 4]"
    r = rt.argsort(rt.create(rt.int32, [2, 3], [3, 1, 4, 2, 5, 0]), axis=1)
    assert str(r) == "[[1, 0, 2],\n [2, 0, 1]]"
