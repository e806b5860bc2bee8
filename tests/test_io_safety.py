"""runetensor.io, safe files: npz member names and zip64, permissions,
umask, symlinks, durability and clean-up of atomic saves, size limits, streaming text, and
the error style of the loaders and savers.  Hostile and corrupt files: test_hostile_files.py."""
import errno
import io
import os
import stat
import struct
import zipfile

import numpy as np
import pytest

import runetensor as rt
import runetensor.io as rio
from hostile import assert_survives


def npbits(t):
    return np.ascontiguousarray(rt.to_numpy(t)).tobytes()


def temps(d):
    return [f for f in os.listdir(d) if f.endswith(".tmp")]


SAVERS = {
    "npy": lambda p, t: rio.save_npy(p, t),
    "npz": lambda p, t: rio.save_npz(p, {"t": t}),
    "safetensors": lambda p, t: rio.save_safetensors(p, {"t": t}),
    "txt": lambda p, t: rio.save_txt(p, t),
    "png": lambda p, t: rio.save_image(p, rt.astype(t, rt.uint8)),
}
LOADERS = {
    "npy": rio.load_npy, "npz": lambda p: rio.load_npz(p)["t"], "safetensors": lambda p: rio.load_safetensors(p)["t"],
    "txt": rio.load_txt, "png": rio.load_image,
}


def sample(k=0):
    return rt.create(rt.float32, [2, 2], [1 + k, 2, 3, 4])


@pytest.fixture(params=list(SAVERS))
def fmt(request):
    if request.param == "png":
        pytest.importorskip("PIL")
    return request.param


# ---------------------------------------------------------------------------
# save_npz: member names
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name, why", [
    ("a\0b", "NUL"), ("\0", "NUL"), ("../x", "path separator"), ("/etc/passwd", "path separator"),
    ("a/b", "path separator"), ("..\\x", "path separator"), ("C:\\x", "path separator"),
    ("a\ud800", "lone surrogate"), ("", "non-empty"),
])
def test_npz_rejects_bad_member_names(tmp_path, name, why):
    p = tmp_path / "a.npz"
    with pytest.raises(ValueError, match="save_npz: .*" + why) as e:
        rio.save_npz(p, {"ok": rt.zeros(rt.int8, [1]), name: rt.ones(rt.int8, [2])})
    if name:
        assert repr(name) in str(e.value)
    assert os.listdir(tmp_path) == []
    with pytest.raises(ValueError, match="save_npz: "):  # keywords cannot hold them, but mappings can
        rio.save_npz(p, **{name or "\0": rt.zeros(rt.int8, [1])})


def test_npz_nul_names_no_longer_collide(tmp_path):
    # zip truncates names at NUL: these two would both have become 'a.npy'
    with pytest.raises(ValueError, match="NUL"):
        rio.save_npz(tmp_path / "a.npz", {"a\0x": rt.zeros(rt.int8, [1]), "a\0y": rt.ones(rt.int8, [1])})


def test_npz_plain_names_still_work(tmp_path):
    names = ["a", "a b", "..", ".", "x.npy", "\u00e9\u4e2d", "a:b", "-1"]
    p = tmp_path / "n.npz"
    rio.save_npz(p, {k: rt.full(rt.int16, [2], i) for i, k in enumerate(names)})
    back = rio.load_npz(p)
    assert list(back) == names
    with np.load(p) as z:
        assert sorted(z.files) == sorted(names)


# ---------------------------------------------------------------------------
# save_npz: zip64 by the member's real size
# ---------------------------------------------------------------------------
def test_zip64_decision():
    limit = zipfile.ZIP64_LIMIT  # 2 GiB - 1
    header = 128  # a .npy header
    assert not rio._npz_needs_zip64(limit, False)
    assert rio._npz_needs_zip64(limit + 1, False)
    # a tensor of exactly 2 GiB needs zip64: the member is 2 GiB + its header
    assert rio._npz_needs_zip64((1 << 31) + header, False)
    assert rio._npz_needs_zip64((1 << 31) - header, True)  # deflate may grow incompressible data
    assert not rio._npz_needs_zip64((1 << 31) - (1 << 24), True)
    assert not rio._npz_needs_zip64(1000, True)


