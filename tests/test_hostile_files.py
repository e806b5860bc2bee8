"""Hostile and corrupt files for every loader of runetensor.io.

Each batch runs in a child process (tests/hostile.py) under an address-space limit, so a
crash, a hang or an allocation of gigabytes fails the test instead of the test run.  In the
child, every hostile file must either raise ``ValueError`` whose message starts with the
loader's name, or load as a sound tensor (a bit flip in the data of a .npy is still a valid
file); anything else (another exception type, a message without the loader's name, a
MemoryError) is collected and fails the batch with a list of the cases.

Formats: .npy (path, mmap, file object), .npz, safetensors (read and mmap), text, images
(PNG, JPEG, GIF, BMP, TIFF through Pillow).  Cases: truncation at every length, random
byte overwrites, huge/negative/overflowing declared shapes and sizes, bad dtypes, header
bombs, zip bombs (small ones, and directories that lie), NUL and path-like member names.
"""
import pytest

from hostile import assert_survives

PRELUDE = r'''
import io, json, os, random, struct, sys, tempfile, warnings, zipfile, zlib
try:
    import resource
    _lim = 1536 << 20  # ~170 MB after imports: a loader that allocates gigabytes gets MemoryError here
    resource.setrlimit(resource.RLIMIT_AS, (_lim, _lim))
except (ImportError, ValueError, OSError, AttributeError):
    pass
import numpy as np
import runetensor as rt
import runetensor.io as rio
warnings.simplefilter("ignore")  # Pillow's DecompressionBombWarning and friends
D = tempfile.mkdtemp()
P = os.path.join(D, "f")
bad = []
counts = {"raised": 0, "loaded": 0}
rng = random.Random(12)


def sound(r):
    ts = list(r.values()) if isinstance(r, dict) else [r]
    for t in ts:
        assert isinstance(t, rt.Tensor), type(t)
        a = rt.to_numpy(t)
        assert a.shape == t.shape, (a.shape, t.shape)
        np.ascontiguousarray(a).tobytes()


def attempt(fname, load, raw, label):
    with open(P, "wb") as f:
        f.write(raw)
    try:
        r = load(P)
        sound(r)
    except ValueError as e:
        if not str(e).startswith(fname + ":"):
            bad.append((label, "ValueError without the loader's name: " + str(e)[:300]))
        counts["raised"] += 1
        return
    except BaseException as e:
        bad.append((label, f"{type(e).__name__}: {str(e)[:300]}"))
        return
    counts["loaded"] += 1


def fuzz(fname, load, raw, label, flips=150, every_cut=True):
    cuts = range(len(raw)) if every_cut else sorted(rng.sample(range(len(raw)), min(len(raw), 150)))
    for n in cuts:
        attempt(fname, load, raw[:n], f"{label} cut at {n}")
    for i in range(flips):
        b = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            j = rng.randrange(len(b))
            b[j] = rng.choice([0, 255, rng.randrange(256), b[j] ^ (1 << rng.randrange(8))])
        attempt(fname, load, bytes(b), f"{label} mutation {i}")


def finish():
    for b in bad[:25]:
        print("BAD", b)
    assert not bad, f"{len(bad)} bad outcomes"
    print("ok", counts)
'''

