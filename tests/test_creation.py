"""Creation (seed section "creation") and the property functions: seed examples, NumPy oracle, errors."""
import array

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt
from helpers import ALL_DTYPES, NP, NUMPY_DTYPES, np_of



def same(t, expected, dtype=None):
    """Values, shape and dtype of tensor ``t`` equal the NumPy array ``expected``."""
    a = np_of(t)
    e = np.asarray(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    if dtype is not None:
        assert t.dtype is dtype
    if a.dtype.kind == "f" or a.dtype in (np.dtype(ml_dtypes.bfloat16),):
        np.testing.assert_array_equal(a.astype(np.float64), e.astype(np.float64))
    else:
        np.testing.assert_array_equal(a, e)


# -- seed examples: properties -----------------------------------------------------
def test_seed_to_array():
    t = rt.create(rt.int32, [2, 2], [1, 2, 3, 4])
    assert str(t) == "[[1, 2],\n [3, 4]]"
    assert rt.to_array(t) == [1, 2, 3, 4]


def test_seed_to_bigarray_example_tensor_and_shape():
    t = rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])
    assert str(t) == "[[1, 2, 3],\n [4, 5, 6]]"
    assert rt.shape(t) == (2, 3)


def test_seed_of_bigarray_zeros():
    assert str(rt.zeros(rt.float32, [2, 3])) == "[[0, 0, 0],\n [0, 0, 0]]"


def test_properties():
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = rt.from_numpy(base[:, ::-1, 1::2])
    assert rt.shape(t) == rt.dims(t) == t.shape == (2, 3, 2)
    assert rt.dtype(t) is rt.float32 and t.dtype is rt.float32
    assert rt.strides(t) == t.strides == (48, -16, 8)
    assert rt.stride(t, 1) == -16 and rt.stride(t, -1) == 8
    assert rt.dim(t, 0) == 2 and rt.dim(t, -1) == 2
    assert rt.ndim(t) == t.ndim == 3
    assert rt.itemsize(t) == 4 and rt.size(t) == rt.numel(t) == t.size == 12
    assert rt.nbytes(t) == 48
    assert rt.offset(t) == 9  # element [0, 2, 1] of the base
    assert not rt.is_c_contiguous(t) and rt.is_c_contiguous(rt.from_numpy(base))
    assert rt.to_array(t) == base[:, ::-1, 1::2].ravel().tolist()
    buf = rt.data(t)  # the whole flat buffer: index it with offset and element strides
    assert buf.shape == (24,) and np.shares_memory(buf, base)
    s = [x // 4 for x in rt.strides(t)]
    assert buf[rt.offset(t) + 1 * s[0] + 2 * s[1] + 1 * s[2]] == base[:, ::-1, 1::2][1, 2, 1]
    buf[rt.offset(t)] = 100
    assert base[0, 2, 1] == 100 and rt.to_array(t)[0] == 100


def test_scalar_properties():
    s = rt.scalar(rt.int16, 3)
    assert rt.shape(s) == () and rt.ndim(s) == 0 and rt.size(s) == 1 and rt.strides(s) == ()
    assert rt.to_array(s) == [3] and rt.nbytes(s) == 2
    e = rt.zeros(rt.float64, [0, 3])
    assert rt.size(e) == 0 and rt.to_array(e) == [] and rt.nbytes(e) == 0


@pytest.mark.parametrize("d", ALL_DTYPES)
def test_itemsize_every_dtype(d):
    t = rt.zeros(d, [3, 2])
    assert rt.itemsize(t) == d.itemsize and rt.nbytes(t) == 6 * d.itemsize
    assert rt.strides(t) == (2 * d.itemsize, d.itemsize)


def test_stride_out_of_bounds():
    with pytest.raises(IndexError, match=r"stride: dimension 2 is out of bounds for a tensor of rank 2"):
        rt.stride(rt.zeros(rt.float32, [2, 3]), 2)


def test_dim_out_of_bounds():
    with pytest.raises(IndexError, match=r"dim: dimension -3 is out of bounds"):
        rt.dim(rt.zeros(rt.float32, [2, 3]), -3)


# -- seed examples: creation -------------------------------------------------------------
def test_seed_create():
    assert str(rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])) == "[[1, 2, 3],\n [4, 5, 6]]"


