"""The strided view model against NumPy: strides in bytes, offsets in elements, negative
strides, 0-d and empty tensors, writes through views seen by the base and by overlapping views.

Views are made with the backend's movement primitives (the layer every view function
uses) and, where the frontend has them, with ``t[...]``; NumPy twins of the same
views are the oracle.
"""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt
from runetensor._tensor import wrap

DTYPES = {rt.float64: np.float64, rt.float32: np.float32, rt.int16: np.int16, rt.uint8: np.uint8,
          rt.bool: np.bool_, rt.complex128: np.complex128, rt.bfloat16: ml_dtypes.bfloat16,
          rt.int4: ml_dtypes.int4, rt.float8_e5m2: ml_dtypes.float8_e5m2}


def elem_offset(view, base):
    return (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // base.itemsize


def values(t):
    return np.array(rt.to_numpy(t)).astype(np.complex128 if t.dtype.kind == "c" else np.float64)


def same_model(t, v, base):
    """Tensor ``t`` and NumPy view ``v`` of ``base`` agree on the whole view model."""
    assert t.shape == v.shape and rt.shape(t) == v.shape
    assert rt.strides(t) == t.strides and len(t.strides) == v.ndim
    if v.size:  # strides of length-1 axes (and of empty tensors) carry no meaning
        assert [s for s, n in zip(t.strides, v.shape) if n > 1] == \
            [s for s, n in zip(v.strides, v.shape) if n > 1]  # bytes
        assert rt.offset(t) == elem_offset(v, base)  # elements
    assert rt.is_c_contiguous(t) == v.flags.c_contiguous
    assert rt.size(t) == v.size and rt.ndim(t) == v.ndim and rt.nbytes(t) == v.nbytes
    np.testing.assert_array_equal(values(t), np.asarray(v).astype(values(t).dtype))
    if v.size:
        assert np.shares_memory(rt.to_numpy(t), base)


@st.composite
def base_arrays(draw):
    d = draw(st.sampled_from(list(DTYPES)))
    shape = draw(st.lists(st.integers(0, 5), min_size=0, max_size=4).map(tuple))
    n = int(np.prod(shape))
    base = (np.arange(n) % 7).astype(DTYPES[d]).reshape(shape)
    return d, base


@st.composite
def view_chains(draw):
    """A base array and a list of movement steps to apply to it."""
    d, base = draw(base_arrays())
    steps = []
    shape = base.shape
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["slice", "permute", "flip", "int", "newaxis", "reshape"]))
        if kind == "slice" and shape:
            key = []
            for s in shape:
                step = draw(st.sampled_from([1, 2, 3, -1, -2]))
                a = draw(st.integers(-s - 1, s + 1)) if s else 0
                b = draw(st.integers(-s - 1, s + 1)) if s else 0
                key.append(slice(a, b, step))
            steps.append(("slice", tuple(key)))
        elif kind == "permute" and len(shape) > 1:
            steps.append(("permute", tuple(draw(st.permutations(range(len(shape)))))))
        elif kind == "flip" and shape:
            axes = tuple(sorted(set(draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape))))))
            steps.append(("flip", axes))
        elif kind == "int" and shape and shape[0] > 0:
            steps.append(("int", draw(st.integers(-shape[0], shape[0] - 1))))
        elif kind == "newaxis" and len(shape) < 5:
            steps.append(("newaxis", draw(st.integers(0, len(shape)))))
        elif kind == "reshape":
            steps.append(("reshape", (-1,)))
        else:
            continue
        shape = _apply_np(np.empty(shape), steps[-1]).shape if steps[-1][0] != "reshape" else (int(np.prod(shape)),)
    return d, base, steps


def _apply_np(a, step):
    kind, arg = step
    if kind == "slice":
        return a[arg]
    if kind == "permute":
        return a.transpose(arg)
    if kind == "flip":
        return np.flip(a, arg)
    if kind == "int":
        return a[arg, ...]  # a 0-d view, not a scalar, for a 1-d array
    if kind == "newaxis":
        return a[(slice(None),) * arg + (None,)]
    return a.reshape(arg)


