"""Sorting functions of the Array API standard: sort argsort."""
from __future__ import annotations

from .. import _dtypes as D
from .._tensor import Tensor, wrap
from .._validate import normalize_axis
from ._common import arr

__all__ = ["argsort", "sort"]


def _check(x: Tensor, axis: int, fname: str) -> tuple[Tensor, int]:
    x = arr(x, fname)
    if x._dtype.kind == "c":
        raise TypeError(f"{fname}: complex numbers have no order ({x._dtype})")
    if x.ndim == 0:
        raise ValueError(f"{fname}: expected an array of rank >= 1, got a 0-d array")
    return x, normalize_axis(axis, x.ndim, fname)


def sort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """A sorted copy of ``x`` along ``axis`` (NaN last ascending, first descending).

    The sort is always stable (``stable=False`` is accepted and also stable).

    Raises:
        TypeError: for complex input.
        ValueError: for a 0-d array.

    >>> import runetensor.array_api as xp
    >>> print(xp.sort(xp.asarray([3.0, float('nan'), 1.0, 2.0])))
    [1, 2, 3, nan]
    >>> print(xp.sort(xp.asarray([[3, 1], [2, 4]]), axis=0, descending=True))
    [[3, 4],
     [2, 1]]
    """
    x, ax = _check(x, axis, "sort")
    vals, _ = x._backend.sort(x._data, ax, bool(descending))
    return wrap(vals, x._dtype, x._backend)


def argsort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """Indices (int64) that sort ``x`` along ``axis``; ties keep their order (stable), also when descending.

    Raises:
        TypeError: for complex input.
        ValueError: for a 0-d array.

    >>> import runetensor.array_api as xp
    >>> print(xp.argsort(xp.asarray([2, 1, 2, 0])))
    [3, 1, 0, 2]
    >>> print(xp.argsort(xp.asarray([2, 1, 2, 0]), descending=True))
    [0, 2, 1, 3]
    """
    x, ax = _check(x, axis, "argsort")
    return wrap(x._backend.argsort(x._data, ax, bool(descending)), D.int64, x._backend)
