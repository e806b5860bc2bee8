"""The Array API standard namespace ``runetensor.array_api``: coverage of 2024.12, semantics, errors.

NumPy (whose main namespace follows the standard since 2.0) is the oracle
for the property tests; where the standard and NumPy differ the standard's
rule is asserted directly.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runetensor as rt
import runetensor.array_api as xp

# ---------------------------------------------------------------------------
# coverage of the 2024.12 revision
# ---------------------------------------------------------------------------
STANDARD_NAMES = """
e inf nan newaxis pi
bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128
astype can_cast finfo iinfo isdtype result_type __array_namespace_info__
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like
tril triu zeros zeros_like
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert
bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp expm1
floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal log log1p
log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply negative
nextafter not_equal positive pow real reciprocal remainder round sign signbit sin sinh square sqrt
subtract tan tanh trunc
take take_along_axis
matmul matrix_transpose tensordot vecdot
broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape roll
squeeze stack tile unstack
argmax argmin count_nonzero nonzero searchsorted where
unique_all unique_counts unique_inverse unique_values
argsort sort
cumulative_prod cumulative_sum max mean min prod std sum var
all any diff
""".split()
LINALG_NAMES = ("cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank "
                "matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot "
                "vector_norm").split()
FFT_NAMES = ("fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift "
             "ifftshift").split()
ARRAY_ATTRS = ("__abs__ __add__ __and__ __array_namespace__ __bool__ __complex__ __dlpack__ "
               "__dlpack_device__ __eq__ __float__ __floordiv__ __ge__ __getitem__ __gt__ __index__ "
               "__int__ __invert__ __le__ __lshift__ __lt__ __matmul__ __mod__ __mul__ __ne__ __neg__ "
               "__or__ __pos__ __pow__ __rshift__ __setitem__ __sub__ __truediv__ __xor__ to_device "
               "dtype device mT ndim shape size T").split()


def test_namespace_covers_the_standard():
    assert xp.__array_api_version__ == "2024.12"
    missing = [n for n in STANDARD_NAMES if not hasattr(xp, n)]
    assert not missing
    assert not [n for n in LINALG_NAMES if not hasattr(xp.linalg, n)]
    assert not [n for n in FFT_NAMES if not hasattr(xp.fft, n)]
    assert not [n for n in ARRAY_ATTRS if not hasattr(rt.Tensor, n)]
    assert set(STANDARD_NAMES) - {"__array_namespace_info__"} <= set(xp.__all__)
    for n in xp.__all__:
        assert hasattr(xp, n), n


def test_constants_and_dtypes():
    assert xp.e == math.e and xp.pi == math.pi and xp.inf == math.inf and math.isnan(xp.nan)
    assert xp.newaxis is None
    assert xp.float64 is rt.float64 and xp.bool is rt.bool
    assert not hasattr(xp, "bfloat16")  # only the standard's dtypes are exposed
    assert xp.float32 == xp.float32 and xp.float32 != xp.float64


def test_same_tensor_type_and_namespace_method():
    x = xp.asarray([1, 2])
    assert type(x) is rt.Tensor
    assert x.__array_namespace__() is xp
    assert rt.zeros(rt.float32, [2]).__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="2019.01")


def test_device_to_device_mT_T():
    x = xp.reshape(xp.arange(24), (2, 3, 4))
    assert x.device == "cpu"
    assert x.to_device("cpu") is x
    with pytest.raises(ValueError, match="device"):
        x.to_device("gpu")
    with pytest.raises(ValueError, match="stream"):
        x.to_device("cpu", stream=1)
    assert x.mT.shape == (2, 4, 3)
    np.testing.assert_array_equal(rt.to_numpy(x.mT), np.swapaxes(rt.to_numpy(x), -1, -2))
    assert x.T.shape == (4, 3, 2)  # NumPy-like for every rank
    with pytest.raises(ValueError, match="mT"):
        xp.asarray([1, 2]).mT


def test_info():
    info = xp.__array_namespace_info__()
    caps = info.capabilities()
    assert caps == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}
    assert info.default_device() == "cpu" and info.devices()[0] == "cpu"
    assert set(info.devices()) <= {"cpu", "dask"}  # "dask" where Dask is installed (tests/test_dask_collection.py)
    assert info.default_dtypes() == {"real floating": xp.float64, "complex floating": xp.complex128,
                                     "integral": xp.int64, "indexing": xp.int64}
    assert len(info.dtypes()) == 13
    assert set(info.dtypes(kind="numeric")) == set(info.dtypes()) - {"bool"}
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {"bool", "complex64", "complex128"}
    with pytest.raises(ValueError, match="device"):
        info.dtypes(device="tpu")


# ---------------------------------------------------------------------------
# data type functions
# ---------------------------------------------------------------------------
STD = [xp.bool, xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8, xp.uint16, xp.uint32, xp.uint64,
       xp.float32, xp.float64, xp.complex64, xp.complex128]


@pytest.mark.parametrize("d", [xp.float32, xp.float64, xp.complex64, xp.complex128])
def test_finfo_matches_numpy(d):
    f = xp.finfo(d)
    n = np.finfo(d.name)
    assert (f.bits, f.eps, f.max, f.min, f.smallest_normal) == \
        (n.bits, float(n.eps), float(n.max), float(n.min), float(n.smallest_normal))
    assert f.dtype is d.real_dtype and type(f.eps) is float
    assert xp.finfo(xp.ones(1, dtype=d)).bits == n.bits


@pytest.mark.parametrize("d", [xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8, xp.uint16, xp.uint32, xp.uint64])
def test_iinfo_matches_numpy(d):
    i = xp.iinfo(d)
    n = np.iinfo(d.name)
    assert (i.bits, i.max, i.min, i.dtype) == (n.bits, int(n.max), int(n.min), d)


def test_finfo_iinfo_errors():
    with pytest.raises(TypeError, match="finfo"):
        xp.finfo(xp.int8)
    with pytest.raises(TypeError, match="iinfo"):
        xp.iinfo(xp.float32)


def test_can_cast_follows_the_promotion_table():
    for a in STD:
        for b in STD:
            got = xp.can_cast(a, b)
            if a is b:
                assert got
            elif a.kind == "b" or b.kind == "b" or (a.kind in "iu") != (b.kind in "iu"):
                assert not got, (a, b)
            else:
                assert got == (xp.result_type(a, b) is b), (a, b)
    assert xp.can_cast(xp.asarray([1], dtype=xp.int8), xp.int16)
    assert not xp.can_cast(xp.complex64, xp.float64)


def test_isdtype():
    assert xp.isdtype(xp.int8, "signed integer") and not xp.isdtype(xp.uint8, "signed integer")
    assert xp.isdtype(xp.uint64, "integral") and xp.isdtype(xp.complex64, "numeric")
    assert not xp.isdtype(xp.bool, "numeric")
    assert xp.isdtype(xp.float32, ("complex floating", xp.float32))
    with pytest.raises(ValueError, match="unknown kind"):
        xp.isdtype(xp.int8, "integer")
    with pytest.raises(TypeError, match="expected a dtype"):
        xp.isdtype("int8", "integral")
    with pytest.raises(TypeError, match="kind must be"):
        xp.isdtype(xp.int8, 3)


def test_result_type():
    assert xp.result_type(xp.int8, xp.uint8) is xp.int16
    assert xp.result_type(xp.float32, xp.complex64) is xp.complex64
    assert xp.result_type(xp.asarray([1], dtype=xp.int8), 1) is xp.int8
    assert xp.result_type(xp.float32, 1.0) is xp.float32
    assert xp.result_type(xp.int16, xp.int32, xp.int8) is xp.int32
    with pytest.raises(ValueError):
        xp.result_type()
    with pytest.raises(ValueError):
        xp.result_type(1, 2.0)
    with pytest.raises(TypeError):
        xp.result_type("x")


def test_astype():
    x = xp.asarray([1.7, -2.5, float("nan")])
    np.testing.assert_array_equal(rt.to_numpy(xp.astype(x, xp.int32)), [1, -2, 0])
    assert xp.astype(x, xp.float64, copy=False) is x
    y = xp.astype(x, xp.float64)
    assert y is not x and rt.to_numpy(y).base is not rt.to_numpy(x)
    with pytest.raises(TypeError, match="astype"):
        xp.astype(x, "not a dtype")
    with pytest.raises(ValueError, match="device"):
        xp.astype(x, xp.float32, device="gpu")


# ---------------------------------------------------------------------------
# creation
# ---------------------------------------------------------------------------
@given(st.integers(-20, 20), st.integers(-20, 20), st.integers(-5, 5).filter(bool))
def test_arange_int_matches_numpy(a, b, s):
    r = xp.arange(a, b, s)
    assert r.dtype is xp.int64
    np.testing.assert_array_equal(rt.to_numpy(r), np.arange(a, b, s))


@given(st.floats(-10, 10), st.floats(-10, 10), st.floats(0.1, 3) | st.floats(-3, -0.1))
def test_arange_float_has_ceil_length(a, b, s):
    r = xp.arange(a, b, s)
    assert r.dtype is xp.float64
    assert r.shape == (max(0, math.ceil((b - a) / s)),)
    np.testing.assert_allclose(rt.to_numpy(r), a + np.arange(r.shape[0]) * s)


def test_arange_forms_and_errors():
    assert rt.to_numpy(xp.arange(4)).tolist() == [0, 1, 2, 3]
    assert xp.arange(3, dtype=xp.float32).dtype is xp.float32
    assert xp.arange(5, 0).shape == (0,)
    with pytest.raises(ValueError, match="step"):
        xp.arange(0, 5, 0)
    with pytest.raises(ValueError, match="finite"):
        xp.arange(0, xp.inf)
    with pytest.raises(TypeError, match="complex"):
        xp.arange(1j)


def test_asarray_inference_and_copy():
    assert xp.asarray(True).dtype is xp.bool and xp.asarray(1).dtype is xp.int64
    assert xp.asarray(1.0).dtype is xp.float64 and xp.asarray(1j).dtype is xp.complex128
    assert xp.asarray([[1, 2.5]]).dtype is xp.float64
    x = xp.asarray([1, 2, 3])
    assert xp.asarray(x) is x
    c = xp.asarray(x, copy=True)
    assert c is not x and not np.shares_memory(rt.to_numpy(c), rt.to_numpy(x))
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(x, dtype=xp.float32, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match=r"^asarray: value 300 is out of range for int8"):
        xp.asarray(300, dtype=xp.int8)  # unspecified by the standard: the project's ValueError
    a = np.arange(3.0)
    t = xp.asarray(a)
    assert np.shares_memory(rt.to_numpy(t), a)  # buffers are shared when possible
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray(a, dtype=xp.float32, copy=False)
    with pytest.raises(ValueError, match="device"):
        xp.asarray([1], device="cuda")


def test_full_and_like():
    assert xp.full((2,), 7).dtype is xp.int64
    assert xp.full((2,), 7.0).dtype is xp.float64
    assert xp.full((2,), True).dtype is xp.bool
    assert xp.full((2,), 1j).dtype is xp.complex128
    assert xp.full(3, 2, dtype=xp.uint8).shape == (3,)
    with pytest.raises(TypeError, match="fill_value"):
        xp.full((2,), 1.5, dtype=xp.int32)
    with pytest.raises(ValueError, match=r"^full: fill_value 1000 is out of range for int8"):
        xp.full((2,), 1000, dtype=xp.int8)  # unspecified by the standard: the project's ValueError
    x = xp.ones((2, 3), dtype=xp.float32)
    for f in (xp.zeros_like, xp.ones_like, xp.empty_like):
        r = f(x)
        assert r.shape == (2, 3) and r.dtype is xp.float32
    assert xp.full_like(x, 3, dtype=xp.int16).dtype is xp.int16
    assert rt.to_numpy(xp.zeros((2,))).tolist() == [0.0, 0.0]
    assert xp.empty((0, 2)).shape == (0, 2)
    with pytest.raises(ValueError):
        xp.zeros((-1,))


@pytest.mark.parametrize("n,m,k", [(3, None, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5), (0, 2, 0), (3, 2, -3)])
def test_eye_matches_numpy(n, m, k):
    np.testing.assert_array_equal(rt.to_numpy(xp.eye(n, m, k=k)), np.eye(n, m, k=k))


def test_eye_errors():
    with pytest.raises(ValueError):
        xp.eye(-1)


@pytest.mark.parametrize("start,stop,num,endpoint", [(0, 1, 5, True), (0, 1, 4, False), (2, -3, 7, True),
                                                    (1, 1, 1, True), (0, 10, 0, True), (1j, 3 + 2j, 4, True)])
def test_linspace_matches_numpy(start, stop, num, endpoint):
    r = xp.linspace(start, stop, num, endpoint=endpoint)
    np.testing.assert_allclose(rt.to_numpy(r), np.linspace(start, stop, num, endpoint=endpoint))
    if num > 1 and endpoint:
        assert rt.to_numpy(r)[-1] == stop  # the end point is exact
    assert xp.linspace(0, 1, 3, dtype=xp.float32).dtype is xp.float32


def test_linspace_errors():
    with pytest.raises(ValueError, match="num"):
        xp.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="complex"):
        xp.linspace(0, 1j, 3, dtype=xp.float64)
    with pytest.raises(TypeError, match="floating"):
        xp.linspace(0, 1, 3, dtype=xp.int32)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_matches_numpy(indexing):
    a, b, c = np.arange(3), np.arange(4.0), np.arange(2)
    got = xp.meshgrid(xp.asarray(a), xp.asarray(b), xp.asarray(c), indexing=indexing)
    want = np.meshgrid(a, b, c, indexing=indexing)
    assert isinstance(got, list) and len(got) == 3
    for g, w in zip(got, want):
        assert g.dtype is xp.float64
        np.testing.assert_array_equal(rt.to_numpy(g), w)
    with pytest.raises(ValueError, match="indexing"):
        xp.meshgrid(xp.asarray(a), indexing="yx")
    with pytest.raises(ValueError, match="1-d"):
        xp.meshgrid(xp.ones((2, 2)))


@given(st.integers(2, 4), st.integers(0, 4), st.integers(0, 4), st.integers(-4, 4))
def test_tril_triu_match_numpy(b, n, m, k):
    a = np.arange(b * n * m, dtype=np.float64).reshape(b, n, m) + 1
    np.testing.assert_array_equal(rt.to_numpy(xp.tril(xp.asarray(a), k=k)), np.tril(a, k))
    np.testing.assert_array_equal(rt.to_numpy(xp.triu(xp.asarray(a), k=k)), np.triu(a, k))


def test_tril_error():
    with pytest.raises(ValueError, match="rank >= 2"):
        xp.tril(xp.ones(3))


def test_from_dlpack():
    a = np.arange(4.0)
    t = xp.from_dlpack(a)
    np.testing.assert_array_equal(rt.to_numpy(t), a)
    x = xp.asarray([1, 2])
    assert xp.from_dlpack(x) is x
    assert xp.from_dlpack(x, copy=True) is not x
    with pytest.raises(ValueError, match="device"):
        xp.from_dlpack(a, device="gpu")


# ---------------------------------------------------------------------------
# elementwise functions against NumPy (strided views, broadcasting, scalars)
# ---------------------------------------------------------------------------
UNARY_FLOAT = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp", "expm1",
               "floor", "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10", "negative", "positive",
               "round", "sign", "signbit", "sin", "sinh", "square", "sqrt", "tan", "tanh", "trunc", "reciprocal",
               "logical_not"]
UNARY_COMPLEX = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "conj", "cos", "cosh", "exp", "expm1",
                 "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10", "negative", "positive", "real",
                 "imag", "sign", "sin", "sinh", "square", "sqrt", "tan", "tanh", "reciprocal", "round"]
NP_NAME = {"round": "rint", "reciprocal": "reciprocal", "bitwise_invert": "invert"}
BINARY_FLOAT = ["add", "atan2", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal",
                "hypot", "less", "less_equal", "logaddexp", "maximum", "minimum", "multiply", "nextafter",
                "not_equal", "pow", "remainder", "subtract", "logical_and", "logical_or", "logical_xor"]
BINARY_INT = ["add", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "floor_divide", "greater", "maximum",
              "minimum", "multiply", "not_equal", "remainder", "subtract", "bitwise_left_shift",
              "bitwise_right_shift"]


def _np(t):
    return np.asarray(rt.to_numpy(t))


@st.composite
def float_views(draw, dtype=np.float64, max_dims=3, elements=None):
    shape = draw(st.lists(st.integers(0, 4), min_size=0, max_size=max_dims).map(tuple))
    n = int(np.prod(shape)) if shape else 1
    if elements is None:
        elements = st.floats(-3, 3, allow_nan=False, width=32)
    data = np.array(draw(st.lists(elements, min_size=n, max_size=n)), dtype=dtype).reshape(shape)
    if data.ndim and draw(st.booleans()):
        data = data[tuple(slice(None, None, -1) for _ in shape)]
    if data.ndim > 1 and draw(st.booleans()):
        data = data.T
    return xp.asarray(data), data


def _np_unary(name, a):
    if name == "positive":
        return +a
    if name == "sign" and a.dtype.kind == "f":
        return np.where(a == 0, a, np.sign(a))
    return getattr(np, NP_NAME.get(name, name))(a)


@pytest.mark.parametrize("name", UNARY_FLOAT)
@settings(max_examples=12)
@given(data=st.data())
def test_unary_float_matches_numpy(name, data):
    dt = data.draw(st.sampled_from([np.float32, np.float64]))
    t, a = data.draw(float_views(dt))
    got = getattr(xp, name)(t)
    with np.errstate(all="ignore"):
        want = _np_unary(name, a)
    assert got.shape == want.shape
    assert got.dtype.name == want.dtype.name
    np.testing.assert_allclose(_np(got), want, rtol=2e-6 if dt == np.float32 else 1e-12, equal_nan=True)


@pytest.mark.parametrize("name", UNARY_COMPLEX)
@settings(max_examples=12)
@given(data=st.data())
def test_unary_complex_matches_numpy(name, data):
    t, a = data.draw(float_views(np.float64))
    c = a + 0.5j * a[::-1] if a.ndim else a + 0.5j
    got = getattr(xp, name)(xp.asarray(c))
    with np.errstate(all="ignore"):
        want = _np_unary(name, c)
    assert got.dtype.name == want.dtype.name
    np.testing.assert_allclose(_np(got), want, rtol=1e-12, atol=1e-300, equal_nan=True)


@pytest.mark.parametrize("name", ["abs", "negative", "square", "sign", "ceil", "floor", "trunc", "round",
                                  "bitwise_invert", "positive"])
@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64", "uint64"])
def test_unary_integer_keeps_dtype(name, dt):
    a = np.array([0, 1, 2, 5, 100], dtype=dt)
    got = getattr(xp, name)(xp.asarray(a))
    assert got.dtype.name == dt
    with np.errstate(all="ignore"):
        want = {"bitwise_invert": np.invert, "positive": np.positive, "round": np.round}.get(
            name, getattr(np, name, None))(a)
    np.testing.assert_array_equal(_np(got), want)


@pytest.mark.parametrize("name", BINARY_FLOAT)
@settings(max_examples=12)
@given(data=st.data())
def test_binary_float_matches_numpy_with_broadcasting(name, data):
    dt = data.draw(st.sampled_from([np.float32, np.float64]))
    t1, a1 = data.draw(float_views(dt, max_dims=2))
    t2, a2 = data.draw(float_views(dt, max_dims=2))
    try:
        want_shape = np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        with pytest.raises(ValueError):
            getattr(xp, name)(t1, t2)
        return
    got = getattr(xp, name)(t1, t2)
    npname = {"atan2": "arctan2", "pow": "power", "bitwise_left_shift": "left_shift"}.get(name, name)
    with np.errstate(all="ignore"):
        want = getattr(np, npname)(a1, a2)
        if name == "floor_divide":
            inf = np.isinf(a1) | np.isinf(a2)
            want = np.where(inf, np.floor(a1 / a2), want)
    assert got.shape == want_shape
    assert got.dtype.name == want.dtype.name
    np.testing.assert_allclose(_np(got), want, rtol=2e-6 if dt == np.float32 else 1e-12, equal_nan=True)


@pytest.mark.parametrize("name", BINARY_INT)
@settings(max_examples=12)
@given(data=st.data())
def test_binary_int_matches_numpy(name, data):
    dt = data.draw(st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint32"]))
    lo, hi = (0, 6) if "shift" in name else (-50 if dt[0] == "i" else 0, 50)
    t1, a1 = data.draw(float_views(np.float64, max_dims=2, elements=st.integers(lo, hi).map(float)))
    t2, a2 = data.draw(float_views(np.float64, max_dims=2, elements=st.integers(lo if lo else 1, hi).filter(bool)
                                   .map(float)))
    a1, a2 = a1.astype(dt), a2.astype(dt)
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return
    got = getattr(xp, name)(xp.asarray(a1), xp.asarray(a2))
    npname = {"bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}.get(name, name)
    want = getattr(np, npname)(a1, a2)
    assert got.dtype.name == want.dtype.name
    np.testing.assert_array_equal(_np(got), want)


def test_binary_scalars_are_weak():
    x = xp.asarray([1, 2], dtype=xp.int8)
    assert xp.add(x, 1).dtype is xp.int8 and xp.add(1, x).dtype is xp.int8
    assert xp.multiply(xp.asarray([1.0], dtype=xp.float32), 2.5).dtype is xp.float32
    assert xp.divide(x, 2).dtype is xp.float64  # true division of integers: the default float
    assert xp.add(xp.asarray([1.0], dtype=xp.float32), 1j).dtype is xp.complex64
    assert rt.to_numpy(xp.pow(2, xp.asarray([1, 3]))).tolist() == [2, 8]
    with pytest.raises(ValueError):
        xp.add(x, 1000)  # out of int8's range


def test_python_operators_follow_the_standard():
    x = xp.asarray([7, -7])
    assert rt.to_numpy(x // 2).tolist() == [3, -4]
    assert rt.to_numpy(x % 3).tolist() == [1, 2]
    assert (x / 2).dtype is xp.float64
    assert rt.to_numpy(xp.asarray([[1, 2], [3, 4]]) @ xp.asarray([1, 1])).tolist() == [3, 7]


def test_elementwise_dtype_errors():
    with pytest.raises(TypeError):
        xp.bitwise_and(xp.asarray([1.0]), xp.asarray([2.0]))
    with pytest.raises(TypeError):
        xp.bitwise_left_shift(xp.asarray([True]), xp.asarray([True]))
    with pytest.raises(TypeError):
        xp.floor_divide(xp.asarray([1j]), xp.asarray([1j]))
    with pytest.raises(TypeError):
        xp.less(xp.asarray([1j]), xp.asarray([1j]))
    with pytest.raises(TypeError):
        xp.atan2(xp.asarray([1j]), xp.asarray([1j]))
    with pytest.raises(TypeError):
        xp.negative(xp.asarray([True]))
    with pytest.raises(TypeError, match="subtract"):
        xp.subtract(xp.asarray([True]), xp.asarray([False]))
    with pytest.raises(TypeError):
        xp.positive(xp.asarray([True]))
    with pytest.raises(TypeError):
        xp.signbit(xp.asarray([1j]))
    with pytest.raises(TypeError):
        xp.bitwise_invert(xp.asarray([1.5]))
    with pytest.raises(ValueError):
        xp.add(xp.ones((2, 3)), xp.ones((4,)))


def test_round_halves_to_even_and_differs_from_seed_round():
    x = xp.asarray([0.5, 1.5, 2.5, -0.5, -1.5])
    assert rt.to_numpy(xp.round(x)).tolist() == [0.0, 2.0, 2.0, -0.0, -2.0]
    assert rt.to_numpy(xp.round(xp.asarray([2.5 - 0.5j]))).tolist() == [2 - 0j]


def test_sign_of_complex():
    r = rt.to_numpy(xp.sign(xp.asarray([3 + 4j, 0j, -2j], dtype=xp.complex64)))
    np.testing.assert_allclose(r, [0.6 + 0.8j, 0, -1j], rtol=1e-6)
    assert r.dtype == np.complex64


# ---------------------------------------------------------------------------
# clip and where (scalars allowed)
# ---------------------------------------------------------------------------
@given(data=st.data())
def test_clip_matches_numpy(data):
    t, a = data.draw(float_views(np.float64))
    lo = data.draw(st.none() | st.floats(-2, 0))
    hi = data.draw(st.none() | st.floats(0, 2))
    got = xp.clip(t, lo, hi)
    want = a if lo is None and hi is None else np.clip(a, lo, hi)
    assert got.dtype is xp.float64 and got.shape == a.shape
    np.testing.assert_array_equal(_np(got), want)


def test_clip_arrays_ints_nan_and_errors():
    x = xp.asarray([1, 50, 120], dtype=xp.int8)
    r = xp.clip(x, -1000, 100)
    assert r.dtype is xp.int8 and rt.to_numpy(r).tolist() == [1, 50, 100]
    lo = xp.asarray([2, 0, 0], dtype=xp.int8)
    assert rt.to_numpy(xp.clip(x, lo, 60)).tolist() == [2, 50, 60]
    f = xp.asarray([0.5, float("nan")])
    assert np.isnan(rt.to_numpy(xp.clip(f, 0.0, 1.0))[1])
    assert np.isnan(rt.to_numpy(xp.clip(xp.asarray([0.5]), xp.nan, 1.0))[0])
    c = xp.clip(f)
    assert c is not f
    with pytest.raises(TypeError, match="complex"):
        xp.clip(xp.asarray([1j]), 0, 1)
    with pytest.raises(TypeError, match="float"):
        xp.clip(x, 0.5, 2)


def test_where_with_scalars_and_broadcasting():
    c = xp.asarray([[True], [False]])
    r = xp.where(c, xp.asarray([1, 2, 3], dtype=xp.int16), 0)
    assert r.dtype is xp.int16 and r.shape == (2, 3)
    assert rt.to_numpy(r).tolist() == [[1, 2, 3], [0, 0, 0]]
    r2 = xp.where(c, 1.5, 2)
    assert r2.dtype is xp.float64 and rt.to_numpy(r2).tolist() == [[1.5], [2.0]]
    r3 = xp.where(c, xp.asarray([1.0], dtype=xp.float32), xp.asarray([1], dtype=xp.float64))
    assert r3.dtype is xp.float64
    with pytest.raises(TypeError, match="bool"):
        xp.where(xp.asarray([1, 0]), 1, 2)
    with pytest.raises(ValueError):
        xp.where(xp.asarray([True, False]), xp.ones(3), 0.0)


# ---------------------------------------------------------------------------
# statistical functions
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dt,acc", [("int8", "int64"), ("int32", "int64"), ("uint8", "uint64"), ("uint32", "uint64"),
                                    ("bool", "int64"), ("float32", "float32"), ("complex64", "complex64")])
def test_sum_prod_cumulative_default_dtypes(dt, acc):
    x = xp.asarray(np.array([[1, 0, 1], [1, 1, 1]], dtype=dt))
    for f in (xp.sum, xp.prod):
        assert f(x).dtype.name == acc
    assert xp.cumulative_sum(x, axis=1).dtype.name == acc
    assert xp.cumulative_prod(x, axis=0).dtype.name == acc
    assert xp.sum(x, dtype=xp.float64).dtype is xp.float64


def test_sum_of_int32_is_the_default_int_and_does_not_overflow():
    x = xp.full((3,), 2 ** 31 - 1, dtype=xp.int32)
    s = xp.sum(x)
    assert s.dtype is xp.int64 and int(s) == 3 * (2 ** 31 - 1)


@st.composite
def reduce_case(draw):
    t, a = draw(float_views(np.float64, max_dims=3))
    axis = draw(st.none() | (st.integers(-a.ndim, a.ndim - 1) if a.ndim else st.none()))
    keep = draw(st.booleans())
    return t, a, axis, keep


@given(reduce_case())
def test_reductions_match_numpy(case):
    t, a, axis, keep = case
    empty_reduction = a.size == 0 and (axis is None or a.shape[axis] == 0)
    for name in ("max", "min"):
        if empty_reduction:
            with pytest.raises(ValueError, match="zero-size"):
                getattr(xp, name)(t, axis=axis)
    for name in ("sum", "prod", "max", "min", "mean"):
        if empty_reduction and name in ("max", "min"):
            continue
        if name == "mean" and a.size == 0:
            assert np.isnan(_np(xp.mean(t, axis=axis))).all()
            continue
        got = getattr(xp, name)(t, axis=axis, keepdims=keep)
        want = getattr(np, name)(a, axis=axis, keepdims=keep)
        assert got.shape == want.shape, name
        np.testing.assert_allclose(_np(got), want, rtol=1e-12, atol=1e-12)
    for corr in (0, 1):
        n = a.size if axis is None else a.shape[axis]
        if n - corr <= 0:
            assert np.all(np.isnan(_np(xp.var(t, axis=axis, correction=corr))))
            continue
        np.testing.assert_allclose(_np(xp.var(t, axis=axis, correction=corr, keepdims=keep)),
                                   np.var(a, axis=axis, ddof=corr, keepdims=keep), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(_np(xp.std(t, axis=axis, correction=corr)),
                                   np.std(a, axis=axis, ddof=corr), rtol=1e-9, atol=1e-12)


def test_reduction_tuple_axes_complex_var_and_empty():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_allclose(_np(xp.sum(xp.asarray(a), axis=(0, 2))), a.sum(axis=(0, 2)))
    c = a + 1j * a[::-1]
    v = xp.var(xp.asarray(c), axis=1)
    assert v.dtype is xp.float64
    np.testing.assert_allclose(_np(v), np.var(c, axis=1))
    assert np.isnan(_np(xp.mean(xp.zeros((0,)))))
    assert _np(xp.sum(xp.zeros((0,), dtype=xp.int8))) == 0
    assert xp.mean(xp.asarray([1, 2])).dtype is xp.float64
    with pytest.raises(ValueError, match="zero-size"):
        xp.max(xp.zeros((2, 0)), axis=1)
    with pytest.raises(TypeError, match="complex"):
        xp.min(xp.asarray([1j]))
    with pytest.raises(IndexError):
        xp.sum(xp.ones((2,)), axis=1)
    with pytest.raises(ValueError):
        xp.sum(xp.ones((2, 2)), axis=(0, 0))


@given(data=st.data())
def test_cumulative_match_numpy(data):
    t, a = data.draw(float_views(np.float64, max_dims=3))
    if a.ndim == 0:
        return
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    for f, nf, first in ((xp.cumulative_sum, np.cumsum, 0.0), (xp.cumulative_prod, np.cumprod, 1.0)):
        np.testing.assert_allclose(_np(f(t, axis=axis)), nf(a, axis=axis), rtol=1e-12)
        got = _np(f(t, axis=axis, include_initial=True))
        ax = axis % a.ndim
        assert got.shape[ax] == a.shape[ax] + 1
        if got.size == 0:
            continue
        np.testing.assert_array_equal(np.take(got, 0, axis=ax), np.full(got.shape[:ax] + got.shape[ax + 1:], first))
        np.testing.assert_allclose(np.take(got, range(1, got.shape[ax]), axis=ax), nf(a, axis=axis), rtol=1e-12)


def test_cumulative_errors_and_1d_default():
    assert _np(xp.cumulative_sum(xp.asarray([1, 2, 3]))).tolist() == [1, 3, 6]
    assert _np(xp.cumulative_prod(xp.asarray([2, 3]), include_initial=True)).tolist() == [1, 2, 6]
    with pytest.raises(ValueError, match="axis is required"):
        xp.cumulative_sum(xp.ones((2, 2)))
    with pytest.raises(ValueError, match="0-d"):
        xp.cumulative_prod(xp.asarray(1.0), axis=0)


# ---------------------------------------------------------------------------
# utility: all any diff
# ---------------------------------------------------------------------------
@given(reduce_case())
def test_all_any_match_numpy(case):
    t, a, axis, keep = case
    b = a > 0
    for name in ("all", "any"):
        np.testing.assert_array_equal(_np(getattr(xp, name)(xp.asarray(b), axis=axis, keepdims=keep)),
                                      getattr(np, name)(b, axis=axis, keepdims=keep))
        np.testing.assert_array_equal(_np(getattr(xp, name)(t, axis=axis)), getattr(np, name)(a, axis=axis))


@given(data=st.data())
def test_diff_matches_numpy(data):
    t, a = data.draw(float_views(np.float64, max_dims=3))
    if a.ndim == 0:
        return
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = data.draw(st.integers(0, 3))
    np.testing.assert_allclose(_np(xp.diff(t, axis=axis, n=n)), np.diff(a, axis=axis, n=n))
    pre = np.ones(a.shape[:axis % a.ndim] + (1,) + a.shape[axis % a.ndim + 1:])
    np.testing.assert_allclose(_np(xp.diff(t, axis=axis, prepend=xp.asarray(pre), append=xp.asarray(pre))),
                               np.diff(a, axis=axis, prepend=pre, append=pre))


def test_diff_bool_and_errors():
    assert _np(xp.diff(xp.asarray([True, True, False]))).tolist() == [False, True]
    with pytest.raises(ValueError, match="0-d"):
        xp.diff(xp.asarray(1))
    with pytest.raises(ValueError, match="n must be"):
        xp.diff(xp.asarray([1, 2]), n=-1)


# ---------------------------------------------------------------------------
# manipulation
# ---------------------------------------------------------------------------
@given(data=st.data())
def test_concat_stack_match_numpy(data):
    t, a = data.draw(float_views(np.float64, max_dims=3))
    if a.ndim == 0:
        return
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    b = (a * 2).astype(np.float32)
    got = xp.concat([t, xp.asarray(b), t], axis=axis)
    assert got.dtype is xp.float64
    np.testing.assert_array_equal(_np(got), np.concatenate([a, b, a], axis=axis))
    np.testing.assert_array_equal(_np(xp.concat([t, xp.asarray(b)], axis=None)),
                                  np.concatenate([a.ravel(), b.ravel()]))
    sax = data.draw(st.integers(-a.ndim - 1, a.ndim))
    np.testing.assert_array_equal(_np(xp.stack([t, t], axis=sax)), np.stack([a, a], axis=sax))


def test_concat_stack_errors():
    with pytest.raises(ValueError, match="at least one"):
        xp.concat([])
    with pytest.raises(ValueError, match="must match"):
        xp.concat([xp.ones((2, 3)), xp.ones((2, 4))], axis=0)
    with pytest.raises(ValueError, match="zero-dimensional"):
        xp.concat([xp.asarray(1), xp.asarray(2)])
    with pytest.raises(ValueError, match="shape"):
        xp.stack([xp.ones(2), xp.ones(3)])
    with pytest.raises(IndexError):
        xp.stack([xp.ones(2)], axis=3)


@given(data=st.data())
def test_views_match_numpy(data):
    t, a = data.draw(float_views(np.float64, max_dims=3))
    nd = a.ndim
    ax = data.draw(st.integers(-nd - 1, nd))
    np.testing.assert_array_equal(_np(xp.expand_dims(t, axis=ax)), np.expand_dims(a, ax))
    np.testing.assert_array_equal(_np(xp.flip(t)), np.flip(a))
    if nd:
        fa = data.draw(st.integers(-nd, nd - 1))
        np.testing.assert_array_equal(_np(xp.flip(t, axis=fa)), np.flip(a, fa))
        perm = data.draw(st.permutations(range(nd)))
        np.testing.assert_array_equal(_np(xp.permute_dims(t, tuple(perm))), np.transpose(a, perm))
        s, d = data.draw(st.integers(0, nd - 1)), data.draw(st.integers(-nd, nd - 1))
        np.testing.assert_array_equal(_np(xp.moveaxis(t, s, d)), np.moveaxis(a, s, d))
        for u, w in zip(xp.unstack(t, axis=fa), np.moveaxis(a, fa, 0)):
            np.testing.assert_array_equal(_np(u), w)
        shift = data.draw(st.integers(-7, 7))
        np.testing.assert_array_equal(_np(xp.roll(t, shift, axis=fa)), np.roll(a, shift, axis=fa))
    np.testing.assert_array_equal(_np(xp.roll(t, 3)), np.roll(a, 3))
    np.testing.assert_array_equal(_np(xp.reshape(t, (-1,))), a.reshape(-1))
    reps = tuple(data.draw(st.lists(st.integers(0, 3), max_size=4)))
    np.testing.assert_array_equal(_np(xp.tile(t, reps)), np.tile(a, reps))
    k = data.draw(st.integers(0, 3))
    np.testing.assert_array_equal(_np(xp.repeat(t, k)), np.repeat(a, k))
    if nd:
        r = np.array(data.draw(st.lists(st.integers(0, 3), min_size=a.shape[0], max_size=a.shape[0])),
                     dtype=np.int64)
        np.testing.assert_array_equal(_np(xp.repeat(t, xp.asarray(r), axis=0)), np.repeat(a, r, axis=0))


def test_views_share_memory():
    base = np.arange(12.0).reshape(3, 4)
    t = xp.asarray(base)
    for v in (xp.expand_dims(t, axis=0), xp.flip(t, axis=0), xp.permute_dims(t, (1, 0)), xp.moveaxis(t, 0, 1),
              xp.broadcast_to(t, (2, 3, 4)), xp.reshape(t, (4, 3)), xp.unstack(t)[1], t.mT,
              xp.squeeze(xp.reshape(t, (1, 3, 4)), axis=0)):
        assert np.shares_memory(rt.to_numpy(v), base)
    assert not np.shares_memory(rt.to_numpy(xp.reshape(t, (4, 3), copy=True)), base)


def test_reshape_copy_semantics_and_errors():
    t = xp.permute_dims(xp.reshape(xp.arange(6), (2, 3)), (1, 0))
    with pytest.raises(ValueError, match="copy=False"):
        xp.reshape(t, (6,), copy=False)
    assert _np(xp.reshape(t, (6,))).tolist() == [0, 3, 1, 4, 2, 5]
    with pytest.raises(ValueError, match="sizes"):
        xp.reshape(t, (4,))
    with pytest.raises(ValueError, match="more than one"):
        xp.reshape(t, (-1, -1))
    with pytest.raises(ValueError, match="cannot reshape"):
        xp.reshape(t, (-1, 4))


def test_broadcast_functions():
    a, b = xp.broadcast_arrays(xp.ones((3, 1)), xp.ones((4,), dtype=xp.int8))
    assert a.shape == b.shape == (3, 4) and b.dtype is xp.int8
    with pytest.raises(ValueError, match="cannot broadcast"):
        xp.broadcast_to(xp.ones((3,)), (4,))
    with pytest.raises(ValueError, match="cannot broadcast"):
        xp.broadcast_to(xp.ones((3, 1)), (3,))
    with pytest.raises(ValueError):
        xp.broadcast_arrays(xp.ones(2), xp.ones(3))


def test_manipulation_errors():
    with pytest.raises(ValueError, match="expected 1"):
        xp.squeeze(xp.ones((2, 1)), axis=0)
    with pytest.raises(IndexError):
        xp.expand_dims(xp.ones((2,)), axis=3)
    with pytest.raises(ValueError, match="permutation"):
        xp.permute_dims(xp.ones((2, 3)), (0,))
    with pytest.raises(ValueError, match="same length"):
        xp.roll(xp.ones((2, 3)), (1, 2), axis=(0, 1, 1))
    with pytest.raises(ValueError, match="non-negative"):
        xp.repeat(xp.ones(3), -1)
    with pytest.raises(ValueError, match="entries"):
        xp.repeat(xp.ones(3), xp.asarray([1, 2]))
    with pytest.raises(ValueError, match="non-negative"):
        xp.tile(xp.ones(3), (-1,))
    with pytest.raises(ValueError, match="0-d"):
        xp.unstack(xp.asarray(1))
    with pytest.raises(ValueError, match="differ in length"):
        xp.moveaxis(xp.ones((2, 3)), (0, 1), (0,))


# ---------------------------------------------------------------------------
# indexing functions
# ---------------------------------------------------------------------------
@given(data=st.data())
def test_take_and_take_along_axis_match_numpy(data):
    t, a = data.draw(float_views(np.float64, max_dims=3))
    if a.ndim == 0:
        return
    ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[ax]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), max_size=5) if n else st.just([])), dtype=np.int64)
    np.testing.assert_array_equal(_np(xp.take(t, xp.asarray(idx), axis=ax)), np.take(a, idx, axis=ax))
    order = np.argsort(a, axis=ax)
    np.testing.assert_array_equal(_np(xp.take_along_axis(t, xp.asarray(order), axis=ax)),
                                  np.take_along_axis(a, order, axis=ax))


def test_take_errors():
    x = xp.asarray([[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="axis is required"):
        xp.take(x, xp.asarray([0]))
    with pytest.raises(IndexError, match="out of bounds"):
        xp.take(x, xp.asarray([2]), axis=0)
    with pytest.raises(TypeError, match="integer"):
        xp.take(x, xp.asarray([0.0]), axis=0)
    with pytest.raises(ValueError, match="rank"):
        xp.take_along_axis(x, xp.asarray([0]), axis=0)
    assert _np(xp.take(xp.asarray([1, 2, 3]), xp.asarray([-1]))).tolist() == [3]


# ---------------------------------------------------------------------------
# searching, sorting, sets
# ---------------------------------------------------------------------------
@given(reduce_case())
def test_argmax_argmin_count_nonzero_match_numpy(case):
    t, a, axis, keep = case
    if a.size == 0:
        return
    for name in ("argmax", "argmin"):
        got = getattr(xp, name)(t, axis=axis, keepdims=keep)
        assert got.dtype is xp.int64
        np.testing.assert_array_equal(_np(got), getattr(np, name)(a, axis=axis, keepdims=keep))
    r = np.round(a)
    got = xp.count_nonzero(xp.asarray(r), axis=axis, keepdims=keep)
    assert got.dtype is xp.int64
    np.testing.assert_array_equal(_np(got), np.count_nonzero(r, axis=axis, keepdims=keep))


def test_searching_errors_and_nonzero():
    with pytest.raises(ValueError, match="empty"):
        xp.argmax(xp.zeros((0,)))
    with pytest.raises(TypeError, match="complex"):
        xp.argmin(xp.asarray([1j]))
    r, c = xp.nonzero(xp.asarray([[0, 1], [2, 0]]))
    assert _np(r).tolist() == [0, 1] and _np(c).tolist() == [1, 0] and r.dtype is xp.int64
    with pytest.raises(ValueError, match="0-d"):
        xp.nonzero(xp.asarray(1))


@given(data=st.data())
def test_searchsorted_matches_numpy(data):
    x1 = np.sort(np.array(data.draw(st.lists(st.integers(-5, 5).map(float), max_size=8))))
    if data.draw(st.booleans()) and x1.size:
        x1[-1] = np.nan
    _, x2 = data.draw(float_views(np.float64, max_dims=2, elements=st.integers(-6, 6).map(float)))
    for side in ("left", "right"):
        got = xp.searchsorted(xp.asarray(x1), xp.asarray(x2), side=side)
        assert got.dtype is xp.int64 and got.shape == x2.shape
        np.testing.assert_array_equal(_np(got), np.searchsorted(x1, x2, side=side))
    perm = np.random.default_rng(0).permutation(x1.size)
    shuffled = x1[perm]
    sorter = np.argsort(shuffled, kind="stable")
    np.testing.assert_array_equal(_np(xp.searchsorted(xp.asarray(shuffled), xp.asarray(x2),
                                                      sorter=xp.asarray(sorter))), np.searchsorted(x1, x2))


def test_searchsorted_scalars_and_errors():
    x = xp.asarray([1, 3, 5], dtype=xp.int8)
    assert int(xp.searchsorted(x, 4)) == 2
    assert int(xp.searchsorted(x, 3, side="right")) == 2
    with pytest.raises(ValueError, match="side"):
        xp.searchsorted(x, 1, side="middle")
    with pytest.raises(ValueError, match="1-d"):
        xp.searchsorted(xp.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="sorter"):
        xp.searchsorted(x, 1, sorter=xp.asarray([0, 1]))


@given(data=st.data())
def test_sort_argsort_match_numpy(data):
    t, a = data.draw(float_views(np.float64, max_dims=3, elements=st.integers(-3, 3).map(float)))
    if a.ndim == 0:
        return
    ax = data.draw(st.integers(-a.ndim, a.ndim - 1))
    np.testing.assert_array_equal(_np(xp.sort(t, axis=ax)), np.sort(a, axis=ax))
    np.testing.assert_array_equal(_np(xp.argsort(t, axis=ax)), np.argsort(a, axis=ax, kind="stable"))
    # descending and stable: ties keep their original order
    got = _np(xp.argsort(t, axis=ax, descending=True))
    want = np.argsort(-a, axis=ax, kind="stable")
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_np(xp.sort(t, axis=ax, descending=True)), -np.sort(-a, axis=ax))


def test_sort_nan_and_errors():
    x = xp.asarray([2.0, xp.nan, 1.0])
    assert np.isnan(_np(xp.sort(x))[-1]) and np.isnan(_np(xp.sort(x, descending=True))[0])
    with pytest.raises(TypeError, match="complex"):
        xp.sort(xp.asarray([1j]))
    with pytest.raises(ValueError, match="0-d"):
        xp.argsort(xp.asarray(1.0))


@given(data=st.data())
def test_unique_functions_match_numpy(data):
    t, a = data.draw(float_views(np.float64, max_dims=3, elements=st.integers(-3, 3).map(float)))
    vals, idx, inv, cnt = np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    r = xp.unique_all(t)
    np.testing.assert_array_equal(_np(r.values), vals)
    np.testing.assert_array_equal(_np(r.indices), idx)
    np.testing.assert_array_equal(_np(r.inverse_indices), inv.reshape(a.shape))
    np.testing.assert_array_equal(_np(r.counts), cnt)
    assert r.inverse_indices.shape == a.shape
    np.testing.assert_array_equal(_np(xp.unique_values(t)), vals)
    v, c = xp.unique_counts(t)
    np.testing.assert_array_equal(_np(c), cnt)
    v, i = xp.unique_inverse(t)
    np.testing.assert_array_equal(_np(i), inv.reshape(a.shape))


def test_unique_nans_are_distinct():
    r = xp.unique_all(xp.asarray([xp.nan, 1.0, xp.nan, 1.0, -0.0, 0.0]))
    v = _np(r.values)
    assert v.shape == (4,) and np.isnan(v[2:]).all()
    assert _np(r.counts).tolist() == [2, 2, 1, 1]  # -0.0 and 0.0 are one value
    assert xp.unique_values(xp.zeros((0,))).shape == (0,)


# ---------------------------------------------------------------------------
# linear algebra (main namespace and the extension)
# ---------------------------------------------------------------------------
def _rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_main_namespace_linear_algebra():
    a, b = _rand(2, 3, 4), _rand(4, 5, seed=1)
    np.testing.assert_allclose(_np(xp.matmul(xp.asarray(a), xp.asarray(b))), a @ b)
    np.testing.assert_allclose(_np(xp.tensordot(xp.asarray(a), xp.asarray(b), axes=1)), np.tensordot(a, b, 1))
    np.testing.assert_allclose(_np(xp.tensordot(xp.asarray(a), xp.asarray(_rand(3, 4)))),
                               np.tensordot(a, _rand(3, 4), 2))
    np.testing.assert_allclose(_np(xp.tensordot(xp.asarray(a), xp.asarray(b), axes=([2], [0]))),
                               np.tensordot(a, b, ([2], [0])))
    c = _rand(3, 4, seed=3) + 1j * _rand(3, 4, seed=4)
    np.testing.assert_allclose(_np(xp.vecdot(xp.asarray(c), xp.asarray(a))), np.vecdot(c, a))
    np.testing.assert_allclose(_np(xp.vecdot(xp.asarray(a), xp.asarray(a[0]), axis=-2)), np.vecdot(a, a[0], axis=-2))
    assert xp.matrix_transpose(xp.asarray(a)).shape == (2, 4, 3)
    with pytest.raises(ValueError):
        xp.matmul(xp.asarray(1.0), xp.asarray(a))
    with pytest.raises(ValueError):
        xp.matmul(xp.asarray(a), xp.asarray(a))
    with pytest.raises(ValueError, match="rank >= 2"):
        xp.matrix_transpose(xp.ones(3))
    with pytest.raises(ValueError):
        xp.tensordot(xp.asarray(a), xp.asarray(b), axes=-1)


def test_linalg_extension_matches_numpy():
    la = xp.linalg
    a = _rand(2, 4, 4)
    spd = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    A, S = xp.asarray(a), xp.asarray(spd)
    np.testing.assert_allclose(_np(la.cholesky(S)), np.linalg.cholesky(spd), rtol=1e-10)
    np.testing.assert_allclose(_np(la.cholesky(S, upper=True)), np.swapaxes(np.linalg.cholesky(spd), -1, -2),
                               rtol=1e-10)
    np.testing.assert_allclose(_np(la.det(A)), np.linalg.det(a), rtol=1e-10)
    w, v = la.eigh(S)
    np.testing.assert_allclose(_np(w), np.linalg.eigvalsh(spd), rtol=1e-10)
    np.testing.assert_allclose(_np(la.eigvalsh(S)), np.linalg.eigvalsh(spd), rtol=1e-10)
    np.testing.assert_allclose(_np(la.inv(A)), np.linalg.inv(a), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(_np(la.pinv(A)), np.linalg.pinv(a), rtol=1e-8, atol=1e-10)
    q, r = la.qr(A)
    np.testing.assert_allclose(_np(q) @ _np(r), a, atol=1e-10)
    s = la.slogdet(A)
    ws, wl = np.linalg.slogdet(a)
    np.testing.assert_allclose(_np(s.sign), ws)
    np.testing.assert_allclose(_np(s.logabsdet), wl)
    rhs = _rand(2, 4, 3, seed=5)
    np.testing.assert_allclose(_np(la.solve(A, xp.asarray(rhs))), np.linalg.solve(a, rhs), rtol=1e-8)
    u, sv, vh = la.svd(xp.asarray(_rand(3, 5)))
    assert u.shape == (3, 3) and vh.shape == (5, 5)  # full_matrices=True by default
    np.testing.assert_allclose(_np(la.svdvals(A)), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(_np(la.trace(A, offset=1)), np.trace(a, offset=1, axis1=-2, axis2=-1))
    np.testing.assert_array_equal(_np(la.diagonal(A, offset=-1)), np.diagonal(a, -1, -2, -1))
    np.testing.assert_allclose(_np(la.matrix_power(A, 3)), np.linalg.matrix_power(a, 3), rtol=1e-10)
    np.testing.assert_allclose(_np(la.matrix_power(A, -2)), np.linalg.matrix_power(a, -2), rtol=1e-6)
    np.testing.assert_allclose(_np(la.cross(xp.asarray(a[..., :3]), xp.asarray(a[0, 0, :3]))),
                               np.cross(a[..., :3], a[0, 0, :3]))
    np.testing.assert_allclose(_np(la.outer(xp.asarray(a[0, 0]), xp.asarray(a[0, 1]))), np.outer(a[0, 0], a[0, 1]))


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf])
def test_matrix_norm_matches_numpy(ord):
    a = _rand(3, 4, 5)
    np.testing.assert_allclose(_np(xp.linalg.matrix_norm(xp.asarray(a), ord=ord)), np.linalg.matrix_norm(a, ord=ord),
                               rtol=1e-10)
    assert xp.linalg.matrix_norm(xp.asarray(a), ord=ord, keepdims=True).shape == (3, 1, 1)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, 0, math.inf, -math.inf])
@pytest.mark.parametrize("axis", [None, 1, (0, 2), -1])
def test_vector_norm_matches_numpy(ord, axis):
    a = _rand(3, 4, 5)
    got = xp.linalg.vector_norm(xp.asarray(a), axis=axis, ord=ord, keepdims=True)
    np.testing.assert_allclose(_np(got), np.linalg.vector_norm(a, axis=axis, ord=ord, keepdims=True), rtol=1e-10)
    got = xp.linalg.vector_norm(xp.asarray(a.astype(np.float32)), axis=axis, ord=ord)
    assert got.dtype is xp.float32


def test_linalg_dtype_rules_and_errors():
    t = xp.linalg.trace(xp.asarray([[1, 2], [3, 4]], dtype=xp.int8))
    assert t.dtype is xp.int64 and int(t) == 5
    rk = xp.linalg.matrix_rank(xp.asarray([[1.0, 2.0], [2.0, 4.0]]))
    assert rk.ndim == 0 and rk.dtype is xp.int64 and int(rk) == 1
    stack = xp.asarray(np.stack([np.eye(3), np.diag([1.0, 1e-9, 0])]))
    assert _np(xp.linalg.matrix_rank(stack)).tolist() == [3, 2]
    assert _np(xp.linalg.matrix_rank(stack, rtol=xp.asarray([0.5, 1e-6]))).tolist() == [3, 1]
    assert _np(xp.linalg.matrix_rank(stack, rtol=1e-6)).tolist() == [3, 1]
    p = xp.linalg.pinv(stack, rtol=xp.asarray([0.0, 1e-6]))
    np.testing.assert_allclose(_np(p), [np.eye(3), np.diag([1.0, 0, 0])], atol=1e-12)
    np.testing.assert_allclose(_np(xp.linalg.pinv(stack, rtol=xp.asarray(1e-12)))[1], np.diag([1.0, 1e9, 0]))
    with pytest.raises(rt.LinAlgError):
        xp.linalg.inv(xp.zeros((2, 2)))
    with pytest.raises(rt.LinAlgError):
        xp.linalg.cholesky(xp.asarray([[-1.0, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="square"):
        xp.linalg.det(xp.ones((2, 3)))
    with pytest.raises(ValueError, match="rank >= 2"):
        xp.linalg.inv(xp.ones(3))
    with pytest.raises(ValueError, match="size 3"):
        xp.linalg.cross(xp.ones(2), xp.ones(2))
    with pytest.raises(ValueError, match="1-d"):
        xp.linalg.outer(xp.ones((2, 2)), xp.ones(2))
    with pytest.raises(ValueError, match="ord"):
        xp.linalg.matrix_norm(xp.ones((2, 2)), ord=3)
    with pytest.raises(TypeError, match="ord"):
        xp.linalg.vector_norm(xp.ones(2), ord="fro")


# ---------------------------------------------------------------------------
# FFT extension
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fft_functions_match_numpy(norm):
    a = _rand(3, 8)
    c = a + 1j * _rand(3, 8, seed=1)
    f = xp.fft
    for name, x in (("fft", c), ("ifft", c), ("rfft", a), ("irfft", c), ("hfft", c), ("ihfft", a)):
        np.testing.assert_allclose(_np(getattr(f, name)(xp.asarray(x), norm=norm)),
                                   getattr(np.fft, name)(x, norm=norm), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(getattr(f, name)(xp.asarray(x), n=5, axis=0, norm=norm)),
                                   getattr(np.fft, name)(x, n=5, axis=0, norm=norm), rtol=1e-10, atol=1e-12)
    for name, x in (("fftn", c), ("ifftn", c), ("rfftn", a), ("irfftn", c)):
        np.testing.assert_allclose(_np(getattr(f, name)(xp.asarray(x), norm=norm)),
                                   getattr(np.fft, name)(x, norm=norm), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(getattr(f, name)(xp.asarray(x), s=(4, 6), axes=(1, 0), norm=norm)),
                                   getattr(np.fft, name)(x, s=(4, 6), axes=(1, 0), norm=norm), rtol=1e-10,
                                   atol=1e-12)


def test_fft_dtypes_helpers_and_errors():
    x32 = xp.asarray(_rand(8, dtype=np.float32))
    assert xp.fft.fft(x32).dtype is xp.complex64
    assert xp.fft.rfft(x32).dtype is xp.complex64
    assert xp.fft.irfft(xp.fft.rfft(x32)).dtype is xp.float32
    assert xp.fft.fft(xp.asarray([1, 2, 3])).dtype is xp.complex128
    np.testing.assert_allclose(_np(xp.fft.fftfreq(7, d=0.3)), np.fft.fftfreq(7, d=0.3))
    np.testing.assert_allclose(_np(xp.fft.rfftfreq(7, d=0.3)), np.fft.rfftfreq(7, d=0.3))
    assert xp.fft.fftfreq(4, dtype=xp.float32).dtype is xp.float32
    a = _rand(5, 6)
    np.testing.assert_array_equal(_np(xp.fft.fftshift(xp.asarray(a))), np.fft.fftshift(a))
    np.testing.assert_array_equal(_np(xp.fft.ifftshift(xp.asarray(a), axes=1)), np.fft.ifftshift(a, axes=1))
    np.testing.assert_allclose(_np(xp.fft.fftn(xp.asarray(a), s=(-1, 4))), np.fft.fftn(a, s=(5, 4), axes=(0, 1)))
    with pytest.raises(ValueError, match="norm"):
        xp.fft.fft(x32, norm="sideways")
    with pytest.raises(ValueError, match="n must be"):
        xp.fft.fft(x32, n=0)
    with pytest.raises(TypeError, match="real"):
        xp.fft.rfft(xp.asarray([1j]))
    with pytest.raises(ValueError, match="same length"):
        xp.fft.fftn(xp.asarray(a), s=(2,), axes=(0, 1))
    with pytest.raises(ValueError, match="0-d"):
        xp.fft.fft(xp.asarray(1.0))
    with pytest.raises(TypeError, match="floating"):
        xp.fft.fftfreq(4, dtype=xp.int32)


# ---------------------------------------------------------------------------
# signatures: positional-only and keyword-only parameters as the standard writes them
# ---------------------------------------------------------------------------
SIGNATURES = {
    "astype": "(x, dtype, /, *, copy=True, device=None)", "can_cast": "(from_, to, /)", "finfo": "(type, /)",
    "iinfo": "(type, /)", "isdtype": "(dtype, kind)", "result_type": "(*arrays_and_dtypes)",
    "arange": "(start, /, stop=None, step=1, *, dtype=None, device=None)",
    "asarray": "(obj, /, *, dtype=None, device=None, copy=None)", "empty": "(shape, *, dtype=None, device=None)",
    "empty_like": "(x, /, *, dtype=None, device=None)",
    "eye": "(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None)",
    "from_dlpack": "(x, /, *, device=None, copy=None)", "full": "(shape, fill_value, *, dtype=None, device=None)",
    "full_like": "(x, /, fill_value, *, dtype=None, device=None)",
    "linspace": "(start, stop, /, num, *, dtype=None, device=None, endpoint=True)",
    "meshgrid": "(*arrays, indexing='xy')", "ones": "(shape, *, dtype=None, device=None)",
    "ones_like": "(x, /, *, dtype=None, device=None)", "tril": "(x, /, *, k=0)", "triu": "(x, /, *, k=0)",
    "zeros": "(shape, *, dtype=None, device=None)", "zeros_like": "(x, /, *, dtype=None, device=None)",
    "clip": "(x, /, min=None, max=None)", "take": "(x, indices, /, *, axis=None)",
    "take_along_axis": "(x, indices, /, *, axis=-1)", "matmul": "(x1, x2, /)", "matrix_transpose": "(x, /)",
    "tensordot": "(x1, x2, /, *, axes=2)", "vecdot": "(x1, x2, /, *, axis=-1)",
    "broadcast_arrays": "(*arrays)", "broadcast_to": "(x, /, shape)", "concat": "(arrays, /, *, axis=0)",
    "expand_dims": "(x, /, axis=0)", "flip": "(x, /, *, axis=None)",
    "moveaxis": "(x, source, destination, /)", "permute_dims": "(x, /, axes)",
    "repeat": "(x, repeats, /, *, axis=None)", "reshape": "(x, /, shape, *, copy=None)",
    "roll": "(x, /, shift, *, axis=None)", "squeeze": "(x, /, axis)", "stack": "(arrays, /, *, axis=0)",
    "tile": "(x, repetitions, /)", "unstack": "(x, /, *, axis=0)",
    "argmax": "(x, /, *, axis=None, keepdims=False)", "argmin": "(x, /, *, axis=None, keepdims=False)",
    "count_nonzero": "(x, /, *, axis=None, keepdims=False)", "nonzero": "(x, /)",
    "searchsorted": "(x1, x2, /, *, side='left', sorter=None)", "where": "(condition, x1, x2, /)",
    "unique_all": "(x, /)", "unique_counts": "(x, /)", "unique_inverse": "(x, /)", "unique_values": "(x, /)",
    "argsort": "(x, /, *, axis=-1, descending=False, stable=True)",
    "sort": "(x, /, *, axis=-1, descending=False, stable=True)",
    "cumulative_prod": "(x, /, *, axis=None, dtype=None, include_initial=False)",
    "cumulative_sum": "(x, /, *, axis=None, dtype=None, include_initial=False)",
    "max": "(x, /, *, axis=None, keepdims=False)", "mean": "(x, /, *, axis=None, keepdims=False)",
    "min": "(x, /, *, axis=None, keepdims=False)", "prod": "(x, /, *, axis=None, dtype=None, keepdims=False)",
    "std": "(x, /, *, axis=None, correction=0.0, keepdims=False)",
    "sum": "(x, /, *, axis=None, dtype=None, keepdims=False)",
    "var": "(x, /, *, axis=None, correction=0.0, keepdims=False)",
    "all": "(x, /, *, axis=None, keepdims=False)", "any": "(x, /, *, axis=None, keepdims=False)",
    "diff": "(x, /, *, axis=-1, n=1, prepend=None, append=None)",
}
LINALG_SIGNATURES = {
    "cholesky": "(x, /, *, upper=False)", "cross": "(x1, x2, /, *, axis=-1)", "det": "(x, /)",
    "diagonal": "(x, /, *, offset=0)", "eigh": "(x, /)", "eigvalsh": "(x, /)", "inv": "(x, /)",
    "matrix_norm": "(x, /, *, keepdims=False, ord='fro')", "matrix_power": "(x, n, /)",
    "matrix_rank": "(x, /, *, rtol=None)", "outer": "(x1, x2, /)", "pinv": "(x, /, *, rtol=None)",
    "qr": "(x, /, *, mode='reduced')", "slogdet": "(x, /)", "solve": "(x1, x2, /)",
    "svd": "(x, /, *, full_matrices=True)", "svdvals": "(x, /)", "trace": "(x, /, *, offset=0, dtype=None)",
    "vector_norm": "(x, /, *, axis=None, keepdims=False, ord=2)",
}
FFT_SIGNATURES = {
    **{n: "(x, /, *, n=None, axis=-1, norm='backward')" for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")},
    **{n: "(x, /, *, s=None, axes=None, norm='backward')" for n in ("fftn", "ifftn", "rfftn", "irfftn")},
    "fftfreq": "(n, /, *, d=1.0, dtype=None, device=None)", "rfftfreq": "(n, /, *, d=1.0, dtype=None, device=None)",
    "fftshift": "(x, /, *, axes=None)", "ifftshift": "(x, /, *, axes=None)",
}


def _plain_signature(fn):
    import inspect
    sig = inspect.signature(fn)
    return str(sig.replace(parameters=[p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()],
                           return_annotation=inspect.Signature.empty))


@pytest.mark.parametrize("ns,table", [(xp, SIGNATURES), (xp.linalg, LINALG_SIGNATURES), (xp.fft, FFT_SIGNATURES)])
def test_signatures_match_the_standard(ns, table):
    bad = {n: _plain_signature(getattr(ns, n)) for n, want in table.items() if _plain_signature(getattr(ns, n)) != want}
    assert not bad


@pytest.mark.parametrize("name", [n for n in STANDARD_NAMES if callable(getattr(xp, n)) and n not in SIGNATURES
                                  and not n.startswith("__") and not isinstance(getattr(xp, n), rt.DType)])
def test_elementwise_signatures(name):
    import inspect
    params = list(inspect.signature(getattr(xp, name)).parameters.values())
    assert all(p.kind is inspect.Parameter.POSITIONAL_ONLY for p in params)
    assert [p.name for p in params] in (["x"], ["x1", "x2"])


def _kind_family(d):
    return "b" if d.kind == "b" else "int" if d.is_int else "float"


def _in_standard_table(d1, d2):
    """Whether the standard defines the promotion of d1 with d2 (same kind family; no uint64 with a
    signed integer)."""
    if _kind_family(d1) != _kind_family(d2):
        return False
    return not (d1.is_int and d2.is_int and "uint64" in (d1.name, d2.name) and d1.kind != d2.kind)


STD_PAIRS = [(d1, d2) for d1 in STD for d2 in STD if _in_standard_table(d1, d2)]
NONSTD_PAIRS = [(d1, d2) for d1 in STD for d2 in STD if not _in_standard_table(d1, d2)]


@pytest.mark.parametrize("d1,d2", STD_PAIRS, ids=lambda d: d.name)
def test_promotion_table_matches_the_standard(d1, d2):
    """Within the standard's table (same-kind pairs) results match NumPy 2, which implements it."""
    want = np.result_type(np.dtype(d1.name), np.dtype(d2.name)).name
    assert xp.result_type(d1, d2).name == want
    a = xp.ones((2,), dtype=d1)
    b = xp.ones((1,), dtype=d2)
    assert xp.multiply(a, b).dtype.name == want
    assert xp.equal(a, b).dtype is xp.bool
    assert xp.concat([a, b]).dtype.name == want


