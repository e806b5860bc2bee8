"""Bad inputs get the project's own errors: loaders refuse FIFOs, devices and directories without
blocking; integers too long to print (Python's 4300-digit limit) in file headers give the loader's
own ValueError; impossible Dask chunk sizes and crafted pickles are named errors.

The non-regular-file cases run in a child process (tests/hostile.py) with a timeout, so a loader
that blocks in ``open`` fails the test instead of hanging the run.
"""
import os
import pickle
import struct
import sys

import numpy as np
import pytest

import runetensor as rt
import runetensor.io as rio
from hostile import assert_survives

LOADERS = sorted(n for n in rio.__all__ if n.startswith("load_"))

NON_REGULAR = r'''
import os, sys, tempfile, warnings
warnings.simplefilter("ignore")
import runetensor.io as rio
d = tempfile.mkdtemp()
fifo = os.path.join(d, "pipe")
os.mkfifo(fifo)
calls = {
    "load_npy": [lambda p: rio.load_npy(p), lambda p: rio.load_npy(p, mmap=True),
                 lambda p: rio.load_npy(p, mmap="r+"), lambda p: rio.load_npy(p, backend="dask")],
    "load_npz": [rio.load_npz],
    "load_safetensors": [rio.load_safetensors, lambda p: rio.load_safetensors(p, mmap=True)],
    "load_txt": [rio.load_txt],
    "load_image": [rio.load_image],
    "load_checkpoint": [lambda p: rio.load_checkpoint(p, {"w": 0.0})],
}
# the loader a call's error names (a checkpoint is a safetensors file: its reader names itself)
named = {n: (n,) for n in calls}
named["load_checkpoint"] = ("load_checkpoint", "load_safetensors")
assert sorted(calls) == sorted(n for n in rio.__all__ if n.startswith("load_")), "a loader without a case"
targets = [(fifo, ValueError, "is a FIFO"), (d, IsADirectoryError, "a directory")]
if os.path.exists("/dev/zero"):
    targets.append(("/dev/zero", ValueError, "is a character device"))
bad = []
for name, fs in calls.items():
    for f in fs:
        for path, exc, words in targets:
            try:
                f(path)
                bad.append((name, path, "loaded"))
            except exc as e:
                msg = str(e).replace("[Errno 21] ", "")
                if not any(msg.startswith(n + ":") for n in named[name]) or words not in msg:
                    bad.append((name, path, str(e)[:200]))
            except BaseException as e:
                bad.append((name, path, type(e).__name__ + ": " + str(e)[:200]))
# the FIFO is still a FIFO (not replaced, not read from)
import stat
assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
for b in bad:
    print("BAD", b)
assert not bad
print("ok")
'''


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_loaders_refuse_fifos_devices_and_directories_without_blocking():
    assert "ok" in assert_survives(NON_REGULAR, timeout=120)


def test_every_loader_is_walked():
    assert LOADERS == ["load_checkpoint", "load_image", "load_npy", "load_npz", "load_safetensors", "load_txt"]


def test_a_regular_file_still_loads_in_every_mode(tmp_path):
    p = tmp_path / "a.npy"
    np.save(p, np.arange(6.0).reshape(2, 3))
    for kw in ({}, {"mmap": True}, {"mmap": "r+"}, {"mmap": "c"}):
        np.testing.assert_array_equal(rt.to_numpy(rio.load_npy(p, **kw)), np.arange(6.0).reshape(2, 3))
    q = tmp_path / "b.txt"
    q.write_text("1 2\n3 4\n")
    np.testing.assert_array_equal(rt.to_numpy(rio.load_txt(q)), [[1, 2], [3, 4]])
    link = tmp_path / "link.npy"
    os.symlink(p, link)  # a symlink to a regular file is a regular file
    assert rio.load_npy(link).shape == (2, 3)


# ---------------------------------------------------------------------------
# integers too long to print
# ---------------------------------------------------------------------------
HUGE_HEX = "0x" + "f" * 20000


