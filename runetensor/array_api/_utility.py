"""Utility functions of the Array API standard: all any diff."""
from __future__ import annotations

from .. import _dtypes as D
from .. import _reduction as R
from .._tensor import Tensor, binary_op, wrap
from .._validate import as_int, normalize_axis
from ._common import arr, view
from ._manipulation import concat

__all__ = ["all", "any", "diff"]


def all(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element along ``axis`` (all axes if None) is true / non-zero (NaN counts as true).

    >>> import runetensor.array_api as xp
    >>> print(xp.all(xp.asarray([[True, False], [True, True]]), axis=1))
    [false, true]
    """
    return R._reduce("all", arr(x, "all"), axis, keepdims, "all")


def any(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether some element along ``axis`` (all axes if None) is true / non-zero.

    >>> import runetensor.array_api as xp
    >>> print(xp.any(xp.asarray([[0, 0], [0, 3]]), axis=0))
    [false, true]
    """
    return R._reduce("any", arr(x, "any"), axis, keepdims, "any")


def diff(x: Tensor, /, *, axis: int = -1, n: int = 1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference ``x[i+1] - x[i]`` along ``axis``.

    Args:
        prepend, append: arrays joined to ``x`` along the axis before differencing
            (their other dimensions must match ``x``'s).
        n: how many times to difference (>= 0).
    Returns:
        An array whose axis is ``n`` shorter (bool input gives ``x[i+1] != x[i]``).
    Raises:
        ValueError: for a 0-d array or negative ``n``.

    >>> import runetensor.array_api as xp
    >>> print(xp.diff(xp.asarray([1, 4, 9, 16])))
    [3, 5, 7]
    >>> print(xp.diff(xp.asarray([1, 4, 9, 16]), n=2))
    [2, 2]
    """
    x = arr(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff: expected an array of rank >= 1, got a 0-d array")
    n = as_int(n, "diff", "n")
    if n < 0:
        raise ValueError(f"diff: n must be >= 0, got {n}")
    ax = normalize_axis(axis, x.ndim, "diff")
    if prepend is not None or append is not None:
        parts = [p for p in (prepend, x, append) if p is not None]
        x = concat([arr(p, "diff") for p in parts], axis=ax)
    for _ in range(n):
        m = x._data.shape[ax]
        if m == 0:
            break
        hi = view(x, [slice(None)] * ax + [slice(1, None)])
        lo = view(x, [slice(None)] * ax + [slice(0, m - 1)])
        x = binary_op("ne" if x._dtype is D.bool else "sub", hi, lo, "diff")
    if n == 0:
        return wrap(x._backend.copy(x._data), x._dtype, x._backend)
    return x

