"""Derivative rules of the linear-algebra (``linalg.<op>``) and FFT (``fft.<op>``) primitives.

Registered into :data:`runetensor._primitives.PRIMS` with :func:`~runetensor._primitives.prim`
(``linalg.einsum`` lives in ``_primitives`` itself).  Every rule works on stacks of matrices
(leading axes are batch axes) and only calls primitives of the backend ``B`` it is given, so
derivatives of derivatives work (the rules of ``inv``, ``svd``, ... are re-entered one level
down).  Conventions are those of ``_primitives``: the VJP is the plain transpose of the
real-linear JVP under the pairing ``<a, b> = Re sum(a * b)`` (JAX's convention; for a real
``f`` of ``z = x + iy`` the gradient is ``df/dx - i df/dy``).

How the VJPs are derived: most are written with the textbook adjoints for the pairing
``Re tr(A^H B)`` applied to ``conj(g)``, and the result conjugated back (``_cj``), which is the
same thing as the plain transpose above; for real dtypes the conjugations vanish.

What each rule supports (both modes, batched, float32/float64/complex64/complex128):

* ``inv``, ``det``, ``slogdet``, ``solve``: invertible matrices (``det``'s derivative is
  ``det(a) * inv(a)^T``, so a singular matrix raises ``LinAlgError`` from the inner ``inv``;
  ``slogdet``'s ``sign`` is piecewise constant for real input; for complex input its derivative
  is the phase's).
* ``cholesky``: the factorisation reads one triangle of its input (the lower one, the upper one
  for ``upper=True``) and the real part of its diagonal; the derivative is that of exactly this
  function: a tangent/cotangent lives on that triangle (its Hermitian image is what moves).
  Symmetrise the input yourself (``(a + a^H) / 2``) for a derivative that spreads evenly over
  both triangles.  Same for ``eigh``/``eigvalsh`` (``uplo``) and ``pinv(hermitian=True)`` (lower).
* ``qr``: ``mode="reduced"`` with ``M >= N`` and full column rank, any mode with ``M == N``
  (reduced and complete coincide), and ``M < N`` (``a = Q [R1 R2]`` with ``R1`` invertible).
  ``mode="complete"`` with ``M > N`` raises ``ValueError`` (the extra columns of Q are
  not determined by ``a``).
* ``svd``: ``full_matrices=False`` (or square input), singular values distinct and, where
  ``M != N``, non-zero.  ``full_matrices=True`` with ``M != N`` raises ``ValueError``.
  The factors are unique only up to a phase (sign) per singular pair; the rule fixes the gauge
  ``Re(u_i^H du_i) = 0``, ``v_i^H dv_i = 0`` (for complex input the phase moves into ``u``), so
  only functions invariant under ``u_i -> u_i c``, ``v_i -> v_i c`` (``|c| = 1``), such as
  ``u @ diag(s) @ vh``, ``|u|**2`` or ``s``, have well-defined derivatives.
* ``eigh``: distinct eigenvalues; eigenvectors in the gauge ``v_i^H dv_i = 0`` (same remark on
  phases/signs).
* ``eig`` (non-Hermitian, both modes: the JVP of JAX's formula and its exact transpose):
  diagonalisable input with distinct eigenvalues; eigenvectors keep unit norm and get no phase
  rotation (``Im(v_i^H dv_i) = 0``), which is *not* LAPACK's convention (largest component
  real), so only phase-invariant functions of ``v`` (``|v|``, ``v diag(w) v^-1``...) have the
  derivatives finite differences see.  Real input gets a real cotangent.
* ``eigvals``, ``eigvalsh``, ``svdvals``: as the corresponding eigenvalue / singular value part
  (distinct values; at a tie each value's derivative is not defined, the sum over the tie is).
* ``pinv``: the formula for the derivative of the pseudo-inverse of a matrix of locally constant
  rank (full rank, or any rank when the cut-off ``rtol`` keeps it fixed nearby).
* ``lstsq``: ``x = pinv(a) b`` differentiated through the same formula (full rank, either
  shape); ``residuals`` (``M > N``, full rank) through ``2 Re(r^H (da x - db))`` with
  ``r = a x - b``; ``sv`` as ``svdvals``; ``rank`` carries no derivative.

Degeneracies: where two eigenvalues (singular values) are exactly equal, or a singular value is
exactly zero, the terms with the factor ``1 / (w_j - w_i)`` (``1 / s``) that would be infinite are
dropped (taken as 0) instead of giving inf/NaN.  Gradients that reach only the eigenvalues
(singular values) of ``eigh``/``svd``/``eig`` then equal those of ``eigvalsh``/``svdvals``/
``eigvals``, right for functions symmetric in the tied values (their sum, ``sum(log(w))``: the
gradient of ``sum(log(eigh(I)[0]))`` is finite and right).  Through the eigenvectors at a tie the
derivative does not exist and the value is finite but meaningless (also for ``v diag(w) v^H``,
whose true derivative needs the limit ``(w_j - w_i) / (w_j - w_i) = 1``; JAX gives NaN there).
Nearly equal values give large derivatives (the problem is ill-conditioned).

FFT (all linear): the JVP is the transform of the tangent; the VJP is the transpose: ``fft`` and
``ifft`` are symmetric matrices (the transpose is the same transform with the same ``norm``,
then the crop/zero-pad undone), ``rfft`` transposes to the real part of a full ``fft`` of the
zero-padded cotangent, ``irfft`` to ``w * conj(rfft(g))`` with ``w`` = 1 for the frequencies
counted once (0 and ``n/2``) and 2 for the others, ``hfft``/``ihfft`` are those with a
conjugation.  Every ``norm`` and every ``s`` (crop or pad) is supported.
"""
from __future__ import annotations

