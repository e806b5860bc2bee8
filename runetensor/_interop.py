"""Interop with the Python array ecosystem: NumPy's ``__array__``, DLPack, the buffer
protocol and pickling.

* ``np.asarray(t)`` (``Tensor.__array__``) returns a NumPy view of the tensor's
  memory, no copy, for any strides; ``dtype=`` converts (a copy) and
  ``copy=True`` forces one, ``copy=False`` refuses a needed copy with ``ValueError``.
* ``t.__dlpack__()`` / ``t.__dlpack_device__()`` and :func:`from_dlpack` share
  memory with NumPy, PyTorch, JAX and any DLPack consumer or producer,
  bfloat16 and float8 included (a view with negative strides is exported as
  a compact copy, since some consumers cannot take such strides) (int4/uint4 are refused: DLPack packs 4-bit
  types two per byte, runetensor stores one per byte).
* The buffer protocol: on Python >= 3.12, ``memoryview(t)`` works (PEP 688
  ``__buffer__``).  Python 3.11 cannot give a class written in Python the
  buffer protocol, so there :func:`memoryview` (``rt.memoryview(t)`` or
  ``t.memoryview()``) returns the same ``memoryview``.  bfloat16, float8 and
  int4/uint4 have no PEP 3118 format character: they raise ``BufferError``.
* ``pickle`` (and ``copy.deepcopy``) round-trip dtype, shape and values bit
  for bit (NaN payloads, bfloat16, float8, int4, non-contiguous views, which
  are stored compactly); the unpickled tensor lives on the default backend.
* Inside ``grad``/``vjp``/``jvp``, a tensor that carries a derivative refuses all of these
  conversions (``__array__``, ``__array_interface__``, the buffer protocol, DLPack,
  ``rt.to_numpy``, pickling and so ``copy.copy``/``copy.deepcopy``) with a ``TypeError`` naming
  ``rt.stop_gradient``: the result would be a constant and the derivative would vanish silently.
  Python scalar reads (``float(t)``, ``int(t)``, ``t.item()``, ``t.tolist()``) stay allowed, as
  in PyTorch (their result is a constant by construction).
* :func:`runetensor.asarray` accepts NumPy arrays, DLPack producers, objects
  with ``__array__`` / ``__array_interface__`` and buffer-protocol objects,
  sharing memory when the dtype allows.

>>> import numpy as np, runetensor as rt
>>> t = rt.create(rt.float32, [2, 2], [1, 2, 3, 4])
>>> a = np.asarray(t); a[0, 0] = 9; print(t)
[[9, 2],
 [3, 4]]
>>> import pickle; print(pickle.loads(pickle.dumps(t)))
[[9, 2],
 [3, 4]]
"""
from __future__ import annotations

import builtins
from typing import Any

from . import _dtypes as D
from ._backend import get_backend
from ._creation import _object_flat
from ._tensor import Tensor, wrap
from ._validate import check_alloc
from ._tracers._diff import carries_derivative

__all__ = ["from_dlpack", "memoryview"]

_PyBUF_WRITABLE = 0x0001


def refuse_derivative(t: Tensor, fname: str) -> None:
    """Raise ``TypeError`` if ``t`` carries a derivative (it depends on the inputs of a running
    ``grad``/``vjp``/``jvp``): a NumPy array or a buffer of it would be a constant, and the derivative
    would vanish without a word.  Outside a transformation this costs one attribute read.

    Raises:
        TypeError: naming ``fname`` and ``rt.stop_gradient``.
    """
    if t._backend.level > 0:
        if carries_derivative(t):
            raise TypeError(f"{fname}: this tensor carries a derivative (it depends on the inputs of a running "
                            "grad/vjp/jvp); converting it to NumPy, a buffer or another backend would drop it "
                            "silently. Compute with runetensor operations, or convert rt.stop_gradient(t) to use "
                            "its values as a constant (float(t), int(t) and t.item() read a Python scalar)")


# ---------------------------------------------------------------------------
# NumPy
# ---------------------------------------------------------------------------
def _array(self: Tensor, dtype: Any = None, copy: bool | None = None) -> Any:
    """NumPy's ``__array__``: the tensor's memory as an ``ndarray`` (a view unless
    ``dtype`` differs or ``copy=True``).

    Raises:
        ValueError: if ``copy=False`` but ``dtype`` needs a conversion.
        TypeError: if the tensor carries a derivative (``rt.stop_gradient`` it first).
    """
    refuse_derivative(self, "__array__")
    h = self._backend.to_host(self._data)
    if dtype is not None and h.dtype != dtype:
        if copy is False:
            raise ValueError(f"__array__: converting {self._dtype} to {dtype} needs a copy, but copy=False")
        return h.astype(dtype)
    if copy:
        return h.copy()
    return h


