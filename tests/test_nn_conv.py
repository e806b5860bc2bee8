"""runetensor.nn convolutions and pooling against torch.nn.functional (when installed), SciPy and
rt.check_grads (float64, both modes)."""

import numpy as np
import pytest

import runetensor as rt
from runetensor import nn

scipy_signal = pytest.importorskip("scipy.signal")


@pytest.fixture(scope="module")
def F():
    torch = pytest.importorskip("torch")
    return torch.nn.functional


def R(a):
    return rt.asarray(np.ascontiguousarray(a))


def N(t):
    return rt.to_numpy(t)


def T(a):
    import torch
    return torch.from_numpy(np.ascontiguousarray(a))


rng = np.random.default_rng(0)


# ---------------------------------------------------------------------------
# convolution
# ---------------------------------------------------------------------------
def test_conv2d_against_scipy():
    """A NumPy/SciPy oracle (runs without PyTorch): sum over input channels of 2-D correlations."""
    x, w, b = rng.standard_normal((2, 3, 7, 6)), rng.standard_normal((4, 3, 3, 2)), rng.standard_normal(4)
    got = N(nn.conv2d(R(x), R(w), R(b), padding=(1, 0)))
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (0, 0)])
    want = np.array([[sum(scipy_signal.correlate(xp[n, c], w[o, c], "valid") for c in range(3)) + b[o]
                      for o in range(4)] for n in range(2)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


CONV2D = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2)),
    dict(padding="same", dilation=2),
    dict(padding="same"),
    dict(padding="valid", groups=2),
    dict(stride=2, padding=1, groups=4, dilation=(2, 1)),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("kw", CONV2D)
