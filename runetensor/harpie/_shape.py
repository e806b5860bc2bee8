"""harpie's dimension functions: take/drop/select/slice..., and the shape manipulations.

Functions harpie builds on ``backpermute`` return views (no copy) wherever
the strided model can express them: ``take drop select slice takes drops
indexes slices heads lasts tails inits reorder transpose reverses squeeze
elongate inflate repeat rerank flat reshape concats cut cut_suffix`` (the
last few copy only when the strides cannot express the new shape).
"""
from __future__ import annotations

import builtins
from typing import Any, Sequence

from .. import _dtypes as D
from .._tensor import Tensor, wrap
from .._validate import MAX_RANK, alloc_error, check_alloc
from ._base import (UnsafeArray, arr, assign, dims_arg, empty, expand_to, from_values, full,
                    full_key, int_arg, ints_arg, permute, reshape, shape_arg, size_of, view)

__all__ = [
    "take", "drop", "select", "insert", "delete", "append", "prepend", "concatenate", "couple", "slice",
    "rotate", "takes", "drops", "indexes", "slices", "heads", "lasts", "tails", "inits",
    "fill", "cut", "cut_suffix", "pad", "lpad", "reshape_", "flat", "repeat", "cycle", "rerank", "reorder",
    "squeeze", "elongate", "transpose", "inflate", "intercalate", "intersperse", "concats", "reverses",
    "rotates", "cons", "uncons", "snoc", "unsnoc",
]

_range = builtins.range
_slice = builtins.slice


def _dim(t: Tensor, d: Any, fname: str) -> int:
    return dims_arg([d], t.ndim, fname, "dimension")[0]


def _slice_dim(t: Tensor, d: int, start: int, stop: int) -> Tensor:
    key = full_key(t.shape)
    key[d] = _slice(start, stop, 1)
    return view(t, key)


def take(a: Any, d: int, t: int) -> Tensor:
    """harpie's ``take``: the first ``t`` elements along dimension ``d`` (the last ``|t|`` if negative). A view.

    Raises:
        ValueError: if ``|t|`` exceeds the dimension (harpie does not check).

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.take(hp.range([2, 3, 4]), 2, 1))
    [2, 3, 1]
    """
    x = arr(a, "take")
    d = _dim(x, d, "take")
    t = int_arg(t, "take", "count")
    n = x.shape[d]
    if abs(t) > n:
        raise ValueError(f"take: cannot take {t} elements along dimension {d} of size {n}; expected |t| <= {n}")
    return _slice_dim(x, d, 0, t) if t >= 0 else _slice_dim(x, d, n + t, n)


def drop(a: Any, d: int, t: int) -> Tensor:
    """harpie's ``drop``: all but the first ``t`` elements along ``d`` (all but the last ``|t|`` if negative). A view.

    Raises:
        ValueError: if ``|t|`` exceeds the dimension.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.drop(hp.range([2, 3, 4]), 2, 1))
    [2, 3, 3]
    """
    x = arr(a, "drop")
    d = _dim(x, d, "drop")
    t = int_arg(t, "drop", "count")
    n = x.shape[d]
    if abs(t) > n:
        raise ValueError(f"drop: cannot drop {t} elements along dimension {d} of size {n}; expected |t| <= {n}")
    return _slice_dim(x, d, t, n) if t >= 0 else _slice_dim(x, d, 0, n + t)


def select(a: Any, d: int, i: int) -> Tensor:
    """harpie's ``select``: index ``i`` along dimension ``d`` (rank drops by one). A view.

    Raises:
        IndexError: if ``i`` is out of range.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.select(hp.range([2, 3]), 1, 2))
    '[2,5]'
    """
    x = arr(a, "select")
    d = _dim(x, d, "select")
    i = int_arg(i, "select", "index")
    if not 0 <= i < x.shape[d]:
        raise IndexError(f"select: index {i} is out of range for dimension {d} of size {x.shape[d]}")
    key = full_key(x.shape)
    key[d] = i
    return view(x, key)


def _common(x: Tensor, y: Tensor) -> D.DType:
    return x._dtype if x._dtype is y._dtype else D.promote_types(x._dtype, y._dtype)


