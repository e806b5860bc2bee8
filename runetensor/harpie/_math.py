"""harpie's math: ``uniform``, ``chol``, ``invtri``, ``inverse``.

``inverse`` goes beyond harpie (whose inverse only works for symmetric
positive-definite matrices): symmetric positive-definite matrices of order
<= 16 take harpie's own route (Cholesky, triangular inverses, product, so the
digits match harpie's), every other non-singular square matrix is inverted
by Gauss-Jordan elimination with partial pivoting; a singular matrix raises
``ValueError``.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

from .. import _dtypes as D
from .._tensor import Tensor, binary_op, wrap
from .._validate import alloc_error, check_alloc
from ._base import arr, cast, shape_arg
import runetensor as rt

__all__ = ["uniform", "chol", "invtri", "inverse"]

_range = builtins.range
_slice = builtins.slice
#: the largest order for which harpie's O(n^4) triangular-inverse series is used
SERIES_MAX = 16


def uniform(shape: Sequence[int], range: tuple[Any, Any], seed: int | None = None) -> Tensor:  # noqa: A002
    """harpie's ``uniform``: uniform random variates in ``[lo, hi]`` (integers) or ``[lo, hi)`` (floats).

    Uses runetensor's counter-based generator (``rt.randint``/``rt.rand``):
    the same ``seed`` gives the same array; ``seed=None`` a fresh one.  The
    values differ from Haskell's ``StdGen`` (a different generator).

    Args:
        shape: the dimensions.
        range: ``(lo, hi)``; ints give an int64 array including ``hi`` (as
            Haskell's ``uniformRM``), floats a float64 array.
        seed: the generator seed.
    Raises:
        ValueError: if ``lo > hi``, or the shape is beyond any buffer.
        MemoryError: naming ``uniform``, the shape and the dtype, if it cannot be allocated.

    >>> from runetensor import harpie as hp
    >>> u = hp.uniform([2, 3, 4], (0, 9), seed=42)
    >>> hp.shape(u), 0 <= min(hp.array_as(u)) and max(hp.array_as(u)) <= 9
    ([2, 3, 4], True)
    """
    shp = shape_arg(shape, "uniform")
    try:
        lo, hi = range
    except (TypeError, ValueError):
        raise TypeError(f"uniform: range must be a pair (lo, hi), got {range!r}") from None
    if isinstance(lo, builtins.int) and isinstance(hi, builtins.int) and not isinstance(lo, builtins.bool):
        if lo > hi:
            raise ValueError(f"uniform: range ({lo}, {hi}) is empty; expected lo <= hi")
        check_alloc(tuple(shp), D.int64, "uniform")  # sizes are reported as uniform's, not randint's
        try:
            return rt.randint(rt.int64, shp, lo, seed=seed, high=hi + 1)
        except MemoryError:
            raise alloc_error("uniform", tuple(shp), D.int64) from None
    try:
        lo, hi = builtins.float(lo), builtins.float(hi)
    except (TypeError, ValueError):
        raise TypeError(f"uniform: range must be a pair of numbers (lo, hi), got {range!r}") from None
    if not lo <= hi:  # NaN too
        raise ValueError(f"uniform: range ({lo}, {hi}) is empty; expected lo <= hi")
    check_alloc(tuple(shp), D.float64, "uniform")
    try:
        u = rt.rand(rt.float64, shp, seed=seed)
        return binary_op("add", binary_op("mul", u, hi - lo, "uniform"), lo, "uniform")
    except MemoryError:
        raise alloc_error("uniform", tuple(shp), D.float64) from None


def _square(a: Any, fname: str) -> Tensor:
    t = arr(a, fname)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"{fname}: expected a square matrix, got shape {list(t.shape)}")
    if t._dtype.kind == "O":
        raise TypeError(f"{fname}: expected a numeric matrix, got {t._dtype}")
    if t._dtype.kind in "biu" or t._dtype.is_low_precision:
        t = cast(t, D.float64 if t._dtype.kind in "biu" else D.float32)
    return t


def _scalar(be: Any, h: Any) -> Any:
    return be.to_list(h)


def chol(a: Any) -> Tensor:
    """harpie's ``chol``: the lower-triangular Cholesky factor ``L`` with ``L @ L.T == a`` (Cholesky-Crout).

    Reads the lower triangle of ``a``.  Integer input computes in float64.

    Raises:
        ValueError: if ``a`` is not square or not positive definite.

    >>> from runetensor import harpie as hp
    >>> e = hp.array([3, 3], [4., 12, -16, 12, 37, -43, -16, -43, 98])
    >>> print(hp.pretty(hp.chol(e)))
    [[2.0,0.0,0.0],
     [6.0,1.0,0.0],
     [-8.0,5.0,3.0]]
    """
    t = _square(a, "chol")
    r = _chol(t)
    if r is None:
        raise ValueError("chol: the matrix is not positive definite")
    return r


def _chol(t: Tensor) -> Tensor | None:
    be = t._backend
    n = t.shape[0]
    d = t._dtype
    A = t._data
    L = be.full((n, n), 0, d)
    for j in _range(n):
        lj = be.view_index(L, (j, _slice(0, j, 1)))
        s = be.binary("sub", be.view_index(A, (j, j)), be.matmul(lj, lj) if j else 0)
        sv = _scalar(be, s)
        if d.is_complex:
            if not sv.real > 0:
                return None
        elif not sv > 0:
            return None
        ljj = be.unary("sqrt", s)
        be.assign(be.view_index(L, (j, j)), ljj)
        if j + 1 < n:
            col = be.view_index(A, (_slice(j + 1, n, 1), j))
            if j:
                col = be.binary("sub", col, be.matmul(be.view_index(L, (_slice(j + 1, n, 1), _slice(0, j, 1))), lj))
            rec = be.binary("div", be.full((), 1, d), ljj)
            be.assign(be.view_index(L, (_slice(j + 1, n, 1), j)), be.binary("mul", rec, col))
    return wrap(L, d, be)


def _is_triangular(t: Tensor) -> bool:
    be = t._backend
    n = t.shape[0]
    h = t._data
    lower = upper = True
    for i in _range(n - 1):
        above = be.view_index(h, (i, _slice(i + 1, n, 1)))
        below = be.view_index(h, (_slice(i + 1, n, 1), i))
        if lower and _scalar(be, be.reduce("any", above, (0,), False)):
            lower = False
        if upper and _scalar(be, be.reduce("any", below, (0,), False)):
            upper = False
        if not (lower or upper):
            return False
    return True


def invtri(a: Any) -> Tensor:
    """harpie's ``invtri``: the inverse of a (lower or upper) triangular matrix.

    Up to order 16 this is harpie's series ``(I + L + ... + L^(n-1)) @ D^-1``
    (``L = -D^-1 @ offdiag``, exact because ``L`` is nilpotent), so the digits
    match harpie; larger matrices use Gauss-Jordan elimination.

    Raises:
        ValueError: if ``a`` is not square and triangular, or has a zero on its diagonal.

    >>> from runetensor import harpie as hp
    >>> t = hp.array([3, 3], [1., 0, 1, 0, 1, 2, 0, 0, 1])
    >>> print(hp.pretty(hp.invtri(t)))
    [[1.0,0.0,-1.0],
     [0.0,1.0,-2.0],
     [0.0,0.0,1.0]]
    """
    t = _square(a, "invtri")
    if not _is_triangular(t):
        raise ValueError("invtri: expected a triangular matrix (all zeros above or below the diagonal)")
    be = t._backend
    n = t.shape[0]
    dg = be.as_strided(t._data, (n,), (builtins.sum(be.strides(t._data)),), be.offset(t._data))
    if n and _scalar(be, be.reduce("any", be.binary("eq", dg, 0), (0,), False)):
        raise ValueError("invtri: the matrix has a zero on its diagonal (it is singular)")
    if n > SERIES_MAX:
        return _gauss_jordan(t, "invtri")
    d = t._dtype
    idx = be.arange(0, n, 1, D.int64)
    ti = be.full((n, n), 0, d)
    be.scatter(ti, (idx, idx), be.binary("div", be.full((n,), 1, d), dg))
    tl = be.copy(t._data)
    be.scatter(tl, (idx, idx), 0)
    ln = be.unary("neg", be.matmul(ti, tl))
    acc = be.full((n, n), 0, d)
    p = be.full((n, n), 0, d)
    be.scatter(p, (idx, idx), 1)
    for _ in _range(n):
        acc = be.binary("add", acc, p)
        p = be.matmul(ln, p)
    return wrap(be.matmul(acc, ti), d, be)


def _eps(d: D.DType) -> float:
    return 2.0 ** -52 if d.real_dtype is D.float64 else 2.0 ** -23


def _gauss_jordan(t: Tensor, fname: str) -> Tensor:
    be = t._backend
    n = t.shape[0]
    d = t._dtype
    M = be.full((n, 2 * n), 0, d)
    if n == 0:
        return wrap(be.view_index(M, (_slice(0, 0, 1), _slice(0, 0, 1))), d, be)
    # equilibrate: scale every row to max |a_ij| = 1, so the pivot test is scale-free
    rs = be.reduce("max", be.unary("abs", t._data), (1,), False)
    if not _scalar(be, be.reduce("all", be.unary("isfinite", t._data), (0, 1), False)):
        raise ValueError(f"{fname}: the matrix has non-finite entries")
    if not _scalar(be, be.reduce("all", be.binary("gt", rs, 0), (0,), False)):
        raise ValueError(f"{fname}: the matrix is singular (it has a zero row)")
    rs = be.cast(rs, d) if d.is_complex else rs
    be.assign(be.view_index(M, (_slice(0, n, 1), _slice(0, n, 1))),
              be.binary("div", t._data, be.reshape(rs, (n, 1))))
    idx = be.arange(0, n, 1, D.int64)
    be.scatter(M, (idx, be.binary("add", idx, n)), 1)
    tol = n * _eps(d)
    for c in _range(n):
        col = be.unary("abs", be.view_index(M, (_slice(c, n, 1), c)))
        p = c + int(_scalar(be, be.arg_reduce("argmax", col, 0, False)))
        piv = _scalar(be, be.view_index(col, (p - c,)))
        if not piv > tol:
            raise ValueError(f"{fname}: the matrix is singular (pivot {piv!r} in column {c} of the "
                             f"row-equilibrated matrix is below the tolerance {tol:.3g}); it has no inverse")
        if p != c:
            rows = be.gather(M, (as_idx(be, [p, c]), _slice(0, 2 * n, 1)))
            be.assign(be.view_index(M, (_slice(c, p + 1, p - c), _slice(0, 2 * n, 1))), rows)
        rc = be.view_index(M, (c, _slice(0, 2 * n, 1)))
        be.assign(rc, be.binary("div", be.copy(rc), be.copy(be.view_index(M, (c, c)))))
        f = be.copy(be.view_index(M, (_slice(0, n, 1), c)))
        be.scatter(f, (c,), 0)
        upd = be.binary("mul", be.reshape(f, (n, 1)), be.reshape(be.copy(rc), (1, 2 * n)))
        be.assign(M, be.binary("sub", M, upd))
    # (D^-1 A)^-1 = A^-1 D, so A^-1 = that with column j divided by row scale j
    out = be.binary("div", be.view_index(M, (_slice(0, n, 1), _slice(n, 2 * n, 1))), be.reshape(rs, (1, n)))
    fin = be.reduce("all", be.unary("isfinite", out), (0, 1), False)
    if not _scalar(be, fin):
        raise ValueError(f"{fname}: the matrix is too ill-conditioned to invert (non-finite result)")
    return wrap(out, d, be)


def as_idx(be: Any, xs: list[int]) -> Any:
    h = be.empty((len(xs),), D.int64)
    for i, x in enumerate(xs):
        be.scatter(h, (i,), x)
    return h


def _symmetric(t: Tensor) -> bool:
    be = t._backend
    h = t._data
    e = be.binary("eq", h, be.permute(h, (1, 0)))
    return builtins.bool(_scalar(be, be.reduce("all", e, (0, 1), False))) if t.size else True


def inverse(a: Any) -> Tensor:
    """The inverse of a non-singular square matrix (harpie's ``inverse``, generalised).

    Symmetric positive-definite matrices up to order 16 follow harpie
    (``invtri(chol(a).T) @ invtri(chol(a))``), reproducing its digits; all
    other matrices use Gauss-Jordan elimination with partial pivoting.
    Integer input computes in float64.

    Raises:
        ValueError: if ``a`` is not square, or is singular (after scaling every
            row to a largest entry of 1, a pivot below ``n * eps``).

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.inverse(hp.array([2, 2], [0., 1, 2, 0]))))
    [[0.0,0.5],
     [1.0,0.0]]
    """
    t = _square(a, "inverse")
    n = t.shape[0]
    if t._dtype.is_float and 0 < n <= SERIES_MAX and _symmetric(t):
        L = _chol(t)
        if L is not None:
            be = t._backend
            lt = wrap(be.permute(L._data, (1, 0)), L._dtype, be)
            x = invtri(lt)
            y = invtri(L)
            r = be.matmul(x._data, y._data)
            fin = be.reduce("all", be.unary("isfinite", r), (0, 1), False)
            if _scalar(be, fin):
                return wrap(r, t._dtype, be)
    return _gauss_jordan(t, "inverse")

