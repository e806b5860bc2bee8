"""The ``linalg`` extension of the Array API standard (``runetensor.array_api.linalg``).

Every function is batched over leading axes and calls the main namespace's
linear algebra (``rt.cholesky``, ``rt.svd``, ``rt.norm``...), adapting
arguments, defaults and results to the standard: ``svd`` defaults to
``full_matrices=True``; ``eigh``, ``qr``, ``slogdet`` and ``svd`` return named
tuples; ``matrix_rank`` always returns an array; ``trace`` accumulates integers
in int64.  A numerical failure raises :class:`runetensor.LinAlgError`.

>>> import runetensor.array_api as xp
>>> a = xp.asarray([[4.0, 2.0], [2.0, 3.0]])
>>> print(xp.linalg.det(a))
8
>>> print(xp.linalg.eigh(a).eigenvalues)
[1.43845, 5.56155]
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import runetensor as rt  # the public namespace (imported first: this module loads after it)

from .. import _dtypes as D
from .._tensor import Tensor, wrap
from ._common import arr, cast, dtype_arg, sum_dtype
from ._linear import matmul, matrix_transpose, tensordot, vecdot
from .._validate import normalize_axis
from ._common import axes_arg

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
           "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
           "EighResult", "QRResult", "SlogdetResult", "SVDResult"]


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def _matrices(x: Any, fname: str, square: bool = False) -> Tensor:
    x = arr(x, fname)
    if x.ndim < 2:
        raise ValueError(f"{fname}: expected an array of rank >= 2, got shape {x.shape}")
    if square and x._data.shape[-1] != x._data.shape[-2]:
        raise ValueError(f"{fname}: expected square matrices, got shape {x.shape}")
    return x


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """Cholesky factor of Hermitian positive-definite matrices (lower ``L``, or upper ``U`` if ``upper``).

    Raises:
        ValueError: for non-square matrices.
        LinAlgError: if a matrix is not positive definite.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.cholesky(xp.asarray([[4.0, 2.0], [2.0, 5.0]])))
    [[2, 0],
     [1, 2]]
    """
    return rt.cholesky(_matrices(x, "cholesky", True), upper=bool(upper))


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``axis`` (other axes broadcast).

    Raises:
        ValueError: if the axis does not have size 3 in both arrays.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.cross(xp.asarray([1, 0, 0]), xp.asarray([0, 1, 0])))
    [0, 0, 1]
    """
    a = arr(x1, "cross")
    b = arr(x2, "cross")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("cross: expected arrays of rank >= 1")
    for t in (a, b):
        ax = normalize_axis(axis, t.ndim, "cross")
        if t._data.shape[ax] != 3:
            raise ValueError(f"cross: axis {axis} must have size 3, got shape {t.shape}")
    return rt.cross(a, b, axis=axis)


def det(x: Tensor, /) -> Tensor:
    """Determinant of square matrices (shape ``x.shape[:-2]``).

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.det(xp.asarray([[1.0, 2.0], [3.0, 4.0]])))
    -2
    """
    return rt.det(_matrices(x, "det", True))


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonal of each matrix (a view; shape ``x.shape[:-2] + (k,)``).

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.diagonal(xp.asarray([[1, 2], [3, 4]]), offset=1))
    [2]
    """
    x = _matrices(x, "diagonal")
    return rt.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices, as ``EighResult``.

    >>> import runetensor.array_api as xp
    >>> w, v = xp.linalg.eigh(xp.asarray([[2.0, 1.0], [1.0, 2.0]]))
    >>> print(w)
    [1, 3]
    """
    w, v = rt.eigh(_matrices(x, "eigh", True))
    return EighResult(w, v)


def eigvalsh(x: Tensor, /) -> Tensor:
    """Eigenvalues (ascending, real) of Hermitian matrices.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.eigvalsh(xp.asarray([[2.0, 1.0], [1.0, 2.0]])))
    [1, 3]
    """
    return rt.eigvalsh(_matrices(x, "eigvalsh", True))


def inv(x: Tensor, /) -> Tensor:
    """Inverse of square matrices.

    Raises:
        LinAlgError: for a singular matrix.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.inv(xp.asarray([[2.0, 0.0], [0.0, 4.0]])))
    [[0.5, 0],
     [0, 0.25]]
    """
    return rt.inv(_matrices(x, "inv", True))


