"""Creation functions of the Array API standard.

Adapters over ``runetensor._creation`` and ``runetensor._ranges`` (the one implementation of each):
they take the standard's signatures (``dtype=`` last and optional, ``device=``, ``n_rows, n_cols``),
apply its argument rules (a ``fill_value`` must suit the dtype's kind, ``linspace`` wants a
floating dtype, ``copy=False`` from Python data is an error) and call rt's functions.
"""
from __future__ import annotations

import builtins
import functools
import math
from typing import Any, Callable, Sequence

from .. import _creation as RC
from .. import _dtypes as D
from .. import _ranges as RR
from .._backend import use_backend
from .._dtypes import DType
from .._tensor import Tensor, wrap
from .._validate import as_int, store_value
from ._common import PY_SCALARS, arr, check_device, dtype_arg
from ._data_types import iinfo
import runetensor as rt

__all__ = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
           "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"]


def _scalar_dtype(v: Any) -> DType:
    t = type(v)
    if t is builtins.bool:
        return D.bool
    if isinstance(v, builtins.bool):
        return D.bool
    if isinstance(v, builtins.int):
        return D.default_int
    if isinstance(v, builtins.float):
        return D.default_float
    if isinstance(v, builtins.complex):
        return D.default_complex
    raise TypeError(f"expected a Python bool, int, float or complex, got {t.__name__} {v!r}")


def _number(v: Any, fname: str, what: str) -> Any:
    if isinstance(v, Tensor):
        if v.ndim != 0:
            raise TypeError(f"{fname}: {what} must be a scalar, got an array of shape {v.shape}")
        return v._scalar()
    if not isinstance(v, PY_SCALARS):
        try:
            return v.__index__()
        except AttributeError:
            try:
                return builtins.float(v)
            except (TypeError, ValueError):
                raise TypeError(f"{fname}: {what} must be a number, got {type(v).__name__} {v!r}") from None
    return v


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: Any = None, device: Any = None) -> Tensor:
    """Evenly spaced values in the half-open interval ``[start, stop)``.

    Args:
        start: first value, or the end of the interval if ``stop`` is None.
        stop: end of the interval (excluded).
        step: spacing (non-zero).
        dtype: output dtype; default int64 if every argument is an int, else float64.
        device: ``None`` or ``"cpu"``.
    Returns:
        A 1-d array of ``ceil((stop - start) / step)`` elements (none if that is <= 0).
    Raises:
        ValueError: if ``step`` is 0, an argument is not finite, the values do not fit an integer
            ``dtype`` or the range is beyond any buffer.
        MemoryError: naming the size, shape and dtype, if the result cannot be allocated.

    >>> import runetensor.array_api as xp
    >>> print(xp.arange(5))
    [0, 1, 2, 3, 4]
    >>> print(xp.arange(1, 2, 0.25))
    [1, 1.25, 1.5, 1.75]
    """
    check_device(device, "arange")
    if stop is None:
        start, stop = 0, start
    for v, n in ((start, "start"), (stop, "stop"), (step, "step")):
        RC.refuse_range_bound(v, n, "arange")
    vals = [_number(v, "arange", n) for v, n in ((start, "start"), (stop, "stop"), (step, "step"))]
    for v in vals:
        if isinstance(v, builtins.complex):
            raise TypeError(f"arange: complex arguments are not supported, got {v!r}")
        if isinstance(v, builtins.float) and not math.isfinite(v):
            raise ValueError(f"arange: arguments must be finite, got {v}")
    if vals[2] == 0:
        raise ValueError("arange: step must be non-zero, got 0")
    all_int = builtins.all(isinstance(v, builtins.int) for v in vals)
    d = dtype_arg(dtype, "arange") or (D.default_int if all_int else D.default_float)
    if all_int:
        return RC.arange(d, *vals)
    return RC._arange_f(d, *vals, None, True, "arange")



