"""Indexing: ``t[key]``, ``t[key] = v`` and the seed's ``get slice set set_slice item set_item
put index_put put_along_axis take take_along_axis compress extract nonzero argwhere``.

Keys follow NumPy's rules.  Every key is normalised here before it reaches the
backend: ints are in range and non-negative, slices have explicit
``start, stop, step`` (``stop`` is ``None`` only for a negative step that runs
past index 0), ``...`` is expanded, index tensors are range-checked, made
non-negative and converted to int64, and boolean masks become the int64
coordinates of their true elements (NumPy's own definition of a mask).  Basic
keys (ints, slices, ``None``, ``...``) give views through ``view_index``;
anything else goes through ``gather``/``scatter``, which copy.

Exceptions: ``IndexError`` for out-of-range indices, too many indices, masks of
the wrong shape and index tensors that do not broadcast; ``TypeError`` for keys
of the wrong type (floats, strings, float tensors); ``ValueError`` for values
that do not broadcast into the selection and for zero slice steps.
"""
from __future__ import annotations

import builtins
import operator
from typing import Any, Iterator, Sequence

from . import _dtypes as D
from ._backend import _fastops
from ._backend.contract import BatchedValueError, TracedValueError
from ._tensor import Tensor, as_level, as_tensor, attach, higher_backend, wrap
from ._validate import as_int, broadcast_shapes, normalize_axis, shape_str
from ._views import check_value_shape, value_handle, write

__all__ = ["I", "L", "R", "Rs", "A", "M", "N", "get", "slice", "set", "set_slice", "item", "set_item",
           "put", "index_put", "put_along_axis", "take", "take_along_axis", "compress", "extract",
           "nonzero", "argwhere"]

_pyslice = builtins.slice
_int64 = D.int64
_bool = D.bool

# ---------------------------------------------------------------------------
# slice specs (docs/conventions.md section 3)
# ---------------------------------------------------------------------------


class _Spec:
    __slots__ = ()

    def __eq__(self, other: Any) -> bool:
        return type(self) is type(other) and all(getattr(self, s) is getattr(other, s) or
                                                  getattr(self, s) == getattr(other, s)
                                                  for s in self.__slots__)

    __hash__ = None  # type: ignore[assignment]


class I(_Spec):  # noqa: E742
    """Slice spec: a single index along one axis (removes the axis; negative counts from the end).

    >>> import runetensor as rt
    >>> print(rt.slice(rt.create(rt.int32, [2, 4], [1, 2, 3, 4, 5, 6, 7, 8]), [rt.I(1)]))
    [5, 6, 7, 8]
    """
    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = as_int(i, "I", "index")

    def __repr__(self) -> str:
        return f"rt.I({self.i})"


class L(_Spec):
    """Slice spec: a list of indices along one axis (fancy indexing; copies).

    >>> import runetensor as rt
    >>> print(rt.slice(rt.create(rt.int32, [4], [1, 2, 3, 4]), [rt.L([3, 0])]))
    [4, 1]
    """
    __slots__ = ("indices",)

    def __init__(self, indices: Sequence[int]):
        self.indices = indices

    def __repr__(self) -> str:
        return f"rt.L({self.indices!r})"


class R(_Spec):
    """Slice spec: the range ``[start, stop)`` with step 1, as Python's ``start:stop`` (``None`` for an open end).

    >>> import runetensor as rt
    >>> print(rt.slice(rt.create(rt.int32, [5], [0, 1, 2, 3, 4]), [rt.R(1, 3)]))
    [1, 2]
    """
    __slots__ = ("start", "stop")

    def __init__(self, start: int | None, stop: int | None):
        self.start, self.stop = start, stop

    def __repr__(self) -> str:
        return f"rt.R({self.start}, {self.stop})"


class Rs(_Spec):
    """Slice spec: the range ``[start, stop)`` with ``step``, as Python's ``start:stop:step``.

    >>> import runetensor as rt
    >>> print(rt.slice(rt.create(rt.int32, [5], [0, 1, 2, 3, 4]), [rt.Rs(4, 0, -2)]))
    [4, 2]
    """
    __slots__ = ("start", "stop", "step")

    def __init__(self, start: int | None, stop: int | None, step: int | None):
        self.start, self.stop, self.step = start, stop, step

    def __repr__(self) -> str:
        return f"rt.Rs({self.start}, {self.stop}, {self.step})"


class M(_Spec):
    """Slice spec: a boolean mask along one axis (its length must match the axis; copies).

    >>> import runetensor as rt
    >>> print(rt.slice(rt.create(rt.int32, [3], [1, 2, 3]), [rt.M([True, False, True])]))
    [1, 3]
    """
    __slots__ = ("mask",)

    def __init__(self, mask: Any):
        self.mask = mask

    def __repr__(self) -> str:
        return f"rt.M({self.mask!r})"


class _Singleton(_Spec):
    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"rt.{self._name}"


#: Slice spec: the whole axis (the default for axes without a spec).
A = _Singleton("A")
#: Slice spec: a new axis of size 1.
N = _Singleton("N")

# ---------------------------------------------------------------------------
# key normalisation
# ---------------------------------------------------------------------------
_FULL: dict[tuple[int, ...], tuple] = {}


def _full(shape: tuple[int, ...]) -> tuple:
    """``(slice(0, d, 1), ...)`` for ``shape``, cached (the full key of the remaining axes)."""
    r = _FULL.get(shape)
    if r is None:
        if len(_FULL) > 4096:
            _FULL.clear()
        r = _FULL[shape] = tuple(_pyslice(0, s, 1) for s in shape)
    return r


def _norm_slice(s: _pyslice, n: int, fname: str) -> _pyslice:
    try:
        a, b, c = s.indices(n)
    except TypeError:
        raise TypeError(f"{fname}: slice {s} has a non-integer bound; expected ints or None") from None
    except ValueError:
        raise ValueError(f"{fname}: slice {s} has step 0; the step must be non-zero") from None
    if c < 0 and (a < 0 or b < 0):
        if a < 0:  # an empty negative-step slice (indices() clamps start to -1)
            return _pyslice(0, 0, 1)
        return _pyslice(a, None, c)  # a negative step running through index 0
    return _pyslice(a, b, c)


