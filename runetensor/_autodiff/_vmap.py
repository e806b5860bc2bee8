"""``vmap``: a function vectorised over a batch axis, on the batching backend (:mod:`._batch`).

``in_axes``/``out_axes`` are ints, None or pytree prefixes of the arguments / results; each mapped
argument's batch axis is carried by a :class:`~._batch.BatchTracer` and moved to ``out_axes`` at the end.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from .._tensor import Tensor, as_tensor, wrap
from ._api import _top
from .._tracers._batch import BatchBackend, BatchTracer, move_out
from ._pytree import argument_names, tree_flatten, tree_leaves, tree_unflatten
from .._tracers._diff import state

__all__ = ["vmap"]


def _prefix(spec: Any, x: Any, what: str) -> list:
    """``spec`` (an int/None, or a pytree prefix of ``x``) expanded to one entry per leaf of ``x``."""
    if spec is None or (isinstance(spec, int) and not isinstance(spec, bool)):
        return [spec] * len(tree_leaves(x))
    if isinstance(spec, (tuple, list)) and isinstance(x, (tuple, list)):
        if len(spec) != len(x):
            raise ValueError(f"vmap: {what} has {len(spec)} entries for {len(x)} values")
        out = []
        for s, v in zip(spec, x):
            out += _prefix(s, v, what)
        return out
    if isinstance(spec, dict) and isinstance(x, dict):
        if set(spec) != set(x):
            raise ValueError(f"vmap: {what} has keys {sorted(spec)}, the value has {sorted(x)}")
        out = []
        for k in sorted(x):
            out += _prefix(spec[k], x[k], what)
        return out
    raise ValueError(f"vmap: {what} must be an int, None or a pytree prefix of the values, got {spec!r}")


def _flat_tensors(args: tuple) -> bool:
    for a in args:
        if type(a) is not Tensor:
            return False
    return True


def vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None,
         axis_name: Any = None) -> Callable:
    """Vectorise ``f`` over a batch axis: ``vmap(f)(xs)`` stacks ``f(x)`` for each slice ``x`` of ``xs``.

    Every primitive carries the batch axis (nothing loops over the batch in Python); ``vmap``
    composes with ``grad``, ``jvp`` and itself in any order.

    Args:
        f: a function of pytrees of tensors.
        in_axes: for each positional argument, the axis to map over (negative counts from the
            end), ``None`` for an argument shared by every lane, or a pytree prefix of the
            arguments (a tuple with one entry per argument, dicts by key).
        out_axes: where the batch axis goes in each output (an int, or a pytree prefix of the outputs).
        axis_size: the batch size, needed only when no argument is mapped.
        axis_name: a hashable name for the batch axis, so that collectives inside ``f``
            (``rt.psum(x, axis_name)``, ``rt.pmean``, ``rt.pmax``, ``rt.all_gather``,
            ``rt.axis_index``) reduce over it (see ``rt.pmap``).

    Returns:
        The vectorised function.

    Raises:
        ValueError: (when called) for mapped arguments of different sizes (naming them), an
            axis out of range, or no mapped argument without ``axis_size``; inside ``f``,
            reading a value that differs between lanes as one Python value (``float(t)``,
            ``if t > 0:``) raises ``ValueError`` pointing to ``rt.where`` / ``rt.cond``.

    Random numbers: functions taking a *seed* give every lane the same numbers; pass a batch
    of keys to give each lane its own.

    >>> import runetensor as rt
    >>> xs = rt.create(rt.float32, [3, 2], [1., 2., 3., 4., 5., 6.])
    >>> print(rt.vmap(lambda x: rt.sum(x * x))(xs))
    [5, 25, 61]
    >>> print(rt.vmap(lambda x, w: x @ w, in_axes=(0, None))(xs, rt.create(rt.float32, [2], [1., -1.])))
    [-1, -1, -1]
    """
    if not callable(f):
        raise TypeError(f"vmap: expected a function, got {type(f).__name__}")
    if axis_name is not None:
        try:
            hash(axis_name)
        except TypeError:
            raise TypeError(f"vmap: axis_name must be hashable, got {type(axis_name).__name__}") from None

    @functools.wraps(f)
    def vf(*args: Any) -> Any:
        spec = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        if _flat_tensors(args):  # every argument a tensor: no pytree work (the structure is args itself)
            axes = [spec] * len(args) if spec is None or type(spec) is int else \
                list(spec) if type(spec) is tuple and len(spec) == len(args) and \
                all(a is None or type(a) is int for a in spec) else _prefix(spec, args, "in_axes")
            leaves, tree = list(args), None
        else:
            axes = _prefix(spec, args, "in_axes")
            leaves, tree = tree_flatten(args)
        sizes: dict[int, int] = {}
        ts: list[Any] = []
        for i, (x, a) in enumerate(zip(leaves, axes)):
            if a is None:
                ts.append(x)
                continue
            t = x if isinstance(x, Tensor) else as_tensor(x, "vmap")
            if not -t.ndim <= a < t.ndim:
                raise ValueError(f"vmap: in_axes {a} is out of range for {argument_names(tree, len(leaves))[i]} "
                                 f"of shape {t.shape}")
            sizes[i] = t.shape[a % t.ndim]
            ts.append(t)
        distinct = set(sizes.values())
        if axis_size is not None:
            distinct.add(axis_size)
        if len(distinct) > 1:
            names = argument_names(tree, len(leaves))
            detail = ", ".join(f"{names[i]}: {n}" for i, n in sizes.items())
            raise ValueError(f"vmap: the mapped arguments have different batch sizes ({detail}"
                             f"{'; axis_size ' + str(axis_size) if axis_size is not None else ''})")
        if not distinct:
            raise ValueError("vmap: no argument is mapped (all in_axes are None): give axis_size")
        n = distinct.pop()
        P = _top([t for t in ts if isinstance(t, Tensor)])
        B = BatchBackend(P, n, axis_name)
        ins = []
        for t, a in zip(ts, axes):
            if a is None:
                ins.append(t)
            else:
                ins.append(wrap(BatchTracer(B, t._data, a % t.ndim), t._dtype, B))
        state.stack.append(B)
        try:
            out = f(*ins) if tree is None else f(*tree_unflatten(tree, ins))
        finally:
            state.stack.pop()
        if type(out) is Tensor and (out_axes is None or type(out_axes) is int):
            o_leaves, o_tree, oa = [out], None, [out_axes]
        else:
            o_leaves, o_tree = tree_flatten(out)
            oa = _prefix(tuple(out_axes) if isinstance(out_axes, list) else out_axes, out, "out_axes")
        res = []
        for o, a in zip(o_leaves, oa):
            if not isinstance(o, Tensor):
                o = as_tensor(o, "vmap")
            if a is None:
                if o._backend is B and o._data.bdim is not None:
                    raise ValueError("vmap: out_axes None for an output that differs between lanes")
                res.append(wrap(o._data.primal, o._dtype, P) if o._backend is B else o)
                continue
            h = o._data if o._backend is B else B._w(o._data, None)
            nd = o.ndim + 1
            if not -nd <= a < nd:
                raise ValueError(f"vmap: out_axes {a} is out of range for an output of rank {o.ndim}")
            res.append(wrap(move_out(B, h, a % nd), o._dtype, P))
        return res[0] if o_tree is None else tree_unflatten(o_tree, res)
    return vf
