"""Backends: the contract (:mod:`.contract`) and the registry of implementations.

The frontend asks :func:`get_backend` for the default backend; tensors remember
the backend that owns their buffer.  Only modules in this package import NumPy
(or, later, CuPy or Dask) for computation.
"""
from __future__ import annotations

import threading

from .contract import Backend
from .numpy_backend import numpy_backend

_BACKENDS: dict[str, Backend] = {"numpy": numpy_backend}
_default: list[Backend] = [numpy_backend]


class _Active(threading.local):
    """The transformations running in this thread (innermost last): inside ``rt.grad(f)``,
    tensors that ``f`` creates belong to the innermost transformation's tracer backend."""

    def __init__(self) -> None:
        self.stack: list[Backend] = []


_active = _Active()


def get_backend(name: str | None = None) -> Backend:
    """The backend called ``name``, or the default one.

    Raises:
        ValueError: for an unknown name.

    >>> import runetensor as rt
    >>> rt.get_backend().name
    'numpy'
    """
    if name is None:
        st = _active.stack
        return st[-1] if st else _default[0]
    try:
        return _BACKENDS[name]
    except KeyError:
        raise ValueError(f"get_backend: unknown backend {name!r}; available: {sorted(_BACKENDS)}") from None


def register_backend(backend: Backend) -> None:
    """Make ``backend`` available under ``backend.name``.

    Raises:
        TypeError: if ``backend`` is not a :class:`Backend`.

    >>> import runetensor as rt
    >>> rt.register_backend(rt.get_backend("numpy"))  # registering again is harmless
    """
    if not isinstance(backend, Backend):
        raise TypeError(f"register_backend: expected a Backend, got {type(backend).__name__}")
    _BACKENDS[backend.name] = backend


def set_default_backend(name: str) -> None:
    """Choose the backend that creation functions use.

    Raises:
        ValueError: for an unknown name.

    >>> import runetensor as rt
    >>> rt.set_default_backend("numpy")
    """
    _default[0] = get_backend(name)


__all__ = ["Backend", "get_backend", "register_backend", "set_default_backend", "numpy_backend"]
