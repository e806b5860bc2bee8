"""``Array0``-``Array3``, the coercions to and from ``Genarray``, and ``reshape``."""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from .._tensor import Tensor, wrap
from ._core import (_CLASS_OF_RANK, Kind, Layout, _Bigarray, _check_kind, _check_layout, _dims, _fresh,
                    _from_values, _new_create, _new_init, _pyint, _rev, _store, c_layout)
from ._genarray import Genarray

__all__ = ["Array0", "Array1", "Array2", "Array3",
           "genarray_of_array0", "genarray_of_array1", "genarray_of_array2", "genarray_of_array3",
           "array0_of_genarray", "array1_of_genarray", "array2_of_genarray", "array3_of_genarray",
           "reshape", "reshape_0", "reshape_1", "reshape_2", "reshape_3"]

# ---------------------------------------------------------------------------
# Array0 .. Array3
# ---------------------------------------------------------------------------
def _nested_values(data: Any, rank: _pyint, kind: Kind, fname: str) -> tuple[tuple[_pyint, ...], list]:
    """Check that ``data`` is a rectangular ``rank``-deep nesting; return its dims and checked row-major values."""
    dims: list[_pyint] = []
    level = [data]
    for depth in range(rank):
        n = None
        nxt: list = []
        for row in level:
            if isinstance(row, str) and depth == rank - 1 and kind.value == "char":
                row = list(row)  # a string is a row of chars
            elif isinstance(row, (str, bytes)) or not hasattr(row, "__len__"):
                raise ValueError(f"{fname}: expected {rank} levels of nested sequences, found "
                                 f"{type(row).__name__} at depth {depth}")
            row = list(row)
            if n is None:
                n = len(row)
            elif len(row) != n:
                raise ValueError(f"{fname}: ragged data: rows of lengths {n} and {len(row)} at depth {depth}")
            nxt.extend(row)
        dims.append(n if n is not None else 0)
        level = nxt
    return tuple(dims), [_store(kind, v, fname) for v in level]


def _of_array(cls: type, rank: _pyint, kind: Any, layout: Any, data: Any) -> Any:
    """``cls.of_array``: an array of rank ``rank`` from rectangular nested sequences."""
    fname = f"{cls.__name__}.of_array"
    kind = _check_kind(kind, fname)
    layout = _check_layout(layout, fname)
    dims, vals = _nested_values(data, rank, kind, fname)
    return cls._make(_from_values(vals, dims, kind, layout, fname), kind, layout)


class Array0(_Bigarray):
    """A zero-dimensional bigarray: one scalar (OCaml's ``Bigarray.Array0``).

    >>> from runetensor import bigarray as ba
    >>> a = ba.Array0.of_value(ba.float64, ba.c_layout, 2.5); a.set(a.get() * 2); a.get()
    5.0
    """

    __slots__ = ()
    _rank = 0

    @staticmethod
    def create(kind: Kind, layout: Layout) -> "Array0":
        """A new zero-dimensional array (zero-filled).

        >>> from runetensor import bigarray as ba
        >>> ba.Array0.create(ba.int32, ba.c_layout).get()
        0
        """
        kind = _check_kind(kind, "Array0.create")
        layout = _check_layout(layout, "Array0.create")
        return Array0._make(_fresh((), kind, layout), kind, layout)

    @staticmethod
    def init(kind: Kind, layout: Layout, v: Any) -> "Array0":
        """A new zero-dimensional array holding ``v``.

        >>> from runetensor import bigarray as ba
        >>> ba.Array0.init(ba.char, ba.fortran_layout, "z").get()
        'z'
        """
        kind = _check_kind(kind, "Array0.init")
        layout = _check_layout(layout, "Array0.init")
        return Array0._make(_fresh((), kind, layout, _store(kind, v, "Array0.init")), kind, layout)

    @staticmethod
    def of_value(kind: Kind, layout: Layout, v: Any) -> "Array0":
        """A new zero-dimensional array holding ``v`` (same as :meth:`init`).

        >>> from runetensor import bigarray as ba
        >>> ba.Array0.of_value(ba.complex32, ba.c_layout, 1 + 2j).get()
        (1+2j)
        """
        kind = _check_kind(kind, "Array0.of_value")
        layout = _check_layout(layout, "Array0.of_value")
        return Array0._make(_fresh((), kind, layout, _store(kind, v, "Array0.of_value")), kind, layout)

    def get(self) -> Any:
        """The only element.

        >>> from runetensor import bigarray as ba
        >>> ba.Array0.of_value(ba.int8_signed, ba.c_layout, -3).get()
        -3
        """
        return self._get((), "Array0.get")

    def set(self, v: Any) -> None:
        """Store ``v`` as the only element.

        Raises:
            TypeError / ValueError: if ``v`` does not fit the kind.

        >>> from runetensor import bigarray as ba
        >>> a = ba.Array0.create(ba.float32, ba.c_layout); a.set(0.5); a.get()
        0.5
        """
        self._set((), v, "Array0.set")


