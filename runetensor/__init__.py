"""runetensor: strided n-dimensional tensors with Rune's API.

``import runetensor as rt``.  The main namespace follows Rune's tensor module
(seed 000) with the argument conventions of ``API-CONVENTIONS.md``;
:mod:`runetensor.bigarray` is OCaml's Bigarray and :mod:`runetensor.harpie`
harpie's array combinators.  Every public function is re-exported here from
its family module (``_creation``, ``_views``, ``_elementwise``...).
"""
from __future__ import annotations

from . import _dtypes
from ._dtypes import (DType, bfloat16, bool, complex64, complex128, float8_e4m3, float8_e5m2,  # noqa: A004
                      float16, float32, float64, int4, int8, int16, int32, int64, object_,
                      promote_types, result_type, uint4, uint8, uint16, uint32, uint64)
from ._tensor import Tensor
from ._backend import get_backend, register_backend, set_default_backend, Backend
from ._printing import get_printoptions, set_printoptions
from . import _creation
from ._creation import *  # noqa: F401,F403
from . import _properties
from ._properties import *  # noqa: F401,F403

object = object_  # noqa: A001  (rt.object: Python objects, for harpie)

__all__ = [
    "Tensor", "DType", "Backend", "get_backend", "register_backend", "set_default_backend",
    "promote_types", "result_type", "set_printoptions", "get_printoptions",
    "float16", "float32", "float64", "bfloat16", "float8_e4m3", "float8_e5m2", "int4", "uint4",
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool",
    "complex64", "complex128", "object",
]
__all__ += _creation.__all__ + _properties.__all__

# Family modules register themselves below (each adds its names to __all__).
from ._families import load_families as _load_families  # noqa: E402

__all__ += _load_families(globals())
__version__ = "0.1.0"
from . import io  # noqa: E402  (runetensor.io: .npy/.npz, safetensors, text, images)
from . import _autodiff  # noqa: E402
from ._autodiff import (check_grads, checkpoint, cond, custom_jvp, custom_vjp, detach,  # noqa: E402
                        fori_loop, grad, hessian, hvp, jacfwd, jacrev, jvp, linearize, no_grad,
                        register_pytree, remat, scan, stop_gradient, switch, tree_flatten, tree_leaves,
                        tree_map, tree_unflatten, value_and_grad, vjp, vmap, while_loop)
from ._linalg import cond as linalg_cond  # noqa: E402  (rt.cond with a matrix still gives it)

__all__ += [n for n in _autodiff.__all__ if n not in __all__] + ["linalg_cond"]
from . import random  # noqa: E402  (runetensor.random: functional random keys)
from . import optim  # noqa: E402  (runetensor.optim: optimizers over pytrees)
