"""Indexing functions of the Array API standard: take take_along_axis.

Adapters over ``runetensor._indexing`` (``rt.take`` with ``mode="raise"``, ``rt.take_along_axis``).
"""
from __future__ import annotations

from .. import _indexing as IX
from .._tensor import Tensor
from ._common import arr

__all__ = ["take", "take_along_axis"]


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
    return IX.take(x, indices, axis)



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
    return IX.take_along_axis(x, indices, axis)