@pytest.mark.parametrize("ks", [(3, 3), (2, 4)])
def test_conv2d_against_torch(F, kw, ks):
    g = kw.get("groups", 1)
    x = rng.standard_normal((2, 4, 9, 8))
    w = rng.standard_normal((8, 4 // g) + ks)
    b = rng.standard_normal(8)
    got = nn.conv2d(R(x), R(w), R(b), **kw)
    want = F.conv2d(T(x), T(w), T(b), **kw).numpy()
    assert got.shape == want.shape and got.dtype == rt.float64
    np.testing.assert_allclose(N(got), want, rtol=1e-10, atol=1e-10)


def test_conv1d_conv3d_unbatched_float32_against_torch(F):
    x, w = rng.standard_normal((2, 4, 11)), rng.standard_normal((6, 2, 3))
    for kw in (dict(), dict(stride=3, padding=2, dilation=2, groups=2), dict(padding="same", groups=2)):
        kw.setdefault("groups", 1)
        ww = w if kw["groups"] == 2 else rng.standard_normal((6, 4, 3))
        np.testing.assert_allclose(N(nn.conv1d(R(x), R(ww), **kw)), F.conv1d(T(x), T(ww), **kw).numpy(),
                                   rtol=1e-10, atol=1e-10)
    x3, w3 = rng.standard_normal((1, 2, 5, 6, 4)), rng.standard_normal((3, 2, 2, 3, 2))
    for kw in (dict(), dict(stride=(1, 2, 1), padding=1, dilation=(2, 1, 1)), dict(padding="same")):
        np.testing.assert_allclose(N(nn.conv3d(R(x3), R(w3), **kw)), F.conv3d(T(x3), T(w3), **kw).numpy(),
                                   rtol=1e-10, atol=1e-10)
    # unbatched (C, H, W) input, float32
    xu, wu = rng.standard_normal((3, 6, 6)).astype(np.float32), rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    got = nn.conv2d(R(xu), R(wu), padding=1)
    assert got.shape == (2, 6, 6) and got.dtype == rt.float32
    np.testing.assert_allclose(N(got), F.conv2d(T(xu), T(wu), padding=1).numpy(), rtol=1e-5, atol=1e-5)


CONVT = [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(3, 2), padding=(2, 0), output_padding=(2, 1), dilation=(1, 2)),
    dict(groups=2, stride=2, padding=1),
    dict(dilation=3, output_padding=2, stride=1, padding=2),   # output_padding < dilation, > padding
]


@pytest.mark.parametrize("kw", CONVT)
def test_conv_transpose2d_against_torch(F, kw):
    g = kw.get("groups", 1)
    x = rng.standard_normal((2, 4, 5, 6))
    w = rng.standard_normal((4, 6 // g, 3, 2))
    b = rng.standard_normal(6)
    got = nn.conv_transpose2d(R(x), R(w), R(b), **kw)
    want = F.conv_transpose2d(T(x), T(w), T(b), **kw).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(N(got), want, rtol=1e-10, atol=1e-10)


def test_conv_transpose1d_3d_against_torch(F):
    x, w = rng.standard_normal((2, 4, 7)), rng.standard_normal((4, 3, 3))
    np.testing.assert_allclose(N(nn.conv_transpose1d(R(x), R(w), stride=2, padding=1, output_padding=1)),
                               F.conv_transpose1d(T(x), T(w), stride=2, padding=1, output_padding=1).numpy(),
                               rtol=1e-10, atol=1e-10)
    x3, w3 = rng.standard_normal((1, 2, 3, 4, 3)), rng.standard_normal((2, 2, 2, 2, 3))
    np.testing.assert_allclose(N(nn.conv_transpose3d(R(x3), R(w3), stride=(2, 1, 2))),
                               F.conv_transpose3d(T(x3), T(w3), stride=(2, 1, 2)).numpy(), rtol=1e-10, atol=1e-10)


def test_conv_transpose_is_the_transpose_of_conv():
    x = rng.integers(-4, 5, (2, 4, 9, 8)).astype(np.float64)
    w = rng.integers(-4, 5, (6, 2, 3, 2)).astype(np.float64)
    kw = dict(stride=(2, 3), padding=(1, 2), dilation=(2, 1), groups=2)
    y = nn.conv2d(R(x), R(w), **kw)
    u = rng.integers(-4, 5, y.shape).astype(np.float64)
    # conv2d's output size rounds down: output_padding gives back the input's size
    yt0 = nn.conv_transpose2d(R(u), R(w), **kw)
    op = tuple(a - b for a, b in zip(x.shape[2:], yt0.shape[2:]))
    assert op == (0, 1)
    yt = nn.conv_transpose2d(R(u), R(w), output_padding=op, **kw)
    assert yt.shape == x.shape
    assert float(np.sum(u * N(y))) == float(np.sum(N(yt) * x))


def test_conv_gradients():
    x, w, b = R(rng.standard_normal((2, 4, 5, 6))), R(rng.standard_normal((6, 2, 3, 2))), R(rng.standard_normal(6))
    for kw in (dict(groups=2), dict(stride=2, padding=1, dilation=(1, 2), groups=2), dict(padding="same", groups=2)):
        rt.check_grads(lambda x, w, b: nn.conv2d(x, w, b, **kw), (x, w, b))
    wt = R(rng.standard_normal((4, 6, 2, 3)))
    rt.check_grads(lambda x, w, b: nn.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                   (x, wt, b))
    x1, w1 = R(rng.standard_normal((2, 2, 7))), R(rng.standard_normal((3, 2, 3)))
    rt.check_grads(lambda x, w: nn.conv1d(x, w, stride=2, padding=1), (x1, w1), order=2)


def test_conv2d_grad_against_torch(F):
    import torch
    x, w, b = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 2, 3, 3)), rng.standard_normal(6)
    u = rng.standard_normal((2, 6, 4, 3))
    kw = dict(stride=2, padding=1, groups=2)
    gs = rt.grad(lambda x, w, b: rt.sum(nn.conv2d(x, w, b, **kw) * R(u)), argnums=(0, 1, 2))(R(x), R(w), R(b))
    tx, tw, tb = (T(a).requires_grad_(True) for a in (x, w, b))
    (F.conv2d(tx, tw, tb, **kw) * T(u)).sum().backward()
    for g, t in zip(gs, (tx, tw, tb)):
        np.testing.assert_allclose(N(g), t.grad.numpy(), rtol=1e-10, atol=1e-10)
    del torch


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------
POOL2D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), ceil_mode=True),
    dict(kernel_size=2, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("kw", POOL2D + [dict(kernel_size=3, stride=1, dilation=2, padding=1),
                                         dict(kernel_size=2, stride=2, dilation=(1, 2), ceil_mode=True)])
def test_max_pool2d_against_torch(F, kw):
    x = rng.standard_normal((2, 3, 7, 8))
    got = nn.max_pool2d(R(x), **kw)
    want = F.max_pool2d(T(x), **kw).numpy()
    assert got.shape == want.shape
    np.testing.assert_array_equal(N(got), want)


@pytest.mark.parametrize("kw", POOL2D)
@pytest.mark.parametrize("cip", [True, False])
def test_avg_pool2d_against_torch(F, kw, cip):
    x = rng.standard_normal((2, 3, 7, 8))
    got = nn.avg_pool2d(R(x), count_include_pad=cip, **kw)
    want = F.avg_pool2d(T(x), count_include_pad=cip, **kw).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(N(got), want, rtol=1e-12, atol=1e-12)
    got = nn.avg_pool2d(R(x), count_include_pad=cip, divisor_override=5, **kw)
    want = F.avg_pool2d(T(x), count_include_pad=cip, divisor_override=5, **kw).numpy()
    np.testing.assert_allclose(N(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=2, stride=3, ceil_mode=True),
                                dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)])
