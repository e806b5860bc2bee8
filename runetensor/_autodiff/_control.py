"""Control flow (``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``) and
rematerialisation (``checkpoint``); ``vmap`` is in :mod:`._vmap`.

Control flow runs eagerly: a predicate that has one value runs one branch as Python would, so
``grad`` differentiates whatever ran (loops included, in both modes).  Under ``vmap`` a predicate
that differs from lane to lane runs both branches and selects per lane (``cond``, ``switch``), or
keeps looping until every lane is done, freezing the finished lanes (``while_loop``).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

from .._tensor import Tensor, as_tensor, wrap
from ._api import _lowered, _up_outputs, below, vjp
from .._tracers._batch import BatchedValueError
from ._pytree import leaf_names, tree_flatten, tree_map, tree_unflatten
from .._tracers._diff import Node, ReverseBackend
from .. import _dtypes as D
from .._elementwise import clip, where
from .._linalg import cond as linalg_cond
from .._creation import scalar
from .._combine import stack

__all__ = ["cond", "switch", "while_loop", "fori_loop", "scan", "checkpoint", "remat"]


# ---------------------------------------------------------------------------
# control flow
# ---------------------------------------------------------------------------
def _select(c: Tensor, a: Any, b: Any) -> Any:
    return tree_map(lambda x, y: where(c, x, y), a, b)


def _check_same(a: Any, b: Any, fname: str) -> None:
    la, ta = tree_flatten(a)
    lb, tb = tree_flatten(b)
    if ta != tb:
        raise TypeError(f"{fname}: the branches return different structures: {ta!r} and {tb!r}")
    for x, y in zip(la, lb):
        if getattr(x, "shape", None) != getattr(y, "shape", None):
            raise TypeError(f"{fname}: the branches return different shapes: {getattr(x, 'shape', None)} "
                            f"and {getattr(y, 'shape', None)}")


def cond(pred: Any, true_fn: Any = None, false_fn: Any = None, *operands: Any) -> Any:
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``.

    Eager: a predicate with one value runs one branch (and ``grad`` differentiates it).  Under
    ``vmap`` with a predicate that differs between lanes, both branches run and the results are
    selected per lane (the branches must return the same structure and shapes).

    ``rt.cond(a, p=None)`` with a matrix and no functions is the condition number (:func:`rt.linalg_cond`).

    Raises:
        TypeError: if the branches are not callable, or return different structures under vmap.

    >>> import runetensor as rt
    >>> x = rt.scalar(rt.float64, 3.)
    >>> print(rt.cond(x > 0, lambda v: v * 2, lambda v: -v, x))
    6
    >>> f = rt.vmap(lambda v: rt.cond(v > 0, lambda u: u * 2, lambda u: -u, v))
    >>> print(f(rt.create(rt.float64, [2], [3., -4.])))
    [6, 4]
    """
    if not callable(true_fn):
        if false_fn is None and not operands:
            return linalg_cond(pred, true_fn)
        raise TypeError("cond: expected cond(pred, true_fn, false_fn, *operands) with callable branches")
    if not callable(false_fn):
        raise TypeError(f"cond: false_fn must be callable, got {type(false_fn).__name__}")
    try:
        p = bool(pred)
    except BatchedValueError:
        a = true_fn(*operands)
        b = false_fn(*operands)
        _check_same(a, b, "cond")
        return _select(_as_bool(pred), a, b)
    return true_fn(*operands) if p else false_fn(*operands)


def _as_bool(p: Any) -> Tensor:
    t = p if isinstance(p, Tensor) else as_tensor(p, "cond")
    return t if t.dtype is D.bool else t != 0


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """``branches[index](*operands)``, the index clamped to ``[0, len(branches) - 1]`` (as JAX).

    Under ``vmap`` with an index that differs between lanes, every branch runs and the results
    are selected per lane.

    Raises:
        ValueError: for an empty list of branches.

    >>> import runetensor as rt
    >>> fs = [lambda v: v + 1, lambda v: v * 10, lambda v: -v]
    >>> print(rt.switch(1, fs, rt.scalar(rt.float32, 2.)))
    20
    """
    branches = list(branches)
    if not branches:
        raise ValueError("switch: expected at least one branch")
    k = len(branches)
    try:
        i = int(index)
    except BatchedValueError:
        idx = clip(index if isinstance(index, Tensor) else as_tensor(index, "switch"), 0, k - 1)
        outs = [b(*operands) for b in branches]
        for o in outs[1:]:
            _check_same(outs[0], o, "switch")
        r = outs[-1]
        for j in range(k - 2, -1, -1):
            r = _select(idx == j, outs[j], r)
        return r
    return branches[min(max(i, 0), k - 1)](*operands)


