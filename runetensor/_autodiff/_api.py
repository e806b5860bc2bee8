"""The automatic-differentiation API: ``vjp``, ``jvp``, ``grad`` and what is built on them.

See ``docs/autodiff.md`` for the semantics.  Every function here is eager: the user's function
runs once per call on tracer-backed tensors (see :mod:`._trace`), so values can be read and
printed inside it.
"""
from __future__ import annotations

import contextlib
import functools
import math
from typing import Any, Callable, Iterator, Sequence

from .. import _dtypes as D
from .._backend.contract import Backend
from .._primitives import cast_like
from .._tensor import Tensor, as_tensor, wrap
from ._pytree import tree_flatten, tree_unflatten
from .._tracers._diff import ForwardBackend, Node, ReverseBackend, TraceBackend, Tracer, state
from .._backend import get_backend
from .._combine import stack
from .._seeded_random import rand
from .._reduction import max as rmax
from .._reduction import sum as rsum

__all__ = ["vjp", "jvp", "grad", "value_and_grad", "linearize", "jacfwd", "jacrev", "hessian", "hvp",
           "stop_gradient", "detach", "no_grad", "custom_vjp", "custom_jvp", "check_grads"]


# ---------------------------------------------------------------------------
# levels
# ---------------------------------------------------------------------------
def _top(ts: Sequence[Any], parent: Backend | None = None) -> Backend:
    """The backend a new transformation stacks on: the highest level among the operands and
    the transformations running now (or ``parent`` when given)."""
    if parent is not None:
        return parent
    best: Backend | None = state.stack[-1] if state.stack else None
    for t in ts:
        if isinstance(t, Tensor):
            b = t._backend
            if best is None or b.level > best.level:
                best = b
    if best is None:
        best = get_backend()
    return best


def _diff_tensor(x: Any, fname: str, i: int) -> Tensor:
    t = x if isinstance(x, Tensor) else as_tensor(x, fname)
    if t._dtype.kind not in "fc":
        raise TypeError(f"{fname}: argument {i} has dtype {t._dtype}; only float and complex tensors can be "
                        "differentiated (cast it, or close over it as a constant)")
    return t


def _lower(o: Any, B: TraceBackend) -> tuple[Any, Any]:
    """(the value one level down, its payload at ``B``) of an output leaf."""
    if isinstance(o, Tensor) and o._backend is B:
        p, pay = B._in(o._data)
        return wrap(p, o._dtype, B.parent), pay
    return o, None


def _lower_tree(x: Any, B: TraceBackend) -> Any:
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [_lower(o, B)[0] for o in leaves])


def _handle_at(x: Any, like: Tensor, P: Backend, fname: str, what: str) -> Any:
    """``x`` as a handle usable at level ``P`` with ``like``'s shape and dtype."""
    t = x if isinstance(x, Tensor) else as_tensor(x, fname, dtype=like._dtype)
    if t.shape != like.shape:
        raise ValueError(f"{fname}: {what} has shape {t.shape}, expected {like.shape}")
    if t._dtype is not like._dtype:
        if t._dtype.kind not in "fc" or (like._dtype.kind != "c" and t._dtype.kind == "c"):
            raise TypeError(f"{fname}: {what} has dtype {t._dtype}, expected {like._dtype}")
        return t._backend.cast(t._data, like._dtype)
    return t._data


# ---------------------------------------------------------------------------
# vjp / jvp
# ---------------------------------------------------------------------------
def vjp(f: Callable, *primals: Any, has_aux: bool = False, _parent: Backend | None = None) -> tuple:
    """Run ``f(*primals)`` and return its value with a function computing vector-Jacobian products.

    Args:
        f: a function of pytrees of tensors returning a pytree of tensors (with ``has_aux``, a
            pair ``(output, aux)``; ``aux`` is returned as it is, not differentiated).
        *primals: the arguments (pytrees of float or complex tensors).
        has_aux: whether ``f`` returns ``(output, aux)``.

    Returns:
        ``(out, vjp_fn)`` (``(out, vjp_fn, aux)`` with ``has_aux``): ``vjp_fn(ct)`` takes a
        cotangent shaped like ``out`` and returns a tuple with one cotangent per primal, each
        with its primal's structure, shapes and dtypes.  ``vjp_fn`` may be called many times.

    Raises:
        TypeError: if a primal is not float or complex, or a cotangent has the wrong dtype.
        ValueError: if a cotangent has the wrong shape or structure.

    >>> import runetensor as rt
    >>> x = rt.asarray([1., 2., 3.])
    >>> y, f_vjp = rt.vjp(lambda x: x * x, x)
    >>> print(f_vjp(rt.asarray([1., 10., 100.]))[0])
    [2, 40, 600]
    """
    tr = _trace_rev(f, primals, has_aux, _parent, "vjp")
    out_tree, lows = tr.out_tree, tr.lows

    def vjp_fn(ct: Any) -> tuple:
        if type(ct) is Tensor and out_tree is _LEAF:
            c_leaves = [ct]
        else:
            c_leaves, c_tree = tree_flatten(ct)
            if c_tree != out_tree:
                raise ValueError(f"vjp: the cotangent's structure {c_tree!r} does not match the output's "
                                 f"{out_tree!r}")
        cts = [_handle_at(c, lo, tr.P, "vjp", f"the cotangent of output {k}") for k, (c, lo) in
               enumerate(zip(c_leaves, lows))]
        return tuple(tree_unflatten(tr.tree, _pull(tr, cts)))

    res = lows[0] if out_tree is _LEAF else tree_unflatten(out_tree, lows)
    return (res, vjp_fn, tr.aux) if has_aux else (res, vjp_fn)


