"""Printing in the seed's format (docs/conventions.md section 5).

``str(t)`` is what the OCaml toplevel shows after ``=``: rows are bracketed,
elements separated by ``", "``, each row after the first on a new line
indented one space per nesting level; floats print as C's ``%g`` (6
significant digits), booleans as ``true``/``false``, complex as ``1+2i``.
Tensors with more than ``threshold`` elements are summarised: along each axis
longer than ``2 * edgeitems`` only the first and last ``edgeitems`` entries
are shown, around ``...``.  Only the shown elements are read.
"""
from __future__ import annotations

import math
from typing import Any

from ._tensor import attach, wrap

__all__ = ["tensor_str", "tensor_repr", "format_scalar", "set_printoptions", "get_printoptions"]

_OPTIONS = {"threshold": 1000, "edgeitems": 3, "precision": 6}


def set_printoptions(threshold: int | None = None, edgeitems: int | None = None,
                     precision: int | None = None) -> None:
    """Change how tensors print.

    Args:
        threshold: tensors with more elements than this are summarised (default 1000).
        edgeitems: entries shown at each end of a summarised axis (default 3).
        precision: significant digits of floats (default 6, as ``%g``).
    Raises:
        ValueError: for a negative or zero setting.

    >>> import runetensor as rt
    >>> rt.set_printoptions(precision=3); print(rt.scalar(rt.float64, 3.14159)); rt.set_printoptions(precision=6)
    3.14
    """
    for name, v in (("threshold", threshold), ("edgeitems", edgeitems), ("precision", precision)):
        if v is None:
            continue
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if name == "threshold" else 1):
            raise ValueError(f"set_printoptions: {name} must be a positive integer, got {v!r}")
        _OPTIONS[name] = v


def get_printoptions() -> dict[str, int]:
    """The current print options as a dict.

    >>> import runetensor as rt
    >>> rt.get_printoptions()["edgeitems"]
    3
    """
    return dict(_OPTIONS)


def _fmt_float(v: float, prec: int) -> str:
    if v != v:
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "%.*g" % (prec, v)


def format_scalar(v: Any, kind: str, prec: int | None = None) -> str:
    """One element as the seed prints it (``kind`` is the dtype kind)."""
    p = _OPTIONS["precision"] if prec is None else prec
    if kind == "b":
        return "true" if v else "false"
    if kind in "iu":
        return str(int(v))
    if kind == "f":
        return _fmt_float(float(v), p)
    if kind == "c":
        c = complex(v)
        im = _fmt_float(c.imag, p)
        sign = "" if im.startswith("-") else "+"
        return f"{_fmt_float(c.real, p)}{sign}{im}i"
    return str(v)


def _nested(lst: Any, depth: int, kind: str, prec: int) -> str:
    if not isinstance(lst, list):
        return lst if isinstance(lst, str) else format_scalar(lst, kind, prec)
    if not lst:
        return "[]"
    if not any(isinstance(x, list) for x in lst):
        return "[" + ", ".join(x if isinstance(x, str) else format_scalar(x, kind, prec) for x in lst) + "]"
    sep = ",\n" + " " * (depth + 1)
    return "[" + sep.join(_nested(x, depth + 1, kind, prec) for x in lst) + "]"


def _plan(shape: tuple[int, ...], threshold: int, edge: int) -> list[list[int | None]] | None:
    """Per axis, the indices to show (None marks ``...``), or None when nothing is elided.

    Axes longer than ``2 * edge`` show their first and last ``edge`` entries.  If
    that still shows more than ``threshold`` elements (many short axes), the
    edge shrinks down to 1, and then the outermost axes show only their first
    entry, until the shown part fits: printing never reads or formats more
    than about ``threshold`` elements.
    """
    size = 1
    for s in shape:
        size *= s
    if size <= threshold:
        return None

    def axis(n: int, e: int, head: bool) -> list[int | None]:
        if head and n > 1:
            return [0, None]
        if n > 2 * e:
            return list(range(e)) + [None] + list(range(n - e, n))
        return list(range(n))

    def shown(plan: list[list[int | None]]) -> int:
        c = 1
        for ix in plan:
            c *= sum(1 for i in ix if i is not None)
        return c

    for e in range(edge, 0, -1):
        plan = [axis(n, e, False) for n in shape]
        if shown(plan) <= threshold:
            return plan
    for k in range(1, len(shape) + 1):
        plan = [axis(n, 1, i < k) for i, n in enumerate(shape)]
        if shown(plan) <= threshold:
            return plan
    return plan


def _summarised(t: Any, plan: list[list[int | None]]) -> Any:
    """Nested lists of the shown elements, with the string "..." where entries are elided."""
    be, h = t._backend, t._data

    def rec(h: Any, depth: int) -> Any:
        idx = plan[depth]
        if h.ndim == 1:  # the shown entries between "..." marks are contiguous: one read each
            out: list[Any] = []
            run: list[int] = []
            for i in idx:
                if i is None:
                    if run:
                        out += be.to_list(be.view_index(h, (slice(run[0], run[-1] + 1, 1),)))
                        run = []
                    out.append("...")
                else:
                    run.append(i)
            if run:
                out += be.to_list(be.view_index(h, (slice(run[0], run[-1] + 1, 1),)))
            return out
        rest = tuple(slice(0, s, 1) for s in h.shape[1:])
        return ["..." if i is None else rec(be.view_index(h, (i,) + rest), depth + 1) for i in idx]

    return rec(h, 0)


@attach("__str__")
def tensor_str(t: Any) -> str:
    """``str(t)`` (``Tensor.__str__``): the seed's format (under ``vmap``, a value that differs
    between lanes prints every lane, one per row of a leading axis)."""
    lanes = getattr(t._backend, "lanes", None)
    if lanes is not None:
        r = lanes(t._data)
        if r is not None:
            be, h = r
            return f"<{t._backend.name}: {h.shape[0]} lanes> " + tensor_str(wrap(h, t._dtype, be))
    kind = t._dtype.kind
    prec = _OPTIONS["precision"]
    h = t._data
    if h.ndim == 0:
        return format_scalar(t._backend.to_list(h), kind, prec)
    plan = _plan(h.shape, _OPTIONS["threshold"], _OPTIONS["edgeitems"])
    if plan is not None:
        return _nested(_summarised(t, plan), 0, kind, prec)
    return _nested(t._backend.to_list(h), 0, kind, prec)


@attach("__repr__")
def tensor_repr(t: Any) -> str:
    """``repr(t)`` (``Tensor.__repr__``): ``tensor(<str>, dtype=<name>)`` with continuation lines aligned."""
    body = tensor_str(t).replace("\n", "\n" + " " * len("tensor("))
    extra = f", shape={t._data.shape}" if t._data.size == 0 and t._data.ndim > 1 else ""
    return f"tensor({body}, dtype={t._dtype.name}{extra})"