def _apply_rt(t, step):
    """The same step through the backend's movement primitives."""
    be, h = t._backend, t._data
    kind, arg = step
    if kind == "slice":
        key = []
        for s, sl in zip(h.shape, arg):
            a, b, c = sl.indices(s)
            if len(range(a, b, c)) == 0:
                key.append(slice(0, 0, 1))  # empty (slice.indices may give start -1 here)
            else:
                key.append(slice(a, None if b < 0 else b, c))
        r = be.view_index(h, tuple(key))
    elif kind == "permute":
        r = be.permute(h, arg)
    elif kind == "flip":
        r = be.flip(h, arg)
    elif kind == "int":
        i = arg + h.shape[0] if arg < 0 else arg
        r = be.view_index(h, (i,) + tuple(slice(0, s, 1) for s in h.shape[1:]))
    elif kind == "newaxis":
        full = [slice(0, s, 1) for s in h.shape]
        r = be.view_index(h, tuple(full[:arg]) + (None,) + tuple(full[arg:]))
    else:
        r = be.reshape(h, (h.size,))
        if r is None:
            return None
    return wrap(r, t._dtype, be)


@given(view_chains())
def test_views_follow_numpy(chain):
    d, base, steps = chain
    t = rt.from_numpy(base)
    v = base
    same_model(t, v, base)
    for step in steps:
        nxt = apply_both(t, v, step)
        if nxt is None:
            break
        t, v = nxt
        same_model(t, v, base)


def apply_both(t, v, step):
    """Apply a step to the tensor and its twin; None when reshape (rightly) refuses."""
    if step[0] == "reshape":
        r = _apply_rt(t, step)
        try:
            v2 = v.view()
            v2.shape = (-1,)  # NumPy refuses exactly when a view cannot express it
        except AttributeError:
            assert r is None, "reshape must refuse (None) when strides cannot express it"
            return None
        assert r is not None, "reshape must give a view when the strides allow it"
        return r, v2
    return _apply_rt(t, step), _apply_np(v, step)


@given(view_chains(), st.data())
def test_writes_through_views_reach_base_and_overlapping_views(chain, data):
    d, base, steps = chain
    base = base.copy()
    twin = base.copy()
    t, v = rt.from_numpy(base), twin
    for step in steps:
        nxt = apply_both(t, v, step)
        if nxt is None:
            break
        t, v = nxt
    if v.size == 0:
        return
    other = rt.from_numpy(base)  # an overlapping view: the whole base
    val = data.draw(st.integers(0, 5))
    be = t._backend
    be.assign(t._data, be.full((), val, d))  # write through the view
    v[...] = val
    np.testing.assert_array_equal(values(rt.from_numpy(base)), twin.astype(values(other).dtype))
    np.testing.assert_array_equal(values(other), twin.astype(values(other).dtype))


def test_overlapping_windows_see_each_others_writes():
    base = np.zeros(10)
    t = rt.from_numpy(base)
    be = t._backend
    w1 = wrap(be.as_strided(t._data, (3,), (1,), 2), rt.float64, be)  # elements 2..4
    w2 = wrap(be.as_strided(t._data, (3,), (2,), 4), rt.float64, be)  # elements 4, 6, 8
    be.assign(w1._data, be.full((), 7.0, rt.float64))
    assert rt.to_array(w2) == [7.0, 0.0, 0.0]
    be.assign(be.view_index(w2._data, (0,)), be.full((), -1.0, rt.float64))
    assert rt.to_array(w1) == [7.0, 7.0, -1.0]
    assert base.tolist() == [0, 0, 7, 7, -1, 0, 0, 0, 0, 0]
    assert rt.offset(w1) == 2 and rt.offset(w2) == 4 and w2.strides == (16,)


@pytest.mark.parametrize("d", list(rt._dtypes.all_dtypes))
def test_byte_strides_every_dtype(d):
    t = rt.zeros(d, [2, 3, 4])
    i = d.itemsize
    assert t.strides == (12 * i, 4 * i, i)
    be = t._backend
    f = wrap(be.flip(be.permute(t._data, (2, 0, 1)), (1,)), d, be)
    assert f.strides == (i, -12 * i, 4 * i)
    assert rt.offset(f) == 12
    assert rt.stride(f, 1) == -12 * i


