"""Tracer backends: the transformations as interpreters over the backend contract.

A transformation (``vjp``, ``jvp``) runs the user's function on tensors whose backend is a
:class:`TraceBackend`.  Its handles are :class:`Tracer` objects wrapping a handle of the *parent*
backend (the NumPy backend, or the tracer backend of an enclosing transformation: nesting is a
tracer over a tracer) plus a mode-specific payload: a tape node for reverse mode, a tangent
handle for forward mode, ``None`` for a value that does not depend on the differentiated inputs.

Every primitive does the same three things: unwrap its operands to parent handles, call the
parent's primitive (so values are computed eagerly and can be printed), and, when an operand
carries a payload, apply the primitive's rule from :mod:`runetensor._primitives`.  The rules
compute on the parent backend, so an enclosing transformation records them in turn: that is
how ``grad(grad(f))`` works.

Handles of lower levels (a NumPy array, a tracer of an enclosing transformation) are accepted
anywhere and taken as constants.

Writes (``assign``, ``scatter``, ``out=``) are made functional: the value is written into the
parent buffer as usual, and the payload of the written buffer's *root* (the tracer whose
buffer the written view belongs to) is replaced by a new one that routes derivatives from the
written region to the source and from the rest to the old value.  Views remember their root
and the movement steps from it (``recipe``) and re-derive their payload when the root was
written since.  Writing into a tensor being differentiated (an input, or a view of one) raises.
"""
from __future__ import annotations

import heapq
import itertools
import threading
from abc import abstractmethod
from typing import Any

from .. import _debug
from .._backend import _active
from .._backend.contract import Backend
from .._primitives import PRIMS, sum_to, zeros, zeros_like
from ._base import IMPORTS, Transformation, replay_view

_seq = itertools.count()


class _State(threading.local):
    def __init__(self) -> None:
        self.no_grad = 0
        self.stack: list[Backend] = _active.stack


state = _State()


class Tracer:
    """A handle of a :class:`TraceBackend`: a parent handle plus a payload (see the module doc)."""

    __slots__ = ("trace", "primal", "shape", "ndim", "size", "payload", "base", "recipe", "version",
                 "leaf", "foreign", "captured")

    def __init__(self, trace: "TraceBackend", primal: Any, payload: Any = None, foreign: bool = False):
        self.trace = trace
        self.primal = primal
        self.shape = primal.shape
        self.ndim = primal.ndim
        self.size = primal.size
        self.payload = payload
        self.base: Tracer | None = None
        self.recipe: tuple = ()
        self.version = 0
        self.leaf = False
        self.foreign = foreign
        self.captured = False  # a recorded rule holds this root's buffer: copy it before writing

    def __repr__(self) -> str:
        return f"Tracer({self.trace.name}, shape={self.shape}, live={self.payload is not None})"


class Node:
    """A reverse-mode tape entry: ``vjp(g)`` gives the cotangents of ``parents`` (payloads)."""

    __slots__ = ("seq", "parents", "vjp", "avals", "__weakref__")

    def __init__(self, parents: tuple, vjp: Any, avals: tuple):
        self.seq = next(_seq)
        self.parents = parents
        self.vjp = vjp
        self.avals = avals


_SCALARS = (int, float, complex, bool)
_NO_PARAMS: dict = {}


def _is_handle(x: Any) -> bool:
    return hasattr(x, "shape") and not isinstance(x, (int, float, complex, bool))


def carries_derivative(t: Any) -> bool:
    """Whether the tensor ``t`` depends on the inputs of a running differentiation (at any level)."""
    h, be = t._data, t._backend
    while be.level > 0:
        if type(h) is Tracer and h.trace is be:
            if h.payload is not None:
                return True
            h = h.primal
        elif hasattr(h, "primal") and getattr(h, "trace", None) is be:
            h = h.primal
        be = be.parent
    return False


