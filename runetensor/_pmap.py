"""Data-parallel mapping: ``rt.pmap`` and the collectives ``psum``, ``pmean``, ``pmax``, ``all_gather``,
``axis_index``.

A collective names an axis.  It is dispatched down the stack of running transformations, one
level at a time (``_coll``):

* a ``vmap`` level whose ``axis_name`` is the name (``rt.pmap`` without a cluster is such a
  ``vmap``) reduces its lanes in the fixed tree of :func:`_tree` and returns a value that is the
  same in every lane;
* another ``vmap`` level hands its handles to the level below, keeping their batch axis;
* a ``grad``/``jvp`` level computes the collective on its primal values and records the rule
  (``psum``'s transpose is ``psum`` of the cotangents, ``pmean``'s ``pmean``, ``all_gather``'s a
  ``psum`` then the shard's own row, ``pmax`` routes the summed cotangent to the shards that hold
  the maximum, shared equally between ties), so collectives work inside ``grad``;
* the bottom (the NumPy backend, or a ``jit`` being traced): inside a shard of a cluster ``pmap``
  the shard's :class:`_ShardContext` answers; otherwise the name is unbound and it raises.

With a ``distributed.Client``, ``pmap`` runs each shard as Dask tasks.  ``f`` is cut at its
collectives into *phases*: phase ``k`` runs ``f`` on one shard from the start, with the results
of collectives ``0..k-1`` supplied, and stops at collective ``k``, returning the value that
reached it; the shards' values are combined by a tree of tasks in the order of
:func:`_tree`, and phase ``k + 1`` starts with that result.  The tasks are pure, so Dask
recomputes lost ones from their lineage.  See ``docs/distributed.md``.
"""
from __future__ import annotations

import sys
import threading
from typing import Any, Callable

from ._tracers._batch import BatchBackend
from ._autodiff._pytree import tree_flatten, tree_unflatten
from ._tracers._diff import ForwardBackend, Node, ReverseBackend, TraceBackend, Tracer, state
from ._backend.contract import Backend
from ._dtypes import bool as bool_
from ._dtypes import int32
from ._primitives import reshape as _reshape
from ._tensor import Tensor, as_tensor, wrap
from ._backend import get_backend
from ._autodiff._vmap import vmap

__all__ = ["pmap", "psum", "pmean", "pmax", "all_gather", "axis_index"]

_OPS = ("psum", "pmean", "pmax", "all_gather")
_BINARY = {"psum": "add", "pmean": "add", "pmax": "maximum"}


# ---------------------------------------------------------------------------
# the fixed reduction order
# ---------------------------------------------------------------------------
def _split(m: int) -> int:
    """Where the tree splits ``m`` shards: the first ``ceil(m / 2)`` on the left."""
    return (m + 1) // 2


def _tree(P: Backend, op: str, hs: list) -> Any:
    """``hs`` (one handle per shard, in shard order) combined by ``P.binary(op)`` in the fixed
    balanced tree: ``tree(hs) = tree(hs[:ceil(m/2)]) op tree(hs[ceil(m/2):])``."""
    if len(hs) == 1:
        return hs[0]
    h = _split(len(hs))
    return P.binary(op, _tree(P, op, hs[:h]), _tree(P, op, hs[h:]))


def _finish(P: Backend, op: str, h: Any, n: int) -> Any:
    """The tree's result made into the collective's: ``pmean`` divides by the shard count."""
    if op == "pmean":
        return P.binary("div", h, P.full((), n, P.dtype(h)))
    return h


def _check_dtype(op: str, d: Any) -> None:
    if op == "psum" and d == bool_:
        raise TypeError("psum: expected a numeric tensor, got bool (a sum of bools would be an or); cast it to "
                        "an integer dtype first")
    if op == "pmean" and not d.is_inexact:
        raise TypeError(f"pmean: expected a floating-point or complex tensor, got {d}; cast it first "
                        "(or use rt.psum)")
    if op == "pmax" and d.is_complex:
        raise TypeError(f"pmax: complex tensors have no order, got {d}")


# ---------------------------------------------------------------------------
# dispatch down the transformation stack
# ---------------------------------------------------------------------------
class _Shard(threading.local):
    def __init__(self) -> None:
        self.ctx: _ShardContext | None = None


