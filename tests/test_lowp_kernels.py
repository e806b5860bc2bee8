"""The AVX-512 loops of the compiled kernels and the bfloat16 lookup tables give the documented bits.

bfloat16 arithmetic must equal ml_dtypes' float32 round trip ``op(x.astype(float32), ...).astype(bfloat16)``,
float16 arithmetic NumPy's own float16 loops, bfloat16 one-argument functions (exp, sin, ...)
``fn(x.astype(float32)).astype(bfloat16)``, every bit pattern, with the AVX-512 loops, the AVX2 loops and
the portable ones; float32 sums stay within the documented bound of the float64 sum, are the same bits
with and without AVX-512 and with any thread count, and leading-axis sums stay NumPy's bits.  Nothing
here is timed.
"""
from __future__ import annotations

import math
import sys

import ml_dtypes
import numpy as np
import pytest

import runetensor as rt
from runetensor._backend import _fast
from runetensor._backend.numpy_backend import numpy_backend as be

BF16 = ml_dtypes.bfloat16
K = _fast._kernels
pytestmark = pytest.mark.skipif(K is None, reason="compiled kernels not built")

ARITH = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
ALL = np.arange(1 << 16, dtype=np.uint16)


def _avx512_available() -> bool:
    prev = K.set_avx512(True)
    return bool(K.set_avx512(prev))


@pytest.fixture(params=["avx512", "avx2", "portable"])
def simd(request):
    """The kernels' loops at each level this CPU has: AVX-512, AVX2 / F16C, portable C."""
    if K is None:
        pytest.skip("compiled kernels not built")
    if request.param == "avx512" and not _avx512_available():
        pytest.skip("this CPU has no AVX-512")
    prev_simd = K.set_simd(request.param != "portable")
    prev_512 = K.set_avx512(request.param == "avx512")
    yield request.param
    K.set_simd(prev_simd)
    K.set_avx512(prev_512)


@pytest.fixture(autouse=True)
def small_sizes(monkeypatch):
    """Small inputs take the fast paths, in several chunks, on 3 threads."""
    nb = sys.modules["runetensor._backend.numpy_backend"]
    monkeypatch.setattr(nb, "_FAST_MIN", 64)
    for name, v in (("PAR_MIN_CHEAP", 64), ("PAR_MIN", 64), ("LOWP_MIN", 64), ("ELEM_CHUNK", 4096),
                    ("RED_MIN", 64), ("RED_CHUNK", 1024), ("KCOL_MIN", 16), ("LUT_MIN", 64),
                    ("KSUM_CHUNK", 1000)):
        monkeypatch.setattr(_fast, name, v)
    old = rt.get_num_threads()
    rt.set_num_threads(3)
    yield
    rt.set_num_threads(old)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint16 if a.itemsize == 2 else np.uint32)


def assert_same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(bits(got), bits(want))


