"""Stride-1 float32 convolutions on the compiled flat-row kernels (runetensor/_backend/_convk.py):
values and the three gradients against PyTorch in float64, central differences, rt.jit against eager,
vmap and higher derivatives (the traced fallback), thread-count and instruction-set independence,
the NumPy path without the kernels, and the kernels' argument checks."""

import numpy as np
import pytest

import runetensor as rt
from runetensor import nn
from runetensor._backend import _convk

pytestmark = pytest.mark.skipif(not _convk.AVAILABLE, reason="the compiled convolution kernels are not built")

rng = np.random.default_rng(7)


def R(a):
    return rt.asarray(np.ascontiguousarray(a, dtype=np.float32))


def N(t):
    return rt.to_numpy(t)


CASES = [   # (batch, C_in, C_out, spatial, kernel, parameters)
    (2, 3, 5, (7, 6), (3, 3), dict(padding=1)),
    (5, 1, 16, (8, 8), (3, 3), dict(padding=1)),
    (9, 16, 32, (4, 4), (3, 3), dict(padding=1)),
    (3, 2, 4, (9, 9), (3, 3), dict(dilation=2)),
    (2, 5, 3, (6, 5), (2, 3), dict(padding="same")),
    (2, 2, 6, (6, 7), (1, 1), dict(padding=(1, 2))),
    (4, 3, 2, (33,), (5,), dict(padding=3, dilation=2)),
    (2, 2, 3, (4, 5, 3), (2, 3, 2), dict(padding=(1, 0, 1))),
    (3, 16, 32, (32, 32), (3, 3), dict(padding=1)),
]


def _ours_and_torch(nd):
    import torch.nn.functional as F
    return {1: (nn.conv1d, F.conv1d), 2: (nn.conv2d, F.conv2d), 3: (nn.conv3d, F.conv3d)}[nd]


def _tol(ref):
    return 2e-5 * max(1.0, float(np.abs(ref).max()))


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("n,c,co,sp,ks,kw", CASES)
def test_float32_conv_and_gradients_against_torch_in_float64(n, c, co, sp, ks, kw):
    torch = pytest.importorskip("torch")
    ours, theirs = _ours_and_torch(len(sp))
    x, w, b = rng.standard_normal((n, c) + sp), rng.standard_normal((co, c) + ks), rng.standard_normal(co)
    tx, tw, tb = (torch.from_numpy(a).requires_grad_(True) for a in (x, w, b))
    want = theirs(tx, tw, tb, **kw)
    u = rng.standard_normal(tuple(want.shape))
    (want * torch.from_numpy(u)).sum().backward()
    got = ours(R(x), R(w), R(b), **kw)
    assert got.dtype == rt.float32 and got.shape == tuple(want.shape)
    np.testing.assert_allclose(N(got), want.detach().numpy(), atol=_tol(want.detach().numpy()), rtol=0)
    gs = rt.grad(lambda x, w, b: rt.sum(ours(x, w, b, **kw) * R(u)), argnums=(0, 1, 2))(R(x), R(w), R(b))
    for g, t in zip(gs, (tx, tw, tb)):
        assert g.dtype == rt.float32
        np.testing.assert_allclose(N(g), t.grad.numpy(), atol=_tol(t.grad.numpy()), rtol=0)
    # one gradient at a time (the backward computes only what is asked for)
    gw = rt.grad(lambda w: rt.sum(ours(R(x), w, None, **kw) * R(u)))(R(w))
    np.testing.assert_allclose(N(gw), tw.grad.numpy(), atol=_tol(tw.grad.numpy()), rtol=0)
    gx = rt.grad(lambda x: rt.sum(ours(x, R(w), R(b), **kw) * R(u)))(R(x))
    np.testing.assert_allclose(N(gx), tx.grad.numpy(), atol=_tol(tx.grad.numpy()), rtol=0)


