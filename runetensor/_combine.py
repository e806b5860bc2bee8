"""Combining and splitting: ``roll pad tile repeat concatenate stack vstack hstack dstack
column_stack append atleast_1d atleast_2d atleast_3d broadcast_arrays array_split split``.

The functions that build new tensors allocate the result once and write each
piece into a view of it (``view_index`` + ``assign``), or materialise a
broadcast view with one ``copy``; there is no loop over elements.  Inputs of
different dtypes are promoted together (``rt.promote_types``).
``broadcast_arrays``, ``array_split`` and ``split`` return views.
"""
from __future__ import annotations

from typing import Any, Sequence

from . import _dtypes as D
from ._tensor import Tensor, as_tensor, attach, common_backend, on_common, wrap
from ._validate import (alloc_error, as_int, as_shape, broadcast_shapes, normalize_axes, normalize_axis, shape_str,
                        store_value)
from ._indexing import _full
from ._views import _check_extent, ravel, value_handle

__all__ = ["roll", "pad", "tile", "repeat", "concatenate", "stack", "vstack", "hstack", "dstack",
           "column_stack", "append", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays", "array_split",
           "split"]


def _t(t: Any, fname: str) -> Tensor:
    return t if type(t) is Tensor else as_tensor(t, fname)


def _tensor_list(ts: Any, fname: str) -> list[Tensor]:
    if isinstance(ts, Tensor):
        raise TypeError(f"{fname}: expected a list of tensors, got a single Tensor")
    try:
        lst = list(ts)
    except TypeError:
        raise TypeError(f"{fname}: expected a list of tensors, got {type(ts).__name__}") from None
    if not lst:
        raise ValueError(f"{fname}: expected a non-empty list of tensors (at least one)")
    return on_common(fname, *[_t(x, fname) for x in lst])[1]


def _common_dtype(ts: list[Tensor]) -> Any:
    d = ts[0]._dtype
    for x in ts[1:]:
        if x._dtype is not d:
            d = D.promote_types(d, x._dtype)
    return d


def _concat_handles(ts: list[Tensor], axis: int, fname: str) -> Tensor:
    """Concatenate tensors of equal rank (>= 1) along a normalised ``axis``."""
    first = ts[0]._data.shape
    nd = len(first)
    total = 0
    for i, x in enumerate(ts):
        s = x._data.shape
        if len(s) != nd:
            raise ValueError(f"{fname}: tensor {i} has rank {len(s)} {shape_str(s)} but tensor 0 has rank {nd} "
                             f"{shape_str(first)}")
        if s[:axis] != first[:axis] or s[axis + 1:] != first[axis + 1:]:
            raise ValueError(f"{fname}: tensor {i} has shape {shape_str(s)}, incompatible with tensor 0's "
                             f"{shape_str(first)} (all dimensions except axis {axis} must match)")
        total += s[axis]
    return _join_along(ts, axis, total, _common_dtype(ts))


def _join_along(ts: list[Tensor], axis: int, total: int, d: Any) -> Tensor:
    """Copy ``ts`` (checked: equal shapes off ``axis``, sizes summing to ``total`` on it) side by side
    along ``axis`` into one new buffer of dtype ``d``."""
    be = ts[0]._backend
    srcs = [x._data if x._dtype is d else be.cast(x._data, d) for x in ts]
    return wrap(be.concatenate(srcs, axis), d, be)


@attach()
def concatenate(ts: Sequence[Tensor], axis: int | None = None) -> Tensor:
    """Join tensors along an existing ``axis``; with ``axis=None`` they are flattened first.

    Mixed dtypes are promoted.  The result is a new contiguous tensor.

    Raises:
        ValueError: for an empty list, different ranks, or shapes that differ off the axis
            (and for 0-d tensors with an explicit axis).
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> x1 = rt.create(rt.int32, [2, 2], [1, 2, 3, 4]); x2 = rt.create(rt.int32, [1, 2], [5, 6])
    >>> print(rt.concatenate([x1, x2], axis=0))
    [[1, 2],
     [3, 4],
     [5, 6]]
    >>> print(rt.concatenate([x1, x2]))
    [1, 2, 3, 4, 5, 6]
    """
    return _concatenate(ts, axis, "concatenate")


