"""Views and conversions: the seed's shape functions from ``reshape`` to ``swapaxes``,
plus ``rot90 shrink cast astype contiguous copy fill ifill blit``.

Every view function returns a tensor sharing memory with its input, built by a
single backend movement primitive (``reshape``, ``expand``, ``permute``,
``view_index``, ``flip``, ``as_strided``); none of them copies data.  ``reshape``
raises when the strides cannot express the new shape, rather than copying.
``flatten`` and ``ravel`` are the two documented exceptions: they return a view
when the layout allows and a contiguous copy otherwise.
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

from ._backend import _fastops
from ._dtypes import DType
from ._tensor import Tensor, as_level, as_tensor, attach, higher_backend, wrap
from ._validate import (MAX_RANK, as_dtype, as_int, as_shape, broadcast_shapes, normalize_axes, normalize_axis,
                        shape_str, store_value)

__all__ = ["reshape", "broadcast_to", "broadcasted", "expand", "flatten", "unflatten", "ravel",
           "squeeze", "unsqueeze", "squeeze_axis", "unsqueeze_axis", "expand_dims", "transpose",
           "flip", "rot90", "as_strided", "moveaxis", "swapaxes", "shrink", "cast", "astype", "contiguous",
           "copy", "fill", "ifill", "blit"]

#: the largest element count / extent (in bytes) a view may describe
_MAX_EXTENT = 1 << 62


def _t(t: Any, fname: str) -> Tensor:
    return t if type(t) is Tensor else as_tensor(t, fname)


def _check_extent(shape: tuple[int, ...], itemsize: int, fname: str) -> None:
    """Reject shapes whose size (counting zero dims as 1) would overflow the backend's index type."""
    n = max(itemsize, 1)
    for s in shape:
        if s > 1:
            n *= s
            if n > _MAX_EXTENT:
                raise ValueError(f"{fname}: shape {shape_str(shape)} is too large: its extent exceeds "
                                 f"2**62 bytes")


