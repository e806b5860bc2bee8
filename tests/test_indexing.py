"""Indexing: t[key], t[key] = v, get/slice/set/set_slice/item/set_item, take/put families,
compress/extract/nonzero/argwhere: the seed's examples, NumPy as the oracle, errors."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt

from helpers import NP, as_np, np_values, shares

ALL = list(rt._dtypes.all_dtypes)
INT_DTYPES = [rt.int8, rt.uint8, rt.int16, rt.uint16, rt.int32, rt.uint32, rt.int64, rt.uint64, rt.int4, rt.uint4]


# ---------------------------------------------------------------------------
# seed examples (exact printed output)
# ---------------------------------------------------------------------------
def test_seed_get():
    x = rt.create(rt.int32, [2, 2, 2], [0, 1, 2, 3, 4, 5, 6, 7])
    r = rt.get(x, [1, 1, 1])
    assert str(r) == "7" and r.shape == ()
    x = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    assert str(rt.get(x, [1])) == "[4, 5, 6]"


def test_seed_slice():
    x = rt.create(rt.int32, [2, 4], [1, 2, 3, 4, 5, 6, 7, 8])
    assert str(rt.slice(x, [rt.I(1)])) == "[5, 6, 7, 8]"
    x = rt.create(rt.int32, [5], [0, 1, 2, 3, 4])
    assert str(rt.slice(x, [rt.R(1, 3)])) == "[1, 2]"
    x = rt.create(rt.int32, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert str(rt.slice(x, [rt.R(0, 2), rt.L([0, 2])])) == "[[1, 3],\n [4, 6]]"
    assert str(rt.slice(x, [rt.A, rt.N])) == "[[[1, 2, 3]],\n [[4, 5, 6]],\n [[7, 8, 9]]]"


def test_seed_take():
    x = rt.create(rt.int32, [5], [0, 1, 2, 3, 4])
    assert str(rt.take(x, rt.create(rt.int32, [3], [1, 3, 0]))) == "[1, 3, 0]"
    x3 = rt.create(rt.int32, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert str(rt.take(x3, rt.create(rt.int32, [3], [0, 2, 1]), axis=1)) == "[[1, 3, 2],\n [4, 6, 5],\n [7, 9, 8]]"
    assert str(rt.take(x, rt.create(rt.int32, [2], [-1, 5]), mode="clip")) == "[0, 4]"


def _argmax0(x):
    return rt.argmax(x, axis=0)


def test_seed_take_along_axis():
    x = rt.create(rt.float32, [2, 3], [4., 1., 2., 3., 5., 6.])
    idx = rt.create(rt.int32, [2, 1], [1, 0])
    assert str(rt.take_along_axis(x, idx, axis=1)) == "[[1],\n [3]]"
    x = rt.create(rt.float32, [3, 3], [1., 2., 3., 4., 5., 6., 7., 8., 9.])
    indices = rt.expand_dims(_argmax0(x), [0])
    assert indices.shape == (1, 3)
    assert str(rt.take_along_axis(x, indices, axis=0)) == "[[7, 8, 9]]"


def test_seed_put():
    x = rt.zeros(rt.int32, [5])
    rt.put(x, rt.create(rt.int32, [3], [1, 3, 0]), rt.create(rt.int32, [3], [10, 20, 30]))
    assert str(x) == "[30, 10, 0, 20, 0]"
    x = rt.create(rt.int32, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9])
    rt.put(x, rt.create(rt.int32, [3, 1], [0, 2, 1]), rt.create(rt.int32, [3, 1], [10, 20, 30]), axis=1)
    assert str(x) == "[[10, 2, 3],\n [4, 5, 20],\n [7, 30, 9]]"
    y = rt.zeros(rt.int32, [5])
    rt.put(y, rt.create(rt.int32, [2], [-1, 5]), rt.create(rt.int32, [2], [99, 99]), mode="clip")
    assert str(y) == "[99, 0, 0, 0, 99]"


def test_seed_index_put():
    t = rt.zeros(rt.float32, [3, 3])
    rows = rt.create(rt.int32, [4], [0, 2, 1, 2])
    cols = rt.create(rt.int32, [4], [1, 0, 2, 2])
    rt.index_put(t, [rows, cols], rt.arange_f(rt.float32, 0., 4., 1.))
    assert str(t) == "[[0, 0, 0],\n [0, 0, 2],\n [1, 0, 3]]"


def test_seed_put_along_axis():
    x = rt.zeros(rt.float32, [2, 3])
    idx = rt.create(rt.int32, [2, 1], [1, 0])
    rt.put_along_axis(x, idx, rt.create(rt.float32, [2, 1], [10., 20.]), axis=1)
    assert str(x) == "[[0, 10, 0],\n [20, 0, 0]]"
    x = rt.create(rt.float32, [3, 3], [1., 2., 3., 4., 5., 6., 7., 8., 9.])
    indices = rt.expand_dims(_argmax0(x), [0])
    rt.put_along_axis(x, indices, rt.ones(rt.float32, [1, 3]), axis=0)
    assert str(x) == "[[1, 2, 3],\n [4, 5, 6],\n [1, 1, 1]]"


def test_seed_compress_extract():
    x = rt.create(rt.int32, [5], [1, 2, 3, 4, 5])
    assert str(rt.compress(x, rt.create(rt.bool, [5], [True, False, True, False, True]))) == "[1, 3, 5]"
    x = rt.create(rt.int32, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert str(rt.compress(x, rt.create(rt.bool, [3], [False, True, True]), axis=0)) == "[[4, 5, 6],\n [7, 8, 9]]"
    cond = rt.greater_s(x, 5)
    assert str(rt.extract(x, cond)) == "[6, 7, 8, 9]"


def test_seed_nonzero_argwhere():
    x = rt.create(rt.int32, [3, 3], [0, 1, 0, 2, 0, 3, 0, 0, 4])
    indices = rt.nonzero(x)
    assert isinstance(indices, tuple) and len(indices) == 2
    assert "(%s, %s)" % (indices[0], indices[1]) == "([0, 1, 1, 2], [1, 0, 2, 2])"
    assert indices[0].dtype is rt.int32
    assert str(rt.argwhere(x)) == "[[0, 1],\n [1, 0],\n [1, 2],\n [2, 2]]"


def test_seed_copy_set_item():
    x = rt.create(rt.float32, [3], [1., 2., 3.])
    y = rt.copy(x)
    rt.set_item(y, [0], 999.)
    assert "(%s, %s)" % (x, y) == "([1, 2, 3], [999, 2, 3])"


# ---------------------------------------------------------------------------
# set / item / set_item / set_slice
# ---------------------------------------------------------------------------
def test_set_item_item():
    x = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    rt.set(x, [0], rt.create(rt.int32, [3], [7, 8, 9]))
    rt.set(x, [1, 2], 0)
    assert str(x) == "[[7, 8, 9],\n [4, 5, 0]]"
    assert rt.item(x, [0, 2]) == 9 and type(rt.item(x, [0, 2])) is int
    assert rt.item(x, [-1, -2]) == 5
    assert type(rt.item(rt.scalar(rt.float16, 1.5))) is float
    assert rt.item(rt.scalar(rt.bool, True)) is True
    assert rt.item(rt.scalar(rt.complex64, 1 + 2j)) == 1 + 2j
    assert rt.ones(rt.bfloat16, [1, 1]).item() == 1.0
    rt.set_item(x, [1, 0], -1)
    assert rt.to_array(x) == [7, 8, 9, -1, 5, 0]
    with pytest.raises(ValueError, match="indices"):
        rt.item(x, [0])
    with pytest.raises(IndexError):
        rt.item(x, [2, 0])
    with pytest.raises(ValueError, match="indices"):
        rt.set_item(x, [0], 1)
    with pytest.raises(IndexError):
        rt.set_item(x, [0, 3], 1)
    with pytest.raises(ValueError, match="out of range"):
        rt.set_item(rt.zeros(rt.uint8, [2]), [0], -1)
    with pytest.raises(IndexError):
        rt.get(x, [0, 0, 0])
    with pytest.raises(IndexError):
        rt.get(x, [5])
    with pytest.raises(IndexError):
        rt.set(x, [3], 1)
    with pytest.raises(ValueError, match="broadcast"):
        rt.set(x, [0], rt.zeros(rt.int32, [2]))
    with pytest.raises(TypeError):
        rt.get(x, [0.5])


def test_get_is_a_view():
    x = rt.zeros(rt.int32, [2, 3])
    g = rt.get(x, [1])
    rt.ifill(g, 4)
    assert rt.to_array(x) == [0, 0, 0, 4, 4, 4]
    s = rt.get(x, [0, 0])
    rt.ifill(s, 9)
    assert rt.to_array(x)[0] == 9


def test_slice_specs():
    x = rt.create(rt.int32, [3, 4], list(range(12)))
    a = np.arange(12).reshape(3, 4)
    assert rt.to_array(rt.slice(x, [rt.Rs(2, None, -1), rt.Rs(None, None, 2)])) == a[2::-1, ::2].ravel().tolist()
    assert rt.to_array(rt.slice(x, [rt.I(-1)])) == a[-1].tolist()
    assert rt.slice(x, []).shape == (3, 4)
    assert rt.slice(x, [rt.N, rt.A, rt.N]).shape == (1, 3, 1, 4)
    r = rt.slice(x, [rt.L([2, 0]), rt.L([1, 3, 3])])  # outer indexing
    np.testing.assert_array_equal(np_values(r), a[np.ix_([2, 0], [1, 3, 3])])
    r = rt.slice(x, [rt.I(1), rt.M([True, False, True, True])])
    assert rt.to_array(r) == [4, 6, 7]
    r = rt.slice(x, [rt.M([True, False, True]), rt.N, rt.R(1, 3)])
    assert r.shape == (2, 1, 2) and rt.to_array(r) == [1, 2, 9, 10]
    v = rt.slice(x, [rt.R(0, 2), rt.Rs(3, None, -2)])
    assert shares(v, rt.to_numpy(x)) and rt.to_array(v) == [3, 1, 7, 5]
    with pytest.raises(IndexError):
        rt.slice(x, [rt.I(3)])
    with pytest.raises(IndexError):
        rt.slice(x, [rt.L([0, 3])])
    with pytest.raises(IndexError):
        rt.slice(x, [rt.A, rt.A, rt.A])
    with pytest.raises(IndexError):
        rt.slice(x, [rt.M([True, False])])
    with pytest.raises(TypeError):
        rt.slice(x, [rt.M([1, 0, 1])])
    with pytest.raises(TypeError):
        rt.slice(x, [1])
    with pytest.raises(ValueError, match="step 0"):
        rt.slice(x, [rt.Rs(0, 2, 0)])


def test_set_slice():
    x = rt.zeros(rt.int32, [3, 4])
    a = np.zeros((3, 4), np.int32)
    rt.set_slice(x, [rt.R(0, 2)], rt.create(rt.int32, [4], [1, 2, 3, 4]))
    a[0:2] = [1, 2, 3, 4]
    rt.set_slice(x, [rt.L([2, 0]), rt.L([3, 1])], rt.create(rt.int32, [2, 2], [5, 6, 7, 8]))
    a[np.ix_([2, 0], [3, 1])] = [[5, 6], [7, 8]]
    rt.set_slice(x, [rt.I(1), rt.M([True, False, False, True])], 9)
    a[1, [0, 3]] = 9
    rt.set_slice(x, [rt.N, rt.L([2]), rt.R(0, 2)], rt.create(rt.int32, [1, 1, 2], [-1, -2]))
    a[2, 0:2] = [-1, -2]
    np.testing.assert_array_equal(rt.to_numpy(x), a)
    with pytest.raises(ValueError, match="broadcast"):
        rt.set_slice(x, [rt.L([0, 1])], rt.zeros(rt.int32, [3]))


# ---------------------------------------------------------------------------
# __getitem__ / __setitem__ against NumPy
# ---------------------------------------------------------------------------
@st.composite
def arrays(draw, max_dims=4):
    d = draw(st.sampled_from(ALL))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=max_dims)))
    n = int(np.prod(shape))
    base = (np.arange(n) % 7).astype(NP[d]).reshape(shape)
    view = base
    t = rt.from_numpy(base)
    if shape and draw(st.booleans()):  # a negative-stride / non-contiguous view
        view = base[::-1]
        t = t[::-1]
        if view.ndim > 1:
            view = view.T
            t = rt.transpose(t)
    return d, base, view, t


@st.composite
def keys(draw, shape):
    """(our key, numpy's key): a random NumPy-style key for ``shape``, possibly invalid."""
    nd = len(shape)
    n_items = draw(st.integers(0, nd + 1))
    ours, theirs = [], []
    used_ellipsis = False
    for i in range(n_items):
        s = shape[min(i, nd - 1)] if nd else 1
        kind = draw(st.sampled_from(["int", "int", "slice", "slice", "none", "ellipsis", "list", "tensor",
                                     "mask", "bool"]))
        if kind == "int":
            k = draw(st.integers(-s - 1, s))
            ours.append(k)
            theirs.append(k)
        elif kind == "slice":
            def bound():
                return draw(st.one_of(st.none(), st.integers(-s - 2, s + 2)))
            k = slice(bound(), bound(), draw(st.sampled_from([None, 1, 2, 3, -1, -2])))
            ours.append(k)
            theirs.append(k)
        elif kind == "none":
            ours.append(None)
            theirs.append(None)
        elif kind == "ellipsis":
            if used_ellipsis and not draw(st.booleans()):
                continue
            used_ellipsis = True
            ours.append(Ellipsis)
            theirs.append(Ellipsis)
        elif kind == "list":
            k = draw(st.lists(st.integers(-s - 1, s), min_size=0, max_size=3))
            ours.append(k)
            theirs.append(np.array(k, dtype=np.intp))
        elif kind == "tensor":
            d = draw(st.sampled_from(INT_DTYPES))
            lo = max(-s - 1, -8 if d is rt.int4 else -128) if d.kind == "i" else 0
            vals = draw(st.lists(st.integers(lo, min(s, 7)), min_size=1, max_size=4))
            shp = draw(st.sampled_from([(len(vals),), (1, len(vals))]))
            k = rt.create(d, shp, vals)
            ours.append(k)
            theirs.append(np.array(vals, dtype=np.int64).reshape(shp))
        elif kind == "mask":
            m = draw(st.integers(1, 2))
            sub = tuple(shape[i:i + m]) if nd else ()
            if draw(st.integers(0, 5)) == 0:
                sub = tuple(x + 1 for x in sub)  # wrong shape
            vals = draw(st.lists(st.booleans(), min_size=int(np.prod(sub)), max_size=int(np.prod(sub))))
            k = np.array(vals, dtype=bool).reshape(sub)
            ours.append(rt.asarray(k.copy()) if draw(st.booleans()) or not k.size else k.tolist())
            theirs.append(k)
        else:
            b = draw(st.booleans())
            ours.append(b)
            theirs.append(b)
    if len(ours) == 1 and draw(st.booleans()):
        return ours[0], (theirs[0] if not isinstance(ours[0], list) else theirs[0])
    return tuple(ours), tuple(theirs)


def _is_basic(key):
    items = key if isinstance(key, tuple) else (key,)
    return all(type(k) in (int, slice) or k is None or k is Ellipsis for k in items)


@given(arrays(), st.data())
def test_getitem_matches_numpy(arr, data):
    d, base, view, t = arr
    ours, theirs = data.draw(keys(view.shape))
    try:
        expect = view[theirs]
    except IndexError:
        with pytest.raises(IndexError):
            t[ours]
        return
    expect = np.asarray(expect)
    if expect.size == 0:
        # NumPy skips bounds checks when the result is empty; we always check (docs/views.md)
        try:
            r = t[ours]
        except IndexError:
            return
    r = t[ours]
    assert r.shape == expect.shape
    assert r.dtype is d
    np.testing.assert_array_equal(np_values(r), as_np(expect))
    if _is_basic(ours) and expect.size:
        assert shares(r, base)
    if not _is_basic(ours) and expect.size:
        assert not shares(r, base)


@given(arrays(), st.data())
def test_setitem_matches_numpy(arr, data):
    d, base, view, t = arr
    ours, theirs = data.draw(keys(view.shape))
    try:
        sel_shape = np.asarray(view[theirs]).shape
    except IndexError:
        with pytest.raises(IndexError):
            t[ours] = 1
        return
    expect = base.copy()
    eview = expect[::-1].T if view is not base and view.ndim > 1 else expect[::-1] if view is not base else expect
    how = data.draw(st.sampled_from(["scalar", "full", "lastdim", "lead1"]))
    if how == "scalar":
        val_np = np.asarray(3).astype(base.dtype)
        val = 1 if d is rt.bool else 3  # bool takes True/False/0/1 only (docs/views.md)
    else:
        vshape = {"full": sel_shape, "lastdim": sel_shape[-1:], "lead1": (1,) + sel_shape}[how]
        val_np = (np.arange(int(np.prod(vshape))) % 5 + 1).astype(base.dtype).reshape(vshape)
        val = rt.from_numpy(val_np.copy())
    try:
        eview[Ellipsis if isinstance(theirs, tuple) and theirs == () else theirs] = val_np  # NumPy's 0-d quirk
    except (TypeError, ValueError):  # NumPy refuses some 0-d-bool-mask assignments that broadcast fine
        return
    if not sel_shape or 0 in sel_shape:
        try:
            t[ours] = val
        except IndexError:  # an out-of-range index selecting nothing: we still raise (docs/views.md)
            return
    t[ours] = val
    np.testing.assert_array_equal(as_np(base), as_np(expect))


def test_setitem_duplicates_last_write_wins():
    t = rt.zeros(rt.int32, [4])
    t[[1, 1, 3, 1]] = rt.create(rt.int32, [4], [5, 6, 7, 8])
    assert rt.to_array(t) == [0, 8, 0, 7]
    rt.put(t, [0, 0], [1, 2])
    assert rt.to_array(t)[0] == 2
    rt.index_put(t, [rt.create(rt.int8, [3], [2, 2, 2])], rt.create(rt.int32, [3], [1, 2, 3]))
    assert rt.to_array(t)[2] == 3


def test_getitem_basic_views_and_writes():
    base = rt.zeros(rt.float32, [3, 4])
    v = base[1:, ::-2]
    v[0] = 5.
    assert rt.to_array(base[1]) == [0, 5, 0, 5]
    base[..., 0] = rt.create(rt.float32, [3], [1., 2., 3.])
    assert rt.to_array(base[:, 0]) == [1, 2, 3]
    assert base[None, 1, ..., None].shape == (1, 4, 1)
    assert base[()].shape == (3, 4) and shares(base[()], rt.to_numpy(base))
    s = rt.scalar(rt.int32, 4)
    assert s[()].shape == () and s[None].shape == (1,) and s[...].shape == ()
    s[()] = 7
    assert rt.item(s) == 7
    assert rt.offset(rt.zeros(rt.float32, [4])[2:]) == 2
    e = rt.zeros(rt.int8, [0, 3])
    assert e[:, 1].shape == (0,) and e[[]].shape == (0, 3)
    with pytest.raises(IndexError):
        e[0]


def test_rank_32_indexing():
    t = rt.zeros(rt.int16, [2] * 32)
    assert t[(1,) * 32].shape == ()
    assert t[(0,) * 31].shape == (2,)
    t[(1,) * 32] = 3
    assert rt.item(t, [1] * 32) == 3
    assert t[..., 1].shape == (2,) * 31
    assert t[(0,) * 30 + ([1, 0], [1, 1])].shape == (2,)


def test_getitem_key_errors():
    t = rt.zeros(rt.float32, [2, 3])
    for bad in (1.5, "a", {1: 2}, object(), [1.5], [[0, 1], [2]], rt.ones(rt.float32, [2]), (0, 1.0),
                slice(0.5, 2), 1j):
        with pytest.raises(TypeError):
            t[bad]
        with pytest.raises(TypeError):
            t[bad] = 1
    for bad in (2, -3, (0, 3), (0, 0, 0), [0, 2], (Ellipsis, Ellipsis), rt.create(rt.int32, [1], [7]),
                [True, False, True], (slice(None), [True, True])):
        with pytest.raises(IndexError):
            t[bad]
        with pytest.raises(IndexError):
            t[bad] = 1
    with pytest.raises(IndexError):
        t[[0, 1], [[0, 1, 2]]]
    with pytest.raises(IndexError):
        t[[0, 1, 0], [0, 1]]
    with pytest.raises(ValueError, match="step"):
        t[::0]
    with pytest.raises(ValueError, match="broadcast"):
        t[0] = rt.zeros(rt.float32, [2])
    with pytest.raises(ValueError, match="broadcast"):
        t[[0, 1]] = rt.zeros(rt.float32, [3, 3])
    with pytest.raises(ValueError, match="out of range"):
        rt.zeros(rt.int8, [2])[0] = 1000
    with pytest.raises(TypeError, match="complex"):
        t[0, 0] = 1j
    with pytest.raises(TypeError):
        iter(rt.scalar(rt.int8, 1)).__next__()
    assert [rt.to_array(r) for r in rt.create(rt.int8, [2, 2], [1, 2, 3, 4])] == [[1, 2], [3, 4]]


# ---------------------------------------------------------------------------
# take / put families against NumPy
# ---------------------------------------------------------------------------
@given(arrays(), st.data())
def test_take_matches_numpy(arr, data):
    d, base, view, t = arr
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    axis = data.draw(st.one_of(st.none(), st.integers(0, max(view.ndim - 1, 0)))) if view.ndim else None
    n = view.size if axis is None else view.shape[axis]
    idx = data.draw(st.lists(st.integers(-n - 2, n + 2), max_size=4))
    idt = data.draw(st.sampled_from([rt.int32, rt.int64, rt.int16]))
    ind = rt.create(idt, [len(idx)], idx)
    if n == 0 and idx and mode != "raise":  # NumPy loops forever here (wrap) or reads garbage (clip)
        with pytest.raises(IndexError):
            rt.take(t, ind, axis=axis, mode=mode)
        return
    try:
        expect = np.take(view, np.array(idx, dtype=np.int64), axis=axis, mode=mode)
    except IndexError:
        with pytest.raises(IndexError):
            rt.take(t, ind, axis=axis, mode=mode)
        return
    if expect.size == 0 and mode == "raise" and any(not -n <= i < n for i in idx):
        with pytest.raises(IndexError):  # NumPy skips the check when nothing is selected
            rt.take(t, ind, axis=axis, mode=mode)
        return
    r = rt.take(t, ind, axis=axis, mode=mode)
    np.testing.assert_array_equal(np_values(r), as_np(expect))


@given(arrays(), st.data())
def test_put_matches_numpy(arr, data):
    d, base, view, t = arr
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    n = view.size
    idx = data.draw(st.lists(st.integers(-n - 2, n + 2), max_size=4))
    vals = (np.arange(len(idx)) % 5 + 1).astype(base.dtype)
    expect = view.copy()
    if n == 0 and idx:  # NumPy refuses (raise) or would loop forever (wrap)
        with pytest.raises(IndexError):
            rt.put(t, rt.create(rt.int64, [len(idx)], idx), rt.from_numpy(vals), mode=mode)
        return
    try:
        np.put(expect, np.array(idx, dtype=np.int64), vals, mode=mode)
    except (IndexError, TypeError):  # TypeError: NumPy refuses to put into an empty array
        with pytest.raises(IndexError):
            rt.put(t, rt.create(rt.int64, [len(idx)], idx), rt.from_numpy(vals), mode=mode)
        return
    rt.put(t, rt.create(rt.int64, [len(idx)], idx), rt.from_numpy(vals), mode=mode)
    np.testing.assert_array_equal(as_np(view), as_np(expect))


@given(arrays(), st.data())
def test_along_axis_matches_numpy(arr, data):
    d, base, view, t = arr
    if not view.ndim or not view.size:
        return
    axis = data.draw(st.integers(-view.ndim, view.ndim - 1))
    n = view.shape[axis]
    k = data.draw(st.integers(1, 3))
    ishape = list(view.shape)
    ishape[axis] = k
    ishape = [1 if data.draw(st.booleans()) and i != axis % view.ndim else s for i, s in enumerate(ishape)]
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(ishape)),
                                      max_size=int(np.prod(ishape))))).reshape(ishape)
    r = rt.take_along_axis(t, rt.asarray(idx.astype(np.int32)), axis=axis)
    np.testing.assert_array_equal(np_values(r), as_np(np.take_along_axis(view, idx, axis=axis)))
    vals = (np.arange(idx.size) % 5 + 1).astype(base.dtype).reshape(idx.shape)
    expect = view.copy()
    np.put_along_axis(expect, idx, vals, axis=axis)
    rt.put_along_axis(t, rt.asarray(idx), rt.from_numpy(vals), axis=axis)
    np.testing.assert_array_equal(as_np(view), as_np(expect))