def _concatenate(ts: Any, axis: int | None, fname: str) -> Tensor:
    """``concatenate`` (rt) and ``concat`` (array_api): one implementation, ``fname`` in the errors."""
    lst = _tensor_list(ts, fname)
    if axis is None:
        flat = [ravel(x) for x in lst]
        return _concat_handles(flat, 0, fname)
    nd = lst[0]._data.ndim
    if nd == 0:
        raise ValueError(f"{fname}: 0-d (zero-dimensional) tensors cannot be concatenated along an axis; "
                         "use stack or axis=None")
    ax = normalize_axis(axis, nd, fname)
    return _concat_handles(lst, ax, fname)


@attach()
def stack(ts: Sequence[Tensor], axis: int = 0) -> Tensor:
    """Join tensors of identical shape along a new ``axis`` (result rank = input rank + 1).

    Raises:
        ValueError: for an empty list or different shapes.
        IndexError: if ``axis`` is outside ``[-(ndim + 1), ndim]``.

    >>> import runetensor as rt
    >>> x1 = rt.create(rt.int32, [2], [1, 2]); x2 = rt.create(rt.int32, [2], [3, 4])
    >>> print(rt.stack([x1, x2], axis=1))
    [[1, 3],
     [2, 4]]
    """
    return _stack(ts, axis, "stack")


def _stack(ts: Any, axis: int, fname: str) -> Tensor:
    lst = _tensor_list(ts, fname)
    first = lst[0]._data.shape
    for i, x in enumerate(lst):
        if x._data.shape != first:
            raise ValueError(f"{fname}: tensor {i} has shape {shape_str(x._data.shape)} but tensor 0 has "
                             f"{shape_str(first)}; all shapes must be identical")
    ax = normalize_axis(axis, len(first) + 1, fname)
    new_shape = first[:ax] + (1,) + first[ax:]
    views = [wrap(x._backend.reshape(x._data, new_shape), x._dtype, x._backend) for x in lst]
    return _concat_handles(views, ax, fname)


def _atleast(x: Tensor, nd: int, where: str) -> Tensor:
    s = x._data.shape
    if len(s) >= nd:
        return x
    if where in ("1d", "2d"):
        shp = (1,) * (nd - len(s)) + s
    else:  # 3d: () -> (1,1,1), (n,) -> (1,n,1), (m,n) -> (m,n,1)
        shp = {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)]
    return wrap(x._backend.reshape(x._data, shp), x._dtype, x._backend)


@attach()
def vstack(ts: Sequence[Tensor]) -> Tensor:
    """Stack tensors vertically: 1-D tensors become rows ``(1, n)``, then concatenate along axis 0.

    Raises:
        ValueError: for an empty list or incompatible shapes.

    >>> import runetensor as rt
    >>> print(rt.vstack([rt.create(rt.int32, [3], [1, 2, 3]), rt.create(rt.int32, [3], [4, 5, 6])]))
    [[1, 2, 3],
     [4, 5, 6]]
    """
    lst = [_atleast(x, 2, "2d") for x in _tensor_list(ts, "vstack")]
    return _concat_handles(lst, 0, "vstack")


@attach()
def hstack(ts: Sequence[Tensor]) -> Tensor:
    """Stack tensors horizontally: 1-D tensors concatenate directly, others along axis 1.

    Raises:
        ValueError: for an empty list or incompatible shapes.

    >>> import runetensor as rt
    >>> x1 = rt.create(rt.int32, [2, 2], [1, 2, 3, 4]); x2 = rt.create(rt.int32, [2, 1], [5, 6])
    >>> print(rt.hstack([x1, x2]))
    [[1, 2, 5],
     [3, 4, 6]]
    """
    lst = _tensor_list(ts, "hstack")
    lst = [x if x._data.ndim else wrap(x._backend.reshape(x._data, (1,)), x._dtype, x._backend) for x in lst]
    return _concat_handles(lst, 0 if lst[0]._data.ndim == 1 else 1, "hstack")


