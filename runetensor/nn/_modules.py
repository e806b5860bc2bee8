"""Layers as :class:`~runetensor.nn.Module` pytrees, with PyTorch's class names, constructor parameters,
parameter names and default initialisations (plus a keyword-only ``key=`` of :mod:`runetensor.random`).

Sequence layers are batch-first.  Layers with running state (the batch norms) take and return it
explicitly; randomness at call time (dropout) takes ``key=``.  Every layer's ``__call__`` is its
functional form in :mod:`runetensor.nn` applied to its fields.
"""
from __future__ import annotations

import inspect
import math
from typing import Any, NamedTuple, Sequence

import runetensor as rt

from .. import _dtypes as D
from .._tensor import Tensor
from . import _conv as C
from ._functional_extra import avg_pool3d, group_norm, max_pool3d, multi_head_attention, rms_norm
from ._layers import batch_norm, dropout, embedding, layer_norm, linear
from ._module import Module, static_field

__all__ = ["Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "Embedding", "LayerNorm", "RMSNorm", "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNormState",
           "Dropout", "MultiheadAttention", "KVCache", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "Sequential", "Lambda"]


def _size(v: Any, cls: str, what: str, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError(f"{cls}: {what} must be an int >= {lo}, got {v!r}")
    return v


def _tuple(v: Any, nd: int, cls: str, what: str) -> Any:
    if isinstance(v, str):
        return v
    t = tuple(v) if isinstance(v, (list, tuple)) else (v,) * nd
    if len(t) != nd or not all(isinstance(x, int) and not isinstance(x, bool) for x in t):
        raise ValueError(f"{cls}: {what} must be an int or a tuple of {nd} ints, got {v!r}")
    return t


def _float_dtype(dtype: Any, cls: str) -> Any:
    d = D.dtype_of(dtype)
    if not d.is_float:
        raise TypeError(f"{cls}: dtype must be a floating dtype, got {d}")
    return d


def _keys(key: Any, n: int, cls: str) -> list:
    if key is None:
        raise TypeError(f"{cls}: a key= of runetensor.random is needed to initialise the parameters "
                        "(e.g. key=rt.random.key(0))")
    ks = rt.random.split(key, n)
    return [ks[i] for i in range(n)]


def _uniform(key: Any, shape: Sequence[int], bound: float, dtype: Any) -> Tensor:
    return rt.random.uniform(key, list(shape), dtype, -bound, bound)


def _bound(fan_in: int) -> float:
    return 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0


# ---------------------------------------------------------------------------------------------
# dense, convolution, embedding
# ---------------------------------------------------------------------------------------------
class Linear(Module):
    """``y = x @ weight.T + bias``, as ``torch.nn.Linear``.

    ``weight (out_features, in_features)`` and ``bias (out_features,)`` are drawn from
    ``U(-1/sqrt(in_features), 1/sqrt(in_features))`` (PyTorch's default).

    Args:
        in_features, out_features: sizes.
        bias: whether to have a bias (``bias`` is None without).
        key: a key of :mod:`runetensor.random` (keyword-only).
        dtype: the parameters' floating dtype.

    >>> import runetensor as rt
    >>> lin = rt.nn.Linear(3, 2, key=rt.random.key(0))
    >>> lin(rt.ones(rt.float32, [5, 3])).shape
    (5, 2)
    """

    weight: Tensor
    bias: Tensor | None
    in_features: int = static_field()
    out_features: int = static_field()

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, key: Any, dtype: Any = D.float32):
        self.in_features = _size(in_features, "Linear", "in_features", 0)
        self.out_features = _size(out_features, "Linear", "out_features", 0)
        d = _float_dtype(dtype, "Linear")
        kw, kb = _keys(key, 2, "Linear")
        b = _bound(in_features)
        self.weight = _uniform(kw, (out_features, in_features), b, d)
        self.bias = _uniform(kb, (out_features,), b, d) if bias else None

    def __call__(self, x: Any) -> Tensor:
        return linear(x, self.weight, self.bias)


