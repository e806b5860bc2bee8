"""Interop: __array__, DLPack (NumPy, PyTorch, JAX), the buffer protocol, pickling."""
import copy
import pickle
import struct
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import runetensor as rt

from helpers import random_bits

ALL = list(rt._dtypes.all_dtypes)
EXTENDED = [rt.bfloat16, rt.float8_e4m3, rt.float8_e5m2]


def host(t):
    return rt.to_numpy(t)


def bits(a):
    return np.ascontiguousarray(a).tobytes()


# ---------------------------------------------------------------------------
# __array__
# ---------------------------------------------------------------------------
def test_array_shares_memory_contiguous_and_strided():
    base = np.arange(24.0).reshape(4, 6)
    t = rt.from_numpy(base)
    a = np.asarray(t)
    assert np.shares_memory(a, base) and a.dtype == np.float64
    view = rt.from_numpy(base[::2, ::-1])
    v = np.asarray(view)
    assert np.shares_memory(v, base)
    np.testing.assert_array_equal(v, base[::2, ::-1])
    a[0, 0] = 99
    assert rt.to_array(t)[0] == 99


def test_array_dtype_and_copy():
    t = rt.create(rt.int32, [3], [1, 2, 3])
    c = np.array(t)  # np.array copies by default
    assert not np.shares_memory(c, host(t))
    f = np.asarray(t, dtype=np.float64)
    assert f.dtype == np.float64 and f.tolist() == [1.0, 2.0, 3.0]
    assert np.asarray(t, dtype=np.int32).base is not None or np.shares_memory(np.asarray(t, dtype=np.int32), host(t))
    with pytest.raises(ValueError, match="needs a copy, but copy=False"):
        t.__array__(dtype=np.float64, copy=False)
    assert not np.shares_memory(t.__array__(copy=True), host(t))
    assert np.shares_memory(t.__array__(copy=False), host(t))
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        with pytest.raises(ValueError):
            np.asarray(t, dtype=np.float64, copy=False)


def test_numpy_functions_accept_tensors():
    t = rt.create(rt.float64, [2, 2], [1, 2, 3, 4])
    assert np.sum(np.asarray(t)) == 10
    assert np.linalg.det(np.asarray(t)) == pytest.approx(-2)


@pytest.mark.parametrize("d", ALL, ids=str)
def test_array_every_dtype(d):
    a = random_bits(1, (2, 3), d)
    t = rt.asarray(a)
    assert t.dtype is d
    b = np.asarray(t)
    assert b.dtype == a.dtype and bits(b) == bits(a) and np.shares_memory(a, b)


# ---------------------------------------------------------------------------
# rt.asarray of buffers and foreign arrays
# ---------------------------------------------------------------------------
def test_asarray_buffer_protocol_objects():
    ba = bytearray(b"\x01\x02\x03")
    t = rt.asarray(ba)
    assert t.dtype is rt.uint8 and rt.to_array(t) == [1, 2, 3]
    ba[0] = 7
    assert rt.to_array(t)[0] == 7  # shared
    import array
    arr = array.array("d", [1.5, 2.5])
    ta = rt.asarray(arr)
    assert ta.dtype is rt.float64 and rt.to_array(ta) == [1.5, 2.5]
    mv = memoryview(np.arange(6, dtype=np.int16).reshape(2, 3))
    tm = rt.asarray(mv)
    assert tm.dtype is rt.int16 and tm.shape == (2, 3)


# ---------------------------------------------------------------------------
# DLPack
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", [x for x in ALL if x not in (rt.int4, rt.uint4)], ids=str)
def test_dlpack_numpy_round_trip(d):
    a = random_bits(2, (3, 4), d)
    t = rt.from_dlpack(a)
    assert t.dtype is d and np.shares_memory(host(t), a)
    assert t.__dlpack_device__() == (1, 0)
    if d not in EXTENDED:
        b = np.from_dlpack(t)
        assert np.shares_memory(b, a) and bits(b) == bits(a)
    back = rt.from_dlpack(t.__array__()) if d in EXTENDED else rt.from_dlpack(np.from_dlpack(t))
    assert bits(host(back)) == bits(a)


def test_dlpack_extended_dtypes_through_capsules():
    for d in EXTENDED:
        a = random_bits(3, (5,), d)
        t = rt.asarray(a)
        holder = type("H", (), {"__dlpack__": lambda self, **k: t.__dlpack__(**k),
                                "__dlpack_device__": lambda self: t.__dlpack_device__()})()
        back = rt.from_dlpack(holder)
        assert back.dtype is d and np.shares_memory(host(back), a) and bits(host(back)) == bits(a)