class Array1(_Bigarray):
    """A one-dimensional bigarray (OCaml's ``Bigarray.Array1``).

    >>> from runetensor import bigarray as ba
    >>> a = ba.Array1.of_array(ba.int32, ba.fortran_layout, [10, 20, 30])
    >>> a.get(1), a.sub(2, 2).get(1), list(a)
    (10, 20, [10, 20, 30])
    """

    __slots__ = ()
    _rank = 1

    @staticmethod
    def create(kind: Kind, layout: Layout, dim: _pyint) -> "Array1":
        """A new array of ``dim`` elements (zero-filled).

        Raises:
            ValueError: if ``dim < 0``.

        >>> from runetensor import bigarray as ba
        >>> ba.Array1.create(ba.float32, ba.c_layout, 4).dim()
        4
        """
        return _new_create(Array1, "Array1.create", kind, layout, [dim])

    @staticmethod
    def init(kind: Kind, layout: Layout, dim: _pyint, f: Callable[[_pyint], Any]) -> "Array1":
        """A new array whose element ``i`` (in the layout's base) is ``f(i)``.

        >>> from runetensor import bigarray as ba
        >>> list(ba.Array1.init(ba.int32, ba.fortran_layout, 3, lambda i: i * i))
        [1, 4, 9]
        """
        return _new_init(Array1, "Array1.init", kind, layout, [dim], f, spread=True)

    @staticmethod
    def of_array(kind: Kind, layout: Layout, data: Sequence[Any]) -> "Array1":
        """A new array holding the elements of the sequence ``data``.

        Raises:
            TypeError / ValueError: if an element does not fit the kind.

        >>> from runetensor import bigarray as ba
        >>> ba.Array1.of_array(ba.char, ba.c_layout, "hey").get(1)
        'e'
        """
        return _of_array(Array1, 1, kind, layout, data)

    def dim(self) -> _pyint:
        """The number of elements.

        >>> from runetensor import bigarray as ba
        >>> ba.Array1.of_array(ba.float64, ba.c_layout, [1.0, 2.0]).dim()
        2
        """
        return self._t._data.shape[0]

    def get(self, x: _pyint) -> Any:
        """The element at index ``x`` (``0 <= x < dim`` in C layout, ``1 <= x <= dim`` in Fortran).

        Raises:
            IndexError: if ``x`` is out of bounds.

        >>> from runetensor import bigarray as ba
        >>> ba.Array1.of_array(ba.float64, ba.c_layout, [1.0, 2.0]).get(1)
        2.0
        """
        return self._get((x,), "Array1.get")

    def set(self, x: _pyint, v: Any) -> None:
        """Store ``v`` at index ``x``.

        >>> from runetensor import bigarray as ba
        >>> a = ba.Array1.create(ba.int64, ba.fortran_layout, 2); a.set(2, 7); list(a)
        [0, 7]
        """
        self._set((x,), v, "Array1.set")

    unsafe_get = get
    unsafe_set = set

    def sub(self, ofs: _pyint, len: _pyint) -> "Array1":  # noqa: A002
        """The sub-array of indices ``ofs .. ofs+len-1`` (shares memory; either layout).

        Raises:
            ValueError: if ``len < 0``.
            IndexError: if the interval leaves the array.

        >>> from runetensor import bigarray as ba
        >>> a = ba.Array1.of_array(ba.int32, ba.c_layout, [0, 1, 2, 3]); s = a.sub(1, 2)
        >>> s.set(0, 9); list(a)
        [0, 9, 2, 3]
        """
        side = "left" if self._layout is c_layout else "right"
        return Array1._make(self._sub(side, ofs, len, "Array1.sub"), self._kind, self._layout)

    def slice(self, x: _pyint) -> Array0:
        """The zero-dimensional array of element ``x`` (shares memory).

        Raises:
            IndexError: if ``x`` is out of bounds.

        >>> from runetensor import bigarray as ba
        >>> a = ba.Array1.of_array(ba.int32, ba.c_layout, [5, 6]); z = a.slice(1); z.set(0); list(a)
        [5, 0]
        """
        side = "left" if self._layout is c_layout else "right"
        return Array0._make(self._slice(side, [x], "Array1.slice", allow_all=True), self._kind, self._layout)


