"""A traced program: the recorded steps, pruned, as a flat list replayed in order on the parent
backend.  Slot ``i < n_in`` holds input ``i``; each step reads slots (or constants) and fills
its result slots.  Steps whose results nothing uses are dropped, except the writes and the
run-time guards."""
from __future__ import annotations

from typing import Any

from .._autodiff._pytree import tree_unflatten
from .._tensor import wrap
from ._backend import WRITES, JitBackend, Step


def _prune(steps: list[Step], live: set) -> list[Step]:
    kept = []
    for s in reversed(steps):
        outs = s.outs
        if outs is None:
            needed = False
        elif isinstance(outs, tuple):
            needed = any(type(o) is int and o in live for o in outs)
        else:
            needed = outs in live
        if needed or s.name in WRITES:
            kept.append(s)
            for k, v in s.ins:
                if k == "s":
                    live.add(v)
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
        self.steps = _prune(B.steps, {s for k, s, _ in outs if k == "s"})
        self.kernels = 0
        marker = object()
        self.single = len(outs) == 1 and outs[0][0] == "s" and tree_unflatten(out_tree, [marker]) is marker
        self._plan()

    def _plan(self) -> None:
        """The flat list the replay walks: ``(fn, operand slots or constants, result slots)``."""
        plan = []
        for s in self.steps:
            ins = tuple((True, v) if k == "s" else (False, v) for k, v in s.ins)
            plan.append((s.fn, ins, s.outs))
        self.plan = plan

    def compile(self) -> bool:
        """Replace chains of elementwise steps by compiled kernels where possible; whether any was."""
        from ._fuse import fuse_program
        n = fuse_program(self)
        if n:
            self.kernels = n
            self._plan()
        return n > 0

    def run(self, inputs: list) -> Any:
        env: list[Any] = [None] * self.nslots
        env[:self.n_in] = inputs
        for fn, ins, outs in self.plan:
            r = fn(*[env[v] if s else v for s, v in ins])
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
