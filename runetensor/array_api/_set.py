"""Set functions of the Array API standard: unique_all unique_counts unique_inverse unique_values.

Values come back sorted.  As the standard requires, NaNs never compare equal,
so each NaN is its own unique value (with a count of 1); ``-0.0`` and ``0.0``
are one value.  The algorithm is ``runetensor._sorting._unique``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import _sorting as S
from .._tensor import Tensor
from ._common import arr

__all__ = ["unique_all", "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _unique(x: Any, fname: str, want_index: bool, want_inverse: bool, want_counts: bool) -> dict[str, Tensor]:
    return S._unique(arr(x, fname), want_index, want_inverse, want_counts)


def unique_values(x: Tensor, /) -> Tensor:
    """The sorted unique elements of ``x`` (flattened).

    >>> import runetensor.array_api as xp
    >>> print(xp.unique_values(xp.asarray([[3, 1], [3, 2]])))
    [1, 2, 3]
    >>> print(xp.unique_values(xp.asarray([float('nan'), 1.0, float('nan')])))
    [1, nan, nan]
    """
    return _unique(x, "unique_values", False, False, False)["values"]


def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """The sorted unique elements of ``x`` and how often each occurs (int64).

    >>> import runetensor.array_api as xp
    >>> v, c = xp.unique_counts(xp.asarray([2, 1, 2, 2]))
    >>> print(v)
    [1, 2]
    >>> print(c)
    [1, 3]
    """
    r = _unique(x, "unique_counts", False, False, True)
    return UniqueCountsResult(r["values"], r["counts"])


def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """The sorted unique elements and, for each element of ``x``, the index of its value (``x``'s shape).

    ``values[inverse_indices]`` rebuilds ``x`` (NaNs aside).

    >>> import runetensor.array_api as xp
    >>> v, inv = xp.unique_inverse(xp.asarray([[5, 3], [5, 4]]))
    >>> print(v)
    [3, 4, 5]
    >>> print(inv)
    [[2, 0],
     [2, 1]]
    """
    r = _unique(x, "unique_inverse", False, True, False)
    return UniqueInverseResult(r["values"], r["inverse_indices"])


def unique_all(x: Tensor, /) -> UniqueAllResult:
    """Unique values, the flat index of each one's first occurrence, the inverse indices and the counts.

    >>> import runetensor.array_api as xp
    >>> r = xp.unique_all(xp.asarray([4, 2, 4, 1]))
    >>> print(r.values)
    [1, 2, 4]
    >>> print(r.indices)
    [3, 1, 0]
    >>> print(r.inverse_indices)
    [2, 1, 2, 0]
    >>> print(r.counts)
    [1, 1, 2]
    """
    r = _unique(x, "unique_all", True, True, True)
    return UniqueAllResult(r["values"], r["indices"], r["inverse_indices"], r["counts"])
