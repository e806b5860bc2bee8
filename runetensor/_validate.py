"""Argument checking shared by every family: shapes, axes, broadcasting.

Every error names the function, the offending value and what was expected
(conventions section 6): ``ValueError`` for bad shapes and values,
``IndexError`` for out-of-range indices and axes, ``TypeError`` for wrong kinds.
"""
from __future__ import annotations

import operator
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from . import _dtypes as D

if TYPE_CHECKING:
    from ._dtypes import DType
    from ._tensor import Tensor

__all__ = ["as_int", "as_shape", "as_dtype", "normalize_axis", "normalize_axes", "broadcast_shapes",
           "shape_str", "write_out", "MAX_RANK"]

#: The largest rank a tensor may have (NumPy's limit is 64).
MAX_RANK = 64


def shape_str(shape: Sequence[int]) -> str:
    """``(2, 3)`` style text for a shape."""
    t = tuple(shape)
    return str(t)


def as_int(v: Any, fname: str, what: str = "value") -> int:
    """``v`` as a Python int (accepting anything with ``__index__``, bool excluded).

    Raises:
        TypeError: if ``v`` is not an integer.
    """
    if type(v) is int:
        return v
    if isinstance(v, bool):
        raise TypeError(f"{fname}: {what} must be an integer, got bool {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{fname}: {what} must be an integer, got {type(v).__name__} {v!r}") from None


def as_dtype(dtype: Any, fname: str) -> DType:
    """``dtype`` (a DType or a name) as a DType.

    Raises:
        TypeError: naming ``fname``, if it is not a data type.
    """
    try:
        return D.dtype_of(dtype)
    except TypeError as e:
        raise TypeError(f"{fname}: {e}") from None


def write_out(r: Tensor, out: Any, fname: str) -> Tensor:
    """Rune's ``?out``: write ``r`` into ``out`` (same shape and dtype) and return ``out``; ``r`` when None.

    Raises:
        TypeError: if ``out`` is not a Tensor or its dtype differs.
        ValueError: if its shape differs.
    """
    if out is None:
        return r
    from ._tensor import Tensor  # _tensor imports this module
    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}: out must be a Tensor, got {type(out).__name__}")
    if out.shape != r.shape:
        raise ValueError(f"{fname}: out has shape {shape_str(out.shape)}, the result has shape {shape_str(r.shape)}")
    if out._dtype is not r._dtype:
        raise TypeError(f"{fname}: out has dtype {out._dtype}, the result has dtype {r._dtype}")
    out._backend.assign(out._data, r._data)
    return out


def as_shape(shape: Any, fname: str, allow_minus_one: bool = False) -> tuple[int, ...]:
    """A shape as a tuple of non-negative ints (a single int means a 1-d shape).

    Raises:
        TypeError: if an entry is not an integer.
        ValueError: if an entry is negative, or the rank exceeds ``MAX_RANK``.
    """
    if type(shape) is tuple and all(type(s) is int and s >= 0 for s in shape) and len(shape) <= MAX_RANK:
        return shape
    if isinstance(shape, (int,)) and not isinstance(shape, bool) or hasattr(shape, "__index__") and not isinstance(shape, (list, tuple)):
        shape = (shape,)
    try:
        items = list(shape)
    except TypeError:
        raise TypeError(f"{fname}: shape must be a sequence of integers, got {type(shape).__name__} {shape!r}") from None
    out = tuple(as_int(s, fname, "shape entry") for s in items)
    for s in out:
        if s < 0 and not (allow_minus_one and s == -1):
            raise ValueError(f"{fname}: shape {out} has a negative dimension {s}; expected sizes >= 0")
    if len(out) > MAX_RANK:
        raise ValueError(f"{fname}: shape {out} has rank {len(out)}; at most {MAX_RANK} dimensions are supported")
    return out


#: The largest buffer, in bytes, any tensor may have (NumPy's limit on 64-bit machines).
MAX_NBYTES = 2**63 - 1


def check_nbytes(shape: tuple[int, ...], itemsize: int, fname: str) -> tuple[int, ...]:
    """``shape`` itself, after checking that a buffer of that shape can exist.

    Raises:
        ValueError: if ``prod(shape) * itemsize`` exceeds :data:`MAX_NBYTES`.
    """
    n = 1
    for s in shape:
        n *= s
    if n * max(itemsize, 1) > MAX_NBYTES:
        raise ValueError(f"{fname}: shape {shape} needs {n} elements of {itemsize} bytes, more than any buffer "
                         f"can hold (at most {MAX_NBYTES} bytes)")
    return shape


def normalize_axis(axis: Any, ndim: int, fname: str, what: str = "axis") -> int:
    """``axis`` in ``[0, ndim)``, counting negative values from the end.

    Raises:
        TypeError: if ``axis`` is not an integer.
        IndexError: if it is out of range.
    """
    a = axis if type(axis) is int else as_int(axis, fname, what)
    if -ndim <= a < ndim:
        return a + ndim if a < 0 else a
    raise IndexError(f"{fname}: {what} {a} is out of bounds for a tensor of rank {ndim} "
                     f"(expected {-ndim} <= {what} < {ndim})" if ndim else
                     f"{fname}: {what} {a} is out of bounds for a 0-d tensor (it has no axes)")


def normalize_axes(axes: Iterable[Any] | Any, ndim: int, fname: str, what: str = "axes") -> tuple[int, ...]:
    """A sequence of axes (or one int) normalised, in the given order.

    Raises:
        IndexError: if any is out of range.
        ValueError: on duplicates.
    """
    if isinstance(axes, int) or hasattr(axes, "__index__") and not isinstance(axes, (list, tuple)):
        axes = (axes,)
    try:
        items = list(axes)
    except TypeError:
        raise TypeError(f"{fname}: {what} must be an int or a sequence of ints, got {type(axes).__name__}") from None
    out = tuple(normalize_axis(a, ndim, fname, "axis") for a in items)
    if len(set(out)) != len(out):
        raise ValueError(f"{fname}: {what} {tuple(items)} repeat an axis (normalised {out}); expected distinct axes")
    return out


@lru_cache(maxsize=4096)
def _broadcast2(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    n = max(len(a), len(b))
    a2 = (1,) * (n - len(a)) + a
    b2 = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a2, b2):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def broadcast_shapes(*shapes: Sequence[int], fname: str = "broadcast_shapes") -> tuple[int, ...]:
    """The common shape of ``shapes`` under NumPy's broadcasting rules.

    Raises:
        ValueError: naming the shapes, if they are incompatible.

    >>> broadcast_shapes((3, 1), (1, 5))
    (3, 5)
    """
    if not shapes:
        return ()
    res: tuple[int, ...] | None = tuple(shapes[0])
    for s in shapes[1:]:
        r2 = _broadcast2(res, tuple(s))
        if r2 is None:
            raise ValueError(f"{fname}: shapes {' and '.join(shape_str(x) for x in shapes)} cannot be broadcast "
                             f"together (each dimension, aligned from the right, must be equal or 1)")
        res = r2
    return res
