"""The extra optimizers, transformations, schedules and loss scaling of rt.optim, against optax
(trajectories in float64), under rt.jit (one trace per training step), and a float16 training run
with dynamic loss scaling that follows the float32 run."""
from __future__ import annotations

import math

import numpy as np
import pytest

import runetensor as rt
from runetensor import optim

try:        # the oracle; the jit, loss-scaling and hand-computed tests run without it
    import jax
    import optax
    jnp = jax.numpy
except ImportError:  # pragma: no cover
    jax = optax = jnp = None
needs_optax = pytest.mark.skipif(optax is None, reason="optax (and JAX) not installed")


@pytest.fixture(autouse=True)
def x64():
    if jax is None:  # pragma: no cover
        yield
        return
    with jax.enable_x64(True):
        yield


SHAPES = {"w": (3, 4), "b": (4,), "k": (2, 3, 5)}


def _init():
    r = np.random.default_rng(0)
    return {k: r.normal(size=s) for k, s in SHAPES.items()}


def _target():
    r = np.random.default_rng(1)
    return {k: r.normal(size=s) for k, s in SHAPES.items()}


def _grads(p, step):
    """The gradient of a fixed, uneven quadratic, plus a deterministic wobble per step."""
    t = _target()
    out = {}
    for i, k in enumerate(sorted(SHAPES)):
        scale = np.linspace(0.5, 3.0, int(np.prod(SHAPES[k]))).reshape(SHAPES[k]) * (i + 1)
        out[k] = scale * (np.asarray(p[k]) - t[k]) + 0.1 * math.sin(step + i)
    return out


def _run_rt(opt, steps, p0=None, jit=False):
    p = {k: rt.asarray(v) for k, v in (p0 or _init()).items()}
    state = opt.init(p)

    def step(p, state, g):
        u, state = opt.update(g, state, p)
        return optim.apply_updates(p, u), state

    f = rt.jit(step) if jit else step
    hist = []
    for i in range(steps):
        g = {k: rt.asarray(v) for k, v in _grads({k: rt.to_numpy(v) for k, v in p.items()}, i).items()}
        p, state = f(p, state, g)
        hist.append({k: rt.to_numpy(v).copy() for k, v in p.items()})
    return hist, (rt.jit_stats(f) if jit else None)


def _run_optax(tx, steps):
    p = {k: jnp.asarray(v) for k, v in _init().items()}
    state = tx.init(p)
    hist = []
    for i in range(steps):
        g = {k: jnp.asarray(v) for k, v in _grads({k: np.asarray(v) for k, v in p.items()}, i).items()}
        u, state = tx.update(g, state, p)
        p = optax.apply_updates(p, u)
        hist.append({k: np.asarray(v) for k, v in p.items()})
    return hist


