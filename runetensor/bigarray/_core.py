"""Kinds, layouts, element values and the shared base class of every bigarray."""
from __future__ import annotations

import builtins
import itertools
import operator
from typing import Any, Iterator, Sequence

from .. import _dtypes as D
from .._backend import get_backend
from .._creation import int_range
from .._dtypes import DType
from .._indexing import _full
from .._tensor import Tensor, as_tensor, wrap
from .._validate import alloc_error, as_int, check_alloc

__all__ = ["Kind", "Layout", "KINDS", "EXT_KINDS", "MAX_DIMS", "c_layout", "fortran_layout",
           "kind_of_dtype", "kind_size_in_bytes"]

#: The largest number of dimensions a bigarray may have (OCaml's limit).
MAX_DIMS = 16

_pyint = builtins.int
_pybool = builtins.bool
_pyfloat = builtins.float
_pycomplex = builtins.complex
#: rank -> the fixed-rank class (filled in by ``_arrays``); used by iteration
_CLASS_OF_RANK: dict = {}
_GENARRAY: list = []

# ---------------------------------------------------------------------------
# Kinds and layouts
# ---------------------------------------------------------------------------
class Kind:
    """An element kind: ``ba.float32``, ``ba.int8_unsigned``, ``ba.char``, ``ba.ext.bfloat16``...

    Attributes:
        name: the OCaml name (``"complex32"``).
        dtype: the runetensor dtype that stores it (``complex32`` -> ``rt.complex64``).
        size: bytes per element (:func:`kind_size_in_bytes`).
        extended: True for the kinds of ``Bigarray_ext`` (:data:`EXT_KINDS`).
        value: the Python type of its elements: ``"float"``, ``"complex"``,
            ``"int"``, ``"char"`` (a 1-character ``str``) or ``"bool"``.

    >>> from runetensor import bigarray as ba
    >>> ba.complex32.dtype, ba.complex32.size, ba.char.value, ba.ext.bfloat16.extended
    (rt.complex64, 8, 'char', True)
    """

    __slots__ = ("name", "dtype", "size", "extended", "value")

    def __init__(self, name: str, dtype: DType, value: str, extended: _pybool = False):
        self.name = name
        self.dtype = dtype
        self.size = dtype.itemsize
        self.extended = extended
        self.value = value

    def __repr__(self) -> str:
        return f"bigarray.{'ext.' if self.extended else ''}{self.name}"

    def __reduce__(self):
        return (_kind_by_name, (self.name, self.extended))


class Layout:
    """A memory layout: :data:`c_layout` (row-major, 0-based) or :data:`fortran_layout` (column-major, 1-based).

    Attributes:
        name: ``"c_layout"`` or ``"fortran_layout"``.
        base: the first valid index (0 or 1).

    >>> from runetensor import bigarray as ba
    >>> ba.c_layout.base, ba.fortran_layout.base
    (0, 1)
    """

    __slots__ = ("name", "base")

    def __init__(self, name: str, base: _pyint):
        self.name = name
        self.base = base

    def __repr__(self) -> str:
        return f"bigarray.{self.name}"

    def __reduce__(self):
        return (_layout_by_name, (self.name,))


c_layout = Layout("c_layout", 0)
fortran_layout = Layout("fortran_layout", 1)


def _layout_by_name(name: str) -> Layout:
    return c_layout if name == "c_layout" else fortran_layout


