"""runetensor.nn (activations, layers, losses, initialisers): values against NumPy/SciPy formulas,
derivatives against central differences (rt.check_grads, float64, both modes, away from kinks),
and PyTorch's functional ops of the same name when PyTorch is installed.  Convolutions and
pooling (nn._conv) are tested in their own file."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sps
import scipy.stats as stats

import runetensor as rt
from runetensor import nn

RNG = np.random.default_rng(2024)


def T(a, dtype=None):
    t = rt.asarray(np.asarray(a))
    return t if dtype is None else rt.astype(t, dtype)


def N(t):
    return np.asarray(rt.to_numpy(t))


def _torch():
    return pytest.importorskip("torch")


# points away from every activation's kinks (0, +-1, +-3, 6)
X_SMOOTH = np.array([-7.3, -4.1, -2.2, -0.6, -0.3, 0.2, 0.7, 1.6, 2.5, 4.4, 8.1])
X_ALL = np.concatenate([X_SMOOTH, [-3., -1., 0., 1., 3., 6., -50., 50.]])

_SELU_A, _SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _np_softplus(x):
    return np.logaddexp(x, 0.)


# name -> (rt function, NumPy oracle, torch name and kwargs)
ACTIVATIONS = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0), ("relu", {})),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6), ("relu6", {})),
    "leaky_relu": (lambda x: nn.leaky_relu(x, 0.1), lambda x: np.where(x > 0, x, 0.1 * x),
                   ("leaky_relu", {"negative_slope": 0.1})),
    "elu": (lambda x: nn.elu(x, 1.3), lambda x: np.where(x > 0, x, 1.3 * np.expm1(np.minimum(x, 0))),
            ("elu", {"alpha": 1.3})),
    "selu": (nn.selu, lambda x: _SELU_S * np.where(x > 0, x, _SELU_A * np.expm1(np.minimum(x, 0))), ("selu", {})),
    "celu": (lambda x: nn.celu(x, 0.7), lambda x: np.maximum(x, 0) + np.minimum(0, 0.7 * np.expm1(x / 0.7)),
             ("celu", {"alpha": 0.7})),
    "gelu": (nn.gelu, lambda x: 0.5 * x * (1 + sps.erf(x / np.sqrt(2))), ("gelu", {})),
    "gelu_tanh": (lambda x: nn.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
                  ("gelu", {"approximate": "tanh"})),
    "silu": (nn.silu, lambda x: x * sps.expit(x), ("silu", {})),
    "mish": (nn.mish, lambda x: x * np.tanh(_np_softplus(x)), ("mish", {})),
    "softplus": (nn.softplus, _np_softplus, ("softplus", {})),
    "softplus_beta": (lambda x: nn.softplus(x, beta=2.), lambda x: _np_softplus(2 * x) / 2,
                      ("softplus", {"beta": 2.})),
    "softsign": (nn.softsign, lambda x: x / (1 + np.abs(x)), ("softsign", {})),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, ("hardsigmoid", {})),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1), ("hardtanh", {})),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -_np_softplus(-x), ("logsigmoid", {})),
    "sigmoid": (nn.sigmoid, sps.expit, ("sigmoid", {})),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_values_and_grads(name):
    f, oracle, _ = ACTIVATIONS[name]
    np.testing.assert_allclose(N(f(T(X_ALL))), oracle(X_ALL), rtol=1e-13, atol=1e-15)
    r32 = f(T(X_ALL.astype(np.float32)))
    assert r32.dtype is rt.float32
    np.testing.assert_allclose(N(r32), oracle(X_ALL.astype(np.float32).astype(np.float64)), rtol=2e-6, atol=2e-6)
    rb = f(T(X_ALL, rt.bfloat16))
    assert rb.dtype is rt.bfloat16
    rt.check_grads(f, [T(X_SMOOTH)], order=2)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_against_torch(name):
    torch = _torch()
    f, _, (tname, kw) = ACTIVATIONS[name]
    tf = getattr(torch.nn.functional, tname)
    np.testing.assert_allclose(N(f(T(X_ALL))), tf(torch.tensor(X_ALL), **kw).numpy(), rtol=1e-12, atol=1e-14)
    # derivatives too, kinks included (the same one-sided choices as PyTorch)
    xk = X_ALL[np.abs(X_ALL) < 40]
    tx = torch.tensor(xk, requires_grad=True)
    tf(tx, **kw).sum().backward()
    g = rt.grad(lambda a: rt.sum(f(a)))(T(xk))
    # PyTorch's celu and hardsigmoid backwards use float32 constants (exp(x / 0.7f), 1 / 6.f): ~1e-7 off
    rtol = 1e-6 if name in ("celu", "hard_sigmoid") else 1e-12
    np.testing.assert_allclose(N(g), tx.grad.numpy(), rtol=rtol, atol=1e-14)


def test_relu_family_kinks():
    x = T(np.array([0.]))
    assert N(rt.grad(lambda a: rt.sum(nn.relu(a)))(x)).tolist() == [0.]
    assert N(rt.grad(lambda a: rt.sum(nn.leaky_relu(a, 0.2)))(x)).tolist() == [pytest.approx(0.2)]
    assert N(nn.relu6(rt.create(rt.int32, [3], [-1, 3, 9]))).tolist() == [0, 3, 6]
    assert nn.hard_tanh(rt.create(rt.int16, [2], [-5, 5])).dtype is rt.int16


def test_glu():
    x = RNG.normal(size=(3, 4, 6))
    a, b = x[..., :3], x[..., 3:]
    np.testing.assert_allclose(N(nn.glu(T(x))), a * sps.expit(b), rtol=1e-14)
    a1, b1 = x[:, :2], x[:, 2:]
    np.testing.assert_allclose(N(nn.glu(T(x), axis=1)), a1 * sps.expit(b1), rtol=1e-14)
    rt.check_grads(lambda t: nn.glu(t, 1), [T(x[:2, :, :2])], order=2)
    with pytest.raises(ValueError, match="glu: the size of axis 0 must be even, got 3"):
        nn.glu(T(x), axis=0)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(N(nn.glu(T(x), 1)), torch.nn.functional.glu(torch.tensor(x), 1).numpy(), rtol=1e-13)


def test_activation_errors():
    c = rt.create(rt.complex64, [1], [1j])
    for f in (nn.gelu, nn.silu, nn.elu, nn.softplus, nn.relu6):
        with pytest.raises(TypeError, match=f.__name__):
            f(c)
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh', got 'fast'"):
        nn.gelu(T([1.]), approximate="fast")
    with pytest.raises(ValueError, match="celu: alpha must be a positive finite number, got 0"):
        nn.celu(T([1.]), 0)
    with pytest.raises(ValueError, match="hard_tanh: min_val must be <= max_val, got min_val=2, max_val=1"):
        nn.hard_tanh(T([1.]), 2, 1)
    with pytest.raises(TypeError, match="leaky_relu: negative_slope must be a real number"):
        nn.leaky_relu(T([1.]), "0.1")
    assert nn.gelu(rt.create(rt.int32, [1], [1])).dtype is rt.float64


# ---------------------------------------------------------------------------
# layers
# ---------------------------------------------------------------------------
def test_linear():
    x, w, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(5, 4)), RNG.normal(size=(5,))
    np.testing.assert_allclose(N(nn.linear(T(x), T(w), T(b))), x @ w.T + b, rtol=1e-13)
    np.testing.assert_allclose(N(nn.linear(T(x), T(w))), x @ w.T, rtol=1e-13)
    rt.check_grads(nn.linear, [T(x), T(w), T(b)], order=2)
    with pytest.raises(ValueError, match="linear: x's last axis"):
        nn.linear(T(x), T(w.T))
    with pytest.raises(ValueError, match=r"linear: bias must have shape \(5,\), got \(4,\)"):
        nn.linear(T(x), T(w), T(b[:4]))
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(N(nn.linear(T(x), T(w), T(b))),
                               torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b)).numpy(),
                               rtol=1e-13)


def test_embedding():
    w = RNG.normal(size=(6, 3))
    idx = np.array([[0, 5, 2], [2, 2, 1]])
    np.testing.assert_allclose(N(nn.embedding(T(idx), T(w))), w[idx])
    g = N(rt.grad(lambda ww: rt.sum(nn.embedding(T(idx), ww) * 2.))(T(w)))
    want = np.zeros_like(w)
    np.add.at(want, idx, 2.)
    np.testing.assert_allclose(g, want)  # repeated indices accumulate
    rt.check_grads(lambda ww: nn.embedding(T(idx), ww), [T(w)], order=2)
    with pytest.raises(IndexError, match="embedding: index 6 is out of range for 6 embeddings"):
        nn.embedding(T(np.array([6])), T(w))
    with pytest.raises(IndexError, match="embedding: index -1"):
        nn.embedding(T(np.array([-1])), T(w))
    with pytest.raises(TypeError, match="embedding: indices must be an integer tensor"):
        nn.embedding(T(np.array([1.])), T(w))
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(N(nn.embedding(T(idx), T(w))),
                               torch.nn.functional.embedding(torch.tensor(idx), torch.tensor(w)).numpy())


def _np_layer_norm(x, k, w=None, b=None, eps=1e-5):
    ax = tuple(range(x.ndim - k, x.ndim))
    y = (x - x.mean(ax, keepdims=True)) / np.sqrt(x.var(ax, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def test_layer_norm():
    x = RNG.normal(size=(2, 3, 4)) * 3 + 1
    w, b = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    np.testing.assert_allclose(N(nn.layer_norm(T(x), 4)), _np_layer_norm(x, 1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(N(nn.layer_norm(T(x), (3, 4), T(w), T(b), eps=1e-3)),
                               _np_layer_norm(x, 2, w, b, 1e-3), rtol=1e-12, atol=1e-14)
    rt.check_grads(lambda a, ww, bb: nn.layer_norm(a, [3, 4], ww, bb), [T(x), T(w), T(b)], order=2)
    r16 = nn.layer_norm(T(x, rt.bfloat16), 4)
    assert r16.dtype is rt.bfloat16
    np.testing.assert_allclose(N(rt.astype(r16, rt.float32)),
                               _np_layer_norm(N(rt.astype(T(x, rt.bfloat16), rt.float64)), 1), atol=0.02)
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \(3,\) must be the trailing axes"):
        nn.layer_norm(T(x), 3)
    with pytest.raises(ValueError, match=r"layer_norm: weight must have shape \(4,\)"):
        nn.layer_norm(T(x), 4, T(w))
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    np.testing.assert_allclose(N(nn.layer_norm(T(x), (3, 4), T(w), T(b))),
                               F.layer_norm(torch.tensor(x), (3, 4), torch.tensor(w), torch.tensor(b)).numpy(),
                               rtol=1e-12, atol=1e-13)


def test_batch_norm_training_and_inference():
    x = RNG.normal(size=(4, 3, 2, 5)) * 2 + 0.5
    rm, rv = RNG.normal(size=3), RNG.random(3) + 0.5
    w, b = RNG.normal(size=3), RNG.normal(size=3)
    y, nm, nv = nn.batch_norm(T(x), T(rm), T(rv), T(w), T(b), training=True, momentum=0.2, eps=1e-4)
    ax = (0, 2, 3)
    mean, var = x.mean(ax), x.var(ax)
    n = x.size / 3
    shp = (1, 3, 1, 1)
    want = (x - mean.reshape(shp)) / np.sqrt(var.reshape(shp) + 1e-4) * w.reshape(shp) + b.reshape(shp)
    np.testing.assert_allclose(N(y), want, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(N(nm), 0.8 * rm + 0.2 * mean, rtol=1e-13)
    np.testing.assert_allclose(N(nv), 0.8 * rv + 0.2 * var * n / (n - 1), rtol=1e-13)
    yi, m2, v2 = nn.batch_norm(T(x), nm, nv, T(w), T(b))
    assert m2 is nm and v2 is nv  # inference returns the statistics unchanged
    want_i = (x - N(nm).reshape(shp)) / np.sqrt(N(nv).reshape(shp) + 1e-5) * w.reshape(shp) + b.reshape(shp)
    np.testing.assert_allclose(N(yi), want_i, rtol=1e-12)
    _, none_m, none_v = nn.batch_norm(T(x), training=True)
    assert none_m is None and none_v is None
    xs = T(x[:3, :, :1, :2])
    rt.check_grads(lambda a, ww, bb: nn.batch_norm(a, None, None, ww, bb, training=True)[0],
                   [xs, T(w), T(b)], order=2)
    rt.check_grads(lambda a, ww: nn.batch_norm(a, T(rm), T(rv), ww, training=False)[0], [xs, T(w)], order=2)
    # the returned statistics carry no derivative
    g = rt.grad(lambda a: rt.sum(nn.batch_norm(a, T(rm), T(rv), training=True)[1]))(xs)
    assert N(g).tolist() == np.zeros(xs.shape).tolist()
    with pytest.raises(ValueError, match="batch_norm: inference .* needs running_mean and running_var"):
        nn.batch_norm(T(x))
    with pytest.raises(ValueError, match="batch_norm: training needs more than 1 value per channel"):
        nn.batch_norm(T(x[:1, :, :1, :1]), training=True)
    with pytest.raises(ValueError, match=r"batch_norm: weight must have shape \(3,\)"):
        nn.batch_norm(T(x), T(rm), T(rv), T(w[:2]))
    with pytest.raises(ValueError, match="batch_norm: momentum must be in"):
        nn.batch_norm(T(x), T(rm), T(rv), momentum=1.5)


def test_batch_norm_against_torch():
    torch = _torch()
    F = torch.nn.functional
    x = RNG.normal(size=(5, 4, 3))
    rm, rv = RNG.normal(size=4), RNG.random(4) + 0.5
    w, b = RNG.normal(size=4), RNG.normal(size=4)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    for training in (True, False):
        ty = F.batch_norm(torch.tensor(x), trm, trv, torch.tensor(w), torch.tensor(b), training=training,
                          momentum=0.3, eps=1e-3)  # updates trm/trv in place when training
        y, nm, nv = nn.batch_norm(T(x), T(rm), T(rv), T(w), T(b), training=training, momentum=0.3, eps=1e-3)
        np.testing.assert_allclose(N(y), ty.numpy(), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(N(nm), trm.numpy(), rtol=1e-13)
        np.testing.assert_allclose(N(nv), trv.numpy(), rtol=1e-13)
        rm, rv = N(nm), N(nv)


def _np_attention(q, k, v, keep=None, add=None, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if add is not None:
        s = s + add
    if keep is not None:
        s = np.where(keep, s, -np.inf)
    return sps.softmax(s, axis=-1) @ v


def test_attention_values_and_grads():
    q, k, v = RNG.normal(size=(2, 3, 4, 5)), RNG.normal(size=(2, 3, 6, 5)), RNG.normal(size=(2, 3, 6, 7))
    np.testing.assert_allclose(N(nn.scaled_dot_product_attention(T(q), T(k), T(v))), _np_attention(q, k, v),
                               rtol=1e-12)
    tri = np.tril(np.ones((4, 6), bool))
    np.testing.assert_allclose(N(nn.scaled_dot_product_attention(T(q), T(k), T(v), causal=True)),
                               _np_attention(q, k, v, keep=tri), rtol=1e-12)
    keep = RNG.random((3, 4, 6)) > 0.4
    keep[..., 0] = True
    np.testing.assert_allclose(N(nn.scaled_dot_product_attention(T(q), T(k), T(v), mask=T(keep), scale=0.3)),
                               _np_attention(q, k, v, keep=keep, scale=0.3), rtol=1e-12)
    add = RNG.normal(size=(4, 6))
    np.testing.assert_allclose(N(nn.scaled_dot_product_attention(T(q), T(k), T(v), mask=T(add))),
                               _np_attention(q, k, v, add=add), rtol=1e-12)
    # a query with every key masked gets zeros, and finite derivatives
    dead = np.ones((4, 6), bool)
    dead[1] = False
    out = N(nn.scaled_dot_product_attention(T(q), T(k), T(v), mask=T(dead)))
    assert np.all(out[..., 1, :] == 0) and np.all(np.isfinite(out))
    g = rt.grad(lambda a: rt.sum(nn.scaled_dot_product_attention(a, T(k), T(v), mask=T(dead))))(T(q))
    assert np.all(np.isfinite(N(g)))
    qs, ks, vs = T(q[:1, :1, :3, :2]), T(k[:1, :1, :3, :2]), T(v[:1, :1, :3, :2])
    rt.check_grads(lambda a, b, c: nn.scaled_dot_product_attention(a, b, c, causal=True), [qs, ks, vs], order=2)
    rt.check_grads(lambda a, b, c: nn.scaled_dot_product_attention(a, b, c, mask=T(add[:3, :3])), [qs, ks, vs])


def test_attention_low_precision_accumulates_in_float32():
    q, k, v = (RNG.normal(size=(2, 8, 16)) for _ in range(3))
    qb, kb, vb = (T(a, rt.bfloat16) for a in (q, k, v))
    out = nn.scaled_dot_product_attention(qb, kb, vb, causal=True)
    assert out.dtype is rt.bfloat16
    ref = _np_attention(*(N(rt.astype(a, rt.float64)) for a in (qb, kb, vb)), keep=np.tril(np.ones((8, 8), bool)))
    # one rounding to bfloat16 at the end (plus float32 accumulation): within bfloat16's half-ulp-ish
    np.testing.assert_allclose(N(rt.astype(out, rt.float64)), ref, rtol=1e-2, atol=1e-2)
    # and identical to computing in float32 and rounding once
    o32 = nn.scaled_dot_product_attention(*(rt.astype(a, rt.float32) for a in (qb, kb, vb)), causal=True)
    assert N(rt.astype(out, rt.float32)).tolist() == N(rt.astype(rt.astype(o32, rt.bfloat16), rt.float32)).tolist()


def test_attention_errors():
    q = T(RNG.normal(size=(4, 5)))
    with pytest.raises(ValueError, match="scaled_dot_product_attention: q and k must have the same feature size"):
        nn.scaled_dot_product_attention(q, T(RNG.normal(size=(4, 3))), q)
    with pytest.raises(ValueError, match="scaled_dot_product_attention: k and v must have the same length"):
        nn.scaled_dot_product_attention(q, q, T(RNG.normal(size=(3, 5))))
    with pytest.raises(ValueError, match="scaled_dot_product_attention: mask of shape"):
        nn.scaled_dot_product_attention(q, q, q, mask=rt.ones(rt.bool, [3, 3]))
    with pytest.raises(TypeError, match="scaled_dot_product_attention: mask must be a bool or float"):
        nn.scaled_dot_product_attention(q, q, q, mask=rt.ones(rt.int32, [4, 4]))


def test_attention_against_torch():
    torch = _torch()
    F = torch.nn.functional
    q, k, v = RNG.normal(size=(2, 3, 4, 5)), RNG.normal(size=(2, 3, 6, 5)), RNG.normal(size=(2, 3, 6, 7))
    tq, tk, tv = torch.tensor(q), torch.tensor(k), torch.tensor(v)
    keep = RNG.random((4, 6)) > 0.3
    keep[:, 0] = True
    add = RNG.normal(size=(4, 6))
    cases = [({}, {}), ({"causal": True}, {"is_causal": True}), ({"mask": T(keep)}, {"attn_mask": torch.tensor(keep)}),
             ({"mask": T(add)}, {"attn_mask": torch.tensor(add)}), ({"scale": 0.7}, {"scale": 0.7})]
    for kw, tkw in cases:
        np.testing.assert_allclose(N(nn.scaled_dot_product_attention(T(q), T(k), T(v), **kw)),
                                   F.scaled_dot_product_attention(tq, tk, tv, **tkw).numpy(), rtol=1e-12, atol=1e-13)
    # gradients agree with autograd
    tqg = tq.clone().requires_grad_(True)
    (F.scaled_dot_product_attention(tqg, tk, tv, is_causal=True) ** 2).sum().backward()
    g = rt.grad(lambda a: rt.sum(nn.scaled_dot_product_attention(a, T(k), T(v), causal=True) ** 2))(T(q))
    np.testing.assert_allclose(N(g), tqg.grad.numpy(), rtol=1e-11, atol=1e-12)
    # float32
    q32 = [a.astype(np.float32) for a in (q, k, v)]
    np.testing.assert_allclose(N(nn.scaled_dot_product_attention(*(T(a) for a in q32), causal=True)),
                               F.scaled_dot_product_attention(*(torch.tensor(a) for a in q32), is_causal=True).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_dropout():
    x = T(RNG.normal(size=(50, 40)) + 3.)
    key = rt.random.key(7)
    y = nn.dropout(x, 0.3, key)
    yv, xv = N(y), N(x)
    kept = yv != 0
    np.testing.assert_allclose(yv[kept], xv[kept] / 0.7, rtol=1e-6)
    frac = 1 - kept.mean()
    assert abs(frac - 0.3) < 4 * math.sqrt(0.3 * 0.7 / kept.size)
    assert N(nn.dropout(x, 0.3, key)).tolist() == yv.tolist()            # a pure function of the key
    assert N(nn.dropout(x, 0.3, rt.random.key(8))).tolist() != yv.tolist()
    assert nn.dropout(x, 0.0, key) is x
    assert np.all(N(nn.dropout(x, 1.0, key)) == 0)
    xd = T(RNG.normal(size=(6,)))
    g = N(rt.grad(lambda a: rt.sum(nn.dropout(a, 0.5, key)))(xd))
    mask = N(nn.dropout(rt.ones(rt.float64, [6]), 0.5, key))
    np.testing.assert_allclose(g, mask)  # derivative: the mask scaled by 1 / (1 - rate)
    rt.check_grads(lambda a: nn.dropout(a, 0.5, key), [xd], order=2)
    assert nn.dropout(T(np.ones(4), rt.bfloat16), 0.5, key).dtype is rt.bfloat16
    with pytest.raises(ValueError, match="dropout: rate must be in"):
        nn.dropout(x, 1.5, key)
    with pytest.raises(TypeError, match="dropout: x must be a real floating tensor"):
        nn.dropout(rt.ones(rt.int32, [2]), 0.5, key)


# ---------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------
def _red(loss, reduction):
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](loss)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(reduction):
    p, t = RNG.normal(size=(3, 4)) * 2, RNG.normal(size=(3, 4))
    e = p - t
    np.testing.assert_allclose(N(nn.mse(T(p), T(t), reduction)), _red(e ** 2, reduction), rtol=1e-13)
    np.testing.assert_allclose(N(nn.mae(T(p), T(t), reduction)), _red(np.abs(e), reduction), rtol=1e-13)
    hub = np.where(np.abs(e) <= 1.5, 0.5 * e ** 2, 1.5 * (np.abs(e) - 0.75))
    np.testing.assert_allclose(N(nn.huber(T(p), T(t), 1.5, reduction)), _red(hub, reduction), rtol=1e-13)
    ps, ts = T(p[:2, :3]), T(p[:2, :3] + np.array([0.3, -2.1, 0.9]))  # |e| away from 0 and delta
    for f in (nn.mse, nn.mae, lambda a, b, r: nn.huber(a, b, 1.5, r)):
        rt.check_grads(lambda a, b: f(a, b, reduction), [ps, ts], order=2)


def test_classification_losses_values():
    x = RNG.normal(size=(4, 5)) * 3
    z = RNG.random((4, 5))
    bce = np.logaddexp(0, x) - x * z
    np.testing.assert_allclose(N(nn.sigmoid_bce(T(x), T(z), "none")), bce, rtol=1e-13)
    np.testing.assert_allclose(N(nn.sigmoid_bce(T([1000., -1000.]), T([0., 1.]), "none")), [1000., 1000.])
    pw = 2.5
    bce_w = (1 - z) * x + (1 + (pw - 1) * z) * np.logaddexp(0, -x)
    np.testing.assert_allclose(N(nn.sigmoid_bce(T(x), T(z), "sum", pos_weight=pw)), bce_w.sum(), rtol=1e-13)
    labels = np.array([0, 4, 2, 2])
    lsm = sps.log_softmax(x, axis=1)
    np.testing.assert_allclose(N(nn.softmax_cross_entropy(T(x), T(labels))), -lsm[np.arange(4), labels].mean(),
                               rtol=1e-13)
    probs = sps.softmax(RNG.normal(size=(4, 5)), axis=1)
    np.testing.assert_allclose(N(nn.softmax_cross_entropy(T(x), T(probs), reduction="none")),
                               -(probs * lsm).sum(1), rtol=1e-13)
    # class axis elsewhere
    x3 = RNG.normal(size=(2, 5, 3))
    lab3 = RNG.integers(0, 5, size=(2, 3))
    l3 = sps.log_softmax(x3, axis=1)
    want = -np.take_along_axis(l3, lab3[:, None, :], 1)[:, 0, :]
    np.testing.assert_allclose(N(nn.softmax_cross_entropy(T(x3), T(lab3), axis=1, reduction="none")), want,
                               rtol=1e-13)
    # kl_div: input log-probabilities, target probabilities (PyTorch's convention)
    q = sps.log_softmax(RNG.normal(size=(4, 5)), axis=1)
    p = probs.copy()
    p[0, 0] = 0.
    terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0) - p * q
    np.testing.assert_allclose(N(nn.kl_div(T(q), T(p), "none")), terms, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(N(nn.kl_div(T(q), T(p))), terms.mean(), rtol=1e-13)
    np.testing.assert_allclose(N(nn.kl_div(T(q), T(p), "batchmean")), terms.sum() / 4, rtol=1e-13)
    np.testing.assert_allclose(N(nn.kl_div(T(q), T(np.log(probs)), "sum", log_target=True)),
                               (probs * (np.log(probs) - q)).sum(), rtol=1e-13)


def test_classification_losses_grads():
    x = T(RNG.normal(size=(3, 4)))
    z = T(RNG.random((3, 4)))
    probs = T(sps.softmax(RNG.normal(size=(3, 4)), axis=1))
    labels = T(np.array([1, 3, 0]))
    rt.check_grads(lambda a, b: nn.sigmoid_bce(a, b), [x, z], order=2)
    rt.check_grads(lambda a: nn.sigmoid_bce(a, z, "none", pos_weight=3.), [x], order=2)
    rt.check_grads(lambda a: nn.softmax_cross_entropy(a, labels, label_smoothing=0.1), [x], order=2)
    rt.check_grads(lambda a, b: nn.softmax_cross_entropy(a, b, reduction="none"), [x, probs], order=2)
    q = rt.log_softmax(x)
    rt.check_grads(lambda a, b: nn.kl_div(a, b, "batchmean"), [q, probs], order=2)
    rt.check_grads(lambda a, b: nn.kl_div(a, b, "sum", log_target=True), [q, rt.log(probs)], order=2)


def test_loss_errors():
    a = T(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="mse: reduction must be one of 'mean', 'sum', 'none', got 'avg'"):
        nn.mse(a, a, "avg")
    with pytest.raises(ValueError, match=r"mae: pred and target must have the same shape, got \(2, 3\) and \(3,\)"):
        nn.mae(a, T(np.zeros(3)))
    with pytest.raises(ValueError, match="huber: delta must be positive"):
        nn.huber(a, a, delta=0)
    with pytest.raises(ValueError, match="softmax_cross_entropy: label 3 is out of range for 3 classes"):
        nn.softmax_cross_entropy(a, T(np.array([0, 3])))
    with pytest.raises(ValueError, match=r"softmax_cross_entropy: integer labels must have shape \(2,\)"):
        nn.softmax_cross_entropy(a, T(np.array([0, 1, 1])))
    with pytest.raises(TypeError, match="softmax_cross_entropy: labels must be integer class indices"):
        nn.softmax_cross_entropy(a, rt.ones(rt.bool, [2, 3]))
    with pytest.raises(ValueError, match="kl_div: reduction must be one of .*'batchmean'"):
        nn.kl_div(a, a, "batch")
    with pytest.raises(TypeError, match="sigmoid_bce: logits must be a real tensor"):
        nn.sigmoid_bce(rt.zeros(rt.complex64, [2]), rt.zeros(rt.float32, [2]))
    r = nn.mse(T(np.ones(3), rt.bfloat16), T(np.zeros(3), rt.bfloat16))
    assert r.dtype is rt.bfloat16 and N(rt.astype(r, rt.float32)) == 1.


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides the total loss:UserWarning")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_against_torch(reduction):
    torch = _torch()
    F = torch.nn.functional
    p, t = RNG.normal(size=(3, 4)) * 2, RNG.normal(size=(3, 4))
    tp, tt = torch.tensor(p), torch.tensor(t)
    z = RNG.random((3, 4))
    labels = np.array([0, 3, 2])
    probs = sps.softmax(RNG.normal(size=(3, 4)), axis=1)
    logq = sps.log_softmax(p, axis=1)
    cases = [
        (nn.mse(T(p), T(t), reduction), F.mse_loss(tp, tt, reduction=reduction)),
        (nn.mae(T(p), T(t), reduction), F.l1_loss(tp, tt, reduction=reduction)),
        (nn.huber(T(p), T(t), 0.8, reduction), F.huber_loss(tp, tt, reduction=reduction, delta=0.8)),
        (nn.sigmoid_bce(T(p), T(z), reduction), F.binary_cross_entropy_with_logits(tp, torch.tensor(z),
                                                                                    reduction=reduction)),
        (nn.sigmoid_bce(T(p), T(z), reduction, pos_weight=T(np.array([1., 2., 3., 4.]))),
         F.binary_cross_entropy_with_logits(tp, torch.tensor(z), reduction=reduction,
                                            pos_weight=torch.tensor([1., 2., 3., 4.], dtype=torch.float64))),
        (nn.softmax_cross_entropy(T(p), T(labels), reduction=reduction),
         F.cross_entropy(tp, torch.tensor(labels), reduction=reduction)),
        (nn.softmax_cross_entropy(T(p), T(labels), reduction=reduction, label_smoothing=0.2),
         F.cross_entropy(tp, torch.tensor(labels), reduction=reduction, label_smoothing=0.2)),
        (nn.softmax_cross_entropy(T(p), T(probs), reduction=reduction),
         F.cross_entropy(tp, torch.tensor(probs), reduction=reduction)),
        (nn.softmax_cross_entropy(T(p), T(probs), reduction=reduction, label_smoothing=0.1),
         F.cross_entropy(tp, torch.tensor(probs), reduction=reduction, label_smoothing=0.1)),
        (nn.kl_div(T(logq), T(probs), reduction), F.kl_div(torch.tensor(logq), torch.tensor(probs),
                                                           reduction=reduction)),
        (nn.kl_div(T(logq), T(np.log(probs)), reduction, log_target=True),
         F.kl_div(torch.tensor(logq), torch.tensor(np.log(probs)), reduction=reduction, log_target=True)),
    ]
    for i, (a, b) in enumerate(cases):
        np.testing.assert_allclose(N(a), b.numpy(), rtol=1e-12, atol=1e-14, err_msg=f"case {i}")
    np.testing.assert_allclose(N(nn.kl_div(T(logq), T(probs), "batchmean")),
                               F.kl_div(torch.tensor(logq), torch.tensor(probs), reduction="batchmean").numpy(),
                               rtol=1e-12)
    # integer labels with the class axis second (PyTorch's layout for (N, C, d))
    x3 = RNG.normal(size=(2, 4, 3))
    lab3 = RNG.integers(0, 4, size=(2, 3))
    np.testing.assert_allclose(N(nn.softmax_cross_entropy(T(x3), T(lab3), axis=1, reduction=reduction)),
                               F.cross_entropy(torch.tensor(x3), torch.tensor(lab3), reduction=reduction).numpy(),
                               rtol=1e-12)


# ---------------------------------------------------------------------------
# initialisers
# ---------------------------------------------------------------------------
INITS = {
    # name -> (function, kwargs, fan used, kind, scale: bound (uniform) or std (normal))
    "glorot_uniform": (nn.glorot_uniform, {"gain": 1.5}, lambda fi, fo: 1.5 * math.sqrt(6 / (fi + fo)), "u"),
    "glorot_normal": (nn.glorot_normal, {}, lambda fi, fo: math.sqrt(2 / (fi + fo)), "n"),
    "he_uniform": (nn.he_uniform, {}, lambda fi, fo: math.sqrt(6 / fi), "u"),
    "he_normal": (nn.he_normal, {"mode": "fan_out"}, lambda fi, fo: math.sqrt(2 / fo), "n"),
    "lecun_uniform": (nn.lecun_uniform, {}, lambda fi, fo: math.sqrt(3 / fi), "u"),
    "lecun_normal": (nn.lecun_normal, {}, lambda fi, fo: math.sqrt(1 / fi), "n"),
}


@pytest.mark.parametrize("name", list(INITS))
def test_initialiser_distribution(name):
    f, kw, scale, kind = INITS[name]
    shape = (64, 32, 3, 3)
    fi, fo = nn.fans(shape)
    assert (fi, fo) == (32 * 9, 64 * 9)
    s = scale(fi, fo)
    w = f(rt.random.key(11), shape, rt.float64, **kw)
    assert w.shape == shape and w.dtype is rt.float64
    v = N(w).ravel()
    cdf = stats.uniform(-s, 2 * s).cdf if kind == "u" else stats.norm(0, s).cdf
    assert stats.kstest(v, cdf).pvalue > 1e-3
    if kind == "u":
        assert np.abs(v).max() <= s
    assert N(f(rt.random.key(11), shape, rt.float64, **kw)).tolist() == v.reshape(shape).tolist()
    assert f(rt.random.key(1), (4, 3), rt.bfloat16, **kw).dtype is rt.bfloat16
    assert f(rt.random.key(1), (4, 3), **kw).dtype is rt.float32


def test_initialisers_against_torch_moments():
    torch = _torch()
    init = torch.nn.init
    torch.manual_seed(0)
    shape = (128, 64, 3, 3)
    pairs = [(nn.glorot_uniform, lambda t: init.xavier_uniform_(t)),
             (nn.glorot_normal, lambda t: init.xavier_normal_(t)),
             (nn.he_uniform, lambda t: init.kaiming_uniform_(t, nonlinearity="relu")),
             (nn.he_normal, lambda t: init.kaiming_normal_(t, nonlinearity="relu")),
             (nn.lecun_uniform, lambda t: init.kaiming_uniform_(t, nonlinearity="linear")),
             (nn.lecun_normal, lambda t: init.kaiming_normal_(t, nonlinearity="linear"))]
    for f, tf in pairs:
        a = N(f(rt.random.key(3), shape, rt.float64))
        b = tf(torch.empty(shape, dtype=torch.float64)).numpy()
        assert a.std() == pytest.approx(b.std(), rel=0.02), f.__name__
        assert abs(a.mean()) < 0.01 * b.std() * 10 and abs(b.mean()) < 0.1 * b.std()
        if "uniform" in f.__name__:
            assert np.abs(a).max() == pytest.approx(np.abs(b).max(), rel=0.01)


def test_initialiser_errors():
    k = rt.random.key(0)
    with pytest.raises(ValueError, match=r"glorot_uniform: a weight needs at least 2 axes .* got shape \(5,\)"):
        nn.glorot_uniform(k, (5,))
    with pytest.raises(TypeError, match="he_normal: dtype must be a real floating dtype, got int32"):
        nn.he_normal(k, (3, 3), rt.int32)
    with pytest.raises(ValueError, match="he_uniform: mode must be 'fan_in' or 'fan_out', got 'fan'"):
        nn.he_uniform(k, (3, 3), mode="fan")
    with pytest.raises(ValueError, match="lecun_normal: cannot initialise a weight with a zero fan"):
        nn.lecun_normal(k, (3, 0))
    with pytest.raises(ValueError, match="glorot_normal: gain must be positive"):
        nn.glorot_normal(k, (3, 3), gain=-1.)


# ---------------------------------------------------------------------------
# a composition: one training step of a tiny MLP differentiates end to end
# ---------------------------------------------------------------------------
def test_mlp_step_gradients():
    k1, k2, k3 = rt.random.split(rt.random.key(0), 3)
    w1 = nn.he_uniform(k1, (8, 4), rt.float64)
    w2 = nn.glorot_normal(k2, (3, 8), rt.float64)
    x = T(RNG.normal(size=(5, 4)))
    y = T(np.array([0, 2, 1, 1, 0]))

    def loss(w1, w2):
        h = nn.layer_norm(nn.gelu(nn.linear(x, w1)), 8)
        h = nn.dropout(h, 0.25, k3)
        return nn.softmax_cross_entropy(nn.linear(h, w2), y)

    rt.check_grads(loss, [w1, w2])


# ---------------------------------------------------------------------------
# batching: rt.vmap of each function equals the function applied lane by lane
# ---------------------------------------------------------------------------
def _vmap_cases():
    w = T(RNG.normal(size=(5, 3)))
    lw = T(RNG.normal(size=(4, 3)))
    kv = T(RNG.normal(size=(4, 3)))
    cases = {name: (f, lambda i: (T(X_SMOOTH[i:i + 4]),)) for name, (f, _, _) in ACTIVATIONS.items()}
    x = RNG.normal(size=(3, 4, 3))
    labels = np.array([[0, 1, 2, 2], [2, 2, 0, 1], [1, 0, 0, 4]])
    probs = sps.softmax(RNG.normal(size=(3, 4, 3)), axis=-1)
    cases.update({
        "glu": (lambda a: nn.glu(a, 0), lambda i: (T(x[i]),)),
        "linear": (lambda a: nn.linear(a, lw), lambda i: (T(x[i]),)),
        "embedding": (lambda y: nn.embedding(y, w), lambda i: (T(labels[i]),)),
        "layer_norm": (lambda a: nn.layer_norm(a, 3), lambda i: (T(x[i]),)),
        "batch_norm": (lambda a: nn.batch_norm(a, training=True)[0], lambda i: (T(x[i]),)),
        "attention": (lambda q: nn.scaled_dot_product_attention(q, kv, kv, causal=True), lambda i: (T(x[i]),)),
        "mse": (nn.mse, lambda i: (T(x[i]), T(probs[i]))),
        "huber": (nn.huber, lambda i: (T(x[i]), T(probs[i]))),
        "sigmoid_bce": (nn.sigmoid_bce, lambda i: (T(x[i]), T(probs[i]))),
        "ce_labels": (lambda a, y: nn.softmax_cross_entropy(a, y), lambda i: (T(x[i]), T(labels[i] % 3))),
        "ce_probs": (nn.softmax_cross_entropy, lambda i: (T(x[i]), T(probs[i]))),
        "kl_div": (lambda a, b: nn.kl_div(rt.log_softmax(a), b, "batchmean"), lambda i: (T(x[i]), T(probs[i]))),
        "erfc": (rt.erfc, lambda i: (T(x[i] * 3),)),
        "logsumexp": (lambda a: rt.logsumexp(a, [1]), lambda i: (T(x[i]),)),
        "softmax": (rt.softmax, lambda i: (T(x[i]),)),
        "one_hot": (lambda y: rt.one_hot(y, 4), lambda i: (T(labels[i]),)),
        "standardize": (rt.standardize, lambda i: (T(x[i]),)),
    })
    return cases


VMAP_CASES = _vmap_cases()


@pytest.mark.parametrize("name", list(VMAP_CASES))
def test_vmap_batches(name):
    f, args_of = VMAP_CASES[name]
    lanes = [args_of(i) for i in range(3)]
    stacked = [rt.stack([lane[j] for lane in lanes]) for j in range(len(lanes[0]))]
    got = N(rt.vmap(f)(*stacked))
    want = np.stack([N(f(*lane)) for lane in lanes])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