@given(arrays(), st.data())
def test_index_put_matches_numpy(arr, data):
    d, base, view, t = arr
    if not view.ndim:
        return
    m = data.draw(st.integers(0, 4))
    idx = [np.array(data.draw(st.lists(st.integers(-s, s - 1), min_size=m, max_size=m)) if s else [0] * m,
                    dtype=np.int64) for s in view.shape]
    if m and not view.size:
        with pytest.raises(ValueError, match="empty axis"):
            rt.index_put(t, [rt.asarray(i) for i in idx], 1)
        return
    vals = (np.arange(m) % 5 + 1).astype(base.dtype)
    expect = view.copy()
    expect[tuple(idx)] = vals
    rt.index_put(t, [rt.asarray(i.astype(np.int16)) for i in idx], rt.from_numpy(vals))
    np.testing.assert_array_equal(as_np(view), as_np(expect))


def test_index_put_modes_and_errors():
    t = rt.zeros(rt.int32, [2, 3])
    rt.index_put(t, [[0, 5], [-1, 7]], [1, 2], mode="wrap")
    assert rt.to_array(t) == [0, 0, 1, 0, 2, 0]
    rt.index_put(t, [[9], [-9]], 7, mode="clip")
    assert rt.to_array(t)[3] == 7
    with pytest.raises(IndexError):
        rt.index_put(t, [[2], [0]], 1)
    with pytest.raises(ValueError, match="rank"):
        rt.index_put(t, [[0]], 1)
    with pytest.raises(IndexError):
        rt.index_put(t, [[0, 1], [0, 1, 2]], 1)
    with pytest.raises(ValueError, match="broadcast"):
        rt.index_put(t, [[0, 1], [0, 1]], [1, 2, 3])
    with pytest.raises(ValueError, match="empty axis"):
        rt.index_put(rt.zeros(rt.int32, [0, 3]), [[0], [0]], 1, mode="clip")
    with pytest.raises(ValueError, match="mode"):
        rt.index_put(t, [[0], [0]], 1, mode="nope")
    with pytest.raises(TypeError):
        rt.index_put(t, [[0.5], [0]], 1)