def test_float32_gradients_by_central_differences():
    """The loss is linear in each operand, so a central difference is exact up to float32 rounding."""
    x, w, b = rng.standard_normal((3, 4, 9, 8)), rng.standard_normal((6, 4, 3, 2)), rng.standard_normal(6)
    u = R(rng.standard_normal((3, 6, 9, 9)))

    def loss(x, w, b):
        return rt.sum(nn.conv2d(x, w, b, padding=1) * u)
    gs = rt.grad(loss, argnums=(0, 1, 2))(R(x), R(w), R(b))
    args = [x, w, b]
    for i, g in enumerate(gs):
        v = rng.standard_normal(args[i].shape)
        hi = [R(a + v) if j == i else R(a) for j, a in enumerate(args)]
        lo = [R(a - v) if j == i else R(a) for j, a in enumerate(args)]
        fd = (float(loss(*hi)) - float(loss(*lo))) / 2
        want = float(np.sum(N(g).astype(np.float64) * v))
        assert abs(fd - want) <= 1e-4 * (abs(want) + np.abs(N(g)).sum()), (i, fd, want)


def test_jitted_training_step_equals_eager():
    from runetensor import optim
    from runetensor.examples.digits import cnn, init_cnn, loss_fn
    params = init_cnn(rt.random.key(3))
    x = R(rng.random((16, 1, 8, 8)))
    y = rt.asarray(rng.integers(0, 10, 16).astype(np.int32))
    opt = optim.adam(1e-2)
    vg = rt.value_and_grad(lambda p, x, y: loss_fn(p, cnn, x, y))

    def step(p, s, x, y):
        loss, g = vg(p, x, y)
        upd, s = opt.update(g, s, p)
        return optim.apply_updates(p, upd), s, loss
    jstep = rt.jit(step)
    pe = pj = params
    se = sj = opt.init(params)
    for _ in range(3):
        pe, se, le = step(pe, se, x, y)
        pj, sj, lj = jstep(pj, sj, x, y)
        assert abs(float(le) - float(lj)) <= 1e-5 * abs(float(le))   # the jit's fused loops round on their own
    for k in pe:
        np.testing.assert_allclose(N(pe[k]), N(pj[k]), atol=1e-5, rtol=1e-4)
    assert rt.jit_stats(jstep)["traces"] == 1


def test_jit_of_conv_forward_and_gradient_equals_eager():
    x, w, b = R(rng.standard_normal((4, 3, 12, 10))), R(rng.standard_normal((8, 3, 3, 3))), R(rng.standard_normal(8))
    f = lambda x, w, b: nn.conv2d(x, w, b, padding=(1, 2), dilation=(1, 2))          # noqa: E731
    np.testing.assert_array_equal(N(rt.jit(f)(x, w, b)), N(f(x, w, b)))
    g = rt.grad(lambda x, w, b: rt.sum(f(x, w, b) ** 2), argnums=(0, 1, 2))
    for a, e in zip(rt.jit(g)(x, w, b), g(x, w, b)):
        np.testing.assert_array_equal(N(a), N(e))


def test_vmap_and_second_derivatives_take_the_traced_path():
    x, w = rng.standard_normal((3, 2, 2, 6, 5)), rng.standard_normal((4, 2, 3, 3))
    got = rt.vmap(lambda x: nn.conv2d(x, R(w), padding=1))(R(x))
    want = np.stack([N(nn.conv2d(R(xi), R(w), padding=1)) for xi in x])
    np.testing.assert_allclose(N(got), want, atol=1e-5, rtol=0)
    # d/dw of <grad_x loss, v>: the backward differentiated again, against the float64 path
    v = rng.standard_normal(x.shape[1:])

    def inner(x, w, dt):
        gx = rt.grad(lambda x: rt.sum(nn.conv2d(x, w, padding=1) ** 2))(x)
        return rt.sum(gx * rt.astype(rt.asarray(v), dt))
    h32 = rt.grad(inner, argnums=1)(R(x[0]), R(w), rt.float32)
    h64 = rt.grad(inner, argnums=1)(rt.asarray(x[0]), rt.asarray(w), rt.float64)
    np.testing.assert_allclose(N(h32), N(h64), atol=2e-4 * np.abs(N(h64)).max(), rtol=0)


def test_results_do_not_depend_on_the_thread_count():
    x, w, b = R(rng.standard_normal((8, 8, 40, 36))), R(rng.standard_normal((12, 8, 3, 3))), R(rng.standard_normal(12))
    g = rt.grad(lambda x, w, b: rt.sum(nn.conv2d(x, w, b, padding=1) ** 2), argnums=(0, 1, 2))
    old = rt.get_num_threads()
    try:
        rt.set_num_threads(1)
        one = [N(t) for t in (nn.conv2d(x, w, b, padding=1),) + tuple(g(x, w, b))]
        rt.set_num_threads(2)
        two = [N(t) for t in (nn.conv2d(x, w, b, padding=1),) + tuple(g(x, w, b))]
    finally:
        rt.set_num_threads(old)
    for a, e in zip(one, two):
        np.testing.assert_array_equal(a, e)


