"""Tensor's operators in C (runetensor/_backend/_dispatch.c) give exactly what the Python methods give.

Every case runs twice: with the C descriptors installed and with the Python methods
(``_fastops.set_enabled(False)``), and compares the result's type, DType, shape and bytes, or the
exception's type and message.  Values are also checked against NumPy where the case is plain.
"""
import operator
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import runetensor as rt
from runetensor._backend import _fastops

pytestmark = pytest.mark.skipif(not _fastops._C, reason="the _dispatch extension is not built")

_BINOPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.lt, operator.le,
           operator.gt, operator.ge, operator.eq, operator.ne]
_DTYPES = ["float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "bool", "float16", "bfloat16", "complex64", "complex128", "float8_e4m3", "int4"]


def _outcome(fn, *args):
    """What ``fn(*args)`` gives: ("ok", type, dtype, shape, handle type, dtype, strides, data address if
    it views an argument's memory, bytes) or ("raise", type, message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(*args)
        except Exception as e:  # noqa: BLE001 - the comparison is the point
            return ("raise", type(e), str(e))
    if not isinstance(r, rt.Tensor):
        return ("ok", type(r), r)
    h = r._data
    views = any(isinstance(a, rt.Tensor) and np.shares_memory(h, a._data) for a in args)
    return ("ok", type(r), r.dtype, r.shape, type(h), h.dtype, h.strides, h.__array_interface__["data"] if views else 0,
            np.ascontiguousarray(h).tobytes())


def _both(fn, *args):
    _fastops.set_enabled(False)
    try:
        py = _outcome(fn, *args)
    finally:
        _fastops.set_enabled(True)
    c = _outcome(fn, *args)
    return c, py


def _same(fn, *args):
    c, py = _both(fn, *args)
    return c == py


def _tensor(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    vals = rng.integers(-3, 4, size=shape).astype(np.float64) * 0.75
    if dtype == "bool":
        vals = vals > 0
    elif dtype.startswith("uint") or dtype == "int4":
        vals = np.abs(vals).round()
    elif dtype.startswith("int"):
        vals = vals.round()
    return rt.asarray(vals, dtype=getattr(rt, dtype))


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("op", _BINOPS, ids=lambda f: f.__name__)
def test_tensor_tensor_matches_python_path(op, dtype):
    for sa, sb in [((8,), (8,)), ((), ()), ((3, 4), (4,)), ((0,), (0,)), ((2, 3), (3, 2)), ((5,), ())]:
        a, b = _tensor(dtype, sa, 1), _tensor(dtype, sb, 2)
        c, py = _both(op, a, b)
        assert c == py, (op, dtype, sa, sb)


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("op", _BINOPS, ids=lambda f: f.__name__)
def test_tensor_scalar_matches_python_path(op, dtype):
    a = _tensor(dtype, (7,), 3)
    for s in [2.0, -0.5, 3, -1, 0, 0.0, True, 1000, 2 ** 70, float("nan"), float("inf"), 1 + 2j]:
        assert _same(op, a, s), (op, dtype, s)
        assert _same(op, s, a), (op, dtype, s)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_negation_matches_python_path(dtype):
    for shape in [(8,), (), (2, 0), (3, 4)]:
        c, py = _both(operator.neg, _tensor(dtype, shape, 4))
        assert c == py, (dtype, shape)


def test_mixed_dtypes_and_other_operands_take_the_python_path():
    a32, a64, ai = _tensor("float32", (6,)), _tensor("float64", (6,)), _tensor("int32", (6,))
    arr = np.arange(6, dtype=np.float32)
    for op in _BINOPS:
        for x, y in [(a32, a64), (ai, a32), (a32, arr), (arr, a32), (a32, [1, 2, 3, 4, 5, 6]), (a32, "x"),
                     (a32, None), (a32, np.float32(2)), (a32, np.int64(2))]:
            c, py = _both(op, x, y)
            assert c == py, (op, x, y)


def test_views_readonly_and_large_tensors_match():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    ro = np.frombuffer(np.arange(8, dtype=np.float64).tobytes(), dtype=np.float64)  # read-only
    t = rt.asarray(base)
    big = rt.asarray(np.ones(1 << 18, np.float32))
    cases = [(t[:, ::2], t[:, 1::2]), (t.T, t.T), (rt.asarray(ro), rt.asarray(ro)), (big, big), (big, 2.0)]
    for x, y in cases:
        for op in (operator.add, operator.mul, operator.truediv, operator.lt):
            c, py = _both(op, x, y)
            assert c == py
    assert (t[:, ::2] + t[:, 1::2]).tolist() == (base[:, ::2] + base[:, 1::2]).tolist()


def test_values_equal_numpy():
    a = np.array([1.5, -2.0, 0.0, 7.25], np.float32)
    b = np.array([0.5, 4.0, -1.0, 2.0], np.float32)
    ra, rb = rt.asarray(a), rt.asarray(b)
    for op in _BINOPS:
        r = op(ra, rb)
        ref = op(a, b)
        assert r.dtype == (rt.bool if ref.dtype == bool else rt.float32)
        np.testing.assert_array_equal(rt.to_numpy(r), ref)
    np.testing.assert_array_equal(rt.to_numpy(-ra), -a)
    np.testing.assert_array_equal(rt.to_numpy(2.0 - ra), 2.0 - a)
    np.testing.assert_array_equal(rt.to_numpy(3 / rb), np.float32(3) / b)


def test_errors_are_the_python_paths():
    a, b = _tensor("float32", (3,)), _tensor("float32", (4,))
    with pytest.raises(ValueError, match="__add__"):
        a + b
    i8 = _tensor("int8", (3,))
    with pytest.raises(ValueError, match="out of range"):
        i8 + 1000
    with pytest.raises(TypeError):
        a.__add__(b, b)
    with pytest.raises(TypeError):
        a.__neg__(1)
    assert _same(lambda x, y: x.__add__(other=y), a, a)  # keywords reach the Python method
    assert _same(lambda x, y: x.__add__(other=y), a, b)
    assert _same(lambda x, y: x.__add__(y, y), a, a)
    assert _same(lambda x: x.__neg__(1), a)
    c, py = _both(operator.add, a, "x")
    assert c == py and c[0] == "raise"


class _Sub(rt.Tensor):
    __slots__ = ()


def test_subclasses_match_python_path():
    a = _tensor("float32", (5,))
    s = object.__new__(_Sub)
    s._data, s._dtype, s._backend = a._data, a._dtype, a._backend
    for op in _BINOPS:
        c, py = _both(op, s, a)
        assert c == py
        c, py = _both(op, a, s)
        assert c == py
    c, py = _both(operator.neg, s)
    assert c == py


def test_debug_nans_wrappers_still_run():
    a = rt.asarray(np.array([0.0, 1.0], np.float32))
    with rt.debug_nans(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError):
            a / a
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(rt.to_numpy(a / a)[0])


def test_jit_captured_tensor_read_at_each_call():
    c = rt.asarray(np.array([1.0, 2.0], np.float32))
    f = rt.jit(lambda x: x + c * 2.0)
    x = rt.asarray(np.zeros(2, np.float32))
    assert f(x).tolist() == [2.0, 4.0]
    c[...] = rt.asarray(np.array([5.0, 6.0], np.float32))
    assert f(x).tolist() == [10.0, 12.0]
    assert (c * 2.0).tolist() == [10.0, 12.0]  # outside the trace: the C path again


def test_grad_through_operators():
    x = rt.asarray(np.array([1.0, -2.0, 3.0], np.float32))
    g = rt.grad(lambda t: rt.sum(t * t - 2.0 * t + t / 4.0))(x)
    np.testing.assert_allclose(rt.to_numpy(g), 2 * np.array([1.0, -2.0, 3.0]) - 2.0 + 0.25, rtol=1e-6)


def test_patching_the_class_is_seen():
    a = _tensor("float32", (3,))
    calls = []
    be = type(a._backend)
    orig = be.binary

    def spy(self, op, x, y, out=None):
        calls.append(op)
        return orig(self, op, x, y, out)
    be.binary = spy
    try:
        a + a
    finally:
        be.binary = orig
    assert calls == ["add"]
    a + a  # back on the C path
    assert calls == ["add"]


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=0, max_size=9),
       st.sampled_from(["float32", "float64"]),
       st.one_of(st.floats(allow_nan=True), st.integers(-2 ** 40, 2 ** 40)))
def test_float_property(vals, dtype, s):
    a = rt.asarray(np.array(vals, dtype=dtype))
    b = rt.asarray(np.array(vals[::-1], dtype=dtype))
    for op in _BINOPS:
        assert _same(op, a, b)
        assert _same(op, a, s)
        assert _same(op, s, a)
    assert _same(operator.neg, a)


@given(st.lists(st.integers(-200, 300), min_size=1, max_size=9),
       st.sampled_from(["int8", "uint8", "int32", "uint64", "int64"]),
       st.integers(-2 ** 70, 2 ** 70))
def test_int_property(vals, dtype, s):
    nd = np.dtype(dtype)
    info = np.iinfo(nd)
    a = rt.asarray(np.array([min(max(v, info.min), info.max) for v in vals], dtype=nd))
    for op in _BINOPS:
        assert _same(op, a, a)
        assert _same(op, a, s)
        assert _same(op, s, a)


def test_python_methods_when_turned_off():
    import subprocess
    import sys
    code = ("import types, runetensor as rt; from runetensor._backend import _fastops; "
            "assert not _fastops.ENABLED; assert isinstance(rt.Tensor.__add__, types.FunctionType); "
            "a = rt.asarray([1.0, 2.0]); assert (a + a * 2.0 - 1).tolist() == [2.0, 5.0]; print('ok')")
    env = dict(__import__("os").environ, RUNETENSOR_C_DISPATCH="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


_KEYS = [0, -1, 2, 3, -4, 5, 10 ** 30, slice(None), slice(1, -1), slice(None, None, 2), slice(None, None, -1),
         slice(5, 2), slice(-100, None, -1), slice(None, -100, -1), slice(2, 0, -1), slice(0, 0, -1),
         slice(10 ** 30, -10 ** 30, -3), slice(None, None, 0), slice(1.0, 2), slice(np.int64(1), 3), None, Ellipsis,
         True, np.int64(1), [0, 1], (), (0, 0), (1, slice(None, None, -2)), (slice(1, -1), slice(None, None, 2)),
         (None, 1, None), (0, 0, 0), (0, 0, 0, 0), (Ellipsis, 1), (slice(None), Ellipsis), (-4, 0), (3, 0),
         (slice(None), 4), (slice(None), -5), "a", 1.5]


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16", "complex64"])
def test_getitem_matches_python_path(dtype):
    base = _tensor(dtype, (3, 4, 2), 5)
    for t in (base, base[:, ::-1], base.T, base[1], base[1, 2, 0]):
        for k in _KEYS:
            c, py = _both(lambda x: x[k], t)
            assert c == py, (t.shape, k)


@given(st.lists(st.one_of(st.none(), st.integers(-6, 6),
                          st.builds(slice, st.one_of(st.none(), st.integers(-8, 8)),
                                    st.one_of(st.none(), st.integers(-8, 8)),
                                    st.one_of(st.none(), st.integers(-3, 3)))), max_size=4),
       st.lists(st.integers(0, 5), min_size=0, max_size=3))
def test_getitem_property(key, shape):
    t = rt.asarray(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    c, py = _both(lambda x: x[tuple(key)], t)
    assert c == py
    if c[0] == "ok":  # a view of NumPy's basic indexing
        ref = t._data[tuple(key) + (Ellipsis,)]
        assert c[3] == ref.shape and c[6] == ref.strides


def test_getitem_views_share_memory():
    t = rt.asarray(np.zeros((4, 6), np.float32))
    v = t[1:-1, ::2]
    v[...] = 7.0
    assert rt.to_numpy(t)[1:-1, ::2].tolist() == [[7.0] * 3] * 2
    assert rt.to_numpy(t)[0].tolist() == [0.0] * 6


# ---------------------------------------------------------------------------
# rt.jit's cached calls: the C key, lookup, buffers and kernel call against the Python path
# ---------------------------------------------------------------------------
def _python_jit(monkeypatch):
    """Turn the C parts of rt.jit's call path off (new plans and lookups take Python)."""
    import runetensor._jit as J
    from runetensor._backend import _jitrun
    monkeypatch.setattr(J, "_clookup", None)
    monkeypatch.setattr(J, "_ckey", None)
    monkeypatch.setattr(_jitrun, "_cplan", None)
    monkeypatch.setattr(_jitrun, "_ctake", None)


def _jit_results(fn, argsets):
    f = rt.jit(fn)
    out = []
    for args in argsets + argsets:  # the first round traces, the second replays
        r = f(*args)
        rs = r if isinstance(r, tuple) else (r,)
        out.append([(x.dtype, x.shape, rt.to_numpy(x).tobytes()) for x in rs])
    return out, rt.jit_stats(f)


_JIT_FNS = [lambda x, y: x * y + x, lambda x, y: (x - y, rt.exp(x) * 2.0), lambda x, y: rt.where(x > y, x, -y) / 3.0]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the retrace warning: many shapes on purpose
@pytest.mark.parametrize("k", range(len(_JIT_FNS)))
def test_jit_cached_calls_match_python_path(k, monkeypatch):
    rng = np.random.default_rng(k)
    argsets = []
    for shape, dt in [((8,), np.float32), ((3, 5), np.float64), ((), np.float32), ((0,), np.float32),
                      ((70000,), np.float32)]:
        argsets.append((rt.asarray(rng.standard_normal(shape).astype(dt)),
                        rt.asarray(rng.standard_normal(shape).astype(dt))))
    t = rt.asarray(rng.standard_normal((6, 4)).astype(np.float32))
    argsets.append((t.T, t.T))  # not C-contiguous: the full signature
    c = _jit_results(_JIT_FNS[k], argsets)
    _python_jit(monkeypatch)
    py = _jit_results(_JIT_FNS[k], argsets)
    assert c == py
    for args, res in zip(argsets, c[0]):
        ref = _JIT_FNS[k](*args)  # eager
        refs = ref if isinstance(ref, tuple) else (ref,)
        for x, (d, s, _) in zip(refs, res):
            assert (x.dtype, x.shape) == (d, s)


def test_jit_kept_results_are_not_overwritten_and_dropped_ones_reused():
    f = rt.jit(lambda x, y: x * y + x)
    a = rt.asarray(np.arange(8, dtype=np.float32))
    b = rt.asarray(np.full(8, 2.0, np.float32))
    f(a, b)
    keep = [f(a, b) for _ in range(5)]
    b[...] = rt.asarray(np.full(8, 3.0, np.float32))
    assert all(rt.to_numpy(r).tolist() == (np.arange(8) * 3.0).tolist() for r in keep)
    new = f(a, b)
    assert rt.to_numpy(new).tolist() == (np.arange(8) * 4.0).tolist()
    assert all(rt.to_numpy(r).tolist() == (np.arange(8) * 3.0).tolist() for r in keep)
    del new, keep
    seen = {f(a, b)._data.__array_interface__["data"][0] for _ in range(4)}
    assert len(seen) == 1  # each dropped result's buffer comes back for the next call


def test_jit_threads_never_share_a_buffer():
    import threading
    f = rt.jit(lambda x, y: x * y + x)
    xs = [rt.asarray(np.full(16, float(i), np.float32)) for i in range(4)]
    one = rt.asarray(np.ones(16, np.float32))
    f(xs[0], one)
    errors = []

    def work(i):
        for _ in range(300):
            r = f(xs[i], one)
            if rt.to_numpy(r).tolist() != [2.0 * i] * 16:
                errors.append(i)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the retrace warning: many shapes on purpose
def test_jit_fast_path_counts_hits_and_survives_eviction(monkeypatch):
    import runetensor._jit as J
    monkeypatch.setattr(J, "MAX_PROGRAMS", 3)  # 5 shapes in turn: every call after the first round evicts
    f = rt.jit(lambda x: x * 2.0 + 1.0)
    shapes = [(i,) for i in range(1, 6)]
    for s in shapes + shapes[-2:] * 3:
        x = rt.asarray(np.ones(s, np.float32))
        assert rt.to_numpy(f(x)).tolist() == [3.0] * s[0]
    st = rt.jit_stats(f)
    assert st["traces"] == 5 and st["cache_hits"] == 6 and st["evictions"] == 2
    for s in shapes:  # the evicted ones trace again, the kept ones hit
        x = rt.asarray(np.ones(s, np.float32))
        assert rt.to_numpy(f(x)).tolist() == [3.0] * s[0]
    assert rt.jit_stats(f)["cache_size"] <= 3


# ---------------------------------------------------------------------------
# Tensor construction, rt.reshape and rt.transpose in C
# ---------------------------------------------------------------------------
def test_c_wrap_builds_the_same_tensor():
    from runetensor import _tensor
    h = np.arange(3.0)
    be = rt.get_backend("numpy")
    t = _fastops.WRAP(h, rt.float64, be)
    assert type(t) is rt.Tensor and t._data is h and t._dtype is rt.float64 and t._backend is be
    assert _tensor.wrap is _fastops.WRAP
    with pytest.raises(TypeError):
        _fastops.WRAP(h, rt.float64)


_SHAPES = [(6, 4), [6, 4], (-1,), (2, -1, 3), [-1, 8], (24,), (4, 6, 1), (5, 5), (-1, -1), (0, -1), (2, True, 12),
           (np.int64(6), 4), (24.0,), "ab", None, 24, (), (1,) * 70, (2 ** 70, 0), (-2, -12)]


def _views_outcomes(monkeypatch, fn, cases):
    from runetensor import _views
    c = [_outcome(fn, *a) for a in cases]
    monkeypatch.setattr(_views, "_creshape", None)
    monkeypatch.setattr(_views, "_ctranspose", None)
    py = [_outcome(fn, *a) for a in cases]
    return c, py


def test_reshape_matches_python_path(monkeypatch):
    base = rt.asarray(np.arange(24, dtype=np.float32).reshape(4, 6))
    tensors = [base, base.T, base[:, ::2], rt.asarray(np.zeros((0, 3), np.float32)), rt.asarray(np.float32(2)),
               rt.asarray(np.arange(24, dtype=np.int8)), rt.asarray(np.arange(24) > 3)]
    cases = [(t, s) for t in tensors for s in _SHAPES] + [([1, 2, 3], (3,)), (np.arange(6.0), (2, 3))]
    c, py = _views_outcomes(monkeypatch, rt.reshape, cases)
    assert c == py


def test_transpose_matches_python_path(monkeypatch):
    base = rt.asarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    cases = [(base,), (base[1],), (base[:, ::-1],), (rt.asarray(np.float64(1)),), (base, (1, 0, 2)),
             (base, [2, 0, 1]), (base, (0, 0, 1)), ([[1, 2]],), (rt.asarray(np.zeros((0, 2))),)]
    c, py = _views_outcomes(monkeypatch, rt.transpose, cases)
    assert c == py


@given(st.lists(st.integers(0, 4), min_size=0, max_size=4), st.lists(st.integers(-1, 6), max_size=4))
def test_reshape_property(shape, new):
    from runetensor import _views
    t = rt.asarray(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    c = _outcome(rt.reshape, t, tuple(new))
    saved = _views._creshape
    _views._creshape = None
    try:
        py = _outcome(rt.reshape, t, tuple(new))
    finally:
        _views._creshape = saved
    assert c == py


def test_library_works_without_the_extension():
    import subprocess
    import sys
    code = (
        "import sys, importlib.abc, types\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'runetensor._backend._dispatch':\n"
        "            raise ImportError('blocked for the test')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import numpy as np, runetensor as rt\n"
        "from runetensor._backend import _fastops, _jitrun\n"
        "import runetensor._jit as J\n"
        "assert _fastops._dispatch is None and not _fastops.ENABLED and _fastops.WRAP is None\n"
        "assert _jitrun._crun is None and J._clookup is None\n"
        "assert isinstance(rt.Tensor.__add__, types.FunctionType)\n"
        "a = rt.asarray(np.arange(6, dtype=np.float32))\n"
        "assert (-(a + a * 2.0) / 3 < 0).tolist() == [False] + [True] * 5\n"
        "assert rt.reshape(a, (2, -1))[1, ::2].tolist() == [3.0, 5.0]\n"
        "assert rt.transpose(rt.reshape(a, (2, 3))).shape == (3, 2)\n"
        "f = rt.jit(lambda x, y: x * y + x)\n"
        "for _ in range(3):\n"
        "    assert f(a, a).tolist() == (np.arange(6.0) ** 2 + np.arange(6.0)).tolist()\n"
        "assert rt.jit_stats(f)['cache_hits'] == 2\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok", out.stderr


# ---------------------------------------------------------------------------
# NumpyBackend.binary's small plain case in C
# ---------------------------------------------------------------------------
_BACKEND_OPS = ["add", "sub", "mul", "div", "pyfloordiv", "mod", "pymod", "pow", "maximum", "minimum", "fmax",
                "atan2", "hypot", "copysign", "eq", "ne", "lt", "ge", "logical_and", "logical_xor", "bitwise_and",
                "bitwise_xor", "lshift", "rshift", "floordiv", "nosuchop"]


def _backend_outcome(op, x, y):
    be = rt.get_backend("numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = be.binary(op, x, y)
        except Exception as e:  # noqa: BLE001 - the comparison is the point
            return ("raise", type(e), str(e))
    return ("ok", type(r), r.dtype, r.shape, r.strides, r.tobytes())


def test_backend_binary_matches_python_path(monkeypatch):
    import sys
    nb = sys.modules["runetensor._backend.numpy_backend"]
    if nb._cbinary is None:
        pytest.skip("the C backend path is off")
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(8).astype(np.float32), rng.standard_normal((3, 4)),
              rng.integers(-5, 6, 8).astype(np.int32), rng.integers(0, 6, 8).astype(np.uint8),
              np.float64(2.5) * np.ones(()), rng.standard_normal(8).astype(np.float16),
              rng.standard_normal(8) > 0, (rng.standard_normal(8) + 1j).astype(np.complex64),
              rng.standard_normal(1 << 18).astype(np.float32), np.arange(8.0).astype(">f8"),
              rng.standard_normal((4, 6))[:, ::2], np.zeros((0,), np.float32)]
    others = [None, 2.0, -3, 0, 10 ** 30, True, np.float32(2), "x"]
    cases = []
    for a in arrays:
        for o in others:
            b = a if o is None else o
            cases += [(a, b), (b, a)]
    cases += [(arrays[0], arrays[2]), (arrays[1], arrays[0]), (arrays[1], arrays[1][0]), (1.0, 2.0)]
    for op in _BACKEND_OPS:
        c = [_backend_outcome(op, x, y) for x, y in cases]
        monkeypatch.setattr(nb, "_cbinary", None)
        py = [_backend_outcome(op, x, y) for x, y in cases]
        monkeypatch.undo()
        for k, (cc, pp) in enumerate(zip(c, py)):
            assert cc == pp, (op, k)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_floating_point_warnings_and_the_users_error_state_kept(dtype):
    """inf - inf, x / 0, overflow: the C path warns as little as the Python path (not at all), whatever the
    user's NumPy error state, and leaves that state as it was."""
    assert _fastops.ENABLED
    big = np.finfo(dtype).max
    t = rt.asarray(np.array([np.inf, 1.0, 0.0, big], dtype))
    z = rt.asarray(np.zeros(4, dtype))
    be = rt.get_backend("numpy")
    old = np.seterr(all="raise")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = [t - t, t / z, t * 4.0, 1.0 / z, t < t, -t]
            be.binary("sub", t._data, t._data)
            be.binary("div", t._data, z._data)
        assert np.geterr()["invalid"] == "raise" and np.geterr()["over"] == "raise"
    finally:
        np.seterr(**old)
    with np.errstate(all="ignore"):
        a, b = np.asarray(t), np.asarray(z)
        want = [a - a, a / b, a * dtype(4.0), dtype(1.0) / b, a < a, -a]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), w)
