"""``rt.pmap`` on a ``distributed`` cluster: shards as Dask tasks, collectives as trees of tasks.

The driver (:func:`run_cluster`) cuts the call into phases (see :mod:`runetensor._pmap`):

* data tasks: one per shard holding its slices of the mapped arguments (or, for a Dask tensor
  chunked along the shard axis, taking the shard out of its chunk where the chunk lives), and one
  holding the shared arguments;
* phase ``k``: one task per shard (:func:`_phase`) runs ``f`` with the results of the first ``k``
  collectives and returns either the values reaching collective ``k`` or ``f``'s outputs;
* a collective: the shards' values combined by a tree of tasks in the order of
  :func:`runetensor._pmap._tree` (subtrees of up to :data:`GROUP` shards in one task,
  :func:`_subtree`; larger trees joined by :func:`_combine`; ``pmean``'s division at the root);
  ``all_gather`` is one task stacking the shards in order.

Every task is a pure function of its inputs (data travel inside the tasks, not as scattered
data), so Dask recomputes whatever a lost worker held.  Workers keep each function's compiled
phases (``rt.jit``) in :data:`_WORKER_FNS`, keyed by the ``pmap`` token.
"""
from __future__ import annotations

import hashlib
import itertools
import pickle
import threading
import uuid
from typing import Any, Callable

import numpy as np

from ._autodiff._pytree import tree_flatten, tree_unflatten
from ._pmap import _BINARY, _Reached, _ShardContext, _finish, _shard, _split, _tree
from ._backend import get_backend
from ._autodiff._pytree import argument_names as _names
from ._autodiff._vmap import _prefix
import runetensor as rt

__all__ = ["run_cluster"]

#: per worker process: the per-shard program's digest -> (the function running one phase of one
#: shard, in_axes per argument leaf, out_axes)
_WORKER_FNS: dict[str, tuple] = {}
_LOCK = threading.Lock()
#: how many per-shard programs a worker keeps compiled phases for (oldest dropped first)
MAX_FUNCTIONS = 16
#: shards whose part of a collective's tree is one task
GROUP = 8


# ---------------------------------------------------------------------------
# worker side
# ---------------------------------------------------------------------------
def _digest(arr: Any) -> str:
    """A hash of an array's dtype, shape and bytes (replicated outputs are compared by it)."""
    a = np.ascontiguousarray(arr)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.reshape(-1).view(np.uint8).data if a.size else b"")
    return h.hexdigest()


def _numpy_backend() -> Any:
    return get_backend("numpy")


def _to_tensor(a: Any) -> Any:
    return rt.asarray(a) if isinstance(a, np.ndarray) else a


def _shard_runner(f: Callable, tree: Any, name: Any, n: int, use_jit: bool) -> Callable:
    """A function ``(leaves, index, supplied) -> ("reach", op, values) | ("done", out)`` running
    one phase of one shard (jitted: one program per phase, selected by the supplied results'
    structure)."""
    def run(leaves: list, index: Any, supplied: list) -> Any:
        ctx = _ShardContext(name, n, index, supplied)
        prev = _shard.ctx
        _shard.ctx = ctx
        try:
            out = f(*tree_unflatten(tree, leaves))
        except _Reached as r:
            return ("reach", r.op, r.values)
        finally:
            _shard.ctx = prev
        return ("done", out)

    if not use_jit:
        return run
    jfs: dict = {}  # one jitted function per phase (a phase's signature never changes)

    def run_jit(leaves: list, index: Any, supplied: list) -> Any:
        k = len(supplied)
        jf = jfs.get(k)
        if jf is None:
            jf = jfs[k] = rt.jit(run)
        traces = rt.jit_stats(jf)["traces"]
        r = jf(leaves, index, supplied)
        if rt.jit_stats(jf)["traces"] != traces:
            # a call that traced returns the trace's eager witness; replay the program so every
            # shard's result comes from the compiled program, whichever worker traced it
            r = jf(leaves, index, supplied)
        return r
    run_jit.programs = jfs  # type: ignore[attr-defined]  (phase -> jitted function: for inspection)
    return run_jit


def _to_host(x: Any) -> Any:
    if isinstance(x, rt.Tensor):
        return np.array(rt.to_numpy(x), copy=True)
    return x