class TraceBackend(Transformation):
    """The tracer backend shared by both modes; subclasses give ``_record`` and ``_write_payload``.

    Every primitive goes through :meth:`_apply` (the generated methods of :class:`Transformation`
    call it as ``process``); ``binary``, ``reduce`` and ``contiguous`` keep measured fast paths."""

    mode = "trace"
    #: whether recorded rules keep their inputs' buffers for later (reverse mode)
    keeps_inputs = False
    view_state = ("primal", "payload")

    def __init__(self, parent: Backend):
        super().__init__(parent)
        self.name = f"{self.mode}{self.level}"
        self._held: list[Any] = []  # lower-level handles that recorded rules hold (writes into them raise)

    # ------------------------------------------------------------------ tracers
    def owns(self, h: Any) -> bool:
        return type(h) is Tracer and h.trace is self

    _own = owns

    def _in(self, h: Any) -> tuple[Any, Any]:
        if type(h) is Tracer and h.trace is self:
            b = h.base
            if b is not None and h.version != b.version:
                self.fresh(h)
            return h.primal, h.payload
        return h, None

    def unwrap(self, h: Any) -> Any:
        return self._in(h)[0]

    def constant_value(self, h: Any) -> Any:
        """The parent-level value of a handle that carries no derivative (indices, masks, constants).

        Raises:
            ValueError: if it carries one (it depends on the differentiated inputs).
        """
        p, pay = self._in(h)
        if pay is not None and not state.no_grad:
            raise ValueError("cannot use a differentiated value outside the differentiated function (write it "
                             "into a tensor created inside the function, or use rt.stop_gradient)")
        return p

    def _key_in(self, key: tuple) -> tuple:
        return tuple(self._in(k)[0] if _is_handle(k) else k for k in key)

    def _const(self, r: Any, foreign: bool = False) -> Any:
        if isinstance(r, tuple):
            return tuple(self._const(x, foreign) for x in r)
        return Tracer(self, r, None, foreign) if _is_handle(r) else r

    def _apply(self, name: str, fn: Any, ins: tuple, params: dict | None = None) -> Any:
        ps = []
        pays = []
        live = False
        for h in ins:
            if type(h) is Tracer and h.trace is self:
                b = h.base
                if b is not None and h.version != b.version:
                    self.fresh(h)
                pay = h.payload
                ps.append(h.primal)
                pays.append(pay)
                if pay is not None:
                    live = True
                continue
            ps.append(h)
            pays.append(None)
        res = fn(*ps)
        if not live or state.no_grad:
            return self._const(res)
        prim = PRIMS[name]
        if prim.nondiff:
            return self._const(res)
        if prim.jvp is None:
            raise TypeError(f"{name}: no derivative rule (differentiating through it is not supported)")
        if self.keeps_inputs:  # the recorded rule holds the operands' buffers: mark them
            for h in ins:
                if type(h) is Tracer and h.trace is self:
                    (h.base or h).captured = True
                elif h is not None and type(h) not in _SCALARS:
                    self._held.append(h)
        return self._record(prim, tuple(ps), tuple(pays), res, params or _NO_PARAMS)

    process = _apply

    @abstractmethod
    def _record(self, prim: Any, ps: tuple, pays: tuple, res: Any, params: dict) -> Any:
        """Tracers for the primitive's result(s) ``res``, with payloads from the rule ``prim``."""

    def create(self, name, fn, hs, params):
        return self._const(fn(*[self.unwrap(h) for h in hs]), name in IMPORTS)

    # ------------------------------------------------------------------ views and writes
    def move_rule(self, name, fn, h, params):
        if name == "reshape":  # None when the strides cannot express it
            r = fn(self.unwrap(h))
            return None if r is None else self._apply(name, lambda _: r, (h,), params)
        return self._apply(name, fn, (h,), params)

    def on_view(self, view: Any, root: Any) -> None:
        view.foreign = True if root is None else root.foreign

    def write(self, name: str, dst: Any, src: Any, key: tuple | None, mode: str) -> None:
        B = self.parent
        op = name
        sp, spay = self._in(src) if _is_handle(src) else (src, None)
        kp = None if key is None else self._key_in(tuple(key))
        if not self._own(dst):
            if spay is not None:
                raise ValueError(f"{op}: cannot write a differentiated value into a tensor created outside the "
                                 "differentiated function; write into a tensor created inside it")
            if any(B.shares_memory(dst, h) for h in self._held):
                raise ValueError(f"{op}: the differentiated computation already used this tensor (created outside "
                                 "the differentiated function); writing into it would change the derivative: "
                                 "write into a copy")
            self._raw_write(B, dst, sp, kp, mode)
            return
        root = dst.base or dst
        if root.leaf:
            raise ValueError(f"{op}: in-place write into a tensor that is being differentiated (an input of "
                             "grad/vjp/jvp, or a view of one); write into a copy instead")
        if root.foreign and (spay is not None or root.captured):
            raise ValueError(f"{op}: this tensor shares memory with one created outside the differentiated "
                             "function; write into a copy instead")
        track = not state.no_grad and not (root.payload is None and spay is None) \
            and not (mode == "add" and spay is None)
        if track and any(n == "as_strided" for n, _ in dst.recipe):
            raise TypeError(f"{op}: writing through an as_strided view is not supported under differentiation")
        if root.captured:  # a recorded rule holds the old values: write into a fresh copy
            root.primal = B.copy(root.primal)
            root.captured = False
            root.version += 1
        region = root.primal if dst is root else replay_view(B, root.primal, dst.recipe)
        self._raw_write(B, region, sp, kp, mode)
        if track:
            shape = sp.shape if _is_handle(sp) else ()
            self._write_payload(root, dst.recipe, kp, shape, spay, mode)
            root.version += 1

    @staticmethod
    def _raw_write(B: Backend, dst: Any, src: Any, key: tuple | None, mode: str) -> None:
        if key is None:
            B.assign(dst, src)
        else:
            B.scatter(dst, key, src, mode)

    @abstractmethod
    def _write_payload(self, root: Tracer, recipe: tuple, key: tuple | None, src_shape: tuple,
                       spay: Any, mode: str) -> None:
        """Replace ``root``'s payload after ``src`` (payload ``spay``) was written into the region
        of ``root`` that ``recipe`` (then ``key``) selects."""

    # ------------------------------------------------------------------ measured fast paths
    def binary(self, op, x, y, out=None):
        if out is None:
            # the common case without _apply's generality: operands that are this level's roots
            # (not views, which may need re-deriving) or values of lower levels
            tx = type(x) is Tracer and x.trace is self
            ty = type(y) is Tracer and y.trace is self
            if (not tx or x.base is None) and (not ty or y.base is None):
                px, pa = (x.primal, x.payload) if tx else (x, None)
                py, pb = (y.primal, y.payload) if ty else (y, None)
                res = self.parent.binary(op, px, py)
                if (pa is None and pb is None) or state.no_grad:
                    return Tracer(self, res)
                prim = PRIMS[op]
                if prim.nondiff:
                    return Tracer(self, res)
                if self.keeps_inputs:
                    for h, t in ((x, tx), (y, ty)):
                        if t:
                            h.captured = True
                        elif h is not None and type(h) not in _SCALARS:
                            self._held.append(h)
                return self._record(prim, (px, py), (pa, pb), res, _NO_PARAMS)
        return Transformation.binary(self, op, x, y, out)

    def reduce(self, op, x, axes, keepdims):
        if type(x) is Tracer and x.trace is self and x.base is None and x.payload is not None \
                and not state.no_grad:  # the common case, without _apply's generality
            res = self.parent.reduce(op, x.primal, axes, keepdims)
            prim = PRIMS[f"reduce.{op}"]
            if prim.nondiff:
                return Tracer(self, res)
            if self.keeps_inputs:
                x.captured = True
            return self._record(prim, (x.primal,), (x.payload,), res, {"axes": tuple(axes), "keepdims": keepdims})
        return Transformation.reduce(self, op, x, axes, keepdims)

    def contiguous(self, x):
        if self._own(x) and self.parent.is_c_contiguous(self._in(x)[0]):
            return x
        return Transformation.contiguous(self, x)

    def gather(self, x, key):  # the key's handles are constants: no derivative flows into indices
        kp = self._key_in(key)
        P = self.parent
        return self._apply("gather", lambda a: P.gather(a, kp), (x,), {"key": kp})


