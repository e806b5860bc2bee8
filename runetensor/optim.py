"""Optimizers as pure functions over pytrees (``rt.optim``), in the manner of optax and Vega.

An optimizer is a :class:`GradientTransformation`, a pair of pure functions::

    opt = rt.optim.adam(1e-3)
    state = opt.init(params)                              # a pytree of tensors (the count too)
    updates, state = opt.update(grads, state, params)     # nothing is modified in place
    params = rt.optim.apply_updates(params, updates)      # params + updates, leaf by leaf

``params`` and ``grads`` are pytrees (``rt.tree_flatten``) of real floating tensors with the
same structure; ``updates`` are what to *add* to the parameters (already multiplied by
``-lr``).  Each update rule follows PyTorch's ``torch.optim`` class of the same name (defaults
included), which is also each method's published rule; ``docs/optim.md`` lists the
differences from optax.  A learning rate is a number, a 0-d float tensor or a *schedule*, a
function from the step count (a 0-d int32 tensor, 0 for the first update) to a 0-d tensor:
:func:`constant_schedule`, :func:`cosine_decay_schedule`, :func:`warmup_cosine_decay_schedule`,
:func:`exponential_decay`.

Conventions (for every transformation here and any written on top of them), so that a whole
training step runs under one ``rt.jit`` with one trace:

* everything in a state is a tensor (or ``None``/an empty tuple): the step count is a 0-d int32
  tensor (:func:`_count_init`, :func:`_count_next`), never a Python int, which ``rt.jit``
  would take as a static value and retrace on;
* arithmetic on the count (schedules, bias corrections) uses tensor operations, never
  ``math``/``float()``/``if`` on it; a scalar tensor meets a leaf through :func:`_mul`/
  :func:`_div` (cast to the leaf's dtype, the same rounding as a Python float);
* value checks on tensors (a schedule's count ``>= 0``, a tensor ``lr >= 0``) go through
  ``runetensor._guards.check_values`` (run-time guards under jit); hyperparameters given as
  Python numbers are checked at construction (:func:`_number`, :func:`_lr`);
* ``update`` checks the gradients against the state and parameters leaf by leaf (structure,
  shape, dtype: :func:`_state`, :func:`_params`), naming the leaf's path.
"""
from __future__ import annotations

from ._optim_core import *  # noqa: F401,F403  (GradientTransformation, sgd, adam..., clipping, chain, schedules)
from ._optim_core import __all__ as _core_all
from ._optim_extra import *  # noqa: F401,F403  (lamb, radam, lars, adan, adafactor, more schedules, loss scaling)
from ._optim_extra import __all__ as _extra_all

__all__ = _core_all + _extra_all

# the core's public objects keep this namespace as their home (help(), class reprs, pickles), as
# when they were defined here
for _name in _core_all:
    globals()[_name].__module__ = __name__
# the __future__ import binds the name ``annotations``: not part of this namespace
del _name, annotations
