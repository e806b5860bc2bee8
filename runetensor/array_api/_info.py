"""``__array_namespace_info__``: what this implementation of the standard supports."""
from __future__ import annotations

from typing import Any

from .. import _dtypes as D
from .._dtypes import DType
from .._validate import MAX_RANK
from ._common import STD_DTYPES, check_device, device_of_backend, devices
from ._data_types import isdtype
from .._backend import get_backend

__all__ = ["__array_namespace_info__"]


class Info:
    """The inspection namespace returned by ``__array_namespace_info__()``.

    >>> import runetensor.array_api as xp
    >>> info = xp.__array_namespace_info__()
    >>> info.default_device(), info.devices()[0]
    ('cpu', 'cpu')
    >>> info.default_dtypes()["real floating"]
    rt.float64
    >>> sorted(info.dtypes(kind="signed integer"))
    ['int16', 'int32', 'int64', 'int8']
    """

    __module__ = "runetensor.array_api"

    def capabilities(self) -> dict[str, Any]:
        """``{"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}``."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": MAX_RANK}

    def default_device(self) -> str:
        """The default device: the default backend's (``"cpu"``; ``"dask"`` inside ``rt.use_backend("dask")``)."""
        return device_of_backend(get_backend())

    def devices(self) -> list[str]:
        """The supported devices: ``"cpu"`` (the NumPy backend) and, where Dask is installed, ``"dask"``
        (the Dask backend: ``device="dask"`` creates Dask tensors, ``t.to_device("cpu")`` computes one)."""
        return devices()

    def default_dtypes(self, *, device: Any = None) -> dict[str, DType]:
        """Default dtypes for each kind: float64, complex128, int64 (also for indexing)."""
        check_device(device, "default_dtypes")
        return {"real floating": D.default_float, "complex floating": D.default_complex,
                "integral": D.default_int, "indexing": D.int64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, DType]:
        """The standard dtypes the namespace supports, optionally only those of ``kind`` (as :func:`isdtype`)."""
        check_device(device, "dtypes")
        return {d.name: d for d in STD_DTYPES if kind is None or isdtype(d, kind)}


_INFO = Info()


def __array_namespace_info__() -> Info:
    """The namespace's inspection object (devices, default dtypes, capabilities).

    >>> import runetensor.array_api as xp
    >>> xp.__array_namespace_info__().capabilities()["max dimensions"]
    64
    """
    return _INFO