def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Tensor:
    """An array from an array, nested sequences, a Python scalar, a buffer or a DLPack object.

    Args:
        obj: the data.  Python scalars infer ``bool`` / int64 / float64 / complex128.
        dtype: output dtype; inferred when None.
        device: ``None`` or ``"cpu"``.
        copy: True always copies; False never does (raises ValueError when a copy is
            needed); None copies only when needed.
    Returns:
        The array (``obj`` itself when it is an array of ``dtype`` and ``copy`` is not True).
    Raises:
        ValueError: when ``copy=False`` would need a copy, or for ragged data.
        TypeError: for data that is not numeric.

    >>> import runetensor.array_api as xp
    >>> a = xp.asarray([[1, 2], [3, 4]], dtype=xp.float32)
    >>> print(a)
    [[1, 2],
     [3, 4]]
    >>> a.dtype
    rt.float32
    """
    check_device(device, "asarray")
    if isinstance(obj, Tensor) and device is not None and obj.device != device:
        obj = obj.to_device(device)  # (a Dask tensor to "cpu": computed)
    d = dtype_arg(dtype, "asarray")
    if isinstance(obj, PY_SCALARS):
        if copy is False:
            raise ValueError("asarray: making an array from a Python scalar needs a copy, but copy=False")
    elif isinstance(obj, (list, tuple)):
        if copy is False:
            raise ValueError("asarray: making an array from a Python sequence needs a copy, but copy=False")
    elif not isinstance(obj, Tensor) and hasattr(obj, "__dlpack__") and not hasattr(obj, "__array__") \
            and not _has_buffer(obj):
        return from_dlpack(obj, copy=copy) if d is None else asarray(from_dlpack(obj, copy=copy), dtype=d)
    if type(obj) is builtins.int and (d is None or d.kind in "iu"):
        store_value(obj, d or D.default_int, "asarray")  # out of range: ValueError naming the value
    t = RC.asarray(obj, d, copy)
    if t._dtype is D.object_:
        raise TypeError(f"asarray: cannot represent {type(obj).__name__} data with a standard dtype "
                        "(mixed or non-numeric values, or integers out of the int64/uint64 range)")
    return t



