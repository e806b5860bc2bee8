"""The NumPy backend's fast paths give the same answers as its plain paths.

Each test computes a primitive twice, with ``_fast.ENABLED`` off (the plain
path) and on, with the size thresholds lowered so that small inputs take the
fast paths (threads, chunk boundaries, buffer reuse, blocking).  Results must
be bit-identical (same dtype, shape and bytes), except float sums, which add
in a different order: they must agree within the documented bound
``|fast - plain| <= 2 * (n_block + log2(n) + 2) * eps * sum(|x|)`` (see
``docs/performance.md``).  Nothing here is timed.
"""
from __future__ import annotations

import math
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import runetensor as rt
from runetensor._backend import _parallel
from runetensor._backend import _fast
from runetensor._backend.numpy_backend import numpy_backend as be


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch):
    """Make small inputs take the fast paths (many small chunks), on 3 threads."""
    for name, v in (("PAR_MIN", 64), ("PAR_MIN_CHEAP", 64), ("RED_MIN", 64), ("LOWP_MIN", 64), ("LOWP_CHUNK", 192),
                    ("LOWP_GROUP", 2), ("ELEM_CHUNK", 128), ("RED_CHUNK", 256), ("TCOPY_MIN", 16), ("TCOPY_BLOCK", 8),
                    ("SORT_MIN", 2), ("ALIGN", 64), ("WHERE_MIN", 8)):
        monkeypatch.setattr(_fast, name, v)
    monkeypatch.setattr(_fast, "_LANES", 16)
    monkeypatch.setattr(_fast, "_BLOCK_ROWS", 4)
    monkeypatch.setattr(_fast.buffer_pool, "min_bytes", 64)
    nb = sys.modules["runetensor._backend.numpy_backend"]  # the module (the package attribute is the object)
    monkeypatch.setattr(nb, "_FAST_MIN", 64)
    old = rt.get_num_threads()
    rt.set_num_threads(3)
    yield
    rt.set_num_threads(old)
    _fast.ENABLED = True


def both(fn):
    """(plain result, fast result)."""
    _fast.ENABLED = False
    try:
        plain = fn()
    finally:
        _fast.ENABLED = True
    return plain, fn()


def assert_same(plain, fast):
    assert type(plain) is type(fast)
    if isinstance(plain, tuple):
        for p, f in zip(plain, fast):
            assert_same(p, f)
        return
    assert plain.dtype == fast.dtype
    assert plain.shape == fast.shape
    assert np.ascontiguousarray(plain).tobytes() == np.ascontiguousarray(fast).tobytes()


SIZES = st.sampled_from([1, 63, 64, 65, 127, 200, 257, 1000, 1031])
FLOATS = dict(allow_nan=True, allow_infinity=True, width=32)


def _data(rng, n, dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dt)
    x = rng.standard_normal(n) * 10
    if dt.kind == "c":
        x = x + 1j * rng.standard_normal(n)
    x = x.astype(dt)
    if n > 10 and dt.kind == "f":
        x[3], x[5], x[7], x[9] = np.nan, np.inf, -np.inf, -0.0
    return x


# ---------------------------------------------------------------------------
# Elementwise: threads, chunk boundaries, buffer reuse
# ---------------------------------------------------------------------------
@given(n=SIZES, dt=st.sampled_from(["float32", "float64", "int32", "int64", "uint8", "bool", "complex64",
                                    "float16", "int8"]),
       op=st.sampled_from(["add", "sub", "mul", "maximum", "minimum", "lt", "eq", "ne", "fmax",
                           "logical_and", "bitwise_xor", "pymod", "floordiv", "div", "mod", "pow", "copysign"]),
       seed=st.integers(0, 3))
def test_binary_same_shape(n, dt, op, seed):
    rng = np.random.default_rng(seed)
    x, y = _data(rng, n, dt), _data(rng, n, dt)
    try:
        plain, fast = both(lambda: be.binary(op, x, y))
    except TypeError:  # an op the dtype does not support: both paths must refuse
        with pytest.raises(TypeError):
            be.binary(op, x, y)
        return
    assert_same(plain, fast)


@given(n=SIZES, dt=st.sampled_from(["float32", "float64", "int16", "uint32"]),
       scalar=st.sampled_from([2, -3, 0.5, 1e30, True]), left=st.booleans())