def insert(a: Any, b: Any, d: int, i: int) -> Tensor:
    """harpie's ``insert``: ``b`` (rank one less) inserted into ``a`` at position ``i`` of dimension ``d``.

    A scalar ``a`` counts as shape ``[1]``.

    Raises:
        ValueError: if ``b``'s shape is not ``a``'s without dimension ``d``, or ``i`` is out of range.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.insert(hp.to_scalar(1), hp.to_scalar(2), 0, 0))
    'UnsafeArray [2] [2,1]'
    """
    x = arr(a, "insert")
    y = arr(b, "insert")
    if x.ndim == 0:
        x = reshape(x, (1,))
    d = _dim(x, d, "insert")
    i = int_arg(i, "insert", "position")
    n = x.shape[d]
    inner = x.shape[:d] + x.shape[d + 1:]
    if y.shape != inner:
        raise ValueError(f"insert: the inserted array has shape {list(y.shape)}; expected {list(inner)} "
                         f"(the array's shape {list(x.shape)} without dimension {d})")
    if not 0 <= i <= n:
        raise ValueError(f"insert: position {i} is out of range for dimension {d} of size {n}; expected 0 <= i <= {n}")
    dt = _common(x, y)
    shp = list(x.shape)
    shp[d] += 1
    out = empty(shp, dt, x._backend)
    assign(_slice_dim(out, d, 0, i), _slice_dim(x, d, 0, i))
    key = full_key(shp)
    key[d] = i
    assign(view(out, key), y)
    assign(_slice_dim(out, d, i + 1, n + 1), _slice_dim(x, d, i, n))
    return out


def delete(a: Any, d: int, i: int) -> Tensor:
    """harpie's ``delete``: remove position ``i`` of dimension ``d`` (a view when ``i`` is first or last).

    Raises:
        IndexError: if ``i`` is out of range.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.delete(hp.range([4]), 0, 1))
    '[0,2,3]'
    """
    x = arr(a, "delete")
    d = _dim(x, d, "delete")
    i = int_arg(i, "delete", "position")
    n = x.shape[d]
    if not 0 <= i < n:
        raise IndexError(f"delete: position {i} is out of range for dimension {d} of size {n}")
    if i == 0:
        return _slice_dim(x, d, 1, n)
    if i == n - 1:
        return _slice_dim(x, d, 0, n - 1)
    shp = list(x.shape)
    shp[d] -= 1
    out = empty(shp, x._dtype, x._backend)
    assign(_slice_dim(out, d, 0, i), _slice_dim(x, d, 0, i))
    assign(_slice_dim(out, d, i, n - 1), _slice_dim(x, d, i + 1, n))
    return out


def append(a: Any, b: Any, d: int) -> Tensor:
    """harpie's ``append``: ``b`` added at the end of dimension ``d`` of ``a``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.append(hp.range([3]), hp.to_scalar(9), 0))
    '[0,1,2,9]'
    """
    x = arr(a, "append")
    d2 = _dim(x if x.ndim else reshape(x, (1,)), d, "append")
    return insert(x, b, d2, (x.shape[d2] if x.ndim else 1))


def prepend(a: Any, b: Any, d: int) -> Tensor:
    """harpie's ``prepend``: ``a`` (rank one less) added at the start of dimension ``d`` of ``b``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.prepend(hp.to_scalar(9), hp.range([3]), 0))
    '[9,0,1,2]'
    """
    return insert(b, a, d, 0)


