"""The backend contract test suite: point it at any backend.

Every primitive of :mod:`runetensor._backend.contract` has a check here that
tests it against its documented contract, with NumPy (on the host) as the
oracle.  A check only talks to the backend through its primitives: inputs are
made with ``backend.asarray`` and results come back with ``backend.to_host``
or ``backend.to_list``, so the same suite runs on a GPU or distributed backend.

Use it as

    from backend_contract import run_contract_suite
    failures = run_contract_suite(MyBackend())     # {} when the backend conforms

or through pytest (``tests/test_backend_contract.py`` parametrises ``CHECKS``).
"""
from __future__ import annotations

import math
import traceback
import warnings
from typing import Callable

import ml_dtypes
import numpy as np

import runetensor as rt
from runetensor._backend import contract as C

from helpers import NP

ALL = list(rt._dtypes.all_dtypes)
LOW = [rt.float16, rt.bfloat16, rt.float8_e4m3, rt.float8_e5m2]

CHECKS: dict[str, Callable[[C.Backend], None]] = {}


def check(*names: str):
    """Register a check for the primitives ``names``."""
    def deco(fn):
        for n in names:
            CHECKS[n] = fn
        return fn
    return deco


# -- helpers -------------------------------------------------------------------------------
def H(be, data, dtype=None):
    """A fresh handle with ``data`` (nested lists or a NumPy array) as ``dtype``."""
    h, _ = be.asarray(np.asarray(data) if not isinstance(data, np.ndarray) else data, dtype, True)
    return h


def N(be, h):
    """A NumPy copy of a handle's values."""
    return np.array(be.to_host(h))


def f64(a):
    return np.asarray(a).astype(np.complex128 if np.asarray(a).dtype.kind == "c" else np.float64)