class Array2(_Bigarray):
    """A two-dimensional bigarray (OCaml's ``Bigarray.Array2``).

    >>> from runetensor import bigarray as ba
    >>> a = ba.Array2.of_array(ba.float32, ba.c_layout, [[1, 2], [3, 4]])
    >>> a.get(1, 0), a.dim1(), a.dim2()
    (3.0, 2, 2)
    """

    __slots__ = ()
    _rank = 2

    @staticmethod
    def create(kind: Kind, layout: Layout, dim1: _pyint, dim2: _pyint) -> "Array2":
        """A new ``dim1 x dim2`` array (zero-filled).

        >>> from runetensor import bigarray as ba
        >>> ba.Array2.create(ba.int32, ba.fortran_layout, 2, 3).dim2()
        3
        """
        return _new_create(Array2, "Array2.create", kind, layout, [dim1, dim2])

    @staticmethod
    def init(kind: Kind, layout: Layout, dim1: _pyint, dim2: _pyint, f: Callable[[_pyint, _pyint], Any]) -> "Array2":
        """A new array whose element ``(i, j)`` is ``f(i, j)``.

        >>> from runetensor import bigarray as ba
        >>> ba.Array2.init(ba.int32, ba.fortran_layout, 2, 2, lambda i, j: 10 * i + j).get(2, 1)
        21
        """
        return _new_init(Array2, "Array2.init", kind, layout, [dim1, dim2], f, spread=True)

    @staticmethod
    def of_array(kind: Kind, layout: Layout, data: Sequence[Sequence[Any]]) -> "Array2":
        """A new array from a list of rows: ``data[i][j]`` is element ``(i+base, j+base)``.

        Raises:
            ValueError: if the rows differ in length.

        >>> from runetensor import bigarray as ba
        >>> ba.Array2.of_array(ba.int32, ba.fortran_layout, [[1, 2, 3], [4, 5, 6]]).get(2, 3)
        6
        """
        return _of_array(Array2, 2, kind, layout, data)

    def dim1(self) -> _pyint:
        """The first dimension.

        >>> from runetensor import bigarray as ba
        >>> ba.Array2.create(ba.int32, ba.c_layout, 2, 3).dim1()
        2
        """
        return self._t._data.shape[0]

    def dim2(self) -> _pyint:
        """The second dimension.

        >>> from runetensor import bigarray as ba
        >>> ba.Array2.create(ba.int32, ba.c_layout, 2, 3).dim2()
        3
        """
        return self._t._data.shape[1]

    def get(self, x: _pyint, y: _pyint) -> Any:
        """The element at ``(x, y)``.

        Raises:
            IndexError: if out of bounds.

        >>> from runetensor import bigarray as ba
        >>> ba.Array2.of_array(ba.int32, ba.c_layout, [[1, 2], [3, 4]]).get(0, 1)
        2
        """
        return self._get((x, y), "Array2.get")

    def set(self, x: _pyint, y: _pyint, v: Any) -> None:
        """Store ``v`` at ``(x, y)``.

        >>> from runetensor import bigarray as ba
        >>> a = ba.Array2.create(ba.int32, ba.c_layout, 2, 2); a.set(1, 1, 4); a[1, 1]
        4
        """
        self._set((x, y), v, "Array2.set")

    unsafe_get = get
    unsafe_set = set

    def sub_left(self, ofs: _pyint, len: _pyint) -> "Array2":  # noqa: A002
        """Rows ``ofs .. ofs+len-1`` (C layout only; shares memory).  See :meth:`Genarray.sub_left`.

        >>> from runetensor import bigarray as ba
        >>> ba.Array2.create(ba.int32, ba.c_layout, 4, 3).sub_left(1, 2).dim1()
        2
        """
        return Array2._make(self._sub("left", ofs, len, "Array2.sub_left"), self._kind, self._layout)

    def sub_right(self, ofs: _pyint, len: _pyint) -> "Array2":  # noqa: A002
        """Columns ``ofs .. ofs+len-1`` (Fortran layout only; shares memory).  See :meth:`Genarray.sub_right`.

        >>> from runetensor import bigarray as ba
        >>> ba.Array2.create(ba.int32, ba.fortran_layout, 4, 3).sub_right(2, 2).dim2()
        2
        """
        return Array2._make(self._sub("right", ofs, len, "Array2.sub_right"), self._kind, self._layout)

    def slice_left(self, x: _pyint) -> Array1:
        """Row ``x`` as an :class:`Array1` (C layout only; shares memory).

        >>> from runetensor import bigarray as ba
        >>> list(ba.Array2.of_array(ba.int32, ba.c_layout, [[1, 2], [3, 4]]).slice_left(1))
        [3, 4]
        """
        return Array1._make(self._slice("left", [x], "Array2.slice_left"), self._kind, self._layout)

    def slice_right(self, y: _pyint) -> Array1:
        """Column ``y`` as an :class:`Array1` (Fortran layout only; shares memory).

        >>> from runetensor import bigarray as ba
        >>> list(ba.Array2.of_array(ba.int32, ba.fortran_layout, [[1, 2], [3, 4]]).slice_right(2))
        [2, 4]
        """
        return Array1._make(self._slice("right", [y], "Array2.slice_right"), self._kind, self._layout)