NPY = PRELUDE + r'''
def npy(header, data=b"", version=(1, 0)):
    h = header.encode("latin1")
    ll = 2 if version == (1, 0) else 4
    h += b" " * (-(len(h) + 9 + ll) % 64) + b"\n"
    return b"\x93NUMPY" + bytes(version) + struct.pack("<H" if ll == 2 else "<I", len(h)) + h + data

H = "{'descr': %r, 'fortran_order': %r, 'shape': %s, }"
cases = {
    "huge 1-D": npy(H % ("<f8", False, "(1000000000000,)"), b"\0" * 64),
    "huge product": npy(H % ("<f8", False, "(4294967296, 4294967296)"), b"\0" * 64),
    "overflowing product": npy(H % ("<f8", False, "(%d, %d, %d)" % (2**62, 2**62, 2**62))),
    "zero times huge": npy(H % ("<f8", False, "(0, 100000000000000000000)")),
    "zero times 2**62": npy(H % ("<c16", False, "(0, %d)" % 2**62)),
    "dimension past int64": npy(H % ("|u1", False, "(%d,)" % 2**64)),
    "negative": npy(H % ("<f4", False, "(-1,)"), b"\0" * 4),
    "negative pair": npy(H % ("<f4", False, "(-2, -2)"), b"\0" * 16),
    "bool dimension": npy(H % ("<f4", False, "(True,)"), b"\0" * 4),
    "float dimension": npy(H % ("<f4", False, "(1.0,)"), b"\0" * 4),
    "65 dims": npy(H % ("<f4", False, "(1,) * 65".replace("(1,) * 65", str((1,) * 65))), b"\0" * 4),
    "shape list": npy(H % ("<f4", False, "[1]"), b"\0" * 4),
    "shape str": npy(H % ("<f4", False, "'1'"), b"\0" * 4),
    "object descr (a pickle)": npy(H % ("|O", False, "(1,)"), b"\x80\x04N."),
    "unicode descr": npy(H % ("<U4", False, "(1,)"), b"\0" * 16),
    "datetime descr": npy(H % ("<M8[s]", False, "(1,)"), b"\0" * 8),
    "void0": npy(H % ("|V0", False, "(1,)")),
    "odd float": npy(H % ("<f3", False, "(1,)"), b"\0" * 3),
    "huge itemsize": npy(H % ("<i99999999999999999999", False, "(1,)"), b"\0" * 8),
    "structured": npy("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, 'shape': (1,), }", b"\0" * 8),
    "extended with wrong width": npy("{'descr': [('bfloat16', '<u8')], 'fortran_order': False, 'shape': (1,), }",
                                     b"\0" * 8),
    "nested descr": npy("{'descr': [('bfloat16', [('x', '<u2')])], 'fortran_order': False, 'shape': (1,), }",
                        b"\0" * 2),
    "descr int": npy(H % (5, False, "(1,)"), b"\0" * 8),
    "fortran_order str": npy(H % ("<f4", "yes", "(1,)"), b"\0" * 4),
    "extra key": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", b"\0" * 4),
    "not a dict": npy("[1, 2, 3]", b""),
    "expression": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2**70,)}", b""),
    "call": npy("__import__('os').system('echo pwned')", b""),
    "deep nesting": npy("(" * 5000 + ")" * 5000),
    "long int literal": npy(H % ("<f4", False, "(" + "9" * 5000 + ",)")),
    "bool bytes": npy(H % ("|b1", False, "(4,)"), b"\0\1\2\3"),
    "int4 bytes": npy("{'descr': [('int4', '|u1')], 'fortran_order': False, 'shape': (2,), }", b"\x01\xf0"),
    "big-endian short": npy(H % (">f8", False, "(4,)"), b"\0" * 31),
    "data too long": npy(H % ("<f4", False, "(1,)"), b"\0" * 5),
    "version 9.9": npy(H % ("<f4", False, "(1,)"), b"\0" * 4, (9, 9)),
    "v2 header length 4 GiB": b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFFF) + b"{" * 100,
    "v1 header length past the file": b"\x93NUMPY\x01\x00" + struct.pack("<H", 0xFFFF) + b"{}",
    "header bomb 2 MiB": b"\x93NUMPY\x02\x00" + struct.pack("<I", 2 << 20) + b" " * (2 << 20),
    "bad magic": b"\x93NUMPZ\x01\x00" + b"\0" * 100,
    "empty": b"",
    "utf8 header in v1": (npy(H % ("<f4", False, "(1,)"), b"\0" * 4)[:10] + b"\xff\xfe"
                          + npy(H % ("<f4", False, "(1,)"), b"\0" * 4)[12:]),
}
loaders = {"path": rio.load_npy, "mmap": lambda p: rio.load_npy(p, mmap=True),
           "mmap c": lambda p: rio.load_npy(p, mmap="c"),
           "stream": lambda p: rio.load_npy(open(p, "rb")),
           "limited": lambda p: rio.load_npy(p, max_bytes=64)}
for label, raw in cases.items():
    for how, load in loaders.items():
        attempt("load_npy", load, raw, f"{label} ({how})")

valid = []
for a in (np.arange(6, dtype="<f8").reshape(2, 3), np.array([True, False, True]),
          np.asfortranarray(np.arange(12, dtype=">i4").reshape(3, 4)), np.arange(5, dtype="<c16")):
    b = io.BytesIO(); np.save(b, a); valid.append(b.getvalue())
for t in (rt.create(rt.bfloat16, [3], [1, 2, 3]), rt.create(rt.int4, [4], [-8, 7, 0, 1])):
    b = io.BytesIO(); rio.save_npy(b, t); valid.append(b.getvalue())
for k, raw in enumerate(valid):
    fuzz("load_npy", rio.load_npy, raw, f"valid {k}", flips=150)
    fuzz("load_npy", lambda p: rio.load_npy(p, mmap=True), raw, f"valid {k} mmap", flips=60, every_cut=False)
    fuzz("load_npy", lambda p: rio.load_npy(open(p, "rb")), raw, f"valid {k} stream", flips=60, every_cut=False)
finish()
'''