@pytest.mark.parametrize("compressed", [False, True])
def test_zip64_switch_at_a_small_fake_limit(tmp_path, monkeypatch, compressed):
    """With zipfile's limit lowered to 4 KiB, members around the limit (header + data) must
    save: the decision has to use the member's real size, and deflate's worst case."""
    limit = 4096
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", limit)
    # the patched limit is effective: a plain streamed member past it fails in zipfile itself
    with pytest.raises(RuntimeError, match="force_zip64"):
        with zipfile.ZipFile(io.BytesIO(), "w") as zf, zf.open("x", "w") as m:
            m.write(b"\0" * (limit + 1))
    rng = np.random.default_rng(0)
    for data_bytes in (limit - 300, limit - 128, limit - 127, limit - 64, limit, limit + 8, 3 * limit):
        a = rng.integers(0, 256, size=data_bytes, dtype=np.uint8)  # incompressible
        p = tmp_path / f"z{data_bytes}.npz"
        rio.save_npz(p, {"a": rt.from_numpy(a), "b": rt.from_numpy(a[:10])}, compressed=compressed)
        back = rio.load_npz(p)
        assert npbits(back["a"]) == a.tobytes() and npbits(back["b"]) == a[:10].tobytes()
        with np.load(p) as z:
            assert z["a"].tobytes() == a.tobytes()


# ---------------------------------------------------------------------------
# permissions and umask
# ---------------------------------------------------------------------------
def test_existing_file_keeps_its_mode(tmp_path, fmt):
    p = tmp_path / f"x.{fmt}"
    SAVERS[fmt](p, sample(0))
    for mode in (0o600, 0o640, 0o604, 0o755):
        os.chmod(p, mode)
        SAVERS[fmt](p, sample(1))
        assert stat.S_IMODE(os.stat(p).st_mode) == mode, oct(mode)
    assert npbits(LOADERS[fmt](p)) == npbits(rt.astype(sample(1), rt.uint8) if fmt == "png" else sample(1))
    assert temps(tmp_path) == []


def test_setuid_bits_are_not_copied(tmp_path):
    p = tmp_path / "x.npy"
    rio.save_npy(p, sample())
    os.chmod(p, 0o4755)
    rio.save_npy(p, sample(1))
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o755


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


def test_new_files_follow_the_current_umask(tmp_path, fmt, umask):
    for i, m in enumerate((0o077, 0o027, 0o002, 0o022)):
        umask(m)
        p = tmp_path / f"n{i}.{fmt}"
        SAVERS[fmt](p, sample())
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o666 & ~m, (oct(m), oct(os.stat(p).st_mode))


def test_saving_never_touches_the_process_umask(tmp_path, monkeypatch):
    def no(*a):
        raise AssertionError("os.umask called: it changes the umask of every thread")

    monkeypatch.setattr(os, "umask", no)
    for fmt in ("npy", "npz", "safetensors", "txt"):
        SAVERS[fmt](tmp_path / f"x.{fmt}", sample())
    monkeypatch.undo()
    # nor does importing runetensor.io (it used to read the umask with an os.umask(0) round trip)
    assert_survives("""
        import os
        def no(*a):
            raise AssertionError("os.umask called at import")
        os.umask = no
        import runetensor.io
        print("ok")
    """, timeout=60)


# ---------------------------------------------------------------------------
# durability: fsync of the file, then rename, then fsync of the directory
# ---------------------------------------------------------------------------
def test_fsync_file_then_rename_then_fsync_directory(tmp_path, monkeypatch, fmt):
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append("fsync-dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync-file")
        return real_fsync(fd)

    def replace(a, b):
        events.append("rename")
        return real_replace(a, b)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    SAVERS[fmt](tmp_path / f"x.{fmt}", sample())
    assert events == ["fsync-file", "rename", "fsync-dir"]


def test_directory_fsync_refused_by_the_filesystem_is_skipped(tmp_path, monkeypatch):
    real_fsync = os.fsync

    def fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    rio.save_npy(tmp_path / "x.npy", sample())
    assert npbits(rio.load_npy(tmp_path / "x.npy")) == npbits(sample())


# ---------------------------------------------------------------------------
# no temporary files left behind, the old file intact
# ---------------------------------------------------------------------------
def _failing(monkeypatch, how):
    if how == "write":  # the disk fills up mid-write
        real = os.fdopen

        class Full:
            def __init__(self, f):
                self._f = f

            def write(self, b):
                raise OSError(errno.ENOSPC, "No space left on device")

            def __getattr__(self, name):
                return getattr(self._f, name)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self._f.close()

        def fdopen(fd, *a, **k):
            return Full(real(fd, *a, **k))

        monkeypatch.setattr(os, "fdopen", fdopen)
    elif how == "fsync":
        def fsync(fd):
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(os, "fsync", fsync)
    elif how == "rename":
        def replace(a, b):
            raise OSError(errno.EXDEV, "Invalid cross-device link")

        monkeypatch.setattr(os, "replace", replace)