def eq(a, b, what=""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    if a.dtype.kind in "fcV" or b.dtype.kind in "fcV" or a.dtype in (np.dtype(ml_dtypes.bfloat16),):
        assert np.array_equal(f64(a), f64(b), equal_nan=True), f"{what}: {a!r} != {b!r}"
    else:
        assert np.array_equal(a, b), f"{what}: {a!r} != {b!r}"


def close(a, b, what="", rtol=1e-6, atol=1e-9):
    a, b = f64(a), f64(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    assert np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True), f"{what}: {a!r} !~ {b!r}"


def handle_ok(be, h, shape, dtype, what=""):
    """The handle protocol: ``.shape``, ``.ndim``, ``.size`` and the expected dtype."""
    assert tuple(h.shape) == tuple(shape), f"{what}: shape {h.shape} != {shape}"
    assert h.ndim == len(shape) and h.size == math.prod(shape), f"{what}: ndim/size"
    assert be.dtype(h) is dtype, f"{what}: dtype {be.dtype(h)} != {dtype}"


def base12(be, dtype=rt.float64):
    return H(be, np.arange(12).reshape(3, 4), dtype)


# -- introspection -----------------------------------------------------------------------------
@check("dtype")
def check_dtype(be):
    for d in ALL:
        assert be.dtype(be.empty((2,), d)) is d, d
        assert be.dtype(H(be, [0, 1], d)) is d, d


@check("strides")
def check_strides(be):
    h = base12(be)
    assert tuple(be.strides(h)) == (4, 1)
    assert tuple(be.strides(be.permute(h, (1, 0)))) == (1, 4)
    assert tuple(be.strides(be.flip(h, (0,)))) == (-4, 1)
    assert tuple(be.strides(be.expand(H(be, [[1.0], [2.0], [3.0]]), (3, 5)))) == (1, 0)
    assert tuple(be.strides(be.view_index(h, (slice(0, 3, 2), slice(3, 0, -2))))) == (8, -2)
    for d in ALL:  # in elements, whatever the item size
        assert tuple(be.strides(be.empty((2, 3), d))) == (3, 1), d


@check("offset")
def check_offset(be):
    h = base12(be)
    assert be.offset(h) == 0
    assert be.offset(be.view_index(h, (slice(1, 3, 1), slice(2, 4, 1)))) == 6
    assert be.offset(be.flip(h, (0, 1))) == 11
    assert be.offset(be.view_index(h, (2, 3))) == 11
    v = be.view_index(be.flip(h, (1,)), (slice(1, 2, 1), slice(0, 4, 1)))
    assert be.offset(v) == 7


@check("buffer_size")
def check_buffer_size(be):
    h = base12(be)
    assert be.buffer_size(h) == 12
    assert be.buffer_size(be.view_index(h, (1, slice(1, 2, 1)))) == 12
    assert be.buffer_size(be.flip(h, (1,))) == 12
    assert be.buffer_size(be.empty((0,), rt.float32)) == 0


@check("is_c_contiguous")
def check_is_c_contiguous(be):
    h = base12(be)
    assert be.is_c_contiguous(h) is True or be.is_c_contiguous(h) == True  # noqa: E712
    assert not be.is_c_contiguous(be.permute(h, (1, 0)))
    assert not be.is_c_contiguous(be.flip(h, (1,)))
    assert be.is_c_contiguous(be.view_index(h, (slice(1, 3, 1), slice(0, 4, 1))))
    assert be.is_c_contiguous(be.full((), 1, rt.int8))


@check("shares_memory")
def check_shares_memory(be):
    h = base12(be)
    assert be.shares_memory(h, be.permute(h, (1, 0)))
    assert be.shares_memory(be.flip(h, (0,)), be.view_index(h, (1, slice(0, 4, 1))))
    assert not be.shares_memory(h, be.copy(h))
    assert not be.shares_memory(h, base12(be))


# -- creation -----------------------------------------------------------------------------------
@check("empty")
def check_empty(be):
    for d in ALL:
        for shape in [(), (0,), (2, 3), (1, 0, 2)]:
            handle_ok(be, be.empty(shape, d), shape, d, f"empty {d} {shape}")


@check("full")
def check_full(be):
    for d in ALL:
        v = True if d is rt.bool else 1 + 2j if d.kind == "c" else 3
        h = be.full((2, 2), v, d)
        handle_ok(be, h, (2, 2), d, f"full {d}")
        eq(N(be, h), np.full((2, 2), v, NP[d]), f"full {d}")
    eq(N(be, be.full((3,), 0.3, rt.bfloat16)), np.full(3, 0.3, np.float32).astype(ml_dtypes.bfloat16))
    eq(N(be, be.full((), -1, rt.int4)), np.array(-1, ml_dtypes.int4))
    eq(N(be, be.full((2,), float("nan"), rt.float32)), np.full(2, np.nan, np.float32))


@check("arange")
def check_arange(be):
    eq(N(be, be.arange(0, 10, 3, rt.int32)), np.arange(0, 10, 3, dtype=np.int32))
    eq(N(be, be.arange(5, 0, -2, rt.int64)), np.array([5, 3, 1]))
    eq(N(be, be.arange(0.0, 1.0, 0.25, rt.float32)), np.array([0, 0.25, 0.5, 0.75], np.float32))
    handle_ok(be, be.arange(3, 3, 1, rt.uint8), (0,), rt.uint8, "empty arange")
    handle_ok(be, be.arange(0, 4, 1, rt.bfloat16), (4,), rt.bfloat16, "arange bf16")
    big = be.arange(2 ** 62, 2 ** 62 + 3, 1, rt.int64)  # exact in int64 (not through float64)
    assert be.to_list(big) == [2 ** 62, 2 ** 62 + 1, 2 ** 62 + 2]


@check("asarray")
def check_asarray(be):
    for obj, d in [([1, 2], rt.int64), ([1.5], rt.float64), ([True], rt.bool), ([1j], rt.complex128),
                   (3, rt.int64), ([[1, 2], [3, 4]], rt.int64)]:
        h, got = be.asarray(obj, None, None)
        assert got is d and be.dtype(h) is d, (obj, got)
        eq(N(be, h), np.asarray(obj))
    for d in ALL:
        h, got = be.asarray([0, 1], d, None)
        assert got is d
        eq(N(be, h), np.array([0, 1], NP[d]), f"asarray {d}")
    src = H(be, [1.0, 2.0])
    same, _ = be.asarray(src, None, None)  # a handle of this backend is shared
    assert be.shares_memory(same, src)
    cp, _ = be.asarray(src, None, True)
    assert not be.shares_memory(cp, src)
    try:
        be.asarray(src, rt.float32, False)
    except ValueError:
        pass
    else:
        raise AssertionError("asarray: a dtype change with copy=False must raise ValueError")
    h, d = be.asarray(np.arange(6, dtype=np.int16).reshape(2, 3)[:, ::-1], None, None)  # host arrays
    assert d is rt.int16
    eq(N(be, h), np.arange(6, dtype=np.int16).reshape(2, 3)[:, ::-1])


@check("random_bits")
def check_random_bits(be):
    w = be.random_bits(0, 6)
    handle_ok(be, w, (6,), rt.uint32, "random_bits")
    words = [int(v) for v in be.to_list(w)]
    assert words[:4] == [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8], "Philox4x32-10 known answer"
    assert [int(v) for v in be.to_list(be.random_bits(0, 2))] == words[:2], "word i depends only on (seed, i)"
    assert be.to_list(be.random_bits(1, 6)) != words
    assert be.random_bits(5, 0).size == 0
    a = N(be, be.random_bits(2 ** 64 - 1, 4096)).astype(np.float64)
    assert abs(a.mean() / 2 ** 32 - 0.5) < 0.02


@check("random_uniform")
def check_random_uniform(be):
    for seed in (0, 12345, 2 ** 64 - 1):
        w = N(be, be.random_bits(seed, 2 * 1000)).astype(np.uint64)
        f = be.random_uniform(seed, 1000, rt.float32)
        handle_ok(be, f, (1000,), rt.float32, "random_uniform float32")
        eq(N(be, f), ((w[:1000] >> 8).astype(np.float32) * np.float32(2.0 ** -24)))
        d = be.random_uniform(seed, 1000, rt.float64)
        handle_ok(be, d, (1000,), rt.float64, "random_uniform float64")
        eq(N(be, d), ((w[0::2] >> 5).astype(np.float64) * 2.0 ** 26 + (w[1::2] >> 6)) * 2.0 ** -53)
    assert be.random_uniform(3, 0, rt.float32).size == 0
    a = N(be, be.random_uniform(7, 5, rt.float64))
    assert (N(be, be.random_uniform(7, 3, rt.float64)) == a[:3]).all(), "value i depends only on (seed, i)"
    assert float(N(be, be.random_uniform(1, 4096, rt.float64)).max()) < 1.0


# -- movement ---------------------------------------------------------------------------------------
def _is_view(be, v, base, what):
    assert be.shares_memory(v, base), f"{what} must return a view"


@check("reshape")
def check_reshape(be):
    h = base12(be)
    r = be.reshape(h, (2, 6))
    handle_ok(be, r, (2, 6), rt.float64, "reshape")
    _is_view(be, r, h, "reshape")
    eq(N(be, r), np.arange(12.0).reshape(2, 6))
    assert be.reshape(be.permute(h, (1, 0)), (12,)) is None, "reshape must return None when strides cannot express it"
    handle_ok(be, be.reshape(be.full((), 1, rt.int8), (1, 1)), (1, 1), rt.int8, "reshape 0-d")
    handle_ok(be, be.reshape(be.empty((0, 3), rt.int8), (3, 0)), (3, 0), rt.int8, "reshape empty")


@check("expand")
def check_expand(be):
    h = H(be, [[1], [2]], rt.int32)
    e = be.expand(h, (3, 2, 4))
    handle_ok(be, e, (3, 2, 4), rt.int32, "expand")
    _is_view(be, e, h, "expand")
    eq(N(be, e), np.broadcast_to(np.array([[1], [2]], np.int32), (3, 2, 4)))
    assert tuple(be.strides(e))[0] == 0 and tuple(be.strides(e))[2] == 0


@check("permute")
def check_permute(be):
    a = np.arange(24).reshape(2, 3, 4)
    h = H(be, a, rt.int16)
    p = be.permute(h, (2, 0, 1))
    _is_view(be, p, h, "permute")
    eq(N(be, p), a.transpose(2, 0, 1).astype(np.int16))


@check("view_index")
def check_view_index(be):
    a = np.arange(24.0).reshape(2, 3, 4)
    h = H(be, a)
    key = (1, slice(2, None, -1), None, slice(0, 4, 3))
    v = be.view_index(h, key)
    _is_view(be, v, h, "view_index")
    eq(N(be, v), a[1, 2::-1, None, 0:4:3])
    s = be.view_index(h, (1, 2, 3))
    handle_ok(be, s, (), rt.float64, "all-int key")
    _is_view(be, s, h, "view_index with an all-int key")
    be.assign(s, -5.0)
    assert N(be, h)[1, 2, 3] == -5.0, "a write through an all-int view must reach the base"
    e = be.view_index(h, (slice(0, 0, 1), slice(0, 3, 1), slice(0, 4, 1)))
    handle_ok(be, e, (0, 3, 4), rt.float64, "empty slice")


@check("flip")
def check_flip(be):
    a = np.arange(12).reshape(3, 4)
    h = H(be, a, rt.int64)
    f = be.flip(h, (0, 1))
    _is_view(be, f, h, "flip")
    eq(N(be, f), a[::-1, ::-1])
    eq(N(be, be.flip(h, (1,))), a[:, ::-1])


@check("as_strided")
def check_as_strided(be):
    h = H(be, np.arange(10.0))
    w = be.as_strided(h, (4, 3), (2, 1), 1)  # windows starting at 1, 3, 5, 7
    _is_view(be, w, h, "as_strided")
    eq(N(be, w), np.array([[1, 2, 3], [3, 4, 5], [5, 6, 7], [7, 8, 9]], np.float64))
    v = be.view_index(h, (slice(9, 0, -3),))  # offset is from the buffer start, not the view
    eq(N(be, be.as_strided(v, (2,), (-1,), 4)), np.array([4.0, 3.0]))
    eq(N(be, be.as_strided(h, (3, 2), (0, 5), 0)), np.array([[0, 5], [0, 5], [0, 5]], np.float64))
    for d in ALL:
        b = H(be, np.arange(6) % 2, d)
        s = be.as_strided(b, (3,), (2,), 1)
        handle_ok(be, s, (3,), d, f"as_strided {d}")
        eq(N(be, s), (np.arange(6) % 2).astype(NP[d])[1::2], f"as_strided {d}")
        be.assign(s, be.full((), 0, d))
        assert not N(be, b).astype(np.complex128).any(), f"as_strided {d}: writes must reach the base"


# -- elementwise ------------------------------------------------------------------------------------------
_F = np.array([-2.5, -1.5, -0.5, -0.0, 0.0, 0.3, 0.5, 1.5, 2.5, 0.9, np.inf, -np.inf, np.nan])
_I = np.array([-7, -3, -1, 0, 1, 2, 5, 100], np.int64)
_UNARY_ORACLE = {
    "neg": np.negative, "abs": np.abs, "sign": np.sign, "square": np.square, "sqrt": np.sqrt,
    "recip": np.reciprocal, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log,
    "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "trunc": np.trunc,
    "ceil": np.ceil, "floor": np.floor, "rint": np.rint,
    "round": lambda x: np.where(np.isfinite(x), np.copysign(np.floor(np.abs(x) + 0.5), x), x),
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit,
    "logical_not": np.logical_not, "conj": np.conj, "real": np.real, "imag": np.imag,
    "erf": lambda x: np.array([math.erf(v) if not math.isnan(v) else math.nan for v in x.ravel()]).reshape(x.shape),
}


@check("unary")
def check_unary(be):
    with np.errstate(all="ignore"):
        for op in C.UNARY_OPS:
            if op == "bitwise_not":
                eq(N(be, be.unary(op, H(be, _I, rt.int32))), ~_I.astype(np.int32), op)
                eq(N(be, be.unary(op, H(be, [True, False]))), np.array([False, True]), op)
                continue
            r = be.unary(op, H(be, _F))
            want_d = rt.bool if op in C.UNARY_PREDICATES else rt.float64
            assert be.dtype(r) is want_d, f"unary {op}: dtype {be.dtype(r)}"
            close(N(be, r), _UNARY_ORACLE[op](_F), f"unary {op} float64", rtol=1e-12, atol=1e-15)
        # round is half away from zero, rint half to even
        eq(N(be, be.unary("round", H(be, [0.5, 1.5, 2.5, -0.5, -2.5]))), [1.0, 2.0, 3.0, -1.0, -3.0], "round")
        eq(N(be, be.unary("rint", H(be, [0.5, 1.5, 2.5, -0.5, -2.5]))), [0.0, 2.0, 2.0, -0.0, -2.0], "rint")
        # integer inputs keep their dtype for the integer-closed ops
        for op in ("neg", "abs", "sign", "square", "trunc", "ceil", "floor", "round", "rint"):
            r = be.unary(op, H(be, _I, rt.int32))
            assert be.dtype(r) is rt.int32, f"unary {op} int32 dtype {be.dtype(r)}"
            eq(N(be, r), _UNARY_ORACLE[op](_I).astype(np.int32), f"unary {op} int32")
        eq(N(be, be.unary("recip", H(be, [1, -1, 2, 0], rt.int32))), np.array([1, -1, 0, 0], np.int32),
           "integer recip truncates; 1/0 -> 0")
        # complex: abs/real/imag give the real type
        z = H(be, [3 + 4j, -1j], rt.complex64)
        for op, want in (("abs", [5, 1]), ("real", [3, 0]), ("imag", [4, -1])):
            r = be.unary(op, z)
            assert be.dtype(r) is rt.float32, f"unary {op} complex64 -> {be.dtype(r)}"
            close(N(be, r), want, f"unary {op} complex")
        eq(N(be, be.unary("conj", z)), np.array([3 - 4j, 1j], np.complex64), "conj")
        # low precision: computed in float32, rounded once
        for d in LOW:
            x = H(be, [0.3, 1.7, -2.2], d)
            xf = N(be, x).astype(np.float32)
            for op in ("exp", "sqrt", "neg", "sin"):
                r = be.unary(op, x)
                assert be.dtype(r) is d, f"unary {op} {d}"
                eq(N(be, r), _UNARY_ORACLE[op](xf).astype(NP[d]), f"unary {op} {d}")
        # out= writes into the given handle
        out = be.empty((3,), rt.float64)
        r = be.unary("neg", H(be, [1.0, 2.0, 3.0]), out=out)
        eq(N(be, out), [-1.0, -2.0, -3.0], "unary out=")


def _floordiv_oracle(x, y):
    """NumPy's floor division, but ``floor(x / y)`` where a float operand is infinite (the Array API's rule)."""
    r = np.floor_divide(x, y)
    if r.dtype.kind != "f":
        return r
    return np.where(np.isinf(x) | np.isinf(y), np.floor(np.true_divide(x, y)), r)


_BIN_ORACLE = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide, "floordiv": _floordiv_oracle,
    "mod": np.fmod, "pymod": np.remainder, "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "fmax": np.fmax, "fmin": np.fmin, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "nextafter": np.nextafter, "logaddexp": np.logaddexp, "eq": np.equal, "ne": np.not_equal,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "lshift": np.left_shift, "rshift": np.right_shift,
}
_INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "lshift", "rshift"}


