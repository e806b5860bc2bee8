"""Tensor's operators in C for small NumPy tensors (the optional ``_dispatch`` extension).

``install`` replaces ``Tensor.__add__``, ``__mul__``, ``__neg__``, ``__lt__``... (and
``install_getitem`` ``__getitem__``: basic keys give NumPy's view in C) by method
descriptors of ``runetensor/_backend/_dispatch.c``: on two tensors of one plain NumPy dtype (or a
tensor and a Python float/int its dtype keeps), both on this backend, with fewer than
``numpy_backend._FAST_MIN`` elements, they call the ufunc that ``NumpyBackend.binary`` /
``unary`` would call and build the result ``Tensor`` in C; every other call goes to the Python
method they replace (kept in :data:`PYTHON`), which therefore decides every error and every other
case.  The dtypes are the ones whose ops the backend hands straight to a NumPy ufunc: float32,
float64 and the integer dtypes (bool, complex, float16, bfloat16/float8 and int4 take the Python
path).

The same extension also builds result tensors (:data:`WRAP`, which ``_tensor.wrap`` becomes), takes
``rt.reshape``/``rt.transpose`` views (:data:`RESHAPE_VIEW`, :data:`TRANSPOSE_VIEW`), runs
``NumpyBackend.binary``'s small plain case (``numpy_backend._cbinary``) and ``rt.jit``'s cached calls
(``runetensor/_jit/__init__.py``, ``_jitrun.py``); docs/performance.md, "Per-call overhead".

Without the compiled module, or with ``RUNETENSOR_C_DISPATCH=0`` in the environment at import, the
Python methods stay (same results).  ``set_enabled(False)`` / ``set_enabled(True)`` switch between
the two at run time (the tests compare them).

>>> import runetensor as rt
>>> from runetensor._backend import _fastops
>>> a = rt.asarray([1.0, 2.0])
>>> on = _fastops.ENABLED
>>> _fastops.set_enabled(False); (a + a).tolist()
[2.0, 4.0]
>>> _fastops.set_enabled(on); (a + a).tolist()
[2.0, 4.0]
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

import numpy as np

from .numpy_backend import _BINARY, _FAST_MIN, _FLOAT_UFUNC, _UNARY, NP_DTYPE, numpy_backend

try:
    from . import _dispatch  # type: ignore[attr-defined]
except ImportError:  # not built (no compiler): the Python methods stay
    _dispatch = None

#: the Python methods the C descriptors replace (name -> function), filled by ``install``
PYTHON: dict[str, Callable[..., Any]] = {}
#: the C descriptors (name -> descriptor)
_C: dict[str, Any] = {}
#: whether Tensor's operators are the C descriptors now
ENABLED = False
_TENSOR: list[Any] = []
#: once installed: ``wrap(data, dtype, backend)`` in C; ``reshape_view(t, shape, max_rank)`` and
#: ``transpose_view(t)``, rt.reshape's and rt.transpose's views of a NumPy tensor in C (None: not the
#: fast case, the Python function decides)
WRAP: Callable[..., Any] | None = None
RESHAPE_VIEW: Callable[..., Any] | None = None
TRANSPOSE_VIEW: Callable[..., Any] | None = None

#: NumPy dtypes whose elementwise ops the backend hands straight to a ufunc (for small operands)
_PLAIN = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                                         np.uint8, np.uint16, np.uint32, np.uint64))


def _ufunc(prim: str, unary: bool) -> tuple[Any, str] | None:
    """The ufunc the backend calls for ``prim`` on small plain operands, and the kinds it holds for."""
    if unary:
        fn = _UNARY.get(prim)
        return (fn, "fiu") if isinstance(fn, np.ufunc) else None
    fn = _BINARY.get(prim)
    if isinstance(fn, np.ufunc):
        return fn, "fiu"
    fn = _FLOAT_UFUNC.get(prim)
    return (fn, "f") if isinstance(fn, np.ufunc) else None


def _errstate_ignore() -> tuple[Any, Any]:
    """NumPy's error-state context variable and its value under ``np.errstate(all="ignore")``: the C calls run
    their ufuncs under it, as the Python path runs them under ``errstate`` (no primitive prints warnings)."""
    from numpy._core._ufunc_config import _extobj_contextvar as var  # deferred: NumPy internals, read once
    with np.errstate(all="ignore"):
        return var, var.get()


def install(tensor: type, ops: list[tuple[str, str, Any, str, bool, bool]]) -> bool:
    """Put the C descriptors on ``tensor`` for ``ops``: ``(method name, contract op, result DType or None
    (the operand's), dtype kinds of the fast case, reflected, unary)``.  Returns whether they are on.

    A method whose op has no plain ufunc keeps its Python function."""
    global ENABLED
    if _dispatch is None or _TENSOR or os.environ.get("RUNETENSOR_C_DISPATCH", "1") == "0":
        return False
    try:
        _dispatch.set_quiet(*_errstate_ignore())
        _dispatch.setup(tensor, np.ndarray, np.empty((2, 3, 5), np.int8)[:, ::2], numpy_backend,
                        np.asarray, _FAST_MIN)
    except (RuntimeError, TypeError, ImportError, AttributeError):
        return False  # an unexpected array layout, patched classes, another NumPy error state: stay in Python
    _TENSOR.append(tensor)
    global WRAP, RESHAPE_VIEW, TRANSPOSE_VIEW
    WRAP, RESHAPE_VIEW, TRANSPOSE_VIEW = _dispatch.wrap, _dispatch.reshape_view, _dispatch.transpose_view
    _install_backend_binary()
    plain = [(rt_d, nd.kind) for rt_d, nd in NP_DTYPE.items() if nd in _PLAIN]
    for name, prim, result, kinds, reflected, unary in ops:
        found = _ufunc(prim, unary)
        fn = tensor.__dict__.get(name)
        if found is None or fn is None:
            continue
        uf, uk = found
        ok = [(d, k) for d, k in plain if k in kinds and k in uk]
        same = () if reflected else tuple(d for d, _ in ok)
        floats = () if unary else tuple(d for d, k in ok if k == "f")
        ints = () if unary else tuple(d for d, _ in ok)
        PYTHON[name] = fn
        _C[name] = _dispatch.add_op(name, uf, fn, result, reflected, unary, same, floats, ints)
    set_enabled(True)
    return True


def _install_backend_binary() -> None:
    """``NumpyBackend.binary`` on small operands of one plain dtype in C: the ops whose ufunc is all the
    method calls there (``_BINARY``'s ufuncs; on floats, the division family's ``_FLOAT_UFUNC``)."""
    nb = sys.modules[numpy_backend.__class__.__module__]
    ops: dict[str, tuple[Any, bool]] = {op: (fn, False) for op, fn in _BINARY.items()
                                        if isinstance(fn, np.ufunc) and op != "floordiv"}
    for op in ("div", "pyfloordiv", "mod", "pymod"):
        fn = _FLOAT_UFUNC.get(op)
        if isinstance(fn, np.ufunc) and op not in ops:
            ops[op] = (fn, True)
    _dispatch.set_backend_ops(ops, tuple(_PLAIN), tuple(d for d in _PLAIN if d.kind == "f"))
    nb._cbinary = _dispatch.backend_binary


def install_getitem(tensor: type) -> bool:
    """Put the C ``__getitem__`` on ``tensor`` (after ``install``): keys of ints in range, slices with int
    or None bounds and None give NumPy's view of the handle in C; every other key, and every other
    tensor, goes to the Python ``__getitem__`` it replaces.  Returns whether it is on."""
    fn = tensor.__dict__.get("__getitem__")
    if not _TENSOR or _TENSOR[0] is not tensor or fn is None or "__getitem__" in _C:
        return False
    PYTHON["__getitem__"] = fn
    _C["__getitem__"] = _dispatch.add_op("__getitem__", None, fn, None, False, 2, (), (), ())
    if ENABLED:
        type.__setattr__(tensor, "__getitem__", _C["__getitem__"])
    return True


def set_enabled(on: bool) -> None:
    """Tensor's operators in C (``True``, if installed) or the Python methods (``False``)."""
    global ENABLED
    if not _TENSOR:
        return
    src = _C if on else PYTHON
    for name, m in src.items():
        type.__setattr__(_TENSOR[0], name, m)
    ENABLED = bool(on) and bool(_C)