_STD = [
    Kind("float16", D.float16, "float"), Kind("float32", D.float32, "float"),
    Kind("float64", D.float64, "float"), Kind("complex32", D.complex64, "complex"),
    Kind("complex64", D.complex128, "complex"), Kind("int8_signed", D.int8, "int"),
    Kind("int8_unsigned", D.uint8, "int"), Kind("int16_signed", D.int16, "int"),
    Kind("int16_unsigned", D.uint16, "int"), Kind("int32", D.int32, "int"),
    Kind("int64", D.int64, "int"), Kind("int", D.int64, "int"),
    Kind("nativeint", D.int64, "int"), Kind("char", D.uint8, "char"),
]
_EXT = [
    Kind("bfloat16", D.bfloat16, "float", True), Kind("bool", D.bool, "bool", True),
    Kind("int4", D.int4, "int", True), Kind("uint4", D.uint4, "int", True),
    Kind("float8_e4m3", D.float8_e4m3, "float", True), Kind("float8_e5m2", D.float8_e5m2, "float", True),
    Kind("uint32", D.uint32, "int", True), Kind("uint64", D.uint64, "int", True),
]
#: The standard kinds of OCaml's ``Bigarray``, in the order of its documentation.
KINDS: tuple[Kind, ...] = tuple(_STD)
#: The extended kinds of Rune's ``Bigarray_ext`` (dtypes standard Bigarray lacks).
EXT_KINDS: tuple[Kind, ...] = tuple(_EXT)
_STD_BY_NAME = {k.name: k for k in _STD}
_EXT_BY_NAME = {k.name: k for k in _EXT}
_EXT_BY_NAME.update(int4_signed=_EXT_BY_NAME["int4"], int4_unsigned=_EXT_BY_NAME["uint4"])
#: dtype -> the kind ``to_bigarray`` gives it (int64 -> int64, uint8 -> int8_unsigned)
_KIND_OF_DTYPE: dict[DType, Kind] = {}
for _k in _STD:
    if _k.name not in ("int", "nativeint", "char"):
        _KIND_OF_DTYPE[_k.dtype] = _k
for _k in _EXT:
    _KIND_OF_DTYPE[_k.dtype] = _k
del _k


def _kind_by_name(name: str, extended: _pybool) -> Kind:
    return (_EXT_BY_NAME if extended else _STD_BY_NAME)[name]


def kind_of_dtype(dtype: Any, extended: _pybool = False) -> Kind:
    """The bigarray kind that stores a runetensor dtype (what ``rt.to_bigarray`` uses).

    Args:
        dtype: a runetensor dtype (``rt.float32``) or its name.
        extended: allow the extended kinds of :data:`EXT_KINDS`.
    Returns:
        The kind: ``int64 -> int64``, ``uint8 -> int8_unsigned``, ``complex64 -> complex32``.
    Raises:
        ValueError: if the dtype needs an extended kind and ``extended`` is False.
        TypeError: if no bigarray kind stores the dtype (``object``).

    >>> import runetensor as rt
    >>> from runetensor import bigarray as ba
    >>> ba.kind_of_dtype(rt.complex64), ba.kind_of_dtype(rt.bfloat16, extended=True)
    (bigarray.complex32, bigarray.ext.bfloat16)
    """
    d = D.dtype_of(dtype)
    k = _KIND_OF_DTYPE.get(d)
    if k is None:
        raise TypeError(f"kind_of_dtype: no bigarray kind stores {d} elements")
    if k.extended and not extended:
        raise ValueError(f"kind_of_dtype: {d} is an extended type not supported by standard Bigarray; "
                         f"use the extended kinds (bigarray.ext, rt.to_bigarray_ext)")
    return k


def kind_size_in_bytes(kind: Kind) -> _pyint:
    """The size in bytes of one element of ``kind``.

    Raises:
        TypeError: if ``kind`` is not a :class:`Kind`.

    >>> from runetensor import bigarray as ba
    >>> [ba.kind_size_in_bytes(k) for k in (ba.float16, ba.complex64, ba.int, ba.char, ba.ext.int4)]
    [2, 16, 8, 1, 1]
    """
    return _check_kind(kind, "kind_size_in_bytes").size


def _check_kind(kind: Any, fname: str) -> Kind:
    if not isinstance(kind, Kind):
        raise TypeError(f"{fname}: expected a bigarray kind (bigarray.float32, ...), "
                        f"got {type(kind).__name__} {kind!r}")
    return kind


def _check_layout(layout: Any, fname: str) -> Layout:
    if not isinstance(layout, Layout):
        raise TypeError(f"{fname}: expected bigarray.c_layout or bigarray.fortran_layout, "
                        f"got {type(layout).__name__} {layout!r}")
    return layout


