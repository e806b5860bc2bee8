"""Set functions of the Array API standard: unique_all unique_counts unique_inverse unique_values.

Values come back sorted.  As the standard requires, NaNs never compare equal,
so each NaN is its own unique value (with a count of 1); ``-0.0`` and ``0.0``
are one value.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import _dtypes as D
from .._tensor import Tensor, wrap
from ._common import arr, flat

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
    x = arr(x, fname)
    be = x._backend
    f = flat(x)._data
    n = f.size
    vals, perm = be.sort(f, 0, False)
    mask = be.empty((n,), D.bool)
    if n:
        be.assign(be.view_index(mask, (slice(0, 1, 1),)), True)
        if n > 1:
            a = be.view_index(vals, (slice(1, n, 1),))
            b = be.view_index(vals, (slice(0, n - 1, 1),))
            be.assign(be.view_index(mask, (slice(1, n, 1),)), be.binary("ne", a, b))
    (starts,) = be.nonzero(mask)
    out = {"values": wrap(be.gather(vals, (starts,)), x._dtype, be)}
    if want_index:
        out["indices"] = wrap(be.gather(perm, (starts,)), D.int64, be)
    if want_counts:
        k = starts.size
        ends = be.empty((k,), D.int64)
        if k:
            be.assign(be.view_index(ends, (slice(0, k - 1, 1),)), be.view_index(starts, (slice(1, k, 1),)))
            be.assign(be.view_index(ends, (k - 1,)), n)
        out["counts"] = wrap(be.binary("sub", ends, starts), D.int64, be)
    if want_inverse:
        group = be.binary("sub", be.scan("cumsum", be.cast(mask, D.int64), 0), 1)
        inv = be.empty((n,), D.int64)
        if n:
            be.scatter(inv, (perm,), group)
        out["inverse_indices"] = wrap(be.reshape(inv, x._data.shape), D.int64, be)
    return out


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