def concatenate(a: Any, b: Any, d: int) -> Tensor:
    """harpie's ``concatenate``: join along dimension ``d`` (scalars count as shape ``[1]``).

    Raises:
        ValueError: if the shapes differ outside dimension ``d``.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.concatenate(hp.to_scalar(0), hp.as_array([1, 2, 3]), 0))
    'UnsafeArray [4] [0,1,2,3]'
    """
    x = arr(a, "concatenate")
    y = arr(b, "concatenate")
    if x.ndim == 0:
        x = reshape(x, (1,))
    if y.ndim == 0:
        y = reshape(y, (1,))
    d = _dim(x, d, "concatenate")
    if x.ndim != y.ndim or x.shape[:d] + x.shape[d + 1:] != y.shape[:d] + y.shape[d + 1:]:
        raise ValueError(f"concatenate: shapes {list(x.shape)} and {list(y.shape)} differ outside dimension {d}")
    shp = list(x.shape)
    n = x.shape[d]
    shp[d] += y.shape[d]
    out = empty(shp, _common(x, y), x._backend)
    assign(_slice_dim(out, d, 0, n), x)
    assign(_slice_dim(out, d, n, shp[d]), y)
    return out


def couple(a: Any, b: Any, d: int) -> Tensor:
    """harpie's ``couple``: two same-shaped arrays stacked along a new dimension ``d``.

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.couple(hp.as_array([1, 2, 3]), hp.as_array([4, 5, 6]), 0)))
    [[1,2,3],
     [4,5,6]]
    """
    return concatenate(elongate(a, d), elongate(b, d), d)


def slice(a: Any, d: int, o: int, n: int) -> Tensor:  # noqa: A001  (harpie's name)
    """harpie's ``slice``: ``n`` elements from offset ``o`` along dimension ``d``. A view.

    Raises:
        ValueError: if the range leaves the dimension.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.slice(hp.range([5]), 0, 1, 2))
    '[1,2]'
    """
    x = arr(a, "slice")
    d = _dim(x, d, "slice")
    o = int_arg(o, "slice", "offset")
    n = int_arg(n, "slice", "length")
    s = x.shape[d]
    if o < 0 or n < 0 or o + n > s:
        raise ValueError(f"slice: offset {o} and length {n} leave dimension {d} of size {s}; "
                         f"expected 0 <= offset, 0 <= length, offset + length <= {s}")
    return _slice_dim(x, d, o, o + n)


def rotate(a: Any, d: int, r: int) -> Tensor:
    """harpie's ``rotate``: element ``i`` along ``d`` becomes ``(i + r) mod n`` of the input.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.rotate(hp.range([4]), 0, 1))
    '[1,2,3,0]'
    """
    x = arr(a, "rotate")
    d = _dim(x, d, "rotate")
    r = int_arg(r, "rotate", "offset")
    n = x.shape[d]
    if n == 0 or r % n == 0:
        return x
    k = r % n
    out = empty(x.shape, x._dtype, x._backend)
    assign(_slice_dim(out, d, 0, n - k), _slice_dim(x, d, k, n))
    assign(_slice_dim(out, d, n - k, n), _slice_dim(x, d, 0, k))
    return out


def _pairs(x: Tensor, ds: Any, xs: Any, fname: str, what: str) -> list[tuple[int, int]]:
    dl = dims_arg(ds, x.ndim, fname, distinct=False)
    vl = ints_arg(xs, fname, what)
    if len(dl) != len(vl):
        raise ValueError(f"{fname}: {len(dl)} dims but {len(vl)} {what}; expected one per dimension")
    return list(zip(dl, vl))


def takes(a: Any, ds: Sequence[int], xs: Sequence[int]) -> Tensor:
    """harpie's ``takes``: :func:`take` along several dimensions. A view.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.takes(hp.range([2, 3, 4]), [0, 2], [1, -3]))
    [1, 3, 3]
    """
    x = arr(a, "takes")
    for d, t in _pairs(x, ds, xs, "takes", "counts"):
        x = take(x, d, t)
    return x


def drops(a: Any, ds: Sequence[int], xs: Sequence[int]) -> Tensor:
    """harpie's ``drops``: :func:`drop` along several dimensions. A view.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.drops(hp.range([2, 3, 4]), [0, 1, 2], [1, 2, -3]))
    '[[[20]]]'
    """
    x = arr(a, "drops")
    for d, t in _pairs(x, ds, xs, "drops", "counts"):
        x = drop(x, d, t)
    return x


