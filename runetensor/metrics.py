"""Evaluation metrics over tensors (``rt.metrics``), with scikit-learn's argument order.

Classification: :func:`accuracy`, :func:`top_k_accuracy`, :func:`confusion_matrix`,
:func:`precision`, :func:`recall`, :func:`f1` (``average="macro" | "micro" | "weighted"`` or
None for per-class values), :func:`roc_auc`; regression: :func:`mean_squared_error`,
:func:`mean_absolute_error`.  Every metric is a composition of tensor operations with no
Python branch on values, so it works eagerly, under ``rt.jit`` (one trace per shape) and under
``rt.vmap``; results are 0-d float64 tensors (``float(m)`` for a Python number), the confusion
matrix an int64 tensor.

Where scikit-learn raises or warns on a degenerate input, these return a value instead, so that
a jitted evaluation never stops: a precision/recall/F1 whose denominator is 0 gives
``zero_division`` (default 0, as scikit-learn's default after its warning), and a ROC AUC with
only one class present gives NaN (scikit-learn raises).  Labels outside ``[0, num_classes)``
are left out of the confusion matrix and of the scores built on it, as scikit-learn does with
``labels=range(num_classes)``.
"""
from __future__ import annotations

import builtins
from typing import Any

import runetensor as rt  # the public namespace (imported first: this module loads after it)

from . import _dtypes as D
from ._backend.contract import TracedValueError
from ._tensor import Tensor, as_tensor
import runetensor.array_api as xp

__all__ = ["accuracy", "top_k_accuracy", "confusion_matrix", "precision", "recall", "f1", "roc_auc",
           "mean_squared_error", "mean_absolute_error"]

_AVERAGES = ("macro", "micro", "weighted", None)


def _labels(y: Any, fname: str, what: str) -> Tensor:
    t = as_tensor(y, fname)
    if t.dtype.kind not in "biu":
        raise TypeError(f"{fname}: {what} must hold integer (or bool) class labels, got dtype {t.dtype}")
    return t.astype(D.int64)


def _pred_labels(y_true: Tensor, y_pred: Any, fname: str) -> Tensor:
    """Predicted labels; scores with one more (class) axis than ``y_true`` become their argmax."""
    p = as_tensor(y_pred, fname)
    if p.dtype.kind in "fc" and p.ndim == y_true.ndim + 1:
        p = rt.argmax(p, axis=-1)
    p = _labels(p, fname, "y_pred")
    _same_shape(y_true, p, fname, "y_pred")
    return p


def _same_shape(a: Tensor, b: Tensor, fname: str, what: str) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{fname}: y_true has shape {tuple(a.shape)} but {what} has shape {tuple(b.shape)}; "
                         "expected the same shape")


def _num_classes(num_classes: Any, t: Tensor, p: Tensor, fname: str) -> int:
    if num_classes is None:
        if t.size == 0:
            raise ValueError(f"{fname}: no labels to infer num_classes from; pass num_classes")
        try:
            return builtins.max(int(rt.max(t)), int(rt.max(p))) + 1
        except TracedValueError:
            raise TypeError(f"{fname}: under rt.jit the number of classes cannot be read from the labels; "
                            "pass num_classes") from None
    if isinstance(num_classes, builtins.bool) or not hasattr(num_classes, "__index__"):
        raise TypeError(f"{fname}: num_classes must be an integer, got {type(num_classes).__name__} {num_classes!r}")
    n = int(num_classes)
    if n <= 0:
        raise ValueError(f"{fname}: num_classes must be > 0, got {n}")
    return n