_shard = _Shard()


def _unbound(op: str, name: Any) -> ValueError:
    return ValueError(f"{op}: no mapped axis named {name!r} is running; call it inside rt.pmap(f, {name!r}) or "
                      f"rt.vmap(f, axis_name={name!r})")


def _coll(B: Backend, op: str, hs: list, name: Any) -> list:
    """The collective ``op`` over the axis ``name`` of the handles ``hs`` of level ``B`` (lower
    levels' handles are constants), as handles of ``B``: one call for all of them."""
    if type(B) is BatchBackend:
        ins = [B._in(h) for h in hs]
        if B.axis_name == name:
            return [B._w(_lanes(B, op, p, bd), None) for p, bd in ins]
        outs = _coll(B.parent, op, [p for p, _ in ins], name)
        shift = 1 if op == "all_gather" else 0
        return [B._w(o, None if bd is None else bd + shift) for o, (_, bd) in zip(outs, ins)]
    if isinstance(B, TraceBackend):
        return _coll_trace(B, op, hs, name)
    ctx = _shard.ctx
    if ctx is not None and ctx.name == name:
        return ctx.collective(B, op, hs)
    raise _unbound(op, name)


def _lanes(B: BatchBackend, op: str, p: Any, bd: int | None) -> Any:
    """The collective over the lanes of one handle of ``B`` (parent handle ``p``, batch axis ``bd``)."""
    P, n = B.parent, B.n
    if op == "all_gather":
        if bd is None:
            return P.copy(P.expand(_reshape(P, p, (1,) + tuple(p.shape)), (n,) + tuple(p.shape)))
        return P.copy(B._mv0(p, bd))
    if bd is None:
        lanes = [p] * n
    else:
        lanes = []
        full = [slice(0, s, 1) for s in p.shape]
        for i in range(n):
            key = list(full)
            key[bd] = i
            lanes.append(P.view_index(p, tuple(key)))
    r = _tree(P, _BINARY[op], lanes)
    if n == 1:
        r = P.copy(r)
    return _finish(P, op, r, n)


def _index(B: Backend, name: Any) -> Any:
    """The shard index along the axis ``name`` as an int32 handle of level ``B``."""
    if type(B) is BatchBackend:
        if B.axis_name == name:
            return B._w(B.parent.arange(0, B.n, 1, int32), 0)
        return B._w(_index(B.parent, name), None)
    if isinstance(B, TraceBackend):
        return Tracer(B, _index(B.parent, name))
    ctx = _shard.ctx
    if ctx is not None and ctx.name == name:
        return ctx.index_handle(B)
    raise _unbound("axis_index", name)


def _inexact(P: Backend, h: Any) -> bool:
    return P.dtype(h).is_inexact


def _own_lane(P: Backend, s: Any, name: Any) -> Any:
    """Row ``axis_index(name)`` of ``s`` (shape ``(n,) + shape``): the sum of ``s`` masked to that row
    (an exact selection: the other rows contribute zeros)."""
    n = s.shape[0]
    idx = _index(P, name)
    rows = P.arange(0, n, 1, int32)
    mask = P.binary("eq", rows, idx)
    mask = P.reshape(mask, (n,) + (1,) * (s.ndim - 1))
    return P.reduce("sum", P.where(mask, s, P.full((), 0, P.dtype(s))), (0,), False)