class _ConvNd(Module):
    weight: Tensor
    bias: Tensor | None
    in_channels: int = static_field()
    out_channels: int = static_field()
    kernel_size: tuple = static_field()
    stride: tuple = static_field()
    padding: Any = static_field()
    dilation: tuple = static_field()
    groups: int = static_field()
    _nd = 0
    _transposed = False

    def _setup(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any, padding: Any,
               dilation: Any, groups: int, bias: bool, key: Any, dtype: Any) -> None:
        cls, nd = type(self).__name__, self._nd
        self.in_channels = _size(in_channels, cls, "in_channels")
        self.out_channels = _size(out_channels, cls, "out_channels")
        self.groups = _size(groups, cls, "groups")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{cls}: groups={groups} must divide in_channels={in_channels} and "
                             f"out_channels={out_channels}")
        self.kernel_size = _tuple(kernel_size, nd, cls, "kernel_size")
        self.stride = _tuple(stride, nd, cls, "stride")
        self.padding = _tuple(padding, nd, cls, "padding")
        self.dilation = _tuple(dilation, nd, cls, "dilation")
        d = _float_dtype(dtype, cls)
        kw, kb = _keys(key, 2, cls)
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        b = _bound(shape[1] * math.prod(self.kernel_size))
        self.weight = _uniform(kw, shape, b, d)
        self.bias = _uniform(kb, (out_channels,), b, d) if bias else None


class _Conv(_ConvNd):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, *, key: Any, dtype: Any = D.float32):
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, key, dtype)

    def __call__(self, x: Any) -> Tensor:
        return C._convnd(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups,
                         self._nd, f"conv{self._nd}d")


class Conv1d(_Conv):
    """1-d convolution over ``(N, C, L)``, as ``torch.nn.Conv1d`` (weight ``(out, in/groups, k)``, PyTorch's
    default initialisation ``U(-b, b)``, ``b = 1/sqrt(in/groups * k)``).

    Args:
        in_channels, out_channels, kernel_size, stride, padding ('same'/'valid' or ints), dilation,
        groups, bias: as PyTorch.
        key: a key of :mod:`runetensor.random`; dtype: the parameters' dtype.

    >>> import runetensor as rt
    >>> rt.nn.Conv1d(2, 4, 3, padding=1, key=rt.random.key(0))(rt.ones(rt.float32, [1, 2, 5])).shape
    (1, 4, 5)
    """

    _nd = 1


class Conv2d(_Conv):
    """2-d convolution over ``(N, C, H, W)``, as ``torch.nn.Conv2d`` (see :class:`Conv1d`).

    >>> import runetensor as rt
    >>> rt.nn.Conv2d(1, 3, 3, key=rt.random.key(0))(rt.ones(rt.float32, [2, 1, 5, 5])).shape
    (2, 3, 3, 3)
    """

    _nd = 2


class Conv3d(_Conv):
    """3-d convolution over ``(N, C, D, H, W)``, as ``torch.nn.Conv3d`` (see :class:`Conv1d`).

    >>> import runetensor as rt
    >>> rt.nn.Conv3d(1, 2, 2, key=rt.random.key(0))(rt.ones(rt.float32, [1, 1, 3, 3, 3])).shape
    (1, 2, 2, 2, 2)
    """

    _nd = 3


class _ConvT(_ConvNd):
    output_padding: tuple = static_field()
    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1, *, key: Any,
                 dtype: Any = D.float32):
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, key, dtype)
        self.output_padding = _tuple(output_padding, self._nd, type(self).__name__, "output_padding")

    def __call__(self, x: Any) -> Tensor:
        return C._conv_transposend(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                   self.groups, self.dilation, self._nd, f"conv_transpose{self._nd}d")


