"""Indexing functions of the Array API standard: take take_along_axis."""
from __future__ import annotations

from typing import Any

from .. import _dtypes as D
from .._indexing import _full
from .._tensor import Tensor, wrap
from .._validate import broadcast_shapes, normalize_axis
from ._common import arr, index_range

__all__ = ["take", "take_along_axis"]


def _indices(idx: Any, n: int, fname: str) -> Any:
    """``idx`` as an int64 handle of in-range, non-negative indices (negative ones count from the end)."""
    idx = arr(idx, fname)
    if idx._dtype.kind not in "iu":
        raise TypeError(f"{fname}: indices must be an integer array, got {idx._dtype}")
    be = idx._backend
    h = be.cast(idx._data, D.int64) if idx._dtype is not D.int64 else idx._data
    if h.size:
        lo = be.reduce("min", h, tuple(range(h.ndim)), False)
        hi = be.reduce("max", h, tuple(range(h.ndim)), False)
        lo_v, hi_v = int(be.to_list(lo)), int(be.to_list(hi))
        if lo_v < -n or hi_v >= n:
            bad = lo_v if lo_v < -n else hi_v
            raise IndexError(f"{fname}: index {bad} is out of bounds for an axis of size {n} "
                             f"(expected {-n} <= index < {n})")
        if lo_v < 0:
            h = be.binary("pymod", h, n)
    return h


def take(x: Tensor, indices: Tensor, /, *, axis: int | None = None) -> Tensor:
    """Elements of ``x`` at ``indices`` along ``axis``.

    Args:
        x: the array; ``axis`` may be omitted only when it is 1-d.
        indices: 1-d integer array (negative indices count from the end).
        axis: the axis to index.
    Returns:
        An array like ``x`` with the axis's length replaced by ``len(indices)``.
    Raises:
        ValueError: if ``axis`` is None for an array of rank > 1.
        IndexError: for out-of-range indices or axis.
        TypeError: for non-integer indices.

    >>> import runetensor.array_api as xp
    >>> print(xp.take(xp.asarray([[1, 2, 3], [4, 5, 6]]), xp.asarray([2, 0]), axis=1))
    [[3, 1],
     [6, 4]]
    """
    x = arr(x, "take")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for arrays of rank != 1 (got shape {x.shape})")
        axis = 0
    ax = normalize_axis(axis, x.ndim, "take")
    h = _indices(indices, x._data.shape[ax], "take")
    key = list(_full(x._data.shape))
    key[ax] = h
    return wrap(x._backend.gather(x._data, tuple(key)), x._dtype, x._backend)


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """Pick elements of ``x`` along ``axis`` with an index array of the same rank.

    ``indices`` broadcasts against ``x`` on every other axis (NumPy's take_along_axis).

    Raises:
        ValueError: if ranks differ or shapes do not broadcast.
        IndexError: for out-of-range indices.

    >>> import runetensor.array_api as xp
    >>> x = xp.asarray([[10, 30, 20], [60, 40, 50]])
    >>> print(xp.take_along_axis(x, xp.argsort(x, axis=1), axis=1))
    [[10, 20, 30],
     [40, 50, 60]]
    """
    x = arr(x, "take_along_axis")
    idx = arr(indices, "take_along_axis")
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices has rank {idx.ndim}, expected x's rank {x.ndim}")
    ax = normalize_axis(axis, x.ndim, "take_along_axis")
    xs, ids = x._data.shape, idx._data.shape
    broadcast_shapes(xs[:ax] + xs[ax + 1:], ids[:ax] + ids[ax + 1:], fname="take_along_axis")
    h = _indices(idx, xs[ax], "take_along_axis")
    be = x._backend
    key = []
    for i, n in enumerate(xs):
        if i == ax:
            key.append(h)
        else:
            shp = [1] * x.ndim
            shp[i] = n
            key.append(be.reshape(index_range(be, n), tuple(shp)))
    return wrap(be.gather(x._data, tuple(key)), x._dtype, be)