def test_seed_init():
    assert str(rt.init(rt.int32, [2, 3], lambda i: i[0] + i[1])) == "[[0, 1, 2],\n [1, 2, 3]]"
    t = rt.init(rt.float32, [3, 3], lambda i: 1. if i[0] == i[1] else 0.)
    assert str(t) == "[[1, 0, 0],\n [0, 1, 0],\n [0, 0, 1]]"


def test_seed_full():
    assert str(rt.full(rt.float32, [2, 3], 3.14)) == "[[3.14, 3.14, 3.14],\n [3.14, 3.14, 3.14]]"


def test_seed_eye():
    assert str(rt.eye(rt.int32, 3)) == "[[1, 0, 0],\n [0, 1, 0],\n [0, 0, 1]]"
    assert str(rt.eye(rt.int32, 3, k=1)) == "[[0, 1, 0],\n [0, 0, 1],\n [0, 0, 0]]"
    assert str(rt.eye(rt.int32, 3, m=2, k=-1)) == "[[0, 0, 0],\n [1, 0, 0]]"


def test_seed_identity():
    assert str(rt.identity(rt.int32, 3)) == "[[1, 0, 0],\n [0, 1, 0],\n [0, 0, 1]]"


def test_seed_diag():
    x = rt.reshape(rt.arange(rt.int32, 0, 9, 1), [3, 3])
    assert str(x) == "[[0, 1, 2],\n [3, 4, 5],\n [6, 7, 8]]"
    assert str(rt.diag(x)) == "[0, 4, 8]"
    assert str(rt.diag(x, k=1)) == "[1, 5]"
    v = rt.create(rt.int32, [3], [1, 2, 3])
    assert str(v) == "[1, 2, 3]"
    assert str(rt.diag(v)) == "[[1, 0, 0],\n [0, 2, 0],\n [0, 0, 3]]"


def test_seed_arange():
    assert str(rt.arange(rt.int32, 0, 10, 2)) == "[0, 2, 4, 6, 8]"
    assert str(rt.arange(rt.int32, 5, 0, -1)) == "[5, 4, 3, 2, 1]"


def test_seed_arange_f():
    assert str(rt.arange_f(rt.float32, 0., 1., 0.2)) == "[0, 0.2, 0.4, 0.6, 0.8]"
    assert str(rt.arange_f(rt.float32, 1., 0., -0.25)) == "[1, 0.75, 0.5, 0.25]"


def test_seed_linspace():
    assert str(rt.linspace(rt.float32, 0., 10., 5, endpoint=True)) == "[0, 2.5, 5, 7.5, 10]"
    assert str(rt.linspace(rt.float32, 0., 10., 5, endpoint=False)) == "[0, 2, 4, 6, 8]"


def test_seed_logspace():
    assert str(rt.logspace(rt.float32, 0., 2., 3)) == "[1, 10, 100]"
    assert str(rt.logspace(rt.float32, 0., 3., 4, base=2.0)) == "[1, 2, 4, 8]"


def test_seed_geomspace():
    t = rt.geomspace(rt.float32, 1., 1000., 4)
    assert str(t) == "[1, 10, 100, 1000]"
    assert rt.to_array(t) == [1.0, 10.0, 100.0, 1000.0]  # exact at powers
    assert rt.to_array(rt.geomspace(rt.float64, 1., 1e6, 7)) == [10.0 ** i for i in range(7)]
    assert rt.to_array(rt.geomspace(rt.float64, 2., 2000., 4)) == [2.0, 20.0, 200.0, 2000.0]


def test_seed_meshgrid():
    x = rt.linspace(rt.float32, 0., 2., 3)
    y = rt.linspace(rt.float32, 0., 1., 2)
    r = rt.meshgrid(x, y)
    assert isinstance(r, tuple) and len(r) == 2
    X, Y = r
    assert str(X) == "[[0, 1, 2],\n [0, 1, 2]]"
    assert str(Y) == "[[0, 0, 0],\n [1, 1, 1]]"
    assert X.dtype is rt.float32 and Y.dtype is rt.float32


