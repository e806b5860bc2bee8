"""The shared base of the transformations' backends, generated from the contract's signature table.

A transformation (``rt.grad``/``rt.jvp``, ``rt.vmap``, ``rt.jit``) is a backend whose handles wrap
the handles of the backend one level down (the *parent*).  What it does with a primitive depends
only on the primitive's kind and its arguments' roles (:data:`runetensor._backend.contract.SIGNATURES`),
so :class:`Transformation` gets one method per contract primitive, generated from that table:

* ``query``: the parent answers on the unwrapped handles (``self.unwrap(h)``);
* ``read``: the parent reads ``self.host_value(h, name)`` (a transformation may refuse: ``vmap`` a value
  that differs from lane to lane, ``jit`` any traced value);
* ``create``: ``self.create(name, fn, operands, params)``;
* ``move``: ``self.move(name, fn, h, params)``: the views machinery below, over ``self.move_rule``;
* ``compute``: ``self.process(name, fn, operands, params)``; ``out=`` goes to ``self.into``;
* ``write``: ``self.write(name, dst, src, key, mode)``.

``name`` is the primitive's entry in the table ``runetensor._primitives.PRIMS`` (``"add"``,
``"reduce.sum"``, ``"linalg.qr"``...), ``fn`` calls the parent's primitive on parent handles with the
parameters bound, ``params`` are the parameters by name (shapes and axes as tuples).  A
transformation subclasses :class:`Transformation`, gives ``unwrap``, ``process`` and ``write`` (and
``move_rule`` when it keeps views), and overrides a primitive's method only for a measured fast
path or a rule that needs more than the hooks (``print(generated_source("reduce"))`` shows what
a generated method does).

Views: a view remembers its *root* (``base``), the movement steps from it (``recipe``) and the
root's ``version`` when it was taken.  A write into the root (or another view of it) bumps the
version, and the next use of the view re-derives it from the root (:meth:`Transformation.fresh`).
"""
from __future__ import annotations

import inspect
import linecache
from abc import abstractmethod
from typing import Any, Callable

from .._backend.contract import SIGNATURES, UNARY_OPS, Backend
from .._primitives import reshape as _reshape

#: an empty parameter dict, shared (never written)
NO_PARAMS: dict = {}
#: the primitives that import foreign data (their result may share memory with the caller's objects)
IMPORTS = frozenset(n for n, s in SIGNATURES.items() if "obj" in s.roles)


def _norm(annotation: str, arg: str) -> str:
    """The expression normalising a parameter: sequences become tuples (the rules compare and hash them)."""
    if annotation == "Sequence[tuple[int, int]]":
        return f"tuple(tuple(w) for w in {arg})"
    if annotation in ("Shape", "Sequence[int]", "tuple[int, ...]", "tuple"):
        return f"tuple({arg})"
    return arg


def _tuple(names: list) -> str:
    """The source of a tuple of the names."""
    return f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"


def _entry(name: str, roles: tuple) -> str:
    """The expression giving the table entry's name of a call of contract method ``name``."""
    if "op" not in roles:
        return repr(name)
    return "op" if name in ("unary", "binary") else f"{name + '.'!r} + op"


