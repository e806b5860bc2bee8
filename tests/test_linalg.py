"""Linear algebra in the main namespace, against NumPy as the oracle."""
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt

from helpers import random_normal

F_DTYPES = [rt.float32, rt.float64, rt.complex64, rt.complex128]
ALL_DT = F_DTYPES + [rt.int32, rt.float16, rt.bfloat16]
NP = {rt.float32: np.float32, rt.float64: np.float64, rt.complex64: np.complex64, rt.complex128: np.complex128,
      rt.int32: np.int32, rt.int64: np.int64, rt.float16: np.float16, rt.bfloat16: ml_dtypes.bfloat16,
      rt.bool: np.bool_}


def tol(d):
    if d in (rt.float16, rt.bfloat16):
        return dict(rtol=5e-2, atol=5e-2)
    if d in (rt.float32, rt.complex64):
        return dict(rtol=2e-3, atol=2e-3)
    return dict(rtol=1e-8, atol=1e-8)


def tens(a, view):
    """A tensor of ``a``'s values: contiguous, or a strided view (negative strides / transposed base)."""
    if view == 0:
        return rt.from_numpy(np.ascontiguousarray(a))
    if view == 1:  # negative strides over a reversed copy
        base = np.ascontiguousarray(a[..., ::-1, ::-1]) if a.ndim >= 2 else np.ascontiguousarray(a[::-1])
        v = base[..., ::-1, ::-1] if a.ndim >= 2 else base[::-1]
        return rt.from_numpy(v)
    base = np.ascontiguousarray(np.swapaxes(a, -1, -2)) if a.ndim >= 2 else a.copy()
    return rt.from_numpy(np.swapaxes(base, -1, -2) if a.ndim >= 2 else base)


def npf(t):
    """The NumPy oracle's input: low precision and ints as the library computes them."""
    a = np.array(rt.to_numpy(t))
    if a.dtype in (np.float16, ml_dtypes.bfloat16):
        return a.astype(np.float32)
    if a.dtype.kind in "iub":
        return a.astype(np.float64)
    return a


def close(t, expected, d, **kw):
    got = np.array(rt.to_numpy(t)).astype(np.complex128 if np.iscomplexobj(expected) else np.float64)
    if d in (rt.float16, rt.bfloat16) and not np.iscomplexobj(expected):  # the library rounds back once
        with np.errstate(over="ignore"):
            expected = np.asarray(expected).astype(NP[d]).astype(np.float64)
    np.testing.assert_allclose(got, np.asarray(expected), **(kw or tol(d)))


batch = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
seeds = st.integers(0, 2**31)
views = st.sampled_from([0, 1, 2])


@st.composite
def square(draw, dtypes=ALL_DT):
    d = draw(st.sampled_from(dtypes))
    n = draw(st.integers(1, 4))
    b = draw(batch)
    a = random_normal(draw(seeds), b + (n, n), d)
    dom = np.abs(a.astype(np.complex128)).sum(-1) + 1  # strictly diagonally dominant: well conditioned
    a = (a + np.eye(n) * np.round(dom)[..., None, :] + np.eye(n)).astype(a.dtype)
    return tens(a, draw(views)), d


@st.composite
def rect(draw, dtypes=ALL_DT):
    d = draw(st.sampled_from(dtypes))
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    b = draw(batch)
    return tens(random_normal(draw(seeds), b + (m, n), d), draw(views)), d


# ---------------------------------------------------------------------------
# result dtypes
# ---------------------------------------------------------------------------
def test_dtype_rules():
    i = rt.create(rt.int32, [2, 2], [2, 1, 1, 3])
    assert rt.inv(i).dtype is rt.float64 and rt.det(i).dtype is rt.float64
    h = rt.create(rt.float16, [2, 2], [2, 1, 1, 3])
    assert rt.inv(h).dtype is rt.float16 and rt.det(h).dtype is rt.float16
    assert rt.svdvals(rt.create(rt.bfloat16, [2, 2], [2, 1, 1, 3])).dtype is rt.bfloat16
    w, v = rt.eig(h)
    assert w.dtype is rt.complex64 and v.dtype is rt.complex64
    assert rt.eig(i)[0].dtype is rt.complex128
    c = rt.create(rt.complex64, [2, 2], [2, 1j, -1j, 3])
    assert rt.eigvalsh(c).dtype is rt.float32 and rt.svdvals(c).dtype is rt.float32
    assert rt.norm(c).dtype is rt.float32 and rt.norm(i).dtype is rt.float64
    s, la = rt.slogdet(c)
    assert s.dtype is rt.complex64 and la.dtype is rt.float32
    assert rt.matmul(i, i).dtype is rt.int32
    assert rt.tensordot(i, i).dtype is rt.int32 and rt.einsum("ij,jk", i, i).dtype is rt.int32
    assert rt.trace(rt.create(rt.bool, [2, 2], [True, False, False, True])).dtype is rt.int64


