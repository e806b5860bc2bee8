"""rt.random: keys (key/split/fold_in) and the key-taking samplers (docs/random_keys.md)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import runetensor as rt
from runetensor import random as R
from runetensor._backend.numpy_backend import philox4x32

stats = pytest.importorskip("scipy.stats")

K0 = R.key(0)


def arr(t):
    return np.asarray(rt.to_numpy(t))


def words(k):
    return tuple(int(v) for v in arr(k))


# ---------------------------------------------------------------------------------------------
# keys and the derivation scheme
# ---------------------------------------------------------------------------------------------

def test_key_words():
    assert words(R.key(0)) == (0, 0)
    assert words(R.key(42)) == (42, 0)
    assert words(R.key(2**32 + 7)) == (7, 1)
    assert words(R.key(-1)) == (2**32 - 1, 2**32 - 1)
    assert words(R.key(2**64 - 1)) == words(R.key(-1))
    assert R.key(3).dtype is rt.uint32 and R.key(3).shape == (2,)
    assert R.key_data(R.key(2**40 + 3)) == (3, 2**8)


def _ref_block(k, c):
    return philox4x32(np.array([c], np.uint32), k)[0]


@pytest.mark.parametrize("seed", [0, 1, 2**32 + 5, 2**64 - 1, 0x123456789ABCDEF])
def test_split_is_domain_1_of_the_philox_stream(seed):
    k = R.key(seed)
    kw = words(k)
    s = R.split(k, 5)
    assert s.shape == (5, 2) and s.dtype is rt.uint32
    ref = np.concatenate([_ref_block(kw, (b, 0, 0, 1)) for b in range(3)])[:10].reshape(5, 2)
    np.testing.assert_array_equal(arr(s), ref)


@pytest.mark.parametrize("data", [0, 1, 2**32 + 3, 2**64 - 1, -1, -5])
def test_fold_in_is_domain_2(data):
    k = R.key(99)
    v = data % 2**64
    ref = _ref_block(words(k), (v & 0xFFFFFFFF, v >> 32, 0, 2))[:2]
    np.testing.assert_array_equal(arr(R.fold_in(k, data)), ref)
    np.testing.assert_array_equal(arr(R.fold_in(k, rt.scalar(rt.int64, data if data < 2**63 else -1))), ref)


def test_tensor_philox_matches_backend_stream():
    be = rt.get_backend()
    for seed in (0, 7, 2**63 + 11):
        k = R.key(seed)
        got = arr(R._domain_words(k, 0, 41))
        ref = np.asarray(be.random_bits(seed, 41))
        np.testing.assert_array_equal(got, ref)


def test_split_prefix_and_distinct():
    k = R.key(5)
    a = arr(R.split(k, 2))
    b = arr(R.split(k, 7))
    np.testing.assert_array_equal(a, b[:2])
    kids = {tuple(r) for r in b}
    assert len(kids) == 7 and words(k) not in kids
    assert R.split(k, 0).shape == (0, 2)
    f = {words(R.fold_in(k, i)) for i in range(20)}
    assert len(f) == 20 and not f & kids


def test_split_children_are_independent_streams():
    k1, k2 = R.split(R.key(0))
    a = arr(R.uniform(k1, (20000,), rt.float64))
    b = arr(R.uniform(k2, (20000,), rt.float64))
    c = arr(R.uniform(R.key(0), (20000,), rt.float64))
    assert not np.array_equal(a, b)
    for x, y in ((a, b), (a, c), (b, c)):
        assert abs(np.corrcoef(x, y)[0, 1]) < 4 / math.sqrt(20000)
    # the words of the children's streams do not coincide
    assert len(set(arr(R._domain_words(k1, 0, 4000))) & set(arr(R._domain_words(k2, 0, 4000)))) < 5


def test_key_errors():
    with pytest.raises(TypeError, match="key"):
        R.key(1.5)
    with pytest.raises(ValueError, match="key"):
        R.key(2**64)
    with pytest.raises(TypeError, match="split: key"):
        R.split([0, 0])
    with pytest.raises(TypeError, match="uint32"):
        R.split(rt.create(rt.int32, [2], [0, 0]))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        R.uniform(rt.zeros(rt.uint32, [3]), (2,))
    with pytest.raises(ValueError, match="split: num"):
        R.split(K0, -1)
    with pytest.raises(TypeError, match="fold_in"):
        R.fold_in(K0, 1.5)
    with pytest.raises(TypeError, match="fold_in"):
        R.fold_in(K0, rt.scalar(rt.float32, 1.0))
    with pytest.raises(ValueError, match="fold_in"):
        R.fold_in(K0, 2**64)


# ---------------------------------------------------------------------------------------------
# uniform, normal, bernoulli
# ---------------------------------------------------------------------------------------------

def test_uniform_matches_seeded_rand_and_reproduces():
    for d in (rt.float32, rt.float64, rt.bfloat16, rt.float16):
        a = R.uniform(R.key(17), (3, 4), d)
        assert a.shape == (3, 4) and a.dtype is d
        np.testing.assert_array_equal(arr(a), arr(rt.rand(d, [3, 4], seed=17)))
        np.testing.assert_array_equal(arr(a), arr(R.uniform(R.key(17), (3, 4), d)))
    assert R.uniform(K0).shape == ()


@pytest.mark.parametrize("d", [rt.float32, rt.float64])
def test_uniform_goodness_of_fit(d):
    x = arr(R.uniform(R.key(1), (20000,), d, minval=-2.0, maxval=3.0)).astype(np.float64)
    assert x.min() >= -2 and x.max() < 3
    assert stats.kstest(x, stats.uniform(loc=-2, scale=5).cdf).pvalue > 1e-3


def test_uniform_bounds_clamped_and_tensor_bounds():
    x = arr(R.uniform(K0, (1000,), rt.float32, minval=1.0, maxval=1.0 + 2**-20))
    assert x.min() >= 1.0 and x.max() < 1.0 + 2**-20
    lo = rt.create(rt.float32, [3], [0.0, 10.0, -5.0])
    y = arr(R.uniform(K0, (500, 3), rt.float32, minval=lo, maxval=lo + 1))
    assert y.shape == (500, 3)
    assert (y >= arr(lo)).all() and (y <= arr(lo) + 1).all()
    assert R.uniform(K0, None if False else (2,), minval=3, maxval=3).shape == (2,)


def test_uniform_errors():
    with pytest.raises(TypeError, match="uniform"):
        R.uniform(K0, (2,), rt.int32)
    with pytest.raises(ValueError, match="uniform"):
        R.uniform(K0, (2,), minval=1, maxval=0)
    with pytest.raises(ValueError, match="uniform"):
        R.uniform(K0, (2,), maxval=math.inf)
    with pytest.raises(TypeError, match="uniform"):
        R.uniform(K0, (2,), minval="a")
    with pytest.raises(ValueError, match="uniform"):
        R.uniform(K0, (-1,))
    with pytest.raises(ValueError, match="uniform"):
        R.uniform(K0, (2,), minval=rt.zeros(rt.float32, [3]))


@pytest.mark.parametrize("d", [rt.float32, rt.float64])
def test_normal(d):
    z = R.normal(R.key(3), (20000,), d)
    assert z.dtype is d and z.shape == (20000,)
    np.testing.assert_array_equal(arr(z), arr(rt.randn(d, [20000], seed=3)))
    assert stats.kstest(arr(z).astype(np.float64), "norm").pvalue > 1e-3
    with pytest.raises(TypeError, match="normal"):
        R.normal(K0, (2,), rt.int8)


def test_bernoulli():
    b = R.bernoulli(R.key(4), 0.3, (20000,))
    assert b.dtype is rt.bool and b.shape == (20000,)
    k = int(arr(b).sum())
    assert stats.binomtest(k, 20000, 0.3).pvalue > 1e-3
    # chi-square on the two outcomes
    assert stats.chisquare([k, 20000 - k], [6000, 14000]).pvalue > 1e-3
    assert not arr(R.bernoulli(K0, 0.0, (1000,))).any()
    assert arr(R.bernoulli(K0, 1.0, (1000,))).all()
    p = rt.create(rt.float64, [3], [0.0, 0.5, 1.0])
    m = arr(R.bernoulli(K0, p, (4000, 3)))
    assert m.shape == (4000, 3) and not m[:, 0].any() and m[:, 2].all()
    assert abs(m[:, 1].mean() - 0.5) < 0.05
    assert R.bernoulli(K0, p).shape == (3,)
    assert R.bernoulli(K0).shape == ()
    np.testing.assert_array_equal(arr(b), arr(R.bernoulli(R.key(4), 0.3, (20000,))))
    with pytest.raises(ValueError, match="bernoulli"):
        R.bernoulli(K0, 1.5)
    with pytest.raises(ValueError, match="bernoulli"):
        R.bernoulli(K0, rt.create(rt.float64, [2], [0.5, math.nan]))
    with pytest.raises(ValueError, match="bernoulli"):
        R.bernoulli(K0, p, (3, 2))
    with pytest.raises(TypeError, match="bernoulli"):
        R.bernoulli(K0, "x")
