"""The core of ``rt.optim``: :class:`GradientTransformation`, the helpers every transformation is
written with (the conventions are in :mod:`runetensor.optim`'s docstring), ``sgd``, ``adam``,
``adamw``, ``rmsprop``, ``adagrad``, ``lion``, gradient clipping, ``chain`` and the schedules.

:mod:`runetensor.optim` re-exports these names with those of :mod:`runetensor._optim_extra`,
which builds on the helpers here.
"""
from __future__ import annotations

import builtins
import math
import numbers
from typing import Any, Callable, NamedTuple

import runetensor as rt  # the public namespace (imported first: this module loads after it)

from . import _dtypes as D
from ._guards import check_values
from ._tensor import Tensor
from ._treepaths import leaf_paths

__all__ = ["GradientTransformation", "apply_updates", "sgd", "adam", "adamw", "rmsprop", "adagrad", "lion",
           "clip_by_global_norm", "global_norm", "chain", "constant_schedule", "cosine_decay_schedule",
           "warmup_cosine_decay_schedule", "exponential_decay",
           "SgdState", "AdamState", "RmspropState", "AdagradState", "LionState"]


class GradientTransformation(NamedTuple):
    """An optimizer: ``init(params) -> state`` and ``update(grads, state, params=None) -> (updates, state)``."""
    init: Callable[[Any], Any]
    update: Callable[..., tuple[Any, Any]]


class SgdState(NamedTuple):
    """State of :func:`sgd`: the update count (0-d int32 tensor) and the momentum buffers (None without momentum)."""
    count: Any
    momentum: Any


class AdamState(NamedTuple):
    """State of :func:`adam`/:func:`adamw`: the update count (0-d int32 tensor), first and second moments."""
    count: Any
    mu: Any
    nu: Any


class RmspropState(NamedTuple):
    """State of :func:`rmsprop`: count, squared-gradient average, gradient average (centered) and momentum."""
    count: Any
    nu: Any
    mu: Any
    momentum: Any


class AdagradState(NamedTuple):
    """State of :func:`adagrad`: the update count (0-d int32 tensor) and the sums of squared gradients."""
    count: Any
    sum: Any


class LionState(NamedTuple):
    """State of :func:`lion`: the update count (0-d int32 tensor) and the momentum."""
    count: Any
    mu: Any


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------

def _flat(tree: Any, fname: str, what: str) -> tuple[list, Any]:
    leaves, tdef = rt.tree_flatten(tree)
    for x in leaves:
        if not isinstance(x, Tensor):
            raise TypeError(f"{fname}: every leaf of {what} must be a tensor, got {type(x).__name__}")
        if not x.dtype.is_float:
            raise TypeError(f"{fname}: every leaf of {what} must have a real floating dtype, got {x.dtype}")
    return leaves, tdef


def _same(a: list, ta: Any, b: list, tb: Any, fname: str, what: str, a_what: str = "grads") -> None:
    """``b`` (the leaves of ``what``) has the structure, shapes and dtypes of ``a`` (of ``a_what``)."""
    if ta != tb or len(a) != len(b):
        raise ValueError(f"{fname}: {what} has structure {tb}, expected the structure {ta} of the {a_what}")
    for i, (x, y) in enumerate(zip(a, b)):
        if tuple(x.shape) != tuple(y.shape) or x.dtype is not y.dtype:
            pa, pb = leaf_paths(ta, a_what)[i], leaf_paths(tb, what)[i]
            if tuple(x.shape) != tuple(y.shape):
                raise ValueError(f"{fname}: {pb} has shape {tuple(y.shape)} where {pa} has shape "
                                 f"{tuple(x.shape)}")
            raise TypeError(f"{fname}: {pa} has dtype {x.dtype} but {pb} has dtype {y.dtype}; gradients and "
                            f"updates must have their parameters' dtype (cast them with rt.cast, or compute "
                            f"the loss in the parameters' dtype)")