# ---------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------
@given(rect(), seeds)
def test_products_against_numpy(ad, seed):
    a, d = ad
    x = np.array(rt.to_numpy(a))
    b = random_normal(seed, x.shape, d)
    tb = rt.from_numpy(b)
    k = dict(rtol=5e-2, atol=5e-1) if d in (rt.float16, rt.bfloat16) else tol(d)
    xa = x.astype(np.float32) if d in (rt.float16, rt.bfloat16) else x
    xb = b.astype(np.float32) if d in (rt.float16, rt.bfloat16) else b
    close(rt.vdot(a, tb), np.vdot(xa, xb), d, **k)
    close(rt.vecdot(a, tb), np.sum(np.conj(xa) * xb, axis=-1), d, **k)
    close(rt.vecdot(a, tb, axis=-2), np.sum(np.conj(xa) * xb, axis=-2), d, **k)
    close(rt.inner(a, tb), np.inner(xa, xb), d, **k)
    close(rt.outer(a, tb), np.outer(xa, xb), d, **k)
    close(rt.kron(a, tb), np.kron(xa, xb), d, **k)
    close(rt.tensordot(a, tb, axes=([x.ndim - 1], [x.ndim - 1])), np.tensordot(xa, xb, axes=([-1], [-1])), d, **k)
    close(rt.tensordot(a, tb, axes=x.ndim), np.tensordot(xa, xb, axes=x.ndim), d, **k)
    assert rt.matrix_transpose(a).shape == np.swapaxes(x, -1, -2).shape
    np.testing.assert_array_equal(np.array(rt.to_numpy(rt.matrix_transpose(a))), np.swapaxes(x, -1, -2))


def test_vecdot_broadcasts_and_matrix_transpose_is_a_view():
    a = rt.from_numpy(np.arange(6.0).reshape(2, 3))
    b = rt.from_numpy(np.arange(3.0))
    assert rt.to_array(rt.vecdot(a, b)) == [5.0, 14.0]
    m = rt.matrix_transpose(a)
    assert np.shares_memory(rt.to_numpy(m), rt.to_numpy(a))
    assert rt.matrix_transpose(b) is b


@given(st.sampled_from(["ij,jk->ik", "ij,jk", "ii->i", "ii", "ij->", "...ij,...jk->...ik", "ij,ij->ij",
                        "bij,bjk->bik", "i,i", "ij->ji", "...i->..."]), seeds,
       st.sampled_from([rt.float64, rt.float32, rt.int64, rt.complex128]))
def test_einsum_against_numpy(spec, seed, d):
    shapes = {"ij,jk->ik": [(2, 3), (3, 4)], "ij,jk": [(2, 3), (3, 4)], "ii->i": [(3, 3)], "ii": [(3, 3)],
              "ij->": [(2, 3)], "...ij,...jk->...ik": [(2, 2, 3), (1, 3, 2)], "ij,ij->ij": [(2, 3), (2, 3)],
              "bij,bjk->bik": [(2, 2, 3), (2, 3, 2)], "i,i": [(4,), (4,)], "ij->ji": [(2, 3)],
              "...i->...": [(2, 3, 4)]}[spec]
    ops = [random_normal(seed + i, s, d) for i, s in enumerate(shapes)]
    got = rt.einsum(spec, *[rt.from_numpy(o) for o in ops])
    close(got, np.einsum(spec, *ops), d)
    got2 = rt.einsum(spec, [rt.from_numpy(o) for o in ops])  # Rune's list form
    close(got2, np.einsum(spec, *ops), d)