class Array3(_Bigarray):
    """A three-dimensional bigarray (OCaml's ``Bigarray.Array3``).

    >>> from runetensor import bigarray as ba
    >>> a = ba.Array3.init(ba.int32, ba.c_layout, 2, 3, 4, lambda i, j, k: 100 * i + 10 * j + k)
    >>> a.get(1, 2, 3), a.slice_left_2(1).get(0, 1), list(a.slice_left_1(0, 2))
    (123, 101, [20, 21, 22, 23])
    """

    __slots__ = ()
    _rank = 3

    @staticmethod
    def create(kind: Kind, layout: Layout, dim1: _pyint, dim2: _pyint, dim3: _pyint) -> "Array3":
        """A new ``dim1 x dim2 x dim3`` array (zero-filled).

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.float64, ba.c_layout, 2, 3, 4).dim3()
        4
        """
        return _new_create(Array3, "Array3.create", kind, layout, [dim1, dim2, dim3])

    @staticmethod
    def init(kind: Kind, layout: Layout, dim1: _pyint, dim2: _pyint, dim3: _pyint,
             f: Callable[[_pyint, _pyint, _pyint], Any]) -> "Array3":
        """A new array whose element ``(i, j, k)`` is ``f(i, j, k)``.

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.init(ba.int32, ba.fortran_layout, 2, 2, 2, lambda i, j, k: i + j + k).get(2, 2, 2)
        6
        """
        return _new_init(Array3, "Array3.init", kind, layout, [dim1, dim2, dim3], f, spread=True)

    @staticmethod
    def of_array(kind: Kind, layout: Layout, data: Sequence[Sequence[Sequence[Any]]]) -> "Array3":
        """A new array from nested lists: ``data[i][j][k]`` is element ``(i+base, j+base, k+base)``.

        Raises:
            ValueError: if the nesting is ragged.

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.of_array(ba.int32, ba.c_layout, [[[1, 2]], [[3, 4]]]).get(1, 0, 1)
        4
        """
        return _of_array(Array3, 3, kind, layout, data)

    def dim1(self) -> _pyint:
        """The first dimension.

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.int32, ba.c_layout, 2, 3, 4).dim1()
        2
        """
        return self._t._data.shape[0]

    def dim2(self) -> _pyint:
        """The second dimension.

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.int32, ba.c_layout, 2, 3, 4).dim2()
        3
        """
        return self._t._data.shape[1]

    def dim3(self) -> _pyint:
        """The third dimension.

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.int32, ba.c_layout, 2, 3, 4).dim3()
        4
        """
        return self._t._data.shape[2]

    def get(self, x: _pyint, y: _pyint, z: _pyint) -> Any:
        """The element at ``(x, y, z)``.

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.of_array(ba.int32, ba.fortran_layout, [[[1, 2]], [[3, 4]]]).get(2, 1, 1)
        3
        """
        return self._get((x, y, z), "Array3.get")

    def set(self, x: _pyint, y: _pyint, z: _pyint, v: Any) -> None:
        """Store ``v`` at ``(x, y, z)``.

        >>> from runetensor import bigarray as ba
        >>> a = ba.Array3.create(ba.int32, ba.c_layout, 1, 1, 2); a.set(0, 0, 1, 8); a[0, 0, 1]
        8
        """
        self._set((x, y, z), v, "Array3.set")

    unsafe_get = get
    unsafe_set = set

    def sub_left(self, ofs: _pyint, len: _pyint) -> "Array3":  # noqa: A002
        """Indices ``ofs .. ofs+len-1`` of the first dimension (C layout only; shares memory).

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.int32, ba.c_layout, 4, 2, 2).sub_left(0, 3).dim1()
        3
        """
        return Array3._make(self._sub("left", ofs, len, "Array3.sub_left"), self._kind, self._layout)

    def sub_right(self, ofs: _pyint, len: _pyint) -> "Array3":  # noqa: A002
        """Indices ``ofs .. ofs+len-1`` of the last dimension (Fortran layout only; shares memory).

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.int32, ba.fortran_layout, 2, 2, 4).sub_right(4, 1).dim3()
        1
        """
        return Array3._make(self._sub("right", ofs, len, "Array3.sub_right"), self._kind, self._layout)

    def slice_left_1(self, x: _pyint, y: _pyint) -> Array1:
        """The :class:`Array1` at ``(x, y, *)`` (C layout only; shares memory).

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.int32, ba.c_layout, 2, 3, 4).slice_left_1(1, 2).dim()
        4
        """
        return Array1._make(self._slice("left", [x, y], "Array3.slice_left_1"), self._kind, self._layout)

    def slice_right_1(self, y: _pyint, z: _pyint) -> Array1:
        """The :class:`Array1` at ``(*, y, z)`` (Fortran layout only; shares memory).

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.int32, ba.fortran_layout, 2, 3, 4).slice_right_1(3, 4).dim()
        2
        """
        return Array1._make(self._slice("right", [y, z], "Array3.slice_right_1"), self._kind, self._layout)

    def slice_left_2(self, x: _pyint) -> Array2:
        """The :class:`Array2` at ``(x, *, *)`` (C layout only; shares memory).

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.int32, ba.c_layout, 2, 3, 4).slice_left_2(0).dim1()
        3
        """
        return Array2._make(self._slice("left", [x], "Array3.slice_left_2"), self._kind, self._layout)

    def slice_right_2(self, z: _pyint) -> Array2:
        """The :class:`Array2` at ``(*, *, z)`` (Fortran layout only; shares memory).

        >>> from runetensor import bigarray as ba
        >>> ba.Array3.create(ba.int32, ba.fortran_layout, 2, 3, 4).slice_right_2(1).dim2()
        3
        """
        return Array2._make(self._slice("right", [z], "Array3.slice_right_2"), self._kind, self._layout)