# ---------------------------------------------------------------------------
# reshape family
# ---------------------------------------------------------------------------
def _infer_shape(shape: Any, size: int, fname: str, src: tuple[int, ...]) -> tuple[int, ...]:
    shp = as_shape(shape, fname, allow_minus_one=True)
    if -1 in shp:
        if shp.count(-1) > 1:
            raise ValueError(f"{fname}: shape {shape_str(shp)} has more than one -1; at most one "
                             f"dimension can be inferred")
        known = 1
        for s in shp:
            if s != -1:
                known *= s
        if known == 0 or size % known:
            raise ValueError(f"{fname}: cannot reshape a tensor of shape {shape_str(src)} (size {size}) into "
                             f"{shape_str(shp)}: cannot infer the -1")
        shp = tuple(size // known if s == -1 else s for s in shp)
    n = 1
    for s in shp:
        n *= s
    if n != size:
        raise ValueError(f"{fname}: cannot reshape {shape_str(src)} into {shape_str(shp)}: sizes {size} "
                         f"and {n} differ")
    return shp


_creshape = _fastops.RESHAPE_VIEW
_ctranspose = _fastops.TRANSPOSE_VIEW


@attach()
def reshape(t: Tensor, shape: Sequence[int]) -> Tensor:
    """A view of ``t`` with a new shape (never a copy).

    Args:
        t: the tensor.
        shape: the new dimensions; at most one entry may be ``-1`` (inferred).
    Returns:
        A view sharing ``t``'s memory.
    Raises:
        ValueError: if the sizes differ, there is more than one ``-1``, or the
            strides of ``t`` cannot express the new shape without copying
            (call :func:`contiguous` first).

    >>> import runetensor as rt
    >>> print(rt.reshape(rt.create(rt.int32, [6], [1, 2, 3, 4, 5, 6]), [3, -1]))
    [[1, 2],
     [3, 4],
     [5, 6]]
    """
    if _creshape is not None:
        r = _creshape(t, shape, MAX_RANK)  # the fast case below in C (a NumPy tensor, a plain shape)
        if r is not None:
            return r
    if type(t) is not Tensor:
        t = as_tensor(t, "reshape")
    h = t._data
    ts = type(shape)
    if (ts is tuple or ts is list) and h.size and len(shape) <= MAX_RANK:
        # fast path: plain ints, at most one -1, non-empty tensor
        n = 1
        neg = -1
        for i, s in enumerate(shape):
            if type(s) is not int or s < 0:
                if s == -1 and neg < 0 and type(s) is int:
                    neg = i
                    continue
                break
            n *= s
        else:
            size = h.size
            if neg >= 0 and n and size % n == 0:
                shape = tuple(shape)
                shape = shape[:neg] + (size // n,) + shape[neg + 1:]
                n = size
            if n == size:
                r = t._backend.reshape(h, shape if ts is tuple else tuple(shape))
                if r is not None:
                    return wrap(r, t._dtype, t._backend)
    return _reshape(t, shape, False)


def _reshape(t: Tensor, shape: Any, copy: bool | None) -> Tensor:
    """``reshape``'s checks and result.  ``copy``: False (rt, and array_api's ``copy=False``) a view or a
    ValueError; None (array_api's default) a view when the strides allow it, else a copy; True a copy."""
    h = t._data
    be = t._backend
    shp = _infer_shape(shape, h.size, "reshape", h.shape)
    if h.size == 0:
        _check_extent(shp, t._dtype.itemsize, "reshape")
    r = None if copy else be.reshape(h, shp)
    if r is None:
        if copy is False:
            raise ValueError(f"reshape: cannot reshape a tensor of shape {shape_str(h.shape)} with strides "
                             f"{t.strides} into {shape_str(shp)} without copying (copy=False); call "
                             f"rt.contiguous first")
        r = be.reshape(be.copy(h), shp)
    return wrap(r, t._dtype, be)


def _broadcast_target(src: tuple[int, ...], shp: tuple[int, ...], fname: str) -> None:
    if len(shp) < len(src):
        raise ValueError(f"{fname}: cannot broadcast shape {shape_str(src)} to {shape_str(shp)}: the target "
                         f"has fewer dimensions")
    lead = len(shp) - len(src)
    for i, s in enumerate(src):
        if s != shp[lead + i] and s != 1:
            raise ValueError(f"{fname}: cannot broadcast shape {shape_str(src)} to {shape_str(shp)}: dimension "
                             f"{i} has size {s}, expected 1 or {shp[lead + i]}")


@attach()
def broadcast_to(t: Tensor, shape: Sequence[int]) -> Tensor:
    """A read-only view of ``t`` broadcast to ``shape`` (zero strides on broadcast axes).

    Raises:
        ValueError: if the shapes are not broadcast-compatible (aligned from the
            right, each source dimension must equal the target's or be 1).

    >>> import runetensor as rt
    >>> print(rt.broadcast_to(rt.create(rt.int32, [1, 3], [1, 2, 3]), [3, 3]))
    [[1, 2, 3],
     [1, 2, 3],
     [1, 2, 3]]
    """
    t = _t(t, "broadcast_to")
    shp = as_shape(shape, "broadcast_to")
    _broadcast_target(t._data.shape, shp, "broadcast_to")
    _check_extent(shp, 1, "broadcast_to")
    return wrap(t._backend.expand(t._data, shp), t._dtype, t._backend)


@attach()
def broadcasted(t1: Tensor, t2: Tensor, reverse: bool = False) -> tuple[Tensor, Tensor]:
    """Both tensors broadcast to their common shape, as views: ``(t1', t2')`` (or ``(t2', t1')`` if ``reverse``).

    Raises:
        ValueError: if the shapes are incompatible.

    >>> import runetensor as rt
    >>> a, b = rt.broadcasted(rt.ones(rt.float32, [3, 1]), rt.ones(rt.float32, [1, 5]))
    >>> a.shape, b.shape
    ((3, 5), (3, 5))
    """
    t1 = _t(t1, "broadcasted")
    t2 = _t(t2, "broadcasted")
    shp = broadcast_shapes(t1._data.shape, t2._data.shape, fname="broadcasted")
    a = wrap(t1._backend.expand(t1._data, shp), t1._dtype, t1._backend)
    b = wrap(t2._backend.expand(t2._data, shp), t2._dtype, t2._backend)
    return (b, a) if reverse else (a, b)


@attach()
def expand(t: Tensor, shape: Sequence[int]) -> Tensor:
    """Like :func:`broadcast_to`, but ``-1`` keeps the existing size of that dimension.

    New dimensions are added on the left (where ``-1`` is not allowed).

    Raises:
        ValueError: for incompatible sizes, or ``-1`` on a new leading dimension.

    >>> import runetensor as rt
    >>> rt.expand(rt.ones(rt.float32, [1, 4, 1]), [3, -1, 5]).shape
    (3, 4, 5)
    """
    t = _t(t, "expand")
    src = t._data.shape
    shp = as_shape(shape, "expand", allow_minus_one=True)
    if len(shp) < len(src):
        raise ValueError(f"expand: target {shape_str(shp)} has fewer dimensions than the tensor's "
                         f"{shape_str(src)}")
    lead = len(shp) - len(src)
    out = []
    for i, s in enumerate(shp):
        if s == -1:
            if i < lead:
                raise ValueError(f"expand: -1 at position {i} of {shape_str(shp)} is a new dimension; "
                                 f"-1 may only keep an existing one")
            s = src[i - lead]
        out.append(s)
    res = tuple(out)
    _broadcast_target(src, res, "expand")
    _check_extent(res, 1, "expand")
    return wrap(t._backend.expand(t._data, res), t._dtype, t._backend)


def _view_or_copy(t: Tensor, shp: tuple[int, ...]) -> Tensor:
    be = t._backend
    r = be.reshape(t._data, shp)
    if r is None:
        r = be.reshape(be.copy(t._data), shp)
    return wrap(r, t._dtype, be)


@attach()
def flatten(t: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Collapse dimensions ``start_dim..end_dim`` (inclusive) into one.

    A view when ``t``'s strides allow it, otherwise a contiguous copy.  A 0-d
    tensor flattens to shape ``(1,)``.

    Raises:
        IndexError: if a dimension is out of range.
        ValueError: if ``start_dim`` comes after ``end_dim``.

    >>> import runetensor as rt
    >>> rt.flatten(rt.zeros(rt.float32, [2, 3, 4, 5]), start_dim=1, end_dim=2).shape
    (2, 12, 5)
    """
    t = _t(t, "flatten")
    shape = t._data.shape
    if not shape:
        nd = 1
        s = normalize_axis(start_dim, nd, "flatten", "start_dim")
        e = normalize_axis(end_dim, nd, "flatten", "end_dim")
        return _view_or_copy(t, (1,))
    nd = len(shape)
    s = normalize_axis(start_dim, nd, "flatten", "start_dim")
    e = normalize_axis(end_dim, nd, "flatten", "end_dim")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} (axis {s}) comes after end_dim {end_dim} (axis {e})")
    n = 1
    for x in shape[s:e + 1]:
        n *= x
    return _view_or_copy(t, shape[:s] + (n,) + shape[e + 1:])


@attach()
def unflatten(t: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dimension ``dim`` into ``sizes`` (a view; at most one ``-1``).

    Raises:
        IndexError: if ``dim`` is out of range.
        ValueError: if the product of ``sizes`` differs from the dimension's size.

    >>> import runetensor as rt
    >>> rt.unflatten(rt.ones(rt.float32, [6, 5]), 0, [-1, 2]).shape
    (3, 2, 5)
    """
    t = _t(t, "unflatten")
    shape = t._data.shape
    d = normalize_axis(dim, len(shape), "unflatten", "dim")
    sub = _infer_shape(sizes, shape[d], "unflatten", (shape[d],))
    shp = shape[:d] + sub + shape[d + 1:]
    if len(shp) > MAX_RANK:
        raise ValueError(f"unflatten: the result would have rank {len(shp)}; at most {MAX_RANK} is supported")
    if t._data.size == 0:
        _check_extent(shp, t._dtype.itemsize, "unflatten")
    r = t._backend.reshape(t._data, shp)
    if r is None:  # splitting one axis is always expressible; guard against odd backends
        raise ValueError(f"unflatten: the backend cannot view {shape_str(shape)} as {shape_str(shp)}")
    return wrap(r, t._dtype, t._backend)


@attach()
def ravel(t: Tensor) -> Tensor:
    """``t`` as a contiguous 1-D tensor: a view if ``t`` is C-contiguous, else a copy.

    >>> import runetensor as rt
    >>> print(rt.ravel(rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])))
    [1, 2, 3, 4, 5, 6]
    """
    t = _t(t, "ravel")
    be = t._backend
    h = t._data
    if not be.is_c_contiguous(h):
        h = be.copy(h)
    return wrap(be.reshape(h, (h.size,)), t._dtype, be)


# ---------------------------------------------------------------------------
# adding and removing axes of size 1
# ---------------------------------------------------------------------------
def _reshape_view(t: Tensor, shp: tuple[int, ...], fname: str) -> Tensor:
    r = t._backend.reshape(t._data, shp)
    if r is None:  # only size-1 axes change: always expressible
        raise ValueError(f"{fname}: the backend cannot view {shape_str(t._data.shape)} as {shape_str(shp)}")
    return wrap(r, t._dtype, t._backend)


@attach()
def squeeze(t: Tensor, axes: Sequence[int] | int | None = None) -> Tensor:
    """A view without the dimensions of size 1 (only ``axes``, if given).

    Raises:
        IndexError: if an axis is out of range.
        ValueError: if a given axis does not have size 1.

    >>> import runetensor as rt
    >>> rt.squeeze(rt.ones(rt.float32, [1, 3, 1, 4])).shape
    (3, 4)
    >>> rt.squeeze(rt.ones(rt.float32, [3, 4, 1]), axes=[-1]).shape
    (3, 4)
    """
    t = _t(t, "squeeze")
    shape = t._data.shape
    if axes is None:
        shp = tuple(s for s in shape if s != 1)
    else:
        ax = normalize_axes(axes, len(shape), "squeeze")
        for a in ax:
            if shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} has size {shape[a]}, expected 1; only axes of size 1 can be "
                                 f"removed (shape {shape_str(shape)})")
        drop = set(ax)
        shp = tuple(s for i, s in enumerate(shape) if i not in drop)
    return _reshape_view(t, shp, "squeeze")


@attach()
def unsqueeze(t: Tensor, axes: Sequence[int] | int | None = None) -> Tensor:
    """A view with new dimensions of size 1 at ``axes`` (positions in the result).

    Raises:
        ValueError: if ``axes`` is missing or repeats a position.
        IndexError: if a position is outside ``[-(ndim + len(axes)), ndim + len(axes))``.

    >>> import runetensor as rt
    >>> rt.unsqueeze(rt.create(rt.float32, [3], [1., 2., 3.]), axes=[0, 2]).shape
    (1, 3, 1)
    """
    t = _t(t, "unsqueeze")
    return _unsqueeze(t, axes, "unsqueeze")


def _unsqueeze(t: Tensor, axes: Any, fname: str) -> Tensor:
    if axes is None:
        raise ValueError(f"{fname}: axes must be given, e.g. {fname}(t, axes=[0])")
    if isinstance(axes, (int,)) or hasattr(axes, "__index__") and not isinstance(axes, (list, tuple)):
        axes = (axes,)
    try:
        items = list(axes)
    except TypeError:
        raise TypeError(f"{fname}: axes must be an int or a sequence of ints, got {type(axes).__name__}") from None
    shape = t._data.shape
    nd = len(shape) + len(items)
    if nd > MAX_RANK:
        raise ValueError(f"{fname}: the result would have rank {nd}; at most {MAX_RANK} is supported")
    ax = normalize_axes(items, nd, fname)
    new = set(ax)
    it = iter(shape)
    shp = tuple(1 if i in new else next(it) for i in range(nd))
    return _reshape_view(t, shp, fname)


@attach()
def squeeze_axis(t: Tensor, axis: int) -> Tensor:
    """A view without dimension ``axis``, which must have size 1.

    Raises:
        IndexError: if ``axis`` is out of range.
        ValueError: if its size is not 1.

    >>> import runetensor as rt
    >>> rt.squeeze_axis(rt.ones(rt.float32, [2, 1, 3]), 1).shape
    (2, 3)
    """
    return squeeze(_t(t, "squeeze_axis"), [as_int(axis, "squeeze_axis", "axis")])


@attach()
def unsqueeze_axis(t: Tensor, axis: int) -> Tensor:
    """A view with a new dimension of size 1 at ``axis``.

    Raises:
        IndexError: if ``axis`` is outside ``[-(ndim + 1), ndim]``.

    >>> import runetensor as rt
    >>> rt.unsqueeze_axis(rt.ones(rt.float32, [2, 3]), -1).shape
    (2, 3, 1)
    """
    return _unsqueeze(_t(t, "unsqueeze_axis"), [as_int(axis, "unsqueeze_axis", "axis")], "unsqueeze_axis")


@attach()
def expand_dims(t: Tensor, axes: Sequence[int] | int) -> Tensor:
    """Synonym for :func:`unsqueeze`.

    >>> import runetensor as rt
    >>> rt.expand_dims(rt.ones(rt.float32, [3]), [0]).shape
    (1, 3)
    """
    return _unsqueeze(_t(t, "expand_dims"), axes, "expand_dims")


# ---------------------------------------------------------------------------
# permutations and flips
# ---------------------------------------------------------------------------
_REVERSED = [tuple(range(n - 1, -1, -1)) for n in range(MAX_RANK + 1)]
_RANGES = [list(range(n)) for n in range(MAX_RANK + 1)]


@attach()
def transpose(t: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """A view with permuted dimensions (reversed by default).

    Raises:
        ValueError: if ``axes`` is not a permutation of ``0..ndim-1``.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.transpose(rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])))
    [[1, 4],
     [2, 5],
     [3, 6]]
    >>> rt.transpose(rt.zeros(rt.float32, [2, 3, 4]), axes=[2, 0, 1]).shape
    (4, 2, 3)
    """
    if axes is None and _ctranspose is not None:
        r = _ctranspose(t)  # a NumPy tensor's reversed axes in C
        if r is not None:
            return r
    if type(t) is not Tensor:
        t = as_tensor(t, "transpose")
    h = t._data
    if axes is None:
        perm = _REVERSED[h.ndim]
    elif (type(axes) is tuple or type(axes) is list) and len(axes) == h.ndim and \
            builtins.all(type(a) is int for a in axes) and sorted(axes) == _RANGES[h.ndim]:
        perm = tuple(axes)
    else:
        perm = normalize_axes(axes, h.ndim, "transpose")
        if len(perm) != h.ndim:
            raise ValueError(f"transpose: axes {tuple(axes)} must be a permutation of 0..{h.ndim - 1} "
                             f"(one entry per dimension of shape {shape_str(h.shape)})")
    return wrap(t._backend.permute(h, perm), t._dtype, t._backend)


@attach()
def flip(t: Tensor, axes: Sequence[int] | int | None = None) -> Tensor:
    """A view with the order of elements reversed along ``axes`` (all by default).

    Raises:
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.flip(rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6]), axes=[1]))
    [[3, 2, 1],
     [6, 5, 4]]
    """
    t = _t(t, "flip")
    nd = t._data.ndim
    ax = tuple(range(nd)) if axes is None else normalize_axes(axes, nd, "flip")
    return wrap(t._backend.flip(t._data, ax), t._dtype, t._backend)


def rot90(m: Any, k: int = 1, axes: Sequence[int] = (0, 1)) -> Tensor:
    """A view rotated by 90 degrees ``k`` times in the plane of ``axes``, from the first axis toward the second.

    Args:
        m: a tensor of at least two dimensions.
        k: the number of quarter turns (any integer; negative turns the other way).
        axes: two different axes spanning the plane.
    Returns:
        A view of ``m`` (sharing its memory).
    Raises:
        TypeError: if ``k`` is not an integer.
        ValueError: if ``m`` has fewer than two dimensions or ``axes`` is not two different axes.
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> print(rt.rot90(rt.create(rt.int32, [2, 2], [1, 2, 3, 4])))
    [[2, 4],
     [1, 3]]
    """
    fname = "rot90"
    m = _t(m, fname)
    k = as_int(k, fname, "k")
    try:
        ax = list(axes)
    except TypeError:
        raise TypeError(f"{fname}: axes must be a pair of axes, got {axes!r}") from None
    if len(ax) != 2:
        raise ValueError(f"{fname}: axes must be two axes, got {axes!r}")
    nd = m._data.ndim
    if nd < 2:
        raise ValueError(f"{fname}: expected a tensor of at least 2 dimensions, got shape {shape_str(m._data.shape)}")
    a0 = normalize_axis(ax[0], nd, fname, "axes[0]")
    a1 = normalize_axis(ax[1], nd, fname, "axes[1]")
    if a0 == a1:
        raise ValueError(f"{fname}: axes {tuple(axes)} name the same axis twice; give two different axes")
    k %= 4
    if k == 0:
        return flip(m, ())
    if k == 2:
        return flip(m, (a0, a1))
    perm = list(range(nd))
    perm[a0], perm[a1] = a1, a0
    if k == 1:
        return transpose(flip(m, (a1,)), perm)
    return flip(transpose(m, perm), (a1,))


@attach()
def moveaxis(t: Tensor, src: int | Sequence[int], dst: int | Sequence[int]) -> Tensor:
    """A view with dimension(s) ``src`` moved to position(s) ``dst``, the others keeping their order.

    Raises:
        IndexError: if an axis is out of range.
        ValueError: if ``src`` and ``dst`` have different lengths or repeat axes.

    >>> import runetensor as rt
    >>> rt.moveaxis(rt.zeros(rt.float32, [2, 3, 4]), 0, -1).shape
    (3, 4, 2)
    """
    t = _t(t, "moveaxis")
    nd = t._data.ndim
    s = normalize_axes(src, nd, "moveaxis", "src")
    d = normalize_axes(dst, nd, "moveaxis", "dst")
    if len(s) != len(d):
        raise ValueError(f"moveaxis: src {src!r} and dst {dst!r} differ in length; they must have the same "
                         f"number of axes")
    rest = [a for a in range(nd) if a not in s]
    perm: list[int] = [-1] * nd
    for a, b in sorted(zip(d, s)):
        perm[a] = b
    it = iter(rest)
    perm = [p if p >= 0 else next(it) for p in perm]
    return wrap(t._backend.permute(t._data, tuple(perm)), t._dtype, t._backend)


@attach()
def swapaxes(t: Tensor, axis1: int, axis2: int) -> Tensor:
    """A view with dimensions ``axis1`` and ``axis2`` exchanged.

    Raises:
        IndexError: if an axis is out of range.

    >>> import runetensor as rt
    >>> rt.swapaxes(rt.zeros(rt.float32, [2, 3, 4]), 0, 2).shape
    (4, 3, 2)
    """
    t = _t(t, "swapaxes")
    nd = t._data.ndim
    a = normalize_axis(axis1, nd, "swapaxes", "axis1")
    b = normalize_axis(axis2, nd, "swapaxes", "axis2")
    perm = list(range(nd))
    perm[a], perm[b] = b, a
    return wrap(t._backend.permute(t._data, tuple(perm)), t._dtype, t._backend)


# ---------------------------------------------------------------------------
# as_strided and shrink
# ---------------------------------------------------------------------------
@attach()
def as_strided(t: Tensor, shape: Sequence[int], strides: Sequence[int], offset: int) -> Tensor:
    """A view of ``t``'s underlying buffer with any shape, strides and offset.

    Args:
        t: any tensor; only its buffer matters.
        shape: dimension sizes (non-negative).
        strides: one stride per dimension, in ELEMENTS (negative and zero allowed).
        offset: element offset of the view's first element from the START OF THE
            BUFFER (not from ``t``'s own offset; see :func:`rt.offset`).  The buffer is
            the whole items on the grid through ``t``'s first element: for a view at
            an odd byte offset of its memory (e.g. NumPy's ``frombuffer(..., offset=1)``
            shared zero-copy) a partial item at either end does not count.
    Returns:
        A view sharing memory with ``t``.
    Raises:
        ValueError: if the shape is negative or too large, ``strides`` has the
            wrong length, or any reachable element lies outside the buffer.
        TypeError: if an entry is not an integer.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [8], [0., 1., 2., 3., 4., 5., 6., 7.])
    >>> print(rt.as_strided(x, [3, 3], [2, 1], 0))
    [[0, 1, 2],
     [2, 3, 4],
     [4, 5, 6]]
    """
    t = _t(t, "as_strided")
    shp = as_shape(shape, "as_strided")
    if isinstance(strides, (int, builtins.bool)) or not hasattr(strides, "__iter__"):
        raise TypeError(f"as_strided: strides must be a sequence of integers, got {type(strides).__name__}")
    st = tuple(as_int(s, "as_strided", "stride") for s in strides)
    if len(st) != len(shp):
        raise ValueError(f"as_strided: {len(st)} strides {st} for a shape of rank {len(shp)} {shape_str(shp)}")
    off = as_int(offset, "as_strided", "offset")
    be = t._backend
    isz = max(t._dtype.itemsize, 1)
    _check_extent(shp, isz, "as_strided")
    for s in st:
        if abs(s) * isz > _MAX_EXTENT:
            raise ValueError(f"as_strided: stride {s} is too large (at most 2**62 bytes)")
    nbuf = be.buffer_size(t._data)
    if any(s == 0 for s in shp):
        if not 0 <= off <= nbuf:
            raise ValueError(f"as_strided: offset {off} is outside the buffer of {nbuf} elements")
    else:
        lo = hi = off
        for n, s in zip(shp, st):
            ext = (n - 1) * s
            if ext < 0:
                lo += ext
            else:
                hi += ext
        if lo < 0 or hi >= nbuf:
            raise ValueError(f"as_strided: the view (shape {shape_str(shp)}, strides {st}, offset {off}) reaches "
                             f"elements {lo}..{hi}, outside the buffer of {nbuf} elements (0..{nbuf - 1})")
    return wrap(be.as_strided(t._data, shp, st, off), t._dtype, be)


@attach()
def shrink(t: Tensor, ranges: Sequence[tuple[int, int]]) -> Tensor:
    """A view of ``t[start:stop]`` along every dimension, one ``(start, stop)`` pair per dimension.

    Raises:
        ValueError: if the number of pairs differs from ``ndim`` or ``start > stop``.
        IndexError: if a bound lies outside ``[0, dim]``.

    >>> import runetensor as rt
    >>> print(rt.shrink(rt.create(rt.int32, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9]), [(1, 3), (0, 2)]))
    [[4, 5],
     [7, 8]]
    """
    t = _t(t, "shrink")
    shape = t._data.shape
    try:
        pairs = list(ranges)
    except TypeError:
        raise TypeError(f"shrink: ranges must be a sequence of (start, stop) pairs, got {type(ranges).__name__}") \
            from None
    if len(pairs) != len(shape):
        raise ValueError(f"shrink: {len(pairs)} ranges for a tensor of rank {len(shape)} {shape_str(shape)}; "
                         f"expected one (start, stop) per dimension")
    key = []
    for i, (p, n) in enumerate(zip(pairs, shape)):
        try:
            a, b = p
        except (TypeError, ValueError):
            raise TypeError(f"shrink: range {i} must be a (start, stop) pair, got {p!r}") from None
        a = as_int(a, "shrink", "start")
        b = as_int(b, "shrink", "stop")
        if not (0 <= a <= n and 0 <= b <= n):
            raise IndexError(f"shrink: range {(a, b)} for dimension {i} is outside [0, {n}]")
        if a > b:
            raise ValueError(f"shrink: range {(a, b)} for dimension {i} has start > stop")
        key.append(slice(a, b, 1))
    return wrap(t._backend.view_index(t._data, tuple(key)), t._dtype, t._backend)


# ---------------------------------------------------------------------------
# conversions and fills
# ---------------------------------------------------------------------------
@attach()
def cast(t: Tensor, dtype: Any) -> Tensor:
    """A copy of ``t`` converted to ``dtype`` (C casting: floats to ints truncate, NaN/inf become 0).

    Raises:
        TypeError: if ``dtype`` is not a runetensor dtype.

    >>> import runetensor as rt
    >>> print(rt.cast(rt.create(rt.float32, [3], [1.5, 2.7, 3.1]), rt.int32))
    [1, 2, 3]
    """
    t = _t(t, "cast")
    d = as_dtype(dtype, "cast")
    return wrap(t._backend.cast(t._data, d), d, t._backend)


@attach()
def astype(t: Tensor, dtype: Any) -> Tensor:
    """Synonym for :func:`cast`.

    >>> import runetensor as rt
    >>> rt.astype(rt.ones(rt.int8, [2]), rt.float16).dtype
    rt.float16
    """
    t = _t(t, "astype")
    d = as_dtype(dtype, "astype")
    return wrap(t._backend.cast(t._data, d), d, t._backend)


@attach()
def contiguous(t: Tensor) -> Tensor:
    """``t`` itself if it is C-contiguous, else a C-contiguous copy.

    >>> import runetensor as rt
    >>> rt.is_c_contiguous(rt.contiguous(rt.transpose(rt.ones(rt.float32, [3, 4]))))
    True
    """
    t = _t(t, "contiguous")
    if t._backend.is_c_contiguous(t._data):
        return t
    return wrap(t._backend.copy(t._data), t._dtype, t._backend)


@attach()
def copy(t: Tensor) -> Tensor:
    """A fresh C-contiguous copy of ``t``.

    >>> import runetensor as rt
    >>> x = rt.create(rt.float32, [3], [1., 2., 3.]); y = rt.copy(x); rt.set_item(y, [0], 999.)
    >>> print(x, y)
    [1, 2, 3] [999, 2, 3]
    """
    t = _t(t, "copy")
    return wrap(t._backend.copy(t._data), t._dtype, t._backend)


def value_handle(value: Any, d: DType, be: Any, fname: str) -> Any:
    """``value`` (a Python scalar, a tensor or nested lists) as something ``be.assign`` accepts for dtype ``d``.

    Python and NumPy scalars, and the numbers in nested lists, are checked as ``rt.full``
    checks its value (``_validate.store_value``): an integer dtype takes integers and integral
    floats (``ValueError`` for 2.5, NaN, infinity or a value out of range, never a silent
    truncation), bool takes True/False/0/1.  Tensors are converted to ``d`` as ``astype``
    converts (C casting).  Raises ``TypeError`` for complex values into a real dtype.
    """
    k = d.kind
    tv = type(value)
    if k == "O":
        if isinstance(value, Tensor):
            return value._data if value._dtype is d else be.cast(value._data, d)
        return value
    if tv is builtins.float:
        if k in "fc":
            return value
        return store_value(value, d, fname)  # 2.0 -> 2; 2.5, NaN and inf raise
    if tv is builtins.int:
        if k in "iu":
            lo, hi = (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1) if k == "i" else (0, (1 << d.bits) - 1)
            if not lo <= value <= hi:
                raise ValueError(f"{fname}: value {value} is out of range for {d} (expected {lo} <= value <= {hi})")
            return value
        if k == "b":
            return store_value(value, d, fname)  # 0 and 1 only
        try:
            return builtins.float(value) if k == "f" else builtins.complex(value)
        except OverflowError:
            raise ValueError(f"{fname}: value {value} is too large for {d}") from None
    if tv is builtins.bool:
        return value
    if tv is builtins.complex:
        if k != "c":
            raise TypeError(f"{fname}: complex value {value!r} cannot be stored in {d}")
        return value
    if not isinstance(value, Tensor):
        if hasattr(value, "__index__") and not hasattr(value, "shape"):
            return value_handle(value.__index__(), d, be, fname)
        if k in "biu":
            if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # a NumPy scalar or 0-d array
                return store_value(value.item(), d, fname)
            if isinstance(value, (list, tuple)):  # the numbers checked as create() checks its data
                todo = [value]
                while todo:
                    for v in todo.pop():
                        if isinstance(v, (list, tuple)):
                            todo.append(v)
                        elif not isinstance(v, Tensor):
                            store_value(v.item() if getattr(v, "ndim", None) == 0 and hasattr(v, "item") else v,
                                        d, fname)
                value = as_tensor(value, fname, dtype=d, backend=be)
        value = as_tensor(value, fname, backend=be)
    if value._backend is not be:
        if higher_backend(be, value._backend, fname) is be:
            value = wrap(value._data, value._dtype, be)  # a lower level's value: a constant here
        else:
            value = as_level(value, be, fname)  # a constant of a transformation, written outside it
    vd = value._dtype
    if vd is d:
        return value._data
    if vd.is_complex and k != "c":
        raise TypeError(f"{fname}: complex values ({vd}) cannot be stored in {d}; take rt.real first")
    if vd.kind == "O":
        raise TypeError(f"{fname}: object values cannot be stored in {d}")
    return be.cast(value._data, d)


def check_value_shape(vshape: tuple[int, ...], target: tuple[int, ...], fname: str) -> tuple[int, ...]:
    """The value shape with surplus leading 1s removed, after checking it broadcasts to ``target``.

    Raises:
        ValueError: if a value of shape ``vshape`` cannot be broadcast into ``target``.
    """
    v = vshape
    while len(v) > len(target) and v[0] == 1:
        v = v[1:]
    ok = len(v) <= len(target)
    if ok:
        lead = len(target) - len(v)
        for i, s in enumerate(v):
            if s != 1 and s != target[lead + i]:
                ok = False
                break
    if not ok:
        raise ValueError(f"{fname}: cannot broadcast a value of shape {shape_str(vshape)} into shape "
                         f"{shape_str(target)}")
    return v


def write(be: Any, dst: Any, value: Any, d: DType, fname: str) -> None:
    """Assign ``value`` into the handle ``dst`` (broadcasting), with runetensor's checks and messages."""
    v = value_handle(value, d, be, fname)
    if hasattr(v, "shape") and hasattr(v, "ndim") and not isinstance(v, (builtins.int, builtins.float,
                                                                         builtins.complex)):
        vs = check_value_shape(v.shape, dst.shape, fname)
        if vs != v.shape:
            v = be.reshape(v, vs)
            if v is None:  # only leading 1s were dropped: always viewable
                raise ValueError(f"{fname}: cannot view the value as shape {shape_str(vs)}")
    try:
        be.assign(dst, v)
    except ValueError as e:
        hint = "; broadcast views are read-only, copy them first" if "read-only" in str(e) else ""
        raise ValueError(f"{fname}: cannot write into this tensor ({e}){hint}") from None


@attach()
def fill(t: Tensor, value: Any) -> Tensor:
    """A new tensor with ``t``'s shape and dtype filled with ``value`` (``t`` is unchanged).

    Raises:
        ValueError: if an integer value does not fit the dtype.
        TypeError: for a complex value and a real dtype.

    >>> import runetensor as rt
    >>> print(rt.fill(rt.zeros(rt.int32, [3]), 7))
    [7, 7, 7]
    """
    t = _t(t, "fill")
    be = t._backend
    out = be.empty(t._data.shape, t._dtype)
    write(be, out, value, t._dtype, "fill")
    return wrap(out, t._dtype, be)


@attach()
def ifill(t: Tensor, value: Any) -> Tensor:
    """Set every element of ``t`` to ``value`` in place (writes land in ``t``'s base); returns ``t``.

    Raises:
        ValueError: if an integer value does not fit, or ``t`` is a read-only broadcast view.
        TypeError: for a complex value and a real dtype.

    >>> import runetensor as rt
    >>> x = rt.zeros(rt.float32, [2, 3]); _ = rt.ifill(x[0], 5.); print(x)
    [[5, 5, 5],
     [0, 0, 0]]
    """
    t = _t(t, "ifill")
    write(t._backend, t._data, value, t._dtype, "ifill")
    return t


@attach()
def blit(src: Tensor, dst: Tensor) -> None:
    """Copy ``src`` into ``dst`` in place (shapes must match; values are cast to ``dst``'s dtype).

    Raises:
        ValueError: if the shapes differ.
        TypeError: for complex values into a real ``dst``.

    >>> import runetensor as rt
    >>> dst = rt.zeros(rt.float32, [2, 2]); rt.blit(rt.ones(rt.float32, [2, 2]), dst); print(dst)
    [[1, 1],
     [1, 1]]
    """
    dst = _t(dst, "blit")
    src = src if isinstance(src, Tensor) else as_tensor(src, "blit", backend=dst._backend)
    if src._data.shape != dst._data.shape:
        raise ValueError(f"blit: source shape {shape_str(src._data.shape)} differs from destination shape "
                         f"{shape_str(dst._data.shape)}")
    write(dst._backend, dst._data, src, dst._dtype, "blit")
