"""Sliding windows in the main namespace: extract_patches/combine_patches, correlate/convolve, filters.

Oracles: a direct NumPy im2col, SciPy (scipy.signal.correlate/convolve, scipy.ndimage filters) and,
when installed, PyTorch's unfold/fold.  Gradients by rt.check_grads (float64, both modes).
"""
import itertools

import numpy as np
import pytest

import runetensor as rt

scipy_signal = pytest.importorskip("scipy.signal")
ndimage = pytest.importorskip("scipy.ndimage")


def R(a):
    return rt.asarray(np.ascontiguousarray(a))


def N(t):
    return rt.to_numpy(t)


def ref_patches(x, ks, st, dl, pads):
    """im2col by loops over the kernel taps (the test's oracle)."""
    k = len(ks)
    nl = x.ndim - k
    xp = np.pad(x, [(0, 0)] * nl + list(pads))
    sp = xp.shape[nl:]
    out = [(n - d * (q - 1) - 1) // s + 1 for n, q, s, d in zip(sp, ks, st, dl)]
    rows = []
    for tap in itertools.product(*(range(q) for q in ks)):
        sl = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dl, out, st))
        rows.append(xp[(Ellipsis,) + sl].reshape(x.shape[:nl] + (-1,)))
    return np.stack(rows, axis=-2)


GEOMS = [
    # shape, kernel, stride, dilation, padding (pairs)
    ((7,), (3,), (1,), (1,), ((0, 0),)),
    ((2, 9), (2,), (2,), (3,), ((1, 2),)),
    ((2, 3, 6, 7), (2, 3), (1, 1), (1, 1), ((0, 0), (0, 0))),
    ((1, 2, 6, 7), (3, 2), (2, 3), (2, 1), ((2, 0), (1, 3))),
    ((3, 5, 6), (3, 3), (2, 2), (1, 1), ((1, 1), (1, 1))),
    ((1, 4, 5, 6), (2, 2, 3), (1, 2, 1), (2, 1, 1), ((0, 1), (1, 1), (2, 0))),
]


@pytest.mark.parametrize("shape,ks,st,dl,pads", GEOMS)
def test_extract_patches_matches_loops(shape, ks, st, dl, pads):
    x = np.random.default_rng(0).standard_normal(shape)
    got = rt.extract_patches(R(x), list(ks), stride=list(st), dilation=list(dl), padding=list(pads))
    np.testing.assert_array_equal(N(got), ref_patches(x, ks, st, dl, pads))


def test_extract_patches_parameter_forms_and_dtypes():
    x = np.arange(2 * 5 * 6, dtype=np.int32).reshape(2, 5, 6)
    want = ref_patches(x, (2, 2), (2, 2), (1, 1), ((1, 1), (1, 1)))
    for padding in (1, [1, 1], [(1, 1), (1, 1)]):
        got = rt.extract_patches(R(x), [2, 2], stride=2, padding=padding)
        assert got.dtype == rt.int32
        np.testing.assert_array_equal(N(got), want)
    # a strided, non-contiguous input
    xs = np.arange(8 * 10, dtype=np.float32).reshape(8, 10)[::2, 1::2].T
    got = rt.extract_patches(rt.asarray(np.arange(80, dtype=np.float32).reshape(8, 10))[::2, 1::2].T, [2, 3])
    np.testing.assert_array_equal(N(got), ref_patches(xs, (2, 3), (1, 1), (1, 1), ((0, 0), (0, 0))))


@pytest.mark.parametrize("shape,ks,st,dl,pads", GEOMS)
def test_combine_patches_is_the_exact_transpose(shape, ks, st, dl, pads):
    rng = np.random.default_rng(1)
    x = rng.integers(-8, 9, shape).astype(np.float64)       # integers: every sum is exact
    p = rt.extract_patches(R(x), list(ks), stride=list(st), dilation=list(dl), padding=list(pads))
    u = rng.integers(-8, 9, p.shape).astype(np.float64)
    ptu = rt.combine_patches(R(u), list(shape[len(shape) - len(ks):]), list(ks), stride=list(st),
                             dilation=list(dl), padding=list(pads))
    assert ptu.shape == shape and ptu.dtype == rt.float64
    assert float(np.sum(u * N(p))) == float(np.sum(N(ptu) * x))
    # and element by element: combine == the adjoint of the loop oracle (scatter by loops)
    want = np.zeros(tuple(n + a + b for n, (a, b) in zip(shape[len(shape) - len(ks):], pads)))
    nl = len(shape) - len(ks)
    want = np.zeros(shape[:nl] + want.shape)
    out = [(n + a + b - d * (q - 1) - 1) // s + 1 for n, (a, b), q, s, d in
           zip(shape[nl:], pads, ks, st, dl)]
    for ti, tap in enumerate(itertools.product(*(range(q) for q in ks))):
        sl = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dl, out, st))
        want[(Ellipsis,) + sl] += u[..., ti, :].reshape(shape[:nl] + tuple(out))
    crop = tuple(slice(a, a + n) for (a, _), n in zip(pads, shape[nl:]))
    np.testing.assert_array_equal(N(ptu), want[(Ellipsis,) + crop])


