"""Core: dtypes, promotion, the Tensor wrapper, printing, operators."""
import numpy as np
import pytest

import runetensor as rt


def test_nineteen_dtypes():
    names = ["float16", "float32", "float64", "bfloat16", "float8_e4m3", "float8_e5m2", "int4", "uint4",
             "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool",
             "complex64", "complex128"]
    for n in names:
        d = getattr(rt, n)
        assert isinstance(d, rt.DType) and d.name == n
    assert len(rt._dtypes.all_dtypes) == 19
    assert rt.int4.itemsize == 1 and rt.int4.bits == 4 and rt.complex64.itemsize == 8


@pytest.mark.parametrize("a,b,r", [
    ("int8", "uint8", "int16"), ("uint32", "int8", "int64"), ("uint64", "int64", "float64"),
    ("int4", "uint4", "int8"), ("uint4", "uint8", "uint8"), ("bool", "int4", "int4"),
    ("float16", "bfloat16", "float32"), ("float8_e4m3", "float8_e5m2", "float16"),
    ("float8_e4m3", "bfloat16", "bfloat16"), ("int64", "float16", "float16"),
    ("float32", "complex64", "complex64"), ("float64", "complex64", "complex128"),
    ("float32", "float64", "float64"),
])
def test_promotion_table(a, b, r):
    da, db = getattr(rt, a), getattr(rt, b)
    assert rt.promote_types(da, db) is getattr(rt, r)
    assert rt.promote_types(db, da) is getattr(rt, r)


def test_promotion_is_symmetric_everywhere():
    ds = rt._dtypes.all_dtypes
    for a in ds:
        for b in ds:
            assert rt.promote_types(a, b) is rt.promote_types(b, a)
            assert rt.promote_types(a, a) is a


def test_weak_scalars():
    t = rt.ones(rt.int8, [2])
    assert (t + 1).dtype is rt.int8
    assert (t + 1.5).dtype is rt.float64
    assert (rt.ones(rt.float16, [2]) + 1.5).dtype is rt.float16
    assert (rt.ones(rt.float32, [2]) * 1j).dtype is rt.complex64
    with pytest.raises(ValueError, match="out of range for int8"):
        t + 300