def _coll_trace(R: TraceBackend, op: str, hs: list, name: Any) -> list:
    P = R.parent
    ins = [R._in(h) for h in hs]
    ps = [p for p, _ in ins]
    live = [pay is not None and _inexact(P, p) for p, pay in ins]
    if not any(live) or state.no_grad:
        return [Tracer(R, o) for o in _coll(P, op, ps, name)]
    if isinstance(R, ForwardBackend):
        return _coll_jvp(R, op, ps, [pay if lv else None for (_, pay), lv in zip(ins, live)], name)
    if not isinstance(R, ReverseBackend):
        raise TypeError(f"{op}: no rule for the transformation {R.name}")
    res = _coll(P, op, ps, name)
    if op == "pmax":
        for h in hs:  # the rule keeps the inputs: a later write must copy them first
            if type(h) is Tracer and h.trace is R:
                (h.base or h).captured = True
            elif h is not None and hasattr(h, "shape"):
                R._held.append(h)

    def vjp(g: tuple) -> list:
        gs = [g[i] for i in range(len(ps)) if live[i]]
        idx = [i for i in range(len(ps)) if live[i]]
        out: list = [None] * len(ps)
        if op in ("psum", "pmean"):
            cts = _coll(P, op, gs, name)
        elif op == "all_gather":
            cts = [_own_lane(P, c, name) for c in _coll(P, "psum", gs, name)]
        else:
            masks = [P.cast(P.binary("eq", ps[i], res[i]), P.dtype(ps[i])) for i in idx]
            sums = _coll(P, "psum", gs + masks, name)
            k = len(gs)
            cts = [P.binary("div", P.binary("mul", m, sums[j]), sums[k + j]) for j, m in enumerate(masks)]
        for i, c in zip(idx, cts):
            out[i] = c
        return out

    avals = tuple((r.shape, P.dtype(r)) if lv else None for r, lv in zip(res, live))
    node = Node(tuple(pay if lv else None for (_, pay), lv in zip(ins, live)), vjp, avals)
    outs = []
    for i, (r, lv) in enumerate(zip(res, live)):
        t = Tracer(R, r, (node, i) if lv else None)
        t.captured = True
        outs.append(t)
    return outs


def _coll_jvp(R: ForwardBackend, op: str, ps: list, tans: list, name: Any) -> list:
    P = R.parent
    idx = [i for i, t in enumerate(tans) if t is not None]
    if op == "pmax":
        res = _coll(P, op, ps, name)
        masks = [P.cast(P.binary("eq", ps[i], res[i]), P.dtype(ps[i])) for i in idx]
        sums = _coll(P, "psum", [P.binary("mul", m, tans[i]) for m, i in zip(masks, idx)] + masks, name)
        k = len(idx)
        touts = [P.binary("div", sums[j], sums[k + j]) for j in range(k)]
    else:
        both = _coll(P, op, ps + [tans[i] for i in idx], name)  # linear: primals and tangents in one call
        res, touts = both[:len(ps)], both[len(ps):]
    outs = [Tracer(R, r) for r in res]
    for j, i in enumerate(idx):
        outs[i].payload = touts[j]
    return outs


def _top_backend(ts: list) -> Backend:
    best: Backend | None = state.stack[-1] if state.stack else None
    for t in ts:
        if best is None or t._backend.level > best.level:
            best = t._backend
    if best is None:
        best = get_backend()
    return best


def _collective(op: str, x: Any, axis_name: Any) -> Any:
    leaves, tree = tree_flatten(x)
    ts = [as_tensor(v, op) for v in leaves]
    if not ts:
        return x
    for t in ts:
        _check_dtype(op, t._dtype)
    B = _top_backend(ts)
    outs = _coll(B, op, [t._data for t in ts], axis_name)
    res = [wrap(o, t._dtype, B) for o, t in zip(outs, ts)]
    return tree_unflatten(tree, res)


def psum(x: Any, axis_name: Any) -> Any:
    """The sum over the shards of the mapped axis ``axis_name``, the same in every shard.

    The shards are added in a fixed balanced tree by shard index (the first ``ceil(n/2)`` shards,
    then the rest, recursively), so the bits depend only on the values and the shard count.

    Args:
        x: a tensor or a pytree of tensors (one collective for the whole tree).
        axis_name: the name given to ``rt.pmap`` / ``rt.vmap(..., axis_name=)``.

    Returns:
        The same structure, each leaf the sum of that leaf over the shards.

    Raises:
        ValueError: if no mapped axis named ``axis_name`` is running.

    >>> import runetensor as rt
    >>> xs = rt.create(rt.float32, [3, 2], [1., 2., 3., 4., 5., 6.])
    >>> print(rt.pmap(lambda x: x / rt.psum(x, "i"), "i")(xs))
    [[0.111111, 0.166667],
     [0.333333, 0.333333],
     [0.555556, 0.5]]
    """
    return _collective("psum", x, axis_name)


