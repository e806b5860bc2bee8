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
    assert R.uniform(K0, (2,), minval=3, maxval=3).shape == (2,)


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


# ---------------------------------------------------------------------------------------------
# truncated_normal, gamma, beta: goodness of fit (Kolmogorov-Smirnov) at fixed seeds
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lo,hi", [(-1.0, 2.0), (-0.3, 0.4), (-math.inf, math.inf), (1.5, math.inf),
                                   (-math.inf, -2.0), (3.0, 3.2), (6.0, 9.0), (-5.0, 0.0), (0.0, 10.0)])
def test_truncated_normal_fit(lo, hi):
    x = arr(R.truncated_normal(R.key(11), lo, hi, (5000,), rt.float64))
    assert x.min() >= lo and x.max() <= hi
    dist = stats.truncnorm(lo, hi)
    assert stats.kstest(x, dist.cdf).pvalue > 1e-3


def test_truncated_normal_far_tail_and_float32():
    x = arr(R.truncated_normal(R.key(2), 30.0, math.inf, (2000,), rt.float64))
    assert x.min() >= 30 and x.mean() < 30.1       # the mean is about 30.033
    assert abs(x.mean() - stats.truncnorm(30, np.inf).mean()) < 3e-3
    y = R.truncated_normal(R.key(2), -2.0, 2.0, (4000,))
    assert y.dtype is rt.float32 and stats.kstest(arr(y).astype(np.float64), stats.truncnorm(-2, 2).cdf).pvalue > 1e-3


def test_truncated_normal_tensor_bounds_and_errors():
    lo = rt.create(rt.float64, [2], [-1.0, 4.0])
    x = arr(R.truncated_normal(R.key(5), lo, lo + 0.5, (3000, 2), rt.float64))
    assert x.shape == (3000, 2)
    assert (x[:, 0] >= -1).all() and (x[:, 0] <= -0.5).all() and (x[:, 1] >= 4).all() and (x[:, 1] <= 4.5).all()
    assert stats.kstest(x[:, 1], stats.truncnorm(4.0, 4.5).cdf).pvalue > 1e-3
    assert R.truncated_normal(K0, lo, lo + 1).shape == (2,)
    np.testing.assert_array_equal(x, arr(R.truncated_normal(R.key(5), lo, lo + 0.5, (3000, 2), rt.float64)))
    with pytest.raises(ValueError, match="truncated_normal"):
        R.truncated_normal(K0, 1.0, 1.0, (2,))
    with pytest.raises(ValueError, match="truncated_normal"):
        R.truncated_normal(K0, math.nan, 1.0, (2,))
    with pytest.raises(ValueError, match="truncated_normal"):
        R.truncated_normal(K0, lo, 0.0)
    with pytest.raises(TypeError, match="truncated_normal"):
        R.truncated_normal(K0, -1.0, 1.0, (2,), rt.int32)


@pytest.mark.parametrize("a", [0.05, 0.5, 1.0, 2.5, 30.0])
def test_gamma_fit(a):
    x = arr(R.gamma(R.key(7), a, (5000,), rt.float64))
    assert (x >= 0).all()
    assert stats.kstest(x, stats.gamma(a).cdf).pvalue > 1e-3


def test_gamma_shapes_dtype_errors():
    a = rt.create(rt.float32, [3], [0.5, 2.0, 9.0])
    g = R.gamma(K0, a, (4000, 3))
    assert g.dtype is rt.float32 and g.shape == (4000, 3)
    m = arr(g).astype(np.float64).mean(axis=0)
    np.testing.assert_allclose(m, [0.5, 2.0, 9.0], rtol=0.06)
    assert R.gamma(K0, a).shape == (3,)
    assert R.gamma(K0, 2.0).shape == ()
    np.testing.assert_array_equal(arr(g), arr(R.gamma(K0, a, (4000, 3))))
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="gamma"):
            R.gamma(K0, bad, (2,))
    with pytest.raises(TypeError, match="gamma"):
        R.gamma(K0, "a")
    with pytest.raises(ValueError, match="gamma"):
        R.gamma(K0, a, (2,))


@pytest.mark.parametrize("a,b", [(2.0, 5.0), (0.5, 0.5), (0.2, 0.1), (40.0, 3.0)])
def test_beta_fit(a, b):
    x = arr(R.beta(R.key(8), a, b, (5000,), rt.float64))
    assert (x >= 0).all() and (x <= 1).all() and not np.isnan(x).any()
    assert stats.kstest(x, stats.beta(a, b).cdf).pvalue > 1e-3


