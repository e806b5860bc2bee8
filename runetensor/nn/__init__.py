"""Neural-network building blocks, functional (as Kaun's ``Fn``): ``from runetensor import nn``.

Every function takes tensors and returns tensors (parameters are arguments, running statistics are
returned, randomness takes a key from :mod:`runetensor.random`), is differentiable with
``rt.grad`` and built from runetensor operations only.  The submodules group them:

* ``_activations``: relu, gelu, silu, ... ;
* ``_layers``: linear, embedding, layer_norm, batch_norm, dropout, attention;
* ``_losses``: mse, mae, huber, sigmoid_bce, softmax_cross_entropy, kl_div;
* ``_init``: glorot/he/lecun initialisers;
* ``_conv``: convolutions and pooling;
* ``_functional_extra``: rms_norm, group_norm, multi_head_attention, 3-d pooling;
* ``_module``: ``Module``, the base class whose instances are pytrees, and ``static_field``;
* ``_modules``: layers as modules (``Linear``, ``Conv2d``, ``MultiheadAttention``, ...).
"""
from __future__ import annotations

import importlib

_SUBMODULES = ("_activations", "_layers", "_losses", "_init", "_conv", "_functional_extra", "_module", "_modules")

__all__: list[str] = []
for _name in _SUBMODULES:
    try:
        _mod = importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _e:
        if _e.name != f"{__name__}.{_name}":
            raise
        continue  # not written yet
    for _n in _mod.__all__:
        globals()[_n] = getattr(_mod, _n)
    __all__ += list(_mod.__all__)
del _name

# the __future__ import binds the name ``annotations``: not part of this namespace
del annotations
