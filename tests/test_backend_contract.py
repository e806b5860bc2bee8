"""The backend contract suite (tests/backend_contract.py) on the NumPy backend."""
import numpy as np
import pytest

import runetensor as rt
from backend_contract import CHECKS, run_check, run_contract_suite
from runetensor._backend.contract import primitive_names
from runetensor._backend.numpy_backend import NumpyBackend

BACKEND = rt.get_backend("numpy")


@pytest.mark.parametrize("name", primitive_names())
def test_primitive(name):
    assert name in CHECKS, f"the contract suite has no check for primitive {name!r}"
    run_check(BACKEND, name)


def test_every_primitive_is_covered():
    assert set(primitive_names()) <= set(CHECKS)
    assert set(CHECKS) <= set(primitive_names()), "checks for primitives the contract does not list"


class _BrokenBackend(NumpyBackend):
    """A backend that breaks three promises: the Philox stream, view semantics and NaN ordering."""

    name = "broken"

    def random_bits(self, seed, n):
        return np.zeros(n, np.uint32)

    def flip(self, h, axes):
        return np.flip(h, axes).copy()

    def sort(self, x, axis, descending):
        v = np.sort(x, axis=axis)
        return (v[::-1] if descending else v), np.argsort(x, axis=axis)


def test_suite_detects_a_broken_backend():
    failures = run_contract_suite(_BrokenBackend(), ["random_bits", "flip", "sort", "cast"])
    assert set(failures) == {"random_bits", "flip", "sort"}
    assert "known answer" in failures["random_bits"]
    assert "view" in failures["flip"]


def test_suite_passes_on_numpy_backend():
    assert run_contract_suite(BACKEND, ["dtype", "random_bits", "as_strided"]) == {}
