"""The optional compiled kernels (``runetensor._backend._kernels``) give the plain path's answers.

Each result is computed three ways: the plain NumPy path (``_fast.ENABLED``
off), the NumPy-only fast paths (``_fast.KERNELS`` off) and the kernels.
bfloat16 and float8 results must be bit-identical to each other and to ml_dtypes'
``fn(x.astype(float32), ...).astype(dtype)``, over every bit pattern (every
operand pair for float8);
float32 sums of everything and along trailing axes agree within the
documented bound, leading-axis sums are bit-identical.  A subprocess checks that the library works when the
extension cannot be imported.  Nothing here is timed.
"""
from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import runetensor as rt
from runetensor._backend import _fast
from runetensor._backend.numpy_backend import numpy_backend as be

BF16 = ml_dtypes.bfloat16
HAVE = _fast._kernels is not None
needs_kernels = pytest.mark.skipif(not HAVE, reason="compiled kernels not built")

BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "maximum": np.maximum, "minimum": np.minimum}
UNARY = {"neg": np.negative, "abs": np.absolute, "square": np.square, "sqrt": np.sqrt}
#: neg/abs of the 2- and 1-byte floats are sign-bit operations (IEEE 754 negate/abs: NaN payloads
#: kept, as ml_dtypes' own ufuncs and NumPy's float16 loops), not a float32 round trip
SIGN_OPS = ("neg", "abs")


def sign_ref(op, x):
    """neg/abs by flipping/clearing the sign bit of ``x``'s items."""
    u = np.uint16 if x.itemsize == 2 else np.uint8
    top = u(0x80) << u(8 * (x.itemsize - 1))
    b = x.view(u)
    return (b ^ top if op == "neg" else b & u(~top)).view(x.dtype)


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    """Small inputs take the fast paths in many chunks, on 3 threads."""
    nb = sys.modules["runetensor._backend.numpy_backend"]  # the module (the package attribute is the object)
    monkeypatch.setattr(nb, "_FAST_MIN", 64)
    for name, v in (("PAR_MIN_CHEAP", 64), ("LOWP_MIN", 64), ("ELEM_CHUNK", 4096), ("RED_MIN", 64), ("RED_CHUNK", 1024),
                    ("KCOL_MIN", 16), ("ALIGN", 64)):
        monkeypatch.setattr(_fast, name, v)
    old = rt.get_num_threads()
    rt.set_num_threads(3)
    yield
    rt.set_num_threads(old)
    _fast.ENABLED = True
    _fast.KERNELS = HAVE


def three(fn):
    """(plain, fast without kernels, fast with kernels)."""
    try:
        _fast.ENABLED = False
        plain = fn()
        _fast.ENABLED, _fast.KERNELS = True, False
        numpy_fast = fn()
    finally:
        _fast.ENABLED, _fast.KERNELS = True, HAVE
    return plain, numpy_fast, fn()


def same_bits(*arrays):
    first = arrays[0]
    for a in arrays[1:]:
        assert a.dtype == first.dtype and a.shape == first.shape
        np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8),
                                      np.ascontiguousarray(first).view(np.uint8))


def ref_binary(op, x, y):
    def f(v):
        return v.astype(np.float32) if isinstance(v, np.ndarray) else np.asarray(v, dtype=np.float32)
    with np.errstate(all="ignore"):
        return np.asarray(BINARY[op](f(x), f(y))).astype(BF16)


ALL = np.arange(1 << 16, dtype=np.uint16).view(BF16)
SPECIAL_BITS = [0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x3F81, 0x4000, 0x7F7F, 0xFF7F,
                0x7F80, 0xFF80, 0x7F81, 0xFF81, 0x7FC0, 0xFFC0, 0x7FFF, 0xFFFF, 0x7FA5, 0x4B80, 0x3C00, 0xC2F7]


@needs_kernels
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_every_bit_pattern(op):
    for y in (ALL[::-1].copy(), np.roll(ALL, 12345), np.roll(ALL, -0x3F80)):
        res = three(lambda: be.binary(op, ALL, y))
        same_bits(*res, ref_binary(op, ALL, y))


@needs_kernels
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_special_pairs_every_layout(op):
    s = np.array(SPECIAL_BITS, np.uint16)
    xa = np.repeat(s, len(s)).view(BF16)  # every ordered pair of special values
    ya = np.tile(s, len(s)).view(BF16)
    same_bits(*three(lambda: be.binary(op, xa, ya)), ref_binary(op, xa, ya))
    for cut in (1, 5, 13):  # odd lengths: NumPy's SIMD loops finish with a tail loop
        same_bits(*three(lambda: be.binary(op, xa[cut:], ya[cut:])), ref_binary(op, xa[cut:], ya[cut:]))
        same_bits(*three(lambda: be.binary(op, xa[cut:], ya[0])), ref_binary(op, xa[cut:], ya[0]))
    for b in SPECIAL_BITS:  # one operand broadcast: a 0-d bfloat16 array on either side
        v = np.array(b, np.uint16).view(BF16).reshape(())
        same_bits(*three(lambda: be.binary(op, xa, v)), ref_binary(op, xa, v))
        same_bits(*three(lambda: be.binary(op, v, xa)), ref_binary(op, v, xa))
    for v in (0.1, 3, -0.0, float("nan"), float("inf"), 1e6, 1e39, True):  # Python scalars
        same_bits(*three(lambda: be.binary(op, xa, v)), ref_binary(op, xa, v))
        same_bits(*three(lambda: be.binary(op, v, xa)), ref_binary(op, v, xa))


