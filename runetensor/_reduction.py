"""Reductions and cumulative operations (seed sections "reductions" and "cumulative").

``axes=None`` reduces every axis; axes may be negative; an empty ``axes``
list reduces nothing (the result is an elementwise copy in the result dtype).
``keepdims=True`` keeps reduced axes with size 1.

Result dtypes follow the seed: ``sum``/``prod``/``cumsum``/``cumprod`` keep the
input dtype (integers wrap on overflow; bool counts as int64), ``max``/``min``
keep it, ``mean``/``var``/``std`` give the input's float type (float64 for
integers and bool, the real type for complex ``var``/``std``), ``all``/``any``
give bool, ``argmax``/``argmin`` give int32.  max, min, mean, cummax and
cummin propagate NaN.  See ``docs/math.md`` for the differences from NumPy.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

from . import _dtypes as D
from ._dtypes import DType
from ._tensor import Tensor, as_tensor, attach, wrap
from ._validate import as_int, normalize_axes, normalize_axis

__all__ = ["sum", "max", "min", "prod", "mean", "var", "std", "all", "any", "argmax", "argmin",
           "cumsum", "cumprod", "cummax", "cummin"]

def _axes(t: Tensor, axes: Any, fname: str) -> tuple[int, ...]:
    nd = t._data.ndim
    if axes is None:
        return tuple(range(nd))
    return normalize_axes(axes, nd, fname)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _cast_h(t: Tensor, d: DType) -> Any:
    return t._data if t._dtype is d else t._backend.cast(t._data, d)


def _reduce(op: str, t: Any, axes: Any, keepdims: bool, fname: str, dtype: DType | None = None) -> Tensor:
    """The reductions' one implementation; ``dtype`` (sum/prod only) is the accumulation and result dtype
    (None: the seed's rule, the input's dtype, int64 for bool; ``xp.sum`` passes the standard's)."""
    t = as_tensor(t, fname)
    ax = _axes(t, axes, fname)
    be, d = t._backend, t._dtype
    k = d.kind
    if op in ("max", "min"):
        if k == "c":
            raise TypeError(f"{fname}: complex numbers have no order ({d})")
        if builtins.any(t._data.shape[a] == 0 for a in ax):
            raise ValueError(f"{fname}: cannot reduce an empty tensor of shape {t.shape} over axes {ax}: "
                             "the result has no identity value (a zero-size reduction)")
        out_d = d
    elif op in ("all", "any"):
        out_d = D.bool
    else:  # sum, prod
        out_d = dtype if dtype is not None else D.default_int if k == "b" else d
    if not ax:  # nothing reduced: an elementwise copy in the result dtype
        if op in ("all", "any"):
            h = be.copy(t._data) if d is D.bool else be.binary("ne", t._data, 0)
        else:
            h = _cast_h(t, out_d)
            if h is t._data:
                h = be.copy(h)
        return wrap(h, out_d, be)
    src = t._data if out_d is d or op in ("all", "any") else be.cast(t._data, out_d)
    return wrap(be.reduce(op, src, ax, bool(keepdims)), out_d, be)


@attach()
def sum(t: Any, axes: Sequence[int] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Sum of elements over ``axes`` (all axes by default).

    Integers keep their dtype and wrap on overflow; bool sums count as int64.
    The sum of an empty set is 0.

    Args:
        t: the tensor.
        axes: axes to reduce (negative values count from the end); None for all.
        keepdims: keep reduced axes with size 1.
    Returns:
        A new tensor (0-d when every axis is reduced).
    Raises:
        IndexError: if an axis is out of range.
        ValueError: if an axis repeats.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [2, 2], [1., 2., 3., 4.])
    >>> print(rt.sum(x))
    10
    >>> print(rt.sum(x, axes=[0]))
    [4, 6]
    >>> print(rt.sum(rt.create(rt.float32, [1, 2], [1., 2.]), axes=[1], keepdims=True))
    [[3]]
    >>> print(rt.sum(rt.create(rt.float32, [1, 3], [1., 2., 3.]), axes=[-1]))
    [6]
    """
    return _reduce("sum", t, axes, keepdims, "sum")


@attach()
def prod(t: Any, axes: Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
    """Product of elements over ``axes`` (all axes by default); the empty product is 1.

    Args:
        t: the tensor.
        axes: axes to reduce; None for all.
        keepdims: keep reduced axes with size 1.
    Returns:
        A new tensor of ``t``'s dtype (int64 for bool); integers wrap.
    Raises:
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.prod(rt.create(rt.int32, [3], [2, 3, 4])))
    24
    >>> print(rt.prod(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]), axes=[0]))
    [3, 8]
    """
    return _reduce("prod", t, axes, keepdims, "prod")


@attach()
def max(t: Any, axes: Sequence[int] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Maximum over ``axes`` (all axes by default); any NaN gives NaN.

    Args:
        t: the tensor.
        axes: axes to reduce; None for all.
        keepdims: keep reduced axes with size 1.
    Returns:
        A new tensor of ``t``'s dtype.
    Raises:
        ValueError: if a reduced axis is empty (there is no identity).
        TypeError: for complex tensors.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.max(rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])))
    6
    >>> print(rt.max(rt.create(rt.float32, [2, 2], [1., 2., 3., 4.]), axes=[0]))
    [3, 4]
    >>> print(rt.max(rt.create(rt.float32, [1, 2], [1., 2.]), axes=[1], keepdims=True))
    [[2]]
    """
    return _reduce("max", t, axes, keepdims, "max")


