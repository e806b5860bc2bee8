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
from .._tracers._jit import EFFECTS, WRITES, Const, JitBackend, Output, Slot, Step, fresh as _fresh

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


def _fold_constants(steps: list[Step], out_slots: frozenset, avals: list) -> list[Step]:
    """Constant folding: the steps of ``_FOLDABLE`` (and elementwise ops) whose operands are all
    constants the function made (Python scalars, fills, aranges, and what is folded from them) run
    now; their readers get the value as a constant.  A captured tensor (an array constant) is never
    folded over: its contents may change between calls.  A value that a write reaches or that is
    returned (through views included) is left alone: each call must get a fresh buffer."""
    base = _bases(steps)
    tainted = {base.get(v, v) for v in out_slots}
    for s in steps:
        if s.name in WRITES and s.name not in EFFECTS:
            dst = s.ins[-1] if s.name == "out" else s.ins[0]
            if type(dst) is Slot:
                tainted.add(base.get(dst.index, dst.index))
    val: dict = {}
    res = []
    for s in steps:
        changed = any(type(x) is Slot and x.index in val for x in s.ins)
        ins = tuple(Const(val[x.index]) if type(x) is Slot and x.index in val else x for x in s.ins) if changed \
            else s.ins
        o = s.outs
        # operands: Python scalars or values folded here; an array constant is a captured tensor,
        # whose contents each call reads (what is computed from it is a step of every call)
        if (type(o) is int and all(type(x) is Slot or not hasattr(x.value, "shape") for x in s.ins)
                and all(type(x) is Const for x in ins) and base.get(o, o) not in tainted
                and (s.name in _FOLDABLE or s.params.get("kind") in ("unary", "binary"))
                and s.aval is not None and math.prod(s.aval[0]) * s.aval[1].itemsize <= FOLD_MAX):
            try:
                val[o] = s.fn(*[x.value for x in ins])
                continue
            except Exception:  # left to run (and raise) at run time, as eager would
                pass
        if changed:
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
            dst = s.ins[-1]
            src = dst.index if type(dst) is Slot else CAPTURED
        elif _fresh(s):
            src = None
        else:
            src = CAPTURED
            for x in s.ins:
                if type(x) is Slot:
                    src = x.index
                    break
                if hasattr(x.value, "shape"):  # a view of a captured tensor
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
                dst = s.ins[-1] if s.name == "out" else s.ins[0]
                needed = type(dst) is not Slot or base.get(dst.index, dst.index) < n_in \
                    or base.get(dst.index, dst.index) in live_bases
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
            for x in s.ins:
                if type(x) is Slot:
                    live.add(x.index)
                    live_bases.add(base.get(x.index, x.index))
    kept.reverse()
    return kept


class Program:
    """What ``rt.jit`` keeps per signature."""

    def __init__(self, P: Any, B: JitBackend, n_in: int, outs: list, out_tree: Any):
        self.P = P
        # compiled kernels and buffer reuse: what the parent backend offers (``Backend.fusion``, used when it
        # lists the "fusion" capability; asked in any case: the Dask backend says once that it compiles
        # nothing); without it the program replays its steps
        fz = P.fusion()
        self.fuser = fz if fz is not None and "fusion" in P.capabilities else None
        self.n_in = n_in
        self.nslots = B.nslots
        self.avals = B.avals
        self.outs = outs              # per output leaf: Output (a slot) | Const (returned as it is)
        self.out_slots = frozenset(o.index for o in outs if type(o) is Output)
        self.out_tree = out_tree
        # the captured tensors: what any traced step touched (dead steps included) and the tensors
        # returned as they are; a donated argument sharing memory with one of them is not reused
        cap = {id(x.value): x.value for s in B.steps for x in s.ins if type(x) is Const and hasattr(x.value, "shape")}
        cap.update((id(o.value._data), o.value._data) for o in outs if type(o) is Const and isinstance(o.value, Tensor))
        self.captured = list(cap.values())
        self.steps = _prune(B.steps, set(self.out_slots), n_in)
        self.kernels = 0
        marker = object()
        self.single = len(outs) == 1 and type(outs[0]) is Output and tree_unflatten(out_tree, [marker]) is marker
        self.donate: tuple = ()      # donated input slots (set by rt.jit)
        self.donations: list = []    # (input slot, plan index) where the result goes into the input's buffer
        self.consts: list = []       # captured tensors when donations are planned: never donated over
        self._plan()

    def _plan(self) -> None:
        """The flat list the replay walks: ``(fn, operand getter, arity kind, result slots)``.  The
        constants get slots of their own after the program's (``env0``), so that every step reads its
        operands with one ``itemgetter`` call; ``out_plan``: per output ``(slot, dtype)``, the value
        wrapped as a tensor of ``dtype``, or returned as it is when ``dtype`` is None (a constant)."""
        plan = []
        consts: list = []
        for s in self.steps:
            idx = []
            for x in s.ins:
                if type(x) is Slot:
                    idx.append(x.index)
                else:
                    idx.append(self.nslots + len(consts))
                    consts.append(x.value)
            kind = 2 if len(idx) > 1 else len(idx)
            plan.append((s.fn, itemgetter(*idx) if idx else None, kind, s.outs))
        out_plan = []
        for o in self.outs:
            if type(o) is Output:
                out_plan.append((o.index, o.dtype))
            else:
                out_plan.append((self.nslots + len(consts), None))
                consts.append(o.value)
        self.out_plan = out_plan
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
        fz = self.fuser
        if not self.donate or fz is None:
            return
        out_slots = self.out_slots
        taken: set = set()
        for d in self.donate:
            av = self.avals[d]
            if av is None or not av[2]:
                continue
            alias = {d}
            last = -1
            for i, s in enumerate(self.steps):
                if any(type(x) is Slot and x.index in alias for x in s.ins):
                    last = i
                    if not _fresh(s):
                        alias.update(_out_slots(s))
            if alias & out_slots:
                continue
            for i in range(len(self.steps) - 1, max(last, 0) - 1, -1):
                s = self.steps[i]
                o = s.outs
                if s.name == "fused":
                    dn = fz.fused_donation(s, d, self.avals, alias, out_slots, taken)
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

    def compile(self) -> bool:
        """Fold constants, then replace chains of elementwise steps by compiled kernels where the parent
        backend offers them (``self.fuser``); whether any kernel was made."""
        fz = self.fuser
        before = len(self.steps)
        live = self.out_slots
        # constants first (whole constant subgraphs go), then fusion; what either left unused (folded
        # operands, expands a kernel reads through) is pruned
        self.steps = _prune(_fold_constants(self.steps, live, self.avals), set(live), self.n_in)
        n = fz.fuse(self) if fz is not None else 0
        self.steps = _prune(self.steps, set(live), self.n_in)
        changed = len(self.steps) != before
        if (fz is not None and fz.recycle(self)) or n or changed:
            self.kernels = n
            self._plan()
        return n > 0

    def _donated(self, inputs: list) -> dict:
        """Plan index -> the donated buffer its result goes into, for the donations safe this call."""
        can_donate = self.fuser.can_donate
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
            v, d = self.out_plan[0]
            return wrap(env[v], d, P)
        res = [wrap(env[v], d, P) if d is not None else env[v] for v, d in self.out_plan]
        return tree_unflatten(self.out_tree, res)

    def __repr__(self) -> str:
        return "\n".join(map(repr, self.steps))
