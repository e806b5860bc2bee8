"""Products (seed section "dot" to "diagonal"): ``dot``, ``matmul`` and ``diagonal``.

``matmul`` follows NumPy's ``@``; ``dot`` follows the seed, whose examples
contract the last axis of ``a`` with the second-to-last of ``b`` and
broadcast the leading (batch) axes, so for tensors of rank >= 1 it agrees
with ``matmul`` (NumPy's ``dot`` differs for two operands of rank >= 3; see
``docs/math.md``).  ``Tensor.__matmul__`` / ``__rmatmul__`` are ``matmul``.
"""
from __future__ import annotations

from typing import Any

from . import _dtypes as D
from ._tensor import Tensor, as_tensor, attach, on_common, wrap
from ._validate import as_int, broadcast_shapes, normalize_axis

__all__ = ["dot", "matmul", "diagonal"]


def _product(a: Any, b: Any, fname: str) -> Tensor:
    be = a._backend if isinstance(a, Tensor) else b._backend if isinstance(b, Tensor) else None
    a = as_tensor(a, fname, backend=be)
    b = as_tensor(b, fname, backend=a._backend)
    be, (a, b) = on_common(fname, a, b)
    sa, sb = a._data.shape, b._data.shape
    if not sa or not sb:
        raise ValueError(f"{fname}: inputs must have at least one dimension, got shapes {sa} and {sb}")
    d = a._dtype if a._dtype is b._dtype else D.promote_types(a._dtype, b._dtype)
    if d is D.object_:
        raise TypeError(f"{fname}: not defined for object tensors")
    kb = len(sb) - 2 if len(sb) >= 2 else 0
    if sa[-1] != sb[kb]:
        raise ValueError(f"{fname}: cannot contract {sa} (last axis: {sa[-1]}) with {sb} "
                         f"(axis {kb}: {sb[kb]}): sizes {sa[-1]} and {sb[kb]} differ")
    if len(sa) > 2 or len(sb) > 2:
        broadcast_shapes(sa[:-2], sb[:-2], fname=fname)
    ha = a._data if a._dtype is d else be.cast(a._data, d)
    hb = b._data if b._dtype is d else be.cast(b._data, d)
    return wrap(be.matmul(ha, hb), d, be)


@attach()
def matmul(a: Any, b: Any) -> Tensor:
    """Matrix product with NumPy's ``@`` rules.

    1-D x 1-D is the inner product (a 0-d tensor); a 1-D left operand acts as
    a row, a 1-D right operand as a column (the added axis is removed after);
    leading (batch) axes broadcast.  Mixed dtypes promote; integers wrap.

    Args:
        a, b: tensors of rank >= 1.
    Returns:
        A new tensor of shape ``broadcast(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])``
        (minus the axes of 1-D operands).
    Raises:
        ValueError: if an input is 0-d, the inner sizes differ, or the batch axes do not broadcast.

    >>> import runetensor as rt
    >>> print(rt.matmul(rt.create(rt.float32, [3], [1., 2., 3.]), rt.create(rt.float32, [3], [4., 5., 6.])))
    32
    >>> print(rt.matmul(rt.create(rt.float32, [2, 2], [1., 2., 3., 4.]), rt.create(rt.float32, [2], [5., 6.])))
    [17, 39]
    >>> print(rt.matmul(rt.create(rt.float32, [2], [1., 2.]), rt.create(rt.float32, [2, 3], [3., 4., 5., 6., 7., 8.])))
    [15, 18, 21]
    >>> rt.matmul(rt.ones(rt.float32, [1, 3, 4]), rt.ones(rt.float32, [5, 4, 2])).shape
    (5, 3, 2)
    """
    return _product(a, b, "matmul")


