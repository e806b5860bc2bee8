"""rt.nn.Module and the layers: each layer against PyTorch's with copied weights (outputs and gradients),
PyTorch's default initialisation ranges, and models as pytrees (grad, vmap, jit, tree_map, optimizers)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import runetensor as rt
import runetensor.nn as nn

torch = pytest.importorskip("torch")


def _rt(t):
    return rt.asarray(np.ascontiguousarray(t.detach().numpy()))


def _np(t):
    return np.asarray(rt.to_numpy(t)) if hasattr(rt, "to_numpy") else np.asarray(rt.to_array(t))


def _get(m, path):
    for part in path.split("."):
        m = m[int(part)] if part.isdigit() else getattr(m, part)
    return m


def _set(m, path, value):
    head, _, rest = path.partition(".")
    if head.isdigit():          # Sequential: layers[i]
        layers = list(m.layers)
        layers[int(head)] = _set(layers[int(head)], rest, value) if rest else value
        return m.replace(layers=tuple(layers))
    if not rest:
        return m.replace(**{head: value})
    return m.replace(**{head: _set(getattr(m, head), rest, value)})


def _copy_weights(mod, tmod):
    for name, p in tmod.named_parameters():
        assert tuple(_get(mod, name).shape) == tuple(p.shape), name
        mod = _set(mod, name, _rt(p))
    return mod


def _check(mod, tmod, x_np, *, call=None, tcall=None, rtol=1e-5, atol=1e-5, grad_x=True):
    """Outputs and gradients (for a non-uniform cotangent) of ``mod`` and ``tmod`` on the same input."""
    mod = _copy_weights(mod, tmod)
    tmod.zero_grad()
    call = call or (lambda m, x: m(x))
    tcall = tcall or (lambda m, x: m(x))
    tx = torch.tensor(x_np, requires_grad=grad_x)
    ty = tcall(tmod, tx)
    ct = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(np.float32)
    (ty * torch.tensor(ct)).sum().backward()
    y = call(mod, rt.asarray(x_np))
    np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=rtol, atol=atol)
    argnums = (0, 1) if grad_x else 0
    g = rt.grad(lambda m, x: rt.sum(call(m, x) * rt.asarray(ct)), argnums=argnums)(mod, rt.asarray(x_np))
    gm = g[0] if grad_x else g
    if grad_x:
        np.testing.assert_allclose(_np(g[1]), tx.grad.numpy(), rtol=rtol, atol=atol)
    n = 0
    for name, p in tmod.named_parameters():
        np.testing.assert_allclose(_np(_get(gm, name)), p.grad.numpy(), rtol=rtol, atol=atol, err_msg=name)
        n += 1
    return n


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


KEY = rt.random.key(0)


@pytest.mark.parametrize("make, tmake, shape", [
    (lambda: nn.Linear(5, 3, key=KEY), lambda: torch.nn.Linear(5, 3), (4, 5)),
    (lambda: nn.Linear(5, 3, bias=False, key=KEY), lambda: torch.nn.Linear(5, 3, bias=False), (2, 4, 5)),
    (lambda: nn.Conv1d(2, 4, 3, stride=2, padding=1, key=KEY), lambda: torch.nn.Conv1d(2, 4, 3, stride=2, padding=1),
     (2, 2, 9)),
    (lambda: nn.Conv2d(2, 4, 3, padding=1, groups=2, key=KEY), lambda: torch.nn.Conv2d(2, 4, 3, padding=1, groups=2),
     (2, 2, 5, 6)),
    (lambda: nn.Conv3d(2, 3, 2, dilation=(1, 2, 1), key=KEY), lambda: torch.nn.Conv3d(2, 3, 2, dilation=(1, 2, 1)),
     (1, 2, 4, 5, 3)),
    (lambda: nn.ConvTranspose1d(2, 3, 3, stride=2, padding=1, output_padding=1, key=KEY),
     lambda: torch.nn.ConvTranspose1d(2, 3, 3, stride=2, padding=1, output_padding=1), (2, 2, 5)),
    (lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, groups=2, key=KEY),
     lambda: torch.nn.ConvTranspose2d(4, 2, 3, stride=2, groups=2), (1, 4, 3, 4)),
    (lambda: nn.ConvTranspose3d(2, 2, 2, key=KEY), lambda: torch.nn.ConvTranspose3d(2, 2, 2), (1, 2, 2, 3, 2)),
    (lambda: nn.LayerNorm(6), lambda: torch.nn.LayerNorm(6), (3, 4, 6)),
    (lambda: nn.LayerNorm((2, 3), bias=False), lambda: torch.nn.LayerNorm((2, 3), bias=False), (4, 2, 3)),
    (lambda: nn.RMSNorm(6), lambda: torch.nn.RMSNorm(6), (3, 6)),
    (lambda: nn.RMSNorm(6, eps=1e-3), lambda: torch.nn.RMSNorm(6, eps=1e-3), (2, 3, 6)),
    (lambda: nn.GroupNorm(2, 4), lambda: torch.nn.GroupNorm(2, 4), (3, 4, 5)),
    (lambda: nn.GroupNorm(1, 4, affine=False), lambda: torch.nn.GroupNorm(1, 4, affine=False), (2, 4, 2, 3)),
    (lambda: nn.MaxPool1d(2), lambda: torch.nn.MaxPool1d(2), (2, 3, 7)),
    (lambda: nn.MaxPool2d(3, stride=2, padding=1), lambda: torch.nn.MaxPool2d(3, stride=2, padding=1), (1, 2, 7, 6)),
    (lambda: nn.MaxPool3d(2), lambda: torch.nn.MaxPool3d(2), (1, 2, 4, 4, 5)),
    (lambda: nn.AvgPool1d(3, stride=2, padding=1), lambda: torch.nn.AvgPool1d(3, stride=2, padding=1), (2, 3, 8)),
    (lambda: nn.AvgPool2d(2, ceil_mode=True), lambda: torch.nn.AvgPool2d(2, ceil_mode=True), (1, 2, 5, 5)),
    (lambda: nn.AvgPool3d(2, padding=1, count_include_pad=False),
     lambda: torch.nn.AvgPool3d(2, padding=1, count_include_pad=False), (1, 1, 3, 4, 4)),
], ids=lambda v: None)
def test_layer_matches_pytorch_outputs_and_gradients(make, tmake, shape):
    torch.manual_seed(0)
    tmod = tmake()
    mod = make()
    assert type(mod).__name__ == type(tmod).__name__
    with torch.no_grad():       # non-trivial affine parameters for the norms
        for p in tmod.parameters():
            p.add_(torch.randn(p.shape) * 0.3)
    _check(mod, tmod, _x(*shape))


def test_sequential_matches_pytorch():
    torch.manual_seed(0)
    tmod = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    k1, k2 = rt.random.split(KEY)
    mod = nn.Sequential(nn.Linear(4, 8, key=k1), rt.tanh, nn.Linear(8, 3, key=k2))
    assert _check(mod, tmod, _x(5, 4)) == 4


def test_embedding_matches_pytorch():
    torch.manual_seed(0)
    tmod = torch.nn.Embedding(7, 3)
    idx = np.array([[1, 4, 1], [6, 0, 4]], dtype=np.int64)
    mod = _copy_weights(nn.Embedding(7, 3, key=KEY), tmod)
    ty = tmod(torch.tensor(idx))
    ct = _x(2, 3, 3, seed=2)
    (ty * torch.tensor(ct)).sum().backward()
    ridx = rt.asarray(idx.astype(np.int32))
    np.testing.assert_allclose(_np(mod(ridx)), ty.detach().numpy())
    g = rt.grad(lambda m: rt.sum(m(ridx) * rt.asarray(ct)))(mod)
    np.testing.assert_allclose(_np(g.weight), tmod.weight.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cls, shape", [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)),
                                        ("BatchNorm2d", (4, 3, 2, 2))])
def test_batch_norm_state_in_and_out_matches_pytorch(cls, shape):
    torch.manual_seed(0)
    tmod = getattr(torch.nn, cls)(3, momentum=0.2)
    mod = _copy_weights(getattr(nn, cls)(3, momentum=0.2), tmod)
    state = mod.initial_state()
    for step in range(3):
        x = _x(*shape, seed=step)
        y, state = mod(rt.asarray(x), state, training=True)
        ty = tmod(torch.tensor(x))
        np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(state.running_mean), tmod.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(state.running_var), tmod.running_var.numpy(), rtol=1e-5, atol=1e-6)
    tmod.eval()
    x = _x(*shape, seed=9)
    y, same = mod(rt.asarray(x), state, training=False)
    assert same.running_mean is state.running_mean
    np.testing.assert_allclose(_np(y), tmod(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    # gradients in training mode
    tmod.train()
    _check(mod, tmod, _x(*shape, seed=5), call=lambda m, x: m(x, m.initial_state())[0])


def test_batch_norm_needs_its_state():
    bn = nn.BatchNorm2d(2)
    with pytest.raises(TypeError, match="initial_state"):
        bn(rt.ones(rt.float32, [2, 2, 2, 2]))
    with pytest.raises(ValueError, match="4 axes"):
        bn(rt.ones(rt.float32, [2, 2]), bn.initial_state())


def test_multihead_attention_matches_pytorch_self_and_cross():
    torch.manual_seed(0)
    E, H, L, S = 8, 2, 5, 4
    tmod = torch.nn.MultiheadAttention(E, H, batch_first=True)
    with torch.no_grad():
        tmod.in_proj_bias.add_(torch.randn(3 * E) * 0.1)
        tmod.out_proj.bias.add_(torch.randn(E) * 0.1)
    mod = nn.MultiheadAttention(E, H, key=KEY)
    causal = torch.triu(torch.ones(L, L, dtype=torch.bool), 1)       # PyTorch: True = masked out
    _check(mod, tmod, _x(2, L, E), call=lambda m, x: m(x, x, x, mask="causal"),
           tcall=lambda m, x: m(x, x, x, attn_mask=causal, need_weights=False)[0])
    kv = _x(2, S, E, seed=3)
    keep = _x(L, S, seed=4) > -0.5
    keep[:, 0] = True
    tkv = torch.tensor(kv)
    _check(mod, tmod, _x(2, L, E), call=lambda m, x: m(x, rt.asarray(kv), rt.asarray(kv), mask=rt.asarray(keep)),
           tcall=lambda m, x: m(x, tkv, tkv, attn_mask=torch.tensor(~keep), need_weights=False)[0])


def test_multihead_attention_kv_cache_decodes_like_the_full_causal_pass():
    mha = nn.MultiheadAttention(8, 4, key=KEY)
    x = rt.random.normal(rt.random.key(3), [2, 6, 8])
    full = mha(x, x, x, mask="causal")
    cache = mha.init_cache(2)
    outs = []
    for i in range(6):
        xi = x[:, i:i + 1]
        o, cache = mha(xi, xi, xi, mask="causal", cache=cache)
        outs.append(o)
    assert tuple(cache.k.shape) == (2, 4, 6, 2)
    np.testing.assert_allclose(_np(rt.concatenate(outs, axis=1)), _np(full), rtol=1e-5, atol=1e-6)


def test_functional_forms_match_pytorch():
    F = torch.nn.functional
    x = _x(2, 4, 3, 5)
    w, b = _x(4, seed=1), _x(4, seed=2)
    np.testing.assert_allclose(_np(nn.group_norm(rt.asarray(x), 2, rt.asarray(w), rt.asarray(b))),
                               F.group_norm(torch.tensor(x), 2, torch.tensor(w), torch.tensor(b)).numpy(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(nn.rms_norm(rt.asarray(x), (3, 5))),
                               F.rms_norm(torch.tensor(x), (3, 5)).numpy(), rtol=1e-5, atol=1e-6)
    x5 = _x(1, 2, 5, 4, 6)
    np.testing.assert_allclose(_np(nn.max_pool3d(rt.asarray(x5), 2, stride=(1, 2, 2), padding=1)),
                               F.max_pool3d(torch.tensor(x5), 2, stride=(1, 2, 2), padding=1).numpy())
    np.testing.assert_allclose(_np(nn.avg_pool3d(rt.asarray(x5), 3, stride=2, ceil_mode=True)),
                               F.avg_pool3d(torch.tensor(x5), 3, stride=2, ceil_mode=True).numpy(), rtol=1e-6)


def test_default_initialisation_follows_pytorch_ranges():
    lin = nn.Linear(400, 300, key=KEY)
    b = 1 / math.sqrt(400)
    w = _np(lin.weight)
    assert np.abs(w).max() <= b and abs(w.std() - b / math.sqrt(3)) < 0.01 * b
    assert np.abs(_np(lin.bias)).max() <= b
    conv = nn.Conv2d(6, 8, 3, groups=2, key=KEY)
    assert tuple(conv.weight.shape) == (8, 3, 3, 3) and np.abs(_np(conv.weight)).max() <= 1 / math.sqrt(27)
    convt = nn.ConvTranspose2d(6, 4, 3, groups=2, key=KEY)
    assert tuple(convt.weight.shape) == (6, 2, 3, 3) and np.abs(_np(convt.weight)).max() <= 1 / math.sqrt(18)
    emb = _np(nn.Embedding(500, 100, key=KEY).weight)
    assert abs(emb.mean()) < 0.02 and abs(emb.std() - 1) < 0.02
    mha = nn.MultiheadAttention(64, 4, key=KEY)
    xb = math.sqrt(6 / (64 + 192))
    assert np.abs(_np(mha.in_proj_weight)).max() <= xb and not np.any(_np(mha.in_proj_bias))
    assert not np.any(_np(mha.out_proj.bias))
    # different keys, different weights; the same key, the same weights
    assert not np.array_equal(w, _np(nn.Linear(400, 300, key=rt.random.key(1)).weight))
    assert np.array_equal(w, _np(nn.Linear(400, 300, key=rt.random.key(0)).weight))
    with pytest.raises(TypeError, match="key="):
        nn.Linear(2, 2, key=None)


def test_dropout_needs_a_key_to_drop():
    drop = nn.Dropout(0.25)
    x = rt.ones(rt.float32, [4000])
    assert drop(x) is x
    y = _np(drop(x, key=rt.random.key(5)))
    assert set(np.unique(y)) == {0.0, np.float32(1 / 0.75)} and abs((y == 0).mean() - 0.25) < 0.03
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nn.Dropout(1.5)


# ---------------------------------------------------------------------------------------------
# modules as pytrees
# ---------------------------------------------------------------------------------------------
class MLP(nn.Module):
    l1: nn.Linear
    l2: nn.Linear
    scale: float = nn.static_field()

    def __init__(self, sizes=(3, 8, 2), *, key, scale=1.0):
        k1, k2 = rt.random.split(key)
        self.l1 = nn.Linear(sizes[0], sizes[1], key=k1)
        self.l2 = nn.Linear(sizes[1], sizes[2], key=k2)
        self.scale = scale

    def __call__(self, x):
        return self.l2(rt.tanh(self.l1(x))) * self.scale


def _params_dict(m):
    return {"w1": m.l1.weight, "b1": m.l1.bias, "w2": m.l2.weight, "b2": m.l2.bias}


def _dict_forward(p, x, scale=1.0):
    return nn.linear(rt.tanh(nn.linear(x, p["w1"], p["b1"])), p["w2"], p["b2"]) * scale


def test_module_leaves_and_structure():
    m = MLP(key=KEY, scale=2.0)
    leaves, tree = rt.tree_flatten(m)
    assert [tuple(t.shape) for t in leaves] == [(8, 3), (8,), (2, 8), (2,)]
    back = rt.tree_unflatten(tree, leaves)
    assert type(back) is MLP and back.scale == 2.0 and back.l1.in_features == 3
    assert rt.tree_flatten(MLP(key=KEY, scale=3.0))[1] != tree        # static fields are structure
    doubled = rt.tree_map(lambda t: t * 2, m)
    assert type(doubled) is MLP
    np.testing.assert_array_equal(_np(doubled.l2.weight), 2 * _np(m.l2.weight))


def test_grad_of_a_module_equals_grad_of_the_same_dict():
    m = MLP(key=KEY)
    x = rt.random.normal(rt.random.key(1), [5, 3])
    g = rt.grad(lambda m: rt.sum(m(x) ** 2))(m)
    gd = rt.grad(lambda p: rt.sum(_dict_forward(p, x) ** 2))(_params_dict(m))
    assert type(g) is MLP
    for k, v in _params_dict(g).items():
        np.testing.assert_array_equal(_np(v), _np(gd[k]))


def test_vmap_over_a_stack_of_models():
    ms = [MLP(key=rt.random.key(i)) for i in range(3)]
    stacked = rt.tree_map(lambda *ts: rt.stack(list(ts)), *ms)
    x = rt.random.normal(rt.random.key(7), [4, 3])
    ys = rt.vmap(lambda m: m(x))(stacked)
    for i, m in enumerate(ms):
        np.testing.assert_allclose(_np(ys[i]), _np(m(x)), rtol=1e-6, atol=1e-6)


def test_jit_takes_models_and_compiles_once_per_structure():
    m = MLP(key=KEY)
    x = rt.random.normal(rt.random.key(1), [5, 3])
    f = rt.jit(lambda m, x: m(x))
    for i in range(3):
        np.testing.assert_allclose(_np(f(MLP(key=rt.random.key(i)), x)), _np(MLP(key=rt.random.key(i))(x)),
                                   rtol=1e-6, atol=1e-6)
    assert rt.jit_stats(f)["traces"] == 1
    f(MLP(key=KEY, scale=0.5), x)              # a different static value: another program
    assert rt.jit_stats(f)["traces"] == 2
    out = rt.jit(lambda m: rt.tree_map(lambda t: t + 1, m))(m)
    assert type(out) is MLP and out.scale == m.scale


def test_optimizer_over_a_model_equals_the_dict_run():
    m = MLP(key=KEY)
    p = _params_dict(m)
    x = rt.random.normal(rt.random.key(1), [16, 3])
    y = rt.random.normal(rt.random.key(2), [16, 2])
    opt = rt.optim.adamw(0.05)
    sm, sp = opt.init(m), opt.init(p)
    losses = []
    for _ in range(5):
        lm, gm = rt.value_and_grad(lambda m: rt.mean((m(x) - y) ** 2))(m)
        gp = rt.grad(lambda p: rt.mean((_dict_forward(p, x) - y) ** 2))(p)
        um, sm = opt.update(gm, sm, m)
        up, sp = opt.update(gp, sp, p)
        m, p = rt.optim.apply_updates(m, um), rt.optim.apply_updates(p, up)
        losses.append(float(lm))
    assert type(m) is MLP and losses[-1] < losses[0]
    for k, v in _params_dict(m).items():
        np.testing.assert_array_equal(_np(v), _np(p[k]))


def test_modules_are_frozen_and_replace_copies():
    m = MLP(key=KEY)
    with pytest.raises(AttributeError, match="replace"):
        m.l1 = None
    with pytest.raises(AttributeError, match="frozen"):
        del m.l1
    z = rt.zeros(rt.float32, [2])
    m2 = m.replace(l2=m.l2.replace(bias=z))
    assert m2.l2.bias is z and m.l2.bias is not z and m2.l1 is m.l1
    with pytest.raises(AttributeError, match="not a field"):
        m.replace(l3=z)


def test_unassigned_field_is_an_error():
    class Half(nn.Module):
        a: rt.Tensor
        b: rt.Tensor

        def __init__(self):
            self.a = rt.ones(rt.float32, [1])

    with pytest.raises(TypeError, match="'b'"):
        Half()


def test_functions_in_fields_are_static():
    class Act(nn.Module):
        w: rt.Tensor
        act: object

        def __init__(self):
            self.w = rt.ones(rt.float32, [2])
            self.act = rt.tanh

    leaves = rt.tree_leaves(Act())
    assert len(leaves) == 1
    g = rt.grad(lambda m: rt.sum(m.act(m.w)))(Act())
    assert type(g) is Act and g.act is rt.tanh


def test_printing_shows_the_tree_shapes_and_counts():
    text = repr(MLP(key=KEY))
    lines = text.splitlines()
    assert lines[0] == "MLP(scale=1.0)  # 50 parameters"
    assert "  l1: Linear(in_features=3, out_features=8)  # 32 parameters" in lines
    assert "    weight: float32[8, 3]" in lines and "    bias: float32[2]" in lines
    assert "Dropout(p=0.5)" in repr(nn.Dropout())