def generated_source(name: str) -> str:
    """The source of the method :class:`Transformation` generates for contract primitive ``name``.

    >>> print(generated_source("where"))
    def where(self, cond, x, y):
        P = self.parent
        return self.process('where', lambda cond, x, y: P.where(cond, x, y), (cond, x, y), NO_PARAMS)
    """
    sig = SIGNATURES[name]
    ps = list(inspect.signature(getattr(Backend, name)).parameters.values())[1:]
    args = [p.name for p in ps]
    head = ", ".join(("*" + a if r == "*hs" else "**" + a if r == "**p" else a + "=" + repr(p.default)
                      if p.default is not inspect.Parameter.empty else a) for a, r, p in zip(args, sig.roles, ps))
    lines = [f"def {name}(self, {head}):"]
    if sig.kind == "query":
        call = ", ".join(f"self.unwrap({a})" if r == "h" else a for a, r in zip(args, sig.roles))
        return "\n".join(lines + [f"    return self.parent.{name}({call})"])
    if sig.kind == "read":
        call = ", ".join(f"self.host_value({a}, {name!r})" if r == "h" else a for a, r in zip(args, sig.roles))
        return "\n".join(lines + [f"    return self.parent.{name}({call})"])
    if sig.kind == "write":
        dst, src = [a for a, r in zip(args, sig.roles) if r == "h"]
        key = next((a for a, r in zip(args, sig.roles) if r == "key"), "None")
        mode = "mode" if "mode" in args else "'set'"
        return "\n".join(lines + [f"    self.write({name!r}, {dst}, {src}, {key}, {mode})"])
    params = []
    for a, r, p in zip(args, sig.roles, ps):
        if r in ("p", "key"):
            norm = _norm(str(p.annotation), a)
            if norm != a:
                lines.append(f"    {a} = {norm}")
            params.append(f"{a!r}: {a}")
    lines.append("    P = self.parent")
    ops = [a for a, r in zip(args, sig.roles) if r in ("h", "h?", "obj")]
    call = []
    for a, r in zip(args, sig.roles):
        call.append({"hs": f"list({a})", "*hs": f"*{a}", "**p": f"**{a}", "out": ""}.get(r, a))
    call_s = ", ".join(c for c in call if c)
    pdict = "{" + ", ".join(params) + "}" if params else "NO_PARAMS"
    if "**p" in sig.roles:
        pdict = args[sig.roles.index("**p")]
    entry = _entry(name, sig.roles)
    if sig.kind == "create":
        if "obj" in sig.roles:
            obj = args[sig.roles.index("obj")]
            lines.append(f"    if self.owns({obj}):")
            lines.append(f"        return self.create({entry}, lambda {obj}: P.{name}({call_s}), ({obj},), {pdict})")
        lines.append(f"    return self.create({entry}, lambda: P.{name}({call_s}), (), {pdict})")
        return "\n".join(lines)
    if sig.kind == "move":
        lines.append(f"    return self.move({entry}, lambda {ops[0]}: P.{name}({call_s}), {ops[0]}, {pdict})")
        return "\n".join(lines)
    if "hs" in sig.roles or "*hs" in sig.roles:
        seq = args[sig.roles.index("hs" if "hs" in sig.roles else "*hs")]
        lines.append(f"    return self.process({entry}, lambda *{seq}: P.{name}({call_s}), tuple({seq}), {pdict})")
        return "\n".join(lines)
    lam = f"lambda {', '.join(ops)}: P.{name}({call_s})"
    if "out" in sig.roles:
        out = args[sig.roles.index("out")]
        lam_out = f"lambda {', '.join(ops + [out])}: P.{name}({call_s}, out={out})"
        lines.append(f"    if {out} is not None:")
        lines.append(f"        return self.into({entry}, {lam_out}, {_tuple(ops)}, {out})")
    lines.append(f"    return self.process({entry}, {lam}, {_tuple(ops)}, {pdict})")
    return "\n".join(lines)


def bind(P: Backend, name: str, params: dict) -> Callable[..., Any]:
    """The parent's primitive of table entry ``name`` (``"reduce.sum"``...) as a function of its operands,
    with ``params`` bound (what a batching rule calls with its own parameters, such as shifted axes)."""
    try:
        binder, op = _BOUND[name]
    except KeyError:
        method, _, op = name.partition(".")
        if method not in SIGNATURES:  # an elementwise op: unary or binary
            method, op = ("unary" if name in _UNARY else "binary"), name
        binder, op = _BOUND[name] = _BINDERS[method], op
    return binder(P, op, params)


def _binder_source(name: str) -> str:
    sig = SIGNATURES[name]
    args = list(inspect.signature(getattr(Backend, name)).parameters)[1:]
    ops = [a for a, r in zip(args, sig.roles) if r in ("h", "h?", "obj")]
    call = []
    for a, r in zip(args, sig.roles):
        if r == "p" or r == "key":
            call.append(f"p[{a!r}]")
        elif r == "op":
            call.append("op")
        elif r == "hs":
            call.append(f"list({a})")
        elif r == "*hs":
            call.append(f"*{a}")
        elif r == "**p":
            call.append("**p")
        elif r != "out":
            call.append(a)
    seq = next((a for a, r in zip(args, sig.roles) if r in ("hs", "*hs")), None)
    lam = f"lambda *{seq}:" if seq else f"lambda {', '.join(ops)}:"
    if name == "callback":
        call[0] = "p['fn']"
    return f"def bind_{name}(P, op, p):\n    return {lam} P.{name}({', '.join(call)})"


def _compile(src: str, name: str, ns: dict) -> Callable:
    # named after this file (so frames in it count as the library's, e.g. for rt.debug_nans), with the
    # source in linecache (so tracebacks show the generated lines)
    filename = f"{__file__} (generated {name})"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), ns)  # noqa: S102 - source built above from the contract
    return ns[name]


_GENERATED = {n: _compile(generated_source(n), n, {"NO_PARAMS": NO_PARAMS}) for n in SIGNATURES}
_BINDERS = {n: _compile(_binder_source(n), f"bind_{n}", {}) for n in SIGNATURES
            if SIGNATURES[n].kind in ("compute", "create", "move")}


