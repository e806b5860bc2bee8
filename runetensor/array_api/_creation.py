"""Creation functions of the Array API standard."""
from __future__ import annotations

import builtins
import math
from typing import Any, Sequence

from .. import _dtypes as D
from .._backend import get_backend
from .._dtypes import DType
from .._tensor import Tensor, as_tensor, wrap
from .._validate import MAX_NBYTES, alloc_error, as_shape, check_alloc, check_count
from ._common import PY_SCALARS, arr, check_device, dtype_arg, index_range

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


def _alloc(fname: str, shape: tuple[int, ...], d: DType, make: Any, *args: Any) -> Any:
    """``make(*args)`` (a backend call making a fresh handle of ``shape`` and dtype ``d``), after
    checking that such a buffer can exist; a failed allocation raises ``MemoryError`` naming
    ``fname``, the size, the shape and the dtype (as ``rt.zeros``)."""
    check_alloc(shape, d, fname)
    try:
        return make(*args)
    except MemoryError:
        raise alloc_error(fname, shape, d) from None


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
    be = get_backend()
    if not all_int:
        vals = [builtins.float(v) for v in vals]
    else:
        vals = [builtins.int(v) for v in vals]
    if all_int:
        n = builtins.max(0, -((vals[0] - vals[1]) // vals[2]))  # ceil((stop - start) / step), exactly
    else:
        q = (vals[1] - vals[0]) / vals[2]
        if not q <= MAX_NBYTES:  # inf (overflow, or a tiny step) or beyond any buffer
            raise ValueError(f"arange: {vals[0]} to {vals[1]} in steps of {vals[2]} is more than 2**63 "
                             f"values; expected a range that fits a buffer")
        n = builtins.max(0, math.ceil(q))
    check_alloc((n,), d, "arange")
    if all_int and n and d.kind in "iu":
        from ._data_types import iinfo
        info = iinfo(d)
        last = vals[0] + (n - 1) * vals[2]
        if not (info.min <= vals[0] <= info.max and info.min <= last <= info.max):
            raise ValueError(f"arange: values {vals[0]} .. {last} do not fit {d} "
                             f"(expected {info.min} .. {info.max})")
    try:
        if all_int and d.kind in "iu":
            h = be.arange(vals[0], vals[0] + n * vals[2], vals[2], d) if n else be.empty((0,), d)
        else:
            # start + i*step, computed in float64: exactly n elements
            i = be.arange(0, n, 1, D.float64)
            h = be.binary("add", be.binary("mul", i, builtins.float(vals[2])), builtins.float(vals[0]))
            if d is not D.float64:
                h = be.cast(h, d)
    except MemoryError:
        raise alloc_error("arange", (n,), d) from None
    return wrap(h, d, be)


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
    d = dtype_arg(dtype, "asarray")
    if isinstance(obj, Tensor):
        if d is None or d is obj._dtype:
            if copy:
                return wrap(obj._backend.copy(obj._data), obj._dtype, obj._backend)
            return obj
        if copy is False:
            raise ValueError(f"asarray: converting {obj._dtype} to {d} needs a copy, but copy=False")
        return wrap(obj._backend.cast(obj._data, d), d, obj._backend)
    if isinstance(obj, PY_SCALARS):
        if copy is False:
            raise ValueError("asarray: making an array from a Python scalar needs a copy, but copy=False")
        d2 = d or _scalar_dtype(obj)
        if d2.kind in "iu" and isinstance(obj, builtins.int):
            from ._data_types import iinfo
            info = iinfo(d2)
            if not info.min <= obj <= info.max:
                # the standard leaves it unspecified: the project's ValueError, as rt.asarray
                raise ValueError(f"asarray: value {obj} is out of range for {d2} "
                                 f"(expected {info.min} <= value <= {info.max})")
        be = get_backend()
        return wrap(be.full((), obj, d2), d2, be)
    if isinstance(obj, (list, tuple)) and copy is False:
        raise ValueError("asarray: making an array from a Python sequence needs a copy, but copy=False")
    if not isinstance(obj, (list, tuple)) and hasattr(obj, "__dlpack__") and not hasattr(obj, "__array__") \
            and not _has_buffer(obj):
        return from_dlpack(obj, copy=copy) if d is None else asarray(from_dlpack(obj, copy=copy), dtype=d)
    t = as_tensor(obj, "asarray", dtype=d, copy=copy)
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


def _shape(shape: Any, fname: str) -> tuple[int, ...]:
    return as_shape(shape, fname)


def empty(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> Tensor:
    """An uninitialised array of ``shape`` (dtype default float64).

    >>> import runetensor.array_api as xp
    >>> xp.empty((2, 3)).shape
    (2, 3)
    """
    check_device(device, "empty")
    d = dtype_arg(dtype, "empty") or D.default_float
    be = get_backend()
    shp = _shape(shape, "empty")
    return wrap(_alloc("empty", shp, d, be.empty, shp, d), d, be)


def _full(shape: tuple[int, ...], value: Any, d: DType, fname: str) -> Tensor:
    be = get_backend()
    return wrap(_alloc(fname, shape, d, be.full, shape, value, d), d, be)


def zeros(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> Tensor:
    """An array of zeros (dtype default float64).

    >>> import runetensor.array_api as xp
    >>> print(xp.zeros(3, dtype=xp.int8))
    [0, 0, 0]
    """
    check_device(device, "zeros")
    return _full(_shape(shape, "zeros"), 0, dtype_arg(dtype, "zeros") or D.default_float, "zeros")


def ones(shape: int | Sequence[int], *, dtype: Any = None, device: Any = None) -> Tensor:
    """An array of ones (dtype default float64).

    >>> import runetensor.array_api as xp
    >>> print(xp.ones((2, 2)))
    [[1, 1],
     [1, 1]]
    """
    check_device(device, "ones")
    return _full(_shape(shape, "ones"), 1, dtype_arg(dtype, "ones") or D.default_float, "ones")


def _fill_value(fill_value: Any, d: DType | None, fname: str) -> tuple[Any, DType]:
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
            from ._data_types import iinfo
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
    return _full(_shape(shape, "full"), v, d, "full")


def _like(x: Any, dtype: Any, device: Any, fname: str) -> tuple[Tensor, DType]:
    x = arr(x, fname)
    check_device(device, fname)
    return x, dtype_arg(dtype, fname) or x._dtype


def empty_like(x: Tensor, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """An uninitialised array with ``x``'s shape (and dtype, unless given).

    >>> import runetensor.array_api as xp
    >>> xp.empty_like(xp.ones((2, 1), dtype=xp.int8)).dtype
    rt.int8
    """
    x, d = _like(x, dtype, device, "empty_like")
    shp = x._data.shape
    return wrap(_alloc("empty_like", shp, d, x._backend.empty, shp, d), d, x._backend)


def zeros_like(x: Tensor, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Zeros with ``x``'s shape (and dtype, unless given).

    >>> import runetensor.array_api as xp
    >>> print(xp.zeros_like(xp.asarray([1.5, 2.5])))
    [0, 0]
    """
    x, d = _like(x, dtype, device, "zeros_like")
    shp = x._data.shape
    return wrap(_alloc("zeros_like", shp, d, x._backend.full, shp, 0, d), d, x._backend)


def ones_like(x: Tensor, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Ones with ``x``'s shape (and dtype, unless given).

    >>> import runetensor.array_api as xp
    >>> print(xp.ones_like(xp.asarray([True, False])))
    [true, true]
    """
    x, d = _like(x, dtype, device, "ones_like")
    shp = x._data.shape
    return wrap(_alloc("ones_like", shp, d, x._backend.full, shp, 1, d), d, x._backend)


def full_like(x: Tensor, /, fill_value: bool | int | float | complex, *, dtype: Any = None,
              device: Any = None) -> Tensor:
    """``fill_value`` with ``x``'s shape (and dtype, unless given).

    >>> import runetensor.array_api as xp
    >>> print(xp.full_like(xp.zeros(2, dtype=xp.float32), 0.5))
    [0.5, 0.5]
    """
    x, d = _like(x, dtype, device, "full_like")
    v, d = _fill_value(fill_value, d, "full_like")
    shp = x._data.shape
    return wrap(_alloc("full_like", shp, d, x._backend.full, shp, v, d), d, x._backend)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> Tensor:
    """A 2-d array with ones on the ``k``-th diagonal and zeros elsewhere.

    >>> import runetensor.array_api as xp
    >>> print(xp.eye(2, 3, k=1, dtype=xp.int32))
    [[0, 1, 0],
     [0, 0, 1]]
    """
    from .._validate import as_int
    check_device(device, "eye")
    d = dtype_arg(dtype, "eye") or D.default_float
    n = check_count(n_rows, "eye", "n_rows", d.itemsize)
    m = n if n_cols is None else check_count(n_cols, "eye", "n_cols", d.itemsize)
    k = as_int(k, "eye", "k")
    be = get_backend()
    h = _alloc("eye", (n, m), d, be.full, (n, m), 0, d)
    length = builtins.max(0, builtins.min(n, m - k) if k >= 0 else builtins.min(n + k, m))
    if length:
        diag = be.as_strided(h, (length,), (m + 1,), k if k >= 0 else -k * m)
        be.assign(diag, 1 if d.kind != "b" else True)
    return wrap(h, d, be)


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
        if copy:
            return wrap(x._backend.copy(x._data), x._dtype, x._backend)
        return x
    import runetensor as rt
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
    from .._validate import as_int
    check_device(device, "linspace")
    num = as_int(num, "linspace", "num")
    if num < 0:
        raise ValueError(f"linspace: num must be >= 0, got {num}")
    a = _number(start, "linspace", "start")
    b = _number(stop, "linspace", "stop")
    cplx = isinstance(a, builtins.complex) or isinstance(b, builtins.complex)
    d = dtype_arg(dtype, "linspace") or (D.default_complex if cplx else D.default_float)
    if cplx and d.kind != "c":
        raise TypeError(f"linspace: complex start/stop need a complex dtype, got {d}")
    if d.kind not in "fc":
        raise TypeError(f"linspace: dtype must be floating-point, got {d}")
    work = D.complex128 if d.kind == "c" else D.float64
    be = get_backend()
    div = (num - 1) if endpoint else num
    check_alloc((num,), work, "linspace")
    try:
        i = be.cast(be.arange(0, num, 1, D.int64), work)
        if div > 0:
            step = (b - a) / div
            h = be.binary("add", be.binary("mul", i, step), a)
            if endpoint and num > 1:
                be.assign(be.view_index(h, (num - 1,)), b)
        else:
            h = be.full((num,), a, work)
        if d is not work:
            h = be.cast(h, d)
    except MemoryError:
        raise alloc_error("linspace", (num,), d) from None
    return wrap(h, d, be)


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
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    ts = [arr(a, "meshgrid") for a in arrays]
    for i, t in enumerate(ts):
        if t.ndim != 1:
            raise ValueError(f"meshgrid: array {i} has shape {t.shape}; expected 1-d arrays")
    if not ts:
        return []
    from ._common import promote
    d = promote(ts, "meshgrid")
    n = len(ts)
    sizes = [t._data.shape[0] for t in ts]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out_shape = check_alloc(tuple(sizes), d, "meshgrid")
    out = []
    for i, t in enumerate(ts):
        pos = i
        if indexing == "xy" and n >= 2 and i < 2:
            pos = 1 - i
        shp = [1] * n
        shp[pos] = t._data.shape[0]
        be = t._backend
        h = be.cast(t._data, d) if t._dtype is not d else t._data
        h = be.reshape(h, tuple(shp))
        if h is None:  # pragma: no cover (a 1-d array always reshapes)
            h = be.reshape(be.copy(t._data), tuple(shp))
        try:
            out.append(wrap(be.copy(be.expand(h, out_shape)), d, be))
        except MemoryError:
            raise alloc_error("meshgrid", out_shape, d) from None
    return out


def _tri(x: Tensor, k: int, fname: str, lower: bool) -> Tensor:
    from .._validate import as_int
    x = arr(x, fname)
    k = as_int(k, fname, "k")
    if x.ndim < 2:
        raise ValueError(f"{fname}: expected an array of rank >= 2, got shape {x.shape}")
    be = x._backend
    n, m = x._data.shape[-2:]
    k = builtins.min(builtins.max(k, -n), m)  # beyond the matrix: the same all/nothing mask, no int64 overflow
    rows = be.reshape(index_range(be, n), (n, 1))
    cols = be.reshape(index_range(be, m), (1, m))
    shifted = be.binary("add", rows, k)
    mask = be.binary("ge" if lower else "le", shifted, cols)
    zero = be.full((), 0 if x._dtype.kind != "b" else False, x._dtype)
    return wrap(be.where(mask, x._data, zero), x._dtype, be)


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
    return _tri(x, k, "tril", True)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle (on and above the ``k``-th diagonal) of each matrix in ``x``; zeros elsewhere.

    Raises:
        ValueError: if ``x`` has rank < 2.

    >>> import runetensor.array_api as xp
    >>> print(xp.triu(xp.ones((2, 3), dtype=xp.int8), k=1))
    [[0, 1, 1],
     [0, 0, 1]]
    """
    return _tri(x, k, "triu", False)