from typing import Any

from . import _dtypes as D
from ._primitives import _swap as _mT
from ._primitives import add, cast_like, prim, reshape, zeros_like

# ---------------------------------------------------------------------------
# matrix helpers on handles of a backend B
# ---------------------------------------------------------------------------


def _cx(B, h) -> bool:
    return B.dtype(h).is_complex


def _cj(B, h):
    return B.unary("conj", h) if _cx(B, h) else h


def _mH(B, h):
    return _cj(B, _mT(B, h))


def _mm(B, *hs):
    r = hs[0]
    for h in hs[1:]:
        r = B.matmul(r, h)
    return r


def _complex_of(d):
    return D.complex64 if d in (D.float32, D.complex64) else D.complex128


def _idx(B, n, shape):
    return reshape(B, B.arange(0, n, 1, D.int64), shape)


def _tri_mask(B, m, n, d, k, lower=True):
    """(m, n) mask of dtype ``d``: 1 where ``j - i <= k`` (lower) or ``j - i >= k`` (upper)."""
    i = _idx(B, m, (m, 1))
    j = _idx(B, n, (1, n))
    dif = B.binary("sub", j, i)
    c = B.binary("le", dif, k) if lower else B.binary("ge", dif, k)
    return B.cast(c, d)


def _tril(B, h, k=0):
    return B.binary("mul", h, _tri_mask(B, h.shape[-2], h.shape[-1], B.dtype(h), k, True))


def _triu(B, h, k=0):
    return B.binary("mul", h, _tri_mask(B, h.shape[-2], h.shape[-1], B.dtype(h), k, False))


def _eye(B, n, d):
    return B.cast(B.binary("eq", _idx(B, n, (n, 1)), _idx(B, n, (1, n))), d)


def _diag(B, h):
    """The diagonal (..., n) of square matrices (..., n, n)."""
    return B.linalg("einsum", h, subscripts="...ii->...i")


def _diagm(B, v):
    """Diagonal matrices (..., n, n) from vectors (..., n)."""
    n = v.shape[-1]
    return B.binary("mul", reshape(B, v, v.shape[:-1] + (1, n)), _eye(B, n, B.dtype(v)))


def _col(B, v):
    """Vectors (..., n) as (..., 1, n): scales the columns of a matrix it multiplies."""
    return reshape(B, v, v.shape[:-1] + (1, v.shape[-1]))


def _row(B, v):
    """Vectors (..., n) as (..., n, 1): scales the rows."""
    return reshape(B, v, v.shape + (1,))


def _re(B, h):
    return B.unary("real", h) if _cx(B, h) else h


def _im_i(B, h):
    """``i * Im(h)`` in h's (complex) dtype."""
    return B.binary("mul", B.cast(B.unary("imag", h), B.dtype(h)), 1j)


def _re_c(B, h):
    """``Re(h)`` kept in h's dtype."""
    return B.cast(B.unary("real", h), B.dtype(h)) if _cx(B, h) else h


