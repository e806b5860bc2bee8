"""Sorting functions of the Array API standard: sort argsort."""
from __future__ import annotations

from .. import _dtypes as D
from .. import _sorting as S
from .._tensor import Tensor
from ._common import arr

__all__ = ["argsort", "sort"]


def _check(x: Tensor, fname: str) -> Tensor:
    """The standard's rules before ``rt``'s sort (which orders complex numbers lexicographically and
    says IndexError for a 0-d tensor): complex is a TypeError, 0-d a ValueError."""
    x = arr(x, fname)
    if x._dtype.kind == "c":
        raise TypeError(f"{fname}: complex numbers have no order ({x._dtype})")
    if x.ndim == 0:
        raise ValueError(f"{fname}: expected an array of rank >= 1, got a 0-d array")
    return x


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
    return S._sort(_check(x, "sort"), axis, descending, "sort", D.int64)[0]


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
    return S._argsort(_check(x, "argsort"), axis, descending, "argsort", D.int64)