@attach()
def min(t: Any, axes: Sequence[int] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Minimum over ``axes`` (all axes by default); any NaN gives NaN.

    Args:
        t: the tensor.
        axes: axes to reduce; None for all.
        keepdims: keep reduced axes with size 1.
    Returns:
        A new tensor of ``t``'s dtype.
    Raises:
        ValueError: if a reduced axis is empty.
        TypeError: for complex tensors.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.min(rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])))
    1
    >>> print(rt.min(rt.create(rt.float32, [2, 2], [1., 2., 3., 4.]), axes=[0]))
    [1, 2]
    """
    return _reduce("min", t, axes, keepdims, "min")


@attach()
def all(t: Any, axes: Sequence[int] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element over ``axes`` is non-zero (true for an empty set).

    Args:
        t: the tensor (any dtype; NaN counts as non-zero).
        axes: axes to reduce; None for all.
        keepdims: keep reduced axes with size 1.
    Returns:
        A bool tensor.
    Raises:
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.all(rt.create(rt.int32, [3], [1, 2, 3])))
    true
    >>> print(rt.all(rt.create(rt.int32, [3], [1, 0, 3])))
    false
    >>> print(rt.all(rt.create(rt.int32, [2, 2], [1, 0, 1, 1]), axes=[1]))
    [false, true]
    """
    return _reduce("all", t, axes, keepdims, "all")


