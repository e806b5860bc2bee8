"""harpie's function application along dimensions, products, search, sorting and transmission.

The dims convention: in ``extracts reduces maps joins traverses filters zips
modifies sorts orders`` the listed dimensions are *kept* on the outside (in
the order listed) and the function sees the sub-arrays made of the other
dimensions.  ``hp.reduces(a, [0], f)`` on shape ``(2, 3, 4)`` has shape ``(2,)``.

Every combinator has a vectorised fast path for functions it recognises
(runetensor's reductions and elementwise operations, Python's ``sum``/``max``
/``min``/``any``/``all``/``math.prod`` and the ``operator`` module's
arithmetic and comparisons) and a general path that calls any Python function
once per sub-array.
"""
from __future__ import annotations

import builtins
import functools
import itertools
from typing import Any, Callable, Sequence

from .. import _dtypes as D
from .._tensor import Tensor, as_tensor, binary_op, wrap
from ._base import (arr, as_part, assign, cast, dims_arg, equal, expand_to, fold_axes, fold_op, fold_values,
                    from_values, full_key, ints_arg, is_binary_op, is_unary_op, permute, reduce_axes,
                    reshape, size_of, stack, values, view)
from ._shape import cut, cut_suffix, drops, rerank
from ._core import zip_with
import operator
import runetensor as rt

__all__ = [
    "extracts", "reduces", "joins", "joins_safe", "join", "join_safe", "traverses", "maps", "filters",
    "zips", "zips_safe", "modifies", "diffs", "expand", "coexpand", "contract", "prod", "dot", "mult",
    "windows", "find", "find_no_overlap", "find_indices", "is_prefix_of", "is_suffix_of", "is_infix_of",
    "sorts", "sorts_by", "orders", "orders_by", "transmit", "transmit_safe", "transmit_op",
    "telecasts", "telecasts_safe",
]

_range = builtins.range
_slice = builtins.slice


def _split(t: Tensor, ds: Any, fname: str) -> tuple[list[int], Tensor, tuple[int, ...], tuple[int, ...]]:
    """(dims, view with ``dims`` first, outer shape, inner shape)."""
    dl = dims_arg(ds, t.ndim, fname)
    rest = [k for k in _range(t.ndim) if k not in dl]
    p = permute(t, dl + rest)
    return dl, p, tuple(t.shape[k] for k in dl), tuple(t.shape[k] for k in rest)


def _subs(p: Tensor, outer: Sequence[int]) -> list[Tensor]:
    """The sub-arrays of ``p`` at every outer index (row-major), as views."""
    tail = full_key(p.shape[len(outer):])
    return [view(p, list(i) + tail) for i in itertools.product(*(_range(s) for s in outer))]


def _place(stacked: Tensor, ds: Sequence[int], fname: str) -> Tensor:
    """Move the leading ``len(ds)`` axes of ``stacked`` to positions ``ds`` (harpie's ``joins``)."""
    r = stacked.ndim
    k = len(ds)
    dl = dims_arg(ds, r, fname)
    axes = [-1] * r
    for j, d in enumerate(dl):
        axes[d] = j
    nxt = k
    for pos in _range(r):
        if axes[pos] < 0:
            axes[pos] = nxt
            nxt += 1
    return permute(stacked, axes)


def _hint(t: Tensor, inner: Sequence[int]) -> Tensor:
    """An empty stand-in for a sub-array (its shape and dtype), for empty outer shapes."""
    return wrap(t._backend.empty(tuple(inner), t._dtype), t._dtype, t._backend)


def _order_outer(r: Tensor, dl: Sequence[int]) -> Tensor:
    """Reorder axes that came out in sorted-dims order into the order of ``dl``."""
    srt = sorted(dl)
    return permute(r, [srt.index(d) for d in dl])


