"""Automatic differentiation of the linear-algebra and FFT primitives (runetensor/_primitives_linalg.py).

Every op is checked in both modes against central differences with ``rt.check_grads`` (a
non-uniform random direction and cotangent), in float64, batched (a leading axis of 2) where it
applies, with complex inputs where the op takes them, and at second order for the smooth ones.
Outputs that are defined only up to a gauge (eigenvectors, singular vectors) are tested through
gauge-invariant functions.  The complex conventions are compared with JAX when it is installed.
"""
from __future__ import annotations

import numpy as np
import pytest

import runetensor as rt
import runetensor.array_api as xp


def T(a):
    a = np.asarray(a)
    return rt.asarray(a, dtype=rt.complex128 if np.iscomplexobj(a) else rt.float64)


def rng(seed):
    return np.random.default_rng(seed)


def gen(shape, seed=0, cplx=False, shift=0.0):
    """Random matrices (well-conditioned when ``shift`` adds a multiple of the identity)."""
    r = rng(seed)
    a = r.normal(size=shape)
    if cplx:
        a = a + 1j * r.normal(size=shape)
    if shift:
        a = a + shift * np.eye(shape[-1])
    return a


def spd(shape, seed=0, cplx=False):
    """Hermitian positive-definite matrices with well-separated eigenvalues."""
    n = shape[-1]
    x = gen(shape, seed, cplx)
    q, _ = np.linalg.qr(x)
    w = np.arange(1, n + 1) * 1.5 + 0.5
    return (q * w[..., None, :]) @ np.conj(np.swapaxes(q, -1, -2))


def herm_in(a):
    """The same Hermitian matrix with a different (ignored) upper triangle: the derivative then
    shows whether a rule respects the triangle the factorisation reads."""
    return np.tril(a) + np.triu(np.ones_like(a) * 0.3, 1)


def wts(shape, seed=5):
    return T(rng(seed).uniform(0.5, 2.0, size=shape))


def absq(t):
    return rt.square(rt.abs(t)) if t.dtype.kind == "c" else t * t


def check(f, *args, order=1, **kw):
    rt.check_grads(f, [T(a) for a in args], order=order, **kw)


# ---------------------------------------------------------------------------
# inv, det, slogdet, solve
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("cplx", [False, True])
def test_inv(cplx):
    check(rt.inv, gen((2, 3, 3), 1, cplx, shift=4.0), order=2)


@pytest.mark.parametrize("cplx", [False, True])
def test_det(cplx):
    check(rt.det, gen((2, 3, 3), 2, cplx, shift=3.0), order=2)


@pytest.mark.parametrize("cplx", [False, True])
def test_slogdet(cplx):
    a = gen((2, 3, 3), 3, cplx, shift=2.0)
    a[0] = -a[0]  # a negative determinant too
    check(lambda x: rt.slogdet(x), a, order=1)
    check(lambda x: rt.slogdet(x)[1], a, order=2)


@pytest.mark.parametrize("cplx", [False, True])
def test_solve(cplx):
    a = gen((2, 3, 3), 4, cplx, shift=4.0)
    b = gen((2, 3, 2), 5, cplx)
    check(rt.solve, a, b, order=2)
    check(rt.solve, a[0], b[0, :, 0])          # one vector
    check(rt.solve, a[0], b)                   # broadcast batch


# ---------------------------------------------------------------------------
# cholesky, qr
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("cplx", [False, True])
def test_cholesky(cplx):
    a = spd((2, 3, 3), 6, cplx)
    check(rt.cholesky, herm_in(a), order=2)
    check(lambda x: rt.cholesky(x, upper=True), np.conj(np.swapaxes(herm_in(a), -1, -2)))
    # symmetrised input: the gradient spreads over both triangles
    check(lambda x: rt.cholesky((x + rt.conjugate(rt.matrix_transpose(x))) * 0.5), a)


@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 3), (2, 3, 5)])
@pytest.mark.parametrize("cplx", [False, True])
def test_qr(shape, cplx):
    a = gen(shape, 7, cplx) + (2.0 * np.eye(*shape[-2:]))
    check(rt.qr, a)


def test_qr_complete_square_and_errors():
    check(lambda x: rt.qr(x, mode="complete"), gen((3, 3), 8, shift=2.0))
    with pytest.raises(ValueError, match="complete"):
        rt.grad(lambda x: rt.sum(rt.qr(x, mode="complete")[0]))(T(gen((4, 2), 8)))


def test_qr_second_order():
    check(lambda x: rt.qr(x)[1], gen((3, 2), 9) + np.eye(3, 2), order=2)


