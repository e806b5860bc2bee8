"""``rt.jit``: trace a function once per signature into a program of primitives, then replay it.

* :mod:`._backend`: the tracer backend (``JitBackend``) whose handles are program slots;
* :mod:`._program`: the recorded program, dead-code elimination and replay;
* the compiled fast path (fused elementwise loops in C, cached on disk) is the parent backend's,
  asked for through the contract (``Backend.fusion``: the NumPy backend's ``runetensor._backend.fusion``).

See ``docs/jit.md`` for the semantics.
"""
from __future__ import annotations

import functools
import inspect
import itertools
import logging
import os
import threading
import warnings
from operator import itemgetter
from typing import Any, Callable, Sequence

from .. import _debug
from .._autodiff._pytree import tree_flatten, tree_unflatten
from .._backend import _active, get_backend
from .._settings import env_setting, positive_int
from .._tensor import Tensor, wrap
from .._treepaths import leaf_paths
from .._tracers._jit import Const, JitBackend, Output
from ._capture import lifting
from ._program import Program

from .._backend import _active as _threads_active  # (this thread's transformation stack)

try:  # the cache hits' key and lookup in C (every argument a C-contiguous NumPy tensor)
    from .._backend._dispatch import fast_key as _ckey
    from .._backend._dispatch import fast_lookup as _clookup
except ImportError:  # not built: _Jitted._fast_key in Python
    _ckey = _clookup = None

#: programs kept per jitted function (least recently used evicted first); ``RUNETENSOR_JIT_MAX_PROGRAMS``
#: (an integer >= 1; another value warns once and keeps 64)
MAX_PROGRAMS = env_setting("RUNETENSOR_JIT_MAX_PROGRAMS", 64, positive_int, "an integer >= 1")
_TICK = itertools.count()
#: guards every change of the jitted functions' program caches (lookups take no lock: a dict read is
#: atomic, and a program found stays usable after it is evicted)
_CACHE_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    global _CACHE_LOCK
    _CACHE_LOCK = threading.Lock()  # another thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

__all__ = ["jit", "jit_stats", "RetraceWarning"]

log = logging.getLogger("runetensor.jit")


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


class TensorLeaf(tuple):
    """The signature of a tensor leaf: ``(backend name, shape, dtype, layout)``, layout None when
    C-contiguous, else ``(strides, offset, buffer size)`` (or ``"strided"``).  A tuple, so that a
    signature key hashes and compares in C; never equal to a :class:`ValueLeaf` (another length).

    >>> TensorLeaf(("numpy", (3,), None, None)).shape
    (3,)
    """

    __slots__ = ()
    backend = property(itemgetter(0))
    shape = property(itemgetter(1))
    dtype = property(itemgetter(2))
    layout = property(itemgetter(3))


class ValueLeaf(tuple):
    """The signature of any other leaf: ``(type, value)`` (static by value).

    >>> ValueLeaf((int, 3)).value
    3
    """

    __slots__ = ()
    pytype = property(itemgetter(0))
    value = property(itemgetter(1))


class StaticArg(tuple):
    """A static argument's part of a call's signature: ``(value,)``.

    >>> StaticArg((4,)).value
    4
    """

    __slots__ = ()
    value = property(itemgetter(0))


class TracedArg(tuple):
    """A traced argument's part of a call's signature: ``(pytree structure, leaves' signatures)``
    (:class:`TensorLeaf`/:class:`ValueLeaf`); never equal to a :class:`StaticArg` (another length).

    >>> TracedArg(("tree", ())).leaves
    ()
    """

    __slots__ = ()
    tree = property(itemgetter(0))
    leaves = property(itemgetter(1))


def _leaf_desc(x: Any, be: Any) -> Any:
    """What of a leaf the program depends on: a tensor's backend, shape, dtype and layout; any
    other leaf's value."""
    if isinstance(x, Tensor):
        h = x._data
        b = x._backend
        if b.is_c_contiguous(h):
            lay: Any = None
        else:
            lay = (b.strides(h), b.offset(h), b.buffer_size(h)) if "strides" in b.capabilities else "strided"
        return TensorLeaf((b.name, h.shape, x._dtype, lay))
    return ValueLeaf((type(x), x))


def _describe_leaf(d: Any) -> str:
    if type(d) is TensorLeaf:
        return f"tensor of shape {d.shape}, dtype {d.dtype}"
    return f"Python {d.pytype.__name__} {d.value!r}"