Tensor.__array__ = _array  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# DLPack
# ---------------------------------------------------------------------------
def _dlpack(self: Tensor, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
            copy: bool | None = None) -> Any:
    """DLPack producer: a capsule sharing the tensor's memory (``copy=True`` exports a copy).

    Raises:
        BufferError: for int4/uint4/object tensors, a ``dl_device`` other than the tensor's,
            or a ``stream`` for a CPU tensor.
        TypeError: if the tensor carries a derivative (``rt.stop_gradient`` it first).
    """
    be = self._backend
    refuse_derivative(self, "__dlpack__")
    be.require("dlpack", "__dlpack__")
    d = self._dtype
    if d in (D.int4, D.uint4, D.object_):
        raise BufferError(f"__dlpack__: {d} tensors cannot be exported through DLPack "
                          "(DLPack's 4-bit types are packed two per byte; cast to int8/uint8 first)")
    if stream is not None and tuple(be.dlpack_device(self._data))[0] == 1:
        raise BufferError(f"__dlpack__: stream must be None for a CPU tensor, got {stream!r}")
    if dl_device is not None and tuple(dl_device) != tuple(be.dlpack_device(self._data)):
        raise BufferError(f"__dlpack__: cannot export to DLPack device {tuple(dl_device)}; "
                          f"the tensor lives on {tuple(be.dlpack_device(self._data))}")
    h = self._data
    if copy:
        h = be.copy(h)
    elif any(s < 0 for s in be.strides(h)):
        # negative strides are legal DLPack but crash some consumers (PyTorch): export a compact copy
        if copy is False:
            raise BufferError("__dlpack__: a view with negative strides cannot be exported without a copy "
                              "(copy=False)")
        h = be.copy(h)
    try:
        return be.dlpack(h, stream, max_version, dl_device, False if copy else copy)
    except (TypeError, ValueError) as e:
        raise BufferError(f"__dlpack__: cannot export this {d} tensor: {e}") from None


def _dlpack_device(self: Tensor) -> tuple[int, int]:
    """``(device_type, device_id)``: ``(1, 0)`` (CPU) for the NumPy backend."""
    self._backend.require("dlpack", "__dlpack_device__")
    return tuple(self._backend.dlpack_device(self._data))  # type: ignore[return-value]


Tensor.__dlpack__ = _dlpack  # type: ignore[attr-defined]
Tensor.__dlpack_device__ = _dlpack_device  # type: ignore[attr-defined]


def from_dlpack(x: Any, device: Any = None, copy: bool | None = None) -> Tensor:
    """A tensor from any DLPack producer (NumPy, PyTorch, JAX, CuPy on host...), sharing memory.

    Args:
        x: an object with ``__dlpack__`` (a runetensor Tensor is returned as is,
            or copied when ``copy=True``).
        device: None or ``"cpu"``: where the result lives.
        copy: None shares memory when possible, True always copies, False
            raises if a copy would be needed.
    Raises:
        TypeError: if ``x`` has no ``__dlpack__``.
        BufferError: if the data is not in host memory or its dtype has no
            runetensor equivalent.
        ValueError: for an unknown ``device``.

    >>> import numpy as np, runetensor as rt
    >>> a = np.arange(4.0)
    >>> t = rt.from_dlpack(a); a[0] = 7; print(t)
    [7, 1, 2, 3]
    """
    if device not in (None, "cpu") and not (isinstance(device, tuple) and tuple(device) == (1, 0)):
        raise ValueError(f"from_dlpack: device must be None or 'cpu', got {device!r}")
    if isinstance(x, Tensor):
        return wrap(x._backend.copy(x._data), x._dtype, x._backend) if copy else x
    if not hasattr(x, "__dlpack__") or not callable(x.__dlpack__):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__, got {type(x).__name__}")
    if copy not in (None, True, False):
        raise TypeError(f"from_dlpack: copy must be None, True or False, got {copy!r}")
    be = get_backend()
    be.require("dlpack", "from_dlpack")
    src = x if type(x).__module__ == "numpy" else _CheckedProducer(x)
    try:
        h, d = be.from_dlpack(src, copy)
    except (BufferError, MemoryError):
        raise
    except Exception as e:  # the producer's own failure, or data DLPack cannot describe
        raise BufferError(f"from_dlpack: cannot import a {type(x).__name__} through DLPack "
                          f"({type(e).__name__}: {e})") from e
    return wrap(h, d, be)


class _CheckedProducer:
    """Forwards the DLPack protocol to ``x``, checking that ``__dlpack__`` returns a capsule
    (a backend reading anything else as one would fail with a ctypes message, or worse)."""

    __slots__ = ("_x",)

    def __init__(self, x: Any) -> None:
        self._x = x

    def __dlpack_device__(self) -> Any:
        f = getattr(self._x, "__dlpack_device__", None)
        return (1, 0) if f is None else f()

    def __dlpack__(self, **kw: Any) -> Any:
        cap = self._x.__dlpack__(**kw)
        if type(cap).__name__ != "PyCapsule":
            raise BufferError(f"from_dlpack: {type(self._x).__name__}.__dlpack__() returned an object "
                              f"of type {type(cap).__name__}, not a DLPack capsule")
        return cap


