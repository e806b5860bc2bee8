"""Views and conversions (reshape .. swapaxes, shrink, cast, contiguous, copy, fill, ifill, blit):
the seed's examples, NumPy as the oracle for values AND memory sharing, errors, as_strided bounds."""
import functools

import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt

from helpers import NP, np_values, shares

ALL = list(rt._dtypes.all_dtypes)


# ---------------------------------------------------------------------------
# seed examples (exact printed output)
# ---------------------------------------------------------------------------
def test_seed_reshape():
    t = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    assert str(rt.reshape(t, [6])) == "[1, 2, 3, 4, 5, 6]"
    t = rt.create(rt.int32, [6], [1, 2, 3, 4, 5, 6])
    assert str(rt.reshape(t, [3, -1])) == "[[1, 2],\n [3, 4],\n [5, 6]]"


def test_seed_broadcast_to():
    t = rt.create(rt.int32, [1, 3], [1, 2, 3])
    assert str(rt.broadcast_to(t, [3, 3])) == "[[1, 2, 3],\n [1, 2, 3],\n [1, 2, 3]]"
    assert rt.shape(rt.broadcast_to(rt.ones(rt.float32, [3, 1]), [2, 3, 4])) == (2, 3, 4)


def test_seed_broadcasted():
    a, b = rt.broadcasted(rt.ones(rt.float32, [3, 1]), rt.ones(rt.float32, [1, 5]))
    assert (rt.shape(a), rt.shape(b)) == ((3, 5), (3, 5))
    x, y = rt.ones(rt.float32, [3, 1]), rt.zeros(rt.float32, [1, 5])
    r1, r2 = rt.broadcasted(x, y, reverse=True)
    assert rt.to_array(r1)[0] == 0.0 and rt.to_array(r2)[0] == 1.0


def test_seed_expand():
    assert rt.shape(rt.expand(rt.ones(rt.float32, [1, 4, 1]), [3, -1, 5])) == (3, 4, 5)
    assert rt.shape(rt.expand(rt.ones(rt.float32, [5, 5]), [-1, -1])) == (5, 5)


def test_seed_flatten_unflatten():
    assert rt.shape(rt.flatten(rt.zeros(rt.float32, [2, 3, 4]))) == (24,)
    assert rt.shape(rt.flatten(rt.zeros(rt.float32, [2, 3, 4, 5]), start_dim=1, end_dim=2)) == (2, 12, 5)
    assert rt.shape(rt.unflatten(rt.zeros(rt.float32, [2, 12, 5]), 1, [3, 4])) == (2, 3, 4, 5)
    assert rt.shape(rt.unflatten(rt.ones(rt.float32, [6, 5]), 0, [-1, 2])) == (3, 2, 5)


def test_seed_ravel():
    x = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    assert str(rt.ravel(x)) == "[1, 2, 3, 4, 5, 6]"
    t = rt.transpose(rt.ones(rt.float32, [3, 4]))
    assert rt.is_c_contiguous(t) is False
    assert rt.is_c_contiguous(rt.ravel(t)) is True


def test_seed_squeeze_unsqueeze():
    assert rt.shape(rt.squeeze(rt.ones(rt.float32, [1, 3, 1, 4]))) == (3, 4)
    assert rt.shape(rt.squeeze(rt.ones(rt.float32, [1, 3, 1, 4]), axes=[0, 2])) == (3, 4)
    assert rt.shape(rt.squeeze(rt.ones(rt.float32, [3, 4, 1]), axes=[-1])) == (3, 4)
    assert rt.shape(rt.unsqueeze(rt.create(rt.float32, [3], [1., 2., 3.]), axes=[0, 2])) == (1, 3, 1)
    assert rt.shape(rt.unsqueeze(rt.create(rt.float32, [2], [5., 6.]), axes=[1])) == (2, 1)


def test_seed_transpose():
    x = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    assert str(rt.transpose(x)) == "[[1, 4],\n [2, 5],\n [3, 6]]"
    assert rt.shape(rt.transpose(rt.zeros(rt.float32, [2, 3, 4]), axes=[2, 0, 1])) == (4, 2, 3)
    ident = functools.partial(rt.transpose, axes=[1, 0])
    assert (ident is rt.transpose) is False