def _safe_recip(B, x):
    """``1 / x`` with 0 where ``x == 0`` (the degeneracy convention of the module docstring)."""
    z = B.binary("eq", x, 0)
    one = B.full((), 1, B.dtype(x))
    zero = B.full((), 0, B.dtype(x))
    return B.where(z, zero, B.unary("recip", B.where(z, one, x)))


def _gaps(B, w):
    """``F[..., i, j] = 1 / (w_j - w_i)``, 0 on the diagonal and at exact ties."""
    n = w.shape[-1]
    dif = B.binary("sub", _col(B, w), _row(B, w))
    return _safe_recip(B, dif) if n else dif


def _herm(B, t, lower):
    """The Hermitian matrix a factorisation reading one triangle (and the real part of the
    diagonal) of ``t`` sees."""
    off = _tril(B, t, -1) if lower else _triu(B, t, 1)
    return B.binary("add", B.binary("add", off, _mH(B, off)), _diagm(B, _re_c(B, _diag(B, t))))


def _herm_T(B, g, lower):
    """Transpose of :func:`_herm` (same form in both conventions)."""
    s = B.binary("add", g, _mH(B, g))
    off = _tril(B, s, -1) if lower else _triu(B, s, 1)
    return B.binary("add", off, _diagm(B, _re_c(B, _diag(B, g))))


def _inv(B, a):
    return B.linalg("inv", a)


# ---------------------------------------------------------------------------
# inv, det, slogdet, solve
# ---------------------------------------------------------------------------
def _inv_jvp(B, ts, xs, out):
    return B.unary("neg", _mm(B, out, ts[0], out))


def _inv_vjp(B, g, xs, out, need):
    yt = _mT(B, out)
    return (B.unary("neg", _mm(B, yt, g, yt)),)


prim("linalg.inv", jvp=_inv_jvp, vjp=_inv_vjp)


def _tr_prod(B, x, y):
    """``tr(x @ y)`` per matrix."""
    return B.linalg("einsum", x, y, subscripts="...ij,...ji->...")


def _det_jvp(B, ts, xs, out):
    return B.binary("mul", out, _tr_prod(B, _inv(B, xs[0]), ts[0]))


def _det_vjp(B, g, xs, out, need):
    s = B.binary("mul", g, out)
    return (B.binary("mul", reshape(B, s, s.shape + (1, 1)), _mT(B, _inv(B, xs[0]))),)


prim("linalg.det", jvp=_det_jvp, vjp=_det_vjp)


def _slogdet_jvp(B, ts, xs, out):
    sign, _ = out
    t = _tr_prod(B, _inv(B, xs[0]), ts[0])
    if not _cx(B, t):
        return zeros_like(B, sign), t
    return B.binary("mul", sign, _im_i(B, t)), B.unary("real", t)


def _slogdet_vjp(B, g, xs, out, need):
    sign, _ = out
    gs, gl = g
    a = xs[0]
    if _cx(B, a):
        # t -> (sign * i Im t, Re t): transpose gt = gl - i Re(i gs sign)
        rs = B.unary("real", B.binary("mul", B.binary("mul", gs, sign), 1j))
        gt = B.binary("sub", B.cast(gl, B.dtype(a)), B.binary("mul", B.cast(rs, B.dtype(a)), 1j))
    else:
        gt = gl
    return (B.binary("mul", reshape(B, gt, gt.shape + (1, 1)), _mT(B, _inv(B, a))),)


prim("linalg.slogdet", jvp=_slogdet_jvp, vjp=_slogdet_vjp)


def _solve_jvp(B, ts, xs, out):
    a, b = xs
    rhs = ts[1]
    if ts[0] is not None:
        rhs = add(B, rhs, B.unary("neg", B.matmul(ts[0], out)))
    return B.linalg("solve", a, rhs)


def _solve_vjp(B, g, xs, out, need):
    a, b = xs
    gb = B.linalg("solve", _mT(B, a), g)
    ga = B.unary("neg", B.matmul(gb, _mT(B, out))) if need[0] else None
    return ga, (gb if need[1] else None)


prim("linalg.solve", jvp=_solve_jvp, vjp=_solve_vjp)


# ---------------------------------------------------------------------------
# cholesky
# ---------------------------------------------------------------------------
def _phi(B, x):
    """Lower triangle with the diagonal halved."""
    return B.binary("sub", _tril(B, x), B.binary("mul", _diagm(B, _diag(B, x)), 0.5))