def test_einsum_seed_example_and_errors():
    a = rt.create(rt.float32, [2, 3], [1, 2, 3, 4, 5, 6])
    b = rt.create(rt.float32, [3, 2], [1, 2, 3, 4, 5, 6])
    assert rt.einsum("ij,jk->ik", [a, b]).shape == (2, 2)
    with pytest.raises(ValueError, match="einsum: .*2 operand"):
        rt.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="einsum: label 'j' has sizes 3 and 2"):
        rt.einsum("ij,jk->ik", a, a)
    with pytest.raises(ValueError, match="einsum: invalid subscript character '1'"):
        rt.einsum("i1", a)
    with pytest.raises(ValueError, match="einsum: output label 'z'"):
        rt.einsum("ij->z", a)
    with pytest.raises(ValueError, match="einsum: subscripts 'i' label 1 axes"):
        rt.einsum("i", a)
    with pytest.raises(ValueError, match="einsum: output 'ii' repeats"):
        rt.einsum("ij->ii", a)
    with pytest.raises(ValueError, match="einsum: expected at least one operand"):
        rt.einsum("ij")
    with pytest.raises(TypeError, match="einsum: subscripts must be a string"):
        rt.einsum(3, a)


def test_tensordot_seed_shapes_and_errors():
    a = rt.ones(rt.float32, [3, 4, 5])
    b = rt.ones(rt.float32, [5, 6])
    assert rt.tensordot(a, b).shape == (3, 4, 6)
    with pytest.raises(ValueError, match="tensordot: contracted sizes differ"):
        rt.tensordot(a, a)
    with pytest.raises(ValueError, match="tensordot: the axis lists"):
        rt.tensordot(a, b, axes=([0, 1], [0]))
    with pytest.raises(IndexError):
        rt.tensordot(a, b, axes=([7], [0]))
    with pytest.raises(ValueError, match="vdot: inputs have 60 and 30"):
        rt.vdot(a, b)
    with pytest.raises(ValueError, match="inner: last dimensions differ"):
        rt.inner(a, rt.ones(rt.float32, [3]))
    with pytest.raises(ValueError, match="vecdot: sizes along axis -1 differ"):
        rt.vecdot(a, rt.ones(rt.float32, [4]))


@given(st.lists(st.tuples(st.integers(1, 5)), min_size=2, max_size=5), seeds, st.booleans(), st.booleans())
def test_multi_dot_against_numpy(dims, seed, first_vec, last_vec):
    dims = [d[0] for d in dims] + [3]
    mats = [random_normal(seed + i, (dims[i], dims[i + 1]), rt.float64) for i in range(len(dims) - 1)]
    if first_vec:
        mats[0] = mats[0][0]
    if last_vec:
        mats[-1] = mats[-1][:, 0]
    got = rt.multi_dot([rt.from_numpy(m) for m in mats])
    close(got, np.linalg.multi_dot(mats), rt.float64)


def test_multi_dot_errors():
    with pytest.raises(ValueError, match="multi_dot: expected at least one tensor"):
        rt.multi_dot([])
    with pytest.raises(ValueError, match="cannot be multiplied"):
        rt.multi_dot([rt.ones(rt.float64, [2, 3]), rt.ones(rt.float64, [2, 3])])
    with pytest.raises(ValueError, match="expected 2-D"):
        rt.multi_dot([rt.ones(rt.float64, [2, 3]), rt.ones(rt.float64, [3, 3, 3]), rt.ones(rt.float64, [3, 2])])


@given(square(dtypes=[rt.float64, rt.complex128, rt.float32, rt.int32]), st.integers(-3, 5))
def test_matrix_power_against_numpy(ad, n):
    a, d = ad
    x = np.array(rt.to_numpy(a))
    if n < 0 and d.kind in "iu":
        with pytest.raises(TypeError, match="matrix_power: negative powers"):
            rt.matrix_power(a, n)
        return
    r = rt.matrix_power(a, n)
    assert r.dtype is d
    if d.kind in "iu":
        np.testing.assert_array_equal(np.array(rt.to_numpy(r)), np.linalg.matrix_power(x, n))
    else:
        exp = np.linalg.matrix_power(x.astype(np.complex128 if d.kind == "c" else np.float64), n)
        np.testing.assert_allclose(np.array(rt.to_numpy(r)), exp, rtol=1e-3 if d is rt.float32 else 1e-9,
                                   atol=1e-3 * max(1, np.abs(exp).max()) if d is rt.float32 else 1e-9)
    if n == 1:
        assert not np.shares_memory(rt.to_numpy(r), rt.to_numpy(a))