CASES = [
    ("lamb", lambda: optim.lamb(0.05), lambda: optax.lamb(0.05)),
    ("lamb_wd", lambda: optim.lamb(0.05, b1=0.8, b2=0.99, eps=1e-4, weight_decay=0.1),
     lambda: optax.lamb(0.05, b1=0.8, b2=0.99, eps=1e-4, weight_decay=0.1)),
    ("radam", lambda: optim.radam(0.05), lambda: optax.radam(0.05)),
    ("radam_thr", lambda: optim.radam(0.05, b2=0.9, threshold=4.5), lambda: optax.radam(0.05, b2=0.9, threshold=4.5)),
    ("lars", lambda: optim.lars(0.5, weight_decay=0.01, trust_coefficient=0.02),
     lambda: optax.lars(0.5, weight_decay=0.01, trust_coefficient=0.02)),
    ("lars_nesterov", lambda: optim.lars(0.5, trust_coefficient=0.02, eps=1e-3, momentum=0.8, nesterov=True),
     lambda: optax.lars(0.5, trust_coefficient=0.02, eps=1e-3, momentum=0.8, nesterov=True)),
    ("adan", lambda: optim.adan(0.05), lambda: optax.adan(0.05)),
    ("adan_wd", lambda: optim.adan(0.05, b1=0.9, b2=0.8, b3=0.95, eps=1e-6, eps_root=0.0, weight_decay=0.05),
     lambda: optax.adan(0.05, b1=0.9, b2=0.8, b3=0.95, eps=1e-6, eps_root=0.0, weight_decay=0.05)),
    ("adafactor", lambda: optim.adafactor(0.05, min_dim_size_to_factor=3),
     lambda: optax.adafactor(0.05, min_dim_size_to_factor=3)),
    ("adafactor_all", lambda: optim.adafactor(0.05, min_dim_size_to_factor=2, decay_rate=0.7, clipping_threshold=0.5,
                                              momentum=0.9, weight_decay_rate=0.01),
     lambda: optax.adafactor(0.05, min_dim_size_to_factor=2, decay_rate=0.7, clipping_threshold=0.5, momentum=0.9,
                             weight_decay_rate=0.01, dtype_momentum=jnp.float64)),
    ("adafactor_plain", lambda: optim.adafactor(0.05, factored=False, multiply_by_parameter_scale=False,
                                                clipping_threshold=None),
     lambda: optax.adafactor(0.05, factored=False, multiply_by_parameter_scale=False, clipping_threshold=None)),
    ("trust_centralize", lambda: optim.chain(optim.centralize(), optim.adam(0.05), optim.scale_by_trust_ratio(
        min_norm=0.1, trust_coefficient=0.05, eps=1e-3)),
     lambda: optax.chain(optax.centralize(), optax.adam(0.05), optax.scale_by_trust_ratio(
         min_norm=0.1, trust_coefficient=0.05, eps=1e-3))),
    ("schedules", lambda: optim.lamb(optim.sgdr_schedule([dict(init_value=0.0, peak_value=0.1, warmup_steps=3,
                                                                decay_steps=10)] * 3)),
     lambda: optax.lamb(optax.sgdr_schedule([dict(init_value=0.0, peak_value=0.1, warmup_steps=3,
                                                   decay_steps=10)] * 3))),
]


#: optax computes adafactor's beta_t and a schedule of an int32 count in float32 (here: float64)
RTOL = {"adafactor": 1e-5, "adafactor_all": 1e-5, "adafactor_plain": 1e-5, "schedules": 1e-5}


@needs_optax
@pytest.mark.parametrize("name, ours, theirs", CASES, ids=[c[0] for c in CASES])
def test_trajectory_matches_optax(name, ours, theirs):
    mine, _ = _run_rt(ours(), 30)
    ref = _run_optax(theirs(), 30)
    rtol = RTOL.get(name, 1e-9)
    for i, (a, b) in enumerate(zip(mine, ref)):
        for k in SHAPES:
            np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=rtol * 1e-3, err_msg=f"{name} step {i} leaf {k}")
    moved = max(float(np.abs(mine[-1][k] - _init()[k]).max()) for k in SHAPES)
    assert moved > 1e-2, name        # the optimizer did something


@pytest.mark.parametrize("name, ours, theirs", [c for c in CASES if c[0] in ("lamb", "radam", "adan", "adafactor_all",
                                                                              "lars", "schedules")],
                         ids=["lamb", "radam", "lars", "adan", "adafactor_all", "schedules"])
def test_jitted_step_traces_once_and_matches_eager(name, ours, theirs):
    eager, _ = _run_rt(ours(), 12)
    jitted, stats = _run_rt(ours(), 12, jit=True)
    assert stats["traces"] == 1, stats
    for a, b in zip(eager, jitted):
        for k in SHAPES:
            np.testing.assert_allclose(a[k], b[k], rtol=1e-12, atol=1e-14)