def test_take_put_errors():
    x = rt.create(rt.int32, [5], [0, 1, 2, 3, 4])
    with pytest.raises(IndexError):
        rt.take(x, rt.create(rt.int32, [1], [5]))
    with pytest.raises(IndexError):
        rt.take(x, [-6])
    with pytest.raises(IndexError):
        rt.take(x, [0], axis=1)
    with pytest.raises(TypeError):
        rt.take(x, rt.create(rt.float32, [1], [1.]))
    with pytest.raises(ValueError, match="mode"):
        rt.take(x, [0], mode="bogus")
    with pytest.raises(IndexError):
        rt.take(rt.zeros(rt.int32, [0]), [0], mode="wrap")
    assert rt.take(rt.zeros(rt.int32, [0]), rt.zeros(rt.int32, [0])).shape == (0,)
    assert rt.to_array(rt.take(x, rt.create(rt.uint64, [2], [2 ** 64 - 1, 7]), mode="wrap")) == [0, 2]
    assert rt.to_array(rt.take(x, rt.create(rt.uint64, [1], [2 ** 64 - 1]), mode="clip")) == [4]
    assert str(rt.take(rt.scalar(rt.int8, 3), [0, 0])) == "[3, 3]"
    with pytest.raises(IndexError):
        rt.put(x, [5], [1])
    with pytest.raises(ValueError, match="broadcast"):
        rt.put(x, [0, 1, 2], [1, 2])
    with pytest.raises(ValueError, match="rank"):
        rt.take_along_axis(x, rt.zeros(rt.int32, [1, 1]), axis=0)
    with pytest.raises(ValueError, match="do not match"):
        rt.take_along_axis(rt.zeros(rt.int32, [2, 3]), rt.zeros(rt.int32, [3, 1]), axis=1)
    with pytest.raises(IndexError):
        rt.take_along_axis(x, rt.create(rt.int32, [1], [9]), axis=0)
    with pytest.raises(IndexError):
        rt.put_along_axis(x, rt.create(rt.int32, [1], [9]), 1, axis=0)
    with pytest.raises(ValueError, match="broadcast"):
        rt.put_along_axis(rt.zeros(rt.int32, [2, 3]), rt.zeros(rt.int32, [2, 1]), rt.zeros(rt.int32, [3, 3]),
                          axis=1)