def test_seed_flip():
    x = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    assert str(rt.flip(x)) == "[[6, 5, 4],\n [3, 2, 1]]"
    assert str(rt.flip(x, axes=[1])) == "[[3, 2, 1],\n [6, 5, 4]]"


def test_seed_as_strided():
    x = rt.create(rt.float32, [8], [0., 1., 2., 3., 4., 5., 6., 7.])
    assert str(rt.as_strided(x, [3, 3], [2, 1], offset=0)) == "[[0, 1, 2],\n [2, 3, 4],\n [4, 5, 6]]"


def test_seed_shrink():
    x = rt.create(rt.int32, [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert str(rt.shrink(x, [(1, 3), (0, 2)])) == "[[4, 5],\n [7, 8]]"


def test_seed_cast_contiguous_copy_blit():
    x = rt.create(rt.float32, [3], [1.5, 2.7, 3.1])
    assert str(rt.cast(x, rt.int32)) == "[1, 2, 3]"
    assert rt.astype(x, rt.int32).dtype is rt.int32
    t = rt.transpose(rt.ones(rt.float32, [3, 4]))
    assert rt.is_c_contiguous(rt.contiguous(t)) is True
    x = rt.create(rt.float32, [3], [1., 2., 3.])
    y = rt.copy(x)
    rt.set_item(y, [0], 999.)
    assert (str(x), str(y)) == ("[1, 2, 3]", "[999, 2, 3]")
    dst = rt.zeros(rt.float32, [3, 3])
    rt.blit(rt.ones(rt.float32, [3, 3]), dst)
    assert str(dst) == "[[1, 1, 1],\n [1, 1, 1],\n [1, 1, 1]]"


def test_fill_ifill():
    t = rt.zeros(rt.int8, [2, 2])
    f = rt.fill(t, 3)
    assert str(f) == "[[3, 3],\n [3, 3]]" and str(t) == "[[0, 0],\n [0, 0]]"
    assert rt.ifill(t[:, 1], 5) is not None
    assert str(t) == "[[0, 5],\n [0, 5]]"
    with pytest.raises(ValueError, match="out of range"):
        rt.ifill(t, 300)
    with pytest.raises(TypeError, match="complex"):
        rt.fill(rt.zeros(rt.float32, [2]), 1j)
    # values are checked as rt.full checks them: no NaN -> 0, no -2.7 -> -2
    with pytest.raises(ValueError, match=r"^fill: value nan cannot be stored in int32"):
        rt.fill(rt.zeros(rt.int32, [2]), float("nan"))
    with pytest.raises(ValueError, match=r"^fill: value -2.7 is not an integer; int32"):
        rt.fill(rt.zeros(rt.int32, [2]), -2.7)
    assert rt.to_array(rt.fill(rt.zeros(rt.int32, [2]), -2.0)) == [-2, -2]


# ---------------------------------------------------------------------------
# oracle: every view op on random strided inputs of every dtype
# ---------------------------------------------------------------------------
@st.composite
def strided(draw, min_dims=0, max_dims=4):
    """(tensor, numpy view, numpy base): a random view of a random base of a random dtype."""
    d = draw(st.sampled_from(ALL))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=min_dims, max_size=max_dims)))
    n = int(np.prod(shape))
    base = (np.arange(n) % 7).astype(NP[d]).reshape(shape)
    key = tuple(slice(draw(st.integers(-s - 1, s + 1)), draw(st.integers(-s - 1, s + 1)),
                      draw(st.sampled_from([1, 2, -1, -2]))) for s in shape)
    view = base[key + (Ellipsis,)]
    t = rt.from_numpy(base)[key]
    if view.ndim > 1 and draw(st.booleans()):
        perm = tuple(draw(st.permutations(range(view.ndim))))
        view = view.transpose(perm)
        t = rt.transpose(t, perm)
    return t, view, base


def check(r, expect, base):
    assert r.shape == expect.shape
    np.testing.assert_array_equal(np_values(r), np.asarray(expect).astype(np_values(r).dtype))
    if expect.size:
        assert shares(r, base)


