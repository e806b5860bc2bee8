"""rt.metrics against scikit-learn, eagerly and under rt.jit."""
from __future__ import annotations

import numpy as np
import pytest

import runetensor as rt
from runetensor import metrics as M

sk = pytest.importorskip("sklearn.metrics")


def _t(a):
    return rt.asarray(np.ascontiguousarray(a))


def _labels(seed, n=200, c=5, noise=0.4):
    r = np.random.default_rng(seed)
    y = r.integers(0, c, n)
    p = np.where(r.random(n) < noise, r.integers(0, c, n), y)
    return y.astype(np.int32), p.astype(np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_accuracy_and_confusion_match_sklearn(seed):
    y, p = _labels(seed)
    assert float(M.accuracy(_t(y), _t(p))) == pytest.approx(sk.accuracy_score(y, p), abs=1e-15)
    assert float(M.accuracy(_t(y), _t(p), normalize=False)) == sk.accuracy_score(y, p, normalize=False)
    cm = M.confusion_matrix(_t(y), _t(p), 5)
    assert cm.dtype == rt.int64
    np.testing.assert_array_equal(rt.to_numpy(cm), sk.confusion_matrix(y, p, labels=range(5)))


def test_confusion_leaves_out_labels_out_of_range():
    y = np.array([0, 1, 2, 3, -1, 1])
    p = np.array([0, 1, 1, 0, 1, 7])
    np.testing.assert_array_equal(rt.to_numpy(M.confusion_matrix(_t(y), _t(p), 3)),
                                  sk.confusion_matrix(y, p, labels=range(3)))


def test_accuracy_takes_logits():
    r = np.random.default_rng(0)
    logits = r.normal(size=(50, 4)).astype(np.float32)
    y = r.integers(0, 4, 50)
    assert float(M.accuracy(_t(y), _t(logits))) == pytest.approx(sk.accuracy_score(y, logits.argmax(1)))


@pytest.mark.parametrize("average", ["macro", "micro", "weighted", None])
@pytest.mark.parametrize("name", ["precision", "recall", "f1"])
@pytest.mark.parametrize("seed", range(3))
def test_precision_recall_f1_match_sklearn(name, average, seed):
    y, p = _labels(seed, n=60, c=6, noise=0.7)
    p[p == 5] = 4           # class 5 is never predicted: its precision divides by zero
    ref = {"precision": sk.precision_score, "recall": sk.recall_score, "f1": sk.f1_score}[name]
    want = ref(y, p, labels=list(range(7)), average=average, zero_division=0)   # class 6: never present
    got = getattr(M, name)(_t(y), _t(p), 7, average=average)
    np.testing.assert_allclose(rt.to_numpy(got), want, rtol=1e-12, atol=1e-15)
    want1 = ref(y, p, labels=list(range(7)), average=average, zero_division=1)
    got1 = getattr(M, name)(_t(y), _t(p), 7, average=average, zero_division=1.0)
    np.testing.assert_allclose(rt.to_numpy(got1), want1, rtol=1e-12, atol=1e-15)


def test_num_classes_inferred_eagerly():
    y, p = _labels(1, c=4)
    assert float(M.f1(_t(y), _t(p))) == pytest.approx(sk.f1_score(y, p, average="macro"))


@pytest.mark.parametrize("k", [1, 2, 3, 5, 9])
def test_top_k_accuracy_matches_sklearn(k):
    r = np.random.default_rng(k)
    s = r.normal(size=(80, 6))
    s[:10] = np.round(s[:10])                      # ties: broken as scikit-learn breaks them
    y = r.integers(0, 6, 80)
    assert float(M.top_k_accuracy(_t(y), _t(s), k=k)) == pytest.approx(
        sk.top_k_accuracy_score(y, s, k=k, labels=range(6)), abs=1e-15)


@pytest.mark.parametrize("seed", range(4))
def test_roc_auc_binary_matches_sklearn(seed):
    r = np.random.default_rng(seed)
    y = r.integers(0, 2, 300)
    s = y * 0.7 + r.normal(size=300)
    if seed % 2:
        s = np.round(s, 1)                         # many ties
    assert float(M.roc_auc(_t(y), _t(s))) == pytest.approx(sk.roc_auc_score(y, s), abs=1e-12)
    assert float(M.roc_auc(_t(y.astype(bool)), _t(s.astype(np.float32)))) == pytest.approx(
        sk.roc_auc_score(y, s.astype(np.float32)), abs=1e-12)


def test_roc_auc_multiclass_ovr_matches_sklearn():
    r = np.random.default_rng(3)
    y = r.integers(0, 4, 200)
    logits = r.normal(size=(200, 4)) + np.eye(4)[y]
    prob = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    assert float(M.roc_auc(_t(y), _t(prob))) == pytest.approx(
        sk.roc_auc_score(y, prob, multi_class="ovr", average="macro"), abs=1e-12)


def test_roc_auc_one_class_is_nan():
    assert np.isnan(float(M.roc_auc(_t(np.ones(5, np.int32)), _t(np.arange(5.0)))))


def test_regression_errors_match_sklearn():
    r = np.random.default_rng(0)
    a, b = r.normal(size=(30, 3)).astype(np.float32), r.normal(size=(30, 3)).astype(np.float32)
    assert float(M.mean_squared_error(_t(a), _t(b))) == pytest.approx(sk.mean_squared_error(a, b), rel=1e-6)
    assert float(M.mean_absolute_error(_t(a), _t(b))) == pytest.approx(sk.mean_absolute_error(a, b), rel=1e-6)
    assert M.mean_squared_error(_t(a), _t(b)).dtype == rt.float64


def test_metrics_under_jit_trace_once_and_match():
    @rt.jit
    def evaluate(y, p, s, yb, sb):
        return (M.accuracy(y, p), M.confusion_matrix(y, p, 5), M.f1(y, p, 5, average="weighted"),
                M.precision(y, p, 5), M.recall(y, p, 5, average="micro"), M.top_k_accuracy(y, s, k=2),
                M.roc_auc(yb, sb), M.mean_squared_error(sb, sb * 0.5), M.mean_absolute_error(sb, sb * 0.5))

    for seed in range(3):
        y, p = _labels(seed, n=100)
        r = np.random.default_rng(seed)
        s = r.normal(size=(100, 5))
        yb = r.integers(0, 2, 100)
        sb = yb + r.normal(size=100)
        out = evaluate(_t(y), _t(p), _t(s), _t(yb), _t(sb))
        want = (sk.accuracy_score(y, p), sk.confusion_matrix(y, p, labels=range(5)),
                sk.f1_score(y, p, average="weighted", labels=range(5)),
                sk.precision_score(y, p, average="macro", labels=range(5)),
                sk.recall_score(y, p, average="micro", labels=range(5)),
                sk.top_k_accuracy_score(y, s, k=2, labels=range(5)), sk.roc_auc_score(yb, sb),
                sk.mean_squared_error(sb, sb * 0.5), sk.mean_absolute_error(sb, sb * 0.5))
        for g, w in zip(out, want):
            np.testing.assert_allclose(rt.to_numpy(g), w, rtol=1e-12)
    assert rt.jit_stats(evaluate)["traces"] == 1


def test_label_out_of_range_in_top_k_raises_under_jit_at_run_time():
    f = rt.jit(lambda y, s: M.top_k_accuracy(y, s, k=1))
    s = _t(np.zeros((3, 4)))
    assert float(f(_t(np.array([0, 1, 3])), s)) == pytest.approx(1 / 3)
    with pytest.raises(IndexError):
        f(_t(np.array([0, 1, 4])), s)
    with pytest.raises(IndexError):
        M.top_k_accuracy(_t(np.array([0, 1, 4])), s, k=1)


def test_num_classes_needed_under_jit():
    f = rt.jit(lambda y, p: M.precision(y, p))
    with pytest.raises(TypeError, match="pass num_classes"):
        f(_t(np.array([0, 1])), _t(np.array([1, 1])))


def test_errors_name_the_function():
    y = _t(np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="accuracy: y_true has shape"):
        M.accuracy(y, _t(np.array([0, 1])))
    with pytest.raises(TypeError, match="confusion_matrix: y_true must hold integer"):
        M.confusion_matrix(_t(np.array([0.5])), _t(np.array([0])), 2)
    with pytest.raises(ValueError, match="f1: average must be"):
        M.f1(y, y, 2, average="samples")
    with pytest.raises(ValueError, match="num_classes must be > 0"):
        M.recall(y, y, 0)
    with pytest.raises(ValueError, match="top_k_accuracy: k must be >= 1"):
        M.top_k_accuracy(y, _t(np.zeros((3, 2))), k=0)
    with pytest.raises(ValueError, match="roc_auc: expected labels"):
        M.roc_auc(y, _t(np.zeros(4)))
    with pytest.raises(TypeError, match="mean_squared_error: y_true must be real"):
        M.mean_squared_error(_t(np.array([1j])), _t(np.array([1j])))
