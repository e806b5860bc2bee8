"""Searching functions of the Array API standard: argmax argmin count_nonzero nonzero searchsorted where."""
from __future__ import annotations

from .. import _dtypes as D
from .. import _elementwise as E
from .. import _indexing as IX
from .. import _reduction as R
from .._tensor import Tensor, wrap
from ._common import PY_SCALARS, arr, axes_arg, cast, promote
from ._indexing import take
from .._tensor import common_backend

__all__ = ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"]


def _arg(x: Tensor, axis: int | None, keepdims: bool, op: str) -> Tensor:
    """``rt.argmax``/``rt.argmin``'s implementation, with the standard's int64 indices."""
    return R._arg(op, arr(x, op), axis, keepdims, op, index_dtype=D.int64)


def argmax(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first maximum along ``axis`` (of the flattened array if None); NaN counts as maximal.

    Returns:
        An int64 array.
    Raises:
        ValueError: for an empty array.

    >>> import runetensor.array_api as xp
    >>> print(xp.argmax(xp.asarray([[1, 9], [7, 3]]), axis=1))
    [1, 0]
    >>> print(xp.argmax(xp.asarray([1, 3, 3])))
    1
    """
    return _arg(x, axis, keepdims, "argmax")


def argmin(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first minimum along ``axis`` (of the flattened array if None); NaN counts as minimal.

    Raises:
        ValueError: for an empty array.

    >>> import runetensor.array_api as xp
    >>> print(xp.argmin(xp.asarray([[1, 9], [7, 3]]), axis=0))
    [0, 1]
    """
    return _arg(x, axis, keepdims, "argmin")


def count_nonzero(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
    """Number of non-zero elements along ``axis`` (all axes if None), as the default integer dtype.

    >>> import runetensor.array_api as xp
    >>> print(xp.count_nonzero(xp.asarray([[0, 1, 2], [0, 0, 3]]), axis=1))
    [2, 1]
    """
    x = arr(x, "count_nonzero")
    axes = axes_arg(axis, x.ndim, "count_nonzero")
    be = x._backend
    nz = be.binary("ne", x._data, False if x._dtype is D.bool else 0)
    return wrap(be.reduce("sum", be.cast(nz, D.default_int), axes, keepdims), D.default_int, be)


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """Indices of the non-zero elements: one int64 array per axis, in row-major order.

    Raises:
        ValueError: for a 0-d array (the standard does not allow it).

    >>> import runetensor.array_api as xp
    >>> r, c = xp.nonzero(xp.asarray([[0, 1], [2, 0]]))
    >>> print(r)
    [0, 1]
    >>> print(c)
    [1, 0]
    """
    x = arr(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: not defined for 0-d arrays; use xp.nonzero(xp.reshape(x, (1,)))")
    return IX._nonzero(x, D.int64)


def searchsorted(x1: Tensor, x2: Tensor | bool | int | float, /, *, side: str = "left",
                 sorter: Tensor | None = None) -> Tensor:
    """Indices where ``x2``'s elements would be inserted into the sorted 1-d ``x1`` to keep it sorted.

    Args:
        x1: 1-d array, sorted ascending (NaN last), unless ``sorter`` sorts it.
        x2: values to place (any shape; a Python scalar is accepted too).
        side: ``"left"`` (first suitable position) or ``"right"`` (last).
        sorter: int array of indices that sort ``x1``.
    Returns:
        An int64 array of ``x2``'s shape.
    Raises:
        ValueError: for a bad ``side``, ``x1`` not 1-d, or a ``sorter`` of the wrong shape.
        TypeError: for complex input.

    >>> import runetensor.array_api as xp
    >>> print(xp.searchsorted(xp.asarray([1, 2, 2, 3]), xp.asarray([2, 0, 5])))
    [1, 0, 4]
    >>> print(xp.searchsorted(xp.asarray([1, 2, 2, 3]), xp.asarray([2]), side="right"))
    [3]
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    x1 = arr(x1, "searchsorted")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-d, got shape {x1.shape}")
    be = x1._backend
    if sorter is not None:
        sorter = arr(sorter, "searchsorted")
        if sorter.shape != x1.shape or sorter._dtype.kind not in "iu":
            raise ValueError(f"searchsorted: sorter must be an integer array of shape {x1.shape}, "
                             f"got {sorter._dtype} of shape {sorter.shape}")
        x1 = take(x1, sorter)
    t2 = x2 if isinstance(x2, Tensor) else (arr(x2, "searchsorted") if not isinstance(x2, PY_SCALARS) else None)
    d = promote([x1, t2 if t2 is not None else x2], "searchsorted")
    if d.kind == "c":
        raise TypeError(f"searchsorted: complex numbers have no order ({d})")
    if t2 is not None:  # the highest transformation of the two (values under vmap/jvp)
        be = common_backend("searchsorted", x1, t2)
    h2 = cast(t2, d)._data if t2 is not None else be.full((), x2, d)
    return wrap(be.searchsorted(cast(x1, d)._data, h2, side), D.int64, be)


def where(condition: Tensor, x1: Tensor | bool | int | float | complex,
          x2: Tensor | bool | int | float | complex, /) -> Tensor:
    """Elements of ``x1`` where ``condition`` is true, else of ``x2`` (with broadcasting).

    ``x1`` and ``x2`` may be Python scalars (weakly typed); the result has their promoted dtype.

    Raises:
        TypeError: if ``condition`` is not a bool array.
        ValueError: if the shapes do not broadcast.

    >>> import runetensor.array_api as xp
    >>> print(xp.where(xp.asarray([True, False, True]), xp.asarray([1, 2, 3]), 0))
    [1, 0, 3]
    """
    c = arr(condition, "where")
    if c._dtype is not D.bool:
        raise TypeError(f"where: condition must be a bool array, got {c._dtype}")
    return E.where(c, x1, x2)