@pytest.mark.parametrize("d1,d2", NONSTD_PAIRS, ids=lambda d: d.name)
def test_promotion_outside_the_standard_follows_rune(d1, d2):
    """Pairs the standard leaves undefined (mixed kinds, uint64 with a signed integer) follow
    runetensor's own table (docs/dtypes.md) in the namespace too."""
    want = rt.promote_types(d1, d2)
    assert xp.result_type(d1, d2) is want
    assert xp.multiply(xp.ones((2,), dtype=d1), xp.ones((1,), dtype=d2)).dtype is want


def test_more_documented_errors():
    with pytest.raises(ValueError):
        xp.asarray([[1, 2], [3]])  # ragged
    with pytest.raises(TypeError):
        xp.asarray("text")
    with pytest.raises(TypeError, match="DLPack|dlpack"):
        xp.from_dlpack([1, 2])
    with pytest.raises(IndexError):
        xp.concat([xp.ones((2,)), xp.ones((2,))], axis=1)
    with pytest.raises(IndexError):
        xp.squeeze(xp.ones((1,)), axis=1)
    with pytest.raises(TypeError, match="complex"):
        xp.searchsorted(xp.asarray([1j]), xp.asarray([1j]))
    with pytest.raises(IndexError, match="out of bounds"):
        xp.take_along_axis(xp.asarray([[1, 2]]), xp.asarray([[2]]), axis=1)
    with pytest.raises(ValueError):
        xp.vecdot(xp.ones((3,)), xp.ones((4,)))
    with pytest.raises(rt.LinAlgError):
        xp.linalg.solve(xp.zeros((2, 2)), xp.ones(2))
    with pytest.raises(ValueError, match="n must be"):
        xp.fft.fftfreq(0)
    with pytest.raises(ValueError):
        xp.fft.rfftfreq(4, d=0.0)
    with pytest.raises(TypeError, match="repeats"):
        xp.repeat(xp.ones(2), xp.asarray([1.0, 2.0]))