@check("binary")
def check_binary(be):
    xa = np.array([[-3.5, 0.0, 2.0, np.nan, np.inf, 7.25]])
    ya = np.array([[2.0], [-0.5], [np.nan]])
    xi = np.array([-7, -6, 0, 5, 7, 100], np.int32)
    yi = np.array([2, -4, 3, 0, -2, 7], np.int32)
    with np.errstate(all="ignore"):
        for op in C.BINARY_OPS:
            if op not in _INT_ONLY:
                r = be.binary(op, H(be, xa), H(be, ya))  # broadcasting (1, 6) with (3, 1)
                want_d = rt.bool if op in C.BINARY_PREDICATES else rt.float64
                assert be.dtype(r) is want_d, f"binary {op}: dtype {be.dtype(r)}"
                close(N(be, r), _BIN_ORACLE[op](xa, ya), f"binary {op} float64", rtol=1e-12, atol=0)
            if op in ("atan2", "hypot", "copysign", "nextafter", "logaddexp"):
                continue
            ri = N(be, be.binary(op, H(be, xi, rt.int32), H(be, np.abs(yi) % 8 if op in ("lshift", "rshift", "pow")
                                                            else yi, rt.int32)))
            yv = np.abs(yi) % 8 if op in ("lshift", "rshift", "pow") else yi
            if op == "div":
                want = np.where(yv == 0, 0, np.trunc(xi / np.where(yv == 0, 1, yv))).astype(np.int32)
            elif op in ("floordiv", "mod", "pymod"):
                want = np.where(yv == 0, 0, _BIN_ORACLE[op](xi, np.where(yv == 0, 1, yv))).astype(np.int32)
            else:
                want = _BIN_ORACLE[op](xi, yv)
            eq(ri, want, f"binary {op} int32")
        # scalar operands, on either side
        eq(N(be, be.binary("sub", H(be, [1, 2], rt.int8), 3)), np.array([-2, -1], np.int8), "tensor - scalar")
        eq(N(be, be.binary("sub", 3.0, H(be, [1.0, 2.0], rt.float32))), np.array([2, 1], np.float32), "scalar - tensor")
        # integer overflow wraps
        eq(N(be, be.binary("add", H(be, [127], rt.int8), H(be, [1], rt.int8))), np.array([-128], np.int8), "wrap")
        eq(N(be, be.binary("mul", H(be, [2 ** 62], rt.int64), 4)), np.array([0]), "wrap int64")
        # low precision: float32 compute, one rounding
        for d in LOW:
            a, b = H(be, [0.3, 1.7, 100.0], d), H(be, [0.7, -2.2, 3.0], d)
            af, bf = N(be, a).astype(np.float32), N(be, b).astype(np.float32)
            for op in ("add", "mul", "div", "sub"):
                eq(N(be, be.binary(op, a, b)), _BIN_ORACLE[op](af, bf).astype(NP[d]), f"binary {op} {d}")
            eq(N(be, be.binary("lt", a, b)), af < bf, f"binary lt {d}")
        for d in (rt.int4, rt.uint4):
            a = H(be, [7, 3], d)
            r = be.binary("add", a, H(be, [1, 1], d))
            assert be.dtype(r) is d
            eq(N(be, r).astype(np.int64), np.array([-8, 4] if d is rt.int4 else [8, 4]), f"binary add {d}")
        # out=
        out = be.empty((2,), rt.float64)
        be.binary("add", H(be, [1.0, 2.0]), H(be, [10.0, 20.0]), out=out)
        eq(N(be, out), [11.0, 22.0], "binary out=")