# ---------------------------------------------------------------------------
# Values: Python <-> element
# ---------------------------------------------------------------------------
def _store(kind: Kind, v: Any, fname: str) -> Any:
    """``v`` as the Python scalar the backend stores for ``kind`` (checked)."""
    cat = kind.value
    if cat == "float":
        if isinstance(v, (str, bytes, _pycomplex)) or isinstance(v, _pybool):
            raise TypeError(f"{fname}: a {kind.name} element must be a real number, got {type(v).__name__} {v!r}")
        try:
            return _pyfloat(v)
        except (TypeError, ValueError):
            raise TypeError(f"{fname}: a {kind.name} element must be a real number, "
                            f"got {type(v).__name__} {v!r}") from None
    if cat == "int":
        if isinstance(v, _pybool):
            raise TypeError(f"{fname}: a {kind.name} element must be an integer, got bool {v!r}")
        try:
            i = operator.index(v)
        except TypeError:
            raise TypeError(f"{fname}: a {kind.name} element must be an integer, "
                            f"got {type(v).__name__} {v!r}") from None
        lo, hi = int_range(kind.dtype)
        if not lo <= i <= hi:
            raise ValueError(f"{fname}: value {i} is out of range for kind {kind.name} "
                             f"(expected {lo} <= value <= {hi})")
        return i
    if cat == "complex":
        if isinstance(v, (str, bytes)) or isinstance(v, _pybool):
            raise TypeError(f"{fname}: a {kind.name} element must be a number, got {type(v).__name__} {v!r}")
        try:
            return _pycomplex(v)
        except (TypeError, ValueError):
            raise TypeError(f"{fname}: a {kind.name} element must be a number, "
                            f"got {type(v).__name__} {v!r}") from None
    if cat == "char":
        if isinstance(v, bytes) and len(v) == 1:
            return v[0]
        if not isinstance(v, str) or len(v) != 1:
            raise TypeError(f"{fname}: a char element must be a 1-character str, got {type(v).__name__} {v!r}")
        o = ord(v)
        if o > 255:
            raise ValueError(f"{fname}: char {v!r} (code {o}) does not fit in one byte (expected code <= 255)")
        return o
    # bool
    if isinstance(v, _pybool):
        return v
    if hasattr(v, "__index__") or type(v).__name__ in ("bool", "bool_"):  # NumPy's bool scalars
        try:
            i = operator.index(v)
        except TypeError:
            i = _pyint(_pybool(v))
        if i in (0, 1):
            return _pybool(i)
    raise TypeError(f"{fname}: a bool element must be True or False, got {type(v).__name__} {v!r}")


def _load(kind: Kind, v: Any) -> Any:
    return chr(v) if kind.value == "char" else v


# ---------------------------------------------------------------------------
# Dimensions, indices, handles
# ---------------------------------------------------------------------------
def _dims(dims: Any, fname: str) -> tuple[_pyint, ...]:
    if isinstance(dims, (str, bytes)):
        raise TypeError(f"{fname}: dims must be a sequence of integers, got {type(dims).__name__}")
    try:
        items = list(dims)
    except TypeError:
        raise TypeError(f"{fname}: dims must be a sequence of integers, got {type(dims).__name__} {dims!r}") from None
    out = []
    for d in items:
        if isinstance(d, _pybool):
            raise TypeError(f"{fname}: dimension must be an integer, got bool {d!r}")
        try:
            out.append(operator.index(d))
        except TypeError:
            raise TypeError(f"{fname}: dimension must be an integer, got {type(d).__name__} {d!r}") from None
    out_t = tuple(out)
    if len(out_t) > MAX_DIMS:
        raise ValueError(f"{fname}: {len(out_t)} dimensions {out_t}; a bigarray has 0 to {MAX_DIMS} dimensions")
    for d in out_t:
        if d < 0:
            raise ValueError(f"{fname}: negative dimension {d} in {out_t}; expected dimensions >= 0")
    return out_t


def _rev(n: _pyint) -> tuple[_pyint, ...]:
    return tuple(range(n - 1, -1, -1))


