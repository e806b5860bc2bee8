"""A compiled call returns what eager returns (docs/jit.md, "Semantics" and "Donation"):

* captured tensors (closed over, not arguments) are read at call time, and so is everything computed
  from them: an in-place change between calls shows in the next call, whatever the op (arithmetic,
  casts, reductions, views, matmul, writes into them, masks, under grad);
* constants the function makes itself (fills, aranges) are still folded;
* bool tensors whose bytes are not 0/1 (``np.frombuffer`` of raw bytes, uint8 views, memory maps) read
  as "nonzero is True" in eager code, in replayed programs and in compiled kernels alike;
* donation is ignored whenever the donated buffer is also an output, a captured tensor or another
  argument.

Oracles are NumPy computations on the current contents (bools normalised with ``!= 0``)."""
from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

import runetensor as rt
from runetensor._backend.fusion import _fuse
from runetensor._tensor import Tensor

needs_cc = pytest.mark.skipif(not _fuse.compiler_available(), reason="no C compiler")


def N(t):
    return rt.to_numpy(t)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNETENSOR_JIT_CACHE", str(tmp_path))


def _steps(jf):
    return [s.name for p in jf._jit.cache.values() for s in p.steps]


# ---------------------------------------------------------------------------- captured tensors

_X = np.array([[1.5, -2.0, 0.25], [3.0, 0.5, -1.0]], np.float32)
_C0 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
_C1 = np.array([[-7.0, 0.5, 9.0], [2.0, -3.0, 8.0]], np.float32)

# name -> (function of x and the captured c, NumPy oracle of x and c's current contents)
_CAPTURED_OPS = {
    "scale": (lambda x, c: x + c * 2, lambda x, c: x + c * 2),
    "neg": (lambda x, c: x + -c, lambda x, c: x - c),
    "astype": (lambda x, c: rt.astype(x, rt.float64) + rt.astype(c, rt.float64),
               lambda x, c: x.astype(np.float64) + c.astype(np.float64)),
    "sum": (lambda x, c: x + rt.sum(c), lambda x, c: x + c.sum(dtype=np.float32)),
    "row_max": (lambda x, c: x * rt.max(c, [1], keepdims=True), lambda x, c: x * c.max(1, keepdims=True)),
    "chain": (lambda x, c: x * rt.sqrt(rt.abs(c) + 1) - c / 3, lambda x, c: x * np.sqrt(np.abs(c) + 1) - c / 3),
    "exp": (lambda x, c: x + rt.exp(c * 0.1), lambda x, c: x + np.exp(c * np.float32(0.1))),
    "view": (lambda x, c: x + c[::-1, ::-1] * 1, lambda x, c: x + c[::-1, ::-1]),
    "transpose_matmul": (lambda x, c: x @ rt.transpose(c), lambda x, c: x @ c.T),
    "where": (lambda x, c: rt.where(c > 2, x, c * 2), lambda x, c: np.where(c > 2, x, c * 2)),
    "cumsum": (lambda x, c: x + rt.cumsum(c, axis=1), lambda x, c: x + np.cumsum(c, axis=1)),
    "returned": (lambda x, c: c * 1, lambda x, c: c.copy()),
}


@pytest.mark.parametrize("name", sorted(_CAPTURED_OPS))
def test_ops_on_captured_tensors_read_their_current_contents(cache, name):
    f, oracle = _CAPTURED_OPS[name]
    c = rt.asarray(_C0.copy())
    jf = rt.jit(lambda x: f(x, c))
    x = rt.asarray(_X)
    for k, cv in enumerate([_C0, _C0, _C1, _C0 * 3, _C1]):
        c[...] = rt.asarray(cv)  # an in-place change between calls
        got = N(jf(x))
        want = oracle(_X, cv)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=f"call {k + 1}")
        np.testing.assert_allclose(N(f(x, c)), want, rtol=2e-6, atol=1e-6)  # eager agrees