class ConvTranspose1d(_ConvT):
    """1-d transposed convolution, as ``torch.nn.ConvTranspose1d`` (weight ``(in, out/groups, k)``,
    PyTorch's default initialisation with ``fan_in = out/groups * k``).

    >>> import runetensor as rt
    >>> rt.nn.ConvTranspose1d(2, 3, 3, stride=2, key=rt.random.key(0))(rt.ones(rt.float32, [1, 2, 4])).shape
    (1, 3, 9)
    """

    _nd = 1


class ConvTranspose2d(_ConvT):
    """2-d transposed convolution, as ``torch.nn.ConvTranspose2d`` (see :class:`ConvTranspose1d`).

    >>> import runetensor as rt
    >>> rt.nn.ConvTranspose2d(1, 2, 2, stride=2, key=rt.random.key(0))(rt.ones(rt.float32, [1, 1, 3, 3])).shape
    (1, 2, 6, 6)
    """

    _nd = 2


class ConvTranspose3d(_ConvT):
    """3-d transposed convolution, as ``torch.nn.ConvTranspose3d`` (see :class:`ConvTranspose1d`).

    >>> import runetensor as rt
    >>> rt.nn.ConvTranspose3d(1, 1, 2, key=rt.random.key(0))(rt.ones(rt.float32, [1, 1, 2, 2, 2])).shape
    (1, 1, 3, 3, 3)
    """

    _nd = 3


class Embedding(Module):
    """A lookup table, as ``torch.nn.Embedding``: ``weight (num_embeddings, embedding_dim)`` drawn from
    ``N(0, 1)``; called with integer indices of any shape.

    >>> import runetensor as rt
    >>> emb = rt.nn.Embedding(10, 4, key=rt.random.key(0))
    >>> emb(rt.asarray([[1, 2, 3]], dtype=rt.int32)).shape
    (1, 3, 4)
    """

    weight: Tensor
    num_embeddings: int = static_field()
    embedding_dim: int = static_field()

    def __init__(self, num_embeddings: int, embedding_dim: int, *, key: Any, dtype: Any = D.float32):
        self.num_embeddings = _size(num_embeddings, "Embedding", "num_embeddings")
        self.embedding_dim = _size(embedding_dim, "Embedding", "embedding_dim")
        if key is None:
            _keys(key, 1, "Embedding")
        self.weight = rt.random.normal(key, [num_embeddings, embedding_dim], _float_dtype(dtype, "Embedding"))

    def __call__(self, indices: Any) -> Tensor:
        return embedding(indices, self.weight)


# ---------------------------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------------------------
def _shape_tuple(v: Any, cls: str) -> tuple[int, ...]:
    t = (v,) if isinstance(v, int) and not isinstance(v, bool) else tuple(v)
    for n in t:
        _size(n, cls, "normalized_shape")
    return t


class LayerNorm(Module):
    """Layer normalisation over the trailing ``normalized_shape`` axes, as ``torch.nn.LayerNorm``
    (``weight`` ones, ``bias`` zeros; None without ``elementwise_affine``/``bias``).

    >>> import runetensor as rt
    >>> print(rt.nn.LayerNorm(2)(rt.asarray([[1., 3.]])))
    [[-0.999995, 0.999995]]
    """

    weight: Tensor | None
    bias: Tensor | None
    normalized_shape: tuple = static_field()
    eps: float = static_field()

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 *, dtype: Any = D.float32):
        self.normalized_shape = _shape_tuple(normalized_shape, "LayerNorm")
        self.eps = eps
        d = _float_dtype(dtype, "LayerNorm")
        self.weight = rt.ones(d, list(self.normalized_shape)) if elementwise_affine else None
        self.bias = rt.zeros(d, list(self.normalized_shape)) if elementwise_affine and bias else None

    def __call__(self, x: Any) -> Tensor:
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(Module):
    """Root-mean-square normalisation, as ``torch.nn.RMSNorm`` (``weight`` ones; ``eps=None`` is the
    machine epsilon of the input's dtype).

    >>> import runetensor as rt
    >>> print(rt.nn.RMSNorm(2, eps=1e-12)(rt.asarray([[3., 4.]])))
    [[0.848528, 1.13137]]
    """

    weight: Tensor | None
    normalized_shape: tuple = static_field()
    eps: Any = static_field()

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True, *,
                 dtype: Any = D.float32):
        self.normalized_shape = _shape_tuple(normalized_shape, "RMSNorm")
        self.eps = eps
        d = _float_dtype(dtype, "RMSNorm")
        self.weight = rt.ones(d, list(self.normalized_shape)) if elementwise_affine else None

    def __call__(self, x: Any) -> Tensor:
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)