@attach()
def dstack(ts: Sequence[Tensor]) -> Tensor:
    """Stack tensors along the third axis after making them at least 3-D
    (``(n,) -> (1, n, 1)``, ``(m, n) -> (m, n, 1)``).

    Raises:
        ValueError: for an empty list or incompatible shapes.

    >>> import runetensor as rt
    >>> print(rt.dstack([rt.create(rt.int32, [2], [1, 2]), rt.create(rt.int32, [2], [3, 4])]))
    [[[1, 3],
      [2, 4]]]
    """
    lst = [_atleast(x, 3, "3d") for x in _tensor_list(ts, "dstack")]
    return _concat_handles(lst, 2, "dstack")


def column_stack(ts: Sequence[Any]) -> Tensor:
    """Stack 1-D tensors as the columns of a 2-D tensor; 2-D (and higher) tensors join along axis 1.

    0-d tensors become ``(1, 1)``, 1-D ``(n,)`` become columns ``(n, 1)``.

    Args:
        ts: a non-empty list of tensors (or array-likes).
    Returns:
        A new tensor of the promoted dtype.
    Raises:
        ValueError: for an empty list or shapes that differ off axis 1.

    >>> import runetensor as rt
    >>> print(rt.column_stack([rt.create(rt.int32, [3], [1, 2, 3]), rt.create(rt.int32, [3], [4, 5, 6])]))
    [[1, 4],
     [2, 5],
     [3, 6]]
    """
    fname = "column_stack"
    lst = _tensor_list(ts, fname)
    lst = [x if x._data.ndim >= 2 else
           wrap(x._backend.reshape(x._data, (x._data.shape[0] if x._data.ndim else 1, 1)), x._dtype, x._backend)
           for x in lst]
    return _concat_handles(lst, 1, fname)


def append(arr: Any, values: Any, axis: int | None = None) -> Tensor:
    """``values`` appended after ``arr``: both flattened (``axis=None``) or joined along ``axis``.

    Args:
        arr: a tensor (or array-like).
        values: a tensor (or array-like); with an axis, of ``arr``'s rank and shape off ``axis``.
        axis: the axis to append along; None flattens both first.
    Returns:
        A new tensor of the promoted dtype.
    Raises:
        ValueError: if the ranks differ or the shapes differ off ``axis``.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.append(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]), [5, 6]))
    [1, 2, 3, 4, 5, 6]
    >>> print(rt.append(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]), rt.create(rt.int32, [1, 2], [5, 6]), axis=0))
    [[1, 2],
     [3, 4],
     [5, 6]]
    """
    fname = "append"
    a, v = on_common(fname, _t(arr, fname), _t(values, fname))[1]
    if axis is None:
        return _concat_handles([ravel(a), ravel(v)], 0, fname)
    if a._data.ndim != v._data.ndim:
        raise ValueError(f"{fname}: arr has rank {a._data.ndim} (shape {shape_str(a._data.shape)}) but values has "
                         f"rank {v._data.ndim} (shape {shape_str(v._data.shape)}); with an axis they must match")
    if a._data.ndim == 0:
        raise ValueError(f"{fname}: 0-d tensors cannot be joined along an axis; use axis=None")
    return _concat_handles([a, v], normalize_axis(axis, a._data.ndim, fname), fname)


def _atleast_nd(arys: tuple[Any, ...], nd: int, fname: str) -> Any:
    out = []
    for x in arys:
        t = _t(x, fname)
        out.append(t if t._data.ndim >= nd else _atleast(t, nd, "1d" if nd == 1 else "2d" if nd == 2 else "3d"))
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*arys: Any) -> Any:
    """Each argument as a tensor of at least one dimension (0-d becomes ``(1,)``); a view, or the tensor itself.

    Args:
        *arys: tensors (or array-likes).
    Returns:
        One tensor for one argument, a tuple of tensors for several (an empty tuple for none).
    Raises:
        TypeError: if an argument cannot become a tensor.

    >>> import runetensor as rt
    >>> rt.atleast_1d(rt.scalar(rt.int32, 3)).shape
    (1,)
    >>> [t.shape for t in rt.atleast_1d(rt.zeros(rt.float32, [2]), 5.0)]
    [(2,), (1,)]
    """
    return _atleast_nd(arys, 1, "atleast_1d")