def test_binary_scalar(n, dt, scalar, left):
    x = _data(np.random.default_rng(n), n, dt)
    for op in ("add", "mul", "sub", "maximum", "gt"):
        args = (scalar, x) if left else (x, scalar)
        try:
            plain, fast = both(lambda: be.binary(op, *args))
        except (OverflowError, TypeError) as e:
            with pytest.raises(type(e)):
                be.binary(op, *args)
            continue
        assert_same(plain, fast)


@given(rows=st.sampled_from([1, 2, 3, 7, 40]), cols=st.sampled_from([1, 5, 64, 70]),
       dt=st.sampled_from(["float32", "float64", "int32"]), kind=st.sampled_from(["row", "col", "zero_d"]))
def test_binary_broadcast(rows, cols, dt, kind):
    rng = np.random.default_rng(rows * cols)
    x = _data(rng, rows * cols, dt).reshape(rows, cols)
    y = {"row": _data(rng, cols, dt), "col": _data(rng, rows, dt).reshape(rows, 1),
         "zero_d": np.asarray(_data(rng, 1, dt)[0])}[kind]
    for op in ("add", "mul", "lt"):
        assert_same(*both(lambda: be.binary(op, x, y)))
        assert_same(*both(lambda: be.binary(op, y, x)))


@given(n=SIZES, dt=st.sampled_from(["float32", "float64", "float16", "complex128"]),
       op=st.sampled_from(["sin", "cos", "exp", "log", "sqrt", "tanh", "neg", "abs", "isnan", "floor",
                           "expm1", "atan", "square", "sign", "recip", "trunc", "ceil", "rint", "isinf",
                           "signbit", "round"]))
def test_unary(n, dt, op):
    x = _data(np.random.default_rng(n), n, dt)
    try:
        plain, fast = both(lambda: be.unary(op, x))
    except TypeError:
        return
    assert_same(plain, fast)


def test_non_contiguous_and_object_fall_back():
    x = np.arange(600, dtype=np.float32).reshape(20, 30)
    assert_same(*both(lambda: be.binary("add", x.T, x.T)))
    assert_same(*both(lambda: be.binary("add", x[:, ::2], 1.5)))
    assert_same(*both(lambda: be.unary("sin", x[::-1])))
    o = np.array([1, 2, 3] * 50, dtype=object)
    assert (be.binary("add", o, o) == o * 2).all()


def test_through_the_frontend():
    a = rt.asarray(np.linspace(-3, 3, 1000, dtype=np.float32))
    b = rt.asarray(np.linspace(1, 2, 1000, dtype=np.float32))
    _fast.ENABLED = False
    plain = [rt.to_numpy(e).copy() for e in (a + b, a * 2.0, a * b + b * rt.sin(a), rt.exp(a) > b)]
    _fast.ENABLED = True
    fast = [rt.to_numpy(e) for e in (a + b, a * 2.0, a * b + b * rt.sin(a), rt.exp(a) > b)]
    for p, f in zip(plain, fast):
        assert_same(p, f)


def test_one_thread_same_result():
    x = _data(np.random.default_rng(7), 1000, "float32")
    rt.set_num_threads(1)
    one = be.unary("exp", x)
    rt.set_num_threads(2)
    assert_same(one, be.unary("exp", x))


# ---------------------------------------------------------------------------
# Buffer reuse
# ---------------------------------------------------------------------------
def test_pool_never_hands_out_a_live_buffer():
    pool = _fast.BufferPool(max_bytes=1 << 20, min_bytes=64)
    a = pool.empty((100,), np.float64)
    a[:] = 1
    v = a[10:20]  # a view keeps the buffer alive
    del a
    b = pool.empty((100,), np.float64)
    assert not np.shares_memory(b, v)
    b[:] = 2
    assert (v == 1).all()
    del v
    c = pool.empty((50,), np.int64)  # same byte size (800), now free: reused
    d = pool.empty((100,), np.float64)
    assert not np.shares_memory(c, d) and not np.shares_memory(b, c) and not np.shares_memory(b, d)


def test_pool_reuses_freed_buffer_and_respects_limits():
    pool = _fast.BufferPool(max_bytes=2000, min_bytes=64, per_size=2)
    a = pool.empty((100,), np.float64)
    addr = a.__array_interface__["data"][0]
    del a
    b = pool.empty((10, 10), np.float64)
    assert b.__array_interface__["data"][0] == addr and b.shape == (10, 10) and b.flags.c_contiguous
    big = pool.empty((1000,), np.float64)  # over max_bytes: an ordinary array
    assert big.shape == (1000,)
    small = pool.empty((2,), np.float64)  # under min_bytes
    assert small.shape == (2,)
    pool.clear()


