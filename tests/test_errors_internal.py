"""Issue 12 section 5: errors that leaked internals (NumPy/ctypes messages, OverflowError, a
MemoryError naming the buffer pool's uint8 buffer, silent truncation of non-integral floats into
integer tensors).  Every case asserts the exception type and that the message names the function
and the offending value or shape.

The allocations that fail here ask for at least 2**48 bytes, more than any 64-bit address space
maps, so they fail at once; they also run once in a child process (tests/hostile.py), where a
crash would be a test failure rather than a lost run.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import runetensor as rt
from runetensor import bigarray as ba
from runetensor import harpie as hp
from runetensor._validate import dims_str, nbytes_str

from hostile import assert_survives

#: words that must never reach a user: NumPy's and ctypes' own messages
_LEAKS = ("Maximum allowed dimension", "ssize_t", "C long", "PyCapsule", "array is too big",
          "data type uint8", "arr.size", "Unable to allocate")


def _check(e: BaseException, fname: str, *words: str) -> None:
    msg = str(e)
    assert msg.startswith(fname + ":"), msg
    for w in words:
        assert w in msg, (w, msg)
    for leak in _LEAKS:
        assert leak not in msg, msg


# ---------------------------------------------------------------------------
# shapes and sizes no buffer can hold: ValueError naming the function and the shape
# ---------------------------------------------------------------------------
HUGE = [
    (lambda: rt.zeros(rt.float64, [2**64]), "zeros", "(2**64,)"),
    (lambda: rt.ones(rt.int8, [2**63]), "ones", "(2**63,)"),
    (lambda: rt.empty(rt.float32, [2**70]), "empty", "(2**70,)"),
    (lambda: rt.full(rt.int8, [2**100], 1), "full", "(2**100,)"),
    (lambda: rt.zeros(rt.int8, [2**40, 0, 2**40]), "zeros", "(2**40, 0, 2**40)"),
    (lambda: rt.zeros(rt.bfloat16, [3**40, 3**40]), "zeros", str(3**40)),
    (lambda: rt.eye(rt.float64, 2**64), "eye", str(2**64)),
    (lambda: rt.eye(rt.int8, 1, m=2**63), "eye", str(2**63)),
    (lambda: rt.eye(rt.float64, 2**32, m=2**32), "eye", "(2**32, 2**32)"),
    (lambda: rt.identity(rt.float64, 2**63), "identity", str(2**63)),
    (lambda: rt.linspace(rt.float32, 0., 1., 2**62), "linspace", str(2**62)),
    (lambda: rt.logspace(rt.float32, 0., 1., 2**63), "logspace", str(2**63)),
    (lambda: rt.geomspace(rt.float32, 1., 2., 2**64), "geomspace", str(2**64)),
    (lambda: rt.arange(rt.float64, 0, 2**64, 1), "arange", "(2**64,)"),
    (lambda: rt.arange(rt.uint64, 0, 2**63, 1), "arange", "(2**63,)"),
    (lambda: rt.arange_f(rt.float64, 0., 1., 1e-300), "arange_f", "1e-300"),
    (lambda: rt.arange_f(rt.float64, 0., 1., 5e-324), "arange_f", "5e-324"),
    (lambda: rt.arange_f(rt.float16, 0., 1e300, 1.), "arange_f", "1e+300"),
    (lambda: rt.rand(rt.float32, [2**63], seed=1), "rand", "(2**63,)"),
    (lambda: rt.randn(rt.float64, [2**62, 4], seed=1), "randn", "(2**62, 4)"),
    (lambda: rt.randint(rt.int32, [2**64], 0, seed=1, high=5), "randint", "(2**64,)"),
    (lambda: rt.init(rt.int8, [2**21, 2**21, 2**21], lambda i: 0), "init", "(2**21, 2**21, 2**21)"),
    (lambda: rt.init(rt.float64, [2**64], lambda i: 0), "init", "(2**64,)"),
    (lambda: ba.Genarray.create(ba.float64, ba.c_layout, [2**64]), "Genarray.create", "(2**64,)"),
    (lambda: ba.Array2.create(ba.float64, ba.c_layout, 2**62, 2**62), "Array2.create", "(2**62, 2**62)"),
    (lambda: ba.Array1.init(ba.float64, ba.c_layout, 2**64, lambda i: 0.), "Array1.init", "(2**64,)"),
    (lambda: hp.konst([2**64], 1), "konst", "(2**64,)"),
    (lambda: hp.iota(2**64), "iota", "(2**64,)"),
    (lambda: hp.range([2**63]), "range", "(2**63,)"),
    (lambda: hp.corange([2**63, 2]), "corange", "(2, 2**63)"),
    (lambda: hp.ident([2**40, 2**40]), "ident", "(2**40, 2**40)"),
    (lambda: hp.tabulate([2**21, 2**21, 2**21], lambda i: 0), "tabulate", "(2**21, 2**21, 2**21)"),
    (lambda: hp.indices([2**64]), "indices", "(2**64,)"),
]


@pytest.mark.parametrize("call,fname,word", HUGE)
def test_impossible_sizes_raise_value_error_naming_the_function(call, fname, word):
    with pytest.raises(ValueError) as ei:
        call()
    _check(ei.value, fname, word)


# ---------------------------------------------------------------------------
# sizes a buffer could have but this machine cannot allocate: MemoryError naming the function,
# the size, the shape and the dtype (never the pool's internal uint8 buffer)
# ---------------------------------------------------------------------------
BIG = [  # 2**50 bytes and more: beyond every 64-bit address space, so the allocation fails at once
    (lambda: rt.zeros(rt.float64, [2**47]), "zeros", "cannot allocate 1.0 PiB for shape (2**47,) float64"),
    (lambda: rt.ones(rt.float64, [2**47]), "ones", "cannot allocate 1.0 PiB for shape (2**47,) float64"),
    (lambda: rt.empty(rt.int8, [2**50]), "empty", "cannot allocate 1.0 PiB for shape (2**50,) int8"),
    (lambda: rt.full(rt.float32, [2**48], 2.5), "full", "(2**48,) float32"),
    (lambda: rt.zeros(rt.float64, [2**60 - 1]), "zeros", "cannot allocate 8.0 EiB"),
    (lambda: rt.eye(rt.float64, 2**24), "eye", "(2**24, 2**24) float64"),
    (lambda: rt.identity(rt.int64, 2**24), "identity", "(2**24, 2**24) int64"),
    (lambda: rt.linspace(rt.float64, 0., 1., 2**50), "linspace", "(2**50,) float64"),
    (lambda: rt.logspace(rt.float64, 0., 1., 2**50), "logspace", "(2**50,) float64"),
    (lambda: rt.geomspace(rt.float32, 1., 2., 2**50), "geomspace", "(2**50,) float32"),
    (lambda: rt.arange(rt.int64, 0, 2**50, 1), "arange", "(2**50,) int64"),
    (lambda: rt.arange_f(rt.float64, 0., 2.0**50, 1.), "arange_f", "(2**50,) float64"),
    (lambda: rt.rand(rt.float64, [2**50], seed=1), "rand", "(2**50,) float64"),
    (lambda: rt.randn(rt.float32, [2**50], seed=1), "randn", "(2**50,) float32"),
    (lambda: rt.randint(rt.int64, [2**50], 0, seed=1, high=7), "randint", "(2**50,) int64"),
    (lambda: rt.init(rt.float64, [2**50], lambda i: 0.), "init", "(2**50,) float64"),
    (lambda: rt.pad(rt.zeros(rt.int8, [2]), [(2**50, 0)], 0), "pad", "int8"),
    (lambda: rt.zeros_like(rt.broadcast_to(rt.zeros(rt.int8, [1]), [2**50])), "zeros_like", "(2**50,) int8"),
    (lambda: rt.ones_like(rt.broadcast_to(rt.zeros(rt.int8, [1]), [2**50])), "ones_like", "(2**50,) int8"),
    (lambda: rt.empty_like(rt.broadcast_to(rt.zeros(rt.int8, [1]), [2**50])), "empty_like", "(2**50,) int8"),
    (lambda: rt.full_like(rt.broadcast_to(rt.zeros(rt.int8, [1]), [2**50]), 3), "full_like", "(2**50,) int8"),
    (lambda: rt.diag(rt.broadcast_to(rt.zeros(rt.int8, [1]), [2**25])), "diag", "(2**25, 2**25) int8"),
    (lambda: rt.dropout(rt.broadcast_to(rt.ones(rt.float32, [1]), [2**50]), seed=1, rate=0.5), "dropout",
     "(2**50,) float32"),
    (lambda: ba.Genarray.create(ba.float64, ba.c_layout, [2**50]), "Genarray.create", "(2**50,) float64"),
    (lambda: ba.Array1.init(ba.float64, ba.c_layout, 2**50, lambda i: 0.), "Array1.init", "(2**50,) float64"),
    (lambda: hp.konst([2**50], 1), "konst", "(2**50,) int64"),
    (lambda: hp.iota(2**50), "iota", "(2**50,) int64"),
    (lambda: hp.tabulate([2**50], lambda i: 0), "tabulate", "(2**50,) object"),
]


@pytest.mark.parametrize("call,fname,words", BIG)
def test_failed_allocations_raise_memory_error_naming_shape_and_dtype(call, fname, words):
    with pytest.raises(MemoryError) as ei:
        call()
    _check(ei.value, fname, words)


def test_failed_allocations_in_a_child_process():
    out = assert_survives("""
        import runetensor as rt
        for make in (lambda: rt.zeros(rt.float64, [2**47]), lambda: rt.ones(rt.int8, [2**50]),
                     lambda: rt.rand(rt.float64, [2**50], seed=1), lambda: rt.arange(rt.int64, 0, 2**50, 1)):
            try:
                make()
            except MemoryError as e:
                assert "uint8" not in str(e) and "Unable to allocate" not in str(e), e
            else:
                raise AssertionError("allocated 1 PiB?")
        print("ok")
    """, timeout=60)
    assert out.strip() == "ok"


def test_buffer_pool_memory_error_names_the_callers_shape_and_dtype():
    from runetensor._backend import _fast
    pool = _fast.BufferPool(max_bytes=1 << 20)
    with pytest.raises(MemoryError) as ei:
        pool.empty((2**47,), np.dtype(np.float64))
    msg = str(ei.value)
    assert "(140737488355328,)" in msg and "float64" in msg and "uint8" not in msg, msg


def test_message_helpers():
    assert nbytes_str(512) == "512 bytes"
    assert nbytes_str(2**63) == "8.0 EiB"
    assert nbytes_str(16 * 2**30) == "16.0 GiB"
    assert dims_str((2**60,)) == "(2**60,)"
    assert dims_str((3, 2**40, 5)) == "(3, 2**40, 5)"
    assert dims_str(()) == "()"


def test_huge_offsets_are_no_overflow():
    # k far beyond the matrix: no diagonal, no OverflowError from int64 arithmetic
    assert rt.to_array(rt.eye(rt.int8, 2, k=2**70)) == [0, 0, 0, 0]
    assert rt.to_array(rt.eye(rt.int8, 2, k=-2**70)) == [0, 0, 0, 0]
    assert rt.diag(rt.zeros(rt.int8, [2, 2]), k=2**70).shape == (0,)
    assert rt.diag(rt.zeros(rt.int8, [2, 2]), k=-2**70).shape == (0,)
    assert rt.to_array(rt.tril(rt.ones(rt.int8, [2, 2]), k=2**70)) == [1, 1, 1, 1]
    assert rt.to_array(rt.tril(rt.ones(rt.int8, [2, 2]), k=-2**70)) == [0, 0, 0, 0]
    assert rt.to_array(rt.triu(rt.ones(rt.int8, [2, 2]), k=-2**70)) == [1, 1, 1, 1]
    assert rt.to_array(rt.triu(rt.ones(rt.int8, [2, 2]), k=2**70)) == [0, 0, 0, 0]


# ---------------------------------------------------------------------------
# values stored into integer and bool tensors: no silent truncation (bigarray raises too)
# ---------------------------------------------------------------------------
def _stores(fname):
    return {
        "full": lambda d, v: rt.full(d, [2], v),
        "scalar": lambda d, v: rt.scalar(d, v),
        "full_like": lambda d, v: rt.full_like(rt.zeros(d, [2]), v),
        "scalar_like": lambda d, v: rt.scalar_like(rt.zeros(d, [2]), v),
        "create": lambda d, v: rt.create(d, [2], [0, v]),
        "init": lambda d, v: rt.init(d, [2], lambda i: v),
        "pad": lambda d, v: rt.pad(rt.zeros(d, [2]), [(1, 1)], v),
    }[fname]


STORE_FNS = ["full", "scalar", "full_like", "scalar_like", "create", "init", "pad"]
# every function names itself (init used to report as create)
_NAME: dict = {}

BAD_VALUES = [
    (rt.int32, 2.5, ValueError, "value 2.5 is not an integer; int32"),
    (rt.int32, -0.5, ValueError, "value -0.5 is not an integer; int32"),
    (rt.uint8, np.float64(2.5), ValueError, "value 2.5 is not an integer; uint8"),
    (rt.int4, np.float32(0.5), ValueError, "value 0.5 is not an integer; int4"),
    (rt.int64, float("nan"), ValueError, "value nan cannot be stored in int64"),
    (rt.int16, float("inf"), ValueError, "value inf cannot be stored in int16"),
    (rt.uint64, float("-inf"), ValueError, "value -inf cannot be stored in uint64"),
    (rt.int32, 1e20, ValueError, "out of range for int32"),
    (rt.int32, np.int64(2**40), ValueError, f"value {2**40} is out of range for int32"),
    (rt.uint8, 2**70, ValueError, f"value {2**70} is out of range for uint8"),
    (rt.bool, 2, ValueError, "value 2 cannot be stored in bool (expected True, False, 0 or 1)"),
    (rt.bool, 0.5, ValueError, "value 0.5 cannot be stored in bool"),
    (rt.bool, float("nan"), ValueError, "value nan cannot be stored in bool"),
    (rt.bool, 2**70, ValueError, f"value {2**70} cannot be stored in bool"),
    (rt.int32, "3", TypeError, "value must be a number, got str '3'"),
    (rt.int32, None, TypeError, "value must be a number, got NoneType None"),
    (rt.bool, None, TypeError, "value must be a number, got NoneType None"),
    (rt.float32, None, TypeError, "value must be a number, got NoneType None"),
    (rt.int8, 1j, TypeError, "complex value 1j cannot be stored in int8"),
    (rt.float64, 2**1100, ValueError, "too large for float64"),
]


@pytest.mark.parametrize("fn", STORE_FNS)
@pytest.mark.parametrize("d,value,exc,words", BAD_VALUES)
def test_values_that_the_dtype_cannot_store_raise(fn, d, value, exc, words):
    with pytest.raises(exc) as ei:
        _stores(fn)(d, value)
    _check(ei.value, _NAME.get(fn, fn), words)


GOOD_VALUES = [
    (rt.int32, 2.0, 2), (rt.int8, -128.0, -128), (rt.uint8, np.float32(255.0), 255),
    (rt.int64, np.int64(-5), -5), (rt.int32, True, 1), (rt.uint64, 2**64 - 1, 2**64 - 1),
    (rt.bool, 1, True), (rt.bool, 0, False), (rt.bool, 1.0, True), (rt.bool, np.True_, True),
    (rt.bool, np.int8(0), False), (rt.float32, 2**20, 2.0**20), (rt.float16, 1e10, math.inf),
]


@pytest.mark.parametrize("fn", STORE_FNS)
@pytest.mark.parametrize("d,value,stored", GOOD_VALUES)
def test_values_that_the_dtype_stores_exactly(fn, d, value, stored):
    t = _stores(fn)(d, value)
    vals = rt.to_array(t) if t.ndim else [rt.item(t)] if hasattr(rt, "item") else [t.item()]
    assert stored in vals and t.dtype is d


def test_scalar_names_itself():
    with pytest.raises(ValueError, match=r"^scalar: value 2\.5 is not an integer; int32"):
        rt.scalar(rt.int32, 2.5)


def test_bigarray_agrees_that_a_float_is_not_an_integer():
    # bigarray (OCaml's types) refuses every float for an integer kind; rt refuses the non-integral ones
    with pytest.raises(TypeError, match="must be an integer, got float 2.5"):
        ba.Array1.init(ba.int32, ba.c_layout, 2, lambda i: 2.5)
    with pytest.raises(ValueError, match="not an integer"):
        rt.full(rt.int32, [2], 2.5)


def test_asarray_of_a_python_number_never_wraps_around():
    with pytest.raises(ValueError) as ei:
        rt.asarray(300, dtype=rt.uint8)
    _check(ei.value, "asarray", "300", "uint8")
    with pytest.raises(ValueError) as ei:
        rt.asarray(float("nan"), dtype=rt.int32)
    _check(ei.value, "asarray", "nan", "int32")
    with pytest.raises(ValueError) as ei:
        rt.asarray(2**70, dtype=rt.int64)
    _check(ei.value, "asarray", str(2**70), "int64")
    assert rt.to_array(rt.asarray(2.5, dtype=rt.int32)) == [2]  # asarray converts, as astype does
    assert rt.to_array(rt.asarray(2.0, dtype=rt.bool)) == [True]


# ---------------------------------------------------------------------------
# DLPack producers that are not
# ---------------------------------------------------------------------------
class _NotACapsule:
    def __dlpack__(self, **kw):
        return 5

    def __dlpack_device__(self):
        return (1, 0)


class _Failing:
    def __dlpack__(self, **kw):
        raise RuntimeError("boom")


class _Attribute:
    __dlpack__ = 3


def test_from_dlpack_of_a_non_capsule():
    with pytest.raises(BufferError) as ei:
        rt.from_dlpack(_NotACapsule())
    _check(ei.value, "from_dlpack", "_NotACapsule.__dlpack__() returned an object of type int",
           "not a DLPack capsule")


def test_from_dlpack_of_a_failing_producer():
    with pytest.raises(BufferError) as ei:
        rt.from_dlpack(_Failing())
    _check(ei.value, "from_dlpack", "_Failing", "RuntimeError: boom")
    assert isinstance(ei.value.__cause__, RuntimeError)


@pytest.mark.parametrize("obj", [5, "x", None, [1, 2], _Attribute()])
def test_from_dlpack_of_an_object_without_dlpack(obj):
    with pytest.raises(TypeError) as ei:
        rt.from_dlpack(obj)
    _check(ei.value, "from_dlpack", type(obj).__name__)


def test_from_dlpack_bad_copy_flag():
    with pytest.raises(TypeError) as ei:
        rt.from_dlpack(np.arange(3), copy="yes")
    _check(ei.value, "from_dlpack", "'yes'")


def test_from_dlpack_still_shares_memory():
    a = np.arange(4.0)
    t = rt.from_dlpack(a)
    a[0] = 7
    assert rt.to_array(t)[0] == 7


def test_harpie_uniform_bad_range():
    with pytest.raises(TypeError) as ei:
        hp.uniform([2], (0.0, None), seed=1)
    _check(ei.value, "uniform", "None")
    with pytest.raises(ValueError) as ei:
        hp.uniform([2], (0.0, float("nan")), seed=1)
    _check(ei.value, "uniform", "nan")


def test_no_hot_path_regression_in_results():
    # the checks are integer arithmetic only: tiny creations still give the same tensors
    assert rt.to_array(rt.zeros(rt.float32, [4])) == [0.0] * 4
    assert rt.to_array(rt.full(rt.int32, [2], 7)) == [7, 7]
    assert rt.to_array(rt.arange_f(rt.float32, 0., 1., 0.25)) == [0.0, 0.25, 0.5, 0.75]
    assert re.match(r"^\[0, 1, 2\]$", str(rt.arange(rt.int8, 0, 3, 1)))


def test_linspace_endpoint_that_is_not_a_truth_value():
    with pytest.raises(TypeError) as ei:
        rt.linspace(rt.float32, 0., 1., 3, endpoint=np.array([1, 2]))
    _check(ei.value, "linspace", "endpoint must be a bool")


def test_unpickle_of_an_impossible_shape():
    from runetensor._interop import _rebuild
    with pytest.raises(ValueError) as ei:
        _rebuild("float64", (2**64, 0), b"")
    _check(ei.value, "unpickle", "(2**64, 0)")