def _number(v: Any, fname: str, what: str, lo: float = 0.0, hi: float = math.inf, lo_open: bool = False,
            hi_open: bool = False) -> float:
    """A hyperparameter given as a Python (or NumPy) real number, checked against its range."""
    if isinstance(v, builtins.bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{fname}: {what} must be a real number (int or float), got {type(v).__name__} {v!r}")
    v = builtins.float(v)
    ok = (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
    if not ok or math.isnan(v):
        lb, rb = ("(" if lo_open else "["), (")" if hi_open else "]")
        raise ValueError(f"{fname}: {what} must be in {lb}{lo}, {hi}{rb}, got {v}")
    return v


def _lr(lr: Any, fname: str) -> Any:
    """A learning rate: a number >= 0, a 0-d real float tensor (checked ``>= 0`` where it is
    used, at run time under jit), or a schedule (any callable, called with the count tensor)."""
    if isinstance(lr, Tensor):
        if lr.ndim != 0 or not lr.dtype.is_float:
            raise TypeError(f"{fname}: a tensor lr must be a 0-d real float tensor, got shape {lr.shape} "
                            f"dtype {lr.dtype}")
        return lr
    if callable(lr):
        return lr
    if isinstance(lr, builtins.bool) or not isinstance(lr, numbers.Real):
        raise TypeError(f"{fname}: lr must be a number, a 0-d float tensor or a schedule (a function of the "
                        f"step count), got {type(lr).__name__} {lr!r}")
    return _number(lr, fname, "lr", 0.0, math.inf, hi_open=True)


def _check_nonneg(v: Tensor, fname: str, what: str) -> None:
    """A ``>= 0`` check of the 0-d tensor ``v``'s value (a run-time guard under jit)."""

    def check(lo: Any, hi: Any) -> None:
        if not lo >= 0:
            raise ValueError(f"{fname}: {what} must be >= 0, got {lo}")

    check_values(v, check)


def _lr_at(lr: Any, count: Any, fname: str) -> Any:
    """The learning rate for the update at ``count``: a Python float or a 0-d tensor."""
    v = lr(count) if callable(lr) and not isinstance(lr, Tensor) else lr
    if isinstance(v, Tensor):
        if v.ndim != 0 or v.dtype.kind not in "fiu":
            raise TypeError(f"{fname}: the learning rate (schedule value) must be a 0-d real tensor or a number, "
                            f"got shape {v.shape} dtype {v.dtype}")
        _check_nonneg(v, fname, "the learning rate")
        return v
    if isinstance(v, builtins.bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{fname}: the learning rate schedule returned {type(v).__name__} {v!r}; expected a 0-d "
                        f"tensor or a number")
    return builtins.float(v)


def _mul(x: Tensor, f: Any) -> Tensor:
    """``x * f`` for a Python float or a 0-d tensor ``f`` (cast to ``x``'s dtype first: the same
    rounding as a Python float's)."""
    return x * (rt.cast(f, x.dtype) if isinstance(f, Tensor) else f)


def _cast_once(f: Any) -> Any:
    """``d -> rt.cast(f, d)`` for a 0-d tensor ``f``, computed once per dtype (``f`` itself for a Python
    float): the factor that :func:`_mul` would cast for each leaf, cast once."""
    if not isinstance(f, Tensor):
        return lambda d: f
    got: dict = {}

    def at(d: Any) -> Any:
        r = got.get(d)
        if r is None:
            r = got[d] = rt.cast(f, d)
        return r
    return at


def _neg(f: Any) -> Any:
    return -f


def _count_init() -> Tensor:
    """The initial update count of a state: a 0-d int32 tensor holding 0."""
    return rt.zeros(D.int32, [])


def _count(c: Any, fname: str) -> Tensor:
    """A state's count, checked (a 0-d integer tensor; shape and dtype only)."""
    if not isinstance(c, Tensor) or c.ndim != 0 or not c.dtype.is_int:
        got = f"tensor of shape {c.shape} dtype {c.dtype}" if isinstance(c, Tensor) else type(c).__name__
        raise TypeError(f"{fname}: state.count must be the 0-d integer tensor made by init, got {got}")
    return c


def _count_next(c: Tensor) -> Tensor:
    """``count + 1`` (same dtype)."""
    return c + 1


def _nonneg(v: Any, fname: str, what: str) -> float:
    """A finite number >= 0 (a weight decay, an accumulator's start, a decay rate)."""
    return _number(v, fname, what, 0.0, math.inf, hi_open=True)


def _state(tree: Any, g: list, tg: Any, fname: str, what: str) -> list:
    """The leaves of a state field, checked against the gradients' structure and shapes."""
    x, tx = _flat(tree, fname, what)
    _same(g, tg, x, tx, fname, what)
    return x


def _add_decay(u: list, g: list, wd: float, params: Any, tg: Any, fname: str) -> list:
    """``u + wd * params``, leaf by leaf (``params`` checked against the gradients ``g``)."""
    return [x + wd * y for x, y in zip(u, _params(params, g, tg, fname))]


def _scaled(tdef: Any, leaves: list, factor: Any) -> Any:
    """The pytree of ``leaf * factor`` (an update ``-lr * direction``; ``factor`` a float or 0-d tensor)."""
    f = _cast_once(factor)
    return _unflat(tdef, [x * f(x.dtype) for x in leaves])


def _zeros(leaves: list) -> list:
    return [rt.zeros_like(x) for x in leaves]


def _zero_moments(params: Any, fname: str) -> tuple[Any, Any]:
    """Two trees of zeros shaped as ``params``: the first and second moments of an Adam-like state."""
    p, tp = _flat(params, fname, "params")
    return _unflat(tp, _zeros(p)), _unflat(tp, _zeros(p))


def _adam_moments(g: list, m: list, v: list, b1: float, b2: float) -> tuple[list, list]:
    """Adam's moment updates ``m <- b1 m + (1 - b1) g`` and ``v <- b2 v + (1 - b2) g**2``."""
    return ([b1 * y + (1.0 - b1) * x for x, y in zip(g, m)],
            [b2 * y + (1.0 - b2) * (x * x) for x, y in zip(g, v)])


def _params(params: Any, g: list, tg: Any, fname: str) -> list:
    if params is None:
        raise ValueError(f"{fname}: update needs params when weight_decay is not 0 (update(grads, state, params))")
    p, tp = _flat(params, fname, "params")
    _same(g, tg, p, tp, fname, "params")
    return p


def _check_state(state: Any, cls: type, fname: str) -> Any:
    if not isinstance(state, cls):
        raise TypeError(f"{fname}: state must be the {cls.__name__} from this optimizer's init, "
                        f"got {type(state).__name__}")
    return state


def _unflat(tdef: Any, leaves: list | None) -> Any:
    return None if leaves is None else rt.tree_unflatten(tdef, leaves)


def apply_updates(params: Any, updates: Any) -> Any:
    """``params + updates``, leaf by leaf (each update must have its parameter's dtype).

    Args:
        params: a pytree of real floating tensors.
        updates: a pytree of the same structure and shapes (from an optimizer's ``update``).
    Returns:
        The new parameters (a new pytree; ``params`` is not modified).
    Raises:
        TypeError: if a leaf is not a real floating tensor, or an update's dtype differs from its
            parameter's (named by path; no silent cast).
        ValueError: if the structures or shapes differ.

    >>> import runetensor as rt
    >>> p = {"w": rt.ones(rt.float32, [2])}
    >>> print(rt.optim.apply_updates(p, {"w": rt.full(rt.float32, [2], -0.5)})["w"])
    [0.5, 0.5]
    """
    u, tu = _flat(updates, "apply_updates", "updates")
    p, tp = _flat(params, "apply_updates", "params")
    _same(p, tp, u, tu, "apply_updates", "updates", "params")
    return rt.tree_unflatten(tp, [x + d for x, d in zip(p, u)])


# ---------------------------------------------------------------------------------------------
# optimizers
# ---------------------------------------------------------------------------------------------

def sgd(lr: Any, momentum: float = 0.0, nesterov: bool = False, weight_decay: float = 0.0) -> GradientTransformation:
    """Stochastic gradient descent with optional (Nesterov) momentum, as ``torch.optim.SGD``.

    ``g <- g + weight_decay * p``; with momentum ``b <- momentum * b + g`` (``b = g`` at the first
    step) and the step is ``g + momentum * b`` (Nesterov) or ``b``; the update is
    ``-lr * step``.

    Args:
        lr: the learning rate (a number >= 0 or a schedule).
        momentum: in ``[0, 1]`` (default 0: plain gradient descent).
        nesterov: Nesterov momentum (needs ``momentum > 0``).
        weight_decay: L2 penalty coefficient added to the gradient (default 0).
    Returns:
        A :class:`GradientTransformation`.
    Raises:
        TypeError: for non-numeric arguments.
        ValueError: for arguments out of range, or ``nesterov`` without momentum.

    >>> import runetensor as rt
    >>> opt = rt.optim.sgd(0.1)
    >>> p = rt.ones(rt.float32, [2])
    >>> u, s = opt.update(rt.full(rt.float32, [2], 2.0), opt.init(p))
    >>> print(rt.optim.apply_updates(p, u))
    [0.8, 0.8]
    """
    fname = "sgd"
    lr = _lr(lr, fname)
    mom = _number(momentum, fname, "momentum", 0.0, 1.0)
    wd = _nonneg(weight_decay, fname, "weight_decay")
    if nesterov and mom == 0.0:
        raise ValueError("sgd: nesterov=True needs momentum > 0")

    def init(params: Any) -> SgdState:
        p, tp = _flat(params, fname, "params")
        return SgdState(_count_init(), _unflat(tp, _zeros(p)) if mom else None)

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, SgdState]:
        s = _check_state(state, SgdState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        if wd:
            g = _add_decay(g, g, wd, params, tg, fname)
        step = _lr_at(lr, count, fname)
        buf = None
        if mom:
            b = _state(s.momentum, g, tg, fname, "state.momentum")
            first = count == 0  # the buffer starts as the first gradient (exactly, -0.0 included)
            buf = [rt.where(first, x, mom * y + x) for x, y in zip(g, b)]
            d = [x + mom * y for x, y in zip(g, buf)] if nesterov else buf
        else:
            d = g
        return _scaled(tg, d, _neg(step)), SgdState(_count_next(count), _unflat(tg, buf))

    return GradientTransformation(init, update)


def _adam(fname: str, lr: Any, b1: float, b2: float, eps: float, weight_decay: float,
          decoupled: bool) -> GradientTransformation:
    lr = _lr(lr, fname)
    b1 = _number(b1, fname, "b1", 0.0, 1.0, hi_open=True)
    b2 = _number(b2, fname, "b2", 0.0, 1.0, hi_open=True)
    eps = _number(eps, fname, "eps", 0.0)
    wd = _nonneg(weight_decay, fname, "weight_decay")

    def init(params: Any) -> AdamState:
        return AdamState(_count_init(), *_zero_moments(params, fname))

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, AdamState]:
        s = _check_state(state, AdamState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        m = _state(s.mu, g, tg, fname, "state.mu")
        v = _state(s.nu, g, tg, fname, "state.nu")
        p = _params(params, g, tg, fname) if wd else None
        if wd and not decoupled:
            g = [x + wd * y for x, y in zip(g, p)]
        t = _count_next(count)
        step = _lr_at(lr, count, fname)
        # the bias corrections in float64 tensor operations on the count (the same values as
        # Python floats' 1 - b1**t and sqrt(1 - b2**t)), rounded to each leaf's dtype where used
        tf = rt.cast(t, D.float64)
        c1 = 1.0 - b1 ** tf
        c2s = rt.sqrt(1.0 - b2 ** tf)
        m, v = _adam_moments(g, m, v, b1, b2)
        # PyTorch's form: lr / c1 * m / (sqrt(v) / sqrt(c2) + eps)
        f1, f2 = _cast_once(c1), _cast_once(c2s)
        u = [mm / f1(mm.dtype) / (rt.sqrt(vv) / f2(vv.dtype) + eps) for mm, vv in zip(m, v)]
        if wd and decoupled:
            u = [x + wd * y for x, y in zip(u, p)]
        return _scaled(tg, u, _neg(step)), AdamState(t, _unflat(tg, m), _unflat(tg, v))

    return GradientTransformation(init, update)


def adam(lr: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
         weight_decay: float = 0.0) -> GradientTransformation:
    """Adam (Kingma and Ba, 2015) with bias correction, as ``torch.optim.Adam``.

    ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g**2`` and the update is
    ``-lr * (m / (1 - b1**t)) / (sqrt(v / (1 - b2**t)) + eps)`` at step ``t = 1, 2, ...``;
    ``weight_decay`` adds ``weight_decay * p`` to the gradient first (L2, coupled; for
    decoupled decay use :func:`adamw`).

    Args:
        lr: the learning rate (a number >= 0 or a schedule).
        b1, b2: the moment decay rates, in ``[0, 1)``.
        eps: added to the denominator (outside the square root, as PyTorch and optax).
        weight_decay: L2 coefficient (default 0).
    Returns:
        A :class:`GradientTransformation`.
    Raises:
        TypeError: for non-numeric arguments.
        ValueError: for arguments out of range.

    >>> import runetensor as rt
    >>> opt = rt.optim.adam(0.1)
    >>> p = rt.zeros(rt.float32, [2])
    >>> u, s = opt.update(rt.full(rt.float32, [2], 3.0), opt.init(p))
    >>> print(u)  # the first step has size lr whatever the gradient's scale
    [-0.1, -0.1]
    """
    return _adam("adam", lr, b1, b2, eps, weight_decay, False)


def adamw(lr: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
          weight_decay: float = 0.01) -> GradientTransformation:
    """AdamW (Loshchilov and Hutter, 2019): Adam with decoupled weight decay, as ``torch.optim.AdamW``.

    The update is ``-lr * (adam_direction + weight_decay * p)``, the decay scaled by the
    (scheduled) learning rate as in PyTorch and optax.

    Args:
        lr: the learning rate (a number >= 0 or a schedule).
        b1, b2, eps: as in :func:`adam`.
        weight_decay: the decoupled decay coefficient (default 0.01, PyTorch's; optax's is 1e-4).
    Returns:
        A :class:`GradientTransformation`; its ``update`` needs ``params`` when ``weight_decay > 0``.
    Raises:
        TypeError: for non-numeric arguments.
        ValueError: for arguments out of range.

    >>> import runetensor as rt
    >>> opt = rt.optim.adamw(0.1, weight_decay=0.5)
    >>> p = rt.ones(rt.float32, [1])
    >>> u, s = opt.update(rt.ones(rt.float32, [1]), opt.init(p), p)
    >>> print(u)  # -0.1 * (1 + 0.5 * 1)
    [-0.15]
    """
    return _adam("adamw", lr, b1, b2, eps, weight_decay, True)


def rmsprop(lr: Any, decay: float = 0.99, eps: float = 1e-8, momentum: float = 0.0, centered: bool = False,
            weight_decay: float = 0.0) -> GradientTransformation:
    """RMSprop (Tieleman and Hinton, 2012), as ``torch.optim.RMSprop``.

    ``v <- decay v + (1 - decay) g**2``; centered: ``a <- decay a + (1 - decay) g`` and the
    denominator is ``sqrt(v - a**2) + eps``, else ``sqrt(v) + eps``; with momentum
    ``b <- momentum b + g / denominator`` and the update is ``-lr b``, else
    ``-lr g / denominator``.  No bias correction.

    Args:
        lr: the learning rate (a number >= 0 or a schedule).
        decay: the averaging rate (PyTorch's ``alpha``), in ``[0, 1]``; default 0.99 (optax: 0.9).
        eps: added outside the square root (optax adds it inside).
        momentum: in ``[0, 1]`` (default 0).
        centered: normalise by the estimated variance instead of the second moment.
        weight_decay: L2 coefficient added to the gradient (default 0).
    Returns:
        A :class:`GradientTransformation`.
    Raises:
        TypeError: for non-numeric arguments.
        ValueError: for arguments out of range.

    >>> import runetensor as rt
    >>> opt = rt.optim.rmsprop(0.01, decay=0.75)
    >>> u, s = opt.update(rt.full(rt.float64, [1], 2.0), opt.init(rt.zeros(rt.float64, [1])))
    >>> print(u)  # -0.01 * 2 / (sqrt(0.25 * 4) + 1e-8)
    [-0.02]
    """
    fname = "rmsprop"
    lr = _lr(lr, fname)
    rho = _number(decay, fname, "decay", 0.0, 1.0)
    eps = _number(eps, fname, "eps", 0.0)
    mom = _number(momentum, fname, "momentum", 0.0, 1.0)
    wd = _nonneg(weight_decay, fname, "weight_decay")

    def init(params: Any) -> RmspropState:
        p, tp = _flat(params, fname, "params")
        return RmspropState(_count_init(), _unflat(tp, _zeros(p)), _unflat(tp, _zeros(p)) if centered else None,
                            _unflat(tp, _zeros(p)) if mom else None)

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, RmspropState]:
        s = _check_state(state, RmspropState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        if wd:
            g = _add_decay(g, g, wd, params, tg, fname)
        v = _state(s.nu, g, tg, fname, "state.nu")
        v = [rho * y + (1.0 - rho) * (x * x) for x, y in zip(g, v)]
        a = None
        if centered:
            a = _state(s.mu, g, tg, fname, "state.mu")
            a = [rho * y + (1.0 - rho) * x for x, y in zip(g, a)]
            den = [rt.sqrt(vv - aa * aa) + eps for vv, aa in zip(v, a)]
        else:
            den = [rt.sqrt(vv) + eps for vv in v]
        step = _lr_at(lr, count, fname)
        b = None
        if mom:
            b = _state(s.momentum, g, tg, fname, "state.momentum")
            b = [mom * y + x / dd for x, y, dd in zip(g, b, den)]
            d = b
        else:
            d = [x / dd for x, dd in zip(g, den)]
        return (_scaled(tg, d, _neg(step)),
                RmspropState(_count_next(count), _unflat(tg, v), _unflat(tg, a), _unflat(tg, b)))

    return GradientTransformation(init, update)


def adagrad(lr: Any, initial_accumulator_value: float = 0.0, eps: float = 1e-10, lr_decay: float = 0.0,
            weight_decay: float = 0.0) -> GradientTransformation:
    """Adagrad (Duchi, Hazan and Singer, 2011), as ``torch.optim.Adagrad``.

    ``s <- s + g**2`` (from ``initial_accumulator_value``) and the update is
    ``-lr_t * g / (sqrt(s) + eps)`` with ``lr_t = lr / (1 + (t - 1) lr_decay)`` at step ``t``.

    Args:
        lr: the learning rate (a number >= 0 or a schedule).
        initial_accumulator_value: the starting sum, >= 0 (default 0; optax's is 0.1).
        eps: added outside the square root (default 1e-10; optax adds 1e-7 inside).
        lr_decay: PyTorch's per-step learning-rate decay (default 0).
        weight_decay: L2 coefficient added to the gradient (default 0).
    Returns:
        A :class:`GradientTransformation`.
    Raises:
        TypeError: for non-numeric arguments.
        ValueError: for arguments out of range.

    >>> import runetensor as rt
    >>> opt = rt.optim.adagrad(0.5)
    >>> u, s = opt.update(rt.full(rt.float64, [1], -4.0), opt.init(rt.zeros(rt.float64, [1])))
    >>> print(u)
    [0.5]
    """
    fname = "adagrad"
    lr = _lr(lr, fname)
    acc0 = _nonneg(initial_accumulator_value, fname, "initial_accumulator_value")
    eps = _number(eps, fname, "eps", 0.0)
    dec = _nonneg(lr_decay, fname, "lr_decay")
    wd = _nonneg(weight_decay, fname, "weight_decay")

    def init(params: Any) -> AdagradState:
        p, tp = _flat(params, fname, "params")
        return AdagradState(_count_init(), _unflat(tp, [rt.full_like(x, acc0) for x in p]))

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, AdagradState]:
        s = _check_state(state, AdagradState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        if wd:
            g = _add_decay(g, g, wd, params, tg, fname)
        a = _state(s.sum, g, tg, fname, "state.sum")
        a = [y + x * x for x, y in zip(g, a)]
        step = _lr_at(lr, count, fname)
        if dec:
            step = step / (1.0 + rt.cast(count, D.float64) * dec)
        u = [_mul(x / (rt.sqrt(y) + eps), _neg(step)) for x, y in zip(g, a)]
        return _unflat(tg, u), AdagradState(_count_next(count), _unflat(tg, a))

    return GradientTransformation(init, update)


def lion(lr: Any, b1: float = 0.9, b2: float = 0.99, weight_decay: float = 0.0) -> GradientTransformation:
    """Lion (Chen et al., 2023, "Symbolic discovery of optimization algorithms").

    ``c = b1 m + (1 - b1) g``; the update is ``-lr * (sign(c) + weight_decay * p)``; then
    ``m <- b2 m + (1 - b2) g``.  Use a learning rate 3-10x smaller than Adam's.

    Args:
        lr: the learning rate (a number >= 0 or a schedule).
        b1: the interpolation rate of the update direction, in ``[0, 1]``.
        b2: the momentum decay rate, in ``[0, 1]``.
        weight_decay: decoupled decay coefficient (default 0, as optax; the paper's code 0 too).
    Returns:
        A :class:`GradientTransformation`; its ``update`` needs ``params`` when ``weight_decay > 0``.
    Raises:
        TypeError: for non-numeric arguments.
        ValueError: for arguments out of range.

    >>> import runetensor as rt
    >>> opt = rt.optim.lion(0.01)
    >>> u, s = opt.update(rt.create(rt.float32, [3], [2.0, -0.5, 1e-9]), opt.init(rt.zeros(rt.float32, [3])))
    >>> print(u)  # only the signs count
    [-0.01, 0.01, -0.01]
    """
    fname = "lion"
    lr = _lr(lr, fname)
    b1 = _number(b1, fname, "b1", 0.0, 1.0)
    b2 = _number(b2, fname, "b2", 0.0, 1.0)
    wd = _nonneg(weight_decay, fname, "weight_decay")

    def init(params: Any) -> LionState:
        p, tp = _flat(params, fname, "params")
        return LionState(_count_init(), _unflat(tp, _zeros(p)))

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, LionState]:
        s = _check_state(state, LionState, fname)
        count = _count(s.count, fname)
        g, tg = _flat(grads, fname, "grads")
        m = _state(s.mu, g, tg, fname, "state.mu")
        d = [rt.sign(b1 * y + (1.0 - b1) * x) for x, y in zip(g, m)]
        if wd:
            d = _add_decay(d, g, wd, params, tg, fname)
        step = _lr_at(lr, count, fname)
        m = [b2 * y + (1.0 - b2) * x for x, y in zip(g, m)]
        return _scaled(tg, d, _neg(step)), LionState(_count_next(count), _unflat(tg, m))

    return GradientTransformation(init, update)


# ---------------------------------------------------------------------------------------------
# combinators
# ---------------------------------------------------------------------------------------------

def global_norm(tree: Any) -> Tensor:
    """The Euclidean norm of all the leaves of a pytree together (a 0-d float64 tensor).

    Args:
        tree: a pytree of real floating tensors.
    Returns:
        ``sqrt(sum of every element squared)``, computed in float64.
    Raises:
        TypeError: if a leaf is not a real floating tensor.

    >>> import runetensor as rt
    >>> print(rt.optim.global_norm([rt.full(rt.float32, [2], 3.0), rt.full(rt.float32, [1], 1.0)]))
    4.3589
    """
    leaves, _ = _flat(tree, "global_norm", "the tree")
    total = rt.scalar(D.float64, 0.0)
    for x in leaves:
        y = rt.cast(x, D.float64)
        total = total + rt.sum(y * y)
    return rt.sqrt(total)


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Scale the updates so that their global norm is at most ``max_norm``.

    The updates are multiplied by ``max_norm / norm`` when their :func:`global_norm` exceeds
    ``max_norm``, left as they are otherwise (as optax; PyTorch's ``clip_grad_norm_`` uses
    ``max_norm / (norm + 1e-6)``).  Place it first in a :func:`chain`.

    Args:
        max_norm: the largest global norm, > 0.
    Returns:
        A stateless :class:`GradientTransformation` (its state is ``()``).
    Raises:
        TypeError: for a non-numeric ``max_norm``.
        ValueError: if ``max_norm`` is not positive.

    >>> import runetensor as rt
    >>> clip = rt.optim.clip_by_global_norm(1.0)
    >>> u, _ = clip.update([rt.create(rt.float32, [2], [3.0, 4.0])], clip.init(None))
    >>> print(u[0])
    [0.6, 0.8]
    """
    fname = "clip_by_global_norm"
    mx = _number(max_norm, fname, "max_norm", 0.0, math.inf, lo_open=True)

    def init(params: Any) -> tuple:
        return ()

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, tuple]:
        g, tg = _flat(grads, fname, "updates")
        if not g:
            return grads, ()
        # mx / max(norm, mx): exactly 1 when norm <= mx, mx / norm otherwise (NaN stays NaN),
        # computed in tensor operations (no value read: one program under rt.jit)
        f = mx / rt.maximum(global_norm(g), mx)
        return _unflat(tg, [_mul(x, f) for x in g]), ()

    return GradientTransformation(init, update)


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply transformations one after the other: each one's updates are the next one's gradients.

    Args:
        *transforms: :class:`GradientTransformation` objects (e.g. ``clip_by_global_norm(1.0)``
            then ``adam(1e-3)``).
    Returns:
        A :class:`GradientTransformation` whose state is the tuple of their states.
    Raises:
        TypeError: if an argument is not a GradientTransformation.

    >>> import runetensor as rt
    >>> opt = rt.optim.chain(rt.optim.clip_by_global_norm(1.0), rt.optim.sgd(0.5))
    >>> p = [rt.zeros(rt.float32, [2])]
    >>> u, s = opt.update([rt.create(rt.float32, [2], [30.0, 40.0])], opt.init(p), p)
    >>> print(u[0])
    [-0.3, -0.4]
    """
    for t in transforms:
        if not isinstance(t, GradientTransformation):
            raise TypeError(f"chain: every argument must be a GradientTransformation, got {type(t).__name__}")

    def init(params: Any) -> tuple:
        return tuple(t.init(params) for t in transforms)

    def update(grads: Any, state: Any, params: Any = None) -> tuple[Any, tuple]:
        if not isinstance(state, tuple) or len(state) != len(transforms):
            raise TypeError(f"chain: state must be the tuple of {len(transforms)} states from init")
        new = []
        for t, s in zip(transforms, state):
            grads, s = t.update(grads, s, params)
            new.append(s)
        return grads, tuple(new)

    return GradientTransformation(init, update)


# ---------------------------------------------------------------------------------------------
# schedules
# ---------------------------------------------------------------------------------------------

def _step(count: Any, fname: str) -> Tensor:
    """The step count as a 0-d float64 tensor: from a Python int, or from a 0-d integer or float
    tensor (an optimizer state's count; its ``>= 0`` check is a run-time guard under jit)."""
    if isinstance(count, Tensor):
        if count.ndim != 0 or count.dtype.kind not in "iuf":
            raise TypeError(f"{fname}: the step count must be a 0-d integer or float tensor, got shape "
                            f"{count.shape} dtype {count.dtype}")
        _check_nonneg(count, fname, "the step count")
        return rt.cast(count, D.float64)
    if isinstance(count, builtins.bool) or not isinstance(count, builtins.int) and not hasattr(count, "__index__"):
        raise TypeError(f"{fname}: the step count must be an integer or a 0-d tensor, got {type(count).__name__}")
    c = int(count)
    if c < 0:
        raise ValueError(f"{fname}: the step count must be >= 0, got {c}")
    return rt.scalar(D.float64, builtins.float(c))


def constant_schedule(value: float) -> Callable[[Any], Tensor]:
    """The schedule ``step -> value``.

    Args:
        value: the learning rate, a finite number >= 0.
    Returns:
        A function from the step count (an int >= 0 or a 0-d tensor) to a 0-d float64 tensor.
    Raises:
        TypeError, ValueError: for a bad ``value``.

    >>> import runetensor as rt
    >>> print(rt.optim.constant_schedule(0.1)(1000))
    0.1
    """
    v = _number(value, "constant_schedule", "value", 0.0, math.inf, hi_open=True)

    def schedule(count: Any) -> Tensor:
        t = _step(count, "constant_schedule")
        return rt.full_like(t, v)

    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0) -> Callable[[Any], Tensor]:
    """Cosine decay (Loshchilov and Hutter's SGDR without restarts), as optax.

    ``init_value * ((1 - alpha) * (1 + cos(pi * min(t, decay_steps) / decay_steps)) / 2 + alpha)``:
    from ``init_value`` at step 0 to ``alpha * init_value`` at ``decay_steps``, constant after.

    Args:
        init_value: the starting learning rate, >= 0.
        decay_steps: the length of the decay, an int > 0.
        alpha: the final value as a fraction of ``init_value``, in ``[0, 1]``.
    Returns:
        A function from the step count (an int or a 0-d tensor) to a 0-d float64 tensor.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> s = rt.optim.cosine_decay_schedule(1.0, 100)
    >>> [round(float(s(t)), 6) for t in (0, 50, 100, 200)]
    [1.0, 0.5, 0.0, 0.0]
    """
    fname = "cosine_decay_schedule"
    v = _number(init_value, fname, "init_value", 0.0, math.inf, hi_open=True)
    n = _positive_int(decay_steps, fname, "decay_steps")
    a = _number(alpha, fname, "alpha", 0.0, 1.0)

    def schedule(count: Any) -> Tensor:
        t = rt.minimum(_step(count, fname), builtins.float(n))
        return v * ((1.0 - a) * 0.5 * (1.0 + rt.cos(math.pi * t / n)) + a)

    return schedule