def test_results_through_the_pool_do_not_alias():
    x = np.arange(1000, dtype=np.float64)
    r1 = be.binary("add", x, 1.0)
    r2 = be.binary("add", x, 2.0)
    assert not np.shares_memory(r1, r2)
    assert (r1 == x + 1).all() and (r2 == x + 2).all()
    t = rt.asarray(x)
    keep = (t + 1.0)[5:]  # a view of a pooled result
    for _ in range(3):
        _ = t * 3.0
    assert (rt.to_numpy(keep) == x[5:] + 1).all()


# ---------------------------------------------------------------------------
# Low-precision floats
# ---------------------------------------------------------------------------
LOWP = [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]


@given(n=SIZES, dt=st.sampled_from(LOWP),
       op=st.sampled_from(["add", "sub", "mul", "div", "pow", "maximum", "lt", "eq", "atan2"]),
       scalar=st.sampled_from([None, 0.1, 3, 1e6]))
def test_lowp_binary(n, dt, op, scalar):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 8).astype(np.float32)
    if n > 10:
        x[1], x[2], x[3] = np.nan, np.inf, 1e30
    x = x.astype(dt)
    y = (rng.standard_normal(n) * 8).astype(dt) if scalar is None else scalar
    assert_same(*both(lambda: be.binary(op, x, y)))
    assert_same(*both(lambda: be.binary(op, y, x) if scalar is not None else be.binary(op, y, x)))


@given(n=SIZES, dt=st.sampled_from(LOWP),
       op=st.sampled_from(["sin", "exp", "sqrt", "neg", "abs", "isnan", "isinf", "isfinite", "tanh", "sign",
                           "recip", "floor", "trunc", "rint", "round", "signbit"]))
def test_lowp_unary(n, dt, op):
    x = (np.random.default_rng(n).standard_normal(n) * 4).astype(np.float32).astype(dt)
    assert_same(*both(lambda: be.unary(op, x)))


def test_lowp_every_bfloat16_value():
    bits = np.arange(1 << 16, dtype=np.uint16)
    x = bits.view(ml_dtypes.bfloat16)
    y = bits[::-1].copy().view(ml_dtypes.bfloat16)
    for op in ("add", "mul", "div", "sub"):
        assert_same(*both(lambda: be.binary(op, x, y)))


NB = sys.modules["runetensor._backend.numpy_backend"]
F16_BITS = np.arange(1 << 16, dtype=np.uint16)


@pytest.mark.parametrize("op", sorted(NB._F16_UNARY))
def test_float16_pipeline_every_value(op):
    """float16 ops through the float32 pipeline give NumPy's own float16 loops' bits, for every value."""
    x = np.tile(F16_BITS.view(np.float16), 2)
    with np.errstate(all="ignore"):
        ref = NB._F16_UNARY[op](x)
    plain, fast = both(lambda: be.unary(op, x))
    assert_same(ref, plain)
    assert_same(ref, fast)


@pytest.mark.parametrize("op", sorted(NB._F16_BINARY))
def test_float16_pipeline_pairs(op):
    """Binary float16 ops through the pipeline: every value against specials and shuffled values."""
    special = np.array([0, 0x8000, 1, 0x8001, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7C01, 0x7E00,
                        0xFE00, 0x7FFF, 0x0400, 0x03FF], np.uint16)
    x = np.tile(F16_BITS, len(special)).view(np.float16)
    y = np.repeat(special, 1 << 16).view(np.float16)
    z = np.random.default_rng(0).permutation(x.view(np.uint16)).view(np.float16)
    for a, b in ((x, y), (y, x), (x, z)):
        with np.errstate(all="ignore"):
            ref = NB._BINARY[op](a, b)
        plain, fast = both(lambda: be.binary(op, a, b))
        assert_same(ref, plain)
        assert_same(ref, fast)
    assert_same(*both(lambda: be.binary(op, x, 0.1)))  # a Python scalar: NumPy's own path (rounded to float16)


