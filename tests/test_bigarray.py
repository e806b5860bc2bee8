"""Tests of runetensor.bigarray (seed 001, OCaml's Bigarray) and the to/of_bigarray bridges (seed 000)."""
from __future__ import annotations

import pickle

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from numpy.lib.array_utils import byte_bounds

import runetensor as rt
from runetensor import bigarray as ba

C, F = ba.c_layout, ba.fortran_layout


def arange_g(dims, layout=C, kind=ba.int32):
    """A Genarray whose element at logical (0-based) index i is its row-major rank, plus its NumPy twin."""
    n = int(np.prod(dims)) if dims else 1
    ref = np.arange(n).reshape(dims).astype(np.dtype(kind.dtype.storage) if kind.dtype.kind != "c"
                                            else np.complex64 if kind.dtype is rt.complex64 else np.complex128)
    base = np.array(ref, order="F" if layout is F else "C")
    return ba.Genarray.of_numpy(base, kind=kind, layout=layout), base


# ---------------------------------------------------------------------------
# Seed 001: Genarray statements
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("n", range(0, 17))
def test_any_number_of_dimensions_between_0_and_16(n):
    dims = [1] * n
    for layout in (C, F):
        g = ba.Genarray.create(ba.float32, layout, dims)
        assert g.num_dims() == n and g.dims() == tuple(dims)
        idx = [layout.base] * n
        g.set(idx, 2.5)
        assert g.get(idx) == 2.5


def test_17_dimensions_raise():
    for layout in (C, F):
        with pytest.raises(ValueError, match="0 to 16"):
            ba.Genarray.create(ba.float32, layout, [1] * 17)
        with pytest.raises(ValueError, match="0 to 16"):
            ba.Genarray.init(ba.float32, layout, [1] * 17, lambda i: 0.0)
    with pytest.raises(ValueError, match="0 to 16"):
        ba.reshape(ba.Genarray.create(ba.int32, C, [1]), [1] * 17)
    with pytest.raises(ValueError, match="0 to 16"):
        ba.Genarray.of_numpy(np.zeros([1] * 17))
    with pytest.raises(ValueError, match="does not fit a bigarray"):
        rt.to_bigarray(rt.from_numpy(np.zeros([1] * 17, np.float32)))


def test_type_parameters_kind_and_layout():
    # (float, float32_elt, fortran_layout) Genarray.t: 32-bit floats in Fortran layout, read as float
    g = ba.Genarray.create(ba.float32, F, [2, 2])
    assert g.kind() is ba.float32 and g.layout() is F
    g.set([1, 2], 0.1)
    v = g.get([1, 2])
    assert isinstance(v, float) and v == float(np.float32(0.1))


def test_num_dims_and_dims():
    g = ba.Genarray.create(ba.int64, C, [3, 0, 2])
    assert g.num_dims() == 3
    assert g.dims() == (3, 0, 2) and len(g.dims()) == g.num_dims()
    assert ba.Genarray.create(ba.int64, C, []).dims() == ()


def test_nth_dim_and_its_errors():
    g = ba.Genarray.create(ba.int8_signed, F, [4, 5, 6])
    assert [g.nth_dim(n) for n in range(3)] == [4, 5, 6]
    assert g.nth_dim(g.num_dims() - 1) == 6
    for bad in (-1, 3, 100):
        with pytest.raises(IndexError, match=f"nth_dim: n {bad}"):
            g.nth_dim(bad)
    with pytest.raises(IndexError):
        ba.Genarray.create(ba.int8_signed, C, []).nth_dim(0)


def test_layout_returns_layout():
    assert ba.Genarray.create(ba.char, F, [1]).layout() is F
    assert ba.Genarray.create(ba.char, C, [1]).layout() is C


def test_change_layout_shares_and_reverses_dims():
    g, _ = arange_g((2, 3, 4), C)
    f = g.change_layout(F)
    assert f.layout() is F and f.dims() == (4, 3, 2)
    for a in range(2):
        for b in range(3):
            for c in range(4):
                assert g.get([a, b, c]) == f.get([c + 1, b + 1, a + 1])
    f.set([1, 1, 1], -7)        # no copy: the storage is shared
    assert g.get([0, 0, 0]) == -7
    g.set([1, 2, 3], -8)
    assert f.get([4, 3, 2]) == -8
    back = f.change_layout(C)
    assert back == g and np.shares_memory(np.asarray(back), np.asarray(g))
    # 2-D statement of the seed: get v [|a; b|] in C is get v [|b+1; a+1|] in Fortran
    m, _ = arange_g((3, 5), C)
    mf = m.change_layout(F)
    assert all(m.get([a, b]) == mf.get([b + 1, a + 1]) for a in range(3) for b in range(5))
    assert g.change_layout(C) == g


def test_sub_left():
    g, base = arange_g((5, 3), C)
    s = g.sub_left(1, 3)
    assert s.dims() == (3, 3)
    for i1 in range(3):
        for i2 in range(3):
            assert s.get([i1, i2]) == g.get([i1 + 1, i2])
    s.set([0, 0], 99)   # shares storage
    assert g.get([1, 0]) == 99 and base[1, 0] == 99
    assert g.sub_left(5, 0).dims() == (0, 3) and g.sub_left(0, 5) == g


def test_sub_left_only_c_layout():
    g, _ = arange_g((5, 3), F)
    with pytest.raises(TypeError, match="sub_left: applies only to C-layout"):
        g.sub_left(1, 1)


@pytest.mark.parametrize("ofs,length,exc", [(-1, 1, IndexError), (0, -1, ValueError), (3, 3, IndexError),
                                            (6, 0, IndexError), (0, 6, IndexError)])
def test_sub_left_invalid(ofs, length, exc):
    g, _ = arange_g((5, 3), C)
    with pytest.raises(exc, match="sub_left"):
        g.sub_left(ofs, length)