def matrix_norm(x: Tensor, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:  # noqa: A002
    """Matrix norm over the last two axes: ``ord`` in ``'fro' 'nuc' 1 -1 2 -2 inf -inf``.

    Raises:
        ValueError: for an unknown ``ord``.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.matrix_norm(xp.asarray([[1.0, -2.0], [3.0, 4.0]]), ord=xp.inf))
    7
    """
    x = _matrices(x, "matrix_norm")
    if ord not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {ord!r}")
    return rt.norm(x, ord=ord, axes=(-2, -1), keepdims=bool(keepdims))


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """``x`` multiplied by itself ``n`` times (``n = 0``: identity, ``n < 0``: powers of the inverse).

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.matrix_power(xp.asarray([[1, 1], [1, 0]]), 5))
    [[8, 5],
     [5, 3]]
    """
    return rt.matrix_power(_matrices(x, "matrix_power", True), n)


def _rtol_handle(rtol: Any, x: Tensor, rd: Any, fname: str) -> Any:
    """``rtol`` as a handle broadcastable against the batch shape plus a trailing 1."""
    be = x._backend
    m, n = x._data.shape[-2:]
    if rtol is None:
        eps = 2.0 ** -23 if rd is D.float32 else 2.0 ** -52
        return be.full((), max(m, n) * eps, rd)
    if isinstance(rtol, Tensor):
        h = cast(rtol, rd)._data
        return be.reshape(be.contiguous(h), h.shape + (1,))
    return be.full((), float(rtol), rd)


def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """Rank of each matrix: singular values above ``rtol * largest`` (default ``max(M, N) * eps``).

    ``rtol`` may be an array broadcast against the batch shape.  Returns an
    int64 array of shape ``x.shape[:-2]``.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.matrix_rank(xp.asarray([[1.0, 2.0], [2.0, 4.0]])))
    1
    """
    x = _matrices(x, "matrix_rank")
    be = x._backend
    m, n = x._data.shape[-2:]
    if m == 0 or n == 0:
        return wrap(be.full(x._data.shape[:-2], 0, D.int64), D.int64, be)
    sv = rt.svdvals(x)
    rd = sv._dtype
    smax = be.reduce("max", sv._data, (sv.ndim - 1,), True)
    thr = be.binary("mul", smax, _rtol_handle(rtol, x, rd, "matrix_rank"))
    cnt = be.reduce("sum", be.cast(be.binary("gt", sv._data, thr), D.int64), (sv.ndim - 1,), False)
    return wrap(cnt, D.int64, be)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """Outer product of two 1-d arrays.

    Raises:
        ValueError: if either input is not 1-d.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.outer(xp.asarray([1, 2]), xp.asarray([1, 10])))
    [[1, 10],
     [2, 20]]
    """
    a = arr(x1, "outer")
    b = arr(x2, "outer")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer: expected 1-d arrays, got shapes {a.shape} and {b.shape}")
    return rt.outer(a, b)


def pinv(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """Moore-Penrose pseudo-inverse; singular values below ``rtol * largest`` count as zero.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.pinv(xp.asarray([[1.0, 1.0]])))
    [[0.5],
     [0.5]]
    """
    x = _matrices(x, "pinv")
    if isinstance(rtol, Tensor):
        if rtol.ndim == 0:
            rtol = float(rtol)
        else:
            u, s, vh = rt.svd(x, full_matrices=False)
            be = x._backend
            rd = s._dtype
            smax = be.reduce("max", s._data, (s.ndim - 1,), True)
            thr = be.binary("mul", smax, _rtol_handle(rtol, x, rd, "pinv"))
            keep = be.binary("gt", s._data, thr)
            sinv = be.where(keep, be.unary("recip", be.where(keep, s._data, be.full((), 1, rd))),
                            be.full((), 0, rd))
            d = u._dtype
            uh = matrix_transpose(wrap(be.unary("conj", u._data), d, be))
            v = matrix_transpose(wrap(be.unary("conj", vh._data), d, be))
            shp = sinv.shape + (1,)
            scaled = be.binary("mul", be.cast(be.reshape(sinv, shp), d), be.contiguous(uh._data))
            return wrap(be.matmul(v._data, scaled), d, be)
    return rt.pinv(x, rtol=rtol)


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """QR decomposition as ``QRResult(Q, R)``; ``mode`` is ``"reduced"`` or ``"complete"``.

    >>> import runetensor.array_api as xp
    >>> q, r = xp.linalg.qr(xp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    """
    q, r = rt.qr(_matrices(x, "qr"), mode=mode)
    return QRResult(q, r)


def slogdet(x: Tensor, /) -> SlogdetResult:
    """Sign and log of the absolute determinant, as ``SlogdetResult(sign, logabsdet)``.

    >>> import runetensor.array_api as xp
    >>> r = xp.linalg.slogdet(xp.asarray([[2.0, 0.0], [0.0, -3.0]]))
    >>> print(r.sign)
    -1
    >>> print(r.logabsdet)
    1.79176
    """
    s, la = rt.slogdet(_matrices(x, "slogdet", True))
    return SlogdetResult(s, la)


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """Solution ``x`` of ``x1 @ x = x2`` (``x2`` of shape ``(M,)`` is one vector; batch axes broadcast).

    Raises:
        LinAlgError: for a singular ``x1``.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.solve(xp.asarray([[2.0, 0.0], [0.0, 4.0]]), xp.asarray([2.0, 2.0])))
    [1, 0.5]
    """
    a = _matrices(x1, "solve", True)
    return rt.solve(a, arr(x2, "solve"))


def svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition ``x = U @ diag(S) @ Vh`` as ``SVDResult(U, S, Vh)``, S descending.

    >>> import runetensor.array_api as xp
    >>> u, s, vh = xp.linalg.svd(xp.asarray([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]]))
    >>> u.shape, vh.shape
    ((3, 3), (2, 2))
    >>> print(s)
    [3, 2]
    """
    u, s, vh = rt.svd(_matrices(x, "svd"), full_matrices=bool(full_matrices))
    return SVDResult(u, s, vh)


def svdvals(x: Tensor, /) -> Tensor:
    """Singular values, descending.

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.svdvals(xp.asarray([[0.0, 2.0], [1.0, 0.0]])))
    [2, 1]
    """
    return rt.svdvals(_matrices(x, "svdvals"))


def trace(x: Tensor, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """Sum of the ``offset``-th diagonal of each matrix; integers accumulate in int64 (uint64 if unsigned).

    >>> import runetensor.array_api as xp
    >>> t = xp.linalg.trace(xp.asarray([[1, 2], [3, 4]], dtype=xp.int8))
    >>> print(t)
    5
    >>> t.dtype
    rt.int64
    """
    x = _matrices(x, "trace")
    d = dtype_arg(dtype, "trace") or sum_dtype(x._dtype)
    return rt.trace(cast(x, d), offset=offset)


def vector_norm(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: int | float = 2) -> Tensor:  # noqa: A002
    """Vector p-norm over ``axis`` (all axes if None; several axes are treated as one flattened vector).

    ``ord`` is any number, ``inf`` or ``-inf`` (0 counts non-zeros).

    >>> import runetensor.array_api as xp
    >>> print(xp.linalg.vector_norm(xp.asarray([[3.0, 4.0], [6.0, 8.0]]), axis=1))
    [5, 10]
    >>> print(xp.linalg.vector_norm(xp.asarray([[3.0, -4.0]]), ord=1))
    7
    """
    x = arr(x, "vector_norm")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"vector_norm: ord must be a number, got {type(ord).__name__} {ord!r}")
    axes = axes_arg(axis, x.ndim, "vector_norm")
    be = x._backend
    shape = x._data.shape
    rest = tuple(i for i in range(x.ndim) if i not in axes)
    n = 1
    for a in axes:
        n *= shape[a]
    h = be.permute(x._data, rest + axes)
    flat_shape = tuple(shape[i] for i in rest) + (n,)
    h2 = be.reshape(h, flat_shape)
    if h2 is None:
        h2 = be.reshape(be.copy(h), flat_shape)
    r = rt.norm(wrap(h2, x._dtype, be), ord=ord, axes=[-1])
    if keepdims:
        kept = tuple(1 if i in axes else s for i, s in enumerate(shape))
        r = wrap(be.reshape(be.contiguous(r._data), kept), r._dtype, be)
    return r

# the __future__ import binds the name ``annotations``: not part of this namespace
del annotations