@check("clip")
def check_clip(be):
    x = np.array([[-3.0, 0.5, np.nan, 9.0]])
    lo = np.array([[-1.0], [1.0]])
    r = be.clip(H(be, x), H(be, lo), H(be, np.array(2.0)))
    handle_ok(be, r, (2, 4), rt.float64, "clip")
    eq(N(be, r), np.clip(x, lo, 2.0), "clip broadcasts, NaN propagates")
    eq(N(be, be.clip(H(be, x), None, H(be, np.array(0.0)))), np.minimum(x, 0.0), "clip without lo")
    eq(N(be, be.clip(H(be, [5, -5], rt.int8), H(be, np.array(-2), rt.int8), None)), np.array([5, -2], np.int8),
       "clip without hi")
    for d in LOW + [rt.int4, rt.uint4]:
        r = be.clip(H(be, [0, 3, 7], d), H(be, np.array(1), d), H(be, np.array(5), d))
        assert be.dtype(r) is d
        eq(N(be, r).astype(np.float64), [1, 3, 5], f"clip {d}")


@check("where")
def check_where(be):
    c = H(be, [[True], [False]])
    x = H(be, [1, 2, 3], rt.int16)
    y = H(be, [[-1, -2, -3]], rt.int16)
    r = be.where(c, x, y)
    handle_ok(be, r, (2, 3), rt.int16, "where")
    eq(N(be, r), np.array([[1, 2, 3], [-1, -2, -3]], np.int16))
    for d in ALL:
        r = be.where(H(be, [True, False]), be.full((2,), 1, d), be.full((), 0, d))
        assert be.dtype(r) is d
        eq(N(be, r).astype(np.complex128), [1, 0], f"where {d}")


@check("cast")
def check_cast(be):
    f = H(be, [-2.7, -0.5, 0.5, 2.7, np.nan, np.inf, -np.inf, 300.0])
    eq(N(be, be.cast(f, rt.int32)), np.array([-2, 0, 0, 2, 0, 0, 0, 300], np.int32),
       "float -> int truncates, NaN/inf -> 0")
    eq(N(be, be.cast(f, rt.bool)), np.array([True, True, True, True, True, True, True, True]), "float -> bool")
    eq(N(be, be.cast(H(be, [300, -1], rt.int32), rt.uint8)), np.array([44, 255], np.uint8), "int wrap")
    eq(N(be, be.cast(H(be, [2 ** 64 - 1], rt.uint64), rt.int64)), np.array([-1]), "uint64 -> int64 wraps")
    eq(N(be, be.cast(H(be, [9, -9, 20], rt.int32), rt.int4)).astype(np.int64), np.array([-7, 7, 4]), "int4 wrap")
    eq(N(be, be.cast(H(be, [3 + 4j], rt.complex128), rt.float64)), [3.0], "complex -> real takes the real part")
    for src in ALL:
        for dst in ALL:
            r = be.cast(H(be, [0, 1], src), dst)
            assert be.dtype(r) is dst, f"cast {src}->{dst}"
            eq(N(be, r).astype(np.complex128), [0, 1], f"cast {src}->{dst}")
    x = H(be, [1.0, 2.0])
    assert not be.shares_memory(be.cast(x, rt.float64), x), "cast returns a fresh handle"