def test_beta_tiny_parameters():
    # Beta(0.01, 0.02) puts most of its mass within 1e-16 of 0 or 1, where float64 cannot show it:
    # test P(X < 1/2) and the law of the values below 1/2 (the log-space method keeps them exact)
    a, b = 0.01, 0.02
    x = arr(R.beta(R.key(8), a, b, (5000,), rt.float64))
    assert not np.isnan(x).any() and (x >= 0).all() and (x <= 1).all()
    dist = stats.beta(a, b)
    low = x[x < 0.5]
    assert stats.binomtest(len(low), len(x), dist.cdf(0.5)).pvalue > 1e-3
    low = low[low > 0]          # values below the smallest subnormal
    assert stats.kstest(low, lambda v: dist.cdf(v) / dist.cdf(0.5)).pvalue > 1e-3


def test_beta_errors_and_shapes():
    assert R.beta(K0, 1.0, rt.ones(rt.float32, [2, 3])).shape == (2, 3)
    with pytest.raises(ValueError, match="beta"):
        R.beta(K0, 1.0, 0.0)


# ---------------------------------------------------------------------------------------------
# discrete samplers: chi-square uniformity at fixed seeds
# ---------------------------------------------------------------------------------------------

def test_randint():
    x = R.randint(R.key(9), (30000,), -3, 7)
    assert x.dtype is rt.int32 and x.shape == (30000,)
    np.testing.assert_array_equal(arr(x), arr(rt.randint(rt.int32, [30000], -3, seed=9, high=7)))
    counts = np.bincount(arr(x) + 3, minlength=10)
    assert counts.sum() == 30000 and stats.chisquare(counts).pvalue > 1e-3
    y = R.randint(K0, (5,), 0, 2**40, rt.int64)
    assert y.dtype is rt.int64
    with pytest.raises(ValueError, match="randint"):
        R.randint(K0, (2,), 5, 5)
    with pytest.raises(ValueError, match="randint"):
        R.randint(K0, (2,), 0, 300, rt.uint8)
    with pytest.raises(TypeError, match="randint"):
        R.randint(K0, (2,), 0, 3, rt.float32)
    with pytest.raises(TypeError, match="randint"):
        R.randint(K0, (2,), 0.5, 3)


def test_categorical():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.0])
    logits = rt.log(rt.asarray(list(p), dtype=rt.float32))
    c = arr(R.categorical(R.key(10), logits, shape=(20000,)))
    assert c.dtype == np.int32
    counts = np.bincount(c, minlength=5)
    assert counts[4] == 0
    assert stats.chisquare(counts[:4], 20000 * p[:4]).pvalue > 1e-3
    # batched logits along axis 0
    lg = rt.reshape(rt.asarray([0.0, 1.0, 0.0, -1.0, 0.0, 2.0], dtype=rt.float64), [3, 2])
    out = R.categorical(K0, lg, axis=0)
    assert out.shape == (2,)
    many = arr(R.categorical(R.key(1), lg, axis=0, shape=(20000, 2)))
    q = np.exp(np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 2.0]]))
    q /= q.sum(axis=1, keepdims=True)
    for j in range(2):
        assert stats.chisquare(np.bincount(many[:, j], minlength=3), 20000 * q[j]).pvalue > 1e-3
    with pytest.raises(ValueError, match="categorical"):
        R.categorical(K0, lg, axis=0, shape=(3,))
    with pytest.raises(ValueError, match="categorical"):
        R.categorical(K0, lg, axis=2)
    with pytest.raises(TypeError, match="categorical"):
        R.categorical(K0, rt.zeros(rt.int32, [3]))
    with pytest.raises(ValueError, match="categorical"):
        R.categorical(K0, rt.zeros(rt.float32, [0]))


def test_permutation_uniform_over_orders():
    # all 24 orders of 4 elements, over 4800 keys: chi-square on the order counts
    k = R.key(12)
    seen = {}
    for i in range(4800):
        p = tuple(arr(R.permutation(R.fold_in(k, i), 4)))
        seen[p] = seen.get(p, 0) + 1
    assert len(seen) == 24 and all(sorted(q) == [0, 1, 2, 3] for q in seen)
    assert stats.chisquare(list(seen.values())).pvalue > 1e-3


