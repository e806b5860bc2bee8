"""The transformations' user API: differentiation, ``vmap``, control flow, pytrees.

* :mod:`._api`: ``grad``, ``vjp``, ``jvp`` and what is built on them;
* :mod:`._vmap`: ``vmap``;
* :mod:`._control`: ``cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan``, ``checkpoint``;
* :mod:`._pytree`: the containers the transformations map over.

The backends they run on (reverse and forward mode, batching, jit tracing) are one layer down, in
:mod:`runetensor._tracers`; the derivative and batching rules live with the primitives, in
:mod:`runetensor._primitives`.
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
