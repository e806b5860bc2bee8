"""Backends: the contract (:mod:`.contract`) and the registry of implementations.

The frontend asks :func:`get_backend` for the default backend; tensors remember
the backend that owns their buffer.  Only modules in this package import NumPy
(or, later, CuPy or Dask) for computation.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

from .contract import Backend
from .numpy_backend import numpy_backend
import importlib

_BACKENDS: dict[str, Backend] = {"numpy": numpy_backend}
_default: list[Backend] = [numpy_backend]
#: backends imported on first use (their engines are heavy imports)
_LAZY = {"dask": ("runetensor._backend.dask_backend", "dask_backend")}


class _Stack(list):
    """The transformation stack of one thread; ``default`` is the backend ``rt.use_backend`` chose
    for this thread (None: the process default), read only when no transformation runs."""

    __slots__ = ("default",)

    def __init__(self) -> None:
        super().__init__()
        self.default: Backend | None = None


class _Active(threading.local):
    """The transformations running in this thread (innermost last): inside ``rt.grad(f)``,
    tensors that ``f`` creates belong to the innermost transformation's tracer backend."""

    def __init__(self) -> None:
        self.stack: _Stack = _Stack()


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
        return st[-1] if st else (st.default or _default[0])
    try:
        return _BACKENDS[name]
    except (KeyError, TypeError):  # TypeError: unhashable
        pass
    if isinstance(name, Backend):
        return name
    if not isinstance(name, str):
        raise TypeError(f"get_backend: expected a backend name, got {type(name).__name__}")
    lazy = _LAZY.get(name)
    if lazy is not None:
        try:
            mod = importlib.import_module(lazy[0])
        except ImportError as e:
            raise ValueError(f"get_backend: the {name} backend needs {e.name or name!r}: "
                             f"pip install 'runetensor[{name}]'") from None
        register_backend(getattr(mod, lazy[1]))
        return _BACKENDS[name]
    raise ValueError(f"get_backend: unknown backend {name!r}; available: {sorted(set(_BACKENDS) | set(_LAZY))}")


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


@contextmanager
def use_backend(name: Any, **options: Any) -> Iterator[Backend]:
    """Inside the block, creation functions in this thread make tensors of backend ``name``.

    ``options`` go to the backend's ``configure`` (the Dask backend: ``chunks=``).  Transformations
    compose with it: inside ``rt.grad``/``rt.vmap``... the transformation's backend still wins
    (tensors created there are traced, on top of the operands' backend).

    Raises:
        ValueError: for an unknown name.
        TypeError: for options the backend does not take.

    >>> import runetensor as rt
    >>> with rt.use_backend("numpy"):
    ...     rt.zeros(rt.float32, [2]).backend.name
    'numpy'
    """
    be = get_backend(name)
    st = _active.stack
    prev = st.default
    if options:
        conf = getattr(be, "configure", None)
        if conf is None:
            raise TypeError(f"use_backend: the {be.name} backend takes no options, got {sorted(options)}")
        ctx = conf(**options)
    else:
        ctx = None
    st.default = be
    try:
        if ctx is None:
            yield be
        else:
            with ctx:
                yield be
    finally:
        st.default = prev


__all__ = ["Backend", "get_backend", "register_backend", "set_default_backend", "use_backend", "numpy_backend"]
