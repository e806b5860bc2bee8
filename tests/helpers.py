"""Helpers for tests: NumPy oracles, hypothesis strategies, OCaml-style list printing."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import runetensor as rt

#: dtypes NumPy computes natively (the oracle is exact for them)
NUMPY_DTYPES = [rt.float16, rt.float32, rt.float64, rt.int8, rt.uint8, rt.int16, rt.uint16,
                rt.int32, rt.uint32, rt.int64, rt.uint64, rt.bool, rt.complex64, rt.complex128]
ALL_DTYPES = list(rt._dtypes.all_dtypes)


def np_of(t):
    """A NumPy copy of a tensor's values (the oracle's view of it)."""
    return np.array(rt.to_numpy(t))


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
    t = rt.from_numpy(base)[tuple(key)] if hasattr(rt.Tensor, "__getitem__") else None
    return t, view