def _chol_jvp(B, ts, xs, out, upper=False):
    lo = _mH(B, out) if upper else out
    li = _inv(B, lo)
    dh = _herm(B, ts[0], not upper)
    dl = B.matmul(lo, _phi(B, _mm(B, li, dh, _mH(B, li))))
    return _mH(B, dl) if upper else dl


def _chol_vjp(B, g, xs, out, need, upper=False):
    lo = _mH(B, out) if upper else out
    gb = _cj(B, g)
    if upper:
        gb = _mH(B, gb)
    li = _inv(B, lo)
    gs = _phi(B, B.matmul(_mH(B, lo), gb))
    gh = _mm(B, _mH(B, li), gs, li)
    return (_cj(B, _herm_T(B, gh, not upper)),)


prim("linalg.cholesky", jvp=_chol_jvp, vjp=_chol_vjp)


# ---------------------------------------------------------------------------
# qr
# ---------------------------------------------------------------------------
def _psi(B, x):
    """tril(x, -1) - tril(x, -1)^H + i Im diag(x): the skew-Hermitian part Q^H dQ takes from x."""
    lo = _tril(B, x, -1)
    r = B.binary("sub", lo, _mH(B, lo))
    if _cx(B, x):
        r = B.binary("add", r, _diagm(B, _im_i(B, _diag(B, x))))
    return r


def _psi_T(B, g):
    """Adjoint of :func:`_psi`: tril(g - g^H, -1) + i Im diag(g)."""
    r = _tril(B, B.binary("sub", g, _mH(B, g)), -1)
    if _cx(B, g):
        r = B.binary("add", r, _diagm(B, _im_i(B, _diag(B, g))))
    return r


def _qr_tall_jvp(B, q, r, da):
    """(dQ, dR) of a = QR with Q (m, n) orthonormal columns, R (n, n) invertible."""
    y = B.matmul(da, _inv(B, r))
    x = B.matmul(_mH(B, q), y)
    om = _psi(B, x)
    dq = B.binary("add", B.matmul(q, B.binary("sub", om, x)), y)
    dr = B.matmul(B.binary("sub", x, om), r)
    return dq, dr


def _qr_tall_vjp(B, q, r, gq, gr):
    """Adjoint (conjugate convention) of :func:`_qr_tall_jvp`: returns conj-cotangent of a."""
    k = B.binary("sub", B.matmul(gr, _mH(B, r)), B.matmul(_mH(B, q), gq))
    gx = B.binary("sub", k, _psi_T(B, k))
    gy = B.binary("add", gq, B.matmul(q, gx))
    return B.matmul(gy, _mH(B, _inv(B, r)))


def _qr_check(a, mode):
    m, n = a.shape[-2], a.shape[-1]
    if mode == "complete" and m > n:
        raise ValueError("qr: no derivative for mode='complete' with M > N (the extra columns of Q are "
                                  "not determined by the input); use mode='reduced'")
    return m, n


def _split_cols(B, h, m):
    lead = tuple(slice(0, s, 1) for s in h.shape[:-1])
    return B.view_index(h, lead + (slice(0, m, 1),)), B.view_index(h, lead + (slice(m, h.shape[-1], 1),))


def _concat_cols(B, x, y):
    return B.concatenate((x, y), x.ndim - 1)


def _qr_jvp(B, ts, xs, out, mode="reduced"):
    q, r = out
    m, n = _qr_check(xs[0], mode)
    da = ts[0]
    if m >= n:
        return _qr_tall_jvp(B, q, r, da)
    r1, r2 = _split_cols(B, r, m)
    dx, dy = _split_cols(B, da, m)
    _, y = _split_cols(B, xs[0], m)
    dq, dr1 = _qr_tall_jvp(B, q, r1, dx)
    dr2 = B.binary("add", B.matmul(_mH(B, dq), y), B.matmul(_mH(B, q), dy))
    return dq, _concat_cols(B, dr1, dr2)


def _qr_vjp(B, g, xs, out, need, mode="reduced"):
    q, r = out
    m, n = _qr_check(xs[0], mode)
    gq, gr = _cj(B, g[0]), _cj(B, g[1])
    if m >= n:
        return (_cj(B, _qr_tall_vjp(B, q, r, gq, gr)),)
    r1, _ = _split_cols(B, r, m)
    gr1, gr2 = _split_cols(B, gr, m)
    _, y = _split_cols(B, xs[0], m)
    gy = B.matmul(q, gr2)
    gq = B.binary("add", gq, B.matmul(y, _mH(B, gr2)))
    gx = _qr_tall_vjp(B, q, r1, gq, gr1)
    return (_cj(B, _concat_cols(B, gx, gy)),)