def test_sub_right():
    g, base = arange_g((3, 5), F)
    s = g.sub_right(2, 3)       # interval [2 .. 4] of the last dimension
    assert s.dims() == (3, 3)
    for i1 in range(1, 4):
        for i2 in range(1, 4):
            assert s.get([i1, i2]) == g.get([i1, i2 + 2 - 1])
    s.set([1, 1], 99)
    assert g.get([1, 2]) == 99 and base[0, 1] == 99
    assert g.sub_right(1, 5) == g and g.sub_right(6, 0).dims() == (3, 0)


def test_sub_right_only_fortran_layout():
    g, _ = arange_g((5, 3), C)
    with pytest.raises(TypeError, match="sub_right: applies only to Fortran-layout"):
        g.sub_right(1, 1)


@pytest.mark.parametrize("ofs,length,exc", [(0, 1, IndexError), (-1, 1, IndexError), (1, -1, ValueError),
                                            (4, 3, IndexError), (1, 6, IndexError), (7, 0, IndexError)])
def test_sub_right_invalid(ofs, length, exc):
    g, _ = arange_g((3, 5), F)
    with pytest.raises(exc, match="sub_right"):
        g.sub_right(ofs, length)


def test_sub_of_0d_array_raises():
    with pytest.raises(ValueError, match="0-dimensional"):
        ba.Genarray.create(ba.int32, C, []).sub_left(0, 0)
    with pytest.raises(ValueError, match="0-dimensional"):
        ba.Genarray.create(ba.int32, F, []).sub_right(1, 0)


def test_slice_left():
    g, base = arange_g((2, 3, 4), C)
    s = g.slice_left([1, 2])
    assert s.dims() == (4,) and s.num_dims() == 3 - 2
    assert all(s.get([j]) == g.get([1, 2, j]) for j in range(4))
    s.set([3], -1)
    assert g.get([1, 2, 3]) == -1 and base[1, 2, 3] == -1
    assert g.slice_left([]) == g
    assert g.slice_left([0]).dims() == (3, 4)


def test_slice_left_only_c_layout():
    g, _ = arange_g((2, 3), F)
    with pytest.raises(TypeError, match="slice_left: applies only to C-layout"):
        g.slice_left([1])


@pytest.mark.parametrize("idx,exc", [([0, 0, 0], ValueError), ([0, 0, 0, 0], ValueError), ([2], IndexError),
                                     ([-1], IndexError), ([0, 3], IndexError), ([1, -1], IndexError)])
def test_slice_left_invalid(idx, exc):
    g, _ = arange_g((2, 3, 4), C)
    with pytest.raises(exc, match="slice_left"):
        g.slice_left(idx)


def test_slice_right():
    g, base = arange_g((2, 3, 4), F)
    s = g.slice_right([3, 4])
    assert s.dims() == (2,)
    assert all(s.get([j]) == g.get([j, 3, 4]) for j in (1, 2))
    s.set([2], -1)
    assert g.get([2, 3, 4]) == -1 and base[1, 2, 3] == -1
    assert g.slice_right([1]).dims() == (2, 3)
    assert g.slice_right([]) == g


def test_slice_right_only_fortran_layout():
    g, _ = arange_g((2, 3), C)
    with pytest.raises(TypeError, match="slice_right: applies only to Fortran-layout"):
        g.slice_right([0])


@pytest.mark.parametrize("idx,exc", [([1, 1, 1], ValueError), ([1, 1, 1, 1], ValueError), ([5], IndexError),
                                     ([0], IndexError), ([0, 1], IndexError), ([4, 1], IndexError)])
def test_slice_right_invalid(idx, exc):
    g, _ = arange_g((2, 3, 4), F)
    with pytest.raises(exc, match="slice_right"):
        g.slice_right(idx)


# ---------------------------------------------------------------------------
# Genarray: create / init / get / set / blit / fill / size_in_bytes
# ---------------------------------------------------------------------------
def test_create_is_zero_filled_and_checks_arguments():
    g = ba.Genarray.create(ba.complex64, F, [2, 2])
    assert np.array_equal(np.asarray(g), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="negative dimension -1"):
        ba.Genarray.create(ba.float32, C, [2, -1])
    with pytest.raises(TypeError, match="bigarray kind"):
        ba.Genarray.create(rt.float32, C, [2])
    with pytest.raises(TypeError, match="c_layout or bigarray.fortran_layout"):
        ba.Genarray.create(ba.float32, "C", [2])
    with pytest.raises(TypeError, match="dimension must be an integer"):
        ba.Genarray.create(ba.float32, C, [2.0])
    with pytest.raises(TypeError, match="sequence of integers"):
        ba.Genarray.create(ba.float32, C, 3)


def test_init_uses_layout_base():
    seen = []
    g = ba.Genarray.init(ba.int32, F, [2, 3], lambda i: seen.append(list(i)) or 10 * i[0] + i[1])
    assert min(min(s) for s in seen) == 1 and len(seen) == 6
    assert g.get([2, 3]) == 23 and g[1, 1] == 11
    c = ba.Genarray.init(ba.int32, C, [2, 3], lambda i: 10 * i[0] + i[1])
    assert c.get([1, 2]) == 12
    with pytest.raises(TypeError, match="callable"):
        ba.Genarray.init(ba.int32, C, [2], 3)
    with pytest.raises(TypeError, match="integer"):
        ba.Genarray.init(ba.int32, C, [2], lambda i: 1.5)


def test_fortran_storage_is_column_major():
    g = ba.Genarray.init(ba.int32, F, [2, 3], lambda i: 10 * i[0] + i[1])
    a = np.asarray(g)
    assert a.flags.f_contiguous and a.shape == (2, 3)
    assert list(a.ravel(order="K")) == [11, 21, 12, 22, 13, 23]