# -- reductions, scans, sorting -------------------------------------------------------------------------
@check("reduce")
def check_reduce(be):
    a = np.arange(1.0, 25.0).reshape(2, 3, 4)
    h = H(be, a)
    for op, fn in (("sum", np.sum), ("prod", np.prod), ("max", np.max), ("min", np.min),
                   ("all", np.all), ("any", np.any)):
        for axes in ((), (0,), (1, 2), (0, 1, 2)):
            for kd in (False, True):
                r = be.reduce(op, h, axes, kd)
                want = np.asarray(fn(a, axis=axes, keepdims=kd))
                assert be.dtype(r) is (rt.bool if op in ("all", "any") else rt.float64), f"reduce {op}"
                close(N(be, r), want, f"reduce {op} {axes} {kd}")
    eq(N(be, be.reduce("max", H(be, [1.0, np.nan, 3.0]), (0,), False)), np.nan, "max propagates NaN")
    eq(N(be, be.reduce("min", H(be, [1.0, np.nan, 3.0]), (0,), False)), np.nan, "min propagates NaN")
    eq(N(be, be.reduce("sum", H(be, [100, 100], rt.int8), (0,), False)), np.array(-56, np.int8), "int wrap")
    r = be.reduce("sum", be.full((1000,), 1, rt.bfloat16), (0,), False)
    assert be.dtype(r) is rt.bfloat16 and float(N(be, r)) == 1000.0, "low precision accumulates in float32"
    eq(N(be, be.reduce("sum", be.empty((0, 3), rt.float32), (0,), False)), np.zeros(3, np.float32), "empty sum")


@check("arg_reduce")
def check_arg_reduce(be):
    a = np.array([[3, 1, 3, 0], [2, 5, 5, -1]], np.float32)
    for op, fn in (("argmax", np.argmax), ("argmin", np.argmin)):
        for axis in (0, 1):
            for kd in (False, True):
                r = be.arg_reduce(op, H(be, a), axis, kd)
                assert be.dtype(r) is rt.int64
                eq(N(be, r), fn(a, axis=axis, keepdims=kd), f"{op} {axis}")
    eq(N(be, be.arg_reduce("argmax", H(be, [1.0, np.nan, 5.0, np.nan]), 0, False)), 1, "NaN is extreme")
    eq(N(be, be.arg_reduce("argmin", H(be, [1.0, np.nan, -5.0]), 0, False)), 1, "NaN is extreme")
    eq(N(be, be.arg_reduce("argmax", H(be, [1, 7, 7], rt.bfloat16), 0, False)), 1, "first occurrence")


@check("scan")
def check_scan(be):
    a = np.array([[1, 3, 2], [4, -1, 6]], np.int32)
    for op, fn in (("cumsum", np.cumsum), ("cumprod", np.cumprod), ("cummax", np.maximum.accumulate),
                   ("cummin", np.minimum.accumulate)):
        for axis in (0, 1):
            r = be.scan(op, H(be, a, rt.int32), axis)
            assert be.dtype(r) is rt.int32
            eq(N(be, r), fn(a, axis=axis).astype(np.int32), f"{op} {axis}")
    eq(N(be, be.scan("cummax", H(be, [1.0, np.nan, 3.0]), 0)), [1.0, np.nan, np.nan], "cummax propagates NaN")
    r = be.scan("cumsum", be.full((600,), 1, rt.bfloat16), 0)
    assert float(N(be, r)[-1]) == 600.0, "low precision scans accumulate in float32"


_SORT_IN = np.array([3.0, np.nan, 1.0, 3.0, -np.inf, 1.0, np.nan, 0.0])


@check("sort")
def check_sort(be):
    v, i = be.sort(H(be, _SORT_IN), 0, False)
    assert be.dtype(i) is rt.int64 and be.dtype(v) is rt.float64
    eq(N(be, v), [-np.inf, 0.0, 1.0, 1.0, 3.0, 3.0, np.nan, np.nan], "ascending, NaN last")
    eq(N(be, i), [4, 7, 2, 5, 0, 3, 1, 6], "stable ascending")
    v, i = be.sort(H(be, _SORT_IN), 0, True)
    eq(N(be, v), [np.nan, np.nan, 3.0, 3.0, 1.0, 1.0, 0.0, -np.inf], "descending, NaN first")
    eq(N(be, i), [1, 6, 0, 3, 2, 5, 7, 4], "stable descending")
    a = np.array([[3, 1, 2], [0, 0, -1]], np.int8)
    v, i = be.sort(H(be, a, rt.int8), 0, False)
    eq(N(be, v), np.sort(a, axis=0), "sort axis 0")


@check("argsort")
def check_argsort(be):
    eq(N(be, be.argsort(H(be, _SORT_IN), 0, False)), [4, 7, 2, 5, 0, 3, 1, 6], "argsort")
    eq(N(be, be.argsort(H(be, _SORT_IN), 0, True)), [1, 6, 0, 3, 2, 5, 7, 4], "argsort descending")
    a = np.array([[3, 1, 2], [0, 0, -1]])
    eq(N(be, be.argsort(H(be, a, rt.int64), 1, False)), np.argsort(a, 1, kind="stable"))
    eq(N(be, be.argsort(H(be, [2, 1, 2, 0], rt.int4), 0, False)), [3, 1, 0, 2], "argsort int4")


# -- gather / scatter --------------------------------------------------------------------------------------
@check("gather")
def check_gather(be):
    a = np.arange(24).reshape(2, 3, 4)
    h = H(be, a, rt.int32)
    i0 = H(be, [1, 0, 1], rt.int64)
    m = H(be, [True, False, True])
    for key, npkey in [
        ((i0, slice(0, 3, 1), slice(0, 4, 1)), (np.array([1, 0, 1]), slice(None), slice(None))),
        ((slice(0, 2, 1), m, slice(3, 0, -1)), (slice(None), np.array([True, False, True]), slice(3, 0, -1))),
        ((i0, slice(0, 3, 1), H(be, [[0], [3]], rt.int64)),
         (np.array([1, 0, 1]), slice(None), np.array([[0], [3]]))),
        ((1, None, H(be, [2, 2], rt.int64), slice(0, 4, 2)), (1, None, np.array([2, 2]), slice(0, 4, 2))),
    ]:
        eq(N(be, be.gather(h, key)), a[npkey], f"gather {npkey}")
    r = be.gather(h, (i0, slice(0, 3, 1), slice(0, 4, 1)))
    assert not be.shares_memory(r, h), "gather returns a fresh handle"