prim("linalg.qr", jvp=_qr_jvp, vjp=_qr_vjp)


# ---------------------------------------------------------------------------
# svd, svdvals
# ---------------------------------------------------------------------------
def _svd_check(a, full_matrices):
    m, n = a.shape[-2], a.shape[-1]
    if full_matrices and m != n:
        raise ValueError("svd: no derivative for full_matrices=True with M != N (the extra singular "
                                  "vectors are not determined by the input); use full_matrices=False")
    return m, n


def _svd_jvp(B, ts, xs, out, full_matrices=False):
    u, s, vh = out
    m, n = _svd_check(xs[0], full_matrices)
    da = ts[0]
    v = _mH(B, vh)
    cd = B.dtype(u)
    sc = B.cast(s, cd)
    dp = _mm(B, _mH(B, u), da, v)
    ds = _re(B, _diag(B, dp))
    f = B.cast(_gaps(B, B.unary("square", s)), cd)   # 1 / (s_j^2 - s_i^2)
    dps = B.binary("mul", dp, _col(B, sc))            # dP S
    sdp = B.binary("mul", _row(B, sc), dp)            # S dP
    om_u = B.binary("mul", f, B.binary("add", dps, _mH(B, dps)))
    om_v = B.binary("mul", f, B.binary("add", sdp, _mH(B, sdp)))
    sinv = B.cast(_safe_recip(B, s), cd)
    if _cx(B, dp):
        om_u = B.binary("add", om_u, _diagm(B, B.binary("mul", _im_i(B, _diag(B, dp)), sinv)))
    du = B.matmul(u, om_u)
    dv = B.matmul(v, om_v)
    k = s.shape[-1]
    if m > k:   # the part of da V outside span(U)
        w = B.matmul(da, v)
        w = B.binary("sub", w, _mm(B, u, _mH(B, u), w))
        du = B.binary("add", du, B.binary("mul", w, _col(B, sinv)))
    if n > k:
        w = B.matmul(_mH(B, da), u)
        w = B.binary("sub", w, _mm(B, v, vh, w))
        dv = B.binary("add", dv, B.binary("mul", w, _col(B, sinv)))
    return du, ds, _mH(B, dv)


def _svd_vjp(B, g, xs, out, need, full_matrices=False):
    u, s, vh = out
    m, n = _svd_check(xs[0], full_matrices)
    gu = _cj(B, g[0])
    gs = g[1]
    gv = _mT(B, g[2])           # conj(g_vh)^H
    v = _mH(B, vh)
    cd = B.dtype(u)
    sc = B.cast(s, cd)
    sinv = B.cast(_safe_recip(B, s), cd)
    f = B.cast(_gaps(B, B.unary("square", s)), cd)
    uh_gu = B.matmul(_mH(B, u), gu)
    gam_u = B.binary("mul", f, uh_gu)
    gam_v = B.binary("mul", f, B.matmul(vh, gv))
    inner = B.binary("add", _diagm(B, B.cast(gs, cd)),
                     B.binary("add", B.binary("mul", B.binary("add", gam_u, _mH(B, gam_u)), _col(B, sc)),
                              B.binary("mul", _row(B, sc), B.binary("add", gam_v, _mH(B, gam_v)))))
    if _cx(B, uh_gu):
        inner = B.binary("add", inner, _diagm(B, B.binary("mul", _im_i(B, _diag(B, uh_gu)), sinv)))
    ga = _mm(B, u, inner, vh)
    k = s.shape[-1]
    if m > k:   # (I - U U^H) gu S^-1 V^H
        w = B.binary("sub", gu, B.matmul(u, uh_gu))
        ga = B.binary("add", ga, B.matmul(B.binary("mul", w, _col(B, sinv)), vh))
    if n > k:   # U S^-1 gv^H (I - V V^H)
        w = _mH(B, gv)
        w = B.binary("sub", w, _mm(B, w, v, vh))
        ga = B.binary("add", ga, B.matmul(u, B.binary("mul", _row(B, sinv), w)))
    return (cast_like(B, _cj(B, ga), B.dtype(xs[0])),)


prim("linalg.svd", jvp=_svd_jvp, vjp=_svd_vjp)