@given(arrays(), st.data())
def test_compress_extract_nonzero_argwhere(arr, data):
    d, base, view, t = arr
    nz = view != 0 if view.dtype.kind != "V" else as_np(view) != 0
    coords = rt.nonzero(t)
    if view.ndim == 0:
        assert coords == ()
    else:
        assert len(coords) == view.ndim
        for c, e in zip(coords, np.nonzero(as_np(view))):
            np.testing.assert_array_equal(rt.to_numpy(c), e)
    np.testing.assert_array_equal(rt.to_numpy(rt.argwhere(t)), np.argwhere(as_np(view)))
    cond = rt.asarray(np.asarray(nz).copy())
    np.testing.assert_array_equal(np_values(rt.extract(t, cond)), as_np(np.extract(nz, view)))
    if view.ndim:
        axis = data.draw(st.one_of(st.none(), st.integers(0, view.ndim - 1)))
        n = view.size if axis is None else view.shape[axis]
        c = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
        np.testing.assert_array_equal(np_values(rt.compress(t, rt.asarray(c), axis=axis)),
                                      as_np(np.compress(c, view, axis=axis)))


def test_compress_extract_errors():
    x = rt.create(rt.int32, [2, 2], [1, 2, 3, 4])
    with pytest.raises(ValueError, match="length"):
        rt.compress(x, [True, False], axis=None)
    with pytest.raises(ValueError, match="length"):
        rt.compress(x, [True], axis=0)
    with pytest.raises(TypeError):
        rt.compress(x, [1, 0], axis=0)
    with pytest.raises(ValueError, match="1-D"):
        rt.compress(x, [[True]], axis=0)
    with pytest.raises(IndexError):
        rt.compress(x, [True, False], axis=2)
    with pytest.raises(ValueError, match="shape"):
        rt.extract(x, [True, False])
    with pytest.raises(TypeError):
        rt.extract(x, x)
    assert rt.to_array(rt.extract(rt.scalar(rt.int8, 3), rt.scalar(rt.bool, True))) == [3]
    assert rt.argwhere(rt.scalar(rt.int8, 3)).shape == (1, 0)
    assert rt.argwhere(rt.zeros(rt.int8, [0, 2])).shape == (0, 2)