def _index_range(be: Any, h: Any) -> tuple[int, int]:
    lo, hi = be.value_range(h)
    return builtins.int(lo), builtins.int(hi)


def _norm_index_handle(be: Any, h: Any, d: Any, n: int, fname: str, what: str = "index") -> Any:
    """An integer index handle checked against ``[-n, n)`` and converted to non-negative int64."""
    if h.size:
        try:
            lo, hi = _index_range(be, h)
        except TracedValueError as e:  # under rt.jit: checked when the program runs
            e.backend.guard_range(e.handle, -n, n, f"{fname}: {what} {{}} is out of bounds for an axis of size "
                                  f"{n} (expected {-n} <= {what} < {n})")
            lo, hi = -1, 0
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"{fname}: {what} {bad} is out of bounds for an axis of size {n} "
                             f"(expected {-n} <= {what} < {n})")
        if lo < 0:
            if d is not _int64:
                h = be.cast(h, _int64)
            neg = be.binary("lt", h, 0)
            return be.where(neg, be.binary("add", h, n), h)
    if d is not _int64:
        h = be.cast(h, _int64)
    return h


def _key_tensor(k: Any, be: Any, fname: str) -> Tensor:
    if isinstance(k, Tensor):
        return k
    if isinstance(k, (list, tuple)) and len(k) == 0:
        return wrap(be.empty((0,), _int64), _int64, be)
    try:
        kt = as_tensor(k, fname, backend=be)
        if isinstance(k, (list, tuple)) and kt._data.size == 0 and kt._dtype.kind not in "iub":
            # an empty sequence is an integer index (as NumPy), whatever its nesting
            return wrap(be.empty(kt._data.shape, _int64), _int64, be)
        return kt
    except (TypeError, ValueError) as e:
        raise TypeError(f"{fname}: invalid index {k!r}: only integers, slices, None, ..., and integer or "
                        f"boolean tensors/lists are valid indices ({e})") from None


def _normalize(t: Tensor, key: Any, fname: str) -> tuple[tuple, builtins.bool, int]:
    """(backend key, has advanced indices, separator) for a NumPy-style ``key`` on ``t``.

    ``separator`` is the position in the key of a ``None`` standing for an
    ellipsis that covers no axis (NumPy still counts it as separating advanced
    indices), or -1; its size-1 axis must be removed from the result.
    """
    shape = t._data.shape
    ndim = len(shape)
    be = t._backend
    if type(key) is not tuple:
        key = (key,)
    items: list[Any] = []
    consumed = 0
    ell = -1
    adv = False
    for k in key:
        tk = type(k)
        if tk is int or tk is _pyslice:
            consumed += 1
            items.append(k)
        elif k is None:
            items.append(None)
        elif k is Ellipsis:
            if ell >= 0:
                raise IndexError(f"{fname}: an index can only have a single ellipsis (...)")
            ell = len(items)
            items.append(k)
        elif tk is builtins.bool:
            items.append(wrap(be.full((), k, _bool), _bool, be))
            adv = True
        else:
            if not isinstance(k, (Tensor, list, tuple)) and hasattr(k, "__index__") and \
                    not hasattr(k, "shape"):
                try:
                    items.append(operator.index(k))
                    consumed += 1
                    continue
                except TypeError:
                    pass
            if isinstance(k, (builtins.float, builtins.complex, str, bytes, dict, builtins.set)) or \
                    not isinstance(k, (Tensor, list, tuple)) and not hasattr(k, "__array__") and \
                    not hasattr(k, "__array_interface__") and not hasattr(k, "shape"):
                raise TypeError(f"{fname}: invalid index {k!r} of type {tk.__name__}: only integers, slices, "
                                f"None, ..., and integer or boolean tensors/lists are valid indices")
            kt = _key_tensor(k, be, fname)
            if kt._backend is not be:
                if kt._backend.level == 0 and be.level == 0:
                    # an index held by another computing backend (a NumPy index into a Dask tensor):
                    # indices are small host data, moved over as NumPy moves them
                    kt = as_tensor(kt._backend.to_host(kt._data), fname, backend=be)
                elif higher_backend(be, kt._backend, fname) is be:
                    kt = wrap(kt._data, kt._dtype, be)  # a lower level's index: a constant here
                else:
                    kt = as_level(kt, be, fname)
            kind = kt._dtype.kind
            if kind in "iu":
                if kt._data.ndim == 0:
                    try:
                        items.append(builtins.int(be.to_list(kt._data)))
                        consumed += 1
                        continue
                    except BatchedValueError:
                        pass  # a different index per lane under vmap: an index array
                consumed += 1
                items.append(kt)
                adv = True
                continue
                consumed += 1
            elif kind == "b":
                consumed += kt._data.ndim
            else:
                raise TypeError(f"{fname}: index tensors must have an integer or bool dtype, got {kt._dtype}")
            items.append(kt)
            adv = True
    if consumed > ndim:
        raise IndexError(f"{fname}: too many indices for a tensor of rank {ndim}: {consumed} were given")
    fill = _full(shape[consumed:]) if ell < 0 else None
    out: list[Any] = []
    sep = -1
    ax = 0
    for k in items:
        tk = type(k)
        if tk is int:
            n = shape[ax]
            if not -n <= k < n:
                raise IndexError(f"{fname}: index {k} is out of bounds for axis {ax} with size {n}")
            out.append(k + n if k < 0 else k)
            ax += 1
        elif tk is _pyslice:
            out.append(_norm_slice(k, shape[ax], fname))
            ax += 1
        elif k is None:
            out.append(None)
        elif k is Ellipsis:
            nfill = ndim - consumed
            if nfill == 0 and adv:
                sep = len(out)
                out.append(None)
            out.extend(_full(shape[ax:ax + nfill]))
            ax += nfill
        else:  # index tensor
            h = k._data
            if k._dtype.kind == "b":
                m = h.ndim
                if m == 0:
                    out.append(h)
                    continue
                if h.shape != shape[ax:ax + m]:
                    raise IndexError(f"{fname}: boolean index of shape {shape_str(h.shape)} does not match the "
                                     f"indexed dimensions {shape_str(shape[ax:ax + m])} (axes {ax}..{ax + m - 1})")
                out.extend(be.nonzero(h))
                ax += m
            else:
                out.append(_norm_index_handle(be, h, k._dtype, shape[ax], fname))
                ax += 1
    if fill:
        out.extend(fill)
    return tuple(out), adv, sep


