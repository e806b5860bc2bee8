"""Manipulation functions of the Array API standard.

Adapters over ``runetensor._views`` and ``runetensor._combine`` (the one implementation of each):
they convert the standard's signatures (``axis`` for ``axes``, ``*arrays``, ``copy=``, tensor
``repeats``) and call rt's functions.  Views are returned where the standard allows them and the
strides can express them (``broadcast_to``, ``expand_dims``, ``flip``, ``permute_dims``,
``moveaxis``, ``squeeze``, ``unstack``, ``reshape`` with ``copy=None``); ``concat``, ``stack``,
``repeat``, ``roll`` and ``tile`` return new arrays.
"""
from __future__ import annotations

from typing import Sequence

from .. import _combine as C
from .. import _views as V
from .._tensor import Tensor
from .._validate import normalize_axis
from ._common import arr, view

__all__ = ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
           "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"]


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """Broadcast arrays against each other (views with zero strides).

    Raises:
        ValueError: if the shapes are incompatible.

    >>> import runetensor.array_api as xp
    >>> a, b = xp.broadcast_arrays(xp.asarray([[1], [2]]), xp.asarray([3, 4, 5]))
    >>> a.shape, b.shape
    ((2, 3), (2, 3))
    """
    return C.broadcast_arrays(arrays) if arrays else []


def broadcast_to(x: Tensor, /, shape: Sequence[int]) -> Tensor:
    """A read-only-style view of ``x`` broadcast to ``shape``.

    Raises:
        ValueError: if ``x``'s shape does not broadcast to ``shape``.

    >>> import runetensor.array_api as xp
    >>> print(xp.broadcast_to(xp.asarray([1, 2]), (2, 2)))
    [[1, 2],
     [1, 2]]
    """
    return V.broadcast_to(x, shape)


def concat(arrays: Sequence[Tensor], /, *, axis: int | None = 0) -> Tensor:
    """Join arrays along an existing axis (``axis=None``: flatten them first).

    The result has the promoted dtype of the inputs.

    Raises:
        ValueError: for no arrays, or shapes that differ off the axis.
        IndexError: for an out-of-range axis.

    >>> import runetensor.array_api as xp
    >>> print(xp.concat([xp.asarray([[1, 2]]), xp.asarray([[3, 4]])], axis=0))
    [[1, 2],
     [3, 4]]
    >>> print(xp.concat([xp.asarray([[1, 2]]), xp.asarray([3])], axis=None))
    [1, 2, 3]
    """
    return C._concatenate(arrays, axis, "concat")


def stack(arrays: Sequence[Tensor], /, *, axis: int = 0) -> Tensor:
    """Join arrays of one shape along a new axis.

    Raises:
        ValueError: for no arrays or differing shapes.
        IndexError: for an out-of-range axis.

    >>> import runetensor.array_api as xp
    >>> print(xp.stack([xp.asarray([1, 2]), xp.asarray([3, 4])], axis=1))
    [[1, 3],
     [2, 4]]
    """
    return C._stack(arrays, axis, "stack")


def expand_dims(x: Tensor, /, axis: int | Sequence[int] = 0) -> Tensor:
    """A view of ``x`` with a new axis of size 1 at position ``axis`` (in the result).

    Also accepts a tuple of positions (as the 2025.12 revision).

    Raises:
        IndexError: if ``axis`` is outside ``[-x.ndim - 1, x.ndim]``.

    >>> import runetensor.array_api as xp
    >>> xp.expand_dims(xp.zeros((2, 3)), axis=-1).shape
    (2, 3, 1)
    """
    return V._unsqueeze(arr(x, "expand_dims"), axis, "expand_dims")


def flip(x: Tensor, /, *, axis: int | Sequence[int] | None = None) -> Tensor:
    """A view of ``x`` with the order of elements reversed along ``axis`` (all axes if None).

    >>> import runetensor.array_api as xp
    >>> print(xp.flip(xp.asarray([[1, 2], [3, 4]]), axis=1))
    [[2, 1],
     [4, 3]]
    """
    return V.flip(x, axis)


