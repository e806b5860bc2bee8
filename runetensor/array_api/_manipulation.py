"""Manipulation functions of the Array API standard.

Views are returned where the standard allows them and the strides can express
them (``broadcast_to``, ``expand_dims``, ``flip``, ``permute_dims``,
``moveaxis``, ``squeeze``, ``unstack``, ``reshape`` with ``copy=None``);
``concat``, ``stack``, ``repeat``, ``roll`` and ``tile`` return new arrays.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

from .. import _dtypes as D
from .._combine import _join_along
from .._tensor import Tensor, wrap
from .._validate import MAX_RANK, as_int, as_shape, normalize_axes, normalize_axis
from ._common import arr, broadcast, expand, flat, index_range, promote, view

__all__ = ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis",
           "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"]


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """Broadcast arrays against each other (views with zero strides).

    Raises:
        ValueError: if the shapes are incompatible.

    >>> import runetensor.array_api as xp
    >>> a, b = xp.broadcast_arrays(xp.asarray([[1], [2]]), xp.asarray([3, 4, 5]))
    >>> a.shape, b.shape
    ((2, 3), (2, 3))
    """
    ts = [arr(a, "broadcast_arrays") for a in arrays]
    shape = broadcast([t._data.shape for t in ts], "broadcast_arrays")
    return [expand(t, shape) for t in ts]


def broadcast_to(x: Tensor, /, shape: Sequence[int]) -> Tensor:
    """A read-only-style view of ``x`` broadcast to ``shape``.

    Raises:
        ValueError: if ``x``'s shape does not broadcast to ``shape``.

    >>> import runetensor.array_api as xp
    >>> print(xp.broadcast_to(xp.asarray([1, 2]), (2, 2)))
    [[1, 2],
     [1, 2]]
    """
    x = arr(x, "broadcast_to")
    shape = as_shape(shape, "broadcast_to")
    try:
        got = broadcast([x._data.shape, shape], "broadcast_to")
    except ValueError:
        got = None
    if got != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    return expand(x, shape)


def _assemble(ts: list[Tensor], axis: int, d: Any, fname: str) -> Tensor:
    """Copy ``ts`` side by side along ``axis`` into one new buffer of dtype ``d``."""
    first = ts[0]._data.shape
    rest = first[:axis] + first[axis + 1:]
    total = 0
    for i, t in enumerate(ts):
        s = t._data.shape
        if len(s) != len(first) or s[:axis] + s[axis + 1:] != rest:
            raise ValueError(f"{fname}: array {i} has shape {s}, incompatible with {first} "
                             f"(all dimensions except axis {axis} must match)")
        total += s[axis]
    return _join_along(ts, axis, total, d)


def concat(arrays: Sequence[Tensor], /, *, axis: int | None = 0) -> Tensor:
    """Join arrays along an existing axis (``axis=None``: flatten them first).

    The result has the promoted dtype of the inputs.

    Raises:
        ValueError: for no arrays, or shapes that differ off the axis.
        IndexError: for an out-of-range axis.

    >>> import runetensor.array_api as xp
    >>> print(xp.concat([xp.asarray([[1, 2]]), xp.asarray([[3, 4]])], axis=0))
    [[1, 2],
     [3, 4]]
    >>> print(xp.concat([xp.asarray([[1, 2]]), xp.asarray([3])], axis=None))
    [1, 2, 3]
    """
    ts = [arr(a, "concat") for a in arrays]
    if not ts:
        raise ValueError("concat: expected at least one array")
    d = promote(ts, "concat")
    if axis is None:
        return _assemble([flat(t) for t in ts], 0, d, "concat")
    nd = ts[0].ndim
    if nd == 0:
        raise ValueError("concat: zero-dimensional arrays cannot be concatenated; use axis=None or stack")
    return _assemble(ts, normalize_axis(axis, nd, "concat"), d, "concat")


def stack(arrays: Sequence[Tensor], /, *, axis: int = 0) -> Tensor:
    """Join arrays of one shape along a new axis.

    Raises:
        ValueError: for no arrays or differing shapes.
        IndexError: for an out-of-range axis.

    >>> import runetensor.array_api as xp
    >>> print(xp.stack([xp.asarray([1, 2]), xp.asarray([3, 4])], axis=1))
    [[1, 3],
     [2, 4]]
    """
    ts = [arr(a, "stack") for a in arrays]
    if not ts:
        raise ValueError("stack: expected at least one array")
    s0 = ts[0]._data.shape
    for i, t in enumerate(ts):
        if t._data.shape != s0:
            raise ValueError(f"stack: array {i} has shape {t.shape}, expected {s0} (all shapes must match)")
    ax = normalize_axis(axis, len(s0) + 1, "stack")
    d = promote(ts, "stack")
    return _assemble([expand_dims(t, axis=ax) for t in ts], ax, d, "stack")


def expand_dims(x: Tensor, /, axis: int | Sequence[int] = 0) -> Tensor:
    """A view of ``x`` with a new axis of size 1 at position ``axis`` (in the result).

    Also accepts a tuple of positions (as the 2025.12 revision).

    Raises:
        IndexError: if ``axis`` is outside ``[-x.ndim - 1, x.ndim]``.

    >>> import runetensor.array_api as xp
    >>> xp.expand_dims(xp.zeros((2, 3)), axis=-1).shape
    (2, 3, 1)
    """
    x = arr(x, "expand_dims")
    if isinstance(axis, (tuple, list)):
        axes = set(normalize_axes(axis, x.ndim + len(axis), "expand_dims", "axis"))
    else:
        axes = {normalize_axis(axis, x.ndim + 1, "expand_dims")}
    n = x.ndim + len(axes)
    if n > MAX_RANK:
        raise ValueError(f"expand_dims: the result would have rank {n} > {MAX_RANK}")
    key = []
    it = iter(x._data.shape)
    for i in range(n):
        if i in axes:
            key.append(None)
        else:
            key.append(slice(0, next(it), 1))
    return wrap(x._backend.view_index(x._data, tuple(key)), x._dtype, x._backend)


def flip(x: Tensor, /, *, axis: int | Sequence[int] | None = None) -> Tensor:
    """A view of ``x`` with the order of elements reversed along ``axis`` (all axes if None).

    >>> import runetensor.array_api as xp
    >>> print(xp.flip(xp.asarray([[1, 2], [3, 4]]), axis=1))
    [[2, 1],
     [4, 3]]
    """
    x = arr(x, "flip")
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim, "flip", "axis")
    return wrap(x._backend.flip(x._data, axes), x._dtype, x._backend)


def permute_dims(x: Tensor, /, axes: Sequence[int]) -> Tensor:
    """A view of ``x`` with its axes permuted (negative axes count from the end).

    Raises:
        ValueError: if ``axes`` is not a permutation of ``x``'s axes.

    >>> import runetensor.array_api as xp
    >>> xp.permute_dims(xp.zeros((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    x = arr(x, "permute_dims")
    ax = normalize_axes(axes, x.ndim, "permute_dims", "axes")
    if len(ax) != x.ndim:
        raise ValueError(f"permute_dims: axes {tuple(axes)} is not a permutation of {x.ndim} axes")
    return wrap(x._backend.permute(x._data, ax), x._dtype, x._backend)


def moveaxis(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int], /) -> Tensor:
    """A view of ``x`` with axes ``source`` moved to positions ``destination``.

    Raises:
        ValueError: if source and destination differ in length or repeat axes.

    >>> import runetensor.array_api as xp
    >>> xp.moveaxis(xp.zeros((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    x = arr(x, "moveaxis")
    src = normalize_axes(source, x.ndim, "moveaxis", "source")
    dst = normalize_axes(destination, x.ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} differ in length")
    order = [a for a in range(x.ndim) if a not in src]
    for d_, s in sorted(zip(dst, src)):
        order.insert(d_, s)
    return wrap(x._backend.permute(x._data, tuple(order)), x._dtype, x._backend)


def reshape(x: Tensor, /, shape: Sequence[int], *, copy: bool | None = None) -> Tensor:
    """``x`` with a new shape (one entry may be -1: inferred).

    Args:
        copy: True always copies; False returns a view or raises ValueError;
            None returns a view when the strides allow it, else a copy.
    Raises:
        ValueError: if the sizes differ, more than one -1, or ``copy=False`` needs a copy.

    >>> import runetensor.array_api as xp
    >>> print(xp.reshape(xp.arange(6), (2, -1)))
    [[0, 1, 2],
     [3, 4, 5]]
    """
    x = arr(x, "reshape")
    shp = as_shape(shape, "reshape", allow_minus_one=True)
    size = x._data.size
    if shp.count(-1) > 1:
        raise ValueError(f"reshape: shape {shp} has more than one -1")
    if -1 in shp:
        rest = 1
        for s in shp:
            if s != -1:
                rest *= s
        if rest == 0 or size % rest:
            raise ValueError(f"reshape: cannot reshape {x.shape} (size {size}) into {shp}")
        shp = tuple(size // rest if s == -1 else s for s in shp)
    n = 1
    for s in shp:
        n *= s
    if n != size:
        raise ValueError(f"reshape: cannot reshape {x.shape} into {shp}: sizes {size} and {n} differ")
    be = x._backend
    if copy:
        return wrap(be.reshape(be.copy(x._data), shp), x._dtype, be)
    h = be.reshape(x._data, shp)
    if h is None:
        if copy is False:
            raise ValueError(f"reshape: cannot reshape {x.shape} into {shp} without a copy (copy=False)")
        h = be.reshape(be.copy(x._data), shp)
    return wrap(h, x._dtype, be)


def squeeze(x: Tensor, /, axis: int | Sequence[int]) -> Tensor:
    """A view of ``x`` without the size-1 axes ``axis``.

    Raises:
        ValueError: if an axis in ``axis`` does not have size 1.
        IndexError: for an out-of-range axis.

    >>> import runetensor.array_api as xp
    >>> xp.squeeze(xp.zeros((1, 3, 1)), axis=(0, 2)).shape
    (3,)
    """
    x = arr(x, "squeeze")
    axes = normalize_axes(axis, x.ndim, "squeeze", "axis")
    for a in axes:
        if x._data.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x._data.shape[a]}, expected 1")
    key = tuple(0 if i in axes else slice(0, n, 1) for i, n in enumerate(x._data.shape))
    return wrap(x._backend.view_index(x._data, key), x._dtype, x._backend)


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """Split ``x`` along ``axis`` into a tuple of views.

    Raises:
        ValueError: for a 0-d array.

    >>> import runetensor.array_api as xp
    >>> a, b = xp.unstack(xp.asarray([[1, 2], [3, 4]]), axis=1)
    >>> print(a)
    [1, 3]
    >>> print(b)
    [2, 4]
    """
    x = arr(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack: expected an array of rank >= 1, got a 0-d array")
    ax = normalize_axis(axis, x.ndim, "unstack")
    return tuple(view(x, [slice(None)] * ax + [i]) for i in range(x._data.shape[ax]))


def _gather_axis(x: Tensor, idx: Any, axis: int) -> Tensor:
    """``x`` indexed along ``axis`` by the 1-d int64 handle ``idx`` (other axes whole)."""
    key = tuple(idx if i == axis else slice(0, n, 1) for i, n in enumerate(x._data.shape))
    return wrap(x._backend.gather(x._data, key), x._dtype, x._backend)


def repeat(x: Tensor, repeats: int | Tensor, /, *, axis: int | None = None) -> Tensor:
    """Repeat each element of ``x`` ``repeats`` times along ``axis`` (``x`` flattened if None).

    Args:
        repeats: an int, or a 1-d integer array with one count per element along the axis
            (or a single count, which is broadcast).
    Raises:
        ValueError: for negative counts or a count array of the wrong length.

    >>> import runetensor.array_api as xp
    >>> print(xp.repeat(xp.asarray([1, 2, 3]), 2))
    [1, 1, 2, 2, 3, 3]
    >>> print(xp.repeat(xp.asarray([[1, 2], [3, 4]]), xp.asarray([1, 2]), axis=0))
    [[1, 2],
     [3, 4],
     [3, 4]]
    """
    x = arr(x, "repeat")
    if axis is None:
        x = flat(x)
        ax = 0
    else:
        ax = normalize_axis(axis, x.ndim, "repeat")
    be = x._backend
    n = x._data.shape[ax]
    if isinstance(repeats, Tensor):
        if repeats._dtype.kind not in "iu":
            raise TypeError(f"repeat: repeats must be integers, got {repeats._dtype}")
        if repeats.ndim > 1:
            raise ValueError(f"repeat: repeats must be an int or a 1-d array, got shape {repeats.shape}")
        if repeats.ndim == 0 or repeats._data.shape[0] == 1:
            repeats = int(repeats._scalar() if repeats.ndim == 0 else be.to_list(repeats._data)[0])
    if isinstance(repeats, Tensor):
        if repeats._data.shape[0] != n:
            raise ValueError(f"repeat: repeats has {repeats._data.shape[0]} entries, expected {n} "
                             f"(the length of axis {ax})")
        r = be.cast(repeats._data, D.int64)
        if n and builtins.bool(be.reduce("any", be.binary("lt", r, 0), (0,), False)):
            raise ValueError("repeat: repeats must be non-negative")
        ends = be.scan("cumsum", r, 0)
        total = int(be.to_list(ends)[-1]) if n else 0
        idx = be.searchsorted(ends, index_range(be, total), "right")
    else:
        k = as_int(repeats, "repeat", "repeats")
        if k < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {k}")
        idx = be.binary("floordiv", index_range(be, n * k), k) if k else index_range(be, 0)
    return _gather_axis(x, idx, ax)


def roll(x: Tensor, /, shift: int | Sequence[int], *, axis: int | Sequence[int] | None = None) -> Tensor:
    """Shift elements cyclically along ``axis`` (``x`` flattened and restored if None).

    Raises:
        ValueError: if ``shift`` and ``axis`` sequences differ in length.

    >>> import runetensor.array_api as xp
    >>> print(xp.roll(xp.asarray([1, 2, 3, 4]), 1))
    [4, 1, 2, 3]
    >>> print(xp.roll(xp.asarray([[1, 2], [3, 4]]), -1, axis=1))
    [[2, 1],
     [4, 3]]
    """
    x = arr(x, "roll")
    if axis is None:
        if isinstance(shift, (tuple, list)):
            shift = builtins.sum(as_int(s, "roll", "shift") for s in shift)
        f = flat(x)
        r = roll(f, shift, axis=0)
        return wrap(r._backend.reshape(r._data, x._data.shape), x._dtype, x._backend)
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    shifts = (shift,) if not isinstance(shift, (tuple, list)) else tuple(shift)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift} and axis {axis} must have the same length")
    norm = [normalize_axis(a, x.ndim, "roll") for a in axes]
    total: dict[int, int] = {}
    for a, s in zip(norm, shifts):
        total[a] = total.get(a, 0) + as_int(s, "roll", "shift")
    be = x._backend
    out = x
    for a, s in total.items():
        n = x._data.shape[a]
        if n == 0 or s % n == 0:
            continue
        idx = be.binary("pymod", be.binary("sub", index_range(be, n), s % n), n)
        out = _gather_axis(out, idx, a)
    if out is x:
        return wrap(be.copy(x._data), x._dtype, be)
    return out


def tile(x: Tensor, repetitions: Sequence[int], /) -> Tensor:
    """Repeat the whole of ``x`` ``repetitions[i]`` times along each axis.

    If ``repetitions`` is longer than ``x.ndim``, ``x`` gets leading axes of
    size 1; if shorter, it is padded with ones.

    Raises:
        ValueError: for negative repetitions.

    >>> import runetensor.array_api as xp
    >>> print(xp.tile(xp.asarray([1, 2]), (2, 2)))
    [[1, 2, 1, 2],
     [1, 2, 1, 2]]
    """
    x = arr(x, "tile")
    reps = tuple(as_int(r, "tile", "repetitions") for r in repetitions)
    for r in reps:
        if r < 0:
            raise ValueError(f"tile: repetitions must be non-negative, got {reps}")
    n = builtins.max(len(reps), x.ndim)
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - x.ndim) + x._data.shape
    be = x._backend
    inter = []
    big = []
    for r, s in zip(reps, shape):
        inter += [1, s]
        big += [r, s]
    h = be.reshape(x._data, tuple(inter))
    if h is None:
        h = be.reshape(be.copy(x._data), tuple(inter))
    h = be.copy(be.expand(h, tuple(big)))
    return wrap(be.reshape(h, tuple(r * s for r, s in zip(reps, shape))), x._dtype, be)
