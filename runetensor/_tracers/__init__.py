"""The transformations' backends: tracers over the backend contract, one level above their parent.

* :mod:`._base`: :class:`~._base.Transformation`, whose method per contract primitive is generated
  from the contract's signature table (``runetensor._backend.contract.SIGNATURES``), and the view
  machinery (root, recipe, version) every transformation shares;
* :mod:`._diff`: differentiation, reverse mode (a tape) and forward mode (tangents);
* :mod:`._batch` and :mod:`._batch_rules`: batching (``rt.vmap``), the rules being entries of the
  primitive table (``Prim.batch``);
* :mod:`._jit`: tracing into a program (``rt.jit``).

They import the contract, the primitive table and nothing above them.  The user-facing functions
that push them on the transformation stack are in :mod:`runetensor._autodiff` (``grad``, ``vjp``,
``jvp``, ``vmap``, control flow) and :mod:`runetensor._jit` (``jit`` and its programs).
"""