def accuracy(y_true: Any, y_pred: Any, *, normalize: bool = True) -> Tensor:
    """The fraction (or, with ``normalize=False``, the number) of predictions equal to the labels.

    Args:
        y_true: integer labels, any shape.
        y_pred: predicted labels of the same shape, or scores with one more, trailing axis of
            classes (their argmax is the prediction: pass a model's logits directly).
    Returns:
        A 0-d float64 tensor (scikit-learn's ``accuracy_score``); NaN for no labels.
    Raises:
        TypeError: for non-integer labels.
        ValueError: for shapes that differ.

    >>> import runetensor as rt
    >>> y = rt.create(rt.int32, [4], [0, 1, 2, 1])
    >>> float(rt.metrics.accuracy(y, rt.create(rt.int32, [4], [0, 2, 2, 1])))
    0.75
    >>> logits = rt.create(rt.float32, [2, 3], [0.1, 2.0, 0.3, 5.0, 0.0, 0.0])
    >>> float(rt.metrics.accuracy(y[:2], logits))
    0.0
    """
    fname = "accuracy"
    t = _labels(y_true, fname, "y_true")
    p = _pred_labels(t, y_pred, fname)
    hits = rt.sum(rt.equal(t, p).astype(D.float64))
    return hits / builtins.float(t.size) if normalize else hits


def top_k_accuracy(y_true: Any, scores: Any, k: int = 5) -> Tensor:
    """The fraction of examples whose label is among the ``k`` classes of highest score.

    Ties are broken as scikit-learn's ``top_k_accuracy_score`` does (among equal scores the
    class of larger index ranks first): the label's rank is the number of classes scoring
    higher, plus those of larger index scoring the same.

    Args:
        y_true: integer labels of shape ``(n,)`` in ``[0, C)``.
        scores: scores (logits or probabilities) of shape ``(n, C)``.
        k: how many top classes count as a hit, an int >= 1 (``k >= C``: every example hits).
    Returns:
        A 0-d float64 tensor.
    Raises:
        TypeError: for non-integer labels, non-float scores or a non-integer ``k``.
        ValueError: for bad shapes or ``k < 1``.
        IndexError: for a label outside ``[0, C)`` (at run time under ``rt.jit``).

    >>> import runetensor as rt
    >>> s = rt.create(rt.float32, [3, 4], [.1, .4, .3, .2,  .5, .1, .2, .2,  .0, .1, .2, .7])
    >>> y = rt.create(rt.int32, [3], [2, 3, 0])
    >>> float(rt.metrics.top_k_accuracy(y, s, k=2))
    0.6666666666666666
    """
    fname = "top_k_accuracy"
    t = _labels(y_true, fname, "y_true")
    s = as_tensor(scores, fname)
    if s.dtype.kind not in "fiu":
        raise TypeError(f"{fname}: scores must be real numbers, got dtype {s.dtype}")
    if isinstance(k, builtins.bool) or not hasattr(k, "__index__"):
        raise TypeError(f"{fname}: k must be an integer, got {type(k).__name__} {k!r}")
    if int(k) < 1:
        raise ValueError(f"{fname}: k must be >= 1, got {k}")
    if t.ndim != 1 or s.ndim != 2 or s.shape[0] != t.shape[0]:
        raise ValueError(f"{fname}: expected labels of shape (n,) and scores of shape (n, classes), got "
                         f"{tuple(t.shape)} and {tuple(s.shape)}")
    c = s.shape[1]
    own = rt.take_along_axis(s, rt.expand_dims(t, -1), axis=1)              # (n, 1)
    cls = rt.arange(D.int64, 0, c, 1)
    above = rt.greater(s, own) | (rt.equal(s, own) & rt.greater(cls, rt.expand_dims(t, -1)))
    rank = rt.sum(above.astype(D.int64), axes=[1])
    return rt.mean(rt.less(rank, int(k)).astype(D.float64))


def _codes(t: Tensor, p: Tensor, n: int) -> Tensor:
    """``t * n + p`` for pairs with both labels in ``[0, n)``, else ``n * n`` (counted nowhere)."""
    ok = (t >= 0) & (t < n) & (p >= 0) & (p < n)
    return rt.where(ok, t * n + p, rt.full_like(t, n * n))