def test_specs_repr_and_equality():
    assert rt.I(1) == rt.I(1) and rt.I(1) != rt.I(2) and repr(rt.R(0, 2)) == "rt.R(0, 2)"
    assert repr(rt.A) == "rt.A" and repr(rt.N) == "rt.N"
    with pytest.raises(TypeError):
        rt.I(1.5)


def test_empty_ellipsis_separates_advanced_indices():
    # NumPy counts an ellipsis that covers no axis as separating advanced indices
    a = np.arange(24).reshape(3, 4, 2)
    t = rt.from_numpy(a.copy())
    for key in ((slice(None, None, -2), [[0], [1]], Ellipsis, [[0], [1]]), (slice(None), 0, Ellipsis, [1])):
        e = a[key]
        r = t[key]
        assert r.shape == e.shape
        np.testing.assert_array_equal(rt.to_numpy(r), e)
        b = a.copy()
        b[key] = np.arange(e.size).reshape(e.shape) + 100
        t2 = rt.from_numpy(a.copy())
        t2[key] = rt.asarray(np.arange(e.size).reshape(e.shape) + 100)
        np.testing.assert_array_equal(rt.to_numpy(t2), b)


def _np_slice(a, specs):
    """NumPy oracle for rt.slice: each spec applied to its own axis (outer indexing)."""
    out, ax = a, 0
    for s in specs:
        if s is rt.N:
            out = np.expand_dims(out, ax)
            ax += 1
        elif s is rt.A:
            ax += 1
        elif isinstance(s, rt.I):
            out = np.take(out, s.i, axis=ax)
        elif isinstance(s, rt.R):
            out = out[(slice(None),) * ax + (slice(s.start, s.stop),)]
            ax += 1
        elif isinstance(s, rt.Rs):
            out = out[(slice(None),) * ax + (slice(s.start, s.stop, s.step),)]
            ax += 1
        elif isinstance(s, rt.L):
            out = np.take(out, np.asarray(s.indices, dtype=np.int64), axis=ax)
            ax += 1
        else:
            out = np.compress(np.asarray(s.mask, dtype=bool), out, axis=ax)
            ax += 1
    return out


