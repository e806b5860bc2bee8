"""The seed's property functions: ``shape dtype strides stride dims dim ndim itemsize
size numel nbytes offset is_c_contiguous data to_array``."""
from __future__ import annotations

from typing import Any

from ._tensor import Tensor, as_tensor, attach
from ._validate import normalize_axis

__all__ = ["data", "shape", "dtype", "strides", "stride", "dims", "dim", "ndim", "itemsize", "size",
           "numel", "nbytes", "offset", "is_c_contiguous", "to_array"]


def data(t: Tensor) -> Any:
    """The whole underlying buffer, flat, as the backend's host array (a NumPy array, no copy).

    As the seed says, the buffer may hold elements beyond ``t``'s bounds (``t`` may be a
    strided view of it): ``t``'s element at index ``(i, j, ...)`` is
    ``buf[offset(t) + i * s0 + j * s1 + ...]`` with the element strides
    ``s = strides(t) // itemsize(t)``.  Writes through the buffer are seen by ``t``.

    Args:
        t: a tensor (any layout).
    Returns:
        A 1-d array over the buffer's ``buffer_size`` elements.

    >>> import runetensor as rt
    >>> t = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    >>> row = t[1]
    >>> buf = rt.data(row)
    >>> buf.shape, rt.offset(row), int(buf[rt.offset(row) + 2])
    ((6,), 3, 6)
    """
    t = as_tensor(t, "data")
    be, h = t._backend, t._data
    flat = be.as_strided(h, (be.buffer_size(h),), (1,), 0)
    return be.to_host(flat)


def shape(t: Tensor) -> tuple[int, ...]:
    """Dimensions (``()`` for a scalar).

    >>> import runetensor as rt
    >>> rt.shape(rt.zeros(rt.float32, [2, 3]))
    (2, 3)
    """
    return as_tensor(t, "shape").shape


def dtype(t: Tensor) -> Any:
    """The element type.

    >>> import runetensor as rt
    >>> rt.dtype(rt.zeros(rt.int4, [2]))
    rt.int4
    """
    return as_tensor(t, "dtype").dtype


def strides(t: Tensor) -> tuple[int, ...]:
    """Byte strides per dimension.

    >>> import runetensor as rt
    >>> rt.strides(rt.zeros(rt.float32, [2, 3]))
    (12, 4)
    """
    return as_tensor(t, "strides").strides


@attach()
def stride(t: Tensor, i: int) -> int:
    """The byte stride of dimension ``i``.

    Raises:
        IndexError: if ``i`` is out of range.

    >>> import runetensor as rt
    >>> rt.stride(rt.zeros(rt.float32, [2, 3]), 0)
    12
    """
    t = as_tensor(t, "stride")
    return t.strides[normalize_axis(i, t.ndim, "stride", "dimension")]


def dims(t: Tensor) -> tuple[int, ...]:
    """Synonym for :func:`shape`.

    >>> import runetensor as rt
    >>> rt.dims(rt.zeros(rt.float32, [2, 3]))
    (2, 3)
    """
    return as_tensor(t, "dims").shape


@attach()
def dim(t: Tensor, i: int) -> int:
    """The size of dimension ``i``.

    Raises:
        IndexError: if ``i`` is out of range.

    >>> import runetensor as rt
    >>> rt.dim(rt.zeros(rt.float32, [2, 3]), -1)
    3
    """
    t = as_tensor(t, "dim")
    return t.shape[normalize_axis(i, t.ndim, "dim", "dimension")]


def ndim(t: Tensor) -> int:
    """Number of dimensions.

    >>> import runetensor as rt
    >>> rt.ndim(rt.zeros(rt.float32, [2, 3]))
    2
    """
    return as_tensor(t, "ndim").ndim


def itemsize(t: Tensor) -> int:
    """Bytes per element (``int4`` and ``uint4`` take one byte).

    >>> import runetensor as rt
    >>> rt.itemsize(rt.zeros(rt.bfloat16, [2])), rt.itemsize(rt.zeros(rt.int4, [2]))
    (2, 1)
    """
    return as_tensor(t, "itemsize").itemsize


def size(t: Tensor) -> int:
    """Number of elements.

    >>> import runetensor as rt
    >>> rt.size(rt.zeros(rt.float32, [2, 3]))
    6
    """
    return as_tensor(t, "size").size


def numel(t: Tensor) -> int:
    """Synonym for :func:`size`.

    >>> import runetensor as rt
    >>> rt.numel(rt.zeros(rt.float32, [2, 3]))
    6
    """
    return as_tensor(t, "numel").size


def nbytes(t: Tensor) -> int:
    """``size t * itemsize t``.

    >>> import runetensor as rt
    >>> rt.nbytes(rt.zeros(rt.float64, [2, 3]))
    48
    """
    return as_tensor(t, "nbytes").nbytes


def offset(t: Tensor) -> int:
    """Element offset of the first element in the underlying buffer.

    >>> import runetensor as rt
    >>> rt.offset(rt.zeros(rt.float32, [4])[2:])
    2
    """
    return as_tensor(t, "offset").offset


@attach()
def is_c_contiguous(t: Tensor) -> bool:
    """Whether the elements are contiguous in row-major order.

    >>> import runetensor as rt
    >>> rt.is_c_contiguous(rt.zeros(rt.float32, [3, 4]))
    True
    """
    t = as_tensor(t, "is_c_contiguous")
    return t._backend.is_c_contiguous(t._data)


@attach()
def to_array(t: Tensor) -> list:
    """The elements as a flat Python list in row-major order (always a copy).

    >>> import runetensor as rt
    >>> rt.to_array(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]))
    [1, 2, 3, 4]
    """
    t = as_tensor(t, "to_array")
    be = t._backend
    flat = be.reshape(be.contiguous(t._data), (t.size,))
    return be.to_list(flat)
