"""Data types and the promotion table.

runetensor has the 19 element types of Rune plus ``object`` (Python objects,
used by :mod:`runetensor.harpie` for tuple- and list-valued arrays).  A
:class:`DType` is backend-neutral: it records a name, an item size, a kind and
the name of the NumPy / ml_dtypes type that stores it; each backend maps it to
its own storage type.

Kinds: ``"b"`` bool, ``"i"`` signed integer, ``"u"`` unsigned integer,
``"f"`` real floating point, ``"c"`` complex floating point, ``"O"`` object.

Promotion
---------
Mixed-dtype operations promote with :func:`promote_types`.  Within a kind the
rule is the Array API standard's table (the smallest type that holds both);
the standard leaves the following out, and runetensor fixes them as:

=====================================  =======================================
operands                               result
=====================================  =======================================
``bool`` with any ``T``                ``T``
``int4``/``uint4``                     below ``int8``/``uint8`` in their chains
``uintN`` with ``intM``                the smallest signed type holding both
                                       (``uint4+int4 -> int8``,
                                       ``uint8+int8 -> int16``, ...);
                                       ``uint64`` with a signed type ->
                                       ``float64`` (as NumPy and JAX)
integer with floating ``F``            ``F`` (as JAX and PyTorch; NumPy may
                                       widen, e.g. ``int32+float32 ->
                                       float64``: an intended difference)
two different float8 types             ``float16`` (holds both exactly)
float8 with ``bfloat16``               ``bfloat16``
float8 with ``float16``                ``float16``
``bfloat16`` with ``float16``          ``float32``
real ``F`` with complex ``C``          complex with parts of
                                       ``promote(F, C's part)``
anything with ``object``               ``object``
=====================================  =======================================

Python scalars are "weak" (Array API and NEP 50): ``t + 1`` keeps ``t``'s
dtype, a Python ``float`` with an integer or bool tensor gives the default
float dtype (``float64``), a ``complex`` with a real tensor gives the
complex type of matching precision.
"""
from __future__ import annotations

import builtins
from typing import Any

__all__ = [
    "DType", "float16", "float32", "float64", "bfloat16", "float8_e4m3",
    "float8_e5m2", "int4", "uint4", "int8", "uint8", "int16", "uint16",
    "int32", "uint32", "int64", "uint64", "bool", "complex64", "complex128",
    "object_", "promote_types", "result_type", "dtype_of", "all_dtypes",
    "default_float", "default_int", "default_complex",
]


class DType:
    """An element type: ``rt.float32``, ``rt.int4``, ``rt.bool``...

    Attributes:
        name: the runetensor name (``"float32"``).
        itemsize: bytes per element in storage (``int4`` takes one byte).
        kind: ``"b"``, ``"i"``, ``"u"``, ``"f"``, ``"c"`` or ``"O"``.
        bits: bits of information per element (4 for ``int4``).
        storage: name of the NumPy/ml_dtypes type that stores it.

    >>> import runetensor as rt
    >>> rt.bfloat16.itemsize, rt.bfloat16.kind, rt.int4.bits
    (2, 'f', 4)
    """

    __slots__ = ("name", "itemsize", "kind", "bits", "storage", "_rank")

    def __init__(self, name: str, itemsize: int, kind: str, bits: int, storage: str, rank: int):
        self.name = name
        self.itemsize = itemsize
        self.kind = kind
        self.bits = bits
        self.storage = storage
        self._rank = rank

    def __repr__(self) -> str:
        return f"rt.{self.name}"

    __str__ = lambda self: self.name  # noqa: E731

    def __reduce__(self):
        return (dtype_of, (self.name,))

    @property
    def is_float(self) -> builtins.bool:
        """True for real floating types (including bfloat16 and float8)."""
        return self.kind == "f"

    @property
    def is_complex(self) -> builtins.bool:
        return self.kind == "c"

    @property
    def is_int(self) -> builtins.bool:
        """True for signed and unsigned integer types (not bool)."""
        return self.kind in "iu"

    @property
    def is_inexact(self) -> builtins.bool:
        return self.kind in "fc"

    @property
    def is_low_precision(self) -> builtins.bool:
        """float16, bfloat16 and the float8 types: computed in float32 and rounded back."""
        return self.kind == "f" and self.bits <= 16

    @property
    def is_extended(self) -> builtins.bool:
        """Types OCaml's standard Bigarray lacks (bfloat16, bool, int4, uint4, float8, uint32, uint64)."""
        return self.name in _EXTENDED

    @property
    def real_dtype(self) -> "DType":
        """The type of the real part: ``complex64 -> float32``; real types map to themselves."""
        if self is complex64:
            return float32
        if self is complex128:
            return float64
        return self


float16 = DType("float16", 2, "f", 16, "float16", 0)
float32 = DType("float32", 4, "f", 32, "float32", 0)
float64 = DType("float64", 8, "f", 64, "float64", 0)
bfloat16 = DType("bfloat16", 2, "f", 16, "bfloat16", 0)
float8_e4m3 = DType("float8_e4m3", 1, "f", 8, "float8_e4m3fn", 0)
float8_e5m2 = DType("float8_e5m2", 1, "f", 8, "float8_e5m2", 0)
int4 = DType("int4", 1, "i", 4, "int4", 4)
int8 = DType("int8", 1, "i", 8, "int8", 8)
int16 = DType("int16", 2, "i", 16, "int16", 16)
int32 = DType("int32", 4, "i", 32, "int32", 32)
int64 = DType("int64", 8, "i", 64, "int64", 64)
uint4 = DType("uint4", 1, "u", 4, "uint4", 4)
uint8 = DType("uint8", 1, "u", 8, "uint8", 8)
uint16 = DType("uint16", 2, "u", 16, "uint16", 16)
uint32 = DType("uint32", 4, "u", 32, "uint32", 32)
uint64 = DType("uint64", 8, "u", 64, "uint64", 64)
bool = DType("bool", 1, "b", 1, "bool", 0)  # noqa: A001  (rt.bool, as the conventions name it)
complex64 = DType("complex64", 8, "c", 64, "complex64", 0)
complex128 = DType("complex128", 16, "c", 128, "complex128", 0)
object_ = DType("object", 8, "O", 64, "object", 0)