def permute_dims(x: Tensor, /, axes: Sequence[int]) -> Tensor:
    """A view of ``x`` with its axes permuted (negative axes count from the end).

    Raises:
        ValueError: if ``axes`` is not a permutation of ``x``'s axes.

    >>> import runetensor.array_api as xp
    >>> xp.permute_dims(xp.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return V.transpose(arr(x, "permute_dims"), axes)


def moveaxis(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int], /) -> Tensor:
    """A view of ``x`` with axes ``source`` moved to positions ``destination``.

    Raises:
        ValueError: if source and destination differ in length or repeat axes.

    >>> import runetensor.array_api as xp
    >>> xp.moveaxis(xp.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    return V.moveaxis(x, source, destination)


def reshape(x: Tensor, /, shape: Sequence[int], *, copy: bool | None = None) -> Tensor:
    """``x`` with a new shape (one entry may be -1: inferred).

    Args:
        copy: True always copies; False returns a view or raises ValueError;
            None returns a view when the strides allow it, else a copy.
    Raises:
        ValueError: if the sizes differ, more than one -1, or ``copy=False`` needs a copy.

    >>> import runetensor.array_api as xp
    >>> print(xp.reshape(xp.arange(6), (2, -1)))
    [[0, 1, 2],
     [3, 4, 5]]
    """
    return V._reshape(arr(x, "reshape"), shape, copy)


def squeeze(x: Tensor, /, axis: int | Sequence[int]) -> Tensor:
    """A view of ``x`` without the size-1 axes ``axis``.

    Raises:
        ValueError: if an axis in ``axis`` does not have size 1.
        IndexError: for an out-of-range axis.

    >>> import runetensor.array_api as xp
    >>> xp.squeeze(xp.zeros((1, 3, 1)), axis=(0, 2)).shape
    (3,)
    """
    return V.squeeze(x, axis)


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """Split ``x`` along ``axis`` into a tuple of views.

    Raises:
        ValueError: for a 0-d array.

    >>> import runetensor.array_api as xp
    >>> a, b = xp.unstack(xp.asarray([[1, 2], [3, 4]]), axis=1)
    >>> print(a)
    [1, 3]
    >>> print(b)
    [2, 4]
    """
    x = arr(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: expected an array of rank >= 1, got a 0-d array")
    ax = normalize_axis(axis, x.ndim, "unstack")
    return tuple(view(x, [slice(None)] * ax + [i]) for i in range(x._data.shape[ax]))


def repeat(x: Tensor, repeats: int | Tensor, /, *, axis: int | None = None) -> Tensor:
    """Repeat each element of ``x`` ``repeats`` times along ``axis`` (``x`` flattened if None).

    Args:
        repeats: an int, or a 1-d integer array with one count per element along the axis
            (or a single count, which is broadcast).
    Raises:
        ValueError: for negative counts or a count array of the wrong length.

    >>> import runetensor.array_api as xp
    >>> print(xp.repeat(xp.asarray([1, 2, 3]), 2))
    [1, 1, 2, 2, 3, 3]
    >>> print(xp.repeat(xp.asarray([[1, 2], [3, 4]]), xp.asarray([1, 2]), axis=0))
    [[1, 2],
     [3, 4],
     [3, 4]]
    """
    return C._repeat(arr(x, "repeat"), repeats, axis)


def roll(x: Tensor, /, shift: int | Sequence[int], *, axis: int | Sequence[int] | None = None) -> Tensor:
    """Shift elements cyclically along ``axis`` (``x`` flattened and restored if None).

    Raises:
        ValueError: if ``shift`` and ``axis`` sequences differ in length.

    >>> import runetensor.array_api as xp
    >>> print(xp.roll(xp.asarray([1, 2, 3, 4]), 1))
    [4, 1, 2, 3]
    >>> print(xp.roll(xp.asarray([[1, 2], [3, 4]]), -1, axis=1))
    [[2, 1],
     [4, 3]]
    """
    return C._roll(arr(x, "roll"), shift, axis, True)


def tile(x: Tensor, repetitions: Sequence[int], /) -> Tensor:
    """Repeat the whole of ``x`` ``repetitions[i]`` times along each axis.

    If ``repetitions`` is longer than ``x.ndim``, ``x`` gets leading axes of
    size 1; if shorter, it is padded with ones.

    Raises:
        ValueError: for negative repetitions.

    >>> import runetensor.array_api as xp
    >>> print(xp.tile(xp.asarray([1, 2]), (2, 2)))
    [[1, 2, 1, 2],
     [1, 2, 1, 2]]
    """
    return C.tile(x, repetitions)