@needs_kernels
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_every_bit_pattern(op):
    with np.errstate(all="ignore"):
        ref = sign_ref(op, ALL) if op in SIGN_OPS else UNARY[op](ALL.astype(np.float32)).astype(BF16)
    same_bits(*three(lambda: be.unary(op, ALL)), ref)
    if op in SIGN_OPS:
        same_bits(be.unary(op, ALL), UNARY[op](ALL))  # ml_dtypes' own bfloat16 ufunc


@needs_kernels
def test_conversions_every_bit_pattern():
    k = _fast._kernels
    n = ALL.size
    wide = np.empty(n, np.float32)
    k.bf16_to_float32(ALL.view(np.uint16), wide, 0, n)
    same_bits(wide, ALL.astype(np.float32))
    # float32 -> bfloat16 rounding: every bfloat16 value, the midpoints and their neighbours
    u = ALL.view(np.uint16).astype(np.uint32) << 16
    f = np.concatenate([u, u | 0x8000, u | 0x7FFF, u | 0x8001, u | 0x0001]).view(np.float32)
    back = np.empty(f.size, np.uint16)
    k.float32_to_bf16(f, back, 0, f.size)
    with np.errstate(all="ignore"):
        same_bits(back.view(BF16), f.astype(BF16))


F16_ALL = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
F16_SPECIAL = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF, 0xFBFF, 0x7C00,
               0xFC00, 0x7C01, 0xFC01, 0x7E00, 0xFE00, 0x7FFF, 0xFFFF, 0x7D55, 0x5640, 0x1400, 0xC8F7]


@needs_kernels
@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "minimum"])
def test_float16_binary_every_bit_pattern_and_special_pairs(op):
    for y in (F16_ALL[::-1].copy(), np.roll(F16_ALL, 12345), np.roll(F16_ALL, -0x3C00)):
        with np.errstate(all="ignore"):
            ref = BINARY[op](F16_ALL, y)
        same_bits(*three(lambda: be.binary(op, F16_ALL, y)), ref)
    s = np.array(F16_SPECIAL, np.uint16)
    xa = np.repeat(s, len(s)).view(np.float16)
    ya = np.tile(s, len(s)).view(np.float16)
    with np.errstate(all="ignore"):
        same_bits(*three(lambda: be.binary(op, xa, ya)), BINARY[op](xa, ya))
        for cut in (1, 5, 13):  # odd lengths: tail loops
            same_bits(*three(lambda: be.binary(op, xa[cut:], ya[cut:])), BINARY[op](xa[cut:], ya[cut:]))
        for b in F16_SPECIAL:  # a 0-d float16 operand on either side
            v = np.array(b, np.uint16).view(np.float16).reshape(())
            same_bits(*three(lambda: be.binary(op, xa, v)), BINARY[op](xa, v))
            same_bits(*three(lambda: be.binary(op, v, xa)), BINARY[op](v, xa))


@needs_kernels
def test_float16_kernel_direct_and_conversions():
    k = _fast._kernels
    n = F16_ALL.size
    codes = {"add": k.OP_ADD, "sub": k.OP_SUB, "mul": k.OP_MUL, "div": k.OP_DIV, "maximum": k.OP_MAX,
             "minimum": k.OP_MIN}
    y = np.roll(F16_ALL, 777)
    for op, code in codes.items():
        out = np.empty(n, np.uint16)
        rule = _fast._NAN_RULES.get(("f16", op[:3], "aa"), 0)
        k.f16_binary(code, F16_ALL.view(np.uint16), y.view(np.uint16), out, 0, n, rule)
        with np.errstate(all="ignore"):
            same_bits(out.view(np.float16), BINARY[op](F16_ALL, y))
    wide = np.empty(n, np.float32)
    k.f16_to_float32(F16_ALL.view(np.uint16), wide, 0, n)
    same_bits(wide, F16_ALL.astype(np.float32))
    u = F16_ALL.astype(np.float32).view(np.uint32)  # every float16 value, midpoints and neighbours, NaNs
    f = np.concatenate([u, u | 0x1000, u | 0x0FFF, u | 0x1001, u + 0x2000, u | 0x7FC00000,
                        np.random.default_rng(0).integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)])
    f = f.view(np.float32)
    back = np.empty(f.size, np.uint16)
    k.float32_to_f16(f, back, 0, f.size)
    with np.errstate(all="ignore"):
        same_bits(back.view(np.float16), f.astype(np.float16))