def atleast_2d(*arys: Any) -> Any:
    """Each argument as a tensor of at least two dimensions (``()`` to ``(1, 1)``, ``(n,)`` to ``(1, n)``).

    Args:
        *arys: tensors (or array-likes).
    Returns:
        One tensor (a view, or the tensor itself) for one argument, a tuple for several.
    Raises:
        TypeError: if an argument cannot become a tensor.

    >>> import runetensor as rt
    >>> rt.atleast_2d(rt.zeros(rt.float32, [3])).shape
    (1, 3)
    """
    return _atleast_nd(arys, 2, "atleast_2d")


def atleast_3d(*arys: Any) -> Any:
    """Each argument as a tensor of at least three dimensions (``()`` to ``(1, 1, 1)``, ``(n,)`` to
    ``(1, n, 1)``, ``(m, n)`` to ``(m, n, 1)``).

    Args:
        *arys: tensors (or array-likes).
    Returns:
        One tensor (a view, or the tensor itself) for one argument, a tuple for several.
    Raises:
        TypeError: if an argument cannot become a tensor.

    >>> import runetensor as rt
    >>> rt.atleast_3d(rt.zeros(rt.float32, [2, 3])).shape
    (2, 3, 1)
    """
    return _atleast_nd(arys, 3, "atleast_3d")


@attach()
def broadcast_arrays(ts: Sequence[Tensor]) -> list[Tensor]:
    """Views of all tensors broadcast to their common shape (a list).

    Raises:
        ValueError: for an empty list or incompatible shapes.

    >>> import runetensor as rt
    >>> [x.shape for x in rt.broadcast_arrays([rt.scalar(rt.float32, 5.), rt.ones(rt.float32, [2, 3, 4])])]
    [(2, 3, 4), (2, 3, 4)]
    """
    lst = _tensor_list(ts, "broadcast_arrays")
    shp = broadcast_shapes(*(x._data.shape for x in lst), fname="broadcast_arrays")
    return [wrap(x._backend.expand(x._data, shp), x._dtype, x._backend) for x in lst]


def _split_points(sections: Any, n: int, fname: str, equal: bool) -> list[tuple[int, int]]:
    if isinstance(sections, (int,)) and not isinstance(sections, bool) or hasattr(sections, "__index__") \
            and not isinstance(sections, (list, tuple)):
        k = as_int(sections, fname, "sections")
        if k <= 0:
            raise ValueError(f"{fname}: the number of sections must be positive, got {k}")
        if k > max(n, 1 << 16):
            raise ValueError(f"{fname}: {k} sections for an axis of size {n}: at most max(size, 65536) "
                             f"pieces can be made")
        if equal and n % k:
            raise ValueError(f"{fname}: an axis of size {n} cannot be split into {k} equal parts; use "
                             f"rt.array_split for unequal parts")
        q, r = divmod(n, k)
        out = []
        pos = 0
        for i in range(k):
            m = q + (1 if i < r else 0)
            out.append((pos, pos + m))
            pos += m
        return out
    try:
        idx = [as_int(i, fname, "split index") for i in sections]
    except TypeError as e:
        if "must be an integer" in str(e):
            raise
        raise TypeError(f"{fname}: sections must be an int or a list of indices, got "
                        f"{type(sections).__name__}") from None
    bounds = [0] + idx + [n]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        a2, b2, _ = slice(a, b).indices(n)
        out.append((a2, max(a2, b2)))
    return out