def test_dlpack_strided_and_copy():
    base = np.arange(12.0).reshape(3, 4)
    t = rt.from_numpy(base[:, 1:])
    b = np.from_dlpack(t)
    assert np.shares_memory(b, base)
    neg = rt.from_numpy(base[::-1])
    nb = np.from_dlpack(neg)
    np.testing.assert_array_equal(nb, base[::-1])
    assert not np.shares_memory(nb, base)  # negative strides export a compact copy
    with pytest.raises(BufferError, match="negative strides"):
        neg.__dlpack__(copy=False)
    c = np.from_dlpack(rt.from_numpy(base), copy=True)
    assert not np.shares_memory(c, base)
    t2 = rt.from_dlpack(base, copy=True)
    assert not np.shares_memory(host(t2), base)


def test_dlpack_errors():
    with pytest.raises(BufferError, match="int4 tensors cannot be exported"):
        rt.zeros(rt.int4, [2]).__dlpack__()
    with pytest.raises(BufferError, match="stream must be None for a CPU tensor"):
        rt.zeros(rt.float32, [2]).__dlpack__(stream=1)
    with pytest.raises(BufferError, match="cannot export to DLPack device"):
        rt.zeros(rt.float32, [2]).__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match="from_dlpack: expected an object with __dlpack__"):
        rt.from_dlpack([1, 2])
    with pytest.raises(ValueError, match="from_dlpack: device must be None or 'cpu'"):
        rt.from_dlpack(np.zeros(2), device="gpu")
    t = rt.zeros(rt.float32, [2])
    assert rt.from_dlpack(t) is t
    assert not np.shares_memory(host(rt.from_dlpack(t, copy=True)), host(t))


def test_dlpack_pytorch():
    torch = pytest.importorskip("torch")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = rt.from_dlpack(x)
    x[0, 0] = 100
    assert rt.to_array(t)[0] == 100.0
    y = torch.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr()
    for td, d in ((torch.bfloat16, rt.bfloat16), (torch.float8_e4m3fn, rt.float8_e4m3),
                  (torch.float8_e5m2, rt.float8_e5m2), (torch.int16, rt.int16), (torch.bool, rt.bool),
                  (torch.complex64, rt.complex64)):
        src = (torch.arange(6, dtype=torch.float32) - 2).to(td)
        r = rt.from_dlpack(src)
        assert r.dtype is d
        assert host(r).ctypes.data == src.data_ptr()
        back = torch.from_dlpack(r)
        assert back.dtype == td and back.data_ptr() == src.data_ptr()
    # rt.asarray goes through DLPack too (torch's __array__ cannot do bfloat16)
    bt = torch.ones(3, dtype=torch.bfloat16)
    assert rt.asarray(bt).dtype is rt.bfloat16
    # strided views keep their strides; negative strides are exported compactly
    base = rt.from_numpy(np.arange(12.0).reshape(3, 4))
    tv = torch.from_dlpack(rt.matrix_transpose(base))
    assert tv.stride() == (1, 4)
    tn = torch.from_dlpack(rt.from_numpy(np.arange(4.0)[::-1]))
    assert tn.tolist() == [3.0, 2.0, 1.0, 0.0]


def test_dlpack_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    j = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    t = rt.from_dlpack(j)
    assert t.dtype is rt.float32 and rt.to_array(t) == [0, 1, 2, 3, 4, 5]
    jb = jnp.arange(4, dtype=jnp.bfloat16)
    assert rt.from_dlpack(jb).dtype is rt.bfloat16
    src = rt.create(rt.float32, [2, 2], [1, 2, 3, 4])
    back = jnp.from_dlpack(src)
    assert back.tolist() == [[1, 2], [3, 4]]
    if host(src).ctypes.data % 64 == 0:  # XLA copies buffers that are not 64-byte aligned
        assert back.unsafe_buffer_pointer() == host(src).ctypes.data
    bf = jnp.from_dlpack(rt.create(rt.bfloat16, [2], [1.5, -2]))
    assert bf.dtype == jnp.bfloat16 and bf.astype(jnp.float32).tolist() == [1.5, -2.0]


