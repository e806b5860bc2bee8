"""Creation: tensors from data, constants and ranges (seed section "creation").

The functions take the dtype first, as the seed does: ``rt.zeros(rt.float32, [2, 3])``.
"""
from __future__ import annotations

import builtins
import itertools
import math
from typing import Any, Callable, Sequence

from . import _dtypes as D
from ._backend import get_backend, use_backend
from ._dtypes import DType
from ._tensor import Tensor, as_tensor, attach, wrap
from ._validate import MAX_NBYTES, alloc_error, as_dtype, as_int, as_shape, check_alloc, store_value
from ._combine import _stack
from ._tensor import common_backend
from ._dask_collection import _rechunk

__all__ = ["create", "init", "empty", "full", "ones", "zeros", "scalar", "empty_like", "full_like",
           "ones_like", "zeros_like", "scalar_like", "asarray", "to_numpy", "from_numpy", "arange", "arange_f",
           "use_backend", "to_backend"]


def int_range(d: DType) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype."""
    if d.kind == "i":
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


def create(dtype: Any, shape: Sequence[int], data: Sequence[Any], backend: Any = None) -> Tensor:
    """A tensor of ``shape`` from the flat sequence ``data`` (row-major).

    Args:
        dtype: element type, e.g. ``rt.float32``.
        shape: dimension sizes.
        data: ``prod(shape)`` values.
        backend: the backend's name (``"numpy"``, ``"dask"``); None: the default (``rt.use_backend``).
    Returns:
        A new C-contiguous tensor.
    Raises:
        ValueError: if ``len(data)`` differs from the shape's size, or a value does not fit.

    >>> import runetensor as rt
    >>> print(rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.]))
    [[1, 2, 3],
     [4, 5, 6]]
    """
    return _create(dtype, shape, data, "create", backend)


def _create(dtype: Any, shape: Any, data: Any, fname: str, backend: Any = None) -> Tensor:
    d = as_dtype(dtype, fname)
    shp = as_shape(shape, fname)
    n = 1
    for s in shp:
        n *= s
    if isinstance(data, Tensor):
        if data._backend.level > 0 and d.kind in "fc":  # inside a transformation: keep the derivative
            if data.size != n:
                raise ValueError(f"{fname}: data has {data.size} elements but shape {shp} needs {n}")
            be, h = data._backend, data._data
            h = be.copy(h) if data._dtype is d else be.cast(h, d)
            return wrap(be.reshape(be.contiguous(h), shp), d, be)
        data = data._backend.to_list(data._backend.reshape(data._backend.contiguous(data._data), (data.size,)))
    try:
        items = list(data)
    except TypeError:
        raise TypeError(f"{fname}: data must be a sequence of values, got {type(data).__name__}") from None
    if len(items) != n:
        raise ValueError(f"{fname}: data has {len(items)} elements but shape {shp} needs {n}")
    if d.kind != "O" and not (d.kind in "fc" and all(type(v) is builtins.float for v in items)):
        # every value as full() checks it: no silent truncation of 2.5 into an integer dtype
        items = [v if isinstance(v, Tensor) else store_value(v, d, fname) for v in items]
    be = get_backend(backend)
    if d.kind != "O" and be.level > 0 and _holds_traced(items):
        flat = _stack_nested(items, d, fname)
        return wrap(flat._backend.reshape(flat._data, shp), d, flat._backend)
    flat = as_tensor(items, fname, dtype=d, backend=be) if d.kind != "O" else _object_flat(items, be)
    h = be.reshape(flat._data, shp)
    return wrap(h, d, be)


def _holds_traced(obj: Any) -> builtins.bool:
    """Whether the (nested) list or tuple ``obj`` holds a tensor of a running transformation."""
    for e in obj:
        if isinstance(e, Tensor):
            if e._backend.level > 0:
                return True
        elif isinstance(e, (list, tuple)) and _holds_traced(e):
            return True
    return False


def _leaves(obj: Any, out: list) -> list:
    for e in obj:
        if isinstance(e, (list, tuple)):
            _leaves(e, out)
        else:
            out.append(e)
    return out


def _stack_nested(obj: Any, d: DType | None, fname: str) -> Tensor:
    """A tensor from nested lists holding tensors of a running transformation, built with ``stack``
    so that derivatives (and ``vmap``'s lanes) flow through it, as they do through ``rt.stack``.
    ``d`` None: the tensors' promoted dtype, combined with the Python numbers' kinds (weak typing)."""
    leaves = _leaves(obj, [])
    for v in leaves:
        if not isinstance(v, Tensor) and type(v) not in (builtins.bool, builtins.int, builtins.float,
                                                          builtins.complex):
            if not hasattr(v, "__float__") and not hasattr(v, "__complex__") and not hasattr(v, "shape"):
                raise TypeError(f"{fname}: cannot make a tensor from a list holding {type(v).__name__} {v!r:.40}; "
                                "expected numbers and tensors")
    ts = [v if isinstance(v, Tensor) else as_tensor(v, fname) for v in leaves if not isinstance(v, _PY_NUMBERS)]
    if d is None:
        for t in ts:
            d = t._dtype if d is None else D.promote_types(d, t._dtype)
        for v in leaves:
            if isinstance(v, _PY_NUMBERS):
                d = D.weak_result(d, v)
    assert d is not None
    be = common_backend(fname, *ts)

    def build(x: Any) -> Tensor:
        if isinstance(x, (list, tuple)):
            if not x:
                raise ValueError(f"{fname}: cannot make a tensor from a list holding tensors and an empty list")
            return _stack([build(e) for e in x], 0, fname)
        if isinstance(x, _PY_NUMBERS):
            return wrap(be.full((), store_value(x, d, fname), d), d, be)
        t = x if isinstance(x, Tensor) else as_tensor(x, fname)
        return t if t._dtype is d else wrap(t._backend.cast(t._data, d), d, t._backend)

    try:
        return build(obj)
    except ValueError as e:
        msg = str(e)
        if msg.startswith(fname + ":"):
            raise
        raise ValueError(f"{fname}: cannot make a tensor from these nested lists: {msg}") from None


_PY_NUMBERS = (builtins.bool, builtins.int, builtins.float, builtins.complex)


def _object_flat(items: list, be: Any) -> Tensor:
    return wrap(_object_vector(items, be), D.object_, be)


def _object_vector(items: list, be: Any) -> Any:
    h = be.empty((len(items),), D.object_)
    for i, v in enumerate(items):
        be.scatter(h, (i,), v)
    return h


def init(dtype: Any, shape: Sequence[int], f: Callable[[list[int]], Any]) -> Tensor:
    """A tensor whose element at index ``i`` (a list of ints) is ``f(i)``.

    >>> import runetensor as rt
    >>> print(rt.init(rt.int32, [2, 3], lambda i: i[0] + i[1]))
    [[0, 1, 2],
     [1, 2, 3]]
    """
    d = as_dtype(dtype, "init")
    shp = as_shape(shape, "init")
    if not callable(f):
        raise TypeError(f"init: f must be callable, got {type(f).__name__}")
    check_alloc(shp, d, "init")
    n = 1
    for s in shp:
        n *= s
    if n > 1 << 16:
        # fail fast, before calling f: a result that cannot be allocated raises MemoryError here
        # (the buffer is only reserved, never touched, so this costs no page faults)
        be = get_backend()
        try:
            be.empty(shp, d)
        except MemoryError:
            raise alloc_error("init", shp, d) from None
    try:
        values = [f(list(idx)) for idx in itertools.product(*(range(s) for s in shp))]
        return _create(d, shp, values, "init")
    except MemoryError as e:  # the Python list of values (8 bytes and more per element) did not fit
        if getattr(e, "_rt_named", False):
            raise  # an op inside f failed: its own message (named by the backend) stands
        raise alloc_error("init", shp, d) from None


def empty(dtype: Any, shape: Sequence[int], backend: Any = None) -> Tensor:
    """An uninitialised tensor (its values are whatever the memory held).

    >>> import runetensor as rt
    >>> rt.empty(rt.float32, [2, 3]).shape
    (2, 3)
    """
    d = as_dtype(dtype, "empty")
    be = get_backend(backend)
    shp = check_alloc(as_shape(shape, "empty"), d, "empty")
    try:
        return wrap(be.empty(shp, d), d, be)
    except MemoryError:
        raise alloc_error("empty", shp, d) from None


def full(dtype: Any, shape: Sequence[int], value: Any, backend: Any = None) -> Tensor:
    """A tensor filled with ``value``.

    An integer dtype takes integers and integral floats (``2.0``); a non-integral float
    (``2.5``), NaN or infinity raises instead of being truncated (as bigarray does).  A bool
    tensor takes ``True``/``False`` and the numbers 0 and 1.  The value may be a one-element
    tensor (its value is used); inside a transformation (``grad``, ``jvp``, ``vmap``) a float or
    complex tensor is filled from it, so that the derivative flows from the value to every element
    (``full_like``, ``scalar`` and ``scalar_like`` too).

    Raises:
        ValueError: if the value does not fit the dtype (out of range, not integral, NaN or
            infinite for an integer dtype; not 0/1 for bool), or the shape is beyond any buffer.
        TypeError: if ``value`` is not a number (or is complex for a real dtype).
        MemoryError: naming the shape and dtype, if the memory cannot be allocated.

    >>> import runetensor as rt
    >>> print(rt.full(rt.float32, [2, 3], 3.14))
    [[3.14, 3.14, 3.14],
     [3.14, 3.14, 3.14]]
    """
    return _full(dtype, shape, value, "full", backend)


def _full(dtype: Any, shape: Any, value: Any, fname: str, backend: Any = None) -> Tensor:
    d = as_dtype(dtype, fname)
    shp = check_alloc(as_shape(shape, fname), d, fname)
    if value.__class__ not in _PY_NUMBERS and isinstance(value, Tensor):
        if value._backend.level > 0 and d.kind in "fc":
            return _fill_traced(value, d, shp, fname)
        value = _one_value(value)
    value = store_value(value, d, fname)
    be = get_backend(backend)
    try:
        return wrap(be.full(shp, value, d), d, be)
    except MemoryError:
        raise alloc_error(fname, shp, d) from None


def _one_value(value: Tensor) -> Any:
    """The Python scalar of a one-element tensor (a fill value); any other tensor as it is (refused by
    ``store_value``)."""
    return value._scalar() if value.size == 1 else value


def _fill_traced(value: Tensor, d: DType, shape: tuple[int, ...], fname: str) -> Tensor:
    """A fresh tensor of ``shape`` filled with the one-element ``value``, a tensor of a running
    transformation: broadcast from it, so that its derivative (and ``vmap``'s lanes) flow through."""
    k = value._dtype.kind
    if value.size != 1:
        raise TypeError(f"{fname}: value must be a number or a one-element tensor, got a tensor of shape "
                        f"{value.shape}")
    if k == "c" and d.kind != "c" or k not in "biufc":
        raise TypeError(f"{fname}: a {value._dtype} value cannot fill a {d} tensor")
    be = value._backend
    h = be.reshape(value._data, ())
    h = be.cast(h, d) if value._dtype is not d else h
    try:
        return wrap(be.copy(be.expand(h, shape)), d, be)
    except MemoryError:
        raise alloc_error(fname, shape, d) from None


def ones(dtype: Any, shape: Sequence[int], backend: Any = None) -> Tensor:
    """A tensor of ones.

    >>> import runetensor as rt
    >>> print(rt.ones(rt.int8, [3]))
    [1, 1, 1]
    """
    d = as_dtype(dtype, "ones")
    be = get_backend(backend)
    shp = check_alloc(as_shape(shape, "ones"), d, "ones")
    try:
        return wrap(be.full(shp, 1, d), d, be)
    except MemoryError:
        raise alloc_error("ones", shp, d) from None


def zeros(dtype: Any, shape: Sequence[int], backend: Any = None) -> Tensor:
    """A tensor of zeros.

    >>> import runetensor as rt
    >>> print(rt.zeros(rt.bool, [2]))
    [false, false]
    """
    d = as_dtype(dtype, "zeros")
    be = get_backend(backend)
    shp = check_alloc(as_shape(shape, "zeros"), d, "zeros")
    try:
        return wrap(be.full(shp, 0, d), d, be)
    except MemoryError:
        raise alloc_error("zeros", shp, d) from None


def scalar(dtype: Any, value: Any, backend: Any = None) -> Tensor:
    """A 0-d tensor holding ``value``.

    >>> import runetensor as rt
    >>> print(rt.scalar(rt.float32, 2.5))
    2.5
    >>> rt.scalar(rt.int32, 7).shape
    ()
    """
    return _full(dtype, (), value, "scalar", backend)


def empty_like(t: Tensor) -> Tensor:
    """An uninitialised tensor with ``t``'s shape and dtype.

    >>> import runetensor as rt
    >>> e = rt.empty_like(rt.zeros(rt.int16, [2, 3])); e.shape, e.dtype
    ((2, 3), rt.int16)
    """
    return _fill_like(as_tensor(t, "empty_like"), None, "empty_like")


def full_like(t: Tensor, value: Any) -> Tensor:
    """A tensor with ``t``'s shape and dtype filled with ``value``.

    >>> import runetensor as rt
    >>> print(rt.full_like(rt.zeros(rt.int32, [2]), 7))
    [7, 7]
    """
    t = as_tensor(t, "full_like")
    if isinstance(value, Tensor):
        if value._backend.level > 0 and t._dtype.kind in "fc":
            return _fill_traced(value, t._dtype, t.shape, "full_like")
        value = _one_value(value)
    return _fill_like(t, store_value(value, t._dtype, "full_like"), "full_like")


def _fill_like(t: Tensor, value: Any, fname: str, d: DType | None = None) -> Tensor:
    """A tensor of ``t``'s shape (and backend) and dtype ``d`` (default ``t``'s) filled with ``value``
    (a checked scalar; None: uninitialised).  The ``*_like`` functions of rt and of array_api (which
    take ``dtype=``)."""
    if d is None:
        d = t._dtype
    be = t._backend
    try:
        h = be.empty(t.shape, d) if value is None else be.full(t.shape, value, d)
    except MemoryError:
        raise alloc_error(fname, t.shape, d) from None
    return wrap(h, d, be)


def ones_like(t: Tensor) -> Tensor:
    """Ones with ``t``'s shape and dtype.

    >>> import runetensor as rt
    >>> print(rt.ones_like(rt.zeros(rt.float32, [2, 2])))
    [[1, 1],
     [1, 1]]
    """
    return _fill_like(as_tensor(t, "ones_like"), 1, "ones_like")


def zeros_like(t: Tensor) -> Tensor:
    """Zeros with ``t``'s shape and dtype.

    >>> import runetensor as rt
    >>> print(rt.zeros_like(rt.ones(rt.int8, [3])))
    [0, 0, 0]
    """
    return _fill_like(as_tensor(t, "zeros_like"), 0, "zeros_like")


def scalar_like(t: Tensor, value: Any) -> Tensor:
    """A 0-d tensor of ``t``'s dtype holding ``value``.

    >>> import runetensor as rt
    >>> rt.scalar_like(rt.zeros(rt.int16, [3]), 4).dtype
    rt.int16
    """
    t = as_tensor(t, "scalar_like")
    if isinstance(value, Tensor):
        if value._backend.level > 0 and t._dtype.kind in "fc":
            return _fill_traced(value, t._dtype, (), "scalar_like")
        value = _one_value(value)
    value = store_value(value, t._dtype, "scalar_like")
    return wrap(t._backend.full((), value, t._dtype), t._dtype, t._backend)


def asarray(obj: Any, dtype: Any = None, copy: bool | None = None, backend: Any = None,
            chunks: Any = None) -> Tensor:
    """A tensor from nested lists, scalars, NumPy arrays, buffers or tensors.

    Args:
        obj: the data.  A NumPy array (or anything with ``__array__`` or the
            buffer protocol: ``bytearray``, ``memoryview``, ``array.array``) is
            shared without copying when ``dtype`` matches; ``bytes`` (immutable)
            are copied into a uint8 tensor.
        dtype: element type; inferred when None (Python ``int`` -> int64,
            ``float`` -> float64, ``bool`` -> bool, ``complex`` -> complex128).
        copy: None shares memory when possible, True always copies, False
            raises if a copy would be needed.
        backend: the backend's name (``"numpy"``, ``"dask"``); None: the default.  A tensor of
            another backend is converted (``t.to_backend``).
        chunks: the Dask backend's chunking (``"auto"``, an int, a tuple per axis...).
    Raises:
        ValueError: for ragged nested lists or values out of range.
        TypeError: for data that cannot form a tensor.

    >>> import runetensor as rt
    >>> t = rt.asarray([[1, 2], [3, 4]])
    >>> t.dtype, t.shape
    (rt.int64, (2, 2))
    """
    if backend is not None or chunks is not None:
        return _asarray_on(obj, dtype, copy, get_backend(backend), chunks)
    if isinstance(obj, Tensor):
        t = as_tensor(obj, "asarray", dtype=dtype)
        if copy and t is obj:
            return wrap(t._backend.copy(t._data), t._dtype, t._backend)
        if copy is False and t is not obj:
            raise ValueError(f"asarray: converting {obj.dtype} to {t.dtype} needs a copy, but copy=False")
        return t
    d = None if dtype is None else as_dtype(dtype, "asarray")
    if d is not None and d.kind in "biu" and type(obj) in (builtins.int, builtins.float):
        # a Python number converted to an integer dtype: truncated like astype, but never wrapped
        # around (300 -> 44 in uint8) or turned into garbage (NaN -> INT_MIN)
        _check_convertible(obj, d)
    # (lists holding tensors of a running transformation are stacked by as_tensor: derivatives flow)
    if isinstance(obj, bytes):
        if copy is False:
            raise ValueError("asarray: bytes are immutable; sharing them needs copy=None or True, got copy=False")
        obj = bytearray(obj)  # a writable uint8 copy (bytearray and memoryview are shared)
    return as_tensor(obj, "asarray", dtype=d, copy=copy)


def _asarray_on(obj: Any, dtype: Any, copy: Any, be: Any, chunks: Any) -> Tensor:
    """``asarray`` onto the backend ``be`` (chunked by ``chunks`` where the backend takes them)."""
    if chunks is not None:
        conf = getattr(be, "configure", None)
        if conf is None:
            raise TypeError(f"asarray: chunks= is an option of chunked backends (dask), not of the {be.name} backend")
        check_chunks(chunks, "asarray")
        with conf(chunks=chunks):
            return _asarray_on(obj, dtype, copy, be, None)
    if isinstance(obj, Tensor) and obj._backend is not be:
        if obj._backend.level > 0:
            # deferred: cycle: runetensor._interop imports this module
            from ._interop import refuse_derivative
            refuse_derivative(obj, "asarray")
            raise ValueError(f"asarray: cannot move a tensor of a running transformation ({obj._backend.name}) "
                             f"to the {be.name} backend")
        obj = obj._backend.to_host(obj._data)
        copy = None if copy is False else copy
    with use_backend(be):
        return asarray(obj, dtype, copy)


def check_chunks(chunks: Any, fname: str) -> None:
    """Refuse chunk sizes no backend can use before they reach it (Dask divides by them): 0, an int
    below -1 or a bool, alone, per axis (tuple) or per axis number (dict).

    Raises:
        ValueError: naming ``fname`` and the bad value.
    """
    per_axis = chunks.values() if isinstance(chunks, dict) else chunks if isinstance(chunks, (tuple, list)) \
        else (chunks,)
    for v in per_axis:
        if isinstance(v, builtins.bool) or (isinstance(v, builtins.int) and (v == 0 or v < -1)):
            raise ValueError(f"{fname}: chunks={chunks!r:.80} holds {v!r}; expected \"auto\", a chunk size >= 1 "
                             "or -1 (the whole axis), alone or one per axis (a tuple, or a dict by axis)")


@attach()
def to_backend(t: Tensor, backend: Any, chunks: Any = None) -> Tensor:
    """``t``'s values as a tensor of ``backend`` (a name: ``"numpy"``, ``"dask"``); ``t`` itself
    if it is already there (and ``chunks`` is None).  Moving a Dask tensor to NumPy computes it.

    >>> import runetensor as rt
    >>> rt.ones(rt.int8, [2]).to_backend("numpy").backend.name
    'numpy'
    """
    t = as_tensor(t, "to_backend")
    be = get_backend(backend)
    if t._backend is be:
        if chunks is None:
            return t
        if be.name == "dask":  # already there: the same values in the new chunks
            return _rechunk(t, chunks, "to_backend")
    return _asarray_on(t, None, None, be, chunks)


def _check_convertible(v: Any, d: DType) -> None:
    if d.kind == "b":
        return  # any number converts (nonzero is True), as astype does
    if type(v) is builtins.float:
        if v != v or v in (builtins.float("inf"), builtins.float("-inf")):
            raise ValueError(f"asarray: value {v} cannot be converted to {d} (expected a finite number)")
        v = builtins.int(v)
    lo, hi = int_range(d)
    if not lo <= v <= hi:
        raise ValueError(f"asarray: value {v} is out of range for {d} (expected {lo} <= value <= {hi})")


def from_numpy(a: Any) -> Tensor:
    """A tensor sharing memory with the NumPy array ``a`` (no copy).

    >>> import numpy as np, runetensor as rt
    >>> a = np.arange(3.0); t = rt.from_numpy(a); a[0] = 9; print(t)
    [9, 1, 2]
    """
    if isinstance(a, Tensor):
        return a
    if not hasattr(a, "__array_interface__") and not hasattr(a, "__array__"):
        raise TypeError(f"from_numpy: expected a NumPy array, got {type(a).__name__}")
    return as_tensor(a, "from_numpy", copy=None)


def to_numpy(t: Tensor) -> Any:
    """The tensor as a NumPy array, sharing memory (bfloat16/float8/int4 use ml_dtypes types).

    Raises:
        TypeError: if ``t`` carries a derivative (inside ``grad``/``vjp``/``jvp``): the array would
            be a constant; convert ``rt.stop_gradient(t)`` to use the values as one.

    >>> import runetensor as rt
    >>> type(rt.to_numpy(rt.zeros(rt.float32, [2]))).__name__
    'ndarray'
    """
    t = as_tensor(t, "to_numpy")
    if t._backend.level > 0:
        # deferred: cycle: runetensor._interop imports this module
        from ._interop import refuse_derivative
        refuse_derivative(t, "to_numpy")
    return t._backend.to_host(t._data)


def arange(dtype: Any, start: int, stop: int, step: int, backend: Any = None) -> Tensor:
    """Integers ``start, start+step, ...`` up to (excluding) ``stop``.

    The length is ``ceil((stop - start) / step)``: every value in ``[start, stop)``.

    Raises:
        ValueError: if ``step`` is 0, or (integer dtypes) a value does not fit the dtype.
        TypeError: if an argument is not an integer.

    >>> import runetensor as rt
    >>> print(rt.arange(rt.int32, 0, 10, 2))
    [0, 2, 4, 6, 8]
    >>> print(rt.arange(rt.int32, 5, 0, -1))
    [5, 4, 3, 2, 1]
    """
    d = as_dtype(dtype, "arange")
    a, b, s = (as_int(v, "arange", n) for v, n in ((start, "start"), (stop, "stop"), (step, "step")))
    if s == 0:
        raise ValueError("arange: step must be non-zero, got 0")
    n = max(0, -((a - b) // s))  # ceil((b - a) / s): every value in [start, stop)
    if d.kind in "iu" and n:
        lo, hi = int_range(d)
        last = a + (n - 1) * s
        if not (lo <= a <= hi and lo <= last <= hi):
            raise ValueError(f"arange: values {a} .. {last} do not fit {d} (expected {lo} .. {hi})")
    if n * d.itemsize > MAX_NBYTES:
        check_alloc((n,), d, "arange")
    be = get_backend(backend)
    try:
        return wrap(be.arange(a, b, s, d), d, be)
    except MemoryError:
        raise alloc_error("arange", (n,), d) from None


def arange_f(dtype: Any, start: float, stop: float, step: float, backend: Any = None) -> Tensor:
    """Floats ``start, start+step, ...`` up to (excluding) ``stop``.

    Raises:
        ValueError: if ``step`` is 0 or any argument is not finite.
        TypeError: if an argument is not a number, or carries a derivative (inside ``grad``/``vjp``/
            ``jvp``: the length depends on the values; pass ``rt.stop_gradient(v)``).

    >>> import runetensor as rt
    >>> print(rt.arange_f(rt.float32, 0., 1., 0.2))
    [0, 0.2, 0.4, 0.6, 0.8]
    >>> print(rt.arange_f(rt.float32, 1., 0., -0.25))
    [1, 0.75, 0.5, 0.25]
    """
    return _arange_f(dtype, start, stop, step, backend, False)


def refuse_range_bound(v: Any, what: str, fname: str) -> None:
    """Refuse a bound of a float range (``arange_f``, array_api's ``arange``) that carries a derivative:
    the range's length depends on the bounds' values, so no derivative can flow through them.

    Raises:
        TypeError: naming ``fname``, ``what`` and ``rt.stop_gradient``.
    """
    if isinstance(v, Tensor) and v._backend.level > 0:
        # deferred: cycle: the transformations (runetensor._autodiff) import this module
        from ._tracers._diff import carries_derivative
        if carries_derivative(v):
            raise TypeError(f"{fname}: {what} carries a derivative (it depends on the inputs of a running "
                            "grad/vjp/jvp), but the length of a range depends on its bounds' values; pass "
                            f"rt.stop_gradient({what}), or differentiate start + step * a range from 0 "
                            "instead")


def _arange_f(dtype: Any, start: Any, stop: Any, step: Any, backend: Any, affine: bool,
              fname: str = "arange_f") -> Tensor:
    """``arange_f``; ``affine`` (array_api's ``arange``): element ``i`` is ``start + i * step`` computed in
    float64 and cast once (rt: the backend's ``arange``, NumPy's values, whose accumulated step can give
    ``-2.2e-16`` for 0)."""
    d = as_dtype(dtype, fname)
    vals = []
    for v, n in ((start, "start"), (stop, "stop"), (step, "step")):
        if v.__class__ is not builtins.float:  # (the plain case costs no call)
            refuse_range_bound(v, n, fname)
        try:
            f = builtins.float(v)
        except (TypeError, ValueError):
            raise TypeError(f"{fname}: {n} must be a number, got {type(v).__name__} {v!r}") from None
        if not math.isfinite(f):
            raise ValueError(f"{fname}: {n} must be finite, got {f}")
        vals.append(f)
    if vals[2] == 0.0:
        raise ValueError(f"{fname}: step must be non-zero, got 0.0")
    q = (vals[1] - vals[0]) / vals[2]  # NumPy's length: ceil((stop - start) / step)
    if q > MAX_NBYTES or q != q:  # inf (overflow, or a tiny step) or beyond any buffer
        raise ValueError(f"{fname}: {vals[0]} to {vals[1]} in steps of {vals[2]} is more than "
                         f"2**63 values; expected a range that fits a buffer")
    n = max(0, math.ceil(q))
    if n * d.itemsize > MAX_NBYTES:
        check_alloc((n,), d, fname)
    be = get_backend(backend)
    try:
        if not affine:
            return wrap(be.arange(vals[0], vals[1], vals[2], d), d, be)
        h = be.binary("add", be.binary("mul", be.arange(0, n, 1, D.float64), vals[2]), vals[0])
        return wrap(h if d is D.float64 else be.cast(h, d), d, be)
    except MemoryError:
        raise alloc_error(fname, (n,), d) from None