class GroupNorm(Module):
    """Group normalisation over ``(N, C, ...)``, as ``torch.nn.GroupNorm`` (``weight`` ones, ``bias`` zeros).

    >>> import runetensor as rt
    >>> rt.nn.GroupNorm(2, 4)(rt.ones(rt.float32, [3, 4, 5])).shape
    (3, 4, 5)
    """

    weight: Tensor | None
    bias: Tensor | None
    num_groups: int = static_field()
    num_channels: int = static_field()
    eps: float = static_field()

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, *,
                 dtype: Any = D.float32):
        self.num_groups = _size(num_groups, "GroupNorm", "num_groups")
        self.num_channels = _size(num_channels, "GroupNorm", "num_channels")
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_groups={num_groups} must divide num_channels={num_channels}")
        self.eps = eps
        d = _float_dtype(dtype, "GroupNorm")
        self.weight = rt.ones(d, [num_channels]) if affine else None
        self.bias = rt.zeros(d, [num_channels]) if affine else None

    def __call__(self, x: Any) -> Tensor:
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


class BatchNormState(NamedTuple):
    """The running statistics of a batch norm layer (``(C,)`` tensors), passed in and returned by each call."""
    running_mean: Tensor
    running_var: Tensor


class _BatchNorm(Module):
    weight: Tensor | None
    bias: Tensor | None
    num_features: int = static_field()
    eps: float = static_field()
    momentum: float = static_field()
    track_running_stats: bool = static_field()
    _ranks: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, dtype: Any = D.float32):
        cls = type(self).__name__
        self.num_features = _size(num_features, cls, "num_features")
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = bool(track_running_stats)
        d = _float_dtype(dtype, cls)
        self.weight = rt.ones(d, [num_features]) if affine else None
        self.bias = rt.zeros(d, [num_features]) if affine else None

    def initial_state(self, dtype: Any = D.float32) -> BatchNormState | None:
        """The running statistics before training: means zeros, variances ones (None without
        ``track_running_stats``)."""
        if not self.track_running_stats:
            return None
        return BatchNormState(rt.zeros(dtype, [self.num_features]), rt.ones(dtype, [self.num_features]))

    def __call__(self, x: Any, state: BatchNormState | None = None, *,
                 training: bool = True) -> tuple[Tensor, BatchNormState | None]:
        """``(y, new_state)``: batch statistics (and updated running ones) when ``training``, else the
        running statistics of ``state`` (returned unchanged)."""
        cls = type(self).__name__
        xt = x if isinstance(x, Tensor) else rt.asarray(x)
        if xt.ndim not in self._ranks:
            raise ValueError(f"{cls}: expected an input of {' or '.join(map(str, self._ranks))} axes "
                             f"(N, C, ...), got shape {xt.shape}")
        if self.track_running_stats and state is None:
            raise TypeError(f"{cls}: pass the running statistics, e.g. y, state = bn(x, bn.initial_state())")
        if not self.track_running_stats:
            y, _, _ = batch_norm(xt, None, None, self.weight, self.bias, True, self.momentum, self.eps)
            return y, None
        rm, rv = state
        y, m, v = batch_norm(xt, rm, rv, self.weight, self.bias, bool(training), self.momentum, self.eps)
        return y, BatchNormState(m, v)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over ``(N, C)`` or ``(N, C, L)``, as ``torch.nn.BatchNorm1d``, with the running
    statistics passed explicitly: ``y, state = bn(x, state, training=True)``.

    >>> import runetensor as rt
    >>> bn = rt.nn.BatchNorm1d(3)
    >>> y, state = bn(rt.reshape(rt.arange_f(rt.float32, 0., 6., 1.), [2, 3]), bn.initial_state())
    >>> print(state.running_mean)
    [0.15, 0.25, 0.35]
    """

    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over ``(N, C, H, W)``, as ``torch.nn.BatchNorm2d`` (see :class:`BatchNorm1d`).

    >>> import runetensor as rt
    >>> bn = rt.nn.BatchNorm2d(2)
    >>> y, state = bn(rt.ones(rt.float32, [2, 2, 3, 3]), bn.initial_state(), training=False)
    >>> y.shape
    (2, 2, 3, 3)
    """

    _ranks = (4,)


