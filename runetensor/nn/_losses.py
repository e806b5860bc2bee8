"""Losses, with ``reduction="mean" | "sum" | "none"`` (PyTorch's meanings).

Predictions and targets must have the same shape (PyTorch broadcasts them with a warning;
here a mismatch is a ``ValueError``).  Classification losses take logits (unnormalised scores);
``kl_div`` takes log-probabilities, as PyTorch's.  Low-precision floats (float16, bfloat16, float8)
are computed in float32 and the loss rounded back once.
"""
from __future__ import annotations

from typing import Any

import runetensor as rt

from .. import _dtypes as D
from .._dtypes import DType
from .._guards import check_values
from .._special import _back, _scalar_float, _softplus_t
from .._tensor import Tensor, as_tensor
from .._validate import normalize_axis

__all__ = ["mse", "mae", "huber", "sigmoid_bce", "softmax_cross_entropy", "kl_div"]

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction: Any, fname: str, extra: tuple[str, ...] = ()) -> str:
    allowed = _REDUCTIONS + extra
    if not isinstance(reduction, str) or reduction not in allowed:
        raise ValueError(f"{fname}: reduction must be one of {', '.join(map(repr, allowed))}, got {reduction!r}")
    return reduction


def _reduce(loss: Tensor, reduction: str, d: DType) -> Tensor:
    """The element-wise ``loss`` reduced as ``reduction`` asks, rounded back to the result dtype ``d``."""
    if reduction == "mean":
        loss = rt.mean(loss)
    elif reduction == "sum":
        loss = rt.sum(loss)
    elif reduction == "batchmean":
        n = loss.shape[0] if loss.ndim else 1
        loss = rt.sum(loss) / float(n) if n else rt.sum(loss) * float("nan")
    return _back(loss, d)


def _compute(t: Tensor, d: DType) -> Tensor:
    """``t`` in the compute dtype of result dtype ``d`` (float32 for low-precision floats)."""
    cd = D.float32 if d.is_low_precision else d
    return t if t.dtype is cd else rt.astype(t, cd)


def _pair(a: Any, b: Any, fname: str, an: str, bn: str) -> tuple[Tensor, Tensor, DType]:
    """Both operands as float tensors of the compute dtype, and the result dtype."""
    a = as_tensor(a, fname)
    b = as_tensor(b, fname)
    for t, n in ((a, an), (b, bn)):
        if t.dtype.kind not in "fiub":
            raise TypeError(f"{fname}: {n} must be a real tensor, got dtype {t.dtype}")
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{fname}: {an} and {bn} must have the same shape, got {a.shape} and {b.shape}")
    d = rt.promote_types(a.dtype, b.dtype)
    if not d.is_float:
        d = D.float64
    return _compute(a, d), _compute(b, d), d


def mse(pred: Any, target: Any, reduction: str = "mean") -> Tensor:
    """Squared error ``(pred - target)**2`` (PyTorch's ``mse_loss``).

    Args:
        pred, target: real tensors of the same shape.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` (the element-wise loss).
    Returns:
        A 0-d tensor, or the element-wise loss for ``"none"``.
    Raises:
        TypeError: for complex input.
        ValueError: for different shapes or an unknown reduction.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.mse(rt.create(rt.float32, [2], [1., 3.]), rt.create(rt.float32, [2], [0., 0.])))
    5
    """
    red = _check_reduction(reduction, "mse")
    p, t, d = _pair(pred, target, "mse", "pred", "target")
    diff = p - t
    return _reduce(diff * diff, red, d)


def mae(pred: Any, target: Any, reduction: str = "mean") -> Tensor:
    """Absolute error ``|pred - target|`` (PyTorch's ``l1_loss``).

    Args:
        pred, target: real tensors of the same shape.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
    Returns:
        A 0-d tensor, or the element-wise loss for ``"none"``.
    Raises:
        TypeError: for complex input.
        ValueError: for different shapes or an unknown reduction.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.mae(rt.create(rt.float32, [2], [1., -3.]), rt.create(rt.float32, [2], [0., 0.]), reduction="sum"))
    4
    """
    red = _check_reduction(reduction, "mae")
    p, t, d = _pair(pred, target, "mae", "pred", "target")
    return _reduce(rt.abs(p - t), red, d)


