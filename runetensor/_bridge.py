"""Bridges between tensors and bigarrays (seed section "conversion"):
``to_bigarray to_bigarray_ext of_bigarray of_bigarray_ext``.

``to_bigarray*`` always copy into a fresh C-layout :class:`runetensor.bigarray.Genarray`;
``of_bigarray*`` never copy: the tensor views the bigarray's memory, so a write
through either side is seen by the other.
"""
from __future__ import annotations

from typing import Any

from . import bigarray as _ba
from .bigarray._core import _Bigarray
from ._tensor import Tensor, as_tensor, attach, wrap

__all__ = ["to_bigarray", "to_bigarray_ext", "of_bigarray", "of_bigarray_ext"]


def _to(t: Any, extended: bool, fname: str) -> "_ba.Genarray":
    t = as_tensor(t, fname)
    d = t._dtype
    if d.kind == "O":
        raise TypeError(f"{fname}: object tensors have no bigarray kind")
    if t._data.ndim > _ba.MAX_DIMS:
        raise ValueError(f"{fname}: a tensor of rank {t._data.ndim} does not fit a bigarray "
                         f"(0 to {_ba.MAX_DIMS} dimensions)")
    if d.is_extended and not extended:
        raise ValueError(f"{fname}: dtype {d} is an extended type not supported by standard Bigarray; "
                         "use rt.to_bigarray_ext")
    kind = _ba.kind_of_dtype(d, extended=extended)
    be = t._backend
    return _ba.Genarray._make(wrap(be.copy(t._data), d, be), kind, _ba.c_layout)


@attach()
def to_bigarray(t: Tensor) -> "_ba.Genarray":
    """A C-layout standard bigarray holding a contiguous copy of ``t`` (same shape).

    The kind follows the dtype: ``float16/32/64``, ``complex64 -> complex32``,
    ``complex128 -> complex64``, ``int8 -> int8_signed``, ``uint8 -> int8_unsigned``,
    ``int16/uint16 -> int16_signed/int16_unsigned``, ``int32``, ``int64``.

    Raises:
        ValueError: if the dtype is an extended type standard Bigarray lacks
            (``bfloat16 bool int4 uint4 float8_e4m3 float8_e5m2 uint32 uint64``;
            the seed's ``Failure``), or the rank exceeds 16.
        TypeError: for an ``object`` tensor.

    >>> import runetensor as rt
    >>> t = rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])
    >>> rt.shape(rt.of_bigarray(rt.to_bigarray(t)))
    (2, 3)
    >>> rt.to_bigarray(t).kind()
    bigarray.float32
    """
    return _to(t, False, "to_bigarray")


@attach()
def to_bigarray_ext(t: Tensor) -> "_ba.Genarray":
    """A C-layout extended bigarray holding a contiguous copy of ``t`` (any dtype but ``object``).

    Standard dtypes get the standard kinds (as :func:`to_bigarray`), the others
    the kinds of ``bigarray.ext`` (``bfloat16``, ``bool``, ``int4``...).

    Raises:
        ValueError: if the rank exceeds 16.
        TypeError: for an ``object`` tensor.

    >>> import runetensor as rt
    >>> t = rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])
    >>> rt.shape(rt.of_bigarray_ext(rt.to_bigarray_ext(t)))
    (2, 3)
    >>> rt.to_bigarray_ext(rt.zeros(rt.bfloat16, [2])).kind()
    bigarray.ext.bfloat16
    """
    return _to(t, True, "to_bigarray_ext")


def _of(ba: Any, extended: bool, fname: str) -> Tensor:
    if not isinstance(ba, _Bigarray):
        raise TypeError(f"{fname}: expected a bigarray (runetensor.bigarray.Genarray or Array0-3), "
                        f"got {type(ba).__name__}")
    if ba._kind.extended and not extended:
        raise ValueError(f"{fname}: kind {ba._kind.name} is an extended kind; use rt.of_bigarray_ext")
    t = ba._t
    return wrap(t._data, t._dtype, t._backend)


def of_bigarray(ba: Any) -> Tensor:
    """A tensor viewing a standard bigarray's memory (zero-copy; writes are shared both ways).

    The tensor's shape is the bigarray's dims and ``t[i, j]`` is element
    ``(i, j)`` of a C-layout array; a Fortran-layout array gives the same
    logical view (0-based) with column-major strides.  ``char`` arrays give
    ``uint8`` tensors.

    Raises:
        TypeError: if ``ba`` is not a bigarray.
        ValueError: if its kind is an extended one (use :func:`of_bigarray_ext`).

    >>> import runetensor as rt
    >>> from runetensor import bigarray as ba
    >>> g = ba.Genarray.create(ba.float32, ba.c_layout, [2, 3])
    >>> t = rt.of_bigarray(g); g.set([1, 2], 5.0); print(t)
    [[0, 0, 0],
     [0, 0, 5]]
    """
    return _of(ba, False, "of_bigarray")


def of_bigarray_ext(ba: Any) -> Tensor:
    """A tensor viewing a bigarray's memory, extended kinds included (zero-copy).

    Raises:
        TypeError: if ``ba`` is not a bigarray.

    >>> import runetensor as rt
    >>> from runetensor import bigarray as ba
    >>> g = ba.ext.Genarray.create(ba.ext.bfloat16, ba.ext.c_layout, [2, 3])
    >>> t = rt.of_bigarray_ext(g); rt.shape(t), t.dtype
    ((2, 3), rt.bfloat16)
    """
    return _of(ba, True, "of_bigarray_ext")
