"""The Python Array API standard (revision 2024.12) over runetensor tensors.

``import runetensor.array_api as xp`` gives the standard's namespace: the
same :class:`runetensor.Tensor` type as the main namespace, with the
standard's names, signatures and semantics (``round`` halves to even,
``sum`` of int32 gives int64, ``sort(x, axis=-1, descending=False)``...).
``t.__array_namespace__()`` returns this module, so libraries written against
the standard (through ``array_api_compat`` or ``__array_namespace__``, such as
SciPy with ``SCIPY_ARRAY_API=1``) accept runetensor tensors.

Extensions: :mod:`runetensor.array_api.linalg` and :mod:`runetensor.array_api.fft`.
Inspection: ``__array_namespace_info__()``.  The one device is ``"cpu"``; the
dtypes are the standard's thirteen; defaults are float64, complex128 and int64.

>>> import runetensor.array_api as xp
>>> x = xp.asarray([[1, 2], [3, 4]], dtype=xp.int32)
>>> x.__array_namespace__() is xp
True
>>> s = xp.sum(x)
>>> print(s)
10
>>> s.dtype
rt.int64
>>> print(xp.round(xp.asarray([0.5, 1.5, 2.5])))
[0, 2, 2]
"""
from __future__ import annotations

import math as _math

from .._dtypes import (bool, complex64, complex128, float32, float64, int8, int16,  # noqa: A004
                       int32, int64, uint8, uint16, uint32, uint64)
from .._tensor import Tensor
from . import _creation, _data_types, _elementwise, _indexing, _linear, _manipulation
from . import _searching, _set, _sorting, _statistical, _utility
from ._creation import *  # noqa: F401,F403
from ._data_types import *  # noqa: F401,F403
from ._elementwise import *  # noqa: F401,F403
from ._indexing import *  # noqa: F401,F403
from ._info import __array_namespace_info__ as __array_namespace_info__
from ._linear import *  # noqa: F401,F403
from ._manipulation import *  # noqa: F401,F403
from ._searching import *  # noqa: F401,F403
from ._set import *  # noqa: F401,F403
from ._sorting import *  # noqa: F401,F403
from ._statistical import *  # noqa: F401,F403
from ._utility import *  # noqa: F401,F403
from . import linalg  # noqa: E402
from . import fft  # noqa: E402

__array_api_version__ = "2024.12"

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

#: the array type of the namespace
Array = Tensor

__all__ = (["__array_api_version__", "__array_namespace_info__", "e", "inf", "nan", "newaxis", "pi",
            "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float32", "float64", "complex64", "complex128", "linalg", "fft"]
           + _creation.__all__ + _data_types.__all__ + _elementwise.__all__ + _indexing.__all__
           + _linear.__all__ + _manipulation.__all__ + _searching.__all__ + _set.__all__
           + _sorting.__all__ + _statistical.__all__ + _utility.__all__)

# the __future__ import binds the name ``annotations``: not part of this namespace
del annotations
