"""Convolutions, pooling and window functions under rt.vmap: equal to the batched call / a per-lane loop."""
import numpy as np

import runetensor as rt
from runetensor import nn

R = np.random.default_rng(0)
X = rt.asarray(R.standard_normal((4, 2, 6, 6)).astype(np.float64))
W = rt.asarray(R.standard_normal((3, 2, 3, 3)).astype(np.float64))


def N(t):
    return np.asarray(rt.to_numpy(t))


def test_conv2d_under_vmap_equals_the_batched_call():
    v = rt.vmap(lambda xi: nn.conv2d(xi[None], W, padding=1, stride=2)[0])(X)
    np.testing.assert_allclose(N(v), N(nn.conv2d(X, W, padding=1, stride=2)), rtol=1e-12, atol=1e-12)


def test_conv2d_with_per_lane_weights():
    ws = rt.asarray(R.standard_normal((4, 3, 2, 3, 3)))
    v = rt.vmap(lambda xi, wi: nn.conv2d(xi[None], wi)[0])(X, ws)
    loop = np.stack([N(nn.conv2d(X[i][None], ws[i])[0]) for i in range(4)])
    np.testing.assert_allclose(N(v), loop, rtol=1e-12, atol=1e-12)


def test_pooling_and_windows_under_vmap():
    np.testing.assert_array_equal(N(rt.vmap(lambda xi: nn.max_pool2d(xi, 2))(X)), N(nn.max_pool2d(X, 2)))
    np.testing.assert_allclose(N(rt.vmap(lambda xi: nn.avg_pool2d(xi, 3, stride=1, padding=1))(X)),
                               N(nn.avg_pool2d(X, 3, stride=1, padding=1)), rtol=1e-12)
    s = rt.asarray(R.standard_normal((5, 10)))
    k = rt.asarray(R.standard_normal((3,)))
    np.testing.assert_allclose(N(rt.vmap(lambda si: rt.correlate(si, k, padding="same"))(s)),
                               N(rt.correlate(s, k, padding="same")), rtol=1e-12, atol=1e-12)


def test_per_example_gradients_of_a_convolution():
    def loss(xi):
        return rt.sum(nn.relu(nn.conv2d(xi[None], W, padding=1)) ** 2)
    g = rt.vmap(rt.grad(loss))(X)
    loop = np.stack([N(rt.grad(loss)(X[i])) for i in range(4)])
    np.testing.assert_allclose(N(g), loop, rtol=1e-10, atol=1e-10)
