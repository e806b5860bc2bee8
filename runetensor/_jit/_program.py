"""A traced program: the recorded steps, pruned, as a flat list replayed in order on the parent
backend.  Slot ``i < n_in`` holds input ``i``; each step reads slots (or constants) and fills
its result slots.  Steps whose results nothing uses are dropped, except the writes, the
run-time guards and the callbacks (``rt.debug_print``).

Donation (``donate_argnums``): :meth:`Program.plan_donations` picks, per donated input, a program
output of the same shape and dtype made by a replayed elementwise step placed at or after the last
step that touches the input (or a view of it); :meth:`Program.run` then writes that step's result
into the input's buffer (``out=``) when the buffer is a C-contiguous, writable NumPy array owning its
memory and sharing none with another input or a captured tensor."""
from __future__ import annotations

import math
from operator import itemgetter
from typing import Any

from .._autodiff._pytree import tree_unflatten
from .._tensor import Tensor, wrap
from ._backend import EFFECTS, WRITES, JitBackend, Step, fresh as _fresh

#: elementwise ops written into a donated buffer: their ``out=`` result is bit-identical to the fresh one
_OUT_OK = frozenset({"add", "sub", "mul", "div", "maximum", "minimum", "neg", "abs", "sqrt"})


def _out_slots(s: Step) -> list:
    if s.outs is None:
        return []
    if type(s.outs) is int:
        return [s.outs]
    return [o for o in s.outs if type(o) is int]


#: steps computed once, when compiling, if every operand is a constant (and the result is never written
#: into, nor returned, directly or through a view)
_FOLDABLE = frozenset({"full", "arange", "cast", "where", "expand", "reshape", "permute"})
#: the largest folded result kept by a program (bytes)
FOLD_MAX = 1 << 16


def _fold_constants(steps: list[Step], outs: list, avals: list) -> list[Step]:
    """Constant folding: the steps of ``_FOLDABLE`` (and elementwise ops) whose operands are all
    constants the function made (Python scalars, fills, aranges, and what is folded from them) run
    now; their readers get the value as a constant.  A captured tensor (an array constant) is never
    folded over: its contents may change between calls.  A value that a write reaches or that is
    returned (through views included) is left alone: each call must get a fresh buffer."""
    base = _bases(steps)
    tainted = {base.get(v, v) for k, v, _ in outs if k == "s"}
    for s in steps:
        if s.name in WRITES and s.name not in EFFECTS:
            k, v = s.ins[-1] if s.name == "out" else s.ins[0]
            if k == "s":
                tainted.add(base.get(v, v))
    val: dict = {}
    res = []
    for s in steps:
        ins = tuple(("c", val[v]) if k == "s" and v in val else (k, v) for k, v in s.ins)
        o = s.outs
        # operands: Python scalars or values folded here; an array constant is a captured tensor,
        # whose contents each call reads (what is computed from it is a step of every call)
        if (type(o) is int and all(k == "s" or not hasattr(v, "shape") for k, v in s.ins)
                and all(k == "c" for k, _ in ins) and base.get(o, o) not in tainted
                and (s.name in _FOLDABLE or s.params.get("kind") in ("unary", "binary"))
                and s.aval is not None and math.prod(s.aval[0]) * s.aval[1].itemsize <= FOLD_MAX):
            try:
                val[o] = s.fn(*[v for _, v in ins])
                continue
            except Exception:  # left to run (and raise) at run time, as eager would
                pass
        if ins != s.ins:
            t = Step(s.name, s.fn, ins, s.outs, s.params)
            t.aval = s.aval
            s = t
        res.append(s)
    return res


#: the base of a view of a captured tensor (below every input slot: writes into it are always kept)
CAPTURED = -1


def _bases(steps: list[Step]) -> dict:
    """Slot -> the slot of the buffer it lives in (itself for fresh results; a view's operand's base;
    an ``out=`` step's result: its destination's base; ``CAPTURED`` for a view of a captured tensor or
    of memory the function did not allocate, such as ``asarray`` of a NumPy array).  Slots not in the
    map are their own base."""
    base: dict = {}
    for s in steps:
        if s.name == "out":
            k, v = s.ins[-1]
            src = v if k == "s" else CAPTURED
        elif _fresh(s):
            src = None
        else:
            src = CAPTURED
            for k, v in s.ins:
                if k == "s":
                    src = v
                    break
                if hasattr(v, "shape"):  # a view of a captured tensor
                    break
        for o in _out_slots(s):
            base[o] = o if src is None else base.get(src, src)
    return base


