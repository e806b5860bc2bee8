"""Value checks that work eagerly and under ``rt.jit``: a check on a tensor's values.

A library function that validates values (labels in range, probabilities in ``[0, 1]``) calls
:func:`check_values` with a function of the tensor's ``(min, max)``.  Eagerly it runs now; on a
tensor traced by ``rt.jit`` it becomes a *run-time guard* of the program (a ``guard`` step, as
index bounds are), run on every call before the results are returned, raising the same error
as the eager call.  Under ``rt.grad``/``rt.vmap`` it reads the values through the transformation
(every lane under vmap).
"""
from __future__ import annotations

from typing import Any, Callable

from ._backend.contract import TracedValueError
from ._tensor import Tensor

__all__ = ["check_values", "check_true"]


def check_values(t: Tensor, check: Callable[[Any, Any], None]) -> None:
    """Call ``check(lo, hi)`` with the minimum and maximum of ``t`` (Python scalars; NaN
    propagates; bools give ``(all, any)``), now or, for a traced tensor, at each run of the
    jitted program.  Nothing is checked for an empty tensor."""
    be = t._backend
    try:
        r = be.value_range(t._data)
    except TracedValueError as e:
        jb = e.backend
        if jb is None or not hasattr(jb, "guard"):
            raise
        jb.guard(e.handle, _range_guard(jb.parent, check))
        return
    if r is not None:
        check(*r)
    if getattr(be, "mode", None) == "jit":
        # a tensor the jitted function captured: the program reads it at every call, so it is checked then too
        be.guard(t._data, _range_guard(be.parent, check))


def _range_guard(P: Any, check: Callable[[Any, Any], None]) -> Callable[[Any], None]:
    """The run-time guard of ``check`` over the parent backend ``P``'s array."""
    def guard(x: Any) -> None:
        rr = P.value_range(x)
        if rr is not None:
            check(*rr)
    return guard


def check_true(cond: Tensor, error: Callable[[], Exception]) -> None:
    """Raise ``error()`` unless every element of the bool tensor ``cond`` is True (now, or at
    each run of a jitted program)."""

    def check(lo: Any, hi: Any) -> None:
        if not lo:
            raise error()

    check_values(cond, check)