def indexes(a: Any, ds: Sequence[int], xs: Sequence[int]) -> Tensor:
    """harpie's ``indexes``: select index ``xs[k]`` along each dimension ``ds[k]``. A view.

    Raises:
        IndexError: if an index is out of range.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.indexes(hp.range([2, 3, 4]), [0, 1], [1, 1]))
    '[16,17,18,19]'
    """
    x = arr(a, "indexes")
    key = full_key(x.shape)
    pairs = _pairs(x, ds, xs, "indexes", "indexes")
    if len({d for d, _ in pairs}) != len(pairs):
        raise ValueError(f"indexes: dims {list(ds)} repeat a dimension; expected distinct dimensions")
    for d, i in pairs:
        if not 0 <= i < x.shape[d]:
            raise IndexError(f"indexes: index {i} is out of range for dimension {d} of size {x.shape[d]}")
        key[d] = i
    return view(x, key)


def slices(a: Any, ds: Sequence[int], os: Sequence[int], ls: Sequence[int]) -> Tensor:
    """harpie's ``slices``: :func:`slice` along several dimensions (offsets ``os``, lengths ``ls``). A view.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.slices(hp.range([2, 3, 4]), [2, 0], [1, 1], [2, 1]))
    [1, 3, 2]
    """
    x = arr(a, "slices")
    offs = ints_arg(os, "slices", "offsets")
    lens = ints_arg(ls, "slices", "lengths")
    dl = dims_arg(ds, x.ndim, "slices", distinct=False)
    if not len(dl) == len(offs) == len(lens):
        raise ValueError(f"slices: {len(dl)} dims, {len(offs)} offsets and {len(lens)} lengths; expected equal counts")
    for d, o, n in zip(dl, offs, lens):
        x = slice(x, d, o, n)
    return x


def heads(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``heads``: the first element along each of ``ds``. A view.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.heads(hp.range([2, 3, 4]), [0, 2]))
    '[0,4,8]'
    """
    x = arr(a, "heads")
    dl = dims_arg(ds, x.ndim, "heads")
    return indexes(x, dl, [0] * len(dl))


def lasts(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``lasts``: the last element along each of ``ds``. A view.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.lasts(hp.range([2, 3, 4]), [0, 2]))
    '[15,19,23]'
    """
    x = arr(a, "lasts")
    dl = dims_arg(ds, x.ndim, "lasts")
    return indexes(x, dl, [x.shape[d] - 1 for d in dl])


def tails(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``tails``: all but the first element along each of ``ds``. A view.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.tails(hp.range([2, 3, 4]), [0, 2]))
    [1, 3, 3]
    """
    x = arr(a, "tails")
    for d in dims_arg(ds, x.ndim, "tails"):
        if x.shape[d] == 0:
            raise ValueError(f"tails: dimension {d} is empty; expected at least one element")
        x = _slice_dim(x, d, 1, x.shape[d])
    return x


def inits(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``inits``: all but the last element along each of ``ds``. A view.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.inits(hp.range([2, 3, 4]), [0, 2]))
    [1, 3, 3]
    """
    x = arr(a, "inits")
    for d in dims_arg(ds, x.ndim, "inits"):
        if x.shape[d] == 0:
            raise ValueError(f"inits: dimension {d} is empty; expected at least one element")
        x = _slice_dim(x, d, 0, x.shape[d] - 1)
    return x


# ---------------------------------------------------------------------------
# shape manipulations
# ---------------------------------------------------------------------------
def fill(a: Any, x: Any) -> Tensor:
    """harpie's ``fill``: make the elements fit the shape, padding with ``x`` or cutting the surplus.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.fill(hp.array([3], []), 0)), hp.pretty(hp.fill(hp.array([3], [1, 2, 3, 4]), 0))
    ('[0,0,0]', '[1,2,3]')
    """
    if not isinstance(a, UnsafeArray):
        return arr(a, "fill")
    shp = a.shape
    n = size_of(shp)
    vec = a.vector
    k = builtins.min(n, vec.size)
    d = vec._dtype if vec.size else from_values((1,), [x])._dtype
    if vec.size and n > vec.size:
        d = D.promote_types(d, from_values((1,), [x])._dtype)
    out = full((n,), x, d, vec._backend) if n > k else empty((n,), d, vec._backend)
    if k:
        assign(view(out, [_slice(0, k, 1)]), view(vec, [_slice(0, k, 1)]))
    return reshape(out, shp)