def test_float32_leaves_stay_float32():
    p = {k: rt.asarray(v.astype(np.float32)) for k, v in _init().items()}
    for opt in (optim.lamb(0.1), optim.radam(0.1), optim.lars(0.1), optim.adan(0.1), optim.adafactor(0.1)):
        s = opt.init(p)
        g = {k: rt.asarray(v.astype(np.float32)) for k, v in _grads(_init(), 0).items()}
        u, s = opt.update(g, s, p)
        assert all(u[k].dtype == rt.float32 for k in SHAPES)
        assert optim.apply_updates(p, u)["w"].dtype == rt.float32


# ---------------------------------------------------------------------------------------------
# schedules
# ---------------------------------------------------------------------------------------------

SCHEDULES = [
    ("piecewise", lambda m: m.piecewise_constant_schedule(0.5, {3: 0.5, 10: 0.1, 7: 2.0})),
    ("piecewise_none", lambda m: m.piecewise_constant_schedule(0.5)),
    ("polynomial", lambda m: m.polynomial_schedule(1.0, 0.1, 2.5, 20, transition_begin=4)),
    ("polynomial_up", lambda m: m.polynomial_schedule(0.0, 1.0, 1.0, 7)),
    ("onecycle", lambda m: m.cosine_onecycle_schedule(40, 0.3)),
    ("onecycle_odd", lambda m: m.cosine_onecycle_schedule(33, 1.0, pct_start=0.45, div_factor=5.0,
                                                          final_div_factor=50.0)),
    ("sgdr", lambda m: m.sgdr_schedule([dict(init_value=0.1, peak_value=1.0, warmup_steps=3, decay_steps=12),
                                         dict(init_value=0.0, peak_value=0.5, warmup_steps=0, decay_steps=8,
                                              end_value=0.05)])),
    ("join", lambda m: m.join_schedules([m.polynomial_schedule(0.0, 1.0, 1.0, 5), m.cosine_decay_schedule(1.0, 20),
                                         m.exponential_decay(0.3, 4, 0.5)], [5, 25])),
]


@needs_optax
@pytest.mark.parametrize("name, make", SCHEDULES, ids=[s[0] for s in SCHEDULES])
def test_schedule_values_match_optax(name, make):
    ours, theirs = make(optim), make(optax)
    for t in range(60):
        assert float(ours(t)) == pytest.approx(float(theirs(t)), rel=1e-12, abs=1e-15), (name, t)
        assert float(ours(rt.scalar(rt.int32, t))) == pytest.approx(float(theirs(t)), rel=1e-12, abs=1e-15)


def test_schedules_under_jit_take_the_count_tensor():
    s = optim.cosine_onecycle_schedule(40, 0.3)
    f = rt.jit(lambda c: s(c))
    for t in (0, 5, 12, 39, 41):
        assert float(f(rt.scalar(rt.int32, t))) == pytest.approx(float(s(t)), rel=1e-14)
    assert rt.jit_stats(f)["traces"] == 1


def test_reduce_on_plateau_by_hand():
    pl = optim.reduce_on_plateau(factor=0.5, patience=2, cooldown=1)
    s = pl.init(None)
    scales = []
    for v in [3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0]:
        _, s = pl.update([rt.ones(rt.float32, [1])], s, value=v)
        scales.append(float(s.scale))
    # no improvement at the 3rd and 4th value: halve; one evaluation of cooldown; two more: halve
    assert scales == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]


def test_apply_if_finite_by_hand():
    opt = optim.apply_if_finite(optim.sgd(1.0), 1)
    p = [rt.zeros(rt.float64, [1])]
    s = opt.init(p)
    got = []
    for g in [1.0, float("nan"), 2.0, float("nan"), float("nan"), 3.0]:
        u, s = opt.update([rt.full(rt.float64, [1], g)], s, p)
        got.append(rt.to_array(u[0])[0])
    assert got[0] == -1.0 and got[1] == 0.0 and got[2] == -2.0 and got[3] == 0.0
    assert math.isnan(got[4]) and got[5] == -3.0     # the 2nd bad step in a row goes through
    assert int(s.total_notfinite) == 3 and int(s.notfinite_count) == 0


