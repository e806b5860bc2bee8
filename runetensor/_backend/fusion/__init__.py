"""Fusion: the NumPy backend's compiled kernels for ``rt.jit`` programs (docs/jit.md, "What compiles").

The NumPy backend offers it through the contract: ``numpy_backend.fusion()`` is :data:`fuser`, a
:class:`~runetensor._backend.contract.Fuser`; ``rt.jit``'s ``Program`` asks its parent backend for
one (``"fusion" in capabilities``) and replays step by step on a backend without it.

* :mod:`._fuse`: groups of elementwise steps (with a reduction, arg-reduction or scan at the end)
  become C source, compiled by the system compiler and called through ``.._jitrun``;
* :mod:`._chains`: consecutive fused loops over the same rows become one row-chain kernel;
* :mod:`._cache`: the kernel cache, a folder private to the user with sealed, verified libraries.
"""
from __future__ import annotations

from typing import Any

from ..._tracers._jit import Slot, Step
from .._jitrun import Stride
from .._jitrun import can_donate as _can_donate
from ..contract import Fuser
from . import _fuse
from ._chains import chain_rows


class NumpyFuser(Fuser):
    """The :class:`Fuser` of the NumPy backend: C loops compiled at run time, recycled result buffers,
    donated buffers reused in place.

    >>> import runetensor as rt
    >>> isinstance(rt.get_backend("numpy").fusion(), NumpyFuser)
    True
    """

    def fuse(self, program: Any) -> int:
        n = _fuse.fuse_program(program)
        if n and _fuse.ROW_CHAINS:
            program.steps = chain_rows(program.steps, program.avals, set(program.out_slots))
        return n

    def recycle(self, program: Any) -> int:
        return _fuse.recycle_outputs(program)

    def fused_donation(self, step: Step, slot: int, avals: list, alias: set, out_slots: Any,
                       taken: set) -> tuple | None:
        # an elementwise result of the loop's own shape (no reduction's), a program output of the
        # donated input's shape, dtype and layout; the step reads the input (if at all) only as itself
        # at unit stride, i.e. at the element it writes, and no view of it
        fl = step.params.get("loop")
        av = avals[slot]
        if fl is None or tuple(step.params.get("gshape") or ()) != tuple(av[0]) \
                or step.params.get("reduction") is not None:
            return None
        reads = [k for k, x in enumerate(step.ins) if type(x) is Slot and x.index in alias]
        if len(reads) > 1 or (reads and (step.ins[reads[0]].index != slot or fl.patterns[reads[0]] != Stride.UNIT)):
            return None
        for j, o in enumerate(fl.outs):
            if o in out_slots and o not in taken and avals[o] == av:
                if not reads:
                    return j, None
                k2 = _fuse.load_in_place(fl.source)  # without ``restrict``: it reads what it writes
                return None if k2 is None else (j, k2)
        return None

    can_donate = staticmethod(_can_donate)  # (called at each call of a program with donations)


#: the NumPy backend's fuser (``NumpyBackend.fusion()``)
fuser = NumpyFuser()

__all__ = ["NumpyFuser", "fuser"]