_CLASS_OF_RANK.update({0: Array0, 1: Array1, 2: Array2, 3: Array3})


# ---------------------------------------------------------------------------
# Coercions and reshaping
# ---------------------------------------------------------------------------
def _as_big(a: Any, cls: type | None, fname: str) -> _Bigarray:
    want = cls or _Bigarray
    if not isinstance(a, want):
        raise TypeError(f"{fname}: expected a {want.__name__.lstrip('_')}, got {type(a).__name__}")
    return a


def genarray_of_array0(a: Array0) -> Genarray:
    """The Genarray view of an :class:`Array0` (shares memory).

    >>> from runetensor import bigarray as ba
    >>> ba.genarray_of_array0(ba.Array0.of_value(ba.int32, ba.c_layout, 4)).dims()
    ()
    """
    a = _as_big(a, Array0, "genarray_of_array0")
    return Genarray._make(a._t, a._kind, a._layout)


def genarray_of_array1(a: Array1) -> Genarray:
    """The Genarray view of an :class:`Array1` (shares memory).

    >>> from runetensor import bigarray as ba
    >>> ba.genarray_of_array1(ba.Array1.create(ba.int32, ba.c_layout, 3)).dims()
    (3,)
    """
    a = _as_big(a, Array1, "genarray_of_array1")
    return Genarray._make(a._t, a._kind, a._layout)


