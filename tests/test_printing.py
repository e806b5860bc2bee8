"""Printing per conventions section 5: the seed's format, %g floats, summaries, repr."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt


@pytest.fixture(autouse=True)
def _restore_options():
    before = rt.get_printoptions()
    yield
    rt.set_printoptions(**before)


def T(values, dtype, shape=None):
    values = list(values)
    return rt.create(dtype, [len(values)] if shape is None else shape, values)


@pytest.mark.parametrize("t,text", [
    (lambda: rt.create(rt.int32, [2, 3], [1, 2, 3, 4, 5, 6]), "[[1, 2, 3],\n [4, 5, 6]]"),
    (lambda: rt.arange_f(rt.float32, 0., 1., 0.2), "[0, 0.2, 0.4, 0.6, 0.8]"),
    (lambda: rt.create(rt.bool, [2], [False, True]), "[false, true]"),
    (lambda: rt.scalar(rt.int32, 7), "7"),
    (lambda: rt.scalar(rt.float32, float("nan")), "nan"),
    (lambda: rt.create(rt.int32, [2, 2, 2], [1, 5, 2, 6, 3, 7, 4, 8]),
     "[[[1, 5],\n  [2, 6]],\n [[3, 7],\n  [4, 8]]]"),
    (lambda: rt.create(rt.int32, [3, 1, 3], list(range(1, 10))), "[[[1, 2, 3]],\n [[4, 5, 6]],\n [[7, 8, 9]]]"),
    (lambda: rt.create(rt.float32, [4], [float("nan"), 1., 2., float("nan")]), "[nan, 1, 2, nan]"),
])
def test_seed_format(t, text):
    assert str(t()) == text


@pytest.mark.parametrize("v,text", [
    (0.0, "0"), (-0.0, "-0"), (1.0, "1"), (-2.5, "-2.5"), (3.14, "3.14"), (0.1, "0.1"), (1e-5, "1e-05"),
    (0.0001, "0.0001"), (123456.0, "123456"), (1234567.0, "1.23457e+06"), (1e20, "1e+20"),
    (2.0 / 3.0, "0.666667"), (float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan"),
    (5e-324, "4.94066e-324"),
])
def test_float_g_format(v, text):
    assert str(rt.scalar(rt.float64, v)) == text
    assert str(T([v, v], rt.float64)) == f"[{text}, {text}]"


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=8))
def test_floats_print_like_c_g(values):
    def g(v):
        return "nan" if math.isnan(v) else "inf" if v == math.inf else "-inf" if v == -math.inf else "%g" % v
    assert str(T(values, rt.float64)) == "[" + ", ".join(g(v) for v in values) + "]"


def test_float32_prints_its_shortest_six_digits():
    assert str(T([0.1, 1 / 3, 16777217.0], rt.float32)) == "[0.1, 0.333333, 1.67772e+07]"


@pytest.mark.parametrize("dtype,values,text", [
    (rt.bfloat16, [0.3, -1.0, 256.5], "[0.300781, -1, 256]"),
    (rt.float16, [0.1, 65504.0], "[0.0999756, 65504]"),
    (rt.float8_e4m3, [0.3, 448.0, -0.0], "[0.3125, 448, -0]"),
    (rt.float8_e5m2, [0.3, 57344.0], "[0.3125, 57344]"),
    (rt.int4, [-8, 7, 0], "[-8, 7, 0]"),
    (rt.uint4, [15, 0], "[15, 0]"),
    (rt.int64, [-2 ** 63, 2 ** 63 - 1], "[-9223372036854775808, 9223372036854775807]"),
    (rt.uint64, [2 ** 64 - 1], "[18446744073709551615]"),
    (rt.uint8, [255, 0], "[255, 0]"),
    (rt.bool, [True], "[true]"),
])
def test_every_kind_of_dtype(dtype, values, text):
    assert str(T(values, dtype)) == text


@pytest.mark.parametrize("z,text", [
    (1 + 2j, "1+2i"), (1 - 2j, "1-2i"), (0j, "0+0i"), (-1.5 - 0.25j, "-1.5-0.25i"),
    (complex(0, -0.0), "0-0i"), (complex(float("nan"), 1), "nan+1i"), (complex(1, float("inf")), "1+infi"),
    (complex(1, float("-inf")), "1-infi"), (complex(1e10, 1e-7), "1e+10+1e-07i"),
])
def test_complex(z, text):
    for d in (rt.complex64, rt.complex128):
        assert str(rt.scalar(d, z)) == text
    assert str(T([z], rt.complex128)) == f"[{text}]"


def test_empty_tensors():
    assert str(rt.zeros(rt.float32, [0])) == "[]"
    assert str(rt.zeros(rt.int32, [2, 0])) == "[[],\n []]"
    assert str(rt.zeros(rt.int32, [0, 3])) == "[]"
    assert repr(rt.zeros(rt.int32, [0, 3])) == "tensor([], dtype=int32, shape=(0, 3))"
    assert repr(rt.zeros(rt.int32, [0])) == "tensor([], dtype=int32)"


def test_repr_adds_dtype_and_aligns():
    assert repr(T([1, 2], rt.int32)) == "tensor([1, 2], dtype=int32)"
    assert repr(rt.create(rt.float32, [2, 2], [1, 2, 3, 4])) == "tensor([[1, 2],\n        [3, 4]], dtype=float32)"
    assert repr(rt.scalar(rt.bool, True)) == "tensor(true, dtype=bool)"
    assert repr(rt.scalar(rt.bfloat16, 1.5)) == "tensor(1.5, dtype=bfloat16)"


def test_strided_views_print_in_logical_order():
    a = np.arange(12).reshape(3, 4)[::-1, ::2].T
    assert str(rt.from_numpy(a)) == "[[8, 4, 0],\n [10, 6, 2]]"


# -- summaries ------------------------------------------------------------------------------------
def test_summarised_1d():
    assert str(rt.arange(rt.int32, 0, 2000, 1)) == "[0, 1, 2, ..., 1997, 1998, 1999]"
    assert str(rt.arange(rt.int32, 0, 1000, 1)).count("...") == 0  # at the threshold: in full


def test_summarised_2d():
    t = rt.reshape(rt.arange(rt.int32, 0, 1200, 1), [2, 600])
    assert str(t) == "[[0, 1, 2, ..., 597, 598, 599],\n [600, 601, 602, ..., 1197, 1198, 1199]]"
    col = rt.create(rt.int32, [1001, 1], list(range(1001)))
    assert str(col) == "[[0],\n [1],\n [2],\n ...,\n [998],\n [999],\n [1000]]"


def test_summarised_3d():
    t = rt.from_numpy(np.arange(8000).reshape(20, 20, 20))
    s = str(t)
    assert s.startswith("[[[0, 1, 2, ..., 17, 18, 19],\n  [20, 21, 22, ..., 37, 38, 39],")
    assert s.endswith("[7980, 7981, 7982, ..., 7997, 7998, 7999]]]")
    assert "\n ...,\n" in s and "\n  ...,\n" in s


class _CountingBackend:
    """Wraps a backend and records the size of every handle converted to a list."""

    def __init__(self, be):
        self._be, self.sizes = be, []

    def to_list(self, h):
        self.sizes.append(h.size)
        return self._be.to_list(h)

    def __getattr__(self, name):
        return getattr(self._be, name)


@pytest.mark.parametrize("shape", [(10 ** 6,), (1000, 1000), (10,) * 6, (2,) * 20, (100, 100, 100)])
def test_million_elements_print_briefly_reading_only_what_is_shown(shape):
    t = rt.zeros(rt.float32, list(shape))
    counting = _CountingBackend(t._backend)
    t._backend = counting
    s = str(t)
    assert "..." in s
    assert sum(counting.sizes) <= 1000, "printing read more elements than it shows"
    assert len(s) < 20000


def test_printoptions():
    rt.set_printoptions(threshold=5, edgeitems=1)
    assert str(rt.arange(rt.int32, 0, 10, 1)) == "[0, ..., 9]"
    rt.set_printoptions(threshold=1000, edgeitems=3, precision=3)
    assert str(rt.scalar(rt.float64, math.pi)) == "3.14"
    assert rt.get_printoptions()["precision"] == 3


@pytest.mark.parametrize("kw", [{"threshold": -1}, {"edgeitems": 0}, {"precision": 0}, {"precision": 2.5},
                                {"threshold": True}])
def test_printoptions_errors(kw):
    with pytest.raises(ValueError, match="set_printoptions: .* must be a positive integer"):
        rt.set_printoptions(**kw)


def test_format_spec_on_scalars():
    assert f"{rt.scalar(rt.float64, 2.5):.3f}" == "2.500"
    assert f"{T([1, 2], rt.int8)}" == "[1, 2]"