def _in_layout_order(be: Any, h: Any, layout: Layout) -> _pyint:
    """Whether handle ``h`` is contiguous in ``layout``'s order."""
    if layout is c_layout:
        return be.is_c_contiguous(h)
    return be.is_c_contiguous(be.permute(h, _rev(h.ndim)))


def _layout_copy(be: Any, h: Any, layout: Layout) -> Any:
    """A fresh copy of ``h`` stored in ``layout``'s order."""
    if layout is c_layout:
        return be.copy(h)
    r = _rev(h.ndim)
    return be.permute(be.copy(be.permute(h, r)), r)


def _fresh(dims: tuple[_pyint, ...], kind: Kind, layout: Layout, fill: Any = 0) -> Tensor:
    be = get_backend()
    if layout is c_layout:
        h = be.full(dims, fill, kind.dtype)
    else:
        h = be.permute(be.full(dims[::-1], fill, kind.dtype), _rev(len(dims)))
    return wrap(h, kind.dtype, be)


def _from_values(values: list, dims: tuple[_pyint, ...], kind: Kind, layout: Layout, fname: str) -> Tensor:
    """A tensor of ``dims`` in ``layout`` from checked row-major ``values``."""
    be = get_backend()
    flat = as_tensor(values, fname, dtype=kind.dtype, backend=be) if values else \
        wrap(be.full((0,), 0, kind.dtype), kind.dtype, be)
    h = be.reshape(flat._data, dims)
    if layout is fortran_layout and len(dims) > 1:
        h = _layout_copy(be, h, layout)
    return wrap(h, kind.dtype, be)


def _new_create(cls: type, fname: str, kind: Any, layout: Any, dims: Any) -> Any:
    """``cls.create``: a zero-filled array of ``dims`` (kind, layout and dims checked, in that order)."""
    kind = _check_kind(kind, fname)
    layout = _check_layout(layout, fname)
    dims = _dims(dims, fname)
    check_alloc(dims, kind.dtype, fname)
    try:
        return cls._make(_fresh(dims, kind, layout), kind, layout)
    except MemoryError:
        raise alloc_error(fname, dims, kind.dtype) from None


def _new_init(cls: type, fname: str, kind: Any, layout: Any, dims: Any, f: Any, spread: bool) -> Any:
    """``cls.init``: element ``idx`` (in the layout's base, row-major call order) is ``f(*idx)`` when
    ``spread``, else ``f(list(idx))``."""
    kind = _check_kind(kind, fname)
    layout = _check_layout(layout, fname)
    dims = _dims(dims, fname)
    if not callable(f):
        raise TypeError(f"{fname}: f must be callable, got {type(f).__name__}")
    check_alloc(dims, kind.dtype, fname)
    n = 1
    for d in dims:
        n *= d
    if n > 1 << 16:  # fail fast, before calling f (the probe buffer is reserved, never touched)
        try:
            get_backend().empty(dims, kind.dtype)
        except MemoryError:
            raise alloc_error(fname, dims, kind.dtype) from None
    b = layout.base
    idxs = itertools.product(*(range(b, d + b) for d in dims))
    vals = [_store(kind, f(*idx) if spread else f(list(idx)), fname) for idx in idxs]
    return cls._make(_from_values(vals, dims, kind, layout, fname), kind, layout)


def _restore(cls: type, kind: Kind, layout: Layout, host: Any) -> Any:
    """Rebuild a pickled bigarray (copying into the layout's order only if the data is not already in it)."""
    t = as_tensor(host, "bigarray", dtype=kind.dtype)
    be = t._backend
    h = t._data
    if not _in_layout_order(be, h, layout):
        h = _layout_copy(be, h, layout)
    return cls._make(wrap(h, kind.dtype, be), kind, layout)


