"""rt's special functions (runetensor/_special.py): values against NumPy/SciPy, derivatives against
central differences (rt.check_grads, float64, both modes), PyTorch's functions when installed."""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
import scipy.special as sps

import runetensor as rt

RNG = np.random.default_rng(1234)


def T(a, dtype=None):
    t = rt.asarray(np.asarray(a))
    return t if dtype is None else rt.astype(t, dtype)


def N(t):
    return np.asarray(rt.to_numpy(t))


# ---------------------------------------------------------------------------
# namespace
# ---------------------------------------------------------------------------
NAMES = ["erf", "erfc", "log1p", "expm1", "sigmoid", "relu", "logaddexp", "logsumexp", "logmeanexp",
         "softmax", "log_softmax", "standardize", "one_hot", "real", "imag", "conj"]


def test_names_exported_once():
    from runetensor._families import FAMILIES
    seen: dict[str, str] = {}
    for fam in FAMILIES:
        try:
            mod = importlib.import_module(f"runetensor.{fam}")
        except ModuleNotFoundError:
            continue
        for n in mod.__all__:
            assert n not in seen, f"{n} is exported by both {seen[n]} and {fam}"
            seen[n] = fam
    for n in NAMES:
        assert n in rt.__all__ and callable(getattr(rt, n)), n
    assert rt.conj is rt.conjugate  # Nx's name for the existing function, not a second one


# ---------------------------------------------------------------------------
# error functions
# ---------------------------------------------------------------------------
def test_erf_values():
    x = np.linspace(-6, 6, 1001)
    np.testing.assert_allclose(N(rt.erf(T(x))), sps.erf(x), rtol=1e-15, atol=1e-16)
    x32 = x.astype(np.float32)
    r = rt.erf(T(x32))
    assert r.dtype is rt.float32
    np.testing.assert_allclose(N(r), sps.erf(x32), rtol=2e-7, atol=1e-7)
    ri = rt.erf(rt.create(rt.int32, [3], [0, 1, -2]))
    assert ri.dtype is rt.float64
    np.testing.assert_allclose(N(ri), sps.erf([0., 1., -2.]), rtol=1e-15)


def test_erfc_accurate_in_relative_terms():
    x = np.concatenate([np.linspace(-6, 26.5, 4001), [1.5 - 1e-12, 1.5, 1.5 + 1e-12, 0., -0., 27., 40.]])
    got = N(rt.erfc(T(x)))
    want = sps.erfc(x)
    # SciPy's own erfc is off by up to ~6e-14 near x = 24 (checked against mpmath)
    np.testing.assert_allclose(got[:-2], want[:-2], rtol=1e-13, atol=0)
    # erfc(27) = 5.23705e-319 (mpmath): subnormal, kept (SciPy gives 0); erfc(40) underflows
    assert got[-1] == 0.0 and got[-2] == pytest.approx(5.23705e-319, rel=1e-4)
    # 1 - erf(x) would give 0 (or garbage) far out; erfc keeps the digits
    assert N(rt.erfc(T([10.])))[0] == pytest.approx(2.088487583762545e-45, rel=1e-14)
    assert N(rt.erfc(T([np.inf, -np.inf, np.nan]))).tolist()[:2] == [0.0, 2.0]
    assert math.isnan(N(rt.erfc(T([np.nan])))[0])


def test_erfc_float32_and_low_precision():
    x = np.linspace(-4, 10, 701).astype(np.float32)
    r = rt.erfc(T(x))
    assert r.dtype is rt.float32
    np.testing.assert_allclose(N(r), sps.erfc(x.astype(np.float64)), rtol=2e-7, atol=1e-45)
    rb = rt.erfc(T(x[:10], rt.bfloat16))
    assert rb.dtype is rt.bfloat16


def test_erf_erfc_derivatives():
    x = T(np.array([-2.5, -0.3, 0.7, 1.49, 1.51, 3.0, 8.0]))
    rt.check_grads(rt.erf, [x], order=2)
    rt.check_grads(rt.erfc, [x], order=2)
    g = N(rt.grad(lambda a: rt.sum(rt.erfc(a)))(x))
    np.testing.assert_allclose(g, -2 / np.sqrt(np.pi) * np.exp(-N(x) ** 2), rtol=1e-15)
    _, t = rt.jvp(rt.erfc, (x,), (rt.ones_like(x),))
    np.testing.assert_allclose(N(t), g, rtol=1e-15)