def _positive_int(v: Any, fname: str, what: str, allow_zero: bool = False) -> int:
    if isinstance(v, builtins.bool) or not isinstance(v, builtins.int) and not hasattr(v, "__index__"):
        raise TypeError(f"{fname}: {what} must be an integer, got {type(v).__name__} {v!r}")
    n = int(v)
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError(f"{fname}: {what} must be {'>= 0' if allow_zero else '> 0'}, got {n}")
    return n


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int, decay_steps: int,
                                 end_value: float = 0.0) -> Callable[[Any], Tensor]:
    """Linear warm-up from ``init_value`` to ``peak_value``, then cosine decay to ``end_value``, as optax.

    For ``t < warmup_steps``: ``init_value + (peak_value - init_value) * t / warmup_steps``; then
    ``end_value + (peak_value - end_value) * (1 + cos(pi * s / (decay_steps - warmup_steps))) / 2``
    with ``s = min(t - warmup_steps, decay_steps - warmup_steps)``.  ``decay_steps`` counts the
    warm-up (the schedule reaches ``end_value`` at step ``decay_steps``).

    Args:
        init_value: the learning rate at step 0, >= 0.
        peak_value: the learning rate at the end of the warm-up, >= 0.
        warmup_steps: the warm-up length, an int >= 0.
        decay_steps: the total length, an int > ``warmup_steps``.
        end_value: the final learning rate, >= 0.
    Returns:
        A function from the step count (an int or a 0-d tensor) to a 0-d float64 tensor.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> s = rt.optim.warmup_cosine_decay_schedule(0.0, 1.0, 10, 110)
    >>> [round(float(s(t)), 6) for t in (0, 5, 10, 60, 110)]
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    fname = "warmup_cosine_decay_schedule"
    v0 = _number(init_value, fname, "init_value", 0.0, math.inf, hi_open=True)
    pk = _number(peak_value, fname, "peak_value", 0.0, math.inf, hi_open=True)
    end = _number(end_value, fname, "end_value", 0.0, math.inf, hi_open=True)
    w = _positive_int(warmup_steps, fname, "warmup_steps", allow_zero=True)
    n = _positive_int(decay_steps, fname, "decay_steps")
    if n <= w:
        raise ValueError(f"{fname}: decay_steps ({n}) must be greater than warmup_steps ({w})")

    def schedule(count: Any) -> Tensor:
        t = _step(count, fname)
        warm = v0 + (pk - v0) * t / builtins.max(w, 1)  # (the warm-up branch is never taken when w == 0)
        s = rt.minimum(t - w, builtins.float(n - w))
        decay = end + (pk - end) * 0.5 * (1.0 + rt.cos(math.pi * s / (n - w)))
        return rt.where(t < w, warm, decay)

    return schedule


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float, transition_begin: int = 0,
                      staircase: bool = False, end_value: float | None = None) -> Callable[[Any], Tensor]:
    """Exponential decay, as optax: ``init_value * decay_rate ** ((t - transition_begin) / transition_steps)``.

    Constant ``init_value`` before ``transition_begin``; with ``staircase`` the exponent is
    rounded down to an integer; ``end_value`` bounds the result (below for decay, above for
    growth).

    Args:
        init_value: the learning rate at step 0, >= 0.
        transition_steps: the steps per factor of ``decay_rate``, an int > 0.
        decay_rate: the factor, > 0.
        transition_begin: the step where the decay starts, an int >= 0.
        staircase: decay in whole steps of ``transition_steps``.
        end_value: None, or the bound the schedule stops at.
    Returns:
        A function from the step count (an int or a 0-d tensor) to a 0-d float64 tensor.
    Raises:
        TypeError, ValueError: for bad arguments.

    >>> import runetensor as rt
    >>> s = rt.optim.exponential_decay(1.0, 10, 0.5)
    >>> [round(float(s(t)), 6) for t in (0, 10, 20, 5)]
    [1.0, 0.5, 0.25, 0.707107]
    >>> print(rt.optim.exponential_decay(1.0, 10, 0.5, staircase=True, end_value=0.3)(25))
    0.3
    """
    fname = "exponential_decay"
    v = _number(init_value, fname, "init_value", 0.0, math.inf, hi_open=True)
    n = _positive_int(transition_steps, fname, "transition_steps")
    r = _number(decay_rate, fname, "decay_rate", 0.0, math.inf, lo_open=True, hi_open=True)
    b = _positive_int(transition_begin, fname, "transition_begin", allow_zero=True)
    e = None if end_value is None else _number(end_value, fname, "end_value", 0.0, math.inf, hi_open=True)

    def schedule(count: Any) -> Tensor:
        t = _step(count, fname) - b
        p = rt.floor(t / n) if staircase else t / n  # t // n exactly for t < 2**53
        out = v * r ** p
        if e is not None:
            out = rt.maximum(out, e) if r < 1 else rt.minimum(out, e)
        return rt.where(t <= 0, v, out)

    return schedule