@pytest.mark.parametrize("dt", [np.float16] + LOWP)
def test_neg_abs_are_sign_bit_operations(dt):
    """neg/abs flip/clear the sign bit only (NaN payloads kept): NumPy's float16 and ml_dtypes' own loops."""
    u = np.uint16 if np.dtype(dt).itemsize == 2 else np.uint8
    bits = np.arange(1 << (8 * np.dtype(u).itemsize), dtype=u)
    top = u(0x80) << u(8 * (np.dtype(u).itemsize - 1))
    x = np.tile(bits, 3).view(dt)
    for op, ref, native in (("neg", bits ^ top, np.negative), ("abs", bits & u(~top), np.absolute)):
        want = np.tile(ref, 3).view(dt)
        for args in ((x,), (x[::-2],), (x.reshape(3, -1)[:, 1:],), (x[7].reshape(()),)):
            plain, fast = both(lambda: be.unary(op, *args))
            exp = np.asarray(native(args[0]))
            assert_same(exp, plain)
            assert_same(exp, fast)
        assert_same(want, be.unary(op, x))
        o = np.empty_like(x)
        assert be.unary(op, x, out=o) is o  # the out= form gives the same bits
        assert_same(want, o)


@pytest.mark.parametrize("dt", [np.float16] + LOWP)
@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite", "signbit"])
def test_float_tests_read_off_the_bits(dt, op):
    """isnan/isinf/isfinite/signbit of the 2- and 1-byte floats from their bits: the float32 tests' answers
    for every value, on views and 0-d arrays too, plain and fast."""
    u = np.uint16 if np.dtype(dt).itemsize == 2 else np.uint8
    x = np.tile(np.arange(1 << (8 * np.dtype(u).itemsize), dtype=u), 3).view(dt)
    ref = getattr(np, op)(x.astype(np.float32))
    for a, r in ((x, ref), (x[::-3], ref[::-3]), (x.reshape(3, -1)[:, 1:], ref.reshape(3, -1)[:, 1:]),
                 (x[5].reshape(()), ref[5].reshape(()))):
        plain, fast = both(lambda: be.unary(op, a))
        assert_same(np.asarray(r), plain)
        assert_same(np.asarray(r), fast)


@given(shape=st.sampled_from([(300,), (200, 3), (50, 2, 5), (1, 4)]),
       ishape=st.sampled_from([(700,), (30, 40), (65,), (0,)]),
       dt=st.sampled_from(["float32", "int8", "complex128", "bool"]), seed=st.integers(0, 3))
def test_gather_rows(shape, ishape, dt, seed):
    """Index arrays on axis 0 (full slices elsewhere) are gathered in threaded chunks: x[key]'s values."""
    rng = np.random.default_rng(seed)
    x = _data(rng, math.prod(shape), dt).reshape(shape)
    idx = rng.integers(0, shape[0], ishape).astype(np.int64)
    key = (idx,) + tuple(slice(0, d, 1) for d in shape[1:])
    plain, fast = both(lambda: be.gather(x, key))
    assert_same(x[key], plain)
    assert_same(plain, fast)
    if len(shape) > 1:  # a partial slice: NumPy's own path
        k2 = (idx, slice(0, 1, 1)) + tuple(slice(0, d, 1) for d in shape[2:])
        assert_same(*both(lambda: be.gather(x, k2)))
    t = rt.from_numpy(x)
    assert_same(x[idx], rt.to_numpy(t[rt.from_numpy(idx)]))


@given(n=SIZES, dt=st.sampled_from(["float32", "float64", "int8", "int16", "uint64", "complex64", "bool",
                                    "float16", "complex128"]),
       form=st.sampled_from(["aa", "as", "sa", "ss"]), seed=st.integers(0, 3))
def test_where(n, dt, form, seed):
    """where through the compiled select (1/2/4/8-byte items, scalars broadcast): np.where's bits."""
    rng = np.random.default_rng(seed)
    c = rng.random(n) > 0.5
    x, y = _data(rng, n, dt), _data(rng, n, dt)
    if form[0] == "s":
        x = x[:1].reshape(())
    if form[1] == "s":
        y = y[:1].reshape(())
    plain, fast = both(lambda: be.where(c, x, y))
    assert_same(np.where(c, x, y), plain)
    assert_same(plain, fast)


@given(n=SIZES, dt=st.sampled_from(["float32", "float64", "int32", "uint8", "float16"]),
       bounds=st.sampled_from(["both", "lo", "hi"]), seed=st.integers(0, 3))
def test_clip(n, dt, bounds, seed):
    rng = np.random.default_rng(seed)
    x = _data(rng, n, dt)
    lo = np.asarray(_data(rng, 1, dt)[0]) if bounds != "hi" else None
    hi = np.asarray(_data(rng, 1, dt)[0]) if bounds != "lo" else None
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    plain, fast = both(lambda: be.clip(x, lo, hi))
    assert_same(np.asarray(np.clip(x, lo, hi)), plain)
    assert_same(plain, fast)


