"""rt.pmap without a cluster (a vmap whose collectives reduce over the named axis): collectives
against a per-shard NumPy loop, derivatives against JAX's named-axis vmap and central
differences, compositions with grad, jvp, jit and vmap, a data-parallel training step against
the full-batch step, and errors.  The cluster form is in tests/test_pmap_cluster.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import runetensor as rt


def data(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape).astype(dtype)


def N(t):
    return rt.to_numpy(t)


def tree_sum(xs, op=np.add):
    """The documented order: the first ceil(n/2) shards, then the rest, recursively."""
    if len(xs) == 1:
        return xs[0]
    h = (len(xs) + 1) // 2
    return op(tree_sum(xs[:h], op), tree_sum(xs[h:], op))


# ---------------------------------------------------------------------------
# collectives against a loop over the shards
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_psum_is_the_fixed_tree_over_shards_in_every_shard(n):
    x = data((n, 4, 3), seed=n)
    out = N(rt.pmap(lambda v: rt.psum(v, "s"), "s")(rt.asarray(x)))
    want = tree_sum([x[i] for i in range(n)])
    for i in range(n):
        np.testing.assert_array_equal(out[i], want)  # bit for bit: the documented order
    np.testing.assert_allclose(out[0], x.sum(0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 3, 4])
def test_pmean_pmax_all_gather_axis_index_equal_the_loop(n):
    x = data((n, 2, 5), seed=10 + n)
    f = rt.pmap(lambda v: (rt.pmean(v, "s"), rt.pmax(v, "s"), rt.all_gather(v, "s"), rt.axis_index("s")), "s")
    mean, mx, gat, idx = (N(o) for o in f(rt.asarray(x)))
    want_mean = tree_sum([x[i] for i in range(n)]) / np.float32(n)
    for i in range(n):
        np.testing.assert_array_equal(mean[i], want_mean)
        np.testing.assert_array_equal(mx[i], x.max(0))
        np.testing.assert_array_equal(gat[i], x)
    np.testing.assert_array_equal(idx, np.arange(n, dtype=np.int32))
    assert idx.dtype == np.int32


def test_collective_over_a_pytree_and_out_axes_none_for_replicated_results():
    x = data((4, 3), seed=1)
    y = data((4, 2, 2), seed=2)
    f = rt.pmap(lambda a, b: rt.psum({"a": a, "b": b * 2.0}, "s"), "s", out_axes=None)
    out = f(rt.asarray(x), rt.asarray(y))
    np.testing.assert_array_equal(N(out["a"]), tree_sum(list(x)))
    np.testing.assert_array_equal(N(out["b"]), tree_sum(list(y * 2.0)))


def test_collective_of_a_value_shared_by_every_shard_counts_each_shard():
    c = rt.asarray(data((3,), seed=3))
    out = rt.pmap(lambda x, c: rt.psum(c, "s") + x * 0.0, "s", in_axes=(0, None))(rt.zeros(rt.float32, [4, 3]), c)
    np.testing.assert_array_equal(N(out)[2], tree_sum([N(c)] * 4))
    n = rt.pmap(lambda x: rt.psum(1, "s") + x * 0, "s")(rt.zeros(rt.int64, [6]))
    assert N(n).tolist() == [6] * 6


def test_pmax_propagates_nan_and_integer_psum_is_exact():
    x = np.array([[1.0, 2.0], [np.nan, 0.0], [3.0, -1.0]], np.float32)
    out = N(rt.pmap(lambda v: rt.pmax(v, "s"), "s")(rt.asarray(x)))
    assert np.isnan(out[:, 0]).all() and (out[:, 1] == 2.0).all()
    xi = np.array([2**62, 2**62, -2**62, 5], np.int64)
    assert N(rt.pmap(lambda v: rt.psum(v, "s"), "s")(rt.asarray(xi)))[0] == 2**62 + 5


def test_nested_named_axes_reduce_over_their_own_axis():
    x = data((3, 4, 2), seed=4)
    inner = rt.vmap(lambda v: (rt.psum(v, "i"), rt.psum(v, "o"), rt.axis_index("o") * 10 + rt.axis_index("i")),
                    axis_name="i")
    si, so, idx = (N(o) for o in rt.pmap(inner, "o")(rt.asarray(x)))
    for a in range(3):
        for b in range(4):
            np.testing.assert_array_equal(si[a, b], tree_sum(list(x[a])))
            np.testing.assert_array_equal(so[a, b], tree_sum(list(x[:, b])))
            assert idx[a, b] == 10 * a + b


def test_random_numbers_keyed_by_shard_index_match_the_loop():
    key = rt.random.key(7)
    f = rt.pmap(lambda x: x + rt.random.uniform(rt.random.fold_in(key, rt.axis_index("s")), [3]), "s")
    out = N(f(rt.zeros(rt.float32, [4, 3])))
    for i in range(4):
        np.testing.assert_array_equal(out[i], N(rt.random.uniform(rt.random.fold_in(key, i), [3])))
    assert not np.array_equal(out[0], out[1])


# ---------------------------------------------------------------------------
# derivatives
# ---------------------------------------------------------------------------
def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


@pytest.mark.parametrize("op", ["psum", "pmean", "pmax", "all_gather"])
def test_grad_through_collectives_matches_jax_named_vmap(op):
    jax = _jax()
    jnp, lax = jax.numpy, jax.lax
    x = data((4, 3), seed=20, dtype=np.float64)
    x[2, 1] = x[0, 1] = 5.0  # a tie for pmax
    w = data((4, 3), seed=21, dtype=np.float64)  # a non-uniform cotangent per shard

    def rt_f(v, c):
        r = getattr(rt, op)(v * v, "s")
        if op == "all_gather":
            r = r[1] * 3.0 + r[3]
        return rt.sum(rt.sin(r) * c)

    jops = {"psum": lax.psum, "pmean": lax.pmean, "pmax": lax.pmax, "all_gather": lax.all_gather}

    def jax_f(v, c):
        r = jops[op](v * v, "s")
        if op == "all_gather":
            r = r[1] * 3.0 + r[3]
        return jnp.sum(jnp.sin(r) * c)

    got = N(rt.pmap(rt.grad(rt_f), "s")(rt.asarray(x), rt.asarray(w)))
    if op == "pmax":  # JAX routes a tie's cotangent differently: check against the documented rule
        m = (x * x) == (x * x).max(0)
        g = (np.cos((x * x).max(0)) * w).sum(0)
        want = m * g / m.sum(0) * 2 * x
    else:
        want = np.asarray(jax.vmap(jax.grad(jax_f), axis_name="s")(x, w))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_jvp_of_collectives_equals_central_differences():
    x = data((3, 4), seed=30, dtype=np.float64)
    t = data((3, 4), seed=31, dtype=np.float64)

    def f(v):
        return rt.pmap(lambda a: rt.sin(rt.pmean(a * a, "s")) + rt.pmax(a, "s") * rt.all_gather(a, "s")[0], "s")(v)

    _, tan = rt.jvp(f, (rt.asarray(x),), (rt.asarray(t),))
    eps = 1e-6
    fd = (N(f(rt.asarray(x + eps * t))) - N(f(rt.asarray(x - eps * t)))) / (2 * eps)
    np.testing.assert_allclose(N(tan), fd, rtol=1e-6, atol=1e-6)


def test_grad_of_a_loss_outside_pmap_equals_central_differences():
    x = data((4, 3), seed=40, dtype=np.float64)

    def loss(v):
        y = rt.pmap(lambda a: a * rt.psum(rt.tanh(a), "s") / rt.pmax(a * a + 1.0, "s"), "s")(v)
        return rt.sum(y * rt.asarray(np.arange(12.0).reshape(4, 3)))

    g = N(rt.grad(loss)(rt.asarray(x)))
    eps = 1e-6
    fd = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        fd[idx] = (float(loss(rt.asarray(x + d))) - float(loss(rt.asarray(x - d)))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------
# a data-parallel training step
# ---------------------------------------------------------------------------
def _loss(p, x, y):
    h = rt.tanh(x @ p["w1"] + p["b1"])
    return rt.mean((h @ p["w2"] - y) ** 2)


def _params():
    return {"w1": rt.asarray(data((5, 8), seed=50) * 0.5), "b1": rt.zeros(rt.float32, [8]),
            "w2": rt.asarray(data((8, 2), seed=51) * 0.5)}


def _step(opt):
    def step(p, state, x, y):
        lv, g = rt.value_and_grad(_loss)(p, x, y)
        g, lv = rt.pmean((g, lv), "batch")
        updates, state = opt.update(g, state, p)
        return rt.optim.apply_updates(p, updates), state, lv
    return step


def test_data_parallel_adam_steps_equal_full_batch_steps():
    opt = rt.optim.adam(1e-2)
    p = _params()
    state = opt.init(p)
    x = data((4, 6, 5), seed=52)
    y = data((4, 6, 2), seed=53)
    pstep = rt.pmap(_step(opt), "batch", in_axes=(None, None, 0, 0), out_axes=None)
    p_dp, s_dp = p, state
    p_ref, s_ref = p, state
    for _ in range(3):
        p_dp, s_dp, lv = pstep(p_dp, s_dp, rt.asarray(x), rt.asarray(y))
        l_ref, g = rt.value_and_grad(_loss)(p_ref, rt.asarray(x.reshape(24, 5)), rt.asarray(y.reshape(24, 2)))
        u, s_ref = opt.update(g, s_ref, p_ref)
        p_ref = rt.optim.apply_updates(p_ref, u)
        np.testing.assert_allclose(float(lv), float(l_ref), rtol=1e-5)
    for k in p:
        np.testing.assert_allclose(N(p_dp[k]), N(p_ref[k]), rtol=1e-5, atol=1e-6)


def test_jitted_pmap_step_equals_the_eager_one():
    opt = rt.optim.sgd(0.1)
    p = _params()
    state = opt.init(p)
    x, y = rt.asarray(data((4, 6, 5), seed=54)), rt.asarray(data((4, 6, 2), seed=55))
    eager = rt.pmap(_step(opt), "batch", in_axes=(None, None, 0, 0), out_axes=None)
    jitted = rt.jit(eager)
    pe, _, le = eager(p, state, x, y)
    for _ in range(2):  # the trace, then the replay of the compiled program
        pj, _, lj = jitted(p, state, x, y)
        for k in p:
            np.testing.assert_allclose(N(pj[k]), N(pe[k]), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(float(lj), float(le), rtol=1e-6)
    assert rt.jit_stats(jitted)["cache_hits"] >= 1


def test_jit_inside_pmap_runs_inline_with_collectives():
    f = rt.pmap(rt.jit(lambda v: v - rt.pmean(v, "s")), "s")
    x = data((3, 4), seed=56)
    np.testing.assert_allclose(N(f(rt.asarray(x))), x - tree_sum(list(x)) / np.float32(3), rtol=1e-6)


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def test_collective_outside_its_axis_raises_naming_the_axis():
    with pytest.raises(ValueError, match="psum: no mapped axis named 'batch'"):
        rt.psum(rt.ones(rt.float32, [2]), "batch")
    with pytest.raises(ValueError, match="axis_index: no mapped axis named 'j'"):
        rt.pmap(lambda x: x * rt.axis_index("j"), "i")(rt.ones(rt.float32, [2]))
    with pytest.raises(ValueError, match="pmax: no mapped axis named 'k'"):
        rt.vmap(lambda x: rt.pmax(x, "k"), axis_name="i")(rt.ones(rt.float32, [2]))


def test_bad_arguments_raise_specific_errors():
    with pytest.raises(TypeError, match="pmean: expected a floating-point"):
        rt.pmap(lambda x: rt.pmean(x, "s"), "s")(rt.ones(rt.int32, [2]))
    with pytest.raises(TypeError, match="psum: expected a numeric tensor, got bool"):
        rt.pmap(lambda x: rt.psum(x, "s"), "s")(rt.asarray([True, False]))
    with pytest.raises(TypeError, match="pmax: complex"):
        rt.pmap(lambda x: rt.pmax(x, "s"), "s")(rt.ones(rt.complex64, [2]))
    with pytest.raises(TypeError, match="pmap: axis_name must be hashable"):
        rt.pmap(lambda x: x, ["s"])
    with pytest.raises(TypeError, match="pmap: axis_name must not be None"):
        rt.pmap(lambda x: x, None)
    with pytest.raises(TypeError, match="pmap: expected a function"):
        rt.pmap(3, "s")
    with pytest.raises(ValueError, match="out_axes None for an output that differs"):
        rt.pmap(lambda x: x * 2.0, "s", out_axes=None)(rt.ones(rt.float32, [2]))
    with pytest.raises(ValueError, match="different batch sizes"):
        rt.pmap(lambda a, b: a + b, "s")(rt.ones(rt.float32, [2]), rt.ones(rt.float32, [3]))


# ---------------------------------------------------------------------------
# the data-parallel digits example, in one process
# ---------------------------------------------------------------------------
def test_digits_dp_without_a_cluster_matches_the_single_process_training(capsys):
    pytest.importorskip("sklearn")
    from runetensor.examples import digits, digits_dp
    data_ = digits.load_data()
    one = digits.train("cnn", epochs=1, train_size=100, data=data_, progress=None)
    dp = digits_dp.train_dp("cnn", client=None, shards=4, epochs=1, train_size=100, data=data_, progress=None)
    np.testing.assert_allclose(dp.losses, one.losses, rtol=1e-4)
    assert digits_dp.main(["--workers", "0", "--epochs", "1", "--train-size", "64", "--quiet"]) == 0
    assert "test accuracy" in capsys.readouterr().out
    with pytest.raises(ValueError, match=r"batch_size \(60\) must be a positive multiple of shards \(8\)"):
        digits_dp.train_dp("cnn", batch_size=60, shards=8, data=data_)