@needs_optax
def test_reduce_on_plateau_matches_optax():
    values = [5.0, 4.0, 4.0, 4.0, 3.999, 4.0, 4.0, 4.0, 4.0, 4.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0,
              2.0, 2.0]
    for kw in (dict(factor=0.5, patience=2), dict(factor=0.5, patience=1, cooldown=2, min_scale=0.2),
               dict(factor=0.3, patience=1, accumulation_size=2, rtol=0.01, atol=0.01)):
        ours, theirs = optim.reduce_on_plateau(**kw), optax.contrib.reduce_on_plateau(**kw)
        p = {"w": jnp.ones(2)}
        s1, s2 = ours.init(None), theirs.init(p)
        their_update = jax.jit(theirs.update)
        scales = []
        for v in values:
            u1, s1 = ours.update({"w": rt.ones(rt.float32, [2])}, s1, value=v)
            u2, s2 = their_update(p, s2, value=jnp.asarray(v))
            assert float(s1.scale) == pytest.approx(float(s2.scale), rel=1e-6), (kw, v)
            assert rt.to_array(u1["w"])[0] == pytest.approx(float(s2.scale), rel=1e-6)
            scales.append(float(s1.scale))
        assert min(scales) < 1.0, kw


# ---------------------------------------------------------------------------------------------
# transformations
# ---------------------------------------------------------------------------------------------

def test_add_noise_variance_decays_and_is_keyed():
    tr = optim.add_noise(0.04, 0.55, rt.random.key(3))
    s = tr.init(None)
    stds = []
    zeros = [rt.zeros(rt.float64, [20000])]
    for t in range(4):
        u, s = tr.update(zeros, s)
        stds.append(float(rt.std(u[0])))
        assert abs(float(rt.mean(u[0]))) < 5 * stds[-1] / math.sqrt(20000)
    for t, sd in enumerate(stds):
        assert sd == pytest.approx(math.sqrt(0.04 / (1 + t) ** 0.55), rel=0.03)
    again, _ = optim.add_noise(0.04, 0.55, rt.random.key(3)).update(zeros, optim.add_noise(0.04, 0.55,
                                                                                        rt.random.key(3)).init(None))
    first, _ = tr.update(zeros, tr.init(None))
    assert rt.to_array(again[0])[:5] == rt.to_array(first[0])[:5]
    f = rt.jit(lambda g, st: tr.update(g, st))
    uj, sj = f(zeros, tr.init(None))
    np.testing.assert_array_equal(rt.to_numpy(uj[0]), rt.to_numpy(first[0]))     # same draws under jit


@needs_optax
def test_apply_if_finite_matches_optax():
    grads = [1.0, np.nan, 2.0, np.inf, np.nan, np.nan, 3.0, np.nan, np.nan, np.nan]
    ours = optim.apply_if_finite(optim.adam(0.1), 2)
    theirs = optax.apply_if_finite(optax.adam(0.1, eps=1e-8), 2)
    p1, p2 = [rt.ones(rt.float64, [2])], [jnp.ones(2)]
    s1, s2 = ours.init(p1), theirs.init(p2)
    their_update = jax.jit(theirs.update)
    for g in grads:
        u1, s1 = ours.update([rt.full(rt.float64, [2], g)], s1, p1)
        u2, s2 = their_update([jnp.full(2, g)], s2, p2)
        np.testing.assert_array_equal(np.isnan(rt.to_numpy(u1[0])), np.isnan(np.asarray(u2[0])))
        np.testing.assert_allclose(rt.to_numpy(u1[0]), np.asarray(u2[0]), rtol=1e-12)
        assert int(s1.notfinite_count) == int(s2.notfinite_count)
        assert int(s1.total_notfinite) == int(s2.total_notfinite)
        assert bool(s1.last_finite) == bool(s2.last_finite)