def test_patches_against_torch_unfold_fold():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 7, 8))
    for ks, st, dl, pd in [((3, 3), 1, 1, 1), ((2, 3), (2, 1), (1, 2), (0, 2)), ((3, 2), 2, 2, 1)]:
        pads = [(p, p) for p in (pd if isinstance(pd, tuple) else (pd, pd))]
        got = rt.extract_patches(R(x), list(ks), stride=st, dilation=dl, padding=pads)
        want = F.unfold(torch.from_numpy(x), ks, dilation=dl, padding=pd, stride=st).numpy()
        np.testing.assert_array_equal(N(got).reshape(want.shape), want)
        u = rng.standard_normal(want.shape)
        back = rt.combine_patches(R(u.reshape(got.shape)), [7, 8], list(ks), stride=st, dilation=dl, padding=pads)
        wf = F.fold(torch.from_numpy(u), (7, 8), ks, dilation=dl, padding=pd, stride=st).numpy()
        np.testing.assert_allclose(N(back), wf, rtol=1e-12, atol=1e-12)


def test_patches_gradients():
    rng = np.random.default_rng(3)
    x = R(rng.standard_normal((2, 5, 6)))
    for st, dl, pd in [(1, 1, 0), (2, 1, 1), ((2, 1), (1, 2), [(2, 0), (0, 1)])]:
        f = lambda x: rt.extract_patches(x, [2, 3], stride=st, dilation=dl, padding=pd)  # noqa: E731
        rt.check_grads(f, (x,))
        u = R(rng.standard_normal(f(x).shape))
        rt.check_grads(lambda u: rt.combine_patches(u, [5, 6], [2, 3], stride=st, dilation=dl, padding=pd), (u,))
    # second order through the custom reverse rule (combine_patches is differentiable in turn)
    rt.check_grads(lambda x: rt.extract_patches(x, [2, 2], stride=2, padding=1) ** 2, (x,), order=2)


def test_patches_reverse_rule_is_combine():
    """The gradient of sum(u * extract_patches(x)) is combine_patches(u), exactly."""
    rng = np.random.default_rng(4)
    x = R(rng.standard_normal((2, 3, 9, 9)).astype(np.float32))
    u = R(rng.standard_normal((2, 3, 9, 25)).astype(np.float32))
    g = rt.grad(lambda x: rt.sum(rt.extract_patches(x, [3, 3], stride=2, padding=1) * u))(x)
    np.testing.assert_array_equal(N(g), N(rt.combine_patches(u, [9, 9], [3, 3], stride=2, padding=1)))


# ---------------------------------------------------------------------------
# correlate / convolve
# ---------------------------------------------------------------------------
CORR = [((9,), (3,)), ((8,), (4,)), ((6, 7), (3, 2)), ((5, 6), (2, 2)), ((4, 5, 6), (3, 2, 3)), ((5, 4), (5, 4))]


