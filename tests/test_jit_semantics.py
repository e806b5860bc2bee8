"""rt.jit equals eager: programs by family, replay with new values, writes into inputs, value reads
under tracing (errors and run-time bound checks), compositions with grad/vmap/jit (docs/jit.md)."""
from __future__ import annotations


import numpy as np
import pytest

import runetensor as rt

from jit_helpers import N, R, check, same


# ---------------------------------------------------------------------------
# equal to eager, by family
# ---------------------------------------------------------------------------
A, B_, C = R([3, 4], 1), R([3, 4], 2), R([4], 3)
PROGRAMS = {
    # float64 exp: fused through libmvec, within ULP_BOUND64 of eager (docs/jit.md)
    "elementwise": (lambda a, b, c: rt.exp(a) * b - c / 3 + rt.maximum(a, c) ** 2, (A, B_, C), 1e-14),
    "compare_where": (lambda a, b, c: rt.where(a > b, a, c), (A, B_, C)),
    "cast_int": (lambda a, b, c: rt.astype(a * 10, rt.int32) // 3 + rt.astype(c, rt.int32), (A, B_, C)),
    "reductions": (lambda a, b, c: (rt.sum(a, [0]), rt.max(b, [1]), rt.mean(a * b), rt.argmax(a, axis=1),
                                    rt.cumsum(c, axis=0)), (A, B_, C)),
    "movement": (lambda a, b, c: (rt.reshape(rt.contiguous(a.T), [12]), rt.flip(b, 0)[1:, ::2],
                                  rt.expand_dims(c, 0) + a, rt.concatenate([a, b], axis=0), rt.stack([c, c]),
                                  rt.transpose(a) * 2),
                 (A, B_, C)),
    "indexing": (lambda a, b, c: (a[1], a[:, 2], a[rt.asarray([2, 0, -1])], a[..., None][0]), (A, B_, C)),
    "index_argument": (lambda a, i: a[i] * 2, (A, rt.asarray([2, -1, 0]))),
    "sort": (lambda a, b, c: (rt.sort(a, axis=1)[0], rt.argsort(c)), (A, B_, C)),
    "matmul": (lambda a, b, c: (a @ c, a @ b.T, rt.einsum("ij,j->i", a, c)), (A, B_, C)),
    "linalg": (lambda m: (rt.inv(m), rt.det(m), rt.solve(m, m[:, :1]),
                          rt.cholesky(m @ m.T + rt.eye(rt.float64, 3))), (R([3, 3], 5),)),
    "random_seeded": (lambda a: a + rt.rand(rt.float64, [3, 4], seed=7) + rt.randn(rt.float32, [4], seed=1),
                      (A,), 1e-6),
    "random_keys": (lambda k: rt.random.normal(k, [5]), (rt.random.key(3),), 1e-6),  # fused log/cos
    "creation": (lambda a: rt.zeros(rt.float64, [4]) + rt.arange(rt.float64, 0, 4, 1) + rt.ones_like(a)[0], (A,)),
    "fft": (lambda a: rt.rfft(a, axis=-1), (A,)),
    "setitem_fresh": (lambda a: _setitem(a), (A,)),
    "cond": (lambda a, b: rt.cond(rt.sum(a) > 0, lambda x: x * 2, lambda x: -x, b), (A, B_)),
}


def _setitem(a):
    z = rt.zeros(rt.float64, [3, 4])
    z[1] = a[0]
    z[:, 0] = 7.0
    z[rt.asarray([2, 0])] += 1.0
    return z, rt.sum(z)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jit_equals_eager(name):
    f, args, *tol = PROGRAMS[name]
    check(f, *args, rtol=tol[0] if tol else None)


def test_replay_with_new_values_same_signature():
    f = rt.jit(lambda a, b: rt.tanh(a) @ b + rt.sum(a, [0]))
    for s in range(3):
        a, b = R([3, 4], 10 + s), R([4, 4], 20 + s)
        # fused float64 tanh: a few ulp from eager (ULP_BOUND64), then a product
        np.testing.assert_allclose(N(f(a, b)), N(rt.tanh(a) @ b + rt.sum(a, [0])), rtol=1e-13, atol=1e-14)
    assert rt.jit_stats(f)["traces"] == 1 and rt.jit_stats(f)["cache_hits"] == 2


def test_setitem_fresh_buffer_each_call():
    def f(a):
        z = rt.zeros(rt.float64, [3])
        z[0] += a[0]
        return z
    jf = rt.jit(f)
    a = rt.asarray([1.0, 2.0])
    for _ in range(3):
        same(jf(a), rt.asarray([1.0, 0.0, 0.0]))


def test_writes_into_an_input_as_eager():
    def f(a):
        a[0] = a[1] * 2
        return a * 1
    x, y = rt.asarray([1.0, 2.0]), rt.asarray([1.0, 2.0])
    jf = rt.jit(f)
    jf(x)
    same(f(y), jf(x.copy() if hasattr(x, "copy") else x))


# ---------------------------------------------------------------------------
# errors: value reads
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("read", [
    lambda t: float(rt.sum(t)),
    lambda t: bool(t[0] > 0),
    lambda t: 1 if rt.sum(t) > 0 else 2,
    lambda t: str(t),
    lambda t: t.tolist(),
    lambda t: rt.nonzero(t),
    lambda t: t[t > 0],
])
def test_value_reads_raise_type_error(read):
    with pytest.raises(TypeError, match="rt.jit|jit"):
        rt.jit(read)(R([3]))


def test_value_read_message_points_to_where_and_static():
    with pytest.raises(TypeError, match=r"rt\.where.*rt\.cond.*static_argnums"):
        rt.jit(lambda t: float(t))(R([]))


def test_index_bounds_checked_at_run_time():
    f = rt.jit(lambda a, i: a[i])
    a = R([4])
    same(f(a, rt.asarray([0, 3, -4])), a[rt.asarray([0, 3, -4])])
    with pytest.raises(IndexError, match="out of bounds"):
        f(a, rt.asarray([0, 4, 1]))
    with pytest.raises(IndexError, match="-5"):
        f(a, rt.asarray([0, -5, 1]))


# ---------------------------------------------------------------------------
# compositions
# ---------------------------------------------------------------------------
def loss(w, x):
    return rt.sum(rt.tanh(x @ w) ** 2)


def test_jit_of_grad():
    w, x = R([3, 2], 1), R([4, 3], 2)
    g = rt.jit(rt.grad(loss))
    for _ in range(2):
        np.testing.assert_allclose(N(g(w, x)), N(rt.grad(loss)(w, x)), rtol=1e-12)
    assert rt.jit_stats(g)["traces"] == 1


def test_grad_of_jit_runs_inline():
    w, x = R([3, 2], 1), R([4, 3], 2)
    jl = rt.jit(loss)
    np.testing.assert_allclose(N(rt.grad(jl)(w, x)), N(rt.grad(loss)(w, x)), rtol=1e-12)
    assert rt.jit_stats(jl)["inline_calls"] == 1 and rt.jit_stats(jl)["traces"] == 0


def test_jit_of_vmap_and_vmap_of_jit():
    xs = R([5, 3], 4)
    f = lambda x: rt.sum(rt.sin(x) * x)  # noqa: E731
    want = rt.vmap(f)(xs)
    jv = rt.jit(rt.vmap(f))
    same(jv(xs), want)
    same(jv(xs), want)
    same(rt.vmap(rt.jit(f))(xs), want)


def test_jit_inside_jit_is_inlined():
    inner = rt.jit(lambda a: a * 2 + 1)
    outer = rt.jit(lambda a: inner(a) - inner(a * a))
    x = R([3])
    same(outer(x), outer(x))
    same(outer(x), (x * 2 + 1) - (x * x * 2 + 1))
    assert rt.jit_stats(inner)["inline_calls"] == 2 and rt.jit_stats(outer)["traces"] == 1


def test_jit_of_value_and_grad_training_step():
    def step(w, x, y):
        lv, g = rt.value_and_grad(lambda w: rt.mean((x @ w - y) ** 2))(w)
        return w - 0.1 * g, lv
    js = rt.jit(step)
    w, x, y = R([3], 1), R([8, 3], 2), R([8], 3)
    w1, w2 = w, w
    for _ in range(3):
        w1, l1 = step(w1, x, y)
        w2, l2 = js(w2, x, y)
        np.testing.assert_allclose(N(w1), N(w2), rtol=1e-12)
    assert rt.jit_stats(js)["cache_hits"] == 2


def test_float16_bfloat16_programs_replay():
    for dt in (rt.float16, rt.bfloat16):
        a, b = rt.astype(R([5, 6], 1), dt), rt.astype(R([6], 2), dt)
        check(lambda x, y: rt.exp(x) * y - rt.maximum(x, y) + rt.astype(x, rt.float32)[0, 0], a, b)
