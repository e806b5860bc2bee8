"""``Genarray``: bigarrays with 0 to 16 dimensions."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import _dtypes as D
from .._tensor import Tensor, as_tensor, wrap
from .._validate import as_int
from ._core import (MAX_DIMS, _KIND_OF_DTYPE, _GENARRAY, Kind, Layout, _Bigarray, _check_kind, _check_layout,
                    _in_layout_order, _layout_copy, _new_create, _new_init, _pybool, _pyint, c_layout,
                    fortran_layout, kind_of_dtype)


__all__ = ["Genarray"]


# ---------------------------------------------------------------------------
# Genarray
# ---------------------------------------------------------------------------
class Genarray(_Bigarray):
    """A bigarray with 0 to 16 dimensions (OCaml's ``Bigarray.Genarray``).

    >>> from runetensor import bigarray as ba
    >>> g = ba.Genarray.init(ba.int32, ba.c_layout, [2, 3], lambda i: 10 * i[0] + i[1])
    >>> print(g)
    [[0, 1, 2],
     [10, 11, 12]]
    >>> g.sub_left(1, 1).get([0, 2]), g.slice_left([1]).dims()
    (12, (3,))
    """

    __slots__ = ()

    @staticmethod
    def create(kind: Kind, layout: Layout, dims: Sequence[_pyint]) -> "Genarray":
        """A new array of ``dims`` (zero-filled; OCaml leaves it uninitialised).

        Args:
            kind: element kind (``ba.float32``...; extended kinds from :data:`ext` are accepted).
            layout: ``ba.c_layout`` or ``ba.fortran_layout``.
            dims: 0 to 16 non-negative dimensions.
        Raises:
            ValueError: for a negative dimension or more than 16 dimensions.
            TypeError: for a bad kind, layout or non-integer dimension.

        >>> from runetensor import bigarray as ba
        >>> ba.Genarray.create(ba.float64, ba.fortran_layout, [2, 0, 3]).dims()
        (2, 0, 3)
        """
        return _new_create(Genarray, "Genarray.create", kind, layout, dims)

    @staticmethod
    def init(kind: Kind, layout: Layout, dims: Sequence[_pyint], f: Callable[[list], Any]) -> "Genarray":
        """A new array whose element at index ``i`` (a list, in the layout's base) is ``f(i)``.

        ``f`` is called once per element, in row-major order of the indices.

        Raises:
            ValueError / TypeError: as :meth:`create`, or if a value of ``f`` does not fit the kind.

        >>> from runetensor import bigarray as ba
        >>> g = ba.Genarray.init(ba.int64, ba.fortran_layout, [2, 2], lambda i: 10 * i[0] + i[1])
        >>> g.get([2, 1]), g.get([1, 2])
        (21, 12)
        """
        return _new_init(Genarray, "Genarray.init", kind, layout, dims, f, spread=False)

    @staticmethod
    def of_numpy(a: Any, kind: Kind | None = None, layout: Layout | None = None,
                 copy: _pybool | None = None) -> "Genarray":
        """A Genarray over a NumPy array (or anything ``rt.asarray`` takes), without a copy where possible.

        Args:
            a: the data.
            kind: element kind; inferred from the dtype when None (standard kinds
                first, extended ones for the dtypes only they store).
            layout: None picks ``c_layout`` for a C-contiguous array, ``fortran_layout``
                for a Fortran-contiguous one (dims stay ``a.shape``).
            copy: None shares memory when the dtype and layout allow, True always
                copies, False raises instead of copying.
        Raises:
            ValueError: for more than 16 dimensions, or if ``copy=False`` and a copy is needed.
            TypeError: if the kind cannot hold the data's type.

        >>> import numpy as np
        >>> from runetensor import bigarray as ba
        >>> x = np.zeros((2, 3), order="F"); g = ba.Genarray.of_numpy(x)
        >>> g.layout(); g[2, 3] = 5.0; float(x[1, 2])
        bigarray.fortran_layout
        5.0
        """
        fname = "Genarray.of_numpy"
        if kind is not None:
            kind = _check_kind(kind, fname)
        if layout is not None:
            layout = _check_layout(layout, fname)
        copied = False
        if isinstance(a, Tensor):
            t = a
        elif isinstance(a, (list, tuple)) or not (hasattr(a, "__array__") or hasattr(a, "__array_interface__")):
            if kind is not None and kind.value == "char":
                raise TypeError(f"{fname}: build char arrays with Array1.of_array or Genarray.init")
            t = as_tensor(a, fname, dtype=None if kind is None else kind.dtype)
            copied = True
        else:
            t = as_tensor(a, fname, copy=False if copy is False else None)
        if t._data.ndim > MAX_DIMS:
            raise ValueError(f"{fname}: {t._data.ndim} dimensions; a bigarray has 0 to {MAX_DIMS} dimensions")
        if kind is None:
            if t._dtype not in _KIND_OF_DTYPE:
                raise TypeError(f"{fname}: no bigarray kind stores {t._dtype} elements")
            kind = kind_of_dtype(t._dtype, extended=True)
        be = t._backend
        h = t._data
        if t._dtype is not kind.dtype:
            if copy is False:
                raise ValueError(f"{fname}: storing {t._dtype} data as kind {kind.name} needs a copy, but copy=False")
            if D.promote_types(t._dtype, kind.dtype) is not kind.dtype:
                raise TypeError(f"{fname}: {t._dtype} data does not fit kind {kind.name} ({kind.dtype}) "
                                "without losing values; cast it first")
            h = be.cast(h, kind.dtype)
            copied = True
        if layout is None:
            keep_c = be.is_c_contiguous(h) or not _in_layout_order(be, h, fortran_layout)
            layout = c_layout if keep_c else fortran_layout
        if not _in_layout_order(be, h, layout) or (copy and not copied):
            if copy is False:
                raise ValueError(f"{fname}: the data is not contiguous in {layout.name} order, so it needs a copy, "
                                 "but copy=False")
            h = _layout_copy(be, h, layout)
        return Genarray._make(wrap(h, kind.dtype, be), kind, layout)

    def num_dims(self) -> _pyint:
        """The number of dimensions (0 to 16).

        >>> from runetensor import bigarray as ba
        >>> ba.Genarray.create(ba.int8_signed, ba.c_layout, [1, 2, 3]).num_dims()
        3
        """
        return self._t._data.ndim

    def dims(self) -> tuple[_pyint, ...]:
        """All dimensions, as a tuple of length :meth:`num_dims`.

        >>> from runetensor import bigarray as ba
        >>> ba.Genarray.create(ba.int8_signed, ba.c_layout, [1, 2, 3]).dims()
        (1, 2, 3)
        """
        return tuple(self._t._data.shape)

    def nth_dim(self, n: _pyint) -> _pyint:
        """The ``n``-th dimension (``n = 0`` is the first, ``num_dims - 1`` the last).

        Raises:
            IndexError: if ``n < 0`` or ``n >= num_dims``.

        >>> from runetensor import bigarray as ba
        >>> ba.Genarray.create(ba.float32, ba.fortran_layout, [4, 5]).nth_dim(1)
        5
        """
        n = as_int(n, "nth_dim", "n")
        nd = self._t._data.ndim
        if not 0 <= n < nd:
            raise IndexError(f"nth_dim: n {n} is out of range for an array with {nd} dimensions "
                             f"(expected 0 <= n < {nd})")
        return self._t._data.shape[n]

    def get(self, idx: Sequence[_pyint]) -> Any:
        """The element at coordinates ``idx`` (0-based in C layout, 1-based in Fortran).

        Raises:
            IndexError: if ``idx`` does not have exactly ``num_dims`` entries or is out of bounds.

        >>> from runetensor import bigarray as ba
        >>> g = ba.Genarray.init(ba.float32, ba.c_layout, [2, 2], lambda i: i[0] - i[1])
        >>> g.get([1, 0])
        1.0
        """
        return self._get(_seq(idx, "Genarray.get"), "Genarray.get")

    def set(self, idx: Sequence[_pyint], v: Any) -> None:
        """Store ``v`` at coordinates ``idx``.

        Raises:
            IndexError: as :meth:`get`.
            TypeError: if ``v`` has the wrong type for the kind (a float for an integer kind...).
            ValueError: if an integer is out of the kind's range.

        >>> from runetensor import bigarray as ba
        >>> g = ba.Genarray.create(ba.int16_unsigned, ba.fortran_layout, [2, 2])
        >>> g.set([2, 2], 65535); g.get([2, 2])
        65535
        """
        self._set(_seq(idx, "Genarray.set"), v, "Genarray.set")

    def sub_left(self, ofs: _pyint, len: _pyint) -> "Genarray":  # noqa: A002  (OCaml's name)
        """The sub-array of rows ``ofs .. ofs+len-1`` of the first dimension (C layout only; shares memory).

        Element ``[i1; ...; iN]`` of the result is element ``[i1+ofs; ...; iN]`` of ``self``.

        Raises:
            TypeError: for a Fortran-layout array.
            ValueError: if ``len < 0`` or the array has 0 dimensions.
            IndexError: if ``ofs < 0`` or ``ofs + len > nth_dim(0)``.

        >>> from runetensor import bigarray as ba
        >>> g = ba.Genarray.init(ba.int32, ba.c_layout, [4, 2], lambda i: i[0])
        >>> s = g.sub_left(1, 2); s.dims(), s.get([0, 1])
        ((2, 2), 1)
        """
        return Genarray._make(self._sub("left", ofs, len, "sub_left"), self._kind, self._layout)

    def sub_right(self, ofs: _pyint, len: _pyint) -> "Genarray":  # noqa: A002
        """The sub-array of indices ``ofs .. ofs+len-1`` of the last dimension (Fortran layout only; shares memory).

        Element ``[i1; ...; iN]`` of the result is element ``[i1; ...; iN+ofs-1]`` of ``self``.

        Raises:
            TypeError: for a C-layout array.
            ValueError: if ``len < 0`` or the array has 0 dimensions.
            IndexError: if ``ofs < 1`` or ``ofs + len - 1 > nth_dim(num_dims - 1)``.

        >>> from runetensor import bigarray as ba
        >>> g = ba.Genarray.init(ba.int32, ba.fortran_layout, [2, 4], lambda i: i[1])
        >>> s = g.sub_right(2, 3); s.dims(), s.get([1, 1])
        ((2, 3), 2)
        """
        return Genarray._make(self._sub("right", ofs, len, "sub_right"), self._kind, self._layout)

    def slice_left(self, idx: Sequence[_pyint]) -> "Genarray":
        """The sub-array obtained by fixing the first ``M`` coordinates (C layout only; shares memory).

        Raises:
            TypeError: for a Fortran-layout array.
            ValueError: if ``M >= num_dims``.
            IndexError: if a coordinate is out of bounds.

        >>> from runetensor import bigarray as ba
        >>> g = ba.Genarray.init(ba.int32, ba.c_layout, [2, 3, 4], lambda i: 100 * i[0] + 10 * i[1] + i[2])
        >>> s = g.slice_left([1, 2]); s.dims(), s.get([3])
        ((4,), 123)
        """
        return Genarray._make(self._slice("left", idx, "slice_left"), self._kind, self._layout)

    def slice_right(self, idx: Sequence[_pyint]) -> "Genarray":
        """The sub-array obtained by fixing the last ``M`` coordinates (Fortran layout only; shares memory).

        Raises:
            TypeError: for a C-layout array.
            ValueError: if ``M >= num_dims``.
            IndexError: if a coordinate is out of bounds.

        >>> from runetensor import bigarray as ba
        >>> g = ba.Genarray.init(ba.int32, ba.fortran_layout, [2, 3, 4], lambda i: 100 * i[0] + 10 * i[1] + i[2])
        >>> s = g.slice_right([3, 4]); s.dims(), s.get([2])
        ((2,), 234)
        """
        return Genarray._make(self._slice("right", idx, "slice_right"), self._kind, self._layout)


def _seq(idx: Any, fname: str) -> Sequence[Any]:
    if isinstance(idx, (list, tuple)):
        return idx
    if isinstance(idx, (str, bytes)):
        raise TypeError(f"{fname}: indices must be a sequence of integers, got {type(idx).__name__}")
    try:
        return list(idx)
    except TypeError:
        raise TypeError(f"{fname}: indices must be a sequence of integers, got {type(idx).__name__} {idx!r}") from None


_GENARRAY.append(Genarray)