# ---------------------------------------------------------------------------------------------
# dropout, attention
# ---------------------------------------------------------------------------------------------
class Dropout(Module):
    """Inverted dropout with probability ``p``: ``drop(x, key=k)``; without a key (``key=None``) it is
    the identity (inference).

    >>> import runetensor as rt
    >>> drop = rt.nn.Dropout(0.5)
    >>> sorted(set(rt.to_array(drop(rt.ones(rt.float32, [100]), key=rt.random.key(0)))))
    [0.0, 2.0]
    >>> print(drop(rt.ones(rt.float32, [2])))
    [1, 1]
    """

    p: float = static_field()

    def __init__(self, p: float = 0.5):
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {p!r}")
        self.p = float(p)

    def __call__(self, x: Any, *, key: Any = None) -> Any:
        if key is None or self.p == 0.0:
            return x
        return dropout(x, self.p, key)


class KVCache(NamedTuple):
    """The projected keys and values of the positions seen so far, ``(B, num_heads, T, head_dim)`` each."""
    k: Tensor
    v: Tensor


class MultiheadAttention(Module):
    """Multi-head attention, batch-first, as ``torch.nn.MultiheadAttention(..., batch_first=True)``.

    Parameters: ``in_proj_weight (3E, E)`` (Xavier-uniform), ``in_proj_bias (3E,)`` (zeros) and
    ``out_proj`` (a :class:`Linear`, bias zeros), PyTorch's names and initialisation.  Called as
    ``mha(q, k, v, mask=None)`` with ``(B, L, E)`` inputs; ``mask="causal"``, a bool tensor (**True
    where a query may attend**, the opposite of PyTorch's boolean ``attn_mask``) or a float tensor
    added to the scores.  It returns the output only (not the attention weights).  Decoding with a
    KV cache: ``cache = mha.init_cache(B)``, then ``out, cache = mha(x, x, x, mask="causal", cache=cache)``
    one chunk of positions at a time.  Dropout on the attention weights applies when ``key=`` is given.

    >>> import runetensor as rt
    >>> mha = rt.nn.MultiheadAttention(8, 2, key=rt.random.key(0))
    >>> x = rt.random.normal(rt.random.key(1), [2, 5, 8])
    >>> full = mha(x, x, x, mask="causal")
    >>> cache = mha.init_cache(2)
    >>> first, cache = mha(x[:, :3], x[:, :3], x[:, :3], mask="causal", cache=cache)
    >>> last, cache = mha(x[:, 3:], x[:, 3:], x[:, 3:], mask="causal", cache=cache)
    >>> bool(rt.max(rt.abs(last - full[:, 3:])) < 1e-5)
    True
    """

    in_proj_weight: Tensor
    in_proj_bias: Tensor | None
    out_proj: Linear
    embed_dim: int = static_field()
    num_heads: int = static_field()
    dropout: float = static_field()

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True, *, key: Any,
                 dtype: Any = D.float32):
        self.embed_dim = _size(embed_dim, "MultiheadAttention", "embed_dim")
        self.num_heads = _size(num_heads, "MultiheadAttention", "num_heads")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: num_heads={num_heads} must divide embed_dim={embed_dim}")
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be a probability in [0, 1], got {dropout!r}")
        self.dropout = float(dropout)
        d = _float_dtype(dtype, "MultiheadAttention")
        k1, k2 = _keys(key, 2, "MultiheadAttention")
        E = embed_dim
        self.in_proj_weight = _uniform(k1, (3 * E, E), math.sqrt(6.0 / (E + 3 * E)), d)
        self.in_proj_bias = rt.zeros(d, [3 * E]) if bias else None
        out = Linear(E, E, bias=bias, key=k2, dtype=d)
        self.out_proj = out.replace(bias=rt.zeros(d, [E])) if bias else out

    def init_cache(self, batch_size: int, dtype: Any = D.float32) -> KVCache:
        """An empty cache (no positions yet) for ``batch_size`` sequences."""
        shape = [_size(batch_size, "MultiheadAttention.init_cache", "batch_size"), self.num_heads, 0,
                 self.embed_dim // self.num_heads]
        return KVCache(rt.zeros(dtype, shape), rt.zeros(dtype, shape))

    def __call__(self, q: Any, k: Any, v: Any, mask: Any = None, *, key: Any = None,
                 cache: KVCache | None = None) -> Any:
        out = multi_head_attention(q, k, v, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                                   self.out_proj.weight, self.out_proj.bias, mask=mask, dropout_p=self.dropout,
                                   dropout_key=key, kv_cache=None if cache is None else tuple(cache),
                                   return_kv=cache is not None)
        if cache is None:
            return out
        o, (kk, vv) = out
        return o, KVCache(kk, vv)


# ---------------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------------
class _MaxPool(Module):
    kernel_size: Any = static_field()
    stride: Any = static_field()
    padding: Any = static_field()
    dilation: Any = static_field()
    ceil_mode: bool = static_field()
    _fn: Any = None

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 ceil_mode: bool = False):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, bool(ceil_mode)

    def __call__(self, x: Any) -> Tensor:
        return type(self)._fn(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class _AvgPool(Module):
    kernel_size: Any = static_field()
    stride: Any = static_field()
    padding: Any = static_field()
    ceil_mode: bool = static_field()
    count_include_pad: bool = static_field()
    divisor_override: Any = static_field()
    _fn: Any = None

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)
        self.divisor_override = divisor_override

    def __call__(self, x: Any) -> Tensor:
        return type(self)._fn(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)