def test_pool1d_against_torch(F, kw):
    x = rng.standard_normal((2, 3, 11))
    np.testing.assert_array_equal(N(nn.max_pool1d(R(x), **kw)), F.max_pool1d(T(x), **kw).numpy())
    for cip in (True, False):
        np.testing.assert_allclose(N(nn.avg_pool1d(R(x), count_include_pad=cip, **kw)),
                                   F.avg_pool1d(T(x), count_include_pad=cip, **kw).numpy(), rtol=1e-12, atol=1e-12)
    xu = rng.standard_normal((3, 11))      # unbatched
    np.testing.assert_array_equal(N(nn.max_pool1d(R(xu), **kw)), F.max_pool1d(T(xu), **kw).numpy())


def test_pool_dtypes_and_dilated_avg():
    xi = np.array([[[3, -1, 4, 1, -5, 9]]], np.int32)
    got = nn.max_pool1d(R(xi), 2, padding=1)
    assert got.dtype == rt.int32
    np.testing.assert_array_equal(N(got), [[[3, 4, 1, 9]]])
    # avg_pool with dilation (an extension): the sum of the dilated taps over their count
    x = rng.standard_normal((1, 2, 7, 7))
    got = nn.avg_pool2d(R(x), 3, stride=1, dilation=2)
    want = N(nn.conv2d(R(x), rt.ones(rt.float64, [2, 1, 3, 3]), dilation=2, groups=2)) / 9
    np.testing.assert_allclose(N(got), want, rtol=1e-12, atol=1e-12)


def test_pool_gradients():
    x = R(rng.permutation(2 * 2 * 6 * 7).reshape(2, 2, 6, 7).astype(np.float64) / 11.0)   # no ties
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
               dict(kernel_size=2, stride=1, dilation=2)):
        rt.check_grads(lambda x: nn.max_pool2d(x, **kw), (x,))
        rt.check_grads(lambda x: nn.avg_pool2d(x, count_include_pad=False, **{k: v for k, v in kw.items()}), (x,))
    x1 = R(rng.permutation(2 * 9).reshape(1, 2, 9).astype(np.float64))
    rt.check_grads(lambda x: nn.max_pool1d(x, 3, stride=2, padding=1), (x1,))
    rt.check_grads(lambda x: nn.avg_pool1d(x, 3, stride=2, padding=1), (x1,))