# ---------------------------------------------------------------------------
# buffer protocol
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d,fmt", [(rt.float64, "d"), (rt.float32, "f"), (rt.float16, "e"), (rt.int8, "b"),
                                   (rt.uint64, "LQ"), (rt.bool, "?"), (rt.complex128, "Zd")])
def test_memoryview_formats(d, fmt):
    t = rt.zeros(d, [2, 3])
    m = rt.memoryview(t)
    assert m.format in (fmt if len(fmt) == 1 or fmt.startswith("Z") else tuple(fmt))
    assert m.shape == (2, 3) and m.itemsize == d.itemsize and not m.readonly
    assert t.memoryview().format == m.format


def test_memoryview_shares_memory_and_strides():
    base = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = rt.from_numpy(base[::2, ::-1])
    m = rt.memoryview(t)
    assert m.strides == (32, -4) and m.tolist() == [[3, 2, 1, 0], [11, 10, 9, 8]]
    m[0, 0] = 42
    assert base[0, 3] == 42
    back = rt.asarray(m)
    assert np.shares_memory(host(back), base)


def test_rt_memoryview_passes_other_objects_to_the_builtin():
    assert rt.memoryview(b"ab").tobytes() == b"ab"
    with pytest.raises(TypeError):
        rt.memoryview([1, 2])


@pytest.mark.parametrize("d", [rt.bfloat16, rt.float8_e4m3, rt.float8_e5m2, rt.int4, rt.uint4], ids=str)
def test_memoryview_refuses_formatless_dtypes(d):
    with pytest.raises(BufferError, match=f"memoryview: {d} has no buffer-protocol format character"):
        rt.memoryview(rt.zeros(d, [2]))


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PEP 688 (__buffer__) needs Python 3.12")
def test_builtin_memoryview_pep688():
    t = rt.create(rt.int16, [3], [1, 2, 3])
    m = memoryview(t)
    assert m.tolist() == [1, 2, 3]
    assert bytes(t) == struct.pack("=3h", 1, 2, 3)


# ---------------------------------------------------------------------------
# pickling
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", ALL, ids=str)
def test_pickle_every_dtype_bit_exact(d):
    a = random_bits(4, (3, 2), d)
    t = rt.asarray(a)
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        u = pickle.loads(pickle.dumps(t, protocol=proto))
        assert u.dtype is d and u.shape == (3, 2) and bits(host(u)) == bits(a)
    dc = copy.deepcopy(t)
    assert bits(host(dc)) == bits(a) and not np.shares_memory(host(dc), a)


def test_pickle_nan_payloads_views_and_edge_shapes():
    payload = np.array([0x7FC00001, 0xFFA00002, 0x7F800001], dtype=np.uint32).view(np.float32)
    u = pickle.loads(pickle.dumps(rt.from_numpy(payload)))
    assert bits(host(u)) == bits(payload)
    base = np.arange(24.0).reshape(4, 6)
    v = rt.from_numpy(base[::-2, 1::2].T)
    u = pickle.loads(pickle.dumps(v))
    np.testing.assert_array_equal(host(u), base[::-2, 1::2].T)
    assert len(pickle.dumps(v)) < len(pickle.dumps(rt.from_numpy(base)))  # views are stored compactly
    for shape in [(), (0,), (2, 0, 3)]:
        z = rt.from_numpy(np.full(shape, 1.5))
        u = pickle.loads(pickle.dumps(z))
        assert u.shape == shape and bits(host(u)) == bits(host(z))
    w = pickle.loads(pickle.dumps(rt.zeros(rt.float32, [2])))
    w_h = host(w)
    w_h[0] = 3  # unpickled tensors are writable
    assert rt.to_array(w)[0] == 3


def test_pickle_object_tensor():
    t = rt.asarray(np.array([(1, 2), "x", None], dtype=object))
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is rt.object and host(u).tolist() == [(1, 2), "x", None]


def test_unpickle_rejects_inconsistent_data():
    from runetensor._interop import _rebuild
    with pytest.raises(ValueError, match="unpickle: 3 bytes of data for a float32 tensor of shape \\(2,\\)"):
        _rebuild("float32", (2,), b"abc")
    with pytest.raises(ValueError, match="negative dimension"):
        _rebuild("float32", (-1,), b"")


@given(st.sampled_from(ALL), st.lists(st.integers(0, 4), max_size=3).map(tuple), st.integers(0, 2**31))
def test_pickle_property(d, shape, seed):
    a = random_bits(seed, shape, d)
    t = rt.asarray(a)
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is d and u.shape == shape and bits(host(u)) == bits(a)