def huber(pred: Any, target: Any, delta: float = 1.0, reduction: str = "mean") -> Tensor:
    """Huber loss: ``0.5 e**2`` for ``|e| <= delta``, ``delta (|e| - 0.5 delta)`` beyond, with
    ``e = pred - target`` (PyTorch's ``huber_loss``).

    Args:
        pred, target: real tensors of the same shape.
        delta: a positive finite threshold.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
    Returns:
        A 0-d tensor, or the element-wise loss for ``"none"``.
    Raises:
        TypeError: for complex input or a non-number delta.
        ValueError: for different shapes, an unknown reduction or a bad delta.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.huber(rt.create(rt.float32, [2], [0.5, 3.]), rt.zeros(rt.float32, [2]), reduction="none"))
    [0.125, 2.5]
    """
    red = _check_reduction(reduction, "huber")
    dl = _scalar_float(delta, "huber", "delta")
    if not 0 < dl < float("inf"):
        raise ValueError(f"huber: delta must be positive and finite, got {delta!r}")
    p, t, d = _pair(pred, target, "huber", "pred", "target")
    e = p - t
    a = rt.abs(e)
    small = a <= dl
    # the quadratic branch only sees clipped errors (no overflow in the unused branch)
    ec = rt.where(small, e, 0.0)
    loss = rt.where(small, ec * ec * 0.5, (a - 0.5 * dl) * dl)
    return _reduce(loss, red, d)


def sigmoid_bce(logits: Any, labels: Any, reduction: str = "mean", pos_weight: Any = None) -> Tensor:
    """Binary cross-entropy of ``sigmoid(logits)`` against ``labels`` in ``[0, 1]``, from the logits
    (PyTorch's ``binary_cross_entropy_with_logits``).

    Element-wise ``-(w z log(sigmoid(x)) + (1 - z) log(1 - sigmoid(x)))`` with ``w = pos_weight``
    (1 by default), computed as ``(1 - z) x + (1 + (w - 1) z) softplus(-x)`` without overflow.

    Args:
        logits: a real tensor.
        labels: a tensor of ``logits``' shape (probabilities; soft labels allowed).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        pos_weight: None, a number or a tensor broadcasting against the loss.
    Returns:
        A 0-d tensor, or the element-wise loss for ``"none"``.
    Raises:
        TypeError: for complex input.
        ValueError: for different shapes or an unknown reduction.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.create(rt.float64, [2], [0., 100.])
    >>> print(nn.sigmoid_bce(x, rt.create(rt.float64, [2], [1., 0.]), reduction="none"))
    [0.693147, 100]
    """
    red = _check_reduction(reduction, "sigmoid_bce")
    x, z, d = _pair(logits, labels, "sigmoid_bce", "logits", "labels")
    sp = _softplus_t(-x)
    if pos_weight is None:
        loss = (1.0 - z) * x + sp
    else:
        w = pos_weight if isinstance(pos_weight, (int, float)) else as_tensor(pos_weight, "sigmoid_bce")
        loss = (1.0 - z) * x + ((w - 1.0) * z + 1.0) * sp
    return _reduce(loss, red, d)