def test_operators_follow_python():
    a = rt.create(rt.int32, [4], [-7, 7, -8, 8])
    assert rt.to_array(a / 2) == [-3.5, 3.5, -4.0, 4.0]
    assert rt.to_array(a // 2) == [-4, 3, -4, 4]
    assert rt.to_array(a % 3) == [2, 1, 1, 2]
    assert rt.to_array(3 - a) == [10, -4, 11, -5]
    assert rt.to_array(2 ** rt.create(rt.int32, [3], [0, 1, 2])) == [1, 2, 4]


def test_integer_division_by_zero_is_zero():
    a = rt.create(rt.int32, [2], [5, -5])
    z = rt.zeros(rt.int32, [2])
    assert rt.to_array(a // z) == [0, 0]
    assert rt.to_array(a % z) == [0, 0]


def test_inplace_operator_writes_through():
    a = rt.zeros(rt.float32, [3])
    b = a
    a += 2
    assert b is a and rt.to_array(b) == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match="cannot be stored in-place"):
        i = rt.zeros(rt.int32, [2])
        i += 1.5


def test_broadcast_error_names_shapes():
    with pytest.raises(ValueError, match=r"\(2,\) and \(3,\)"):
        rt.ones(rt.float32, [2]) + rt.ones(rt.float32, [3])


def test_bool_ops():
    t = rt.create(rt.bool, [2], [True, False])
    assert rt.to_array(~t) == [False, True]
    with pytest.raises(TypeError):
        -t
    with pytest.raises(TypeError, match="float32"):
        rt.ones(rt.float32, [2]) & rt.ones(rt.float32, [2])


def test_low_precision_round_back():
    t = rt.create(rt.bfloat16, [2], [1.0, 2.0]) + rt.create(rt.bfloat16, [2], [0.00390625, 1.0])
    assert t.dtype is rt.bfloat16 and rt.to_array(t) == [1.0, 3.0]
    i = rt.create(rt.int4, [3], [7, -8, 3]) + rt.create(rt.int4, [3], [1, -1, 1])
    assert rt.to_array(i) == [-8, 7, 4]  # wraps like a 4-bit integer
    u = rt.create(rt.uint4, [2], [15, 0]) + rt.create(rt.uint4, [2], [1, 0])
    assert rt.to_array(u) == [0, 0]


@pytest.mark.parametrize("t,s", [
    (lambda: rt.create(rt.float32, [2, 3], [1, 2, 3, 4, 5, 6]), "[[1, 2, 3],\n [4, 5, 6]]"),
    (lambda: rt.create(rt.float32, [5], [0, 0.2, 0.4, 0.6, 0.8]), "[0, 0.2, 0.4, 0.6, 0.8]"),
    (lambda: rt.create(rt.bool, [2], [False, True]), "[false, true]"),
    (lambda: rt.scalar(rt.int32, 7), "7"),
    (lambda: rt.scalar(rt.float32, float("nan")), "nan"),
    (lambda: rt.create(rt.float64, [3], [float("inf"), float("-inf"), -0.0]), "[inf, -inf, -0]"),
    (lambda: rt.create(rt.float64, [2], [1e-5, 123456789.0]), "[1e-05, 1.23457e+08]"),
    (lambda: rt.create(rt.complex128, [2], [1 + 2j, -1.5 - 0.5j]), "[1+2i, -1.5-0.5i]"),
    (lambda: rt.zeros(rt.float32, [0]), "[]"),
    (lambda: rt.zeros(rt.int32, [2, 0]), "[[],\n []]"),
    (lambda: rt.create(rt.int32, [2, 2, 2], list(range(8))), "[[[0, 1],\n  [2, 3]],\n [[4, 5],\n  [6, 7]]]"),
    (lambda: rt.create(rt.bfloat16, [2], [1.5, -2.25]), "[1.5, -2.25]"),
    (lambda: rt.create(rt.float8_e4m3, [2], [0.5, 448]), "[0.5, 448]"),
])
def test_printing(t, s):
    assert str(t()) == s


def test_summarised_printing_is_brief():
    t = rt.zeros(rt.float32, [1000, 1000])
    s = str(t)
    assert s.count("\n") == 6 and "..." in s and len(s) < 400
    assert str(rt.arange(rt.int32, 0, 2000, 1)) == "[0, 1, 2, ..., 1997, 1998, 1999]"


def test_repr_has_dtype():
    assert repr(rt.create(rt.int32, [2, 2], [1, 2, 3, 4])) == "tensor([[1, 2],\n        [3, 4]], dtype=int32)"


def test_scalar_conversions():
    assert float(rt.scalar(rt.float32, 2.5)) == 2.5
    assert int(rt.scalar(rt.int64, 3)) == 3
    with pytest.raises(ValueError, match="ambiguous"):
        bool(rt.ones(rt.bool, [2]))
    with pytest.raises(TypeError):
        len(rt.scalar(rt.int32, 1))


def test_properties():
    t = rt.create(rt.float32, [2, 3], [1, 2, 3, 4, 5, 6])
    assert rt.shape(t) == (2, 3) and rt.dims(t) == (2, 3)
    assert rt.strides(t) == (12, 4) and rt.stride(t, 1) == 4
    assert rt.dim(t, 0) == 2 and rt.ndim(t) == 2 and rt.size(t) == 6 and rt.numel(t) == 6
    assert rt.itemsize(t) == 4 and rt.nbytes(t) == 24 and rt.offset(t) == 0
    assert rt.is_c_contiguous(t)
    with pytest.raises(IndexError, match="stride: dimension 2 is out of bounds"):
        rt.stride(t, 2)
    with pytest.raises(IndexError, match="dim: dimension -3"):
        rt.dim(t, -3)


def test_seed_to_array():
    t = rt.create(rt.int32, [2, 2], [1, 2, 3, 4])
    assert str(t) == "[[1, 2],\n [3, 4]]"
    assert rt.to_array(t) == [1, 2, 3, 4]


def test_from_numpy_shares_memory():
    a = np.zeros(4, np.float32)
    t = rt.from_numpy(a)
    a[1] = 5
    assert rt.to_array(t) == [0, 5, 0, 0]
    assert rt.to_numpy(t) is a or np.shares_memory(rt.to_numpy(t), a)


def test_integer_division_by_zero_is_silent_even_when_warnings_are_errors():
    import warnings
    a = rt.create(rt.int32, [3], [5, -5, 0])
    z = rt.zeros(rt.int32, [3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for r in (a // z, a % z, rt.div(a, z), rt.mod_(a, z)):
            assert rt.to_array(r) == [0, 0, 0]


def test_object_tensors_divide_with_python_semantics():
    o = rt.create(rt.object, [2], [3, 4.0])
    assert rt.to_array(o / 2) == [1.5, 2.0]
    assert rt.to_array(o + 1) == [4, 5.0]
