"""The transformations' backends are generated from the contract's signature table: the table matches the
contract, every tracer backend answers every primitive, every table entry carries every rule, and a
transformation made of the hooks alone forwards each primitive call to its parent unchanged."""
from __future__ import annotations

import inspect

import pytest

import runetensor as rt  # noqa: F401  (fills in the table)
from runetensor._tracers._batch import BatchBackend
from runetensor._tracers._diff import ForwardBackend, ReverseBackend
from runetensor._tracers._base import Transformation, generated_source
from runetensor._backend import contract
from runetensor._backend.contract import SIGNATURES, Backend
from runetensor._dtype_rules import DTypeRule
from runetensor._tracers._jit import JitBackend
from runetensor._primitives import PRIMS

_ROLES = {"h", "h?", "hs", "*hs", "op", "p", "**p", "key", "obj", "out"}
_KINDS = {"query", "read", "create", "move", "compute", "write"}
_TRACERS = [ReverseBackend, ForwardBackend, BatchBackend, JitBackend]


def test_the_signature_table_matches_the_contract():
    assert set(SIGNATURES) == set(contract.primitive_names())
    for name, sig in SIGNATURES.items():
        params = list(inspect.signature(getattr(Backend, name)).parameters.values())[1:]
        assert len(sig.roles) == len(params), (name, sig, params)
        assert sig.kind in _KINDS and set(sig.roles) <= _ROLES, (name, sig)
        for role, p in zip(sig.roles, params):
            if role == "*hs":
                assert p.kind is p.VAR_POSITIONAL, name
            elif role == "**p":
                assert p.kind is p.VAR_KEYWORD, name
            else:
                assert p.kind is p.POSITIONAL_OR_KEYWORD, name


@pytest.mark.parametrize("cls", _TRACERS, ids=lambda c: c.__name__)
def test_every_tracer_backend_answers_every_primitive(cls):
    assert not cls.__abstractmethods__, cls.__abstractmethods__
    inherited = [n for n in contract.primitive_names() if getattr(cls, n) is getattr(Backend, n)]
    assert not inherited, f"{cls.__name__} takes these from the abstract contract: {inherited}"


def _contract_entries() -> list[str]:
    ops = {"unary": contract.UNARY_OPS, "binary": contract.BINARY_OPS,
           "reduce": [f"reduce.{o}" for o in contract.REDUCE_OPS],
           "arg_reduce": [f"arg_reduce.{o}" for o in contract.ARG_REDUCE_OPS],
           "scan": [f"scan.{o}" for o in contract.SCAN_OPS], "linalg": [f"linalg.{o}" for o in contract.LINALG_OPS],
           "fft": [f"fft.{o}" for o in contract.FFT_OPS]}
    out: list[str] = []
    for name, sig in SIGNATURES.items():
        if sig.kind not in ("query", "read"):
            out.extend(ops.get(name, [name]))
    return out


def test_every_table_entry_has_every_rule():
    missing = [n for n in _contract_entries() if n not in PRIMS]
    assert not missing, f"contract primitives without a table entry: {missing}"
    for name, prim in PRIMS.items():
        assert prim.name == name
        assert callable(prim.batch), f"{name} has no batching rule"
        assert prim.nondiff or prim.write or (prim.jvp is not None and prim.vjp is not None), \
            f"{name} is differentiable but lacks a jvp or vjp rule (or nondiff=True)"
    for op in contract.UNARY_OPS + contract.BINARY_OPS:
        assert isinstance(PRIMS[op].dtype, DTypeRule), f"{op} has no dtype rule"


def test_generated_methods_read_like_hand_written_ones():
    src = generated_source("reduce")
    assert src.splitlines()[0] == "def reduce(self, op, x, axes, keepdims):"
    assert "self.process('reduce.' + op, lambda x: P.reduce(op, x, axes, keepdims)" in src
    assert "self.into(op" in generated_source("binary")
    assert "self.host_value(x, 'to_list')" in generated_source("to_list")


