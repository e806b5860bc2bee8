"""rt.optim: trajectories on a fixed quadratic against NumPy references of the published update rules
and against torch.optim; schedules; clipping and chaining; a training loop (docs/optim.md)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import runetensor as rt
from runetensor import optim

N_STEPS = 40
rng = np.random.default_rng(0)
_M = rng.standard_normal((6, 6))
A = _M @ _M.T / 6 + np.eye(6) * 0.5          # symmetric positive definite
B = rng.standard_normal(6)
P0 = rng.standard_normal(6)


def grad_np(p):
    return A @ p - B


def to_rt(x, d=rt.float64):
    return rt.asarray(np.asarray(x, dtype=np.float64).tolist(), dtype=d)


def arr(t):
    return np.asarray(rt.to_numpy(t))


def split_tree(p, d=rt.float64):
    """The 6 parameters as a pytree: {"w": (2, 2), "b": (2,)}"""
    return {"w": rt.reshape(to_rt(p[:4], d), [2, 2]), "b": to_rt(p[4:], d)}


def join_tree(t):
    return np.concatenate([arr(t["w"]).reshape(-1), arr(t["b"])]).astype(np.float64)


def run_rt(opt, steps=N_STEPS, d=rt.float64):
    params = split_tree(P0, d)
    state = opt.init(params)
    traj = []
    for _ in range(steps):
        g = split_tree(grad_np(join_tree(params)), d)
        updates, state = opt.update(g, state, params)
        params = optim.apply_updates(params, updates)
        traj.append(join_tree(params))
    return np.array(traj)


def run_ref(step, steps=N_STEPS):
    p = P0.copy()
    st = {}
    traj = []
    for t in range(1, steps + 1):
        p = step(p, grad_np(p), st, t)
        traj.append(p.copy())
    return np.array(traj)


# --- NumPy references, written from the papers / torch.optim documentation -------------------

def ref_sgd(lr, momentum=0.0, nesterov=False, wd=0.0):
    def step(p, g, st, t):
        g = g + wd * p
        if momentum:
            st["b"] = g.copy() if t == 1 else momentum * st["b"] + g
            g = g + momentum * st["b"] if nesterov else st["b"]
        return p - (lr(t - 1) if callable(lr) else lr) * g
    return step


def ref_adam(lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, decoupled=False):
    def step(p, g, st, t):
        if wd and not decoupled:
            g = g + wd * p
        st["m"] = b1 * st.get("m", 0) + (1 - b1) * g
        st["v"] = b2 * st.get("v", 0) + (1 - b2) * g * g
        mhat = st["m"] / (1 - b1 ** t)
        vhat = st["v"] / (1 - b2 ** t)
        d = mhat / (np.sqrt(vhat) + eps)
        if wd and decoupled:
            d = d + wd * p
        return p - lr * d
    return step


def ref_rmsprop(lr, alpha=0.99, eps=1e-8, momentum=0.0, centered=False, wd=0.0):
    def step(p, g, st, t):
        g = g + wd * p
        st["v"] = alpha * st.get("v", 0) + (1 - alpha) * g * g
        if centered:
            st["a"] = alpha * st.get("a", 0) + (1 - alpha) * g
            den = np.sqrt(st["v"] - st["a"] ** 2) + eps
        else:
            den = np.sqrt(st["v"]) + eps
        if momentum:
            st["b"] = momentum * st.get("b", 0) + g / den
            return p - lr * st["b"]
        return p - lr * g / den
    return step


def ref_adagrad(lr, init=0.0, eps=1e-10, lr_decay=0.0, wd=0.0):
    def step(p, g, st, t):
        g = g + wd * p
        st["s"] = st.get("s", init) + g * g
        clr = lr / (1 + (t - 1) * lr_decay)
        return p - clr * g / (np.sqrt(st["s"]) + eps)
    return step


def ref_lion(lr, b1=0.9, b2=0.99, wd=0.0):
    def step(p, g, st, t):
        m = st.get("m", np.zeros_like(p))
        c = b1 * m + (1 - b1) * g
        st["m"] = b2 * m + (1 - b2) * g
        return p - lr * (np.sign(c) + wd * p)
    return step


CASES = {
    "sgd": (lambda: optim.sgd(0.1), ref_sgd(0.1)),
    "sgd_momentum": (lambda: optim.sgd(0.05, momentum=0.9), ref_sgd(0.05, 0.9)),
    "sgd_nesterov_wd": (lambda: optim.sgd(0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
                        ref_sgd(0.05, 0.8, True, 0.1)),
    "adam": (lambda: optim.adam(0.05), ref_adam(0.05)),
    "adam_l2": (lambda: optim.adam(0.05, b1=0.8, b2=0.99, eps=1e-6, weight_decay=0.1),
                ref_adam(0.05, 0.8, 0.99, 1e-6, 0.1)),
    "adamw": (lambda: optim.adamw(0.05, weight_decay=0.1), ref_adam(0.05, wd=0.1, decoupled=True)),
    "rmsprop": (lambda: optim.rmsprop(0.01), ref_rmsprop(0.01)),
    "rmsprop_centered_momentum": (lambda: optim.rmsprop(0.01, decay=0.9, momentum=0.5, centered=True,
                                                        weight_decay=0.05),
                                  ref_rmsprop(0.01, 0.9, 1e-8, 0.5, True, 0.05)),
    "adagrad": (lambda: optim.adagrad(0.3), ref_adagrad(0.3)),
    "adagrad_opts": (lambda: optim.adagrad(0.3, initial_accumulator_value=0.1, lr_decay=0.01, weight_decay=0.1),
                     ref_adagrad(0.3, 0.1, 1e-10, 0.01, 0.1)),
    "lion": (lambda: optim.lion(0.01), ref_lion(0.01)),
    "lion_wd": (lambda: optim.lion(0.01, b1=0.8, b2=0.95, weight_decay=0.5), ref_lion(0.01, 0.8, 0.95, 0.5)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_trajectory_matches_reference(name):
    make, ref = CASES[name]
    got = run_rt(make())
    want = run_ref(ref)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # and the run decreases the quadratic (every case is a sensible setting)
    f = lambda p: 0.5 * p @ A @ p - B @ p  # noqa: E731
    assert f(got[-1]) < f(P0)


@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "adamw", "rmsprop", "adagrad", "lion"])
def test_float32_close_to_float64_reference(name):
    make, ref = CASES[name]
    got = run_rt(make(), steps=15, d=rt.float32)
    want = run_ref(ref, steps=15)
    tol = 1e-3 if name == "lion" else 1e-4     # lion: a sign flip near 0 moves a step of lr
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# --- PyTorch ---------------------------------------------------------------------------------

def torch_cases():
    torch = pytest.importorskip("torch")
    o = torch.optim
    return torch, {
        "sgd": lambda ps: o.SGD(ps, lr=0.1),
        "sgd_momentum": lambda ps: o.SGD(ps, lr=0.05, momentum=0.9),
        "sgd_nesterov_wd": lambda ps: o.SGD(ps, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
        "adam": lambda ps: o.Adam(ps, lr=0.05),
        "adam_l2": lambda ps: o.Adam(ps, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
        "adamw": lambda ps: o.AdamW(ps, lr=0.05, weight_decay=0.1),
        "rmsprop": lambda ps: o.RMSprop(ps, lr=0.01),
        "rmsprop_centered_momentum": lambda ps: o.RMSprop(ps, lr=0.01, alpha=0.9, momentum=0.5, centered=True,
                                                           weight_decay=0.05),
        "adagrad": lambda ps: o.Adagrad(ps, lr=0.3),
        "adagrad_opts": lambda ps: o.Adagrad(ps, lr=0.3, initial_accumulator_value=0.1, lr_decay=0.01,
                                             weight_decay=0.1),
    }


@pytest.mark.parametrize("name", ["sgd", "sgd_momentum", "sgd_nesterov_wd", "adam", "adam_l2", "adamw", "rmsprop",
                                  "rmsprop_centered_momentum", "adagrad", "adagrad_opts"])
def test_trajectory_matches_torch(name):
    torch, cases = torch_cases()
    w = torch.tensor(P0[:4].reshape(2, 2), dtype=torch.float64, requires_grad=True)
    b = torch.tensor(P0[4:], dtype=torch.float64, requires_grad=True)
    topt = cases[name]([w, b])
    traj = []
    for _ in range(N_STEPS):
        p = np.concatenate([w.detach().numpy().reshape(-1), b.detach().numpy()])
        g = grad_np(p)
        w.grad = torch.tensor(g[:4].reshape(2, 2))
        b.grad = torch.tensor(g[4:])
        topt.step()
        traj.append(np.concatenate([w.detach().numpy().reshape(-1), b.detach().numpy()]))
    got = run_rt(CASES[name][0]())
    np.testing.assert_allclose(got, np.array(traj), rtol=1e-9, atol=1e-11)


# --- schedules -------------------------------------------------------------------------------

def _py(schedule):
    """A schedule as a function returning Python floats (schedules return 0-d float64 tensors)."""
    return lambda t: float(schedule(t))


def test_schedules_values():
    c = _py(optim.cosine_decay_schedule(2.0, 10, alpha=0.1))
    for t in range(15):
        tt = min(t, 10)
        assert math.isclose(c(t), 2.0 * (0.9 * 0.5 * (1 + math.cos(math.pi * tt / 10)) + 0.1))
    w = _py(optim.warmup_cosine_decay_schedule(0.1, 1.0, 4, 14, end_value=0.01))
    assert [round(w(t), 10) for t in range(5)] == [0.1, 0.325, 0.55, 0.775, 1.0]
    assert math.isclose(w(9), 0.01 + 0.99 * 0.5)
    assert math.isclose(w(14), 0.01) and math.isclose(w(100), 0.01)
    e = _py(optim.exponential_decay(1.0, 5, 0.1, transition_begin=3))
    assert e(0) == 1.0 and e(3) == 1.0 and math.isclose(e(8), 0.1) and math.isclose(e(13), 0.01)
    es = _py(optim.exponential_decay(1.0, 5, 0.1, staircase=True))
    assert es(4) == 1.0 and math.isclose(es(5), 0.1) and math.isclose(es(9), 0.1)
    assert _py(optim.exponential_decay(1.0, 1, 2.0, end_value=5.0))(10) == 5.0
    assert _py(optim.constant_schedule(0.3))(7) == 0.3
    assert _py(optim.constant_schedule(0.3))(rt.scalar(rt.int32, 7)) == 0.3
    # a tensor count (an optimizer state's) gives the value of the same Python int
    for t in range(0, 30, 3):
        assert w(rt.scalar(rt.int32, t)) == w(t) and c(rt.scalar(rt.int64, t)) == c(t)


def test_schedule_as_lr():
    sched = optim.warmup_cosine_decay_schedule(0.0, 0.2, 5, 30)
    got = run_rt(optim.sgd(sched, momentum=0.5))
    want = run_ref(ref_sgd(sched, 0.5))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # adam with a schedule: the step count starts at 0
    sched2 = optim.exponential_decay(0.1, 10, 0.5)
    params = split_tree(P0)
    opt = optim.adam(sched2)
    state = opt.init(params)
    g = split_tree(grad_np(P0))
    u, state = opt.update(g, state, params)
    assert state.count == 1
    np.testing.assert_allclose(join_tree(u), -0.1 * np.sign(grad_np(P0)), rtol=1e-5)


def test_schedule_errors():
    with pytest.raises(ValueError, match="cosine_decay_schedule"):
        optim.cosine_decay_schedule(1.0, 0)
    with pytest.raises(ValueError, match="warmup_cosine_decay_schedule"):
        optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 10)
    with pytest.raises(ValueError, match="exponential_decay"):
        optim.exponential_decay(1.0, 10, 0.0)
    with pytest.raises(TypeError, match="exponential_decay"):
        optim.exponential_decay(1.0, 1.5, 0.5)
    with pytest.raises(ValueError, match="constant_schedule"):
        optim.constant_schedule(1.0)(-1)
    with pytest.raises(TypeError, match="cosine_decay_schedule"):
        optim.cosine_decay_schedule(1.0, 10)(1.5)


# --- clipping, chaining ----------------------------------------------------------------------

def test_global_norm_and_clip():
    tree = {"a": to_rt([3.0, 0.0]), "b": (to_rt([4.0]), None)}
    assert rt.item(optim.global_norm(tree)) == 5.0
    clip = optim.clip_by_global_norm(2.5)
    u, s = clip.update(tree, clip.init(tree))
    assert s == ()
    np.testing.assert_allclose(arr(u["a"]), [1.5, 0.0])
    np.testing.assert_allclose(arr(u["b"][0]), [2.0])
    assert u["b"][1] is None
    u2, _ = optim.clip_by_global_norm(10.0).update(tree, ())  # below the bound: unchanged values
    np.testing.assert_array_equal(arr(u2["a"]), [3.0, 0.0])
    np.testing.assert_array_equal(arr(u2["b"][0]), [4.0])


def test_chain_clip_then_adam():
    opt = optim.chain(optim.clip_by_global_norm(0.5), optim.adam(0.05))
    params = split_tree(P0)
    state = opt.init(params)
    assert isinstance(state, tuple) and len(state) == 2
    ref = ref_adam(0.05)
    p = P0.copy()
    st = {}
    for t in range(1, 20):
        g = split_tree(grad_np(join_tree(params)))
        u, state = opt.update(g, state, params)
        params = optim.apply_updates(params, u)
        gn = grad_np(p)
        n = np.linalg.norm(gn)
        p = ref(p, gn * min(1.0, 0.5 / n), st, t)
        np.testing.assert_allclose(join_tree(params), p, rtol=1e-10, atol=1e-12)


def test_pure_functions_do_not_modify_inputs():
    params = split_tree(P0)
    before = join_tree(params)
    opt = optim.adam(0.1)
    s0 = opt.init(params)
    g = split_tree(grad_np(P0))
    u1, s1 = opt.update(g, s0, params)
    u2, s2 = opt.update(g, s0, params)       # the same state gives the same result
    np.testing.assert_array_equal(join_tree(u1), join_tree(u2))
    assert s0.count == 0 and np.all(join_tree(s0.mu) == 0)
    optim.apply_updates(params, u1)
    np.testing.assert_array_equal(join_tree(params), before)


def test_dtypes_kept():
    params = {"w": rt.ones(rt.float32, [3]), "h": rt.ones(rt.bfloat16, [2])}
    for opt in (optim.sgd(0.1, momentum=0.9), optim.adam(0.1), optim.adamw(0.1), optim.rmsprop(0.1),
                optim.adagrad(0.1), optim.lion(0.1)):
        st = opt.init(params)
        u, st = opt.update(params, st, params)
        new = optim.apply_updates(params, u)
        assert new["w"].dtype is rt.float32 and new["h"].dtype is rt.bfloat16
        assert u["w"].dtype is rt.float32


def test_errors():
    p = {"w": rt.ones(rt.float32, [3])}
    with pytest.raises(ValueError, match="sgd"):
        optim.sgd(-0.1)
    with pytest.raises(TypeError, match="sgd"):
        optim.sgd("a")
    with pytest.raises(ValueError, match="sgd: nesterov"):
        optim.sgd(0.1, nesterov=True)
    with pytest.raises(ValueError, match="adam"):
        optim.adam(0.1, b1=1.0)
    with pytest.raises(ValueError, match="rmsprop"):
        optim.rmsprop(0.1, decay=1.5)
    with pytest.raises(ValueError, match="clip_by_global_norm"):
        optim.clip_by_global_norm(0.0)
    with pytest.raises(TypeError, match="chain"):
        optim.chain(optim.sgd(0.1), lambda g: g)
    opt = optim.adamw(0.1)
    st = opt.init(p)
    with pytest.raises(ValueError, match="adamw: update needs params"):
        opt.update(p, st)
    with pytest.raises(ValueError, match="adamw"):
        opt.update({"w": rt.ones(rt.float32, [4])}, st, p)
    with pytest.raises(ValueError, match="adamw"):
        opt.update({"v": rt.ones(rt.float32, [3])}, st, p)
    with pytest.raises(TypeError, match="adamw: state"):
        opt.update(p, optim.sgd(0.1).init(p), p)
    with pytest.raises(TypeError, match="sgd"):
        optim.sgd(0.1).init({"w": rt.ones(rt.int32, [2])})
    with pytest.raises(TypeError, match="apply_updates"):
        optim.apply_updates(p, {"w": 1.0})


# --- a training loop -------------------------------------------------------------------------

def test_adam_training_loop_least_squares():
    r = np.random.default_rng(1)
    X = r.standard_normal((64, 5))
    w_true = r.standard_normal(5)
    y = X @ w_true + 0.3 + 0.01 * r.standard_normal(64)
    Xt, yt = to_rt(X.reshape(-1), rt.float32), to_rt(y, rt.float32)
    Xt = rt.reshape(Xt, [64, 5])

    def loss(params):
        pred = rt.matmul(Xt, params["w"]) + params["b"]
        return rt.mean((pred - yt) ** 2)

    params = {"w": rt.zeros(rt.float32, [5]), "b": rt.zeros(rt.float32, [])}
    opt = optim.chain(optim.clip_by_global_norm(10.0), optim.adam(optim.cosine_decay_schedule(0.1, 400, 0.01)))
    state = opt.init(params)
    first = rt.item(loss(params))
    for _ in range(400):
        g = rt.grad(loss)(params)
        updates, state = opt.update(g, state, params)
        params = optim.apply_updates(params, updates)
    last = rt.item(loss(params))
    w_ls, *_ = np.linalg.lstsq(np.c_[X, np.ones(64)], y, rcond=None)
    best = np.mean((np.c_[X, np.ones(64)] @ w_ls - y) ** 2)
    assert last < first * 1e-3
    assert last < best + 1e-4
    np.testing.assert_allclose(arr(params["w"]), w_ls[:5], atol=2e-3)