def test_get_set_bounds_and_values():
    g = ba.Genarray.create(ba.int8_signed, C, [2, 3])
    for idx in ([2, 0], [0, 3], [-1, 0], [0, -1]):
        with pytest.raises(IndexError, match="out of bounds"):
            g.get(idx)
        with pytest.raises(IndexError, match="out of bounds"):
            g.set(idx, 1)
    for idx in ([0], [0, 0, 0]):
        with pytest.raises(IndexError, match="indices given"):
            g.get(idx)
    f = ba.Genarray.create(ba.int8_signed, F, [2, 3])
    for idx in ([0, 1], [3, 1], [1, 4]):
        with pytest.raises(IndexError, match="fortran_layout"):
            f.get(idx)
    with pytest.raises(ValueError, match="out of range for kind int8_signed"):
        g.set([0, 0], 128)
    with pytest.raises(TypeError, match="must be an integer"):
        g.set([0, 0], 1.5)
    with pytest.raises(TypeError, match="must be an integer"):
        g.set([0, 0], True)
    with pytest.raises(TypeError, match="index must be an integer"):
        g.get([0.0, 0])
    g.set([1, 2], -128)
    assert g.get([1, 2]) == -128


def test_value_mappings_per_kind():
    cases = [(ba.float16, 0.5, 0.5), (ba.float64, 1, 1.0), (ba.complex32, 1 + 2j, 1 + 2j), (ba.complex64, 3, 3 + 0j),
             (ba.int8_unsigned, 255, 255), (ba.int16_signed, -32768, -32768), (ba.int16_unsigned, 65535, 65535),
             (ba.int32, -2 ** 31, -2 ** 31), (ba.int64, 2 ** 63 - 1, 2 ** 63 - 1), (ba.int, -5, -5),
             (ba.nativeint, 7, 7), (ba.char, "a", "a"), (ba.char, "\xff", "\xff"),
             (ba.ext.bfloat16, 1.5, 1.5), (ba.ext.bool, True, True), (ba.ext.int4, -8, -8), (ba.ext.uint4, 15, 15),
             (ba.ext.float8_e4m3, 2.0, 2.0), (ba.ext.float8_e5m2, -4.0, -4.0),
             (ba.ext.uint32, 2 ** 32 - 1, 2 ** 32 - 1), (ba.ext.uint64, 2 ** 64 - 1, 2 ** 64 - 1)]
    for kind, v, want in cases:
        g = ba.Genarray.create(kind, F, [2])
        g.set([2], v)
        got = g.get([2])
        assert got == want and type(got) is type(want), (kind, got)
    with pytest.raises(TypeError, match="1-character str"):
        ba.Genarray.create(ba.char, C, [1]).set([0], 97)
    with pytest.raises(ValueError, match="does not fit in one byte"):
        ba.Genarray.create(ba.char, C, [1]).set([0], "\u0100")
    with pytest.raises(ValueError, match="out of range for kind int4"):
        ba.Genarray.create(ba.ext.int4, C, [1]).set([0], 8)
    with pytest.raises(TypeError, match="real number"):
        ba.Genarray.create(ba.float32, C, [1]).set([0], 1j)
    with pytest.raises(TypeError, match="True or False"):
        ba.Genarray.create(ba.ext.bool, C, [1]).set([0], 2)
    with pytest.raises(TypeError, match="must be a number"):
        ba.Genarray.create(ba.complex32, C, [1]).set([0], "x")


def test_kinds_and_sizes():
    sizes = {"float16": 2, "float32": 4, "float64": 8, "complex32": 8, "complex64": 16, "int8_signed": 1,
             "int8_unsigned": 1, "int16_signed": 2, "int16_unsigned": 2, "int32": 4, "int64": 8, "int": 8,
             "nativeint": 8, "char": 1}
    assert [k.name for k in ba.KINDS] == list(sizes)
    for k in ba.KINDS:
        assert ba.kind_size_in_bytes(k) == sizes[k.name] and getattr(ba, k.name) is k and not k.extended
    ext_sizes = {"bfloat16": 2, "bool": 1, "int4": 1, "uint4": 1, "float8_e4m3": 1, "float8_e5m2": 1,
                 "uint32": 4, "uint64": 8}
    assert [k.name for k in ba.EXT_KINDS] == list(ext_sizes)
    for k in ba.EXT_KINDS:
        assert ba.kind_size_in_bytes(k) == ext_sizes[k.name] and k.extended
        assert not hasattr(ba, k.name) or getattr(ba, k.name) is not k   # kept apart
        assert getattr(ba.ext, k.name) is k
    assert ba.ext.int4_signed is ba.ext.int4 and ba.ext.int4_unsigned is ba.ext.uint4
    assert ba.complex32.dtype is rt.complex64 and ba.complex64.dtype is rt.complex128
    assert ba.int.dtype is rt.int64 and ba.nativeint.dtype is rt.int64 and ba.char.dtype is rt.uint8
    with pytest.raises(TypeError, match="kind_size_in_bytes"):
        ba.kind_size_in_bytes(rt.float32)
    assert pickle.loads(pickle.dumps(ba.ext.bfloat16)) is ba.ext.bfloat16
    assert pickle.loads(pickle.dumps(F)) is F


def test_size_in_bytes():
    assert ba.Genarray.create(ba.complex64, C, [2, 3]).size_in_bytes() == 96
    assert ba.Genarray.create(ba.int16_signed, F, [0, 3]).size_in_bytes() == 0
    assert ba.Array0.create(ba.float64, C).size_in_bytes() == 8