def test_instruction_set_variants_agree():
    from runetensor._backend import _conv_kernels as ck
    x, w, b = rng.standard_normal((3, 5, 11, 9)), rng.standard_normal((7, 5, 3, 3)), rng.standard_normal(7)
    u = R(rng.standard_normal((3, 7, 11, 9)))
    want = [N(t) for t in rt.grad(lambda x, w, b: rt.sum(nn.conv2d(x, w, b, padding=1) * u),
                                  argnums=(0, 1, 2))(rt.asarray(x), rt.asarray(w), rt.asarray(b))]
    yref = N(nn.conv2d(rt.asarray(x), rt.asarray(w), rt.asarray(b), padding=1))
    prev = ck.set_isa("baseline")
    try:
        for isa in ("baseline", "avx2", "avx512"):
            try:
                ck.set_isa(isa)
            except ValueError:
                continue            # not on this machine
            y = N(nn.conv2d(R(x), R(w), R(b), padding=1))
            np.testing.assert_allclose(y, yref, atol=_tol(yref), rtol=0)
            gs = rt.grad(lambda x, w, b: rt.sum(nn.conv2d(x, w, b, padding=1) * u), argnums=(0, 1, 2))(R(x), R(w), R(b))
            for g, e in zip(gs, want):
                np.testing.assert_allclose(N(g), e, atol=_tol(e), rtol=0)
    finally:
        ck.set_isa(prev)


def test_without_the_kernels_the_numpy_paths_give_the_same_values(monkeypatch):
    x, w, b = R(rng.standard_normal((4, 3, 10, 9))), R(rng.standard_normal((5, 3, 3, 3))), R(rng.standard_normal(5))
    g = rt.grad(lambda x, w, b: rt.sum(nn.conv2d(x, w, b, padding=1) ** 2), argnums=(0, 1, 2))
    with_k = [N(t) for t in (nn.conv2d(x, w, b, padding=1),) + tuple(g(x, w, b))]
    monkeypatch.setattr(_convk, "AVAILABLE", False)
    without = [N(t) for t in (nn.conv2d(x, w, b, padding=1),) + tuple(g(x, w, b))]
    for a, e in zip(with_k, without):
        np.testing.assert_allclose(a, e, atol=_tol(e), rtol=0)