@st.composite
def specs_for(draw, shape):
    specs = []
    ax = 0
    while ax < len(shape) and draw(st.integers(0, 4)):
        n = shape[ax]
        kind = draw(st.sampled_from(["I", "R", "Rs", "A", "L", "M", "N"]))
        if kind == "N":
            specs.append(rt.N)
            continue
        if kind == "I" and n:
            specs.append(rt.I(draw(st.integers(-n, n - 1))))
        elif kind == "R":
            specs.append(rt.R(draw(st.integers(-n - 1, n + 1)), draw(st.integers(-n - 1, n + 1))))
        elif kind == "Rs":
            specs.append(rt.Rs(draw(st.one_of(st.none(), st.integers(-n - 1, n + 1))),
                               draw(st.one_of(st.none(), st.integers(-n - 1, n + 1))),
                               draw(st.sampled_from([1, 2, -1, -3]))))
        elif kind == "L" and n:
            specs.append(rt.L(draw(st.lists(st.integers(-n, n - 1), max_size=3))))
        elif kind == "M":
            specs.append(rt.M(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
        else:
            specs.append(rt.A)
        ax += 1
    return specs


@given(arrays(), st.data())
def test_slice_and_set_slice_match_numpy_outer_indexing(arr, data):
    d, base, view, t = arr
    specs = data.draw(specs_for(view.shape))
    expect = np.asarray(_np_slice(view, specs))
    r = rt.slice(t, specs)
    assert r.shape == expect.shape
    np.testing.assert_array_equal(np_values(r), as_np(expect))
    advanced = any(isinstance(s, (rt.L, rt.M)) for s in specs)
    if expect.size:
        assert shares(r, base) != advanced
    # set_slice: the oracle writes through the flat positions the specs select
    ids = np.asarray(_np_slice(np.arange(view.size).reshape(view.shape), specs))
    vals = (np.arange(ids.size) % 5 + 1).astype(base.dtype).reshape(ids.shape)
    flat = np.array(view).reshape(-1)
    flat[ids.reshape(-1)] = vals.reshape(-1)
    rt.set_slice(t, specs, rt.from_numpy(vals))
    np.testing.assert_array_equal(as_np(view), as_np(flat.reshape(view.shape)))