def test_log1p_expm1():
    x = np.array([-0.5, -1e-12, 0., 1e-300, 1e-8, 3.])
    np.testing.assert_array_equal(N(rt.log1p(T(x))), np.log1p(x))
    np.testing.assert_array_equal(N(rt.expm1(T(x))), np.expm1(x))
    assert rt.log1p(rt.create(rt.int32, [1], [1])).dtype is rt.float64
    rt.check_grads(rt.log1p, [T(np.array([-0.5, 0.1, 2.]))], order=2)
    rt.check_grads(rt.expm1, [T(np.array([-3., 0.1, 2.]))], order=2)


# ---------------------------------------------------------------------------
# sigmoid, relu, logaddexp
# ---------------------------------------------------------------------------
def test_sigmoid_stable():
    x = np.array([-1000., -745., -40., -1., 0., 1e-20, 2., 40., 710., 1000., np.inf, -np.inf])
    got = N(rt.sigmoid(T(x)))
    # (sigmoid(-745) = 5e-324 is kept as the smallest subnormal; SciPy's expit gives 0)
    np.testing.assert_allclose(got, sps.expit(x), rtol=1e-15, atol=1e-323)
    assert math.isnan(N(rt.sigmoid(T([np.nan])))[0])
    x32 = np.linspace(-100, 100, 401).astype(np.float32)
    np.testing.assert_allclose(N(rt.sigmoid(T(x32))), sps.expit(x32.astype(np.float64)), rtol=1e-6, atol=1e-44)
    rt.check_grads(rt.sigmoid, [T(np.array([-30., -2., 0., 0.5, 3.]))], order=2)
    g = N(rt.grad(lambda a: rt.sum(rt.sigmoid(a)))(T([0.])))
    assert g[0] == 0.25


def test_relu():
    x = T(np.array([-2., -0., 0., 1.5, np.nan]))
    r = N(rt.relu(x))
    assert r[:4].tolist() == [0., 0., 0., 1.5] and math.isnan(r[4])
    g = N(rt.grad(lambda a: rt.sum(rt.relu(a)))(T([-1., 0., 2.])))
    assert g.tolist() == [0., 0., 1.]  # 0 at the kink, as PyTorch and JAX
    ri = rt.relu(rt.create(rt.int8, [3], [-5, 0, 7]))
    assert ri.dtype is rt.int8 and rt.to_array(ri) == [0, 0, 7]
    rt.check_grads(rt.relu, [T(np.array([-1., 0.5, 2.]))], order=2)
    with pytest.raises(TypeError, match="relu"):
        rt.relu(rt.create(rt.complex64, [1], [1j]))


def test_logaddexp():
    a = RNG.normal(size=(3, 4)) * 300
    b = RNG.normal(size=(4,)) * 300
    np.testing.assert_allclose(N(rt.logaddexp(T(a), T(b))), np.logaddexp(a, b), rtol=1e-15)
    rt.check_grads(rt.logaddexp, [T(a / 300), T(b / 300)], order=2)


# ---------------------------------------------------------------------------
# log-sum-exp, softmax
# ---------------------------------------------------------------------------
def test_logsumexp_values():
    x = RNG.normal(size=(3, 4, 5)) * 100
    for axes in (None, [0], [-1], [0, 2], (1,), 2):
        for keep in (False, True):
            sax = None if axes is None else tuple(np.atleast_1d(axes))
            np.testing.assert_allclose(N(rt.logsumexp(T(x), axes, keepdims=keep)),
                                       sps.logsumexp(x, axis=sax, keepdims=keep), rtol=1e-14)
    big = np.array([[1000., 1000.], [-1000., -1000.], [-np.inf, -np.inf], [np.inf, 0.], [-np.inf, 0.]])
    got = N(rt.logsumexp(T(big), [1]))
    np.testing.assert_allclose(got, [1000 + math.log(2), -1000 + math.log(2), -np.inf, np.inf, 0.])
    e = rt.logsumexp(rt.zeros(rt.float64, [2, 0]), [1])
    assert e.shape == (2,) and N(e).tolist() == [-np.inf, -np.inf]
    assert rt.logsumexp(rt.create(rt.int32, [2], [0, 0])).dtype is rt.float64
    assert rt.logsumexp(T(x[0, 0], rt.bfloat16)).dtype is rt.bfloat16