def test_blit_and_fill():
    src, _ = arange_g((2, 3), C)
    dst = ba.Genarray.create(ba.int32, C, [2, 3])
    src.blit(dst)
    assert dst == src and not np.shares_memory(np.asarray(dst), np.asarray(src))
    with pytest.raises(ValueError, match="dimensions differ"):
        src.blit(ba.Genarray.create(ba.int32, C, [3, 2]))
    with pytest.raises(TypeError, match="kinds differ"):
        src.blit(ba.Genarray.create(ba.int64, C, [2, 3]))
    with pytest.raises(TypeError, match="layouts differ"):
        src.blit(ba.Genarray.create(ba.int32, F, [2, 3]))
    with pytest.raises(TypeError, match="destination must be a Genarray"):
        src.blit(ba.Array2.create(ba.int32, C, 2, 3))
    # overlapping blit within one array behaves as a copy through a temporary
    a = ba.Array1.of_array(ba.int32, C, [0, 1, 2, 3, 4])
    a.sub(0, 4).blit(a.sub(1, 4))
    assert list(a) == [0, 0, 1, 2, 3]
    dst.fill(7)
    assert np.all(np.asarray(dst) == 7)
    with pytest.raises(ValueError, match="out of range"):
        dst.fill(2 ** 40)
    s = dst.sub_left(1, 1)
    s.fill(0)
    assert np.asarray(dst).tolist() == [[7, 7, 7], [0, 0, 0]]


# ---------------------------------------------------------------------------
# Array0 .. Array3, coercions, reshape
# ---------------------------------------------------------------------------
def test_array0():
    a = ba.Array0.create(ba.float32, F)
    assert a.get() == 0.0 and a.kind() is ba.float32 and a.layout() is F
    a.set(1.5)
    assert a.get() == 1.5 and a[()] == 1.5
    assert ba.Array0.init(ba.int16_unsigned, C, 9).get() == 9
    assert ba.Array0.of_value(ba.char, C, "q").get() == "q"
    b = ba.Array0.create(ba.float32, F)
    a.blit(b)
    assert b.get() == 1.5 and a == b
    b.fill(2.0)
    assert b.get() == 2.0
    assert a.change_layout(C).get() == 1.5 and a.size_in_bytes() == 4
    with pytest.raises(TypeError, match="len"):
        len(a)


def test_array1():
    a = ba.Array1.of_array(ba.int32, C, [1, 2, 3, 4])
    assert a.dim() == 4 and a.get(3) == 4 and len(a) == 4 and list(a) == [1, 2, 3, 4]
    a.set(0, 10)
    a.unsafe_set(1, 20)
    assert a.unsafe_get(0) == 10 and a[1] == 20
    with pytest.raises(IndexError):
        a.get(4)
    with pytest.raises(IndexError):
        a.unsafe_get(4)      # "unsafe" access is still bounds-checked
    s = a.sub(1, 2)
    s.set(0, -2)
    assert a.get(1) == -2
    z = a.slice(3)
    assert isinstance(z, ba.Array0) and z.get() == 4
    z.set(40)
    assert a.get(3) == 40
    f = ba.Array1.init(ba.float64, F, 3, lambda i: i / 2)
    assert list(f) == [0.5, 1.0, 1.5] and f.get(1) == 0.5
    assert f.sub(2, 2).get(1) == 1.0 and f.slice(3).get() == 1.5
    with pytest.raises(IndexError):
        f.slice(0)
    with pytest.raises(IndexError):
        f.sub(0, 1)
    with pytest.raises(ValueError, match="negative"):
        ba.Array1.create(ba.int32, C, -1)
    assert f.change_layout(C).get(0) == 0.5
    assert ba.Array1.of_array(ba.char, F, "abc").get(3) == "c"


def test_array2():
    a = ba.Array2.of_array(ba.int32, C, [[1, 2, 3], [4, 5, 6]])
    assert (a.dim1(), a.dim2()) == (2, 3) and a.get(1, 2) == 6
    a.set(0, 0, 9)
    assert a[0, 0] == 9
    assert list(a.slice_left(1)) == [4, 5, 6]
    assert a.sub_left(1, 1).get(0, 0) == 4
    with pytest.raises(TypeError):
        a.sub_right(1, 1)
    with pytest.raises(TypeError):
        a.slice_right(1)
    f = ba.Array2.of_array(ba.int32, F, [[1, 2, 3], [4, 5, 6]])
    assert f.get(1, 1) == 1 and f.get(2, 3) == 6 and np.asarray(f).flags.f_contiguous
    assert list(f.slice_right(2)) == [2, 5]
    assert f.sub_right(2, 2).get(2, 1) == 5
    with pytest.raises(TypeError):
        f.slice_left(1)
    with pytest.raises(ValueError, match="ragged"):
        ba.Array2.of_array(ba.int32, C, [[1, 2], [3]])
    with pytest.raises(ValueError, match="nested"):
        ba.Array2.of_array(ba.int32, C, [1, 2])
    assert ba.Array2.of_array(ba.int32, C, []).dim2() == 0
    g = ba.Array2.init(ba.float32, F, 2, 2, lambda i, j: i * 10 + j)
    assert g.get(2, 1) == 21.0
    assert ba.Array2.create(ba.int32, C, 2, 3).change_layout(F).dim1() == 3
    assert [list(r) for r in a] == [[9, 2, 3], [4, 5, 6]]