def _svdvals_jvp(B, ts, xs, out):
    u, _, vh = B.linalg("svd", xs[0], full_matrices=False)
    return _re(B, _diag(B, _mm(B, _mH(B, u), ts[0], _mH(B, vh))))


def _svdvals_vjp(B, g, xs, out, need):
    u, _, vh = B.linalg("svd", xs[0], full_matrices=False)
    ga = B.matmul(B.binary("mul", u, _col(B, B.cast(g, B.dtype(u)))), vh)
    return (_cj(B, ga),)


prim("linalg.svdvals", jvp=_svdvals_jvp, vjp=_svdvals_vjp)


# ---------------------------------------------------------------------------
# eigh, eigvalsh
# ---------------------------------------------------------------------------
def _eigh_jvp(B, ts, xs, out, uplo="L"):
    w, v = out
    dh = _herm(B, ts[0], uplo == "L")
    dp = _mm(B, _mH(B, v), dh, v)
    dw = _re(B, _diag(B, dp))
    f = B.cast(_gaps(B, w), B.dtype(v))
    dv = B.matmul(v, B.binary("mul", f, dp))
    return dw, dv


def _eigh_vjp(B, g, xs, out, need, uplo="L"):
    w, v = out
    gw, gv = g[0], _cj(B, g[1])
    f = B.cast(_gaps(B, w), B.dtype(v))
    inner = B.binary("add", _diagm(B, B.cast(gw, B.dtype(v))), B.binary("mul", f, B.matmul(_mH(B, v), gv)))
    gh = _mm(B, v, inner, _mH(B, v))
    return (_cj(B, _herm_T(B, gh, uplo == "L")),)


prim("linalg.eigh", jvp=_eigh_jvp, vjp=_eigh_vjp)


def _eigvalsh_jvp(B, ts, xs, out, uplo="L"):
    _, v = B.linalg("eigh", xs[0], uplo=uplo)
    return _re(B, _diag(B, _mm(B, _mH(B, v), _herm(B, ts[0], uplo == "L"), v)))


def _eigvalsh_vjp(B, g, xs, out, need, uplo="L"):
    _, v = B.linalg("eigh", xs[0], uplo=uplo)
    gh = B.matmul(B.binary("mul", v, _col(B, B.cast(g, B.dtype(v)))), _mH(B, v))
    return (_cj(B, _herm_T(B, gh, uplo == "L")),)


prim("linalg.eigvalsh", jvp=_eigvalsh_jvp, vjp=_eigvalsh_vjp)


# ---------------------------------------------------------------------------
# eig, eigvals (general square matrices; complex results)
# ---------------------------------------------------------------------------
def _eig_jvp(B, ts, xs, out):
    w, v = out
    cd = B.dtype(w)
    da = cast_like(B, ts[0], cd)
    vi = _inv(B, v)
    p = _mm(B, vi, da, v)
    dw = _diag(B, p)
    dv0 = B.matmul(v, B.binary("mul", _gaps(B, w), p))
    # keep each column at unit norm: subtract v_i Re(v_i^H dv0_i)
    nrm = _re_c(B, _diag(B, B.matmul(_mH(B, v), dv0)))
    return dw, B.binary("sub", dv0, B.binary("mul", v, _col(B, nrm)))


def _eig_vjp(B, g, xs, out, need):
    w, v = out
    gw, gv = _cj(B, g[0]), _cj(B, g[1])
    vh = _mH(B, v)
    nrm = _re_c(B, _diag(B, B.matmul(vh, gv)))
    gdv0 = B.binary("sub", gv, B.binary("mul", v, _col(B, nrm)))
    gc0 = B.matmul(vh, gdv0)
    gp = B.binary("add", _diagm(B, gw), B.binary("mul", B.unary("conj", _gaps(B, w)), gc0))
    vi = _inv(B, v)
    ga = _mm(B, _mH(B, vi), gp, vh)
    return (cast_like(B, _cj(B, ga), B.dtype(xs[0])),)


prim("linalg.eig", jvp=_eig_jvp, vjp=_eig_vjp)


def _eigvals_jvp(B, ts, xs, out):
    w, v = B.linalg("eig", xs[0])
    return _diag(B, _mm(B, _inv(B, v), cast_like(B, ts[0], B.dtype(w)), v))


def _eigvals_vjp(B, g, xs, out, need):
    w, v = B.linalg("eig", xs[0])
    vi = _inv(B, v)
    ga = B.matmul(B.binary("mul", _mH(B, vi), _col(B, _cj(B, g))), _mH(B, v))
    return (cast_like(B, _cj(B, ga), B.dtype(xs[0])),)