# ---------------------------------------------------------------------------
# Reverse mode
# ---------------------------------------------------------------------------
def _inexact(B: Backend, h: Any) -> bool:
    return _is_handle(h) and B.dtype(h).is_inexact


class ReverseBackend(TraceBackend):
    """Reverse mode: payloads are ``(node, output index)``; ``backward`` walks the tape."""

    mode = "vjp"
    keeps_inputs = True

    def _record(self, prim, ps, pays, res, params):
        B = self.parent
        need = tuple([p is not None for p in pays])  # (a list comprehension: faster than a generator here)
        vjp = prim.vjp
        if isinstance(res, tuple):
            avals = tuple((r.shape, B.dtype(r)) if _is_handle(r) else None for r in res)
            node = Node(pays, lambda g: vjp(B, g, ps, res, need, **params), avals)
            if _debug.ON:
                _debug.record_node(node, prim.name)
            outs = tuple(Tracer(self, r, (node, i) if _inexact(B, r) else None) if _is_handle(r) else r
                         for i, r in enumerate(res))
            for o in outs:
                if type(o) is Tracer:
                    o.captured = True
            return outs
        if not _inexact(B, res):
            return Tracer(self, res)
        t = Tracer(self, res, (Node(pays, lambda g: vjp(B, g, ps, res, need, **params), None), 0))
        t.captured = True
        if _debug.ON:  # rt.debug_nans: name this primitive if its derivative makes a NaN
            _debug.record_node(t.payload[0], prim.name)
        return t

    def _write_payload(self, root, recipe, key, src_shape, spay, mode):
        B = self.parent
        old = root.payload
        replay = replay_view

        def vjp(g):
            c_old = c_src = None
            # a "set" of the whole buffer (no view, no index: ``out=`` into a fresh result) leaves the
            # old value no cotangent (it would be all zeros: a copy, a fill and adds for nothing)
            if old is not None and not (mode != "add" and key is None and not recipe):
                if mode == "add":
                    c_old = g
                else:
                    c_old = B.copy(g)
                    region = replay(B, c_old, recipe)
                    if key is None:
                        B.assign(region, 0)
                    else:
                        B.scatter(region, key, 0)
            if spay is not None:
                r = replay(B, g, recipe)
                if key is not None:
                    r = B.gather(r, key)
                c_src = sum_to(B, r, src_shape)
            return c_old, c_src

        root.payload = (Node((old, spay), vjp, None), 0)

    def backward(self, outs: list, cts: list) -> dict:
        """Cotangents of every node reached from ``outs`` (payloads) seeded with ``cts``: returns
        ``{node: [cotangent per output]}`` for the leaf nodes."""
        B = self.parent
        acc: dict[Node, list] = {}
        # nodes waiting for their cotangent, latest first: a node is created after its parents, so
        # when it is popped every consumer has already given its contribution
        heap: list = []
        for pay, g in zip(outs, cts):
            if pay is None or g is None:
                continue
            node, i = pay
            slot = acc.get(node)
            if slot is None:
                slot = acc[node] = [None] * (len(node.avals) if node.avals else 1)
                heapq.heappush(heap, (-node.seq, node))
            slot[i] = g if slot[i] is None else B.binary("add", slot[i], g)
        leaves = {}
        while heap:
            n = heapq.heappop(heap)[1]
            slot = acc.pop(n)
            if n.vjp is None:
                leaves[n] = slot
                continue
            if n.avals:
                g = tuple(s if s is not None or a is None else zeros(B, a[0], a[1])
                          for s, a in zip(slot, n.avals))
            else:
                g = slot[0]
            try:
                cs = n.vjp(g)
            except FloatingPointError as e:  # rt.debug_nans: name the primitive whose derivative this is
                _debug.in_backward(e, n)
                raise
            for p, c in zip(n.parents, cs):
                if p is None or c is None:
                    continue
                pn, pi = p
                ps = acc.get(pn)
                if ps is None:
                    ps = acc[pn] = [None] * (len(pn.avals) if pn.avals else 1)
                    heapq.heappush(heap, (-pn.seq, pn))
                ps[pi] = c if ps[pi] is None else B.binary("add", ps[pi], c)
        return leaves

    def new_input(self, h: Any) -> Tracer:
        t = Tracer(self, h, None)
        t.payload = (Node((), None, None), 0)
        t.leaf = True
        return t