def _split(t: Tensor, sections: Any, axis: int, fname: str, equal: bool) -> list[Tensor]:
    shape = t._data.shape
    ax = normalize_axis(axis, len(shape), fname)
    pre = _full(shape[:ax])
    post = _full(shape[ax + 1:])
    be = t._backend
    return [wrap(be.view_index(t._data, pre + (slice(a, b, 1),) + post), t._dtype, be)
            for a, b in _split_points(sections, shape[ax], fname, equal)]


@attach()
def array_split(t: Tensor, sections: int | Sequence[int], axis: int = 0) -> list[Tensor]:
    """Split ``t`` along ``axis`` into views: ``sections`` an int ``n`` gives ``n`` parts as even as
    possible (the first ones one longer); a list ``[i1, i2, ...]`` splits at those indices.

    Raises:
        ValueError: if the count is not positive.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> x = rt.create(rt.int32, [5], [1, 2, 3, 4, 5])
    >>> print([str(p) for p in rt.array_split(x, 3, axis=0)])
    ['[1, 2]', '[3, 4]', '[5]']
    """
    return _split(_t(t, "array_split"), sections, axis, "array_split", False)


@attach()
def split(t: Tensor, sections: int | Sequence[int], axis: int = 0) -> list[Tensor]:
    """Split ``t`` along ``axis`` into ``sections`` equal views (or at a list of indices).

    Raises:
        ValueError: if the axis size is not divisible by ``sections``.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> [p.shape for p in rt.split(rt.zeros(rt.int32, [4, 2]), 2, axis=0)]
    [(2, 2), (2, 2)]
    """
    return _split(_t(t, "split"), sections, axis, "split", True)


# ---------------------------------------------------------------------------
# roll, pad, tile, repeat
# ---------------------------------------------------------------------------
def _roll1(be: Any, h: Any, shift: int, ax: int) -> Any:
    shape = h.shape
    n = shape[ax]
    if n == 0 or h.size == 0:
        return be.copy(h)
    s = shift % n
    if s == 0:
        return be.copy(h)
    pre = _full(shape[:ax])
    post = _full(shape[ax + 1:])
    return be.concatenate([be.view_index(h, pre + (slice(n - s, n, 1),) + post),
                           be.view_index(h, pre + (slice(0, n - s, 1),) + post)], ax)


@attach()
def roll(t: Tensor, shift: int | Sequence[int], axis: int | Sequence[int] | None = None) -> Tensor:
    """Shift elements along ``axis`` (of the flattened tensor if None), wrapping around.

    ``shift`` and ``axis`` may also be equal-length sequences (one shift per axis).

    Raises:
        IndexError: if ``axis`` is out of range.
        ValueError: if ``shift`` and ``axis`` sequences differ in length.

    >>> import runetensor as rt
    >>> print(rt.roll(rt.create(rt.int32, [5], [1, 2, 3, 4, 5]), 2))
    [4, 5, 1, 2, 3]
    >>> print(rt.roll(rt.create(rt.int32, [2, 2], [1, 2, 3, 4]), -1, axis=0))
    [[3, 4],
     [1, 2]]
    """
    return _roll(_t(t, "roll"), shift, axis, False)


def _roll(t: Tensor, shift: Any, axis: Any, add_shifts: bool) -> Tensor:
    """``roll``; ``add_shifts`` (array_api, as NumPy): the shifts of a repeated axis add up, and with
    ``axis=None`` a sequence of shifts is their sum (rt: a repeated axis or a shift sequence with
    ``axis=None`` is a ValueError)."""
    be = t._backend
    if axis is None:
        if isinstance(shift, (list, tuple)):
            if not add_shifts:
                raise ValueError("roll: with axis=None the shift must be a single int")
            shift = sum(as_int(s, "roll", "shift") for s in shift)
        s = as_int(shift, "roll", "shift")
        flat = ravel(t)._data
        r = _roll1(be, flat, s, 0) if flat.ndim else be.copy(flat)
        return wrap(be.reshape(r, t._data.shape), t._dtype, be)
    nd = t._data.ndim
    if not isinstance(axis, (list, tuple)):
        axes: tuple[int, ...] = (normalize_axis(axis, nd, "roll"),)
    elif add_shifts:
        axes = tuple(normalize_axis(a, nd, "roll") for a in axis)
    else:
        axes = normalize_axes(axis, nd, "roll")
    shifts = [as_int(s, "roll", "shift") for s in (shift if isinstance(shift, (list, tuple)) else [shift])]
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts for {len(axes)} axes (shift and axis must have the "
                         "same length)")
    h = t._data
    for s, a in zip(shifts, axes):
        h = _roll1(be, h, s, a)
    if h is t._data:
        h = be.copy(h)
    return wrap(h, t._dtype, be)


