"""Combining and splitting (roll pad tile repeat concatenate stack vstack hstack dstack
broadcast_arrays array_split split): the seed's examples, NumPy as the oracle, errors."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt

from helpers import NP, as_np, np_values, ocaml_list, shares

ALL = list(rt._dtypes.all_dtypes)


# ---------------------------------------------------------------------------
# seed examples
# ---------------------------------------------------------------------------
def test_seed_roll():
    x = rt.create(rt.int32, [5], [1, 2, 3, 4, 5])
    assert str(rt.roll(x, 2)) == "[4, 5, 1, 2, 3]"
    x = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    assert str(rt.roll(x, 1, axis=1)) == "[[3, 1, 2],\n [6, 4, 5]]"
    x = rt.create(rt.int32, [2, 2], [1, 2, 3, 4])
    assert str(rt.roll(x, -1, axis=0)) == "[[3, 4],\n [1, 2]]"


def test_seed_pad():
    x = rt.create(rt.float32, [2, 2], [1., 2., 3., 4.])
    assert rt.shape(rt.pad(x, [(1, 1), (1, 1)], 0.)) == (4, 4)


def test_seed_tile():
    x = rt.create(rt.int32, [1, 2], [1, 2])
    assert str(rt.tile(x, [2, 3])) == "[[1, 2, 1, 2, 1, 2],\n [1, 2, 1, 2, 1, 2]]"
    x = rt.create(rt.int32, [2], [1, 2])
    assert rt.shape(rt.tile(x, [2, 1, 3])) == (2, 1, 6)


def test_seed_repeat():
    x = rt.create(rt.int32, [3], [1, 2, 3])
    assert str(rt.repeat(x, 2)) == "[1, 1, 2, 2, 3, 3]"
    x = rt.create(rt.int32, [1, 2], [1, 2])
    assert str(rt.repeat(x, 3, axis=0)) == "[[1, 2],\n [1, 2],\n [1, 2]]"


def test_seed_concatenate():
    x1 = rt.create(rt.int32, [2, 2], [1, 2, 3, 4])
    x2 = rt.create(rt.int32, [1, 2], [5, 6])
    assert str(rt.concatenate([x1, x2], axis=0)) == "[[1, 2],\n [3, 4],\n [5, 6]]"
    assert str(rt.concatenate([x1, x2])) == "[1, 2, 3, 4, 5, 6]"


def test_seed_stack():
    x1 = rt.create(rt.int32, [2], [1, 2])
    x2 = rt.create(rt.int32, [2], [3, 4])
    assert str(rt.stack([x1, x2])) == "[[1, 2],\n [3, 4]]"
    assert str(rt.stack([x1, x2], axis=1)) == "[[1, 3],\n [2, 4]]"
    assert rt.shape(rt.stack([rt.ones(rt.float32, [2, 3]), rt.zeros(rt.float32, [2, 3])], axis=-1)) == (2, 3, 2)


def test_seed_vstack():
    x1 = rt.create(rt.int32, [3], [1, 2, 3])
    x2 = rt.create(rt.int32, [3], [4, 5, 6])
    assert str(rt.vstack([x1, x2])) == "[[1, 2, 3],\n [4, 5, 6]]"
    x1 = rt.create(rt.int32, [1, 2], [1, 2])
    x2 = rt.create(rt.int32, [2, 2], [3, 4, 5, 6])
    assert str(rt.vstack([x1, x2])) == "[[1, 2],\n [3, 4],\n [5, 6]]"


def test_seed_hstack():
    x1 = rt.create(rt.int32, [3], [1, 2, 3])
    x2 = rt.create(rt.int32, [3], [4, 5, 6])
    assert str(rt.hstack([x1, x2])) == "[1, 2, 3, 4, 5, 6]"
    x1 = rt.create(rt.int32, [2, 1], [1, 2])
    x2 = rt.create(rt.int32, [2, 1], [3, 4])
    assert str(rt.hstack([x1, x2])) == "[[1, 3],\n [2, 4]]"
    x1 = rt.create(rt.int32, [2, 2], [1, 2, 3, 4])
    x2 = rt.create(rt.int32, [2, 1], [5, 6])
    assert str(rt.hstack([x1, x2])) == "[[1, 2, 5],\n [3, 4, 6]]"


def test_seed_dstack():
    x1 = rt.create(rt.int32, [2], [1, 2])
    x2 = rt.create(rt.int32, [2], [3, 4])
    assert str(rt.dstack([x1, x2])) == "[[[1, 3],\n  [2, 4]]]"
    x1 = rt.create(rt.int32, [2, 2], [1, 2, 3, 4])
    x2 = rt.create(rt.int32, [2, 2], [5, 6, 7, 8])
    assert str(rt.dstack([x1, x2])) == "[[[1, 5],\n  [2, 6]],\n [[3, 7],\n  [4, 8]]]"


def test_seed_broadcast_arrays():
    r = rt.broadcast_arrays([rt.ones(rt.float32, [3, 1]), rt.ones(rt.float32, [1, 5])])
    assert isinstance(r, list) and [rt.shape(x) for x in r] == [(3, 5), (3, 5)]
    r = rt.broadcast_arrays([rt.scalar(rt.float32, 5.), rt.ones(rt.float32, [2, 3, 4])])
    assert [rt.shape(x) for x in r] == [(2, 3, 4), (2, 3, 4)]


def test_seed_array_split_split():
    x = rt.create(rt.int32, [5], [1, 2, 3, 4, 5])
    assert ocaml_list(rt.array_split(x, 3, axis=0)) == "[[1, 2]; [3, 4]; [5]]"
    x = rt.create(rt.int32, [6], [1, 2, 3, 4, 5, 6])
    assert ocaml_list(rt.array_split(x, [2, 4], axis=0)) == "[[1, 2]; [3, 4]; [5, 6]]"
    x = rt.create(rt.int32, [4, 2], [1, 2, 3, 4, 5, 6, 7, 8])
    assert ocaml_list(rt.split(x, 2, axis=0)) == "[[[1, 2],\n [3, 4]]; [[5, 6],\n [7, 8]]]"


# ---------------------------------------------------------------------------
# NumPy oracle
# ---------------------------------------------------------------------------
@st.composite
def arrays(draw, min_dims=0, max_dims=3, shape=None, d=None):
    """(tensor, numpy twin) of ``shape``: contiguous, or a flipped transposed view of a base."""
    d = d or draw(st.sampled_from(ALL))
    if shape is None:
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=min_dims, max_size=max_dims)))
    n = int(np.prod(shape))
    start = draw(st.integers(0, 3))
    if shape and draw(st.booleans()):
        base = (np.arange(n) % 7 + start).astype(NP[d]).reshape(shape[::-1])
        return rt.transpose(rt.from_numpy(base)[::-1]), base[::-1].T
    base = (np.arange(n) % 7 + start).astype(NP[d]).reshape(shape)
    return rt.from_numpy(base), base


@given(arrays(), st.data())
def test_roll_matches_numpy(tv, data):
    t, v = tv
    shift = data.draw(st.integers(-7, 7))
    np.testing.assert_array_equal(np_values(rt.roll(t, shift)), as_np(np.roll(v, shift)))
    if v.ndim:
        ax = data.draw(st.integers(-v.ndim, v.ndim - 1))
        np.testing.assert_array_equal(np_values(rt.roll(t, shift, axis=ax)), as_np(np.roll(v, shift, axis=ax)))
    if v.ndim >= 2:
        np.testing.assert_array_equal(np_values(rt.roll(t, [shift, 1], axis=[0, 1])),
                                      as_np(np.roll(v, [shift, 1], axis=[0, 1])))
    r = rt.roll(t, 0)
    assert not (v.size and shares(r, rt.to_numpy(t)))


@given(arrays(), st.data())
def test_pad_matches_numpy(tv, data):
    t, v = tv
    padding = [(data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))) for _ in range(v.ndim)]
    value = data.draw(st.sampled_from([0, 1] if t.dtype == rt.bool else [0, 1, 5]))  # bool stores 0/1 only
    e = np.pad(as_np(v), padding, constant_values=value) if v.ndim else as_np(v)
    np.testing.assert_array_equal(np_values(rt.pad(t, padding, value)), e.astype(np_values(t).dtype))


@given(arrays(), st.data())
def test_tile_repeat_match_numpy(tv, data):
    t, v = tv
    reps = data.draw(st.lists(st.integers(0, 3), max_size=4))
    np.testing.assert_array_equal(np_values(rt.tile(t, reps)), as_np(np.tile(v, reps)))
    c = data.draw(st.integers(0, 3))
    np.testing.assert_array_equal(np_values(rt.repeat(t, c)), as_np(np.repeat(v, c)))
    if v.ndim:
        ax = data.draw(st.integers(-v.ndim, v.ndim - 1))
        np.testing.assert_array_equal(np_values(rt.repeat(t, c, axis=ax)), as_np(np.repeat(v, c, axis=ax)))


@given(st.data())
def test_concatenate_stack_match_numpy(data):
    d = data.draw(st.sampled_from(ALL))
    shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
    ax = data.draw(st.integers(0, len(shape) - 1))
    k = data.draw(st.integers(1, 3))
    pieces = []
    for _ in range(k):
        s = list(shape)
        s[ax] = data.draw(st.integers(0, 3))
        pieces.append(data.draw(arrays(shape=tuple(s), d=d)))
    ts = [p[0] for p in pieces]
    vs = [as_np(p[1]) for p in pieces]
    r = rt.concatenate(ts, axis=ax)
    assert r.dtype is d and rt.is_c_contiguous(r)
    np.testing.assert_array_equal(np_values(r), np.concatenate(vs, axis=ax))
    np.testing.assert_array_equal(np_values(rt.concatenate(ts)), np.concatenate([x.ravel() for x in vs]))
    same = [data.draw(arrays(shape=shape, d=d)) for _ in range(k)]
    sax = data.draw(st.integers(-len(shape) - 1, len(shape)))
    np.testing.assert_array_equal(np_values(rt.stack([p[0] for p in same], axis=sax)),
                                  np.stack([as_np(p[1]) for p in same], axis=sax))
    for fn, nfn in ((rt.vstack, np.vstack), (rt.hstack, np.hstack), (rt.dstack, np.dstack)):
        try:
            e = nfn([as_np(p[1]) for p in same])
        except ValueError:
            with pytest.raises(ValueError):
                fn([p[0] for p in same])
            continue
        np.testing.assert_array_equal(np_values(fn([p[0] for p in same])), e)


def test_concatenate_promotes_dtypes():
    r = rt.concatenate([rt.ones(rt.int8, [2]), rt.ones(rt.float32, [1])])
    assert r.dtype is rt.float32 and rt.to_array(r) == [1., 1., 1.]
    r = rt.stack([rt.ones(rt.uint8, [2]), rt.ones(rt.int8, [2])])
    assert r.dtype is rt.int16


@given(arrays(min_dims=1), st.data())
def test_splits_match_numpy_and_are_views(tv, data):
    t, v = tv
    ax = data.draw(st.integers(-v.ndim, v.ndim - 1))
    n = data.draw(st.integers(1, 5))
    parts = rt.array_split(t, n, axis=ax)
    expect = np.array_split(v, n, axis=ax)
    assert len(parts) == len(expect)
    for p, e in zip(parts, expect):
        np.testing.assert_array_equal(np_values(p), as_np(e))
        if e.size:
            assert shares(p, rt.to_numpy(t))
    idx = data.draw(st.lists(st.integers(-6, 6), max_size=3))
    for p, e in zip(rt.array_split(t, idx, axis=ax), np.array_split(v, idx, axis=ax)):
        np.testing.assert_array_equal(np_values(p), as_np(e))
    if v.shape[ax] % n == 0:
        for p, e in zip(rt.split(t, n, axis=ax), np.split(v, n, axis=ax)):
            np.testing.assert_array_equal(np_values(p), as_np(e))
    else:
        with pytest.raises(ValueError, match="equal"):
            rt.split(t, n, axis=ax)


@given(st.lists(st.lists(st.sampled_from([0, 1, 2, 3]), max_size=3), min_size=1, max_size=3))
def test_broadcast_arrays_match_numpy(shapes):
    ts = [rt.zeros(rt.float32, s) for s in shapes]
    try:
        e = np.broadcast_arrays(*[np.zeros(s, np.float32) for s in shapes])
    except ValueError:
        with pytest.raises(ValueError):
            rt.broadcast_arrays(ts)
        return
    r = rt.broadcast_arrays(ts)
    assert [x.shape for x in r] == [x.shape for x in e]
    for x, t in zip(r, ts):
        if x.size:
            assert shares(x, rt.to_numpy(t))


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def test_combine_errors():
    a = rt.zeros(rt.float32, [2, 3])
    with pytest.raises(ValueError, match="non-empty"):
        rt.concatenate([])
    with pytest.raises(ValueError, match="axis 0"):
        rt.concatenate([a, rt.zeros(rt.float32, [2, 4])], axis=0)
    with pytest.raises(ValueError, match="rank"):
        rt.concatenate([a, rt.zeros(rt.float32, [3])], axis=0)
    with pytest.raises(IndexError):
        rt.concatenate([a, a], axis=2)
    with pytest.raises(ValueError, match="0-d"):
        rt.concatenate([rt.scalar(rt.int8, 1)], axis=0)
    assert rt.to_array(rt.concatenate([rt.scalar(rt.int8, 1), rt.scalar(rt.int8, 2)])) == [1, 2]
    with pytest.raises(TypeError):
        rt.concatenate(a)
    with pytest.raises(ValueError, match="identical"):
        rt.stack([a, rt.zeros(rt.float32, [3, 2])])
    with pytest.raises(IndexError):
        rt.stack([a, a], axis=3)
    with pytest.raises(ValueError):
        rt.stack([])
    with pytest.raises(ValueError):
        rt.vstack([rt.zeros(rt.int8, [2]), rt.zeros(rt.int8, [3])])
    with pytest.raises(ValueError):
        rt.hstack([rt.zeros(rt.int8, [2, 1]), rt.zeros(rt.int8, [3, 1])])
    with pytest.raises(ValueError):
        rt.dstack([rt.zeros(rt.int8, [2, 2]), rt.zeros(rt.int8, [3, 2])])
    with pytest.raises(ValueError):
        rt.broadcast_arrays([])
    with pytest.raises(ValueError, match="broadcast"):
        rt.broadcast_arrays([a, rt.zeros(rt.float32, [4])])
    with pytest.raises(ValueError, match="positive"):
        rt.array_split(a, 0)
    with pytest.raises(ValueError, match="pieces"):
        rt.array_split(a, 10 ** 20)
    assert len(rt.array_split(a, 5)) == 5
    with pytest.raises(IndexError):
        rt.array_split(a, 2, axis=2)
    with pytest.raises(ValueError, match="equal"):
        rt.split(a, 2, axis=1)
    with pytest.raises(TypeError):
        rt.split(a, 1.5)
    with pytest.raises(IndexError):
        rt.roll(a, 1, axis=2)
    with pytest.raises(ValueError, match="shifts"):
        rt.roll(a, [1, 2, 3], axis=[0, 1])
    with pytest.raises(ValueError, match="pairs"):
        rt.pad(a, [(1, 1)], 0.)
    with pytest.raises(ValueError, match="negative"):
        rt.pad(a, [(1, 1), (-1, 0)], 0.)
    with pytest.raises(ValueError, match="out of range"):
        rt.pad(rt.zeros(rt.uint8, [2]), [(1, 1)], 256)
    with pytest.raises(TypeError):
        rt.pad(a, [(1, 1), 2], 0.)
    with pytest.raises(ValueError, match="negative"):
        rt.tile(a, [2, -1])
    with pytest.raises(ValueError, match=">= 0"):
        rt.repeat(a, -1)
    with pytest.raises(IndexError):
        rt.repeat(a, 2, axis=-3)
    with pytest.raises(ValueError, match="too large"):
        rt.tile(a, [2 ** 40, 2 ** 40])


def test_zero_d_and_empty():
    s = rt.scalar(rt.int16, 3)
    assert str(rt.roll(s, 5)) == "3"
    assert str(rt.pad(s, [], 0)) == "3"
    assert rt.tile(s, [2, 2]).shape == (2, 2)
    assert str(rt.repeat(s, 3)) == "[3, 3, 3]"
    assert rt.stack([s, s]).shape == (2,)
    assert rt.vstack([s, s]).shape == (2, 1) and rt.hstack([s, s]).shape == (2,)
    assert rt.dstack([s, s]).shape == (1, 1, 2)
    e = rt.zeros(rt.float32, [0, 2])
    assert rt.roll(e, 1, axis=0).shape == (0, 2)
    assert rt.pad(e, [(1, 0), (0, 0)], 2.).shape == (1, 2)
    assert rt.repeat(e, 2, axis=1).shape == (0, 4)
    assert [p.shape for p in rt.array_split(e, 3)] == [(0, 2)] * 3
