"""Namespace and Python manners: builtin names, iteration, NumPy-style axis= and reshape(4, 3), tolist, ``in``,
the array interface, scalar forms."""
import builtins

import numpy as np
import pytest

import runetensor as rt
from runetensor import _elementwise
from runetensor import bigarray as ba
from runetensor import harpie as hp

BUILTIN_NAMED = ["bool", "object", "slice", "set", "sum", "all", "any", "max", "min", "abs", "round", "pow",
                 "memoryview"]


# -- the namespace --------------------------------------------------------------------------------
def test_star_import_does_not_shadow_builtins():
    ns: dict = {}
    exec("from runetensor import *", ns)
    shadowed = sorted(n for n in ns if n != "__builtins__" and hasattr(builtins, n))
    assert shadowed == []
    exec("s = set([1, 2]); t = sum([1, 2]); b = bool(0); m = max(1, 2)", ns)
    assert ns["s"] == {1, 2} and ns["t"] == 3 and ns["b"] is False and ns["m"] == 2
    assert "zeros" in ns and "Tensor" in ns


@pytest.mark.parametrize("name", BUILTIN_NAMED)
def test_builtin_named_functions_stay_attributes(name):
    assert hasattr(rt, name) and getattr(rt, name) is not getattr(builtins, name)
    assert name not in rt.__all__


def test_rt_sum_and_rt_bool_still_work():
    t = rt.create(rt.int32, [3], [1, 2, 3])
    assert int(rt.sum(t)) == 6 and rt.bool.kind == "b" and int(rt.max(t)) == 3


@pytest.mark.parametrize("mod", [rt, hp, ba, ba.ext], ids=["rt", "hp", "bigarray", "bigarray.ext"])
def test_no_future_annotations_leak_and_no_builtins_in_all(mod):
    assert not hasattr(mod, "annotations")
    assert [n for n in mod.__all__ if hasattr(builtins, n)] == []


def test_harpie_and_bigarray_keep_their_builtin_named_attributes():
    assert callable(hp.range) and callable(hp.slice) and ba.int.name == "int" and ba.ext.bool.name == "bool"


# -- iteration -----------------------------------------------------------------------------------
def test_iterating_a_0d_tensor_raises_at_iter():
    t = rt.create(rt.float32, [3], [1, 2, 3])
    with pytest.raises(TypeError, match="0-d"):
        iter(t[0])
    assert not np.iterable(t[0]) and np.iterable(t)
    assert [float(x) for x in t] == [1.0, 2.0, 3.0]


def test_iteration_gives_views_of_rows():
    t = rt.create(rt.int32, [2, 2], [1, 2, 3, 4])
    rows = list(t)
    rows[1][0] = 9
    assert t.tolist() == [[1, 2], [9, 4]]


# -- NumPy's reduction keywords ------------------------------------------------------------------------
@pytest.fixture
def t():
    return rt.create(rt.float32, [2, 3], [1, 2, 3, 4, 5, 6])


def test_method_reductions_take_numpy_axis(t):
    a = np.asarray(t)
    assert t.sum(axis=0).tolist() == a.sum(axis=0).tolist()
    assert t.sum(axis=(0, 1)).tolist() == a.sum()
    assert t.max(axis=1, keepdims=True).shape == (2, 1)
    assert t.mean(axis=-1).tolist() == a.mean(axis=-1).tolist()
    assert t.sum(axes=[1]).tolist() == a.sum(axis=1).tolist()  # Rune's spelling still works
    assert t.sum([1], True).shape == (2, 1)
    assert int(t.argmax(axis=1)[0]) == 2
    with pytest.raises(TypeError, match="not both"):
        t.sum(axes=[0], axis=0)


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.prod, np.max, np.min, np.std, np.var, np.all, np.any])
def test_numpy_functions_call_the_methods(t, fn):
    a = np.asarray(t)
    for kw in ({}, {"axis": 0}, {"axis": 1, "keepdims": True}):
        got = fn(t, **kw)
        want = fn(a, **kw)
        assert isinstance(got, rt.Tensor)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_numpy_reduction_dtype_and_out(t):
    s = np.sum(rt.create(rt.int8, [3], [100, 100, 100]), dtype=np.int32)
    assert s.dtype is rt.int32 and int(s) == 300
    out = rt.zeros(rt.float32, [3])
    r = t.sum(axis=0, out=out)
    assert r is out and out.tolist() == [5.0, 7.0, 9.0]
    np.testing.assert_allclose(np.asarray(np.std(t, ddof=1)), np.std(np.asarray(t), ddof=1), rtol=1e-6)