_LEAF = tree_flatten(0)[1]
_TUPLE_TREES: dict[int, Any] = {}


def _flat_args(primals: tuple) -> tuple[list, Any]:
    """``tree_flatten(primals)``, with a shortcut for a tuple of tensors."""
    for p in primals:
        if type(p) is not Tensor:
            return tree_flatten(primals)
    n = len(primals)
    tree = _TUPLE_TREES.get(n)
    if tree is None:
        tree = _TUPLE_TREES[n] = tree_flatten(tuple(range(n)))[1]
    return list(primals), tree


class _Traced:
    """A function traced in reverse mode: what ``_pull`` needs to compute cotangents."""

    __slots__ = ("B", "P", "ts", "tree", "nodes", "lows", "pays", "out_tree", "aux")


def _trace_rev(f: Callable, primals: tuple, has_aux: bool, parent: Backend | None, fname: str) -> _Traced:
    leaves, tree = _flat_args(primals)
    ts = [x if type(x) is Tensor and x._dtype.kind in "fc" else _diff_tensor(x, fname, i)
          for i, x in enumerate(leaves)]
    P = _top(ts, parent)
    B = ReverseBackend(P)
    ins = [wrap(B.new_input(t._data), t._dtype, B) for t in ts]
    stack = state.stack
    stack.append(B)
    try:
        out = f(*ins) if tree is _TUPLE_TREES.get(len(ins)) else f(*tree_unflatten(tree, ins))
    finally:
        stack.pop()
    tr = _Traced()
    tr.aux = None
    if has_aux:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"{fname}: with has_aux=True the function must return a pair (output, aux)")
        out, aux = out
        tr.aux = _lower_tree(aux, B)
    elif fname == "grad" and isinstance(out, (tuple, list)):
        kinds = ", ".join(type(o).__name__ for o in out)
        raise TypeError(f"grad: the function returned a {type(out).__name__} ({kinds}), not a scalar tensor; if it "
                        f"returns (loss, aux), pass has_aux=True to rt.grad / rt.value_and_grad (the gradient is "
                        f"then taken of the first element and aux is returned alongside)")
    if type(out) is Tensor:
        out_leaves, out_tree = [out], _LEAF
    else:
        out_leaves, out_tree = tree_flatten(out)
    lows = []
    pays = []
    for o in out_leaves:
        if not isinstance(o, Tensor):
            o = as_tensor(o, fname)
        lo, pay = _lower(o, B)
        lows.append(lo)
        pays.append(pay)
    tr.B, tr.P, tr.ts, tr.tree, tr.lows, tr.pays, tr.out_tree = B, P, ts, tree, lows, pays, out_tree
    tr.nodes = [i._data.payload[0] for i in ins]
    return tr


_ONES: dict[Any, Any] = {}


def _one(P: Backend, d: D.DType) -> Any:
    """A 0-d 1 of dtype ``d`` at level ``P`` (kept for computing backends: rules never write into
    cotangents, and ``_pull`` copies a gradient that is one of them)."""
    if P.level:
        return P.full((), 1, d)
    k = (P, d)
    h = _ONES.get(k)
    if h is None:
        h = _ONES[k] = P.full((), 1, d)
    return h


def _is_one_of(g: Any, hs: list) -> bool:
    for h in hs:
        if g is h:
            return True
    return False


def _pull(tr: _Traced, cts: list) -> list:
    """The cotangents (tensors at the parent level, one per differentiated leaf) for output cotangents ``cts``."""
    P = tr.P
    got = tr.B.backward(tr.pays, cts)
    grads = []
    for t, n in zip(tr.ts, tr.nodes):
        slot = got.get(n)
        g = slot[0] if slot else None
        d = t._dtype
        if g is None:
            g = P.full(t.shape, 0, d)
        else:
            if P.dtype(g) is not d:
                g = cast_like(P, g, d)
            if g.shape != t.shape:
                g = P.copy(P.expand(g, t.shape))
            elif not P.is_c_contiguous(g) or _is_one_of(g, cts):
                g = P.copy(g)
        grads.append(wrap(g, d, P))
    return grads


def jvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any], has_aux: bool = False,
        _parent: Backend | None = None) -> tuple:
    """Run ``f(*primals)`` and push ``tangents`` forward: the Jacobian-vector product.

    Args:
        f: a function of pytrees of tensors returning a pytree of tensors.
        primals: a tuple (or list) of arguments.
        tangents: a tuple of the same structure, shapes and dtypes.
        has_aux: whether ``f`` returns ``(output, aux)``.

    Returns:
        ``(out, tangent_out)`` (``(out, tangent_out, aux)`` with ``has_aux``).

    Raises:
        TypeError: if ``primals`` is not a tuple/list, a primal is not float or complex.
        ValueError: if the tangents do not match the primals' structure or shapes.

    >>> import runetensor as rt
    >>> out, t = rt.jvp(rt.sin, (rt.asarray([0., 1.]),), (rt.asarray([1., 1.]),))
    >>> print(t)
    [1, 0.540302]
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (or lists) of arguments")
    leaves, tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if t_tree != tree:
        raise ValueError(f"jvp: the tangents' structure {t_tree!r} does not match the primals' {tree!r}")
    ts = [_diff_tensor(x, "jvp", i) for i, x in enumerate(leaves)]
    P = _top(ts + [t for t in t_leaves if isinstance(t, Tensor)], _parent)
    B = ForwardBackend(P)
    in_tangents = [_handle_at(tv, t, P, "jvp", f"tangent {i}") for i, (t, tv) in enumerate(zip(ts, t_leaves))]
    ins = [wrap(B.new_input(t._data, tg), t._dtype, B) for t, tg in zip(ts, in_tangents)]
    state.stack.append(B)
    try:
        out = f(*tree_unflatten(tree, ins))
    finally:
        state.stack.pop()
    aux = None
    if has_aux:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError("jvp: with has_aux=True the function must return a pair (output, aux)")
        out, aux = out
        aux = _lower_tree(aux, B)
    out_leaves, out_tree = tree_flatten(out)
    lows, touts = [], []
    for o in out_leaves:
        if not isinstance(o, Tensor):
            o = as_tensor(o, "jvp")
        lo, pay = _lower(o, B)
        lows.append(lo)
        if pay is None:
            pay = P.full(lo.shape, 0, lo._dtype)
        elif pay.shape != lo.shape or not P.is_c_contiguous(pay) or _is_one_of(pay, in_tangents):
            pay = P.copy(P.expand(pay, lo.shape) if pay.shape != lo.shape else pay)
        touts.append(wrap(pay, lo._dtype, P))
    res = (tree_unflatten(out_tree, lows), tree_unflatten(out_tree, touts))
    return res + (aux,) if has_aux else res


# ---------------------------------------------------------------------------
# grad and friends
# ---------------------------------------------------------------------------
def _argnums(argnums: int | Sequence[int], nargs: int, fname: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise ValueError(f"{fname}: argnums must name at least one argument")
    out = []
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise TypeError(f"{fname}: argnums must be ints, got {a!r}")
        if not -nargs <= a < nargs:
            raise ValueError(f"{fname}: argnums {a} is out of range for a call with {nargs} positional arguments")
        out.append(a % nargs)
    return tuple(out)


def _partial(f: Callable, args: tuple, kwargs: dict, nums: tuple[int, ...]) -> tuple[Callable, tuple]:
    def fd(*dargs: Any) -> Any:
        a = list(args)
        for i, v in zip(nums, dargs):
            a[i] = v
        return f(*a, **kwargs)
    return fd, tuple(args[i] for i in nums)


def value_and_grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """Like :func:`grad`, but the new function returns ``(value, gradient)``
    (``((value, aux), gradient)`` with ``has_aux``).

    >>> import runetensor as rt
    >>> v, g = rt.value_and_grad(lambda x: rt.sum(x ** 2))(rt.asarray([1., 2.]))
    >>> print(v, g)
    5 [2, 4]
    """
    if not callable(f):
        raise TypeError(f"value_and_grad: expected a function, got {type(f).__name__}")

    single = isinstance(argnums, int)

    @functools.wraps(f)
    def vg(*args: Any, **kwargs: Any) -> Any:
        if single and argnums == 0 and len(args) == 1 and not kwargs:
            fd, dyn = f, args
        else:
            nums = _argnums(argnums, len(args), "grad")
            fd, dyn = _partial(f, args, kwargs, nums)
        tr = _trace_rev(fd, dyn, has_aux, None, "grad")
        out = tr.lows[0] if tr.out_tree is _LEAF else None
        if out is None or out.shape != ():
            shape = getattr(out, "shape", None) if out is not None else \
                tree_unflatten(tr.out_tree, [getattr(o, "shape", None) for o in tr.lows])
            raise TypeError(f"grad: the function must return a scalar tensor (shape ()), got shape {shape}; "
                            "use rt.vjp or rt.jacrev for non-scalar outputs")
        if out._dtype.kind != "f":
            raise TypeError(f"grad: the function must return a real float scalar, got {out._dtype}")
        grads = _pull(tr, [_one(tr.P, out._dtype)])
        g = grads[0] if single and tr.tree is _TUPLE_TREES.get(1) else tree_unflatten(tr.tree, grads)
        if single and type(g) is tuple:
            g = g[0]
        return ((out, tr.aux), g) if has_aux else (out, g)
    return vg


def grad(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar-valued function, as a new function.

    Args:
        f: a function returning a real scalar tensor (shape ``()``).
        argnums: which positional argument(s) to differentiate (an int, or a tuple of ints: then
            the gradient is a tuple).
        has_aux: whether ``f`` returns ``(scalar, aux)``; the new function then returns
            ``(gradient, aux)``.

    Returns:
        A function with ``f``'s arguments returning the gradient (same structure, shapes and
        dtypes as the differentiated arguments).

    Raises:
        TypeError: (when called) if the output is not a real scalar, or a differentiated
            argument is not a float or complex tensor.

    >>> import runetensor as rt
    >>> print(rt.grad(lambda x: rt.sum(x * x))(rt.asarray([1., 2., 3.])))
    [2, 4, 6]
    >>> print(rt.grad(rt.grad(lambda x: x ** 3))(rt.asarray(2.)))
    12
    """
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def g(*args: Any, **kwargs: Any) -> Any:
        r = vg(*args, **kwargs)
        return (r[1], r[0][1]) if has_aux else r[1]
    return g


def linearize(f: Callable, *primals: Any) -> tuple[Any, Callable]:
    """``(f(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the Jacobian-vector product at ``primals``.

    ``f_jvp`` runs ``f`` forward again with the tangents (eager tracing keeps no graph to
    replay); its results equal ``jvp(f, primals, tangents)[1]``.

    >>> import runetensor as rt
    >>> y, f_jvp = rt.linearize(rt.exp, rt.asarray([0., 1.]))
    >>> print(f_jvp(rt.asarray([1., 2.])))
    [1, 5.43656]
    """
    zeros = [_zeros_tree(p) for p in primals]
    out, _ = jvp(f, primals, zeros)

    def f_jvp(*tangents: Any) -> Any:
        return jvp(f, primals, tangents)[1]
    return out, f_jvp