def test_array3():
    a = ba.Array3.init(ba.int32, C, 2, 3, 4, lambda i, j, k: 100 * i + 10 * j + k)
    assert (a.dim1(), a.dim2(), a.dim3()) == (2, 3, 4) and a.get(1, 2, 3) == 123
    assert list(a.slice_left_1(1, 1)) == [110, 111, 112, 113]
    s2 = a.slice_left_2(1)
    assert isinstance(s2, ba.Array2) and s2.get(2, 0) == 120
    assert a.sub_left(1, 1).get(0, 0, 0) == 100
    f = ba.Array3.init(ba.int32, F, 2, 3, 4, lambda i, j, k: 100 * i + 10 * j + k)
    assert list(f.slice_right_1(3, 4)) == [134, 234]
    s2 = f.slice_right_2(4)
    assert isinstance(s2, ba.Array2) and s2.get(2, 3) == 234
    assert f.sub_right(2, 2).get(1, 1, 1) == 112
    for bad in (lambda: a.slice_right_1(1, 1), lambda: a.slice_right_2(1), lambda: f.slice_left_1(1, 1),
                lambda: f.slice_left_2(1), lambda: f.sub_left(1, 1), lambda: a.sub_right(1, 1)):
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(IndexError):
        a.slice_left_1(2, 0)
    g = ba.Array3.of_array(ba.float64, F, [[[1.0, 2.0]], [[3.0, 4.0]]])
    assert g.get(2, 1, 2) == 4.0
    with pytest.raises(ValueError, match="ragged"):
        ba.Array3.of_array(ba.float64, C, [[[1.0]], [[1.0, 2.0]]])
    a.set(0, 0, 0, -1)
    assert a[0, 0, 0] == -1


def test_coercions_share_memory():
    g = ba.Genarray.create(ba.int32, C, [2, 3])
    a2 = ba.array2_of_genarray(g)
    a2.set(1, 1, 5)
    assert g.get([1, 1]) == 5 and ba.genarray_of_array2(a2) == g
    assert ba.array0_of_genarray(ba.Genarray.create(ba.int32, C, [])).get() == 0
    assert ba.array1_of_genarray(ba.Genarray.create(ba.int32, C, [3])).dim() == 3
    assert ba.array3_of_genarray(ba.Genarray.create(ba.int32, F, [1, 2, 3])).dim3() == 3
    for fn, dims in ((ba.array0_of_genarray, [1]), (ba.array1_of_genarray, [1, 1]),
                     (ba.array2_of_genarray, [1]), (ba.array3_of_genarray, [1, 1])):
        with pytest.raises(ValueError, match="expected exactly"):
            fn(ba.Genarray.create(ba.int32, C, dims))
    with pytest.raises(TypeError):
        ba.array2_of_genarray(a2)
    with pytest.raises(TypeError):
        ba.genarray_of_array1(g)
    assert ba.genarray_of_array0(ba.Array0.create(ba.int32, C)).dims() == ()
    assert ba.genarray_of_array1(ba.Array1.create(ba.int32, C, 2)).dims() == (2,)
    assert ba.genarray_of_array3(ba.Array3.create(ba.int32, C, 1, 2, 3)).dims() == (1, 2, 3)


def test_reshape_shares_memory_in_layout_order():
    g, base = arange_g((2, 3), C)
    r = ba.reshape(g, [3, 2])
    assert np.array_equal(np.asarray(r), base.reshape(3, 2))
    r.set([0, 0], 50)
    assert g.get([0, 0]) == 50
    gf, basef = arange_g((2, 3), F)
    rf = ba.reshape(gf, [3, 2])
    assert np.array_equal(np.asarray(rf), basef.reshape((3, 2), order="F"))
    rf.set([1, 1], 60)
    assert basef[0, 0] == 60
    assert ba.reshape_0(ba.Array2.of_array(ba.int32, F, [[50]])).get() == 50
    assert ba.reshape_1(g, 6).get(5) == 5
    assert ba.reshape_2(g, 1, 6).get(0, 1) == 1
    assert ba.reshape_3(gf, 1, 3, 2).get(1, 2, 1) == gf.get([2, 1]) == 3  # column-major order kept
    with pytest.raises(ValueError, match="6 elements"):
        ba.reshape(g, [4])
    with pytest.raises(ValueError, match="reshape_0"):
        ba.reshape_0(g)
    with pytest.raises(ValueError, match="negative"):
        ba.reshape(g, [-2, -3])
    assert ba.reshape(ba.Genarray.create(ba.int32, F, [0, 3]), [3, 0, 5]).dims() == (3, 0, 5)


# ---------------------------------------------------------------------------
# Python protocol and NumPy
# ---------------------------------------------------------------------------
def test_python_indexing_len_iter_eq():
    g = ba.Genarray.init(ba.int32, F, [2, 3], lambda i: 10 * i[0] + i[1])
    assert g[2, 3] == 23
    g[1, 1] = 0
    assert g.get([1, 1]) == 0
    with pytest.raises(IndexError):
        g[0, 1]
    with pytest.raises(IndexError):
        g[1]
    # Fortran: the outer (slowest) dimension is the last one
    assert len(g) == 3 and [list(col) for col in g] == [[0, 21], [12, 22], [13, 23]]
    c = g.change_layout(C)
    assert len(c) == 3 and [list(r) for r in c] == [[0, 21], [12, 22], [13, 23]]
    for row in c:
        row.set([0], 1)   # iteration items share memory
    assert g.get([1, 2]) == 1
    h = ba.Genarray.init(ba.int32, F, [2, 3], lambda i: 10 * i[0] + i[1])
    assert h != g
    h.blit(g)
    assert h == g and not (h != g)
    assert g != ba.Genarray.init(ba.int32, C, [2, 3], lambda i: 0)           # layout differs
    assert ba.Genarray.create(ba.int, C, [2]) != ba.Genarray.create(ba.int64, C, [2])   # kind differs
    assert ba.Genarray.create(ba.int, C, [2]) != ba.Genarray.create(ba.int, C, [3])     # dims differ
    assert ba.Genarray.create(ba.int, C, [2]) != ba.Array1.create(ba.int, C, 2)        # class differs
    assert ba.Genarray.create(ba.int, C, [0]) == ba.Genarray.create(ba.int, C, [0])
    nan = ba.Genarray.init(ba.float64, C, [1], lambda i: float("nan"))
    assert nan != nan
    assert (g == 3) is False
    with pytest.raises(TypeError):
        hash(g)
    with pytest.raises(TypeError, match="create"):
        ba.Genarray()