NPZ = PRELUDE + r'''
def npy_bytes(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()

def zipped(members, method=zipfile.ZIP_STORED):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", method) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return b.getvalue()

def central(raw):
    return raw.index(b"PK\x01\x02")

def patch(raw, at, fmt, value):
    raw = bytearray(raw)
    raw[at:at + struct.calcsize(fmt)] = struct.pack(fmt, value)
    return bytes(raw)

good = npy_bytes(np.arange(10, dtype="<i4"))
one = zipped([("a.npy", good)])
cd = central(one)
cases = {
    "not a zip": b"hello world" * 10,
    "empty": b"",
    "member not npy": zipped([("a.txt", b"hello")]),
    "member with bad magic": zipped([("a.npy", b"\0" * 100)]),
    "duplicate names": zipped([("a.npy", good), ("a.npy", good)]),
    "NUL in a name": zipped([("a\0x.npy", good), ("a\0y.npy", good)]),
    "path-like names": zipped([("../../evil.npy", good), ("/abs.npy", good)]),
    "central size says 3 GiB": patch(one, cd + 24, "<I", 3 << 30),
    "central size says 0": patch(one, cd + 24, "<I", 0),
    "central size says 10": patch(one, cd + 24, "<I", 10),
    "compressed size says 4 GiB - 1": patch(one, cd + 20, "<I", 0xFFFFFFFF),
    "local header offset past the end": patch(one, cd + 42, "<I", 1 << 30),
    "unknown method 99": patch(patch(one, cd + 10, "<H", 99), 8, "<H", 99),
    "encrypted flag": patch(patch(one, cd + 8, "<H", 1), 6, "<H", 1),
    "bad crc": patch(one, cd + 16, "<I", 0x12345678),
    "npy inside lies about its shape": zipped([("a.npy", npy_bytes(np.arange(3))[:-8] + b"")]),
    "npy with huge shape": zipped([("a.npy", good.replace(b"(10,)", b"(10**9,)".replace(b"**9", b"000000000")[:5]
                                                          + b",)")[:len(good)])]),
}
# a small real bomb: 8 MiB of zeros deflated to a few KiB
bomb = npy_bytes(np.zeros(8 << 20, np.uint8))
bz = zipped([("a.npy", bomb)], zipfile.ZIP_DEFLATED)
cases["bomb within the default, limited to 1 MiB"] = bz
bzcd = central(bz)
cases["bomb whose directory says 100 bytes"] = patch(bz, bzcd + 24, "<I", 100)
cases["bomb whose directory says 3 GiB"] = patch(bz, bzcd + 24, "<I", 3 << 30)
# an overlap bomb: 3000 directory entries pointing at one 1 MiB member (3 GiB declared)
big = zipped([("a.npy", npy_bytes(np.zeros(1 << 20, np.uint8)))])
c0 = central(big)
eocd = big.rindex(b"PK\x05\x06")
entry = big[c0:eocd]
n = 3000
cdir = entry * n
cases["overlap bomb"] = (big[:c0] + cdir + b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, n, n, len(cdir), c0, 0))
cases["too many entries claimed"] = patch(one, one.rindex(b"PK\x05\x06") + 10, "<H", 65535)
for label, raw in cases.items():
    attempt("load_npz", rio.load_npz, raw, label)
    attempt("load_npz", lambda p: rio.load_npz(p, max_bytes=1 << 20), raw, label + " (max_bytes=1 MiB)")

# the bombs above were refused before decompressing: nothing here may have raised MemoryError
valid = [zipped([("a.npy", good), ("b.npy", npy_bytes(np.array([True, False])))]),
         zipped([("a.npy", good), ("b.npy", npy_bytes(np.arange(4.0)))], zipfile.ZIP_DEFLATED)]
for k, raw in enumerate(valid):
    fuzz("load_npz", rio.load_npz, raw, f"valid {k}", flips=250)
finish()
'''

