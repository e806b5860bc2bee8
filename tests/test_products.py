"""dot, matmul (and @), diagonal: seed examples, NumPy oracle over dtypes x strides x batch shapes, errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import runetensor as rt
from oracle import ALL, LOWP, NP, TOL, check, exact_int, host, strided, to_dtype, wrap_int


@st.composite
def matmul_shapes(draw):
    """Shapes (sa, sb) valid for matmul: ranks 1..4, broadcastable batch axes."""
    m, k, n = (draw(st.integers(0, 4)) for _ in range(3))
    ra, rb = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = tuple(draw(st.lists(st.integers(1, 3), min_size=max(ra, rb) - 2, max_size=max(ra, rb) - 2))) \
        if max(ra, rb) > 2 else ()
    sa = (k,) if ra == 1 else tuple(1 if draw(st.booleans()) else s for s in batch[len(batch) - (ra - 2):]) + (m, k)
    sb = (k,) if rb == 1 else tuple(1 if draw(st.booleans()) else s for s in batch[len(batch) - (rb - 2):]) + (k, n)
    return sa, sb


def matmul_oracle(a, b, d):
    """Expected matmul of NumPy arrays of dtype ``d``: exact wrapped integers, float32 for low precision."""
    if d.kind in "iu":
        r = np.matmul(exact_int(a), exact_int(b))
        r = np.asarray(r, dtype=object)
        out = np.empty(r.shape, dtype=object)
        for i in np.ndindex(r.shape):
            out[i] = wrap_int(int(r[i]), d)
        return to_dtype(out, d)
    if d is rt.bool:
        return np.matmul(a, b)
    cd = np.float32 if d in LOWP else NP[d]
    return np.matmul(a.astype(cd), b.astype(cd))


@pytest.mark.parametrize("name", ["matmul", "dot", "@"])
@settings(max_examples=max(20, settings.default.max_examples))
@given(data=st.data())
def test_matmul_and_dot_match_numpy_matmul(name, data):
    d = data.draw(st.sampled_from(ALL))
    sa, sb = data.draw(matmul_shapes())
    a = data.draw(strided(d, sa, specials=False))
    b = data.draw(strided(d, sb, specials=False))
    ta, tb = rt.from_numpy(a), rt.from_numpy(b)
    r = ta @ tb if name == "@" else getattr(rt, name)(ta, tb)
    e = matmul_oracle(a, b, d)
    k = sa[-1]
    if d.kind in "biu":
        check(r, e, d)
    else:
        assert r.dtype is d and r.shape == np.shape(e)
        got = host(r).astype(np.complex128 if d.kind == "c" else np.float64)
        exp = np.asarray(e).astype(NP[d]).astype(got.dtype)
        scale = (np.max(np.abs(a.astype(np.complex128))) if a.size else 1) * \
            (np.max(np.abs(b.astype(np.complex128))) if b.size else 1)
        np.testing.assert_allclose(got, exp, rtol=TOL[d] * (k + 2), atol=TOL[d] * scale * (k + 2))


@given(data=st.data())
def test_mixed_dtypes_promote(data):
    da = data.draw(st.sampled_from([rt.int8, rt.int32, rt.float32, rt.float64, rt.complex64]))
    db = data.draw(st.sampled_from([rt.uint8, rt.int16, rt.float16, rt.float32, rt.bool]))
    a = data.draw(strided(da, (2, 3), specials=False))
    b = data.draw(strided(db, (3, 2), specials=False))
    r = rt.matmul(rt.from_numpy(a), rt.from_numpy(b))
    d = rt.promote_types(da, db)
    assert r.dtype is d
    e = matmul_oracle(a.astype(NP[d]), b.astype(NP[d]), d)
    if d.kind in "iu":
        check(r, e, d)
    else:
        ec = np.asarray(e).astype(np.complex128)
        fin = np.abs(ec[np.isfinite(ec)])
        # float16 results: products and sums in a different order than the oracle's round by 2^-11
        rtol = 4e-3 if d is rt.float16 else 1e-4
        np.testing.assert_allclose(host(r).astype(np.complex128), ec,
                                   rtol=rtol, atol=1e-3 * max(1.0, float(fin.max()) if fin.size else 1.0))


def test_rmatmul_with_numpy_left_operand():
    a = np.ones((2, 3), np.float32)
    t = rt.ones(rt.float32, [3, 1])
    r = a @ t
    assert isinstance(r, rt.Tensor) and str(r) == "[[3],\n [3]]"


def test_integer_matmul_wraps_and_int4():
    a = rt.create(rt.int8, [1, 2], [100, 100])
    b = rt.create(rt.int8, [2, 1], [2, 1])
    assert str(rt.matmul(a, b)) == "[[44]]"
    c = rt.create(rt.int4, [1, 2], [7, 7])
    assert str(rt.matmul(c, rt.create(rt.int4, [2, 1], [1, 1]))) == "[[-2]]"


def test_product_errors():
    s = rt.scalar(rt.float32, 1.)
    v = rt.ones(rt.float32, [3])
    with pytest.raises(ValueError, match="matmul: inputs must have at least one dimension"):
        rt.matmul(s, v)
    with pytest.raises(ValueError, match="dot: inputs must have at least one dimension"):
        rt.dot(v, s)
    with pytest.raises(ValueError, match=r"matmul: cannot contract \(3, 4\) \(last axis: 4\) with \(5, 6\) "
                                          r"\(axis 0: 5\): sizes 4 and 5 differ"):
        rt.matmul(rt.ones(rt.float32, [3, 4]), rt.ones(rt.float32, [5, 6]))
    with pytest.raises(ValueError, match="dot: cannot contract"):
        rt.dot(rt.ones(rt.float32, [2]), rt.ones(rt.float32, [3]))
    with pytest.raises(ValueError, match="matmul: shapes"):
        rt.matmul(rt.ones(rt.float32, [2, 3, 4]), rt.ones(rt.float32, [3, 4, 5]))
    with pytest.raises(ValueError, match="__matmul__"):
        rt.ones(rt.float32, [2, 3]) @ rt.ones(rt.float32, [2, 3])


# ---------------------------------------------------------------------------
# diagonal
# ---------------------------------------------------------------------------
@settings(max_examples=max(20, settings.default.max_examples))
@given(data=st.data())
def test_diagonal_matches_numpy(data):
    d = data.draw(st.sampled_from(ALL))
    a = data.draw(strided(d, specials=False, max_dims=4).filter(lambda x: x.ndim >= 2))
    a1, a2 = data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=2, max_size=2,
                                unique_by=lambda v: v % a.ndim))
    k = data.draw(st.integers(-5, 5))
    t = rt.from_numpy(a)
    r = rt.diagonal(t, offset=k, axis1=a1, axis2=a2)
    e = np.diagonal(a, offset=k, axis1=a1, axis2=a2)
    check(r, e, d)
    if r.size:  # a view: writing through it changes the input
        assert rt.to_numpy(r).base is not None or np.shares_memory(rt.to_numpy(r), a)


def test_diagonal_is_a_view_and_defaults_to_last_axes():
    base = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    t = rt.from_numpy(base)
    d = rt.diagonal(t)
    assert d.shape == (2, 3) and str(d) == "[[0, 4, 8],\n [9, 13, 17]]"
    assert np.shares_memory(rt.to_numpy(d), base)
    assert rt.diagonal(rt.zeros(rt.float32, [0, 0])).shape == (0,)
    assert str(rt.diagonal(t, offset=5)) == "[[],\n []]" or rt.diagonal(t, offset=5).shape == (2, 0)
    assert str(t.diagonal(offset=-1)) == "[[3, 7],\n [12, 16]]"


def test_diagonal_errors():
    with pytest.raises(ValueError, match="diagonal: expected a tensor of rank >= 2"):
        rt.diagonal(rt.ones(rt.float32, [3]))
    with pytest.raises(ValueError, match="diagonal: axis1 and axis2 must differ"):
        rt.diagonal(rt.ones(rt.float32, [3, 3]), axis1=0, axis2=-2)
    with pytest.raises(IndexError, match="diagonal: axis1 2 is out of bounds"):
        rt.diagonal(rt.ones(rt.float32, [3, 3]), axis1=2)


# ---------------------------------------------------------------------------
# seed examples (exact printed output)
# ---------------------------------------------------------------------------
def item(t):
    return rt.item(t, [])


def test_seed_dot():
    a = rt.create(rt.float32, [2], [1., 2.])
    b = rt.create(rt.float32, [2], [3., 4.])
    assert item(rt.dot(a, b)) == 11.
    a = rt.create(rt.float32, [2, 2], [1., 2., 3., 4.])
    b = rt.create(rt.float32, [2, 2], [5., 6., 7., 8.])
    assert str(rt.dot(a, b)) == "[[19, 22],\n [43, 50]]"
    assert rt.shape(rt.dot(rt.ones(rt.float32, [3, 4, 5]), rt.ones(rt.float32, [5, 6]))) == (3, 4, 6)
    assert rt.shape(rt.dot(rt.ones(rt.float32, [2, 3, 4, 5]), rt.ones(rt.float32, [3, 5, 6]))) == (2, 3, 4, 6)


def test_seed_matmul():
    a = rt.create(rt.float32, [3], [1., 2., 3.])
    b = rt.create(rt.float32, [3], [4., 5., 6.])
    assert item(rt.matmul(a, b)) == 32.
    a = rt.create(rt.float32, [2, 2], [1., 2., 3., 4.])
    b = rt.create(rt.float32, [2], [5., 6.])
    assert str(rt.matmul(a, b)) == "[17, 39]"
    a = rt.create(rt.float32, [2], [1., 2.])
    b = rt.create(rt.float32, [2, 3], [3., 4., 5., 6., 7., 8.])
    assert str(rt.matmul(a, b)) == "[15, 18, 21]"
    assert rt.shape(rt.matmul(rt.ones(rt.float32, [10, 3, 4]), rt.ones(rt.float32, [10, 4, 5]))) == (10, 3, 5)
    assert rt.shape(rt.matmul(rt.ones(rt.float32, [1, 3, 4]), rt.ones(rt.float32, [5, 4, 2]))) == (5, 3, 2)
