"""Tensor attributes and methods the Array API standard requires of an array object.

``__array_namespace__`` (returns :mod:`runetensor.array_api`), ``device``
(``"cpu"`` for the NumPy backend, ``"dask"`` for the Dask backend), ``to_device``, ``mT`` (the last two
axes swapped, as a view) and, when no other family defines it, ``T`` (all axes
reversed, for every rank as NumPy does; the standard only requires rank 2).
The operators, ``__getitem__``/``__setitem__`` and ``__dlpack__`` come from
the core and the other families.

>>> import runetensor as rt
>>> t = rt.zeros(rt.float32, [2, 3, 4])
>>> t.device, t.mT.shape, t.T.shape
('cpu', (2, 4, 3), (4, 3, 2))
>>> t.__array_namespace__().__name__
'runetensor.array_api'
"""
from __future__ import annotations

from typing import Any

from ._tensor import Tensor, wrap
from ._creation import to_backend

__all__: list[str] = []

#: revisions of the standard ``__array_namespace__`` accepts as ``api_version``
SUPPORTED_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def __array_namespace__(self: Tensor, /, *, api_version: str | None = None) -> Any:
    """The Array API namespace of this tensor: :mod:`runetensor.array_api`.

    Raises:
        ValueError: for an ``api_version`` other than None or a supported revision.

    >>> import runetensor as rt
    >>> xp = rt.zeros(rt.int8, [1]).__array_namespace__(api_version="2024.12")
    >>> xp.__array_api_version__
    '2024.12'
    """
    if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
        raise ValueError(f"__array_namespace__: unsupported api_version {api_version!r}; "
                         f"expected one of {', '.join(SUPPORTED_API_VERSIONS)}")
    from . import array_api  # deferred: the namespace imports the families, which import this module
    return array_api


def _device(self: Tensor) -> str:
    """The device holding the tensor's data: ``"cpu"`` for the NumPy backend, ``"dask"`` for the Dask backend
    (a transformation's tracers report their values' device)."""
    be = self._backend
    while be.level > 0 and getattr(be, "parent", None) is not None:
        be = be.parent
    return "cpu" if be.name == "numpy" else be.name


def to_device(self: Tensor, device: Any, /, *, stream: Any = None) -> Tensor:
    """The tensor on ``device``: ``self`` if it is there; ``"cpu"`` moves a Dask tensor to the NumPy
    backend (computing it), ``"dask"`` a NumPy tensor to the Dask backend (``t.to_backend``).

    Raises:
        ValueError: for a device not in ``__array_namespace_info__().devices()``, a tensor of a running
            transformation asked to move, or a ``stream`` (the CPU has none).

    >>> import runetensor as rt
    >>> t = rt.zeros(rt.int8, [2])
    >>> t.to_device("cpu") is t
    True
    >>> t.to_device("dask").to_device("cpu").backend.name
    'numpy'
    """
    here = _device(self)
    if stream is not None:
        raise ValueError(f"to_device: streams are not supported on {here!r}, got {stream!r}")
    if device == here:
        return self
    if device not in ("cpu", "dask") or self._backend.level > 0:
        raise ValueError(f"to_device: cannot move this tensor from {here!r} to device {device!r}; expected "
                         f"one of 'cpu', 'dask' for a tensor outside transformations")
    return to_backend(self, "numpy" if device == "cpu" else "dask")


def _mT(self: Tensor) -> Tensor:
    """A view with the last two axes swapped (the standard's ``mT``)."""
    n = self._data.ndim
    if n < 2:
        raise ValueError(f"mT: expected a tensor of rank >= 2, got shape {self._data.shape}")
    perm = tuple(range(n - 2)) + (n - 1, n - 2)
    return wrap(self._backend.permute(self._data, perm), self._dtype, self._backend)


def _T(self: Tensor) -> Tensor:
    """A view with all axes reversed (NumPy's ``.T``, for every rank)."""
    n = self._data.ndim
    return wrap(self._backend.permute(self._data, tuple(range(n - 1, -1, -1))), self._dtype, self._backend)


Tensor.__array_namespace__ = __array_namespace__  # type: ignore[attr-defined]
Tensor.device = property(_device, doc=_device.__doc__)  # type: ignore[attr-defined]
Tensor.to_device = to_device  # type: ignore[attr-defined]
Tensor.mT = property(_mT, doc=_mT.__doc__)  # type: ignore[attr-defined]
if not hasattr(Tensor, "T"):
    Tensor.T = property(_T, doc=_T.__doc__)  # type: ignore[attr-defined]