def _lanes_any(c: Tensor) -> bool:
    r = c._backend.value_range(c._data)
    return r is not None and bool(r[1])


def while_loop(cond_fn: Callable, body_fn: Callable, init: Any) -> Any:
    """``val = init; while cond_fn(val): val = body_fn(val)``; returns ``val``.

    Differentiable in both modes (the eager tape records the iterations that ran).  Under
    ``vmap`` with a condition that differs between lanes, the loop runs until every lane is
    done; a finished lane keeps its value.

    >>> import runetensor as rt
    >>> print(rt.while_loop(lambda v: v < 100, lambda v: v * 3, rt.scalar(rt.int32, 1)))
    243
    """
    val = init
    while True:
        c = cond_fn(val)
        try:
            go = bool(c)
        except BatchedValueError:
            return _batched_while(cond_fn, body_fn, val, _as_bool(c))
        if not go:
            return val
        val = body_fn(val)


def _batched_while(cond_fn: Callable, body_fn: Callable, val: Any, c: Tensor) -> Any:
    while _lanes_any(c):
        new = body_fn(val)
        _check_same(val, new, "while_loop")
        val = _select(c, new, val)
        c = c & _as_bool(cond_fn(val))
    return val


def fori_loop(lower: int, upper: int, body_fn: Callable, init: Any) -> Any:
    """``val = init; for i in range(lower, upper): val = body_fn(i, val)``; returns ``val``.

    ``i`` is a Python int when the bounds are; bounds that differ between lanes under ``vmap``
    go through :func:`while_loop` (``i`` is then a tensor).

    >>> import runetensor as rt
    >>> print(rt.fori_loop(0, 4, lambda i, v: v + i, rt.scalar(rt.int64, 0)))
    6
    """
    try:
        lo, hi = int(lower), int(upper)
    except BatchedValueError:
        start = lower if isinstance(lower, Tensor) else scalar(D.int64, int(lower))
        _, v = while_loop(lambda s: s[0] < upper, lambda s: (s[0] + 1, body_fn(s[0], s[1])), (start, init))
        return v
    val = init
    for i in range(lo, hi):
        val = body_fn(i, val)
    return val


def _check_carry(init: Any, carry: Any, i: int) -> None:
    """The carry after step ``i`` has ``init``'s structure, and each tensor leaf its shape and dtype."""
    a, ta = tree_flatten(init)
    b, tb = tree_flatten(carry)
    if ta != tb:
        raise ValueError(f"scan: f changed the carry's structure at iteration {i}: {ta!r} -> {tb!r}; the carry "
                         f"must keep the structure of init")
    names = None
    for j, (x, y) in enumerate(zip(a, b)):
        if isinstance(x, Tensor) and isinstance(y, Tensor) and (x.shape != y.shape or x.dtype is not y.dtype):
            names = names or leaf_names(ta, "carry")
            what = []
            if x.shape != y.shape:
                what.append(f"shape {tuple(x.shape)} -> {tuple(y.shape)}")
            if x.dtype is not y.dtype:
                what.append(f"dtype {x.dtype} -> {y.dtype}")
            raise ValueError(f"scan: f changed {names[j]} at iteration {i}: {', '.join(what)}; the carry must keep "
                             f"init's shapes and dtypes (cast or reshape inside f, or start from an init of the "
                             f"final shape and dtype)")