def extracts(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``extracts``: an object array over dimensions ``ds`` whose elements are the sub-arrays (views).

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.fmap(hp.shape, hp.extracts(hp.range([2, 3, 4]), [0])))
    '[[3,4],[3,4]]'
    """
    t = arr(a, "extracts")
    _, p, outer, _ = _split(t, ds, "extracts")
    return from_values(outer, _subs(p, outer), dtype=D.object_)


def reduces(a: Any, ds: Sequence[int], f: Callable[[Any], Any]) -> Tensor:
    """harpie's ``reduces``: ``f`` applied to every sub-array, kept dimensions ``ds`` on the outside.

    ``rt.sum``, ``rt.max``... and Python's ``sum``, ``max``, ``min``,
    ``any``, ``all``, ``math.prod`` fold all elements of each sub-array in one
    backend reduction over the other axes; any other ``f`` is called once
    per sub-array (a Tensor).

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.reduces(hp.range([2, 3, 4]), [0], sum))
    '[66,210]'
    """
    t = arr(a, "reduces")
    op = fold_op(f)
    if op is not None and t._dtype.kind != "O":
        dl = dims_arg(ds, t.ndim, "reduces")
        rest = [k for k in _range(t.ndim) if k not in dl]
        return _order_outer(fold_axes(t, f, op, rest, "reduces"), dl)
    _, p, outer, _ = _split(t, ds, "reduces")
    subs = _subs(p, outer)
    if op is not None:
        return from_values(outer, [fold_values(op, values(s)) for s in subs])
    return from_values(outer, [f(s) for s in subs])


def _joins(e: Tensor, ds: Any, fname: str, safe: bool) -> Tensor | None:
    nds = len(ints_arg(ds, fname, "dims"))
    if nds != e.ndim:
        raise ValueError(f"{fname}: {nds} dims {list(ds)} for an outer array of rank {e.ndim}; "
                         "expected one dimension per outer dimension")
    if e._dtype.kind != "O":
        return _place(e, ds, fname)  # elements are scalars: inner shape []
    parts = [as_part(v, fname) for v in values(e)]
    if parts and builtins.any(p.shape != parts[0].shape for p in parts):
        if safe:
            return None
    st = stack(parts, e.shape, fname)
    return _place(st, ds, fname)


def joins(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``joins``: an array of arrays joined into one, the outer dimensions placed at positions ``ds``.

    Raises:
        ValueError: if the inner arrays differ in shape (harpie does not check).

    >>> from runetensor import harpie as hp
    >>> a = hp.range([2, 3, 4])
    >>> hp.equal(hp.joins(hp.extracts(a, [1, 0]), [1, 0]), a)
    True
    """
    return _joins(arr(a, "joins"), ds, "joins", False)


def joins_safe(a: Any, ds: Sequence[int]) -> Tensor | None:
    """harpie's ``joinsSafe``: :func:`joins`, or None when the inner shapes differ.

    >>> from runetensor import harpie as hp
    >>> hp.joins_safe(hp.as_array([hp.range([2]), hp.range([3])]), [0]) is None
    True
    """
    return _joins(arr(a, "joins_safe"), ds, "joins_safe", True)


def join(a: Any) -> Tensor:
    """harpie's ``join``: :func:`joins` with the outer dimensions first.

    >>> from runetensor import harpie as hp
    >>> a = hp.range([2, 3, 4])
    >>> hp.equal(hp.join(hp.extracts(a, [0, 1])), a)
    True
    """
    e = arr(a, "join")
    return _joins(e, list(_range(e.ndim)), "join", False)


def join_safe(a: Any) -> Tensor | None:
    """harpie's ``joinSafe``: :func:`join`, or None when the inner shapes differ.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.join_safe(hp.extracts(hp.range([2, 3, 4]), [0, 1])))
    [2, 3, 4]
    """
    e = arr(a, "join_safe")
    return _joins(e, list(_range(e.ndim)), "join_safe", True)


def traverses(a: Any, ds: Sequence[int], f: Callable[[Any], Any]) -> Tensor:
    """harpie's ``traverses``: call ``f`` on every element, sub-array by sub-array over ``ds``; collect the results.

    The calls happen in harpie's order: outer index (over ``ds``) first, then
    the elements of each sub-array in row-major order.  The results form an
    array of ``a``'s shape.

    >>> from runetensor import harpie as hp
    >>> seen = []
    >>> r = hp.traverses(hp.range([2, 3]), [1], seen.append)
    >>> seen, hp.show(r)
    ([0, 3, 1, 4, 2, 5], 'UnsafeArray [2,3] [(),(),(),(),(),()]')
    """
    t = arr(a, "traverses")
    dl, p, outer, inner = _split(t, ds, "traverses")
    res = from_values(outer + inner, [f(x) for x in values(p)])
    return _place(res, dl, "traverses")


def maps(a: Any, ds: Sequence[int], f: Callable[[Tensor], Any]) -> Tensor:
    """harpie's ``maps``: ``f`` applied to every sub-array (dims ``ds`` kept outside), results joined back.

    Elementwise runetensor functions run on the whole array at once; folds
    (``rt.sum``, ``sum``...) as :func:`reduces`; other ``f`` once per sub-array.

    Raises:
        ValueError: if ``f``'s results differ in shape.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.maps(hp.range([2, 3, 4]), [1], hp.transpose))
    [4, 3, 2]
    """
    t = arr(a, "maps")
    if t._dtype.kind != "O" and is_unary_op(f):
        dims_arg(ds, t.ndim, "maps")
        return as_part(f(t), "maps")
    if t._dtype.kind != "O" and fold_op(f) is not None:
        return _place(reduces(t, ds, f), ds, "maps")
    dl, p, outer, inner = _split(t, ds, "maps")
    parts = [as_part(f(s), "maps") for s in _subs(p, outer)]
    return _place(stack(parts, outer, "maps", _hint(t, inner)), dl, "maps")


