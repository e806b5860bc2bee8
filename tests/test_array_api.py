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
    assert info.default_device() == "cpu" and info.devices() == ["cpu"]
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
    assert y is not x and not rt.to_numpy(y).base is rt.to_numpy(x)
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
    with pytest.raises(OverflowError):
        xp.asarray(300, dtype=xp.int8)
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
    with pytest.raises(OverflowError, match="out of range"):
        xp.full((2,), 1000, dtype=xp.int8)
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
    shape = draw(st.lists(st.integers(1, 4), min_size=0, max_size=max_dims).map(tuple))
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