@check("scatter")
def check_scatter(be):
    a = np.zeros((3, 4), np.float32)
    h = H(be, a, rt.float32)
    be.scatter(h, (H(be, [0, 2, 0], rt.int64), slice(0, 4, 1)), H(be, [[1.0], [2.0], [3.0]], rt.float32))
    a[[0, 2, 0], :] = [[1.0], [2.0], [3.0]]
    eq(N(be, h), a, "scatter: last write wins, values broadcast")
    be.scatter(h, (slice(0, 3, 1), H(be, [True, False, False, True])), be.full((), 9, rt.float32))
    a[:, [True, False, False, True]] = 9
    eq(N(be, h), a, "scatter with a mask")
    v = be.flip(h, (0,))
    be.scatter(v, (0, H(be, [1], rt.int64)), be.full((), -1, rt.float32))
    a[2, 1] = -1
    eq(N(be, h), a, "scatter into a view writes through")
    for dt, npdt in ((rt.float64, np.float64), (rt.int32, np.int32), (rt.bfloat16, np.float32)):
        acc = np.zeros((3, 4), npdt)
        h = H(be, acc, dt)
        idx = [2, 0, 2, 2]
        be.scatter(h, (H(be, idx, rt.int64), slice(0, 4, 1)), H(be, np.arange(16).reshape(4, 4) % 5, dt), "add")
        np.add.at(acc, (np.array(idx), slice(None)), np.arange(16).reshape(4, 4) % 5)
        eq(N(be, h).astype(npdt), acc, f"scatter add accumulates duplicates ({dt})")


@check("concatenate")
def check_concatenate(be):
    parts = [np.arange(6).reshape(2, 3), np.arange(3).reshape(1, 3) + 10, np.zeros((0, 3), int)]
    hs = [H(be, p, rt.int16) for p in parts]
    r = be.concatenate(hs, 0)
    handle_ok(be, r, (3, 3), rt.int16, "concatenate")
    eq(N(be, r), np.concatenate(parts, 0), "concatenate axis 0")
    eq(N(be, be.concatenate([H(be, p.T, rt.float32) for p in parts[:2]], 1)),
       np.concatenate([p.T for p in parts[:2]], 1), "concatenate axis 1")
    assert not be.shares_memory(r, hs[0]), "concatenate returns a fresh handle"


@check("pad")
def check_pad(be):
    a = np.arange(6).reshape(2, 3)
    r = be.pad(H(be, a, rt.float64), ((1, 0), (2, 1)), 7.5)
    handle_ok(be, r, (3, 6), rt.float64, "pad")
    eq(N(be, r), np.pad(a.astype(float), ((1, 0), (2, 1)), constant_values=7.5), "pad with a scalar")
    r = be.pad(H(be, a, rt.int32), ((0, 2), (0, 0)), be.full((), -1, rt.int32))
    eq(N(be, r), np.pad(a, ((0, 2), (0, 0)), constant_values=-1), "pad with a 0-d handle")


@check("value_range")
def check_value_range(be):
    for data, dt, want in (([False, False], rt.bool, (False, False)), ([False, True], rt.bool, (False, True)),
                           ([[True]], rt.bool, (True, True)), ([[3, -7], [2, 9]], rt.int64, (-7, 9)),
                           ([0.5, -1.5], rt.float32, (-1.5, 0.5)), (np.zeros((0,), bool), rt.bool, None)):
        r = be.value_range(H(be, data, dt))
        assert r == want and (r is None or all(type(v) is type(w) for v, w in zip(r, want))), \
            f"value_range({data}) = {r!r}, expected {want}"
    lo, hi = be.value_range(H(be, [1.0, np.nan], rt.float64))
    assert lo != lo and hi != hi, "value_range propagates NaN"


@check("searchsorted")
def check_searchsorted(be):
    s = np.array([1.0, 2.0, 2.0, 3.0, np.nan])
    vals = np.array([[0.5, 2.0], [3.0, np.nan]])
    for side in ("left", "right"):
        r = be.searchsorted(H(be, s), H(be, vals), side)
        assert be.dtype(r) is rt.int64
        eq(N(be, r), np.searchsorted(s, vals, side=side), f"searchsorted {side}")


@check("nonzero")
def check_nonzero(be):
    a = np.array([[0, 1, 0], [2, 0, 3]], np.int8)
    r = be.nonzero(H(be, a, rt.int8))
    assert len(r) == 2 and all(be.dtype(x) is rt.int64 for x in r)
    for got, want in zip(r, np.nonzero(a)):
        eq(N(be, got), want, "nonzero")
    eq(N(be, be.nonzero(H(be, [0.0, 0.5], rt.bfloat16))[0]), [1], "nonzero bf16")


# -- memory ------------------------------------------------------------------------------------------------
@check("copy")
def check_copy(be):
    h = be.flip(base12(be), (1,))
    c = be.copy(h)
    assert be.is_c_contiguous(c) and not be.shares_memory(c, h)
    eq(N(be, c), N(be, h), "copy")
    for d in ALL:
        x = be.full((2,), 1, d)
        assert be.dtype(be.copy(x)) is d


@check("contiguous")
def check_contiguous(be):
    h = base12(be)
    assert be.shares_memory(be.contiguous(h), h), "contiguous keeps a C-contiguous handle"
    p = be.permute(h, (1, 0))
    c = be.contiguous(p)
    assert be.is_c_contiguous(c) and not be.shares_memory(c, h)
    eq(N(be, c), N(be, p), "contiguous")


@check("assign")
def check_assign(be):
    h = base12(be)
    be.assign(be.view_index(h, (slice(2, 0, -1), slice(0, 4, 2))), H(be, [7.0, 8.0]))
    a = np.arange(12.0).reshape(3, 4)
    a[2:0:-1, 0:4:2] = [7.0, 8.0]
    eq(N(be, h), a, "assign broadcasts into a strided view")
    be.assign(be.view_index(h, (0, slice(0, 4, 1))), 0.5)
    a[0] = 0.5
    eq(N(be, h), a, "assign a scalar")
    for d in ALL:
        x = be.full((3,), 0, d)
        be.assign(be.view_index(x, (slice(1, 3, 1),)), 1)
        eq(N(be, x).astype(np.complex128), [0, 1, 1], f"assign scalar into {d}")
        be.assign(x, be.full((), 0, d))
        eq(N(be, x).astype(np.complex128), [0, 0, 0], f"assign handle into {d}")