@needs_kernels
def test_non_contiguous_and_other_dtypes_fall_back():
    x = np.arange(600, dtype=np.float32).astype(BF16)
    same_bits(*three(lambda: be.binary("add", x[::2], x[1::2])))
    same_bits(*three(lambda: be.binary("pow", x, x[::-1].copy())))
    same_bits(*three(lambda: be.unary("exp", x)))
    e4 = x.astype(ml_dtypes.float8_e4m3fn)
    same_bits(*three(lambda: be.binary("mul", e4, e4)))
    h = np.arange(600, dtype=np.float16)
    same_bits(*three(lambda: be.binary("add", h[::2], h[1::2])))
    same_bits(*three(lambda: be.binary("add", h, np.float32(2))))  # mixed: float32 result
    same_bits(*three(lambda: be.binary("add", h, 2.5)))  # Python scalar: NumPy's loop
    same_bits(*three(lambda: be.binary("div", h, h[::-1].copy())))


F8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
F8_FMT = {"e4m3": 0, "e5m2": 1}
F8_ALL = np.arange(256, dtype=np.uint8)


def f8_ref(fn, t, *xs):
    """ml_dtypes' conversions around a float32 op: what the plain path computes."""
    def f(v):
        return v.astype(np.float32) if isinstance(v, np.ndarray) else np.asarray(v, dtype=np.float32)
    with np.errstate(all="ignore"):
        return np.asarray(fn(*[f(x) for x in xs])).astype(t)


def same_as_native(res, native):
    """ml_dtypes' own float8 ufuncs pick NaN signs differently; every other result is bit-identical."""
    rn = np.isnan(res.astype(np.float32))
    np.testing.assert_array_equal(rn, np.isnan(native.astype(np.float32)))
    np.testing.assert_array_equal(res.view(np.uint8)[~rn], native.view(np.uint8)[~rn])


@needs_kernels
@pytest.mark.parametrize("fmt", sorted(F8))
@pytest.mark.parametrize("op", sorted(BINARY))
def test_float8_binary_every_pair(fmt, op):
    t = F8[fmt]
    x = np.repeat(F8_ALL, 256).view(t)  # all 256 x 256 ordered pairs
    y = np.tile(F8_ALL, 256).view(t)
    ref = f8_ref(BINARY[op], t, x, y)
    for ops in ((x, y), (x, np.asarray(y[0])), (2.5, y)):  # the kernels do take these
        assert _fast._lowp_kernel(op, ops, x.shape, x.size, x.dtype) is not None
    res = three(lambda: be.binary(op, x, y))
    same_bits(*res, ref)
    with np.errstate(all="ignore"):
        same_as_native(res[2], BINARY[op](x, y))
    for cut in (1, 5, 13):  # odd lengths
        same_bits(*three(lambda: be.binary(op, x[cut:], y[cut:])), f8_ref(BINARY[op], t, x[cut:], y[cut:]))
    sub = F8_ALL.view(t)
    for b in range(256):  # every value as a 0-d operand on either side
        v = np.array(b, np.uint8).view(t).reshape(())
        same_bits(*three(lambda: be.binary(op, sub, v)), f8_ref(BINARY[op], t, sub, v))
        same_bits(*three(lambda: be.binary(op, v, sub)), f8_ref(BINARY[op], t, v, sub))
    for v in (0.1, 3, -0.0, float("nan"), float("inf"), 448.0, 464.0, 1e6, 1e39, True):  # Python scalars
        same_bits(*three(lambda: be.binary(op, x, v)), f8_ref(BINARY[op], t, x, v))
        same_bits(*three(lambda: be.binary(op, v, x)), f8_ref(BINARY[op], t, v, x))


@needs_kernels
@pytest.mark.parametrize("fmt", sorted(F8))
@pytest.mark.parametrize("op", sorted(UNARY))
def test_float8_unary_every_value(fmt, op):
    t = F8[fmt]
    x = np.tile(F8_ALL, 3).view(t)
    if op in SIGN_OPS:  # bit operations: ml_dtypes' own ufuncs' bits, NaN signs included
        same_bits(*three(lambda: be.unary(op, x)), sign_ref(op, x), UNARY[op](x))
        return
    assert _fast._lowp_kernel(op, (x,), x.shape, x.size, x.dtype) is not None
    same_bits(*three(lambda: be.unary(op, x)), f8_ref(UNARY[op], t, x))
    with np.errstate(all="ignore"):
        same_as_native(be.unary(op, x), UNARY[op](x))