def filters(a: Any, ds: Sequence[int], p: Callable[[Tensor], Any]) -> Tensor:
    """harpie's ``filters``: keep the sub-arrays (over the flattened dims ``ds``) where ``p`` is true.

    The result has shape ``[count] + inner shape``; the kept rows are read
    with one gather.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.filters(hp.range([2, 3, 4]), [0, 1], lambda x: hp.index(x, [0]) % 8 == 0))
    [3, 4]
    """
    t = arr(a, "filters")
    _, pv, outer, inner = _split(t, ds, "filters")
    keep = [i for i, s in enumerate(_subs(pv, outer)) if p(s)]
    n = size_of(outer)
    flat = reshape(pv, (n,) + inner)
    be = t._backend
    idx = as_tensor(keep, "filters", dtype=D.int64, backend=be)._data if keep else be.empty((0,), D.int64)
    h = be.gather(flat._data, (idx,) + tuple(full_key(inner)))
    return wrap(h, t._dtype, be)


def _zips(x: Tensor, y: Tensor, ds: Any, f: Callable, fname: str) -> Tensor:
    if x._dtype.kind != "O" and y._dtype.kind != "O" and is_binary_op(f) and x.shape == y.shape:
        dims_arg(ds, x.ndim, fname)
        return as_part(f(x, y), fname)
    dl, px, ox, _ = _split(x, ds, fname)
    _, py, oy, _ = _split(y, ds, fname)
    if ox != oy:
        raise ValueError(f"{fname}: the kept dimensions {dl} have sizes {list(ox)} and {list(oy)}; "
                         f"expected equal sizes")
    parts = [as_part(f(s, u), fname) for s, u in zip(_subs(px, ox), _subs(py, oy))]
    return _place(stack(parts, ox, fname, _hint(x, px.shape[len(ox):])), dl, fname)


def zips(a: Any, b: Any, ds: Sequence[int], f: Callable[[Tensor, Tensor], Any]) -> Tensor:
    """harpie's ``zips``: ``f`` applied to matching sub-arrays of ``a`` and ``b`` (dims ``ds`` kept outside).

    An elementwise ``f`` (``rt.add``, ``operator.sub``...) on same-shaped
    arrays runs as one call.

    Raises:
        ValueError: if the kept dimensions differ in size.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.zips(hp.range([2]), hp.range([2]), [0], operator.add))
    '[0,2]'
    """
    return _zips(arr(a, "zips"), arr(b, "zips"), ds, f, "zips")


def zips_safe(a: Any, b: Any, ds: Sequence[int], f: Callable[[Tensor, Tensor], Any]) -> Tensor | None:
    """harpie's ``zipsSafe``: :func:`zips`, or None when the shapes of ``a`` and ``b`` differ.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.zips_safe(hp.as_array([1]), hp.as_array([1, 2]), [0], operator.add) is None
    True
    """
    x, y = arr(a, "zips_safe"), arr(b, "zips_safe")
    if x.shape != y.shape:
        return None
    return _zips(x, y, ds, f, "zips_safe")


def modifies(a: Any, f: Callable[[Tensor], Any], ds: Sequence[int], ps: Sequence[int]) -> Tensor:
    """harpie's ``modifies``: a copy of ``a`` with the sub-array at positions ``ps`` of dims ``ds``
    replaced by ``f(sub)``.

    Raises:
        IndexError: if a position is out of range.
        ValueError: if ``f`` changes the sub-array's shape.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.modifies(hp.range([2, 2]), lambda x: x + 100, [0], [1]))
    '[[0,1],\\n [102,103]]'
    """
    t = arr(a, "modifies")
    dl = dims_arg(ds, t.ndim, "modifies")
    pl = ints_arg(ps, "modifies", "positions")
    if len(pl) != len(dl):
        raise ValueError(f"modifies: {len(dl)} dims but {len(pl)} positions; expected one per dimension")
    key = full_key(t.shape)
    for d, i in zip(dl, pl):
        if not 0 <= i < t.shape[d]:
            raise IndexError(f"modifies: position {i} is out of range for dimension {d} of size {t.shape[d]}")
        key[d] = i
    sub = view(t, key)
    r = as_part(f(sub), "modifies")
    if r.shape != sub.shape:
        raise ValueError(f"modifies: f changed the sub-array's shape from {list(sub.shape)} to {list(r.shape)}")
    d = t._dtype if r._dtype is t._dtype else D.promote_types(t._dtype, r._dtype)
    be = t._backend
    out = wrap(be.cast(t._data, d) if d is not t._dtype else be.copy(t._data), d, be)
    assign(view(out, key), r)
    return out


def diffs(a: Any, ds: Sequence[int], xs: Sequence[int], f: Callable[[Tensor, Tensor], Any]) -> Tensor:
    """harpie's ``diffs``: ``f`` between the array and itself lagged by ``xs`` along ``ds``.

    ``zips(drops(a, ds, xs), drops(a, ds, -xs), ds, f)``: with ``operator.sub``
    the successive differences.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.diffs(hp.as_array([1, 4, 9]), [0], [1], operator.sub))
    '[3,5]'
    """
    t = arr(a, "diffs")
    xl = ints_arg(xs, "diffs", "lags")
    return zips(drops(t, ds, xl), drops(t, ds, [-x for x in xl]), ds, f)


