"""The tracer backend of ``rt.jit``: every primitive call becomes a step of a :class:`Program`.

A :class:`Var` is a handle of a :class:`JitBackend`: a slot of the program being recorded, with
the shape, dtype and memory layout of the value it will hold.  While tracing, each primitive
also runs on the parent backend (the *witness* value of the first call): that gives the first
call's results and answers the layout questions (``strides``, ``is_c_contiguous``, whether a
``reshape`` is a view) exactly, since a program replayed on inputs of the same signature lays
its buffers out the same way.  The witness is never shown to Python: every value read
(``to_list``, ``to_host``, ``value_range``...) raises :class:`TracedValueError`, a ``TypeError``.

Steps are ``(fn, ins, outs)``: ``fn`` is the parent backend's primitive with its parameters
bound, ``ins`` its operands (:class:`Slot` or :class:`Const`), ``outs`` the slots of its results
(a Python value a primitive returns beside its handles is a :class:`PyValue`).
Writes (``assign``, ``scatter``, ``out=``) are steps too, kept in order: a replay creates fresh
buffers for everything the function creates, so writing into them again is what eager code does.
"""
from __future__ import annotations

from typing import Any, Callable

from ._base import Transformation
from .._backend.contract import BINARY_OPS, UNARY_OPS, Backend, TracedValueError

_SCALARS = (int, float, complex, bool, str, type(None))

#: steps run for their effect: run-time guards and callbacks (``rt.debug_print``); they write nothing
EFFECTS = frozenset({"guard", "callback"})
#: steps that write, and the effects (kept by dead-code elimination, never fused)
WRITES = frozenset({"assign", "scatter", "out"}) | EFFECTS
#: steps whose result is a fresh buffer, never a view of an operand (anything else may alias it)
_FRESH = frozenset({"where", "clip", "cast", "matmul", "empty", "full", "arange", "concatenate", "pad", "gather",
                    "copy", "random_bits", "random_uniform", "sort", "argsort", "searchsorted", "fused"})
_FRESH_PREFIX = ("reduce.", "arg_reduce.", "scan.", "host.")


def fresh(s: "Step") -> bool:
    """Whether step ``s``'s result is a buffer of its own (elementwise ops, reductions, copies...)."""
    return s.name in _FRESH or s.params.get("kind") in ("unary", "binary") or s.name.startswith(_FRESH_PREFIX)


class Var:
    """A handle of a :class:`JitBackend`: program slot ``slot``; ``val`` is the witness."""

    __slots__ = ("trace", "slot", "val", "shape", "ndim", "size")

    def __init__(self, trace: "JitBackend", slot: int, val: Any):
        self.trace = trace
        self.slot = slot
        self.val = val
        self.shape = val.shape
        self.ndim = val.ndim
        self.size = val.size

    def __repr__(self) -> str:
        return f"Var(%{self.slot}, shape={self.shape})"


class Slot:
    """A step operand read from program slot ``index`` (an input, or an earlier step's result).

    Equal to another ``Slot`` of the same index (usable as a key).

    >>> Slot(3), Slot(3) == Slot(3)
    (%3, True)
    """

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __eq__(self, other: object) -> bool:
        return type(other) is Slot and other.index == self.index

    def __hash__(self) -> int:
        return hash(self.index)

    def __repr__(self) -> str:
        return f"%{self.index}"


class Const:
    """A step operand fixed in the program: a Python scalar, a value folded when the program was
    built, or the handle of a captured tensor (read at every call: its contents may change).

    Equal to another ``Const`` holding the very same object (usable as a key).

    >>> c = Const(2.0)
    >>> c == Const(c.value), c == Const(2.5)
    (True, False)
    """

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other: object) -> bool:
        return type(other) is Const and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)

    def __repr__(self) -> str:
        return "const"


class PyValue:
    """A Python value (not a handle) a multi-result primitive returned beside its handles: a
    program step fills no slot for it.

    >>> PyValue(3)
    PyValue(3)
    """

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return f"PyValue({self.value!r})"


class Output:
    """A program output read from slot ``index``, returned as a tensor of ``dtype`` (an output
    that is not a traced value, such as a Python number or a captured tensor returned as it is,
    is a :class:`Const`).

    >>> Output(2, None)
    Output(%2)
    """

    __slots__ = ("index", "dtype")

    def __init__(self, index: int, dtype: Any):
        self.index = index
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"Output(%{self.index})"


class Step:
    """One primitive call of a program."""

    __slots__ = ("name", "fn", "ins", "outs", "params", "aval")

    def __init__(self, name: str, fn: Callable, ins: tuple, outs: Any, params: dict):
        self.name = name
        self.fn = fn
        self.ins = ins      # per operand: Slot | Const
        self.outs = outs    # None | slot | tuple of (slot | None | PyValue)
        self.params = params
        self.aval: Any = None  # (shape, dtype, C-contiguous, element strides) of a single handle result

    def __repr__(self) -> str:
        return f"{self.outs} = {self.name}({', '.join(map(repr, self.ins))})"