def test_the_example_of_a_scaled_captured_tensor(cache):
    c = rt.ones(rt.float32, [4])
    jf = rt.jit(lambda x: x + c * 2)
    x = rt.asarray(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(N(jf(x)), np.arange(4) + 2.0)
    jf(x)
    c[...] = 5
    np.testing.assert_array_equal(N(jf(x)), np.arange(4) + 10.0)


@needs_cc
def test_captured_tensor_read_inside_a_compiled_kernel(cache):
    c = rt.asarray(_C0.copy())
    jf = rt.jit(lambda x: (x + c * 2) * rt.sin(c))
    x = rt.asarray(_X)
    jf(x)
    assert "fused" in _steps(jf)
    for cv in (_C1, _C0 * -2):
        c[...] = rt.asarray(cv)
        np.testing.assert_allclose(N(jf(x)), (_X + cv * 2) * np.sin(cv), rtol=1e-5, atol=1e-6)


def test_writes_into_captured_tensors_happen_on_every_call(cache):
    c = rt.zeros(rt.float32, [2, 3])

    def f(x):
        c[0] = 5.0          # a scalar write: no traced operand
        c[1] += 1.0         # an in-place op on a view of c
        return x * 2 + c

    jf = rt.jit(f)
    x = rt.asarray(_X)
    cv = np.zeros((2, 3), np.float32)
    for k in range(4):
        cv[0] = 5.0
        cv[1] += 1.0
        np.testing.assert_array_equal(N(jf(x)), _X * 2 + cv, err_msg=f"call {k + 1}")
        np.testing.assert_array_equal(N(c), cv)


def test_captured_tensors_under_grad_in_jit(cache):
    """Data closed over by a jitted gradient is read on every call (the gradient of the squared error,
    2 Xᵀ(Xw - y), against NumPy)."""
    X = rt.asarray(np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 4.0]]))
    y = rt.asarray(np.array([1.0, -2.0, 0.5]))
    g = rt.jit(rt.grad(lambda w: rt.sum((X @ w - y) ** 2)))
    w = rt.asarray(np.array([0.3, -0.7]))
    rng = np.random.default_rng(0)
    for k in range(4):
        Xv, yv = rng.standard_normal((3, 2)), rng.standard_normal(3)
        X[...] = rt.asarray(Xv)
        y[...] = rt.asarray(yv)
        want = 2 * Xv.T @ (Xv @ N(w) - yv)
        np.testing.assert_allclose(N(g(w)), want, rtol=1e-12, atol=1e-12, err_msg=f"call {k + 1}")


def test_captured_mask_read_at_call_time_and_a_changed_count_raises(cache):
    m = rt.asarray(np.array([True, False, True, False]))
    x = rt.asarray(np.arange(4.0))
    jf = rt.jit(lambda x: x[m] * 2 + 1)
    np.testing.assert_array_equal(N(jf(x)), [1.0, 5.0])
    m[0], m[1] = False, True  # same number of True values: the current positions are used
    np.testing.assert_array_equal(N(jf(x)), [3.0, 5.0])
    m[3] = True
    with pytest.raises(ValueError, match="non-zero elements"):
        jf(x)


def test_constants_made_inside_the_function_are_still_folded(cache):
    def f(x):
        return x + rt.astype(rt.arange(rt.int32, 0, 6, 1), rt.float64) * rt.full(rt.float64, [6], 0.5)
    jf = rt.jit(f)
    x = rt.asarray(np.ones(6))
    for _ in range(3):
        np.testing.assert_array_equal(N(jf(x)), 1 + np.arange(6) * 0.5)
    assert not {"arange", "full", "cast"} & set(_steps(jf))


def test_a_gradient_seed_is_still_folded(cache):
    g = rt.jit(rt.grad(lambda w: rt.sum(w * w)))
    w = rt.asarray(np.array([1.0, -2.0, 3.0]))
    for _ in range(3):
        np.testing.assert_array_equal(N(g(w)), [2.0, -4.0, 6.0])
    assert "full" not in _steps(g)


