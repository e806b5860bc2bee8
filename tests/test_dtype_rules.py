"""The elementwise dtype rules are named objects of ``runetensor._dtype_rules``, held by the primitive
table, and give NumPy's result dtypes (with the library's documented departures)."""
from __future__ import annotations

import numpy as np
import pytest

import runetensor as rt
import runetensor.array_api as xp
from runetensor import _dtype_rules as R
from runetensor._primitives import BINARY_DERIVS, PRIMS, UNARY_DERIVS

RULES = {name: getattr(R, name) for name in R.__all__ if name != "DTypeRule"}
NP = {rt.bool: np.bool_, rt.int8: np.int8, rt.int32: np.int32, rt.uint8: np.uint8, rt.float32: np.float32,
      rt.float64: np.float64, rt.complex64: np.complex64}


def test_every_elementwise_primitive_holds_a_named_rule_object():
    for op, entry in list(UNARY_DERIVS.items()) + list(BINARY_DERIVS.items()):
        rule = entry[0]
        assert isinstance(rule, R.DTypeRule), op
        assert RULES[rule.name] is rule, (op, rule)  # bound in the module under its own name
        assert rule.doc.endswith(".") and "\n" not in rule.doc
        if op != "truediv":  # a frontend name of div
            assert PRIMS[op].dtype is rule


def test_each_rule_is_used_and_documents_itself():
    used = {e[0].name for e in list(UNARY_DERIVS.values()) + list(BINARY_DERIVS.values())}
    assert used == set(RULES)
    assert repr(R.true_division) == "DTypeRule('true_division')"


@pytest.mark.parametrize("name", sorted(RULES))
def test_a_rule_either_gives_its_result_or_raises_the_typeerror_naming_the_caller(name):
    rule = RULES[name]
    for d in NP:
        if d.kind in rule.rejects:
            with pytest.raises(TypeError, match=r"^myfn: "):
                rule(d, "myfn")
            assert d not in rule.results
        else:
            computed, result = rule(d, "myfn")
            assert rule.results[d] == (computed, result)
            if d.kind in rule.kinds_kept:
                assert computed is d


@pytest.mark.parametrize("op,npfn", [("sqrt", np.sqrt), ("abs", np.abs), ("isnan", np.isnan),
                                     ("signbit", np.signbit), ("real", np.real), ("floor", np.floor)])
def test_unary_rule_result_dtypes_match_numpy_for_real_and_complex_floats(op, npfn):
    rule = UNARY_DERIVS[op][0]
    for d in (rt.float32, rt.float64, rt.complex64):
        try:
            want = npfn(np.ones(2, NP[d])).dtype
        except TypeError:
            want = None
        if d.kind in rule.rejects:
            continue  # the library rejects what NumPy may accept (signbit, floor of complex)
        assert want is not None and np.dtype(NP[rule(d, op)[1]]) == want, (op, d)


def test_true_division_and_comparison_results_match_numpy():
    for d in (rt.int8, rt.int32, rt.uint8, rt.float32, rt.complex64):
        a = np.ones(2, NP[d])
        # integers divide in the default float (float64), as NumPy's int8 / int8
        assert np.dtype(NP[R.true_division(d, "divide")[1]]) == (a / a).dtype
        if d.kind != "c":
            assert np.dtype(NP[R.comparison(d, "less")[1]]) == (a < a).dtype


def test_array_api_shift_refuses_negative_counts_as_the_operator_does():
    a, n = xp.asarray([1, 2], dtype=xp.int32), xp.asarray([1, -1], dtype=xp.int32)
    with pytest.raises(ValueError, match="bitwise_left_shift: shift counts must be >= 0"):
        xp.bitwise_left_shift(a, n)
    with pytest.raises(ValueError, match="__lshift__: shift counts must be >= 0"):
        a << n
    assert xp.bitwise_left_shift(a, xp.asarray([1, 2], dtype=xp.int32)).tolist() == [2, 8]


def test_array_api_subtract_on_bool_is_worded_by_the_elementwise_dispatch():
    t = xp.asarray([True, False])
    with pytest.raises(TypeError, match=r"^subtract: not supported for bool tensors"):
        xp.subtract(t, t)
    assert xp.add(t, t).tolist() == np.add([True, False], [True, False]).tolist()