def _rerank_shape(shp: Sequence[int], r: int) -> list[int]:
    shp = list(shp)
    q = len(shp)
    if r > q:
        return [1] * (r - q) + shp
    k = q - r + 1
    return [size_of(shp[:k])] + shp[k:]


def rerank(a: Any, r: int) -> Tensor:
    """harpie's ``rerank``: add leading 1s up to rank ``r``, or merge leading dimensions down to it.

    As in harpie, ``r <= 1`` gives a rank-1 array. A view where the strides allow.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.rerank(hp.range([2, 3, 4]), 4)), hp.shape(hp.rerank(hp.range([2, 3, 4]), 2))
    ([1, 2, 3, 4], [6, 4])
    """
    x = arr(a, "rerank")
    r = int_arg(r, "rerank", "rank")
    if r > MAX_RANK:  # before building a shape of r entries (rerank(a, 2**40) took all memory)
        raise ValueError(f"rerank: rank {r} is too large; expected at most {MAX_RANK} dimensions")
    return reshape(x, _rerank_shape(x.shape, r))


def _fits(small: Sequence[int], big: Sequence[int]) -> bool:
    return builtins.all(s <= b for s, b in zip(small, big))


def _end_element(a: Any, fname: str, which: int) -> Tensor:
    """The first (``which=0``) or last element as a rank-0 view: ``cut``/``cut_suffix`` to shape ``[]``."""
    x = arr(a, fname)
    if x.size == 0:
        raise ValueError(f"{fname}: shape [] does not fit in {list(x.shape)}; the array is empty")
    f = reshape(x, (x.size,))
    return view(f, [which % x.size])


def cut(a: Any, s: Sequence[int]) -> Tensor:
    """harpie's ``cut``: the leading block of shape ``s`` (after :func:`rerank` to ``len(s)``). A view.

    Raises:
        ValueError: if ``s`` is larger than the (reranked) array in some dimension.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.cut(hp.array([4], [0, 1, 2, 3]), [2]))
    'UnsafeArray [2] [0,1]'
    """
    shp = shape_arg(s, "cut")
    if not shp:
        return _end_element(a, "cut", 0)
    x = rerank(a, len(shp))
    if len(shp) != x.ndim or not _fits(shp, x.shape):
        raise ValueError(f"cut: shape {shp} does not fit in {list(x.shape)}; expected a smaller or equal shape")
    return view(x, [_slice(0, n, 1) for n in shp])


def cut_suffix(a: Any, s: Sequence[int]) -> Tensor:
    """harpie's ``cutSuffix``: the trailing block of shape ``s``. A view.

    Raises:
        ValueError: if ``s`` is larger than the (reranked) array in some dimension.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.cut_suffix(hp.range([2, 3, 4]), [2, 2]))
    'UnsafeArray [2,2] [18,19,22,23]'
    """
    shp = shape_arg(s, "cut_suffix")
    if not shp:
        return _end_element(a, "cut_suffix", -1)
    x = rerank(a, len(shp))
    if len(shp) != x.ndim or not _fits(shp, x.shape):
        raise ValueError(f"cut_suffix: shape {shp} does not fit in {list(x.shape)}; expected a smaller or equal shape")
    return view(x, [_slice(m - n, m, 1) for n, m in zip(shp, x.shape)])