def _npy(shape_text):
    h = ("{'descr': '<f8', 'fortran_order': False, 'shape': %s, }" % shape_text).encode()
    h += b" " * (-(len(h) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h


@pytest.mark.parametrize("shape", [f"({HUGE_HEX},)", f"(0, {HUGE_HEX})", f"(2, -{HUGE_HEX})", f"[{HUGE_HEX}]",
                                   f"{HUGE_HEX}"])
def test_npy_header_with_a_huge_hex_integer(tmp_path, shape):
    p = tmp_path / "h.npy"
    p.write_bytes(_npy(shape))
    for load in (lambda: rio.load_npy(p), lambda: rio.load_npy(p, mmap=True),
                 lambda: rio.load_npy(open(p, "rb"))):
        with pytest.raises(ValueError, match=r"^load_npy: .*(bad shape|integer of)") as e:
            load()
        assert "4300" not in str(e.value) and "int_max_str_digits" not in str(e.value)
        assert len(str(e.value)) < 1000


def test_npz_member_and_text_tag_with_a_huge_hex_integer(tmp_path):
    import zipfile
    p = tmp_path / "h.npz"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("a.npy", _npy(f"({HUGE_HEX},)"))
    with pytest.raises(ValueError, match=r"^load_npz: .*member 'a\.npy'.*bad shape") as e:
        rio.load_npz(p)
    assert "4300" not in str(e.value)
    q = tmp_path / "h.txt"
    q.write_text(f"# runetensor: dtype=float32 shape=({HUGE_HEX},)\n1\n")
    with pytest.raises(ValueError, match=r"^load_txt: ") as e:
        rio.load_txt(q)
    assert "4300" not in str(e.value)


@pytest.mark.parametrize("where", ["shape", "offsets", "dtype"])
def test_safetensors_header_with_a_huge_integer(tmp_path, where):
    big = "9" * 20000
    entry = {"shape": f'[{big}]' if where == "shape" else "[1]",
             "offsets": f'[0, {big}]' if where == "offsets" else "[0, 4]",
             "dtype": big if where == "dtype" else '"F32"'}
    hdr = ('{"a": {"dtype": %s, "shape": %s, "data_offsets": %s}}'
           % (entry["dtype"], entry["shape"], entry["offsets"])).encode()
    hdr += b" " * (-len(hdr) % 8)
    p = tmp_path / "h.safetensors"
    p.write_bytes(struct.pack("<Q", len(hdr)) + hdr + b"\0" * 4)
    for mm in (False, True):
        with pytest.raises(ValueError, match=r"^load_safetensors: .*an integer of 20000 digits") as e:
            rio.load_safetensors(p, mmap=mm)
        assert "4300" not in str(e.value)


def test_safetensors_ordinary_integers_still_load(tmp_path):
    p = tmp_path / "ok.safetensors"
    rio.save_safetensors(p, {"w": rt.create(rt.float32, [2], [1.0, 2.0])})
    np.testing.assert_array_equal(rt.to_numpy(rio.load_safetensors(p)["w"]), [1.0, 2.0])


# ---------------------------------------------------------------------------
# Dask chunks
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("chunks", [0, -2, True, (2, 0), (0,), {0: 0}, [3, -5]])
def test_impossible_dask_chunks(tmp_path, chunks):
    pytest.importorskip("dask")
    a = np.ones((4, 3))
    with pytest.raises(ValueError, match=r"^asarray: chunks=.* expected \"auto\", a chunk size >= 1 or -1"):
        rt.asarray(a, backend="dask", chunks=chunks)
    with pytest.raises(ValueError, match=r"^asarray: chunks="):
        rt.ones(rt.float32, [4, 3]).to_backend("dask", chunks=chunks)
    p = tmp_path / "a.npy"
    np.save(p, a)
    with pytest.raises(ValueError, match=r"^load_npy: chunks="):
        rio.load_npy(p, backend="dask", chunks=chunks)


def test_possible_dask_chunks_still_work():
    pytest.importorskip("dask")
    a = np.arange(12.0).reshape(4, 3)
    for chunks in (1, -1, "auto", (2, -1), {0: 2}, ((1, 3), (3,)), (None, 2)):
        np.testing.assert_array_equal(rt.to_numpy(rt.asarray(a, backend="dask", chunks=chunks).to_backend("numpy")),
                                      a)


# ---------------------------------------------------------------------------
# crafted pickles
# ---------------------------------------------------------------------------
class _Crafted:
    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        from runetensor._interop import _rebuild
        return (_rebuild, self.args)


@pytest.mark.parametrize("args, words", [
    (("object", (1,), b"\0" * 8), "an object tensor cannot be rebuilt from raw bytes"),
    (("object", (2, 2), b"\x01" * 32), "an object tensor cannot be rebuilt from raw bytes"),
    (("no_such_dtype", (1,), b"\0" * 4), "unknown dtype 'no_such_dtype'"),
    (("float32", ("1",), b"\0" * 4), "bad shape"),
    (("float32", (1,), "text"), "the data of a pickled tensor must be bytes"),
    (("float32", (2,), b"\0" * 4), "4 bytes of data for a float32 tensor of shape \\(2,\\)"),
    (("float32", (-1,), b""), "negative dimension"),
])
def test_crafted_pickles_are_named_errors(args, words):
    blob = pickle.dumps(_Crafted(*args))
    with pytest.raises(ValueError, match="^unpickle: " + words):
        pickle.loads(blob)


def test_object_tensors_still_round_trip():
    t = rt.asarray(np.array([1, "a", None], dtype=object))
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype is t.dtype and u.tolist() == [1, "a", None]


def test_huge_hex_in_a_child_under_a_small_memory_limit():
    # the header parse, the shape check and the message stay cheap (no decimal conversion of the integer)
    code = r'''
import os, struct, sys, tempfile
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
except (ImportError, ValueError, OSError):
    pass
import runetensor.io as rio
h = ("{'descr': '<f8', 'fortran_order': False, 'shape': (0x%s,), }" % ("f" * 900000)).encode()
h += b" " * (-(len(h) + 12) % 64) + b"\n"
p = os.path.join(tempfile.mkdtemp(), "h.npy")
open(p, "wb").write(b"\x93NUMPY\x02\x00" + struct.pack("<I", len(h)) + h)
try:
    rio.load_npy(p)
except ValueError as e:
    assert str(e).startswith("load_npy:") and "bits" in str(e), str(e)[:300]
    print("ok")
'''
    assert "ok" in assert_survives(code, timeout=120)


if sys.platform == "win32":  # pragma: no cover
    pytestmark = pytest.mark.skip(reason="POSIX file types")