@attach()
def any(t: Any, axes: Sequence[int] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether some element over ``axes`` is non-zero (false for an empty set).

    Args:
        t: the tensor.
        axes: axes to reduce; None for all.
        keepdims: keep reduced axes with size 1.
    Returns:
        A bool tensor.
    Raises:
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.any(rt.create(rt.int32, [3], [0, 0, 1])))
    true
    >>> print(rt.any(rt.create(rt.int32, [3], [0, 0, 0])))
    false
    >>> print(rt.any(rt.create(rt.int32, [2, 2], [0, 0, 0, 1]), axes=[1]))
    [false, true]
    """
    return _reduce("any", t, axes, keepdims, "any")


def _float_dtype(d: DType) -> DType:
    """The dtype mean/var compute in: float32 for low-precision floats, float64 for integers."""
    if d.kind in "biu":
        return D.default_float
    if d.is_low_precision:
        return D.float32
    return d


def _mean_h(t: Tensor, ax: tuple[int, ...], keepdims: bool, cd: DType) -> Any:
    """Handle of the mean of ``t`` over ``ax`` computed in dtype ``cd`` (0/0 gives NaN)."""
    be = t._backend
    src = _cast_h(t, cd)
    if not ax:
        return be.copy(src) if src is t._data else src
    s = be.reduce("sum", src, ax, keepdims)
    n = _count(t._data.shape, ax)
    if n != 1:
        if be.level:  # a transformation records a write into ``s`` as one more step (and tape entry)
            return be.binary("div", s, float(n))
        be.binary("div", s, float(n), out=s)
    return s


@attach()
def mean(t: Any, axes: Sequence[int] | None = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axes`` (all axes by default); NaN propagates.

    The mean of an empty set is NaN.

    Args:
        t: the tensor.
        axes: axes to reduce; None for all.
        keepdims: keep reduced axes with size 1.
    Returns:
        A float tensor: ``t``'s dtype for floats and complex, float64 for integers and bool.
    Raises:
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.mean(rt.create(rt.float32, [4], [1., 2., 3., 4.])))
    2.5
    >>> print(rt.mean(rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.]), axes=[1]))
    [2, 5]
    """
    t = as_tensor(t, "mean")
    ax = _axes(t, axes, "mean")
    d = t._dtype
    cd = _float_dtype(d)
    out_d = D.default_float if d.kind in "biu" else d
    h = _mean_h(t, ax, bool(keepdims), cd)
    r = wrap(h, cd, t._backend)
    return r if cd is out_d else wrap(t._backend.cast(h, out_d), out_d, t._backend)


def _carries(t: Tensor) -> bool:
    # deferred: cycle: the transformations (runetensor._autodiff) import this module
    from ._tracers._diff import carries_derivative
    return carries_derivative(t)


def _sqrt_zero_slope(be: Any, s: Any) -> Any:
    """``sqrt(s)`` for a variance ``s`` that carries a derivative, with derivative 0 where ``s == 0``
    (PyTorch's choice): the standard deviation is at its minimum there (a single element, or equal
    elements), where ``sqrt``'s infinite slope times the variance's zero one would give NaN.  The
    same values as ``sqrt(s)``: ``sqrt`` of a substituted 1 where ``s == 0`` is discarded."""
    z = be.binary("eq", s, 0.0)
    r = be.unary("sqrt", be.where(z, be.full((), 1.0, be.dtype(s)), s))
    return be.where(z, be.full((), 0.0, be.dtype(s)), r)


def _var(t: Any, axes: Any, keepdims: bool, ddof: Any, fname: str, root: bool = False,
         too_few_nan: bool = False) -> Tensor:
    """The one variance: ``too_few_nan`` says what ``ddof >= N`` gives (False: ValueError, the seed's
    ``var``/``std``; True: NaN, the Array API's ``var``/``std`` with ``correction``)."""
    t = as_tensor(t, fname)
    ax = _axes(t, axes, fname)
    dd = as_int(ddof, fname, "ddof") if not isinstance(ddof, float) else ddof
    be, d = t._backend, t._dtype
    n = _count(t._data.shape, ax)
    if dd >= n and not too_few_nan:
        raise ValueError(f"{fname}: ddof={ddof} must be smaller than the number of reduced elements ({n}) "
                         f"for shape {t.shape} over axes {ax}")
    cd = _float_dtype(d)
    out_d = (D.default_float if d.kind in "biu" else d).real_dtype
    src = _cast_h(t, cd)
    m = _mean_h(wrap(src, cd, be), ax, True, cd)
    dev = be.binary("sub", src, m)
    if cd.is_complex:
        dev = be.unary("abs", dev)
    be.binary("mul", dev, dev, out=dev)
    s = be.reduce("sum", dev, ax, bool(keepdims)) if ax else dev  # dev is a fresh buffer
    if dd >= n:
        s = be.full(s.shape, float("nan"), cd.real_dtype)
    else:
        be.binary("div", s, float(n - dd), out=s)
    if root:
        if be.level > 0 and _carries(t):
            s = _sqrt_zero_slope(be, s)
        else:
            be.unary("sqrt", s, out=s)
    rd = cd.real_dtype
    return wrap(s, rd, be) if rd is out_d else wrap(be.cast(s, out_d), out_d, be)