def _pad(a: Any, v: Any, s: Sequence[int], fname: str, left: bool) -> Tensor:
    shp = shape_arg(s, fname)
    x = rerank(a, len(shp))
    if len(shp) != x.ndim:  # len(s) == 0: rerank gives rank 1
        x = reshape(x, ()) if x.size == 1 else x
    if len(shp) != x.ndim:
        raise ValueError(f"{fname}: cannot pad shape {list(x.shape)} to {shp}")
    vd = from_values((1,), [v])._dtype
    d = x._dtype if vd is x._dtype else D.promote_types(x._dtype, vd)
    check_alloc(tuple(shp), d, fname)  # ValueError / MemoryError naming fname, not NumPy's
    try:
        out = full(shp, v, d, x._backend)
    except MemoryError:
        raise alloc_error(fname, tuple(shp), d) from None
    okey, ikey = [], []
    for n, m in zip(shp, x.shape):
        gap = n - m if left else 0
        lo_o, lo_i = builtins.max(0, gap), builtins.max(0, -gap)
        k = builtins.min(n - lo_o, m - lo_i)
        if k <= 0:
            return out
        okey.append(_slice(lo_o, lo_o + k, 1))
        ikey.append(_slice(lo_i, lo_i + k, 1))
    assign(view(out, okey), view(x, ikey))
    return out


def pad(a: Any, x: Any, s: Sequence[int]) -> Tensor:
    """harpie's ``pad``: shape ``s`` with ``a``'s elements at the start of each dimension, ``x`` elsewhere.

    ``a`` is reranked to ``len(s)`` first; dimensions larger than ``s`` are cut.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.pad(hp.array([4], [0, 1, 2, 3]), 0, [5]))
    'UnsafeArray [5] [0,1,2,3,0]'
    """
    return _pad(a, x, s, "pad", False)


def lpad(a: Any, x: Any, s: Sequence[int]) -> Tensor:
    """harpie's ``lpad``: like :func:`pad` with the elements aligned to the end of each dimension.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.lpad(hp.array([4], [0, 1, 2, 3]), 0, [5]))
    'UnsafeArray [5] [0,0,1,2,3]'
    """
    return _pad(a, x, s, "lpad", True)


def reshape_(a: Any, s: Sequence[int]) -> Tensor:
    """harpie's ``reshape``: the first ``size(s)`` elements (row-major) laid out in shape ``s``.

    A view where the strides allow.

    Raises:
        ValueError: if ``s`` needs more elements than ``a`` has.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.reshape(hp.range([2, 3, 4]), [4, 3, 2]))
    [4, 3, 2]
    """
    x = arr(a, "reshape")
    shp = shape_arg(s, "reshape")
    n = size_of(shp)
    if n > x.size:
        raise ValueError(f"reshape: shape {shp} needs {n} elements but the array of shape {list(x.shape)} "
                         f"has {x.size}; expected the same or fewer")
    f = reshape(x, (x.size,))
    if n < x.size:
        f = view(f, [_slice(0, n, 1)])
    return reshape(f, shp)


def flat(a: Any) -> Tensor:
    """harpie's ``flat``: rank 1 (a view where the strides allow).

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.flat(hp.range([2, 2]))), hp.pretty(hp.flat(hp.to_scalar(0)))
    ('[0,1,2,3]', '[0]')
    """
    x = arr(a, "flat")
    return reshape(x, (x.size,))


def repeat(a: Any, s: Sequence[int]) -> Tensor:
    """harpie's ``repeat``: broadcast ``a`` to shape ``s`` (``a``'s shape must be a suffix of ``s``). A view.

    Raises:
        ValueError: if ``a``'s shape is not a suffix of ``s``.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.repeat(hp.array([2], [1, 2]), [2, 2, 2]))
    [2, 2, 2]
    """
    x = arr(a, "repeat")
    shp = shape_arg(s, "repeat")
    if x.ndim > len(shp) or list(x.shape) != shp[len(shp) - x.ndim:]:
        raise ValueError(f"repeat: shape {list(x.shape)} is not a suffix of {shp}")
    return expand_to(x, shp)


def cycle(a: Any, s: Sequence[int]) -> Tensor:
    """harpie's ``cycle``: shape ``s`` filled by cycling through ``a``'s elements (one gather).

    Raises:
        ValueError: if ``a`` is empty and ``s`` is not.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.cycle(hp.array([3], [1, 2, 3]), [5]))
    '[1,2,3,1,2]'
    """
    x = arr(a, "cycle")
    shp = shape_arg(s, "cycle")
    n = size_of(shp)
    be = x._backend
    if n == 0:
        return wrap(be.empty(tuple(shp), x._dtype), x._dtype, be)
    if x.size == 0:
        raise ValueError(f"cycle: cannot fill shape {shp} from an empty array")
    f = reshape(x, (x.size,))
    idx = be.binary("pymod", be.arange(0, n, 1, D.int64), x.size)
    return wrap(be.reshape(be.gather(f._data, (idx,)), tuple(shp)), x._dtype, be)