def test_solve_with_a_vector_right_hand_side_broadcasts_over_the_batch():
    a = _rand(2, 3, 3)
    b = np.arange(3.0)
    r = xp.linalg.solve(xp.asarray(a), xp.asarray(b))
    assert r.shape == (2, 3)
    np.testing.assert_allclose(_np(r), np.linalg.solve(a, b))


def test_zero_d_results_compose():
    """0-d results of every kind of operation stay usable arrays (operators, in-place, scalars)."""
    v = xp.asarray([1.0, 2.0])
    for r in (xp.matmul(v, v), xp.asarray(2.0) + 1.0, -xp.asarray(2.0), xp.sum(v), xp.clip(xp.asarray(3.0), 0, 1),
              xp.linalg.vecdot(v, v), xp.max(v), xp.where(xp.asarray(True), 1.0, 2.0), xp.take(v, xp.asarray(1))):
        s = (r * 2.0 + 1.0) - 0.5
        assert s.shape == () and isinstance(float(s), float)
        r += 1.0
        assert r.shape == ()


def test_table_functions_bound_under_their_names():
    """Every function of the ``_UNARY`` and ``_BINARY`` tables is bound (statically) under its own name."""
    from runetensor.array_api import _elementwise as XE
    for n in list(XE._UNARY) + list(XE._BINARY):
        assert n in XE.__all__ and getattr(XE, n).__name__ == n and getattr(xp, n) is getattr(XE, n)