def test_max_pool_grad_against_torch(F):
    import torch
    x = rng.permutation(2 * 3 * 7 * 8).reshape(2, 3, 7, 8).astype(np.float64)
    u = rng.standard_normal((2, 3, 4, 4))
    g = rt.grad(lambda x: rt.sum(nn.max_pool2d(x, 3, stride=2, padding=1) * R(u)))(R(x))
    tx = T(x).requires_grad_(True)
    (F.max_pool2d(tx, 3, stride=2, padding=1) * T(u)).sum().backward()
    np.testing.assert_allclose(N(g), tx.grad.numpy(), rtol=1e-14, atol=1e-14)   # overlaps add in another order
    del torch


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def test_errors():
    x = rt.ones(rt.float32, [2, 4, 6, 6])
    w = rt.ones(rt.float32, [8, 4, 3, 3])
    with pytest.raises(ValueError, match=r"conv2d: input has 4 channels but weight of shape \(8, 2, 3, 3\) "
                                         r"expects 2 \(weight.shape\[1\]=2 x groups=1\)"):
        nn.conv2d(x, rt.ones(rt.float32, [8, 2, 3, 3]))
    with pytest.raises(ValueError, match=r"conv2d: groups=3 must divide the input channels \(4\)"):
        nn.conv2d(x, w, groups=3)
    with pytest.raises(ValueError, match=r"conv2d: padding must be 'valid', 'same', .* got 'half'"):
        nn.conv2d(x, w, padding="half")
    with pytest.raises(ValueError, match=r"conv2d: padding='same' needs stride 1, got stride \(2, 2\)"):
        nn.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match=r"conv2d: kernel of size \(7, 7\) .* larger than the input's spatial "
                                         r"shape \(6, 6\)"):
        nn.conv2d(x, rt.ones(rt.float32, [8, 4, 7, 7]))
    with pytest.raises(ValueError, match=r"conv2d: weight must have shape"):
        nn.conv2d(x, rt.ones(rt.float32, [8, 4, 3]))
    with pytest.raises(ValueError, match=r"conv2d: expected a 4-d \(batched\) or 3-d"):
        nn.conv2d(rt.ones(rt.float32, [6, 6]), w)
    with pytest.raises(ValueError, match=r"conv2d: bias of shape \(4,\) does not match the 8 output channels"):
        nn.conv2d(x, w, rt.ones(rt.float32, [4]))
    with pytest.raises(TypeError, match=r"conv2d: stride must be an int"):
        nn.conv2d(x, w, stride=1.5)
    with pytest.raises(ValueError, match=r"conv2d: stride \(1, 2, 3\) must have 2 entries"):
        nn.conv2d(x, w, stride=(1, 2, 3))
    with pytest.raises(ValueError, match=r"conv_transpose2d: input has 4 channels but weight .* expects 8"):
        nn.conv_transpose2d(x, rt.ones(rt.float32, [8, 4, 3, 3]))
    with pytest.raises(ValueError, match=r"conv_transpose2d: output_padding \(2, 2\) must be smaller"):
        nn.conv_transpose2d(x, rt.ones(rt.float32, [4, 2, 3, 3]), stride=2, output_padding=2)
    with pytest.raises(ValueError, match=r"max_pool2d: padding \(2, 2\) must be at most half of kernel_size"):
        nn.max_pool2d(x, 3, padding=2)
    with pytest.raises(ValueError, match=r"avg_pool2d: kernel_size \(7, 7\) .* larger than the input"):
        nn.avg_pool2d(x, 7)
    with pytest.raises(TypeError, match=r"avg_pool1d: expected a float or complex input, got int32"):
        nn.avg_pool1d(rt.ones(rt.int32, [1, 1, 4]), 2)
    with pytest.raises(TypeError, match=r"max_pool1d: complex input"):
        nn.max_pool1d(rt.ones(rt.complex64, [1, 1, 4]), 2)


def test_empty_batch_and_integer_conv():
    w = rt.ones(rt.float32, [4, 3, 3, 3])
    g = rt.grad(lambda x: rt.sum(nn.conv2d(x, w, padding=1)))(rt.zeros(rt.float32, [0, 3, 5, 5]))
    assert g.shape == (0, 3, 5, 5)
    assert nn.max_pool2d(rt.zeros(rt.float32, [0, 3, 4, 4]), 2).shape == (0, 3, 2, 2)
    xi = rng.integers(-3, 3, (2, 3, 5, 5)).astype(np.int32)
    wi = rng.integers(-3, 3, (4, 3, 3, 3)).astype(np.int32)
    y = nn.conv2d(R(xi), R(wi), padding=1)
    assert y.dtype == rt.int32
    np.testing.assert_array_equal(N(y), N(nn.conv2d(R(xi.astype(np.float64)), R(wi.astype(np.float64)), padding=1)))