def bf16_ref(fn, *xs):
    """The float32 round trip: widen every operand (arrays and 0-d arrays), compute, round once."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*[x.astype(np.float32) for x in xs])).astype(BF16)


def operand_sets(dtype):
    """Every bit pattern against three permutations of every bit pattern."""
    x = ALL.view(dtype)
    rng = np.random.default_rng(7)
    return [(x, ALL[::-1].copy().view(dtype)), (x, np.roll(ALL, 12345).view(dtype)),
            (x, rng.permutation(ALL).view(dtype))]


# ---------------------------------------------------------------------------
# bfloat16 / float16 arithmetic
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("op", sorted(ARITH))
def test_bfloat16_arithmetic_every_bit_pattern(simd, op):
    for x, y in operand_sets(BF16):
        assert_same_bits(be.binary(op, x, y), bf16_ref(ARITH[op], x, y))
        for cut in (1, 7, 31):  # lengths that end in a partial vector, unaligned starts
            assert_same_bits(be.binary(op, x[cut:], y[cut:]), bf16_ref(ARITH[op], x[cut:], y[cut:]))


@pytest.mark.parametrize("op", sorted(ARITH))
def test_bfloat16_arithmetic_broadcast_operand(simd, op):
    x = ALL.view(BF16)
    for b in (0x0000, 0x8000, 0x3F80, 0x0001, 0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x4B80):
        v = np.array(b, np.uint16).view(BF16).reshape(())
        assert_same_bits(be.binary(op, x, v), bf16_ref(ARITH[op], x, v))
        assert_same_bits(be.binary(op, v, x), bf16_ref(ARITH[op], v, x))
    for s in (0.1, -3.0, float("nan"), float("inf"), 1e39):  # Python floats: rounded to float32 first
        with np.errstate(all="ignore"):
            want = np.asarray(ARITH[op](x.astype(np.float32), np.float32(s))).astype(BF16)
        assert_same_bits(be.binary(op, x, s), want)


@pytest.mark.parametrize("op", sorted(ARITH))
def test_float16_arithmetic_every_bit_pattern(simd, op):
    for x, y in operand_sets(np.float16):
        with np.errstate(all="ignore"):
            assert_same_bits(be.binary(op, x, y), ARITH[op](x, y))
            assert_same_bits(be.binary(op, x[5:], y[5:]), ARITH[op](x[5:], y[5:]))
            for b in (0x3C00, 0x8000, 0x7C00, 0x7C01, 0xFE00, 0x7E55, 0x0001):  # broadcast 0-d operands
                v = np.array(b, np.uint16).view(np.float16).reshape(())
                assert_same_bits(be.binary(op, x, v), ARITH[op](x, v))
                assert_same_bits(be.binary(op, v, y), ARITH[op](v, y))


@pytest.mark.parametrize("op", sorted(ARITH))
def test_kernel_writes_only_its_range(simd, op):
    code = {"add": K.OP_ADD, "sub": K.OP_SUB, "mul": K.OP_MUL, "div": K.OP_DIV}[op]
    x, y = operand_sets(BF16)[1]
    xu, yu = x.view(np.uint16), y.view(np.uint16)
    rule = _fast._NAN_RULES[("f32", op, "aa")]
    want = bits(bf16_ref(ARITH[op], x, y))
    for lo, hi in ((0, 0), (3, 4), (5, 36), (17, 65531), (0, 65536)):
        out = np.full(ALL.size, 0xABCD, np.uint16)
        K.bf16_binary(code, xu, yu, out, lo, hi, rule)
        np.testing.assert_array_equal(out[lo:hi], want[lo:hi])
        assert (out[:lo] == 0xABCD).all() and (out[hi:] == 0xABCD).all()
        out = np.full(ALL.size, 0xABCD, np.uint16)
        K.f16_binary(code, xu, yu, out, lo, hi, _fast._NAN_RULES[("f16", op, "aa")])
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(out[lo:hi], bits(ARITH[op](x.view(np.float16), y.view(np.float16)))[lo:hi])
        assert (out[:lo] == 0xABCD).all() and (out[hi:] == 0xABCD).all()


def test_non_contiguous_operands_give_the_same_bits(simd):
    x = ALL.view(BF16).reshape(256, 256)
    y = np.roll(ALL, 999).view(BF16).reshape(256, 256)
    for op, fn in ARITH.items():
        assert_same_bits(be.binary(op, x.T, y.T), bf16_ref(fn, x.T, y.T))
        assert_same_bits(be.binary(op, x[:, ::3], y[:, ::3]), bf16_ref(fn, x[:, ::3], y[:, ::3]))
    h, g = x.view(np.float16), y.view(np.float16)
    with np.errstate(all="ignore"):
        assert_same_bits(be.binary("add", h.T, g.T), np.add(h.T, g.T))


# ---------------------------------------------------------------------------
# bfloat16 one-argument functions through their table
# ---------------------------------------------------------------------------
UNARY_LUT = ["exp", "exp2", "expm1", "log", "log1p", "sin", "cos", "tanh", "floor", "sign", "recip"]


@pytest.mark.parametrize("op", UNARY_LUT)
def test_bfloat16_functions_every_bit_pattern(op):
    fn = {"recip": np.reciprocal}.get(op) or getattr(np, op)
    x = ALL.view(BF16)
    want = bf16_ref(fn, x)
    got = be.unary(op, x)
    assert fn in _fast._LUTS  # the table path was taken
    assert_same_bits(got, want)
    assert_same_bits(be.unary(op, x[3:-5]), want[3:-5])  # odd length, unaligned start
    m = x.reshape(128, 512)
    assert_same_bits(be.unary(op, m), want.reshape(128, 512))
    assert_same_bits(be.unary(op, m[:, ::2]), want.reshape(128, 512)[:, ::2])  # strided: the pipeline


def test_bfloat16_exp_nan_inf_and_extremes():
    special = np.array([0x7F80, 0xFF80, 0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x0000, 0x8000, 0x0001, 0x8001,
                        0x42B1, 0x42B2, 0xC2BA, 0xC2BB, 0xC2C8, 0x40DB, 0x7F7F, 0xFF7F], np.uint16)
    x = np.tile(special, 100).view(BF16)
    assert_same_bits(be.unary("exp", x), bf16_ref(np.exp, x))


def test_bfloat16_functions_do_not_depend_on_thread_count():
    x = np.random.default_rng(3).permutation(np.tile(ALL, 3)).view(BF16)
    results = []
    for nt in (1, 2, 3):
        rt.set_num_threads(nt)
        results.append(be.unary("exp", x))
    for r in results[1:]:
        assert_same_bits(r, results[0])


def test_lut_kernel_arguments_are_checked():
    table = np.zeros(1 << 16, np.uint16)
    a = np.zeros(100, np.uint16)
    out = np.empty(100, np.uint16)
    with pytest.raises(ValueError, match="lut16.*table"):
        K.lut16(a, table[:1000], out, 0, 100)
    with pytest.raises(ValueError, match="lut16.*out"):
        K.lut16(a, table, out[:50], 0, 100)
    with pytest.raises(ValueError, match="lut16"):
        K.lut16(a, table, out, 5, 2)
    ro = np.empty(100, np.uint16)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="lut16"):
        K.lut16(a, table, ro, 0, 100)
    with pytest.raises(ValueError, match="lut16"):
        K.lut16(a.astype(np.uint32), table, out, 0, 100)


# ---------------------------------------------------------------------------
# float32 sums
# ---------------------------------------------------------------------------
def sum_bound(x, axis=None):
    """docs/performance.md's bound on the distance to the float64 sum: 2 * (16 + log2(n) + 2) * eps32 *
    sum(|x|) (the tests' bound for every float sum path), per reduced row."""
    a = np.abs(x.astype(np.float64)).sum(axis=axis)
    n = x.size if axis is None else x.shape[axis]
    return 2 * (16 + math.log2(max(n, 2)) + 2) * float(np.finfo(np.float32).eps) * a + 1e-30


@pytest.mark.parametrize("n", [1, 31, 32, 33, 511, 512, 513, 1025, 4099, 70_001, 1_000_003])
def test_sum_of_everything_within_bound_and_same_bits_every_level(simd, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    got = be.reduce("sum", x, (0,), False)
    assert got.dtype == np.float32 and got.shape == ()
    assert abs(float(got) - np.sum(x, dtype=np.float64)) <= sum_bound(x)
    prev = K.set_avx512(False), K.set_simd(False)
    try:
        portable = be.reduce("sum", x, (0,), False)
    finally:
        K.set_simd(prev[1])
        K.set_avx512(prev[0])
    assert_same_bits(got, portable)  # every level adds in the same order


@pytest.mark.parametrize("shape", [(4000, 25), (33, 2500), (7, 513), (1, 3000), (100, 1)])
def test_sum_along_each_axis(simd, shape):
    rng = np.random.default_rng(shape[0])
    x = (rng.standard_normal(shape) * 100).astype(np.float32)
    axis0 = be.reduce("sum", x, (0,), False)
    assert_same_bits(axis0, np.sum(x, axis=0))  # NumPy's own order, bit for bit
    axis1 = be.reduce("sum", x, (1,), False)
    assert (np.abs(axis1.astype(np.float64) - x.astype(np.float64).sum(axis=1)) <= sum_bound(x, 1)).all()
    everything = be.reduce("sum", x, (0, 1), True)
    assert everything.shape == (1, 1)
    assert abs(float(everything[0, 0]) - np.sum(x, dtype=np.float64)) <= sum_bound(x)


def test_sums_identical_with_one_and_two_threads():
    rng = np.random.default_rng(11)
    x = rng.standard_normal(3_000_017).astype(np.float32)
    m = rng.standard_normal((700, 2501)).astype(np.float32)
    out = []
    for nt in (1, 2):
        rt.set_num_threads(nt)
        out.append([rt.sum(rt.asarray(x)), rt.sum(rt.asarray(m), axes=[0]), rt.sum(rt.asarray(m), axes=[1]),
                    rt.sum(rt.asarray(m))])
    for a, b in zip(*out):
        assert_same_bits(rt.to_numpy(a), rt.to_numpy(b))


def test_sums_of_non_contiguous_views_within_bound(simd):
    x = (np.random.default_rng(2).standard_normal((600, 700)) * 3).astype(np.float32)
    for v in (x.T, x[:, ::2], x[::3]):
        got = be.reduce("sum", v, (0, 1), False)
        assert abs(float(got) - np.sum(v, dtype=np.float64)) <= sum_bound(v)
        assert_same_bits(be.reduce("sum", v, (0,), False), np.sum(v, axis=0))


def test_sums_with_nan_inf_and_signed_zeros(simd):
    x = np.ones(100_003, np.float32)
    x[99_999] = np.nan
    assert np.isnan(be.reduce("sum", x, (0,), False))
    x[99_999] = np.inf
    assert be.reduce("sum", x, (0,), False) == np.inf
    x[5] = -np.inf
    assert np.isnan(be.reduce("sum", x, (0,), False))
    z = np.full((300, 40), -0.0, np.float32)  # NumPy's sums of -0.0 are +0.0
    for axes in ((0,), (1,), (0, 1)):
        assert_same_bits(be.reduce("sum", z, axes, False), np.sum(z, axis=axes))
    m = np.random.default_rng(4).standard_normal((50, 2500)).astype(np.float32)
    m[3, 7], m[10, 2499], m[49, 0] = np.nan, np.inf, -np.inf
    assert_same_bits(be.reduce("sum", m, (0,), False), np.sum(m, axis=0))
    rows = be.reduce("sum", m, (1,), False)
    np.testing.assert_array_equal(np.isnan(rows), np.isnan(np.sum(m, axis=1)))
    np.testing.assert_array_equal(np.isinf(rows), np.isinf(np.sum(m, axis=1)))


def test_claimed_chunk_sums_match_the_chunk_kernels():
    x = np.random.default_rng(8).standard_normal(10_007).astype(np.float32)
    for chunk in (1, 64, 1000, 10_007, 20_000):
        nparts = -(-x.size // chunk)
        parts = np.full(nparts, 7.0)
        counter = np.zeros(1, np.int64)
        K.sum_f32_claim(x, chunk, counter, parts)
        K.sum_f32_claim(x, chunk, counter, parts)  # a late thread finds nothing left to do
        want = [K.sum_f32(x, k * chunk, min(x.size, (k + 1) * chunk)) for k in range(nparts)]
        np.testing.assert_array_equal(parts, want)
    m = x[:10_000].reshape(40, 250)
    for chunk in (1, 3, 40, 100):
        out = np.full(40, 7.0, np.float32)
        K.sum_rows_f32_claim(m, 40, 250, out, chunk, np.zeros(1, np.int64))
        want = np.empty(40, np.float32)
        K.sum_rows_f32(m, 40, 250, want, 0, 40)
        assert_same_bits(out, want)


def test_claim_kernel_arguments_are_checked():
    x = np.ones(100, np.float32)
    with pytest.raises(ValueError, match="sum_f32_claim.*parts"):
        K.sum_f32_claim(x, 10, np.zeros(1, np.int64), np.zeros(9))  # 10 chunks need 10 parts
    with pytest.raises(ValueError, match="sum_f32_claim.*counter"):
        K.sum_f32_claim(x, 10, np.zeros(1, np.int32), np.zeros(10))
    misaligned = np.zeros(3, np.int64).view(np.uint8)[1:9].view(np.int64)
    with pytest.raises(ValueError, match="sum_f32_claim.*counter must be 8-byte aligned"):
        K.sum_f32_claim(x, 10, misaligned, np.zeros(10))
    with pytest.raises(ValueError, match="sum_f32_claim.*chunk"):
        K.sum_f32_claim(x, 0, np.zeros(1, np.int64), np.zeros(10))
    with pytest.raises(ValueError, match="sum_rows_f32_claim"):
        K.sum_rows_f32_claim(x, 10, 11, np.zeros(10, np.float32), 2, np.zeros(1, np.int64))  # src too short
    with pytest.raises(ValueError, match="sum_rows_f32_claim"):
        K.sum_rows_f32_claim(x, 10, 10, np.zeros(9, np.float32), 2, np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="sum_rows_f32_claim"):
        K.sum_rows_f32_claim(x, -1, 10, np.zeros(9, np.float32), 2, np.zeros(1, np.int64))