def scan(f: Callable, init: Any, xs: Any = None, length: int | None = None, reverse: bool = False) -> tuple:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns ``(carry, ys)`` with the
    ``y`` stacked along a new leading axis (pytrees throughout).

    Args:
        f: ``(carry, x) -> (carry, y)``.
        init: the initial carry.
        xs: a pytree of tensors with a common leading size, or None (then ``length`` is needed
            and ``x`` is None).
        length: the number of steps when ``xs`` is None (checked against it otherwise).
        reverse: loop from the last slice to the first (``ys`` stay in the order of ``xs``).

    Raises:
        ValueError: for leading sizes that differ, no ``xs`` and no ``length``, a negative
            ``length``, or a carry whose structure, shapes or dtypes change between iterations
            (the error names the leaf's path, ``carry[0]['h']``, and the old and new shape/dtype).
        TypeError: for a non-integer ``length``, or ``f`` not returning a pair.

    >>> import runetensor as rt
    >>> carry, ys = rt.scan(lambda c, x: (c + x, c * x), rt.scalar(rt.float32, 0.),
    ...                     rt.create(rt.float32, [4], [1., 2., 3., 4.]))
    >>> print(carry, ys)
    10 [0, 2, 9, 24]
    """
    x_leaves, x_tree = tree_flatten(xs)
    ns = {x.shape[0] if getattr(x, "ndim", 0) else None for x in x_leaves}
    if None in ns:
        raise ValueError("scan: every leaf of xs needs a leading axis")
    if length is not None:
        if isinstance(length, bool) or not hasattr(length, "__index__"):
            raise TypeError(f"scan: length must be an int, got {type(length).__name__} {length!r}")
        length = length.__index__()
        if length < 0:
            raise ValueError(f"scan: length must be >= 0, got {length}")
        ns.add(length)
    if len(ns) > 1:
        raise ValueError(f"scan: the leading sizes differ: {sorted(ns)}")
    if not ns:
        raise ValueError("scan: give xs or length")
    n = ns.pop()
    carry = init
    ys: list[Any] = [None] * n
    order = range(n - 1, -1, -1) if reverse else range(n)
    for i in order:
        x = tree_unflatten(x_tree, [v[i] for v in x_leaves]) if x_leaves else None
        r = f(carry, x)
        if not (isinstance(r, tuple) and len(r) == 2):
            raise TypeError("scan: f must return a pair (carry, y)")
        carry, ys[i] = r
        _check_carry(init, carry, i)
    if n == 0:
        return carry, None
    y_leaves0, y_tree = tree_flatten(ys[0])
    cols = [tree_flatten(y)[0] for y in ys]
    stacked = [stack([c[j] for c in cols], axis=0) for j in range(len(y_leaves0))]
    return carry, tree_unflatten(y_tree, stacked)


# ---------------------------------------------------------------------------
# rematerialisation
# ---------------------------------------------------------------------------
def checkpoint(f: Callable) -> Callable:
    """``f`` whose intermediates are recomputed in the backward pass instead of kept (alias ``remat``).

    Under reverse-mode differentiation the wrapped call keeps only its inputs; the backward
    pass runs ``f`` again to differentiate it.  Values and gradients are those of ``f``.

    >>> import runetensor as rt
    >>> layer = rt.checkpoint(lambda x: rt.tanh(x) * 2)
    >>> print(rt.grad(lambda x: rt.sum(layer(x)))(rt.create(rt.float64, [2], [0., 1.])))
    [2, 0.839949]
    """
    if not callable(f):
        raise TypeError(f"checkpoint: expected a function, got {type(f).__name__}")

    @functools.wraps(f)
    def wrapped(*args: Any) -> Any:
        low = _lowered(args)
        if low is None or not isinstance(low[0], ReverseBackend):
            return f(*args)
        B, tree, lows, pays = low
        with below(B):
            out = f(*tree_unflatten(tree, lows))
        o_leaves, o_tree = tree_flatten(out)
        avals = tuple((o.shape, o._dtype) for o in o_leaves)
        diff = tuple(i for i, p in enumerate(pays) if p is not None)
        # the node keeps only what the recomputation needs: the inputs and the structures
        rec = (f, tree, tuple(lows), diff, o_tree, avals, B.parent)
        node = Node(tuple(pays), functools.partial(_remat_vjp, rec), avals)
        return _up_outputs(B, out, lambda i, o: (node, i))
    return wrapped


def _remat_vjp(rec: tuple, g: Any) -> tuple:
    """The reverse rule of a checkpointed call: run it again under ``vjp`` and pull ``g`` back."""
    f, tree, lows, diff, o_tree, avals, parent = rec
    gs = g if isinstance(g, tuple) else (g,)
    ct = tree_unflatten(o_tree, [wrap(h, d, parent) for h, (_, d) in zip(gs, avals)])

    def again(*xs: Any) -> Any:
        full = list(lows)
        for i, x in zip(diff, xs):
            full[i] = x
        return f(*tree_unflatten(tree, full))
    _, fn = vjp(again, *[lows[i] for i in diff], _parent=parent)
    got = fn(ct)
    res: list = [None] * len(lows)
    for i, c in zip(diff, got):
        res[i] = c._data
    return tuple(res)


remat = checkpoint