@given(n=SIZES, src=st.sampled_from(["float32", "float64", "complex64", "float16", "int64", "uint8", "bool"]),
       dst=st.sampled_from(["int32", "int8", "uint16", "int64", "float32", "float64", "bool"]), seed=st.integers(0, 3))
def test_cast(n, src, dst, seed):
    """Casts through the threaded / chunked paths (floats to integers with NaN and infinities) equal the plain path."""
    rng = np.random.default_rng(seed)
    x = _data(rng, n, src)
    if x.dtype.kind == "f" and n > 5:
        x[1], x[2], x[3] = np.nan, np.inf, -np.inf
    assert_same(*both(lambda: be.cast(x, getattr(rt, dst))))


@given(args=st.sampled_from([(0, 1000, 1), (5, -700, -3), (0.1, 300.0, 0.1), (-1.5, 200.0, 0.7),
                             (1e9, 1e9 + 1.0, 1e-3), (-0.0, 500.0, 1.0), (0.0, -500.0, -1.0), (3, 4, 1), (2, 2, 1)]),
       dt=st.sampled_from(["float32", "float64", "int32", "int64", "uint16", "float16", "int8"]))
def test_arange(args, dt):
    """arange filled in threaded chunks: NumPy's float64 arange values (start, start + step, then
    start + i * delta), cast."""
    d = getattr(rt, dt)
    if d.kind in "iu" and not all(isinstance(v, int) for v in args):
        return
    if d.kind == "u" and (args[0] < 0 or args[1] < 0):
        return
    assert_same(*both(lambda: be.arange(*args, d)))


@given(shape=st.sampled_from([(1000,), (7, 150), (150, 7), (3, 5, 70), (64, 64)]),
       dt=st.sampled_from(["float32", "float64", "int32", "int8", "uint16", "float16"]),
       which=st.sampled_from(["all", "lead", "trail"]), op=st.sampled_from(["max", "min"]),
       special=st.sampled_from(["none", "nan", "zeros", "ties"]), keepdims=st.booleans(), seed=st.integers(0, 3))
def test_max_min(shape, dt, which, op, special, keepdims, seed):
    """max/min split over threads: the plain path's values (a zero or NaN result goes the plain way)."""
    rng = np.random.default_rng(seed)
    x = _data(rng, math.prod(shape), dt).reshape(shape)
    if x.dtype.kind == "f":
        flat = x.reshape(-1)
        if special == "nan":
            flat[rng.integers(0, flat.size, 3)] = np.nan
        elif special == "zeros":
            flat[:] = np.where(rng.random(flat.size) < 0.5, -0.0, 0.0)
        elif special == "ties":
            flat[:] = np.round(flat / 10)
    axes = {"all": tuple(range(x.ndim)), "lead": (0,), "trail": (x.ndim - 1,)}[which]
    assert_same(*both(lambda: be.reduce(op, x, axes, keepdims)))


@given(shape=st.sampled_from([(1000,), (7, 150), (150, 7), (3, 5, 70)]),
       dt=st.sampled_from(["float32", "float64", "int32", "int8", "uint16"]),
       op=st.sampled_from(["argmax", "argmin"]), special=st.sampled_from(["none", "nan", "ties"]),
       seed=st.integers(0, 3))
def test_argmax_argmin(shape, dt, op, special, seed):
    """argmax/argmin along the last axis, split over threads: NumPy's first occurrence, NaN first."""
    rng = np.random.default_rng(seed)
    x = _data(rng, math.prod(shape), dt).reshape(shape)
    flat = x.reshape(-1)
    if special == "ties":
        flat[:] = flat // 7 if x.dtype.kind != "f" else np.round(flat / 10)
    elif special == "nan" and x.dtype.kind == "f":
        flat[rng.integers(0, flat.size, 2)] = np.nan
    plain, fast = both(lambda: be.arg_reduce(op, x, x.ndim - 1, False))
    assert_same(np.asarray(plain).astype(np.int64), np.asarray(fast).astype(np.int64))
    assert_same(np.asarray(getattr(np, op)(x, axis=-1)).astype(np.int64), np.asarray(fast).astype(np.int64))