def pmean(x: Any, axis_name: Any) -> Any:
    """The mean over the shards of the mapped axis ``axis_name`` (:func:`psum` divided by the shard count).

    Args:
        x: a floating-point tensor or a pytree of them.
        axis_name: the name of the mapped axis.

    Returns:
        The same structure, each leaf the mean over the shards.

    Raises:
        ValueError: if no mapped axis named ``axis_name`` is running.
        TypeError: for an integer or boolean tensor.

    >>> import runetensor as rt
    >>> print(rt.pmap(lambda x: rt.pmean(x, "i"), "i")(rt.create(rt.float32, [4], [1., 2., 3., 6.])))
    [3, 3, 3, 3]
    """
    return _collective("pmean", x, axis_name)


def pmax(x: Any, axis_name: Any) -> Any:
    """The elementwise maximum over the shards of the mapped axis ``axis_name`` (NaN wins).

    Under ``grad`` the cotangent goes to the shards holding the maximum, shared equally between ties.

    Args:
        x: a real tensor or a pytree of them.
        axis_name: the name of the mapped axis.

    Returns:
        The same structure, each leaf the maximum over the shards.

    Raises:
        ValueError: if no mapped axis named ``axis_name`` is running.
        TypeError: for a complex tensor.

    >>> import runetensor as rt
    >>> print(rt.pmap(lambda x: rt.pmax(x, "i"), "i")(rt.create(rt.int32, [3], [4, 9, 2])))
    [9, 9, 9]
    """
    return _collective("pmax", x, axis_name)


def all_gather(x: Any, axis_name: Any) -> Any:
    """Every shard's value, stacked along a new leading axis in shard order, in every shard.

    Args:
        x: a tensor or a pytree of tensors.
        axis_name: the name of the mapped axis.

    Returns:
        The same structure, each leaf of shape ``(n,) + x.shape`` for ``n`` shards.

    Raises:
        ValueError: if no mapped axis named ``axis_name`` is running.

    >>> import runetensor as rt
    >>> print(rt.pmap(lambda x: rt.all_gather(x, "i"), "i")(rt.create(rt.int32, [2], [5, 7])))
    [[5, 7],
     [5, 7]]
    """
    return _collective("all_gather", x, axis_name)


def axis_index(axis_name: Any) -> Tensor:
    """This shard's index along the mapped axis ``axis_name`` (an int32 0-d tensor).

    Key random numbers by it, so that they depend on the shard and not on the worker:
    ``rt.random.fold_in(key, rt.axis_index("batch"))``.

    Args:
        axis_name: the name of the mapped axis.

    Returns:
        An int32 tensor of shape ``()``: ``0 .. n-1``.

    Raises:
        ValueError: if no mapped axis named ``axis_name`` is running.

    >>> import runetensor as rt
    >>> print(rt.pmap(lambda x: x * rt.axis_index("i"), "i")(rt.ones(rt.int32, [3])))
    [0, 1, 2]
    """
    B = _top_backend([])
    return wrap(_index(B, axis_name), int32, B)


# ---------------------------------------------------------------------------
# a shard of a cluster pmap: collectives answered from supplied results
# ---------------------------------------------------------------------------
class _Reached(Exception):
    """Raised inside a shard when it reaches the collective its phase stops at."""

    def __init__(self, op: str, values: list):
        super().__init__(op)
        self.op = op
        self.values = values


class _ShardContext:
    """One shard's run of one phase: collectives ``0..len(supplied)-1`` return the supplied
    results, the next one stops the run (:class:`_Reached`)."""

    def __init__(self, name: Any, n: int, index: Tensor, supplied: list):
        self.name = name
        self.n = n
        self.index = index
        self.supplied = supplied
        self.count = 0

    def index_handle(self, B: Backend) -> Any:
        if self.index._backend is B:
            return self.index._data
        return B.asarray(int(self.index), int32, True)[0]

    def collective(self, B: Backend, op: str, hs: list) -> list:
        i = self.count
        self.count += 1
        if i < len(self.supplied):
            got = self.supplied[i]
            if len(got) != len(hs):
                raise ValueError(f"{op}: collective {i} of this shard has {len(hs)} tensors, the combined "
                                 f"result {len(got)}: f must call the same collectives on every shard")
            outs = []
            for t, h in zip(got, hs):
                want = ((self.n,) if op == "all_gather" else ()) + tuple(h.shape)
                if tuple(t.shape) != want:
                    raise ValueError(f"{op}: collective {i}: the combined result has shape {tuple(t.shape)}, "
                                     f"expected {want}")
                outs.append(t._data if t._backend is B else B.asarray(t.to_backend("numpy")._data, None, True)[0])
            return outs
        raise _Reached(op, [wrap(h, B.dtype(h), B) for h in hs])