# -- products ----------------------------------------------------------------------------------------------
@check("matmul")
def check_matmul(be):
    rng = np.random.default_rng(0)
    for d, tol in ((rt.float64, 1e-12), (rt.float32, 1e-5), (rt.complex128, 1e-12), (rt.int32, 0)):
        a = (rng.integers(-3, 4, (2, 3, 4)) + (1j * rng.integers(-3, 4, (2, 3, 4)) if d.kind == "c" else 0))
        b = rng.integers(-3, 4, (4, 5))
        a, b = a.astype(NP[d]), b.astype(NP[d])
        r = be.matmul(H(be, a, d), H(be, b, d))
        assert be.dtype(r) is d
        close(N(be, r), a @ b, f"matmul {d}", rtol=tol)
    v = be.matmul(H(be, [1.0, 2.0]), H(be, [[1.0], [1.0]]))
    eq(N(be, v), [3.0], "vector @ matrix")
    r = be.matmul(be.full((1, 512), 1, rt.bfloat16), be.full((512, 1), 1, rt.bfloat16))
    assert be.dtype(r) is rt.bfloat16 and float(N(be, r)[0, 0]) == 512.0, "bf16 matmul accumulates in float32"


# -- host ------------------------------------------------------------------------------------------------------
@check("to_host")
def check_to_host(be):
    for d in ALL:
        a = be.to_host(be.full((2,), 1, d))
        assert isinstance(a, np.ndarray) and a.dtype == np.dtype(NP[d]), d
    h = be.flip(base12(be), (0,))
    eq(be.to_host(h), np.arange(12.0).reshape(3, 4)[::-1], "to_host values")


@check("to_list")
def check_to_list(be):
    want_type = {"f": float, "i": int, "u": int, "b": bool, "c": complex}
    for d in ALL:
        lst = be.to_list(be.full((2, 1), 1, d))
        assert isinstance(lst, list) and len(lst) == 2 and isinstance(lst[0], list)
        assert type(lst[0][0]) is want_type[d.kind], f"to_list {d}: {type(lst[0][0])}"
    assert be.to_list(be.full((), -3, rt.int4)) == -3
    assert be.to_list(be.full((), 0.5, rt.float8_e5m2)) == 0.5


# -- effects -----------------------------------------------------------------------------------------------------
@check("callback")
def check_callback(be):
    seen = []
    h = be.flip(base12(be), (0,))
    i = H(be, [3, -4], rt.int16)
    r = be.callback(lambda *vals: seen.append([np.array(v) for v in vals]), [h, i])
    assert r is None, "callback returns None"
    assert len(seen) == 1 and len(seen[0]) == 2, f"callback calls fn once with one value per handle: {seen}"
    eq(seen[0][0], np.arange(12.0).reshape(3, 4)[::-1], "callback values (a strided view)")
    assert seen[0][1].dtype == np.int16, seen[0][1].dtype
    eq(seen[0][1], np.array([3, -4], np.int16), "callback int16 values")
    for d in ALL:
        got = []
        be.callback(lambda v: got.append(np.array(v)), [be.full((2,), 1, d)])
        assert got[0].dtype == np.dtype(NP[d]) and got[0].shape == (2,), f"callback {d}: {got[0].dtype}"
    called = []
    be.callback(lambda: called.append(True), [])
    assert called == [True], "callback with no handles still calls fn"
    eq(N(be, h), np.arange(12.0).reshape(3, 4)[::-1], "callback leaves the handle's values alone")


# -- linear algebra, FFT -----------------------------------------------------------------------------------------
_SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])


@check("linalg")
def check_linalg(be):
    a = H(be, _SPD)
    L = N(be, be.linalg("cholesky", a))
    close(L @ L.T, _SPD, "cholesky")
    q, r = (N(be, x) for x in be.linalg("qr", a))
    close(q @ r, _SPD, "qr")
    u, s, vh = (N(be, x) for x in be.linalg("svd", a))
    close((u * s) @ vh, _SPD, "svd")
    close(N(be, be.linalg("svdvals", a)), s, "svdvals")
    w, v = (N(be, x) for x in be.linalg("eigh", a))
    close(v @ np.diag(w) @ v.T, _SPD, "eigh")
    assert np.all(np.diff(w) >= 0), "eigh ascending"
    close(N(be, be.linalg("eigvalsh", a)), w, "eigvalsh")
    we, ve = (N(be, x) for x in be.linalg("eig", a))
    assert we.dtype.kind == "c", "eig is always complex"
    close(np.sort(we.real), w, "eig")
    close(np.sort(N(be, be.linalg("eigvals", a)).real), w, "eigvals")
    close(N(be, be.linalg("det", a)), np.linalg.det(_SPD), "det")
    sign, logdet = (N(be, x) for x in be.linalg("slogdet", a))
    close(sign * np.exp(logdet), np.linalg.det(_SPD), "slogdet")
    close(N(be, be.linalg("inv", a)) @ _SPD, np.eye(3), "inv")
    close(N(be, be.linalg("pinv", a)), np.linalg.inv(_SPD), "pinv")
    b = np.array([[1.0], [2.0], [3.0]])
    close(N(be, be.linalg("solve", a, H(be, b))), np.linalg.solve(_SPD, b), "solve")
    x = be.linalg("lstsq", a, H(be, b))
    close(N(be, x[0]), np.linalg.solve(_SPD, b), "lstsq")
    close(N(be, be.linalg("einsum", a, a, subscripts="ij,jk->ik")), _SPD @ _SPD, "einsum")
    try:
        be.linalg("inv", H(be, np.ones((2, 2))))
    except C.NumericalFailure:
        pass
    else:
        raise AssertionError("linalg inv of a singular matrix must raise NumericalFailure")