@given(n=SIZES, dt=st.sampled_from(["float16", "bfloat16", "float8_e4m3", "float8_e5m2"]), seed=st.integers(0, 3))
def test_low_precision_casts(n, dt, seed):
    """float32 <-> float16/bfloat16/float8 casts by the compiled conversions: the casts' bits, both ways."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 6, n)).astype(np.float32)
    if n > 8:
        x[:6] = [np.nan, -np.inf, np.inf, -0.0, 1e38, 70000.0]
    d = getattr(rt, dt)
    down = both(lambda: be.cast(x, d))
    assert_same(*down)
    assert_same(*both(lambda: be.cast(down[0], rt.float32)))


@given(n=SIZES, dt=st.sampled_from(["float32", "int8", "complex128", "bool", "float16"]), axis=st.sampled_from([0, 1]),
       seed=st.integers(0, 3))
def test_assign_and_concatenate(n, dt, axis, seed):
    """Large contiguous assignments (a concatenation's parts) copied in threaded chunks: the same result."""
    rng = np.random.default_rng(seed)
    parts = [_data(rng, n * 2, dt).reshape(2, n) for _ in range(3)]
    ts = [rt.from_numpy(p) for p in parts]
    plain, fast = both(lambda: rt.to_numpy(rt.concatenate(ts, axis=axis)))
    assert_same(np.concatenate(parts, axis=axis), plain)
    assert_same(plain, fast)
    dst = np.zeros((2, n), parts[0].dtype)
    be.assign(dst, parts[1])
    assert_same(parts[1], dst)


# ---------------------------------------------------------------------------
# Sums
# ---------------------------------------------------------------------------
def _sum_bound(x, axes, n_red):
    eps = np.finfo(x.dtype).eps if x.dtype.kind == "f" else np.finfo(x.real.dtype).eps
    mag = np.sum(np.abs(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)), axis=axes)
    return 2 * (_fast._BLOCK_ROWS + math.log2(max(n_red, 2)) + 2) * eps * mag


@given(shape=st.sampled_from([(1000,), (7, 150), (150, 7), (3, 5, 70), (64, 64), (5, 1, 300)]),
       dt=st.sampled_from(["float32", "float64", "int32", "int8", "uint16", "int64", "complex64"]),
       which=st.sampled_from(["all", "first", "last", "lead2", "trail2", "middle"]), keepdims=st.booleans(),
       seed=st.integers(0, 3))
def test_sum(shape, dt, which, keepdims, seed):
    nd = len(shape)
    axes = {"all": tuple(range(nd)), "first": (0,), "last": (nd - 1,), "lead2": tuple(range(min(2, nd))),
            "trail2": tuple(range(max(0, nd - 2), nd)), "middle": (1,) if nd == 3 else (0,)}[which]
    x = _data(np.random.default_rng(seed), math.prod(shape), dt).reshape(shape)
    if x.dtype.kind == "f":
        x = np.where(np.isfinite(x), x, 1.5).astype(dt)
    plain, fast = both(lambda: be.reduce("sum", x, axes, keepdims))
    assert plain.dtype == fast.dtype and plain.shape == fast.shape
    if x.dtype.kind in "iu":  # wrap-around addition is associative: exact
        assert_same(plain, fast)
    else:
        n_red = math.prod(shape[a] for a in axes)
        bound = _sum_bound(x, axes, n_red)
        diff = np.abs(plain.astype(np.complex128) - fast.astype(np.complex128))
        assert (diff <= np.reshape(bound, diff.shape) + 1e-30).all()
    if axes == tuple(range(nd - len(axes), nd)) and len(axes) < nd and x.dtype.kind == "f" and len(axes) == 1 \
            and not (_fast.KERNELS and x.dtype == np.float32):  # (compiled float32 rows: lane order, bound above)
        assert_same(plain, fast)  # trailing-axis sums split only the kept rows: bit-identical


def test_sum_special_values_and_large_1d():
    x = np.ones(10_000, np.float32)
    x[17] = np.nan
    plain, fast = both(lambda: be.reduce("sum", x, (0,), False))
    assert np.isnan(plain) and np.isnan(fast)
    x = np.full(100_000, 0.1, np.float32)
    plain, fast = both(lambda: be.reduce("sum", x, (0,), False))
    assert abs(float(fast) - 10_000.0) <= abs(float(plain) - 10_000.0) + 0.01


@given(shape=st.sampled_from([(1000,), (7, 150), (150, 7), (64, 64)]),
       dt=st.sampled_from([np.float16, ml_dtypes.bfloat16]), which=st.sampled_from(["all", "lead", "trail"]),
       seed=st.integers(0, 3))