# -- creation against NumPy, every dtype ----------------------------------------------------
@pytest.mark.parametrize("d", ALL_DTYPES)
def test_constant_creation_every_dtype(d):
    same(rt.zeros(d, [2, 3]), np.zeros((2, 3), NP[d]), d)
    same(rt.ones(d, [4]), np.ones(4, NP[d]), d)
    same(rt.full(d, [2], 1), np.full(2, 1, NP[d]), d)
    same(rt.scalar(d, 1), np.array(1, NP[d]), d)
    assert rt.empty(d, [3, 0]).shape == (3, 0) and rt.empty(d, [2]).dtype is d
    base = rt.zeros(d, [2, 5])
    for f in (rt.zeros_like, rt.ones_like, rt.empty_like):
        t = f(base)
        assert t.shape == (2, 5) and t.dtype is d and not rt.get_backend().shares_memory(t._data, base._data)
    same(rt.full_like(base, 1), np.ones((2, 5), NP[d]), d)
    assert rt.scalar_like(base, 1).shape == () and rt.scalar_like(base, 1).dtype is d
    same(rt.create(d, [2, 2], [0, 1, 1, 0]), np.array([[0, 1], [1, 0]], NP[d]), d)
    same(rt.eye(d, 3, m=2, k=1), np.eye(2, 3, 1, dtype=NP[d]), d)
    same(rt.identity(d, 2), np.identity(2, NP[d]), d)
    same(rt.linspace(d, 0, 1, 3), np.linspace(0, 1, 3).astype(NP[d]) if d.kind != "i" and d.kind != "u"
         else np.array([0, 0, 1], NP[d]), d)
    same(rt.arange(d, 0, 2, 1), np.arange(2).astype(NP[d]), d)
    same(rt.diag(rt.ones(d, [2])), np.eye(2, dtype=NP[d]), d)
    same(rt.tril(rt.ones(d, [2, 2])), np.tril(np.ones((2, 2), NP[d])), d)
    X, Y = rt.meshgrid(rt.ones(d, [2]), rt.zeros(d, [3]))
    assert X.dtype is d and X.shape == (3, 2) and Y.shape == (3, 2)


@given(st.integers(0, 6), st.one_of(st.none(), st.integers(0, 6)), st.integers(-8, 8), st.sampled_from(NUMPY_DTYPES))
def test_eye_matches_numpy(n, m, k, d):
    same(rt.eye(d, n, m=m, k=k), np.eye(n if m is None else m, n, k, dtype=NP[d]), d)


def _strided(shape, dtype, data):
    """A strided (possibly reversed, transposed) view of a random NumPy base and its twin."""
    base = np.arange(int(np.prod([s * 2 for s in shape])) or 1).astype(NP[dtype])
    full = base[: int(np.prod([s * 2 for s in shape]))].reshape([s * 2 for s in shape]) if shape else base[:1]
    key = tuple(slice(None, None, data.draw(st.sampled_from([2, -2]))) for _ in shape)
    view = full[key]
    if view.ndim == 2 and data.draw(st.booleans()):
        view = view.T
    return rt.from_numpy(view), view


@given(st.integers(0, 5), st.integers(-6, 6), st.data())
def test_diag_of_vector_matches_numpy(n, k, data):
    t, v = _strided((n,), rt.int32, data)
    same(rt.diag(t, k=k), np.diag(v, k), rt.int32)


@given(st.integers(0, 5), st.integers(0, 5), st.integers(-6, 6), st.data())
def test_diag_of_matrix_matches_numpy(r, c, k, data):
    t, v = _strided((r, c), rt.float64, data)
    out = rt.diag(t, k=k)
    same(out, np.diag(v, k), rt.float64)
    if out.size:  # a copy, not a view
        assert not rt.get_backend().shares_memory(out._data, t._data)


@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6), st.integers(0, 20), st.booleans())
def test_linspace_matches_numpy(a, b, n, endpoint):
    same(rt.linspace(rt.float64, a, b, n, endpoint=endpoint), np.linspace(a, b, n, endpoint=endpoint))
    exp32 = np.linspace(a, b, n, endpoint=endpoint).astype(np.float32)
    same(rt.linspace(rt.float32, a, b, n, endpoint=endpoint), exp32)
    same(rt.linspace(rt.int32, a, b, n, endpoint=endpoint),
         np.linspace(a, b, n, endpoint=endpoint, dtype=np.int32))