def _phase(spec: tuple, s: int, shared: list, mine: list, supplied: list) -> tuple:
    """Phase ``len(supplied)`` of shard ``s`` of the program ``spec`` (its digest and pickle).
    Returns ``("reach", op, axis name, arrays)`` or ``("done", out_tree, arrays or None per output
    leaf, digests of the out_axes=None leaves, out_axes per leaf)`` (only shard 0 sends the
    replicated outputs' data; the others send their digests)."""
    digest, blob = spec
    with _LOCK:
        got = _WORKER_FNS.get(digest)
        if got is None:
            while len(_WORKER_FNS) >= MAX_FUNCTIONS:
                _WORKER_FNS.pop(next(iter(_WORKER_FNS)))
            f, tree, axes, name, n, use_jit, out_axes = pickle.loads(blob)
            got = _WORKER_FNS[digest] = (_shard_runner(f, tree, name, n, use_jit), axes, out_axes, name)
    fn, axes, out_axes, name = got
    it_shared, it_mine = iter(shared), iter(mine)
    leaves = [_to_tensor(next(it_mine) if a is not None else next(it_shared)) for a in axes]
    sup = [[_to_tensor(a) for a in vals] for vals in supplied]
    kind, *rest = fn(leaves, rt.asarray(np.int32(s)), sup)
    if kind == "reach":
        op, values = rest
        return ("reach", op, name, [_to_host(v) for v in values])
    out = rest[0]
    o_leaves, o_tree = tree_flatten(out)
    oa = _prefix(tuple(out_axes) if isinstance(out_axes, list) else out_axes, out, "out_axes")
    arrays, digests = [], []
    for o, a in zip(o_leaves, oa):
        h = _to_host(o)
        if a is None:
            digests.append(_digest(h) if isinstance(h, np.ndarray) else repr(h))
            arrays.append(h if s == 0 else None)
        else:
            digests.append(None)
            arrays.append(h)
    return ("done", o_tree, arrays, digests, oa)


def _meta(r: tuple) -> tuple:
    """What the driver needs to know of a phase result: the collective reached (name, op, each
    value's shape and dtype) or that the shard finished."""
    if r[0] == "reach":
        return ("reach", r[1], r[2], tuple((a.shape, a.dtype.str) for a in r[3]))
    return ("done",)


def _vals(x: Any, op: str, name: Any) -> list:
    """The values of a shard's phase result (checked to be at collective ``op`` over ``name``), or
    a partial result of the tree."""
    if isinstance(x, tuple):
        if x[0] != "reach" or x[1] != op or x[2] != name:
            raise PlanMismatch(f"pmap: a shard reached {_say(_meta(x))}, the plan says {op} over {name!r}")
        return x[3]
    return x


def _combine(op: str, name: Any, n: int, a: Any, b: Any) -> list:
    """One node of a collective's tree: ``a op b`` per value (NumPy backend primitives, as the
    ``vmap`` form uses); ``n`` > 0 at the root: finish the collective over ``n`` shards."""
    P = _numpy_backend()
    out = [P.binary(_BINARY[op], x, y) for x, y in zip(_vals(a, op, name), _vals(b, op, name))]
    return [np.array(_finish(P, op, v, n), copy=True) for v in out] if n else out


def _subtree(op: str, name: Any, n: int, *rs: Any) -> list:
    """A whole subtree of shards in one task (the same order as the tree of tasks)."""
    P = _numpy_backend()
    vals = [_vals(r, op, name) for r in rs]
    out = [_tree(P, _BINARY[op], list(vs)) for vs in zip(*vals)]
    if len(rs) == 1:
        out = [np.array(v, copy=True) for v in out]
    return [np.array(_finish(P, op, v, n), copy=True) for v in out] if n else out


def _gather_all(op: str, name: Any, *rs: Any) -> list:
    return [np.stack(vs) for vs in zip(*(_vals(r, op, name) for r in rs))]


def _ident(x: Any) -> Any:
    return x


def _take(chunk: Any, i: int) -> Any:
    """Shard ``i`` of a chunk whose leading axis is the shard axis (a copy: the chunk may go)."""
    return np.array(np.asarray(chunk)[i], copy=True)


# ---------------------------------------------------------------------------
# driver side
# ---------------------------------------------------------------------------
def _host_array(x: Any, what: str) -> Any:
    if isinstance(x, rt.Tensor):
        if x._backend.name != "numpy":
            x = x.to_backend("numpy")
        return np.array(rt.to_numpy(x), copy=True)
    return x


