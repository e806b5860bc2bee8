"""Argument checking shared by every family: shapes, axes, broadcasting.

Every error names the function, the offending value and what was expected
(docs/conventions.md section 6): ``ValueError`` for bad shapes and values,
``IndexError`` for out-of-range indices and axes, ``TypeError`` for wrong kinds.
"""
from __future__ import annotations

import operator
import sys
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from . import _dtypes as D

if TYPE_CHECKING:
    from ._dtypes import DType

__all__ = ["as_int", "as_shape", "as_dtype", "normalize_axis", "normalize_axes", "broadcast_shapes",
           "shape_str", "MAX_RANK", "MAX_NBYTES", "check_nbytes", "check_alloc", "check_count",
           "alloc_error", "store_value", "nbytes_str", "dims_str", "caller_name", "named_memory_error"]

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


def as_shape(shape: Any, fname: str, allow_minus_one: bool = False) -> tuple[int, ...]:
    """A shape as a tuple of non-negative ints (a single int means a 1-d shape).

    Raises:
        TypeError: if an entry is not an integer.
        ValueError: if an entry is negative, or the rank exceeds ``MAX_RANK``.
    """
    if type(shape) is tuple and all(type(s) is int and s >= 0 for s in shape) and len(shape) <= MAX_RANK:
        return shape
    if (isinstance(shape, int) and not isinstance(shape, bool)
            or hasattr(shape, "__index__") and not isinstance(shape, (list, tuple))):
        shape = (shape,)
    try:
        items = list(shape)
    except TypeError:
        raise TypeError(f"{fname}: shape must be a sequence of integers, "
                        f"got {type(shape).__name__} {shape!r}") from None
    out = tuple(as_int(s, fname, "shape entry") for s in items)
    for s in out:
        if s < 0 and not (allow_minus_one and s == -1):
            raise ValueError(f"{fname}: shape {out} has a negative dimension {s}; expected sizes >= 0")
    if len(out) > MAX_RANK:
        raise ValueError(f"{fname}: shape {out} has rank {len(out)}; at most {MAX_RANK} dimensions are supported")
    return out


#: The largest buffer, in bytes, any tensor may have (NumPy's limit on 64-bit machines).
MAX_NBYTES = 2**63 - 1

_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")


def nbytes_str(n: int) -> str:
    """A byte count for messages: ``512 bytes``, ``16.0 GiB``, ``8.0 EiB``."""
    if n < 1024:
        return f"{n} bytes"
    k = 0
    v = float(n)
    while v >= 1024.0 and k < len(_UNITS) - 1:
        v /= 1024.0
        k += 1
    return f"{v:.1f} {_UNITS[k]}"


def dims_str(shape: Sequence[int]) -> str:
    """A shape for messages, large powers of two written ``2**k``: ``(2**60,)``, ``(3, 2**40)``."""
    parts = [f"2**{s.bit_length() - 1}" if s >= 1 << 20 and s & (s - 1) == 0 else str(s) for s in shape]
    return "(" + ", ".join(parts) + (",)" if len(parts) == 1 else ")")


def check_nbytes(shape: tuple[int, ...], itemsize: int, fname: str, dtype: Any = None) -> tuple[int, ...]:
    """``shape`` itself, after checking that a buffer of that shape can exist.

    Only integer arithmetic on the shape (a few ns per dimension): the hot paths call it.
    Zero dimensions do not make the others free: NumPy refuses ``(2**62, 0, 2**62)`` too.

    Raises:
        ValueError: naming ``fname``, the shape and the dtype, if the product of the nonzero
            dimensions times ``itemsize`` exceeds :data:`MAX_NBYTES`.
    """
    n = max(itemsize, 1)
    for s in shape:
        if s > 1:
            n *= s
    if n > MAX_NBYTES:
        what = f"{dims_str(shape)} {dtype}" if dtype is not None else f"{dims_str(shape)} of {itemsize}-byte items"
        size = 1
        for s in shape:
            size *= s
        if size:
            raise ValueError(f"{fname}: shape {what} needs {nbytes_str(n)}, more than any buffer can hold "
                             f"(at most 2**63 - 1 bytes)")
        raise ValueError(f"{fname}: shape {what} is too large: its nonzero dimensions span {nbytes_str(n)}, "
                         f"more than any buffer can hold (at most 2**63 - 1 bytes)")
    return shape


def check_alloc(shape: tuple[int, ...], d: DType, fname: str) -> tuple[int, ...]:
    """:func:`check_nbytes` for a tensor of dtype ``d``."""
    return check_nbytes(shape, d.itemsize, fname, d)


def alloc_error(fname: str, shape: Sequence[int], d: Any) -> MemoryError:
    """The ``MemoryError`` to raise when a buffer for ``shape`` and ``d`` cannot be allocated:
    ``zeros: cannot allocate 16.0 GiB for shape (2**31,) float64``."""
    n = getattr(d, "itemsize", 1)
    for s in shape:
        n *= s
    return MemoryError(f"{fname}: cannot allocate {nbytes_str(n)} for shape {dims_str(shape)} {d}")


def _ours(f: Any) -> bool:
    m = f.f_globals.get("__name__", "")
    return m == "runetensor" or m.startswith("runetensor.")


