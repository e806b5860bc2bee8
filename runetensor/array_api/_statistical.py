"""Statistical functions of the Array API standard.

``sum``, ``prod``, ``cumulative_sum`` and ``cumulative_prod`` accumulate
integers in the default integer type (int64; uint64 for unsigned input, bool
counts as int64) unless ``dtype`` says otherwise, and keep floating types.
"""
from __future__ import annotations

from typing import Any

from .. import _dtypes as D
from .._tensor import Tensor, unary_op, wrap
from .._validate import normalize_axis
from ._common import arr, axes_arg, cast, dtype_arg, flat, sum_dtype

__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var"]


def _reduce(x: Any, op: str, axis: Any, dtype: Any, keepdims: bool, fname: str) -> Tensor:
    x = arr(x, fname)
    axes = axes_arg(axis, x.ndim, fname)
    d = dtype_arg(dtype, fname) or sum_dtype(x._dtype)
    x = cast(x, d)
    return wrap(x._backend.reduce(op, x._data, axes, keepdims), d, x._backend)


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
    x = arr(x, op)
    if x._dtype.kind == "c":
        raise TypeError(f"{op}: complex numbers have no order ({x._dtype})")
    axes = axes_arg(axis, x.ndim, op)
    for a in axes:
        if x._data.shape[a] == 0:
            raise ValueError(f"{op}: zero-size reduction along axis {a} of shape {x.shape} has no identity")
    return wrap(x._backend.reduce(op, x._data, axes, keepdims), x._dtype, x._backend)


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


def _count(x: Tensor, axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= x._data.shape[a]
    return n


def _float_input(x: Any, fname: str) -> Tensor:
    x = arr(x, fname)
    if x._dtype.kind in "biu":
        x = cast(x, D.default_float)
    return x


def mean(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean along ``axis`` (all axes if None); NaN for an empty reduction.

    Integer and bool input is computed in the default float (float64).

    >>> import runetensor.array_api as xp
    >>> print(xp.mean(xp.asarray([[1.0, 2.0], [3.0, 5.0]]), axis=1))
    [1.5, 4]
    """
    x = _float_input(x, "mean")
    axes = axes_arg(axis, x.ndim, "mean")
    be = x._backend
    s = be.reduce("sum", x._data, axes, keepdims)
    n = _count(x, axes)
    if n == 0:
        return wrap(be.full(s.shape, float("nan"), x._dtype), x._dtype, be)
    return wrap(be.binary("div", s, n), x._dtype, be)


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
    x = _float_input(x, "var")
    axes = axes_arg(axis, x.ndim, "var")
    be = x._backend
    n = _count(x, axes)
    rd = x._dtype.real_dtype
    m = be.reduce("sum", x._data, axes, True)
    if n:
        m = be.binary("div", m, n)
    dev = be.binary("sub", x._data, m)
    sq = be.unary("square", be.unary("abs", dev)) if x._dtype.kind == "c" else be.unary("square", dev)
    ss = be.reduce("sum", sq, axes, keepdims)
    denom = n - correction
    if denom <= 0:
        return wrap(be.full(ss.shape, float("nan"), rd), rd, be)
    return wrap(be.binary("div", ss, denom), rd, be)


def std(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, correction: int | float = 0.0,
        keepdims: bool = False) -> Tensor:
    """Standard deviation along ``axis``: the square root of :func:`var`.

    >>> import runetensor.array_api as xp
    >>> print(xp.std(xp.asarray([[1.0, 3.0], [5.0, 5.0]]), axis=1))
    [1, 0]
    """
    return unary_op("sqrt", var(x, axis=axis, correction=correction, keepdims=keepdims), "std")


def _cumulative(x: Any, op: str, identity: int, axis: Any, dtype: Any, include_initial: bool,
                fname: str) -> Tensor:
    x = arr(x, fname)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{fname}: axis is required for arrays of rank > 1 (got shape {x.shape})")
        if x.ndim == 0:
            x = flat(x)
        ax = 0
    else:
        if x.ndim == 0:
            raise ValueError(f"{fname}: expected an array of rank >= 1, got a 0-d array")
        ax = normalize_axis(axis, x.ndim, fname)
    d = dtype_arg(dtype, fname) or sum_dtype(x._dtype)
    x = cast(x, d)
    be = x._backend
    r = be.scan(op, x._data, ax)
    if not include_initial:
        return wrap(r, d, be)
    shape = list(x._data.shape)
    n = shape[ax]
    shape[ax] = n + 1
    out = be.empty(tuple(shape), d)
    first = tuple(slice(0, 1, 1) if i == ax else slice(0, s, 1) for i, s in enumerate(shape))
    rest = tuple(slice(1, n + 1, 1) if i == ax else slice(0, s, 1) for i, s in enumerate(shape))
    be.assign(be.view_index(out, first), identity)
    be.assign(be.view_index(out, rest), r)
    return wrap(out, d, be)


def cumulative_sum(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Tensor:
    """Cumulative sum along ``axis`` (optional for 1-d input), optionally starting with 0.

    >>> import runetensor.array_api as xp
    >>> print(xp.cumulative_sum(xp.asarray([1, 2, 3])))
    [1, 3, 6]
    >>> print(xp.cumulative_sum(xp.asarray([1, 2, 3]), include_initial=True))
    [0, 1, 3, 6]
    """
    return _cumulative(x, "cumsum", 0, axis, dtype, include_initial, "cumulative_sum")


def cumulative_prod(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Tensor:
    """Cumulative product along ``axis`` (optional for 1-d input), optionally starting with 1.

    >>> import runetensor.array_api as xp
    >>> print(xp.cumulative_prod(xp.asarray([[1, 2], [3, 4]]), axis=1, include_initial=True))
    [[1, 1, 2],
     [1, 3, 12]]
    """
    return _cumulative(x, "cumprod", 1, axis, dtype, include_initial, "cumulative_prod")