@given(st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple), seeds, st.sampled_from([0, 1, -1]),
       st.sampled_from([rt.float64, rt.int64, rt.complex64]))
def test_cross_against_numpy(b, seed, where, d):
    shape = list(b) + [3]
    ax = where if where != 0 else 0
    if where == 0:
        shape = [3] + list(b)
    x, y = random_normal(seed, tuple(shape), d), random_normal(seed + 1, (3,) if where != 0 else tuple(shape), d)
    got = rt.cross(rt.from_numpy(x), rt.from_numpy(y), axis=ax if where != 1 else -1)
    exp = np.cross(x, y, axis=ax if where != 1 else -1) if where == 0 else np.cross(x, y)
    close(got, exp, d)


def test_out_arguments():
    a = rt.create(rt.float64, [3], [1, 0, 0])
    b = rt.create(rt.float64, [3], [0, 1, 0])
    o = rt.zeros(rt.float64, [3])
    assert rt.cross(a, b, out=o) is o and rt.to_array(o) == [0, 0, 1]
    o2 = rt.zeros(rt.float64, [3, 3])
    assert rt.outer(a, b, out=o2) is o2 and rt.to_array(o2)[1] == 1.0
    o3 = rt.zeros(rt.int32, [])
    assert rt.trace(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]), out=o3) is o3 and rt.to_array(o3) == [5]
    with pytest.raises(ValueError, match="outer: out has shape \\(2,\\), the result has shape \\(3, 3\\)"):
        rt.outer(a, b, out=rt.zeros(rt.float64, [2]))
    with pytest.raises(TypeError, match="trace: out has dtype float64, the result has dtype int32"):
        rt.trace(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]), out=rt.zeros(rt.float64, []))


def test_cross_errors():
    with pytest.raises(TypeError, match="cross: not defined for bool tensors"):
        rt.cross(rt.ones(rt.bool, [3]), rt.ones(rt.bool, [3]))
    with pytest.raises(ValueError, match="cross: size along axis -1 must be 3, got 2"):
        rt.cross(rt.ones(rt.float64, [2]), rt.ones(rt.float64, [2]))


@given(rect(dtypes=[rt.float64, rt.int32, rt.complex64, rt.bool]), st.integers(-4, 4))
def test_trace_against_numpy(ad, off):
    a, d = ad
    x = np.array(rt.to_numpy(a))
    exp = np.trace(x, offset=off, axis1=-2, axis2=-1)
    got = rt.trace(a, offset=off)
    assert got.shape == exp.shape
    close(got, exp, d)


def test_trace_errors():
    with pytest.raises(ValueError, match="trace: expected a tensor with at least 2 dimensions"):
        rt.trace(rt.ones(rt.float64, [3]))


# ---------------------------------------------------------------------------
# decompositions
# ---------------------------------------------------------------------------
def hermitian_pd(x):
    n = x.shape[-1]
    h = np.matmul(x, np.conj(np.swapaxes(x, -1, -2))) + n * np.eye(n)
    return h.astype(x.dtype)


@given(square(dtypes=F_DTYPES + [rt.float16]), st.booleans())
def test_cholesky_against_numpy(ad, upper):
    a, d = ad
    x = hermitian_pd(npf(a))
    t = rt.from_numpy(x.astype(NP[d]))
    close(rt.cholesky(t, upper=upper), np.linalg.cholesky(npf(t), upper=upper), d)


@given(rect(dtypes=F_DTYPES + [rt.int32, rt.bfloat16]), st.sampled_from(["reduced", "complete"]))
def test_qr_reconstructs(ad, mode):
    a, d = ad
    x = npf(a)
    q, r = rt.qr(a, mode=mode)
    qe, re_ = np.linalg.qr(x, mode=mode)
    assert q.shape == qe.shape and r.shape == re_.shape
    qn, rn = npf(q), npf(r)
    close(rt.from_numpy(np.matmul(qn, rn)), x, d)
    np.testing.assert_allclose(np.triu(rn), rn)