def test_linspace_complex_and_edge_counts():
    same(rt.linspace(rt.complex128, 0, 1 + 2j, 3), np.linspace(0, 1 + 2j, 3))
    same(rt.linspace(rt.float64, 3., 7., 1), np.array([3.0]))
    same(rt.linspace(rt.float64, 3., 7., 0), np.zeros(0))
    same(rt.linspace(rt.float32, 3., 7., 1, endpoint=False), np.array([3.0]))
    same(rt.linspace(rt.bool, 0., 1., 3), np.array([False, True, True]))
    same(rt.linspace(rt.int8, -2., 2., 4, endpoint=True), np.linspace(-2, 2, 4, dtype=np.int8))


@given(st.floats(-5, 5), st.floats(-5, 5), st.integers(0, 12), st.booleans(), st.sampled_from([10.0, 2.0, 0.5, 3.0]))
def test_logspace_matches_numpy(a, b, n, endpoint, base):
    e = np.logspace(a, b, n, endpoint=endpoint, base=base)
    np.testing.assert_allclose(np_of(rt.logspace(rt.float64, a, b, n, endpoint=endpoint, base=base)), e, rtol=1e-13)


@given(st.floats(1e-5, 1e5), st.floats(1e-5, 1e5), st.integers(0, 12), st.booleans())
def test_geomspace_matches_numpy(a, b, n, endpoint):
    got = np_of(rt.geomspace(rt.float64, a, b, n, endpoint=endpoint))
    np.testing.assert_allclose(got, np.geomspace(a, b, n, endpoint=endpoint), rtol=1e-12)
    if n:
        assert got[0] == a
    if n > 1 and endpoint:
        assert got[-1] == b


def test_logspace_geomspace_integer_dtypes():
    same(rt.logspace(rt.int32, 0., 3., 4), np.array([1, 10, 100, 1000], np.int32), rt.int32)
    same(rt.geomspace(rt.int64, 1., 1e9, 10), np.array([10 ** i for i in range(10)]), rt.int64)


@given(st.integers(0, 4), st.integers(0, 4), st.sampled_from(["xy", "ij"]))
def test_meshgrid_matches_numpy(nx, ny, indexing):
    x = np.arange(nx, dtype=np.float64) * 1.5
    y = np.arange(ny, dtype=np.float64) - 2
    X, Y = rt.meshgrid(rt.from_numpy(x), rt.from_numpy(y), indexing=indexing)
    eX, eY = np.meshgrid(x, y, indexing=indexing)
    same(X, eX)
    same(Y, eY)


def test_meshgrid_promotes_and_copies():
    x = rt.create(rt.int32, [2], [1, 2])
    X, Y = rt.meshgrid(x, rt.create(rt.float32, [1], [0.5]))
    assert X.dtype is rt.float32 and Y.dtype is rt.float32
    rt.to_numpy(X)[0, 0] = 9  # results are writable copies
    assert rt.to_array(x) == [1, 2]


@given(st.lists(st.integers(0, 4), min_size=2, max_size=4), st.integers(-5, 5),
       st.sampled_from([rt.float32, rt.int8, rt.bool, rt.complex64, rt.uint16]))
def test_tril_triu_match_numpy(shape, k, d):
    a = (np.arange(int(np.prod(shape))) % 7 + 1).reshape(shape).astype(NP[d])
    t = rt.from_numpy(a)
    same(rt.tril(t, k=k), np.tril(a, k), d)
    same(rt.triu(t, k=k), np.triu(a, k), d)


def test_tril_triu_on_strided_view_and_methods():
    a = np.arange(30.0).reshape(5, 6)[::-2, 1::2]
    t = rt.from_numpy(a)
    same(t.tril(), np.tril(a))
    same(t.triu(k=-1), np.triu(a, -1))
    same(rt.tril(rt.ones(rt.bfloat16, [3, 3]), k=1), np.tril(np.ones((3, 3)), 1))


