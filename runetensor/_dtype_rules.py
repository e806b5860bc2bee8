"""The dtype rules of the elementwise operations: each rule is one named :class:`DTypeRule`.

The primitive table (``_primitives.UNARY_DERIVS`` and ``BINARY_DERIVS``) gives every elementwise op
one of these rules; ``_tensor.binary_op``, ``unary_op`` and ``inplace_op`` and the Array API
functions call it with the dtype the operands promote to.  A rule says which dtype kinds it
rejects (a ``TypeError`` naming the caller), which kinds it computes in a default dtype (bool
operands of division as the default int, integers of ``sqrt`` as the default float), and what
dtype it returns (the computed one, bool for predicates and comparisons, the real dtype for
``abs`` and the complex parts).  Tensors of Python objects (kind ``"O"``) bypass the rules: the
callers hand them to the backend as they are.

>>> from runetensor._dtype_rules import true_division, ordered
>>> import runetensor as rt
>>> true_division(rt.int32, "divide")
(rt.float64, rt.float64)
>>> ordered(rt.complex64, "maximum")
Traceback (most recent call last):
    ...
TypeError: maximum: complex numbers have no order (complex64)
"""
from __future__ import annotations

from . import _dtypes as D
from ._dtypes import DType

__all__ = [
    "DTypeRule", "numeric", "numeric_no_bool", "numeric_bool_as_int", "magnitude", "floating",
    "real_numeric", "real_float", "true_division", "ordered", "ordered_bool_as_int", "comparison",
    "equality", "logical", "predicate", "real_predicate", "bitwise", "shift", "complex_part",
]

_KINDS = "biufc"
_DTYPES = [d for d in vars(D).values() if isinstance(d, DType) and d.kind in _KINDS]


class DTypeRule:
    """One elementwise op's dtype rule: the dtype kinds it accepts, the dtype it computes in and the
    dtype it returns.

    Args:
        name: the rule's name (as bound in this module).
        doc: one line: what it allows and what it returns.
        rejects: dtype kinds (of ``"biufc"``) that raise ``TypeError``.
        error: the message for a rejected kind; ``{fname}`` and ``{d}`` are filled in.
        promotes: dtype kinds computed in ``promote_to`` instead of their own dtype.
        promote_to: the dtype they are computed in (``D.default_int`` or ``D.default_float``).
        returns: ``"computed"`` (the dtype computed in), ``"bool"`` or ``"real"`` (the real dtype
            of the computed one: ``complex64 -> float32``, real dtypes unchanged).
        count_operand: the second operand is a shift count (must be >= 0: the caller checks it).

    Attributes:
        kinds_kept: the kinds computed in their own dtype with no check of the operands' values:
            two operands of one such dtype can go straight to the backend primitive.
        results: ``{d: self(d, fname)}`` for every dtype the rule accepts (the elementwise dispatch
            looks the result up here and calls the rule only for the error).

    >>> from runetensor._dtype_rules import comparison
    >>> import runetensor as rt
    >>> comparison(rt.int8, "less"), comparison.kinds_kept, comparison.returns_bool
    ((rt.int8, rt.bool), 'biuf', True)
    """

    __slots__ = ("name", "doc", "rejects", "error", "promotes", "promote_to", "returns", "returns_bool",
                 "count_operand", "kinds_kept", "results")

    def __init__(self, name: str, doc: str, *, rejects: str = "", error: str = "", promotes: str = "",
                 promote_to: DType | None = None, returns: str = "computed", count_operand: bool = False):
        if returns not in ("computed", "bool", "real"):
            raise ValueError(f"DTypeRule: returns must be 'computed', 'bool' or 'real', got {returns!r}")
        if bool(promotes) != (promote_to is not None) or bool(rejects) != bool(error):
            raise ValueError(f"DTypeRule {name}: promotes needs promote_to and rejects needs error")
        self.name = name
        self.doc = doc
        self.rejects = rejects
        self.error = error
        self.promotes = promotes
        self.promote_to = promote_to
        self.returns = returns
        self.returns_bool = returns == "bool"
        self.count_operand = count_operand
        self.kinds_kept = "" if count_operand else "".join(k for k in _KINDS if k not in rejects + promotes)
        self.results = {d: self(d, name) for d in _DTYPES if d.kind not in rejects}

    def __call__(self, d: DType, fname: str) -> tuple[DType, DType]:
        """``(computed, result)``: the dtype to compute in and the dtype of the result, for operands
        promoted to ``d`` (not an object dtype).

        Raises:
            TypeError: naming ``fname``, if the rule rejects ``d``'s kind.
        """
        k = d.kind
        if k in self.rejects:
            raise TypeError(self.error.format(fname=fname, d=d))
        if k in self.promotes:
            d = self.promote_to  # type: ignore[assignment]
        if self.returns_bool:
            return d, D.bool
        return d, (d.real_dtype if self.returns == "real" else d)

    def __repr__(self) -> str:
        return f"DTypeRule({self.name!r})"


