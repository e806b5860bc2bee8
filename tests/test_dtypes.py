"""dtypes: the 19 types, the promotion table written in docs/dtypes.md, weak scalars."""
import pathlib
import pickle

import ml_dtypes
import numpy as np
import pytest

import runetensor as rt

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "dtypes.md"
ABBR = {"f16": "float16", "f32": "float32", "f64": "float64", "bf16": "bfloat16", "f8e4": "float8_e4m3",
        "f8e5": "float8_e5m2", "i4": "int4", "u4": "uint4", "i8": "int8", "u8": "uint8", "i16": "int16",
        "u16": "uint16", "i32": "int32", "u32": "uint32", "i64": "int64", "u64": "uint64", "b": "bool",
        "c64": "complex64", "c128": "complex128"}


def _doc_table():
    lines = [ln for ln in DOC.read_text().splitlines() if ln.startswith("| | b |") or ln.startswith("| **")]
    header = [c.strip() for c in lines[0].strip("|").split("|")][1:]
    rows = {}
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        rows[cells[0].strip("*")] = dict(zip(header, cells[1:]))
    return header, rows


def test_docs_promotion_table_is_complete_and_matches_the_code():
    header, rows = _doc_table()
    assert sorted(header) == sorted(ABBR) and sorted(rows) == sorted(ABBR)
    for a, row in rows.items():
        for b, r in row.items():
            got = rt.promote_types(getattr(rt, ABBR[a]), getattr(rt, ABBR[b]))
            assert got.name == ABBR[r], (a, b, r, got)


def test_nineteen_dtypes_with_storage():
    assert len(rt._dtypes.all_dtypes) == 19
    for d in rt._dtypes.all_dtypes:
        assert rt._dtypes.dtype_of(d.name) is d
        np_type = np.dtype(getattr(ml_dtypes, d.storage, None) or d.storage)
        assert np_type.itemsize == d.itemsize, d
        assert pickle.loads(pickle.dumps(d)) is d
        assert repr(d) == f"rt.{d.name}" and str(d) == d.name


def test_dtype_predicates():
    assert rt.bfloat16.is_float and rt.bfloat16.is_low_precision and not rt.float32.is_low_precision
    assert rt.int4.is_int and not rt.bool.is_int and rt.complex64.is_complex and rt.complex64.is_inexact
    assert rt.complex64.real_dtype is rt.float32 and rt.complex128.real_dtype is rt.float64
    assert rt.float8_e4m3.is_extended and not rt.float32.is_extended


def test_dtype_of_accepts_python_and_numpy_types():
    f = rt._dtypes.dtype_of
    assert f(float) is rt.float64 and f(int) is rt.int64 and f(bool) is rt.bool and f(complex) is rt.complex128
    assert f(np.float32) is rt.float32 and f(np.dtype("uint16")) is rt.uint16
    assert f("float8_e4m3fn") is rt.float8_e4m3


def test_dtype_of_unknown_name():
    with pytest.raises(TypeError, match="dtype: 'float128' is not a runetensor dtype"):
        rt._dtypes.dtype_of("float128")


@pytest.mark.parametrize("tensor_dtype,scalar,result", [
    (rt.bool, True, rt.bool), (rt.bool, 1, rt.int64), (rt.bool, 1.5, rt.float64), (rt.bool, 1j, rt.complex128),
    (rt.int8, True, rt.int8), (rt.int8, 1, rt.int8), (rt.uint4, 1.5, rt.float64), (rt.int32, 1j, rt.complex128),
    (rt.float16, 1, rt.float16), (rt.bfloat16, 1.5, rt.bfloat16), (rt.float8_e5m2, 1j, rt.complex64),
    (rt.float32, 1j, rt.complex64), (rt.float64, 1j, rt.complex128), (rt.complex64, 2.5, rt.complex64),
])
def test_weak_scalar_table(tensor_dtype, scalar, result):
    assert rt.result_type(tensor_dtype, scalar) is result
    assert rt.result_type(scalar, tensor_dtype) is result


def test_result_type_mixes():
    assert rt.result_type(rt.int8, rt.uint8) is rt.int16
    assert rt.result_type(rt.int8, rt.uint8, 1.0) is rt.float64
    assert rt.result_type(rt.zeros(rt.float16, [1]), rt.int64) is rt.float16
    with pytest.raises(ValueError, match="result_type: expected at least one"):
        rt.result_type()