def expand(a: Any, b: Any, f: Callable[[Any, Any], Any]) -> Tensor:
    """harpie's ``expand``: the outer product, shape ``shape(a) ++ shape(b)``, element ``f(a[i], b[j])``.

    An elementwise ``f`` (``rt.mul``, ``operator.mul``...) runs as one broadcast call.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> x = hp.array([3], [1, 2, 3])
    >>> print(hp.pretty(hp.expand(x, x, operator.mul)))
    [[1,2,3],
     [2,4,6],
     [3,6,9]]
    """
    x, y = arr(a, "expand"), arr(b, "expand")
    if x._dtype.kind != "O" and y._dtype.kind != "O" and is_binary_op(f):
        xe = reshape(x, x.shape + (1,) * y.ndim)
        ye = reshape(y, (1,) * x.ndim + y.shape)
        return as_part(f(xe, ye), "expand")
    vy = values(y)
    return from_values(x.shape + y.shape, [f(p, q) for p in values(x) for q in vy])


def coexpand(a: Any, b: Any, f: Callable[[Any, Any], Any]) -> Tensor:
    """harpie's ``coexpand``: like :func:`expand` with the first array varying fastest:
    element ``[i, j]`` is ``f(a[j], b[i])``.

    Raises:
        ValueError: if the shapes differ (harpie's indexing needs equal shapes).

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.coexpand(hp.range([2]), hp.as_array([5, 6]), lambda p, q: (p, q)))
    '[[(0,5),(1,5)],\\n [(0,6),(1,6)]]'
    """
    x, y = arr(a, "coexpand"), arr(b, "coexpand")
    if x.shape != y.shape:
        raise ValueError(f"coexpand: shapes {list(x.shape)} and {list(y.shape)} differ; expected equal shapes")
    if x._dtype.kind != "O" and y._dtype.kind != "O" and is_binary_op(f):
        xe = reshape(x, (1,) * y.ndim + x.shape)
        ye = reshape(y, y.shape + (1,) * x.ndim)
        return as_part(f(xe, ye), "coexpand")
    vx = values(x)
    return from_values(y.shape + x.shape, [f(p, q) for q in values(y) for p in vx])


def contract(a: Any, ds: Sequence[int], f: Callable[[Tensor], Any]) -> Tensor:
    """harpie's ``contract``: ``f`` of the diagonal over dims ``ds``, for every index of the other dims.

    With ``sum`` and two dims this is a tensor contraction (a trace).

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.contract(hp.range([3, 3]), [0, 1], sum))
    '12'
    """
    t = arr(a, "contract")
    dl = dims_arg(ds, t.ndim, "contract")
    rest = [k for k in _range(t.ndim) if k not in dl]
    p = permute(t, rest + dl)
    outer = tuple(t.shape[k] for k in rest)
    be = t._backend
    if dl:
        st = be.strides(p._data)
        n = builtins.min(t.shape[k] for k in dl)
        dg = wrap(be.as_strided(p._data, outer + (n,), tuple(st[:len(rest)]) + (builtins.sum(st[len(rest):]),),
                                be.offset(p._data)), t._dtype, be)
    else:
        dg = reshape(p, outer + (1,))
    op = fold_op(f)
    if op is not None and t._dtype.kind != "O":
        return fold_axes(dg, f, op, [len(outer)], "contract")
    subs = _subs(dg, outer)
    if op is not None:
        return from_values(outer, [fold_values(op, values(s)) for s in subs])
    return from_values(outer, [f(s) for s in subs])


def _is_mul(f: Any) -> bool:
    return f is operator.mul or f is getattr(rt, "mul", None)