def test_grads_finite():
    assert bool(optim.grads_finite({})) is True
    assert bool(optim.grads_finite([rt.ones(rt.float16, [3]), rt.ones(rt.int32, [2])])) is True
    assert bool(optim.grads_finite([rt.ones(rt.float32, [3]), rt.create(rt.bfloat16, [1], [float("nan")])])) is False
    f = rt.jit(optim.grads_finite)
    assert bool(f([rt.create(rt.float32, [2], [1.0, float("-inf")])])) is False
    assert bool(f([rt.create(rt.float32, [2], [1.0, 2.0])])) is True
    assert rt.jit_stats(f)["traces"] == 1


# ---------------------------------------------------------------------------------------------
# loss scaling
# ---------------------------------------------------------------------------------------------

def test_dynamic_loss_scale_rule():
    ls = optim.DynamicLossScale(2.0 ** 4, period=3, factor=2.0, min_loss_scale=2.0)
    seq = [True, True, True, True, False, False, False, False, True, True, True]
    got = []
    for f in seq:
        ls = ls.adjust(rt.full(rt.bool, [], f))
        got.append((float(ls.loss_scale), int(ls.counter)))
    # hand-computed: grow on every 3rd good step in a row, halve on a bad one (not below 2), count reset
    assert got == [(16, 1), (16, 2), (32, 0), (32, 1), (16, 0), (8, 0), (4, 0), (2, 0), (2, 1), (2, 2), (4, 0)]


def test_loss_scale_is_a_pytree_through_jit():
    @rt.jit
    def step(ls, g):
        g = ls.unscale(g)
        return ls.adjust(optim.grads_finite(g)), g

    ls = optim.DynamicLossScale(1024.0, period=2)
    g = [rt.full(rt.float16, [2], 512.0)]
    ls, u = step(ls, g)
    assert float(ls.loss_scale) == 1024.0 and int(ls.counter) == 1
    np.testing.assert_array_equal(rt.to_numpy(u[0]).astype(np.float32), [0.5, 0.5])
    ls, u = step(ls, [rt.full(rt.float16, [2], float("inf"))])
    assert float(ls.loss_scale) == 512.0 and int(ls.counter) == 0
    assert rt.jit_stats(step)["traces"] == 1
    st = optim.StaticLossScale(8.0)
    assert st.adjust(rt.full(rt.bool, [], False)) is st
    assert float(st.scale(rt.scalar(rt.float32, 0.25))) == 2.0


def _mlp_data():
    r = np.random.default_rng(0)
    x = r.normal(size=(256, 8)).astype(np.float32)
    w = r.normal(size=(8, 3))
    y = (x @ w).argmax(1).astype(np.int32)
    return rt.asarray(x), rt.asarray(y)


def _mlp_init():
    r = np.random.default_rng(1)
    return {"w1": rt.asarray((r.normal(size=(8, 16)) / math.sqrt(8)).astype(np.float32)),
            "b1": rt.zeros(rt.float32, [16]),
            "w2": rt.asarray((r.normal(size=(16, 3)) / 4).astype(np.float32)),
            "b2": rt.zeros(rt.float32, [3])}


def _loss(params, x, y, dtype):
    p = {k: rt.cast(v, dtype) for k, v in params.items()}
    h = rt.relu(rt.matmul(rt.cast(x, dtype), p["w1"]) + p["b1"])
    logits = rt.cast(rt.matmul(h, p["w2"]) + p["b2"], rt.float32)          # the loss in float32
    logp = logits - rt.logsumexp(logits, axes=[-1], keepdims=True)
    return -rt.mean(rt.sum(logp * rt.one_hot(y, 3), axes=[-1])) * 1e-5     # a small loss: float16 grads underflow