def test_numpy_asarray_without_copy():
    g = ba.Genarray.create(ba.float32, F, [2, 3])
    a = np.asarray(g)
    assert a.flags.f_contiguous and not a.flags.c_contiguous and a.shape == (2, 3) and a.dtype == np.float32
    a[1, 2] = 4.0
    assert g.get([2, 3]) == 4.0
    g.set([1, 1], 1.0)
    assert a[0, 0] == 1.0
    c = ba.Genarray.create(ba.complex32, C, [2, 3])
    assert np.asarray(c).flags.c_contiguous and np.asarray(c).dtype == np.complex64
    b = np.array(g)          # copy=True gives an independent Fortran-ordered copy
    assert b.flags.f_contiguous and not np.shares_memory(b, np.asarray(g))
    assert np.asarray(g, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError):
        np.asarray(g, dtype=np.float64, copy=False)
    assert np.asarray(ba.Genarray.create(ba.char, C, [2])).dtype == np.uint8
    assert np.asarray(ba.Genarray.create(ba.ext.bfloat16, C, [2])).dtype == ml_dtypes.bfloat16


def test_of_numpy():
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    g = ba.Genarray.of_numpy(x)
    assert g.kind() is ba.int16_signed and g.layout() is C and g[1, 2] == 5
    g[0, 0] = 100
    assert x[0, 0] == 100
    xf = np.asfortranarray(x)
    gf = ba.Genarray.of_numpy(xf)
    assert gf.layout() is F and gf[2, 3] == 5
    assert np.shares_memory(np.asarray(gf), xf)
    forced = ba.Genarray.of_numpy(xf, layout=C)          # not C-contiguous: copied
    assert forced.layout() is C and not np.shares_memory(np.asarray(forced), xf) and forced[1, 2] == 5
    with pytest.raises(ValueError, match="copy=False"):
        ba.Genarray.of_numpy(xf, layout=C, copy=False)
    strided = x[:, ::2]
    gs = ba.Genarray.of_numpy(strided)
    assert gs.dims() == (2, 2) and np.array_equal(np.asarray(gs), strided)
    assert not np.shares_memory(np.asarray(ba.Genarray.of_numpy(x, copy=True)), x)
    assert ba.Genarray.of_numpy(x, kind=ba.int32).kind() is ba.int32
    with pytest.raises(TypeError, match="without losing values"):
        ba.Genarray.of_numpy(x, kind=ba.int8_signed)
    with pytest.raises(TypeError, match="without losing values"):
        ba.Genarray.of_numpy(np.zeros(2), kind=ba.int64)
    gi = ba.Genarray.of_numpy(x, kind=ba.int)
    assert gi.kind() is ba.int and np.asarray(gi).dtype == np.int64 and gi[1, 2] == 5
    assert ba.Genarray.of_numpy([[1, 2], [3, 4]], kind=ba.int8_signed, layout=F)[2, 1] == 3
    with pytest.raises(ValueError):
        ba.Genarray.of_numpy([300], kind=ba.int8_signed)
    assert ba.Genarray.of_numpy(np.zeros(2, ml_dtypes.bfloat16)).kind() is ba.ext.bfloat16
    assert ba.Genarray.of_numpy(np.zeros(2, np.uint8)).kind() is ba.int8_unsigned


def test_pickle_and_copy():
    import copy
    for layout in (C, F):
        g = ba.Genarray.init(ba.int16_signed, layout, [2, 3], lambda i: 10 * i[0] + i[1])
        h = pickle.loads(pickle.dumps(g))
        assert h == g and type(h) is ba.Genarray and not np.shares_memory(np.asarray(h), np.asarray(g))
        a2 = ba.array2_of_genarray(g)
        assert pickle.loads(pickle.dumps(a2)) == a2
        d = copy.deepcopy(a2)
        d.set(layout.base, layout.base, 99)
        assert a2.get(layout.base, layout.base) != 99
    c = ba.Array1.of_array(ba.char, C, "ok")
    assert pickle.loads(pickle.dumps(c)) == c


def test_repr_and_str():
    g = ba.Genarray.init(ba.int32, C, [2, 2], lambda i: i[0] + i[1])
    assert str(g) == "[[0, 1],\n [1, 2]]"
    assert repr(g) == "Genarray(int32, c_layout, dims=(2, 2), [[0, 1], [1, 2]])"
    assert str(ba.Array2.of_array(ba.char, F, ["ab", "cd"])) == "['ab', 'cd']"
    assert repr(ba.Array1.of_array(ba.char, C, "hi")) == "Array1(char, c_layout, dims=(2,), 'hi')"
    assert repr(ba.float32) == "bigarray.float32" and repr(ba.ext.bool) == "bigarray.ext.bool"
    assert repr(F) == "bigarray.fortran_layout"


# ---------------------------------------------------------------------------
# Seed 000: to_bigarray, to_bigarray_ext, of_bigarray, of_bigarray_ext
# ---------------------------------------------------------------------------
def test_seed_to_bigarray_example():
    t = rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])
    assert str(t) == "[[1, 2, 3],\n [4, 5, 6]]"
    assert rt.shape(rt.of_bigarray(rt.to_bigarray(t))) == (2, 3)


