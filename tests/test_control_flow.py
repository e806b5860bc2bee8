"""Control flow (rt.cond, rt.switch, rt.while_loop, rt.fori_loop, rt.scan) and rematerialisation
(rt.checkpoint): each equals the unrolled Python version in value and derivative (grad, jvp,
rt.check_grads in float64), eagerly and under rt.vmap (batched predicates select per lane, loops
run until every lane is done)."""
from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

import runetensor as rt


def T(a, dtype=rt.float64):
    return rt.asarray(np.asarray(a, dtype=np.float64), dtype=dtype)


def N(t):
    return rt.to_numpy(t) if isinstance(t, rt.Tensor) else np.asarray(t)


def data(shape, seed=0, lo=-2.0, hi=2.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


def same_tree(a, b, rtol=1e-12, atol=1e-13):
    la, ta = rt.tree_flatten(a)
    lb, tb = rt.tree_flatten(b)
    assert ta == tb, (ta, tb)
    for x, y in zip(la, lb):
        assert N(x).shape == N(y).shape
        np.testing.assert_allclose(N(x), N(y), rtol=rtol, atol=atol)


def same_derivatives(f, g, args):
    """``f`` and ``g`` (its unrolled version) agree in value, grad (every argument) and jvp."""
    same_tree(f(*args), g(*args))
    argnums = tuple(range(len(args)))
    same_tree(rt.grad(lambda *a: rt.sum(f(*a)), argnums=argnums)(*args),
              rt.grad(lambda *a: rt.sum(g(*a)), argnums=argnums)(*args))
    tans = tuple(rt.tree_map(lambda x: x * 0.5 + 0.25, a) for a in args)
    same_tree(rt.jvp(f, args, tans), rt.jvp(g, args, tans))
    rt.check_grads(lambda *a: rt.sum(f(*a)), args, order=2)


# ---------------------------------------------------------------------------
# eager control flow: value and derivatives equal the unrolled version
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_cond(sign):
    x = T(data((3,), seed=1))
    y = T(data((3,), seed=2))

    def f(x, y):
        return rt.cond(rt.sum(x) * sign > 0, lambda a, b: rt.sin(a) * b, lambda a, b: a * a - b, x, y)

    def g(x, y):
        return rt.sin(x) * y if float(rt.sum(x)) * sign > 0 else x * x - y
    same_derivatives(f, g, (x, y))
    # Python bools and ints as predicates; no operands
    assert float(rt.cond(True, lambda: T(1.0), lambda: T(2.0))) == 1.0
    assert float(rt.cond(0, lambda: T(1.0), lambda: T(2.0))) == 2.0


def test_cond_pytrees():
    p = {"a": T([1.0, 2.0]), "b": (T(3.0), T([4.0]))}

    def f(p):
        out = rt.cond(p["b"][0] > 2, lambda q: {"s": q["a"] * q["b"][0], "t": [q["b"][1] ** 2]},
                      lambda q: {"s": q["a"], "t": [q["b"][1]]}, p)
        return rt.sum(out["s"]) + rt.sum(out["t"][0])
    g = rt.grad(f)(p)
    np.testing.assert_allclose(N(g["a"]), [3.0, 3.0])
    np.testing.assert_allclose(N(g["b"][0]), 3.0)
    np.testing.assert_allclose(N(g["b"][1]), [8.0])
    with pytest.raises(TypeError):
        rt.cond(True, lambda: 1, 2)


@pytest.mark.parametrize("index", [-3, 0, 1, 2, 7])
def test_switch(index):
    x = T(data((3,), seed=3))
    branches = [lambda a: rt.exp(a), lambda a: a ** 3, lambda a: rt.tanh(a) * 2]

    def f(x):
        return rt.switch(index, branches, x)

    def g(x):
        return branches[min(max(index, 0), 2)](x)  # clamped, as JAX
    same_derivatives(f, g, (x,))
    # a tensor index
    same_tree(rt.switch(rt.scalar(rt.int64, index), branches, x), g(x))
    with pytest.raises(ValueError):
        rt.switch(0, [], x)


def test_while_loop_value_and_both_modes():
    # a data-dependent trip count: JAX cannot reverse-differentiate this; the eager tape can
    def f(x):
        return rt.while_loop(lambda v: rt.sum(v * v) < 50.0, lambda v: v * 1.5 + rt.sin(v), x)

    def g(x):
        v = x
        while float(rt.sum(v * v)) < 50.0:
            v = v * 1.5 + rt.sin(v)
        return v
    x = T([0.3, -0.2, 0.5])
    same_derivatives(f, g, (x,))
    # pytree carry (counter, value): the counter is an int, the value differentiated
    def h(x):
        i, v = rt.while_loop(lambda s: s[0] < 4, lambda s: (s[0] + 1, s[1] * x), (0, rt.ones_like(x)))
        return v
    same_derivatives(h, lambda x: x ** 4, (x,))
    assert int(rt.while_loop(lambda v: v < 100, lambda v: v * 3, rt.scalar(rt.int32, 1))) == 243


def test_fori_loop():
    x = T(data((3,), seed=4))
    w = T(data((3, 3), seed=5))

    def f(x, w):
        return rt.fori_loop(0, 5, lambda i, v: rt.tanh(w @ v) + i * 0.1, x)

    def g(x, w):
        v = x
        for i in range(5):
            v = rt.tanh(w @ v) + i * 0.1
        return v
    same_derivatives(f, g, (x, w))
    # tensor bounds, a dict carry, an empty range
    r = rt.fori_loop(rt.scalar(rt.int64, 1), rt.scalar(rt.int64, 4), lambda i, c: {"s": c["s"] + i}, {"s": T(0.0)})
    assert float(r["s"]) == 6.0
    assert rt.fori_loop(3, 3, lambda i, v: v + 1, x) is x


@pytest.mark.parametrize("reverse", [False, True])
def test_scan(reverse):
    xs = T(data((5, 2), seed=6))
    c0 = T(data((2,), seed=7))
    w = T(data((2, 2), seed=8))

    def step(c, x):
        c = rt.tanh(w @ c + x)
        return c, rt.sum(c * x)

    def f(c0, xs, w_):
        return rt.scan(lambda c, x: (rt.tanh(w_ @ c + x), rt.sum(rt.tanh(w_ @ c + x) * x)), c0, xs,
                       reverse=reverse)

    def g(c0, xs, w_):
        c, ys = c0, [None] * 5
        for i in (range(4, -1, -1) if reverse else range(5)):
            c, ys[i] = rt.tanh(w_ @ c + xs[i]), rt.sum(rt.tanh(w_ @ c + xs[i]) * xs[i])
        return c, rt.stack(ys)
    same_tree(f(c0, xs, w), g(c0, xs, w))
    sf = lambda *a: rt.sum(f(*a)[0]) + rt.sum(f(*a)[1] * T(np.arange(5.0)))  # noqa: E731
    sg = lambda *a: rt.sum(g(*a)[0]) + rt.sum(g(*a)[1] * T(np.arange(5.0)))  # noqa: E731
    same_tree(rt.grad(sf, argnums=(0, 1, 2))(c0, xs, w), rt.grad(sg, argnums=(0, 1, 2))(c0, xs, w))
    same_tree(rt.jvp(sf, (c0, xs, w), (c0, xs, w)), rt.jvp(sg, (c0, xs, w), (c0, xs, w)))
    rt.check_grads(sf, (c0, xs, w), order=2)
    c, ys = rt.scan(step, c0, xs, reverse=reverse)
    assert ys.shape == (5,)


def test_scan_pytrees_length_and_errors():
    xs = {"a": T(data((4, 2), seed=9)), "b": T(data((4,), seed=10))}
    carry, ys = rt.scan(lambda c, x: ((c[0] + x["a"], c[1] * x["b"]), {"p": x["a"] * c[1], "q": [c[0]]}),
                        (T([0.0, 0.0]), T(1.0)), xs)
    a, b = N(xs["a"]), N(xs["b"])
    np.testing.assert_allclose(N(carry[0]), a.sum(0))
    np.testing.assert_allclose(N(carry[1]), b.prod())
    np.testing.assert_allclose(N(ys["p"]), a * np.concatenate([[1.0], np.cumprod(b)[:-1]])[:, None])
    np.testing.assert_allclose(N(ys["q"][0]), np.concatenate([[[0, 0]], np.cumsum(a, 0)[:-1]]))
    # xs None: length steps, x is None
    c, ys = rt.scan(lambda c, x: (c * 2.0, c), T(1.0), None, length=4)
    assert float(c) == 16.0 and N(ys).tolist() == [1.0, 2.0, 4.0, 8.0]
    c, ys = rt.scan(lambda c, x: (c * 2.0, c), T(1.0), length=3, reverse=True)
    assert N(ys).tolist() == [4.0, 2.0, 1.0]
    g = rt.grad(lambda v: rt.sum(rt.scan(lambda c, x: (c * v, c), T(1.0), length=4)[1]))(T(2.0))
    np.testing.assert_allclose(N(g), 1 + 2 * 2 + 3 * 4)
    with pytest.raises(ValueError, match="leading sizes differ"):
        rt.scan(lambda c, x: (c, x), T(0.0), {"a": T([1.0, 2.0]), "b": T([1.0])})
    with pytest.raises(ValueError, match="leading sizes differ"):
        rt.scan(lambda c, x: (c, x), T(0.0), T([1.0, 2.0]), length=3)
    with pytest.raises(ValueError, match="give xs or length"):
        rt.scan(lambda c, x: (c, x), T(0.0))
    with pytest.raises(TypeError, match="pair"):
        rt.scan(lambda c, x: c, T(0.0), T([1.0]))


# ---------------------------------------------------------------------------
# under vmap
# ---------------------------------------------------------------------------
def lanes(f, *args, in_axes=0):
    """``vmap(f)`` and the per-lane loop, stacked: (got, want) as NumPy pytrees."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    got = rt.vmap(f, in_axes=in_axes)(*args)
    n = next(N(a).shape[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [f(*[a if ax is None else a[(slice(None),) * ax + (i,)] for a, ax in zip(args, axes)]) for i in range(n)]
    lv = [rt.tree_flatten(o)[0] for o in outs]
    gl, gt = rt.tree_flatten(got)
    want = [np.stack([N(o[k]) for o in lv]) for k in range(len(gl))]
    for g, w in zip(gl, want):
        np.testing.assert_allclose(N(g), w, rtol=1e-12, atol=1e-13)
    return got


def test_cond_with_a_batched_predicate_selects_per_lane():
    xs = T([[1.0, 2.0], [-1.0, 0.5], [0.2, -3.0], [-0.1, -0.2]])

    def f(x):
        return rt.cond(rt.sum(x) > 0, lambda a: rt.exp(a) * 2, lambda a: {"neg": -a}["neg"], x)
    lanes(f, xs)
    lanes(rt.grad(lambda x: rt.sum(f(x) ** 2)), xs)           # per-example gradients through cond
    lanes(lambda x: rt.jvp(f, (x,), (x,))[1], xs)
    # an unbatched predicate inside vmap runs one branch
    lanes(lambda x, s: rt.cond(s > 0, lambda a: a * 3, lambda a: a, x), xs, T(1.0), in_axes=(0, None))
    # branches returning different structures under a batched predicate
    with pytest.raises(TypeError, match="different structures"):
        rt.vmap(lambda x: rt.cond(x[0] > 0, lambda a: (a, a), lambda a: a, x))(xs)
    with pytest.raises(TypeError, match="different shapes"):
        rt.vmap(lambda x: rt.cond(x[0] > 0, lambda a: a, lambda a: a[:1], x))(xs)


def test_switch_with_a_batched_index():
    xs = T(data((5, 3), seed=11))
    idx = rt.asarray(np.array([0, 1, 2, -4, 9]))  # clamped: -4 -> 0, 9 -> 2
    branches = [lambda a: a + 1, lambda a: rt.sin(a) * 10, lambda a: -a * a]
    lanes(lambda i, x: rt.switch(i, branches, x), idx, xs)
    lanes(lambda i, x: rt.grad(lambda y: rt.sum(rt.switch(i, branches, y)))(x), idx, xs)


def test_while_loop_lanes_finish_at_different_iterations():
    xs = T([0.1, 1.0, 3.0, 40.0, 200.0])   # 0 to 7 iterations

    def f(x):
        return rt.while_loop(lambda v: v < 100.0, lambda v: v * 2.0 + 1.0, x)
    got = lanes(f, xs)
    assert N(got)[-1] == 200.0  # a lane done before the first iteration keeps its value
    # pytree carry with a per-lane iteration count
    got = lanes(lambda x: rt.while_loop(lambda s: s[1] < 100.0, lambda s: (s[0] + 1, s[1] * 2.0 + 1.0),
                                        (rt.scalar(rt.int64, 0), x)), xs)
    assert N(got[0]).tolist() == [7, 6, 5, 2, 0]
    # derivatives: per-lane gradient (vmap of grad) and grad of the vmapped loop
    lanes(rt.grad(f), xs)
    g = rt.grad(lambda x: rt.sum(rt.vmap(f)(x)))(xs)
    np.testing.assert_allclose(N(g), [2.0 ** 7, 2.0 ** 6, 2.0 ** 5, 4.0, 1.0])
    # matrices per lane, iteration counts differing
    ms = T(data((3, 2), seed=12, lo=0.1, hi=1.0))
    lanes(lambda m: rt.while_loop(lambda v: rt.sum(v) < 20.0, lambda v: v * 1.7 + 0.1, m), ms)


def test_fori_loop_and_scan_under_vmap():
    xs = T(data((4, 3), seed=13))
    w = T(data((3, 3), seed=14))
    lanes(lambda x: rt.fori_loop(0, 3, lambda i, v: rt.tanh(w @ v) * (i + 1), x), xs)
    # a batched upper bound: different trip counts per lane
    ups = rt.asarray(np.array([0, 1, 3, 5]))
    lanes(lambda u, x: rt.fori_loop(0, u, lambda i, v: v * 2.0 + rt.cast(i, rt.float64), x), ups, xs)
    lanes(lambda u, x: rt.grad(lambda y: rt.sum(rt.fori_loop(0, u, lambda i, v: rt.sin(v) * 1.5, y)))(x), ups, xs)
    # scan over a per-lane sequence; batched carry
    seqs = T(data((4, 5, 3), seed=15))
    lanes(lambda s: rt.scan(lambda c, x: (rt.tanh(w @ c + x), rt.sum(c)), rt.zeros(rt.float64, [3]), s), seqs)
    lanes(lambda s, c0: rt.scan(lambda c, x: (c * x, c + x), c0, s, reverse=True), seqs, xs)
    lanes(rt.grad(lambda s: rt.sum(rt.scan(lambda c, x: (rt.sin(c * x), c), rt.ones(rt.float64, [3]), s)[1])),
          seqs)


def test_grad_of_a_while_loop_jax_cannot():
    # Newton's iteration for sqrt(a): the iteration count depends on a; the gradient is 1 / (2 sqrt(a))
    def sqrt_newton(a):
        return rt.while_loop(lambda v: rt.abs(v * v - a) > 1e-12 * a, lambda v: 0.5 * (v + a / v), a)
    for a in (2.0, 9.0, 1e4):
        g = rt.grad(sqrt_newton)(T(a))
        np.testing.assert_allclose(N(g), 0.5 / np.sqrt(a), rtol=1e-6)
    rt.check_grads(lambda x: rt.while_loop(lambda v: rt.sum(v) < 10.0, lambda v: v * x, x), (T([1.5, 2.0]),))


# ---------------------------------------------------------------------------
# rematerialisation
# ---------------------------------------------------------------------------
def test_checkpoint_gradients_identical():
    x = T(data((4, 3), seed=16))
    ws = [T(data((3, 3), seed=17 + i)) for i in range(4)]

    def net(layer):
        def f(x, ws):
            h = x
            for w in ws:
                h = layer(h, w)
            return rt.sum(h * h)
        return f
    plain = net(lambda h, w: rt.tanh(h @ w))
    ck = net(rt.checkpoint(lambda h, w: rt.tanh(h @ w)))
    gp = rt.grad(plain, argnums=(0, 1))(x, ws)
    gc_ = rt.grad(ck, argnums=(0, 1))(x, ws)
    same_tree(gp, gc_, rtol=0, atol=0)  # identical, not close
    same_tree(rt.jvp(ck, (x, ws), (x, ws)), rt.jvp(plain, (x, ws), (x, ws)), rtol=1e-14, atol=0)
    rt.check_grads(ck, (x, ws), order=2)
    # pytrees in and out, a closure over a differentiated value, remat alias, no derivative: plain call
    lay = rt.remat(lambda d: {"y": rt.sin(d["a"]) * d["b"], "z": [d["a"] * 2]})
    f = lambda a, b: rt.sum(lay({"a": a, "b": b})["y"]) + rt.sum(lay({"a": a, "b": b})["z"][0])  # noqa: E731
    a, b = T(data((3,), seed=30)), T(data((3,), seed=31))
    same_tree(rt.grad(f, argnums=(0, 1))(a, b),
              rt.grad(lambda a, b: rt.sum(rt.sin(a) * b) + rt.sum(a * 2), argnums=(0, 1))(a, b))
    same_tree(lay({"a": a, "b": b}), {"y": rt.sin(a) * b, "z": [a * 2]})
    # under vmap: per-example gradients through a checkpointed layer
    xs = T(data((5, 3), seed=32))
    got = rt.vmap(rt.grad(lambda x: rt.sum(rt.checkpoint(lambda v: rt.tanh(v @ ws[0]))(x))))(xs)
    want = rt.vmap(rt.grad(lambda x: rt.sum(rt.tanh(x @ ws[0]))))(xs)
    same_tree(got, want)
    with pytest.raises(TypeError):
        rt.checkpoint(5)


def _held_after_forward(f, *args):
    """(bytes held after the forward pass of rt.vjp, bytes of that in blocks >= 64 KiB, the gradients)."""
    gc.collect()
    tracemalloc.start()
    try:
        s0 = tracemalloc.take_snapshot()
        out, vjp_fn = rt.vjp(f, *args)
        gc.collect()
        s1 = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    before = {(t.traceback[0].filename, t.traceback[0].lineno) for t in s0.traces}
    total = sum(s.size_diff for s in s1.compare_to(s0, "lineno"))
    big = sum(t.size for t in s1.traces if t.size >= 65536) - sum(t.size for t in s0.traces if t.size >= 65536)
    del before
    grads = vjp_fn(rt.ones_like(out))
    return total, big, grads


def test_checkpoint_memory_of_a_50_layer_tanh_mlp():
    width, batch, depth = 256, 64, 50
    rng = np.random.default_rng(0)
    params = [(T(rng.standard_normal((width, width)) / 16), T(rng.standard_normal(width) * 0.1))
              for _ in range(depth)]
    x = T(rng.standard_normal((batch, width)))

    def layer(h, w, b):
        return rt.tanh(h @ w + b)

    def mlp(lay):
        def f(params, x):
            h = x
            for w, b in params:
                h = lay(h, w, b)
            return rt.sum(h)
        return f
    held, held_arrays, g = _held_after_forward(mlp(layer), params, x)
    held_ck, held_arrays_ck, g_ck = _held_after_forward(mlp(rt.checkpoint(layer)), params, x)
    same_tree(g, g_ck, rtol=0, atol=0)
    act = batch * width * 8
    # without: the tape keeps 3 activations per layer (h @ w, + b, tanh); with: each layer's input only
    assert held_arrays >= 3 * depth * act and held_arrays_ck <= depth * act * 1.02, (held_arrays, held_arrays_ck)
    assert held_arrays / held_arrays_ck >= 3.0, (held_arrays, held_arrays_ck)
    # everything traced (Python objects too): 3x is the bound for one kept input per layer; ~2.98x measured
    assert held / held_ck >= 2.9, (held, held_ck)


def test_more_batched_loops():
    xs = T([0.1, 1.0, 3.0, 40.0])
    # a Python int in the carry becomes a per-lane count
    got = lanes(lambda x: rt.while_loop(lambda s: s[1] < 10, lambda s: (s[0] + 1, s[1] * 2 + 1), (0, x)), xs)
    assert N(got[0]).tolist() == [4, 3, 2, 0]
    # the condition becomes batched only after the first iteration's values
    lanes(lambda x: rt.while_loop(lambda s: s[0] < x, lambda s: (s[0] + 1.0, s[1] * 2.0), (T(0.0), T(1.0))), xs)
    # jvp of a batched loop, nested vmap
    lanes(lambda x: rt.jvp(lambda y: rt.while_loop(lambda v: v < 100.0, lambda v: v * 2.0, y), (x,), (x * 0 + 1,)), xs)
    got = rt.vmap(rt.vmap(lambda x: rt.while_loop(lambda v: v < 100.0, lambda v: v * 2.0, x)))(rt.reshape(xs, [2, 2]))
    np.testing.assert_allclose(N(got), [[102.4, 128.0], [192.0, 160.0]])
    # a batched lower bound; the index used to read the operand
    lanes(lambda lo, x: rt.fori_loop(lo, 4, lambda i, v: v + i, x), rt.asarray(np.array([0, 1, 2, 3])), xs)
    m = T(np.arange(12.0).reshape(4, 3))
    lanes(lambda u, r: rt.fori_loop(0, u, lambda i, v: v + r[i], r * 0), rt.asarray(np.array([0, 1, 2, 3])), m)


def test_batched_cond_runs_both_branches_so_guard_the_operand():
    # as in JAX, a batched cond is a select: the branch not taken still runs on every lane, and its
    # NaN derivative leaks (0 * nan); guarding the operand gives each lane the loop's gradient
    xs = T([4.0, -1.0])
    naive = N(rt.vmap(rt.grad(lambda x: rt.cond(x > 0, lambda a: rt.sqrt(a), lambda a: a * 0, x)))(xs))
    assert naive[0] == 0.25 and np.isnan(naive[1])
    safe = rt.grad(lambda x: rt.cond(x > 0, lambda a: rt.sqrt(rt.where(a > 0, a, 1.0)), lambda a: a * 0, x))
    np.testing.assert_allclose(N(lanes(safe, xs)), [0.25, 0.0])
