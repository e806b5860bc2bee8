"""Helpers for tests: NumPy oracles, hypothesis strategies, OCaml-style list printing."""
from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import runetensor as rt

#: The tests' dtype oracle: each runetensor dtype -> the NumPy scalar type that holds the same values.
#: Written here, independently of the NumPy backend's own table, so that a mistake in that table
#: cannot hide by being used on both sides of a comparison.  Every test module takes its NumPy
#: dtypes from here.
NP = {rt.float16: np.float16, rt.float32: np.float32, rt.float64: np.float64, rt.bfloat16: ml_dtypes.bfloat16,
      rt.float8_e4m3: ml_dtypes.float8_e4m3fn, rt.float8_e5m2: ml_dtypes.float8_e5m2, rt.int4: ml_dtypes.int4,
      rt.uint4: ml_dtypes.uint4, rt.int8: np.int8, rt.uint8: np.uint8, rt.int16: np.int16, rt.uint16: np.uint16,
      rt.int32: np.int32, rt.uint32: np.uint32, rt.int64: np.int64, rt.uint64: np.uint64, rt.bool: np.bool_,
      rt.complex64: np.complex64, rt.complex128: np.complex128}

#: dtypes NumPy computes natively (the oracle is exact for them)
NUMPY_DTYPES = [rt.float16, rt.float32, rt.float64, rt.int8, rt.uint8, rt.int16, rt.uint16,
                rt.int32, rt.uint32, rt.int64, rt.uint64, rt.bool, rt.complex64, rt.complex128]
ALL_DTYPES = list(rt._dtypes.all_dtypes)


def np_of(t):
    """A NumPy copy of a tensor's values (the oracle's view of it)."""
    return np.array(rt.to_numpy(t))


_WIDEN_TO_F32 = (np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2))
_WIDEN_TO_I16 = (np.dtype(ml_dtypes.int4), np.dtype(ml_dtypes.uint4))


def as_np(a):
    """``a`` as a NumPy array NumPy can compute with: bfloat16/float8 as float32, int4/uint4 as int16."""
    a = np.asarray(a)
    if a.dtype in _WIDEN_TO_F32:
        return a.astype(np.float32)
    if a.dtype in _WIDEN_TO_I16:
        return a.astype(np.int16)
    return a


def np_values(t):
    """A NumPy copy of a tensor's values, widened as ``as_np`` does."""
    return as_np(np.array(rt.to_numpy(t)))


def shares(t, base):
    """Whether tensor ``t`` shares memory with the NumPy array ``base``."""
    return np.shares_memory(rt.to_numpy(t), base)


def random_bits(seed, shape, d):
    """An array of dtype ``d`` with random bit patterns (NaN payloads included), canonical for bool/int4."""
    nd = np.dtype(NP[d])
    n = int(np.prod(shape)) if shape else 1
    raw = np.random.default_rng(seed).integers(0, 256, size=n * nd.itemsize, dtype=np.uint8)
    if d is rt.bool:
        raw %= 2
    if d in (rt.int4, rt.uint4):
        raw %= 16
    return raw.view(nd).reshape(shape)


def random_normal(seed, shape, d, round_kinds="iu"):
    """Standard-normal values of dtype ``d`` (complex parts both random; kinds in ``round_kinds`` get round(3x))."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if d.kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    if d.kind in round_kinds:
        a = np.round(a * 3)
    return a.astype(NP[d])


def ocaml_list(ts):
    """Print a Python list of tensors as the OCaml toplevel prints a list: ``[a; b; c]``."""
    return "[" + "; ".join(str(t) for t in ts) + "]"


def shapes(min_dims=0, max_dims=4, max_side=5):
    return st.lists(st.integers(0, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


def strided_views(draw, dtype=rt.float64, max_dims=4):
    """(tensor, numpy twin): a random view (slices with negative steps, transposes) of a random base."""
    shape = draw(shapes(1, max_dims, 6))
    n = int(np.prod(shape))
    base = np.arange(n).astype(np.float64).reshape(shape)
    key = []
    for s in shape:
        start = draw(st.integers(0, s))
        stop = draw(st.integers(0, s))
        step = draw(st.sampled_from([1, 2, -1, -2]))
        key.append(slice(start, stop, step))
    view = base[tuple(key)]
    if view.ndim > 1 and draw(st.booleans()):
        perm = draw(st.permutations(range(view.ndim)))
        view = view.transpose(perm)
    t = rt.from_numpy(base)[tuple(key)]
    return t, view