# -- asarray / from_numpy / to_numpy: zero-copy ------------------------------------------------------
@pytest.mark.parametrize("d", ALL_DTYPES)
def test_from_numpy_and_to_numpy_share_memory(d):
    a = np.zeros((3, 4), NP[d])
    t = rt.from_numpy(a)
    assert t.dtype is d and t.shape == (3, 4)
    a[1, 2] = 1
    assert rt.to_array(t)[6] == 1
    back = rt.to_numpy(t)
    assert np.shares_memory(back, a)
    t2 = rt.asarray(a)
    assert np.shares_memory(rt.to_numpy(t2), a)


def test_views_share_memory_with_numpy():
    a = np.arange(20.0).reshape(4, 5)
    v = a[::-1, 1::2].T
    t = rt.from_numpy(v)
    assert t.strides == v.strides and np.shares_memory(rt.to_numpy(t), a)
    rt.to_numpy(t)[0, 0] = -1.0
    assert a[3, 1] == -1.0


def test_asarray_copy_modes():
    a = np.arange(4, dtype=np.float32)
    assert np.shares_memory(rt.to_numpy(rt.asarray(a, copy=None)), a)
    assert not np.shares_memory(rt.to_numpy(rt.asarray(a, copy=True)), a)
    assert np.shares_memory(rt.to_numpy(rt.asarray(a, dtype=rt.float32, copy=False)), a)
    c = rt.asarray(a, dtype=rt.float64)
    assert c.dtype is rt.float64 and not np.shares_memory(rt.to_numpy(c), a)
    t = rt.ones(rt.int8, [2])
    assert rt.asarray(t) is t
    assert not rt.get_backend().shares_memory(rt.asarray(t, copy=True)._data, t._data)


def test_asarray_copy_false_raises_when_copy_needed():
    with pytest.raises(ValueError, match="needs a copy, but copy=False"):
        rt.asarray(np.arange(3), dtype=rt.float32, copy=False)
    with pytest.raises(ValueError, match="needs a copy, but copy=False"):
        rt.asarray(rt.ones(rt.int8, [2]), dtype=rt.int16, copy=False)
    with pytest.raises(ValueError, match="bytes are immutable"):
        rt.asarray(b"ab", copy=False)


def test_asarray_from_buffers():
    ba = bytearray(b"\x01\x02\x03")
    t = rt.asarray(ba)
    assert t.dtype is rt.uint8 and rt.to_array(t) == [1, 2, 3]
    ba[0] = 9
    assert rt.to_array(t)[0] == 9  # shared
    arr = array.array("f", [1.5, 2.5])
    t = rt.asarray(arr)
    assert t.dtype is rt.float32
    arr[1] = 7.0
    assert rt.to_array(t) == [1.5, 7.0]
    mv = memoryview(bytearray(8)).cast("i")
    assert rt.asarray(mv).dtype is rt.int32 and rt.asarray(mv).shape == (2,)
    b = rt.asarray(b"\x05\x06")
    assert b.dtype is rt.uint8 and rt.to_array(b) == [5, 6]


@pytest.mark.parametrize("obj,dtype,shape,text", [
    (3, rt.int64, (), "3"), (2.5, rt.float64, (), "2.5"), (True, rt.bool, (), "true"),
    (1j, rt.complex128, (), "0+1i"), ([[1, 2], [3, 4]], rt.int64, (2, 2), "[[1, 2],\n [3, 4]]"),
    ([1, 2.5], rt.float64, (2,), "[1, 2.5]"), ([True, False], rt.bool, (2,), "[true, false]"),
    ([], rt.float64, (0,), "[]"),
])
def test_asarray_inference(obj, dtype, shape, text):
    t = rt.asarray(obj)
    assert t.dtype is dtype and t.shape == shape and str(t) == text


def test_asarray_with_every_dtype():
    for d in ALL_DTYPES:
        t = rt.asarray([0, 1], dtype=d)
        assert t.dtype is d and rt.to_array(t) == [0, 1]


def test_asarray_errors():
    with pytest.raises(ValueError, match="asarray"):
        rt.asarray([[1, 2], [3]])
    with pytest.raises(TypeError, match="asarray"):
        rt.asarray([1], dtype="float128")
    with pytest.raises(TypeError, match="from_numpy: expected a NumPy array"):
        rt.from_numpy([1, 2])