@attach()
def var(t: Any, axes: Sequence[int] | None = None, keepdims: bool = False, ddof: int = 0) -> Tensor:
    """Variance ``sum(|x - mean|**2) / (N - ddof)`` over ``axes`` (all by default).

    Args:
        t: the tensor.
        axes: axes to reduce; None for all.
        keepdims: keep reduced axes with size 1.
        ddof: delta degrees of freedom (0: population variance, 1: sample variance).
    Returns:
        A real float tensor (float64 for integers; the real type for complex).
    Raises:
        ValueError: if ``ddof`` is not smaller than the number of reduced elements N.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [5], [1., 2., 3., 4., 5.])
    >>> print(rt.var(x))
    2
    >>> print(rt.var(x, ddof=1))
    2.5
    """
    return _var(t, axes, keepdims, ddof, "var")


@attach()
def std(t: Any, axes: Sequence[int] | None = None, keepdims: bool = False, ddof: int = 0) -> Tensor:
    """Standard deviation ``sqrt(var(t, axes, keepdims, ddof))``.

    Args:
        t: the tensor.
        axes: axes to reduce; None for all.
        keepdims: keep reduced axes with size 1.
        ddof: delta degrees of freedom.
    Returns:
        A real float tensor.
    Raises:
        ValueError: if ``ddof`` is not smaller than the number of reduced elements.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [5], [1., 2., 3., 4., 5.])
    >>> print(rt.std(x))
    1.41421
    >>> print(rt.std(x, ddof=1))
    1.58114
    """
    return _var(t, axes, keepdims, ddof, "std", root=True)


def _flat(t: Tensor) -> Any:
    be = t._backend
    h = be.reshape(t._data, (t._data.size,))
    if h is None:
        h = be.reshape(be.contiguous(t._data), (t._data.size,))
    return h


def _arg(op: str, t: Any, axis: Any, keepdims: bool, fname: str, index_dtype: DType = D.int32) -> Tensor:
    t = as_tensor(t, fname)
    be, d = t._backend, t._dtype
    if d.is_complex:
        raise TypeError(f"{fname}: complex numbers have no order ({d})")
    if axis is None:
        if t._data.size == 0:
            raise ValueError(f"{fname}: cannot take {op[3:]} of an empty tensor of shape {t.shape}")
        r = be.arg_reduce(op, _flat(t), 0, False)
        if keepdims:
            r = be.reshape(r, (1,) * t._data.ndim)
    else:
        a = normalize_axis(axis, t._data.ndim, fname)
        if t._data.shape[a] == 0:
            raise ValueError(f"{fname}: cannot take {op[3:]} along axis {a} of size 0 (shape {t.shape})")
        r = be.arg_reduce(op, t._data, a, bool(keepdims))
    return wrap(be.cast(r, index_dtype), index_dtype, be)