_COMPLEX_UNDEFINED = "{fname}: not defined for complex tensors ({d})"
_NO_ORDER = "{fname}: complex numbers have no order ({d})"
_INT_OR_BOOL = "{fname}: expected integer or bool tensors, got {d}"

numeric = DTypeRule(
    "numeric", "Any numeric dtype, bool included (add/mul on bool are or/and); returns the operands' dtype.")
numeric_no_bool = DTypeRule(
    "numeric_no_bool", "Any numeric dtype but bool (negation, reciprocal); returns the operand's dtype.",
    rejects="b", error="{fname}: not defined for bool tensors; use rt.logical_not")
numeric_bool_as_int = DTypeRule(
    "numeric_bool_as_int", "Any numeric dtype; bool is computed as the default int, which it returns.",
    promotes="b", promote_to=D.default_int)
magnitude = DTypeRule(
    "magnitude", "Any numeric dtype; returns the operand's dtype, the real dtype for complex (abs).",
    returns="real")
floating = DTypeRule(
    "floating", "Any numeric dtype; integer and bool are computed in the default float, which it returns.",
    promotes="biu", promote_to=D.default_float)
real_numeric = DTypeRule(
    "real_numeric", "Any real dtype (rounding); complex is a TypeError; returns the operand's dtype.",
    rejects="c", error=_COMPLEX_UNDEFINED)
real_float = DTypeRule(
    "real_float", "Real dtypes; integer and bool are computed in the default float; complex is a TypeError.",
    rejects="c", error="{fname}: expected real tensors, got {d}", promotes="biu", promote_to=D.default_float)
true_division = DTypeRule(
    "true_division", "Any numeric dtype; integer and bool operands are divided in the default float.",
    promotes="biu", promote_to=D.default_float)
ordered = DTypeRule(
    "ordered", "Real dtypes, bool included (maximum, minimum); complex is a TypeError; returns the operands' dtype.",
    rejects="c", error=_NO_ORDER)
ordered_bool_as_int = DTypeRule(
    "ordered_bool_as_int", "Real dtypes (floor division, remainder); bool is computed as the default int; "
    "complex is a TypeError.", rejects="c", error=_COMPLEX_UNDEFINED, promotes="b", promote_to=D.default_int)
comparison = DTypeRule(
    "comparison", "Real dtypes, bool included; complex is a TypeError; returns bool.",
    rejects="c", error=_NO_ORDER, returns="bool")
equality = DTypeRule("equality", "Any dtype; returns bool.", returns="bool")
logical = DTypeRule("logical", "Any dtype (nonzero is true); returns bool.", returns="bool")
predicate = DTypeRule("predicate", "Any dtype (isnan, isfinite, logical_not); returns bool.", returns="bool")
real_predicate = DTypeRule(
    "real_predicate", "Real dtypes (signbit); complex is a TypeError; returns bool.",
    rejects="c", error=_COMPLEX_UNDEFINED, returns="bool")
bitwise = DTypeRule(
    "bitwise", "Integer and bool dtypes; floats and complex are a TypeError; returns the operands' dtype.",
    rejects="fc", error=_INT_OR_BOOL)
shift = DTypeRule(
    "shift", "Integer dtypes, with a second operand of counts >= 0; returns the operands' dtype.",
    rejects="bfc", error="{fname}: expected integer tensors, got {d}", count_operand=True)
complex_part = DTypeRule(
    "complex_part", "Any numeric dtype (real, imag); returns the real dtype (complex64 -> float32).",
    returns="real")