def _static(f: Any) -> Any:
    return staticmethod(f)


class MaxPool1d(_MaxPool):
    """1-d max pooling, as ``torch.nn.MaxPool1d`` (see :func:`runetensor.nn.max_pool1d`).

    >>> import runetensor as rt
    >>> print(rt.nn.MaxPool1d(2)(rt.asarray([[[1., 3., 2., 5.]]])))
    [[[3, 5]]]
    """

    _fn = _static(C.max_pool1d)


class MaxPool2d(_MaxPool):
    """2-d max pooling, as ``torch.nn.MaxPool2d`` (see :func:`runetensor.nn.max_pool2d`).

    >>> import runetensor as rt
    >>> rt.nn.MaxPool2d(2)(rt.ones(rt.float32, [1, 1, 4, 4])).shape
    (1, 1, 2, 2)
    """

    _fn = _static(C.max_pool2d)


class MaxPool3d(_MaxPool):
    """3-d max pooling, as ``torch.nn.MaxPool3d`` (see :func:`runetensor.nn.max_pool3d`).

    >>> import runetensor as rt
    >>> rt.nn.MaxPool3d(2)(rt.ones(rt.float32, [1, 1, 4, 4, 4])).shape
    (1, 1, 2, 2, 2)
    """

    _fn = _static(max_pool3d)