def genarray_of_array2(a: Array2) -> Genarray:
    """The Genarray view of an :class:`Array2` (shares memory).

    >>> from runetensor import bigarray as ba
    >>> ba.genarray_of_array2(ba.Array2.create(ba.int32, ba.c_layout, 2, 3)).dims()
    (2, 3)
    """
    a = _as_big(a, Array2, "genarray_of_array2")
    return Genarray._make(a._t, a._kind, a._layout)


def genarray_of_array3(a: Array3) -> Genarray:
    """The Genarray view of an :class:`Array3` (shares memory).

    >>> from runetensor import bigarray as ba
    >>> ba.genarray_of_array3(ba.Array3.create(ba.int32, ba.c_layout, 2, 3, 4)).dims()
    (2, 3, 4)
    """
    a = _as_big(a, Array3, "genarray_of_array3")
    return Genarray._make(a._t, a._kind, a._layout)


def _arrayn_of_genarray(g: Any, cls: type, fname: str) -> Any:
    g = _as_big(g, Genarray, fname)
    nd = g._t._data.ndim
    if nd != cls._rank:
        raise ValueError(f"{fname}: the Genarray has {nd} dimensions {g.dims()}; expected exactly {cls._rank}")
    return cls._make(g._t, g._kind, g._layout)


def array0_of_genarray(g: Genarray) -> Array0:
    """The :class:`Array0` view of a zero-dimensional Genarray (shares memory).

    Raises:
        ValueError: if ``g`` does not have exactly 0 dimensions.

    >>> from runetensor import bigarray as ba
    >>> ba.array0_of_genarray(ba.Genarray.create(ba.int32, ba.c_layout, [])).get()
    0
    """
    return _arrayn_of_genarray(g, Array0, "array0_of_genarray")


def array1_of_genarray(g: Genarray) -> Array1:
    """The :class:`Array1` view of a one-dimensional Genarray (shares memory).

    Raises:
        ValueError: if ``g`` does not have exactly 1 dimension.

    >>> from runetensor import bigarray as ba
    >>> ba.array1_of_genarray(ba.Genarray.create(ba.int32, ba.c_layout, [5])).dim()
    5
    """
    return _arrayn_of_genarray(g, Array1, "array1_of_genarray")


def array2_of_genarray(g: Genarray) -> Array2:
    """The :class:`Array2` view of a two-dimensional Genarray (shares memory).

    Raises:
        ValueError: if ``g`` does not have exactly 2 dimensions.

    >>> from runetensor import bigarray as ba
    >>> ba.array2_of_genarray(ba.Genarray.create(ba.int32, ba.c_layout, [2, 5])).dim2()
    5
    """
    return _arrayn_of_genarray(g, Array2, "array2_of_genarray")


def array3_of_genarray(g: Genarray) -> Array3:
    """The :class:`Array3` view of a three-dimensional Genarray (shares memory).

    Raises:
        ValueError: if ``g`` does not have exactly 3 dimensions.

    >>> from runetensor import bigarray as ba
    >>> ba.array3_of_genarray(ba.Genarray.create(ba.int32, ba.c_layout, [2, 5, 1])).dim3()
    1
    """
    return _arrayn_of_genarray(g, Array3, "array3_of_genarray")