# ---------------------------------------------------------------------- an identity transformation
class _Handle:
    """A parent handle: the recording backend's result, with the attributes handles have."""

    shape = (2, 3)
    ndim = 2
    size = 6

    def __init__(self, tag: str):
        self.tag = tag

    def __repr__(self) -> str:
        return f"H({self.tag})"


def _recording_backend():
    calls: list = []

    def method(name):
        def m(self, *args, **kw):
            calls.append((name, args, kw))
            return _Handle(name)
        return m
    cls = type("Recording", (Backend,), {n: method(n) for n in contract.primitive_names()})
    return cls(), calls


class _Box:
    __slots__ = ("trace", "primal", "base", "recipe", "version", "shape", "ndim", "size")

    def __init__(self, trace, primal):
        self.trace, self.primal = trace, primal
        self.base, self.recipe, self.version = None, (), 0
        self.shape, self.ndim, self.size = (2, 3), 2, 6


class _Identity(Transformation):
    """Wraps every parent handle in a box and does nothing else: the generated methods alone."""

    def owns(self, h):
        return type(h) is _Box and h.trace is self

    def unwrap(self, h):
        return h.primal if self.owns(h) else h

    def _box(self, r):
        if isinstance(r, _Handle):
            return _Box(self, r)
        return r

    def process(self, name, fn, hs, params):
        return self._box(fn(*[self.unwrap(h) for h in hs]))

    def write(self, name, dst, src, key, mode):
        if key is None:
            self.parent.assign(self.unwrap(dst), self.unwrap(src))
        else:
            self.parent.scatter(self.unwrap(dst), key, self.unwrap(src), mode)


def _arguments(name, ident, sig):
    """Arguments for the tracer method and the parent call it must make."""
    params = list(inspect.signature(getattr(Backend, name)).parameters.values())[1:]
    args, expect, kw, expect_kw = [], [], {}, {}
    for i, (role, p) in enumerate(zip(sig.roles, params)):
        if role in ("h", "h?", "obj"):
            h = _Handle(f"{name}{i}")
            args.append(_Box(ident, h))
            expect.append(h)
        elif role == "hs":
            hs = [_Handle(f"{name}{i}a"), _Handle(f"{name}{i}b")]
            args.append([_Box(ident, h) for h in hs])
            expect.append(hs)
        elif role == "*hs":
            hs = [_Handle(f"{name}{i}a"), _Handle(f"{name}{i}b")]
            args.extend(_Box(ident, h) for h in hs)
            expect.extend(hs)
        elif role == "op":
            args.append("some_op")
            expect.append("some_op")
        elif role == "**p":
            kw = expect_kw = {"subscripts": "ij,jk->ik"}
        elif role == "out":
            args.append(None)
        else:  # a parameter (tuples where the contract takes sequences), or an index key
            v = (1, 2) if "Sequence" in str(p.annotation) or "Shape" in str(p.annotation) or "tuple" in \
                str(p.annotation) else f"param{i}"
            if str(p.annotation) == "Sequence[tuple[int, int]]":
                v = ((1, 2),)
            args.append(v)
            expect.append(v)
    return args, expect, kw, expect_kw


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_a_transformation_of_hooks_alone_forwards_each_primitive_unchanged(name):
    parent, calls = _recording_backend()
    ident = _Identity(parent)
    sig = SIGNATURES[name]
    args, expect, kw, expect_kw = _arguments(name, ident, sig)
    r = getattr(ident, name)(*args, **kw)
    assert calls, f"{name} did not reach the parent"
    got_name, got_args, got_kw = calls[-1]
    assert got_name == name
    if name == "callback":  # the handles travel as a list or a tuple
        assert got_args[0] == expect[0] and list(got_args[1]) == expect[1]
    else:
        assert [list(a) if isinstance(a, (list, tuple)) and name == "concatenate" else a for a in got_args] == \
            [list(e) if isinstance(e, (list, tuple)) and name == "concatenate" else e for e in expect], (name, calls)
        assert {k: v for k, v in got_kw.items() if v is not None} == expect_kw
    if sig.kind in ("create", "move", "compute") and name != "callback":
        assert type(r) is _Box and r.primal is not None
