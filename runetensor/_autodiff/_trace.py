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
from .._primitives import PRIMS, reshape as _reshape, sum_to, zeros, zeros_like
from . import _delegate

_seq = itertools.count()
_MOVEMENT = ("reshape", "expand", "permute", "view_index", "flip", "as_strided")


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


class TraceBackend(Backend):
    """The tracer backend shared by both modes; subclasses give ``_record`` and ``_write_payload``."""

    mode = "trace"
    #: whether recorded rules keep their inputs' buffers for later (reverse mode)
    keeps_inputs = False

    def __init__(self, parent: Backend):
        self.parent = parent
        self.level = parent.level + 1
        self.name = f"{self.mode}{self.level}"
        self._held: list[Any] = []  # lower-level handles that recorded rules hold (writes into them raise)

    # ------------------------------------------------------------------ tracers
    def _own(self, h: Any) -> bool:
        return type(h) is Tracer and h.trace is self

    def _in(self, h: Any) -> tuple[Any, Any]:
        if type(h) is Tracer and h.trace is self:
            b = h.base
            if b is not None and h.version != b.version:
                self._refresh(h)
            return h.primal, h.payload
        return h, None

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
        owns = []
        for h in ins:
            if type(h) is Tracer and h.trace is self:
                b = h.base
                if b is not None and h.version != b.version:
                    self._refresh(h)
                pay = h.payload
                ps.append(h.primal)
                pays.append(pay)
                if pay is not None:
                    live = True
                owns.append(h)
                continue
            ps.append(h)
            pays.append(None)
            if h is not None and type(h) not in _SCALARS:
                owns.append(h)
        res = fn(*ps)
        if not live or state.no_grad:
            return self._const(res)
        prim = PRIMS[name]
        if prim.nondiff:
            return self._const(res)
        if prim.jvp is None:
            raise TypeError(f"{name}: no derivative rule (differentiating through it is not supported)")
        if self.keeps_inputs:
            for h in owns:
                if type(h) is Tracer and h.trace is self:
                    (h.base or h).captured = True
                else:
                    self._held.append(h)
        return self._record(prim, tuple(ps), tuple(pays), res, params or {})

    @abstractmethod
    def _record(self, prim: Any, ps: tuple, pays: tuple, res: Any, params: dict) -> Any:
        """Tracers for the primitive's result(s) ``res``, with payloads from the rule ``prim``."""

    # ------------------------------------------------------------------ views and writes
    def _view(self, name: str, h: Any, params: dict, fn: Any) -> Any:
        out = self._apply(name, fn, (h,), params)
        if type(h) is Tracer and h.trace is self:
            root = h.base or h
            out.base = root
            out.recipe = h.recipe + ((name, params),)
            out.version = root.version
            out.foreign = root.foreign
        else:
            out.foreign = True
        return out

    def _refresh(self, h: Tracer) -> None:
        root = h.base
        cur: Any = root
        for name, params in h.recipe:
            cur = self._apply(name, _MOVE_FN[name](self.parent, params), (cur,), params)
        h.primal = cur.primal
        h.payload = cur.payload
        h.version = root.version

    def _replay(self, B: Backend, h: Any, recipe: tuple) -> Any:
        """The region of a root-shaped handle ``h`` that ``recipe`` selects (a view of ``h``)."""
        for name, params in recipe:
            h = _MOVE_FN[name](B, params)(h)
        return h

    def _write(self, op: str, dst: Any, src: Any, key: tuple | None = None, mode: str = "set") -> None:
        B = self.parent
        sp, spay = self._in(src) if _is_handle(src) else (src, None)
        kp = None if key is None else self._key_in(key)
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
        region = root.primal if dst is root else self._replay(B, root.primal, dst.recipe)
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

    # ------------------------------------------------------------------ introspection, host reads (values)
    capabilities = property(_delegate.capabilities)  # the parent's: a transformation computes on its handles
    require = _delegate.require
    dtype = _delegate.dtype
    offset = _delegate.offset
    buffer_size = _delegate.buffer_size
    shares_memory = _delegate.shares_memory
    value_range = _delegate.value_range
    dlpack_device = _delegate.dlpack_device
    to_host = _delegate.to_host
    to_list = _delegate.to_list
    to_bytes = _delegate.to_bytes
    dlpack = _delegate.dlpack

    def strides(self, h):
        return self.parent.strides(self._in(h)[0])

    def is_c_contiguous(self, h):
        return self.parent.is_c_contiguous(self._in(h)[0])

    def _host(self, x: Any, what: str) -> Any:
        return self._in(x)[0]

    # ------------------------------------------------------------------ creation (constants)
    def empty(self, shape, dtype):
        return Tracer(self, self.parent.empty(shape, dtype))

    def full(self, shape, value, dtype):
        return Tracer(self, self.parent.full(shape, value, dtype))

    def arange(self, start, stop, step, dtype):
        return Tracer(self, self.parent.arange(start, stop, step, dtype))

    def asarray(self, obj, dtype, copy):
        if type(obj) is Tracer and obj.trace is self:
            obj = obj.primal
        h, d = self.parent.asarray(obj, dtype, copy)
        return Tracer(self, h, None, foreign=True), d

    def random_bits(self, seed, n):
        return Tracer(self, self.parent.random_bits(seed, n))

    def random_uniform(self, seed, n, dtype):
        return Tracer(self, self.parent.random_uniform(seed, n, dtype))

    def from_buffer(self, buf, dtype, shape, offset):
        return Tracer(self, self.parent.from_buffer(buf, dtype, shape, offset), None, foreign=True)

    def from_dlpack(self, obj, copy):
        h, d = self.parent.from_dlpack(obj, copy)
        return Tracer(self, h, None, foreign=True), d

    # ------------------------------------------------------------------ movement
    def reshape(self, h, shape):
        p = self._in(h)[0] if self._own(h) else h
        if self.parent.reshape(p, shape) is None:
            return None
        return self._view("reshape", h, {"shape": tuple(shape)}, lambda x: self.parent.reshape(x, shape))

    def expand(self, h, shape):
        return self._view("expand", h, {"shape": tuple(shape)}, lambda x: self.parent.expand(x, shape))

    def permute(self, h, axes):
        return self._view("permute", h, {"axes": tuple(axes)}, lambda x: self.parent.permute(x, axes))

    def view_index(self, h, key):
        return self._view("view_index", h, {"key": tuple(key)}, lambda x: self.parent.view_index(x, key))

    def flip(self, h, axes):
        return self._view("flip", h, {"axes": tuple(axes)}, lambda x: self.parent.flip(x, axes))

    def as_strided(self, h, shape, strides, offset):
        return self._view("as_strided", h, {"shape": tuple(shape), "strides": tuple(strides), "offset": offset},
                          lambda x: self.parent.as_strided(x, shape, strides, offset))

    # ------------------------------------------------------------------ elementwise
    def unary(self, op, x, out=None):
        r = self._apply(op, lambda a: self.parent.unary(op, a), (x,))
        if out is not None:
            self._write(op, out, r)
            return out
        return r

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
        r = self._apply(op, lambda a, b: self.parent.binary(op, a, b), (x, y))
        if out is not None:
            self._write(op, out, r)
            return out
        return r

    def where(self, cond, x, y):
        return self._apply("where", self.parent.where, (cond, x, y))

    def clip(self, x, lo, hi):
        return self._apply("clip", self.parent.clip, (x, lo, hi))

    def cast(self, x, dtype):
        return self._apply("cast", lambda a: self.parent.cast(a, dtype), (x,), {"dtype": dtype})

    # ------------------------------------------------------------------ reductions, scans, sorting
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
        return self._apply(f"reduce.{op}", lambda a: self.parent.reduce(op, a, axes, keepdims), (x,),
                           {"axes": tuple(axes), "keepdims": keepdims})

    def arg_reduce(self, op, x, axis, keepdims):
        return self._const(self.parent.arg_reduce(op, self._in(x)[0], axis, keepdims))

    def scan(self, op, x, axis):
        return self._apply(f"scan.{op}", lambda a: self.parent.scan(op, a, axis), (x,), {"axis": axis})

    def sort(self, x, axis, descending):
        return self._apply("sort", lambda a: self.parent.sort(a, axis, descending), (x,),
                           {"axis": axis, "descending": descending})

    def argsort(self, x, axis, descending):
        return self._const(self.parent.argsort(self._in(x)[0], axis, descending))

    def searchsorted(self, sorted_, values, side):
        return self._const(self.parent.searchsorted(self._in(sorted_)[0], self._in(values)[0], side))

    def nonzero(self, x):
        return self._const(self.parent.nonzero(self._in(x)[0]))

    # ------------------------------------------------------------------ gather / scatter / memory
    def gather(self, x, key):
        kp = self._key_in(key)
        return self._apply("gather", lambda a: self.parent.gather(a, kp), (x,), {"key": kp})

    def scatter(self, x, key, values, mode="set"):
        self._write("scatter", x, values, tuple(key), mode)

    def assign(self, dst, src):
        self._write("assign", dst, src)

    def copy(self, x):
        return self._apply("copy", self.parent.copy, (x,))

    def contiguous(self, x):
        if self._own(x):
            p, _ = self._in(x)
            if self.parent.is_c_contiguous(p):
                return x
        return self._apply("contiguous", self.parent.contiguous, (x,))

    def concatenate(self, hs, axis):
        return self._apply("concatenate", lambda *ps: self.parent.concatenate(list(ps), axis), tuple(hs),
                           {"axis": axis})

    def pad(self, h, widths, value):
        widths = tuple(tuple(w) for w in widths)
        return self._apply("pad", lambda x, v: self.parent.pad(x, widths, v), (h, value), {"widths": widths})

    def matmul(self, a, b):
        return self._apply("matmul", self.parent.matmul, (a, b))

    # ------------------------------------------------------------------ effects
    def callback(self, fn, hs):
        # no derivative: ``fn`` sees the primal values (handles of lower levels pass as they are)
        self.parent.callback(fn, [self._in(h)[0] for h in hs])

    # ------------------------------------------------------------------ linear algebra and FFT
    def linalg(self, op, *args, **params):
        return self._apply(f"linalg.{op}", lambda *a: self.parent.linalg(op, *a, **params), args, params)

    def fft(self, op, x, s, axes, norm):
        return self._apply(f"fft.{op}", lambda a: self.parent.fft(op, a, s, axes, norm), (x,),
                           {"s": tuple(s), "axes": tuple(axes), "norm": norm})


def _move_fn(name: str):
    if name == "reshape":
        return lambda B, p: (lambda h: _reshape(B, h, p["shape"]))
    if name == "expand":
        return lambda B, p: (lambda h: B.expand(h, p["shape"]))
    if name == "permute":
        return lambda B, p: (lambda h: B.permute(h, p["axes"]))
    if name == "view_index":
        return lambda B, p: (lambda h: B.view_index(h, p["key"]))
    if name == "flip":
        return lambda B, p: (lambda h: B.flip(h, p["axes"]))
    return lambda B, p: (lambda h: B.as_strided(h, p["shape"], p["strides"], p["offset"]))


_MOVE_FN = {n: _move_fn(n) for n in _MOVEMENT}


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
        need = tuple(p is not None for p in pays)
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
        replay = self._replay

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
        region = self._replay(B, t, recipe)
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
