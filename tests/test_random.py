"""Random: rand randn randint dropout (counter-based, Philox4x32-10)."""
import math
import pathlib

import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt
from runetensor._backend.numpy_backend import philox4x32

FLOATS = [rt.float16, rt.float32, rt.float64, rt.bfloat16, rt.float8_e4m3, rt.float8_e5m2]
INTS = [rt.int4, rt.uint4, rt.int8, rt.uint8, rt.int16, rt.uint16, rt.int32, rt.uint32, rt.int64, rt.uint64]
NON_FLOATS = INTS + [rt.bool, rt.complex64, rt.complex128]


def arr(t):
    return np.array(rt.to_numpy(t)).astype(np.float64) if t.dtype.kind == "f" else np.array(rt.to_numpy(t))


def int_range(d):
    return (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1) if d.kind == "i" else (0, (1 << d.bits) - 1)


# -- the generator -------------------------------------------------------------
@pytest.mark.parametrize("ctr,key,expected", [
    ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff,) * 4, (0xffffffff, 0xffffffff), (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
])
def test_philox_known_answers(ctr, key, expected):
    """Random123's known-answer vectors for Philox4x32-10."""
    out = philox4x32(np.array([ctr], np.uint32), key)
    assert tuple(int(v) for v in out[0]) == expected


def test_random_bits_layout():
    be = rt.get_backend()
    w = [int(v) for v in be.to_list(be.random_bits(0, 10))]
    assert w[:4] == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    block1 = philox4x32(np.array([[1, 0, 0, 0]], np.uint32), (0, 0))[0]
    assert w[4:8] == [int(v) for v in block1]
    seed = (7 << 32) | 5  # key = (low half, high half)
    w2 = be.to_list(be.random_bits(seed, 4))
    assert w2 == [int(v) for v in philox4x32(np.zeros((1, 4), np.uint32), (5, 7))[0]]
    assert rt.get_backend().dtype(be.random_bits(1, 3)) is rt.uint32


def test_frontend_uses_no_numpy():
    src = pathlib.Path(rt._seeded_random.__file__).read_text() + pathlib.Path(rt._ranges.__file__).read_text()
    assert "numpy" not in src.replace("NumPy", "") and "ml_dtypes" not in src


# -- determinism ---------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda s, shp: rt.rand(rt.float32, shp, seed=s),
    lambda s, shp: rt.rand(rt.float64, shp, seed=s),
    lambda s, shp: rt.randn(rt.float32, shp, seed=s),
    lambda s, shp: rt.randn(rt.float64, shp, seed=s),
    lambda s, shp: rt.randint(rt.int64, shp, -5, seed=s, high=1 << 40),
    lambda s, shp: rt.dropout(rt.ones(rt.float32, shp), seed=s, rate=0.3),
])
def test_same_seed_same_values_and_prefix_property(fn):
    a = rt.to_array(fn(123, [7]))
    rt.rand(rt.float32, [100])          # drawing in between changes nothing
    rt.randn(rt.float64, [5], seed=9)
    assert rt.to_array(fn(123, [7])) == a
    assert rt.to_array(fn(123, [7, 1])) == a
    assert rt.to_array(fn(123, [3])) == a[:3]           # element i depends only on (seed, i)
    assert rt.to_array(fn(124, [7])) != a


def test_known_values_are_stable():
    """Fixed outputs: same seed -> same values on every run and machine."""
    assert str(rt.rand(rt.float64, [3], seed=0)) == "[0.399046, 0.735713, 0.972241]"
    assert str(rt.randn(rt.float64, [4], seed=0)) == "[-0.090473, -1.00513, -0.923834, -2.51295]"
    assert str(rt.randint(rt.int32, [6], -3, seed=1, high=3)) == "[1, -3, -1, -2, 2, 1]"
    assert rt.to_array(rt.rand(rt.float32, [2], seed=0)) == [0x6627e8 / 2 ** 24, 0xe169c5 / 2 ** 24]