# ---------------------------------------------------------------------------
# Forward mode
# ---------------------------------------------------------------------------
class ForwardBackend(TraceBackend):
    """Forward mode: payloads are tangent handles of the parent backend."""

    mode = "jvp"

    def _record(self, prim, ps, pays, res, params):
        B = self.parent
        t = prim.jvp(B, pays, ps, res, **params)
        if isinstance(res, tuple):
            return tuple(Tracer(self, r, ti if _inexact(B, r) else None) if _is_handle(r) else r
                         for r, ti in zip(res, t))
        return Tracer(self, res, t if _inexact(B, res) else None)

    def _write_payload(self, root, recipe, key, src_shape, spay, mode):
        B = self.parent
        old = root.payload
        t = B.copy(old) if old is not None else zeros(B, root.shape, B.dtype(root.primal))
        region = replay_view(B, t, recipe)
        v = spay if spay is not None else 0
        if key is None:
            B.assign(region, v)
        else:
            B.scatter(region, key, v, mode)
        root.payload = t

    def new_input(self, h: Any, tangent: Any) -> Tracer:
        t = Tracer(self, h, tangent)
        t.leaf = True
        return t


__all__ = ["Tracer", "Node", "TraceBackend", "ReverseBackend", "ForwardBackend", "state", "zeros_like"]
