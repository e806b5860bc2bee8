"""Chunked I/O of Dask tensors: ``rt.io.load_npy(path, backend="dask", chunks=...)`` reads
each chunk lazily from its own slice of the file, ``save_npy``/``save_safetensors`` write a Dask
tensor block by block at its offsets, with io.py's atomic-save guarantees.  Files are bigger than a
chunk and small overall; the synchronous scheduler keeps the tests fast and deterministic."""
import io
import os
import pickle
import stat
import tracemalloc

import numpy as np
import pytest

dask = pytest.importorskip("dask")

import runetensor as rt  # noqa: E402
import runetensor.io as rio  # noqa: E402
from runetensor._backend import dask_backend as DB  # noqa: E402


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="synchronous"):
        yield


def _bits(t):
    return rt.to_numpy(t).tobytes()


ARRAYS = [
    np.arange(1000 * 37, dtype=np.float32).reshape(1000, 37),
    np.asfortranarray(np.arange(60.0).reshape(6, 10)),        # fortran_order: True
    np.arange(50, dtype=">i4").reshape(5, 10),                 # big-endian: swapped per chunk
    np.arange(2 * 3 * 4 * 5, dtype=np.int16).reshape(2, 3, 4, 5),
    np.array([True, False, True] * 7),
    np.arange(12, dtype=np.complex64) * (1 + 2j),
    np.array(3.5),                                             # 0-d
    np.zeros((0, 4), np.float32),                              # empty
]