def _adv_shape(key: tuple, be: Any, fname: str, sep: int = -1) -> tuple[int, ...]:
    """The shape ``gather(x, key)`` produces, by NumPy's rules (advanced indices and ints broadcast
    together; their block stays in place when they are adjacent, else moves to the front).

    With ``sep >= 0`` the size-1 axis of the ``None`` at ``key[sep]`` is left out.
    """
    adv_pos = []
    adv_shapes = []
    for i, k in enumerate(key):
        if type(k) is int:
            adv_pos.append(i)
            adv_shapes.append(())
        elif k is not None and type(k) is not _pyslice:
            adv_pos.append(i)
            if k.ndim == 0:  # 0-d bool: one entry if True, none if False
                adv_shapes.append((1,) if be.to_list(k) else (0,))
            else:
                adv_shapes.append(k.shape)
    try:
        bshape = broadcast_shapes(*adv_shapes, fname=fname)
    except ValueError:
        raise IndexError(f"{fname}: shape mismatch: index arrays of shapes "
                         f"{', '.join(shape_str(s) for s in adv_shapes)} cannot be broadcast together") from None
    consecutive = adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos)))
    dims: list[int] = []
    placed = False
    if not consecutive:
        dims.extend(bshape)
        placed = True
    for i, k in enumerate(key):
        if k is None:
            if i != sep:
                dims.append(1)
        elif type(k) is _pyslice:
            dims.append(len(range(k.start, -1 if k.stop is None else k.stop, k.step)))
        elif not placed:
            dims.extend(bshape)
            placed = True
    return tuple(dims)


def _read_level(t: Tensor, keys: Any, fname: str) -> Tensor:
    """``t`` at the highest transformation among it and the index tensors in ``keys``, for a
    read: an index that differs between lanes under ``vmap`` (or is traced) reads a tensor of a
    lower level, which the higher level takes as a constant."""
    be = t._backend
    for k in keys if type(keys) is tuple else (keys,):
        if isinstance(k, Tensor) and k._backend is not be and k._backend.level > be.level:
            be = higher_backend(be, k._backend, fname)
    return t if be is t._backend else wrap(t._data, t._dtype, be)


def _getitem(t: Tensor, key: Any, fname: str = "getitem") -> Tensor:
    t = _read_level(t, key, fname)
    k, adv, sep = _normalize(t, key, fname)
    be = t._backend
    if not adv:
        return wrap(be.view_index(t._data, k), t._dtype, be)
    if sep >= 0:
        shp = _adv_shape(k, be, fname, sep)
        return wrap(be.reshape(be.gather(t._data, k), shp), t._dtype, be)
    n_adv = 0
    for e in k:
        if e is not None and type(e) is not _pyslice and type(e) is not int:
            n_adv += 1
    if n_adv > 1:
        _adv_shape(k, be, fname)  # validates that the index arrays broadcast together
    return wrap(be.gather(t._data, k), t._dtype, be)


def _setitem(t: Tensor, key: Any, value: Any, fname: str = "setitem") -> None:
    k, adv, sep = _normalize(t, key, fname)
    be = t._backend
    if not adv:
        write(be, be.view_index(t._data, k), value, t._dtype, fname)
        return
    full = _adv_shape(k, be, fname)
    _scatter(t, k, value, _adv_shape(k, be, fname, sep) if sep >= 0 else full, fname,
             full if sep >= 0 else None)


def _scatter(t: Tensor, k: tuple, value: Any, sel_shape: tuple[int, ...], fname: str,
             key_shape: tuple[int, ...] | None = None) -> None:
    be = t._backend
    v = value_handle(value, t._dtype, be, fname)
    if _is_handle(v):
        vs = check_value_shape(v.shape, sel_shape, fname)
        if vs != v.shape:
            v = be.reshape(v, vs)
        if key_shape is not None:  # the key holds an extra size-1 axis: give the value one too
            v = be.reshape(be.expand(v, sel_shape), key_shape)
    try:
        be.scatter(t._data, k, v)
    except ValueError as e:
        raise ValueError(f"{fname}: cannot write into this tensor ({e}); broadcast views are read-only, "
                         f"copy them first") from None


def _is_handle(v: Any) -> builtins.bool:
    return not isinstance(v, (builtins.int, builtins.float, builtins.complex)) and hasattr(v, "shape")


def _tensor_getitem(self: Tensor, key: Any) -> Tensor:
    """``t[key]`` with NumPy's rules; basic keys (ints, slices, None, ...) return views.

    >>> import runetensor as rt
    >>> t = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    >>> print(t[1]), print(t[:, ::-1]), print(t[t > 2])
    [4, 5, 6]
    [[3, 2, 1],
     [6, 5, 4]]
    [3, 4, 5, 6]
    (None, None, None)
    """
    tk = type(key)
    h = self._data
    if tk is int:
        shape = h.shape
        if shape:
            n = shape[0]
            if 0 <= key < n:
                return wrap(self._backend.view_index(h, (key,) + _full(shape[1:])), self._dtype, self._backend)
            if -n <= key < 0:
                return wrap(self._backend.view_index(h, (key + n,) + _full(shape[1:])), self._dtype,
                            self._backend)
    elif tk is _pyslice:
        shape = h.shape
        if shape:
            try:
                a, b, c = key.indices(shape[0])
            except (TypeError, ValueError):
                return _getitem(self, key)
            s = _pyslice(a, b, c) if c > 0 or a >= 0 and b >= 0 else \
                _pyslice(a, None, c) if a >= 0 else _pyslice(0, 0, 1)
            return wrap(self._backend.view_index(h, (s,) + _full(shape[1:])), self._dtype, self._backend)
    return _getitem(self, key)