def test_init_receives_index_lists():
    seen = []
    rt.init(rt.int8, [2, 2], lambda i: seen.append(list(i)) or 0)
    assert seen == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert rt.init(rt.float64, [], lambda i: 5.0).shape == ()


# -- errors (one per documented raise) -----------------------------------------------------------------
def test_create_size_mismatch():
    with pytest.raises(ValueError, match=r"create: data has 5 elements but shape \(2, 3\) needs 6"):
        rt.create(rt.float32, [2, 3], [1, 2, 3, 4, 5])


def test_create_value_out_of_range():
    with pytest.raises(ValueError, match="create: value 300 is out of range for uint8"):
        rt.create(rt.uint8, [1], [300])


def test_full_value_errors():
    with pytest.raises(ValueError, match="full: value 8 is out of range for int4"):
        rt.full(rt.int4, [2], 8)
    with pytest.raises(TypeError, match="full: complex value"):
        rt.full(rt.float32, [2], 1j)


def test_arange_step_zero():
    with pytest.raises(ValueError, match="arange: step must be non-zero, got 0"):
        rt.arange(rt.int32, 0, 10, 0)


def test_arange_f_step_zero():
    with pytest.raises(ValueError, match=r"arange_f: step must be non-zero, got 0.0"):
        rt.arange_f(rt.float32, 0., 1., 0.)


def test_diag_of_0d():
    with pytest.raises(ValueError, match="diag: v must be 1-d or 2-d, got a 0-d tensor"):
        rt.diag(rt.scalar(rt.int32, 3))


def test_diag_of_3d():
    with pytest.raises(ValueError, match=r"diag: v must be 1-d or 2-d, got a 3-d tensor of shape \(1, 1, 1\)"):
        rt.diag(rt.zeros(rt.int32, [1, 1, 1]))


@pytest.mark.parametrize("start,stop", [(0., 10.), (-1., 10.), (1., 0.), (1., -5.), (float("nan"), 1.)])
def test_geomspace_non_positive(start, stop):
    with pytest.raises(ValueError, match="geomspace: start and stop must be > 0"):
        rt.geomspace(rt.float32, start, stop, 3)


@pytest.mark.parametrize("x_shape,y_shape,bad", [([2, 2], [3], "x"), ([2], [], "y"), ([2], [1, 3], "y")])
def test_meshgrid_not_1d(x_shape, y_shape, bad):
    with pytest.raises(ValueError, match=f"meshgrid: {bad} must be 1-d"):
        rt.meshgrid(rt.zeros(rt.float32, x_shape), rt.zeros(rt.float32, y_shape))


def test_meshgrid_bad_indexing():
    with pytest.raises(ValueError, match="meshgrid: indexing must be"):
        rt.meshgrid(rt.zeros(rt.float32, [2]), rt.zeros(rt.float32, [2]), indexing="yx")


@pytest.mark.parametrize("fn", [rt.tril, rt.triu])
@pytest.mark.parametrize("shape", [[], [3]])
def test_tril_triu_need_2d(fn, shape):
    with pytest.raises(ValueError, match=f"{fn.__name__}: x must have at least 2 dimensions"):
        fn(rt.zeros(rt.float32, shape))


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: rt.eye(rt.int32, -1), ValueError, "eye: n must be >= 0, got -1"),
    (lambda: rt.eye(rt.int32, 2, m=-2), ValueError, "eye: m must be >= 0"),
    (lambda: rt.eye(rt.int32, 2.5), TypeError, "eye: n must be an integer"),
    (lambda: rt.identity(rt.int32, -3), ValueError, "identity: n must be >= 0"),
    (lambda: rt.linspace(rt.float32, 0., 1., -1), ValueError, "linspace: count must be >= 0"),
    (lambda: rt.linspace(rt.float32, "a", 1., 2), TypeError, "linspace: start must be a number"),
    (lambda: rt.logspace(rt.float32, 0., 1., -2), ValueError, "logspace: count must be >= 0"),
    (lambda: rt.logspace(rt.float32, 0., 1j, 2), TypeError, "logspace: stop_exp must be real"),
    (lambda: rt.geomspace(rt.float32, 1., 2., -1), ValueError, "geomspace: count must be >= 0"),
    (lambda: rt.zeros(rt.float32, [2, -1]), ValueError, "zeros: shape"),
    (lambda: rt.ones("float99", [2]), TypeError, "ones: dtype"),
    (lambda: rt.diag(rt.zeros(rt.int8, [2]), k=0.5), TypeError, "diag: k must be an integer"),
])
def test_argument_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