def test_kernel_argument_checks():
    from runetensor._backend import _conv_kernels as ck
    w = np.zeros((4, 9), np.float32)
    x = np.zeros((1, 100), np.float32)
    y = np.zeros((4, 50), np.float32)
    offs = np.arange(9, dtype=np.int64)
    ck.conv_fwd(w, x, offs, y, 4, 1, 100, 50, 0, 50)
    with pytest.raises(ValueError, match="conv_fwd: tap offset 52 reads past"):
        ck.conv_fwd(w, x, offs + 52, y, 4, 1, 100, 50, 0, 50)
    with pytest.raises(ValueError, match="conv_fwd: rows 3 must be a multiple of 4"):
        ck.conv_fwd(w, x, offs, y, 3, 1, 100, 50, 0, 50)
    with pytest.raises(ValueError, match=r"conv_fwd: range \[0, 60\) must lie in \[0, 50\]"):
        ck.conv_fwd(w, x, offs, y, 4, 1, 100, 50, 0, 60)
    with pytest.raises(ValueError, match="conv_wgrad: out must be a writable"):
        ck.conv_wgrad(y, x, offs, np.zeros((4, 9), np.float32)[:, ::-1], 4, 1, 100, 50, 0, 40)
    with pytest.raises(ValueError, match="conv_fwd: x holds"):
        ck.conv_fwd(w, x.astype(np.float64), offs, y, 4, 1, 100, 50, 0, 50)
    with pytest.raises(ValueError, match="copy_blocks: block 0"):
        ck.copy_blocks(x, np.array([99], np.int64), 0, y, None, 0, 1, 5, None, None)
    with pytest.raises(ValueError, match="copy_blocks: block 1"):    # the second block's last row is past src
        ck.copy_blocks(x, np.array([0, 70], np.int64), 10, y, None, 0, 4, 5, None, None)
    with pytest.raises(ValueError, match="set_isa: avx9 is not available"):
        ck.set_isa("avx9")
    sums = np.empty(4, np.float32)
    ck.row_sums(y, 4, 50, sums)
    np.testing.assert_array_equal(sums, np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="row_sums: a holds"):
        ck.row_sums(y, 5, 50, np.empty(5, np.float32))
    with pytest.raises(ValueError, match="take_taps: offsets"):
        ck.take_taps(x, np.array([0, 90], np.int64), np.array([0, 20], np.int64), np.empty(4, np.float32), 0)
    with pytest.raises(ValueError, match="max_pool_bwd: t must hold kk=3 rows"):
        ck.max_pool_bwd(np.zeros(10, np.float32), np.zeros(3, np.float32), np.zeros(10, np.float32), 3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_max_pool_backward_kernel_equals_the_elementwise_rules(monkeypatch, dtype):
    """Ties (split in halves along the chain), NaNs, signed zeros and infinities: the compiled window
    copies and reverse rule give the strided copies' and the elementwise chain's bits, eager and under
    rt.jit."""
    vals = np.array([0.0, -0.0, 1.0, 1.0, np.nan, np.inf, -np.inf, 2.0], dtype)
    x = rt.asarray(rng.choice(vals, size=(3, 4, 8, 6)).astype(dtype))
    ct = rt.asarray(rng.choice(np.array([1.0, -2.5, np.inf, 0.0], dtype), size=(3, 4, 4, 3)).astype(dtype))
    for kw in (dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(2, 3)), dict(kernel_size=3, stride=3, padding=1)):
        def gx(x, kw=kw):
            y, pull = rt.vjp(lambda x: nn.max_pool2d(x, **kw), x)
            return pull(rt.asarray(np.resize(rt.to_numpy(ct), y.shape).astype(dtype)))[0]
        with_k, jitted = N(gx(x)), N(rt.jit(gx)(x))
        y = N(nn.max_pool2d(x, **kw))
        with monkeypatch.context() as m:
            m.setattr(_convk, "AVAILABLE", False)
            without = N(gx(x))
            np.testing.assert_array_equal(y.view(np.uint8), N(nn.max_pool2d(x, **kw)).view(np.uint8))
        np.testing.assert_array_equal(with_k.view(np.uint8), without.view(np.uint8))
        np.testing.assert_array_equal(jitted.view(np.uint8), without.view(np.uint8))


def test_library_works_without_the_compiled_convolutions():
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import sys, importlib.abc
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "runetensor._backend._conv_kernels":
                    raise ImportError("blocked for the test")
        sys.meta_path.insert(0, Block())
        import numpy as np
        import runetensor as rt
        from runetensor import nn
        from runetensor._backend import _convk
        assert not _convk.AVAILABLE
        rng = np.random.default_rng(0)
        x = rt.asarray(rng.standard_normal((4, 3, 9, 9)).astype(np.float32))
        w = rt.asarray(rng.standard_normal((5, 3, 3, 3)).astype(np.float32))
        x64, w64 = rt.astype(x, rt.float64), rt.astype(w, rt.float64)
        f = lambda x, w: rt.sum(nn.max_pool2d(nn.conv2d(x, w, padding=1), 2) ** 2)
        g32, g64 = rt.grad(f, argnums=(0, 1))(x, w), rt.grad(f, argnums=(0, 1))(x64, w64)
        for a, b in zip(g32, g64):
            a, b = rt.to_numpy(a), rt.to_numpy(b)
            assert np.abs(a - b).max() <= 1e-4 * np.abs(b).max(), np.abs(a - b).max()
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_forward_mode_against_float64():
    x, w, b = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    tx, tw = rng.standard_normal(x.shape), rng.standard_normal(w.shape)

    def run(dt):
        def c(a):
            return rt.asarray(a.astype(dt))
        y, t = rt.jvp(lambda x, w: nn.conv2d(x, w, c(b), padding=1), (c(x), c(w)), (c(tx), c(tw)))
        return N(y), N(t)
    (y32, t32), (y64, t64) = run(np.float32), run(np.float64)
    np.testing.assert_allclose(y32, y64, atol=_tol(y64), rtol=0)
    np.testing.assert_allclose(t32, t64, atol=_tol(t64), rtol=0)