def softmax_cross_entropy(logits: Any, labels: Any, axis: int = -1, reduction: str = "mean",
                          label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of ``softmax(logits, axis)`` against integer class labels or probabilities
    (PyTorch's ``cross_entropy``, with the class axis last by default, as JAX/optax).

    * Integer ``labels`` (shape: ``logits``' without ``axis``): the loss is
      ``-log_softmax(logits)[label]``.
    * Float ``labels`` (``logits``' shape): ``-sum(labels * log_softmax(logits), axis)``.

    ``label_smoothing = e`` mixes the target with the uniform distribution:
    ``(1 - e) target + e / C``.  ``"mean"`` averages the per-example losses (as PyTorch without
    class weights).  There is no ``ignore_index``.

    Args:
        logits: a real tensor with the classes along ``axis``.
        labels: integer labels in ``[0, C)`` or a tensor of probabilities.
        axis: the class axis (default -1; PyTorch's is 1).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
        label_smoothing: a number in ``[0, 1]``.
    Returns:
        A 0-d tensor, or the per-example losses for ``"none"``.
    Raises:
        TypeError: for complex logits or bool labels.
        ValueError: for mismatched shapes, labels out of range, an unknown reduction or a bad
            label_smoothing.
        IndexError: if ``axis`` is out of range.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.create(rt.float64, [2, 2], [0., 0., 10., -10.])
    >>> print(nn.softmax_cross_entropy(x, rt.create(rt.int32, [2], [0, 0]), reduction="none"))
    [0.693147, 2.06115e-09]
    """
    fname = "softmax_cross_entropy"
    red = _check_reduction(reduction, fname)
    ls = _scalar_float(label_smoothing, fname, "label_smoothing")
    if not 0.0 <= ls <= 1.0:
        raise ValueError(f"{fname}: label_smoothing must be in [0, 1], got {label_smoothing!r}")
    x = as_tensor(logits, fname)
    if x.dtype.kind not in "fiu":
        raise TypeError(f"{fname}: logits must be a real tensor, got dtype {x.dtype}")
    ax = normalize_axis(axis, x.ndim, fname)
    C = x.shape[ax]
    y = as_tensor(labels, fname)
    d = x.dtype if x.dtype.is_float else D.float64
    if y.dtype.is_int:
        want = tuple(n for i, n in enumerate(x.shape) if i != ax)
        if tuple(y.shape) != want:
            raise ValueError(f"{fname}: integer labels must have shape {want} (logits {x.shape} without axis "
                             f"{axis}), got {y.shape}")
        def check(lo: Any, hi: Any) -> None:
            if lo < 0 or hi >= C:
                raise ValueError(f"{fname}: label {lo if lo < 0 else hi} is out of range for {C} classes "
                                 f"(expected 0 <= label < {C})")

        check_values(y, check)  # a run-time guard under rt.jit
        xc = _compute(x, d)
        lsm = rt.log_softmax(xc, [ax])
        picked = rt.squeeze(rt.take_along_axis(lsm, rt.expand_dims(y, ax), ax), ax)
        loss = -picked
        if ls:
            loss = loss * (1.0 - ls) - rt.mean(lsm, [ax]) * ls
    elif y.dtype.is_float:
        if tuple(y.shape) != tuple(x.shape):
            raise ValueError(f"{fname}: probability labels must have logits' shape {x.shape}, got {y.shape}")
        d = rt.promote_types(d, y.dtype)
        xc = _compute(x, d)
        yc = _compute(y, d)
        if ls:
            yc = yc * (1.0 - ls) + ls / C
        loss = -rt.sum(yc * rt.log_softmax(xc, [ax]), [ax])
    else:
        raise TypeError(f"{fname}: labels must be integer class indices or float probabilities, "
                        f"got dtype {y.dtype}")
    return _reduce(loss, red, d)


def kl_div(input: Any, target: Any, reduction: str = "mean", log_target: bool = False) -> Tensor:  # noqa: A002
    """Kullback-Leibler divergence terms ``target * (log(target) - input)``, PyTorch's ``kl_div``
    convention: ``input`` holds **log-probabilities** of the model (e.g. ``rt.log_softmax(logits)``),
    ``target`` probabilities (log-probabilities with ``log_target=True``).

    Where ``target == 0`` the term is 0.  ``reduction="mean"`` averages over **every element**
    (PyTorch's default, which is not the KL divergence per example); ``"batchmean"`` divides the
    sum by the leading axis' size, which is ``KL(target || model)`` averaged over the batch.

    Args:
        input: log-probabilities.
        target: probabilities (or log-probabilities with ``log_target``) of ``input``'s shape.
        reduction: ``"mean"`` (default), ``"batchmean"``, ``"sum"`` or ``"none"``.
        log_target: whether ``target`` is given as log-probabilities.
    Returns:
        A 0-d tensor, or the element-wise terms for ``"none"``.
    Raises:
        TypeError: for complex input.
        ValueError: for different shapes or an unknown reduction.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> p = rt.create(rt.float64, [1, 2], [0.5, 0.5])
    >>> q = rt.log(rt.create(rt.float64, [1, 2], [0.25, 0.75]))
    >>> print(nn.kl_div(q, p, reduction="batchmean"))
    0.143841
    """
    red = _check_reduction(reduction, "kl_div", ("batchmean",))
    x, t, d = _pair(input, target, "kl_div", "input", "target")
    if log_target:
        loss = rt.exp(t) * (t - x)
    else:
        pos = t > 0
        loss = rt.where(pos, t * rt.log(rt.where(pos, t, 1.0)), 0.0) - t * x
    return _reduce(loss, red, d)
