"""Sorting (seed section "sort"): stable, NaN last ascending and first descending.

Indices come back as int32, as in the seed's examples.  Equal elements keep
their original order in both directions (``-0.0`` and ``0.0`` are equal);
complex values sort lexicographically (real part, then imaginary part).
"""
from __future__ import annotations

from typing import Any

from . import _dtypes as D
from ._dtypes import DType
from ._tensor import Tensor, as_tensor, attach, wrap
from ._validate import normalize_axis

__all__ = ["sort", "argsort"]


def _prep(t: Any, axis: Any, descending: Any, fname: str) -> tuple[Tensor, int, bool]:
    t = as_tensor(t, fname)
    if t._dtype is D.object_:
        raise TypeError(f"{fname}: object tensors cannot be sorted")
    if t._data.ndim == 0:
        raise IndexError(f"{fname}: axis {axis} is out of bounds for a 0-d tensor (it has no axes)")
    a = normalize_axis(axis, t._data.ndim, fname)
    return t, a, bool(descending)


@attach()
def sort(t: Any, descending: bool = False, axis: int = -1) -> tuple[Tensor, Tensor]:
    """Sort along ``axis`` (the last by default); returns ``(values, indices)``.

    The sort is stable: equal elements keep their relative order (in both
    directions).  NaN sorts last ascending and first descending.

    Args:
        t: the tensor.
        descending: sort from largest to smallest.
        axis: the axis to sort along (negative counts from the end).
    Returns:
        ``(values, indices)``: the sorted tensor and int32 positions such that
        ``values`` is ``t`` gathered at ``indices`` along ``axis``.
    Raises:
        IndexError: if ``axis`` is out of range (a 0-d tensor has no axis).

    >>> import runetensor as rt
    >>> v, i = rt.sort(rt.create(rt.int32, [5], [3, 1, 4, 1, 5]))
    >>> print(v, i)
    [1, 1, 3, 4, 5] [1, 3, 0, 2, 4]
    >>> v, i = rt.sort(rt.create(rt.int32, [2, 2], [3, 1, 1, 4]), descending=True, axis=0)
    >>> print(v); print(i)
    [[3, 4],
     [1, 1]]
    [[0, 1],
     [1, 0]]
    >>> print(rt.sort(rt.create(rt.float32, [4], [float("nan"), 1., 2., float("nan")]))[0])
    [1, 2, nan, nan]
    """
    return _sort(t, axis, descending, "sort")


def _sort(t: Any, axis: Any, descending: Any, fname: str, index_dtype: DType = D.int32) -> tuple[Tensor, Tensor]:
    """The one sort (``rt.sort``, ``xp.sort``): ``(values, indices)``, indices of ``index_dtype``."""
    t, a, desc = _prep(t, axis, descending, fname)
    be = t._backend
    v, i = be.sort(t._data, a, desc)
    return wrap(v, t._dtype, be), wrap(be.cast(i, index_dtype), index_dtype, be)


@attach()
def argsort(t: Any, descending: bool = False, axis: int = -1) -> Tensor:
    """Indices that sort ``t`` along ``axis`` (stable; the second result of :func:`sort`).

    Args:
        t: the tensor.
        descending: sort from largest to smallest.
        axis: the axis to sort along (the last by default).
    Returns:
        An int32 tensor of ``t``'s shape.
    Raises:
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.argsort(rt.create(rt.int32, [5], [3, 1, 4, 1, 5])))
    [1, 3, 0, 2, 4]
    >>> print(rt.argsort(rt.create(rt.int32, [2, 3], [3, 1, 4, 2, 5, 0]), axis=1))
    [[1, 0, 2],
     [2, 0, 1]]
    """
    return _argsort(t, axis, descending, "argsort")


def _argsort(t: Any, axis: Any, descending: Any, fname: str, index_dtype: DType = D.int32) -> Tensor:
    """The one argsort (``rt.argsort``, ``xp.argsort``), indices of ``index_dtype``."""
    t, a, desc = _prep(t, axis, descending, fname)
    be = t._backend
    return wrap(be.cast(be.argsort(t._data, a, desc), index_dtype), index_dtype, be)


def _unique(x: Tensor, want_index: bool, want_inverse: bool, want_counts: bool) -> dict[str, Tensor]:
    """The sorted unique values of ``x`` (flattened), and optionally the index of each one's first
    occurrence (``indices``), each element's group (``inverse_indices``, ``x``'s shape) and the group
    sizes (``counts``), all int64.  One stable sort, then ``ne`` of neighbours, ``nonzero``,
    ``gather``, ``scan`` and ``scatter``: NaNs never compare equal (each is its own value, as the
    Array API standard requires); ``-0.0`` and ``0.0`` are one value.  array_api's ``unique_*``."""
    be = x._backend
    f = be.reshape(x._data, (x._data.size,))
    if f is None:
        f = be.reshape(be.copy(x._data), (x._data.size,))
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