def prod(a: Any, b: Any, ds0: Sequence[int], ds1: Sequence[int], g: Callable[[Tensor], Any],
         f: Callable[[Any, Any], Any]) -> Tensor:
    """harpie's ``prod``: pair elements with ``f`` across matching dims ``ds0`` of ``a`` / ``ds1`` of ``b``,
    fold with ``g``.

    The result has shape ``a``'s other dims ++ ``b``'s other dims.  ``g = sum``
    with ``f = operator.mul`` (or ``rt.sum``/``rt.mul``) is one matrix
    multiplication; other recognised pairs broadcast and reduce.

    Raises:
        ValueError: if the matched dims differ in size or number.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.prod(hp.range([2, 3]), hp.range([3, 2]), [1], [0], sum, operator.mul)))
    [[10,13],
     [28,40]]
    """
    x, y = arr(a, "prod"), arr(b, "prod")
    d0 = dims_arg(ds0, x.ndim, "prod", "ds0")
    d1 = dims_arg(ds1, y.ndim, "prod", "ds1")
    if len(d0) != len(d1) or builtins.any(x.shape[p] != y.shape[q] for p, q in zip(d0, d1)):
        raise ValueError(f"prod: dims {d0} of shape {list(x.shape)} do not match dims {d1} of shape "
                         f"{list(y.shape)}; expected equal sizes")
    ra = [k for k in _range(x.ndim) if k not in d0]
    rb = [k for k in _range(y.ndim) if k not in d1]
    oa = tuple(x.shape[k] for k in ra)
    ob = tuple(y.shape[k] for k in rb)
    ks = tuple(x.shape[k] for k in d0)
    op = fold_op(g)
    numeric = x._dtype.kind != "O" and y._dtype.kind != "O"
    if numeric and op == "sum" and _is_mul(f):
        d = x._dtype if x._dtype is y._dtype else D.promote_types(x._dtype, y._dtype)
        if d.kind == "b":
            d = D.int64
        k = size_of(ks)
        A = reshape(cast(permute(x, ra + d0), d), (size_of(oa), k))
        B = reshape(cast(permute(y, d1 + rb), d), (k, size_of(ob)))
        be = x._backend
        h = be.matmul(A._data, B._data)
        return wrap(be.reshape(h, oa + ob), d, be)
    if numeric and op is not None and is_binary_op(f):
        A = reshape(permute(x, ra + d0), oa + (1,) * len(ob) + ks)
        B = reshape(permute(y, rb + d1), (1,) * len(oa) + ob + ks)
        c = as_part(f(A, B), "prod")
        n = len(oa) + len(ob)
        return fold_axes(c, g, op, list(_range(n, n + len(ks))), "prod")
    pa = permute(x, ra + d0)
    pb = permute(y, rb + d1)
    sa = _subs(pa, oa)
    sb = _subs(pb, ob)
    out = []
    for u in sa:
        for v in sb:
            inner = zip_with(u, v, f)
            out.append(fold_values(op, values(inner)) if op is not None else g(inner))
    return from_values(oa + ob, out)


def dot(a: Any, b: Any, f: Callable[[Tensor], Any], g: Callable[[Any, Any], Any]) -> Tensor:
    """harpie's ``dot``: pair ``a``'s last dim with ``b``'s first using ``g``, fold with ``f``.

    ``dot(a, b, sum, operator.mul)`` is the matrix product (inner product for vectors).

    Raises:
        ValueError: for a scalar operand or mismatched inner sizes.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.dot(hp.range([3]), hp.range([3]), sum, operator.mul))
    '5'
    """
    x, y = arr(a, "dot"), arr(b, "dot")
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError(f"dot: operands of shapes {list(x.shape)} and {list(y.shape)}; expected rank >= 1 each")
    return prod(x, y, [x.ndim - 1], [0], f, g)


def mult(a: Any, b: Any) -> Tensor:
    """harpie's ``mult``: array multiplication (sum of products over ``a``'s last and ``b``'s first dim).

    One backend matmul for numeric arrays.

    >>> from runetensor import harpie as hp
    >>> m = hp.range([2, 3])
    >>> print(hp.pretty(hp.mult(m, hp.transpose(m))))
    [[5,14],
     [14,50]]
    """
    return dot(a, b, sum, operator.mul)


def windows(a: Any, xs: Sequence[int]) -> Tensor:
    """harpie's ``windows``: all ``xs``-sized windows over the leading dims (a strided view, no copy).

    Shape: ``[s - x + 1 for the leading dims] ++ xs ++ remaining dims``.

    Raises:
        ValueError: if a window is larger than its dimension.

    >>> from runetensor import harpie as hp
    >>> hp.shape(hp.windows(hp.range([4, 3, 2]), [2, 2]))
    [3, 2, 2, 2, 2]
    """
    t = arr(a, "windows")
    w = ints_arg(xs, "windows", "window sizes")
    k = len(w)
    if k > t.ndim:
        raise ValueError(f"windows: {k} window sizes for an array of rank {t.ndim}; expected at most {t.ndim}")
    for x, s in zip(w, t.shape):
        if not 0 <= x <= s:
            raise ValueError(f"windows: window sizes {w} do not fit shape {list(t.shape)}; expected 0 <= x <= s")
    be = t._backend
    st = be.strides(t._data)
    shp = tuple(s - x + 1 for s, x in zip(t.shape, w)) + tuple(w) + t.shape[k:]
    strides = tuple(st[:k]) + tuple(st[:k]) + tuple(st[k:])
    return wrap(be.as_strided(t._data, shp, strides, be.offset(t._data)), t._dtype, be)


