"""Data type functions of the Array API standard: astype can_cast finfo iinfo isdtype result_type."""
from __future__ import annotations

import builtins
from typing import Any, NamedTuple

from .. import _dtypes as D
from .. import _views as V
from .._dtypes import DType
from .._tensor import Tensor, wrap
from ._common import STD_DTYPES, arr, check_device, dtype_arg

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]


def astype(x: Tensor, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Tensor:
    """``x`` converted to ``dtype``.

    Args:
        x: the array.
        dtype: the target data type.
        copy: if False and ``x`` already has ``dtype``, ``x`` itself is returned;
            otherwise a new array is always allocated.
        device: ``None`` or ``"cpu"``.
    Returns:
        The converted array.  Floating to integer truncates toward zero; NaN and
        infinities become 0; complex to real keeps the real part.
    Raises:
        TypeError: if ``dtype`` is not a data type.
        ValueError: for an unknown device.

    >>> import runetensor.array_api as xp
    >>> print(xp.astype(xp.asarray([1.7, -2.5]), xp.int32))
    [1, -2]
    """
    x = arr(x, "astype")
    check_device(device, "astype")
    if device is not None and x.device != device:
        x = x.to_device(device)  # (a Dask tensor to "cpu": computed)
    d = dtype_arg(dtype, "astype")
    if d is x._dtype:
        if not copy:
            return x
        return wrap(x._backend.copy(x._data), d, x._backend)
    return V.astype(x, d)


def _as_dtype(v: Any, fname: str) -> DType:
    if isinstance(v, Tensor):
        return v._dtype
    if isinstance(v, DType):
        return v
    return dtype_arg(v, fname)


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether ``from_`` (a dtype or an array) casts to ``to`` under the standard's promotion rules.

    Only casts the standard's promotion table allows are "safe": within bool,
    within the integers (``uint8 -> int16`` yes, ``int8 -> uint8`` no), and
    within the floating types (``float32 -> complex64`` yes).  Cross-kind casts
    (integer to floating, bool to integer) are False: the standard leaves them
    out of its table.

    >>> import runetensor.array_api as xp
    >>> xp.can_cast(xp.int8, xp.int16), xp.can_cast(xp.int64, xp.float64), xp.can_cast(xp.float32, xp.complex64)
    (True, False, True)
    """
    f = _as_dtype(from_, "can_cast")
    t = _as_dtype(to, "can_cast")
    if f is t:
        return True
    if f.kind == "b" or t.kind == "b":
        return False
    if (f.kind in "iu") != (t.kind in "iu"):
        return False
    if f.kind == "c" and t.kind != "c":
        return False
    return D.promote_types(f, t) is t


class finfo_object(NamedTuple):
    """Machine limits of a floating-point data type (what :func:`finfo` returns)."""
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


class iinfo_object(NamedTuple):
    """Machine limits of an integer data type (what :func:`iinfo` returns)."""
    bits: int
    max: int
    min: int
    dtype: DType


# (mantissa bits, largest finite value, smallest normal)
_FLOAT_PARAMS: dict[str, tuple[int, float, float]] = {
    "float16": (10, 65504.0, 2.0 ** -14),
    "bfloat16": (7, (2 - 2.0 ** -7) * 2.0 ** 127, 2.0 ** -126),
    "float32": (23, (2 - 2.0 ** -23) * 2.0 ** 127, 2.0 ** -126),
    "float64": (52, (2 - 2.0 ** -52) * 2.0 ** 1023, 2.0 ** -1022),
    "float8_e4m3": (3, 448.0, 2.0 ** -6),
    "float8_e5m2": (2, 57344.0, 2.0 ** -14),
}


def finfo(type: Any, /) -> finfo_object:  # noqa: A002  (the standard's parameter name)
    """Machine limits of a floating-point data type (or of an array's dtype).

    Args:
        type: a real or complex floating dtype, or an array of one.
    Returns:
        An object with ``bits eps max min smallest_normal dtype`` (Python floats;
        for a complex type, the limits and dtype of its real part).
    Raises:
        TypeError: for a non-floating dtype.

    >>> import runetensor.array_api as xp
    >>> fi = xp.finfo(xp.float32)
    >>> fi.bits, fi.eps, fi.dtype
    (32, 1.1920928955078125e-07, rt.float32)
    >>> xp.finfo(xp.complex128).dtype
    rt.float64
    """
    d = _as_dtype(type, "finfo")
    if d.kind not in "fc":
        raise TypeError(f"finfo: expected a floating-point dtype, got {d}")
    r = d.real_dtype
    mant, mx, tiny = _FLOAT_PARAMS[r.name]
    return finfo_object(r.bits, 2.0 ** -mant, mx, -mx, tiny, r)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    """Machine limits of an integer data type (or of an array's dtype).

    Raises:
        TypeError: for a non-integer dtype.

    >>> import runetensor.array_api as xp
    >>> xp.iinfo(xp.int8)
    iinfo_object(bits=8, max=127, min=-128, dtype=rt.int8)
    """
    d = _as_dtype(type, "iinfo")
    if d.kind not in "iu":
        raise TypeError(f"iinfo: expected an integer dtype, got {d}")
    b = d.bits
    if d.kind == "i":
        return iinfo_object(b, 2 ** (b - 1) - 1, -(2 ** (b - 1)), d)
    return iinfo_object(b, 2 ** b - 1, 0, d)


_KINDS = {
    "bool": lambda d: d.kind == "b",
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: d.kind == "f",
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iufc",
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name, or a tuple of these.

    Kind names: ``"bool" "signed integer" "unsigned integer" "integral"
    "real floating" "complex floating" "numeric"``.

    Raises:
        TypeError: if ``dtype`` is not a dtype, or ``kind`` is not a dtype, kind name or tuple.
        ValueError: for an unknown kind name.

    >>> import runetensor.array_api as xp
    >>> xp.isdtype(xp.float32, "real floating"), xp.isdtype(xp.int8, ("bool", xp.int8))
    (True, True)
    """
    if not isinstance(dtype, DType):
        raise TypeError(f"isdtype: expected a dtype, got {builtins.type(dtype).__name__} {dtype!r}")
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype is kind
    if isinstance(kind, str):
        try:
            return _KINDS[kind](dtype)
        except KeyError:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of {', '.join(map(repr, _KINDS))}, "
                             "a dtype, or a tuple of these") from None
    raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple, got {builtins.type(kind).__name__}")


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype that arrays, dtypes and Python scalars promote to.

    Python scalars are weak: they take the array's type (``int8`` with ``1`` is
    ``int8``).  Raises ValueError with no arguments, or only scalars.

    >>> import runetensor.array_api as xp
    >>> (xp.result_type(xp.int8, xp.uint8), xp.result_type(xp.float32, 1.0),
    ...  xp.result_type(xp.asarray([1], dtype=xp.int16), xp.int32))
    (rt.int16, rt.float32, rt.int32)
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type: expected at least one array or dtype")
    if builtins.all(builtins.type(a) in (builtins.bool, builtins.int, builtins.float, builtins.complex)
                    for a in arrays_and_dtypes):
        raise ValueError("result_type: expected at least one array or dtype besides Python scalars")
    for a in arrays_and_dtypes:
        if not isinstance(a, (Tensor, DType, builtins.bool, builtins.int, builtins.float, builtins.complex)):
            raise TypeError(f"result_type: expected arrays, dtypes or Python scalars, got {builtins.type(a).__name__}")
    return D.result_type(*arrays_and_dtypes)


STD_DTYPE_NAMES = tuple(d.name for d in STD_DTYPES)