@attach()
def argmax(t: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the maximum along ``axis`` (of the flattened tensor when None); first occurrence wins.

    NaN counts as the maximum (the first NaN's index is returned).

    Args:
        t: the tensor.
        axis: the axis, or None for the row-major flattened tensor.
        keepdims: keep the reduced axis with size 1 (all axes when ``axis`` is None).
    Returns:
        An int32 tensor.
    Raises:
        ValueError: if the axis (or the tensor) is empty.
        TypeError: for complex tensors.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.argmax(rt.create(rt.int32, [5], [3, 1, 4, 1, 5])))
    4
    >>> print(rt.argmax(rt.create(rt.int32, [2, 3], [1, 5, 3, 2, 4, 6]), axis=1))
    [1, 2]
    """
    return _arg("argmax", t, axis, keepdims, "argmax")


@attach()
def argmin(t: Any, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the minimum along ``axis`` (of the flattened tensor when None); first occurrence wins.

    NaN counts as the minimum (the first NaN's index is returned).

    Args:
        t: the tensor.
        axis: the axis, or None for the row-major flattened tensor.
        keepdims: keep the reduced axis with size 1.
    Returns:
        An int32 tensor.
    Raises:
        ValueError: if the axis (or the tensor) is empty.
        TypeError: for complex tensors.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.argmin(rt.create(rt.int32, [5], [3, 1, 4, 1, 5])))
    1
    >>> print(rt.argmin(rt.create(rt.int32, [2, 3], [5, 2, 3, 1, 4, 0]), axis=1))
    [1, 2]
    """
    return _arg("argmin", t, axis, keepdims, "argmin")


def _scan(op: str, t: Any, axis: Any, fname: str, dtype: DType | None = None,
          include_initial: bool = False) -> Tensor:
    """The one scan; ``dtype`` (cumsum/cumprod) as in :func:`_reduce`; ``include_initial`` starts the
    result with the identity (0 or 1: the Array API's ``cumulative_*``)."""
    t = as_tensor(t, fname)
    be, d = t._backend, t._dtype
    if op in ("cummax", "cummin") and d.is_complex:
        raise TypeError(f"{fname}: complex numbers have no order ({d})")
    out_d = dtype if dtype is not None else D.default_int if d.kind == "b" and op in ("cumsum", "cumprod") else d
    if axis is None:
        h, a = _flat(t), 0
    else:
        a = normalize_axis(axis, t._data.ndim, fname)
        h = t._data
    if out_d is not d:
        h = be.cast(h, out_d)
    r = be.scan(op, h, a)
    if include_initial:
        shape = list(r.shape)
        shape[a] += 1
        out = be.empty(tuple(shape), out_d)
        key = [slice(0, n, 1) for n in shape]
        key[a] = slice(0, 1, 1)
        be.assign(be.view_index(out, tuple(key)), 0 if op == "cumsum" else 1)
        key[a] = slice(1, shape[a], 1)
        be.assign(be.view_index(out, tuple(key)), r)
        r = out
    return wrap(r, out_d, be)


@attach()
def cumsum(t: Any, axis: int | None = None) -> Tensor:
    """Inclusive cumulative sum along ``axis`` (over the row-major flattened tensor when None).

    Args:
        t: the tensor.
        axis: the axis, or None to flatten first.
    Returns:
        A new tensor of ``t``'s dtype (int64 for bool); integers wrap.
    Raises:
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    >>> print(rt.cumsum(x))
    [1, 3, 6, 10, 15, 21]
    >>> print(rt.cumsum(x, axis=1))
    [[1, 3, 6],
     [4, 9, 15]]
    """
    return _scan("cumsum", t, axis, "cumsum")


@attach()
def cumprod(t: Any, axis: int | None = None) -> Tensor:
    """Inclusive cumulative product along ``axis`` (flattened when None).

    Args:
        t: the tensor.
        axis: the axis, or None to flatten first.
    Returns:
        A new tensor of ``t``'s dtype (int64 for bool); integers wrap.
    Raises:
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.cumprod(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]), axis=0))
    [[1, 2],
     [3, 8]]
    """
    return _scan("cumprod", t, axis, "cumprod")


@attach()
def cummax(t: Any, axis: int | None = None) -> Tensor:
    """Inclusive cumulative maximum along ``axis`` (flattened when None); NaN propagates.

    Args:
        t: the tensor.
        axis: the axis, or None to flatten first.
    Returns:
        A new tensor of ``t``'s dtype.
    Raises:
        TypeError: for complex tensors.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.cummax(rt.create(rt.float32, [5], [1., 3., 2., float("nan"), 5.])))
    [1, 3, 3, nan, nan]
    """
    return _scan("cummax", t, axis, "cummax")


@attach()
def cummin(t: Any, axis: int | None = None) -> Tensor:
    """Inclusive cumulative minimum along ``axis`` (flattened when None); NaN propagates.

    Args:
        t: the tensor.
        axis: the axis, or None to flatten first.
    Returns:
        A new tensor of ``t``'s dtype.
    Raises:
        TypeError: for complex tensors.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.cummin(rt.create(rt.int32, [4], [3, 1, 2, 0])))
    [3, 1, 1, 0]
    """
    return _scan("cummin", t, axis, "cummin")