def test_zero_d_tensors():
    base = np.arange(6.0).reshape(2, 3)
    t = rt.from_numpy(base)
    be = t._backend
    s = wrap(be.view_index(t._data, (1, 2)), rt.float64, be)
    assert s.shape == () and s.strides == () and rt.offset(s) == 5 and rt.size(s) == 1
    assert rt.is_c_contiguous(s) and str(s) == "5" and rt.to_array(s) == [5.0]
    be.assign(s._data, be.full((), 9.0, rt.float64))
    assert base[1, 2] == 9.0
    z = rt.scalar(rt.int32, 4)
    assert z.shape == () and z.ndim == 0 and z.strides == () and rt.offset(z) == 0


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2), (2, 0, 0)])
def test_empty_tensors(shape):
    t = rt.zeros(rt.float32, shape)
    a = np.zeros(shape, np.float32)
    assert t.shape == shape and t.size == 0 and t.nbytes == 0 and t.strides == a.strides
    assert rt.to_array(t) == [] and rt.is_c_contiguous(t)
    be = t._backend
    if len(shape) > 1:
        p = wrap(be.permute(t._data, tuple(reversed(range(len(shape))))), rt.float32, be)
        assert p.shape == tuple(reversed(shape)) and p.size == 0


def test_broadcast_views_have_zero_strides():
    base = np.arange(3.0)
    t = rt.from_numpy(base)
    be = t._backend
    e = wrap(be.expand(be.reshape(t._data, (1, 3)), (4, 3)), rt.float64, be)
    assert e.strides == (0, 8) and rt.offset(e) == 0 and not rt.is_c_contiguous(e)
    base[1] = 10.0
    assert rt.to_array(e) == [0.0, 10.0, 2.0] * 4


@given(base_arrays(), st.data())
def test_getitem_matches_numpy_when_available(db, data):
    d, base = db
    if not base.ndim:
        return  # a 0-d base has no axis to slice; its indexing is tested in test_indexing.py
    key = []
    for s in base.shape:
        key.append(slice(data.draw(st.integers(-s - 1, s + 1)), data.draw(st.integers(-s - 1, s + 1)),
                         data.draw(st.sampled_from([1, 2, -1, -3]))))
    t = rt.from_numpy(base)[tuple(key)]
    same_model(t, base[tuple(key)], base)


def test_empty_negative_step_slice():
    """slice.indices gives start -1 for these: they must stay empty, not become a reversal."""
    a = np.arange(3.0)
    assert rt.from_numpy(a)[-5:-5:-1].shape == (0,)
    assert rt.from_numpy(a.reshape(1, 3))[:, -5:-5:-1].shape == (1, 0)


@given(st.sampled_from(list(DTYPES)), st.integers(1, 30), st.data())
def test_as_strided_matches_numpy(d, n, data):
    """Any in-bounds (shape, element strides, element offset) request is the NumPy view of the buffer."""
    base = (np.arange(n) % 7).astype(DTYPES[d])
    ndim = data.draw(st.integers(0, 3))
    shape = tuple(data.draw(st.integers(1, 4)) for _ in range(ndim))
    strides = tuple(data.draw(st.integers(-3, 3)) for _ in range(ndim))
    lo = sum(min(0, s * (k - 1)) for s, k in zip(strides, shape))
    hi = sum(max(0, s * (k - 1)) for s, k in zip(strides, shape))
    if hi - lo >= n:
        return
    off = data.draw(st.integers(-lo, n - 1 - hi))
    t = rt.from_numpy(base)
    be = t._backend
    v = wrap(be.as_strided(t._data, shape, strides, off), d, be)
    isz = base.itemsize
    want = None if d in (rt.bfloat16, rt.int4, rt.float8_e5m2) else \
        np.lib.stride_tricks.as_strided(base[off:], shape=shape, strides=tuple(s * isz for s in strides))
    assert v.shape == shape and rt.offset(v) == off
    assert v.strides == tuple(s * isz for s in strides)
    idx = np.indices(shape).reshape(ndim, -1).T if ndim else np.zeros((1, 0), int)
    flat = [off + int(np.dot(i, strides)) for i in idx]
    np.testing.assert_array_equal(values(v).ravel(), base[flat].astype(values(v).dtype))
    if want is not None:
        np.testing.assert_array_equal(values(v), want.astype(values(v).dtype))