@given(rect(dtypes=F_DTYPES + [rt.int32, rt.float16]), st.booleans())
def test_svd_against_numpy(ad, full):
    a, d = ad
    x = npf(a)
    u, s, vh = rt.svd(a, full_matrices=full)
    ue, se, vhe = np.linalg.svd(x, full_matrices=full)
    assert u.shape == ue.shape and s.shape == se.shape and vh.shape == vhe.shape
    close(s, se, d)
    close(rt.svdvals(a), se, d)
    k = s.shape[-1]
    rec = np.matmul(npf(u)[..., :, :k] * npf(s)[..., None, :], npf(vh)[..., :k, :])
    close(rt.from_numpy(rec), x, d)


def sort_c(w):
    return np.sort_complex(np.asarray(w).astype(np.complex128))


@given(square(dtypes=F_DTYPES + [rt.int32]))
def test_eig_against_numpy(ad):
    a, d = ad
    x = npf(a)
    w, v = rt.eig(a)
    assert w.dtype.kind == "c" and v.dtype.kind == "c"
    wn, vn = npf(w), npf(v)
    np.testing.assert_allclose(np.matmul(x, vn), vn * wn[..., None, :], **tol(d))
    we = np.linalg.eigvals(x)
    np.testing.assert_allclose(np.sort_complex(npf(rt.eigvals(a)).reshape(-1, x.shape[-1])),
                               np.sort_complex(we.reshape(-1, x.shape[-1]).astype(np.complex128)), **tol(d))


@given(square(dtypes=F_DTYPES + [rt.int32]), st.sampled_from(["L", "U"]))
def test_eigh_against_numpy(ad, uplo):
    a, d = ad
    x = hermitian_pd(npf(a))
    t = rt.from_numpy(x)
    w, v = rt.eigh(t, uplo=uplo)
    we = np.linalg.eigvalsh(x, UPLO=uplo)
    close(w, we, d)
    close(rt.eigvalsh(t, uplo=uplo), we, d)
    vn = npf(v)
    np.testing.assert_allclose(np.matmul(x, vn), vn * npf(w)[..., None, :], rtol=1e-3, atol=1e-3 * x.shape[-1] ** 2)


# ---------------------------------------------------------------------------
# norms and invariants
# ---------------------------------------------------------------------------
@given(rect(dtypes=[rt.float64, rt.complex128, rt.int32, rt.float32]),
       st.sampled_from([None, 1, 2, math.inf, -math.inf, 0, 3, 0.5, -1]), st.booleans())
def test_vector_norm_against_numpy(ad, o, keep):
    a, d = ad
    x = npf(a)
    got = rt.norm(a, ord=o, axes=[-1], keepdims=keep)
    with np.errstate(all="ignore"):  # the oracle's own 0 ** -1
        exp = np.linalg.norm(x, ord=o, axis=-1, keepdims=keep)
    close(got, exp, d)