def test_reduction_functions_keep_rune_signature(t):
    with pytest.raises(TypeError):
        rt.sum(t, axis=0)


# -- tolist, in, reshape ------------------------------------------------------------------------------
def test_tolist(t):
    assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert t[0, 1].tolist() == 2.0
    assert rt.create(rt.bool, [2], [True, False]).tolist() == [True, False]


def test_contains(t):
    assert 5 in t and 5.0 in t and 7 not in t
    assert rt.create(rt.float32, [3], [1, 2, 3]) in rt.create(rt.float32, [2, 3], [1, 2, 3, 0, 0, 0])


def test_reshape_forms():
    t = rt.arange(rt.int32, 0, 12, 1)
    assert t.reshape(4, 3).shape == (4, 3)
    assert t.reshape((4, 3)).shape == (4, 3)
    assert t.reshape([2, 6]).shape == (2, 6)
    assert t.reshape(-1, 2).shape == (6, 2)
    assert t.reshape(12).shape == (12,)
    assert rt.reshape(t, [3, 4]).shape == (3, 4)


# -- the array interface -------------------------------------------------------------------------------
def test_array_interface_shares_memory(t):
    ai = t.__array_interface__
    assert ai["shape"] == (2, 3) and ai["typestr"] == "<f4" and ai["strides"] == (12, 4)
    a = np.asarray(t)
    a[0, 0] = 9
    assert float(t[0, 0]) == 9.0
    v = t.T
    assert v.__array_interface__["strides"] == (4, 12)
    np.testing.assert_array_equal(np.asarray(v), np.asarray(t).T)


@pytest.mark.parametrize("d", [rt.bfloat16, rt.float8_e4m3, rt.int4])
def test_no_array_interface_for_dtypes_numpy_lacks(d):
    t = rt.ones(d, [2])
    assert not hasattr(t, "__array_interface__")
    assert np.asarray(t).shape == (2,)  # NumPy falls back to __array__


def test_pillow_fromarray():
    Image = pytest.importorskip("PIL.Image")
    g = rt.create(rt.uint8, [2, 3], [0, 50, 100, 150, 200, 250])
    im = Image.fromarray(g)
    assert im.mode == "L" and im.size == (3, 2)
    np.testing.assert_array_equal(np.asarray(im), np.asarray(g))
    im = Image.fromarray(g.T)  # a non-contiguous view
    np.testing.assert_array_equal(np.asarray(im), np.asarray(g).T)
    rgb = rt.reshape(rt.arange(rt.uint8, 0, 24, 1), [2, 4, 3])
    im = Image.fromarray(rgb)
    assert im.mode == "RGB" and im.size == (4, 2)
    np.testing.assert_array_equal(np.asarray(im), np.asarray(rgb))
    f = Image.fromarray(rt.create(rt.float32, [1, 2], [0.5, 1.5]))
    assert f.mode == "F"


# -- the scalar forms' argument order ----------------------------------------------------------------
SCALAR_FORMS = [n for n in _elementwise.__all__ if n.endswith("_s") and not n.startswith("i")]


@pytest.mark.parametrize("name", SCALAR_FORMS)
def test_scalar_forms_reject_swapped_arguments(name):
    fn = getattr(rt, name)
    t = rt.create(rt.float32, [2], [1.0, 2.0])
    fn(t, 2.0)  # the documented order
    with pytest.raises(TypeError, match="tensor comes first"):
        fn(2.0, t)


def test_reversed_scalar_forms_compute_the_reversed_operation():
    t = rt.create(rt.float32, [2], [1.0, 4.0])
    assert rt.rsub_s(t, 10.0).tolist() == [9.0, 6.0]
    assert rt.rdiv_s(t, 8.0).tolist() == [8.0, 2.0]
    assert rt.sub_s(t, 10.0).tolist() == [-9.0, -6.0]