def test_lifting_is_confined_to_the_tracing_thread_and_undone(cache):
    """While one thread traces, another thread's eager ops on the same captured tensor stay eager."""
    slot = Tensor.__dict__["_backend"]
    c = rt.asarray(np.array([1.0, 2.0]))
    inside, done = threading.Event(), threading.Event()
    seen = []

    def f(x):
        inside.set()
        done.wait(10)
        return x + c

    t = threading.Thread(target=lambda: seen.append(N(rt.jit(f)(rt.asarray(np.array([1.0, 1.0]))))))
    t.start()
    assert inside.wait(10)
    try:
        r = c * 3
        assert r.backend.name == "numpy"
        np.testing.assert_array_equal(N(r), [3.0, 6.0])
    finally:
        done.set()
        t.join(10)
    np.testing.assert_array_equal(seen[0], [2.0, 3.0])
    assert Tensor.__dict__["_backend"] is slot

    def bad(x):
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        rt.jit(bad)(rt.asarray(np.ones(2)))
    assert Tensor.__dict__["_backend"] is slot


# ---------------------------------------------------------------------------- bool bytes

_MAPS = itertools.count()


def _raw_bools(shape, seed, how, tmp_path=None):
    """(bool tensor whose bytes are random 0..255, with many 0 and 1, its NumPy truth values)."""
    g = np.random.default_rng(seed)
    raw = g.integers(2, 256, size=shape).astype(np.uint8)
    if raw.size > 2:
        raw.flat[::3] = 0
        raw.flat[1::5] = 1
    if how == "frombuffer":
        a = np.frombuffer(bytearray(raw.tobytes()), dtype=np.bool_).reshape(shape)
    elif how == "view":
        a = raw.copy().view(np.bool_)
    else:
        mm = np.memmap(tmp_path / f"b{seed}_{next(_MAPS)}.bin", dtype=np.uint8, mode="w+", shape=raw.shape)
        mm[...] = raw
        a = mm.view(np.bool_)
    return rt.asarray(a), raw != 0


_BOOL_OPS = {
    "cast_affine": (lambda a, b: rt.astype(a, rt.float32) * 2 + 1, lambda a, b: a.astype(np.float32) * 2 + 1),
    "and": (lambda a, b: a & b, lambda a, b: a & b),
    "or": (lambda a, b: a | b, lambda a, b: a | b),
    "xor": (lambda a, b: a ^ b, lambda a, b: a ^ b),
    "and_xor": (lambda a, b: (a & b) ^ a, lambda a, b: (a & b) ^ a),
    "eq": (lambda a, b: a == b, lambda a, b: a == b),
    "ordered": (lambda a, b: (a < b) | ((a >= b) & (b > a)), lambda a, b: (a < b) | ((a >= b) & (b > a))),
    "eq_ne": (lambda a, b: (a == b) | ((a != b) & a), lambda a, b: (a == b) | ((a != b) & a)),
    "logical": (lambda a, b: rt.logical_xor(rt.logical_and(a, b), rt.logical_or(a, b)),
                lambda a, b: np.logical_xor(a & b, a | b)),
    "not_cast": (lambda a, b: rt.astype(rt.logical_not(a), rt.float64) - rt.astype(b, rt.float64),
                 lambda a, b: (~a).astype(np.float64) - b.astype(np.float64)),
    "where": (lambda a, b: rt.where(a, 2.0, -1.0) * 3 + rt.astype(b, rt.float64),
              lambda a, b: np.where(a, 2.0, -1.0) * 3 + b),
    "int8": (lambda a, b: rt.astype(a, rt.int8) * 3 + rt.astype(b, rt.int8),
             lambda a, b: (a.astype(np.int8) * 3 + b.astype(np.int8)).astype(np.int8)),
    "bfloat16": (lambda a, b: rt.astype(rt.astype(a, rt.bfloat16) * 2 + 1, rt.float32),
                 lambda a, b: a.astype(np.float32) * 2 + 1),
    "sum": (lambda a, b: rt.sum(rt.astype(a, rt.float32) * 2 + rt.astype(b, rt.float32)),
            lambda a, b: np.sum(a.astype(np.float32) * 2 + b.astype(np.float32), dtype=np.float32)),
}