def _confusion(t: Tensor, p: Tensor, n: int) -> Tensor:
    codes = rt.sort(rt.reshape(_codes(t, p, n), [-1]))[0]
    cells = rt.arange(D.int64, 0, n * n, 1)
    counts = xp.searchsorted(codes, cells, side="right") - xp.searchsorted(codes, cells, side="left")
    return rt.reshape(counts, [n, n])


def confusion_matrix(y_true: Any, y_pred: Any, num_classes: int) -> Tensor:
    """The confusion matrix: ``C[i, j]`` counts the examples of label ``i`` predicted as ``j``.

    Pairs where either label is outside ``[0, num_classes)`` are not counted (scikit-learn's
    ``confusion_matrix(..., labels=range(num_classes))``).  Computed by sorting pair codes, so it
    costs ``O(n log n + num_classes**2)``, never an ``(n, num_classes)`` one-hot.

    Args:
        y_true: integer labels, any shape.
        y_pred: predicted labels of the same shape (or scores with a trailing class axis).
        num_classes: the number of classes, an int > 0 (static: it fixes the result's shape).
    Returns:
        An int64 tensor of shape ``(num_classes, num_classes)``, rows the true labels.
    Raises:
        TypeError: for non-integer labels or ``num_classes``.
        ValueError: for shapes that differ or ``num_classes <= 0``.

    >>> import runetensor as rt
    >>> t = rt.create(rt.int32, [5], [0, 1, 2, 2, 1])
    >>> print(rt.metrics.confusion_matrix(t, rt.create(rt.int32, [5], [0, 2, 2, 2, 1]), 3))
    [[1, 0, 0],
     [0, 1, 1],
     [0, 0, 2]]
    """
    fname = "confusion_matrix"
    t = _labels(y_true, fname, "y_true")
    p = _pred_labels(t, y_pred, fname)
    return _confusion(t, p, _num_classes(num_classes, t, p, fname))


def _safe_div(num: Tensor, den: Tensor, zero_division: float) -> Tensor:
    ok = den > 0
    return rt.where(ok, num / rt.where(ok, den, rt.ones_like(den)), rt.full_like(num, zero_division))


def _prf(y_true: Any, y_pred: Any, num_classes: Any, average: Any, zero_division: Any, which: str) -> Tensor:
    fname = which
    if average not in _AVERAGES:
        raise ValueError(f"{fname}: average must be 'macro', 'micro', 'weighted' or None, got {average!r}")
    if isinstance(zero_division, builtins.bool) or not isinstance(zero_division, (builtins.int, builtins.float)):
        raise TypeError(f"{fname}: zero_division must be a number, got {type(zero_division).__name__}")
    zd = builtins.float(zero_division)
    t = _labels(y_true, fname, "y_true")
    p = _pred_labels(t, y_pred, fname)
    n = _num_classes(num_classes, t, p, fname)
    cm = _confusion(t, p, n).astype(D.float64)
    tp = rt.diagonal(cm)
    pred = rt.sum(cm, axes=[0])      # predicted as each class
    true = rt.sum(cm, axes=[1])      # support of each class
    if average == "micro":
        tp, pred, true = rt.sum(tp), rt.sum(pred), rt.sum(true)
    if which == "precision":
        v = _safe_div(tp, pred, zd)
    elif which == "recall":
        v = _safe_div(tp, true, zd)
    else:
        v = _safe_div(2.0 * tp, pred + true, zd)
    if average in (None, "micro"):
        return v
    if average == "macro":
        return rt.mean(v)
    return _safe_div(rt.sum(v * true), rt.sum(true), zd)