SAFETENSORS = PRELUDE + r'''
def st(header, data=b"", pad=True, length=None):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h) if length is None else length) + h + data

E = lambda dt, shape, offs: {"dtype": dt, "shape": shape, "data_offsets": offs}
cases = {
    "header length 2**64-1": struct.pack("<Q", 2**64 - 1) + b"{}",
    "header length past the file": st({}, length=1 << 40),
    "header length zero": struct.pack("<Q", 0),
    "short": b"\1\0\0",
    "not json": st(b"{not json"),
    "not an object": st([1, 2]),
    "deep nesting": st(b"[" * 100000 + b"]" * 100000),
    "huge int": st(b'{"a":{"dtype":"U8","shape":[' + b"9" * 5000 + b'],"data_offsets":[0,0]}}'),
    "NaN shape": st(b'{"a":{"dtype":"U8","shape":[NaN],"data_offsets":[0,0]}}'),
    "duplicate keys": st(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                         b'"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\0"),
    "unknown dtype": st({"a": E("F128", [1], [0, 16])}, b"\0" * 16),
    "dtype not a string": st({"a": E(["F32"], [1], [0, 4])}, b"\0" * 4),
    "zero times huge": st({"a": E("F32", [0, 10**20], [0, 0])}),
    "zero times 2**62": st({"a": E("F64", [0, 2**62], [0, 0])}),
    "huge shape": st({"a": E("F32", [2**40, 2**40], [0, 4])}, b"\0" * 4),
    "negative shape": st({"a": E("F32", [-1], [0, 4])}, b"\0" * 4),
    "65 dims": st({"a": E("F32", [1] * 65, [0, 4])}, b"\0" * 4),
    "bool dim": st({"a": E("F32", [True], [0, 4])}, b"\0" * 4),
    "negative offsets": st({"a": E("U8", [4], [-4, 0])}, b"\0" * 4),
    "offsets past the data": st({"a": E("U8", [4], [0, 4])}, b"\0" * 2),
    "huge offsets": st({"a": E("U8", [1], [2**64, 2**64 + 1])}, b"\0"),
    "overlap": st({"a": E("U8", [4], [0, 4]), "b": E("U8", [4], [0, 4])}, b"\0" * 4),
    "hole": st({"a": E("U8", [2], [0, 2]), "b": E("U8", [2], [3, 5])}, b"\0" * 5),
    "trailing bytes": st({"a": E("U8", [2], [0, 2])}, b"\0" * 3),
    "bool bytes": st({"a": E("BOOL", [2], [0, 2])}, b"\1\7"),
    "metadata not strings": st({"__metadata__": {"a": 1}}),
    "metadata a list": st({"__metadata__": [1]}),
    "extra entry key": st({"a": dict(E("U8", [1], [0, 1]), x=1)}, b"\0"),
    "entry a string": st({"a": "x"}),
    "invalid utf8": st(b'{"\xff":1}'),
    "NUL in a name": st({"a\0b": E("U8", [1], [0, 1])}, b"\0"),
    "header bomb within the limit": st({"__metadata__": {"k": "v" * 4000}}),
}
loaders = {"read": rio.load_safetensors, "mmap": lambda p: rio.load_safetensors(p, mmap=True),
           "limits": lambda p: rio.load_safetensors(p, max_bytes=8, max_header_bytes=1000)}
for label, raw in cases.items():
    for how, load in loaders.items():
        attempt("load_safetensors", load, raw, f"{label} ({how})")
# a header bomb past the default limit, in a sparse file: refused before it is read
with open(P, "wb") as f:
    f.write(struct.pack("<Q", 90_000_000))
    f.truncate(8 + 90_000_000)
try:
    rio.load_safetensors(P)
    bad.append(("90 MB header", "loaded"))
except ValueError as e:
    assert "max_header_bytes" in str(e), e
os.unlink(P)

valid = []
for tensors in ({"w": rt.create(rt.bfloat16, [2, 2], [1, 2, 3, 4]), "b": rt.create(rt.bool, [3], [1, 0, 1])},
                {"x": rt.arange(rt.float64, 0, 5, 1), "y": rt.zeros(rt.float8_e4m3, [0, 3])}):
    rio.save_safetensors(P, tensors, metadata={"k": "v"})
    valid.append(open(P, "rb").read())
for k, raw in enumerate(valid):
    fuzz("load_safetensors", rio.load_safetensors, raw, f"valid {k}", flips=250)
    fuzz("load_safetensors", lambda p: rio.load_safetensors(p, mmap=True), raw, f"valid {k} mmap", flips=80,
         every_cut=False)
finish()
'''