def _dask_array(x: Any) -> Any:
    """The dask array behind a Dask-backed tensor, or None."""
    if isinstance(x, rt.Tensor) and x._backend.name == "dask":
        return x._data.arr
    return None


class PlanMismatch(ValueError):
    """A shard reached another collective than the plan recorded on an earlier call (the driver
    then runs the call again, finding the collectives phase by phase)."""


def run_cluster(client: Any, f: Callable, cache: dict, name: Any, in_axes: Any, out_axes: Any,
                use_jit: bool, args: tuple) -> Any:
    """``pmap(f)(*args)`` with each shard's phases as tasks of ``client``'s cluster.

    ``cache`` (one per ``pmap``) maps the arguments' structure to the pickled per-shard program
    and, after a first call, its *plan* (the collectives in order): later calls submit every
    phase at once and wait once."""

    spec_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
    leaves, tree = tree_flatten(args)
    axes = _prefix(spec_axes, args, "in_axes")
    sizes: dict[int, int] = {}
    norm: list = []
    for i, (x, a) in enumerate(zip(leaves, axes)):
        if a is None:
            norm.append(None)
            continue
        t = x if isinstance(x, rt.Tensor) else rt.asarray(x)
        if not -t.ndim <= a < t.ndim:
            raise ValueError(f"pmap: in_axes {a} is out of range for {_names(tree, len(leaves))[i]} of shape "
                             f"{t.shape}")
        norm.append(a % t.ndim)
        sizes[i] = t.shape[a % t.ndim]
        leaves[i] = t
    if len(set(sizes.values())) > 1:
        names = _names(tree, len(leaves))
        detail = ", ".join(f"{names[i]}: {k}" for i, k in sizes.items())
        raise ValueError(f"pmap: the mapped arguments have different shard counts ({detail})")
    if not sizes:
        raise ValueError("pmap: no argument is mapped (all in_axes are None): map at least one over the shards")
    n = next(iter(sizes.values()))
    ent = cache.get((tree, tuple(norm), n))
    if ent is None:
        # deferred: optional dependency, loaded on first use (and a heavy import)
        import cloudpickle
        blob = cloudpickle.dumps((f, tree, tuple(norm), name, n, use_jit, out_axes))
        ent = cache[(tree, tuple(norm), n)] = {"spec": (hashlib.blake2b(blob, digest_size=16).hexdigest(), blob),
                                               "plan": None}
    call = f"rt-pmap-{uuid.uuid4().hex[:12]}"
    futs: list = []  # every future of this call (released at the end)

    def submit(fn: Callable, *a: Any, key: str) -> Any:
        fut = client.submit(fn, *a, key=f"{call}-{key}", pure=False)
        futs.append(fut)
        return fut

    try:
        shared = [_host_array(x, "shared") for x, a in zip(leaves, norm) if a is None]
        shared_f = submit(_ident, shared, key="shared")
        mine: list[list] = [[] for _ in range(n)]
        for j, (x, a) in enumerate(zip(leaves, norm)):
            if a is None:
                continue
            darr = _dask_array(x)
            if darr is not None:
                if a != 0:
                    darr = darr.swapaxes(0, a)
                bounds = np.cumsum((0,) + tuple(darr.chunks[0]))
                blocks = [darr.blocks[b] for b in range(len(darr.chunks[0]))]
                chunk_f = client.compute(blocks)  # computed on the workers, where the chunks are made
                futs.extend(chunk_f)
                for s in range(n):
                    b = int(np.searchsorted(bounds, s, side="right")) - 1
                    mine[s].append(submit(_take, chunk_f[b], s - int(bounds[b]), key=f"take-{j}-{s}"))
            else:
                arr = np.moveaxis(_host_array(x, "mapped"), a, 0)
                for s in range(n):
                    mine[s].append(np.array(arr[s], copy=True))
        data_f = [submit(_ident, mine[s], key=f"data-{s}") for s in range(n)]
        spec = ent["spec"]
        if ent["plan"] is not None:
            try:
                return _planned(client, submit, spec, ent["plan"], name, shared_f, data_f, n, out_axes)
            except PlanMismatch:
                ent["plan"] = None
        out, ent["plan"] = _discover(client, submit, spec, name, shared_f, data_f, n, out_axes)
        return out
    finally:
        futs.clear()  # the call's futures are released: the workers drop their results