def _prune(steps: list[Step], live: set, n_in: int) -> list[Step]:
    """Dead-code elimination: the steps whose results are used (``live``: the outputs), the guards,
    and the writes into a buffer that is an input, a captured constant, or read (or returned) later
    through some view; a write into a buffer the function made and nothing reads again is dropped,
    and with it what only it used."""
    base = _bases(steps)
    live_bases = {base.get(v, v) for v in live}
    kept = []
    for s in reversed(steps):
        outs = s.outs
        if s.name in WRITES:
            if s.name in EFFECTS:  # run-time guards and callbacks
                needed = True
            else:
                k, v = s.ins[-1] if s.name == "out" else s.ins[0]
                needed = k != "s" or base.get(v, v) < n_in or base.get(v, v) in live_bases
                if s.name == "out" and type(outs) is int:
                    needed = needed or outs in live
        elif outs is None:
            needed = False
        elif isinstance(outs, tuple):
            needed = any(type(o) is int and o in live for o in outs)
        else:
            needed = outs in live
        if needed:
            kept.append(s)
            for k, v in s.ins:
                if k == "s":
                    live.add(v)
                    live_bases.add(base.get(v, v))
    kept.reverse()
    return kept


class Program:
    """What ``rt.jit`` keeps per signature."""

    def __init__(self, P: Any, B: JitBackend, n_in: int, outs: list, out_tree: Any):
        self.P = P
        self.n_in = n_in
        self.nslots = B.nslots
        self.avals = B.avals
        self.outs = outs
        self.out_tree = out_tree
        # the captured tensors: what any traced step touched (dead steps included) and the tensors
        # returned as they are; a donated argument sharing memory with one of them is not reused
        cap = {id(v): v for s in B.steps for k, v in s.ins if k == "c" and hasattr(v, "shape")}
        cap.update((id(o._data), o._data) for k, o, _ in outs if k == "c" and isinstance(o, Tensor))
        self.captured = list(cap.values())
        self.steps = _prune(B.steps, {s for k, s, _ in outs if k == "s"}, n_in)
        self.kernels = 0
        marker = object()
        self.single = len(outs) == 1 and outs[0][0] == "s" and tree_unflatten(out_tree, [marker]) is marker
        self.donate: tuple = ()      # donated input slots (set by rt.jit)
        self.donations: list = []    # (input slot, plan index) where the result goes into the input's buffer
        self.consts: list = []       # captured tensors when donations are planned: never donated over
        self._plan()

    def _plan(self) -> None:
        """The flat list the replay walks: ``(fn, operand getter, arity kind, result slots)``.  The
        constants get slots of their own after the program's (``env0``), so that every step reads its
        operands with one ``itemgetter`` call."""
        plan = []
        consts: list = []
        for s in self.steps:
            idx = []
            for k, v in s.ins:
                if k == "s":
                    idx.append(v)
                else:
                    idx.append(self.nslots + len(consts))
                    consts.append(v)
            kind = 2 if len(idx) > 1 else len(idx)
            plan.append((s.fn, itemgetter(*idx) if idx else None, kind, s.outs))
        self.env0 = [None] * self.nslots + consts
        self.plan = plan
        self.plan_donations()

    def plan_donations(self) -> None:
        """For each donated input slot, the step (if any) whose result may be written into its buffer:
        a replayed elementwise step (``add sub mul div maximum minimum neg abs sqrt``: NumPy ``out=``
        semantics, which handle an operand overlapping the output) making a program output of the
        input's shape and dtype (C-contiguous), placed at or after the last step reading the input or
        any view of it, when no output is the input or a view of it."""
        self.donations = []
        if not self.donate or getattr(self.P, "name", None) != "numpy":
            return
        out_slots = {v for k, v, _ in self.outs if k == "s"}
        taken: set = set()
        for d in self.donate:
            av = self.avals[d]
            if av is None or not av[2]:
                continue
            alias = {d}
            last = -1
            for i, s in enumerate(self.steps):
                if any(k == "s" and v in alias for k, v in s.ins):
                    last = i
                    if not _fresh(s):
                        alias.update(_out_slots(s))
            if alias & out_slots:
                continue
            for i in range(len(self.steps) - 1, max(last, 0) - 1, -1):
                s = self.steps[i]
                o = s.outs
                if s.name == "fused" and s.params.get("em") is not None:
                    dn = self._fused_donation(s, d, av, alias, out_slots, taken)
                    if dn is not None:
                        taken.add(s.outs[dn[0]])
                        self.donations.append((d, i, *dn))
                        break
                    continue
                if type(o) is not int or o not in out_slots or o in taken or self.avals[o] != av:
                    continue
                if s.params.get("kind") not in ("unary", "binary") or s.name not in _OUT_OK:
                    continue
                taken.add(o)
                self.donations.append((d, i, None, None))
                break
        if self.donations:
            self.consts = self.captured

    def _fused_donation(self, s: Step, d: int, av: tuple, alias: set, out_slots: set, taken: set) -> tuple | None:
        """``(result index, kernel)`` for a compiled step that may write a result into donated input
        ``d``: an elementwise result that is a program output of ``d``'s shape, dtype and layout (the
        loop's own shape), where the step reads ``d`` (if at all) only as itself at unit stride, i.e.
        at the element it writes, and no view of it.  Reading it needs the kernel compiled without
        ``restrict`` (``kernel`` then; None: this step's own)."""
        src, _, _, pats, outs, _ = s.params["em"]
        if tuple(s.params.get("gshape") or ()) != tuple(av[0]) or s.params.get("rinfo") is not None:
            return None
        reads = [k for k, (kk, v) in enumerate(s.ins) if kk == "s" and v in alias]
        if len(reads) > 1 or (reads and (s.ins[reads[0]][1] != d or pats[reads[0]] != "1")):
            return None
        for j, o in enumerate(outs):
            if o in out_slots and o not in taken and self.avals[o] == av:
                if not reads:
                    return j, None
                from ._fuse import load_in_place
                k2 = load_in_place(src)
                return None if k2 is None else (j, k2)
        return None

    def compile(self) -> bool:
        """Replace chains of elementwise steps by compiled kernels where possible; whether any was."""
        from ._fuse import fuse_program, recycle_outputs
        before = len(self.steps)
        live = {v for k, v, _ in self.outs if k == "s"}
        # constants first (whole constant subgraphs go), then fusion; what either left unused (folded
        # operands, expands a kernel reads through) is pruned
        self.steps = _prune(_fold_constants(self.steps, self.outs, self.avals), set(live), self.n_in)
        n = fuse_program(self)
        self.steps = _prune(self.steps, set(live), self.n_in)
        changed = len(self.steps) != before
        if recycle_outputs(self) or n or changed:
            self.kernels = n
            self._plan()
        return n > 0

    def _donated(self, inputs: list) -> dict:
        """Plan index -> the donated buffer its result goes into, for the donations safe this call."""
        from .._backend._jitrun import can_donate
        res = {}
        for d, i, oj, k2 in self.donations:
            h = inputs[d]
            if not can_donate(h, [x for j, x in enumerate(inputs) if j != d], self.consts):
                continue
            s = self.steps[i]
            if oj is not None:  # a compiled step writes its result oj into h
                res[i] = s.fn.into(oj, h, k2)
                continue
            P = self.P
            op = s.name
            if s.params["kind"] == "unary":
                res[i] = lambda a, op=op, h=h: P.unary(op, a, out=h)
            else:
                res[i] = lambda a, b, op=op, h=h: P.binary(op, a, b, out=h)
        return res

    def run(self, inputs: list) -> Any:
        env = self.env0.copy()
        env[:self.n_in] = inputs
        plan = self.plan
        if self.donations:
            sub = self._donated(inputs)
            if sub:
                plan = [(sub[i], *rest) if i in sub else (fn, *rest) for i, (fn, *rest) in enumerate(plan)]
        for fn, get, kind, outs in plan:
            if kind == 2:
                r = fn(*get(env))
            elif kind:
                r = fn(get(env))
            else:
                r = fn()
            if outs is None:
                continue
            if type(outs) is int:
                env[outs] = r
            else:
                for o, x in zip(outs, r):
                    if type(o) is int:
                        env[o] = x
        P = self.P
        if self.single:
            _, v, d = self.outs[0]
            return wrap(env[v], d, P)
        res = [wrap(env[v], d, P) if k == "s" else v for k, v, d in self.outs]
        return tree_unflatten(self.out_tree, res)

    def __repr__(self) -> str:
        return "\n".join(map(repr, self.steps))