# ---------------------------------------------------------------------------
# svd, svdvals
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 3), (2, 3, 4)])
@pytest.mark.parametrize("cplx", [False, True])
def test_svd(shape, cplx):
    a = gen(shape, 10, cplx)
    m, n = shape[-2:]
    k = min(m, n)
    wu, wv = wts(shape[:-2] + (m, k), 11), wts(shape[:-2] + (k, n), 12)

    def f(x):
        u, s, vh = rt.svd(x)
        return (u * s[..., None, :]) @ vh, rt.sum(absq(u) * wu, axes=[-2]), absq(vh) * wv, s
    check(f, a)


def test_svd_second_order_and_full():
    check(lambda x: rt.svd(x)[1], gen((3, 2), 13), order=2)
    check(lambda x: rt.svdvals(x), gen((2, 3, 4), 14, True))
    check(lambda x: rt.svd(x, full_matrices=True)[1], gen((3, 3), 15))
    with pytest.raises(ValueError, match="full_matrices"):
        rt.grad(lambda x: rt.sum(rt.svd(x, full_matrices=True)[1]))(T(gen((4, 2), 15)))


# ---------------------------------------------------------------------------
# eigh, eigvalsh, eig, eigvals
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("cplx", [False, True])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(cplx, uplo):
    a = spd((2, 3, 3), 16, cplx)
    a = herm_in(a) if uplo == "L" else np.conj(np.swapaxes(herm_in(a), -1, -2))
    w3 = wts((2, 3, 3), 17)

    def f(x):
        w, v = rt.eigh(x, uplo=uplo)
        return w, absq(v) * w3, (v * w[..., None, :]) @ rt.conjugate(rt.matrix_transpose(v))
    check(f, a)
    check(lambda x: rt.eigvalsh(x, uplo=uplo), a)


def test_eigh_second_order_and_degenerate():
    check(lambda x: rt.eigh(x)[0], spd((3, 3), 18), order=2)
    # an exact tie (the identity): eigenvalue-only gradients through eigh stay finite and equal
    # eigvalsh's for a function symmetric in the tied values
    eye = T(np.eye(3) * 2.0)
    g = rt.grad(lambda x: rt.sum(rt.log(rt.eigh(x)[0])))(eye)
    np.testing.assert_allclose(rt.to_numpy(g), np.eye(3) * 0.5, atol=1e-12)
    g2 = rt.grad(lambda x: rt.sum(rt.log(rt.eigvalsh(x))))(eye)
    np.testing.assert_allclose(rt.to_numpy(g2), np.eye(3) * 0.5, atol=1e-12)
    g3 = rt.grad(lambda x: rt.sum(rt.svd(x)[1]))(eye)   # nuclear norm at a tie: the trace's gradient
    np.testing.assert_allclose(rt.to_numpy(g3), np.eye(3), atol=1e-12)


@pytest.mark.parametrize("cplx", [False, True])
def test_eig(cplx):
    a = gen((2, 3, 3), 19, cplx) + np.diag([0.0, 2.0, 4.0])
    w3 = wts((2, 3, 3), 20)

    def f(x):
        w, v = rt.eig(x)
        return w, absq(v) * w3
    check(f, a)
    check(rt.eigvals, a)


# ---------------------------------------------------------------------------
# pinv, lstsq
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 3), (2, 3, 5)])
@pytest.mark.parametrize("cplx", [False, True])
def test_pinv(shape, cplx):
    check(rt.pinv, gen(shape, 21, cplx))


def test_pinv_hermitian_and_second_order():
    check(lambda x: rt.pinv(x, hermitian=True), herm_in(spd((3, 3), 22)))
    check(rt.pinv, gen((3, 2), 23), order=2)


@pytest.mark.parametrize("cplx", [False, True])
def test_lstsq(cplx):
    a, b = gen((4, 2), 24, cplx), gen((4, 3), 25, cplx)
    check(lambda x, y: rt.lstsq(x, y)[:2] + rt.lstsq(x, y)[3:], a, b)
    check(lambda x, y: rt.lstsq(x, y)[0], gen((2, 3), 26, cplx), gen((2, 1), 27, cplx))  # wide: min-norm x
    check(lambda x, y: rt.lstsq(x, y)[:2], gen((2, 4, 3), 28), gen((2, 4, 2), 29))     # batched
    check(lambda x, y: rt.lstsq(x, y)[1], a, b, order=2)
    check(lambda x, y: rt.lstsq(x, y)[0], a, b[:, 0])                                  # vector b


# ---------------------------------------------------------------------------
# FFT
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fft_ifft(norm):
    x = gen((2, 6), 30, True)
    for n in (None, 4, 9):
        check(lambda t: rt.fft(t, n=n, norm=norm), x)
        check(lambda t: rt.ifft(t, n=n, norm=norm, axis=0), x)
    check(lambda t: rt.fft(t, norm=norm), x, order=2)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_real_ffts(norm):
    x = gen((2, 7), 31)
    c = gen((2, 5), 32, True)
    for n in (None, 6, 9):
        check(lambda t: rt.rfft(t, n=n, norm=norm), x)
        check(lambda t: rt.irfft(t, n=n, norm=norm), c)
        check(lambda t: rt.hfft(t, n=n, norm=norm), c)
        check(lambda t: rt.ihfft(t, n=n, norm=norm), x)
    check(lambda t: rt.irfft(t, norm=norm), c, order=2)