@attach()
def dot(a: Any, b: Any) -> Tensor:
    """Generalised dot product: contract the last axis of ``a`` with ``b``'s only axis
    (1-D ``b``) or its second-to-last axis.

    Leading (batch) axes of two operands of rank >= 2 broadcast, as the
    seed's examples show (``dot`` of shapes ``(2, 3, 4, 5)`` and ``(3, 5, 6)``
    has shape ``(2, 3, 4, 6)``).

    Args:
        a, b: tensors of rank >= 1.
    Returns:
        A new tensor; 1-D x 1-D gives a 0-d tensor.
    Raises:
        ValueError: if an input is 0-d or the contracted sizes differ.

    >>> import runetensor as rt
    >>> print(rt.dot(rt.create(rt.float32, [2], [1., 2.]), rt.create(rt.float32, [2], [3., 4.])))
    11
    >>> print(rt.dot(rt.create(rt.float32, [2, 2], [1., 2., 3., 4.]), rt.create(rt.float32, [2, 2], [5., 6., 7., 8.])))
    [[19, 22],
     [43, 50]]
    >>> rt.dot(rt.ones(rt.float32, [3, 4, 5]), rt.ones(rt.float32, [5, 6])).shape
    (3, 4, 6)
    """
    return _product(a, b, "dot")


def _rmatmul(self: Tensor, other: Any) -> Tensor:
    return _product(other, self, "__rmatmul__")


def _matmul_dunder(self: Tensor, other: Any) -> Tensor:
    return _product(self, other, "__matmul__")


Tensor.__matmul__ = _matmul_dunder  # type: ignore[attr-defined]
Tensor.__rmatmul__ = _rmatmul  # type: ignore[attr-defined]


@attach()
def diagonal(a: Any, offset: int = 0, axis1: int = -2, axis2: int = -1) -> Tensor:
    """The diagonals of the 2-D planes spanned by ``axis1`` and ``axis2`` (a view, no copy).

    The two axes are removed and the diagonal becomes the last axis (as NumPy
    does); the defaults are the last two axes, as the seed says.

    Args:
        a: a tensor of rank >= 2.
        offset: 0 for the main diagonal, > 0 above it, < 0 below it.
        axis1, axis2: the plane's axes (distinct; negative counts from the end).
    Returns:
        A view of shape ``(other axes..., diagonal length)``.
    Raises:
        ValueError: if ``a`` has rank < 2 or the two axes are the same.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [3, 3], [0, 1, 2, 3, 4, 5, 6, 7, 8])
    >>> print(rt.diagonal(x))
    [0, 4, 8]
    >>> print(rt.diagonal(x, offset=1))
    [1, 5]
    >>> print(rt.diagonal(x, offset=-2))
    [6]
    >>> rt.diagonal(rt.zeros(rt.float32, [2, 3, 3])).shape
    (2, 3)
    """
    a = as_tensor(a, "diagonal")
    h = a._data
    nd = h.ndim
    if nd < 2:
        raise ValueError(f"diagonal: expected a tensor of rank >= 2, got shape {a.shape}")
    k = as_int(offset, "diagonal", "offset")
    a1 = normalize_axis(axis1, nd, "diagonal", "axis1")
    a2 = normalize_axis(axis2, nd, "diagonal", "axis2")
    if a1 == a2:
        raise ValueError(f"diagonal: axis1 and axis2 must differ, both are {a1}")
    be = a._backend
    shape, strides = h.shape, be.strides(h)
    n1, n2 = shape[a1], shape[a2]
    if k >= 0:
        length = max(0, min(n1, n2 - k))
        start = k * strides[a2] if length else 0
    else:
        length = max(0, min(n1 + k, n2))
        start = -k * strides[a1] if length else 0
    rest = [i for i in range(nd) if i not in (a1, a2)]
    new_shape = tuple(shape[i] for i in rest) + (length,)
    new_strides = tuple(strides[i] for i in rest) + (strides[a1] + strides[a2],)
    if 0 in new_shape:
        start = 0
    return wrap(be.as_strided(h, new_shape, new_strides, be.offset(h) + start), a._dtype, be)