class AvgPool1d(_AvgPool):
    """1-d average pooling, as ``torch.nn.AvgPool1d`` (see :func:`runetensor.nn.avg_pool1d`).

    >>> import runetensor as rt
    >>> print(rt.nn.AvgPool1d(2)(rt.asarray([[[1., 3., 2., 6.]]])))
    [[[2, 4]]]
    """

    _fn = _static(C.avg_pool1d)


class AvgPool2d(_AvgPool):
    """2-d average pooling, as ``torch.nn.AvgPool2d`` (see :func:`runetensor.nn.avg_pool2d`).

    >>> import runetensor as rt
    >>> rt.nn.AvgPool2d(2)(rt.ones(rt.float32, [1, 1, 4, 4])).shape
    (1, 1, 2, 2)
    """

    _fn = _static(C.avg_pool2d)


class AvgPool3d(_AvgPool):
    """3-d average pooling, as ``torch.nn.AvgPool3d`` (see :func:`runetensor.nn.avg_pool3d`).

    >>> import runetensor as rt
    >>> rt.nn.AvgPool3d(2)(rt.ones(rt.float32, [1, 1, 4, 4, 4])).shape
    (1, 1, 2, 2, 2)
    """

    _fn = _static(avg_pool3d)


# ---------------------------------------------------------------------------------------------
# containers
# ---------------------------------------------------------------------------------------------
class Lambda(Module):
    """A function as a layer (no parameters): ``Lambda(rt.nn.relu)(x)`` is ``rt.nn.relu(x)``.

    >>> import runetensor as rt
    >>> print(rt.nn.Lambda(rt.nn.relu)(rt.asarray([-1., 2.])))
    [0, 2]
    """

    fn: Any = static_field()

    def __init__(self, fn: Any):
        if not callable(fn):
            raise TypeError(f"Lambda: expected a callable, got {type(fn).__name__}")
        self.fn = fn

    def __call__(self, x: Any) -> Any:
        return self.fn(x)


def _takes_key(layer: Any) -> bool:
    try:
        return "key" in inspect.signature(layer).parameters
    except (TypeError, ValueError):
        return False


class Sequential(Module):
    """Layers applied in order, as ``torch.nn.Sequential``; plain functions are wrapped in :class:`Lambda`.

    ``seq(x, key=k)`` splits ``k`` over the layers that take a ``key`` (dropout); without a key they
    run as in inference.  Layers that return running state (batch norms) do not fit in a Sequential.

    >>> import runetensor as rt
    >>> k1, k2 = rt.random.split(rt.random.key(0))
    >>> net = rt.nn.Sequential(rt.nn.Linear(4, 8, key=k1), rt.nn.relu, rt.nn.Linear(8, 2, key=k2))
    >>> net(rt.ones(rt.float32, [3, 4])).shape
    (3, 2)
    >>> len(net), type(net[1]).__name__
    (3, 'Lambda')
    """

    layers: tuple

    def __init__(self, *layers: Any):
        out = []
        for i, layer in enumerate(layers):
            if not isinstance(layer, Module):
                if not callable(layer):
                    raise TypeError(f"Sequential: layer {i} is not callable ({type(layer).__name__})")
                layer = Lambda(layer)
            out.append(layer)
        self.layers = tuple(out)

    def __call__(self, x: Any, *, key: Any = None) -> Any:
        takes = [_takes_key(layer) for layer in self.layers]
        keys: list = [None] * len(self.layers)
        if key is not None and any(takes):
            ks = rt.random.split(key, sum(takes))
            it = iter(range(sum(takes)))
            keys = [ks[next(it)] if t else None for t in takes]
        for layer, t, k in zip(self.layers, takes, keys):
            x = layer(x, key=k) if t else layer(x)
        return x

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return Sequential(*self.layers[i])
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Any:
        return iter(self.layers)