def test_permutation_position_uniformity_and_tensors():
    n = 10
    # which element lands in position 0, over many keys
    firsts = [int(arr(R.permutation(R.fold_in(K0, i), n))[0]) for i in range(3000)]
    assert stats.chisquare(np.bincount(firsts, minlength=n)).pvalue > 1e-3
    x = rt.reshape(rt.arange(rt.int64, 0, 12, 1), [3, 4])
    y = arr(R.permutation(R.key(1), x, axis=1))
    assert sorted(map(tuple, y.T)) == sorted(map(tuple, arr(x).T))
    z = arr(R.permutation(R.key(1), x, axis=1, independent=True))
    assert all(sorted(r) == sorted(q) for r, q in zip(z, arr(x)))
    s = arr(R.shuffle(R.key(1), x, axis=1))
    np.testing.assert_array_equal(s, y)
    assert R.permutation(K0, 0).shape == (0,)
    with pytest.raises(ValueError, match="permutation"):
        R.permutation(K0, -1)
    with pytest.raises(TypeError, match="permutation"):
        R.permutation(K0, 2.5)
    with pytest.raises(ValueError, match="permutation"):
        R.permutation(K0, x, axis=2)
    with pytest.raises(TypeError, match="shuffle"):
        R.shuffle(K0, 5)


def test_choice():
    c = arr(R.choice(R.key(13), 6, (30000,)))
    assert c.dtype == np.int32 and stats.chisquare(np.bincount(c, minlength=6)).pvalue > 1e-3
    p = [0.5, 0.0, 0.25, 0.25]
    w = arr(R.choice(R.key(13), 4, (20000,), p=p))
    counts = np.bincount(w, minlength=4)
    assert counts[1] == 0 and stats.chisquare(counts[[0, 2, 3]], [10000, 5000, 5000]).pvalue > 1e-3
    nr = arr(R.choice(R.key(13), 10, (10,), replace=False))
    assert sorted(nr) == list(range(10))
    # weighted without replacement: P(first = i) = p_i, and the second follows the conditional law
    firsts, seconds = [], []
    for i in range(3000):
        d = arr(R.choice(R.fold_in(K0, i), 3, (2,), replace=False, p=[0.6, 0.3, 0.1]))
        assert d[0] != d[1]
        firsts.append(d[0])
        seconds.append(d[1])
    assert stats.chisquare(np.bincount(firsts, minlength=3), [1800, 900, 300]).pvalue > 1e-3
    # P(second = 2) = 0.6*0.1/0.4 + 0.3*0.1/0.7
    p2 = 0.6 * 0.1 / 0.4 + 0.3 * 0.1 / 0.7
    k2 = sum(1 for s in seconds if s == 2)
    assert stats.binomtest(k2, 3000, p2).pvalue > 1e-3
    t = rt.reshape(rt.arange(rt.float32, 0, 12, 1), [3, 4])
    assert R.choice(K0, t, (5, 2), axis=1).shape == (3, 5, 2)
    assert R.choice(K0, 5).shape == ()
    with pytest.raises(ValueError, match="choice"):
        R.choice(K0, 3, (4,), replace=False)
    with pytest.raises(ValueError, match="choice"):
        R.choice(K0, 3, (3,), replace=False, p=[0.5, 0.5, 0.0])
    with pytest.raises(ValueError, match="choice"):
        R.choice(K0, 0)
    with pytest.raises(ValueError, match="choice"):
        R.choice(K0, 3, p=[1, 2])
    with pytest.raises(ValueError, match="choice"):
        R.choice(K0, 3, p=[1, -1, 1])
    with pytest.raises(TypeError, match="choice"):
        R.choice(K0, "abc")


def test_split_and_fold_in_batch_under_vmap():
    ks = R.split(R.key(0), 3)
    out = rt.vmap(lambda k: R.fold_in(k, 5))(ks)
    np.testing.assert_array_equal(arr(out), np.stack([arr(R.fold_in(ks[i], 5)) for i in range(3)]))
    out = rt.vmap(lambda k: R.split(k, 4))(ks)
    assert out.shape == (3, 4, 2)
    np.testing.assert_array_equal(arr(out), np.stack([arr(R.split(ks[i], 4)) for i in range(3)]))
