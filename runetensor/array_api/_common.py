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


def check_device(device: Any, fname: str) -> None:
    """Accept ``None`` or ``"cpu"`` (the only device); anything else is a ValueError."""
    if device is None or device == CPU:
        return
    raise ValueError(f"{fname}: unsupported device {device!r}; the only device is 'cpu'")


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
