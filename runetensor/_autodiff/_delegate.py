"""The parent delegation shared by the tracer backends (``vjp``/``jvp``'s and ``vmap``'s).

Introspection and host reads are answered by the parent backend on the unwrapped handle.  The
functions are written once here and bound as methods in each backend's class body (each backend
keeps its own method per primitive: the table tests check that none is inherited from the
abstract contract).  A backend gives ``parent``, ``_in(h) -> (parent handle, payload)`` and
``_host(x, what) -> parent handle``, the one hook for a read of values to the host (``what``
names the read in an error: ``vmap`` refuses a value that differs from lane to lane).
"""
from __future__ import annotations

from typing import Any


def capabilities(self: Any) -> frozenset:
    """The parent's: a transformation computes on the parent backend's handles."""
    return self.parent.capabilities


def require(self: Any, capability: str, fname: str) -> None:
    self.parent.require(capability, fname)


# ---------------------------------------------------------------------- introspection
def dtype(self: Any, h: Any) -> Any:
    return self.parent.dtype(self._in(h)[0])


def offset(self: Any, h: Any) -> int:
    return self.parent.offset(self._in(h)[0])


def buffer_size(self: Any, h: Any) -> int:
    return self.parent.buffer_size(self._in(h)[0])


def shares_memory(self: Any, a: Any, b: Any) -> bool:
    return self.parent.shares_memory(self._in(a)[0], self._in(b)[0])


def value_range(self: Any, x: Any) -> Any:
    return self.parent.value_range(self._in(x)[0])


def dlpack_device(self: Any, x: Any) -> Any:
    return self.parent.dlpack_device(self._in(x)[0])


# ---------------------------------------------------------------------- host reads
def to_host(self: Any, x: Any) -> Any:
    return self.parent.to_host(self._host(x, "reading a tensor's values"))


def to_list(self: Any, x: Any) -> Any:
    return self.parent.to_list(self._host(x, "converting to a Python value"))


def to_bytes(self: Any, x: Any) -> bytes:
    return self.parent.to_bytes(self._host(x, "to_bytes"))


def dlpack(self: Any, x: Any, stream: Any, max_version: Any, dl_device: Any, copy: bool | None) -> Any:
    return self.parent.dlpack(self._host(x, "__dlpack__"), stream, max_version, dl_device, copy)