# ---------------------------------------------------------------------------
# The shared base of Genarray and Array0-3
# ---------------------------------------------------------------------------
class _Bigarray:
    """Common state and Python protocol of every bigarray class."""

    __slots__ = ("_t", "_kind", "_layout", "__weakref__")
    _rank: _pyint | None = None   # fixed number of dimensions (None: any, Genarray)

    @classmethod
    def _make(cls, t: Tensor, kind: Kind, layout: Layout) -> Any:
        a = object.__new__(cls)
        a._t = t
        a._kind = kind
        a._layout = layout
        return a

    def __new__(cls, *args: Any, **kwargs: Any):
        raise TypeError(f"{cls.__name__}: build bigarrays with {cls.__name__}.create, .init or .of_array "
                        "(or Genarray.of_numpy)")

    # -- shared module functions ------------------------------------------------
    def kind(self) -> Kind:
        """The element kind.

        >>> from runetensor import bigarray as ba
        >>> ba.Array1.create(ba.int16_signed, ba.c_layout, 3).kind()
        bigarray.int16_signed
        """
        return self._kind

    def layout(self) -> Layout:
        """The layout.

        >>> from runetensor import bigarray as ba
        >>> ba.Array1.create(ba.float64, ba.fortran_layout, 3).layout()
        bigarray.fortran_layout
        """
        return self._layout

    def size_in_bytes(self) -> _pyint:
        """The number of elements times the kind's size in bytes.

        >>> from runetensor import bigarray as ba
        >>> ba.Genarray.create(ba.complex64, ba.c_layout, [2, 3]).size_in_bytes()
        96
        """
        return self._kind.size * self._t._data.size

    def change_layout(self, layout: Layout) -> Any:
        """The same data seen in ``layout``, sharing memory; the dimensions are reversed.

        ``get v [a, b]`` in C layout is ``get v' [b+1, a+1]`` in Fortran layout.
        Changing to the array's own layout returns an array equal to it.

        Raises:
            TypeError: if ``layout`` is not a layout.

        >>> from runetensor import bigarray as ba
        >>> c = ba.Array2.of_array(ba.int32, ba.c_layout, [[1, 2, 3], [4, 5, 6]])
        >>> f = c.change_layout(ba.fortran_layout)
        >>> f.dim1(), f.dim2(), f.get(3, 1)
        (3, 2, 3)
        """
        layout = _check_layout(layout, "change_layout")
        if layout is self._layout:
            return type(self)._make(self._t, self._kind, layout)
        t = self._t
        h = t._backend.permute(t._data, _rev(t._data.ndim))
        return type(self)._make(wrap(h, t._dtype, t._backend), self._kind, layout)

    def blit(self, dst: Any) -> None:
        """Copy every element of ``self`` (the source) into ``dst``.

        Raises:
            TypeError: if the two arrays differ in class, kind or layout.
            ValueError: if their dimensions differ.

        >>> from runetensor import bigarray as ba
        >>> src = ba.Array1.of_array(ba.int32, ba.c_layout, [1, 2, 3])
        >>> dst = ba.Array1.create(ba.int32, ba.c_layout, 3)
        >>> src.blit(dst); dst.get(2)
        3
        """
        if type(dst) is not type(self):
            raise TypeError(f"blit: destination must be a {type(self).__name__}, got {type(dst).__name__}")
        if dst._kind is not self._kind:
            raise TypeError(f"blit: kinds differ (source {self._kind.name}, destination {dst._kind.name})")
        if dst._layout is not self._layout:
            raise TypeError(f"blit: layouts differ (source {self._layout.name}, destination {dst._layout.name})")
        sd, dd = self._t._data.shape, dst._t._data.shape
        if sd != dd:
            raise ValueError(f"blit: dimensions differ (source {sd}, destination {dd})")
        if self._t._backend is not dst._t._backend:
            raise ValueError("blit: the arrays live on different backends")
        self._t._backend.assign(dst._t._data, self._t._data)

    def fill(self, v: Any) -> None:
        """Set every element to ``v``.

        Raises:
            TypeError / ValueError: if ``v`` does not fit the kind (see :meth:`set`).

        >>> from runetensor import bigarray as ba
        >>> a = ba.Array2.create(ba.char, ba.c_layout, 2, 2); a.fill("x"); a.get(1, 1)
        'x'
        """
        val = _store(self._kind, v, "fill")
        self._t._backend.assign(self._t._data, val)

    # -- element access (shared by get/set of every class) ------------------------
    def _key(self, idx: Sequence[Any], fname: str) -> tuple[_pyint, ...]:
        shape = self._t._data.shape
        if len(idx) != len(shape):
            raise IndexError(f"{fname}: {len(idx)} indices given for an array with {len(shape)} dimensions")
        base = self._layout.base
        key = []
        for ax, (i, n) in enumerate(zip(idx, shape)):
            j = i if type(i) is _pyint else as_int(i, fname, "index")
            if not base <= j < n + base:
                raise IndexError(f"{fname}: index {j} is out of bounds for dimension {ax} of size {n} "
                                 f"(expected {base} <= index <= {n + base - 1}, {self._layout.name})")
            key.append(j - base)
        return tuple(key)

    def _get(self, idx: Sequence[Any], fname: str) -> Any:
        t = self._t
        be = t._backend
        return _load(self._kind, be.to_list(be.view_index(t._data, self._key(idx, fname))))

    def _set(self, idx: Sequence[Any], v: Any, fname: str) -> None:
        t = self._t
        be = t._backend
        key = self._key(idx, fname)
        be.assign(be.view_index(t._data, key), _store(self._kind, v, fname))

    # -- views (shared helpers) -----------------------------------------------------
    def _sub(self, side: str, ofs: Any, length: Any, fname: str) -> Tensor:
        t = self._t
        shape = t._data.shape
        if side == "left":
            if self._layout is not c_layout:
                raise TypeError(f"{fname}: applies only to C-layout arrays (this one is fortran_layout; use sub_right)")
        elif self._layout is not fortran_layout:
            raise TypeError(f"{fname}: applies only to Fortran-layout arrays (this one is c_layout; use sub_left)")
        if not shape:
            raise ValueError(f"{fname}: a 0-dimensional array has no dimension to restrict")
        ofs = as_int(ofs, fname, "ofs")
        length = as_int(length, fname, "len")
        ax = 0 if side == "left" else len(shape) - 1
        base = self._layout.base
        n = shape[ax]
        if length < 0:
            raise ValueError(f"{fname}: len {length} is negative; expected len >= 0")
        if ofs < base or ofs - base + length > n:
            raise IndexError(f"{fname}: ofs {ofs} and len {length} do not designate a valid sub-array of "
                             f"dimension {ax} of size {n} (expected {base} <= ofs and ofs + len <= {n + base})")
        key = list(_full(tuple(shape)))
        key[ax] = slice(ofs - base, ofs - base + length, 1)
        return wrap(t._backend.view_index(t._data, tuple(key)), t._dtype, t._backend)

    def _slice(self, side: str, idx: Any, fname: str, allow_all: _pybool = False) -> Tensor:
        t = self._t
        shape = t._data.shape
        if side == "left":
            if self._layout is not c_layout:
                raise TypeError(f"{fname}: applies only to C-layout arrays (this one is fortran_layout; "
                                "use the right-hand version)")
        elif self._layout is not fortran_layout:
            raise TypeError(f"{fname}: applies only to Fortran-layout arrays (this one is c_layout; "
                            "use the left-hand version)")
        try:
            idx = list(idx)
        except TypeError:
            raise TypeError(f"{fname}: indices must be a sequence of integers, got {type(idx).__name__}") from None
        m, nd = len(idx), len(shape)
        if m > nd or (m == nd and not allow_all):
            raise ValueError(f"{fname}: {m} indices fix every dimension of an array with {nd} "
                             f"(expected fewer than {nd})" if m == nd else
                             f"{fname}: {m} indices for an array with only {nd} dimensions (expected fewer than {nd})")
        base = self._layout.base
        axes = range(m) if side == "left" else range(nd - m, nd)
        key = list(_full(tuple(shape)))
        for ax, i in zip(axes, idx):
            j = as_int(i, fname, "index")
            if not base <= j < shape[ax] + base:
                raise IndexError(f"{fname}: index {j} is out of bounds for dimension {ax} of size {shape[ax]} "
                                 f"(expected {base} <= index <= {shape[ax] + base - 1})")
            key[ax] = j - base
        return wrap(t._backend.view_index(t._data, tuple(key)), t._dtype, t._backend)

    # -- Python protocol ---------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        """``a[i, j]``: the element at ``(i, j)`` in the layout's index base (all indices required)."""
        if not isinstance(key, tuple):
            key = (key,)
        return self._get(key, "__getitem__")

    def __setitem__(self, key: Any, value: Any) -> None:
        """``a[i, j] = v``: store ``v`` at ``(i, j)`` in the layout's index base."""
        if not isinstance(key, tuple):
            key = (key,)
        self._set(key, value, "__setitem__")

    def _outer_axis(self) -> _pyint:
        nd = self._t._data.ndim
        if nd == 0:
            raise TypeError(f"len: a 0-dimensional {type(self).__name__} has no length")
        return 0 if self._layout is c_layout else nd - 1

    def __len__(self) -> _pyint:
        """The size of the outer (slowest-varying) dimension: the first in C layout, the last in Fortran."""
        return self._t._data.shape[self._outer_axis()]

    def __iter__(self) -> Iterator[Any]:
        """Along the outer dimension: elements of a 1-D array, else memory-sharing slices
        (``slice_left`` in C layout, ``slice_right`` in Fortran layout)."""
        ax = self._outer_axis()
        t = self._t
        n = t._data.shape[ax]
        base = self._layout.base
        if t._data.ndim == 1:
            vals = t._backend.to_list(t._data)
            return iter([_load(self._kind, v) for v in vals])
        gen = _GENARRAY[0]
        sub = _CLASS_OF_RANK.get(t._data.ndim - 1, gen) if type(self) is not gen else gen
        side = "left" if ax == 0 else "right"
        return (sub._make(self._slice(side, [i], "__iter__"), self._kind, self._layout)
                for i in range(base, n + base))

    def __eq__(self, other: Any) -> Any:
        """Equal kind, layout, class, dimensions and elements (NaN is unequal to itself)."""
        if not isinstance(other, _Bigarray):
            return NotImplemented
        if type(other) is not type(self) or other._kind is not self._kind or other._layout is not self._layout:
            return False
        a, b = self._t, other._t
        if a._data.shape != b._data.shape:
            return False
        if a._data.size == 0:
            return True
        be = a._backend
        if b._backend is not be:
            return False
        eq = be.binary("eq", a._data, b._data)
        return _pybool(be.to_list(be.reduce("all", eq, tuple(range(eq.ndim)), False)))

    def __ne__(self, other: Any) -> Any:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        """Pickle (and ``copy``) support: class, kind, layout and the host array of the elements."""
        t = self._t
        return (_restore, (type(self), self._kind, self._layout, t._backend.to_host(t._data)))

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        """NumPy view of the elements (no copy); a Fortran-layout array gives a Fortran-ordered array."""
        t = self._t
        be = t._backend
        if copy:
            host = be.to_host(_layout_copy(be, t._data, self._layout))
        else:
            host = be.to_host(t._data)
        if dtype is not None and host.dtype != dtype:
            if copy is False:
                raise ValueError(f"__array__: converting {self._kind.name} to {dtype} needs a copy, but copy=False")
            host = host.astype(dtype)
        return host

    def __repr__(self) -> str:
        dims = self._t._data.shape
        body = " ".join(line.strip() for line in str(self).split("\n"))
        return f"{type(self).__name__}({self._kind.name}, {self._layout.name}, dims={dims}, {body})"

    def __str__(self) -> str:
        """The elements as a runetensor prints them, indexed logically (first index outermost);
        ``char`` arrays print their rows as Python strings."""
        if self._kind.value != "char":
            return str(self._t)

        def rows(v: Any) -> Any:
            if not isinstance(v, list):
                return chr(v)
            if not v or not isinstance(v[0], list):
                return "".join(chr(c) for c in v)
            return [rows(x) for x in v]

        return repr(rows(self._t._backend.to_list(self._t._data)))