@given(rect(dtypes=[rt.float64, rt.complex128, rt.int32]),
       st.sampled_from([None, "fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]), st.booleans())
def test_matrix_norm_against_numpy(ad, o, keep):
    a, d = ad
    x = npf(a)
    got = rt.norm(a, ord=o, axes=[-2, -1], keepdims=keep)
    close(got, np.linalg.norm(x, ord=o, axis=(-2, -1), keepdims=keep), d)


def test_norm_defaults_names_and_errors():
    x = np.arange(24.0).reshape(2, 3, 4) - 10
    t = rt.from_numpy(x)
    close(rt.norm(t), np.linalg.norm(x.ravel()), rt.float64)
    m = rt.from_numpy(x[0])
    for name, o in [("one", 1), ("two", 2), ("inf", math.inf), ("neg_one", -1), ("neg_two", -2),
                    ("neg_inf", -math.inf), ("fro", "fro"), ("nuc", "nuc")]:
        close(rt.norm(m, ord=name), np.linalg.norm(x[0], ord=o), rt.float64)
    with pytest.raises(ValueError, match="norm: unknown ord 'bogus'"):
        rt.norm(m, ord="bogus")
    with pytest.raises(ValueError, match="norm: ord='fro' is a matrix norm"):
        rt.norm(m, ord="fro", axes=[0])
    with pytest.raises(ValueError, match="norm: with ord=1 and no axes"):
        rt.norm(t, ord=1)
    with pytest.raises(ValueError, match="norm: axes must name one axis"):
        rt.norm(t, axes=[0, 1, 2])
    with pytest.raises(ValueError, match="norm: ord=3 is not a matrix norm"):
        rt.norm(m, ord=3)
    with pytest.raises(TypeError, match="norm: ord must be a number or a name"):
        rt.norm(m, ord=[1])


@given(square(dtypes=[rt.float64, rt.complex128, rt.float32]),
       st.sampled_from([None, 1, -1, 2, -2, math.inf, -math.inf, "fro", "nuc"]))
def test_cond_against_numpy(ad, p):
    a, d = ad
    x = npf(a)
    close(rt.cond(a, p), np.linalg.cond(x, p), d, rtol=1e-3 if d.kind in "fc" and d.bits <= 64 else 1e-8,
          atol=1e-3)


def test_cond_singular_is_inf():
    s = rt.create(rt.float64, [2, 2, 2], [1, 2, 2, 4, 2, 0, 0, 1])
    for p in (None, 1, math.inf, "fro"):
        r = rt.to_array(rt.cond(s, p))
        assert r[0] == math.inf or r[0] > 1e15
        assert r[1] == pytest.approx(np.linalg.cond(np.array([[2.0, 0], [0, 1]]), p))


@given(square(dtypes=ALL_DT))
def test_det_slogdet_against_numpy(ad):
    a, d = ad
    x = npf(a)
    close(rt.det(a), np.linalg.det(x), d, rtol=1e-2 if d in (rt.float16, rt.bfloat16) else 1e-5,
          atol=1e-2 if d in (rt.float16, rt.bfloat16) else 1e-6)
    s, la = rt.slogdet(a)
    se, lae = np.linalg.slogdet(x)
    close(s, se, d)
    close(la, lae, d)


@given(st.integers(1, 5), st.integers(1, 5), st.integers(0, 5), seeds, batch, st.booleans())
def test_matrix_rank_against_numpy(m, n, r, seed, b, herm):
    r = min(r, m, n)
    x = np.matmul(random_normal(seed, b + (m, r), rt.float64), random_normal(seed + 1, b + (r, n), rt.float64))
    if herm:
        x = np.matmul(x, np.swapaxes(x, -1, -2))
    got = rt.matrix_rank(rt.from_numpy(x), hermitian=herm)
    exp = np.linalg.matrix_rank(x, hermitian=herm)
    if b:
        assert got.dtype is rt.int64
        np.testing.assert_array_equal(np.array(rt.to_numpy(got)), exp)
    else:
        assert isinstance(got, int) and got == exp


def test_matrix_rank_tolerances_and_vectors():
    x = rt.create(rt.float64, [2, 2], [1, 0, 0, 1e-8])
    assert rt.matrix_rank(x) == 2
    assert rt.matrix_rank(x, tol=1e-6) == 1
    assert rt.matrix_rank(x, rtol=1e-6) == 1
    assert rt.matrix_rank(rt.zeros(rt.float64, [3])) == 0
    assert rt.matrix_rank(rt.ones(rt.float64, [3])) == 1


# ---------------------------------------------------------------------------
# solving and inverting
# ---------------------------------------------------------------------------
@given(square(dtypes=ALL_DT), seeds, st.sampled_from(["vec", "mat", "bcast"]))
def test_solve_against_numpy(ad, seed, kind):
    a, d = ad
    x = npf(a)
    n = x.shape[-1]
    if kind == "vec":
        b = random_normal(seed, (n,), rt.float64)
        exp = np.linalg.solve(x, b[:, None])[..., 0]
    elif kind == "mat":
        b = random_normal(seed, x.shape[:-2] + (n, 2), rt.float64)
        exp = np.linalg.solve(x, b)
    else:
        b = random_normal(seed, (n, 2), rt.float64)
        exp = np.linalg.solve(x, np.broadcast_to(b, x.shape[:-2] + (n, 2)))
    got = rt.solve(a, rt.from_numpy(b))
    assert got.shape == exp.shape
    close(got, exp, d if d.kind != "i" else rt.float64)
    close(rt.inv(a), np.linalg.inv(x), d)


def test_solve_errors():
    a = rt.create(rt.float64, [2, 2], [1, 2, 2, 4])
    with pytest.raises(rt.LinAlgError, match="^solve: .*[Ss]ingular"):
        rt.solve(a, rt.ones(rt.float64, [2]))
    with pytest.raises(ValueError, match="solve: a has shape \\(2, 2\\) but b has shape \\(3,\\)"):
        rt.solve(rt.eye(rt.float64, 2), rt.ones(rt.float64, [3]))
    with pytest.raises(ValueError, match="solve: expected square matrices"):
        rt.solve(rt.ones(rt.float64, [2, 3]), rt.ones(rt.float64, [2]))
    with pytest.raises(ValueError, match="solve: expected a matrix"):
        rt.solve(rt.ones(rt.float64, [2]), rt.ones(rt.float64, [2]))


@given(rect(dtypes=[rt.float64, rt.complex128, rt.float32]), seeds, st.booleans())
def test_lstsq_against_numpy(ad, seed, vec):
    a, d = ad
    x = npf(a)
    m = x.shape[-2]
    b = random_normal(seed, (m,) if vec else (m, 2), rt.float64)
    got_x, res, rank, sv = rt.lstsq(a, rt.from_numpy(b))
    if x.ndim == 2:
        ex, eres, erank, esv = np.linalg.lstsq(x, b)
        assert rank == erank
        close(got_x, ex, d)
        close(sv, esv, d)
        assert res.shape == eres.shape
        if eres.size:
            close(res, eres, d, rtol=1e-3, atol=1e-3)
    else:
        xs = x.reshape(-1, *x.shape[-2:])
        gx = np.array(rt.to_numpy(got_x)).reshape(-1, *got_x.shape[len(x.shape) - 2:])
        ranks = np.array(rt.to_numpy(rank)).reshape(-1)
        for i, xi in enumerate(xs):
            ex, _, erank, _ = np.linalg.lstsq(xi, b)
            np.testing.assert_allclose(gx[i], ex, **tol(d))
            assert ranks[i] == erank


@given(rect(dtypes=[rt.float64, rt.complex128, rt.float32, rt.int32]))
def test_pinv_against_numpy(ad):
    a, d = ad
    x = npf(a)
    close(rt.pinv(a), np.linalg.pinv(x), d)
    h = hermitian_pd(x[..., :1, :1].repeat(2, -1).repeat(2, -2) + np.eye(2))
    close(rt.pinv(rt.from_numpy(h), hermitian=True), np.linalg.pinv(h, hermitian=True), d)


def test_tensorsolve_tensorinv_against_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 5
    b = rng.standard_normal((2, 3))
    close(rt.tensorsolve(rt.from_numpy(a), rt.from_numpy(b)), np.linalg.tensorsolve(a, b), rt.float64)
    a2 = rng.standard_normal((6, 2, 3)) + np.eye(6).reshape(6, 2, 3) * 5
    close(rt.tensorsolve(rt.from_numpy(a2), rt.from_numpy(b), axes=[0]), np.linalg.tensorsolve(a2, b, axes=(0,)),
          rt.float64)
    c = rng.standard_normal((4, 6, 8, 3)) + np.eye(24).reshape(4, 6, 8, 3) * 5
    close(rt.tensorinv(rt.from_numpy(c), ind=2), np.linalg.tensorinv(c, ind=2), rt.float64)
    with pytest.raises(ValueError, match="tensorinv: ind must be between 1"):
        rt.tensorinv(rt.from_numpy(c), ind=0)
    with pytest.raises(ValueError, match="tensorinv: .* is not 'square'"):
        rt.tensorinv(rt.from_numpy(c), ind=1)
    with pytest.raises(ValueError, match="tensorsolve: a's leading shape"):
        rt.tensorsolve(rt.from_numpy(a), rt.from_numpy(b.T))
    with pytest.raises(rt.LinAlgError, match="^tensorinv: "):
        rt.tensorinv(rt.zeros(rt.float64, [2, 2, 4]))


# ---------------------------------------------------------------------------
# failures
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0), (0, 0)], ids=str)
def test_empty_stacks_match_numpy(shape):
    x = np.zeros(shape)
    t = rt.from_numpy(x)
    pairs = [(rt.inv, np.linalg.inv), (rt.det, np.linalg.det),
             (rt.svdvals, lambda a: np.linalg.svd(a, compute_uv=False)),
             (rt.eigvalsh, np.linalg.eigvalsh), (rt.pinv, np.linalg.pinv), (rt.cholesky, np.linalg.cholesky),
             (lambda a: rt.qr(a)[1], lambda a: np.linalg.qr(a)[1]),
             (rt.trace, lambda a: np.trace(a, axis1=-2, axis2=-1)),
             (lambda a: rt.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1]),
             (lambda a: rt.matrix_power(a, 3), lambda a: np.linalg.matrix_power(a, 3)),
             (lambda a: rt.solve(a, a), lambda a: np.linalg.solve(a, a))]
    for f, g in pairs:
        r, e = f(t), np.asarray(g(x))
        assert r.shape == e.shape
        np.testing.assert_allclose(np.array(rt.to_numpy(r)), e)