def _reshape(b: Any, dims: Any, fname: str) -> Tensor:
    b = _as_big(b, None, fname)
    dims = _dims(dims, fname)
    t = b._t
    be = t._backend
    n_old, n_new = t._data.size, math.prod(dims)
    if n_old != n_new:
        raise ValueError(f"{fname}: cannot reshape dims {tuple(t._data.shape)} ({n_old} elements) into "
                         f"{dims} ({n_new} elements)")
    h = t._data
    if b._layout is c_layout:
        r = be.reshape(h, dims)
    else:
        flat = be.reshape(be.permute(h, _rev(h.ndim)), dims[::-1])
        r = None if flat is None else be.permute(flat, _rev(len(dims)))
    if r is None:  # cannot happen: a bigarray is always contiguous in its layout's order
        raise ValueError(f"{fname}: the array is not contiguous in {b._layout.name} order, so it cannot be reshaped")
    return wrap(r, t._dtype, be)


def reshape(b: Any, dims: Sequence[_pyint]) -> Genarray:
    """A Genarray with new dimensions over the same data (shares memory).

    The elements keep their order in memory: row-major in C layout, column-major
    in Fortran layout.

    Args:
        b: any bigarray (Genarray or Array0-3).
        dims: the new dimensions (0 to 16), with the same number of elements.
    Raises:
        ValueError: if the element counts differ, a dimension is negative, or there are more than 16.

    >>> from runetensor import bigarray as ba
    >>> a = ba.Array1.of_array(ba.int32, ba.c_layout, [1, 2, 3, 4, 5, 6])
    >>> print(ba.reshape(a, [2, 3]))
    [[1, 2, 3],
     [4, 5, 6]]
    >>> print(ba.reshape(a.change_layout(ba.fortran_layout), [2, 3]))
    [[1, 3, 5],
     [2, 4, 6]]
    """
    return Genarray._make(_reshape(b, dims, "reshape"), b._kind, b._layout)


def reshape_0(b: Any) -> Array0:
    """The one element of a one-element bigarray as an :class:`Array0` (shares memory).

    Raises:
        ValueError: if ``b`` does not have exactly one element.

    >>> from runetensor import bigarray as ba
    >>> ba.reshape_0(ba.Array2.of_array(ba.int32, ba.c_layout, [[7]])).get()
    7
    """
    t = _reshape(b, (), "reshape_0")
    return Array0._make(t, b._kind, b._layout)


def reshape_1(b: Any, dim: _pyint) -> Array1:
    """An :class:`Array1` of ``dim`` elements over the same data (shares memory).

    >>> from runetensor import bigarray as ba
    >>> list(ba.reshape_1(ba.Array2.of_array(ba.int32, ba.c_layout, [[1, 2], [3, 4]]), 4))
    [1, 2, 3, 4]
    """
    t = _reshape(b, [dim], "reshape_1")
    return Array1._make(t, b._kind, b._layout)


def reshape_2(b: Any, dim1: _pyint, dim2: _pyint) -> Array2:
    """An :class:`Array2` of ``dim1 x dim2`` over the same data (shares memory).

    >>> from runetensor import bigarray as ba
    >>> ba.reshape_2(ba.Array1.of_array(ba.int32, ba.c_layout, [1, 2, 3, 4]), 2, 2).get(1, 0)
    3
    """
    t = _reshape(b, [dim1, dim2], "reshape_2")
    return Array2._make(t, b._kind, b._layout)


def reshape_3(b: Any, dim1: _pyint, dim2: _pyint, dim3: _pyint) -> Array3:
    """An :class:`Array3` of ``dim1 x dim2 x dim3`` over the same data (shares memory).

    >>> from runetensor import bigarray as ba
    >>> ba.reshape_3(ba.Array1.of_array(ba.int32, ba.c_layout, list(range(8))), 2, 2, 2).get(1, 1, 0)
    6
    """
    t = _reshape(b, [dim1, dim2, dim3], "reshape_3")
    return Array3._make(t, b._kind, b._layout)
