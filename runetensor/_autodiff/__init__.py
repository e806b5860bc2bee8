"""Automatic differentiation: transformations as tracer backends over the contract.

* :mod:`._trace`: the tracer backends (reverse and forward mode) and the functional rewrite of writes;
* :mod:`._api`: ``grad``, ``vjp``, ``jvp`` and what is built on them;
* :mod:`._pytree`: the containers the transformations map over.

The derivative rules live with the primitives, in :mod:`runetensor._primitives`.
"""
from .. import _primitives_linalg  # noqa: F401  (adds the linear-algebra and FFT entries to the primitive table)
from ._api import (check_grads, custom_jvp, custom_vjp, detach, grad, hessian, hvp, jacfwd, jacrev, jvp,
                   linearize, no_grad, stop_gradient, value_and_grad, vjp)
from ._control import checkpoint, cond, fori_loop, remat, scan, switch, while_loop
from ._vmap import vmap
from ._pytree import register_pytree, tree_flatten, tree_leaves, tree_map, tree_unflatten

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "linearize", "jacfwd", "jacrev", "hessian", "hvp",
           "stop_gradient", "detach", "no_grad", "custom_vjp", "custom_jvp", "check_grads",
           "register_pytree", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves",
           "vmap", "cond", "switch", "while_loop", "fori_loop", "scan", "checkpoint", "remat"]