@attach()
def pad(t: Tensor, padding: Sequence[tuple[int, int]], value: Any) -> Tensor:
    """A new tensor with ``t`` surrounded by ``value``: ``padding`` holds ``(before, after)`` per dimension.

    Raises:
        ValueError: if ``padding`` does not have one non-negative pair per dimension, or the value does not fit.
        TypeError: for a complex value and a real dtype.

    >>> import runetensor as rt
    >>> print(rt.pad(rt.create(rt.float32, [2, 2], [1., 2., 3., 4.]), [(1, 1), (0, 1)], 0.))
    [[0, 0, 0],
     [1, 2, 0],
     [3, 4, 0],
     [0, 0, 0]]
    """
    t = _t(t, "pad")
    shape = t._data.shape
    try:
        pairs = list(padding)
    except TypeError:
        raise TypeError(f"pad: padding must be a sequence of (before, after) pairs, got {type(padding).__name__}") \
            from None
    if len(pairs) != len(shape):
        raise ValueError(f"pad: {len(pairs)} padding pairs for a tensor of rank {len(shape)} {shape_str(shape)}; "
                         f"expected one (before, after) per dimension")
    new = []
    key = []
    for i, (p, n) in enumerate(zip(pairs, shape)):
        try:
            a, b = p
        except (TypeError, ValueError):
            raise TypeError(f"pad: padding {i} must be a (before, after) pair, got {p!r}") from None
        a = as_int(a, "pad", "padding")
        b = as_int(b, "pad", "padding")
        if a < 0 or b < 0:
            raise ValueError(f"pad: padding {(a, b)} for dimension {i} is negative; expected values >= 0")
        new.append(a + n + b)
        key.append(slice(a, a + n, 1))
    shp = tuple(new)
    # a fill value of a higher transformation (batched under vmap, traced) computes there
    be = common_backend("pad", t, value) if isinstance(value, Tensor) else t._backend
    _check_extent(shp, t._dtype.itemsize, "pad")
    if not isinstance(value, (Tensor, list, tuple)) and getattr(value, "ndim", 0) == 0:
        # a scalar fill value is checked as full() checks it: no silent truncation of 2.5 or NaN
        value = store_value(value, t._dtype, "pad")
    v = value_handle(value, t._dtype, be, "pad")
    if hasattr(v, "shape") and v.shape != ():
        raise ValueError(f"pad: the fill value must be a scalar, got shape {shape_str(v.shape)}")
    try:
        out = be.pad(t._data, tuple((k.start, n - k.stop) for k, n in zip(key, shp)), v)
    except MemoryError:
        raise alloc_error("pad", shp, t._dtype) from None
    return wrap(out, t._dtype, be)