@check("fft")
def check_fft(be):
    x = np.array([1.0, 2.0, 0.5, -1.0, 3.0, 0.0])
    z = H(be, x.astype(np.complex64), rt.complex64)
    f = be.fft("fft", z, (6,), (0,), "backward")
    assert be.dtype(f) is rt.complex64
    close(N(be, f), np.fft.fft(x), "fft", rtol=1e-5, atol=1e-5)
    close(N(be, be.fft("ifft", f, (6,), (0,), "backward")), x, "ifft", rtol=1e-5, atol=1e-5)
    rf = be.fft("rfft", H(be, x), (6,), (0,), "ortho")
    assert be.dtype(rf) is rt.complex128
    close(N(be, rf), np.fft.rfft(x, norm="ortho"), "rfft")
    back = be.fft("irfft", rf, (6,), (0,), "ortho")
    assert be.dtype(back) is rt.float64
    close(N(be, back), x, "irfft")
    close(N(be, be.fft("ihfft", H(be, x), (6,), (0,), "forward")), np.fft.ihfft(x, norm="forward"), "ihfft")
    hz = np.fft.ihfft(x)
    close(N(be, be.fft("hfft", H(be, hz), (6,), (0,), "backward")), np.fft.hfft(hz, 6), "hfft")
    m = np.arange(12.0).reshape(3, 4)
    close(N(be, be.fft("fft", H(be, m.astype(complex)), (3, 6), (0, 1), "backward")),
          np.fft.fftn(m, s=(3, 6)), "fftn padded")


# -- raw bytes, buffers, DLPack ---------------------------------------------------------------------------------------
@check("to_bytes")
def check_to_bytes(be):
    assert be.to_bytes(H(be, [1, 2], rt.int16)) == np.array([1, 2], np.int16).tobytes()
    assert be.to_bytes(be.flip(H(be, [1, 2], rt.int16), (0,))) == np.array([2, 1], np.int16).tobytes()
    assert be.to_bytes(H(be, [-1, 3, -8], rt.int4)) == b"\x0f\x03\x08", "int4: one byte each, low nibble"
    assert be.to_bytes(H(be, [15, 3], rt.uint4)) == b"\x0f\x03"
    assert be.to_bytes(H(be, [True, False])) == b"\x01\x00"
    assert be.to_bytes(be.empty((0,), rt.float32)) == b""


@check("from_buffer")
def check_from_buffer(be):
    buf = bytearray(np.arange(6, dtype=np.int32).tobytes())
    h = be.from_buffer(buf, rt.int32, (2, 2), 8)
    handle_ok(be, h, (2, 2), rt.int32, "from_buffer")
    eq(N(be, h), np.array([[2, 3], [4, 5]], np.int32), "from_buffer offset")
    be.assign(be.view_index(h, (0, 0)), 99)
    assert np.frombuffer(bytes(buf), np.int32)[2] == 99, "from_buffer views the buffer"


class _Exporter:
    def __init__(self, be, h):
        self.be, self.h = be, h

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return self.be.dlpack(self.h, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return self.be.dlpack_device(self.h)


@check("dlpack", "dlpack_device", "from_dlpack")
def check_dlpack(be):
    dev = be.dlpack_device(be.full((1,), 0, rt.float32))
    assert isinstance(dev, tuple) and len(dev) == 2 and all(isinstance(v, int) for v in dev)
    for d in (rt.float32, rt.int64, rt.complex128, rt.bool, rt.bfloat16, rt.float8_e4m3):
        h = H(be, [[0, 1, 1], [1, 0, 1]], d)
        r, got = be.from_dlpack(_Exporter(be, h), None)
        assert got is d, f"dlpack round trip {d}: {got}"
        eq(N(be, r).astype(np.complex128), N(be, h).astype(np.complex128), f"dlpack {d}")
        # (a backend without byte buffers, dask, exports computed values: nothing to share)
        assert be.shares_memory(r, h) or dev[0] != 1 or "buffer" not in be.capabilities, f"dlpack {d} shares memory"
    cap = be.dlpack(H(be, [1.0]), None, None, None, None)
    assert type(cap).__name__ == "PyCapsule"
    # a foreign producer (NumPy) is imported too
    r, got = be.from_dlpack(np.arange(3, dtype=np.int16), None)
    assert got is rt.int16 and be.to_list(r) == [0, 1, 2]


# -- capabilities ------------------------------------------------------------------------------------------------------
@check("require")
def check_require(be):
    caps = be.capabilities
    assert isinstance(caps, frozenset) and caps <= C.CAPABILITIES, f"capabilities {caps!r}: unknown names"
    for cap in C.CAPABILITIES:
        if cap in caps:
            be.require(cap, "fn")
            continue
        try:
            be.require(cap, "fn")
        except TypeError as e:
            assert "fn" in str(e) and be.name in str(e), f"require({cap!r}) must name the function and backend: {e}"
        else:
            raise AssertionError(f"require({cap!r}) must raise TypeError: the backend declares it missing")


# -- the runner ------------------------------------------------------------------------------------------------------
def covered() -> set[str]:
    return set(CHECKS)


def unsupported(backend: C.Backend) -> dict[str, str]:
    """``{check name: reason}`` for the checks of the capabilities ``backend`` declares missing
    (``Backend.capabilities``): the only checks the suite skips."""
    caps = getattr(backend, "capabilities", C.CAPABILITIES)
    out = {}
    for cap in sorted(C.CAPABILITIES - set(caps)):
        for prim in C.CAPABILITY_PRIMITIVES.get(cap, ()):
            out[prim] = f"the {backend.name} backend declares no {cap!r} capability"
    return out


def run_check(backend: C.Backend, name: str) -> None:
    """Run one primitive's check; the contract also forbids warnings."""
    with warnings.catch_warnings(record=True) as caught:
        CHECKS[name](backend)
    msgs = [f"{w.category.__name__}: {w.message}" for w in caught
            if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))]
    assert not msgs, f"{name}: primitives must not warn, got {msgs}"


def run_contract_suite(backend: C.Backend, names: list[str] | None = None) -> dict[str, str]:
    """Check ``backend`` against the contract.

    Returns:
        ``{primitive: failure text}`` for every failing primitive (empty when the
        backend conforms); a primitive of the contract with no check is reported too.
        The checks of capabilities the backend declares missing are skipped (:func:`unsupported`).
    """
    failures: dict[str, str] = {}
    skip = unsupported(backend)
    for n in C.primitive_names():
        if n not in CHECKS:
            failures[n] = "no check in the contract suite"
    for n in (names or list(CHECKS)):
        if n in skip:
            continue
        try:
            run_check(backend, n)
        except Exception as e:  # noqa: BLE001  (reported, not raised)
            failures[n] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
    return failures


__all__ = ["CHECKS", "run_check", "run_contract_suite", "covered", "unsupported"]