def _diff(old: tuple, new: tuple) -> str:
    """Words for the first argument whose signature changed between two calls, by position and
    path: ``argument 1 (`state.count`): Python int 5 -> 6``."""
    od, nd = dict(old), dict(new)
    pos = {name: i for i, (name, _) in enumerate(new)}
    def named(name: str) -> str:
        return f"keyword argument `{name[3:]}`" if name.startswith("kw:") else f"argument `{name}`"

    for name in nd:
        if name not in od:
            return f"{named(name)} was added"
    for name in od:
        if name not in nd:
            return f"{named(name)} was removed"

    def label(name: str, path: str | None = None) -> str:
        where = f"`{path or name}`"
        return f"argument {pos[name]} ({where})" if not name.startswith("kw:") else f"keyword argument {where}"

    for name, o in old:
        n = nd[name]
        if o == n:
            continue
        shown = name[3:] if name.startswith("kw:") else name
        if type(o) is StaticArg or type(n) is StaticArg:
            return f"static {label(name, shown)}: {o[0]!r} -> {n[0]!r}"  # (value, or pytree structure)
        if o.tree != n.tree:
            return f"{label(name, shown)} changed structure: {o.tree!r} -> {n.tree!r}"
        paths = leaf_paths(n.tree, shown)
        for i, (a, b) in enumerate(zip(o.leaves, n.leaves)):
            if a != b:
                lab = label(name, paths[i])
                if type(a) is TensorLeaf and type(b) is TensorLeaf:
                    what = []
                    if a.shape != b.shape:
                        what.append(f"shape {a.shape} -> {b.shape}")
                    if a.dtype is not b.dtype:
                        what.append(f"dtype {a.dtype} -> {b.dtype}")
                    if a.layout != b.layout:
                        what.append("memory layout")
                    if a.backend != b.backend:
                        what.append(f"backend {a.backend} -> {b.backend}")
                    return f"{lab}: {', '.join(what)}"
                if type(a) is ValueLeaf and type(b) is ValueLeaf and a.pytype is b.pytype:
                    return f"{lab}: Python {a.pytype.__name__} {a.value!r} -> {b.value!r}"
                return f"{lab}: {_describe_leaf(a)} -> {_describe_leaf(b)}"
    return "the signature changed"


class RetraceWarning(RuntimeWarning):
    """Warned (once per jitted function) when it has been traced more than ``RETRACE_WARN_AFTER``
    times: some argument that changes between calls is part of the signature."""


#: traces of one jitted function after which a retrace warns (once); ``RUNETENSOR_JIT_RETRACE_WARN``, 0: never
RETRACE_WARN_AFTER = 3


def _retrace_setting() -> int:
    raw = os.environ.get("RUNETENSOR_JIT_RETRACE_WARN")
    if raw is None or not raw.strip():
        return RETRACE_WARN_AFTER
    try:
        v = int(raw)
        if v < 0:
            raise ValueError
    except ValueError:
        warnings.warn(f"RUNETENSOR_JIT_RETRACE_WARN={raw!r} is not an integer >= 0; using "
                      f"{RETRACE_WARN_AFTER}", RuntimeWarning, stacklevel=2)
        return RETRACE_WARN_AFTER
    return v


RETRACE_WARN_AFTER = _retrace_setting()