def _zeros_tree(x: Any) -> Any:
    leaves, tree = tree_flatten(x)
    zs = []
    for i, v in enumerate(leaves):
        t = _diff_tensor(v, "linearize", i)
        zs.append(wrap(t._backend.full(t.shape, 0, t._dtype), t._dtype, t._backend))
    return tree_unflatten(tree, zs)


def _basis(t: Tensor, k: int) -> Tensor:
    be = t._backend
    h = be.full((t.size,), 0, t._dtype)
    be.scatter(h, (k,), 1)
    return wrap(be.reshape(h, t.shape), t._dtype, be)


def _stack_jac(rows: list[Tensor], lead: tuple, tail: tuple, d: D.DType, be: Backend) -> Tensor:
    """Stack per-element derivatives (each shaped ``tail``) into ``lead + tail``."""
    if not rows:
        return wrap(be.full(lead + tail, 0, d), d, be)
    return stack(rows, axis=0).reshape(lead + tail)


def jacrev(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The Jacobian of ``f`` by reverse mode (one vector-Jacobian product per output element).

    The Jacobian of an output of shape ``S`` with respect to an argument of shape ``T`` has
    shape ``S + T``; with several outputs or arguments the result nests as the outputs' pytree
    of the arguments' pytrees.

    >>> import runetensor as rt
    >>> print(rt.jacrev(lambda x: x * x)(rt.asarray([1., 2.])))
    [[2, 0],
     [0, 4]]
    """
    @functools.wraps(f)
    def jac(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacrev")
        fd, dyn = _partial(f, args, kwargs, nums)
        r = vjp(fd, *dyn, has_aux=has_aux)
        out, fn = r[0], r[1]
        o_leaves, o_tree = tree_flatten(out)
        in_leaves, in_tree = tree_flatten(dyn)
        per_out = []
        for j, o in enumerate(o_leaves):
            rows: list[list[Tensor]] = [[] for _ in in_leaves]
            for k in range(o.size):
                ct = [(_basis(o, k) if jj == j else wrap(o2._backend.full(o2.shape, 0, o2._dtype), o2._dtype,
                                                          o2._backend)) for jj, o2 in enumerate(o_leaves)]
                g_leaves = tree_flatten(fn(tree_unflatten(o_tree, ct)))[0]
                for i, gl in enumerate(g_leaves):
                    rows[i].append(gl)
            jacs = [_stack_jac(rows[i], o.shape, t.shape, t.dtype, o._backend) for i, t in enumerate(in_leaves)]
            jt = tree_unflatten(in_tree, jacs)
            per_out.append(jt[0] if isinstance(argnums, int) else jt)
        res = tree_unflatten(o_tree, per_out)
        return (res, r[2]) if has_aux else res
    return jac


def jacfwd(f: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable:
    """The Jacobian of ``f`` by forward mode (one Jacobian-vector product per input element).

    Same shapes and nesting as :func:`jacrev`.

    >>> import runetensor as rt
    >>> print(rt.jacfwd(lambda x: rt.sum(x * x))(rt.asarray([1., 2.])))
    [2, 4]
    """
    @functools.wraps(f)
    def jac(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacfwd")
        fd, dyn = _partial(f, args, kwargs, nums)
        in_leaves, in_tree = tree_flatten(dyn)
        in_ts = [_diff_tensor(x, "jacfwd", i) for i, x in enumerate(in_leaves)]
        zeros = [wrap(t._backend.full(t.shape, 0, t._dtype), t._dtype, t._backend) for t in in_ts]
        cols: list[list[list[Tensor]]] = []  # [input][element] -> output tangent leaves
        out = aux = o_tree = None
        for i, t in enumerate(in_ts):
            per = []
            for k in range(max(t.size, 0)):
                tang = [(_basis(t, k) if ii == i else z) for ii, z in enumerate(zeros)]
                r = jvp(fd, tree_unflatten(in_tree, in_ts), tree_unflatten(in_tree, tang), has_aux=has_aux)
                out, tout = r[0], r[1]
                if has_aux:
                    aux = r[2]
                o_leaves, o_tree = tree_flatten(tout)
                per.append(o_leaves)
            cols.append(per)
        if out is None:  # every argument is empty: one evaluation for the output's structure
            r = jvp(fd, tree_unflatten(in_tree, in_ts), tree_unflatten(in_tree, zeros), has_aux=has_aux)
            out = r[0]
            aux = r[2] if has_aux else None
        o_leaves, o_tree = tree_flatten(out)
        per_out = []
        for j, o in enumerate(o_leaves):
            jacs = []
            for i, t in enumerate(in_ts):
                rows = [cols[i][k][j] for k in range(t.size)]
                if rows:
                    m = stack(rows, axis=-1).reshape(o.shape + t.shape)
                else:
                    m = wrap(o._backend.full(o.shape + t.shape, 0, o._dtype), o._dtype, o._backend)
                jacs.append(m)
            jt = tree_unflatten(in_tree, jacs)
            per_out.append(jt[0] if isinstance(argnums, int) else jt)
        res = tree_unflatten(o_tree, per_out)
        return (res, aux) if has_aux else res
    return jac


def hessian(f: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The Hessian of a scalar function: ``jacfwd(jacrev(f))``; shape ``T + T`` for an argument of shape ``T``.

    >>> import runetensor as rt
    >>> print(rt.hessian(lambda x: rt.sum(x ** 3))(rt.asarray([1., 2.])))
    [[6, 0],
     [0, 12]]
    """
    return jacfwd(jacrev(f, argnums), argnums)


def hvp(f: Callable, primals: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The Hessian-vector product of a scalar function at ``primals`` along ``tangents``
    (forward over reverse: ``jvp(grad(f), primals, tangents)[1]``), without forming the Hessian.

    >>> import runetensor as rt
    >>> print(rt.hvp(lambda x: rt.sum(x ** 3), (rt.asarray([1., 2.]),), (rt.asarray([1., 1.]),)))
    [6, 12]
    """
    nums = tuple(range(len(primals)))
    r = jvp(grad(f, argnums=nums if len(nums) != 1 else 0), primals, tangents)[1]
    return r


# ---------------------------------------------------------------------------
# stopping gradients
# ---------------------------------------------------------------------------
def stop_gradient(x: Any) -> Any:
    """The same values, as constants for every transformation (a pytree is mapped leaf by leaf).

    Outside a transformation this returns ``x`` itself; inside, a copy that carries no derivative.

    >>> import runetensor as rt
    >>> print(rt.grad(lambda x: rt.sum(x * rt.stop_gradient(x)))(rt.asarray([1., 2.])))
    [1, 2]
    """
    if type(x) is Tensor:  # one tensor: no pytree walk
        return _stopped(x)
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [_stopped(t) for t in leaves])


def _stopped(t: Any) -> Any:
    """One leaf of :func:`stop_gradient`: a traced tensor's value copied at the first computing level."""
    if isinstance(t, Tensor) and t._backend.level > 0:
        h, be = t._data, t._backend
        while isinstance(be, TraceBackend):
            if type(h) is Tracer and h.trace is be:
                h = be._in(h)[0]
            be = be.parent
        t = wrap(be.copy(h), t._dtype, be)
    return t


detach = stop_gradient


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    """A block in which nothing is recorded for differentiation (results are constants).

    >>> import runetensor as rt
    >>> def f(x):
    ...     with rt.no_grad():
    ...         s = rt.sum(x)       # a constant for the gradient
    ...     return rt.sum(x * s)
    >>> print(rt.grad(f)(rt.asarray([1., 2.])))
    [3, 3]
    """
    state.no_grad += 1
    try:
        yield
    finally:
        state.no_grad -= 1


# ---------------------------------------------------------------------------
# custom rules
# ---------------------------------------------------------------------------
def _live_top(leaves: list) -> TraceBackend | None:
    top = None
    for t in leaves:
        if isinstance(t, Tensor) and isinstance(t._backend, TraceBackend):
            if top is None or t._backend.level > top.level:
                top = t._backend
    return top


def _down(leaves: list, B: TraceBackend) -> tuple[list, list]:
    lows, pays = [], []
    for t in leaves:
        lo, pay = _lower(t, B)
        lows.append(lo)
        pays.append(pay)
    return lows, pays


@contextlib.contextmanager
def below(B: Backend) -> Iterator[None]:
    """A block run one level below the transformation ``B`` (a custom rule's forward function):
    ``B`` and the transformations above it are not active, so tensors created there belong to
    ``B``'s parent level, like the values they are combined with."""
    st = state.stack
    i = next((k for k, b in enumerate(st) if b is B), None)
    if i is None:
        yield
        return
    saved = st[i:]
    del st[i:]
    try:
        yield
    finally:
        st.extend(saved)


def _lowered(args: tuple) -> tuple | None:
    """For a custom rule: ``(B, tree, lows, pays)`` with ``B`` the highest transformation among the
    arguments and the arguments one level below it with their payloads; None when no argument
    carries a derivative there (then the plain function runs)."""
    leaves, tree = _flat_args(args)
    B = _live_top(leaves)
    if B is None or state.no_grad:
        return None
    lows, pays = _down(leaves, B)
    if all(p is None for p in pays):
        return None
    return B, tree, lows, pays


def _zeros_like_t(t: Any) -> Any:
    if isinstance(t, Tensor):
        return wrap(t._backend.full(t.shape, 0, t._dtype), t._dtype, t._backend)
    return 0.0


def _up_outputs(B: TraceBackend, out: Any, payload_for: Callable[[int, Tensor], Any]) -> Any:
    if type(out) is Tensor:  # one tensor: no pytree walk
        return wrap(Tracer(B, out._data, payload_for(0, out) if out._dtype.kind in "fc" else None), out._dtype, B)
    o_leaves, o_tree = tree_flatten(out)
    res = []
    for i, o in enumerate(o_leaves):
        if not isinstance(o, Tensor):
            res.append(o)
            continue
        h = o._data
        pay = payload_for(i, o) if o._dtype.kind in "fc" else None
        res.append(wrap(Tracer(B, h, pay), o._dtype, B))
    return tree_unflatten(o_tree, res)


class custom_vjp:
    """A function with a user-given reverse-mode rule: ``f.defvjp(fwd, bwd)``.

    ``fwd(*args) -> (out, residuals)``; ``bwd(residuals, ct) -> tuple`` with one cotangent per
    argument (``None`` for none).  Under forward mode (``jvp``) the rule is used too: the tangent
    is the transpose of ``bwd``, obtained by differentiating ``bwd`` in reverse mode.

    >>> import runetensor as rt
    >>> @rt.custom_vjp
    ... def clip_grad(x):
    ...     return x
    >>> clip_grad.defvjp(lambda x: (x, None), lambda res, g: (rt.clip(g, -1., 1.),))
    >>> print(rt.grad(lambda x: rt.sum(clip_grad(x) * 5.))(rt.asarray([1., 2.])))
    [1, 1]
    """

    def __init__(self, fun: Callable):
        if not callable(fun):
            raise TypeError(f"custom_vjp: expected a function, got {type(fun).__name__}")
        self.fun = fun
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        functools.update_wrapper(self, fun)

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        """Set the rule: ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, ct) -> cotangents``."""
        if not callable(fwd) or not callable(bwd):
            raise TypeError("custom_vjp.defvjp: fwd and bwd must be callable")
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any) -> Any:
        if self.fwd is None or self.bwd is None:
            raise TypeError(f"custom_vjp: define the rule with {self.__name__}.defvjp(fwd, bwd) before calling it")
        low = _lowered(args)
        if low is None:
            return self.fun(*args)
        B, tree, lows, pays = low
        low_args = tuple(lows) if tree is _TUPLE_TREES.get(len(lows)) else tree_unflatten(tree, lows)
        with below(B):
            fwd_out = self.fwd(*low_args)
        if not (isinstance(fwd_out, tuple) and len(fwd_out) == 2):
            raise TypeError("custom_vjp: fwd must return a pair (output, residuals)")
        out, res = fwd_out
        o_leaves, o_tree = ([out], _LEAF) if type(out) is Tensor else tree_flatten(out)
        bwd = self.bwd
        name = getattr(self, "__name__", "custom_vjp")
        if isinstance(B, ReverseBackend):
            avals = tuple((o.shape, o._dtype) for o in o_leaves)

            def node_vjp(g: Any) -> tuple:
                gs = g if isinstance(g, tuple) else (g,)
                ct = wrap(gs[0], o_leaves[0]._dtype, B.parent) if o_tree is _LEAF else \
                    tree_unflatten(o_tree, [wrap(h, o._dtype, B.parent) for h, o in zip(gs, o_leaves)])
                cts = _checked_cts(name, bwd(res, ct), tree, lows, B.parent)
                c_leaves = _ct_leaves(cts, tree, lows)
                return tuple(c._data if isinstance(c, Tensor) else None for c in c_leaves)

            node = Node(tuple(pays), node_vjp, avals)
            return _up_outputs(B, out, lambda i, o: (node, i))
        # forward mode: the tangent is bwd's transpose applied to the arguments' tangents
        tangents = [wrap(p, lo._dtype, B.parent) if p is not None else _zeros_like_t(lo) for p, lo in zip(pays, lows)]

        def lin(ct: Any) -> Any:
            return _checked_cts(name, bwd(res, ct), tree, lows, get_backend())
        zero_ct = tree_unflatten(o_tree, [_zeros_like_t(o) for o in o_leaves])
        template, lin_vjp = vjp(lin, zero_ct, _parent=B.parent)
        t_args = tree_unflatten(tree, tangents)
        t_out = tree_flatten(lin_vjp(tuple(None if c is None else t_args[a] for a, c in enumerate(template)))[0])[0]
        return _up_outputs(B, out, lambda i, o: cast_like(B.parent, t_out[i]._data, o._dtype))


def _checked_cts(name: str, cts: Any, tree: Any, lows: list, be: Backend) -> tuple:
    """A ``custom_vjp`` rule's ``bwd`` result checked against the arguments (``tree``, their leaves
    ``lows``): one entry per argument, None or a pytree of the argument's structure whose leaves are
    tensors of the argument leaves' shapes.  A Python number is taken for a 0-d argument (made a
    tensor of the argument's dtype on ``be``); anything else raises instead of becoming a zero.

    Raises:
        TypeError: naming the function, for a result that is not a tuple of one cotangent per
            argument, a cotangent of another structure, or a leaf that is neither a tensor nor
            (for a 0-d or non-tensor argument) a Python number.
        ValueError: naming the function, for a tensor of the wrong shape.
    """
    subs = tree.children
    if not isinstance(cts, (tuple, list)) or len(cts) != len(subs):
        raise TypeError(f"custom_vjp {name}: bwd must return a tuple of {len(subs)} cotangents (one per argument "
                        f"of {name}, None for none), got {type(cts).__name__} {cts!r:.80}")
    out: list = []
    off = 0
    for i, (c, st) in enumerate(zip(cts, subs)):
        args = lows[off:off + st.n]
        off += st.n
        if c is None:
            out.append(None)
            continue
        if type(c) is Tensor and st.kind == "leaf":  # the common case, a tensor for a leaf: no pytree walk
            a = args[0]
            if isinstance(a, Tensor) and c.shape != a.shape:
                raise ValueError(f"custom_vjp {name}: bwd's cotangent for argument {i} has shape {c.shape}; "
                                 f"expected the argument's shape {a.shape}")
            out.append(c)
            continue
        lv, tr = tree_flatten(c)
        if len(lv) != st.n or (st.kind == "leaf") != (tr.kind == "leaf"):
            raise TypeError(f"custom_vjp {name}: bwd's cotangent for argument {i} has structure {tr!r:.80}; "
                            f"expected the argument's structure {st!r:.80} (or None)")
        fixed = []
        for v, a in zip(lv, args):
            if isinstance(v, Tensor):
                if isinstance(a, Tensor) and v.shape != a.shape:
                    raise ValueError(f"custom_vjp {name}: bwd's cotangent for argument {i} has shape {v.shape}; "
                                     f"expected the argument's shape {a.shape}")
                fixed.append(v)
                continue
            number = type(v) in (int, float, complex) or (not isinstance(v, (bool, str, bytes))
                                                         and isinstance(v, (int, float, complex)))
            if number and not isinstance(a, Tensor):
                fixed.append(v)  # a non-tensor argument: its cotangent is not used
                continue
            if number and a.shape == () and (a._dtype.kind == "c" or not isinstance(v, complex)):
                fixed.append(wrap(be.full((), v, a._dtype), a._dtype, be))
                continue
            want = (f"a tensor of shape {a.shape} and dtype {a._dtype}" if isinstance(a, Tensor)
                    else "a number or None")
            if number and isinstance(a, Tensor):
                want += " (a Python number only stands for a 0-d argument" + \
                        (", and a complex one only for a complex argument)" if a.shape == () else ")")
            raise TypeError(f"custom_vjp {name}: bwd's cotangent for argument {i} is {type(v).__name__} "
                            f"{v!r:.40}; expected {want}, or None for a zero cotangent")
        out.append(tree_unflatten(tr, fixed))
    return tuple(out)


def _ct_leaves(cts: Any, tree: Any, lows: list) -> list:
    """Cotangent leaves aligned with the argument leaves (``None`` subtrees allowed)."""
    out = []
    flat = []
    for c in cts:
        if c is None:
            flat.append(None)
        else:
            flat.append(c)
    # align: each argument's subtree flattens to its leaves
    sub_trees = tree.children
    for c, st in zip(flat, sub_trees):
        if c is None:
            out.extend([None] * st.n)
        elif type(c) is Tensor and st.kind == "leaf":
            out.append(c)
        else:
            lv, tr = tree_flatten(c)
            if len(lv) != st.n:
                raise ValueError(f"custom rule: a cotangent has structure {tr!r}, expected {st!r}")
            out.extend(lv)
    return out


class custom_jvp:
    """A function with a user-given forward-mode rule: ``f.defjvp(rule)``.

    ``rule(primals, tangents) -> (out, tangent_out)`` with ``primals`` and ``tangents`` tuples.
    Under reverse mode the rule is used too: the cotangent is the transpose of the rule's
    (linear) tangent map, obtained by differentiating it in reverse mode.

    >>> import runetensor as rt
    >>> @rt.custom_jvp
    ... def safe_log(x):
    ...     return rt.log(x)
    >>> safe_log.defjvp(lambda p, t: (rt.log(p[0]), t[0] / rt.maximum(p[0], 1e-6)))
    >>> print(rt.grad(lambda x: rt.sum(safe_log(x)))(rt.asarray([0., 2.])))
    [1e+06, 0.5]
    """

    def __init__(self, fun: Callable):
        if not callable(fun):
            raise TypeError(f"custom_jvp: expected a function, got {type(fun).__name__}")
        self.fun = fun
        self.rule: Callable | None = None
        functools.update_wrapper(self, fun)

    def defjvp(self, rule: Callable) -> None:
        """Set the rule ``rule(primals, tangents) -> (out, tangent_out)``."""
        if not callable(rule):
            raise TypeError("custom_jvp.defjvp: the rule must be callable")
        self.rule = rule

    def __call__(self, *args: Any) -> Any:
        if self.rule is None:
            raise TypeError(f"custom_jvp: define the rule with {self.__name__}.defjvp(rule) before calling it")
        low = _lowered(args)
        if low is None:
            return self.fun(*args)
        B, tree, lows, pays = low
        low_args = tree_unflatten(tree, lows)
        rule = self.rule
        if isinstance(B, ForwardBackend):
            tangents = tree_unflatten(tree, [wrap(p, lo._dtype, B.parent) if p is not None else _zeros_like_t(lo)
                                             for p, lo in zip(pays, lows)])
            with below(B):
                r = rule(low_args, tangents)
            if not (isinstance(r, tuple) and len(r) == 2):
                raise TypeError("custom_jvp: the rule must return a pair (output, tangent_out)")
            out, tout = r
            t_leaves = tree_flatten(tout)[0]
            return _up_outputs(B, out, lambda i, o: _handle_at(t_leaves[i], o, B.parent, "custom_jvp",
                                                               f"tangent output {i}"))
        with below(B):
            out = self.fun(*low_args)
        o_leaves, o_tree = tree_flatten(out)
        avals = tuple((o.shape, o._dtype) for o in o_leaves)
        zero_t = [_zeros_like_t(lo) for lo in lows]

        def node_vjp(g: Any) -> tuple:
            gs = g if isinstance(g, tuple) else (g,)
            ct = tree_unflatten(o_tree, [wrap(h, o._dtype, B.parent) for h, o in zip(gs, o_leaves)])

            def tangent_map(*ts: Any) -> Any:
                return rule(low_args, tree_unflatten(tree, list(ts)))[1]
            diff = [i for i, lo in enumerate(lows) if isinstance(lo, Tensor) and lo._dtype.kind in "fc"]

            def tangent_map_diff(*ts: Any) -> Any:
                full = list(zero_t)
                for i, t in zip(diff, ts):
                    full[i] = t
                return tangent_map(*full)
            _, fn = vjp(tangent_map_diff, *[zero_t[i] for i in diff], _parent=B.parent)
            got = fn(ct)
            res: list = [None] * len(lows)
            for i, c in zip(diff, got):
                res[i] = c._data
            return tuple(res)

        node = Node(tuple(pays), node_vjp, avals)
        return _up_outputs(B, out, lambda i, o: (node, i))


# ---------------------------------------------------------------------------
# checking gradients numerically
# ---------------------------------------------------------------------------
def _direction(t: Tensor, seed: int) -> Tensor:
    r = rand(D.float64, list(t.shape), seed=seed)
    v = (r * 2.0 - 1.0) + 0.25  # non-uniform, away from zero on average
    if t._dtype.kind == "c":
        v = v + 1j * (rand(D.float64, list(t.shape), seed=seed + 7) - 0.5)
    return v.astype(t._dtype)


def _vdot_real(a: Tensor, b: Tensor) -> float:
    p = a * b
    s = rsum(p.astype(D.complex128) if p.dtype.kind == "c" else p.astype(D.float64))
    return complex(s).real


def check_grads(f: Callable, args: Sequence[Any], order: int = 1, modes: Sequence[str] = ("fwd", "rev"),
                eps: float | None = None, atol: float | None = None, rtol: float | None = None) -> None:
    """Check ``f``'s derivatives in each mode against central differences, up to ``order``.

    Along a random non-uniform direction ``v`` per argument, the forward-mode product
    ``jvp(f)(v)`` is compared with ``(f(x + eps v) - f(x - eps v)) / 2 eps``; in reverse mode
    ``<u, J v>`` is compared with ``<vjp(u), v>`` for a random cotangent ``u``.  With
    ``order=2`` the derivatives of those products are checked the same way.

    Args:
        f: a function of tensors returning a tensor (or a pytree of tensors).
        args: the arguments (float or complex tensors).
        order: 1 or more.
        modes: a subset of ``("fwd", "rev")``.
        eps: the finite-difference step (default: 1e-6 for float64, 2e-3 for lower precision).
        atol, rtol: tolerances (default 1e-5 for float64, 2e-2 otherwise).

    Raises:
        AssertionError: naming the argument, the mode and the largest error.
        ValueError: for a bad ``order`` or mode.

    >>> import runetensor as rt
    >>> rt.check_grads(lambda x: rt.sin(x) * x, (rt.asarray([0.5, 1.5], dtype=rt.float64),), order=2)
    """
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be an int >= 1, got {order!r}")
    for m in modes:
        if m not in ("fwd", "rev"):
            raise ValueError(f"check_grads: modes must be 'fwd' and/or 'rev', got {m!r}")
    args = tuple(_diff_tensor(a, "check_grads", i) for i, a in enumerate(args))
    f64 = all(a._dtype in (D.float64, D.complex128) for a in args)
    eps = eps if eps is not None else (1e-6 if f64 else 2e-3)
    atol = atol if atol is not None else (1e-5 if f64 else 2e-2)
    rtol = rtol if rtol is not None else (1e-5 if f64 else 2e-2)
    vs = tuple(_direction(a, 11 + 5 * i) for i, a in enumerate(args))

    for i in range(len(args)):
        only = tuple(v if j == i else v * 0.0 for j, v in enumerate(vs))
        plus = tree_flatten(f(*[a + (v * eps) for a, v in zip(args, only)]))[0]
        minus = tree_flatten(f(*[a - (v * eps) for a, v in zip(args, only)]))[0]
        fd = [(p - m) / (2 * eps) for p, m in zip(plus, minus)]
        if "fwd" in modes:
            tout = tree_flatten(jvp(f, args, only)[1])[0]
            for k, (a, b) in enumerate(zip(tout, fd)):
                _close(a, b, atol, rtol, f"check_grads: argument {i}, mode fwd (output {k})")
        if "rev" in modes:
            out, fn = vjp(f, *args)
            o_leaves, o_tree = tree_flatten(out)
            us = [_direction(o, 101 + k) for k, o in enumerate(o_leaves)]
            g = fn(tree_unflatten(o_tree, us))[i]
            lhs = _vdot_real(g, only[i])
            rhs = sum(_vdot_real(u, d) for u, d in zip(us, fd))
            err = abs(lhs - rhs)
            if not err <= atol + rtol * abs(rhs):
                raise AssertionError(f"check_grads: argument {i}, mode rev: largest error {err:.3g} "
                                     f"(<u, J v> by differences {rhs:.6g}, by vjp {lhs:.6g}; "
                                     f"atol={atol}, rtol={rtol})")
    if order > 1:
        if "fwd" in modes:
            check_grads(lambda *a: jvp(f, a, vs)[1], args, order - 1, modes, eps, atol, rtol)
        if "rev" in modes:
            out = f(*args)
            o_leaves, o_tree = tree_flatten(out)
            us = tree_unflatten(o_tree, [_direction(o, 101 + k) for k, o in enumerate(o_leaves)])
            check_grads(lambda *a: vjp(f, *a)[1](us), args, order - 1, modes, eps, atol, rtol)


def _close(a: Tensor, b: Tensor, atol: float, rtol: float, what: str) -> None:
    d = a.astype(D.complex128) - b.astype(D.complex128) if a.dtype.kind == "c" or b.dtype.kind == "c" else \
        a.astype(D.float64) - b.astype(D.float64)
    if d.size == 0:
        return
    err = float(rmax(abs(d)))
    scale = float(rmax(abs(b.astype(D.complex128 if b.dtype.kind == "c" else D.float64))))
    if not err <= atol + rtol * scale or math.isnan(err):
        raise AssertionError(f"{what}: largest error {err:.3g} (largest value {scale:.3g}; atol={atol}, rtol={rtol})")
