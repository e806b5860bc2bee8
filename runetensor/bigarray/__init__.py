"""OCaml's Bigarray: kinds, C and Fortran layouts, Genarray and Array0-3 (seed 001).

``from runetensor import bigarray as ba``.  A bigarray is a runetensor
:class:`~runetensor.Tensor` (so it lives behind the backend contract) plus its
*kind* (the OCaml element kind) and its *layout*:

* ``ba.c_layout``: row-major storage, indices start at 0;
* ``ba.fortran_layout``: column-major storage, indices start at 1.

The dimensions are always the ones given (a Fortran ``[2; 3]`` array has dims
``(2, 3)``), and a bigarray is always contiguous in its layout's order: every
view the module hands out (``sub_left``/``slice_left`` on C arrays,
``sub_right``/``slice_right`` on Fortran arrays, ``change_layout``,
``reshape``) keeps that true, shares memory and copies nothing.

OCaml's module functions become methods whose first argument is the array,
so ``Genarray.get a [|1; 2|]`` reads ``Genarray.get(a, [1, 2])`` or
``a.get([1, 2])``; constructors are static methods (``Genarray.create(kind,
layout, dims)``).  The standard kinds are module attributes (``ba.float32``,
``ba.int``, ``ba.char``...); the extended kinds of Rune's ``Bigarray_ext``
(``bfloat16``, ``bool``, ``int4``...) live apart in :data:`ext`, as OCaml
keeps ``Bigarray_ext`` apart.  See ``docs/bigarray.md`` for the Python
mappings (``char`` reads as a 1-character ``str``...) and every intended
difference from OCaml and NumPy.

>>> from runetensor import bigarray as ba
>>> g = ba.Genarray.create(ba.float32, ba.fortran_layout, [2, 3])
>>> g.set([2, 3], 7.5); g[1, 1] = 1.0
>>> g.get([2, 3]), g.dims(), g.change_layout(ba.c_layout)[2, 1]
(7.5, (2, 3), 7.5)
"""
from . import ext
from ._arrays import (Array0, Array1, Array2, Array3, array0_of_genarray, array1_of_genarray,
                      array2_of_genarray, array3_of_genarray, genarray_of_array0, genarray_of_array1,
                      genarray_of_array2, genarray_of_array3, reshape, reshape_0, reshape_1, reshape_2,
                      reshape_3)
from ._core import (EXT_KINDS, KINDS, MAX_DIMS, Kind, Layout, _STD, c_layout, fortran_layout,
                    kind_of_dtype, kind_size_in_bytes)
from ._genarray import Genarray

__all__ = [
    "Kind", "Layout", "Genarray", "Array0", "Array1", "Array2", "Array3",
    "float16", "float32", "float64", "complex32", "complex64", "int8_signed", "int8_unsigned",
    "int16_signed", "int16_unsigned", "int32", "int64", "int", "nativeint", "char",
    "c_layout", "fortran_layout", "kind_size_in_bytes", "KINDS", "EXT_KINDS", "ext",
    "genarray_of_array0", "genarray_of_array1", "genarray_of_array2", "genarray_of_array3",
    "array0_of_genarray", "array1_of_genarray", "array2_of_genarray", "array3_of_genarray",
    "reshape", "reshape_0", "reshape_1", "reshape_2", "reshape_3", "kind_of_dtype", "MAX_DIMS",
]

# The standard kinds as module attributes: ``bigarray.float32`` ... ``bigarray.int``, ``bigarray.char``
# (written out, so type checkers see them).  ``int`` stays out of ``__all__``: ``from
# runetensor.bigarray import *`` does not shadow the builtin (``bigarray.int`` is still there).
(float16, float32, float64, complex32, complex64, int8_signed, int8_unsigned, int16_signed,  # noqa: A001
 int16_unsigned, int32, int64, int, nativeint, char) = _STD
assert [k.name for k in _STD] == ["float16", "float32", "float64", "complex32", "complex64", "int8_signed",
                                  "int8_unsigned", "int16_signed", "int16_unsigned", "int32", "int64", "int",
                                  "nativeint", "char"]
__all__.remove("int")