class _Jitted:
    """The state of one jitted function: its programs by signature and its counters."""

    def __init__(self, f: Callable, static_argnums: tuple, static_argnames: tuple, donate_argnums: tuple):
        self.f = f
        self.static_argnums = static_argnums
        self.static_argnames = frozenset(static_argnames)
        self.donate_argnums = donate_argnums
        self.cache: dict[Any, Program] = {}
        # cache hits' fast path: all arguments positional level-0 C-contiguous tensors, no statics
        self.fast: dict[Any, Program] = {}
        self.fast_ok = not static_argnums and not static_argnames
        self.last: tuple | None = None
        self.warned = False  # the retrace warning was given
        self.stats = {"traces": 0, "cache_hits": 0, "compiles": 0, "inline_calls": 0, "evictions": 0}
        try:
            params = list(inspect.signature(f).parameters.values())
        except (TypeError, ValueError):
            params = []
        self.pos_names = [p.name for p in params
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.name = getattr(f, "__qualname__", getattr(f, "__name__", repr(f)))

    def _argname(self, i: int) -> str:
        return self.pos_names[i] if i < len(self.pos_names) else f"args[{i}]"

    def _is_static(self, i: int) -> bool:
        return i in self.static_argnums or (i < len(self.pos_names) and self.pos_names[i] in self.static_argnames)

    def _fast_key(self, args: tuple) -> Any:
        """The fast path's key (the backend, shape, dtype of each argument), or None when a call
        needs the full signature (not all arguments plain C-contiguous level-0 tensors)."""
        if _active.stack or not args:
            return None
        if _ckey is not None:
            fk0 = _ckey(args)  # the same key; NotImplemented: another backend, layout or type
            if fk0 is not NotImplemented:
                return fk0
        fk = []
        for x in args:
            if type(x) is not Tensor:
                return None
            b = x._backend
            h = x._data
            if b.level or not b.is_c_contiguous(h):
                return None
            fk.append((b, h.shape, x._dtype))
        return tuple(fk)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fk = self._fast_key(args) if self.fast_ok and not kwargs else None
        if fk is not None:
            prog = self.fast.get(fk)
            if prog is not None:
                self.stats["cache_hits"] += 1
                prog.used = next(_TICK)
                return prog.run([x._data for x in args])
        nargs = len(args)
        static_pos = [i for i in range(nargs) if self._is_static(i)]
        static_kw = sorted(k for k in kwargs if k in self.static_argnames)
        dyn_args = [a for i, a in enumerate(args) if i not in static_pos]
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        leaves, tree = tree_flatten((dyn_args, dyn_kw))
        # where to run: a transformation (or a jit) running now, or a traced argument: inline
        top = _active.stack[-1] if _active.stack else None
        ts = []
        for x in leaves:
            if isinstance(x, Tensor):
                ts.append(x)
                b = x._backend
                if top is None or b.level > top.level:
                    top = b
        if top is None:
            top = get_backend()
        if top.level > 0:
            self.stats["inline_calls"] += 1
            return self.f(*args, **kwargs)
        statics = []
        for i in static_pos:
            v = args[i]
            if not _hashable(v):
                raise TypeError(f"jit({self.name}): static argument {self._argname(i)!r} must be hashable, got "
                                f"{type(v).__name__}")
            statics.append((i, v))
        for k in static_kw:
            if not _hashable(kwargs[k]):
                raise TypeError(f"jit({self.name}): static argument {k!r} must be hashable, got "
                                f"{type(kwargs[k]).__name__}")
            statics.append((k, kwargs[k]))
        descs = []
        for x in leaves:
            d = _leaf_desc(x, top)
            if type(d) is ValueLeaf and not _hashable(x):
                raise TypeError(f"jit({self.name}): argument leaf of type {type(x).__name__} is neither a tensor "
                                f"nor hashable; convert it to a tensor or pass it through static_argnums")
            descs.append(d)
        key = (id(top), tree, tuple(descs), tuple(statics))
        prog = self.cache.get(key)
        if prog is None:
            out = self._trace(key, top, args, kwargs, static_pos, static_kw, leaves, tree, ts)
            if fk is not None:
                self._set_fast(fk, key)
            return out
        if fk is not None:
            self._set_fast(fk, key)
        self.stats["cache_hits"] += 1
        prog.used = next(_TICK)
        return prog.run([t._data for t in ts])

    def _set_fast(self, fk: Any, key: Any) -> None:
        """Point the fast path's ``fk`` at the program of ``key``, if it is still cached (another
        thread may have evicted it meanwhile)."""
        with _CACHE_LOCK:
            prog = self.cache.get(key)
            if prog is not None:
                self.fast[fk] = prog

    def _insert(self, key: Any, prog: Program) -> None:
        """Cache ``prog`` under ``key`` and drop the least recently used programs beyond
        ``MAX_PROGRAMS`` (freed after the lock is released: freeing one may run arbitrary code)."""
        with _CACHE_LOCK:
            gone = [self.cache.get(key)]
            self.cache[key] = prog
            cap = max(1, int(MAX_PROGRAMS))
            if len(self.cache) > cap:
                order = sorted(self.cache.items(), key=lambda kv: kv[1].used)
                for k, _ in order[:len(self.cache) - cap]:
                    gone.append(self.cache.pop(k))
                self.stats["evictions"] += len(gone) - 1
                ids = {id(p) for p in gone}
                self.fast = {k: v for k, v in self.fast.items() if id(v) not in ids}
        del gone

    def _signature_parts(self, args: tuple, kwargs: dict, static_pos: list, static_kw: list) -> tuple:
        parts = []
        for i, a in enumerate(args):
            if i in static_pos:
                parts.append((self._argname(i), StaticArg((a,))))
            else:
                lv, tr = tree_flatten(a)
                parts.append((self._argname(i), TracedArg((tr, tuple(_leaf_desc(x, None) for x in lv)))))
        for k in sorted(kwargs):
            if k in static_kw:
                parts.append(("kw:" + k, StaticArg((kwargs[k],))))
            else:
                lv, tr = tree_flatten(kwargs[k])
                parts.append(("kw:" + k, TracedArg((tr, tuple(_leaf_desc(x, None) for x in lv)))))
        return tuple(parts)

    def _donated_slots(self, args: tuple, static_pos: list) -> tuple:
        """The program input slots (tensor leaves, in order) of the donated positional arguments."""
        slots = []
        n = 0
        for i, a in enumerate(args):
            if i in static_pos:
                continue
            lv, _ = tree_flatten(a)
            for x in lv:
                if isinstance(x, Tensor):
                    if i in self.donate_argnums:
                        slots.append(n)
                    n += 1
        return tuple(slots)

    def _trace(self, key: Any, P: Any, args: tuple, kwargs: dict, static_pos: list, static_kw: list,
               leaves: list, tree: Any, ts: list) -> Any:
        parts = self._signature_parts(args, kwargs, static_pos, static_kw)
        if self.last is not None:
            why = _diff(self.last, parts)
            log.info("jit(%s): retracing (trace %d): %s", self.name, self.stats["traces"] + 1, why)
            if not self.warned and 0 < RETRACE_WARN_AFTER <= self.stats["traces"]:
                self.warned = True
                warnings.warn(
                    f"jit({self.name}) has now been traced {self.stats['traces'] + 1} times (each trace runs the "
                    f"Python function again and builds a new program), this time because {why}. A value "
                    f"that changes between calls should be a tensor argument (rt.asarray(v), e.g. a step count or "
                    f"a learning rate), not a Python scalar; keep shapes and dtypes fixed (pad the last batch), "
                    f"or, for a true constant, mark it static (static_argnums). This warning is shown once per "
                    f"jitted function (RUNETENSOR_JIT_RETRACE_WARN=0 turns it off).",
                    RetraceWarning, stacklevel=4)
        else:
            log.debug("jit(%s): tracing", self.name)
        self.last = parts
        self.stats["traces"] += 1
        B = JitBackend(P)
        ins = [wrap(B.input(t._data), t._dtype, B) if isinstance(t, Tensor) else t for t in leaves]
        traced = iter(ins)
        dyn_args, dyn_kw = tree_unflatten(tree, list(traced))
        full_args = []
        it = iter(dyn_args)
        for i in range(len(args)):
            full_args.append(args[i] if i in static_pos else next(it))
        kw = dict(dyn_kw)
        for k in static_kw:
            kw[k] = kwargs[k]
        _active.stack.append(B)
        try:
            with lifting():  # operations on captured tensors become steps too (read at call time)
                out = self.f(*full_args, **kw)
        finally:
            _active.stack.pop()
        out_leaves, out_tree = tree_flatten(out)
        outs = []
        first = []
        for o in out_leaves:
            if isinstance(o, Tensor) and o._backend is B:
                v = o._data
                outs.append(Output(v.slot, o._dtype))
                first.append(wrap(v.val, o._dtype, P))
            elif isinstance(o, Tensor) and o._backend.level > P.level:
                raise ValueError(f"jit({self.name}): an output belongs to a transformation running inside the "
                                 f"function ({o._backend.name}); it leaked out of it")
            else:
                outs.append(Const(o))
                first.append(o)
        prog = Program(P, B, len(ts), outs, out_tree)
        if prog.compile():
            self.stats["compiles"] += 1
        if self.donate_argnums:
            prog.donate = self._donated_slots(args, static_pos)
            prog.plan_donations()
        prog.used = next(_TICK)
        self._insert(key, prog)
        return tree_unflatten(out_tree, first)


def jit(f: Callable | None = None, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (), donate_argnums: int | Sequence[int] = ()) -> Any:
    """Trace ``f`` once per signature into a program of primitives and replay it on later calls.

    The first call with a new signature (the arguments' pytree structure, each tensor's shape,
    dtype and memory layout, the values of static arguments and of non-tensor leaves) runs
    ``f`` once on traced tensors, recording every primitive; later calls with that signature run
    the recorded program without entering ``f`` (elementwise chains run as compiled C loops
    where a C compiler is available).  Usable as ``@rt.jit`` or ``@rt.jit(static_argnums=...)``.

    Args:
        f: the function (pytrees of tensors in and out).
        static_argnums: positional arguments taken as Python values (hashable): part of the
            signature, so a new value retraces.
        static_argnames: the same, by parameter name.
        donate_argnums: positional arguments whose buffers the program may reuse: a donated
            tensor's contents are undefined after the call (as in JAX; do not read it, nor views
            of it). A result is written into a donated buffer only when that is safe (see
            ``docs/jit.md``); otherwise the donation is ignored.

    Returns:
        The jitted function (``rt.jit_stats`` reads its counters).

    Raises:
        TypeError: (inside ``f``, while tracing) reading a tensor's value (``float(t)``,
            ``bool(t)``, ``if t > 0:``, printing); an unhashable static argument.

    A function traced more than ``RETRACE_WARN_AFTER`` (3) times warns once (a ``RetraceWarning``,
    a ``RuntimeWarning``) naming the argument that changed, e.g. ``argument 1 (`state.count`):
    Python int 2 -> 3``: pass values that change between calls as tensors.

    Inside ``grad``/``vmap``/another ``jit`` (or on their tensors) ``f`` runs inline, so that the
    enclosing transformation sees its primitives.

    >>> import runetensor as rt
    >>> @rt.jit
    ... def f(a, b):
    ...     return a * b + 1
    >>> x = rt.asarray([1., 2.])
    >>> print(f(x, x), f(x, x))
    [2, 5] [2, 5]
    >>> rt.jit_stats(f)["traces"], rt.jit_stats(f)["cache_hits"]
    (1, 1)
    """
    sn = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    sa = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
    dn = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    for n in sn + dn:
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise TypeError(f"jit: static_argnums and donate_argnums must be non-negative ints, got {n!r}")
    for n in sa:
        if not isinstance(n, str):
            raise TypeError(f"jit: static_argnames must be strings, got {n!r}")
    if f is None:
        return lambda g: jit(g, sn, sa, dn)
    if not callable(f):
        raise TypeError(f"jit: expected a function, got {type(f).__name__}")
    state_ = _Jitted(f, sn, sa, dn)

    @functools.wraps(f)
    def jitted(*args: Any, **kwargs: Any) -> Any:
        if _debug.ON:  # rt.debug_nans: check the outputs; re-run eagerly to find a NaN's primitive
            return _debug.jit_call(state_, args, kwargs)
        if _clookup is not None and not kwargs and state_.fast_ok and not _threads_active.stack:
            hit = _clookup(args, state_.fast)  # _Jitted.__call__'s cache-hit path, the key built in C
            if hit is not None and hit is not NotImplemented:
                prog, handles = hit
                state_.stats["cache_hits"] += 1
                prog.used = next(_TICK)
                return prog.run(handles)
        return state_(*args, **kwargs)

    jitted._jit = state_  # type: ignore[attr-defined]
    return jitted


def jit_stats(f: Callable) -> dict:
    """The counters of a jitted function: ``traces`` (signatures traced), ``cache_hits`` (calls
    that replayed a program), ``compiles`` (programs with at least one compiled kernel),
    ``inline_calls`` (calls run inline under another transformation), ``evictions`` (programs dropped
    beyond ``MAX_PROGRAMS`` per function, least recently used first) and ``cache_size``.

    Raises:
        TypeError: if ``f`` was not made by ``rt.jit``.

    >>> import runetensor as rt
    >>> rt.jit_stats(rt.jit(rt.sin))["traces"]
    0
    """
    st = getattr(f, "_jit", None)
    if not isinstance(st, _Jitted):
        raise TypeError(f"jit_stats: expected a function made by rt.jit, got {type(f).__name__}")
    return dict(st.stats, cache_size=len(st.cache))