def test_complex_conv_gradients():
    x = R(rng.standard_normal((1, 2, 4, 4)) + 1j * rng.standard_normal((1, 2, 4, 4)))
    w = R(rng.standard_normal((2, 2, 2, 2)) + 1j * rng.standard_normal((2, 2, 2, 2)))
    rt.check_grads(lambda x, w: nn.conv2d(x, w, stride=2, padding=1), (x, w))


WIDE = [   # (spatial shape, parameters, kernel size, groups): stride 1, output rows of 512 or more (padded)
    ((24, 22), dict(padding=1), (3, 3), 1),
    ((26, 30), dict(padding="same", dilation=(2, 1)), (2, 4), 1),
    ((30, 24), dict(padding=(0, 2), dilation=2), (3, 2), 2),
    ((700,), dict(padding=3, dilation=2), (5,), 1),
    ((600,), dict(padding=1), (3,), 2),
    ((6, 7, 20), dict(padding=(1, 0, 2)), (2, 3, 2), 1),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("sp,kw,ks,g", WIDE)
def test_stride1_conv_on_large_images_and_batches_against_torch(F, sp, kw, ks, g):
    """Stride-1 convolutions of images wide enough for the flat-row path, with batches that span
    several chunks: values and the three gradients (a non-uniform cotangent) against PyTorch."""
    import torch
    nd = len(sp)
    x, w, b = rng.standard_normal((30, 4) + sp), rng.standard_normal((6, 4 // g) + ks), rng.standard_normal(6)
    conv = {1: (nn.conv1d, F.conv1d), 2: (nn.conv2d, F.conv2d), 3: (nn.conv3d, F.conv3d)}[nd]
    want = conv[1](T(x), T(w), T(b), groups=g, **kw)
    got = conv[0](R(x), R(w), R(b), groups=g, **kw)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(N(got), want.numpy(), rtol=1e-10, atol=1e-10)
    u = rng.standard_normal(tuple(want.shape))
    gs = rt.grad(lambda x, w, b: rt.sum(conv[0](x, w, b, groups=g, **kw) * R(u)), argnums=(0, 1, 2))(R(x), R(w), R(b))
    tx, tw, tb = (T(a).requires_grad_(True) for a in (x, w, b))
    (conv[1](tx, tw, tb, groups=g, **kw) * T(u)).sum().backward()
    for gr, t in zip(gs, (tx, tw, tb)):
        np.testing.assert_allclose(N(gr), t.grad.numpy(), rtol=1e-9, atol=1e-9)
    gx = rt.grad(lambda x: rt.sum(conv[0](x, R(w), None, groups=g, **kw) * R(u)))(R(x))   # input only
    np.testing.assert_allclose(N(gx), tx.grad.numpy(), rtol=1e-9, atol=1e-9)
    del torch


def test_stride1_conv_gradients_by_central_differences():
    x, w, b = R(rng.standard_normal((2, 1, 33, 14))), R(rng.standard_normal((2, 1, 3, 2))), R(rng.standard_normal(2))
    for kw in (dict(padding=1), dict(padding="same", dilation=(1, 2))):
        rt.check_grads(lambda x, w, b: nn.conv2d(x, w, b, **kw), (x, w, b))
    x32 = R(rng.standard_normal((2, 3, 520)).astype(np.float32))
    w32 = R(rng.standard_normal((5, 3, 3)).astype(np.float32))
    y = nn.conv1d(x32, w32, padding=1)
    want = nn.conv1d(rt.astype(x32, rt.float64), rt.astype(w32, rt.float64), padding=1)
    assert y.dtype == rt.float32
    np.testing.assert_allclose(N(y), N(want), rtol=1e-5, atol=1e-5)
