"""Layers as functions: linear, embedding, layer_norm, batch_norm, dropout, scaled_dot_product_attention.

Parameters are arguments and state is returned (``batch_norm`` returns its new running
statistics); randomness takes a key of :mod:`runetensor.random`.  Shapes follow PyTorch's
functional API (``linear``'s weight is ``(out_features, in_features)``, ``batch_norm``'s channel
axis is 1, NCHW).  Low-precision floats (float16, bfloat16, float8) are computed in float32 and
rounded back once.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import runetensor as rt

from .. import _dtypes as D
from .._dtypes import DType
from .._guards import check_values
from .._special import _scalar_float
from .._tensor import Tensor, as_tensor, on_common
from .._validate import broadcast_shapes
from .. import random as rrandom

__all__ = ["linear", "embedding", "layer_norm", "batch_norm", "dropout", "scaled_dot_product_attention"]


def _float_tensor(x: Any, fname: str, what: str) -> Tensor:
    t = as_tensor(x, fname)
    if not t.dtype.is_float:
        raise TypeError(f"{fname}: {what} must be a real floating tensor, got dtype {t.dtype}")
    return t


def _compute(d: DType) -> DType:
    return D.float32 if d.is_low_precision else d


def _to(t: Tensor, d: DType) -> Tensor:
    return t if t.dtype is d else rt.astype(t, d)


def _common(fname: str, *ts: Tensor | None) -> DType:
    ds = [t.dtype for t in ts if t is not None]
    d = ds[0]
    for e in ds[1:]:
        d = rt.promote_types(d, e)
    return d


def linear(x: Any, weight: Any, bias: Any = None) -> Tensor:
    """Affine map ``x @ weight.T + bias`` (PyTorch's ``linear``; weight is ``(out, in)``).

    Args:
        x: a float tensor of shape ``(..., in_features)``.
        weight: a float tensor of shape ``(out_features, in_features)``.
        bias: None or a tensor of shape ``(out_features,)``.
    Returns:
        A new tensor of shape ``(..., out_features)`` (dtypes promote).
    Raises:
        TypeError: for non-float operands.
        ValueError: for mismatched shapes.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.create(rt.float32, [1, 2], [1., 2.])
    >>> w = rt.create(rt.float32, [3, 2], [1., 0., 0., 1., 1., 1.])
    >>> print(nn.linear(x, w, rt.create(rt.float32, [3], [0., 0., 10.])))
    [[1, 2, 13]]
    """
    x = _float_tensor(x, "linear", "x")
    w = _float_tensor(weight, "linear", "weight")
    if w.ndim != 2:
        raise ValueError(f"linear: weight must be 2-D (out_features, in_features), got shape {w.shape}")
    if x.ndim < 1 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"linear: x's last axis ({x.shape}) must match weight's in_features "
                         f"(weight shape {w.shape})")
    y = rt.matmul(x, rt.swapaxes(w, 0, 1))
    if bias is not None:
        b = _float_tensor(bias, "linear", "bias")
        if b.shape != (w.shape[0],):
            raise ValueError(f"linear: bias must have shape ({w.shape[0]},), got {b.shape}")
        y = y + b
    return y


def embedding(indices: Any, weight: Any) -> Tensor:
    """Rows of ``weight`` picked by integer ``indices`` (PyTorch's ``embedding``, without
    ``padding_idx``/``max_norm``): ``weight[indices]``.

    The gradient with respect to ``weight`` accumulates over repeated indices.

    Args:
        indices: an integer tensor of any shape, values in ``[0, num_embeddings)``.
        weight: a float tensor of shape ``(num_embeddings, dim)``.
    Returns:
        A new tensor of shape ``indices.shape + (dim,)``.
    Raises:
        TypeError: for non-integer indices or a non-float weight.
        ValueError: if weight is not 2-D.
        IndexError: for an index out of range (negative ones included).

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> w = rt.create(rt.float32, [3, 2], [0., 1., 10., 11., 20., 21.])
    >>> print(nn.embedding(rt.create(rt.int32, [2], [2, 0]), w))
    [[20, 21],
     [0, 1]]
    """
    idx = as_tensor(indices, "embedding")
    if not idx.dtype.is_int:
        raise TypeError(f"embedding: indices must be an integer tensor, got dtype {idx.dtype}")
    w = _float_tensor(weight, "embedding", "weight")
    if w.ndim != 2:
        raise ValueError(f"embedding: weight must be 2-D (num_embeddings, dim), got shape {w.shape}")
    n = w.shape[0]

    def check(lo: Any, hi: Any) -> None:
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            raise IndexError(f"embedding: index {bad} is out of range for {n} embeddings "
                             f"(expected 0 <= index < {n})")

    check_values(idx, check)  # a run-time guard under rt.jit
    # put both on the higher transformation level (rt.take of a lower-level weight with batched
    # indices fails under rt.vmap at the time of writing)
    _, (w, idx) = on_common("embedding", w, idx)
    return rt.take(w, idx, axis=0)


def layer_norm(x: Any, normalized_shape: int | Sequence[int], weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` axes: ``(x - mean) / sqrt(var + eps) * weight + bias``.

    The variance is the biased (population) one, as PyTorch.

    Args:
        x: a float tensor whose trailing axes are ``normalized_shape``.
        normalized_shape: an int or a sequence of ints.
        weight, bias: None or tensors of shape ``normalized_shape``.
        eps: a positive number added to the variance.
    Returns:
        A new tensor of ``x``'s shape and dtype.
    Raises:
        TypeError: for non-float tensors.
        ValueError: for mismatched shapes or a non-positive eps.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> print(nn.layer_norm(rt.create(rt.float64, [1, 3], [1., 2., 3.]), 3))
    [[-1.22474, 0, 1.22474]]
    """
    x = _float_tensor(x, "layer_norm", "x")
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or k > x.ndim or tuple(x.shape[x.ndim - k:]) != ns:
        raise ValueError(f"layer_norm: normalized_shape {ns} must be the trailing axes of x (shape {x.shape})")
    e = _scalar_float(eps, "layer_norm", "eps")
    if not e > 0:
        raise ValueError(f"layer_norm: eps must be positive, got {eps!r}")
    ps = {}
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            pt = _float_tensor(p, "layer_norm", name)
            if tuple(pt.shape) != ns:
                raise ValueError(f"layer_norm: {name} must have shape {ns}, got {pt.shape}")
            ps[name] = pt
    d = _common("layer_norm", x, *ps.values())
    cd = _compute(d)
    xc = _to(x, cd)
    ax = list(range(x.ndim - k, x.ndim))
    m = rt.mean(xc, ax, keepdims=True)
    c = xc - m
    v = rt.mean(c * c, ax, keepdims=True)
    y = c * rt.rsqrt(v + e)
    if "weight" in ps:
        y = y * _to(ps["weight"], cd)
    if "bias" in ps:
        y = y + _to(ps["bias"], cd)
    return _to(y, d) if d is not cd else y


def batch_norm(x: Any, running_mean: Any = None, running_var: Any = None, weight: Any = None, bias: Any = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5
               ) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """Batch normalisation over every axis but the channel axis 1 (NCHW), returning new running statistics.

    Training: normalise with the batch mean and biased variance, and return
    ``(1 - momentum) * running + momentum * batch_stat`` (the variance term unbiased,
    ``N / (N - 1)``, as PyTorch).  Inference: normalise with ``running_mean``/``running_var`` and
    return them unchanged.  Nothing is updated in place; the new statistics carry no derivative.

    Args:
        x: a float tensor of shape ``(N, C, ...)``.
        running_mean, running_var: None or tensors of shape ``(C,)`` (required for inference).
        weight, bias: None or tensors of shape ``(C,)``.
        training: use batch statistics (True) or the running ones (False).
        momentum: the running statistics' update weight, in ``[0, 1]``.
        eps: a positive number added to the variance.
    Returns:
        ``(y, new_running_mean, new_running_var)``; the statistics are None where not given.
    Raises:
        TypeError: for non-float tensors.
        ValueError: for mismatched shapes, missing running statistics in inference, a training
            batch with one value per channel, or a bad momentum/eps.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> x = rt.create(rt.float64, [2, 1], [1., 3.])
    >>> y, m, v = nn.batch_norm(x, rt.zeros(rt.float64, [1]), rt.ones(rt.float64, [1]), training=True)
    >>> print(y); print(m); print(v)
    [[-0.999995],
     [0.999995]]
    [0.2]
    [1.1]
    """
    fname = "batch_norm"
    x = _float_tensor(x, fname, "x")
    if x.ndim < 2:
        raise ValueError(f"batch_norm: x must have shape (N, C, ...), got {x.shape}")
    C = x.shape[1]
    mom = _scalar_float(momentum, fname, "momentum")
    if not 0.0 <= mom <= 1.0:
        raise ValueError(f"batch_norm: momentum must be in [0, 1], got {momentum!r}")
    e = _scalar_float(eps, fname, "eps")
    if not e > 0:
        raise ValueError(f"batch_norm: eps must be positive, got {eps!r}")
    params = {}
    for name, p in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if p is not None:
            pt = _float_tensor(p, fname, name)
            if tuple(pt.shape) != (C,):
                raise ValueError(f"batch_norm: {name} must have shape ({C},) for x of shape {x.shape}, "
                                 f"got {pt.shape}")
            params[name] = pt
    d = x.dtype
    cd = _compute(d)
    xc = _to(x, cd)
    ax = [0] + list(range(2, x.ndim))
    bshape = [1, C] + [1] * (x.ndim - 2)

    def col(t: Tensor) -> Tensor:
        return rt.reshape(_to(t, cd) if t.dtype is not cd else t, bshape)

    new_m, new_v = params.get("running_mean"), params.get("running_var")
    if training:
        n = x.size // C if C else 0
        if n <= 1:
            raise ValueError(f"batch_norm: training needs more than 1 value per channel, got x of shape {x.shape}")
        m = rt.mean(xc, ax, keepdims=True)
        c = xc - m
        v = rt.mean(c * c, ax, keepdims=True)
        y = c * rt.rsqrt(v + e)
        if new_m is not None:
            bm = rt.stop_gradient(rt.reshape(m, [C]))
            new_m = _to(new_m * (1.0 - mom) + _to(bm, new_m.dtype) * mom, new_m.dtype)
        if new_v is not None:
            bv = rt.stop_gradient(rt.reshape(v, [C])) * (n / (n - 1))
            new_v = _to(new_v * (1.0 - mom) + _to(bv, new_v.dtype) * mom, new_v.dtype)
    else:
        if new_m is None or new_v is None:
            raise ValueError("batch_norm: inference (training=False) needs running_mean and running_var")
        y = (xc - col(new_m)) * rt.rsqrt(col(new_v) + e)
    if "weight" in params:
        y = y * col(params["weight"])
    if "bias" in params:
        y = y + col(params["bias"])
    return (_to(y, d) if y.dtype is not d else y), new_m, new_v


def dropout(x: Any, rate: float, key: Any) -> Tensor:
    """Zero each element with probability ``rate`` and scale the rest by ``1 / (1 - rate)`` (inverted dropout).

    The mask is ``rt.random.bernoulli(key, 1 - rate, x.shape)``: a pure function of the key.
    ``rate=0`` returns ``x`` itself; ``rate=1`` gives zeros.  (Not to be confused with the seeded
    ``rt.dropout(x, seed=..., rate=...)`` of the main namespace.)

    Args:
        x: a float tensor.
        rate: the probability of dropping an element, in ``[0, 1]``.
        key: a key of :mod:`runetensor.random` (``rt.random.key(seed)``).
    Returns:
        A new tensor of ``x``'s shape and dtype (``x`` itself for ``rate=0``).
    Raises:
        TypeError: for a non-float ``x``, a non-number rate or a bad key.
        ValueError: for a rate outside ``[0, 1]``.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> y = nn.dropout(rt.ones(rt.float32, [1000]), 0.5, rt.random.key(0))
    >>> sorted(set(rt.to_array(y)))
    [0.0, 2.0]
    """
    x = _float_tensor(x, "dropout", "x")
    r = _scalar_float(rate, "dropout", "rate")
    if not 0.0 <= r <= 1.0:
        raise ValueError(f"dropout: rate must be in [0, 1], got {rate!r}")
    if r == 0.0:
        return x
    if r == 1.0:
        return x * 0.0
    keep = rrandom.bernoulli(key, 1.0 - r, tuple(x.shape))
    return rt.where(keep, x * (1.0 / (1.0 - r)), 0.0)


def scaled_dot_product_attention(q: Any, k: Any, v: Any, mask: Any = None, causal: bool = False,
                                 scale: float | None = None) -> Tensor:
    """Attention ``softmax(q @ k^T * scale + mask) @ v`` (PyTorch's ``scaled_dot_product_attention``).

    Shapes: ``q (..., L, E)``, ``k (..., S, E)``, ``v (..., S, Ev)`` with broadcasting leading
    axes; the result is ``(..., L, Ev)``.  Float16/bfloat16/float8 inputs are computed (products,
    softmax and accumulation) in float32 and the result rounded back once.

    Args:
        q, k, v: float tensors.
        mask: None; a bool tensor broadcastable to ``(..., L, S)``, True where a query may attend
            to a key; or a float tensor added to the scores (``-inf`` masks).
        causal: also mask key ``j > i`` for query ``i`` (top-left aligned, as PyTorch's ``is_causal``);
            may be combined with ``mask`` (PyTorch refuses both).
        scale: the score factor (default ``1 / sqrt(E)``).
    Returns:
        A new tensor of shape ``(..., L, Ev)``.  A query whose keys are all masked by a bool mask
        or ``causal`` gets zeros (PyTorch gives NaN); a float mask of all ``-inf`` gives NaN.
    Raises:
        TypeError: for non-float q/k/v or a mask of another kind.
        ValueError: for mismatched shapes.

    >>> import runetensor as rt
    >>> from runetensor import nn
    >>> q = rt.create(rt.float32, [2, 1], [1., 1.])
    >>> v = rt.create(rt.float32, [2, 1], [10., 20.])
    >>> print(nn.scaled_dot_product_attention(q, q, v, causal=True))
    [[10],
     [15]]
    """
    fname = "scaled_dot_product_attention"
    q = _float_tensor(q, fname, "q")
    k = _float_tensor(k, fname, "k")
    v = _float_tensor(v, fname, "v")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.ndim < 2:
            raise ValueError(f"{fname}: {name} must have at least 2 axes (..., length, features), got {t.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"{fname}: q and k must have the same feature size, got {q.shape} and {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{fname}: k and v must have the same length, got {k.shape} and {v.shape}")
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    d = _common(fname, q, k, v)
    cd = _compute(d)
    s = 1.0 / math.sqrt(E) if scale is None else _scalar_float(scale, fname, "scale")
    qc, kc, vc = _to(q, cd), _to(k, cd), _to(v, cd)
    scores = rt.matmul(qc, rt.swapaxes(kc, -1, -2)) * s
    keep = None
    if mask is not None:
        mt = as_tensor(mask, fname)
        try:
            broadcast_shapes(tuple(mt.shape), (L, S), fname=fname)
        except ValueError:
            raise ValueError(f"{fname}: mask of shape {mt.shape} does not broadcast to the scores' "
                             f"(..., {L}, {S})") from None
        if mt.dtype is D.bool:
            keep = mt
        elif mt.dtype.is_float:
            scores = scores + _to(mt, cd)
        else:
            raise TypeError(f"{fname}: mask must be a bool or float tensor, got dtype {mt.dtype}")
    if causal:
        tri = rt.tril(rt.ones(D.bool, [L, S]))
        keep = tri if keep is None else rt.logical_and(keep, tri)
    if keep is not None:
        scores = rt.where(keep, scores, -math.inf)
        # rows with no key left: give them finite scores (so nothing is NaN), zeroed below
        any_keep = rt.any(rt.broadcast_to(keep, tuple(scores.shape)), [-1], keepdims=True)
        scores = rt.where(any_keep, scores, 0.0)
        p = rt.softmax(scores, [-1])
        p = rt.where(keep, p, 0.0)
    else:
        p = rt.softmax(scores, [-1])
    out = rt.matmul(p, vc)
    return _to(out, d) if d is not cd else out