def test_multi_axis_ffts():
    x = gen((2, 4, 5), 33)
    c = gen((2, 4, 5), 34, True)
    check(lambda t: rt.fft2(t, s=[3, 6]), c)
    check(lambda t: rt.ifftn(t), c)
    check(lambda t: rt.rfft2(t, s=[5, 4]), x)
    check(lambda t: rt.rfftn(t), x)
    check(lambda t: rt.irfft2(t), c)
    check(lambda t: rt.irfftn(t, s=[3, 3, 7]), c)
    check(lambda t: rt.fft2(rt.fftshift(t)), x, order=2)


def _pair(u, v):
    return complex(rt.sum(u * v).item()).real


@pytest.mark.parametrize("op, real_in", [("fft", False), ("ifft", False), ("rfft", True), ("irfft", False),
                                         ("hfft", False), ("ihfft", True)])
def test_fft_rules_are_exact_transposes(op, real_in):
    """<u, J v> = <J^T u, v> to rounding, for every norm and crop/pad length."""
    f0 = getattr(rt, op)
    x = gen((2, 6), 48, not real_in)
    v = T(gen((2, 6), 49, not real_in))
    for norm in ("backward", "ortho", "forward"):
        for n in (None, 4, 11):
            def f(t, n=n, norm=norm):
                return f0(t, n=n, norm=norm)
            y, jv = rt.jvp(f, (T(x),), (v,))
            u = T(gen(y.shape, 50, y.dtype.kind == "c"))
            (jtu,) = rt.vjp(f, T(x))[1](u)
            assert jtu.dtype == v.dtype
            assert abs(_pair(u, jv) - _pair(jtu, v)) <= 1e-12 * (1 + abs(_pair(u, jv))), (op, norm, n)


def test_dtypes_kept():
    for d, cplx in ((rt.float32, False), (rt.complex64, True)):
        a = rt.asarray(spd((3, 3), 1, cplx), dtype=d)
        for f in (rt.inv, rt.cholesky, lambda x: rt.svd(x)[1], lambda x: rt.eigh(x)[0], lambda x: rt.qr(x)[1],
                  rt.eigvals, rt.fft):
            assert rt.grad(lambda x: rt.sum(rt.abs(f(x))))(a).dtype == d
    a = T(gen((3, 3), 2) + np.diag([0.0, 2.0, 4.0]))   # real input of eig: a real gradient
    assert rt.grad(lambda x: rt.sum(absq(rt.eig(x)[1]) * T(wts((3, 3)))))(a).dtype == rt.float64
    assert rt.grad(lambda x: rt.sum(rt.abs(rt.rfft(x))))(T(gen((5,), 3))).dtype == rt.float64


# ---------------------------------------------------------------------------
# composites (differentiate through their primitives)
# ---------------------------------------------------------------------------
def test_composites():
    a = gen((2, 3, 3), 35, shift=2.0)
    for o in ("fro", "nuc", 2, 1, -2):
        check(lambda x: rt.norm(x, ord=o, axes=(-2, -1)), a)
    check(lambda x: rt.norm(x[0, 0]), a)
    check(lambda x: rt.norm(x, ord=3, axes=-1), a)
    check(lambda x: rt.matrix_power(x, 3), a, order=2)
    check(lambda x: rt.matrix_power(x, -2), a)
    check(lambda x, y: rt.tensordot(x, y, axes=([1, 2], [0, 1])), a, gen((3, 3, 2), 36))
    check(lambda x: rt.cond(x), a[0])
    check(lambda x: rt.cond(x, "fro"), a[0])
    check(lambda x: rt.multi_dot([x[0], x[1], x[0]]), a)
    check(lambda x: rt.trace(rt.inv(x)), a)
    check(lambda x: rt.tensorinv(rt.reshape(x[0], [3, 3]), ind=1), a)


def test_array_api_composites():
    a = gen((2, 3, 3), 37, shift=2.0)
    check(lambda x: xp.linalg.matrix_norm(x, ord="nuc"), a)
    check(lambda x: xp.linalg.vector_norm(x, ord=1.5, axis=-1), a)
    check(lambda x: xp.linalg.slogdet(x).logabsdet, a)
    check(lambda x: xp.linalg.svd(x).S, a)
    check(lambda x: xp.linalg.eigh(x + xp.linalg.matrix_transpose(x)).eigenvalues, a)
    check(lambda x: xp.linalg.solve(x, x[..., 0:1]), a)