def test_linalg_error_is_a_value_error_naming_the_operation():
    assert issubclass(rt.LinAlgError, ValueError)
    z = rt.zeros(rt.float64, [3, 2, 2])
    with pytest.raises(rt.LinAlgError, match="^inv: "):
        rt.inv(z)
    with pytest.raises(rt.LinAlgError, match="^cholesky: "):
        rt.cholesky(rt.create(rt.float64, [2, 2], [1, 2, 2, 1]))
    with pytest.raises(rt.LinAlgError, match="^matrix_power: "):
        rt.matrix_power(z, -1)
    with pytest.raises(rt.LinAlgError, match="^eig: "):
        rt.eig(rt.create(rt.float64, [2, 2], [math.nan, 0, 0, 1]))
    assert rt.to_array(rt.det(z)) == [0.0, 0.0, 0.0]
    s, la = rt.slogdet(z)
    assert rt.to_array(la) == [-math.inf] * 3


def test_non_finite_inputs_are_quiet(capfd):
    import warnings
    big = rt.create(rt.float64, [2, 2], [1e300, 0, 0, 1e300])
    inf = rt.create(rt.float64, [2, 2], [math.inf, 0, 0, 1])
    nan = rt.create(rt.float64, [2, 2], [math.nan, 0, 0, 1])
    fns = [rt.det, rt.inv, rt.slogdet, rt.svdvals, rt.eigvals, rt.eigvalsh, rt.pinv, rt.cond, rt.norm, rt.trace,
           lambda x: rt.norm(x, ord=2), lambda x: rt.einsum("ij,jk", x, x), lambda x: rt.matrix_power(x, 3),
           lambda x: rt.lstsq(x, x), lambda x: rt.vdot(x, x), rt.fft, rt.fft2]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", append=True)  # after the backend's own ignore filters
        for f in fns:
            for x in (big, inf, nan):
                try:
                    f(x)
                except ValueError:  # LinAlgError included
                    pass
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    with pytest.raises(rt.LinAlgError, match="^lstsq: .*inf or NaN"):
        rt.lstsq(inf, inf)