def test_no_seed_gives_fresh_values():
    assert rt.to_array(rt.rand(rt.float64, [4])) != rt.to_array(rt.rand(rt.float64, [4]))
    assert rt.to_array(rt.randint(rt.int64, [4], 0, high=1 << 60)) != \
        rt.to_array(rt.randint(rt.int64, [4], 0, high=1 << 60))


def test_seed_range():
    assert rt.to_array(rt.rand(rt.float32, [3], seed=-1)) == rt.to_array(rt.rand(rt.float32, [3], seed=2 ** 64 - 1))
    rt.rand(rt.float32, [1], seed=-(2 ** 63))
    rt.rand(rt.float32, [1], seed=np.int64(5))


# -- rand ------------------------------------------------------------------------------
@pytest.mark.parametrize("d", FLOATS)
def test_rand_in_unit_interval(d):
    t = rt.rand(d, [4096], seed=11)
    assert t.dtype is d and t.shape == (4096,) and rt.is_c_contiguous(t)
    a = arr(t)
    assert a.min() >= 0.0 and a.max() < 1.0
    assert 0.45 < a.mean() < 0.55


@pytest.mark.parametrize("d,top", [(rt.float16, 1 - 2 ** -11), (rt.bfloat16, 1 - 2 ** -8),
                                   (rt.float8_e4m3, 1 - 2 ** -4), (rt.float8_e5m2, 1 - 2 ** -3)])
def test_low_precision_rounding_stays_below_one(d, top):
    a = arr(rt.rand(d, [20000], seed=5))
    assert a.max() == top  # values that round to 1 are clamped to the largest value below 1


def test_rand_bits_of_precision():
    a32 = arr(rt.rand(rt.float32, [1000], seed=3))
    assert np.all(a32 * 2 ** 24 == np.floor(a32 * 2 ** 24))
    a64 = arr(rt.rand(rt.float64, [1000], seed=3))
    k = a64 * 2 ** 53
    assert np.all(k == np.floor(k))
    assert np.mean(a64 * 2 ** 24 != np.floor(a64 * 2 ** 24)) > 0.99  # uses more than 24 bits


def test_rand_statistics():
    a = arr(rt.rand(rt.float64, [100000], seed=1))
    assert abs(a.mean() - 0.5) < 0.005 and abs(a.var() - 1 / 12) < 0.002
    hist = np.histogram(a, bins=10, range=(0, 1))[0]
    assert hist.min() > 9500 and hist.max() < 10500


@pytest.mark.parametrize("shape", [[], [0], [3, 0, 2], [2, 3, 4]])
def test_rand_shapes(shape):
    for f in (rt.rand, rt.randn):
        t = f(rt.float32, shape, seed=0)
        assert t.shape == tuple(shape) and t.size == math.prod(shape)
    assert rt.randint(rt.int8, shape, 0, seed=0).shape == tuple(shape)


# -- randn -------------------------------------------------------------------------------
@pytest.mark.parametrize("d", FLOATS)
def test_randn_statistics(d):
    a = arr(rt.randn(d, [40001], seed=2))
    assert np.all(np.isfinite(a))
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05


def test_randn_is_normal():
    from scipy import stats
    a = arr(rt.randn(rt.float64, [20000], seed=8))
    assert stats.kstest(a, "norm").pvalue > 1e-3
    assert abs(np.mean(np.abs(a) < 1) - 0.6827) < 0.02


# -- randint -----------------------------------------------------------------------------
@pytest.mark.parametrize("d", INTS)
def test_randint_every_integer_dtype(d):
    lo, hi = int_range(d)
    t = rt.randint(d, [2000], lo, seed=4, high=hi + 1)
    assert t.dtype is d
    a = [int(v) for v in rt.to_array(t)]
    assert min(a) >= lo and max(a) <= hi
    if d.bits <= 8:
        assert set(a) == set(range(lo, hi + 1))      # every value hit
    small = [int(v) for v in rt.to_array(rt.randint(d, [500], lo, seed=4, high=lo + 3))]
    assert set(small) == {lo, lo + 1, lo + 2}


