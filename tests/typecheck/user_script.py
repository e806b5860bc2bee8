"""A user's script, type-checked in CI (``mypy --strict`` and ``basedpyright``, see .ci/run).

It touches every family of the public API the way a user would; it is not run by pytest (no
``test_`` prefix) but it runs: ``python tests/typecheck/user_script.py``.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

import runetensor as rt
import runetensor.io as rio
import runetensor.nn as nn
import runetensor.optim as optim
import runetensor.random as rk
from runetensor import bigarray as ba
from runetensor import harpie as hp


def creation_and_views() -> rt.Tensor:
    t: rt.Tensor = rt.create(rt.float32, [2, 3], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    z = rt.zeros(rt.float64, [3])
    o = rt.ones(rt.int32, [2, 2])
    e = rt.eye(rt.float32, 3)
    r = rt.arange(rt.int64, 0, 10, 2)
    ls = rt.linspace(rt.float32, 0.0, 1.0, 5)
    v = t.reshape(3, 2).T + t.reshape((3, 2)).transpose()
    w = rt.concatenate([t, t], axis=0)
    s = rt.stack([z, z])
    shape: tuple[int, ...] = v.shape
    dt: rt.DType = t.dtype
    n: int = t.ndim + t.size + len(t)
    _ = (o, e, r, ls, w, s, shape, dt, n, t.strides, t.flatten(), rt.expand_dims(t, [0]))
    return t


def indexing_and_operators(t: rt.Tensor) -> float:
    row = t[0]
    col = t[:, 1]
    t[0, 0] = 7.0
    u = (t + 1) * 2 - t / 3 + 1.5 ** t
    m = u @ t.T
    b = (t > 2) & (t < 6)
    picked = rt.where(b, t, 0.0)
    x: float = float(row[0]) + float(col.sum())
    for r in t:
        x += r[0].item()
    lst = t.tolist()
    _ = (m, picked, -t, abs(t), ~b, 2.0 in t, lst, t.astype(rt.float64), rt.take(t, rt.create(rt.int32, [1], [0])))
    return x


def math_and_reductions(t: rt.Tensor) -> rt.Tensor:
    a = rt.exp(rt.sin(t)) + rt.sqrt(rt.abs(t)) + rt.tanh(t)
    b = rt.add(t, t) + rt.add_s(t, 1.0) + rt.rsub_s(t, 1.0) + rt.maximum(t, a)
    s1 = rt.sum(t, axes=[0]) + rt.mean(t, axes=[0]) + t.sum(axis=0) + t.max(axis=0)
    s2 = rt.std(t) + rt.var(t, ddof=1) + rt.prod(t) + rt.min(t)
    ok: bool = bool(rt.all(t == t)) and not bool(rt.any(t != t))
    srt = rt.sort(t)
    am = rt.argmax(t, axis=1)
    cs = rt.cumsum(t, axis=0)
    _ = (b, s2, ok, srt, am, cs, np.sum(np.asarray(t)))
    return s1 + a.sum()


def linalg_and_fft() -> rt.Tensor:
    m = rt.create(rt.float64, [2, 2], [4.0, 1.0, 1.0, 3.0])
    inv = rt.inv(m)
    sol = rt.solve(m, rt.ones(rt.float64, [2]))
    q, r = rt.qr(m)
    det = rt.det(m)
    ein = rt.einsum("ij,jk->ik", m, m)
    spec = rt.fft(rt.create(rt.complex64, [4], [1, 0, 0, 0]))
    back = rt.ifft(spec)
    rs = rt.rfft(rt.ones(rt.float32, [8]))
    _ = (inv, sol, q, r, det, ein, back, rs, rt.matmul(m, m), rt.dot(m, m), rt.norm(m))
    return rt.real(back)


def io_roundtrip(t: rt.Tensor) -> rt.Tensor:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "t.npy")
        rio.save_npy(p, t)
        back = rio.load_npy(p)
        rio.save_safetensors(os.path.join(d, "t.safetensors"), {"t": t})
        named = rio.load_safetensors(os.path.join(d, "t.safetensors"))
        _ = named
    return back


def random_keys() -> rt.Tensor:
    k = rk.key(0)
    k1, k2 = rk.split(k)
    n = rk.normal(k1, [3])
    u = rk.uniform(k2, [3])
    old_style = rt.rand(rt.float32, [2], seed=1)
    _ = old_style
    return n + u


def transforms() -> rt.Tensor:
    def loss(w: rt.Tensor) -> rt.Tensor:
        return rt.sum(rt.tanh(w) ** 2)

    def cube_sum(x: rt.Tensor) -> rt.Tensor:
        return rt.sum(x ** 3)

    w = rt.ones(rt.float32, [3])
    g: rt.Tensor = rt.grad(loss)(w)
    per_row: rt.Tensor = rt.vmap(rt.grad(cube_sum))(rt.ones(rt.float32, [2, 3]))
    val, g2 = rt.value_and_grad(loss)(w)
    _ = (val, g2, rt.jvp(loss, (w,), (w,)))
    return g + per_row[0]


def neural_net() -> float:
    k = rk.key(1)
    w = nn.glorot_uniform(k, [4, 3])
    x = rt.ones(rt.float32, [2, 3])
    h = nn.relu(nn.linear(x, w))
    y = nn.softmax_cross_entropy(h, rt.create(rt.int32, [2], [0, 1]))
    opt = optim.adam(1e-3)
    params = {"w": w}
    state = opt.init(params)

    def objective(p: dict[str, rt.Tensor]) -> rt.Tensor:
        return rt.mean(nn.relu(nn.linear(x, p["w"])))

    grads = rt.grad(objective)(params)
    updates, state = opt.update(grads, state, params)
    params = optim.apply_updates(params, updates)
    return float(rt.mean(y))


def bigarray_and_harpie() -> None:
    g = ba.Genarray.create(ba.float32, ba.c_layout, [2, 3])
    g.fill(1.0)
    dims: tuple[int, ...] = g.dims()
    t = rt.of_bigarray(g)
    back = rt.to_bigarray(t)
    a = hp.range([2, 3, 4])
    red = hp.reduces(a, [0, 2], rt.sum)
    shown: str = hp.pretty(red)
    _ = (dims, back, shown, ba.ext.bfloat16, hp.range, ba.int)


if __name__ == "__main__":
    t0 = creation_and_views()
    print(indexing_and_operators(t0))
    print(math_and_reductions(t0))
    print(linalg_and_fft())
    print(io_roundtrip(t0))
    print(random_keys())
    print(transforms())
    print(neural_net())
    bigarray_and_harpie()
    print("ok")