all_dtypes: tuple[DType, ...] = (
    float16, float32, float64, bfloat16, float8_e4m3, float8_e5m2,
    int4, uint4, int8, uint8, int16, uint16, int32, uint32, int64, uint64,
    bool, complex64, complex128,
)
_BY_NAME = {d.name: d for d in all_dtypes + (object_,)}
_BY_NAME.update({"float8_e4m3fn": float8_e4m3, "bool_": bool, "object_": object_})
_EXTENDED = {"bfloat16", "bool", "int4", "uint4", "float8_e4m3", "float8_e5m2", "uint32", "uint64"}

default_float = float64
default_int = int64
default_complex = complex128

_SIGNED = (int4, int8, int16, int32, int64)
_UNSIGNED = (uint4, uint8, uint16, uint32, uint64)


def dtype_of(name: Any) -> DType:
    """Look a dtype up by name or pass a :class:`DType` through.

    Args:
        name: a ``DType``, or a name such as ``"float32"``; NumPy dtype
            objects and Python's ``bool``/``int``/``float``/``complex`` work too.
    Returns:
        The ``DType``.
    Raises:
        TypeError: if ``name`` names no runetensor dtype.

    >>> dtype_of("int4")
    rt.int4
    >>> dtype_of(float)
    rt.float64
    """
    if isinstance(name, DType):
        return name
    if name is builtins.bool:
        return bool
    if name is builtins.int:
        return default_int
    if name is builtins.float:
        return default_float
    if name is builtins.complex:
        return default_complex
    key = getattr(name, "name", name)  # numpy dtypes and scalar types
    if not isinstance(key, str) and hasattr(name, "__name__"):
        key = name.__name__
    if isinstance(key, str) and key in _BY_NAME:
        return _BY_NAME[key]
    raise TypeError(f"dtype: {name!r} is not a runetensor dtype; expected one of "
                    f"{', '.join(sorted(d.name for d in all_dtypes))}, or object")


def _promote(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a is object_ or b is object_:
        return object_
    if a is bool:
        return b
    if b is bool:
        return a
    ka, kb = a.kind, b.kind
    if ka in "iu" and kb in "iu":
        if ka == kb:
            return a if a._rank >= b._rank else b
        s, u = (a, b) if ka == "i" else (b, a)
        if u is uint64:
            return float64
        for cand in _SIGNED:
            if cand._rank > u._rank and cand._rank >= s._rank:
                return cand
        return float64  # pragma: no cover (uint64 handled above)
    if ka in "iu":
        return b
    if kb in "iu":
        return a
    if ka == "c" or kb == "c":
        return complex128 if _promote(a.real_dtype, b.real_dtype) is float64 else complex64
    # both real floats
    order = {float16: 1, float32: 2, float64: 3}
    if a in order and b in order:
        return a if order[a] >= order[b] else b
    if a.bits == 8 and b.bits == 8:
        return float16
    if a.bits == 8:
        return b
    if b.bits == 8:
        return a
    if {a, b} == {bfloat16, float16}:
        return float32
    hi = a if a.bits >= b.bits else b  # bfloat16 with float32/float64
    return hi


_TABLE: dict[tuple[DType, DType], DType] = {
    (x, y): _promote(x, y) for x in all_dtypes + (object_,) for y in all_dtypes + (object_,)
}


def promote_types(a: DType, b: DType) -> DType:
    """The dtype two operands of types ``a`` and ``b`` compute in (see the module table).

    >>> promote_types(int8, uint8), promote_types(bfloat16, float16), promote_types(int32, float16)
    (rt.int16, rt.float32, rt.float16)
    """
    return _TABLE[(a, b)]


def result_type(*args: Any) -> DType:
    """Promote tensors, dtypes and (weak) Python scalars together.

    >>> import runetensor as rt
    >>> rt.result_type(rt.int8, 1.5), rt.result_type(rt.float16, rt.int64), rt.result_type(rt.float32, 1j)
    (rt.float64, rt.float16, rt.complex64)
    """
    strong: DType | None = None
    weak: list[Any] = []
    for a in args:
        if isinstance(a, DType):
            d = a
        elif hasattr(a, "_dtype"):
            d = a._dtype
        elif isinstance(a, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
            weak.append(a)
            continue
        else:
            d = dtype_of(a)
        strong = d if strong is None else _TABLE[(strong, d)]
    for w in weak:
        strong = weak_result(strong, w)
    if strong is None:
        raise ValueError("result_type: expected at least one tensor, dtype or scalar")
    return strong


def weak_result(d: DType | None, value: Any) -> DType:
    """The dtype of ``d`` combined with the Python scalar ``value`` (weak typing)."""
    t = type(value)
    if d is None:
        return bool if t is builtins.bool else default_int if t is builtins.int else \
            default_float if t is builtins.float else default_complex
    if t is builtins.bool or d is object_:
        return d
    if t is builtins.int:
        return d if d is not bool else default_int
    if t is builtins.float:
        return d if d.kind in "fc" else default_float
    if t is builtins.complex:
        if d.kind == "c":
            return d
        return complex64 if d in (float32, float16, bfloat16, float8_e4m3, float8_e5m2) else complex128
    return d
