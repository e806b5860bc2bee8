"""rt.datasets: minibatches (in order, keyed shuffles, NumPy arrays and memory maps, rt.jit) and the
MNIST / Fashion-MNIST / CIFAR-10 readers on tiny files written in the official formats."""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import struct
import tarfile

import numpy as np
import pytest

import runetensor as rt
from runetensor import datasets as DS


# ---------------------------------------------------------------------------------------------
# batches
# ---------------------------------------------------------------------------------------------

def test_batches_in_order_cover_the_data():
    x = np.arange(23 * 3, dtype=np.float32).reshape(23, 3)
    y = np.arange(23)
    got = list(DS.batches({"x": x, "pair": (y, rt.asarray(y * 2))}, 5))
    assert [b["x"].shape[0] for b in got] == [5, 5, 5, 5, 3]
    np.testing.assert_array_equal(np.concatenate([rt.to_numpy(b["x"]) for b in got]), x)
    for b in got:
        assert isinstance(b["pair"], tuple) and isinstance(b["pair"][0], rt.Tensor)
        np.testing.assert_array_equal(rt.to_numpy(b["pair"][1]), 2 * rt.to_numpy(b["pair"][0]))


def test_shuffle_is_the_keys_permutation_and_deterministic():
    x = np.arange(50)
    k = rt.random.key(7)
    b = DS.batches(x, 8, key=k)
    order = np.concatenate([rt.to_numpy(t) for t in b])
    np.testing.assert_array_equal(order, rt.to_numpy(rt.random.permutation(k, 50)))
    assert sorted(order) == list(range(50)) and list(order) != list(range(50))
    again = np.concatenate([rt.to_numpy(t) for t in DS.batches(x, 8, key=rt.random.key(7))])
    np.testing.assert_array_equal(order, again)                     # same key, same batches
    twice = np.concatenate([rt.to_numpy(t) for t in b])             # iterating again: same batches
    np.testing.assert_array_equal(order, twice)
    other = np.concatenate([rt.to_numpy(t) for t in DS.batches(x, 8, key=rt.random.key(8))])
    assert list(other) != list(order)


def test_drop_last_gives_equal_batches():
    b = DS.batches(np.zeros((10, 2)), 4, drop_last=True, key=rt.random.key(0))
    assert len(b) == 2 and [tuple(t.shape) for t in b] == [(4, 2), (4, 2)]
    assert len(DS.batches(np.zeros((10, 2)), 4)) == 3
    assert len(DS.batches(np.zeros((3, 2)), 4, drop_last=True)) == 0


def test_memory_map_is_read_batch_by_batch(tmp_path):
    path = str(tmp_path / "x.dat")
    m = np.memmap(path, dtype=np.float32, mode="w+", shape=(100, 4))
    m[:] = np.arange(400, dtype=np.float32).reshape(100, 4)
    m.flush()
    ro = np.memmap(path, dtype=np.float32, mode="r", shape=(100, 4))
    k = rt.random.key(1)
    order = rt.to_numpy(rt.random.permutation(k, 100))
    for i, b in enumerate(DS.batches(ro, 16, key=k)):
        np.testing.assert_array_equal(rt.to_numpy(b), np.asarray(ro)[order[i * 16:(i + 1) * 16]])
    first = next(iter(DS.batches(ro, 16)))              # unshuffled: a view of the map, no copy
    assert np.shares_memory(rt.to_numpy(first), ro)


def test_jitted_step_traces_once_with_drop_last_and_twice_without():
    x = rt.rand(rt.float32, [30, 3], seed=0)
    y = rt.arange(rt.int32, 0, 30, 1)
    step = rt.jit(lambda b: rt.sum(b[0]) + rt.sum(b[1]).astype(rt.float32))
    for epoch in range(3):
        for b in DS.batches((x, y), 8, key=rt.random.fold_in(rt.random.key(0), epoch), drop_last=True):
            assert float(step(b)) == pytest.approx(float(rt.sum(b[0]) + rt.sum(b[1]).astype(rt.float32)), rel=1e-6)
    assert rt.jit_stats(step)["traces"] == 1
    for b in DS.batches((x, y), 8):
        step(b)
    assert rt.jit_stats(step)["traces"] == 2      # the last batch of 6 rows traces once more