@pytest.mark.parametrize("how", ["write", "fsync", "rename"])
@pytest.mark.parametrize("existing", [False, True])
def test_failed_save_leaves_no_temporary_file(tmp_path, monkeypatch, fmt, how, existing):
    p = tmp_path / f"x.{fmt}"
    if existing:
        SAVERS[fmt](p, sample(0))
        before = p.read_bytes()
    _failing(monkeypatch, how)
    # an OSError of the disk stays an OSError (save_image used to turn it into ValueError)
    with pytest.raises(OSError) as e:
        SAVERS[fmt](p, sample(1))
    assert not isinstance(e.value, ValueError)
    monkeypatch.undo()
    assert temps(tmp_path) == []
    if existing:
        assert p.read_bytes() == before
    else:
        assert not p.exists()


def test_save_into_a_directory_or_a_fifo(tmp_path):
    d = tmp_path / "d.npy"
    d.mkdir()
    with pytest.raises(IsADirectoryError):
        rio.save_npy(d, sample())
    fifo = tmp_path / "f.npy"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="save_npy: .* is not a regular file"):
        rio.save_npy(fifo, sample())
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert temps(tmp_path) == []
    with pytest.raises(FileNotFoundError):
        rio.save_npy(tmp_path / "missing" / "x.npy", sample())


def test_long_names_get_a_short_temporary_name(tmp_path):
    p = tmp_path / ("n" * 250 + ".npy")  # 254 characters: the old ".<name>.<random>.tmp" was too long
    rio.save_npy(p, sample())
    assert npbits(rio.load_npy(p)) == npbits(sample())


# ---------------------------------------------------------------------------
# symlinks: the link is followed, its target replaced, the link kept
# ---------------------------------------------------------------------------
def test_symlink_target_is_replaced_and_the_link_kept(tmp_path, fmt):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / f"target.{fmt}"
    SAVERS[fmt](target, sample(0))
    os.chmod(target, 0o600)
    link = tmp_path / f"link.{fmt}"
    os.symlink(os.path.join("real", target.name), link)  # a relative link
    link2 = tmp_path / f"link2.{fmt}"
    os.symlink(link, link2)  # a chain
    SAVERS[fmt](link2, sample(1))
    assert os.path.islink(link) and os.path.islink(link2)
    assert os.readlink(link) == os.path.join("real", target.name)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    want = rt.astype(sample(1), rt.uint8) if fmt == "png" else sample(1)
    assert npbits(LOADERS[fmt](target)) == npbits(want)
    assert temps(tmp_path) == [] and temps(real_dir) == []


def test_dangling_symlink_gets_its_target_created(tmp_path):
    link = tmp_path / "link.npy"
    os.symlink("made.npy", link)
    rio.save_npy(link, sample())
    assert os.path.islink(link) and (tmp_path / "made.npy").is_file()
    assert npbits(rio.load_npy(tmp_path / "made.npy")) == npbits(sample())


# ---------------------------------------------------------------------------
# size limits
# ---------------------------------------------------------------------------
def test_max_bytes_argument_checks(tmp_path):
    p = tmp_path / "x.npy"
    rio.save_npy(p, sample())
    for bad, exc in (("10", TypeError), (True, TypeError), (1.5, TypeError), (-1, ValueError)):
        with pytest.raises(exc, match="load_npy: max_bytes"):
            rio.load_npy(p, max_bytes=bad)
    with pytest.raises(ValueError, match="load_safetensors: max_header_bytes must be in"):
        rio.load_safetensors(p, max_header_bytes=100_000_001)
    with pytest.raises(TypeError, match="load_safetensors: max_header_bytes must be an int"):
        rio.load_safetensors(p, max_header_bytes=None)
    assert rio.DEFAULT_MAX_EXTRA_BYTES == 1 << 30 and rio.DEFAULT_MAX_HEADER_BYTES == 16 << 20