def test_to_bigarray_is_a_contiguous_copy():
    t = rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])
    g = rt.to_bigarray(t)
    assert g.kind() is ba.float32 and g.layout() is C and g.dims() == (2, 3)
    g.set([0, 0], 100.0)
    assert str(t) == "[[1, 2, 3],\n [4, 5, 6]]"          # a copy
    view = rt.from_numpy(np.arange(12.0).reshape(3, 4)[::2, ::-1])   # strided source
    gv = rt.to_bigarray(view)
    assert np.asarray(gv).flags.c_contiguous and np.asarray(gv).tolist() == [[3, 2, 1, 0], [11, 10, 9, 8]]
    kinds = {rt.float16: ba.float16, rt.float64: ba.float64, rt.complex64: ba.complex32,
             rt.complex128: ba.complex64, rt.int8: ba.int8_signed, rt.uint8: ba.int8_unsigned,
             rt.int16: ba.int16_signed, rt.uint16: ba.int16_unsigned, rt.int32: ba.int32, rt.int64: ba.int64}
    for d, k in kinds.items():
        assert rt.to_bigarray(rt.zeros(d, [2])).kind() is k
    assert rt.zeros(rt.float32, [2]).to_bigarray().kind() is ba.float32
    assert rt.to_bigarray(rt.scalar(rt.int32, 4)).dims() == ()


@pytest.mark.parametrize("d", [rt.bfloat16, rt.bool, rt.int4, rt.uint4, rt.float8_e4m3, rt.float8_e5m2,
                               rt.uint32, rt.uint64])
def test_to_bigarray_raises_for_extended_dtypes(d):
    t = rt.zeros(d, [2, 3])
    with pytest.raises(ValueError, match="extended type not supported by standard Bigarray"):
        rt.to_bigarray(t)
    g = rt.to_bigarray_ext(t)
    assert g.kind().dtype is d and g.kind().extended and g.dims() == (2, 3)
    assert rt.of_bigarray_ext(g).dtype is d


def test_seed_to_bigarray_ext_example():
    t = rt.create(rt.float32, [2, 3], [1., 2., 3., 4., 5., 6.])
    assert str(t) == "[[1, 2, 3],\n [4, 5, 6]]"
    assert rt.shape(rt.of_bigarray_ext(rt.to_bigarray_ext(t))) == (2, 3)
    g = rt.to_bigarray_ext(t)
    assert g.kind() is ba.float32
    g.set([0, 0], 9.0)
    assert str(t) == "[[1, 2, 3],\n [4, 5, 6]]"


def test_bridges_reject_object_and_non_bigarrays():
    with pytest.raises(TypeError):
        rt.to_bigarray(rt.asarray(np.array([1, "a"], dtype=object)))
    with pytest.raises(TypeError, match="expected a bigarray"):
        rt.of_bigarray(np.zeros(2))
    with pytest.raises(ValueError, match="of_bigarray_ext"):
        rt.of_bigarray(ba.Genarray.create(ba.ext.bfloat16, C, [2]))


def test_seed_of_bigarray_example_and_zero_copy():
    t = rt.zeros(rt.float32, [2, 3])
    assert str(t) == "[[0, 0, 0],\n [0, 0, 0]]"
    g = rt.to_bigarray(t)
    t2 = rt.of_bigarray(g)
    assert str(t2) == "[[0, 0, 0],\n [0, 0, 0]]"
    # Zero-copy: modifications to either affect both.
    g.set([1, 2], 5.0)
    assert str(t2) == "[[0, 0, 0],\n [0, 0, 5]]"
    rt.to_numpy(t2)[0, 0] = 7.0
    assert g.get([0, 0]) == 7.0
    assert np.shares_memory(rt.to_numpy(t2), np.asarray(g))
    # Fortran layout: the same logical view (0-based), column-major strides
    f = ba.Genarray.init(ba.int32, F, [2, 3], lambda i: 10 * i[0] + i[1])
    tf = rt.of_bigarray(f)
    assert tf.shape == (2, 3) and str(tf) == "[[11, 12, 13],\n [21, 22, 23]]"
    assert tf.strides == (4, 8)
    rt.to_numpy(tf)[1, 0] = -1
    assert f.get([2, 1]) == -1
    # sub-arrays and Array1..3 work too
    sub = rt.of_bigarray(g.sub_left(1, 1))
    assert sub.shape == (1, 3) and np.shares_memory(rt.to_numpy(sub), np.asarray(g))
    assert rt.of_bigarray(ba.Array1.of_array(ba.char, C, "ab")).dtype is rt.uint8


def test_seed_of_bigarray_ext_example():
    bag = ba.ext.Genarray.create(ba.ext.bfloat16, ba.ext.c_layout, [2, 3])
    t = rt.of_bigarray_ext(bag)
    assert rt.shape(t) == (2, 3) and t.dtype is rt.bfloat16
    bag.set([0, 1], 1.5)
    assert str(t) == "[[0, 1.5, 0],\n [0, 0, 0]]"
    assert rt.of_bigarray_ext(ba.Genarray.create(ba.float64, C, [1])).dtype is rt.float64


# ---------------------------------------------------------------------------
# Properties against NumPy
# ---------------------------------------------------------------------------
_KINDS = [ba.float64, ba.int16_signed, ba.complex32, ba.int8_unsigned, ba.ext.bfloat16]
_NP = {ba.float64: np.float64, ba.int16_signed: np.int16, ba.complex32: np.complex64,
       ba.int8_unsigned: np.uint8, ba.ext.bfloat16: ml_dtypes.bfloat16}


@st.composite
def op_sequences(draw):
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 3, 3, 4, 4]), min_size=0, max_size=4)))
    layout = draw(st.sampled_from([C, F]))
    kind = draw(st.sampled_from(_KINDS))
    ops = []
    for _ in range(draw(st.integers(0, 5))):
        which = draw(st.sampled_from(["sub", "sub", "slice", "slice", "change_layout", "reshape"]))
        # mostly the side the current layout allows; sometimes the other one (must raise TypeError)
        match = draw(st.sampled_from([True, True, True, False]))
        if which == "sub":
            ops.append((which, match, draw(st.integers(-1, 3)), draw(st.sampled_from([-1, 0, 1, 1, 2, 2, 3]))))
        elif which == "slice":
            ops.append((which, match, draw(st.lists(st.sampled_from([-1, 0, 1, 1, 2, 2, 3, 5]), max_size=2))))
        elif which == "reshape":
            ops.append((which, draw(st.sampled_from(["flat", "reverse", "split"]))))
        else:
            ops.append((which,))
    return shape, layout, kind, ops