def _tensor_setitem(self: Tensor, key: Any, value: Any) -> None:
    """``t[key] = value``: writes land in ``t``'s memory (and its base); ``value`` broadcasts.

    >>> import runetensor as rt
    >>> t = rt.zeros(rt.int32, [2, 3]); t[0, 1:] = 7; t[[1, 1], [0, 2]] = rt.create(rt.int32, [2], [8, 9])
    >>> print(t)
    [[0, 7, 7],
     [8, 0, 9]]
    """
    _setitem(self, key, value)


def _tensor_iter(self: Tensor) -> Iterator[Tensor]:
    """``iter(t)``: the views ``t[0], t[1], ...``.

    Raises:
        TypeError: at ``iter()`` (not at the first ``next``) for a 0-d tensor, so
            ``np.iterable(t)`` is False for one.
    """
    h = self._data
    if h.ndim == 0:
        raise TypeError("iter: iteration over a 0-d tensor")
    return _iter_rows(self._backend, h, self._dtype)


def _iter_rows(be: Any, h: Any, d: Any) -> Iterator[Tensor]:
    rest = _full(h.shape[1:])
    for i in range(h.shape[0]):
        yield wrap(be.view_index(h, (i,) + rest), d, be)


Tensor.__getitem__ = _tensor_getitem  # type: ignore[attr-defined]
_fastops.install_getitem(Tensor)  # basic keys in C when the extension is built (this function otherwise)
Tensor.__setitem__ = _tensor_setitem  # type: ignore[attr-defined]
Tensor.__iter__ = _tensor_iter  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# the seed's index functions
# ---------------------------------------------------------------------------
def _t(t: Any, fname: str) -> Tensor:
    return t if type(t) is Tensor else as_tensor(t, fname)


def _int_key(t: Tensor, indices: Any, fname: str, exact: builtins.bool) -> tuple:
    """A basic key of ints from ``indices`` (a sequence of ints), in range and non-negative."""
    if isinstance(indices, (builtins.int,)) and not isinstance(indices, builtins.bool):
        indices = [indices]
    try:
        idx = [as_int(i, fname, "index") for i in indices]
    except TypeError as e:
        if "must be an integer" in str(e):
            raise
        raise TypeError(f"{fname}: indices must be a sequence of integers, got {type(indices).__name__}") from None
    shape = t._data.shape
    if len(idx) > len(shape) or exact and len(idx) != len(shape):
        raise (ValueError if exact else IndexError)(
            f"{fname}: {len(idx)} indices {idx} for a tensor of rank {len(shape)} {shape_str(shape)}" +
            ("; expected one per dimension" if exact else ""))
    out = []
    for ax, (i, n) in enumerate(zip(idx, shape)):
        if not -n <= i < n:
            raise IndexError(f"{fname}: index {i} is out of bounds for axis {ax} with size {n}")
        out.append(i + n if i < 0 else i)
    return tuple(out) + _full(shape[len(out):])


@attach()
def get(t: Tensor, indices: Sequence[int]) -> Tensor:
    """The sub-tensor at ``indices`` (outermost axes first), as a view; a 0-d tensor if every axis is indexed.

    Raises:
        IndexError: if there are more indices than axes or one is out of range.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [2, 2, 2], [0, 1, 2, 3, 4, 5, 6, 7])
    >>> print(rt.get(x, [1, 1, 1])), print(rt.get(rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6]), [1]))
    7
    [4, 5, 6]
    (None, None)
    """
    t = _t(t, "get")
    return wrap(t._backend.view_index(t._data, _int_key(t, indices, "get", False)), t._dtype, t._backend)


@attach()
def set(t: Tensor, indices: Sequence[int], value: Any) -> None:  # noqa: A001
    """Write ``value`` (broadcast) into the sub-tensor at ``indices``, in place.

    Raises:
        IndexError: if an index is out of range.
        ValueError: if ``value`` does not broadcast to the sub-tensor's shape.

    >>> import runetensor as rt
    >>> x = rt.zeros(rt.int32, [2, 3]); rt.set(x, [1], rt.create(rt.int32, [3], [1, 2, 3])); print(x)
    [[0, 0, 0],
     [1, 2, 3]]
    """
    t = _t(t, "set")
    be = t._backend
    write(be, be.view_index(t._data, _int_key(t, indices, "set", False)), value, t._dtype, "set")


@attach()
def item(t: Tensor, indices: Sequence[int] = ()) -> Any:
    """The element at ``indices`` (one per axis) as a Python scalar.

    With no indices, a one-element tensor gives its element (as NumPy's ``item()``).

    Raises:
        ValueError: if the number of indices differs from ``ndim``.
        IndexError: if an index is out of range.

    >>> import runetensor as rt
    >>> rt.item(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]), [1, 0]), rt.scalar(rt.float32, 2.5).item()
    (3, 2.5)
    """
    t = _t(t, "item")
    h = t._data
    be = t._backend
    if not indices and h.size == 1:
        return be.to_list(be.reshape(h, ()) if h.ndim else h)
    return be.to_list(be.view_index(h, _int_key(t, indices, "item", True)))


@attach()
def set_item(t: Tensor, indices: Sequence[int], value: Any) -> None:
    """Set the element at ``indices`` (one per axis) to the scalar ``value``, in place.

    Raises:
        ValueError: if the number of indices differs from ``ndim`` or ``value`` does not fit.
        IndexError: if an index is out of range.

    >>> import runetensor as rt
    >>> x = rt.zeros(rt.float32, [3]); rt.set_item(x, [0], 999.); print(x)
    [999, 0, 0]
    """
    t = _t(t, "set_item")
    be = t._backend
    write(be, be.view_index(t._data, _int_key(t, indices, "set_item", True)), value, t._dtype, "set_item")