@given(st.sampled_from(INTS), st.data())
def test_randint_in_range(d, data):
    dlo, dhi = int_range(d)
    lo = data.draw(st.integers(dlo, dhi))
    hi = data.draw(st.integers(lo + 1, dhi + 1))
    seed = data.draw(st.integers(0, 2 ** 64 - 1))
    a = [int(v) for v in rt.to_array(rt.randint(d, [17], lo, seed=seed, high=hi))]
    assert all(lo <= v < hi for v in a)


def test_randint_default_high():
    a = rt.to_array(rt.randint(rt.int32, [1000], 0, seed=1))
    assert set(a) == set(range(10))


def test_randint_uniform_small_range():
    a = np.array(rt.to_numpy(rt.randint(rt.int32, [60000], 0, seed=10, high=6)))
    counts = np.bincount(a, minlength=6)
    assert counts.min() > 9500 and counts.max() < 10500


def test_randint_no_modulo_bias_on_huge_ranges():
    # with x mod r for r = 3 * 2**62, values below 2**62 would have probability 1/2 instead of 1/3
    r = 3 * 2 ** 62
    a = np.array(rt.to_numpy(rt.randint(rt.uint64, [30000], 0, seed=6, high=r)))
    frac = np.mean(a < np.uint64(2 ** 62))
    assert abs(frac - 1 / 3) < 0.015
    assert a.max() >= np.uint64(2 ** 63)
    c = np.array(rt.to_numpy(rt.randint(rt.uint32, [30000], 0, seed=6, high=3 * 2 ** 30)))  # 32-bit path
    assert abs(np.mean(c < 2 ** 30) - 1 / 3) < 0.015
    b = np.array(rt.to_numpy(rt.randint(rt.int64, [30000], -(2 ** 63), seed=6, high=2 ** 63 - 2 ** 61)))
    assert abs(np.mean(b < -(2 ** 63) + 2 ** 62) - 2 / 7) < 0.015


# -- dropout -----------------------------------------------------------------------------
@pytest.mark.parametrize("d", FLOATS)
def test_dropout_scales_and_keeps_dtype(d):
    x = rt.full(d, [4000], 0.5)
    y = rt.dropout(x, seed=1, rate=0.5)
    assert y.dtype is d and y.shape == x.shape
    a = arr(y)
    assert set(np.unique(a)) <= {0.0, 1.0}
    assert 0.45 < np.mean(a == 0) < 0.55
    assert rt.to_array(x) == [0.5] * 4000   # input untouched


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.75, 0.999])
def test_dropout_rate(rate):
    x = rt.ones(rt.float64, [20000])
    a = arr(rt.dropout(x, seed=2, rate=rate))
    assert abs(np.mean(a == 0) - rate) < 0.015
    kept = a[a != 0]
    assert np.all(kept == 1 / (1 - rate))
    if rate == 0.0:
        assert np.all(a == 1)


def test_dropout_expected_value_unchanged():
    x = rt.rand(rt.float64, [50000], seed=1)
    y = rt.dropout(x, seed=2, rate=0.3)
    assert abs(arr(y).mean() - arr(x).mean()) < 0.01


def test_dropout_on_strided_view_follows_row_major_positions():
    base = rt.from_numpy(np.arange(1.0, 25.0).reshape(4, 6)[::-1, ::2])
    dense = rt.from_numpy(np.ascontiguousarray(rt.to_numpy(base)))
    assert rt.to_array(rt.dropout(base, seed=5, rate=0.4)) == rt.to_array(rt.dropout(dense, seed=5, rate=0.4))
    y = rt.dropout(rt.from_numpy(np.array(3.0)), seed=1, rate=0.5)
    assert y.shape == ()