@pytest.mark.parametrize("how", ["frombuffer", "view", "memmap"])
@pytest.mark.parametrize("name", sorted(_BOOL_OPS))
def test_bool_bytes_other_than_0_1_are_true_everywhere(cache, tmp_path, name, how):
    f, oracle = _BOOL_OPS[name]
    # small (NumPy's loops), large (fast paths, threads), and broadcast operands (NumPy's bool loops
    # read a broadcast operand's byte as it is: xor, eq, ne and the orderings normalise it first)
    for sa, sb in [((4, 9), (4, 9)), ((301, 347), (301, 347)), ((4, 9), (9,)), ((4, 1), (1, 9)), ((5, 7), (1,)),
                   ((1,), (6,))]:
        a, an = _raw_bools(sa, 1, how, tmp_path)
        b, bn = _raw_bools(sb, 2, how, tmp_path)
        want = oracle(an, bn)
        eager = N(f(a, b))
        jf = rt.jit(f)
        for k in range(3):
            got = N(jf(a, b))
            for what, r in (("eager", eager), (f"jit call {k + 1}", got)):
                assert r.dtype == want.dtype, what
                if r.dtype == np.bool_:
                    r = r.view(np.uint8) != 0
                np.testing.assert_array_equal(r, want, err_msg=f"{name} {how} {sa} {sb}: {what}")


def test_raw_bool_bytes_captured_and_changed_between_calls(cache):
    raw = np.zeros((5, 7), np.uint8)
    mask = rt.asarray(raw.view(np.bool_))  # shares raw's memory
    x = rt.asarray(np.arange(35, dtype=np.float32).reshape(5, 7))
    jf = rt.jit(lambda x: x * rt.astype(mask, rt.float32) + rt.astype(mask ^ (x > 10), rt.float32))
    g = np.random.default_rng(3)
    for k in range(4):
        raw[...] = g.integers(0, 256, size=raw.shape)
        m = raw != 0
        xv = N(x)
        want = xv * m + (m ^ (xv > 10)).astype(np.float32)
        np.testing.assert_array_equal(N(jf(x)), want, err_msg=f"call {k + 1}")


# ---------------------------------------------------------------------------- donation and aliasing

def _f32(v):
    return rt.asarray(np.asarray(v, np.float32).copy())