@needs_kernels
@pytest.mark.parametrize("fmt", sorted(F8))
def test_float8_conversions(fmt):
    """Widening of all 256 values; narrowing of every float8 value, the midpoints between neighbours
    and their float32 neighbours, the overflow boundary, infinities, NaNs, subnormals, -0 and random
    bit patterns, against ml_dtypes' float32 -> float8 cast.  (All 2^32 float32 patterns were checked
    once outside the suite.)"""
    k, t, code = _fast._kernels, F8[fmt], F8_FMT[fmt]
    wide = np.empty(256, np.float32)
    k.f8_to_float32(code, F8_ALL, wide, 0, 256)
    same_bits(wide, F8_ALL.view(t).astype(np.float32))
    v = F8_ALL.view(t).astype(np.float32)
    v = np.sort(v[~np.isnan(v)])
    mids = (v[:-1].astype(np.float64) + v[1:]) / 2
    mids = mids[np.isfinite(mids)].astype(np.float32)  # exact in float32
    top = float(ml_dtypes.finfo(t).max)
    step = top - float(np.nextafter(np.float32(top), np.float32(0)).astype(t).astype(np.float32))
    edge = np.array([top, top + step / 2, top + step, 2 * top, 3e38, np.inf, np.nan, 1e-30, 1e-45], np.float32)
    base = np.concatenate([v, mids, edge]).astype(np.float32)
    u = base.view(np.uint32)
    rnd = np.random.default_rng(1).integers(0, 1 << 32, 400_000, dtype=np.uint64).astype(np.uint32)
    nans = np.array([0x7FC00000, 0x7F800001, 0x7FA00000, 0x7FFFFFFF, 0x7FE00001], np.uint32)
    allu = np.concatenate([u, u + 1, u - 1, rnd, nans])
    allu = np.concatenate([allu, allu ^ np.uint32(0x80000000)])
    f = allu.view(np.float32)
    back = np.empty(f.size, np.uint8)
    k.float32_to_f8(code, f, back, 0, f.size)
    with np.errstate(all="ignore"):
        same_bits(back.view(t), f.astype(t))


@needs_kernels
def test_float8_kernel_arguments_are_checked():
    k = _fast._kernels
    a, o = np.zeros(10, np.uint8), np.zeros(10, np.uint8)
    with pytest.raises(ValueError):
        k.f8_binary(0, k.OP_ADD, a, a, o, 0, 11, 0)  # past the end
    with pytest.raises(ValueError):
        k.f8_binary(2, k.OP_ADD, a, a, o, 0, 10, 0)  # unknown format
    with pytest.raises(ValueError):
        k.f8_binary(0, k.OP_ADD, np.zeros(10, np.uint16), a, o, 0, 10, 0)  # not 1-byte items
    with pytest.raises(ValueError):
        k.f8_unary(1, k.UOP_SQUARE, a, np.zeros(10, np.uint16), 0, 10)  # output item size
    with pytest.raises(ValueError):
        k.f8_unary(1, 99, a, o, 0, 10)  # unknown op
    with pytest.raises(ValueError):
        k.float32_to_f8(0, np.zeros(4, np.float32), o, 0, 5)


@needs_kernels
@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 1023, 1024, 1025, 5000, 100_000])
def test_sum_everything_within_bound(n):
    x = (np.random.default_rng(n).standard_normal(n) * 100).astype(np.float32)
    plain, numpy_fast, kern = three(lambda: be.reduce("sum", x, (0,), False))
    assert kern.dtype == plain.dtype and kern.shape == plain.shape == ()
    eps = np.finfo(np.float32).eps
    bound = 2 * (16 + math.log2(max(n, 2)) + 2) * eps * np.abs(x.astype(np.float64)).sum()
    assert abs(float(kern) - float(plain)) <= bound + 1e-30
    # float64 across blocks: at least as close to the exact sum as the plain path (within one rounding)
    exact = math.fsum(x.astype(np.float64))
    assert abs(float(kern) - exact) <= abs(float(plain) - exact) + abs(exact) * eps + 1e-30


@needs_kernels
def test_sum_special_values_and_keepdims():
    x = np.ones(5000, np.float32)
    x[17] = np.nan
    assert np.isnan(three(lambda: be.reduce("sum", x, (0,), False))[2])
    x = np.ones(5000, np.float32)
    x[3], x[4000] = np.inf, -np.inf
    assert np.isnan(three(lambda: be.reduce("sum", x, (0,), False))[2])
    x[4000] = 1
    assert three(lambda: be.reduce("sum", x, (0,), False))[2] == np.inf
    m = np.ones((40, 50), np.float32)
    r = three(lambda: be.reduce("sum", m, (0, 1), True))
    assert r[2].shape == (1, 1) and r[2].dtype == np.float32 and float(r[2][0, 0]) == 2000.0
    big = np.full(3000, 3e38, np.float32)  # overflows float32: inf, like the plain path
    assert three(lambda: be.reduce("sum", big, (0,), False))[2] == np.inf