def test_max_bytes_of_every_loader(tmp_path):
    t = rt.create(rt.float32, [2, 3], [1, 2, 3, 4, 5, 6])  # 24 bytes of data
    rio.save_npy(tmp_path / "x.npy", t)
    rio.save_npz(tmp_path / "x.npz", {"a": t, "b": t}, compressed=True)  # 48 bytes of .npy data + 2 headers
    rio.save_safetensors(tmp_path / "x.st", {"a": t})
    rio.save_txt(tmp_path / "x.txt", t)
    cases = [
        ("load_npy", lambda m: rio.load_npy(tmp_path / "x.npy", max_bytes=m), 24),
        ("load_npy", lambda m: rio.load_npy(open(tmp_path / "x.npy", "rb"), max_bytes=m), 24),
        ("load_npz", lambda m: rio.load_npz(tmp_path / "x.npz", max_bytes=m), 2 * (24 + 128)),
        ("load_safetensors", lambda m: rio.load_safetensors(tmp_path / "x.st", max_bytes=m), 24),
        ("load_txt", lambda m: rio.load_txt(tmp_path / "x.txt", max_bytes=m), 24),
    ]
    try:
        from PIL import Image  # noqa: F401
        rio.save_image(tmp_path / "x.png", rt.zeros(rt.uint8, [4, 5, 3]))
        cases.append(("load_image", lambda m: rio.load_image(tmp_path / "x.png", max_bytes=m), 60))
    except ImportError:
        pass
    for fname, load, need in cases:
        load(need)  # exactly enough
        with pytest.raises(ValueError, match=f"{fname}: .*more than max_bytes={need - 1}"):
            load(need - 1)
    # mmap reads nothing into memory: the limit does not apply
    assert rio.load_npy(tmp_path / "x.npy", mmap=True, max_bytes=0).shape == (2, 3)
    assert rio.load_safetensors(tmp_path / "x.st", mmap=True, max_bytes=0)["a"].shape == (2, 3)