def test_donated_argument_that_is_a_returned_captured_tensor_is_not_overwritten(cache):
    c = _f32([1.0, 2.0, 3.0, 4.0])
    jf = rt.jit(lambda x: (x * 2 + 1, c), donate_argnums=0)
    jf(_f32([1, 1, 1, 1]))
    jf(_f32([1, 1, 1, 1]))  # cached: donation is planned
    r, cc = jf(c)
    np.testing.assert_array_equal(N(r), [3.0, 5.0, 7.0, 9.0])
    np.testing.assert_array_equal(N(cc), [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(N(c), [1.0, 2.0, 3.0, 4.0])


_ALIAS_CASES = {
    # name -> (function of (x, y, captured c), donate_argnums, the arguments from (fresh x, fresh y, c))
    "argument_passed_twice": (lambda x, y, c: x * 2 + y, 0, lambda x, y, c: (x, x)),
    "argument_and_its_view": (lambda x, y, c: x * 2 + y, 0, lambda x, y, c: (x, x[::-1])),
    "donated_captured_read": (lambda x, y, c: x * 2 + y + c, 0, lambda x, y, c: (c, y)),
    "donated_captured_dead_read": (lambda x, y, c: (c * 5, x * 2 + y)[1], 0, lambda x, y, c: (c, y)),
    "donated_captured_returned": (lambda x, y, c: (x * 2 + y, c), 0, lambda x, y, c: (c, y)),
    "donated_captured_twice": (lambda x, y, c: (x * 2 + y, y * 3), (0, 1), lambda x, y, c: (c, c)),
    "returned_argument": (lambda x, y, c: (x * 2 + y, x), 0, lambda x, y, c: (x, y)),
    "returned_view_of_argument": (lambda x, y, c: (x * 2 + y, x[1:]), 0, lambda x, y, c: (x, y)),
}


@pytest.mark.parametrize("name", sorted(_ALIAS_CASES))
def test_donation_ignored_when_the_donated_buffer_aliases(cache, name):
    """When the donated buffer is also another argument, a captured tensor or an output, the donation
    is ignored: results equal NumPy's, and no argument nor the captured tensor changes (calls 1-4)."""
    f, dn, make = _ALIAS_CASES[name]
    c = _f32([10.0, 20.0, 30.0, 40.0])
    cv = N(c).copy()
    jf = rt.jit(lambda x, y: f(x, y, c), donate_argnums=dn)
    for k in range(4):
        args = make(_f32([1.0, 2.0, 3.0, 4.0]), _f32([0.5, -1.0, 2.0, 4.0]), c)
        before = [N(a).copy() for a in args]
        want = f(*before, cv)
        want = want if isinstance(want, tuple) else (want,)
        got = jf(*args)
        got = got if isinstance(got, tuple) else (got,)
        for j, (w, g) in enumerate(zip(want, got)):
            np.testing.assert_array_equal(N(g), w, err_msg=f"call {k + 1}, output {j}")
        np.testing.assert_array_equal(N(c), cv, err_msg=f"call {k + 1}: the captured tensor changed")
        for j, (a, b) in enumerate(zip(args, before)):
            np.testing.assert_array_equal(N(a), b, err_msg=f"call {k + 1}: argument {j} overwritten")


def test_python_reads_of_values_computed_from_captured_tensors_raise(cache):
    """A value computed from a captured tensor is traced: a Python read of it raises (as for an
    argument) instead of silently freezing the trace-time value."""
    from runetensor._backend.contract import TracedValueError
    c = rt.asarray(np.array([1.0, -2.0, 3.0]))
    x = rt.asarray(np.ones(3))
    with pytest.raises(TracedValueError):
        rt.jit(lambda x: x * float(rt.sum(c)))(x)
    with pytest.raises(TracedValueError):
        rt.jit(lambda x: x[c > 0])(x)
    jf = rt.jit(lambda x: rt.where(c > 0, x, -x) * rt.sum(c))  # the traced form of the same
    for cv in ([1.0, -2.0, 3.0], [-1.0, 5.0, 0.5]):
        c[...] = rt.asarray(np.array(cv))
        want = np.where(np.array(cv) > 0, 1.0, -1.0) * sum(cv)
        np.testing.assert_array_equal(N(jf(x)), want)


def test_library_value_checks_on_captured_tensors_run_at_every_call():
    """Ids and labels the jitted function captures are read at each call, so their range checks run then too:
    a captured id made negative after tracing raises as eagerly instead of wrapping to the last row."""
    w = rt.asarray(np.arange(15, dtype=np.float32).reshape(5, 3))
    ids = rt.create(rt.int32, [3], [0, 1, 2])
    labels = rt.create(rt.int32, [3], [0, 1, 2])
    emb = rt.jit(lambda w: rt.nn.embedding(ids, w))
    xent = rt.jit(lambda z: rt.nn.softmax_cross_entropy(z, labels))
    z = rt.asarray(np.zeros((3, 5), np.float32))
    np.testing.assert_array_equal(rt.to_numpy(emb(w)), np.arange(15, dtype=np.float32).reshape(5, 3)[:3])
    xent(z)
    ids[0] = -1
    labels[1] = 7
    with pytest.raises(IndexError, match="-1"):
        rt.nn.embedding(ids, w)
    with pytest.raises(IndexError, match="-1"):
        emb(w)
    with pytest.raises(Exception) as eager:
        rt.nn.softmax_cross_entropy(z, labels)
    with pytest.raises(type(eager.value)):
        xent(z)
    ids[0] = 4
    np.testing.assert_array_equal(rt.to_numpy(emb(w))[0], [12.0, 13.0, 14.0])
    assert rt.jit_stats(emb)["traces"] == 1