@needs_kernels
@pytest.mark.parametrize("shape,axes", [((300, 70), (0,)), ((7, 300), (0,)), ((5, 6, 40), (0, 1)),
                                        ((1, 500), (0,)), ((64, 17), (0,)), ((3, 4, 50), (0,)),
                                        ((133, 517), (0,)), ((3, 6, 300), (0, 1))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_leading_axes_bit_identical(shape, axes, keepdims):
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 10).astype(np.float32)
    plain, _, kern = three(lambda: be.reduce("sum", x, axes, keepdims))  # (the NumPy-only path adds partials)
    same_bits(plain, kern)


@needs_kernels
@pytest.mark.parametrize("rows", [1, 2, 8, 9, 10, 16, 17, 23, 100])
def test_sum_cols_rows_in_order(rows):
    """sum_cols_f32 takes the rows 8 at a time: still each column in row order (NumPy's bits), for any
    row count (the 8-row passes and the tail), any column range, and NaN / inf / -0.0 / huge values."""
    rng = np.random.default_rng(rows)
    x = (rng.standard_normal((rows, 301)) * 10.0 ** rng.integers(-3, 4, (rows, 301))).astype(np.float32)
    x[rng.integers(0, rows, 5), rng.integers(0, 301, 5)] = 3e38  # overflow: inf, in the right place
    x[:, 7] = -0.0
    x[rows // 2, 11] = np.nan
    x[0, 13], x[rows - 1, 13] = np.inf, -np.inf
    want = x.sum(axis=0)
    for ranges in ([(0, 301)], [(0, 16), (16, 160), (160, 301)], [(0, 1), (1, 300), (300, 301)]):
        out = np.full(301, 7.0, np.float32)
        for lo, hi in ranges:
            _fast._kernels.sum_cols_f32(x, rows, 301, out, lo, hi)
        same_bits(want, out)


def row_sum_bound(x):
    """sum_rows_f32's documented bound per row: (16 + 1) * eps32 * sum(|x|) plus float64 terms,
    and the final rounding to float32 (half an ulp of the sum)."""
    a = np.abs(x.astype(np.float64)).sum(axis=-1)
    eps = float(np.finfo(np.float32).eps)
    return (16 + 1) * eps * a + x.shape[-1] * 2.0 ** -53 * a + 1e-30


@needs_kernels
@pytest.mark.parametrize("shape", [(300, 70), (7, 301), (100, 31), (50, 5), (1, 2000), (1000, 1), (40, 513),
                                   (3, 4, 50), (20, 1025)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_last_axis_within_bound(shape, keepdims):
    x = (np.random.default_rng(shape[-1]).standard_normal(shape) * 100).astype(np.float32)
    plain, numpy_fast, kern = three(lambda: be.reduce("sum", x, (x.ndim - 1,), keepdims))
    assert kern.dtype == plain.dtype == np.float32 and kern.shape == plain.shape
    exact = x.astype(np.float64).sum(axis=-1, keepdims=keepdims)
    bound = row_sum_bound(x).reshape(exact.shape)
    assert (np.abs(kern.astype(np.float64) - exact) <= bound).all()
    same_bits(plain, numpy_fast)  # the NumPy-only path stays NumPy's per-row order


@needs_kernels
def test_sum_trailing_axes_viewed_as_one():
    x = (np.random.default_rng(9).standard_normal((6, 7, 33)) * 10).astype(np.float32)
    _, _, kern = three(lambda: be.reduce("sum", x, (1, 2), False))
    assert kern.shape == (6,)
    exact = x.astype(np.float64).reshape(6, -1).sum(axis=1)
    assert (np.abs(kern.astype(np.float64) - exact) <= row_sum_bound(x.reshape(6, -1))).all()
    k = _fast._kernels
    out = np.empty(6, np.float32)
    k.sum_rows_f32(x, 6, 7 * 33, out, 0, 6)
    same_bits(out, kern)


@needs_kernels
def test_sum_rows_kernel_direct_edge_cases():
    k = _fast._kernels
    x = (np.random.default_rng(3).standard_normal((5, 77)) * 3).astype(np.float32)
    out = np.full(5, 7.0, np.float32)
    k.sum_rows_f32(x, 5, 77, out, 1, 4)  # only rows 1..3 written
    assert out[0] == 7.0 and out[4] == 7.0
    assert (np.abs(out[1:4].astype(np.float64) - x[1:4].astype(np.float64).sum(1)) <= row_sum_bound(x[1:4])).all()
    k.sum_rows_f32(x, 5, 77, out, 2, 2)  # empty range: nothing written
    k.sum_rows_f32(np.zeros(0, np.float32), 0, 10, np.zeros(0, np.float32), 0, 0)  # rows = 0
    one = np.arange(1, 38, dtype=np.float32)
    o1 = np.zeros(1, np.float32)
    k.sum_rows_f32(one, 1, 37, o1, 0, 1)  # rows = 1, cols < 32 + a partial lane row
    assert o1[0] == 37 * 38 / 2
    e = np.zeros(3, np.float32) + 5
    k.sum_rows_f32(np.zeros(0, np.float32), 3, 0, e, 0, 3)  # empty rows sum to 0
    assert (e == 0).all()
    negz = np.full((2, 40), -0.0, np.float32)
    o2 = np.zeros(2, np.float32)
    k.sum_rows_f32(negz, 2, 40, o2, 0, 2)
    same_bits(o2, negz.sum(axis=1))  # +0.0, as NumPy


@needs_kernels
@pytest.mark.parametrize("cols", [5, 31, 600])
def test_sum_last_axis_nan_inf_like_numpy(cols):
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((8, cols)).astype(np.float32)
    x[0, cols // 2] = np.nan
    x[1, 0], x[1, -1] = np.inf, -np.inf
    x[2, 1] = np.inf
    x[3, -1] = -np.inf
    x[4, 0], x[4, cols - 1] = np.nan, np.inf
    x[5, :] = 3e38  # the row's sum overflows float32: inf in both
    with np.errstate(all="ignore"):
        ref = np.sum(x, axis=1)
    _, _, kern = three(lambda: be.reduce("sum", x, (1,), False))
    np.testing.assert_array_equal(np.isnan(kern), np.isnan(ref))
    fin = ~np.isnan(ref)
    np.testing.assert_array_equal(np.isinf(kern[fin]), np.isinf(ref[fin]))
    np.testing.assert_array_equal(np.sign(kern[np.isinf(ref)]), np.sign(ref[np.isinf(ref)]))


@needs_kernels
def test_sums_do_not_depend_on_thread_count():
    x = np.random.default_rng(5).standard_normal(50_000).astype(np.float32)
    m = x.reshape(100, 500)
    results = []
    for nt in (1, 2, 3):
        rt.set_num_threads(nt)
        results.append([be.reduce("sum", x, (0,), False), be.reduce("sum", m, (0,), True),
                        be.reduce("sum", m, (1,), False), be.reduce("sum", x.reshape(250, 200), (1,), True)])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            same_bits(a, b)


@needs_kernels
def test_kernel_arguments_are_checked():
    k = _fast._kernels
    a = np.zeros(10, np.uint16)
    o = np.zeros(10, np.uint16)
    with pytest.raises(ValueError):
        k.bf16_binary(k.OP_ADD, a, a, o, 0, 11, 0)  # past the end
    with pytest.raises(ValueError):
        k.bf16_binary(99, a, a, o, 0, 10, 0)  # unknown op
    with pytest.raises(ValueError):
        k.bf16_binary(k.OP_ADD, np.zeros(10, np.float32), a, o, 0, 10, 0)  # not 2-byte items
    with pytest.raises(ValueError):
        k.bf16_unary(k.UOP_SQUARE, a, o, 5, 4)  # empty range the wrong way round
    with pytest.raises(ValueError):
        k.sum_f32(np.zeros(4, np.float32), 0, 5)
    with pytest.raises(ValueError):
        k.sum_cols_f32(np.zeros((2, 3), np.float32), 2, 3, np.zeros(2, np.float32), 0, 3)  # out too short
    m = np.zeros((4, 3), np.float32)
    o4 = np.zeros(4, np.float32)
    for bad in ((m, 4, 3, o4, 0, 5),                        # past the last row
                (m, 4, 3, o4, 3, 2),                        # range the wrong way round
                (m, 4, 3, o4, -1, 2),                       # negative start
                (m, 5, 3, o4, 0, 4),                        # source too short
                (m, -1, 3, o4, 0, 0), (m, 4, -3, o4, 0, 0),  # negative shape
                (m, 4, 3, np.zeros(3, np.float32), 0, 4),   # out too short
                (m, 4, 3, np.zeros(4, np.float64), 0, 4),   # out not float32
                (m.astype(np.float64), 4, 3, o4, 0, 4),     # source not float32
                (m, 1 << 62, 1 << 10, o4, 0, 1)):           # rows * cols overflows
        with pytest.raises(ValueError):
            k.sum_rows_f32(*bad)
    with pytest.raises((ValueError, TypeError, BufferError)):
        k.bf16_unary(k.UOP_SQUARE, a, a[::2], 0, 5)  # output not contiguous
    ro = np.zeros(10, np.uint16)
    ro.flags.writeable = False
    with pytest.raises((TypeError, BufferError, ValueError)):
        k.bf16_unary(k.UOP_SQUARE, a, ro, 0, 10)


def test_library_works_without_the_extension():
    code = textwrap.dedent("""
        import sys, importlib.abc
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "runetensor._backend._kernels":
                    raise ImportError("blocked for the test")
        sys.meta_path.insert(0, Block())
        import numpy as np, ml_dtypes
        import runetensor as rt
        from runetensor._backend import _fast
        assert _fast._kernels is None and not _fast.KERNELS
        a = np.ones(200_000, dtype=np.float32)
        from runetensor._backend.numpy_backend import numpy_backend as be
        b = a.astype(ml_dtypes.bfloat16)
        r = be.binary("add", b, b)
        assert (r.astype(np.float32) == (b.astype(np.float32) * 2).astype(ml_dtypes.bfloat16).astype(np.float32)).all()
        for t in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
            x = np.tile(np.arange(256, dtype=np.uint8), 800).view(t)
            y = np.roll(x, 77)
            with np.errstate(all="ignore"):
                for op, f in (("add", np.add), ("div", np.divide), ("maximum", np.maximum)):
                    ref = f(x.astype(np.float32), y.astype(np.float32)).astype(t)
                    assert (be.binary(op, x, y).view(np.uint8) == ref.view(np.uint8)).all(), op
        assert float(be.reduce("sum", a, (0,), False)) == 200_000.0
        m = np.random.default_rng(1).standard_normal((400, 501)).astype(np.float32)
        r = be.reduce("sum", m, (1,), False)  # last axis without the kernels: NumPy's order per row
        assert r.dtype == np.float32 and (r.view(np.uint32) == m.sum(axis=1).view(np.uint32)).all()
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@needs_kernels
def test_rejected_operands_release_their_buffer():
    # an operand refused for its item size or length must not keep a buffer export (and with it
    # a reference to the array) alive
    import sys
    k = _fast._kernels
    bad = np.zeros(4, np.float32)   # 4-byte items: rejected as a bfloat16 operand
    short = np.zeros(3, np.uint8)   # too short for float8 operands of length 10
    o16 = np.zeros(10, np.uint16)
    o8 = np.zeros(10, np.uint8)
    before = sys.getrefcount(bad), sys.getrefcount(short)
    for _ in range(3):
        with pytest.raises(ValueError):
            k.bf16_binary(k.OP_ADD, bad, o16, o16, 0, 10, 0)
        with pytest.raises(ValueError):
            k.f8_binary(0, k.OP_ADD, short, o8, o8, 0, 10, 0)
    assert (sys.getrefcount(bad), sys.getrefcount(short)) == before


@needs_kernels
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 31, 32, 33, 4095, 20000])
def test_philox_kernels_match_the_numpy_stream(n):
    """random_bits and random_uniform from the kernels (AVX2 or portable, chunked over 3 threads) equal
    the NumPy Philox implementation and the contract's composite definition, bit for bit."""
    from runetensor._backend.contract import Backend
    from runetensor import _dtypes as D
    for seed in (0, 1, 0xDEADBEEF12345678, 2 ** 64 - 1):
        for fn in (lambda: be.random_bits(seed, n),
                   lambda: be.random_uniform(seed, n, D.float32),
                   lambda: be.random_uniform(seed, n, D.float64)):
            same_bits(*three(fn))
        same_bits(be.random_uniform(seed, n, D.float64), Backend.random_uniform(be, seed, n, D.float64))
        same_bits(be.random_uniform(seed, n, D.float32), Backend.random_uniform(be, seed, n, D.float32))


@needs_kernels
def test_philox_kernel_arguments_and_counter_carry():
    k = _fast._kernels
    nb = sys.modules["runetensor._backend.numpy_backend"]
    for first in ((1 << 32) - 3, (1 << 34) + 5):  # the block counter's low word wraps inside a vector
        out = np.empty(400, np.uint32)
        k.philox_stream(7, 9, out, 4 * first + 1, 4 * first + 401)
        blocks = np.array([[(first + j) & 0xFFFFFFFF, (first + j) >> 32, 0, 0] for j in range(101)], np.uint32)
        assert (out == nb.philox4x32(blocks, (7, 9)).reshape(-1)[1:401]).all()
    with pytest.raises(ValueError):
        k.philox_stream(1 << 32, 0, np.empty(4, np.uint32), 0, 4)  # key word too wide
    with pytest.raises(ValueError):
        k.philox_stream(0, 0, np.empty(3, np.uint32), 0, 4)  # output too short
    with pytest.raises(ValueError):
        k.philox_uniform(0, 0, np.empty(4, np.float32), 0, 4, True)  # float64 needs 8-byte items
    with pytest.raises(ValueError):
        k.philox_uniform(0, 0, np.empty(4, np.float32), 3, 2, False)  # range the wrong way round


@pytest.fixture(params=["simd", "portable"])
def simd(request):
    """Run with the runtime-chosen AVX2 / F16C loops, and with the portable loops."""
    if not HAVE:
        pytest.skip("compiled kernels not built")
    prev = _fast._kernels.set_simd(request.param == "simd")
    yield request.param
    _fast._kernels.set_simd(prev)


@needs_kernels
def test_portable_and_simd_loops_agree(simd):
    """The Philox stream, the float16 conversions and float16 arithmetic give the same bits with and
    without the AVX2 / F16C loops (NumPy's results are the reference in both cases)."""
    from runetensor import _dtypes as D
    nb = sys.modules["runetensor._backend.numpy_backend"]
    for seed in (0, 2 ** 64 - 1):
        ref = nb._philox_stream((seed & 0xFFFFFFFF, seed >> 32), 2000).reshape(-1)
        same_bits(be.random_bits(seed, 8000), ref)
        same_bits(be.random_uniform(seed, 3001, D.float32),
                  (ref[:3001] >> 8).astype(np.float32) * np.float32(2.0 ** -24))
    k = _fast._kernels
    h = np.arange(1 << 16, dtype=np.uint16)
    wide = np.empty(h.size, np.float32)
    k.f16_to_float32(h, wide, 0, h.size)
    same_bits(wide, h.view(np.float16).astype(np.float32))
    f = np.concatenate([wide, np.nextafter(wide, np.float32(np.inf)), (wide.view(np.uint32) | 0x1000).view(np.float32),
                        np.array([np.nan, -np.nan, 1e6, -1e-9, 65520.0, 65519.0], np.float32)])
    back = np.empty(f.size, np.uint16)
    k.float32_to_f16(f, back, 0, f.size)
    with np.errstate(all="ignore"):
        same_bits(back.view(np.float16), f.astype(np.float16))
    x = np.tile(h.view(np.float16), 2)
    y = np.random.default_rng(1).permutation(x.view(np.uint16)).view(np.float16)
    for op, fn in (("add", np.add), ("mul", np.multiply), ("div", np.divide), ("sub", np.subtract)):
        with np.errstate(all="ignore"):
            same_bits(be.binary(op, x, y), fn(x, y))


@needs_kernels
def test_where_select_arguments_are_checked():
    k = _fast._kernels
    c = np.ones(10, np.bool_)
    x = np.arange(10, dtype=np.float32)
    o = np.empty(10, np.float32)
    k.where_select(c, x, x[:1], o, 0, 10)
    assert (o == x).all()
    for args in ((c, x, x.astype(np.float64), o, 0, 10),          # item sizes differ
                 (c, x, x, o, 0, 11),                             # past the end
                 (c.astype(np.int16), x, x, o, 0, 10),            # condition items not 1 byte
                 (c, x.astype(np.complex128), x.astype(np.complex128), o, 0, 10),  # 16-byte items
                 (c, x, x, o[:5], 0, 10),                         # output too short
                 (c, x, x, o, 5, 4)):                             # range the wrong way round
        with pytest.raises(ValueError):
            k.where_select(*args)


@needs_kernels
@pytest.mark.parametrize("dt", [np.int8, np.float16, np.float32, np.complex64])
def test_strided_copy_tiles(dt):
    """The tile copy of strided 2-d views (transposes, negative and sliced strides), every row range."""
    k = _fast._kernels
    m = np.arange(150 * 97).astype(dt).reshape(150, 97)
    for x in (m.T, m[::-2, 3::2].T, m[::3, ::-1], m.T[5:90, ::7]):
        out = np.empty(x.shape, dt)
        for r0, r1 in ((0, x.shape[0]), (0, 1), (x.shape[0] // 2, x.shape[0])):
            out[...] = 0
            k.strided_copy(x, out, r0, r1)
            assert (out[r0:r1] == x[r0:r1]).all() and (out[r1:] == 0).all()
    with pytest.raises(ValueError):
        k.strided_copy(np.zeros((2, 2, 2), np.float32), np.zeros(8, np.float32), 0, 2)  # not 2-d
    with pytest.raises(ValueError):
        k.strided_copy(m.T, np.zeros(5, dt), 0, 2)  # output too short
    with pytest.raises(ValueError):
        k.strided_copy(m.T, np.zeros(m.size, dt), 0, 98)  # rows past the end
    with pytest.raises(ValueError):
        k.strided_copy(np.zeros((4, 4), np.complex128).T, np.zeros(16, np.complex128), 0, 4)  # 16-byte items


@needs_kernels
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_round_half_away_kernel(dt):
    """The one-pass round (half away from zero) gives the NumPy composite's bits: halves, the largest
    values below 1/2, huge values, NaN, infinities, signed zeros and spread-out random patterns."""
    rng = np.random.default_rng(3)
    u = np.uint32 if dt is np.float32 else np.uint64
    pats = rng.integers(0, np.iinfo(u).max, 200_000, dtype=u, endpoint=True).view(dt)
    below = np.nextafter(dt(0.5), dt(0))
    special = np.array([0.5, -0.5, 1.5, -2.5, below, -below, 0.0, -0.0, np.nan, np.inf, -np.inf,
                        2.0 ** 23 + 1, 2.0 ** 52 + 1, 1e30, -1e30, 4503599627370495.5], dtype=dt)
    x = np.concatenate([pats, special, (np.arange(-5000, 5000) / 4).astype(dt)])
    plain, numpy_fast, kern = three(lambda: be.unary("round", x))
    same_bits(plain, numpy_fast, kern)
    with pytest.raises(ValueError):
        _fast._kernels.round_half_away(np.zeros(4, np.float16), np.zeros(4, np.float16), 0, 4)


@needs_kernels
def test_unaligned_operands():
    """Operands at odd byte offsets (np.frombuffer with an offset) through the kernel-backed ops: no
    fault, and the values of the same ops on aligned copies."""
    n = 20_001
    buf = bytearray(8 * n + 16)

    def at(dt, off=1):
        return np.frombuffer(buf, dtype=np.uint8, count=np.dtype(dt).itemsize * n, offset=off).view(dt)

    f = at(np.float32)
    f[...] = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    fa = f.copy()
    assert not f.flags.aligned
    cond = np.arange(n) % 3 == 0
    for op, ref in ((lambda a: be.unary("round", a), lambda a: be.unary("round", a.copy())),
                    (lambda a: be.where(cond, a, a[:1].copy().reshape(())), lambda a: np.where(cond, a, a[0])),
                    (lambda a: be.reduce("max", a, (0,), False), lambda a: np.max(a)),
                    (lambda a: be.copy(a.reshape(-1)[:20000].reshape(100, 200).T),
                     lambda a: a[:20000].reshape(100, 200).T.copy())):
        same_bits(np.asarray(op(f)), np.asarray(ref(fa)))
    np.testing.assert_allclose(be.reduce("sum", f, (0,), False), np.sum(fa, dtype=np.float64), rtol=1e-5)
    for dt in (np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn):
        h = at(dt, 3)
        h[...] = fa.astype(dt)
        ha = h.copy()
        for op in ("add", "mul"):
            same_bits(be.binary(op, h, h), be.binary(op, ha, ha))
        same_bits(be.unary("sqrt", h), be.unary("sqrt", ha))