def _name(op, layout):
    left = (layout is C) == op[1]
    return f"{op[0]}_{'left' if left else 'right'}"


def _expect(m, layout, op):
    """(expected NumPy view, new layout) or the exception type the op must raise."""
    nd = m.ndim
    if op[0] == "change_layout":
        return m.T, (F if layout is C else C)
    if op[0] == "reshape":
        if op[1] == "flat":
            dims = (m.size,)
        elif op[1] == "reverse":
            dims = m.shape[::-1]
        else:
            dims = (1,) + m.shape + (1,) if nd <= 14 else m.shape
        return m.reshape(dims, order="C" if layout is C else "F"), layout
    name = _name(op, layout)
    if not op[1]:
        return TypeError
    if op[0] == "sub":
        ofs, n = op[2], op[3]
        if nd == 0 or n < 0:
            return ValueError
        if name == "sub_left":
            if ofs < 0 or ofs + n > m.shape[0]:
                return IndexError
            return m[ofs:ofs + n], layout
        if ofs < 1 or ofs - 1 + n > m.shape[-1]:
            return IndexError
        return m[..., ofs - 1:ofs - 1 + n], layout
    idx = op[2]
    if len(idx) >= nd:
        return ValueError
    if name == "slice_left":
        if any(not 0 <= i < m.shape[k] for k, i in enumerate(idx)):
            return IndexError
        return m[tuple(idx)], layout
    axes = range(nd - len(idx), nd)
    if any(not 1 <= i <= m.shape[a] for a, i in zip(axes, idx)):
        return IndexError
    return m[(Ellipsis,) + tuple(i - 1 for i in idx)], layout


def _apply(g, op):
    if op[0] == "change_layout":
        return g.change_layout(F if g.layout() is C else C)
    if op[0] == "reshape":
        d = g.dims()
        size = int(np.prod(d)) if d else 1
        dims = (size,) if op[1] == "flat" else d[::-1] if op[1] == "reverse" else \
            ((1,) + d + (1,) if len(d) <= 14 else d)
        return ba.reshape(g, dims)
    name = _name(op, g.layout())
    if op[0] == "sub":
        return getattr(g, name)(op[2], op[3])
    return getattr(g, name)(op[2])


@given(op_sequences())
def test_sub_slice_sequences_agree_with_numpy(case):
    shape, layout, kind, ops = case
    n = int(np.prod(shape)) if shape else 1
    ref = np.arange(n).astype(_NP[kind]).reshape(shape)
    base = np.array(ref, order="F" if layout is F else "C")
    lo, hi = byte_bounds(base)
    g = ba.Genarray.of_numpy(base, kind=kind, layout=layout)
    m = base
    assert np.shares_memory(np.asarray(g), base) or base.size == 0
    for op in ops:
        exp = _expect(m, g.layout(), op)
        if isinstance(exp, type):
            with pytest.raises(exp):
                _apply(g, op)
            continue
        m, lay = exp
        g = _apply(g, op)
        a = np.asarray(g)
        assert g.layout() is lay and g.dims() == m.shape
        assert a.dtype == base.dtype and np.array_equal(a, m)
        assert a.flags.c_contiguous if lay is C else a.flags.f_contiguous   # always contiguous in its layout
        if a.size:
            alo, ahi = byte_bounds(a)
            assert lo <= alo and ahi <= hi      # never outside the original buffer
            assert np.shares_memory(a, base)
            # a write through the view lands in the original buffer at the oracle's place
            first = tuple(lay.base for _ in range(a.ndim))
            g[first] = 7 if kind.value != "complex" else 7 + 1j
            assert m[tuple(0 for _ in range(a.ndim))] == (7 if kind.value != "complex" else 7 + 1j)


@given(st.lists(st.integers(1, 4), min_size=0, max_size=4), st.sampled_from([C, F]), st.data())
def test_get_set_agree_with_numpy(shape, layout, data):
    g, base = arange_g(tuple(shape), layout, ba.int32)
    a = np.asarray(g)
    idx = [data.draw(st.integers(-1, s + 1)) for s in shape]
    ok = all(layout.base <= i < s + layout.base for i, s in zip(idx, shape))
    if ok:
        assert g.get(idx) == a[tuple(i - layout.base for i in idx)]
        g.set(idx, -5)
        assert base[tuple(i - layout.base for i in idx)] == -5
    else:
        with pytest.raises(IndexError):
            g.get(idx)
        with pytest.raises(IndexError):
            g.set(idx, -5)


@given(st.lists(st.integers(0, 3), min_size=0, max_size=5),
       st.sampled_from([rt.float32, rt.int16, rt.complex128, rt.bfloat16, rt.bool, rt.uint64]))
def test_bridges_round_trip(shape, d):
    n = int(np.prod(shape)) if shape else 1
    src = np.arange(n).reshape(shape) % 2
    t = rt.asarray(src, dtype=d)
    g = rt.to_bigarray_ext(t)
    assert g.dims() == tuple(shape) and np.array_equal(np.asarray(g), rt.to_numpy(t))
    back = rt.of_bigarray_ext(g)
    assert np.array_equal(rt.to_numpy(back), rt.to_numpy(t))
    if n:
        assert np.shares_memory(rt.to_numpy(back), np.asarray(g))