@pytest.mark.parametrize("xs,ks", CORR)
@pytest.mark.parametrize("padding", ["valid", "same", "full"])
def test_correlate_convolve_against_scipy(xs, ks, padding):
    rng = np.random.default_rng(5)
    x, k = rng.standard_normal(xs), rng.standard_normal(ks)
    c = N(rt.correlate(R(x), R(k), padding=padding))
    v = N(rt.convolve(R(x), R(k), padding=padding))
    if padding == "same":
        # ours pads (k-1)//2 before (as PyTorch and Nx); SciPy centres on the full result the other
        # way for even sizes: same == full[k-1-(k-1)//2 : ...] per axis
        fc = scipy_signal.correlate(x, k, mode="full")
        fv = scipy_signal.convolve(x, k, mode="full")
        sl = tuple(slice(q - 1 - (q - 1) // 2, q - 1 - (q - 1) // 2 + n) for q, n in zip(ks, xs))
        np.testing.assert_allclose(c, fc[sl], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(v, fv[sl], rtol=1e-12, atol=1e-12)
        if all(q % 2 for q in ks):
            np.testing.assert_allclose(c, scipy_signal.correlate(x, k, mode="same"), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(v, scipy_signal.convolve(x, k, mode="same"), rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(c, scipy_signal.correlate(x, k, mode=padding), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(v, scipy_signal.convolve(x, k, mode=padding), rtol=1e-12, atol=1e-12)


def test_correlate_batch_axes_dtypes_complex():
    rng = np.random.default_rng(6)
    x, k = rng.standard_normal((3, 2, 6, 5)), rng.standard_normal((3, 2))
    got = N(rt.correlate(R(x), R(k), padding="full"))
    assert got.shape == (3, 2, 8, 6)
    for i, j in itertools.product(range(3), range(2)):
        np.testing.assert_allclose(got[i, j], scipy_signal.correlate(x[i, j], k, mode="full"), rtol=1e-12,
                                   atol=1e-12)
    # mixed dtypes promote; integers stay exact
    xi = rng.integers(-5, 5, (7,)).astype(np.int32)
    got = rt.correlate(R(xi), rt.asarray(np.array([1, 2], np.int32)))
    assert got.dtype == rt.int32
    np.testing.assert_array_equal(N(got), scipy_signal.correlate(xi, np.array([1, 2]), mode="valid"))
    assert rt.correlate(R(x.astype(np.float32)), R(k)).dtype == rt.float64
    # complex: no conjugation of the kernel (SciPy conjugates it)
    xc = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    kc = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    np.testing.assert_allclose(N(rt.correlate(R(xc), R(kc))), scipy_signal.correlate(xc, np.conj(kc), "valid"),
                               rtol=1e-12, atol=1e-12)


def test_correlate_gradients():
    rng = np.random.default_rng(7)
    x, k = R(rng.standard_normal((2, 5, 6))), R(rng.standard_normal((2, 3)))
    for padding in ("valid", "same", "full"):
        rt.check_grads(lambda x, k: rt.correlate(x, k, padding=padding), (x, k))
        rt.check_grads(lambda x, k: rt.convolve(x, k, padding=padding), (x, k))


# ---------------------------------------------------------------------------
# filters
# ---------------------------------------------------------------------------
def _scipy_valid(fn, x, ks, st, **kw):
    """SciPy's centred filter restricted to the windows inside x, subsampled by the stride."""
    nl = x.ndim - len(ks)
    full = fn(x, size=(1,) * nl + tuple(ks), **kw)
    sl = tuple(slice(q // 2, n - q + q // 2 + 1, s) for q, n, s in zip(ks, x.shape[nl:], st))
    return full[(Ellipsis,) + sl]


@pytest.mark.parametrize("ks,st", [((3,), None), ((2, 3), None), ((3, 3), (1, 1)), ((2, 2), (1, 2)),
                                   ((2, 3, 2), (1, 2, 1))])
def test_filters_against_scipy_ndimage(ks, st):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2,) + (7, 8, 6)[:len(ks)])
    stv = ks if st is None else st
    for fn, ref in [(rt.maximum_filter, ndimage.maximum_filter), (rt.minimum_filter, ndimage.minimum_filter)]:
        got = fn(R(x), list(ks), stride=None if st is None else list(st))
        np.testing.assert_array_equal(N(got), _scipy_valid(ref, x, ks, stv))
    got = rt.uniform_filter(R(x), list(ks), stride=None if st is None else list(st))
    np.testing.assert_allclose(N(got), _scipy_valid(ndimage.uniform_filter, x, ks, stv), rtol=1e-12, atol=1e-12)


def test_filters_dtypes_and_gradients():
    xi = np.array([[3, -1, 4, 1], [5, 9, -2, 6]], np.int16)
    got = rt.maximum_filter(R(xi), [2], stride=1)
    assert got.dtype == rt.int16
    np.testing.assert_array_equal(N(got), [[3, 4, 4], [9, 9, 6]])
    rng = np.random.default_rng(9)
    x = R(rng.permutation(48).reshape(2, 4, 6).astype(np.float64) / 7.0)       # no ties
    for fn in (rt.maximum_filter, rt.minimum_filter, rt.uniform_filter):
        rt.check_grads(lambda x: fn(x, [2, 3], stride=1), (x,))
        rt.check_grads(lambda x: fn(x, [2, 2]), (x,))


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def test_errors_name_function_and_value():
    x = rt.ones(rt.float32, [2, 4, 4])
    with pytest.raises(ValueError, match=r"correlate: padding must be 'valid', 'same' or 'full', got 'middle'"):
        rt.correlate(x, rt.ones(rt.float32, [2, 2]), padding="middle")
    with pytest.raises(ValueError, match=r"convolve: padding .* got 'SAME'"):
        rt.convolve(x, rt.ones(rt.float32, [2, 2]), padding="SAME")
    with pytest.raises(ValueError, match=r"correlate: kernel of shape \(5, 2\) is larger than the input's "
                                         r"spatial shape \(4, 4\) with padding='valid'"):
        rt.correlate(x, rt.ones(rt.float32, [5, 2]))
    rt.correlate(x, rt.ones(rt.float32, [5, 2]), padding="full")       # fine with padding
    with pytest.raises(ValueError, match=r"correlate: input of rank 3 .* fewer axes than the 4 spatial"):
        rt.correlate(x, rt.ones(rt.float32, [1, 1, 1, 1]))
    with pytest.raises(ValueError, match="correlate: the kernel must have at least one axis"):
        rt.correlate(x, rt.scalar(rt.float32, 1.))
    with pytest.raises(TypeError, match="extract_patches: kernel_size must be a sequence"):
        rt.extract_patches(x, 2)
    with pytest.raises(ValueError, match=r"extract_patches: stride 0 must be >= 1"):
        rt.extract_patches(x, [2, 2], stride=0)
    with pytest.raises(ValueError, match=r"extract_patches: padding .* must be >= 0"):
        rt.extract_patches(x, [2, 2], padding=-1)
    with pytest.raises(ValueError, match=r"extract_patches: dilation \(1, 2, 3\) has 3 entries, expected 2"):
        rt.extract_patches(x, [2, 2], dilation=[1, 2, 3])
    with pytest.raises(ValueError, match=r"extract_patches: the window .* is larger than the padded input"):
        rt.extract_patches(x, [3, 3], dilation=2)
    with pytest.raises(ValueError, match=r"combine_patches: patches of shape \(2, 4, 8\) do not match"):
        rt.combine_patches(rt.ones(rt.float32, [2, 4, 8]), [4, 4], [2, 2])
    with pytest.raises(ValueError, match=r"combine_patches: output_size \(4,\) and kernel_size \(2, 2\) differ"):
        rt.combine_patches(rt.ones(rt.float32, [2, 4, 9]), [4], [2, 2])
    with pytest.raises(ValueError, match=r"maximum_filter: kernel_size \(5, 1\) is larger than .* \(4, 4\)"):
        rt.maximum_filter(x, [5, 1])
    with pytest.raises(TypeError, match="uniform_filter: kernel_size must be a sequence"):
        rt.uniform_filter(x, 2)


def test_empty_batches_and_windows_inside_the_padding():
    g = rt.grad(lambda x: rt.sum(rt.extract_patches(x, [2, 2], padding=1)))(rt.zeros(rt.float32, [0, 3, 4, 4]))
    assert g.shape == (0, 3, 4, 4)
    assert rt.correlate(rt.zeros(rt.float32, [0, 5]), rt.ones(rt.float32, [2])).shape == (0, 4)
    # windows that read only padding: zeros forward, zeros back
    np.testing.assert_array_equal(N(rt.extract_patches(rt.create(rt.float64, [1], [5.]), [2], stride=3,
                                                       padding=[(2, 2)])), [[0, 0], [0, 0]])
    np.testing.assert_array_equal(N(rt.combine_patches(rt.ones(rt.float64, [2, 2]), [1], [2], stride=3,
                                                       padding=[(2, 2)])), [0])
    rt.check_grads(lambda u: rt.combine_patches(u, [1], [2], stride=3, padding=[(2, 2)]),
                   (rt.ones(rt.float64, [2, 2]),))
