"""FFT family against numpy.fft as the oracle."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt

from helpers import random_normal

NP = {rt.float32: np.float32, rt.float64: np.float64, rt.complex64: np.complex64, rt.complex128: np.complex128,
      rt.int32: np.int32, rt.float16: np.float16, rt.bfloat16: ml_dtypes.bfloat16, rt.bool: np.bool_}
SINGLE = (rt.float32, rt.complex64, rt.float16, rt.bfloat16)
dtypes = st.sampled_from(list(NP))
norms = st.sampled_from(["backward", "forward", "ortho"])


def data(seed, shape, d):
    return random_normal(seed, shape, d, round_kinds="iub")


def as_tensor(a, view):
    if view and a.ndim >= 1:
        base = np.ascontiguousarray(a[..., ::-1])
        return rt.from_numpy(base[..., ::-1])
    return rt.from_numpy(np.ascontiguousarray(a))


def oracle_input(a, d, real):
    if d in (rt.float16, rt.bfloat16):
        a = a.astype(np.float32)
    elif d.kind in "iub":
        a = a.astype(np.float64)
    if not real and a.dtype.kind != "c":
        a = a.astype(np.complex64 if a.dtype == np.float32 else np.complex128)
    return a


def check(t, exp, d):
    single = d in SINGLE
    got = np.array(rt.to_numpy(t))
    want_kind = exp.dtype.kind
    assert got.dtype.kind == want_kind
    assert got.dtype.itemsize == (exp.dtype.itemsize if not single else (8 if want_kind == "c" else 4))
    scale = max(1.0, float(np.abs(exp).max()) if exp.size else 1.0)
    np.testing.assert_allclose(got, exp, rtol=1e-4 if single else 1e-10, atol=(1e-4 if single else 1e-10) * scale)


shapes = st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple)


@given(shapes, st.integers(0, 2**31), dtypes, norms, st.booleans(), st.one_of(st.none(), st.integers(1, 8)))
def test_1d_transforms_against_numpy(shape, seed, d, norm, view, n):
    a = data(seed, shape, d)
    t = as_tensor(a, view)
    axis = -1 if len(shape) == 1 else 0
    for name in ("fft", "ifft"):
        exp = getattr(np.fft, name)(oracle_input(a, d, False), n=n, axis=axis, norm=norm)
        check(getattr(rt, name)(t, axis=axis, n=n, norm=norm), exp, d)
    if d.kind != "c":
        for name in ("rfft", "ihfft"):
            exp = getattr(np.fft, name)(oracle_input(a, d, True), n=n, axis=axis, norm=norm)
            check(getattr(rt, name)(t, axis=axis, n=n, norm=norm), exp, d)
    m = shape[axis]
    if n is not None or m > 1:
        for name in ("irfft", "hfft"):
            exp = getattr(np.fft, name)(oracle_input(a, d, False), n=n, axis=axis, norm=norm)
            check(getattr(rt, name)(t, axis=axis, n=n, norm=norm), exp, d)


@given(st.lists(st.integers(1, 5), min_size=2, max_size=4).map(tuple), st.integers(0, 2**31), dtypes, norms,
       st.booleans(), st.booleans())
def test_nd_transforms_against_numpy(shape, seed, d, norm, use_s, view):
    a = data(seed, shape, d)
    t = as_tensor(a, view)
    axes = [0, -1]
    s = [shape[0] + 1, max(1, shape[-1] - 1)] if use_s else None
    for name in ("fft2", "ifft2", "fftn", "ifftn"):
        exp = getattr(np.fft, name)(oracle_input(a, d, False), s=s, axes=axes, norm=norm)
        check(getattr(rt, name)(t, axes=axes, s=s, norm=norm), exp, d)
    exp = np.fft.fftn(oracle_input(a, d, False), norm=norm)
    check(rt.fftn(t, norm=norm), exp, d)
    if d.kind != "c":
        for name in ("rfft2", "rfftn"):
            exp = getattr(np.fft, name)(oracle_input(a, d, True), s=s, axes=axes, norm=norm)
            check(getattr(rt, name)(t, axes=axes, s=s, norm=norm), exp, d)
    if use_s or shape[-1] > 1:
        for name in ("irfft2", "irfftn"):
            exp = getattr(np.fft, name)(oracle_input(a, d, False), s=s, axes=axes, norm=norm)
            check(getattr(rt, name)(t, axes=axes, s=s, norm=norm), exp, d)


@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple), st.integers(0, 2**31),
       st.sampled_from([rt.float64, rt.float32]), norms)
def test_round_trips(shape, seed, d, norm):
    a = data(seed, shape, d)
    t = rt.from_numpy(a)
    back = rt.ifftn(rt.fftn(t, norm=norm), norm=norm)
    np.testing.assert_allclose(np.array(rt.to_numpy(back)).real, a, rtol=1e-4, atol=1e-4)
    back = rt.irfftn(rt.rfftn(t, norm=norm), s=list(shape), norm=norm)
    np.testing.assert_allclose(np.array(rt.to_numpy(back)), a, rtol=1e-4, atol=1e-4)
    assert back.dtype is d


@given(st.integers(1, 12), st.sampled_from([1.0, 0.1, 2.5, -3.0]))
def test_frequencies_against_numpy(n, d):
    for name in ("fftfreq", "rfftfreq"):
        got = getattr(rt, name)(n, d=d)
        assert got.dtype is rt.float64
        np.testing.assert_allclose(np.array(rt.to_numpy(got)), getattr(np.fft, name)(n, d=d), rtol=1e-15)


@given(st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple), st.integers(0, 2**31),
       st.sampled_from([rt.int32, rt.float64, rt.complex64, rt.bool]), st.data())
def test_shifts_against_numpy(shape, seed, d, dd):
    a = data(seed, shape, d)
    t = rt.from_numpy(a)
    axes = None
    if shape and dd.draw(st.booleans()):
        axes = dd.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape),
                                unique_by=lambda x: x % len(shape)))
    for name in ("fftshift", "ifftshift"):
        got = getattr(rt, name)(t, axes=axes)
        exp = getattr(np.fft, name)(a, axes=axes) if shape else a  # (NumPy fails on 0-d input)
        assert got.dtype is d and got.shape == exp.shape
        np.testing.assert_array_equal(np.array(rt.to_numpy(got)), exp)
        assert not np.shares_memory(rt.to_numpy(got), a)


def test_seed_examples():
    # Rune's documented examples
    assert rt.rfft(rt.create(rt.float64, [4], [0, 1, 2, 3])).shape == (3,)
    assert str(rt.fftfreq(4)) == "[0, 0.25, -0.5, -0.25]"
    assert str(rt.fftshift(rt.fftfreq(5))) == "[-0.4, -0.2, 0, 0.2, 0.4]"


def test_dtypes():
    assert rt.fft(rt.ones(rt.float32, [4])).dtype is rt.complex64
    assert rt.fft(rt.ones(rt.float16, [4])).dtype is rt.complex64
    assert rt.fft(rt.ones(rt.bfloat16, [4])).dtype is rt.complex64
    assert rt.fft(rt.ones(rt.int32, [4])).dtype is rt.complex128
    assert rt.rfft(rt.ones(rt.float32, [4])).dtype is rt.complex64
    assert rt.irfft(rt.ones(rt.complex64, [4])).dtype is rt.float32
    assert rt.hfft(rt.ones(rt.complex128, [4])).dtype is rt.float64
    assert rt.ihfft(rt.ones(rt.float64, [4])).dtype is rt.complex128
    assert rt.fftn(rt.scalar(rt.float64, 3.0)).dtype is rt.complex128
    assert rt.to_array(rt.fftn(rt.scalar(rt.float64, 3.0))) == [3 + 0j]


def test_methods():
    t = rt.create(rt.float64, [4], [1, 0, 0, 0])
    assert rt.to_array(t.fft()) == [1 + 0j] * 4
    assert rt.to_array(t.rfft()) == [1 + 0j] * 3


def test_out_argument():
    t = rt.create(rt.float64, [4], [1, 0, 0, 0])
    out = rt.zeros(rt.complex128, [4])
    r = rt.fft(t, out=out)
    assert r is out and rt.to_array(out) == [1 + 0j] * 4
    o2 = rt.zeros(rt.float64, [2, 2])
    assert rt.irfft2(rt.rfft2(rt.ones(rt.float64, [2, 2])), out=o2) is o2 and rt.to_array(o2) == [1.0] * 4
    with pytest.raises(ValueError, match="fft: out has shape \\(3,\\), the result has shape \\(4,\\)"):
        rt.fft(t, out=rt.zeros(rt.complex128, [3]))
    with pytest.raises(TypeError, match="fft: out has dtype complex64, the result has dtype complex128"):
        rt.fft(t, out=rt.zeros(rt.complex64, [4]))
    with pytest.raises(TypeError, match="fftn: out must be a Tensor"):
        rt.fftn(t, out=[0, 0, 0, 0])


def test_errors():
    t = rt.ones(rt.float64, [4])
    with pytest.raises(ValueError, match="fft: norm must be 'backward', 'forward' or 'ortho', got 'bogus'"):
        rt.fft(t, norm="bogus")
    with pytest.raises(ValueError, match="fft: n must be >= 1, got 0"):
        rt.fft(t, n=0)
    with pytest.raises(TypeError, match="fft: n must be an integer"):
        rt.fft(t, n=2.5)
    with pytest.raises(IndexError, match="fft: axis 3 is out of bounds"):
        rt.fft(t, axis=3)
    with pytest.raises(IndexError):
        rt.fft(rt.scalar(rt.float64, 1.0))
    with pytest.raises(ValueError, match="fft: invalid number of data points \\(0\\)"):
        rt.fft(rt.ones(rt.float64, [0]))
    with pytest.raises(ValueError, match="irfft: cannot infer the output length from 1 point"):
        rt.irfft(rt.ones(rt.complex128, [1]))
    with pytest.raises(TypeError, match="rfft: expected a real tensor, got complex128"):
        rt.rfft(rt.ones(rt.complex128, [4]))
    with pytest.raises(TypeError, match="ihfft: expected a real tensor"):
        rt.ihfft(rt.ones(rt.complex64, [4]))
    with pytest.raises(ValueError, match="fftn: s=\\[2\\] and axes=\\[0, 1\\] have different lengths"):
        rt.fftn(rt.ones(rt.float64, [2, 2]), axes=[0, 1], s=[2])
    with pytest.raises(ValueError, match="fft2: expected a tensor with at least 2 dimensions"):
        rt.fft2(t, axes=None)
    with pytest.raises(IndexError):
        rt.fft2(t)
    with pytest.raises(ValueError, match="fftn: axes .* repeat an axis"):
        rt.fftn(rt.ones(rt.float64, [2, 2]), axes=[0, 0])
    with pytest.raises(ValueError, match="fftn: s=\\[1, 2, 3\\] has more entries than the tensor's rank 2"):
        rt.fftn(rt.ones(rt.float64, [2, 2]), s=[1, 2, 3])
    with pytest.raises(ValueError, match="rfftn: a real transform needs at least one axis"):
        rt.rfftn(rt.scalar(rt.float64, 1.0))
    with pytest.raises(ValueError, match="fftfreq: n must be >= 1, got 0"):
        rt.fftfreq(0)
    with pytest.raises(ValueError, match="rfftfreq: d must be a non-zero number"):
        rt.rfftfreq(4, d=0)
    with pytest.raises(TypeError, match="fftfreq: d must be a number"):
        rt.fftfreq(4, d="x")
    with pytest.raises(TypeError, match="fft: expected a numeric tensor"):
        rt.fft(rt.asarray(np.array([object()], dtype=object)))
    with pytest.raises(ValueError, match="fftshift: axes .* repeat"):
        rt.fftshift(rt.ones(rt.float64, [2, 2]), axes=[1, -1])