def _has_buffer(obj: Any) -> bool:
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def empty(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> Tensor:
    """An uninitialised array of ``shape`` (dtype default float64).

    >>> import runetensor.array_api as xp
    >>> xp.empty((2, 3)).shape
    (2, 3)
    """
    check_device(device, "empty")
    return RC.empty(dtype_arg(dtype, "empty") or D.default_float, shape)



def zeros(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> Tensor:
    """An array of zeros (dtype default float64).

    >>> import runetensor.array_api as xp
    >>> print(xp.zeros(3, dtype=xp.int8))
    [0, 0, 0]
    """
    check_device(device, "zeros")
    return RC.zeros(dtype_arg(dtype, "zeros") or D.default_float, shape)



def ones(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> Tensor:
    """An array of ones (dtype default float64).

    >>> import runetensor.array_api as xp
    >>> print(xp.ones((2, 2)))
    [[1, 1],
     [1, 1]]
    """
    check_device(device, "ones")
    return RC.ones(dtype_arg(dtype, "ones") or D.default_float, shape)



def _fill_value(fill_value: Any, d: DType | None, fname: str) -> tuple[Any, DType]:
    if (isinstance(fill_value, Tensor) and fill_value._backend.level > 0 and fill_value.ndim == 0
            and fill_value._dtype.kind in "fc" and (d is None or d.kind in "fc")):
        # a value of a running transformation fills as a tensor (rt's full: its derivative flows)
        return fill_value, d or (D.default_complex if fill_value._dtype.kind == "c" else D.default_float)
    if isinstance(fill_value, Tensor):
        if fill_value.ndim != 0:
            raise ValueError(f"{fname}: fill_value must be a scalar, got an array of shape {fill_value.shape}")
        fill_value = fill_value._scalar() if d is None or d.kind != "O" else fill_value._scalar()
    if not isinstance(fill_value, PY_SCALARS) and getattr(fill_value, "shape", None) == () \
            and hasattr(fill_value, "item"):
        fill_value = fill_value.item()  # a NumPy (or other library's) scalar
    if not isinstance(fill_value, PY_SCALARS):
        raise TypeError(f"{fname}: fill_value must be a bool, int, float or complex, got "
                        f"{type(fill_value).__name__} {fill_value!r}")
    if d is None:
        d = _scalar_dtype(fill_value)
    if d.kind in "iu" and not isinstance(fill_value, builtins.bool):
        if isinstance(fill_value, builtins.int):
            info = iinfo(d)
            if not info.min <= fill_value <= info.max:
                # the standard leaves it unspecified: the project's ValueError, as rt.full
                raise ValueError(f"{fname}: fill_value {fill_value} is out of range for {d} "
                                 f"(expected {info.min} <= fill_value <= {info.max})")
        elif not isinstance(fill_value, builtins.int):
            raise TypeError(f"{fname}: fill_value {fill_value!r} does not fit an integer dtype ({d})")
    if d.kind == "b" and not isinstance(fill_value, builtins.bool):
        raise TypeError(f"{fname}: fill_value {fill_value!r} is not a bool, but dtype is bool")
    if d.kind == "f" and isinstance(fill_value, builtins.complex):
        raise TypeError(f"{fname}: complex fill_value {fill_value!r} with real dtype {d}")
    return fill_value, d


def full(shape: int | Sequence[int], fill_value: bool | int | float | complex, *, dtype: Any = None,
         device: Any = None) -> Tensor:
    """An array of ``shape`` filled with ``fill_value``.

    The dtype defaults to that of the scalar: bool, int64, float64 or complex128.

    Raises:
        TypeError: if ``fill_value`` does not suit ``dtype`` (a float for an integer dtype...).
        ValueError: if an integer ``fill_value`` is out of ``dtype``'s range, or the shape is
            beyond any buffer.
        MemoryError: naming the size, shape and dtype, if the result cannot be allocated.

    >>> import runetensor.array_api as xp
    >>> a = xp.full((2,), 7)
    >>> print(a)
    [7, 7]
    >>> a.dtype
    rt.int64
    """
    check_device(device, "full")
    v, d = _fill_value(fill_value, dtype_arg(dtype, "full"), "full")
    return RC._full(d, shape, v, "full")



def _like(x: Any, dtype: Any, device: Any, fname: str) -> tuple[Tensor, DType]:
    x = arr(x, fname)
    check_device(device, fname)
    if device is not None and x.device != device:  # the shape on the other device (see _on_device)
        x = RC.empty(x._dtype, x.shape)
    return x, dtype_arg(dtype, fname) or x._dtype


def empty_like(x: Tensor, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """An uninitialised array with ``x``'s shape (and dtype, unless given).

    >>> import runetensor.array_api as xp
    >>> xp.empty_like(xp.ones((2, 1), dtype=xp.int8)).dtype
    rt.int8
    """
    x, d = _like(x, dtype, device, "empty_like")
    return RC._fill_like(x, None, "empty_like", d)



def zeros_like(x: Tensor, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Zeros with ``x``'s shape (and dtype, unless given).

    >>> import runetensor.array_api as xp
    >>> print(xp.zeros_like(xp.asarray([1.5, 2.5])))
    [0, 0]
    """
    x, d = _like(x, dtype, device, "zeros_like")
    return RC._fill_like(x, 0, "zeros_like", d)



def ones_like(x: Tensor, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Ones with ``x``'s shape (and dtype, unless given).

    >>> import runetensor.array_api as xp
    >>> print(xp.ones_like(xp.asarray([True, False])))
    [true, true]
    """
    x, d = _like(x, dtype, device, "ones_like")
    return RC._fill_like(x, 1, "ones_like", d)



def full_like(x: Tensor, /, fill_value: bool | int | float | complex, *, dtype: Any = None,
              device: Any = None) -> Tensor:
    """``fill_value`` with ``x``'s shape (and dtype, unless given).

    >>> import runetensor.array_api as xp
    >>> print(xp.full_like(xp.zeros(2, dtype=xp.float32), 0.5))
    [0.5, 0.5]
    """
    x, d = _like(x, dtype, device, "full_like")
    v, d = _fill_value(fill_value, d, "full_like")
    if isinstance(v, Tensor):
        return RC._full(d, x.shape, v, "full_like")
    return RC._fill_like(x, v, "full_like", d)



def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> Tensor:
    """A 2-d array with ones on the ``k``-th diagonal and zeros elsewhere.

    >>> import runetensor.array_api as xp
    >>> print(xp.eye(2, 3, k=1, dtype=xp.int32))
    [[0, 1, 0],
     [0, 0, 1]]
    """
    check_device(device, "eye")
    d = dtype_arg(dtype, "eye") or D.default_float
    # rt's eye takes (columns, rows)
    return RR._eye(d, n_rows if n_cols is None else n_cols, n_rows, k, "eye")



def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """An array from an object supporting DLPack (``__dlpack__``), shared without copying when possible.

    Calls ``runetensor.from_dlpack`` (NumPy, PyTorch, JAX... arrays on the CPU).

    Raises:
        ValueError: for an unsupported device, or ``copy=False`` when a copy is needed.
        TypeError: for an object that does not support DLPack.

    >>> import runetensor.array_api as xp
    >>> a = xp.asarray([1, 2, 3])
    >>> print(xp.from_dlpack(a))
    [1, 2, 3]
    """
    check_device(device, "from_dlpack")
    if isinstance(x, Tensor):
        if device is not None and x.device != device:
            if copy is False:
                raise ValueError(f"from_dlpack: moving a tensor from {x.device!r} to {device!r} needs a copy, "
                                 "but copy=False")
            return x.to_device(device)
        if copy:
            return wrap(x._backend.copy(x._data), x._dtype, x._backend)
        return x
    return rt.from_dlpack(x, copy=copy)


def linspace(start: int | float | complex, stop: int | float | complex, /, num: int, *,
             dtype: Any = None, device: Any = None, endpoint: bool = True) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included if ``endpoint``).

    The dtype defaults to float64 (complex128 if either end is complex).

    Raises:
        ValueError: if ``num`` is negative or beyond any buffer.
        MemoryError: naming the size, shape and dtype, if the result cannot be allocated.

    >>> import runetensor.array_api as xp
    >>> print(xp.linspace(0, 1, 5))
    [0, 0.25, 0.5, 0.75, 1]
    >>> print(xp.linspace(0, 1, 4, endpoint=False))
    [0, 0.25, 0.5, 0.75]
    """
    check_device(device, "linspace")
    num = as_int(num, "linspace", "num")
    if num < 0:
        raise ValueError(f"linspace: num must be >= 0, got {num}")
    # a bound of a running transformation goes to rt's linspace as a tensor (its derivative flows)
    a = start if RR._traced(start) else _number(start, "linspace", "start")
    b = stop if RR._traced(stop) else _number(stop, "linspace", "stop")
    cplx = any(isinstance(v, builtins.complex) or isinstance(v, Tensor) and v._dtype.kind == "c" for v in (a, b))
    d = dtype_arg(dtype, "linspace") or (D.default_complex if cplx else D.default_float)
    if cplx and d.kind != "c":
        raise TypeError(f"linspace: complex start/stop need a complex dtype, got {d}")
    if d.kind not in "fc":
        raise TypeError(f"linspace: dtype must be floating-point, got {d}")
    return RR.linspace(d, a, b, num, endpoint)



def meshgrid(*arrays: Tensor, indexing: str = "xy") -> list[Tensor]:
    """Coordinate arrays from 1-d coordinate vectors.

    Args:
        arrays: 1-d arrays (they are promoted to one dtype).
        indexing: ``"xy"`` (Cartesian: the first two output axes swapped) or ``"ij"`` (matrix).
    Returns:
        A list of N arrays of rank N (fresh copies).
    Raises:
        ValueError: for a bad ``indexing`` or an array that is not 1-d.

    >>> import runetensor.array_api as xp
    >>> X, Y = xp.meshgrid(xp.asarray([1, 2, 3]), xp.asarray([4, 5]))
    >>> print(X)
    [[1, 2, 3],
     [1, 2, 3]]
    >>> print(Y)
    [[4, 4, 4],
     [5, 5, 5]]
    """
    return RR._meshgrid([arr(a, "meshgrid") for a in arrays], indexing)



def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The lower triangle (on and below the ``k``-th diagonal) of each matrix in ``x``; zeros elsewhere.

    Raises:
        ValueError: if ``x`` has rank < 2.

    >>> import runetensor.array_api as xp
    >>> print(xp.tril(xp.ones((3, 3), dtype=xp.int8)))
    [[1, 0, 0],
     [1, 1, 0],
     [1, 1, 1]]
    """
    return RR.tril(x, k)



def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle (on and above the ``k``-th diagonal) of each matrix in ``x``; zeros elsewhere.

    Raises:
        ValueError: if ``x`` has rank < 2.

    >>> import runetensor.array_api as xp
    >>> print(xp.triu(xp.ones((2, 3), dtype=xp.int8), k=1))
    [[0, 1, 1],
     [0, 0, 1]]
    """
    return RR.triu(x, k)


def _on_device(fn: Callable) -> Callable:
    """``fn`` creating on the backend of its ``device=`` argument (``"cpu"``: NumPy, ``"dask"``: Dask;
    None: the default backend)."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        be = check_device(kwargs.get("device"), fn.__name__)
        if be is None:
            return fn(*args, **kwargs)
        with use_backend(be):
            return fn(*args, **kwargs)
    return call


for _name in ("arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
              "ones", "ones_like", "zeros", "zeros_like"):
    globals()[_name] = _on_device(globals()[_name])
del _name
