"""rt.vmap: every primitive family against a Python loop over the batch, compositions with
grad/jvp/vmap, random numbers, and errors.

The oracle of every test is ``check``: ``vmap(f, in_axes, out_axes)(*args)`` must equal
``np.stack([f(*lane_i) for i in range(n)], axis=out_axis)`` leaf by leaf, with the same dtype
(exact for integers and bools, to rounding for floats).  Control flow under vmap is in
tests/test_control_flow.py.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import runetensor as rt
from runetensor import array_api as xp
from runetensor._tracers._batch import BatchBackend
from runetensor._backend import contract
from runetensor._tensor import binary_op, unary_op

DTYPES = [rt.float64, rt.float32]
NPD = {rt.float64: np.float64, rt.float32: np.float32}
B = 3  # the batch size of most tests


# ---------------------------------------------------------------------------
# the oracle
# ---------------------------------------------------------------------------
def data(shape, dtype=np.float64, seed=0, lo=-2.0, hi=2.0):
    """Fixed pseudo-random values (no ties) as a NumPy array."""
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(dtype)


def N(t):
    return rt.to_numpy(t) if isinstance(t, rt.Tensor) else np.asarray(t)


def _lane(a, i, ax):
    """Lane ``i`` of ``a`` along ``ax``: a view (as vmap's lanes are: rt.reshape of a lane taken
    along an inner axis needs rt.contiguous in both)."""
    if ax is None:
        return a
    return a[(slice(None),) * (ax % a.ndim) + (i,)]


def _axes_list(spec, n):
    if spec is None or isinstance(spec, int):
        return [spec] * n
    return list(spec)


def tol(dtype):
    return dict(rtol=1e-11, atol=1e-12) if dtype in (np.float64, np.complex128) else dict(rtol=2e-5, atol=2e-5)


def assert_same(got, want, rtol=None, atol=None):
    got = N(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind in "fc":
        t = tol(got.dtype.type)
        if rtol is not None:
            t = dict(rtol=rtol, atol=atol if atol is not None else rtol)
        np.testing.assert_allclose(got, want, **t)
    else:
        np.testing.assert_array_equal(got, want)


def check(f, *args, in_axes=0, out_axes=0, rtol=None, atol=None):
    """``vmap(f)`` against the per-lane loop, stacked along ``out_axes``; returns the result.

    ``args`` are NumPy arrays (turned into tensors of their dtype), tensors, or other values
    given to every lane (with ``in_axes`` None)."""
    ts = [rt.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    axes = _axes_list(in_axes, len(ts))
    n = next(N(t).shape[ax] for t, ax in zip(ts, axes) if ax is not None)
    got = rt.vmap(f, in_axes=in_axes, out_axes=out_axes)(*ts)
    lanes = [f(*[_lane(t, i, ax) for t, ax in zip(ts, axes)]) for i in range(n)]
    g_leaves, g_tree = rt.tree_flatten(got)
    l_leaves = [rt.tree_flatten(lane)[0] for lane in lanes]
    assert rt.tree_flatten(lanes[0])[1] == g_tree
    oa = _axes_list(out_axes, len(g_leaves))
    for k, (g, a) in enumerate(zip(g_leaves, oa)):
        want = np.stack([N(lv[k]) for lv in l_leaves], axis=a)
        assert_same(g, want, rtol, atol)
    return got


# in_axes/out_axes patterns: the batch axis of an argument of rank r (before batching)
ODD = [(0, 0), (1, 1), (-1, -1)]


def batched(shape, ax, dtype=np.float64, seed=0, n=B, **kw):
    """Data of logical shape ``shape`` with a batch of ``n`` inserted at ``ax``."""
    s = list(shape)
    s.insert(ax if ax >= 0 else len(s) + 1 + ax, n)
    return data(tuple(s), dtype, seed, **kw)


# ---------------------------------------------------------------------------
# 1. the table: every contract primitive has a BatchBackend method, and every table entry a batching rule
# ---------------------------------------------------------------------------
def test_every_primitive_has_a_batch_method():
    abstract = [p for p in contract.primitive_names() if getattr(BatchBackend, p) is getattr(contract.Backend, p)]
    assert not abstract, f"BatchBackend inherits these from the abstract Backend: {abstract}"
    for p in contract.primitive_names():
        assert inspect.isfunction(getattr(BatchBackend, p))
    from runetensor._primitives import PRIMS
    missing = [n for n, prim in PRIMS.items() if not callable(prim.batch)]
    assert not missing, f"table entries without a batching rule: {missing}"


# ---------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------
_UNARY_DOMAIN = {"sqrt": (0.1, 3.0), "log": (0.1, 3.0), "log2": (0.1, 3.0), "log10": (0.1, 3.0),
                 "log1p": (-0.5, 3.0), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9),
                 "acosh": (1.1, 3.0), "recip": (0.5, 2.0)}
_FLOAT_UNARY = [op for op in contract.UNARY_OPS if op not in ("bitwise_not",)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", _FLOAT_UNARY)
def test_unary(op, dtype):
    lo, hi = _UNARY_DOMAIN.get(op, (-2.0, 2.0))
    for ax, oax in ODD:
        x = batched((2, 4), ax, NPD[dtype], lo=lo, hi=hi)
        check(lambda t: unary_op(op, t, op), x, in_axes=ax, out_axes=oax)


def test_unary_integer_and_complex():
    check(lambda t: ~t, np.arange(12, dtype=np.int32).reshape(3, 4) - 5)
    z = data((3, 4)) + 1j * data((3, 4), seed=1)
    for op in ("abs", "conj", "real", "imag", "exp", "neg"):
        check(lambda t: unary_op(op, t, op), z, in_axes=1, out_axes=-1)


_BIN_DOMAIN = {"pow": ((0.2, 2.0), (-2.0, 2.0)), "div": ((-2, 2), (0.5, 2.0)), "floordiv": ((-2, 2), (0.5, 2.0)),
               "mod": ((-2, 2), (0.5, 2.0)), "pymod": ((-2, 2), (0.5, 2.0))}
_FLOAT_BINARY = [op for op in contract.BINARY_OPS
                 if not op.startswith("bitwise") and op not in ("lshift", "rshift")]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", _FLOAT_BINARY)
def test_binary(op, dtype):
    (xlo, xhi), (ylo, yhi) = _BIN_DOMAIN.get(op, ((-2.0, 2.0), (-2.0, 2.0)))
    d = NPD[dtype]
    if op.startswith("logical"):
        f = lambda a, b: binary_op(op, a > 0, b > 0, op)  # noqa: E731
    else:
        f = lambda a, b: binary_op(op, a, b, op)  # noqa: E731
    # both batched, at different axes, with broadcasting in the logical shapes
    x = batched((2, 4), 1, d, seed=1, lo=xlo, hi=xhi)
    y = batched((4,), -1, d, seed=2, lo=ylo, hi=yhi)
    check(f, x, y, in_axes=(1, -1), out_axes=1)
    # one side unbatched (None), either side, the batched one of lower rank
    y1 = data((2, 4), d, seed=3, lo=ylo, hi=yhi)
    x1 = batched((4,), 0, d, seed=4, lo=xlo, hi=xhi)
    check(f, x1, y1, in_axes=(0, None), out_axes=-1)
    x2 = data((2, 4), d, seed=5, lo=xlo, hi=xhi)
    y2 = batched((2, 1), -1, d, seed=6, lo=ylo, hi=yhi)
    check(f, x2, y2, in_axes=(None, -1), out_axes=0)
    # a Python scalar on one side
    s = 0.75 if op != "pow" else 2.0
    check(lambda a: binary_op(op, a, s, op) if not op.startswith("logical") else f(a, rt.asarray(s)), x, in_axes=1)


@pytest.mark.parametrize("op", ["bitwise_and", "bitwise_or", "bitwise_xor", "lshift", "rshift", "floordiv",
                                "mod", "pymod", "div", "maximum"])
def test_binary_integer(op):
    x = np.arange(24, dtype=np.int32).reshape(3, 8) - 7
    y = np.array([1, 2, 3, 1, 2, 3, 1, 2], dtype=np.int32)
    check(lambda a, b: binary_op(op, a, b, op), x, y, in_axes=(0, None), out_axes=1)
    x2 = np.abs(x) if op in ("lshift", "rshift") else x
    check(lambda a, b: binary_op(op, b, a, op), x2, y, in_axes=(0, None), out_axes=-1)


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_clip_cast(dtype):
    d = NPD[dtype]
    x = batched((2, 4), 1, d, seed=1)
    y = data((2, 4), d, seed=2)
    c = batched((4,), -1, np.float64, seed=3)
    check(lambda a, b, k: rt.where(k > 0, a, b), x, y, c, in_axes=(1, None, -1), out_axes=-1)
    check(lambda a, b, k: rt.where(k > 0, b, 1.5), x, y, c, in_axes=(1, None, -1), out_axes=1)
    check(lambda a: rt.where(a > 0, a, -a), x, in_axes=1)
    lo = batched((), 0, d, seed=4, lo=-1.0, hi=0.0)
    check(lambda a, low: rt.clip(a, low, 0.5), x, lo, in_axes=(1, 0), out_axes=-1)
    check(lambda a, h: rt.clip(a, None, h), y, batched((4,), 0, d, seed=5), in_axes=(None, 0))
    check(lambda a: rt.clip(a, -0.5, 0.5), x, in_axes=1, out_axes=1)
    for to in (rt.float32, rt.float64, rt.int32, rt.bool, rt.complex64):
        check(lambda a: rt.cast(a * 3, to), x, in_axes=1, out_axes=-1)


# ---------------------------------------------------------------------------
# reductions, scans, sorting, searchsorted
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "all", "any", "mean", "var"])
def test_reductions(name, dtype):
    fn = getattr(rt, name)
    d = NPD[dtype]
    pre = (lambda t: t > 0) if name in ("all", "any") else (lambda t: t)
    for ax, oax in ODD:
        x = batched((2, 3, 4), ax, d, seed=7)
        for axes in (None, [0], [-1], [0, 2], [1]):
            for kd in (False, True):
                check(lambda t: fn(pre(t), axes=axes, keepdims=kd), x, in_axes=ax,
                      out_axes=oax if (axes is not None or kd) else 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_arg_reductions_and_scans(dtype):
    d = NPD[dtype]
    for ax, oax in ODD:
        x = batched((3, 4), ax, d, seed=8)
        for fn in (rt.argmax, rt.argmin):
            check(lambda t: fn(t), x, in_axes=ax)
            for axis in (0, -1):
                for kd in (False, True):
                    check(lambda t: fn(t, axis=axis, keepdims=kd), x, in_axes=ax, out_axes=oax)
        for fn in (rt.cumsum, rt.cumprod, rt.cummax, rt.cummin):
            for axis in (0, 1, -1):
                check(lambda t: fn(t, axis=axis), x, in_axes=ax, out_axes=oax)
            check(lambda t: fn(t), x, in_axes=ax, out_axes=oax)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_argsort(dtype):
    d = NPD[dtype]
    for ax, oax in ODD:
        x = batched((3, 5), ax, d, seed=9)
        for axis in (0, -1):
            for desc in (False, True):
                check(lambda t: rt.sort(t, descending=desc, axis=axis), x, in_axes=ax, out_axes=oax)
                check(lambda t: rt.argsort(t, descending=desc, axis=axis), x, in_axes=ax, out_axes=oax)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(dtype, side):
    d = NPD[dtype]
    srt = np.sort(data((B, 6), d, seed=10), axis=1)
    srt[:, 2] = srt[:, 3]  # a tie, so left and right differ
    vals = data((B, 2, 3), d, seed=11)
    vals[:, 0, 0] = srt[:, 3]
    f = lambda s, v: xp.searchsorted(s, v, side=side)  # noqa: E731
    check(f, srt, vals, in_axes=(0, 0))                       # batched sorted arrays and values
    check(f, srt, vals[0], in_axes=(0, None), out_axes=-1)    # batched sorted arrays only
    check(f, srt[0], vals, in_axes=(None, 0), out_axes=1)     # batched values only
    check(f, srt.T.copy(), np.moveaxis(vals, 0, -1).copy(), in_axes=(1, -1), out_axes=-1)
    nanv = vals.copy()
    nanv[1, 1, 1] = np.nan
    check(f, srt, nanv, in_axes=(0, 0))


# ---------------------------------------------------------------------------
# movement
# ---------------------------------------------------------------------------
MOVES = {
    "reshape": lambda t: rt.reshape(rt.contiguous(t), [4, 3]),
    "reshape_flat": lambda t: rt.reshape(rt.contiguous(t), [-1]),
    "reshape_of_transposed": lambda t: rt.reshape(rt.copy(rt.transpose(t)), [2, 6]),
    "transpose": lambda t: rt.transpose(t),
    "transpose_axes": lambda t: rt.transpose(rt.reshape(rt.contiguous(t), [3, 2, 2]), [2, 0, 1]),
    "T": lambda t: t.T,
    "moveaxis": lambda t: rt.moveaxis(rt.reshape(rt.contiguous(t), [3, 2, 2]), 0, -1),
    "swapaxes": lambda t: rt.swapaxes(t, 0, 1),
    "expand": lambda t: rt.expand(rt.reshape(rt.contiguous(t), [3, 1, 4]), [3, 2, 4]),
    "broadcast_to": lambda t: rt.broadcast_to(t, [2, 3, 4]),
    "broadcast_to_1": lambda t: rt.broadcast_to(t[:, :1], [3, 5]),
    "slice": lambda t: t[1:, ::2],
    "slice_neg_step": lambda t: t[::-1, -1:0:-2],
    "slice_int": lambda t: t[1, 1:3],
    "slice_ellipsis_none": lambda t: t[..., None, 2],
    "shrink": lambda t: rt.shrink(t, [(0, 2), (1, 3)]),
    "flip": lambda t: rt.flip(t),
    "flip_axis": lambda t: rt.flip(t, 1),
    "as_strided": lambda t: rt.as_strided(rt.copy(t), [2, 2], [4, 1], 1),
    "as_strided_windows": lambda t: rt.as_strided(rt.copy(t), [3, 3, 2], [4, 1, 1], 0),
    "squeeze": lambda t: rt.squeeze(rt.reshape(rt.contiguous(t), [1, 3, 1, 4])),
    "squeeze_axis": lambda t: rt.squeeze(rt.reshape(rt.contiguous(t), [3, 1, 4]), 1),
    "expand_dims": lambda t: rt.expand_dims(t, [0, 2]),
    "expand_dims_neg": lambda t: rt.expand_dims(t, -1),
    "ravel": lambda t: rt.ravel(t),
    "stack": lambda t: rt.stack([t, t * 2, t[::-1]], axis=1),
    "stack_last": lambda t: rt.stack([t, -t], axis=-1),
    "split": lambda t: tuple(rt.split(t, 2, axis=1)),
    "split_sections": lambda t: tuple(rt.split(t, [1, 2], axis=0)),
    "pad": lambda t: rt.pad(t, [(1, 0), (2, 1)], 0.5),
    "roll": lambda t: rt.roll(t, 1, 0),
    "roll_flat": lambda t: rt.roll(t, -2),
    "roll_multi": lambda t: rt.roll(t, [1, -1], [0, 1]),
    "tile": lambda t: rt.tile(t, [2, 1]),
    "tile_rank_up": lambda t: rt.tile(t, [2, 1, 2]),
    "repeat": lambda t: rt.repeat(t, 2, axis=1),
    "repeat_flat": lambda t: rt.repeat(t, 2),
    "tril": lambda t: rt.tril(t),
    "diagonal": lambda t: rt.diagonal(t),
    "contiguous": lambda t: rt.contiguous(t.T),
    "copy": lambda t: rt.copy(t[:, ::2]),
    "flatten": lambda t: rt.flatten(t),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(MOVES))
def test_movement(name, dtype):
    f = MOVES[name]
    for ax, oax in ODD:
        check(f, batched((3, 4), ax, NPD[dtype], seed=12), in_axes=ax, out_axes=oax)


@pytest.mark.parametrize("dtype", DTYPES)
def test_concatenate_stack_mixed(dtype):
    d = NPD[dtype]
    x = batched((2, 3), 1, d, seed=1)
    u = data((2, 3), d, seed=2)
    for axis in (0, 1, -1):
        check(lambda a, b: rt.concatenate([b, a, b], axis=axis), x, u, in_axes=(1, None), out_axes=-1)
        check(lambda a, b: rt.concatenate([a, b], axis=axis), x, u, in_axes=(1, None), out_axes=1)
        check(lambda a, b: rt.stack([b, a], axis=axis), x, u, in_axes=(1, None), out_axes=0)
    check(lambda a, b: rt.concatenate([a, b]), x, u, in_axes=(1, None))  # axis None: flattened
    # both batched at different axes
    y = batched((2, 3), -1, d, seed=3)
    check(lambda a, b: rt.concatenate([a, b], axis=1), x, y, in_axes=(1, -1), out_axes=1)
    # pad with a value per lane
    v = batched((), 0, d, seed=4)
    check(lambda a, c: rt.pad(a, [(1, 1), (0, 2)], c), x, v, in_axes=(1, 0), out_axes=-1)
    check(lambda a, c: rt.pad(a, [(1, 1), (0, 2)], c), u, v, in_axes=(None, 0))


def test_computed_results_are_laid_out_lane_by_lane():
    # a fresh result is a view-reshapable tensor per lane, whatever axis the input is batched on
    x = batched((3, 4), 1, seed=13)
    for f in (lambda t: rt.sin(t), lambda t: t + 1, lambda t: rt.cast(t, rt.float32), lambda t: rt.cumsum(t, axis=0),
              lambda t: rt.where(t > 0, t, 0.0), lambda t: rt.sort(t, axis=0)[0]):
        check(lambda t: rt.reshape(f(t), [-1]), x, in_axes=1, out_axes=-1)
    # a lane taken along an inner axis is a strided view, as in the loop: reshape needs contiguous
    with pytest.raises(ValueError, match="contiguous"):
        rt.vmap(lambda t: rt.reshape(t, [-1]), in_axes=1)(rt.asarray(x))
    with pytest.raises(ValueError, match="contiguous"):
        rt.reshape(rt.asarray(x)[:, 0], [-1])


def test_as_strided_stays_in_its_lane():
    x = rt.asarray(batched((3, 4), 0, seed=14))
    check(lambda t: rt.as_strided(rt.copy(t), [12], [1], 0), x)
    with pytest.raises(ValueError):  # one element past the lane: the next lane's, not this one's
        rt.vmap(lambda t: rt.as_strided(rt.copy(t), [12], [1], 1))(x)
    with pytest.raises(ValueError):
        rt.as_strided(rt.copy(x[0]), [12], [1], 1)


# ---------------------------------------------------------------------------
# indexing
# ---------------------------------------------------------------------------
GETS = {
    "int": lambda t, i, j: t[1],
    "neg_int": lambda t, i, j: t[-1, 2],
    "slices": lambda t, i, j: t[1:3, ::-2, 1:],
    "ellipsis": lambda t, i, j: t[..., 0],
    "newaxis": lambda t, i, j: t[None, :, None, 2],
    "array": lambda t, i, j: t[i],
    "array_axis1": lambda t, i, j: t[:, i],
    "array_last": lambda t, i, j: t[..., i],
    "two_arrays": lambda t, i, j: t[i, j],
    "two_arrays_adjacent_late": lambda t, i, j: t[:, i, j],
    "separated_by_slice": lambda t, i, j: t[i, :, j],
    "int_and_array_separated": lambda t, i, j: t[1, :, i],
    "int_and_array_adjacent": lambda t, i, j: t[:, 1, i],
    "array_int_slice": lambda t, i, j: t[i, 2],
    "broadcast_arrays": lambda t, i, j: t[i[:, :1], j[:1]],
    "array_then_newaxis": lambda t, i, j: t[i, None, 1:3],
    "bool_mask_unbatched": lambda t, i, j: t[rt.asarray(np.array([True, False, True, True]))],
    "take": lambda t, i, j: rt.take(t, i, axis=1),
    "take_flat": lambda t, i, j: rt.take(t, i),
    "take_along_axis": lambda t, i, j: rt.take_along_axis(t[:2, :3, 0], rt.abs(i) % 2, 1),
    "get": lambda t, i, j: rt.get(t, [1, 2]),
}
IDX_AXES = [(1, None, None), (None, 0, 0), (0, 0, 0), (-1, None, 0), (None, 0, None), (0, -1, None), (1, 1, 1)]


def _idx(seed, ax=None):
    a = np.random.default_rng(seed).integers(-4, 4, size=(2, 3)).astype(np.int64)
    if ax is None:
        return a
    return np.stack([np.roll(a, k) for k in range(B)], axis=ax)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(GETS))
def test_indexing(name, dtype):
    f = GETS[name]
    for ta, ia, ja in IDX_AXES:
        t = data((4, 5, 6), NPD[dtype], seed=15) if ta is None else batched((4, 5, 6), ta, NPD[dtype], seed=15)
        i = _idx(16, ia)
        j = _idx(17, ja)
        for oa in (0, -1):
            check(f, t, i, j, in_axes=(ta, ia, ja), out_axes=oa)


def test_int_index_per_lane():
    t = batched((4, 5), 0, seed=18)
    k = np.array([0, 3, -1], dtype=np.int64)
    check(lambda a, i: a[i], t, k)
    check(lambda a, i: a[:, i], t, k, out_axes=-1)
    check(lambda a, i: a[i, 1:], data((4, 5), seed=19), k, in_axes=(None, 0))
    check(lambda a, i: a[2, i], data((4, 5), seed=19), k, in_axes=(None, 0))
    check(lambda a, i: rt.take(a, i, axis=1), t, k)


# ---------------------------------------------------------------------------
# writes into a tensor created inside the function
# ---------------------------------------------------------------------------
def _fresh(shape=(4, 5), dtype=rt.float64):
    return rt.zeros(dtype, list(shape))


WRITES = {
    # (f(x, i, v)): x (4, 5) values, i a (2,) int index, v a (5,) row of values
    "setitem_row": lambda x, i, v: _set(_fresh(), (1,), v),
    "setitem_slice_of_x": lambda x, i, v: _set(_fresh(), (slice(1, 3),), x[:2] * 2),
    "setitem_scalar_value": lambda x, i, v: _set(_fresh(), (slice(None), 2), x[0, 0]),
    "setitem_neg_step": lambda x, i, v: _set(_fresh(), (slice(None, None, -2), slice(None)), x[:2]),
    "setitem_fancy_unbatched_idx": lambda x, i, v: _set(_fresh(), (rt.asarray(np.array([0, 3])),), x[1:3]),
    "setitem_fancy_idx": lambda x, i, v: _set(_fresh(), (i,), x[:2]),
    "setitem_fancy_idx_col": lambda x, i, v: _set(_fresh(), (slice(None), i), x[:, :2]),
    "setitem_two_idx": lambda x, i, v: _set(_fresh(), (i, i + 1), v[:2]),
    "setitem_separated": lambda x, i, v: _set(_fresh((4, 5, 3)), (i, slice(None), rt.abs(i) % 3), x[:2]),
    "setitem_then_read_view": lambda x, i, v: _view_write(v),
    "iadd_into_fresh": lambda x, i, v: _iadd(x, v),
    "set_slice": lambda x, i, v: _call(rt.set_slice, _fresh(), [rt.R(1, 3)], x[:2]),
    "put": lambda x, i, v: _call(rt.put, _fresh(), i, v[:2]),
    "put_axis": lambda x, i, v: _call(rt.put, _fresh(), rt.reshape(i, [1, 2]), x[:1, :2], axis=1),
    "index_put": lambda x, i, v: _call(rt.index_put, _fresh(), [rt.abs(i) % 4, rt.abs(i) + 1], v[:2]),
    "put_along_axis": lambda x, i, v: _call(rt.put_along_axis, _fresh((2, 5)), rt.reshape(rt.abs(i), [2, 1]),
                                            x[:2, :1], 1),
    "unbatched_values_batched_index": lambda x, i, v: _set(_fresh(), (i,), 7.0),
}


def _set(z, key, value):
    z[key] = value
    return z


def _call(fn, z, *args, **kw):
    fn(z, *args, **kw)
    return z


def _view_write(v):
    z = _fresh()
    row = z[2]          # a view taken before the (batched) write sees it
    col = z[:, 1]
    z[2] = v
    return row + 0, col + 0, z


def _iadd(x, v):
    z = _fresh()
    z += x
    z[0] += v
    return z


@pytest.mark.parametrize("name", list(WRITES))
def test_writes_into_fresh_tensors(name):
    f = WRITES[name]
    x = batched((4, 5), 1, seed=20)
    i = np.array([[0, -1], [2, 1], [3, 0]], dtype=np.int64)   # a different (2,) index per lane
    v = batched((5,), -1, seed=21)
    for axes in [(1, 0, -1), (None, 0, -1), (1, None, None), (1, None, -1), (None, None, -1), (None, 0, None)]:
        ia = i if axes[1] is not None else i[0]
        check(f, x if axes[0] is not None else N(x)[:, 0], ia, v if axes[2] is not None else v[:, 0],
              in_axes=axes, out_axes=-1)


def test_write_batched_value_into_outside_tensor_raises():
    outside = rt.zeros(rt.float64, [3])
    with pytest.raises(ValueError, match="created outside"):
        rt.vmap(lambda x: outside.__setitem__(0, x[0]))(rt.asarray(data((B, 3))))
    with pytest.raises(ValueError, match="created outside"):  # a different position per lane
        rt.vmap(lambda i: outside.__setitem__(i, 1.0))(rt.asarray(np.array([0, 1, 2])))
    # an unbatched constant into an outside tensor is an ordinary write
    rt.vmap(lambda x: outside.__setitem__(0, 5.0) or x)(rt.asarray(data((B, 3))))
    assert N(outside)[0] == 5.0


# ---------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------
MATMUL_SHAPES = [((4,), (4,)), ((4,), (4, 3)), ((2, 4), (4,)), ((2, 4), (4, 3)), ((5, 2, 4), (4, 3)),
                 ((2, 4), (5, 4, 3)), ((1, 2, 4), (5, 4, 3)), ((4,), (5, 4, 3)), ((5, 2, 4), (4,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(sa, sb, dtype):
    d = NPD[dtype]
    for aa, ba in [(0, 0), (-1, None), (None, 1), (1, -1)]:
        a = data(sa, d, seed=22) if aa is None else batched(sa, aa, d, seed=22)
        b = data(sb, d, seed=23) if ba is None else batched(sb, ba, d, seed=23)
        for oa in (0, -1):
            check(lambda x, y: x @ y, a, b, in_axes=(aa, ba), out_axes=oa)
            check(rt.matmul, a, b, in_axes=(aa, ba), out_axes=oa)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dot_tensordot_einsum(dtype):
    d = NPD[dtype]
    for aa, ba in [(0, 0), (1, None), (None, -1)]:
        a = data((3, 4), d, seed=24) if aa is None else batched((3, 4), aa, d, seed=24)
        v = data((4,), d, seed=25) if ba is None else batched((4,), ba, d, seed=25)
        m = data((4, 2), d, seed=26) if ba is None else batched((4, 2), ba, d, seed=26)
        check(rt.dot, a, v, in_axes=(aa, ba), out_axes=-1)
        check(rt.dot, a, m, in_axes=(aa, ba), out_axes=1)
        check(lambda x, y: rt.dot(x[0], y), a, v, in_axes=(aa, ba))
        check(lambda x, y: rt.tensordot(x, y, 1), a, m, in_axes=(aa, ba), out_axes=-1)
        check(lambda x, y: rt.tensordot(x, y, ([1], [0])), a, m, in_axes=(aa, ba))
        check(lambda x, y: rt.tensordot(x, y, 0), a, v, in_axes=(aa, ba), out_axes=1)
        check(lambda x, y: rt.einsum("ij,jk->ik", x, y), a, m, in_axes=(aa, ba), out_axes=-1)
        check(lambda x, y: rt.einsum("ij,j->i", x, y), a, v, in_axes=(aa, ba))
        check(lambda x, y: rt.einsum("ij,jk->", x, y), a, m, in_axes=(aa, ba))
        check(lambda x, y: rt.einsum("ij->ji", x) * 1.0, a, v, in_axes=(aa, ba))
        check(lambda x, y: rt.einsum("...j,j->...", x, y), a, v, in_axes=(aa, ba), out_axes=-1)
        check(lambda x, y: rt.einsum("ii->i", x[:, :3]), a, v, in_axes=(aa, ba))
        check(lambda x, y: rt.einsum("ij,kj->ikj", x, x), a, v, in_axes=(aa, ba), out_axes=2)


# ---------------------------------------------------------------------------
# linear algebra and FFT
# ---------------------------------------------------------------------------
def _spd(n, ax, d, seed):
    a = batched((n, n), ax, d, seed=seed)
    a = np.moveaxis(a, ax, 0)
    a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=d)
    return np.ascontiguousarray(np.moveaxis(a, 0, ax)).astype(d)


def _sign_fix(q, r):
    """QR/SVD/eigh vectors up to the sign of each column: compare |.| or products."""
    return q


LINALG = {
    "inv": lambda a, b: rt.inv(a),
    "det": lambda a, b: rt.det(a),
    "slogdet": lambda a, b: rt.slogdet(a) if hasattr(rt, "slogdet") else rt.det(a),
    "solve": lambda a, b: rt.solve(a, b),
    "solve_vector": lambda a, b: rt.solve(a, b[:, 0]),
    "cholesky": lambda a, b: rt.cholesky(a),
    "cholesky_upper": lambda a, b: rt.cholesky(a, upper=True),
    "qr": lambda a, b: rt.qr(a),
    "qr_r_of_stack": lambda a, b: rt.qr(rt.stack([a, a * 2]))[1],
    "svd": lambda a, b: rt.svd(b),
    "svdvals": lambda a, b: rt.svdvals(a) if hasattr(rt, "svdvals") else rt.det(a),
    "eigh": lambda a, b: rt.eigh(a),
    "eigvalsh": lambda a, b: rt.eigvalsh(a),
    "pinv": lambda a, b: rt.pinv(b),
    "inv_of_unbatched_plus": lambda a, b: rt.inv(a + b[:, :1] * 0.0),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(LINALG))
def test_linalg(name, dtype):
    d = NPD[dtype]
    f = LINALG[name]
    t = dict(rtol=1e-9, atol=1e-10) if d is np.float64 else dict(rtol=2e-4, atol=2e-4)
    for aa, ba in [(0, 0), (1, None), (None, -1), (-1, 1)]:
        a = _spd(4, 0, d, 27)[0] if aa is None else _spd(4, aa, d, 27)
        b = data((4, 2), d, seed=28) if ba is None else batched((4, 2), ba, d, seed=28)
        for oa in (0, -1):
            got = rt.vmap(f, in_axes=(aa, ba), out_axes=oa)(rt.asarray(a), rt.asarray(b))
            if name in ("qr", "svd", "eigh"):
                # vectors are defined up to signs: compare what is unique
                check_decomposition(name, got, a, b, aa, ba, oa, t)
            else:
                check(f, a, b, in_axes=(aa, ba), out_axes=oa, **t)


def check_decomposition(name, got, a, b, aa, ba, oa, t):
    lanes_a = [N(_lane(rt.asarray(a), i, aa)) if aa is not None else a for i in range(B)]
    lanes_b = [N(_lane(rt.asarray(b), i, ba)) if ba is not None else b for i in range(B)]
    got = [np.moveaxis(N(g), oa, 0) for g in got]
    for i in range(B):
        if name == "qr":
            q, r = got[0][i], got[1][i]
            np.testing.assert_allclose(q @ r, lanes_a[i], **t)
            np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(lanes_a[i])[1]), **t)
        elif name == "svd":
            u, s, vh = got[0][i], got[1][i], got[2][i]
            np.testing.assert_allclose((u * s) @ vh, lanes_b[i], **t)
            np.testing.assert_allclose(s, np.linalg.svd(lanes_b[i], compute_uv=False), **t)
        else:
            w, v = got[0][i], got[1][i]
            np.testing.assert_allclose(w, np.linalg.eigvalsh(lanes_a[i]), **t)
            np.testing.assert_allclose((v * w) @ v.T, lanes_a[i], **t)


def test_lstsq_under_vmap_raises():
    a = rt.asarray(data((B, 4, 2), seed=29))
    b = rt.asarray(data((B, 4, 1), seed=30))
    with pytest.raises(ValueError, match="lstsq: not supported under vmap"):
        rt.vmap(lambda x, y: rt.lstsq(x, y)[0])(a, b)
    # unbatched operands inside vmap are fine (one call, shared by every lane)
    check(lambda s, x, y: rt.lstsq(x, y)[0] * s, data((B,), seed=31), N(a)[0], N(b)[0], in_axes=(0, None, None))


FFTS = {
    "fft": lambda x: rt.fft(rt.cast(x, _cplx(x))),
    "fft_axis0_n": lambda x: rt.fft(rt.cast(x, _cplx(x)), axis=0, n=5),
    "ifft": lambda x: rt.ifft(rt.cast(x, _cplx(x)), norm="ortho"),
    "rfft": lambda x: rt.rfft(x),
    "rfft_axis0": lambda x: rt.rfft(x, axis=0, norm="forward"),
    "irfft": lambda x: rt.irfft(rt.rfft(x), n=4),
    "hfft": lambda x: rt.hfft(rt.cast(x, _cplx(x))),
    "ihfft": lambda x: rt.ihfft(x),
    "fftn": lambda x: rt.fftn(rt.cast(x, _cplx(x))),
    "fft2": lambda x: rt.fft2(rt.cast(x, _cplx(x))),
    "rfftn": lambda x: rt.rfftn(x, axes=[1, 0]),
    "irfft2": lambda x: rt.irfft2(rt.rfft2(x) if hasattr(rt, "rfft2") else rt.rfftn(x)),
    "fftshift": lambda x: rt.fftshift(x),
}


def _cplx(x):
    return rt.complex128 if x.dtype == rt.float64 else rt.complex64


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(FFTS))
def test_fft(name, dtype):
    for ax, oax in ODD:
        check(FFTS[name], batched((3, 4), ax, NPD[dtype], seed=32), in_axes=ax, out_axes=oax)


# ---------------------------------------------------------------------------
# random numbers
# ---------------------------------------------------------------------------
def test_unbatched_seed_gives_every_lane_the_same_numbers():
    xs = rt.asarray(data((B, 4), seed=33))
    for f in (lambda x: x * 0 + rt.rand(rt.float64, [4], seed=7), lambda x: x * 0 + rt.randn(rt.float32, [4], seed=7),
              lambda x: rt.cast(rt.randint(rt.int32, [4], 0, seed=7, high=100), rt.float64) + x * 0,
              lambda x: x * 0 + rt.random.uniform(rt.random.key(7), (4,), rt.float64),
              lambda x: x * 0 + rt.random.normal(rt.random.key(7), (4,), rt.float64)):
        r = N(rt.vmap(f)(xs))
        np.testing.assert_array_equal(r, np.broadcast_to(N(f(xs[0])), r.shape))
    # the numbers are those of the same call outside vmap
    np.testing.assert_array_equal(N(rt.vmap(lambda x: x * 0 + rt.rand(rt.float64, [4], seed=7))(xs))[1],
                                  N(rt.rand(rt.float64, [4], seed=7)))


def test_batched_keys_split_and_fold_in():
    keys = rt.random.split(rt.random.key(0), B)
    check(lambda k: rt.random.split(k, 2), keys)
    check(lambda k: rt.random.fold_in(k, 3), keys, out_axes=-1)
    check(lambda k, d: rt.random.fold_in(k, d), N(keys)[0], np.array([1, 2, 3], dtype=np.uint32), in_axes=(None, 0))


@pytest.mark.parametrize("sampler", ["uniform", "normal", "bernoulli"])
def test_batched_keys_give_each_lane_its_own_numbers(sampler):
    keys = rt.random.split(rt.random.key(0), B)
    f = {"uniform": lambda k: rt.random.uniform(k, (16,)), "normal": lambda k: rt.random.normal(k, (16,)),
         "bernoulli": lambda k: rt.random.bernoulli(k, 0.5, (16,))}[sampler]
    r = check(f, keys)
    assert len({tuple(row) for row in N(r).tolist()}) == B          # each lane its own numbers
    r2 = check(f, N(keys).T.copy(), in_axes=1, out_axes=-1)         # the keys' batch axis elsewhere
    np.testing.assert_array_equal(N(r2), np.moveaxis(N(r), 0, -1))


# ---------------------------------------------------------------------------
# 2. composition with grad, jvp and vmap
# ---------------------------------------------------------------------------
def _loss(w, x, y):
    h = rt.tanh(x @ w["W"] + w["b"])
    return rt.sum((h - y) ** 2) + 0.1 * rt.sum(w["W"] * w["W"])


def _params(d=rt.float64):
    return {"W": rt.asarray(data((4, 3), NPD[d], seed=40)), "b": rt.asarray(data((3,), NPD[d], seed=41))}


@pytest.mark.parametrize("dtype", DTYPES)
def test_per_example_gradients(dtype):
    w = _params(dtype)
    xs = rt.asarray(data((5, 4), NPD[dtype], seed=42))
    ys = rt.asarray(data((5, 3), NPD[dtype], seed=43))
    g = rt.vmap(rt.grad(_loss), in_axes=(None, 0, 0))(w, xs, ys)
    for i in range(5):
        gi = rt.grad(_loss)(w, xs[i], ys[i])
        for k in ("W", "b"):
            assert_same(g[k][i], N(gi[k]))
    # the batch axis elsewhere, and value_and_grad with argnums
    v, (gx, gy) = rt.vmap(rt.value_and_grad(_loss, argnums=(1, 2)), in_axes=(None, 1, 0), out_axes=-1)(
        w, rt.transpose(xs), ys)
    for i in range(5):
        vi, (gxi, gyi) = rt.value_and_grad(_loss, argnums=(1, 2))(w, xs[i], ys[i])
        assert_same(v[i], N(vi))
        assert_same(gx[:, i], N(gxi))
        assert_same(gy[:, i], N(gyi))


def test_grad_of_vmap():
    w = _params()
    xs = rt.asarray(data((5, 4), seed=44))
    ys = rt.asarray(data((5, 3), seed=45))

    def total(w):
        return rt.sum(rt.vmap(_loss, in_axes=(None, 0, 0))(w, xs, ys))

    def looped(w):
        return sum(_loss(w, xs[i], ys[i]) for i in range(5))
    g, gl = rt.grad(total)(w), rt.grad(looped)(w)
    for k in ("W", "b"):
        assert_same(g[k], N(gl[k]))
    # with respect to the mapped argument, out_axes elsewhere
    f = lambda x: rt.sum(rt.vmap(lambda r: rt.sin(r) * r, in_axes=1, out_axes=-1)(x) ** 2)  # noqa: E731
    x = rt.asarray(data((4, 5), seed=46))
    assert_same(rt.grad(f)(x), N(rt.grad(lambda x: rt.sum((rt.sin(x) * x) ** 2))(x)))
    rt.check_grads(f, (x,), order=2)


def test_vmap_of_vmap():
    x = data((3, 4, 5), seed=47)
    y = data((5, 4), seed=48)
    f = lambda a, b: rt.sum(a * b) + a[0]  # noqa: E731
    inner = rt.vmap(f, in_axes=(0, 1))                        # a (4,5) row-wise vs b's columns
    outer = rt.vmap(inner, in_axes=(0, None), out_axes=-1)    # over x's leading axis
    got = N(outer(rt.asarray(x), rt.asarray(y)))
    want = np.stack([np.stack([N(f(rt.asarray(x[i, j]), rt.asarray(y[:, j]))) for j in range(4)])
                     for i in range(3)], axis=-1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # both levels batched on the same argument, a matmul and a reduction inside
    g = rt.vmap(rt.vmap(lambda m, v: rt.sum(m @ v), in_axes=(0, None)), in_axes=(0, 0))
    got = N(g(rt.asarray(x), rt.asarray(data((3, 5), seed=49))))
    want = np.einsum("ijk,ik->ij", x, data((3, 5), seed=49))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # vmap of (vmap of grad)
    h = rt.vmap(rt.vmap(rt.grad(lambda a: rt.sum(a ** 3))))
    np.testing.assert_allclose(N(h(rt.asarray(x))), 3 * x ** 2, rtol=1e-12)


def test_jvp_and_vmap():
    x = rt.asarray(data((3, 4), seed=50))
    v = rt.asarray(data((3, 4), seed=51))
    f = lambda a: rt.sin(a) * rt.sum(a ** 2)  # noqa: E731
    # vmap of jvp: per-lane tangents
    out, tan = rt.vmap(lambda a, t: rt.jvp(f, (a,), (t,)))(x, v)
    for i in range(3):
        oi, ti = rt.jvp(f, (x[i],), (v[i],))
        assert_same(out[i], N(oi))
        assert_same(tan[i], N(ti))
    # jvp of vmap
    out, tan = rt.jvp(rt.vmap(f), (x,), (v,))
    for i in range(3):
        oi, ti = rt.jvp(f, (x[i],), (v[i],))
        assert_same(out[i], N(oi))
        assert_same(tan[i], N(ti))
    # jvp of vmap with an unbatched argument carrying the tangent
    w = rt.asarray(data((4,), seed=52))
    out, tan = rt.jvp(lambda w: rt.vmap(lambda a, b: rt.sum(a * rt.exp(b)), in_axes=(0, None))(x, w), (w,), (w,))
    for i in range(3):
        oi, ti = rt.jvp(lambda b: rt.sum(x[i] * rt.exp(b)), (w,), (w,))
        assert_same(out[i], N(oi))
        assert_same(tan[i], N(ti))


def test_jacobians_of_functions_containing_vmap():
    def f(x):
        return rt.vmap(lambda r: rt.tanh(r) * rt.sum(r))(rt.reshape(x, [2, 3]))

    def f_loop(x):
        m = rt.reshape(x, [2, 3])
        return rt.stack([rt.tanh(m[i]) * rt.sum(m[i]) for i in range(2)])
    x = rt.asarray(data((6,), seed=53))
    for jac in (rt.jacfwd, rt.jacrev):
        assert_same(jac(f)(x), N(jac(f_loop)(x)))
    g = lambda x: rt.sum(f(x) ** 2)  # noqa: E731
    assert_same(rt.hessian(g)(x), N(rt.hessian(lambda x: rt.sum(f_loop(x) ** 2))(x)), rtol=1e-10)
    rt.check_grads(g, (x,), order=2)


def test_vmap_closing_over_a_differentiated_tensor():
    xs = rt.asarray(data((5, 4), seed=54))

    def loss(w):
        per = rt.vmap(lambda x: rt.sum(rt.tanh(x * w) * w))(xs)   # w: closed over, being differentiated
        return rt.sum(per ** 2)

    def loop(w):
        return sum(rt.sum(rt.tanh(xs[i] * w) * w) ** 2 for i in range(5))
    w = rt.asarray(data((4,), seed=55))
    assert_same(rt.grad(loss)(w), N(rt.grad(loop)(w)))
    out, tan = rt.jvp(loss, (w,), (w,))
    out2, tan2 = rt.jvp(loop, (w,), (w,))
    assert_same(tan, N(tan2))
    rt.check_grads(loss, (w,), order=2)
    # a closed-over differentiated value written into a fresh tensor under vmap
    def write(w):
        def lane(x):
            z = rt.zeros(rt.float64, [4])
            z[1:] = x[1:] * w[1:]
            return rt.sum(z * z)
        return rt.sum(rt.vmap(lane)(xs))
    rt.check_grads(write, (w,))


def test_per_example_gradients_through_writes_and_indexing():
    def f(x):
        z = rt.zeros(rt.float64, [5])
        z[1:] = x[:4] ** 2
        z[rt.asarray(np.array([0]))] = rt.sum(x)
        return rt.sum(rt.sin(z) * rt.take(x, rt.asarray(np.array([4, 3, 2, 1, 0]))))
    xs = rt.asarray(data((B, 5), seed=56))
    check(rt.grad(f), xs)
    check(rt.grad(f), N(xs).T.copy(), in_axes=1, out_axes=1)


# ---------------------------------------------------------------------------
# 4. errors
# ---------------------------------------------------------------------------
def test_mismatched_batch_sizes_name_the_arguments():
    a, b = rt.zeros(rt.float64, [3, 2]), rt.zeros(rt.float64, [4, 2])
    with pytest.raises(ValueError, match=r"different batch sizes.*3.*4") as e:
        rt.vmap(lambda x, y: x + y)(a, b)
    msg = str(e.value)
    assert "argument 0" in msg and "argument 1" in msg, msg
    with pytest.raises(ValueError, match=r"argument 1.*4") as e:
        rt.vmap(lambda x, y: x + y, in_axes=(0, 1))(a, rt.zeros(rt.float64, [2, 4]))
    # pytree arguments: the leaf is named by its path
    with pytest.raises(ValueError, match=r"different batch sizes") as e:
        rt.vmap(lambda d: d["u"] + d["v"])({"u": a, "v": b})
    assert "'u'" in str(e.value) and "'v'" in str(e.value), str(e.value)
    with pytest.raises(ValueError, match=r"axis_size 5"):
        rt.vmap(lambda x: x, axis_size=5)(a)


@pytest.mark.parametrize("read", [float, bool, int, lambda t: t.item() if hasattr(t, "item") else rt.item(t),
                                  lambda t: 1 if t > 0 else 0, lambda t: rt.to_numpy(t)])
def test_reading_a_batched_value_as_python_raises(read):
    with pytest.raises(ValueError, match=r"rt\.where.*rt\.cond|rt\.cond.*rt\.where"):
        rt.vmap(lambda x: read(rt.sum(x)))(rt.asarray(data((B, 2), seed=57)))
    # an unbatched value inside vmap reads fine
    rt.vmap(lambda x, c: x * float(c), in_axes=(0, None))(rt.asarray(data((B, 2))), rt.scalar(rt.float64, 2.0))


def test_printing_a_batched_value_does_not_raise():
    seen = []
    rt.vmap(lambda x: seen.append(repr(x)) or x)(rt.asarray(data((B, 2), seed=58)))
    assert seen and "3 lanes" in seen[0], seen


def test_out_axes_and_axis_errors():
    a = rt.asarray(data((B, 2), seed=59))
    with pytest.raises(ValueError, match=r"out_axes None.*differs between lanes"):
        rt.vmap(lambda x: x * 2, out_axes=None)(a)
    # out_axes None for an unbatched output is allowed
    r = rt.vmap(lambda x: (x, rt.scalar(rt.float64, 1.0)), out_axes=(0, None))(a)
    assert r[1].shape == ()
    with pytest.raises(ValueError, match=r"in_axes 2 is out of range"):
        rt.vmap(lambda x: x, in_axes=2)(a)
    with pytest.raises(ValueError, match=r"in_axes -3 is out of range"):
        rt.vmap(lambda x: x, in_axes=-3)(a)
    with pytest.raises(ValueError, match=r"out_axes 3 is out of range"):
        rt.vmap(lambda x: x, out_axes=3)(a)
    with pytest.raises(ValueError, match=r"no argument is mapped.*axis_size"):
        rt.vmap(lambda x: x, in_axes=None)(a)
    r = rt.vmap(lambda x: x + 1, in_axes=None, axis_size=4)(a)
    assert r.shape == (4, B, 2)
    with pytest.raises(ValueError, match=r"in_axes has 1 entries for 2 values"):
        rt.vmap(lambda x, y: x, in_axes=(0,))(a, a)
    with pytest.raises(TypeError):
        rt.vmap(3)
    with pytest.raises(ValueError, match="nonzero"):
        rt.vmap(lambda x: rt.nonzero(x > 0))(a)
    with pytest.raises(ValueError, match="nonzero|boolean mask.*rt.where"):
        rt.vmap(lambda x: x[x > 0])(a)