# ---------------------------------------------------------------------------
# buffer protocol
# ---------------------------------------------------------------------------
def memoryview(t: Tensor) -> builtins.memoryview:  # noqa: A001
    """A ``memoryview`` of the tensor's memory (no copy; strided views keep their strides).

    The portable spelling of ``memoryview(t)``, which needs Python >= 3.12.
    Anything that is not a tensor goes to the built-in ``memoryview``, so
    ``from runetensor import *`` shadowing the built-in is harmless.

    Raises:
        BufferError: for bfloat16, float8, int4/uint4 and object tensors (no
            PEP 3118 format character exists for them).
        TypeError: if the tensor carries a derivative (``rt.stop_gradient`` it first).

    >>> import runetensor as rt
    >>> m = rt.memoryview(rt.create(rt.int16, [2, 3], [1, 2, 3, 4, 5, 6]))
    >>> m.format, m.shape, m.tolist()
    ('h', (2, 3), [[1, 2, 3], [4, 5, 6]])
    """
    if not isinstance(t, Tensor):
        return builtins.memoryview(t)
    d = t._dtype
    refuse_derivative(t, "memoryview")
    if d in (D.bfloat16, D.float8_e4m3, D.float8_e5m2, D.int4, D.uint4, D.object_):
        raise BufferError(f"memoryview: {d} has no buffer-protocol format character; "
                          "use rt.to_numpy(t) or the DLPack protocol instead")
    t._backend.require("buffer", "memoryview")
    h = t._backend.to_host(t._data)
    try:
        return builtins.memoryview(h)
    except (ValueError, TypeError) as e:
        raise BufferError(f"memoryview: cannot expose this {d} tensor: {e}") from None


def _buffer(self: Tensor, flags: int) -> builtins.memoryview:
    m = memoryview(self)
    if flags & _PyBUF_WRITABLE and m.readonly:
        raise BufferError("memoryview: the tensor is read-only, a writable buffer was requested")
    return m


def _release_buffer(self: Tensor, view: builtins.memoryview) -> None:
    """Nothing to release: the exported memoryview holds its own reference."""


Tensor.memoryview = memoryview  # type: ignore[attr-defined]
Tensor.__buffer__ = _buffer  # type: ignore[attr-defined]
Tensor.__release_buffer__ = _release_buffer  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# pickling
# ---------------------------------------------------------------------------
def _rebuild(dtype_name: str, shape: tuple[int, ...], data: bytes) -> Tensor:
    try:
        d = D.dtype_of(dtype_name)
    except (TypeError, ValueError, KeyError):
        raise ValueError(f"unpickle: unknown dtype {dtype_name!r:.40} in a pickled tensor") from None
    if d is D.object_:
        raise ValueError("unpickle: an object tensor cannot be rebuilt from raw bytes (its elements are Python "
                         "objects, which runetensor pickles as a list); this pickle was not written by runetensor")
    if not isinstance(shape, (tuple, list)) or not all(type(s) is builtins.int for s in shape):
        raise ValueError(f"unpickle: bad shape {shape!r:.80} in a pickled tensor (expected a tuple of ints)")
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"unpickle: the data of a pickled tensor must be bytes, got {type(data).__name__}")
    shape = tuple(int(s) for s in shape)
    n = 1
    for s in shape:
        if s < 0:
            raise ValueError(f"unpickle: negative dimension in shape {shape}")
        n *= s
    check_alloc(shape, d, "unpickle")
    if len(data) != n * d.itemsize:
        raise ValueError(f"unpickle: {len(data)} bytes of data for a {d} tensor of shape {shape}; "
                         f"expected {n * d.itemsize}")
    be = get_backend()
    if "buffer" not in be.capabilities:  # (dask) built on the host, then moved
        h, _ = be.asarray(get_backend("numpy").from_buffer(bytearray(data), d, shape, 0), d, None)
        return wrap(h, d, be)
    return wrap(be.from_buffer(bytearray(data), d, shape, 0), d, be)


def _rebuild_object(shape: tuple[int, ...], items: list) -> Tensor:
    be = get_backend()
    flat = _object_flat(list(items), be)
    h = be.reshape(flat._data, tuple(shape))
    if h is None:
        raise ValueError(f"unpickle: {len(items)} objects do not fill shape {tuple(shape)}")
    return wrap(h, D.object_, be)


def _flatten(v: Any, depth: int) -> list:
    if depth == 0:
        return [v]
    out: list = []
    for e in v:
        out += _flatten(e, depth - 1)
    return out


def _reduce(self: Tensor) -> tuple:
    be = self._backend
    refuse_derivative(self, "pickle/copy")  # (copy.copy and copy.deepcopy of a transformation's tensor come here)
    if self._dtype is D.object_:
        return (_rebuild_object, (self.shape, _flatten(be.to_list(self._data), self.ndim)))
    return (_rebuild, (self._dtype.name, self.shape, be.to_bytes(self._data)))


Tensor.__reduce__ = _reduce  # type: ignore[attr-defined]
