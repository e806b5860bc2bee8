"""runetensor.io: round trips for every dtype, NumPy compatibility, corrupt files, atomic writes."""
import json
import os
import struct
import sys
import zipfile

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import runetensor as rt

from helpers import random_bits
import runetensor.io as rio

ALL = list(rt._dtypes.all_dtypes)
ST_REFUSED = (rt.int4, rt.uint4, rt.complex128)
shapes = st.lists(st.integers(0, 4), max_size=3).map(tuple)
seeds = st.integers(0, 2**31)
fuzz_settings = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
                         deadline=None)


def write_corrupted(p, raw, data):
    """Write to ``p`` the bytes ``raw`` with 1 to 4 bytes overwritten at random, cut at a random length;
    return the overwritten (uncut) bytes."""
    raw = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    p.write_bytes(bytes(raw[:data.draw(st.integers(0, len(raw)))]))
    return raw


def bits(t):
    return np.ascontiguousarray(rt.to_numpy(t)).tobytes() if isinstance(t, rt.Tensor) else \
        np.ascontiguousarray(t).tobytes()


def leftovers(d):
    return [f for f in os.listdir(d) if f.endswith(".tmp")]


@pytest.fixture(autouse=True, scope="module")
def _no_directory_fsync():
    """The property tests here save thousands of files; the directory fsync after each rename
    (~2 ms on a journaling filesystem) would make this file five times slower.  Durability
    (fsync of the file, rename, fsync of the directory) is tested in test_io_safety.py."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rio, "_fsync_dir", lambda directory: None)
        yield


# ---------------------------------------------------------------------------
# .npy
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", ALL, ids=str)
def test_npy_round_trip_every_dtype(tmp_path, d):
    a = random_bits(7, (3, 4), d)  # random bit patterns: NaN payloads, -0, subnormals
    p = tmp_path / "a.npy"
    rio.save_npy(p, rt.asarray(a))
    for kw in ({}, {"mmap": True}, {"mmap": "c"}):
        t = rio.load_npy(p, **kw)
        assert t.dtype is d and t.shape == (3, 4) and bits(t) == bits(a)
    assert not leftovers(tmp_path)


@given(st.sampled_from(ALL), shapes, seeds, st.booleans())
@fuzz_settings
def test_npy_round_trip_property(tmp_path, d, shape, seed, view):
    a = random_bits(seed, shape, d)
    if view and a.ndim:
        a = a[..., ::-1]  # a negative-stride view is written in C order
    p = tmp_path / "p.npy"
    rio.save_npy(p, rt.asarray(a))
    t = rio.load_npy(p)
    assert t.dtype is d and t.shape == shape and bits(t) == bits(a)


@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple), seeds, st.sampled_from([0, 1, 2, 3]),
       st.sampled_from([rt.float64, rt.bfloat16, rt.bool, rt.complex64]))
@fuzz_settings
def test_chunked_writes_of_views(tmp_path, shape, seed, how, d):
    """Large tensors are written in chunks (blocks of rows for strided views): shrink the chunk to test it."""
    a = random_bits(seed, shape, d)
    v = [a, a[..., ::-1], np.swapaxes(a, 0, -1), a[::2]][how]
    old = rio._CHUNK
    rio._CHUNK = 16
    try:
        rio.save_npy(tmp_path / "c.npy", rt.asarray(v))
        rio.save_safetensors(tmp_path / "c.st", {"x": rt.asarray(v)})
    finally:
        rio._CHUNK = old
    assert bits(rio.load_npy(tmp_path / "c.npy")) == bits(v)
    assert bits(rio.load_safetensors(tmp_path / "c.st")["x"]) == bits(v)


def test_npy_numpy_compatibility(tmp_path):
    p = str(tmp_path / "n.npy")
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    rio.save_npy(p, rt.asarray(a))
    np.testing.assert_array_equal(np.load(p), a)
    np.save(p, a)
    assert bits(rio.load_npy(p)) == bits(a)
    # Fortran order comes back as a Fortran-strided view
    f = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    np.save(p, f)
    t = rio.load_npy(p)
    np.testing.assert_array_equal(rt.to_numpy(t), f)
    tm = rio.load_npy(p, mmap=True)
    np.testing.assert_array_equal(rt.to_numpy(tm), f)
    # big-endian data is byte-swapped on load
    for dt in (">f8", ">i4", ">c16", ">u2"):
        b = (np.arange(5) * 3 - 4).astype(dt) if dt != ">u2" else np.arange(5).astype(dt)
        np.save(p, b)
        t = rio.load_npy(p)
        np.testing.assert_array_equal(rt.to_numpy(t), b.astype(b.dtype.newbyteorder("=")))
    with pytest.raises(ValueError, match="non-native byte order .* cannot be memory-mapped"):
        rio.load_npy(p, mmap=True)
    # NumPy's raw-void encoding of ml_dtypes arrays needs dtype=
    bf = np.array([1.5, -2, np.nan], dtype=ml_dtypes.bfloat16)
    np.save(p, bf)
    with pytest.raises(ValueError, match="raw void data .* pass dtype="):
        rio.load_npy(p)
    t = rio.load_npy(p, dtype=rt.bfloat16)
    assert t.dtype is rt.bfloat16 and bits(t) == bits(bf)
    with pytest.raises(ValueError, match="void items of 2 bytes cannot hold float32"):
        rio.load_npy(p, dtype=rt.float32)
    # our bfloat16 encoding is a one-field structured dtype NumPy can read
    rio.save_npy(p, rt.asarray(bf))
    s = np.load(p)
    assert s.dtype.names == ("bfloat16",) and bits(s["bfloat16"].view(ml_dtypes.bfloat16)) == bits(bf)


def test_npy_file_objects_and_dtype_check(tmp_path):
    import io
    buf = io.BytesIO()
    rio.save_npy(buf, rt.create(rt.float32, [2], [1, 2]))
    buf.seek(0)
    assert rt.to_array(rio.load_npy(buf)) == [1.0, 2.0]
    buf.seek(0)
    with pytest.raises(ValueError, match="holds float32, not the requested float64"):
        rio.load_npy(buf, dtype=rt.float64)
    buf.seek(0)
    with pytest.raises(ValueError, match="mmap needs a file path"):
        rio.load_npy(buf, mmap=True)
    with pytest.raises(TypeError, match="save_npy: object tensors cannot be saved"):
        rio.save_npy(tmp_path / "o.npy", rt.asarray(np.array([None], dtype=object)))
    with pytest.raises(ValueError, match="load_npy: mmap must be"):
        rio.load_npy(tmp_path / "o.npy", mmap="w")


def test_npy_version_2_and_3_headers(tmp_path):
    p, raw = good_npy(tmp_path)
    hl = struct.unpack("<H", raw[8:10])[0]
    for major in (2, 3):
        p.write_bytes(raw[:6] + bytes([major, 0]) + struct.pack("<I", hl) + raw[10:])
        assert bits(rio.load_npy(p)) == bits(random_bits(1, (2, 3), rt.float64))
    a = np.zeros(2, dtype=[("\u00e9", "<f4")])  # NumPy writes version 3.0 for a UTF-8 header
    np.save(p, a)
    with pytest.raises(ValueError, match="structured dtype"):
        rio.load_npy(p)


def test_npy_lying_header_does_not_allocate():
    import io
    hdr = "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }"
    hdr = hdr.ljust(117) + "\n"
    raw = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + b"\0" * 16
    with pytest.raises(ValueError, match="is truncated: shape \\(1000000000000,\\) of float64 needs"):
        rio.load_npy(io.BytesIO(raw))


def test_npy_mmap_modes(tmp_path):
    p = tmp_path / "m.npy"
    rio.save_npy(p, rt.create(rt.float64, [3], [1, 2, 3]))
    ro = rio.load_npy(p, mmap=True)
    with pytest.raises(ValueError):
        rt.to_numpy(ro)[0] = 5  # read-only mapping
    rw = rio.load_npy(p, mmap="r+")
    rt.to_numpy(rw)[0] = 9
    del rw
    assert rt.to_array(rio.load_npy(p)) == [9, 2, 3]
    cw = rio.load_npy(p, mmap="c")
    rt.to_numpy(cw)[0] = 7
    assert rt.to_array(cw)[0] == 7 and rt.to_array(rio.load_npy(p))[0] == 9
    e = tmp_path / "e.npy"
    rio.save_npy(e, rt.zeros(rt.float32, [0, 3]))
    assert rio.load_npy(e, mmap=True).shape == (0, 3)


def good_npy(tmp_path, d=rt.float64, shape=(2, 3)):
    p = tmp_path / "g.npy"
    rio.save_npy(p, rt.asarray(random_bits(1, shape, d)))
    return p, p.read_bytes()


@pytest.mark.parametrize("case,match", [
    ("magic", "is not a .npy file"),
    ("empty", "is not a .npy file"),
    ("version", "unsupported .npy format version 9.0"),
    ("hlen", "header length .* is larger than the file"),
    ("truncated_header", "header length .* is larger than the file"),
    ("truncated_data", "needs 48 bytes of data, but the file has 47"),
    ("extra_data", "needs 48 bytes of data, but the file has 49"),
    ("literal", "the header is not a valid Python literal"),
    ("keys", "the header must be a dict with keys"),
    ("shape", "bad shape"),
    ("descr", "dtype '<U4' is not supported"),
    ("object", "dtype '|O8' is not supported"),
    ("fortran", "fortran_order must be True or False"),
    ("struct", "structured dtype .* is not supported"),
])
def test_npy_corrupt_files(tmp_path, case, match):
    p, raw = good_npy(tmp_path)
    hl = struct.unpack("<H", raw[8:10])[0]

    def with_header(h):
        h = h.ljust(hl - 1) + "\n" if len(h) < hl else h + "\n"
        return raw[:8] + struct.pack("<H", len(h)) + h.encode("latin1") + raw[10 + hl:]

    data = {
        "magic": b"\x93NUMPX" + raw[6:], "empty": b"", "version": raw[:6] + b"\x09\x00" + raw[8:],
        "hlen": raw[:8] + struct.pack("<H", 60000) + raw[10:], "truncated_header": raw[:40],
        "truncated_data": raw[:-1], "extra_data": raw + b"\x00",
        "literal": with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), "),
        "keys": with_header("{'descr': '<f8', 'shape': (2, 3), 'extra': 1}"),
        "shape": with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -3), }"),
        "descr": with_header("{'descr': '<U4', 'fortran_order': False, 'shape': (2, 3), }"),
        "object": with_header("{'descr': '|O8', 'fortran_order': False, 'shape': (2, 3), }"),
        "fortran": with_header("{'descr': '<f8', 'fortran_order': 0, 'shape': (2, 3), }"),
        "struct": with_header("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (2, 3), }"),
    }[case]
    p.write_bytes(data)
    with pytest.raises(ValueError, match=match):
        rio.load_npy(p)
    if case not in ("empty",):
        with pytest.raises(ValueError):
            rio.load_npy(p, mmap=True)


@pytest.mark.parametrize("d,byte", [(rt.bool, 2), (rt.int4, 0x80), (rt.uint4, 0x10)])
def test_npy_invalid_bool_and_int4_bytes(tmp_path, d, byte):
    p, raw = good_npy(tmp_path, d, (4,))
    p.write_bytes(raw[:-1] + bytes([byte]))
    with pytest.raises(ValueError, match=f"is not a valid {d} value"):
        rio.load_npy(p)


@given(st.data())
@fuzz_settings
def test_npy_fuzzed_bytes_never_crash(tmp_path, data):
    d = data.draw(st.sampled_from([rt.float32, rt.bool, rt.bfloat16, rt.int4, rt.complex64]))
    p, raw = good_npy(tmp_path, d, (3, 2))
    raw = write_corrupted(p, raw, data)
    for kw in ({}, {"mmap": True}):
        try:
            t = rio.load_npy(p, **kw)
        except ValueError:
            continue
        assert t.size * t.dtype.itemsize <= len(raw)  # whatever loads is self-consistent
        rt.to_numpy(t).tobytes()


# ---------------------------------------------------------------------------
# .npz
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("compressed", [False, True])
def test_npz_round_trip_every_dtype(tmp_path, compressed):
    arrays = {d.name: random_bits(i, (2, 3), d) for i, d in enumerate(ALL)}
    p = tmp_path / "a.npz"
    rio.save_npz(p, {k: rt.asarray(v) for k, v in arrays.items()}, compressed=compressed, extra=rt.zeros(rt.int8, []))
    got = rio.load_npz(p)
    assert list(got) == list(arrays) + ["extra"]
    for k, v in arrays.items():
        assert got[k].dtype.name == k and bits(got[k]) == bits(v)
    assert got["extra"].shape == ()
    with np.load(p) as z:  # NumPy reads the archive
        np.testing.assert_array_equal(z["int32"], arrays["int32"])
    assert not leftovers(tmp_path)


def test_npz_reads_numpy_archives_and_errors(tmp_path):
    p = tmp_path / "n.npz"
    np.savez_compressed(p, a=np.arange(3), b=np.eye(2))
    got = rio.load_npz(p)
    assert rt.to_array(got["a"]) == [0, 1, 2] and got["b"].shape == (2, 2)
    with pytest.raises(ValueError, match="the name 'a' is given twice"):
        rio.save_npz(p, {"a": rt.zeros(rt.int8, [1])}, a=rt.zeros(rt.int8, [1]))
    with pytest.raises(ValueError, match="names must be non-empty"):
        rio.save_npz(p, {"": rt.zeros(rt.int8, [1])})
    with pytest.raises(TypeError, match="names must be strings"):
        rio.save_npz(p, {1: rt.zeros(rt.int8, [1])})
    with pytest.raises(TypeError, match="arrays must be a mapping"):
        rio.save_npz(p, [rt.zeros(rt.int8, [1])])
    rio.save_npz(p)
    assert rio.load_npz(p) == {}
    q = tmp_path / "bad.npz"
    q.write_bytes(b"not a zip at all")
    with pytest.raises(ValueError, match="is not a valid .npz archive"):
        rio.load_npz(q)
    with zipfile.ZipFile(q, "w") as zf:
        zf.writestr("readme.txt", "hi")
    with pytest.raises(ValueError, match="member 'readme.txt' is not a .npy file"):
        rio.load_npz(q)
    with zipfile.ZipFile(q, "w") as zf:
        zf.writestr("x.npy", b"\x93NUMPY\x01\x00garbage")
    with pytest.raises(ValueError, match="member 'x.npy'"):
        rio.load_npz(q)
    # a corrupted member (CRC mismatch) is detected
    rio.save_npz(q, {"x": rt.ones(rt.float64, [64])})
    raw = bytearray(q.read_bytes())
    i = raw.find(b"\x00\x00\x00\x00\x00\x00\xf0?")
    raw[i + 7] ^= 0x01
    q.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="not a valid .npz archive"):
        rio.load_npz(q)


@given(st.data())
@fuzz_settings
def test_npz_fuzzed_bytes_never_crash(tmp_path, data):
    p = tmp_path / "f.npz"
    rio.save_npz(p, {"a": rt.ones(rt.float32, [3]), "b": rt.zeros(rt.bool, [2, 2])},
                 compressed=data.draw(st.booleans()))
    write_corrupted(p, p.read_bytes(), data)
    try:
        got = rio.load_npz(p)
    except ValueError:
        return
    for t in got.values():
        rt.to_numpy(t).tobytes()


# ---------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", ALL, ids=str)
def test_safetensors_every_dtype(tmp_path, d):
    a = random_bits(11, (2, 5), d)
    p = tmp_path / "m.safetensors"
    if d in ST_REFUSED:
        with pytest.raises(TypeError, match=f"{d} has no safetensors dtype"):
            rio.save_safetensors(p, {"x": rt.asarray(a)})
        assert not p.exists() and not leftovers(tmp_path)
        return
    rio.save_safetensors(p, {"x": rt.asarray(a), "y": rt.asarray(a[:, ::-2])})
    for mm in (False, True):
        got = rio.load_safetensors(p, mmap=mm)
        assert got["x"].dtype is d and bits(got["x"]) == bits(a)
        assert bits(got["y"]) == bits(a[:, ::-2])


def test_safetensors_layout_follows_the_spec(tmp_path):
    p = tmp_path / "m.safetensors"
    rio.save_safetensors(p, {"w": rt.create(rt.bfloat16, [2], [1, 2]), "b": rt.create(rt.float8_e5m2, [3], [1, 2, 3])},
                         metadata={"format": "pt"})
    raw = p.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    assert n % 8 == 0 and raw[8:9] == b"{"
    h = json.loads(raw[8:8 + n])
    assert h["__metadata__"] == {"format": "pt"}
    assert h["w"] == {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}
    assert h["b"] == {"dtype": "F8_E5M2", "shape": [3], "data_offsets": [4, 7]}
    assert raw[8 + n:8 + n + 4] == np.array([1, 2], dtype=ml_dtypes.bfloat16).tobytes()
    tensors, meta = rio.load_safetensors(p, return_metadata=True)
    assert meta == {"format": "pt"} and list(tensors) == ["w", "b"]
    assert rio.load_safetensors(p, return_metadata=True)[1] == meta


def test_safetensors_reads_the_reference_implementation(tmp_path):
    st_np = pytest.importorskip("safetensors.numpy")
    p = str(tmp_path / "r.safetensors")
    st_np.save_file({"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False])}, p)
    got = rio.load_safetensors(p)
    assert rt.to_array(got["a"]) == [0, 1, 2, 3, 4, 5] and rt.to_array(got["b"]) == [True, False]
    rio.save_safetensors(p, {"c": rt.create(rt.int16, [2], [-1, 5])})
    assert st_np.load_file(p)["c"].tolist() == [-1, 5]


def test_safetensors_empty_and_zero_size(tmp_path):
    p = tmp_path / "e.safetensors"
    rio.save_safetensors(p, {})
    assert rio.load_safetensors(p) == {} and rio.load_safetensors(p, mmap=True) == {}
    rio.save_safetensors(p, {"z": rt.zeros(rt.float32, [0, 3]), "a": rt.ones(rt.int8, [2])})
    got = rio.load_safetensors(p, mmap=True)
    assert got["z"].shape == (0, 3) and rt.to_array(got["a"]) == [1, 1]


def test_safetensors_argument_errors(tmp_path):
    p = tmp_path / "e.safetensors"
    with pytest.raises(ValueError, match="invalid tensor name '__metadata__'"):
        rio.save_safetensors(p, {"__metadata__": rt.zeros(rt.int8, [1])})
    with pytest.raises(TypeError, match="metadata must map strings to strings"):
        rio.save_safetensors(p, {"a": rt.zeros(rt.int8, [1])}, metadata={"k": 1})
    with pytest.raises(TypeError, match="tensors must be a mapping"):
        rio.save_safetensors(p, [rt.zeros(rt.int8, [1])])


def st_file(header, data=b"", pad=True):
    hb = json.dumps(header).encode()
    if pad:
        hb += b" " * (-len(hb) % 8)
    return struct.pack("<Q", len(hb)) + hb + data


@pytest.mark.parametrize("raw,match", [
    (b"", "is truncated: 0 bytes"),
    (b"\x05\x00\x00", "is truncated"),
    (struct.pack("<Q", 1000) + b"{}", "header length 1000 exceeds the file"),
    (struct.pack("<Q", 2) + b"[]", "does not start with"),
    (struct.pack("<Q", 3) + b"{x}", "bad JSON header"),
    (struct.pack("<Q", 2) + b"\xff\xfe", "bad JSON header"),
    (struct.pack("<Q", 26) + b'{"a": {}, "a": {}}        ', "duplicate key 'a'"),
    (st_file({"a": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4), "unsupported dtype 'F99'"),
    (st_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4), "needs 8 bytes"),
    (st_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 4), "outside the 4-byte data"),
    (st_file({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4), "bad shape"),
    (st_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8), "leaves a hole"),
    (st_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
              "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4), "overlaps"),
    (st_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 6), "2 bytes of data after"),
    (st_file({"a": {"dtype": "F32", "shape": [1]}}, b"\0" * 4), "must have exactly dtype, shape and data_offsets"),
    (st_file({"a": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x05"), "not a valid bool"),
    (st_file({"__metadata__": {"k": 3}}), "__metadata__ must map strings to strings"),
    (st_file([1, 2]), "does not start with"),
])
def test_safetensors_corrupt_files(tmp_path, raw, match):
    p = tmp_path / "c.safetensors"
    p.write_bytes(raw)
    with pytest.raises(ValueError, match=match):
        rio.load_safetensors(p)


@given(st.data())
@fuzz_settings
def test_safetensors_fuzzed_bytes_never_crash(tmp_path, data):
    p = tmp_path / "f.safetensors"
    rio.save_safetensors(p, {"a": rt.ones(rt.bfloat16, [3]), "b": rt.zeros(rt.bool, [2, 2])}, metadata={"k": "v"})
    write_corrupted(p, p.read_bytes(), data)
    try:
        got = rio.load_safetensors(p)
    except ValueError:
        return
    for t in got.values():
        rt.to_numpy(t).tobytes()


# ---------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("d", ALL, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (4,), (3, 1), (1, 3), (2, 3), (0, 3), (2, 0)], ids=str)
def test_txt_round_trip(tmp_path, d, shape):
    a = random_bits(5, shape, d)
    p = tmp_path / "t.txt"
    rio.save_txt(p, rt.asarray(a))
    t = rio.load_txt(p)
    assert t.dtype is d and t.shape == shape
    got = rt.to_numpy(t)
    if d.kind in "fc":  # bit exact except NaN payloads
        nan = np.isnan(a)
        assert np.array_equal(np.isnan(got), nan)
        assert bits(np.where(nan, 0, got).astype(a.dtype)) == bits(np.where(nan, 0, a).astype(a.dtype))
        assert np.array_equal(np.signbit(got.real[~nan.real] if d.kind == "c" else got[~nan]),
                              np.signbit(a.real[~nan.real] if d.kind == "c" else a[~nan]))
    else:
        assert bits(got) == bits(a)


def test_txt_numpy_compatibility(tmp_path):
    p = tmp_path / "n.txt"
    a = np.arange(6.0).reshape(2, 3) / 7
    rio.save_txt(p, rt.from_numpy(a), delimiter=",")
    np.testing.assert_array_equal(np.loadtxt(p, delimiter=","), a)
    np.savetxt(p, a)
    np.testing.assert_allclose(rt.to_numpy(rio.load_txt(p)), a, rtol=1e-15)
    np.savetxt(p, np.arange(4))
    assert rio.load_txt(p).shape == (4,)
    p.write_text("5\n")
    assert rio.load_txt(p).shape == ()
    p.write_text("# comment\n1, 2\n\n3, 4\n")
    assert rt.to_array(rio.load_txt(p, dtype=rt.int8, delimiter=",")) == [1, 2, 3, 4]


def test_txt_errors(tmp_path):
    p = tmp_path / "e.txt"
    with pytest.raises(ValueError, match="save_txt: expected a tensor of rank <= 2"):
        rio.save_txt(p, rt.zeros(rt.float32, [1, 1, 1]))
    with pytest.raises(ValueError, match="save_txt: bad delimiter"):
        rio.save_txt(p, rt.zeros(rt.float32, [2]), delimiter="1")
    p.write_text("1 2\n3\n")
    with pytest.raises(ValueError, match="row 2 has 1 values, the first row has 2"):
        rio.load_txt(p)
    p.write_text("1 x\n")
    with pytest.raises(ValueError, match="'x' is not a valid float64 value"):
        rio.load_txt(p)
    p.write_text("300\n")
    with pytest.raises(ValueError, match="out of range for int8"):
        rio.load_txt(p, dtype=rt.int8)
    p.write_text("9\n")
    with pytest.raises(ValueError, match="out of range for int4"):
        rio.load_txt(p, dtype=rt.int4)
    p.write_text("# runetensor: dtype=int32 shape=(2, 2)\n1 2 3\n")
    with pytest.raises(ValueError, match="the header says shape \\(2, 2\\)"):
        rio.load_txt(p)
    p.write_text("# runetensor: dtype=int32 shape=(2, 2)\n1 2 3 4\n")
    with pytest.raises(ValueError, match="the header says shape \\(2, 2\\) but the file has 1 row"):
        rio.load_txt(p)
    p.write_text("# runetensor: dtype=bogus shape=(2,)\n1\n2\n")
    with pytest.raises(ValueError, match="malformed '# runetensor:' line"):
        rio.load_txt(p)
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="is not a UTF-8 text file"):
        rio.load_txt(p)


# ---------------------------------------------------------------------------
# atomic writes
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["npy", "npz", "safetensors", "txt"])
def test_failed_write_leaves_the_old_file(tmp_path, monkeypatch, fmt):
    p = tmp_path / f"x.{fmt}"
    save = {"npy": lambda t: rio.save_npy(p, t), "npz": lambda t: rio.save_npz(p, {"t": t}),
            "safetensors": lambda t: rio.save_safetensors(p, {"t": t}), "txt": lambda t: rio.save_txt(p, t)}[fmt]
    save(rt.create(rt.float32, [2], [1, 2]))
    before = p.read_bytes()

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(rio, "_le_bytes", boom)
    monkeypatch.setattr(rio, "_fmt_value", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        save(rt.create(rt.float32, [3], [7, 8, 9]))
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == [p.name]


def test_written_files_have_normal_permissions(tmp_path):
    p = tmp_path / "perm.npy"
    rio.save_npy(p, rt.zeros(rt.int8, [1]))
    umask = os.umask(0)
    os.umask(umask)
    assert (os.stat(p).st_mode & 0o777) == (0o666 & ~umask)


# ---------------------------------------------------------------------------
# images
# ---------------------------------------------------------------------------
def test_images_round_trip(tmp_path):
    pytest.importorskip("PIL")
    rng = np.random.default_rng(0)
    for shape, dt in [((5, 7), np.uint8), ((5, 7, 3), np.uint8), ((5, 7, 4), np.uint8), ((4, 3, 2), np.uint8),
                      ((6, 5), np.uint16)]:
        a = rng.integers(0, np.iinfo(dt).max, size=shape, dtype=dt)
        p = tmp_path / "i.png"
        rio.save_image(p, rt.from_numpy(a))
        t = rio.load_image(p)
        assert t.dtype.name == np.dtype(dt).name and t.shape == shape
        assert bits(t) == bits(a)
    one = rng.integers(0, 255, size=(3, 4, 1), dtype=np.uint8)
    rio.save_image(tmp_path / "g.png", rt.from_numpy(one))
    assert rio.load_image(tmp_path / "g.png").shape == (3, 4)
    smooth = np.tile(np.arange(0, 256, 8, dtype=np.uint8), (16, 1))
    rgb = np.stack([smooth, smooth[::-1], smooth], axis=-1)
    rio.save_image(tmp_path / "j.jpg", rt.from_numpy(rgb), quality=95)
    back = rt.to_numpy(rio.load_image(tmp_path / "j.jpg"))
    assert back.shape == rgb.shape and np.abs(back.astype(int) - rgb).mean() < 4  # JPEG is lossy
    assert not leftovers(tmp_path)


def test_image_palette_and_errors(tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    im = PIL.new("P", (3, 2))
    im.putpalette([255, 0, 0] * 256)
    im.save(tmp_path / "p.png")
    t = rio.load_image(tmp_path / "p.png")
    assert t.shape == (2, 3, 3) and rt.to_array(t)[:3] == [255, 0, 0]
    with pytest.raises(TypeError, match="save_image: expected uint8 pixels"):
        rio.save_image(tmp_path / "f.png", rt.zeros(rt.float32, [2, 2]))
    with pytest.raises(ValueError, match="save_image: expected a non-empty"):
        rio.save_image(tmp_path / "f.png", rt.zeros(rt.uint8, [2, 2, 5]))
    with pytest.raises(ValueError, match="cannot tell the image format"):
        rio.save_image(tmp_path / "f.xyz", rt.zeros(rt.uint8, [2, 2]))
    with pytest.raises(ValueError, match="JPEG holds only grayscale or RGB"):
        rio.save_image(tmp_path / "f.jpg", rt.zeros(rt.uint8, [2, 2, 4]))
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 20)
    with pytest.raises(ValueError, match="is not a readable image"):
        rio.load_image(tmp_path / "bad.png")
    good = tmp_path / "good.png"
    rio.save_image(good, rt.from_numpy(np.random.default_rng(1).integers(0, 255, (64, 64, 3), dtype=np.uint8)))
    (tmp_path / "trunc.png").write_bytes(good.read_bytes()[:200])
    with pytest.raises(ValueError, match="is not a readable image"):
        rio.load_image(tmp_path / "trunc.png")
    assert sorted(f for f in os.listdir(tmp_path) if f.startswith("f.")) == []


def test_image_without_pillow_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match="runetensor\\[image\\]"):
        rio.load_image(tmp_path / "x.png")
    with pytest.raises(ImportError, match="optional extra 'image'"):
        rio.save_image(tmp_path / "x.png", rt.zeros(rt.uint8, [2, 2]))


def test_rt_io_is_exposed():
    assert rt.io is rio