def test_argument_errors():
    r = rt.ones(rt.float64, [2, 3])
    for f in (rt.inv, rt.det, rt.eig, rt.eigvals, rt.eigh, rt.eigvalsh, rt.cholesky, rt.slogdet):
        with pytest.raises(ValueError, match=f"{f.__name__}: expected square matrices"):
            f(r)
    for f in (rt.qr, rt.svd, rt.svdvals, rt.pinv, rt.inv):
        with pytest.raises(ValueError, match=f"{f.__name__}: expected a matrix"):
            f(rt.ones(rt.float64, [3]))
    with pytest.raises(ValueError, match="qr: mode must be"):
        rt.qr(r, mode="r")
    with pytest.raises(ValueError, match="eigh: uplo must be 'L' or 'U'"):
        rt.eigh(rt.ones(rt.float64, [2, 2]), uplo="X")
    with pytest.raises(TypeError, match="matrix_power: n must be an integer"):
        rt.matrix_power(rt.ones(rt.float64, [2, 2]), 1.5)


def test_methods_are_attached():
    a = rt.create(rt.float64, [2, 2], [2, 0, 0, 4])
    assert rt.to_array(a.inv()) == [0.5, 0, 0, 0.25]
    assert rt.to_array(a.det())[0] == pytest.approx(8.0)
    assert a.norm().shape == ()