def _specs(t: Tensor, specs: Any, fname: str) -> tuple[tuple, list[builtins.bool], builtins.bool]:
    """(outer key, per-entry "is new axis" flags, has advanced specs) for a list of slice specs.

    The outer key has, per input axis, an int, a normalised slice or an int64
    index handle; ``N`` entries appear as ``None``.
    """
    try:
        sp = list(specs)
    except TypeError:
        raise TypeError(f"{fname}: specs must be a list of slice specs (rt.I, rt.L, rt.R, rt.Rs, rt.A, rt.M, rt.N), "
                        f"got {type(specs).__name__}") from None
    shape = t._data.shape
    be = t._backend
    consumed = sum(1 for s in sp if s is not N)
    if consumed > len(shape):
        raise IndexError(f"{fname}: {consumed} specs for a tensor of rank {len(shape)} {shape_str(shape)}")
    key: list[Any] = []
    adv = False
    ax = 0
    for s in sp:
        if s is N:
            key.append(None)
            continue
        n = shape[ax]
        ts = type(s)
        if s is A:
            key.append(_pyslice(0, n, 1))
        elif ts is I:
            if not -n <= s.i < n:
                raise IndexError(f"{fname}: I {s.i} is out of bounds for axis {ax} with size {n}")
            key.append(s.i + n if s.i < 0 else s.i)
        elif ts is R:
            key.append(_norm_slice(_pyslice(s.start, s.stop, None), n, fname))
        elif ts is Rs:
            key.append(_norm_slice(_pyslice(s.start, s.stop, s.step), n, fname))
        elif ts is L:
            kt = _key_tensor(s.indices, be, fname)
            if kt._dtype.kind not in "iu":
                raise TypeError(f"{fname}: L expects integer indices, got {kt._dtype}")
            h = kt._data
            if h.ndim != 1:
                h = be.reshape(be.contiguous(h), (h.size,))
            key.append(_norm_index_handle(be, h, kt._dtype, n, fname))
            adv = True
        elif ts is M:
            kt = _key_tensor(s.mask, be, fname)
            if kt._data.size == 0 and isinstance(s.mask, (list, tuple)):
                kt = wrap(be.empty(kt._data.shape, _bool), _bool, be)  # an empty list is an empty mask here
            if kt._dtype is not _bool:
                raise TypeError(f"{fname}: M expects a boolean mask, got {kt._dtype}")
            if kt._data.shape != (n,):
                raise IndexError(f"{fname}: mask of shape {shape_str(kt._data.shape)} does not match axis {ax} "
                                 f"of size {n}")
            key.append(be.nonzero(kt._data)[0])
            adv = True
        else:
            raise TypeError(f"{fname}: invalid slice spec {s!r}; expected rt.I, rt.L, rt.R, rt.Rs, rt.A, rt.M or rt.N")
        ax += 1
    key.extend(_full(shape[ax:]))
    return tuple(key), adv


def _outer(be: Any, key: tuple) -> tuple[tuple, tuple[int, ...], tuple[int, ...]]:
    """Turn an outer key (ints, slices, index handles, None) into an all-advanced key whose index
    arrays broadcast orthogonally.  Returns (gather key, its result shape, shape with N axes)."""
    kept = [k for k in key if k is not None and type(k) is not int]
    m = len(kept)
    out: list[Any] = []
    sizes: list[int] = []
    j = 0
    for k in key:
        if k is None:
            continue
        if type(k) is int:
            out.append(k)
            continue
        if type(k) is _pyslice:
            stop = -1 if k.stop is None else k.stop
            h = be.arange(k.start, stop, k.step, _int64)
        else:
            h = k
        n = h.shape[0]
        sizes.append(n)
        shp = (1,) * j + (n,) + (1,) * (m - j - 1)
        out.append(be.reshape(h, shp))
        j += 1
    full_shape: list[int] = []
    it = iter(sizes)
    for k in key:
        if k is None:
            full_shape.append(1)
        elif type(k) is not int:
            full_shape.append(next(it))
    return tuple(out), tuple(sizes), tuple(full_shape)


@attach()
def slice(t: Tensor, specs: Sequence[Any]) -> Tensor:  # noqa: A001
    """The sub-tensor selected by slice specs, one per axis from the left (missing ones are ``rt.A``).

    ``rt.I(i)`` picks one index, ``rt.R(a, b)``/``rt.Rs(a, b, s)`` a range (as
    Python's ``a:b:s``), ``rt.A`` the whole axis, ``rt.N`` inserts an axis of
    size 1, ``rt.L([..])`` a list of indices and ``rt.M(mask)`` a boolean mask.
    Several ``L``/``M`` specs index their axes independently (outer indexing).
    A view unless ``L`` or ``M`` is used.

    Raises:
        IndexError: if an index is out of range or there are too many specs.
        ValueError: for a zero step.
        TypeError: for something that is not a spec.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9])
    >>> print(rt.slice(x, [rt.R(0, 2), rt.L([0, 2])]))
    [[1, 3],
     [4, 6]]
    """
    t = _t(t, "slice")
    key, adv = _specs(t, specs, "slice")
    be = t._backend
    if not adv:
        return wrap(be.view_index(t._data, key), t._dtype, be)
    gkey, shp, full_shape = _outer(be, key)
    r = be.gather(t._data, gkey)
    if full_shape != shp:
        r = be.reshape(r, full_shape)
    return wrap(r, t._dtype, be)


@attach()
def set_slice(t: Tensor, specs: Sequence[Any], value: Any) -> None:
    """Write ``value`` (broadcast) into the region selected by ``specs`` (see :func:`slice`), in place.

    Raises:
        IndexError: if a spec is out of range.
        ValueError: if ``value`` does not broadcast to the region's shape.

    >>> import runetensor as rt
    >>> x = rt.zeros(rt.int32, [3, 3]); rt.set_slice(x, [rt.L([0, 2]), rt.R(1, 3)], 5); print(x)
    [[0, 5, 5],
     [0, 0, 0],
     [0, 5, 5]]
    """
    t = _t(t, "set_slice")
    key, adv = _specs(t, specs, "set_slice")
    be = t._backend
    if not adv:
        write(be, be.view_index(t._data, key), value, t._dtype, "set_slice")
        return
    gkey, shp, full_shape = _outer(be, key)
    v = value_handle(value, t._dtype, be, "set_slice")
    if _is_handle(v):
        vs = check_value_shape(v.shape, full_shape, "set_slice")
        if vs != v.shape:
            v = be.reshape(v, vs)
        if vs != full_shape:
            v = be.expand(v, full_shape)
        if full_shape != shp:
            v = be.reshape(v, shp)
            if v is None:  # pragma: no cover (only size-1 axes are dropped)
                raise ValueError("set_slice: cannot drop the new axes from the value")
    _do_scatter(be, t._data, gkey, v, "set_slice")