_PRF_DOC = """The {what} of each class, or their average.

    Per class ``c``, from the confusion matrix: {formula}; a zero denominator gives
    ``zero_division``.  ``average="macro"``: the mean over all ``num_classes`` classes (scikit-learn
    with ``labels=range(num_classes)``); ``"micro"``: from the summed counts (the accuracy, for
    single-label data whose labels are all in range); ``"weighted"``: weighted by each class's
    support (number of true examples); None: the per-class values.

    Args:
        y_true: integer labels, any shape.
        y_pred: predicted labels of the same shape (or scores with a trailing class axis).
        num_classes: the number of classes (static); None reads ``max(label) + 1`` from the
            labels, which needs their values (eager only: pass it under ``rt.jit``).
        average: ``"macro"`` (default), ``"micro"``, ``"weighted"`` or None.
        zero_division: the value of a ratio whose denominator is 0 (default 0.0).
    Returns:
        A 0-d float64 tensor, or a ``(num_classes,)`` one with ``average=None``.
    Raises:
        TypeError: for non-integer labels, a non-integer ``num_classes``, or a ``num_classes``
            to infer under ``rt.jit``.
        ValueError: for shapes that differ, a bad ``average`` or ``num_classes <= 0``.

    >>> import runetensor as rt
    >>> t = rt.create(rt.int32, [6], [0, 0, 1, 1, 2, 2])
    >>> p = rt.create(rt.int32, [6], [0, 1, 1, 1, 2, 0])
    >>> [round(float(rt.metrics.{name}(t, p, 3, average=a)), 6) for a in ("macro", "micro")]
    [{macro}, 0.666667]
    """


def precision(y_true: Any, y_pred: Any, num_classes: int | None = None, *, average: str | None = "macro",
              zero_division: float = 0.0) -> Tensor:
    return _prf(y_true, y_pred, num_classes, average, zero_division, "precision")


def recall(y_true: Any, y_pred: Any, num_classes: int | None = None, *, average: str | None = "macro",
           zero_division: float = 0.0) -> Tensor:
    return _prf(y_true, y_pred, num_classes, average, zero_division, "recall")


def f1(y_true: Any, y_pred: Any, num_classes: int | None = None, *, average: str | None = "macro",
       zero_division: float = 0.0) -> Tensor:
    return _prf(y_true, y_pred, num_classes, average, zero_division, "f1")


precision.__doc__ = _PRF_DOC.format(what="precision", name="precision", macro=0.722222,
                                    formula="``tp / (tp + fp)``, the fraction of right predictions of ``c``")
recall.__doc__ = _PRF_DOC.format(what="recall", name="recall", macro=0.666667,
                                 formula="``tp / (tp + fn)``, the fraction of the examples of ``c`` found")
f1.__doc__ = _PRF_DOC.format(what="F1 score", name="f1", macro=0.655556,
                             formula="``2 tp / (2 tp + fp + fn)``, the harmonic mean of precision and recall")


def _auc_binary(pos: Tensor, s: Tensor) -> Tensor:
    """Mann-Whitney: P(score of a positive > score of a negative) + half the ties, from sorted scores."""
    order = rt.argsort(s)
    ss = rt.take(s, order)
    neg = (~rt.take(pos, order)).astype(D.float64)
    # negatives among the first j sorted scores, j = 0..n
    below = rt.concatenate([rt.zeros(D.float64, [1]), rt.cumsum(neg, axis=0)], axis=0)
    lo = rt.take(below, xp.searchsorted(ss, s, side="left"))
    hi = rt.take(below, xp.searchsorted(ss, s, side="right"))
    w = pos.astype(D.float64)
    n_pos = rt.sum(w)
    n_neg = builtins.float(s.shape[0]) - n_pos
    wins = rt.sum(w * (lo + 0.5 * (hi - lo)))
    den = n_pos * n_neg
    return rt.where(den > 0, wins / rt.where(den > 0, den, rt.ones_like(den)), rt.full_like(den, float("nan")))