def find(i: Any, a: Any) -> Tensor:
    """harpie's ``find``: a bool array marking where ``i`` occurs in ``a`` (at each window start).

    ``i`` is reranked to ``a``'s rank first.  Vectorised: one windowed
    comparison and one all-reduction.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.find(hp.as_array([1, 2]), hp.as_array([1, 2, 1, 2])))
    '[True,False,True]'
    """
    x = arr(i, "find")
    t = arr(a, "find")
    r = t.ndim
    if r == 0:
        return from_values((), [equal(reshape(x, ()) if x.size == 1 else x, t)])
    x = rerank(x, r)
    be = t._backend
    if builtins.any(p > s for p, s in zip(x.shape, t.shape)):
        shp = tuple(builtins.max(0, s - p + 1) for s, p in zip(t.shape, x.shape))
        return wrap(be.full(shp, False, D.bool), D.bool, be)
    ws = windows(t, list(x.shape))
    outer = ws.shape[:r]
    if t._dtype.kind == "O" or x._dtype.kind == "O":
        return from_values(outer, [equal(s, x) for s in _subs(ws, outer)], dtype=D.bool)
    e = binary_op("eq", ws, x, "find")
    if x.size == 0:
        return wrap(be.full(outer, True, D.bool), D.bool, be)
    return reduce_axes(e, "all", list(_range(r, 2 * r)), "find")


def _overlap_offsets(sh: Sequence[int]) -> list[tuple[int, ...]]:
    out = []
    for c in itertools.product(*(_range(1 - s, s) for s in sh)):
        if builtins.all(v >= 0 for v in c):
            continue
        if builtins.any(v > 0 for v in c[:-1]):
            continue
        out.append(c)
    return out


def find_no_overlap(i: Any, a: Any) -> Tensor:
    """harpie's ``findNoOverlap``: :func:`find`, dropping matches that overlap an earlier kept match.

    Matches are kept greedily in row-major order.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.find_no_overlap(hp.as_array([1, 1]), hp.konst([4], 1)))
    '[True,False,True]'
    """
    f = find(i, a)
    x = rerank(arr(i, "find_no_overlap"), builtins.max(f.ndim, 1))
    cl = _overlap_offsets(x.shape)
    be = f._backend
    if f.ndim == 0 or f.size == 0:
        return f
    hits = [tuple(c) for c in zip(*(be.to_list(h) for h in be.nonzero(f._data)))]
    kept: set[tuple[int, ...]] = set()
    for s in hits:
        if not builtins.any(tuple(p + q for p, q in zip(s, c)) in kept for c in cl):
            kept.add(s)
    out = be.full(f.shape, False, D.bool)
    if kept:
        cols = list(zip(*sorted(kept)))
        key = tuple(as_tensor(list(c), "find_no_overlap", dtype=D.int64, backend=be)._data for c in cols)
        be.scatter(out, key, True)
    return wrap(out, D.bool, be)


def find_indices(i: Any, a: Any) -> Tensor:
    """harpie's ``findIndices``: the start indices (lists) of every occurrence of ``i`` in ``a``.

    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.find_indices(hp.as_array([1, 2]), hp.as_array([1, 2, 1, 2])))
    '[[0],[2]]'
    """
    f = find(i, a)
    be = f._backend
    if f.ndim == 0:
        return from_values((1 if values(f)[0] else 0,), [[]] if values(f)[0] else [], dtype=D.object_)
    cols = [be.to_list(h) for h in be.nonzero(f._data)]
    idx = [list(c) for c in zip(*cols)]
    return from_values((len(idx),), idx, dtype=D.object_)


def is_prefix_of(p: Any, a: Any) -> bool:
    """harpie's ``isPrefixOf``: whether ``p`` equals the leading block of ``a`` of its shape.

    >>> from runetensor import harpie as hp
    >>> hp.is_prefix_of(hp.array([2, 2], [0, 1, 4, 5]), hp.range([2, 3, 4]))
    True
    """
    x = arr(p, "is_prefix_of")
    try:
        return equal(x, cut(a, list(x.shape)))
    except ValueError:
        return False


def is_suffix_of(p: Any, a: Any) -> bool:
    """harpie's ``isSuffixOf``: whether ``p`` equals the trailing block of ``a`` of its shape.

    >>> from runetensor import harpie as hp
    >>> hp.is_suffix_of(hp.array([2, 2], [18, 19, 22, 23]), hp.range([2, 3, 4]))
    True
    """
    x = arr(p, "is_suffix_of")
    try:
        return equal(x, cut_suffix(a, list(x.shape)))
    except ValueError:
        return False


def is_infix_of(p: Any, a: Any) -> bool:
    """harpie's ``isInfixOf``: whether ``p`` occurs anywhere in ``a``.

    >>> from runetensor import harpie as hp
    >>> hp.is_infix_of(hp.array([2, 2], [18, 19, 22, 23]), hp.range([2, 3, 4]))
    True
    """
    f = find(p, a)
    return f.size > 0 and builtins.any(values(f))