# ---------------------------------------------------------------------------
# complex conventions against JAX
# ---------------------------------------------------------------------------
def _jax_cases(jnp):
    """(name, runetensor function, JAX function, input, Hermitian input?)."""
    a = gen((3, 3), 40, True, shift=3.0)
    h = spd((3, 3), 41, True)
    w = T(gen((3, 3), 42, True))
    wj = jnp.asarray(rt.to_numpy(w))

    def rt_svd_rec(x):
        u, s, vh = rt.svd(x)
        return (u * s[None, :]) @ vh

    def jx_svd_rec(x):
        u, s, vh = jnp.linalg.svd(x, full_matrices=False)
        return (u * s[None, :]) @ vh

    def rt_eigh_inv(x):
        e, v = rt.eigh(x)
        return (v * (1.0 / e)[None, :]) @ rt.conjugate(rt.matrix_transpose(v))

    def jx_eigh_inv(x):
        e, v = jnp.linalg.eigh(x)
        return (v * (1.0 / e)[None, :]) @ v.conj().T
    return [
        ("inv", rt.inv, jnp.linalg.inv, a, False),
        ("det", rt.det, jnp.linalg.det, a, False),
        ("slogdet", lambda x: rt.slogdet(x)[0] * rt.slogdet(x)[1], lambda x: jnp.prod(jnp.stack(jnp.linalg.slogdet(x))),
         a, False),
        ("solve", lambda x: rt.solve(x, x * 0.5 + 1.0), lambda x: jnp.linalg.solve(x, x * 0.5 + 1.0), a, False),
        ("svdvals", rt.svdvals, lambda x: jnp.linalg.svd(x, compute_uv=False), a, False),
        ("svd", rt_svd_rec, jx_svd_rec, a[:, :2], False),
        ("qr", lambda x: rt.qr(x)[1], lambda x: jnp.linalg.qr(x)[1], a, False),
        ("pinv", rt.pinv, jnp.linalg.pinv, a[:2], False),
        ("eigvals", rt.eigvals, jnp.linalg.eigvals, a, False),
        ("fft", lambda x: rt.fft(x * w, n=4), lambda x: jnp.fft.fft(x * wj, n=4), a, False),
        ("ifft", lambda x: rt.ifft(x, axis=0, norm="ortho"), lambda x: jnp.fft.ifft(x, axis=0, norm="ortho"),
         a, False),
        ("hfft", lambda x: rt.hfft(x, n=5), lambda x: jnp.fft.hfft(x, n=5), a, False),
        ("irfft2", lambda x: rt.irfft2(x, s=[3, 4]), lambda x: jnp.fft.irfft2(x, s=(3, 4)), a, False),
        ("ihfft", lambda x: rt.ihfft(rt.abs(x), n=4),
         lambda x: jnp.fft.ihfft(jnp.abs(x), n=4), a, False),
        ("eigvalsh", rt.eigvalsh, jnp.linalg.eigvalsh, h, True),
        ("eigh", rt_eigh_inv, jx_eigh_inv, h, True),
        ("cholesky", rt.cholesky, jnp.linalg.cholesky, h, True),
    ]


def test_against_jax_complex():
    """Gradients (reverse mode) and JVPs of real losses of complex inputs equal JAX's: the same
    convention for complex numbers (df/dx - i df/dy)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    for name, f_rt, f_jx, x, herm in _jax_cases(jnp):
        y = np.asarray(f_jx(jnp.asarray(x)))
        wy = rng(46).uniform(0.5, 2.0, size=y.shape)

        def loss_rt(t, f_rt=f_rt, wy=wy, herm=herm):
            if herm:  # compare derivatives of the Hermitian part (JAX symmetrises, we read a triangle)
                t = (t + rt.conjugate(rt.matrix_transpose(t))) * 0.5
            return rt.sum(absq(f_rt(t)) * T(wy))

        def loss_jx(t, f_jx=f_jx, wy=wy, herm=herm):
            if herm:
                t = (t + t.conj().T) * 0.5
            o = f_jx(t)
            return jnp.sum((o * o.conj()).real * wy)
        got = rt.to_numpy(rt.grad(loss_rt)(T(x)))
        want = np.asarray(jax.grad(loss_jx)(jnp.asarray(x)))
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9, err_msg=f"{name}: grad")
        v = gen(x.shape, 47, True)
        got_t = float(rt.jvp(loss_rt, (T(x),), (T(v),))[1])
        want_t = float(jax.jvp(loss_jx, (jnp.asarray(x),), (jnp.asarray(v),))[1])
        np.testing.assert_allclose(got_t, want_t, rtol=1e-7, atol=1e-9, err_msg=f"{name}: jvp")