def reorder(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``reorder``: dimension ``k`` of the result is dimension ``ds[k]`` of ``a``. A view.

    Raises:
        ValueError: if ``ds`` is not a permutation of the dimensions.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.reorder(hp.range([2, 3, 4]), [2, 0, 1]))
    [4, 2, 3]
    """
    x = arr(a, "reorder")
    dl = dims_arg(ds, x.ndim, "reorder")
    if len(dl) != x.ndim:
        raise ValueError(f"reorder: dims {list(ds)} are not a permutation of the {x.ndim} dimensions")
    return permute(x, dl)


def squeeze(a: Any) -> Tensor:
    """harpie's ``squeeze``: remove every dimension of size 1. A view.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.squeeze(hp.array([2, 1, 3, 4, 1], range(1, 25)))), hp.shape(hp.squeeze(hp.singleton(0)))
    ([2, 3, 4], [])
    """
    x = arr(a, "squeeze")
    return reshape(x, [s for s in x.shape if s != 1])


def elongate(a: Any, d: int) -> Tensor:
    """harpie's ``elongate``: a new dimension of size 1 at position ``d``. A view.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.elongate(hp.range([2, 3, 4]), 1))
    [2, 1, 3, 4]
    """
    x = arr(a, "elongate")
    d = int_arg(d, "elongate", "dimension")
    if not 0 <= d <= x.ndim:
        raise IndexError(f"elongate: position {d} is out of range for an array of rank {x.ndim}; "
                         f"expected 0 <= d <= {x.ndim}")
    shp = list(x.shape)
    shp.insert(d, 1)
    return reshape(x, shp)


def transpose(a: Any) -> Tensor:
    """harpie's ``transpose``: all dimensions reversed. A view.

    >>> from runetensor import harpie as hp
    >>> hp.index(hp.transpose(hp.range([2, 3, 4])), [1, 0, 0]) == hp.index(hp.range([2, 3, 4]), [0, 0, 1])
    True
    """
    x = arr(a, "transpose")
    return permute(x, list(reversed(_range(x.ndim))))


def inflate(a: Any, d: int, n: int) -> Tensor:
    """harpie's ``inflate``: a new dimension ``d`` of size ``n`` repeating ``a`` (a broadcast view).

    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.inflate(hp.array([3], [0, 1, 2]), 0, 2)))
    [[0,1,2],
     [0,1,2]]
    """
    x = elongate(a, d)
    n = int_arg(n, "inflate", "size")
    if n < 0:
        raise ValueError(f"inflate: size {n} is negative")
    shp = list(x.shape)
    shp[int(d)] = n
    return expand_to(x, shp)


def intercalate(i: Any, a: Any, d: int) -> Tensor:
    """harpie's ``intercalate``: the array ``i`` placed between successive slices of ``a`` along ``d``.

    Raises:
        ValueError: if ``i``'s shape is not ``a``'s without dimension ``d``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.intercalate(hp.to_scalar(9), hp.range([3]), 0))
    '[0,9,1,9,2]'
    """
    x = arr(a, "intercalate")
    y = arr(i, "intercalate")
    d = _dim(x, d, "intercalate")
    inner = x.shape[:d] + x.shape[d + 1:]
    if y.shape != inner:
        raise ValueError(f"intercalate: the separator has shape {list(y.shape)}; expected {list(inner)}")
    n = x.shape[d]
    shp = list(x.shape)
    shp[d] = builtins.max(2 * n - 1, 0)
    out = empty(shp, _common(x, y), x._backend)
    if n == 0:
        return out
    key = full_key(shp)
    key[d] = _slice(0, 2 * n - 1, 2)
    assign(view(out, key), x)
    if n > 1:
        key[d] = _slice(1, 2 * n - 2, 2)
        assign(view(out, key), elongate(y, d))
    return out


def intersperse(a: Any, d: int, x: Any) -> Tensor:
    """harpie's ``intersperse``: the element ``x`` placed between successive slices along ``d``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.intersperse(hp.range([3]), 0, 0))
    '[0,0,1,0,2]'
    """
    t = arr(a, "intersperse")
    d = _dim(t, d, "intersperse")
    vd = from_values((1,), [x])._dtype
    sep = full(t.shape[:d] + t.shape[d + 1:], x, vd, t._backend)
    return intercalate(sep, t, d)


def concats(a: Any, ds: Sequence[int], n: int) -> Tensor:
    """harpie's ``concats``: merge dimensions ``ds`` (row-major, in ``ds`` order) into one new dimension at ``n``.

    A view where the strides allow.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.concats(hp.range([2, 3, 4]), [0, 1], 1))
    [4, 6]
    """
    x = arr(a, "concats")
    dl = dims_arg(ds, x.ndim, "concats")
    rest = [k for k in _range(x.ndim) if k not in dl]
    n = int_arg(n, "concats", "position")
    if not 0 <= n <= len(rest):
        raise IndexError(f"concats: position {n} is out of range; expected 0 <= n <= {len(rest)}")
    perm = rest[:n] + dl + rest[n:]
    p = permute(x, perm)
    shp = [x.shape[k] for k in rest]
    shp.insert(n, size_of([x.shape[k] for k in dl]))
    return reshape(p, shp)


def reverses(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``reverses``: element order reversed along ``ds``. A view.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.reverses(hp.range([3]), [0]))
    '[2,1,0]'
    """
    x = arr(a, "reverses")
    dl = dims_arg(ds, x.ndim, "reverses")
    if not dl:
        return x
    return wrap(x._backend.flip(x._data, tuple(dl)), x._dtype, x._backend)