# ---------------------------------------------------------------------------
# sorting
# ---------------------------------------------------------------------------
def _lex_order(keys: Tensor, fname: str) -> Any:
    """A stable lexicographic order of the rows of a 2-d tensor (int64 handle)."""
    be = keys._backend
    n, m = keys.shape
    if keys._dtype.is_complex:
        raise TypeError(f"{fname}: complex numbers have no order ({keys._dtype})")
    idx = be.arange(0, n, 1, D.int64)
    src = keys._data
    if keys._dtype in (D.int4, D.uint4):
        src = be.cast(src, D.int16)
    for k in reversed(_range(m)):
        col = be.gather(src, (idx, k))
        o = be.argsort(col, 0, False)
        idx = be.gather(idx, (o,))
    return idx


def _sort_rows(t: Tensor, ds: Any, key: Callable | None, fname: str) -> tuple[list[int], Tensor, tuple, tuple, Any]:
    dl, p, outer, inner = _split(t, ds, fname)
    n, m = size_of(outer), size_of(inner)
    rows = reshape(p, (n, m))
    be = t._backend
    if key is not None and t._dtype.kind != "O" and is_unary_op(key):
        kt = as_part(key(rows), fname)
        if kt.shape != rows.shape:
            raise ValueError(f"{fname}: the key function changed the shape")
        return dl, rows, outer, inner, _lex_order(kt, fname)
    if key is None and t._dtype.kind != "O":
        return dl, rows, outer, inner, _lex_order(rows, fname)
    subs = _subs(reshape(p, (n,) + inner), (n,))
    if key is None:
        ks = [tuple(values(s)) for s in subs]
    else:
        ks = [tuple(values(as_part(key(s), fname))) for s in subs]
    try:
        order = sorted(_range(n), key=lambda j: ks[j])
    except TypeError as e:
        raise TypeError(f"{fname}: elements cannot be ordered ({e})") from None
    return dl, rows, outer, inner, as_tensor(order, fname, dtype=D.int64, backend=be)._data if order \
        else be.empty((0,), D.int64)


def _sorted(t: Tensor, ds: Any, key: Callable | None, fname: str) -> Tensor:
    dl, rows, outer, inner, order = _sort_rows(t, ds, key, fname)
    be = t._backend
    h = be.gather(rows._data, (order, _slice(0, rows.shape[1], 1)))
    st = wrap(be.reshape(h, outer + inner), t._dtype, be)
    return _place(st, dl, fname)