@pytest.mark.parametrize("d,value", [(rt.int32, float("nan")), (rt.int8, float("inf")), (rt.uint8, -1.5),
                                     (rt.int4, 8.0), (rt.uint64, 2.0 ** 64)])
def test_full_float_value_that_an_integer_dtype_cannot_store(d, value):
    with pytest.raises(ValueError, match="full: value"):
        rt.full(d, [2], value)


def test_full_float_into_integer_must_be_integral():
    # no silent truncation of a non-integral float into an integer tensor (bigarray raises too);
    # integral floats are stored
    with pytest.raises(ValueError, match=r"full: value -2\.7 is not an integer; int8"):
        rt.full(rt.int8, [2], -2.7)
    with pytest.raises(ValueError, match=r"full: value 255\.9 is not an integer; uint8"):
        rt.full(rt.uint8, [1], 255.9)
    assert rt.to_array(rt.full(rt.uint8, [1], 255.0)) == [255]


def test_arange_values_must_fit_the_dtype():
    with pytest.raises(ValueError, match=r"arange: values 0 \.\. 299 do not fit int8"):
        rt.arange(rt.int8, 0, 300, 1)
    assert rt.arange(rt.int8, 127, -129, -1).shape == (256,)
    assert rt.arange(rt.uint8, 5, 0, 1).shape == (0,)


def test_arange_length_and_uint64_range():
    assert rt.to_array(rt.arange(rt.int32, 0, 10, 3)) == [0, 3, 6, 9]
    assert rt.to_array(rt.arange(rt.int32, 10, 0, -3)) == [10, 7, 4, 1]
    assert rt.to_array(rt.arange(rt.uint64, 2 ** 63, 2 ** 63 + 3, 1)) == [2 ** 63, 2 ** 63 + 1, 2 ** 63 + 2]
    assert rt.to_array(rt.arange(rt.uint64, 2 ** 64 - 1, 2 ** 64 - 5, -2)) == [2 ** 64 - 1, 2 ** 64 - 3]


@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(-7, 7).filter(bool))
def test_arange_matches_numpy(a, b, s):
    same(rt.arange(rt.int64, a, b, s), np.arange(a, b, s))


@pytest.mark.parametrize("call,msg", [
    (lambda: rt.linspace(rt.int8, 0, 1000, 3), "linspace: values from 0 to 1000 do not fit int8"),
    (lambda: rt.linspace(rt.uint8, float("nan"), 1, 3), "linspace: values from nan"),
    (lambda: rt.logspace(rt.int32, 0, 10, 3), "logspace: values from 1 to 1e\\+10 do not fit int32"),
    (lambda: rt.geomspace(rt.int16, 1, 1e5, 3), "geomspace: values from 1 to 100000 do not fit int16"),
])
def test_ranges_into_integer_dtypes_must_fit(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_data_edge_cases():
    assert rt.data(rt.zeros(rt.float32, [0])).shape == (0,)
    assert rt.data(rt.scalar(rt.int8, 3)).tolist() == [3]
    base = np.arange(10.0)
    assert rt.data(rt.from_numpy(base[7:2:-2])).shape == (10,)
    assert rt.data(rt.zeros(rt.bfloat16, [2, 2])).dtype == np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("make", [
    lambda: rt.zeros(rt.float32, [2**40, 2**40]),
    lambda: rt.ones(rt.float64, [2**31, 2**31]),
    lambda: rt.empty(rt.int8, [2**32, 2**32]),
    lambda: rt.full(rt.float32, [2**62], 1.0),
])
def test_impossible_sizes_raise_named_value_error(make):
    with pytest.raises(ValueError, match=r"^(zeros|ones|empty|full): shape .* more than any buffer can hold"):
        make()