def test_logsumexp_gradient_is_softmax_exactly():
    x = np.array([[3., 3., 1.], [1e3, 1e3 - 1, -1e3]])  # ties at the maximum
    g = N(rt.grad(lambda a: rt.sum(rt.logsumexp(a, [1])))(T(x)))
    np.testing.assert_allclose(g, sps.softmax(x, axis=1), rtol=1e-15)
    rt.check_grads(lambda a: rt.logsumexp(a, [1]), [T(np.array([[3., 3., 1.], [0.5, -1., 2.]]))], order=2)
    rt.check_grads(lambda a: rt.logmeanexp(a, [0], keepdims=True), [T(RNG.normal(size=(3, 2)))], order=2)


def test_logmeanexp():
    x = RNG.normal(size=(4, 6)) * 50
    np.testing.assert_allclose(N(rt.logmeanexp(T(x), [1])), sps.logsumexp(x, axis=1) - math.log(6), rtol=1e-14)
    np.testing.assert_allclose(N(rt.logmeanexp(T(x))), sps.logsumexp(x) - math.log(24), rtol=1e-14)
    with pytest.raises(ValueError, match="logmeanexp"):
        rt.logmeanexp(rt.zeros(rt.float64, [0, 3]), [0])


def test_softmax_log_softmax():
    x = RNG.normal(size=(2, 3, 4)) * 30
    for axes in ([-1], [0], [1, 2], 1):
        sax = tuple(np.atleast_1d(axes))
        np.testing.assert_allclose(N(rt.softmax(T(x), axes)), sps.softmax(x, axis=sax), rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(N(rt.log_softmax(T(x), axes)), sps.log_softmax(x, axis=sax), rtol=1e-13)
    np.testing.assert_allclose(N(rt.softmax(T(x), scale=0.25)), sps.softmax(0.25 * x, axis=-1), rtol=1e-13)
    np.testing.assert_allclose(N(rt.log_softmax(T(x), scale=-2.)), sps.log_softmax(-2 * x, axis=-1), rtol=1e-13)
    big = np.array([1e308, 1e308, -1e308])
    assert N(rt.softmax(T(big))).tolist() == [0.5, 0.5, 0.]
    s32 = rt.softmax(T(x.astype(np.float32)))
    assert s32.dtype is rt.float32
    np.testing.assert_allclose(N(s32), sps.softmax(x.astype(np.float32), axis=-1), rtol=2e-5, atol=1e-30)
    xs = T(RNG.normal(size=(2, 3)))
    rt.check_grads(lambda a: rt.softmax(a, [1], scale=0.5), [xs], order=2)
    rt.check_grads(lambda a: rt.log_softmax(a, [0, 1]), [xs], order=2)
    with pytest.raises(ValueError, match="softmax: scale"):
        rt.softmax(xs, scale=math.inf)
    with pytest.raises(TypeError, match="log_softmax"):
        rt.log_softmax(xs, scale="2")
    with pytest.raises(IndexError, match="softmax"):
        rt.softmax(xs, [2])


def test_standardize():
    x = RNG.normal(size=(3, 5)) * 4 + 7
    np.testing.assert_allclose(N(rt.standardize(T(x))), (x - x.mean()) / np.sqrt(x.var() + 1e-10), rtol=1e-13)
    m, v = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    np.testing.assert_allclose(N(rt.standardize(T(x), [1], eps=0.5)), (x - m) / np.sqrt(v + 0.5), rtol=1e-13)
    rt.check_grads(lambda a: rt.standardize(a, [1], eps=1e-3), [T(x[:2, :4])], order=2)
    with pytest.raises(ValueError, match="standardize: eps"):
        rt.standardize(T(x), eps=-1.)


def test_one_hot():
    lab = rt.create(rt.int32, [2, 3], [0, 2, 5, -1, 1, 3])
    r = rt.one_hot(lab, 4)
    want = np.zeros((2, 3, 4), np.float32)
    for idx, c in np.ndenumerate(N(lab)):
        if 0 <= c < 4:
            want[idx + (c,)] = 1
    assert r.dtype is rt.float32 and r.shape == (2, 3, 4)
    np.testing.assert_array_equal(N(r), want)
    r0 = rt.one_hot(lab, 4, dtype=rt.int8, axis=0)
    assert r0.dtype is rt.int8 and r0.shape == (4, 2, 3)
    np.testing.assert_array_equal(N(r0), np.moveaxis(want, -1, 0))
    ru = rt.one_hot(rt.create(rt.uint64, [3], [2 ** 64 - 1, 2 ** 63, 1]), 3)
    assert N(ru).tolist() == [[0, 0, 0], [0, 0, 0], [0, 1, 0]]
    assert rt.one_hot(lab, 0).shape == (2, 3, 0)
    with pytest.raises(TypeError, match="one_hot: labels must be an integer"):
        rt.one_hot(rt.create(rt.float32, [1], [1.]), 3)
    with pytest.raises(ValueError, match="one_hot: num_classes must be >= 0, got -2"):
        rt.one_hot(lab, -2)


def test_complex_parts():
    z = np.array([1 + 2j, -3.5 - 0.5j])
    for d, rd in ((rt.complex64, rt.float32), (rt.complex128, rt.float64)):
        t = T(z, d)
        assert rt.real(t).dtype is rd and rt.imag(t).dtype is rd
        np.testing.assert_array_equal(N(rt.real(t)), z.real)
        np.testing.assert_array_equal(N(rt.imag(t)), z.imag)
        np.testing.assert_array_equal(N(rt.conj(t)), z.conj())
    x = T(np.array([1., -2.]))
    assert N(rt.real(x)).tolist() == [1., -2.] and N(rt.imag(x)).tolist() == [0., 0.]
    zt = T(z)
    rt.check_grads(lambda a: rt.real(a) * rt.imag(a), [zt], order=2)
    rt.check_grads(lambda a: rt.conj(a) * a, [zt], order=1)


def test_errors_name_the_function():
    c = rt.create(rt.complex128, [1], [1j])
    for f in (rt.erf, rt.erfc, rt.sigmoid, rt.logsumexp, rt.softmax, rt.standardize):
        with pytest.raises(TypeError, match=f.__name__):
            f(c)


# ---------------------------------------------------------------------------
# PyTorch's functions of the same name
# ---------------------------------------------------------------------------
def test_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.normal(size=(3, 5)) * 5
    tx = torch.tensor(x)
    pairs = [
        (rt.erf(T(x)), torch.erf(tx)), (rt.erfc(T(x)), torch.erfc(tx)),
        (rt.log1p(T(np.abs(x))), torch.log1p(tx.abs())), (rt.expm1(T(x)), torch.expm1(tx)),
        (rt.sigmoid(T(x)), torch.sigmoid(tx)), (rt.relu(T(x)), torch.relu(tx)),
        (rt.logaddexp(T(x), T(x[::-1].copy())), torch.logaddexp(tx, torch.flip(tx, [0]))),
        (rt.logsumexp(T(x), [1]), torch.logsumexp(tx, 1)),
        (rt.logsumexp(T(x), [0, 1], keepdims=True), torch.logsumexp(tx, (0, 1), keepdim=True)),
        (rt.softmax(T(x), [0]), torch.softmax(tx, 0)), (rt.log_softmax(T(x)), torch.log_softmax(tx, -1)),
        (rt.one_hot(rt.create(rt.int64, [3], [0, 2, 1]), 3), torch.nn.functional.one_hot(torch.tensor([0, 2, 1]), 3)),
    ]
    for a, b in pairs:
        np.testing.assert_allclose(N(a), b.numpy(), rtol=1e-12, atol=1e-14)
    xf = x.astype(np.float32)
    txf = torch.tensor(xf)
    np.testing.assert_allclose(N(rt.erfc(T(xf))), torch.erfc(txf).numpy(), rtol=1e-5, atol=1e-30)
    np.testing.assert_allclose(N(rt.softmax(T(xf))), torch.softmax(txf, -1).numpy(), rtol=1e-5, atol=1e-30)
    # gradients agree with autograd
    tg = tx.clone().requires_grad_(True)
    (torch.logsumexp(tg, 1) ** 2).sum().backward()
    g = rt.grad(lambda a: rt.sum(rt.logsumexp(a, [1]) ** 2))(T(x))
    np.testing.assert_allclose(N(g), tg.grad.numpy(), rtol=1e-12)