def test_low_precision_sum(shape, dt, which, seed):
    """float16/bfloat16 sums: converted by the kernels, summed in float32 on the fast path, rounded
    once; within one unit in the last place of the result (plus the float32 bound) of the plain path."""
    x = (np.random.default_rng(seed).standard_normal(math.prod(shape)) * 4).astype(dt).reshape(shape)
    axes = {"all": tuple(range(x.ndim)), "lead": (0,), "trail": (x.ndim - 1,)}[which]
    plain, fast = both(lambda: be.reduce("sum", x, axes, False))
    assert plain.dtype == fast.dtype == x.dtype and plain.shape == fast.shape
    p32, f32 = plain.astype(np.float32), fast.astype(np.float32)
    ulp = np.abs(np.spacing(p32.astype(dt).astype(np.float32))) if dt is np.float16 else \
        np.abs(p32) * 2.0 ** -7 + 1e-30
    mag = np.sum(np.abs(x.astype(np.float64)), axis=axes)
    assert np.all(np.abs(p32 - f32) <= ulp + 2 * (16 + math.log2(x.size) + 2) * 2.0 ** -23 * mag)


# ---------------------------------------------------------------------------
# Copies
# ---------------------------------------------------------------------------
@given(r=st.sampled_from([1, 3, 8, 17, 64, 100, 130]), c=st.sampled_from([1, 5, 8, 33, 64, 70]),
       dt=st.sampled_from(["float32", "float64", "int8", "complex128", "bool", "float16", "complex64"]),
       view=st.sampled_from(["T", "T_slice", "T_neg", "plain", "slice"]))
def test_copy_and_contiguous(r, c, dt, view):
    base = _data(np.random.default_rng(r * c), r * c * 4, dt).reshape(2 * r, 2 * c)
    x = {"T": base.T, "T_slice": base[::2, 1::2].T, "T_neg": base[::-1, ::-2].T, "plain": base,
         "slice": base[1:, :c]}[view]
    for prim in (be.copy, be.contiguous):
        plain, fast = both(lambda: prim(x))
        assert_same(plain, fast)
        assert fast.flags.c_contiguous
        if prim is be.copy:
            assert not np.shares_memory(fast, base)


# ---------------------------------------------------------------------------
# Stable argsort / sort
# ---------------------------------------------------------------------------
@given(shape=st.sampled_from([(300,), (2,), (17, 40), (40, 17), (3, 4, 50)]), axis=st.integers(-3, 2),
       dt=st.sampled_from(["float32", "float16", "int32", "int8", "uint32", "uint16", "bool", "int16",
                           "float64", "int64"]),
       descending=st.booleans(), seed=st.integers(0, 3))
def test_argsort_and_sort(shape, axis, dt, descending, seed):
    if not -len(shape) <= axis < len(shape):
        axis = -1
    rng = np.random.default_rng(seed)
    x = _data(rng, math.prod(shape), dt)
    if x.dtype.kind == "f":
        x = np.round(x)  # many ties
        if x.size > 20:
            x[11], x[13], x[15] = np.nan, -np.nan, 0.0
    x = x.reshape(shape)
    assert_same(*both(lambda: be.argsort(x, axis, descending)))
    assert_same(*both(lambda: be.sort(x, axis, descending)))


def test_argsort_nan_payloads_and_signed_zero():
    bits = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x80000000, 0x00000000, 0x3F800000, 0xFF800000,
                     0x7F800000, 0x7FC00001, 0x80000000] * 30, dtype=np.uint32)
    x = bits.view(np.float32)
    for d in (False, True):
        assert_same(*both(lambda: be.argsort(x, 0, d)))
        assert_same(*both(lambda: be.sort(x, 0, d)))


def test_sort_frontend_bfloat16():
    x = rt.asarray(np.round(np.random.default_rng(3).standard_normal(500) * 4).astype(ml_dtypes.bfloat16))
    _fast.ENABLED = False
    pv, pi = (rt.to_numpy(e).copy() for e in rt.sort(x))
    _fast.ENABLED = True
    fv, fi = (rt.to_numpy(e) for e in rt.sort(x))
    assert_same(pv, fv)
    assert_same(pi, fi)


# ---------------------------------------------------------------------------
# The thread pool
# ---------------------------------------------------------------------------
def test_set_num_threads_errors():
    with pytest.raises(ValueError):
        rt.set_num_threads(0)
    with pytest.raises(TypeError):
        rt.set_num_threads(1.5)
    with pytest.raises(TypeError):
        rt.set_num_threads(True)