@given(strided(), st.data())
def test_view_ops_match_numpy(tvb, data):
    t, v, base = tvb
    nd = v.ndim
    op = data.draw(st.sampled_from(["reshape", "transpose", "flip", "squeeze", "unsqueeze", "broadcast",
                                    "moveaxis", "swapaxes", "expand_dims", "shrink", "flatten", "unflatten"]))
    if op == "reshape":
        shape = data.draw(st.sampled_from([(-1,), (v.size,), (1, -1), (-1, 1), v.shape, v.shape[::-1]]))
        try:
            e = v.reshape(shape, copy=False)
        except ValueError:
            with pytest.raises(ValueError):
                rt.reshape(t, shape)
            return
        check(rt.reshape(t, shape), e, base)
    elif op == "transpose":
        perm = tuple(data.draw(st.permutations(range(nd))))
        check(rt.transpose(t, perm), v.transpose(perm), base)
        check(rt.transpose(t), v.T, base)
    elif op == "flip":
        axes = data.draw(st.lists(st.integers(0, max(nd - 1, 0)), unique=True, max_size=nd)) if nd else []
        check(rt.flip(t, axes), np.flip(v, tuple(axes)) if axes else v, base)
        check(rt.flip(t), np.flip(v), base)
    elif op == "squeeze":
        check(rt.squeeze(t), np.squeeze(v), base)
    elif op in ("unsqueeze", "expand_dims"):
        ax = data.draw(st.integers(-nd - 1, nd))
        fn = rt.unsqueeze if op == "unsqueeze" else rt.expand_dims
        check(fn(t, [ax]), np.expand_dims(v, ax), base)
        check(rt.unsqueeze_axis(t, ax), np.expand_dims(v, ax), base)
    elif op == "broadcast":
        lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
        tgt = tuple(lead) + tuple(data.draw(st.sampled_from([s, 3])) if s == 1 else s for s in v.shape)
        r = rt.broadcast_to(t, tgt)
        check(r, np.broadcast_to(v, tgt), base)
        assert all(s == 0 for s, n, o in zip(r.strides[len(lead):], tgt[len(lead):], v.shape) if n != o)
    elif op == "moveaxis" and nd:
        a, b = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
        check(rt.moveaxis(t, a, b), np.moveaxis(v, a, b), base)
    elif op == "swapaxes" and nd:
        a, b = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
        check(rt.swapaxes(t, a, b), np.swapaxes(v, a, b), base)
    elif op == "shrink":
        ranges = []
        for s in v.shape:
            a = data.draw(st.integers(0, s))
            ranges.append((a, data.draw(st.integers(a, s))))
        check(rt.shrink(t, ranges), v[tuple(slice(a, b) for a, b in ranges)], base)
    elif op == "flatten" and nd:
        r = rt.flatten(t)
        np.testing.assert_array_equal(np_values(r), np_values(rt.contiguous(t)).reshape(-1))
        try:
            e = v.reshape(-1, copy=False)
            check(r, e, base)
        except ValueError:
            assert not v.size or not shares(r, base)
    elif op == "unflatten" and nd and v.shape[0] % 2 == 0 and v.shape[0]:
        check(rt.unflatten(t, 0, [2, -1]), v.reshape((2, v.shape[0] // 2) + v.shape[1:]), base)


@given(strided(min_dims=1))
def test_ravel_contiguous_copy_cast(tvb):
    t, v, base = tvb
    r = rt.ravel(t)
    np.testing.assert_array_equal(np_values(r), np.ascontiguousarray(np_values(t)).reshape(-1))
    assert rt.is_c_contiguous(r)
    assert (v.flags.c_contiguous and v.size > 0) == (v.size > 0 and shares(r, base))
    c = rt.contiguous(t)
    assert rt.is_c_contiguous(c) and ((c is t) == v.flags.c_contiguous)
    cp = rt.copy(t)
    assert rt.is_c_contiguous(cp) and not (v.size and shares(cp, base))
    np.testing.assert_array_equal(np_values(cp), np_values(t))
    f = rt.cast(t, rt.float64)
    np.testing.assert_array_equal(rt.to_numpy(f), np_values(t).astype(np.float64))
    assert not (v.size and shares(f, base))


@given(strided(), st.data())
def test_writes_through_views_land_in_base(tvb, data):
    t, v, base = tvb
    val = data.draw(st.sampled_from([0, 1] if t.dtype == rt.bool else [0, 1, 3]))  # bool stores only 0/1
    expect = base.copy()
    # the same view on the copy: same strides, same byte offset from the start
    off = v.__array_interface__["data"][0] - base.__array_interface__["data"][0] if v.size else 0
    twin = np.ndarray(v.shape, v.dtype, buffer=expect, offset=off, strides=v.strides) if v.size else None
    rt.ifill(t, val)
    if twin is not None:
        twin[...] = np.asarray(val).astype(np.float32).astype(v.dtype)
    np.testing.assert_array_equal(np_values(rt.from_numpy(base)), np_values(rt.from_numpy(expect)))


# ---------------------------------------------------------------------------
# as_strided: bounds against the buffer, hostile inputs
# ---------------------------------------------------------------------------
def test_as_strided_bounds_examples():
    x = rt.arange(rt.int32, 0, 10, 1)
    assert rt.to_array(rt.as_strided(x, [5], [-2], 9)) == [9, 7, 5, 3, 1]
    assert rt.to_array(rt.as_strided(x, [3], [0], 4)) == [4, 4, 4]
    assert rt.as_strided(x, [0, 7], [1000, 1], 10).shape == (0, 7)
    v = x[2:5]  # offset is from the BUFFER start, not from the view
    assert rt.to_array(rt.as_strided(v, [2], [1], 0)) == [0, 1]
    assert shares(rt.as_strided(v, [2], [1], 8), rt.to_numpy(x))
    with pytest.raises(ValueError, match="outside the buffer"):
        rt.as_strided(x, [5], [2], 2)  # reaches element 10
    with pytest.raises(ValueError, match="outside the buffer"):
        rt.as_strided(x, [5], [-2], 7)  # reaches -1
    with pytest.raises(ValueError, match="outside the buffer"):
        rt.as_strided(x, [1], [1], 10)
    with pytest.raises(ValueError, match="outside the buffer"):
        rt.as_strided(x, [0], [1], 11)
    with pytest.raises(ValueError, match="negative"):
        rt.as_strided(x, [-1], [1], 0)
    with pytest.raises(ValueError, match="strides"):
        rt.as_strided(x, [2, 2], [1], 0)
    with pytest.raises(TypeError):
        rt.as_strided(x, [2], [1.5], 0)
    with pytest.raises(TypeError):
        rt.as_strided(x, [2], 1, 0)
    with pytest.raises(ValueError, match="too large"):
        rt.as_strided(x, [2 ** 40, 2 ** 40], [0, 0], 0)
    with pytest.raises(ValueError, match="too large"):
        rt.as_strided(x, [1], [2 ** 70], 0)


def test_as_strided_case_fix():
    x = rt.arange(rt.int32, 0, 10, 1)
    assert rt.to_array(rt.as_strided(x, [5], [2], 1)) == [1, 3, 5, 7, 9]


@given(st.sampled_from(ALL), st.integers(0, 12),
       st.lists(st.tuples(st.one_of(st.integers(-3, 6), st.integers(-2 ** 65, 2 ** 65)),
                          st.one_of(st.integers(-4, 4), st.integers(-2 ** 65, 2 ** 65))), max_size=4),
       st.one_of(st.integers(-3, 14), st.integers(-2 ** 66, 2 ** 66)))
def test_as_strided_hostile(d, n, dims, off):
    base = (np.arange(n) % 5).astype(NP[d])
    x = rt.from_numpy(base)
    shape = [s for s, _ in dims]
    strides = [s for _, s in dims]
    ok = all(s >= 0 for s in shape)
    if ok:
        if any(s == 0 for s in shape):
            ok = 0 <= off <= n and int(np.prod([max(s, 1) for s in shape], dtype=object)) * base.itemsize <= 2 ** 62 \
                and all(abs(s) * base.itemsize <= 2 ** 62 for s in strides)
        else:
            lo = off + sum(min(0, (a - 1) * b) for a, b in zip(shape, strides))
            hi = off + sum(max(0, (a - 1) * b) for a, b in zip(shape, strides))
            ok = lo >= 0 and hi < n and all(abs(s) * base.itemsize <= 2 ** 62 for s in strides)
    if not ok:
        with pytest.raises(ValueError):
            rt.as_strided(x, shape, strides, off)
        return
    r = rt.as_strided(x, shape, strides, off)
    assert r.shape == tuple(shape)
    if 0 < r.size <= 1 << 16:  # (zero strides can make a huge view of a small buffer: not materialised)
        flat = np_values(x)
        idx = off + sum(np.indices(shape)[i] * strides[i] for i in range(len(shape))) if shape else \
            np.array(off)
        np.testing.assert_array_equal(np_values(r), flat[idx])
        assert shares(r, base)


def test_as_strided_on_strided_and_lowp():
    for d in (rt.bfloat16, rt.int4, rt.float8_e4m3, rt.complex64, rt.bool):
        x = rt.cast(rt.arange(rt.int32, 0, 12, 1), d)
        v = rt.flip(x)[::3]
        r = rt.as_strided(v, [2, 2], [1, 4], 2)
        np.testing.assert_array_equal(np_values(r), np_values(x)[[[2, 6], [3, 7]]])


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def test_reshape_errors():
    t = rt.zeros(rt.float32, [2, 3])
    with pytest.raises(ValueError, match=r"cannot reshape \(2, 3\) into \(4,\): sizes 6 and 4 differ"):
        rt.reshape(t, [4])
    with pytest.raises(ValueError, match="more than one -1"):
        rt.reshape(t, [-1, -1])
    with pytest.raises(ValueError, match="without copying"):
        rt.reshape(rt.transpose(t), [6])
    with pytest.raises(ValueError, match="cannot infer"):
        rt.reshape(rt.zeros(rt.float32, [0]), [0, -1])
    with pytest.raises(ValueError, match="negative"):
        rt.reshape(t, [-2, -3])
    with pytest.raises(TypeError):
        rt.reshape(t, [2.0, 3])
    with pytest.raises(ValueError, match="too large"):
        rt.reshape(rt.zeros(rt.float32, [0]), [0, 2 ** 62])
    with pytest.raises(ValueError):
        rt.reshape(t, [2 ** 64, 0])


def test_view_errors():
    t = rt.zeros(rt.float32, [2, 3])
    with pytest.raises(ValueError, match="cannot broadcast"):
        rt.broadcast_to(t, [3, 3])
    with pytest.raises(ValueError, match="fewer dimensions"):
        rt.broadcast_to(t, [3])
    with pytest.raises(ValueError):
        rt.broadcasted(t, rt.zeros(rt.float32, [4]))
    with pytest.raises(ValueError, match="new dimension"):
        rt.expand(t, [-1, 2, 3])
    with pytest.raises(IndexError):
        rt.flatten(t, start_dim=2)
    with pytest.raises(ValueError, match="comes after"):
        rt.flatten(rt.zeros(rt.float32, [2, 3, 4]), start_dim=2, end_dim=0)
    with pytest.raises(ValueError):
        rt.unflatten(t, 1, [2, 2])
    with pytest.raises(IndexError):
        rt.unflatten(t, 2, [3])
    with pytest.raises(ValueError, match="size 3"):
        rt.squeeze(t, axes=[1])
    with pytest.raises(ValueError, match="size 2"):
        rt.squeeze_axis(t, 0)
    with pytest.raises(ValueError, match="axes must be given"):
        rt.unsqueeze(t)
    with pytest.raises(IndexError):
        rt.unsqueeze(t, axes=[3])
    with pytest.raises(ValueError, match="repeat"):
        rt.unsqueeze(t, axes=[0, 0])
    with pytest.raises(ValueError, match="permutation"):
        rt.transpose(rt.zeros(rt.float32, [2, 3, 4]), axes=[0, 1])
    with pytest.raises(ValueError):
        rt.transpose(t, axes=[0, 0])
    with pytest.raises(IndexError):
        rt.transpose(t, axes=[0, 2])
    with pytest.raises(IndexError):
        rt.flip(t, axes=[2])
    with pytest.raises(IndexError):
        rt.moveaxis(t, 2, 0)
    with pytest.raises(IndexError):
        rt.swapaxes(t, 0, -3)
    with pytest.raises(ValueError, match="ranges"):
        rt.shrink(t, [(0, 1)])
    with pytest.raises(IndexError):
        rt.shrink(t, [(0, 3), (0, 1)])
    with pytest.raises(ValueError, match="start > stop"):
        rt.shrink(t, [(1, 0), (0, 1)])
    with pytest.raises(TypeError):
        rt.cast(t, "float128")
    with pytest.raises(ValueError, match="differs"):
        rt.blit(rt.ones(rt.float32, [3]), t)
    with pytest.raises(TypeError, match="complex"):
        rt.blit(rt.ones(rt.complex64, [2, 3]), t)


def test_broadcast_views_are_read_only():
    b = rt.broadcast_to(rt.ones(rt.float32, [3]), [2, 3])
    with pytest.raises(ValueError, match="read-only"):
        rt.ifill(b, 0.)
    with pytest.raises(ValueError, match="read-only"):
        b[0, 0] = 2.


def test_views_share_memory_and_writes_reach_base():
    base = rt.zeros(rt.int16, [3, 4])
    for v in (rt.reshape(base, [12]), rt.transpose(base), rt.flip(base), rt.squeeze(rt.unsqueeze(base, [0])),
              rt.moveaxis(base, 0, 1), rt.swapaxes(base, 0, 1), rt.shrink(base, [(1, 3), (0, 4)]),
              rt.unflatten(base, 1, [2, 2]), rt.expand_dims(base, [1]), rt.as_strided(base, [2], [5], 1)):
        rt.ifill(v, 1)
        assert rt.to_array(v) == [1] * v.size
        rt.ifill(base, 0)
    rt.blit(rt.ones(rt.int16, [2, 4]), rt.shrink(base, [(1, 3), (0, 4)]))
    assert rt.to_array(base) == [0] * 4 + [1] * 8


def test_zero_d_and_empty():
    s = rt.scalar(rt.int8, 5)
    assert rt.reshape(s, [1, 1]).shape == (1, 1)
    assert rt.reshape(s, []).shape == ()
    assert rt.flatten(s).shape == (1,)
    assert rt.transpose(s).shape == ()
    assert rt.flip(s).shape == ()
    assert rt.unsqueeze(s, [0]).shape == (1,)
    assert rt.broadcast_to(s, [2, 3]).shape == (2, 3)
    assert rt.ravel(s).shape == (1,)
    e = rt.zeros(rt.float32, [0, 3])
    assert rt.reshape(e, [3, 0, 1]).shape == (3, 0, 1)
    assert rt.reshape(e, [-1, 3]).shape == (0, 3)
    assert rt.flatten(e).shape == (0,)
    assert rt.transpose(e).shape == (3, 0)
    assert rt.squeeze(rt.zeros(rt.float32, [1, 0])).shape == (0,)


def test_rank_32_and_64():
    t = rt.zeros(rt.float32, [1] * 32)
    assert rt.transpose(t).shape == (1,) * 32
    assert rt.squeeze(t).shape == ()
    assert rt.reshape(rt.zeros(rt.int8, [2]), [1] * 40 + [2]).ndim == 41
    assert rt.flip(t).shape == (1,) * 32
    with pytest.raises(ValueError, match="rank"):
        rt.unsqueeze(rt.zeros(rt.int8, [1] * 64), [0])


def test_methods_attached():
    t = rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6])
    assert t.reshape([3, 2]).shape == (3, 2)
    assert t.transpose().shape == (3, 2)
    assert t.flatten().shape == (6,)
    assert t.astype(rt.float32).dtype is rt.float32
    assert t.flip().shape == (2, 3)