def test_batches_errors():
    with pytest.raises(ValueError, match="batches: batch_size must be > 0"):
        DS.batches(np.zeros(3), 0)
    with pytest.raises(TypeError, match="batches: batch_size must be an integer"):
        DS.batches(np.zeros(3), 2.0)
    with pytest.raises(ValueError, match="leaf 1 has 4 examples"):
        DS.batches((np.zeros(3), np.zeros(4)), 2)
    with pytest.raises(ValueError, match="0-d"):
        DS.batches((np.zeros(3), rt.scalar(rt.float32, 1.0)), 2)
    with pytest.raises(ValueError, match="no leaves"):
        DS.batches({}, 2)
    with pytest.raises(TypeError, match="key"):
        DS.batches(np.zeros(3), 2, key=3)


# ---------------------------------------------------------------------------------------------
# idx readers
# ---------------------------------------------------------------------------------------------

def _idx(a: np.ndarray) -> bytes:
    return struct.pack(">BBBB", 0, 0, 8, a.ndim) + struct.pack(f">{a.ndim}I", *a.shape) + a.astype(np.uint8).tobytes()


def _write(path, data, gz):
    if gz:
        with gzip.open(path + ".gz", "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)


@pytest.mark.parametrize("reader", [DS.mnist, DS.fashion_mnist])
@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("split, prefix", [("train", "train"), ("test", "t10k")])
def test_idx_reader_round_trip(tmp_path, reader, gz, split, prefix):
    r = np.random.default_rng(0)
    imgs = r.integers(0, 256, (7, 28, 28)).astype(np.uint8)
    labs = r.integers(0, 10, 7).astype(np.uint8)
    _write(str(tmp_path / f"{prefix}-images-idx3-ubyte"), _idx(imgs), gz)
    _write(str(tmp_path / f"{prefix}-labels-idx1-ubyte"), _idx(labs), gz)
    x, y = reader(tmp_path, split)
    assert x.dtype == rt.uint8 and y.dtype == rt.int32
    np.testing.assert_array_equal(rt.to_numpy(x), imgs)
    np.testing.assert_array_equal(rt.to_numpy(y), labs)


def test_idx_reader_rejects_damaged_files(tmp_path):
    imgs, labs = np.zeros((3, 28, 28), np.uint8), np.array([1, 2, 3], np.uint8)
    d = str(tmp_path)

    def put(images, labels):
        _write(os.path.join(d, "train-images-idx3-ubyte"), images, False)
        _write(os.path.join(d, "train-labels-idx1-ubyte"), labels, False)

    put(_idx(imgs)[:-5], _idx(labs))
    with pytest.raises(ValueError, match="mnist: .* is truncated"):
        DS.mnist(d)
    put(_idx(imgs) + b"x", _idx(labs))
    with pytest.raises(ValueError, match="data beyond"):
        DS.mnist(d)
    put(_idx(imgs), _idx(np.array([1, 2, 12], np.uint8)))
    with pytest.raises(ValueError, match="label of 12"):
        DS.mnist(d)
    put(_idx(imgs), _idx(labs[:2]))
    with pytest.raises(ValueError, match="3 images but .* 2 labels"):
        DS.mnist(d)
    put(b"PK\x03\x04garbage", _idx(labs))
    with pytest.raises(ValueError, match="not an idx file"):
        DS.mnist(d)
    put(_idx(labs), _idx(labs))
    with pytest.raises(ValueError, match="1 dimensions, expected 3"):
        DS.mnist(d)
    put(struct.pack(">BBBB3I", 0, 0, 8, 3, 2**31, 2**16, 28), _idx(labs))   # a header claiming terabytes
    with pytest.raises(ValueError, match="corrupt"):
        DS.mnist(d)
    _write(os.path.join(d, "train-images-idx3-ubyte.gz"), b"not gzip", False)
    with pytest.raises(ValueError, match="cannot read"):
        DS.mnist(d)
    with pytest.raises(FileNotFoundError, match="t10k-images-idx3-ubyte"):
        DS.mnist(d, "test")
    with pytest.raises(ValueError, match="split must be"):
        DS.mnist(d, "validation")
    with pytest.raises(ValueError, match="verify must be"):
        DS.mnist(d, verify="yes")


def test_official_name_and_size_with_wrong_checksum_is_refused(tmp_path):
    size, _ = DS.OFFICIAL_FILES["mnist"]["train-labels-idx1-ubyte.gz"]
    labs = np.zeros(3, np.uint8)
    payload = gzip.compress(_idx(labs))
    with open(tmp_path / "train-labels-idx1-ubyte.gz", "wb") as f:       # official name and size, other bytes
        f.write(payload + bytes(size - len(payload)))
    _write(str(tmp_path / "train-images-idx3-ubyte"), _idx(np.zeros((3, 28, 28), np.uint8)), False)
    with pytest.raises(ValueError, match="does not match the official train-labels-idx1-ubyte.gz"):
        DS.mnist(tmp_path)
    with pytest.raises(ValueError, match="no published checksum"):          # verify=True: official files only
        DS.mnist(tmp_path, verify=True)
    os.remove(tmp_path / "train-labels-idx1-ubyte.gz")
    with open(tmp_path / "train-labels-idx1-ubyte.gz", "wb") as f:          # another size: not the official file
        f.write(payload)
    x, y = DS.mnist(tmp_path)
    assert tuple(x.shape) == (3, 28, 28) and rt.to_array(y) == [0, 0, 0]


def test_official_digests_are_well_formed():
    for files in DS.OFFICIAL_FILES.values():
        for size, md5 in files.values():
            assert size > 0 and len(md5) == 32 and int(md5, 16) >= 0
    # Fashion-MNIST and MNIST share names, not files
    assert DS.OFFICIAL_FILES["mnist"].keys() == DS.OFFICIAL_FILES["fashion_mnist"].keys()
    assert not set(DS.OFFICIAL_FILES["mnist"].values()) & set(DS.OFFICIAL_FILES["fashion_mnist"].values())


def test_verified_file_is_read_when_digest_matches(tmp_path, monkeypatch):
    labs = np.array([4, 5], np.uint8)
    data = gzip.compress(_idx(labs))
    table = {k: dict(v) for k, v in DS.OFFICIAL_FILES.items()}
    table["mnist"]["t10k-labels-idx1-ubyte.gz"] = (len(data), hashlib.md5(data).hexdigest())
    monkeypatch.setattr(DS, "OFFICIAL_FILES", table)
    with open(tmp_path / "t10k-labels-idx1-ubyte.gz", "wb") as f:
        f.write(data)
    _write(str(tmp_path / "t10k-images-idx3-ubyte"), _idx(np.zeros((2, 28, 28), np.uint8)), False)
    assert rt.to_array(DS.mnist(tmp_path, "test")[1]) == [4, 5]
    with pytest.raises(ValueError, match="no published checksum"):   # the images file is not an official one
        DS.mnist(tmp_path, "test", verify=True)


# ---------------------------------------------------------------------------------------------
# CIFAR-10
# ---------------------------------------------------------------------------------------------

def _cifar_bytes(n, seed):
    r = np.random.default_rng(seed)
    imgs = r.integers(0, 256, (n, 3, 32, 32)).astype(np.uint8)
    labs = r.integers(0, 10, n).astype(np.uint8)
    rec = np.concatenate([labs[:, None], imgs.reshape(n, -1)], axis=1)
    return rec.tobytes(), imgs, labs


def _cifar_dir(root, sizes=(2, 3, 1, 2, 2), test=3):
    d = os.path.join(root, "cifar-10-batches-bin")
    os.makedirs(d, exist_ok=True)
    out = {}
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    for i, (name, n) in enumerate(zip(names, list(sizes) + [test])):
        raw, imgs, labs = _cifar_bytes(n, i)
        with open(os.path.join(d, name), "wb") as f:
            f.write(raw)
        out[name] = (raw, imgs, labs)
    return out


def test_cifar10_from_batch_files(tmp_path):
    files = _cifar_dir(str(tmp_path))
    x, y = DS.cifar10(tmp_path)
    want_x = np.concatenate([files[f"data_batch_{i}.bin"][1] for i in range(1, 6)])
    want_y = np.concatenate([files[f"data_batch_{i}.bin"][2] for i in range(1, 6)])
    assert tuple(x.shape) == (10, 3, 32, 32) and x.dtype == rt.uint8 and y.dtype == rt.int32
    np.testing.assert_array_equal(rt.to_numpy(x), want_x)
    np.testing.assert_array_equal(rt.to_numpy(y), want_y)
    xt, yt = DS.cifar10(tmp_path, "test")
    np.testing.assert_array_equal(rt.to_numpy(xt), files["test_batch.bin"][1])


def test_cifar10_from_the_archive_without_extracting(tmp_path):
    src = tmp_path / "src"
    files = _cifar_dir(str(src))
    root = tmp_path / "root"
    root.mkdir()
    with tarfile.open(root / "cifar-10-binary.tar.gz", "w:gz") as tf:
        tf.add(src / "cifar-10-batches-bin", arcname="cifar-10-batches-bin")
    x, y = DS.cifar10(root, "test")
    np.testing.assert_array_equal(rt.to_numpy(x), files["test_batch.bin"][1])
    np.testing.assert_array_equal(rt.to_numpy(y), files["test_batch.bin"][2])
    assert os.listdir(root) == ["cifar-10-binary.tar.gz"]      # nothing written beside it
    with pytest.raises(ValueError, match="does not match the official cifar-10-binary.tar.gz"):
        DS.cifar10(root, verify=True)                            # verify=True: only the official archive


def test_cifar10_archive_members_must_be_regular_files(tmp_path):
    with tarfile.open(tmp_path / "cifar-10-binary.tar.gz", "w:gz") as tf:
        info = tarfile.TarInfo("cifar-10-batches-bin/test_batch.bin")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tf.addfile(info)
    with pytest.raises(ValueError, match="not a regular file"):
        DS.cifar10(tmp_path, "test")
    with tarfile.open(tmp_path / "cifar-10-binary.tar.gz", "w:gz") as tf:
        data = b"x" * 10
        info = tarfile.TarInfo("other.bin")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    with pytest.raises(ValueError, match="no member"):
        DS.cifar10(tmp_path, "test")


def test_cifar10_rejects_damaged_files(tmp_path):
    files = _cifar_dir(str(tmp_path))
    p = os.path.join(str(tmp_path), "cifar-10-batches-bin", "test_batch.bin")
    with open(p, "wb") as f:
        f.write(files["test_batch.bin"][0][:-1])
    with pytest.raises(ValueError, match="whole number of 3073-byte records"):
        DS.cifar10(tmp_path, "test")
    bad = bytearray(files["test_batch.bin"][0])
    bad[0] = 10
    with open(p, "wb") as f:
        f.write(bytes(bad))
    with pytest.raises(ValueError, match="label of 10"):
        DS.cifar10(tmp_path, "test")
    os.makedirs(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="cifar-10-binary.tar.gz"):
        DS.cifar10(tmp_path / "empty", "train")


def test_datasets_reachable_from_rt():
    assert rt.datasets is DS and rt.datasets.batches is DS.batches