# ---------------------------------------------------------------------------
# take / put family
# ---------------------------------------------------------------------------
_MODES = ("raise", "wrap", "clip")


def _mode_indices(be: Any, kt: Tensor, n: int, mode: str, fname: str) -> Any:
    """Index handle for an axis of size ``n`` under ``mode``, as non-negative int64."""
    if mode not in _MODES:
        raise ValueError(f"{fname}: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if kt._dtype.kind not in "iu":
        raise TypeError(f"{fname}: indices must have an integer dtype, got {kt._dtype}")
    h = kt._data
    if mode == "raise":
        return _norm_index_handle(be, h, kt._dtype, n, fname)
    if h.size == 0:
        return be.cast(h, _int64)
    if n == 0:
        raise IndexError(f"{fname}: cannot index into an empty axis with {h.size} indices (mode {mode!r})")
    h = be.cast(h, _int64) if kt._dtype is not D.uint64 else h
    if kt._dtype is D.uint64:  # values up to 2**64 - 1: reduce in uint64 first
        if mode == "wrap":
            return be.cast(be.binary("pymod", h, n), _int64)
        big = be.binary("gt", h, n - 1)
        return be.cast(be.where(big, be.full((), n - 1, D.uint64), h), _int64)
    if mode == "wrap":
        return be.binary("pymod", h, n)
    return be.binary("minimum", be.binary("maximum", h, 0), n - 1)


def _flat_coords(be: Any, flat: Any, shape: tuple[int, ...]) -> tuple:
    """Row-major coordinates (one int64 handle per axis) of the flat indices ``flat``."""
    coords = []
    rest = flat
    for i in range(len(shape) - 1, 0, -1):
        n = shape[i]
        coords.append(be.binary("pymod", rest, n))
        rest = be.binary("floordiv", rest, n)
    coords.append(rest)
    return tuple(reversed(coords))


@attach()
def take(t: Tensor, indices: Any, axis: int | None = None, mode: str = "raise") -> Tensor:
    """Elements of ``t`` at ``indices`` along ``axis`` (of the flattened ``t`` if ``axis`` is None).

    The result has shape ``t.shape[:axis] + indices.shape + t.shape[axis+1:]``.
    ``mode``: ``"raise"`` (negative indices count from the end), ``"wrap"``
    (modulo the axis size) or ``"clip"`` (clamp to ``[0, n-1]``).

    Raises:
        IndexError: for an index out of range with ``mode="raise"``, or any index into an empty axis.
        TypeError: for non-integer indices.
        ValueError: for an unknown mode.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [5], [0, 1, 2, 3, 4])
    >>> print(rt.take(x, rt.create(rt.int32, [2], [-1, 5]), mode="clip"))
    [0, 4]
    """
    t = _read_level(_t(t, "take"), indices, "take")
    be = t._backend
    kt = _key_tensor(indices, be, "take")
    if axis is None:
        shape = t._data.shape
        n = t._data.size
        idx = _mode_indices(be, kt, n, mode, "take")
        if len(shape) == 1:
            return wrap(be.gather(t._data, (idx,)), t._dtype, be)
        if not shape:
            return wrap(be.gather(be.reshape(t._data, (1,)), (idx,)), t._dtype, be)
        return wrap(be.gather(t._data, _flat_coords(be, idx, shape)), t._dtype, be)
    shape = t._data.shape
    ax = normalize_axis(axis, len(shape), "take")
    idx = _mode_indices(be, kt, shape[ax], mode, "take")
    if idx.ndim == 0:
        return wrap(be.gather(t._data, _full(shape[:ax]) + (idx,) + _full(shape[ax + 1:])), t._dtype, be)
    key = _full(shape[:ax]) + (idx,) + _full(shape[ax + 1:])
    return wrap(be.gather(t._data, key), t._dtype, be)


def _along_key(be: Any, t_shape: tuple[int, ...], idx: Any, ax: int, fname: str) -> tuple:
    """All-advanced key selecting ``idx`` along ``ax`` and the matching position on every other axis."""
    ishape = idx.shape
    if len(ishape) != len(t_shape):
        raise ValueError(f"{fname}: indices of rank {len(ishape)} {shape_str(ishape)} for a tensor of rank "
                         f"{len(t_shape)} {shape_str(t_shape)}; they must have the same rank")
    nd = len(t_shape)
    key: list[Any] = []
    for i in range(nd):
        if i == ax:
            key.append(idx)
            continue
        if ishape[i] != t_shape[i] and ishape[i] != 1 and t_shape[i] != 1:
            raise ValueError(f"{fname}: indices of shape {shape_str(ishape)} do not match the tensor's shape "
                             f"{shape_str(t_shape)} on axis {i} (sizes must be equal or 1)")
        r = be.arange(0, t_shape[i], 1, _int64)
        key.append(be.reshape(r, (1,) * i + (t_shape[i],) + (1,) * (nd - i - 1)))
    return tuple(key)


@attach()
def take_along_axis(t: Tensor, indices: Any, axis: int) -> Tensor:
    """Values of ``t`` at ``indices`` along ``axis`` (NumPy's ``take_along_axis``).

    ``indices`` has ``t``'s rank; on other axes its sizes match ``t``'s (or either is 1).

    Raises:
        ValueError: if the ranks or shapes are incompatible.
        IndexError: if an index is out of range (negative ones count from the end).

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [2, 3], [4., 1., 2., 3., 5., 6.])
    >>> print(rt.take_along_axis(x, rt.create(rt.int32, [2, 1], [1, 0]), axis=1))
    [[1],
     [3]]
    """
    t = _read_level(_t(t, "take_along_axis"), indices, "take_along_axis")
    be = t._backend
    kt = _key_tensor(indices, be, "take_along_axis")
    shape = t._data.shape
    if axis is None:
        t = wrap(be.reshape(be.contiguous(t._data), (t._data.size,)), t._dtype, be)
        shape = t._data.shape
        if kt._data.ndim != 1:
            raise ValueError(f"take_along_axis: with axis=None the indices must be 1-D, got shape "
                             f"{shape_str(kt._data.shape)}")
    ax = normalize_axis(axis if axis is not None else 0, len(shape), "take_along_axis")
    idx = _mode_indices(be, kt, shape[ax], "raise", "take_along_axis")
    return wrap(be.gather(t._data, _along_key(be, shape, idx, ax, "take_along_axis")), t._dtype, be)


def _values_for(be: Any, t: Tensor, values: Any, target: tuple[int, ...], fname: str) -> Any:
    v = value_handle(values, t._dtype, be, fname)
    if isinstance(v, (builtins.int, builtins.float, builtins.complex)) or not hasattr(v, "shape"):
        return v
    vs = check_value_shape(v.shape, target, fname)
    if vs != v.shape:
        v = be.reshape(v, vs)
    return v


@attach()
def put_along_axis(t: Tensor, indices: Any, values: Any, axis: int) -> None:
    """Write ``values`` (broadcast) at ``indices`` along ``axis``, in place (NumPy's ``put_along_axis``).

    Raises:
        ValueError: if shapes are incompatible.
        IndexError: if an index is out of range.

    >>> import runetensor as rt
    >>> x = rt.zeros(rt.float32, [2, 3])
    >>> rt.put_along_axis(x, rt.create(rt.int32, [2, 1], [1, 0]), rt.create(rt.float32, [2, 1], [10., 20.]), axis=1)
    >>> print(x)
    [[0, 10, 0],
     [20, 0, 0]]
    """
    t = _t(t, "put_along_axis")
    be = t._backend
    kt = _key_tensor(indices, be, "put_along_axis")
    shape = t._data.shape
    ax = normalize_axis(axis, len(shape), "put_along_axis")
    idx = _mode_indices(be, kt, shape[ax], "raise", "put_along_axis")
    key = _along_key(be, shape, idx, ax, "put_along_axis")
    sel = _adv_shape(key, be, "put_along_axis")
    v = _values_for(be, t, values, sel, "put_along_axis")
    _do_scatter(be, t._data, key, v, "put_along_axis")


def _do_scatter(be: Any, h: Any, key: tuple, v: Any, fname: str) -> None:
    try:
        be.scatter(h, key, v)
    except ValueError as e:
        raise ValueError(f"{fname}: cannot write into this tensor ({e}); broadcast views are read-only, "
                         f"copy them first") from None


@attach()
def put(t: Tensor, indices: Any, values: Any, axis: int | None = None, mode: str = "raise") -> None:
    """Write ``values`` at ``indices`` in place: flat positions of ``t`` if ``axis`` is None, else along
    ``axis`` with :func:`put_along_axis` semantics.

    ``values`` broadcasts to the indices' shape (or, with as many elements as
    there are indices, is taken in flat order).  Duplicate indices: the last
    write wins.  ``mode`` as in :func:`take`.

    Raises:
        IndexError: for an index out of range with ``mode="raise"``.
        ValueError: if ``values`` does not fit the indices, or for an unknown mode.

    >>> import runetensor as rt
    >>> x = rt.zeros(rt.int32, [5])
    >>> rt.put(x, rt.create(rt.int32, [3], [1, 3, 0]), rt.create(rt.int32, [3], [10, 20, 30])); print(x)
    [30, 10, 0, 20, 0]
    """
    t = _t(t, "put")
    be = t._backend
    kt = _key_tensor(indices, be, "put")
    shape = t._data.shape
    if axis is not None:
        ax = normalize_axis(axis, len(shape), "put")
        idx = _mode_indices(be, kt, shape[ax], mode, "put")
        key = _along_key(be, shape, idx, ax, "put")
        sel = _adv_shape(key, be, "put")
        _do_scatter(be, t._data, key, _values_for(be, t, values, sel, "put"), "put")
        return
    idx = _mode_indices(be, kt, t._data.size, mode, "put")
    if idx.ndim != 1:
        idx = be.reshape(be.contiguous(idx), (idx.size,))
    v = value_handle(values, t._dtype, be, "put")
    if not isinstance(v, (builtins.int, builtins.float, builtins.complex)) and hasattr(v, "shape"):
        if v.size == idx.size:
            v = be.reshape(be.contiguous(v), (idx.size,))
        else:
            vs = check_value_shape(v.shape, kt._data.shape, "put")
            v = be.reshape(be.contiguous(be.expand(be.reshape(v, vs), kt._data.shape)), (idx.size,))
    if not shape:
        key: tuple = (idx,)
        h = be.reshape(t._data, (1,))
    else:
        key = _flat_coords(be, idx, shape) if len(shape) > 1 else (idx,)
        h = t._data
    _do_scatter(be, h, key, v, "put")


@attach()
def index_put(t: Tensor, indices: Sequence[Any], values: Any, mode: str = "raise") -> None:
    """Write ``values`` at the coordinates ``indices`` (one integer tensor per axis, broadcast together), in place.

    Duplicate coordinates: the last write wins.  ``mode`` as in :func:`take`, per axis.

    Raises:
        ValueError: if the number of index tensors differs from ``ndim``, ``values``
            does not broadcast, or an axis is empty while updates are requested.
        IndexError: for coordinates out of range with ``mode="raise"``, or
            index tensors that do not broadcast together.

    >>> import runetensor as rt
    >>> t = rt.zeros(rt.float32, [3, 3])
    >>> rows, cols = rt.create(rt.int32, [4], [0, 2, 1, 2]), rt.create(rt.int32, [4], [1, 0, 2, 2])
    >>> rt.index_put(t, [rows, cols], rt.arange_f(rt.float32, 0., 4., 1.)); print(t)
    [[0, 0, 0],
     [0, 0, 2],
     [1, 0, 3]]
    """
    t = _t(t, "index_put")
    be = t._backend
    shape = t._data.shape
    try:
        ilist = list(indices)
    except TypeError:
        raise TypeError(f"index_put: indices must be a sequence of index tensors, got {type(indices).__name__}") \
            from None
    if len(ilist) != len(shape):
        raise ValueError(f"index_put: {len(ilist)} index tensors for a tensor of rank {len(shape)} "
                         f"{shape_str(shape)}; expected one per axis")
    kts = [_key_tensor(k, be, "index_put") for k in ilist]
    try:
        bshape = broadcast_shapes(*(k._data.shape for k in kts), fname="index_put")
    except ValueError:
        raise IndexError(f"index_put: index tensors of shapes {', '.join(shape_str(k._data.shape) for k in kts)} "
                         f"cannot be broadcast together") from None
    nupd = 1
    for s in bshape:
        nupd *= s
    if nupd and any(s == 0 for s in shape):
        raise ValueError(f"index_put: {nupd} updates requested into a tensor with an empty axis "
                         f"{shape_str(shape)}")
    if not shape:
        write(be, t._data, values, t._dtype, "index_put")
        return
    key = tuple(_mode_indices(be, k, n, mode, "index_put") for k, n in zip(kts, shape))
    _do_scatter(be, t._data, key, _values_for(be, t, values, bshape, "index_put"), "index_put")


# ---------------------------------------------------------------------------
# selection
# ---------------------------------------------------------------------------
def _bool_tensor(c: Any, be: Any, fname: str, what: str = "condition") -> Tensor:
    kt = c if isinstance(c, Tensor) else as_tensor(c, fname, backend=be)
    if kt._dtype is not _bool:
        raise TypeError(f"{fname}: {what} must be a boolean tensor, got {kt._dtype}")
    return kt


@attach()
def compress(t: Tensor, condition: Any, axis: int | None = None) -> Tensor:
    """The slices of ``t`` along ``axis`` where ``condition`` (1-D bool) is true; flattened ``t`` if ``axis`` is None.

    Raises:
        ValueError: if the condition's length differs from the axis size or it is not 1-D.
        TypeError: if the condition is not boolean.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9])
    >>> print(rt.compress(x, rt.create(rt.bool, [3], [False, True, True]), axis=0))
    [[4, 5, 6],
     [7, 8, 9]]
    """
    t = _t(t, "compress")
    be = t._backend
    c = _bool_tensor(condition, be, "compress")
    if c._data.ndim != 1:
        raise ValueError(f"compress: condition must be 1-D, got shape {shape_str(c._data.shape)}")
    shape = t._data.shape
    if axis is None:
        n = t._data.size
        if c._data.shape[0] != n:
            raise ValueError(f"compress: condition has length {c._data.shape[0]} but the flattened tensor has {n} "
                             f"elements")
        idx = be.nonzero(c._data)[0]
        if len(shape) == 1:
            return wrap(be.gather(t._data, (idx,)), t._dtype, be)
        if not shape:
            return wrap(be.gather(be.reshape(t._data, (1,)), (idx,)), t._dtype, be)
        return wrap(be.gather(t._data, _flat_coords(be, idx, shape)), t._dtype, be)
    ax = normalize_axis(axis, len(shape), "compress")
    if c._data.shape[0] != shape[ax]:
        raise ValueError(f"compress: condition has length {c._data.shape[0]} but axis {ax} has size {shape[ax]}")
    idx = be.nonzero(c._data)[0]
    return wrap(be.gather(t._data, _full(shape[:ax]) + (idx,) + _full(shape[ax + 1:])), t._dtype, be)


@attach()
def extract(t: Tensor, condition: Any) -> Tensor:
    """The elements of ``t`` where ``condition`` (same shape, bool) is true, as a 1-D tensor in row-major order.

    Raises:
        ValueError: if the shapes differ.
        TypeError: if the condition is not boolean.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9])
    >>> print(rt.extract(x, x > 5))
    [6, 7, 8, 9]
    """
    t = _t(t, "extract")
    be = t._backend
    c = _bool_tensor(condition, be, "extract")
    if c._data.shape != t._data.shape:
        raise ValueError(f"extract: condition shape {shape_str(c._data.shape)} differs from the tensor's "
                         f"{shape_str(t._data.shape)}")
    if not t._data.shape:
        return wrap(be.gather(be.reshape(t._data, (1,)), (be.reshape(c._data, (1,)),)), t._dtype, be)
    return wrap(be.gather(t._data, be.nonzero(c._data)), t._dtype, be)


@attach()
def nonzero(t: Tensor) -> tuple[Tensor, ...]:
    """The coordinates of the non-zero (true) elements: one 1-D int32 tensor per axis, in row-major order.

    The coordinates are int32 as in the seed (int64 if a dimension exceeds int32's range).

    A 0-d tensor has no axes and gives ``()``.

    >>> import runetensor as rt
    >>> rows, cols = rt.nonzero(rt.create(rt.int32, [3, 3], [0, 1, 0, 2, 0, 3, 0, 0, 4]))
    >>> print(rows, cols)
    [0, 1, 1, 2] [1, 0, 2, 2]
    """
    t = _t(t, "nonzero")
    if t._data.ndim == 0:
        return ()
    return _nonzero(t, _coord_dtype(t._data.shape))


def _nonzero(t: Tensor, d: Any) -> tuple[Tensor, ...]:
    """``nonzero``'s coordinates as dtype ``d``: rt's int32 (``_coord_dtype``), array_api's int64."""
    be = t._backend
    return tuple(wrap(h if d is _int64 else be.cast(h, d), d, be) for h in be.nonzero(t._data))


def _coord_dtype(shape: tuple[int, ...]) -> Any:
    """int32 (the seed's index type) unless a dimension is too long for it."""
    return D.int32 if all(s <= 0x7FFFFFFF for s in shape) else _int64


@attach()
def argwhere(t: Tensor) -> Tensor:
    """The coordinates of the non-zero elements as an int32 tensor of shape ``(count, ndim)``
    (int64 if a dimension exceeds int32's range).

    >>> import runetensor as rt
    >>> print(rt.argwhere(rt.create(rt.int32, [2, 2], [0, 1, 2, 0])))
    [[0, 1],
     [1, 0]]
    """
    t = _t(t, "argwhere")
    be = t._backend
    h = t._data
    nd = h.ndim
    d = _coord_dtype(h.shape)
    if nd == 0:
        cnt = 1 if be.to_list(be.cast(h, _bool)) else 0
        return wrap(be.empty((cnt, 0), d), d, be)
    coords = be.nonzero(h)
    cnt = coords[0].shape[0]
    out = be.empty((cnt, nd), d)
    for j, c in enumerate(coords):
        be.assign(be.view_index(out, (_pyslice(0, cnt, 1), j)), c if d is _int64 else be.cast(c, d))
    return wrap(out, d, be)