def _train(dtype, loss_scale, steps=60):
    x, y = _mlp_data()
    params = _mlp_init()
    opt = optim.adam(0.05)
    state = opt.init(params)
    ls = loss_scale

    @rt.jit
    def step(params, state, ls):
        loss, grads = rt.value_and_grad(lambda p: ls.scale(_loss(p, x, y, dtype)))(params)
        grads = ls.unscale(grads)
        finite = optim.grads_finite(grads)
        updates, new_state = opt.update(grads, state, params)
        new_params = optim.apply_updates(params, updates)
        keep = lambda new, old: rt.tree_unflatten(rt.tree_flatten(old)[1], [  # noqa: E731
            rt.where(finite, a, b) for a, b in zip(rt.tree_flatten(new)[0], rt.tree_flatten(old)[0])])
        return keep(new_params, params), keep(new_state, state), ls.adjust(finite), ls.unscale(loss)

    losses = []
    for _ in range(steps):
        params, state, ls, loss = step(params, state, ls)
        losses.append(float(loss))
    assert rt.jit_stats(step)["traces"] == 1
    return np.array(losses), ls


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_training_with_loss_scaling_follows_float32(dtype):
    ref, _ = _train(rt.float32, optim.StaticLossScale(1.0))
    got, ls = _train(getattr(rt, dtype), optim.DynamicLossScale(2.0 ** 15, period=20))
    assert ref[-1] < 0.5 * ref[0]                                       # the float32 run learns
    tol = 0.02 if dtype == "float16" else 0.06                          # bfloat16 keeps 8 bits of mantissa
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * ref[0])
    if dtype == "float16":
        plain, _ = _train(rt.float16, optim.StaticLossScale(1.0))
        # without scaling, float16 gradients of this small loss underflow: the run falls behind
        assert np.abs(plain - ref).max() > 5 * np.abs(got - ref).max()


def test_errors_name_the_function():
    with pytest.raises(ValueError, match="lamb: b1 must be in"):
        optim.lamb(0.1, b1=1.0)
    with pytest.raises(TypeError, match="radam: lr must be"):
        optim.radam("fast")
    with pytest.raises(ValueError, match="lars: update needs params"):
        o = optim.lars(0.1)
        o.update([rt.ones(rt.float32, [2])], o.init([rt.ones(rt.float32, [2])]))
    with pytest.raises(TypeError, match="add_noise: key"):
        optim.add_noise(0.1, 0.5, 3)
    with pytest.raises(ValueError, match="join_schedules: 2 schedules need 1 boundaries"):
        optim.join_schedules([optim.constant_schedule(1.0)] * 2, [])
    with pytest.raises(ValueError, match="polynomial_schedule: transition_steps must be > 0"):
        optim.polynomial_schedule(1.0, 0.0, 1.0, 0)
    with pytest.raises(TypeError, match="reduce_on_plateau: update needs the monitored value"):
        pl = optim.reduce_on_plateau()
        pl.update([rt.ones(rt.float32, [1])], pl.init(None))
    with pytest.raises(ValueError, match="DynamicLossScale: factor must be in"):
        optim.DynamicLossScale(factor=1.0)
    with pytest.raises(ValueError, match="StaticLossScale: loss_scale must be in"):
        optim.StaticLossScale(0.0)
    with pytest.raises(TypeError, match="apply_if_finite: inner must be"):
        optim.apply_if_finite(optim.adam, 1)


def test_radam_matches_torch_where_their_eps_agree():
    torch = pytest.importorskip("torch")
    # PyTorch's RAdam adds eps to sqrt(v) before the bias correction, optax (and rt) after; with
    # eps = 0 the rules coincide
    mine, _ = _run_rt(optim.radam(0.05, b1=0.8, b2=0.99, eps=0.0), 30)
    p = {k: torch.tensor(v, requires_grad=True) for k, v in _init().items()}
    opt = torch.optim.RAdam(list(p.values()), lr=0.05, betas=(0.8, 0.99), eps=0.0)
    for i in range(30):
        g = _grads({k: v.detach().numpy() for k, v in p.items()}, i)
        for k, v in p.items():
            v.grad = torch.tensor(g[k])
        opt.step()
        for k in SHAPES:
            np.testing.assert_allclose(mine[i][k], p[k].detach().numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=f"step {i} leaf {k}")