prim("linalg.eigvals", jvp=_eigvals_jvp, vjp=_eigvals_vjp)


# ---------------------------------------------------------------------------
# pinv, lstsq
# ---------------------------------------------------------------------------
def _pinv_tangent(B, x, a, da):
    """d pinv(a) for pinv(a) = x (constant rank)."""
    dah = _mH(B, da)
    xh = _mH(B, x)
    t = B.unary("neg", _mm(B, x, da, x))
    # + x x^H da^H (I - a x)
    p = B.binary("sub", dah, _mm(B, dah, a, x))
    t = B.binary("add", t, _mm(B, x, xh, p))
    # + (I - x a) da^H x^H x
    q = B.binary("sub", dah, _mm(B, x, a, dah))
    return B.binary("add", t, _mm(B, q, xh, x))


def _pinv_cotangent(B, x, a, gb):
    """Adjoint (conjugate convention) of :func:`_pinv_tangent` applied to ``gb``."""
    xh = _mH(B, x)
    gbh = _mH(B, gb)
    r = B.unary("neg", _mm(B, xh, gb, xh))
    # (I - a x) gb^H x x^H
    p = _mm(B, gbh, x, xh)
    r = B.binary("add", r, B.binary("sub", p, _mm(B, a, x, p)))
    # x^H x gb^H (I - x a)
    q = _mm(B, xh, x, gbh)
    return B.binary("add", r, B.binary("sub", q, _mm(B, q, x, a)))


def _pinv_jvp(B, ts, xs, out, rtol=None, hermitian=False):
    if hermitian:  # the function reads the lower triangle (and the real diagonal) only
        return _pinv_tangent(B, out, _herm(B, xs[0], True), _herm(B, ts[0], True))
    return _pinv_tangent(B, out, xs[0], ts[0])


def _pinv_vjp(B, g, xs, out, need, rtol=None, hermitian=False):
    a = _herm(B, xs[0], True) if hermitian else xs[0]
    ga = _pinv_cotangent(B, out, a, _cj(B, g))
    if hermitian:
        ga = _herm_T(B, ga, True)
    return (_cj(B, ga),)


prim("linalg.pinv", jvp=_pinv_jvp, vjp=_pinv_vjp)


def _lstsq_pinv(B, a, rcond):
    return B.linalg("pinv", a, rtol=rcond, hermitian=False)


def _lstsq_jvp(B, ts, xs, out, rcond=None):
    a, b = xs
    x, res, rank, sv = out
    p = _lstsq_pinv(B, a, rcond)
    dx = None
    rsd = None
    if ts[0] is not None:
        dx = B.matmul(_pinv_tangent(B, p, a, ts[0]), b)
        rsd = B.matmul(ts[0], x)
    if ts[1] is not None:
        dx = add(B, dx, B.matmul(p, ts[1]))
        rsd = add(B, rsd, B.unary("neg", ts[1]))
    dres = None
    if res.size:
        r = B.binary("sub", B.matmul(a, x), b)
        dres = B.binary("mul", _re(B, B.reduce("sum", B.binary("mul", _cj(B, r), rsd), (r.ndim - 2,), False)), 2.0)
        dres = reshape(B, dres, res.shape)
    elif hasattr(res, "shape"):
        dres = zeros_like(B, res)
    dsv = None
    if ts[0] is not None:
        dsv = _svdvals_jvp(B, (ts[0],), (a,), sv)
    elif hasattr(sv, "shape"):
        dsv = zeros_like(B, sv)
    return dx, dres, None, dsv


def _lstsq_vjp(B, g, xs, out, need, rcond=None):
    a, b = xs
    x, res, rank, sv = out
    gx, gres, _, gsv = g
    p = _lstsq_pinv(B, a, rcond)
    gxb = _cj(B, gx)
    ga_b = _pinv_cotangent(B, p, a, B.matmul(gxb, _mH(B, b))) if need[0] else None
    gb_b = B.matmul(_mH(B, p), gxb) if need[1] else None
    if res.size:
        r = B.binary("sub", B.matmul(a, x), b)
        gr = reshape(B, B.binary("mul", gres, 2.0), r.shape[:-2] + (1, r.shape[-1]))
        rg = B.binary("mul", r, B.cast(gr, B.dtype(r)))   # 2 r diag(gres)
        if need[0]:
            ga_b = B.binary("add", ga_b, B.matmul(rg, _mH(B, x)))
        if need[1]:
            gb_b = B.binary("sub", gb_b, rg)
    if need[0]:
        ga = _cj(B, ga_b)
        ga = B.binary("add", ga, _svdvals_vjp(B, gsv, (a,), sv, (True,))[0])
    else:
        ga = None
    return ga, (_cj(B, gb_b) if need[1] else None)


