"""NumPy manners of ``Tensor`` methods (no new names in the namespace).

* Reductions as methods (``t.sum``, ``prod``, ``max``, ``min``, ``all``, ``any``, ``mean``,
  ``var``, ``std``, ``argmax``, ``argmin``) take NumPy's ``axis=`` (an int or a tuple) beside
  Rune's ``axes=``, and NumPy's ``dtype=`` and ``out=``, so ``np.sum(t, axis=0)``, ``np.mean(t)``
  and ``t.sum(axis=0)`` work (NumPy calls the method with those keywords).  The functions
  (``rt.sum(t, axes=...)``) keep Rune's signature.
* ``t.reshape(4, 3)`` as well as ``t.reshape((4, 3))``; ``t.tolist()``; ``t.tobytes()``;
  ``x in t`` (``any(t == x)``).
* ``__array_interface__`` (NumPy's array interface, version 3) for the NumPy backend's tensors of
  the dtypes NumPy itself knows (bool, integers, floats, complex), so Pillow's
  ``Image.fromarray(t)`` works; bfloat16, float8, int4 and tensors under a transformation have
  none (NumPy then uses ``__array__``).

>>> import numpy as np, runetensor as rt
>>> t = rt.create(rt.float32, [2, 3], [1, 2, 3, 4, 5, 6])
>>> print(t.sum(axis=0))
[5, 7, 9]
>>> float(np.mean(t)), t.reshape(3, 2).shape, 5.0 in t, t.tolist()
(3.5, (3, 2), True, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
"""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from . import _reduction as R
from . import _views as V
from ._tensor import Tensor, binary_op
from ._interop import refuse_derivative

__all__: list[str] = []

#: runetensor dtypes whose NumPy dtype comes from ml_dtypes: their type strings ('<f1', '<V2'...)
#: mean something else to NumPy's array interface
_NO_TYPESTR = frozenset({"bfloat16", "float8_e4m3", "float8_e5m2", "int4", "uint4"})


def _axes(fname: str, axes: Sequence[int] | None, axis: int | Sequence[int] | None) -> Sequence[int] | None:
    if axis is None:
        return axes
    if axes is not None:
        raise TypeError(f"{fname}: give Rune's axes= or NumPy's axis=, not both")
    if isinstance(axis, Sequence):
        return [operator.index(a) for a in axis]
    return [operator.index(axis)]


def _out(fname: str, r: Tensor, out: Tensor | None) -> Tensor:
    if out is None:
        return r
    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}: out= must be a Tensor, got {type(out).__name__}")
    if out.shape != r.shape:
        raise ValueError(f"{fname}: out= has shape {out.shape}, the result {r.shape}")
    out[...] = r
    return out


def _reducer(fn: Any, cast_first: bool) -> Any:
    name = fn.__name__

    def method(self: Tensor, axes: Sequence[int] | None = None, keepdims: bool = False, *,
               axis: int | Sequence[int] | None = None, dtype: Any = None, out: Tensor | None = None) -> Tensor:
        ax = _axes(name, axes, axis)
        if dtype is not None and cast_first:
            self = V.astype(self, dtype)
        r = fn(self, ax, keepdims)
        if dtype is not None and not cast_first:
            r = V.astype(r, dtype)
        return _out(name, r, out)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"``rt.{name}`` as a method; also takes NumPy's ``axis=`` (an int or a tuple), "
                      f"``dtype=`` and ``out=``.\n\n" + (fn.__doc__ or ""))
    return method


def _var_method(fn: Any) -> Any:
    name = fn.__name__

    def method(self: Tensor, axes: Sequence[int] | None = None, keepdims: bool = False, ddof: int = 0, *,
               axis: int | Sequence[int] | None = None, dtype: Any = None, out: Tensor | None = None) -> Tensor:
        ax = _axes(name, axes, axis)
        if dtype is not None:
            self = V.astype(self, dtype)
        return _out(name, fn(self, ax, keepdims, ddof), out)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"``rt.{name}`` as a method; also takes NumPy's ``axis=`` (an int or a tuple), "
                      f"``dtype=`` and ``out=``.\n\n" + (fn.__doc__ or ""))
    return method


def _arg_method(fn: Any) -> Any:
    name = fn.__name__

    def method(self: Tensor, axis: int | None = None, keepdims: bool = False, *,
               out: Tensor | None = None) -> Tensor:
        return _out(name, fn(self, axis, keepdims), out)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``rt.{name}`` as a method; also takes NumPy's ``out=``.\n\n" + (fn.__doc__ or "")
    return method


for _fn, _cast_first in ((R.sum, True), (R.prod, True), (R.mean, True), (R.max, False), (R.min, False),
                         (R.all, False), (R.any, False)):
    setattr(Tensor, _fn.__name__, _reducer(_fn, _cast_first))
for _fn in (R.var, R.std):
    setattr(Tensor, _fn.__name__, _var_method(_fn))
for _fn in (R.argmax, R.argmin):
    setattr(Tensor, _fn.__name__, _arg_method(_fn))
del _fn, _cast_first


def reshape(self: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """``rt.reshape`` as a method: ``t.reshape(4, 3)`` or ``t.reshape((4, 3))`` (``-1`` infers one size)."""
    if len(shape) == 1 and not isinstance(shape[0], int):
        return V.reshape(self, shape[0])  # type: ignore[arg-type]
    return V.reshape(self, shape)  # type: ignore[arg-type]


def tolist(self: Tensor) -> Any:
    """The elements as nested Python lists (a Python scalar for a 0-d tensor), as NumPy's ``tolist``."""
    return self._backend.to_list(self._data)


def tobytes(self: Tensor) -> bytes:
    """The elements' bytes in row-major (C) order, as NumPy's ``tobytes``.

    Raises:
        TypeError: if the tensor carries a derivative (``rt.stop_gradient`` it first).
    """
    if self._backend.level > 0:
        refuse_derivative(self, "tobytes")
    return bytes(self._backend.to_host(self._data).tobytes())


def _contains(self: Tensor, x: Any) -> bool:
    """``x in t``: whether any element equals ``x`` (NumPy's ``(t == x).any()``)."""
    return bool(R.any(binary_op("eq", self, x, "__contains__")))


def _array_interface(self: Tensor) -> dict[str, Any]:
    """NumPy's array interface (version 3): the tensor's own memory, with explicit strides.

    Raises:
        AttributeError: for dtypes NumPy does not know (bfloat16, float8, int4) and tensors
            not held by the NumPy backend; NumPy then uses ``__array__``.
        TypeError: if the tensor carries a derivative (``rt.stop_gradient`` it first).
    """
    if self._backend.level > 0:
        refuse_derivative(self, "__array_interface__")
    h = self._data
    try:
        host = self._backend.to_host(h)
    except Exception:
        host = None
    if host is not h or not hasattr(h, "__array_interface__"):
        raise AttributeError("__array_interface__: only the NumPy backend's tensors have one")
    ai = dict(h.__array_interface__)
    if ai["typestr"][1] not in "biufc" or self._dtype.name in _NO_TYPESTR:
        raise AttributeError(f"__array_interface__: NumPy has no type string for {self._dtype}")
    if ai.get("strides") is None:
        ai["strides"] = tuple(h.strides)
    return ai


Tensor.reshape = reshape  # type: ignore[method-assign]
Tensor.tolist = tolist  # type: ignore[attr-defined]
Tensor.tobytes = tobytes  # type: ignore[attr-defined]
Tensor.__contains__ = _contains  # type: ignore[attr-defined]
Tensor.__array_interface__ = property(_array_interface, doc=_array_interface.__doc__)  # type: ignore[attr-defined]