@pytest.mark.parametrize("k", range(len(ARRAYS)))
def test_load_npy_dask_roundtrip(tmp_path, k):
    a = ARRAYS[k]
    p = tmp_path / "a.npy"
    np.save(p, a)
    chunks = tuple(max(1, n // 3) for n in a.shape)  # several chunks on every axis
    t = rio.load_npy(p, backend="dask", chunks=chunks)
    assert t.backend.name == "dask" and t.shape == a.shape
    if a.size:
        assert all(len(c) >= min(3, n) for c, n in zip(t._data.arr.chunks, a.shape))
    assert np.array_equal(rt.to_numpy(t), a) and rt.to_numpy(t).dtype == a.dtype.newbyteorder("=")
    q = tmp_path / "b.npy"
    rio.save_npy(q, t)
    back = np.load(q)
    assert np.array_equal(back, a) and back.dtype == a.dtype.newbyteorder("<")
    assert back.flags.c_contiguous  # written in C order (fortran_order: False)


def test_low_precision_views_and_safetensors(tmp_path):
    x = rt.cast(rt.rand(rt.float32, [33, 17], seed=1), rt.bfloat16)
    rio.save_npy(tmp_path / "x.npy", x)
    t = rio.load_npy(tmp_path / "x.npy", backend="dask", chunks=(5, 4))
    assert t.dtype is rt.bfloat16 and _bits(t) == _bits(x)
    v = t[::2, 3:].T  # a view: written in the view's C order
    rio.save_npy(tmp_path / "v.npy", v)
    assert _bits(rio.load_npy(tmp_path / "v.npy")) == _bits(x[::2, 3:].T)
    i4 = rt.cast(rt.asarray(np.arange(-8, 8) % 15 - 7), rt.int4)
    rio.save_npy(tmp_path / "i4.npy", rt.to_backend(i4, "dask", chunks=5))
    assert _bits(rio.load_npy(tmp_path / "i4.npy", backend="dask", chunks=3)) == _bits(i4)

    b = rt.asarray(np.arange(1000.0), backend="dask", chunks=64)
    rio.save_safetensors(tmp_path / "m.st", {"a": t, "b": b, "c": rt.ones(rt.int8, [3])}, metadata={"k": "v"})
    r, meta = rio.load_safetensors(tmp_path / "m.st", return_metadata=True)
    assert _bits(r["a"]) == _bits(x) and rt.to_numpy(r["b"]).tolist() == list(np.arange(1000.0))
    assert rt.to_numpy(r["c"]).tolist() == [1, 1, 1] and meta == {"k": "v"}


def test_each_chunk_is_a_lazy_read_of_its_slice(tmp_path, monkeypatch):
    a = np.random.default_rng(0).standard_normal((512, 256)).astype(np.float32)  # 512 KiB
    p = tmp_path / "a.npy"
    np.save(p, a)
    t = rio.load_npy(p, backend="dask", chunks=(64, 128))
    arr = t._data.arr
    assert arr.numblocks == (8, 2)
    assert len(pickle.dumps(dict(arr.__dask_graph__()))) < a.nbytes // 20  # no data in the graph
    reads = []
    real = DB._npy_chunk

    def spy(*args, block_info=None):
        reads.append(tuple(tuple(lh) for lh in block_info[None]["array-location"]))
        return real(*args, block_info=block_info)
    monkeypatch.setattr(DB, "_npy_chunk", spy)
    t = rio.load_npy(p, backend="dask", chunks=(64, 128))
    assert reads == []                                   # lazy
    blk = t._data.arr.blocks[3, 1].compute()
    assert reads == [((192, 256), (128, 256))]           # one chunk: one read of its slice
    assert np.array_equal(blk, a[192:256, 128:256])
    s = rt.sum(t, axes=[0])
    np.testing.assert_allclose(rt.to_numpy(s), a.sum(0, dtype=np.float64), rtol=1e-4, atol=1e-3)
    assert len(reads) == 1 + 16


def test_memory_stays_bounded(tmp_path, monkeypatch):
    """A 32 MiB tensor loads, reduces and saves with a few MiB of peak Python-side allocation."""
    monkeypatch.setattr(DB, "WRITE_BATCH_BYTES", 1 << 20)
    n = 8 << 20                                           # float32: 32 MiB
    with rt.use_backend("dask", chunks=1 << 18):          # 1 MiB chunks
        x = rt.rand(rt.float32, [n // 1024, 1024], seed=3)
    p = tmp_path / "big.npy"
    tracemalloc.start()
    try:
        rio.save_npy(p, x * 2.0)
        _, peak_save = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        t = rio.load_npy(p, backend="dask", chunks=(256, 1024))
        m = float(rt.max(t))
        _, peak_load = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert os.path.getsize(p) == 128 + n * 4
    assert peak_save < 8 << 20, peak_save
    assert peak_load < 8 << 20, peak_load
    assert 1.99 < m < 2.0
    # the file holds exactly the tensor's values (checked through a memory map, in pieces)
    mm = np.load(p, mmap_mode="r")
    for lo in range(0, mm.shape[0], 2048):
        want = rt.to_numpy(x[lo:lo + 2048] * 2.0)
        assert np.array_equal(mm[lo:lo + 2048], want)
    del mm


def test_atomic_save_guarantees(tmp_path, monkeypatch):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(3.0))
    os.chmod(p, 0o640)
    x = rt.asarray(np.arange(100.0).reshape(10, 10), backend="dask", chunks=3)
    rio.save_npy(p, x)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o640            # an existing file keeps its mode
    assert np.array_equal(np.load(p), np.arange(100.0).reshape(10, 10))
    old = os.umask(0o027)
    try:
        rio.save_npy(tmp_path / "new.npy", x)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.npy").st_mode) == 0o640  # 0o666 minus the umask

    # a chunk that fails mid-write: the target is untouched and no temporary file is left
    def boom(b):
        if b.size and b.flat[0] >= 50:
            raise RuntimeError("chunk failed")
        return b
    bad = rt.asarray(np.arange(100.0).reshape(10, 10), backend="dask", chunks=3)
    bad._data._arr = bad._data._arr.map_blocks(boom, dtype=bad._data.dtype)
    monkeypatch.setattr(DB, "WRITE_BATCH_BYTES", 64)  # several batches: some blocks are written first
    with pytest.raises(RuntimeError, match="chunk failed"):
        rio.save_npy(p, bad)
    with pytest.raises(RuntimeError, match="chunk failed"):
        rio.save_safetensors(tmp_path / "s.st", {"w": bad})
    assert np.array_equal(np.load(p), np.arange(100.0).reshape(10, 10))
    assert sorted(os.listdir(tmp_path)) == ["a.npy", "new.npy"]


def test_load_modify_save_in_place(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(40.0).reshape(8, 5))
    t = rio.load_npy(p, backend="dask", chunks=(3, 2))
    rio.save_npy(p, t * 10.0 + 1.0)  # the temporary file is written from the old file, then renamed
    assert np.array_equal(np.load(p), np.arange(40.0).reshape(8, 5) * 10.0 + 1.0)


def test_changed_or_corrupt_file_raises_when_computed(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(40.0))
    t = rio.load_npy(p, backend="dask", chunks=7)
    np.save(p, np.arange(40.0) + 1)  # replaced behind the lazy tensor's back
    with pytest.raises(ValueError, match="changed"):
        rt.to_numpy(t)
    q = tmp_path / "b.npy"
    np.save(q, np.array([True, False] * 10))
    raw = bytearray(q.read_bytes())
    raw[-3] = 7
    q.write_bytes(bytes(raw))
    t = rio.load_npy(q, backend="dask", chunks=4)  # the header is fine: the bad byte shows when read
    with pytest.raises(ValueError, match="not a valid bool"):
        rt.to_numpy(t)


def test_arguments_and_streams(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(10.0))
    with pytest.raises(TypeError, match="chunks="):
        rio.load_npy(p, chunks=3)
    with pytest.raises(ValueError, match="mmap"):
        rio.load_npy(p, backend="dask", mmap="r+")
    assert rio.load_npy(p, backend="dask", mmap=True, chunks=4)._data.arr.chunks == ((4, 4, 2),)
    with pytest.raises(ValueError, match="needs 80 bytes of data"):
        with open(p, "ab") as f:
            f.write(b"x")
        rio.load_npy(p, backend="dask")
    x = rt.asarray(np.arange(30.0).reshape(5, 6), backend="dask", chunks=(2, 4))
    buf = io.BytesIO()
    rio.save_npy(buf, x)                                   # a seekable file object: block by block
    assert np.array_equal(np.load(io.BytesIO(buf.getvalue())), np.arange(30.0).reshape(5, 6))
    buf.seek(0)
    t = rio.load_npy(buf, backend="dask", chunks=2)          # a stream: read on the host, then moved
    assert t.backend.name == "dask" and rt.to_numpy(t).tolist() == np.arange(30.0).reshape(5, 6).tolist()

    class Pipe(io.RawIOBase):                              # not seekable: the sequential path
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.data += bytes(b)
            return len(b)
    pipe = Pipe()
    rio.save_npy(pipe, x)
    assert np.array_equal(np.load(io.BytesIO(bytes(pipe.data))), np.arange(30.0).reshape(5, 6))
