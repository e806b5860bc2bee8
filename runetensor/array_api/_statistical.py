"""Statistical functions of the Array API standard.

``sum``, ``prod``, ``cumulative_sum`` and ``cumulative_prod`` accumulate
integers in the default integer type (int64; uint64 for unsigned input, bool
counts as int64) unless ``dtype`` says otherwise, and keep floating types.
"""
from __future__ import annotations

from typing import Any

from .. import _reduction as R
from .._tensor import Tensor
from ._common import arr, dtype_arg, sum_dtype

__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]

# Adapters over runetensor._reduction (the one implementation of each reduction): ``axis`` becomes
# ``axes``, ``correction`` becomes ``ddof``, ``dtype=`` objects and the standard's accumulation dtype
# (sum_dtype) are passed down.


def _reduce(x: Any, op: str, axis: Any, dtype: Any, keepdims: bool, fname: str) -> Tensor:
    x = arr(x, fname)
    return R._reduce(op, x, axis, keepdims, fname, dtype_arg(dtype, fname) or sum_dtype(x._dtype))


def sum(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, dtype: Any = None,  # noqa: A001
        keepdims: bool = False) -> Tensor:
    """Sum along ``axis`` (all axes if None); integers accumulate in int64 (uint64 if unsigned).

    >>> import runetensor.array_api as xp
    >>> s = xp.sum(xp.asarray([[1, 2], [3, 4]], dtype=xp.int32), axis=0)
    >>> print(s)
    [4, 6]
    >>> s.dtype
    rt.int64
    """
    return _reduce(x, "sum", axis, dtype, keepdims, "sum")


def prod(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, dtype: Any = None,
         keepdims: bool = False) -> Tensor:
    """Product along ``axis`` (all axes if None); integers accumulate in int64 (uint64 if unsigned).

    >>> import runetensor.array_api as xp
    >>> print(xp.prod(xp.asarray([1, 2, 3, 4], dtype=xp.uint8)))
    24
    """
    return _reduce(x, "prod", axis, dtype, keepdims, "prod")


def _minmax(x: Any, op: str, axis: Any, keepdims: bool) -> Tensor:
    return R._reduce(op, arr(x, op), axis, keepdims, op)


def max(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Maximum along ``axis`` (all axes if None); NaN propagates.

    Raises:
        ValueError: for a reduction over a zero-size axis.
        TypeError: for complex input.

    >>> import runetensor.array_api as xp
    >>> print(xp.max(xp.asarray([[1, 5], [7, 2]]), axis=1))
    [5, 7]
    >>> print(xp.max(xp.asarray([1.0, float('nan')])))
    nan
    """
    return _minmax(x, "max", axis, keepdims)


def min(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Minimum along ``axis`` (all axes if None); NaN propagates.

    Raises:
        ValueError: for a reduction over a zero-size axis.
        TypeError: for complex input.

    >>> import runetensor.array_api as xp
    >>> print(xp.min(xp.asarray([[1, 5], [7, 2]]), axis=0))
    [1, 2]
    """
    return _minmax(x, "min", axis, keepdims)


def mean(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean along ``axis`` (all axes if None); NaN for an empty reduction.

    Integer and bool input is computed in the default float (float64).

    >>> import runetensor.array_api as xp
    >>> print(xp.mean(xp.asarray([[1.0, 2.0], [3.0, 5.0]]), axis=1))
    [1.5, 4]
    """
    return R.mean(arr(x, "mean"), axis, keepdims)


def var(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0,
        keepdims: bool = False) -> Tensor:
    """Variance along ``axis``: ``sum(|x - mean|**2) / (N - correction)``.

    ``correction=1`` gives the unbiased sample variance.  If ``N - correction <= 0``
    the result is NaN.  Complex input gives a real result.

    >>> import runetensor.array_api as xp
    >>> x = xp.asarray([1.0, 2.0, 3.0, 4.0])
    >>> print(xp.var(x))
    1.25
    >>> print(xp.var(x, correction=1))
    1.66667
    """
    return R._var(arr(x, "var"), axis, keepdims, correction, "var", too_few_nan=True)


def std(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0,
        keepdims: bool = False) -> Tensor:
    """Standard deviation along ``axis``: the square root of :func:`var`.

    >>> import runetensor.array_api as xp
    >>> print(xp.std(xp.asarray([[1.0, 3.0], [5.0, 5.0]]), axis=1))
    [1, 0]
    """
    return R._var(arr(x, "std"), axis, keepdims, correction, "std", root=True, too_few_nan=True)


def _cumulative(x: Any, op: str, axis: Any, dtype: Any, include_initial: bool, fname: str) -> Tensor:
    x = arr(x, fname)
    if axis is None and x.ndim > 1:
        raise ValueError(f"{fname}: axis is required for arrays of rank > 1 (got shape {x.shape})")
    if axis is not None and x.ndim == 0:
        raise ValueError(f"{fname}: expected an array of rank >= 1, got a 0-d array")
    d = dtype_arg(dtype, fname) or sum_dtype(x._dtype)
    return R._scan(op, x, axis, fname, d, bool(include_initial))


def cumulative_sum(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Tensor:
    """Cumulative sum along ``axis`` (optional for 1-d input), optionally starting with 0.

    >>> import runetensor.array_api as xp
    >>> print(xp.cumulative_sum(xp.asarray([1, 2, 3])))
    [1, 3, 6]
    >>> print(xp.cumulative_sum(xp.asarray([1, 2, 3]), include_initial=True))
    [0, 1, 3, 6]
    """
    return _cumulative(x, "cumsum", axis, dtype, include_initial, "cumulative_sum")


def cumulative_prod(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Tensor:
    """Cumulative product along ``axis`` (optional for 1-d input), optionally starting with 1.

    >>> import runetensor.array_api as xp
    >>> print(xp.cumulative_prod(xp.asarray([[1, 2], [3, 4]]), axis=1, include_initial=True))
    [[1, 1, 2],
     [1, 3, 12]]
    """
    return _cumulative(x, "cumprod", axis, dtype, include_initial, "cumulative_prod")