_UNARY = frozenset(UNARY_OPS)
_NOT_PASSED_DOWN = frozenset({"fusion"})
_BOUND: dict[str, tuple[Callable, str]] = {}  # table entry -> (its method's binder, its op)


def replay_view(B: Backend, h: Any, recipe: tuple) -> Any:
    """The region of a root-shaped handle ``h`` of ``B`` that ``recipe`` selects (a view, or a copy
    where the root's layout no longer lets a ``reshape`` be a view)."""
    for name, params in recipe:
        h = _reshape(B, h, params["shape"]) if name == "reshape" else _BINDERS[name](B, None, params)(h)
    return h


class Transformation(Backend):
    """A backend over ``parent`` (level = parent's + 1); one method per primitive, generated from the
    contract's signature table (see the module doc for the hooks a subclass gives)."""

    def __init__(self, parent: Backend):
        self.parent = parent
        self.level = parent.level + 1

    @property
    def capabilities(self) -> frozenset:  # type: ignore[override]
        """The parent's (a transformation computes on the parent backend's handles), less ``"fusion"``: its
        handles are tracers, which a fuser cannot compile (``fusion()`` is None)."""
        return self.parent.capabilities - _NOT_PASSED_DOWN

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def owns(self, h: Any) -> bool:
        """Whether ``h`` is a handle of this transformation (anything else is a constant)."""

    @abstractmethod
    def unwrap(self, h: Any) -> Any:
        """The parent handle of ``h`` (``h`` itself for a handle of a lower level)."""

    @abstractmethod
    def process(self, name: str, fn: Callable[..., Any], hs: tuple, params: dict) -> Any:
        """The result of table entry ``name`` on operands ``hs`` (``fn`` computes it on parent handles)."""

    @abstractmethod
    def write(self, name: str, dst: Any, src: Any, key: tuple | None, mode: str) -> None:
        """``dst[key] = src`` (``key`` None: all of ``dst``; ``mode="add"``: accumulate) in place."""

    def host_value(self, h: Any, name: str) -> Any:
        """The parent handle whose values primitive ``name`` reads to the host."""
        return self.unwrap(h)

    def create(self, name: str, fn: Callable[..., Any], hs: tuple, params: dict) -> Any:
        """A new handle made by ``fn`` (``hs``: the imported object when it is an operand)."""
        return self.process(name, fn, hs, params)

    def into(self, name: str, fn: Callable[..., Any], hs: tuple, out: Any) -> Any:
        """``out=``: compute ``name`` on ``hs`` (``fn(*hs, out)`` on the parent), then write into ``out``."""
        r = self.process(name, lambda *a: fn(*a, None), hs, NO_PARAMS)
        self.write(name, out, r, None, "set")
        return out

    def move_rule(self, name: str, fn: Callable[..., Any], h: Any, params: dict) -> Any:
        """The view ``name`` of ``h`` (None for a ``reshape`` the strides cannot express)."""
        return self.process(name, fn, (h,), params)

    #: the fields of a handle that a view re-derived from its root replaces (:meth:`fresh`)
    view_state: tuple[str, ...] = ("primal",)

    # ------------------------------------------------------------------ views
    def move(self, name: str, fn: Callable[..., Any], h: Any, params: dict) -> Any:
        out = self.move_rule(name, fn, h, params)
        if out is None:
            return None
        if self.owns(h):
            root = h.base or h
            out.base = root
            out.recipe = h.recipe + ((name, params),)
            out.version = root.version
            self.on_view(out, root)
        else:
            self.on_view(out, None)
        return out

    def on_view(self, view: Any, root: Any) -> None:
        """Called for each new view (``root`` None: a view of a lower level's handle)."""

    def fresh(self, h: Any) -> None:
        """Re-derive the view ``h`` from its root, written since ``h`` was taken."""
        root = h.base
        cur: Any = root
        P = self.parent
        for name, params in h.recipe:
            fn = (lambda x, s=params["shape"]: _reshape(P, x, s)) if name == "reshape" else \
                _BINDERS[name](P, None, params)
            cur = self.move_rule(name, fn, cur, params)
        for f in self.view_state:
            setattr(h, f, getattr(cur, f))
        h.version = root.version


for _name, _fn in _GENERATED.items():
    _fn.__qualname__ = f"Transformation.{_name}"
    _fn.__doc__ = getattr(Backend, _name).__doc__
    setattr(Transformation, _name, _fn)
Transformation.__abstractmethods__ = frozenset(  # type: ignore[misc]
    n for n in Transformation.__abstractmethods__ if n not in _GENERATED)
del _name, _fn

__all__ = ["Transformation", "NO_PARAMS", "IMPORTS", "bind", "generated_source", "replay_view"]