def _planned(client: Any, submit: Callable, spec: tuple, plan: list, name: Any, shared_f: Any, data_f: list,
             n: int, out_axes: Any) -> Any:
    """Every phase submitted at once, following ``plan``; one wait for the outputs."""
    supplied: list = []
    for k, op in enumerate(plan):
        ph = [submit(_phase, spec, s, shared_f, data_f[s], list(supplied), key=f"phase{k}-{s}") for s in range(n)]
        supplied.append(_collect(submit, op, name, ph, n, k))
    k = len(plan)
    ph = [submit(_phase, spec, s, shared_f, data_f[s], list(supplied), key=f"phase{k}-{s}") for s in range(n)]
    results = client.gather(ph)
    if any(r[0] != "done" for r in results):
        raise PlanMismatch("pmap: a shard went on past the planned collectives")
    return _assemble(results, n, out_axes)


def _discover(client: Any, submit: Callable, spec: tuple, name: Any, shared_f: Any, data_f: list, n: int,
              out_axes: Any) -> tuple:
    """Phase by phase, learning which collective each phase ends at; returns the outputs and the plan."""
    supplied: list = []
    plan: list = []
    for k in itertools.count():
        ph = [submit(_phase, spec, s, shared_f, data_f[s], list(supplied), key=f"phase{k}-{s}") for s in range(n)]
        metas = client.gather([submit(_meta, p, key=f"meta{k}-{s}") for s, p in enumerate(ph)])
        kinds = {m[0] for m in metas}
        if kinds == {"done"}:
            return _assemble(client.gather(ph), n, out_axes), plan
        if len(set(metas)) != 1:
            raise ValueError(f"pmap: the shards reached different collectives at collective {k} (shard 0: "
                             f"{_say(metas[0])}; " + "; ".join(f"shard {s}: {_say(m)}" for s, m in
                                                                 enumerate(metas) if m != metas[0])
                             + "): f must call the same collectives, in the same order, on every shard")
        op = metas[0][1]
        plan.append(op)
        supplied.append(_collect(submit, op, name, ph, n, k))
    raise AssertionError("unreachable")


def _say(m: tuple) -> str:
    if m[0] == "done":
        return "finished"
    return f"{m[1]} over {m[2]!r} of {len(m[3])} tensors {[s for s, _ in m[3]]}"


def _collect(submit: Callable, op: str, name: Any, ph: list, n: int, k: int) -> Any:
    """The tasks combining the shards' values for collective ``k`` in the fixed tree; returns the
    root future.  A subtree of at most :data:`GROUP` shards is one task (fewer hops between
    workers and the scheduler); larger ones are split as the tree splits them."""
    if op == "all_gather":
        return submit(_gather_all, op, name, *ph, key=f"coll{k}-gather")

    def tree(lo: int, hi: int) -> Any:
        last = n if (lo, hi) == (0, n) else 0
        if hi - lo <= GROUP:
            return submit(_subtree, op, name, last, *ph[lo:hi], key=f"coll{k}-{lo}-{hi}")
        h = lo + _split(hi - lo)
        return submit(_combine, op, name, last, tree(lo, h), tree(h, hi), key=f"coll{k}-{lo}-{hi}")
    return tree(0, n)


def _assemble(results: list, n: int, out_axes: Any) -> Any:
    o_tree = results[0][1]
    leaves = []
    for j, arr0 in enumerate(results[0][2]):
        d0 = results[0][3][j]
        if d0 is not None:
            for s in range(1, n):
                if results[s][3][j] != d0:
                    raise ValueError(f"pmap: out_axes None for output {j}, which differs between shards (shard 0 "
                                     f"and shard {s}); map it (out_axes=0) or make it the same on every shard "
                                     "(a collective)")
            leaves.append(rt.asarray(arr0) if isinstance(arr0, np.ndarray) else arr0)
            continue
        leaves.append(None)
    oa = results[0][4]
    for j in range(len(leaves)):
        if results[0][3][j] is not None:
            continue
        parts = [results[s][2][j] for s in range(n)]
        parts = [p if isinstance(p, np.ndarray) else np.asarray(p) for p in parts]
        a = oa[j]
        nd = parts[0].ndim + 1
        if not -nd <= a < nd:
            raise ValueError(f"pmap: out_axes {a} is out of range for an output of rank {nd - 1}")
        leaves[j] = rt.asarray(np.stack(parts, axis=a % nd))
    return tree_unflatten(o_tree, leaves)
