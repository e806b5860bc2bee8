"""Linear algebra functions of the standard's main namespace: matmul matrix_transpose tensordot vecdot.

They are also in the ``linalg`` extension.  Each validates the standard's
requirements and calls the main namespace's implementation (``rt.matmul``,
``rt.matrix_transpose``, ``rt.tensordot``, ``rt.vecdot``).
"""
from __future__ import annotations

from typing import Sequence

import runetensor as rt  # the public namespace (imported first: this module loads after it)

from .._tensor import Tensor
from .._validate import as_int
from ._common import arr

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """Matrix product with NumPy's ``@`` rules (1-d operands are vectors; batch axes broadcast).

    Raises:
        ValueError: for a 0-d operand or mismatched inner dimensions.

    >>> import runetensor.array_api as xp
    >>> print(xp.matmul(xp.asarray([[1, 2], [3, 4]]), xp.asarray([1, 1])))
    [3, 7]
    """
    a = arr(x1, "matmul")
    b = arr(x2, "matmul")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands must have at least one dimension, got shapes {a.shape} and {b.shape}")
    return rt.matmul(a, b)


def matrix_transpose(x: Tensor, /) -> Tensor:
    """A view of ``x`` with its last two axes swapped.

    Raises:
        ValueError: if ``x`` has fewer than 2 dimensions.

    >>> import runetensor.array_api as xp
    >>> xp.matrix_transpose(xp.zeros((4, 2, 3))).shape
    (4, 3, 2)
    """
    x = arr(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: expected an array of rank >= 2, got shape {x.shape}")
    return rt.matrix_transpose(x)


def tensordot(x1: Tensor, x2: Tensor, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Tensor:
    """Contract ``x1`` and ``x2`` over ``axes``: an int ``N`` (last N of x1 with first N of x2) or two axis lists.

    Raises:
        ValueError: if contracted sizes differ, or ``axes`` is negative or too large.

    >>> import runetensor.array_api as xp
    >>> print(xp.tensordot(xp.ones((2, 3)), xp.ones((3, 2)), axes=1))
    [[3, 3],
     [3, 3]]
    """
    a = arr(x1, "tensordot")
    b = arr(x2, "tensordot")
    if not isinstance(axes, (tuple, list)):
        k = as_int(axes, "tensordot", "axes")
        if k < 0:
            raise ValueError(f"tensordot: axes must be >= 0, got {k}")
        axes = k
    return rt.tensordot(a, b, axes=axes)


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """Dot product of vectors along ``axis`` (after broadcasting), conjugating ``x1`` when complex.

    Raises:
        ValueError: if the shapes do not broadcast or the sizes along ``axis`` differ.

    >>> import runetensor.array_api as xp
    >>> print(xp.vecdot(xp.asarray([[1, 2], [3, 4]]), xp.asarray([1, 10])))
    [21, 43]
    >>> print(xp.vecdot(xp.asarray([1j]), xp.asarray([1j])))
    1+0i
    """
    a = arr(x1, "vecdot")
    b = arr(x2, "vecdot")
    return rt.vecdot(a, b, axis=axis)