def test_parallel_for_results_and_errors():
    assert _parallel.parallel_for(lambda i: i * 10, 5) == [0, 10, 20, 30, 40]

    def boom(i):
        if i == 2:
            raise KeyError("chunk 2")
        return i
    with pytest.raises(KeyError):
        _parallel.parallel_for(boom, 4)
    # nested calls inside workers run serially (no deadlock)
    assert _parallel.parallel_for(lambda i: sum(_parallel.parallel_for(lambda j: j, 3)), 4) == [3, 3, 3, 3]


def test_chunk_ranges_cover_range():
    for n in (0, 1, 5, 64, 65, 1000):
        for chunk in (1, 3, 64, 100, 5000):
            for align in (1, 64):
                r = _parallel.chunk_ranges(n, chunk, align)
                assert r[0][0] == 0 and r[-1][1] == n
                assert all(a[1] == b[0] for a, b in zip(r, r[1:]))
                assert all(lo % align == 0 for lo, _ in r)


def test_sum_does_not_depend_on_thread_count():
    x = np.random.default_rng(5).standard_normal(5000).astype(np.float32)
    m = x.reshape(50, 100)
    results = []
    for nt in (1, 2, 3):
        rt.set_num_threads(nt)
        results.append([be.reduce("sum", x, (0,), False), be.reduce("sum", m, (0,), False),
                        be.reduce("sum", m, (1,), True)])
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert_same(a, b)


def test_busy_machine_runs_serially(monkeypatch):
    monkeypatch.setattr(_parallel, "_auto", True)
    monkeypatch.setattr(_parallel, "_load_checked", [-1.0, False])
    monkeypatch.setattr(_parallel, "_stat_ok", [False])  # no /proc/stat: the load average decides
    monkeypatch.setattr(_parallel.os, "getloadavg", lambda: (100.0, 100.0, 100.0))
    import threading
    names = _parallel.parallel_for(lambda i: threading.current_thread().name, 6)
    assert set(names) == {threading.current_thread().name}
    x = np.arange(1000, dtype=np.float32)
    assert_same(be.unary("sin", x), np.sin(x))


# ---------------------------------------------------------------------------
# Operator dispatch: the dunders' shortcuts agree with the general binary_op
# ---------------------------------------------------------------------------
_DUNDERS = [("__add__", "add", False), ("__sub__", "sub", False), ("__mul__", "mul", False),
            ("__truediv__", "truediv", False), ("__lt__", "lt", False), ("__le__", "le", False),
            ("__gt__", "gt", False), ("__ge__", "ge", False), ("__eq__", "eq", False), ("__ne__", "ne", False),
            ("__radd__", "add", True), ("__rsub__", "sub", True), ("__rmul__", "mul", True),
            ("__rtruediv__", "truediv", True)]


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001  (the exception type is the outcome)
        return type(e)
    h = rt.to_numpy(r)
    return (r.dtype, r.shape, h.tolist() if h.dtype.kind == "O" else h.tobytes())


@given(dt=st.sampled_from([rt.float32, rt.float64, rt.float16, rt.bfloat16, rt.int8, rt.int32, rt.uint8,
                           rt.uint64, rt.bool, rt.complex64, rt.int4]),
       other=st.sampled_from(["same", "bcast", "bad_shape", "other_dtype", 2, -1, 300, 2 ** 70, 0.5, True,
                              1 + 2j, float("nan"), "str"]),
       which=st.sampled_from(_DUNDERS))
def test_operator_shortcuts_match_binary_op(dt, other, which):
    from runetensor._tensor import binary_op
    name, op, reflected = which
    x = rt.asarray(np.arange(6).reshape(2, 3) % 3, dtype=dt)
    o = {"same": lambda: rt.asarray(np.arange(6).reshape(2, 3) % 2 + 1, dtype=dt),
         "bcast": lambda: rt.asarray(np.array([1, 2, 1]), dtype=dt),
         "bad_shape": lambda: rt.asarray(np.ones(4), dtype=dt),
         "other_dtype": lambda: rt.asarray(np.ones(3), dtype=rt.float64)}.get(other, lambda: other)()
    via_dunder = _outcome(lambda: getattr(x, name)(o))
    general = _outcome(lambda: binary_op(op, o, x, name) if reflected else binary_op(op, x, o, name))
    assert via_dunder == general