def test_default_limit_stops_inflation_before_decompressing(tmp_path, monkeypatch):
    """An archive whose directory declares 3 GiB is refused from the directory alone, before
    anything is decompressed or allocated."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.npy", b"x" * 1000)
    raw = bytearray(buf.getvalue())
    cd = raw.rindex(b"PK\x01\x02")
    raw[cd + 24:cd + 28] = struct.pack("<I", 3 << 30)  # the central directory's uncompressed size
    p = tmp_path / "lie.npz"
    p.write_bytes(bytes(raw))
    opened = []
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda *a, **k: opened.append(a) or 1 / 0)
    with pytest.raises(ValueError, match="load_npz: .*3221225472 bytes, more than the default limit"):
        rio.load_npz(p)
    assert opened == []


def test_safetensors_header_limit(tmp_path):
    hdr = b'{"__metadata__":{"k":"' + b"v" * 2000 + b'"}}'
    hdr += b" " * (-len(hdr) % 8)
    p = tmp_path / "h.safetensors"
    p.write_bytes(struct.pack("<Q", len(hdr)) + hdr)
    assert rio.load_safetensors(p, return_metadata=True)[1]["k"] == "v" * 2000
    with pytest.raises(ValueError, match="load_safetensors: .*header has 2032 bytes, more than max_header_bytes=2000"):
        rio.load_safetensors(p, max_header_bytes=2000)
    # the default: a header of 16 MiB + 8 is refused before it is read (the file is sparse)
    big = tmp_path / "big.safetensors"
    n = rio.DEFAULT_MAX_HEADER_BYTES + 8
    with open(big, "wb") as f:
        f.write(struct.pack("<Q", n))
        f.truncate(8 + n)
    with pytest.raises(ValueError, match="more than max_header_bytes=16777216"):
        rio.load_safetensors(big)


# ---------------------------------------------------------------------------
# text is streamed
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (0,), (23,), (9, 4), (3, 0), (0, 3), (5, 17)])
@pytest.mark.parametrize("d", [rt.float64, rt.int8, rt.bool, rt.complex64, rt.bfloat16, rt.uint4])
def test_text_is_written_and_read_in_blocks(tmp_path, monkeypatch, shape, d):
    monkeypatch.setattr(rio, "_TXT_BLOCK", 7)
    be = rt.zeros(rt.int8, [1])._backend
    real_to_list, real_asarray = type(be).to_list, type(be).asarray
    sizes = []

    def to_list(self, x):
        sizes.append(x.size)
        return real_to_list(self, x)

    def asarray(self, obj, dtype, copy):
        sizes.append(len(obj))
        return real_asarray(self, obj, dtype, copy)

    n = int(np.prod(shape))
    t = rt.astype(rt.reshape(rt.arange(rt.int64, 0, n, 1), list(shape)), d) if n else rt.zeros(d, list(shape))
    monkeypatch.setattr(type(be), "to_list", to_list)
    monkeypatch.setattr(type(be), "asarray", asarray)
    p = tmp_path / "t.txt"
    rio.save_txt(p, t)
    back = rio.load_txt(p)
    monkeypatch.undo()
    assert back.shape == t.shape and back.dtype == t.dtype
    assert npbits(back) == npbits(t)
    row = shape[1] if len(shape) == 2 else 1
    assert max(sizes, default=0) <= 7 + row  # never the whole tensor at once


def test_text_errors_in_a_late_block(tmp_path, monkeypatch):
    monkeypatch.setattr(rio, "_TXT_BLOCK", 4)
    p = tmp_path / "t.txt"
    p.write_text("".join(f"{i}\n" for i in range(20)) + "300\n")
    assert rt.to_array(rio.load_txt(p, dtype=rt.int16))[-1] == 300
    with pytest.raises(ValueError, match="load_txt: .*value 300 is out of range for int8"):
        rio.load_txt(p, dtype=rt.int8)
    p.write_text("# runetensor: dtype=int32 shape=(3,)\n1\n2\n3\n4\n5\n")
    with pytest.raises(ValueError, match="holds 3 values but the file holds more \\(row 4\\)"):
        rio.load_txt(p)


@pytest.mark.parametrize("shape", ["(0, 100000000000000000000)", "(2305843009213693952, 0)", "(1000000000000,)",
                                   "(-1,)", "(1, 2, 3)", "(True,)", "'x'"])
def test_text_header_with_an_impossible_shape(tmp_path, shape):
    p = tmp_path / "t.txt"
    p.write_text(f"# runetensor: dtype=float32 shape={shape}\n")
    with pytest.raises(ValueError, match="load_txt: "):
        rio.load_txt(p)  # it used to return a tensor holding None


# ---------------------------------------------------------------------------
# error style: clean exceptions naming the loader and what is wrong, no internals
# ---------------------------------------------------------------------------
def _npy(header, data=b""):
    h = header.encode()
    h += b" " * (-(len(h) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data


@pytest.mark.parametrize("shape", ["(0, 100000000000000000000)", "(0, 4611686018427387904)",
                                   "(0, 1099511627776, 1099511627776)", "(9223372036854775808,)",
                                   "(1,) * 65"])
def test_huge_npy_shapes_are_clean_value_errors(tmp_path, shape):
    sh = eval(shape)
    p = tmp_path / "h.npy"
    p.write_bytes(_npy("{'descr': '<f8', 'fortran_order': False, 'shape': %r, }" % (sh,)))
    for mm in (False, True):
        with pytest.raises(ValueError, match="load_npy: .*bad shape") as e:
            rio.load_npy(p, mmap=mm)
        assert "Maximum allowed dimension" not in str(e.value)
    with pytest.raises(ValueError, match="load_npy: .*bad shape"):
        rio.load_npy(io.BytesIO(p.read_bytes()))


def test_largest_zero_size_shapes_still_load(tmp_path):
    p = tmp_path / "z.npy"
    p.write_bytes(_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (0, %d), }" % (2**59)))
    assert rio.load_npy(p).shape == (0, 2**59)


@pytest.mark.parametrize("shape", [[0, 10**20], [0, 2**62], [2**63, 0], [1] * 65])
def test_huge_safetensors_shapes_are_clean_value_errors(tmp_path, shape):
    import json
    hdr = json.dumps({"a": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}}).encode()
    hdr += b" " * (-len(hdr) % 8)
    p = tmp_path / "h.safetensors"
    p.write_bytes(struct.pack("<Q", len(hdr)) + hdr)
    with pytest.raises(ValueError, match="load_safetensors: .*entry 'a' has bad shape"):
        rio.load_safetensors(p)


def test_image_errors(tmp_path, monkeypatch):
    pytest.importorskip("PIL")
    with pytest.raises(FileNotFoundError):
        rio.load_image(tmp_path / "missing.png")
    img = rt.zeros(rt.uint8, [4, 4])
    for q in (0, 101, 1000, -5):
        with pytest.raises(ValueError, match=f"save_image: quality must be from 1 to 100, got {q}"):
            rio.save_image(tmp_path / "a.jpg", img, quality=q)
    for q in (95.0, "95", True, None):
        with pytest.raises(TypeError, match="save_image: quality must be an int"):
            rio.save_image(tmp_path / "a.jpg", img, quality=q)
    rio.save_image(tmp_path / "a.jpg", img, quality=100)
    rio.save_image(tmp_path / "a.jpg", img, quality=np.int64(1))
    with pytest.raises(ValueError, match="save_image: unknown image format 'NOPE'"):
        rio.save_image(tmp_path / "a.png", img, format="NOPE")
    with pytest.raises(TypeError, match="save_image: format must be a string"):
        rio.save_image(tmp_path / "a.png", img, format=3)
    # a directory is an OSError of the filesystem, not "not a readable image"
    with pytest.raises(IsADirectoryError):
        rio.load_image(tmp_path)
    assert temps(tmp_path) == []
