"""Captured tensors inside an ``rt.jit`` trace: read at call time, never baked into the program.

A tensor the traced function closes over (not an argument) lives on the trace's parent backend.
An operation whose tensor operands are all such tensors (``c * 2``, ``rt.sum(c)``, ``c[...] = 5``)
would pick that backend and run once, at trace time, leaving its result in the program as a
constant: later calls would see the contents ``c`` had when the function was traced.

While a trace runs in a thread, :func:`lifting` makes every tensor of the trace's parent backend
read, in that thread, as a tensor of the trace (``Tensor._backend`` is the trace's backend; the
handle is unchanged): this is how mixed operands are already lifted (``_tensor.on_common``), and
the trace records the operation as a step whose operand is the captured handle, read on every call
(``JitBackend._spec``: a ``Const(handle)`` operand).  Other threads and the code outside traces see
the plain slot: the hook is installed only while some thread traces (a counter under a lock)."""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from .._backend import _active
from .._tensor import Tensor

#: the ``_backend`` slot of Tensor (a member descriptor): the stored value
_SLOT = Tensor.__dict__["_backend"]
_LOCK = threading.Lock()
_USERS = [0]


class _LiftedBackend:
    """``Tensor._backend`` while some thread traces: in a thread whose outermost transformation is a
    jit trace, a tensor of that trace's parent backend reads as a tensor of the trace."""

    __slots__ = ()

    def __get__(self, t: Any, owner: Any = None) -> Any:
        if t is None:
            return self
        b = _SLOT.__get__(t, owner)
        st = _active.stack
        if st:
            j = st[0]
            if j.parent is b and getattr(j, "mode", None) == "jit":
                return j
        return b

    def __set__(self, t: Any, v: Any) -> None:
        _SLOT.__set__(t, v)

    def __delete__(self, t: Any) -> None:
        _SLOT.__delete__(t)


_LIFTED = _LiftedBackend()


@contextlib.contextmanager
def lifting() -> Iterator[None]:
    """Inside the block (a jit trace, with its backend pushed on this thread's transformation stack),
    operations on captured tensors are recorded as program steps (see the module docstring)."""
    with _LOCK:
        _USERS[0] += 1
        if _USERS[0] == 1:
            type.__setattr__(Tensor, "_backend", _LIFTED)
    try:
        yield
    finally:
        with _LOCK:
            _USERS[0] -= 1
            if _USERS[0] == 0:
                type.__setattr__(Tensor, "_backend", _SLOT)