TXT = PRELUDE + r'''
T = "# runetensor: dtype=%s shape=%s\n"
cases = {
    "zero times huge": T % ("float32", "(0, 100000000000000000000)"),
    "huge times zero": T % ("float64", "(%d, 0)" % 2**61),
    "huge declared": T % ("float32", "(1000000000000,)") + "1\n",
    "huge declared 2-D": T % ("float32", "(1000000, 1000000)") + "1\n",
    "negative": T % ("float32", "(-1,)"),
    "rank 3": T % ("float32", "(1, 1, 1)") + "1\n",
    "bool dim": T % ("float32", "(True,)") + "1\n",
    "expression": T % ("float32", "(2**70,)"),
    "call": T % ("float32", "__import__('os').getcwd()"),
    "deep nesting": T % ("float32", "(" * 5000 + ")" * 5000),
    "object dtype": T % ("object", "(1,)") + "1\n",
    "unknown dtype": T % ("float128", "(1,)") + "1\n",
    "too many values": T % ("int8", "(2,)") + "1\n2\n3\n",
    "too few values": T % ("int8", "(3,)") + "1\n2\n",
    "ragged": "1 2 3\n4 5\n",
    "out of range": T % ("int8", "(2,)") + "1\n128\n",
    "long int": "9" * 5000 + "\n",
    "huge float": "1e999999\n",
    "not a number": "1 x 3\n",
    "NUL bytes": "1 2\0 3\n",
    "bad complex": T % ("complex64", "(1,)") + "1+2j+3\n",
    "bad bool": T % ("bool", "(1,)") + "2\n",
    "int4 out of range": T % ("int4", "(1,)") + "8\n",
    "bfloat16 text": T % ("bfloat16", "(2,)") + "1e40\nnan\n",
}
for label, text in cases.items():
    attempt("load_txt", rio.load_txt, text.encode("utf8"), label)
    attempt("load_txt", lambda p: rio.load_txt(p, max_bytes=16), text.encode("utf8"), label + " (max_bytes=16)")
attempt("load_txt", rio.load_txt, b"\xff\xfe1 2\n", "not utf8")
attempt("load_txt", rio.load_txt, b"1 " * 50000 + b"\n", "one wide row")
valid = []
for t in (rt.create(rt.float32, [3, 2], [0.5, -1, 2, 3e-5, 1e30, -0.0]), rt.create(rt.int16, [4], [1, -2, 3, 300]),
          rt.create(rt.complex64, [2], [1 + 2j, -3j]), rt.create(rt.bool, [2, 2], [1, 0, 0, 1])):
    rio.save_txt(P, t)
    valid.append(open(P, "rb").read())
for k, raw in enumerate(valid):
    fuzz("load_txt", rio.load_txt, raw, f"valid {k}", flips=200)
finish()
'''