# ---------------------------------------------------------------------------
# rt.pmap
# ---------------------------------------------------------------------------
def _current_client() -> Any:
    """The current ``distributed`` client, if ``distributed`` is imported and one exists."""
    if "distributed" not in sys.modules:
        return None
    try:
        # deferred: optional dependency, loaded on first use (and a heavy import)
        from distributed import default_client
        return default_client()
    except (ValueError, ImportError):
        return None


def pmap(f: Callable, axis_name: Any, in_axes: Any = 0, out_axes: Any = 0, client: Any = None, *,
         jit: bool = True) -> Callable:
    """Map ``f`` over shards: the mapped axis is the shard axis, and collectives over ``axis_name``
    (:func:`psum`, :func:`pmean`, :func:`pmax`, :func:`all_gather`, :func:`axis_index`) combine the
    shards.

    Without a cluster (no ``client`` and no current ``distributed`` client, or when called inside
    another transformation) it is ``rt.vmap(f, in_axes, out_axes, axis_name=axis_name)``.  With a
    ``distributed.Client`` each shard runs as Dask tasks on the workers, and each collective is a
    tree of tasks that combines the shards in shard order: the results are bit-identical
    whatever the number of workers and threads, and a lost worker's tasks are recomputed.

    Args:
        f: a function of pytrees of tensors, the same program on every shard.
        axis_name: a hashable name the collectives inside ``f`` refer to.
        in_axes: as ``rt.vmap``'s: per argument the shard axis, or ``None`` for an argument every
            shard shares (parameters, optimizer state).
        out_axes: as ``rt.vmap``'s; ``None`` for an output that is the same on every shard (it
            is taken from shard 0; on a cluster the shards' copies are compared by hash, and
            outputs that differ raise ``ValueError``).
        client: a ``distributed.Client`` (default: the current one, if any).
        jit: on a cluster, run each phase of ``f`` under ``rt.jit`` (compiled once per worker
            process); ``False`` runs it eagerly.

    Returns:
        The mapped function.

    Raises:
        ValueError: (when called) as ``rt.vmap``; on a cluster also when shards reach different
            collectives, or an ``out_axes=None`` output differs between shards.

    >>> import runetensor as rt
    >>> xs = rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])
    >>> print(rt.pmap(lambda x: x - rt.pmean(x, "s"), "s")(xs))
    [[-1.5, -1.5, -1.5],
     [1.5, 1.5, 1.5]]
    """
    if not callable(f):
        raise TypeError(f"pmap: expected a function, got {type(f).__name__}")
    try:
        hash(axis_name)
    except TypeError:
        raise TypeError(f"pmap: axis_name must be hashable, got {type(axis_name).__name__}") from None
    if axis_name is None:
        raise TypeError("pmap: axis_name must not be None (collectives find the axis by it)")
    local = vmap(f, in_axes, out_axes, axis_name=axis_name)
    cache: dict = {}  # the cluster form's pickled program and plan, per argument structure

    def pf(*args: Any) -> Any:
        c = client if client is not None else _current_client()
        if c is None or state.stack or _traced(args):
            return local(*args)
        # deferred: cycle by design: the cluster path builds on this module and runs only on a Dask cluster
        from ._pmap_cluster import run_cluster
        return run_cluster(c, f, cache, axis_name, in_axes, out_axes, jit, args)

    pf.__name__ = getattr(f, "__name__", "pmapped")
    pf.__doc__ = getattr(f, "__doc__", None)
    pf.__wrapped__ = f  # type: ignore[attr-defined]
    return pf


def _traced(args: tuple) -> bool:
    return any(isinstance(x, Tensor) and x._backend.level > 0 for x in tree_flatten(args)[0])

