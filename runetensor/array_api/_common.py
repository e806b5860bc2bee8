"""Helpers shared by the Array API namespace modules (not public).

Everything here works on backend handles, as every frontend module does: the
namespace never imports NumPy.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

from .. import _dtypes as D
from .._dtypes import DType
from .._indexing import _full
from .._tensor import Tensor, as_tensor, wrap
from .._validate import normalize_axes
from .._backend import get_backend

__all__: list[str] = []

#: the dtypes the standard defines, in its order
STD_DTYPES: tuple[DType, ...] = (
    D.bool, D.int8, D.int16, D.int32, D.int64, D.uint8, D.uint16, D.uint32, D.uint64,
    D.float32, D.float64, D.complex64, D.complex128,
)
PY_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex)
#: the one device of the NumPy backend
CPU = "cpu"


def arr(x: Any, fname: str) -> Tensor:
    """``x`` as a Tensor (array-likes are converted, as NumPy's namespace does)."""
    if type(x) is Tensor:
        return x
    return as_tensor(x, fname)


#: the Dask backend's device (its tensors' ``.device``)
DASK = "dask"


def devices() -> list[str]:
    """The devices: ``"cpu"`` (the NumPy backend) and ``"dask"`` (the Dask backend) where Dask is installed."""
    # deferred: only the device list needs it
    import importlib.util
    return [CPU, DASK] if importlib.util.find_spec("dask") is not None else [CPU]


def device_of_backend(be: Any) -> str:
    """The device of a backend's tensors: that of its level-0 backend (a transformation's tracers live
    where their values live): ``"cpu"`` for NumPy, ``"dask"`` for Dask, else the backend's name."""
    while getattr(be, "level", 0) > 0 and getattr(be, "parent", None) is not None:
        be = be.parent
    return CPU if be.name == "numpy" else be.name


def check_device(device: Any, fname: str) -> Any:
    """The backend to create on for ``device``: None for ``None`` or the default backend's own device (the
    default backend then applies, a running transformation's included), else the device's backend.

    Raises:
        ValueError: for a device that is not one of :func:`devices`.
    """
    if device is None:
        return None
    if device == CPU or device == DASK:
        be = get_backend()
        if device_of_backend(be) == device:
            return None
        if device == DASK and DASK not in devices():
            raise ValueError(f"{fname}: device 'dask' needs Dask (pip install 'runetensor[dask]')")
        return get_backend("numpy" if device == CPU else "dask")
    raise ValueError(f"{fname}: unsupported device {device!r}; expected one of {devices()} or None")


def dtype_arg(dtype: Any, fname: str) -> DType | None:
    """A ``dtype=`` argument as a DType (None passes through)."""
    if dtype is None:
        return None
    if isinstance(dtype, DType):
        return dtype
    try:
        return D.dtype_of(dtype)
    except TypeError:
        raise TypeError(f"{fname}: {dtype!r} is not a data type; expected one of "
                        f"{', '.join(d.name for d in STD_DTYPES)}") from None


def cast(t: Tensor, d: DType) -> Tensor:
    """``t`` converted to ``d`` (``t`` itself when it already has that dtype)."""
    if t._dtype is d:
        return t
    return wrap(t._backend.cast(t._data, d), d, t._backend)


def axes_arg(axis: Any, ndim: int, fname: str) -> tuple[int, ...]:
    """``axis=None`` (all axes), an int or a tuple of ints, normalised."""
    if axis is None:
        return tuple(range(ndim))
    return normalize_axes(axis, ndim, fname, "axis")


def norm_key(shape: Sequence[int], key: Sequence[Any]) -> tuple:
    """Normalise a basic-indexing key (ints and slices, one per axis) for ``view_index``."""
    out: list[Any] = []
    for n, k in zip(shape, key):
        if isinstance(k, slice):
            out.append(slice(*k.indices(n)))
        else:
            out.append(k + n if k < 0 else k)
    return tuple(out) + _full(tuple(shape[len(key):]))


def view(t: Tensor, key: Sequence[Any]) -> Tensor:
    """Basic-indexing view of ``t`` (``key`` holds ints/slices for leading axes)."""
    return wrap(t._backend.view_index(t._data, norm_key(t._data.shape, key)), t._dtype, t._backend)


def promote(ts: Sequence[Any], fname: str) -> DType:
    """The result dtype of tensors and (weak) Python scalars."""
    try:
        return D.result_type(*ts)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{fname}: {e}") from None


def sum_dtype(d: DType) -> DType:
    """The default accumulation dtype of ``sum``/``prod``/``cumulative_*`` (the standard's rule)."""
    if d is D.bool:
        return D.default_int
    if d.kind == "i":
        return D.int64
    if d.kind == "u":
        return D.uint64
    return d