IMAGES = PRELUDE + r'''
from PIL import Image

def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

def png(w, h, depth=8, color=2, idat=b""):
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, 0))
            + png_chunk(b"IDAT", zlib.compress(idat)) + png_chunk(b"IEND", b""))

cases = {
    "100000 x 100000": png(100000, 100000),
    "20000 x 20000": png(20000, 20000),
    "9000 x 9000 RGBA, truncated data": png(9000, 9000, 8, 6, b"\0" * 1000),
    "2**31-1 wide": png(2**31 - 1, 1),
    "zero size": png(0, 0),
    "bad depth": png(4, 4, 7, 2),
    "bad color type": png(4, 4, 8, 5),
    "short IDAT": png(64, 64, 8, 2, b"\0" * 10),
    "PNG magic only": b"\x89PNG\r\n\x1a\n",
    "JPEG SOI only": b"\xff\xd8\xff",
    "GIF header only": b"GIF89a" + struct.pack("<HH", 65535, 65535) + b"\0" * 3,
    "BMP huge": (b"BM" + struct.pack("<IHHI", 0, 0, 0, 54)
                 + struct.pack("<IiiHHIIiiII", 40, 60000, 60000, 1, 32, 0, 0, 0, 0, 0, 0)),
    "BMP negative": (b"BM" + struct.pack("<IHHI", 0, 0, 0, 54)
                     + struct.pack("<IiiHHIIiiII", 40, -5, -2**31, 1, 24, 0, 0, 0, 0, 0, 0)),
    "TIFF header only": b"II*\0\x08\0\0\0" + b"\xff\xff" + b"\0" * 20,
    "not an image": b"hello" * 100,
    "empty": b"",
}
for label, raw in cases.items():
    attempt("load_image", rio.load_image, raw, label)
    attempt("load_image", lambda p: rio.load_image(p, max_bytes=1 << 20), raw, label + " (max_bytes=1 MiB)")

valid = []
rs = np.random.default_rng(0)
for fmt, t in (("PNG", rt.from_numpy(rs.integers(0, 255, (8, 6, 3), dtype=np.uint8))),
               ("PNG", rt.from_numpy(rs.integers(0, 65535, (5, 4), dtype=np.uint16))),
               ("JPEG", rt.from_numpy(rs.integers(0, 255, (8, 8), dtype=np.uint8))),
               ("GIF", rt.from_numpy(rs.integers(0, 255, (6, 6), dtype=np.uint8))),
               ("BMP", rt.from_numpy(rs.integers(0, 255, (4, 5, 3), dtype=np.uint8))),
               ("TIFF", rt.from_numpy(rs.integers(0, 255, (4, 4, 4), dtype=np.uint8)))):
    rio.save_image(P, t, format=fmt)
    valid.append((fmt, open(P, "rb").read()))
for fmt, raw in valid:
    fuzz("load_image", rio.load_image, raw, fmt, flips=120, every_cut=len(raw) < 400)
finish()
'''


def test_hostile_npy_files():
    out = assert_survives(NPY, timeout=120)
    assert "ok" in out


def test_hostile_npz_archives():
    out = assert_survives(NPZ, timeout=120)
    assert "ok" in out


def test_hostile_safetensors_files():
    out = assert_survives(SAFETENSORS, timeout=120)
    assert "ok" in out


def test_hostile_text_files():
    out = assert_survives(TXT, timeout=120)
    assert "ok" in out


def test_hostile_images():
    pytest.importorskip("PIL")
    out = assert_survives(IMAGES, timeout=120)
    assert "ok" in out