def sorts(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``sorts``: the sub-arrays over dims ``ds`` sorted (lexicographically, stable).

    Vectorised: one stable argsort per element of a sub-array, then one gather.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.sorts(hp.array([2, 2], [2, 3, 1, 4]), [0]))
    'UnsafeArray [2,2] [1,4,2,3]'
    """
    return _sorted(arr(a, "sorts"), ds, None, "sorts")


def sorts_by(a: Any, ds: Sequence[int], c: Callable[[Tensor], Any]) -> Tensor:
    """harpie's ``sortsBy``: :func:`sorts` comparing the sub-arrays by ``c(sub)``.

    ``rt.neg`` or ``operator.neg`` (harpie's ``fmap Down`` on numbers) sorts
    descending in one vectorised pass.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.show(hp.sorts_by(hp.array([2, 2], [2, 3, 1, 4]), [0], operator.neg))
    'UnsafeArray [2,2] [2,3,1,4]'
    """
    return _sorted(arr(a, "sorts_by"), ds, c, "sorts_by")


def orders(a: Any, ds: Sequence[int]) -> Tensor:
    """harpie's ``orders``: the (flattened outer) positions of the sub-arrays in sorted order.

    >>> from runetensor import harpie as hp
    >>> hp.show(hp.orders(hp.array([2, 2], [2, 3, 1, 4]), [0]))
    'UnsafeArray [2] [1,0]'
    """
    t = arr(a, "orders")
    _, _, outer, _, order = _sort_rows(t, ds, None, "orders")
    be = t._backend
    return wrap(be.reshape(order, outer), D.int64, be)


def orders_by(a: Any, ds: Sequence[int], c: Callable[[Tensor], Any]) -> Tensor:
    """harpie's ``ordersBy``: :func:`orders` comparing the sub-arrays by ``c(sub)``.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.show(hp.orders_by(hp.array([2, 2], [2, 3, 1, 4]), [0], operator.neg))
    'UnsafeArray [2] [0,1]'
    """
    t = arr(a, "orders_by")
    _, _, outer, _, order = _sort_rows(t, ds, c, "orders_by")
    be = t._backend
    return wrap(be.reshape(order, outer), D.int64, be)


# ---------------------------------------------------------------------------
# transmission
# ---------------------------------------------------------------------------
def _is_prefix(p: Sequence[int], s: Sequence[int]) -> bool:
    return len(p) <= len(s) and tuple(s[:len(p)]) == tuple(p)


def transmit(a: Any, b: Any, f: Callable[[Tensor, Tensor], Any]) -> Tensor:
    """harpie's ``transmit``: ``f(a, sub)`` for every sub-array of ``b`` shaped like ``a``
    (``a``'s shape a prefix of ``b``'s).

    An elementwise ``f`` (``rt.add``, ``operator.add``...) broadcasts in one call.

    Raises:
        ValueError: if ``a``'s shape is not a prefix of ``b``'s.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> print(hp.pretty(hp.transmit(hp.to_scalar(1), hp.array([2, 3], range(6)), operator.add)))
    [[1,2,3],
     [4,5,6]]
    """
    r = transmit_safe(a, b, f)
    if r is None:
        raise ValueError(f"transmit: shape {list(arr(a, 'transmit').shape)} is not a prefix of "
                         f"{list(arr(b, 'transmit').shape)}")
    return r


def transmit_safe(a: Any, b: Any, f: Callable[[Tensor, Tensor], Any]) -> Tensor | None:
    """harpie's ``transmitSafe``: :func:`transmit`, or None when ``a``'s shape is not a prefix of ``b``'s.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.transmit_safe(hp.array([3], [1, 2, 3]), hp.array([2, 3], range(6)), operator.add) is None
    True
    """
    x, y = arr(a, "transmit"), arr(b, "transmit")
    if not _is_prefix(x.shape, y.shape):
        return None
    if x._dtype.kind != "O" and y._dtype.kind != "O" and is_binary_op(f):
        xe = reshape(x, x.shape + (1,) * (y.ndim - x.ndim))
        return as_part(f(xe, y), "transmit")
    return maps(y, list(_range(x.ndim, y.ndim)), functools.partial(f, x))


def transmit_op(a: Any, b: Any, f: Callable[[Any, Any], Any]) -> Tensor:
    """harpie's ``transmitOp``: the element function ``f`` where one shape is a prefix of the other.

    The shorter array is broadcast (a view) along the trailing dimensions of
    the longer one.

    Raises:
        ValueError: if neither shape is a prefix of the other.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.pretty(hp.transmit_op(hp.range([2, 2]), hp.as_array([1, 2]), operator.mul))
    '[[0,1],\\n [4,6]]'
    """
    x, y = arr(a, "transmit_op"), arr(b, "transmit_op")
    if x.shape == y.shape:
        return zip_with(x, y, f)
    if _is_prefix(x.shape, y.shape):
        return zip_with(expand_to(reshape(x, x.shape + (1,) * (y.ndim - x.ndim)), y.shape), y, f)
    if _is_prefix(y.shape, x.shape):
        return zip_with(x, expand_to(reshape(y, y.shape + (1,) * (x.ndim - y.ndim)), x.shape), f)
    raise ValueError(f"transmit_op: shapes {list(x.shape)} and {list(y.shape)}: neither is a prefix of the other")


def _telecasts(x: Tensor, y: Tensor, dsa: Any, dsb: Any, f: Callable, fname: str, safe: bool) -> Tensor | None:
    dl, px, ox, ix = _split(x, dsa, fname)
    _, py, oy, iy = _split(y, dsb, fname)
    if ox != oy:
        if safe:
            return None
        raise ValueError(f"{fname}: the kept dimensions have sizes {list(ox)} and {list(oy)}; expected equal sizes")
    if x._dtype.kind != "O" and y._dtype.kind != "O" and is_binary_op(f) and ix == iy:
        return _place(as_part(f(px, py), fname), dl, fname)
    parts = [as_part(f(s, u), fname) for s, u in zip(_subs(px, ox), _subs(py, oy))]
    return _place(stack(parts, ox, fname, _hint(x, ix)), dl, fname)


def telecasts(a: Any, b: Any, dsa: Sequence[int], dsb: Sequence[int], f: Callable[[Tensor, Tensor], Any]) -> Tensor:
    """harpie's ``telecasts``: ``f`` on matching sub-arrays, ``a`` kept over ``dsa`` and ``b`` over ``dsb``.

    The result's outer dims sit at ``dsa``.

    Raises:
        ValueError: if the kept dims differ in size.

    >>> from runetensor import harpie as hp
    >>> a, b = hp.array([2, 3], range(6)), hp.array([3], range(3))
    >>> print(hp.pretty(hp.telecasts(a, b, [1], [0], lambda x, y: hp.concatenate(x, y, 0))))
    [[0,1,2],
     [3,4,5],
     [0,1,2]]
    """
    return _telecasts(arr(a, "telecasts"), arr(b, "telecasts"), dsa, dsb, f, "telecasts", False)


def telecasts_safe(a: Any, b: Any, dsa: Sequence[int], dsb: Sequence[int],
                   f: Callable[[Tensor, Tensor], Any]) -> Tensor | None:
    """harpie's ``telecastsSafe``: :func:`telecasts`, or None when the kept dims differ in size.

    >>> import operator
    >>> from runetensor import harpie as hp
    >>> hp.telecasts_safe(hp.array([2, 3], range(6)), hp.array([1], [1]), [0], [0], operator.add) is None
    True
    """
    return _telecasts(arr(a, "telecasts_safe"), arr(b, "telecasts_safe"), dsa, dsb, f, "telecasts_safe", True)

