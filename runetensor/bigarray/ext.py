"""Rune's ``Bigarray_ext``: the extended kinds, kept apart from the standard ones.

``bigarray.ext`` holds the kinds standard OCaml Bigarray lacks (``bfloat16 bool
int4 uint4 float8_e4m3 float8_e5m2 uint32 uint64``; ``int4_signed`` and
``int4_unsigned`` are aliases of ``int4`` and ``uint4``) plus the layouts and
array classes, which are the same objects as in :mod:`runetensor.bigarray`
(``ext.Genarray is bigarray.Genarray``): one array type serves both modules.

>>> from runetensor import bigarray as ba
>>> g = ba.ext.Genarray.create(ba.ext.bfloat16, ba.ext.c_layout, [2, 3]); g.dims(), g.kind()
((2, 3), bigarray.ext.bfloat16)
"""
from ._arrays import Array0, Array1, Array2, Array3
from ._core import EXT_KINDS as KINDS
from ._core import _EXT_BY_NAME, c_layout, fortran_layout, kind_size_in_bytes
from ._genarray import Genarray

__all__ = ["Genarray", "Array0", "Array1", "Array2", "Array3", "c_layout", "fortran_layout",
           "kind_size_in_bytes", "KINDS", "bfloat16", "bool", "int4", "uint4", "int4_signed", "int4_unsigned",
           "float8_e4m3", "float8_e5m2", "uint32", "uint64"]

# written out, so type checkers see them; ``bool`` stays out of ``__all__`` (no shadowed builtin
# after ``from runetensor.bigarray.ext import *``; ``ext.bool`` is still there)
bfloat16, bool, int4, uint4 = (_EXT_BY_NAME[n] for n in ("bfloat16", "bool", "int4", "uint4"))  # noqa: A001
float8_e4m3, float8_e5m2, uint32, uint64 = (_EXT_BY_NAME[n] for n in ("float8_e4m3", "float8_e5m2", "uint32",
                                                                      "uint64"))
int4_signed, int4_unsigned = int4, uint4
assert set(_EXT_BY_NAME) == {"bfloat16", "bool", "int4", "uint4", "float8_e4m3", "float8_e5m2", "uint32", "uint64",
                             "int4_signed", "int4_unsigned"}
__all__.remove("bool")