def test_dropout_keeps_nan_and_inf_positions_or_zeroes_them():
    x = rt.from_numpy(np.array([np.nan, np.inf, -np.inf, 1.0] * 50))
    a = arr(rt.dropout(x, seed=3, rate=0.5))
    dropped = a == 0
    assert dropped.any() and (~dropped).any()
    src = np.array([np.nan, np.inf, -np.inf, 1.0] * 50)
    assert np.array_equal(a[~dropped], src[~dropped] * 2, equal_nan=True)


# -- errors (one per documented raise) -----------------------------------------------------------
@pytest.mark.parametrize("d", NON_FLOATS)
def test_rand_rejects_non_float_dtype(d):
    with pytest.raises(TypeError, match=r"rand: dtype must be a real floating type.*got " + d.name):
        rt.rand(d, [2])


@pytest.mark.parametrize("d", NON_FLOATS)
def test_randn_rejects_non_float_dtype(d):
    with pytest.raises(TypeError, match=r"randn: dtype must be a real floating type.*got " + d.name):
        rt.randn(d, [2])


@pytest.mark.parametrize("d", FLOATS + [rt.bool, rt.complex64])
def test_randint_rejects_non_integer_dtype(d):
    with pytest.raises(TypeError, match="randint: dtype must be an integer type"):
        rt.randint(d, [2], 0)


@pytest.mark.parametrize("low,high", [(5, 5), (6, 5), (10, 10)])
def test_randint_rejects_low_not_below_high(low, high):
    with pytest.raises(ValueError, match=f"randint: low must be less than high, got low={low} >= high={high}"):
        rt.randint(rt.int32, [2], low, high=high)


def test_randint_default_high_with_large_low():
    with pytest.raises(ValueError, match="low=10 >= high=10"):
        rt.randint(rt.int32, [2], 10)


@pytest.mark.parametrize("d,low,high", [(rt.uint8, -1, 5), (rt.int8, 0, 129), (rt.int4, -9, 0),
                                         (rt.uint64, 0, 2 ** 64 + 1)])
def test_randint_rejects_range_outside_dtype(d, low, high):
    with pytest.raises(ValueError, match=f"does not fit {d.name}"):
        rt.randint(d, [2], low, high=high)


def test_randint_rejects_float_bounds():
    with pytest.raises(TypeError, match="randint: low must be an integer"):
        rt.randint(rt.int32, [2], 0.5)
    with pytest.raises(TypeError, match="randint: high must be an integer"):
        rt.randint(rt.int32, [2], 0, high=2.5)


@pytest.mark.parametrize("d", INTS + [rt.bool, rt.complex128])
def test_dropout_rejects_non_float_input(d):
    with pytest.raises(TypeError, match="dropout: x must have a real floating dtype"):
        rt.dropout(rt.zeros(d, [3]), rate=0.5)


@pytest.mark.parametrize("rate", [1.0, 1.5, -0.1, float("nan"), float("inf")])
def test_dropout_rejects_rate_outside_unit_interval(rate):
    with pytest.raises(ValueError, match=r"dropout: rate must be in \[0, 1\)"):
        rt.dropout(rt.ones(rt.float32, [3]), rate=rate)


def test_dropout_rejects_non_numeric_rate():
    with pytest.raises(TypeError, match="dropout: rate must be a number"):
        rt.dropout(rt.ones(rt.float32, [3]), rate="half")


def test_seed_errors():
    with pytest.raises(TypeError, match="rand: seed must be an integer"):
        rt.rand(rt.float32, [2], seed=1.5)
    with pytest.raises(ValueError, match="randn: seed .* is out of range"):
        rt.randn(rt.float32, [2], seed=2 ** 64)
    with pytest.raises(ValueError, match="rand: shape"):
        rt.rand(rt.float32, [-1])
    with pytest.raises(TypeError, match="rand: dtype"):
        rt.rand("float128", [2])


def test_dropout_is_a_method():
    x = rt.ones(rt.float32, [4])
    assert rt.to_array(x.dropout(seed=1, rate=0.5)) == rt.to_array(rt.dropout(x, seed=1, rate=0.5))