@attach()
def tile(t: Tensor, reps: int | Sequence[int]) -> Tensor:
    """``t`` repeated ``reps[i]`` times along each dimension (``reps`` longer than ``ndim`` adds leading axes).

    Raises:
        ValueError: if a repetition count is negative.

    >>> import runetensor as rt
    >>> print(rt.tile(rt.create(rt.int32, [1, 2], [1, 2]), [2, 3]))
    [[1, 2, 1, 2, 1, 2],
     [1, 2, 1, 2, 1, 2]]
    """
    t = _t(t, "tile")
    try:
        r = as_shape(reps, "tile")
    except ValueError as e:
        if "negative" in str(e):
            raise ValueError(f"tile: repetitions must be non-negative, got {tuple(reps)}") from None
        raise ValueError(str(e).replace("shape", "reps", 1)) from None
    shape = t._data.shape
    nd = max(len(r), len(shape))
    r = (1,) * (nd - len(r)) + r
    s = (1,) * (nd - len(shape)) + shape
    be = t._backend
    final = tuple(a * b for a, b in zip(r, s))
    _check_extent(final, t._dtype.itemsize, "tile")
    inter: list[int] = []
    exp: list[int] = []
    for a, b in zip(r, s):
        inter += [1, b]
        exp += [a, b]
    h = be.reshape(t._data, tuple(inter))
    h = be.copy(be.expand(h, tuple(exp)))
    return wrap(be.reshape(h, final), t._dtype, be)


@attach()
def repeat(t: Tensor, count: int, axis: int | None = None) -> Tensor:
    """Each element repeated ``count`` times along ``axis`` (of the flattened tensor if None).

    Raises:
        ValueError: if ``count`` is negative.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> print(rt.repeat(rt.create(rt.int32, [3], [1, 2, 3]), 2))
    [1, 1, 2, 2, 3, 3]
    """
    return _repeat(_t(t, "repeat"), count, axis)


def _repeat(t: Tensor, count: Any, axis: int | None) -> Tensor:
    """``repeat``; ``count`` may also be a 1-d integer tensor with one count per element along the
    axis (array_api's ``repeats``; rt's callers pass an int)."""
    be = t._backend
    if axis is None:
        h = ravel(t)._data
        ax = 0
    else:
        h = t._data
        ax = normalize_axis(axis, h.ndim, "repeat")
    if isinstance(count, Tensor):
        if count._dtype.kind not in "iu":
            raise TypeError(f"repeat: repeats must be integers, got {count._dtype}")
        if count.ndim > 1:
            raise ValueError(f"repeat: repeats must be an int or a 1-d array, got shape {count.shape}")
        if count.ndim == 1 and count._data.shape[0] != 1:
            return _repeat_counts(t._dtype, be, h, count, ax)
        count = int(count._scalar() if count.ndim == 0 else be.to_list(count._data)[0])
    c = as_int(count, "repeat", "count")
    if c < 0:
        raise ValueError(f"repeat: count must be non-negative (>= 0), got {c}")
    shape = h.shape
    final = shape[:ax] + (shape[ax] * c,) + shape[ax + 1:]
    _check_extent(final, t._dtype.itemsize, "repeat")
    h2 = be.reshape(h, shape[:ax + 1] + (1,) + shape[ax + 1:])
    h2 = be.copy(be.expand(h2, shape[:ax + 1] + (c,) + shape[ax + 1:]))
    return wrap(be.reshape(h2, final), t._dtype, be)


def _repeat_counts(d: Any, be: Any, h: Any, counts: Tensor, ax: int) -> Tensor:
    """Element ``i`` along ``ax`` repeated ``counts[i]`` times: one ``gather`` by the indices
    ``searchsorted(cumsum(counts), arange(total), "right")``."""
    n = h.shape[ax]
    if counts._data.shape[0] != n:
        raise ValueError(f"repeat: repeats has {counts._data.shape[0]} entries, expected {n} "
                         f"(the length of axis {ax})")
    r = be.cast(counts._data, D.int64)
    if n and be.value_range(r)[0] < 0:  # (value_range: a lazy backend computes the check)
        raise ValueError("repeat: repeats must be non-negative")
    ends = be.scan("cumsum", r, 0)
    total = int(be.to_list(ends)[-1]) if n else 0
    final = h.shape[:ax] + (total,) + h.shape[ax + 1:]
    _check_extent(final, d.itemsize, "repeat")
    idx = be.searchsorted(ends, be.arange(0, total, 1, D.int64), "right")
    key = tuple(idx if i == ax else slice(0, k, 1) for i, k in enumerate(h.shape))
    return wrap(be.gather(h, key), d, be)