#: the params of an elementwise step (the fusion compiler groups them)
_ELEMENTWISE = {**{op: {"kind": "unary"} for op in UNARY_OPS}, **{op: {"kind": "binary"} for op in BINARY_OPS}}
#: what each host read of a traced tensor is called in its error
_READS = {"to_host": "reading a traced tensor's values", "to_list": "reading a traced tensor as a Python value",
          "to_bytes": "reading a traced tensor's bytes", "dlpack": "exporting a traced tensor (DLPack)"}


def _read_error(what: str, B: "JitBackend", h: Any = None) -> TracedValueError:
    return TracedValueError(
        f"{what}: inside rt.jit a tensor has no value while the function is traced (it stands for every "
        f"call with the same shapes and dtypes); Python control flow or a Python scalar read of a tensor "
        f"(float(t), int(t), bool(t), if t > 0:, printing, .tolist()) cannot be traced: select with rt.where, "
        f"branch with rt.cond / rt.switch, or pass the value as a static argument (static_argnums / "
        f"static_argnames)", B, h)


class JitBackend(Transformation):
    """The tracer backend of one ``rt.jit`` trace over ``parent`` (level = parent's + 1)."""

    mode = "jit"

    def __init__(self, parent: Backend):
        self.parent = parent
        self.level = parent.level + 1
        self.name = f"jit{self.level}"
        self.steps: list[Step] = []
        self.nslots = 0
        self.avals: list[Any] = []  # per slot: (shape, dtype, C-contiguous, strides) of the witness, or None

    # ------------------------------------------------------------------ recording
    def _own(self, h: Any) -> bool:
        return type(h) is Var and h.trace is self

    def _new(self, val: Any) -> Var:
        v = Var(self, self.nslots, val)
        self.nslots += 1
        try:
            P = self.parent
            self.avals.append((tuple(val.shape), P.dtype(val), P.is_c_contiguous(val), tuple(P.strides(val))))
        except Exception:  # not an array of the parent backend: never fused
            self.avals.append(None)
        return v

    def input(self, val: Any) -> Var:
        return self._new(val)

    def _spec(self, h: Any) -> Slot | Const:
        if type(h) is Var and h.trace is self:
            return Slot(h.slot)
        return Const(h)

    def _val(self, h: Any) -> Any:
        return h.val if type(h) is Var and h.trace is self else h

    def _rec(self, name: str, fn: Callable, ins: tuple, params: dict | None = None) -> Any:
        """Run ``fn`` on the witnesses of ``ins``, record the step, return the result's Vars."""
        res = fn(*[self._val(h) for h in ins])
        specs = tuple(self._spec(h) for h in ins)
        if res is None:
            outs: Any = None
            out = None
        elif isinstance(res, tuple):
            vs = []
            slots: list[Any] = []
            for r in res:
                if hasattr(r, "shape") and not isinstance(r, _SCALARS):
                    v = self._new(r)
                    vs.append(v)
                    slots.append(v.slot)
                else:
                    vs.append(r)
                    slots.append(PyValue(r))
            outs = tuple(slots)
            out = tuple(vs)
        else:
            v = self._new(res)
            outs = v.slot
            out = v
        st = Step(name, fn, specs, outs, params or {})
        if type(outs) is int:
            P = self.parent
            st.aval = (res.shape, P.dtype(res), P.is_c_contiguous(res), tuple(P.strides(res)))
        self.steps.append(st)
        return out

    def _key_ins(self, key: tuple) -> tuple[tuple, list]:
        """(the key with each handle replaced by its operand position, the handles)."""
        hs: list[Any] = []
        k2 = []
        for k in key:
            if hasattr(k, "shape") and not isinstance(k, _SCALARS):
                k2.append(_KeyRef(len(hs)))
                hs.append(k)
            else:
                k2.append(k)
        return tuple(k2), hs

    def guard_range(self, h: Any, lo: int, hi: int, msg: str) -> None:
        """Record a run-time check that every value of ``h`` is in ``[lo, hi)`` (``IndexError(msg
        with the offending value)`` otherwise), and check the witness now."""
        P = self.parent

        def guard(x: Any) -> None:
            r = P.value_range(x)
            if r is not None and (r[0] < lo or r[1] >= hi):
                bad = r[0] if r[0] < lo else r[1]
                raise IndexError(msg.format(int(bad)))

        self._rec("guard", guard, (h,), {"lo": lo, "hi": hi})

    def guard(self, h: Any, check: Callable[[Any], None]) -> None:
        """Record a general run-time check: ``check(x)``, ``x`` the parent backend's array of
        ``h``, runs at every call of the program (and now, on the witness) and raises what it
        raises (``runetensor._guards.check_values`` builds these for library value checks)."""
        self._rec("guard", check, (h,), {})

    # ------------------------------------------------------------------ the hooks of the generated methods
    owns = _own
    unwrap = _val

    def process(self, name, fn, hs, params):
        if name in _ELEMENTWISE:  # the fusion compiler looks for these
            params = dict(_ELEMENTWISE[name])
        return self._rec(name, fn, hs, params)

    def move(self, name, fn, h, params):  # every step is replayed in order: views need no re-deriving
        if name == "reshape":
            P = self.parent
            if fn(self._val(h)) is None:
                return None
            shape = params["shape"]

            def fn(x: Any) -> Any:  # the layout may differ from the trace's: copy then
                r = P.reshape(x, shape)
                return r if r is not None else P.reshape(P.copy(x), shape)
        return self._rec(name, fn, (h,), params)

    def into(self, name, fn, hs, out):
        self._rec("out", fn, (*hs, out), {"op": name})
        return out

    def write(self, name, dst, src, key, mode):
        if key is None:
            self._rec("assign", self.parent.assign, (dst, src))
            return
        P = self.parent
        k2, hs = self._key_ins(key)
        for h in hs:
            if self._own(h) and P.dtype(h.val).kind == "b":
                raise TracedValueError("writing through a boolean mask inside rt.jit is not supported yet; use "
                                       "rt.where(mask, values, x)", self, h)
            if not self._own(h) and P.dtype(h).kind == "b":
                self._count_guard(h, "writing through a captured boolean mask")
        nk = len(hs)

        def s(a: Any, v: Any, *ks: Any) -> None:
            P.scatter(a, _fill(k2, ks[:nk]), v, mode)
        self._rec("scatter", s, (dst, src, *hs), {"mode": mode})

    def host_value(self, x, name):
        if self._own(x):
            raise _read_error(_READS[name], self, x)
        return x

    # ------------------------------------------------------------------ primitives with rules of their own
    def value_range(self, x):
        if self._own(x):
            raise _read_error("reading a traced tensor's range (value_range)", self, x)
        return self.parent.value_range(x)

    def full(self, shape, value, dtype):
        if hasattr(value, "shape") and not isinstance(value, _SCALARS):
            return self._rec("full", lambda v: self.parent.full(shape, v, dtype), (value,))
        return self._rec("full", lambda: self.parent.full(shape, value, dtype), (), {"value": value})

    def nonzero(self, x):
        if self._own(x):
            raise TracedValueError("nonzero: inside rt.jit the number of non-zero elements (the result's shape) "
                                   "depends on the values; use rt.where with a fixed shape, or run it outside jit",
                                   self, x)
        P = self.parent
        self._count_guard(x, "nonzero")
        return self._rec("nonzero", P.nonzero, (x,))

    def _count_guard(self, h: Any, what: str) -> None:
        """A captured tensor whose number of non-zero elements fixes a shape of the program (a mask, an
        argument of ``nonzero``): record a run-time check that the count is the one traced."""
        P = self.parent
        n0 = P.nonzero(h)[0].shape[0]

        def guard(m: Any) -> None:
            n = P.nonzero(m)[0].shape[0]
            if n != n0:
                raise ValueError(f"{what} inside rt.jit: a captured tensor now has {n} non-zero elements, {n0} when "
                                 f"the function was traced, and the program's shapes depend on that number; use "
                                 f"rt.where with a fixed shape, or run it outside jit")
        self._rec("guard", guard, (h,), {})

    def gather(self, x, key):
        P = self.parent
        k2, hs = self._key_ins(key)
        for h in hs:
            if self._own(h) and P.dtype(h.val).kind == "b":
                raise TracedValueError("indexing with a boolean mask inside rt.jit: the result's shape depends on "
                                       "the mask's values; use rt.where(mask, x, 0) instead", self, h)
            if not self._own(h) and P.dtype(h).kind == "b":
                self._count_guard(h, "indexing with a captured boolean mask")

        def g(a: Any, *ks: Any) -> Any:
            return P.gather(a, _fill(k2, ks))
        return self._rec("gather", g, (x, *hs))

    def linalg(self, op, *args, **params):
        if op == "lstsq":
            raise TracedValueError("lstsq inside rt.jit: its rank (and the residuals' shape) depends on the values; "
                                   "use rt.pinv or rt.solve", self)
        return Transformation.linalg(self, op, *args, **params)

    def host_call(self, name: str, fn: Callable, hs) -> Any:
        """One step ``host.<name>`` that runs ``fn`` on the parent backend's handles of ``hs`` (now on the
        witnesses, then at every run) and returns its result's Vars (a handle or a tuple of them).

        For library code whose whole computation on level-0 handles is one unit (``rt.nn``'s
        convolutions on the compiled kernels, max pooling): ``fn`` must be a pure function of its
        operands returning fresh buffers (never a view of an operand), since the step is taken as
        fresh."""
        return self._rec("host." + name, fn, tuple(hs))


class _KeyRef:
    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i


def _fill(key: tuple, hs: tuple) -> tuple:
    return tuple(hs[k.i] if type(k) is _KeyRef else k for k in key)


__all__ = ["JitBackend", "Var", "Step", "Slot", "Const", "PyValue", "Output", "WRITES", "EFFECTS", "TracedValueError"]