prim("linalg.lstsq", jvp=_lstsq_jvp, vjp=_lstsq_vjp)


# ---------------------------------------------------------------------------
# FFT
# ---------------------------------------------------------------------------
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _resize(B, h, axes, lens):
    """``h`` cropped or zero-padded (at the end) to ``lens`` along ``axes``."""
    shp = list(h.shape)
    for a, n in zip(axes, lens):
        shp[a] = n
    if tuple(shp) == h.shape:
        return h
    if any(q < p for p, q in zip(h.shape, shp)):
        h = B.view_index(h, tuple(slice(0, min(p, q), 1) for p, q in zip(h.shape, shp)))
    if any(q > p for p, q in zip(h.shape, shp)):
        h = B.pad(h, tuple((0, q - p) for p, q in zip(h.shape, shp)), 0)
    return h


def _fft_jvp(op):
    def jvp(B, ts, xs, out, s, axes, norm):
        return B.fft(op, ts[0], s, axes, norm)
    return jvp


def _in_lens(x, axes):
    return [x.shape[a] for a in axes]


def _cfft_vjp(op):
    # fft and ifft are symmetric matrices: the transpose is the same transform, then the input's
    # crop/zero-pad undone
    def vjp(B, g, xs, out, need, s, axes, norm):
        r = B.fft(op, g, s, axes, norm)
        return (_resize(B, r, axes, _in_lens(xs[0], axes)),)
    return vjp


def _rfft_T(B, g, in_lens, s, axes, norm):
    """Transpose of rfft(s, axes, norm) (real input of lengths ``in_lens``): Re(fft(pad(g)))."""
    last = axes[-1]
    z = _resize(B, g, (last,), (s[-1],))
    r = B.unary("real", B.fft("fft", z, s, axes, norm))
    return _resize(B, r, axes, in_lens)


def _irfft_T(B, g, in_lens, s, axes, norm):
    """Transpose of irfft(s, axes, norm) (complex input of lengths ``in_lens``)."""
    last = axes[-1]
    n = s[-1]
    h = n // 2 + 1
    c = B.unary("conj", B.fft("rfft", g, (n,), (last,), _SWAP[norm]))
    cd = B.dtype(c)
    wts = [1.0] + [2.0] * (h - 1)
    if n % 2 == 0:
        wts[-1] = 1.0
    wh = reshape(B, B.asarray(wts, cd, None)[0], (h,) + (1,) * (c.ndim - 1 - last))
    c = B.binary("mul", c, wh)
    if len(axes) > 1:
        c = B.fft("ifft", c, s[:-1], axes[:-1], norm)
    return _resize(B, c, axes, in_lens)


def _rfft_vjp(B, g, xs, out, need, s, axes, norm):
    return (_rfft_T(B, g, _in_lens(xs[0], axes), s, axes, norm),)


def _irfft_vjp(B, g, xs, out, need, s, axes, norm):
    return (_irfft_T(B, g, _in_lens(xs[0], axes), s, axes, norm),)


def _hfft_vjp(B, g, xs, out, need, s, axes, norm):
    # hfft(c) = irfft(conj(c)) with the norm swapped
    return (B.unary("conj", _irfft_T(B, g, _in_lens(xs[0], axes), s, axes, _SWAP[norm])),)


def _ihfft_vjp(B, g, xs, out, need, s, axes, norm):
    # ihfft(x) = conj(rfft(x)) with the norm swapped
    return (_rfft_T(B, B.unary("conj", g), _in_lens(xs[0], axes), s, axes, _SWAP[norm]),)


for _op, _vjp in (("fft", _cfft_vjp("fft")), ("ifft", _cfft_vjp("ifft")), ("rfft", _rfft_vjp),
                  ("irfft", _irfft_vjp), ("hfft", _hfft_vjp), ("ihfft", _ihfft_vjp)):
    prim(f"fft.{_op}", jvp=_fft_jvp(_op), vjp=_vjp)

__all__: list[Any] = []