def caller_name(default: str = "runetensor") -> str:
    """The name of the runetensor function the user called, read off the call stack (error paths
    only: it walks frames).

    From the caller outward, over the frames of runetensor's own modules up to the first frame of
    user code: the outermost one that names itself, by its ``fname`` argument or local (the
    project's convention: ``"add"`` in ``binary_op``, ``"__add__"`` in the operators) or by a
    public function name (``concatenate``, ``Genarray.create``); helpers (``_x``) and generated
    closures (``<locals>``) without an ``fname`` do not count.  ``default`` if none does.
    """
    f = sys._getframe(1)
    name = default
    while f is not None and _ours(f):
        fn = f.f_locals.get("fname")
        if type(fn) is str and fn:
            name = fn
        else:
            co = f.f_code
            q = getattr(co, "co_qualname", co.co_name)
            if not co.co_name.startswith(("_", "<")) and "<locals>" not in q:
                name = q
        f = f.f_back
    return name


def named_memory_error(e: MemoryError, to_dtype: Any = None) -> MemoryError:
    """A backend's failed allocation (``e``) reworded for the user: ``MemoryError`` naming the
    function the user called (:func:`caller_name`), the size, the shape and the dtype, as
    :func:`alloc_error` words it (``__add__: cannot allocate 4.0 TiB for shape (2**20, 2**20)
    float32``), never NumPy's or the buffer pool's own message.  ``e`` carries the shape and dtype
    as attributes (NumPy's and the pool's errors do); ``to_dtype`` maps its dtype to runetensor's.
    An error already reworded comes back unchanged."""
    if getattr(e, "_rt_named", False):
        return e
    name = caller_name()
    shape = getattr(e, "shape", None)
    dt = getattr(e, "dtype", None)
    if shape is not None and dt is not None:
        if to_dtype is not None:
            dt = to_dtype(dt)
        err = alloc_error(name, tuple(shape), dt)
    else:
        err = MemoryError(f"{name}: out of memory" + (f" ({e})" if str(e) else ""))
    err._rt_named = True  # type: ignore[attr-defined]
    return err


def check_count(v: Any, fname: str, what: str, itemsize: int = 8) -> int:
    """A non-negative element count (``linspace``'s ``count``, ``eye``'s ``n``), checked like a 1-d shape.

    Raises:
        TypeError: if ``v`` is not an integer.
        ValueError: if it is negative or beyond any buffer (``itemsize`` bytes per element).
    """
    n = as_int(v, fname, what)
    if n < 0:
        raise ValueError(f"{fname}: {what} must be >= 0, got {n}")
    if n * max(itemsize, 1) > MAX_NBYTES:
        raise ValueError(f"{fname}: {what} {n} is too large: {n} elements of {itemsize} bytes are more than "
                         f"any buffer can hold (at most 2**63 - 1 bytes)")
    return n


def _int_bounds(d: DType) -> tuple[int, int]:
    if d.kind == "i":
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


def store_value(value: Any, d: DType, fname: str) -> Any:
    """``value`` (a Python or NumPy scalar) checked for storage in a tensor of dtype ``d``.

    Returns the Python scalar to store.  Integer dtypes take integers, and floats only when they
    are integral (``2.0`` is stored as 2; ``2.5`` raises, as bigarray does, rather than
    truncating); bool takes ``True``/``False`` and the numbers 0 and 1; real floats take any
    real number; complex dtypes any number.  Object tensors take anything.

    Raises:
        TypeError: if ``value`` is not a number (a str, None, a Tensor), or is complex for a
            real dtype.
        ValueError: if it is out of an integer dtype's range, not integral (or NaN/infinite)
            for an integer dtype, or not 0/1 for bool.
    """
    k = d.kind
    if k == "O":
        return value
    tv = type(value)
    if tv is int:  # the common case first
        if k in "iu":
            lo, hi = _int_bounds(d)
            if lo <= value <= hi:
                return value
            raise ValueError(f"{fname}: value {value} is out of range for {d} (expected {lo} <= value <= {hi})")
        if k == "b":
            if value == 0 or value == 1:
                return bool(value)
            raise ValueError(f"{fname}: value {value} cannot be stored in bool (expected True, False, 0 or 1)")
        if -(1 << 1024) < value < 1 << 1024:
            return value
        raise ValueError(f"{fname}: value {value} is too large for {d} (beyond the float64 range, about 1.8e308)")
    if tv is bool:
        return value
    if tv is float and k in "fc":
        return value
    if hasattr(value, "shape") and getattr(value, "ndim", 0) != 0 or type(value).__name__ == "Tensor":
        raise TypeError(f"{fname}: value must be a Python scalar, got a {type(value).__name__}; "
                        f"use .item() or a *_like function")
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{fname}: value must be a number, got {type(value).__name__} {value!r}")
    if hasattr(value, "__index__") and not isinstance(value, complex):  # NumPy ints and bools
        iv = operator.index(value)
        if type(value).__name__ in ("bool", "bool_"):
            return bool(iv)
        return store_value(iv, d, fname)
    if isinstance(value, complex) or (hasattr(value, "__complex__") and not hasattr(value, "__float__")) \
            or type(value).__name__.startswith("complex"):
        if k != "c":
            raise TypeError(f"{fname}: complex value {value!r} cannot be stored in {d}"
                            + ("; use a complex dtype" if k == "f" else ""))
        return complex(value)
    if not hasattr(value, "__float__"):
        raise TypeError(f"{fname}: value must be a number, got {type(value).__name__} {value!r}")
    f = float(value)
    if k in "fc":
        return value if tv is float else f
    if k == "b":
        if f == 0.0 or f == 1.0:
            return f == 1.0
        raise ValueError(f"{fname}: value {f} cannot be stored in bool (expected True, False, 0 or 1)")
    if f != f or f in (float("inf"), float("-inf")):
        raise ValueError(f"{fname}: value {f} cannot be stored in {d} (expected a finite number)")
    if not f.is_integer():
        raise ValueError(f"{fname}: value {f} is not an integer; {d} stores integers only "
                         f"(round it first: round(), math.floor() or math.trunc())")
    return store_value(int(f), d, fname)


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