def roc_auc(y_true: Any, scores: Any) -> Tensor:
    """The area under the ROC curve: the probability that a positive example scores above a negative one.

    Binary: ``y_true`` holds 0/1 (or bool) labels, positives where it is 1; ties count one
    half (scikit-learn's ``roc_auc_score``, computed exactly from ranks, in ``O(n log n)``).
    Multiclass: ``scores`` of shape ``(n, C)`` and labels in ``[0, C)`` give the mean over
    classes of the one-vs-rest AUC of column ``c`` (scikit-learn's ``multi_class="ovr"``,
    ``average="macro"``).  Only one class present: NaN (scikit-learn raises).

    Args:
        y_true: labels of shape ``(n,)``.
        scores: real scores of shape ``(n,)`` (binary) or ``(n, C)`` (multiclass).
    Returns:
        A 0-d float64 tensor.
    Raises:
        TypeError: for non-integer labels or non-real scores.
        ValueError: for bad shapes.

    >>> import runetensor as rt
    >>> y = rt.create(rt.int32, [4], [0, 0, 1, 1])
    >>> float(rt.metrics.roc_auc(y, rt.create(rt.float32, [4], [0.1, 0.4, 0.35, 0.8])))
    0.75
    """
    fname = "roc_auc"
    t = _labels(y_true, fname, "y_true")
    s = as_tensor(scores, fname)
    if s.dtype.kind not in "fiub":
        raise TypeError(f"{fname}: scores must be real numbers, got dtype {s.dtype}")
    if t.ndim != 1 or s.ndim not in (1, 2) or s.shape[0] != t.shape[0]:
        raise ValueError(f"{fname}: expected labels of shape (n,) and scores of shape (n,) or (n, classes), got "
                         f"{tuple(t.shape)} and {tuple(s.shape)}")
    s = s.astype(D.float64)
    if s.ndim == 1:
        return _auc_binary(rt.equal(t, 1), s)
    per = [_auc_binary(rt.equal(t, c), s[:, c]) for c in range(s.shape[1])]
    return rt.mean(rt.stack(per, axis=0))


def _regression(y_true: Any, y_pred: Any, fname: str) -> tuple[Tensor, Tensor]:
    t, p = as_tensor(y_true, fname), as_tensor(y_pred, fname)
    for x, what in ((t, "y_true"), (p, "y_pred")):
        if x.dtype.kind not in "fiub":
            raise TypeError(f"{fname}: {what} must be real numbers, got dtype {x.dtype}")
    _same_shape(t, p, fname, "y_pred")
    return t.astype(D.float64), p.astype(D.float64)


def mean_squared_error(y_true: Any, y_pred: Any) -> Tensor:
    """The mean of ``(y_true - y_pred) ** 2`` over all elements (scikit-learn's uniform average of outputs).

    Args:
        y_true: real targets, any shape.
        y_pred: predictions of the same shape.
    Returns:
        A 0-d float64 tensor (computed in float64).
    Raises:
        TypeError: for non-real inputs.
        ValueError: for shapes that differ.

    >>> import runetensor as rt
    >>> a, b = rt.create(rt.float32, [3], [1, 2, 3]), rt.create(rt.float32, [3], [1, 4, 2])
    >>> float(rt.metrics.mean_squared_error(a, b))
    1.6666666666666667
    """
    t, p = _regression(y_true, y_pred, "mean_squared_error")
    d = t - p
    return rt.mean(d * d)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Tensor:
    """The mean of ``|y_true - y_pred|`` over all elements.

    Args:
        y_true: real targets, any shape.
        y_pred: predictions of the same shape.
    Returns:
        A 0-d float64 tensor (computed in float64).
    Raises:
        TypeError: for non-real inputs.
        ValueError: for shapes that differ.

    >>> import runetensor as rt
    >>> a, b = rt.create(rt.float32, [3], [1, 2, 3]), rt.create(rt.float32, [3], [1, 4, 2])
    >>> float(rt.metrics.mean_absolute_error(a, b))
    1.0
    """
    t, p = _regression(y_true, y_pred, "mean_absolute_error")
    return rt.mean(rt.abs(t - p))