def rotates(a: Any, ds: Sequence[int], rs: Sequence[int]) -> Tensor:
    """harpie's ``rotates``: :func:`rotate` along several dimensions.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.rotates(hp.range([2, 2]), [0, 1], [1, 1]))
    '[[3,2],\\n [1,0]]'
    """
    x = arr(a, "rotates")
    for d, r in _pairs(x, ds, rs, "rotates", "offsets"):
        x = rotate(x, d, r)
    return x


def cons(a: Any, b: Any) -> Tensor:
    """harpie's ``cons``: the row ``a`` added before the rows of ``b``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.cons(hp.to_scalar(0), hp.as_array([1, 2])))
    '[0,1,2]'
    """
    return prepend(a, b, 0)


def _rows(a: Any, fname: str) -> Tensor:
    """``a`` as an array of at least one dimension with at least one row (a scalar is one row)."""
    x = arr(a, fname)
    if x.ndim == 0:
        x = reshape(x, (1,))
    if x.shape[0] == 0:
        raise ValueError(f"{fname}: the array has no rows")
    return x


def uncons(a: Any) -> tuple[Tensor, Tensor]:
    """harpie's ``uncons`` (and the ``x :< xs`` pattern): (first row, remaining rows). Views.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.uncons(hp.array([4], [0, 1, 2, 3])))
    '(UnsafeArray [] [0],UnsafeArray [3] [1,2,3])'
    """
    x = _rows(a, "uncons")
    return heads(x, [0]), tails(x, [0])


def snoc(a: Any, b: Any) -> Tensor:
    """harpie's ``snoc``: the row ``b`` added after the rows of ``a``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.snoc(hp.as_array([1, 2]), hp.to_scalar(3)))
    '[1,2,3]'
    """
    return append(a, b, 0)


def unsnoc(a: Any) -> tuple[Tensor, Tensor]:
    """harpie's ``unsnoc`` (and the ``xs :> x`` pattern): (initial rows, last row). Views.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.unsnoc(hp.array([4], [0, 1, 2, 3])))
    '(UnsafeArray [3] [0,1,2],UnsafeArray [] [3])'
    """
    x = _rows(a, "unsnoc")
    return inits(x, [0]), lasts(x, [0])

