"""Hostile inputs against the memory-safety boundaries: ``as_strided`` (odd byte offsets, negative,
zero and huge strides, huge offsets, overflowing extents, views of views), every function of the
compiled kernels called directly with extreme arguments, and bigarray / harpie views with hostile
sizes.  Each call must either work or raise a clean Python exception, never crash.

The fuzzing batches run in child processes (``tests/hostile.py``) so that a crash is a failed test
with the child's output.  Writable buffers are views into bytearrays with guard bytes on both
sides: a write outside its buffer changes a guard, and the child fails even when the heap
survives.  The in-process tests below check the specific exceptions of the fixed bounds checks.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import runetensor as rt
from runetensor._backend import _fast

from hostile import assert_survives

MAX = sys.maxsize
needs_kernels = pytest.mark.skipif(_fast._kernels is None, reason="compiled kernels not built")


def _odd(nbytes: int, start: int, dtype, count: int):
    """``count`` items of ``dtype`` at byte ``start`` of a fresh uint8 root of ``nbytes`` bytes."""
    root = np.zeros(nbytes, np.uint8)
    return root, root[start:start + count * np.dtype(dtype).itemsize].view(dtype)


# ---------------------------------------------------------------------------
# in process: the fixed bounds checks raise the specific exceptions
# ---------------------------------------------------------------------------
def test_as_strided_counts_whole_items_at_an_odd_byte_offset():
    # 12 bytes, int32 items from byte 1: only 2 whole items (bytes 1..8); a third would end at
    # byte 12, one past the buffer (the old element count, 12 // 4 = 3, allowed it)
    root, v = _odd(12, 1, np.int32, 2)
    t = rt.from_numpy(v)
    assert rt.offset(t) == 0 and t.backend.buffer_size(t._data) == 2
    w = rt.as_strided(t, [2], [1], 0)
    w[1] = -1
    assert root[5:9].tolist() == [255] * 4 and root[9:].tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match=r"as_strided: .*offset 2.*outside the buffer of 2 elements"):
        rt.as_strided(t, [1], [1], 2)
    with pytest.raises(ValueError, match=r"as_strided: .*outside the buffer of 2 elements"):
        rt.as_strided(t, [2], [1], 1)
    with pytest.raises(ValueError, match=r"as_strided: .*outside the buffer"):
        rt.as_strided(t, [3], [-1], 1)  # reaches element -1 (before the buffer)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.float64, np.complex128])
@pytest.mark.parametrize("start", [1, 2, 3, 5, 7])
def test_as_strided_odd_offsets_every_item_size(dtype, start):
    isz = np.dtype(dtype).itemsize
    nbytes = 64
    _, v = _odd(nbytes, start, dtype, (nbytes - start) // isz)
    t = rt.from_numpy(v)
    n = (nbytes - start % isz) // isz  # whole items on the grid through the first element
    assert t.backend.buffer_size(t._data) == n and rt.offset(t) == start // isz
    assert rt.as_strided(t, [n], [1], 0).shape == (n,)
    with pytest.raises(ValueError, match=r"^as_strided: "):
        rt.as_strided(t, [n + 1], [1], 0)
    with pytest.raises(ValueError, match=r"^as_strided: "):
        rt.as_strided(t, [1], [1], n)


def test_backend_as_strided_checks_bytes_itself():
    """The backend primitive refuses a view outside the root buffer's bytes even when the caller
    (an internal one, which skips the frontend's check) asks for it."""
    root, v = _odd(12, 1, np.int32, 2)
    be = rt.from_numpy(v).backend
    assert be.as_strided(v, (2,), (1,), 0).shape == (2,)
    with pytest.raises(ValueError, match=r"as_strided: .*touches bytes 9\.\.12 .*expected bytes within 0\.\.11"):
        be.as_strided(v, (1,), (1,), 2)
    with pytest.raises(ValueError, match=r"as_strided: .*touches bytes -3\.\.4"):
        be.as_strided(v, (2,), (1,), -1)
    assert be.as_strided(v, (0, 5), (1, 1), 100).shape == (0, 5)  # an empty view touches nothing


def test_odd_byte_strides_are_copied_not_shared():
    """Byte strides that are not multiples of the item size (a structured array's field) have no
    description in elements: the tensor is a copy (its element strides then describe it), and
    copy=False says so."""
    s = np.zeros((4, 4), dtype=[("a", "u1"), ("b", "<i4")])
    s["b"] = np.arange(16).reshape(4, 4)
    f = s["b"][::-1, ::-1]  # byte strides (-20, -5)
    t = rt.from_numpy(f)
    assert t.strides == (16, 4) and rt.to_numpy(t).tolist() == f.tolist()
    from runetensor import harpie as hp
    assert rt.to_numpy(hp.diag(t)).tolist() == np.diagonal(f).tolist()
    with pytest.raises(ValueError, match=r"asarray: .*byte strides \(-20, -5\) are not multiples of its item size 4"):
        rt.asarray(f, copy=False)


@needs_kernels
def test_kernel_errors_name_the_function_and_values():
    k = _fast._kernels
    f4 = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"_kernels\.sum_f32: src holds 4 elements; expected at least 5"):
        k.sum_f32(f4, 0, 5)
    with pytest.raises(ValueError, match=r"_kernels\.sum_f32: range \[3, 2\) is invalid"):
        k.sum_f32(f4, 3, 2)
    with pytest.raises(ValueError, match=r"_kernels\.bf16_binary: a has 4-byte items; expected 2-byte items"):
        k.bf16_binary(k.OP_ADD, f4, np.zeros(4, np.uint16), np.zeros(4, np.uint16), 0, 4, 0)
    with pytest.raises(ValueError, match=r"_kernels\.f8_unary: format 2 is unknown"):
        k.f8_unary(2, k.UOP_SQUARE, np.zeros(4, np.uint8), np.zeros(4, np.uint8), 0, 4)
    with pytest.raises(ValueError, match=r"_kernels\.bf16_unary: op 99 is unknown"):
        k.bf16_unary(99, np.zeros(4, np.uint16), np.zeros(4, np.uint16), 0, 4)
    ro = np.zeros(4, np.uint16)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"_kernels\.bf16_unary: out must be a writable C-contiguous buffer"):
        k.bf16_unary(k.UOP_SQUARE, np.zeros(4, np.uint16), ro, 0, 4)
    with pytest.raises(ValueError, match=r"_kernels\.float32_to_bf16: out must be a writable"):
        k.float32_to_bf16(f4, b"12345678", 0, 4)
    with pytest.raises(TypeError, match=r"_kernels\.sum_f32: src must be a C-contiguous buffer, got NoneType"):
        k.sum_f32(None, 0, 0)
    with pytest.raises(ValueError, match=r"_kernels\.philox_stream: k0 -1 is out of range; expected 0 <= k0 < 2\*\*32"):
        k.philox_stream(-1, 0, np.zeros(4, np.uint32), 0, 4)
    with pytest.raises(ValueError, match=r"_kernels\.philox_stream: k1 18446744073709551616 is out of range"):
        k.philox_stream(0, 2 ** 64, np.zeros(4, np.uint32), 0, 4)  # was wrapped to key 0
    with pytest.raises(ValueError,
                       match=r"_kernels\.philox_stream: out holds 4 elements; expected at least " + str(MAX)):
        k.philox_stream(0, 0, np.zeros(4, np.uint32), 0, MAX)
    with pytest.raises(ValueError, match=r"_kernels\.philox_uniform: range end .* is too large"):
        k.philox_uniform(0, 0, np.zeros(4, np.float32), MAX - 4, MAX, False)
    with pytest.raises(ValueError, match=r"_kernels\.sum_rows_f32: shape \(-1, 3\) is invalid"):
        k.sum_rows_f32(f4, -1, 3, f4, 0, 0)
    with pytest.raises(ValueError, match=r"_kernels\.sum_cols_f32: column range end 5 is past the last column \(2\)"):
        k.sum_cols_f32(f4, 2, 2, f4, 0, 5)
    with pytest.raises(ValueError, match=r"_kernels\.where_select: x and y must have items of one size"):
        k.where_select(np.ones(4, np.bool_), f4, np.zeros(4), f4, 0, 4)
    with pytest.raises(ValueError, match=r"_kernels\.strided_copy: expected a 2-d source"):
        k.strided_copy(f4, f4, 0, 1)
    with pytest.raises(ValueError, match=r"_kernels\.round_half_away: x has 2-byte items"):
        k.round_half_away(np.zeros(4, np.float16), np.zeros(4, np.float16), 0, 4)
    with pytest.raises(OverflowError):
        k.sum_f32(f4, 0, MAX + 1)


@needs_kernels
def test_philox_stream_at_the_end_of_the_counter_range():
    """Word ranges ending at PY_SSIZE_T_MAX: the loops' bounds used to overflow (w + 32 <= w1) and
    write past the output; now exactly the requested words, equal to the NumPy reference."""
    k = _fast._kernels
    nb = sys.modules["runetensor._backend.numpy_backend"]
    for simd in (True, False):
        prev = k.set_simd(simd)
        try:
            for n in (1, 5, 64, 100):
                w0 = MAX - n
                buf = np.full(n + 16, 0xA5A5A5A5, np.uint32)
                k.philox_stream(3, 4, buf[8:8 + n], w0, MAX)
                assert (buf[:8] == 0xA5A5A5A5).all() and (buf[8 + n:] == 0xA5A5A5A5).all()
                b0 = w0 // 4
                nblk = (MAX - 1) // 4 - b0 + 1
                ctr = np.array([[(b0 + j) & 0xFFFFFFFF, (b0 + j) >> 32, 0, 0] for j in range(nblk)], np.uint32)
                ref = nb.philox4x32(ctr, (3, 4)).reshape(-1)[w0 - 4 * b0:][:n]
                assert (buf[8:8 + n] == ref).all()
            out = np.full(40, -7.0)
            k.philox_uniform(1, 2, out[4:36], MAX // 2 - 32, MAX // 2, True)
            assert (out[:4] == -7).all() and (out[36:] == -7).all() and ((out[4:36] >= 0) & (out[4:36] < 1)).all()
        finally:
            k.set_simd(prev)


@needs_kernels
def test_kernels_with_empty_and_zero_column_operands():
    k = _fast._kernels
    e = np.zeros(0, np.uint16)
    k.f16_binary(k.OP_ADD, e, e, e, 0, 0, 0)  # used to read a[0] of the empty buffers
    # a 0-column matrix claiming a huge number of rows: nothing to do, at once
    k.sum_cols_f32(np.zeros(1, np.float32), MAX, 0, np.zeros(1, np.float32), 0, 0)
    z = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint64), shape=(2 ** 59, 0), strides=(0, 0))
    k.strided_copy(z, np.zeros(0, np.uint64), 0, 2 ** 59)


# ---------------------------------------------------------------------------
# child processes: fuzzing batches
# ---------------------------------------------------------------------------
_PRELUDE = r"""
import random, sys, traceback
try:  # a hostile size that does allocate fails at once with MemoryError, on any machine
    import resource
    _lim = 3 << 30
    resource.setrlimit(resource.RLIMIT_AS, (_lim, resource.getrlimit(resource.RLIMIT_AS)[1]))
except (ImportError, ValueError, OSError, AttributeError):
    pass
import numpy as np
import runetensor as rt
MAX = sys.maxsize
CLEAN = (ValueError, IndexError, TypeError, OverflowError, MemoryError)
G = 16          # guard bytes on each side of a guarded buffer
GUARD = 0x5A
stats = {"ok": 0, "raised": 0}

def guarded(nbytes):
    '''(bytearray, uint8 root array over its middle nbytes): the root is a NumPy array whose base
    is a memoryview, so it is the root buffer runetensor sees; the guards lie outside it.'''
    ba = bytearray([GUARD]) * (nbytes + 2 * G)
    root = np.frombuffer(memoryview(ba)[G:G + nbytes], np.uint8)
    root[...] = 0
    return ba, root

def guards_ok(ba):
    return ba[:G] == bytes([GUARD]) * G and ba[-G:] == bytes([GUARD]) * G

def call(what, fn, *args):
    try:
        r = fn(*args)
    except CLEAN:
        stats["raised"] += 1
        return None
    except BaseException as e:
        print(f"UNCLEAN {type(e).__name__} from {what}{args!r:.300}: {e}")
        traceback.print_exc()
        sys.exit(3)
    stats["ok"] += 1
    return r
"""


def test_hostile_as_strided_in_a_child():
    """Random and adversarial shapes, strides and offsets for rt.as_strided over guarded roots at
    every byte phase, of several item sizes, and over views of views.  Every accepted view lies
    inside the root's bytes (checked from NumPy's own view of the result) and writing through it
    leaves the guards intact; every in-bounds request of moderate size is accepted."""
    out = assert_survives(_PRELUDE + r"""
import ml_dtypes
rng = random.Random(12)
DTYPES = [np.int8, np.int16, np.int32, np.float64, np.complex128, ml_dtypes.bfloat16, np.bool_]
HUGE = [2**31, 2**32, 2**61, 2**62, 2**63 - 1, 2**63, 2**64, 2**100]
checked = accepted_exact = 0

def nbytes_of(v):
    a = rt.to_numpy(v)
    lo = hi = a.__array_interface__["data"][0]
    if a.size == 0:
        return None
    for n, s in zip(a.shape, a.strides):
        if s < 0: lo += (n - 1) * s
        else: hi += (n - 1) * s
    return lo, hi + a.itemsize

def pick_dim(nbuf):
    r = rng.random()
    if r < 0.75: return rng.randint(0, 4)
    if r < 0.85: return rng.choice([-1, -2**63])
    return rng.choice(HUGE)

def pick_stride(nbuf):
    r = rng.random()
    if r < 0.8: return rng.randint(-4, 4)
    return rng.choice(HUGE + [-h for h in HUGE])

def pick_offset(nbuf):
    r = rng.random()
    if r < 0.6: return rng.randint(0, max(nbuf - 1, 0))
    if r < 0.8: return rng.choice([-1, nbuf - 1, nbuf, nbuf + 1, 0])
    return rng.choice(HUGE + [-h for h in HUGE])

def expected_ok(grid0, isz, lo, hi, shape, strides, off):
    '''in bounds in bytes: the view's items on the grid through byte grid0'''
    if any(n < 0 for n in shape):
        return False
    if 0 in shape:
        return None  # the frontend's rule for empty views is about the offset only
    a = b = grid0 + off * isz
    b += isz
    for n, s in zip(shape, strides):
        e = (n - 1) * s * isz
        if e < 0: a += e
        else: b += e
    return lo <= a and b <= hi

def one(t, ba, root, grid0, isz, depth):
    global checked, accepted_exact
    nbuf = t.backend.buffer_size(t._data)
    rank = rng.randint(0, 3)
    shape = [pick_dim(nbuf) for _ in range(rank)]
    strides = [pick_stride(nbuf) for _ in range(rank)]
    off = pick_offset(nbuf)
    lo = root.__array_interface__["data"][0]
    hi = lo + root.size
    v = call("as_strided", rt.as_strided, t, shape, strides, off)
    exp = expected_ok(grid0, isz, lo, hi, shape, strides, off)
    small = all(0 <= n <= 8 for n in shape) and all(abs(s) <= 8 for s in strides)
    if v is None:
        if exp and small:
            print("REFUSED in-bounds view", t.dtype, shape, strides, off, nbuf); sys.exit(4)
        return
    ext = nbytes_of(v)
    if ext is not None:
        checked += 1
        if not (lo <= ext[0] and ext[1] <= hi) or exp is False:
            print("OUT OF BOUNDS view accepted", t.dtype, shape, strides, off, ext, (lo, hi)); sys.exit(5)
        accepted_exact += 1
        if v.size <= 4096:  # (zero strides give huge in-bounds views: not written element by element)
            rt.to_numpy(v)[...] = 1  # writes through the view
            call("setitem", v.__setitem__, Ellipsis, 0)
        if not guards_ok(ba):
            print("GUARD BYTES CHANGED", t.dtype, shape, strides, off); sys.exit(6)
    if depth < 2 and rng.random() < 0.4:
        one(v, ba, root, grid0, isz, depth + 1)  # views of views: the same root and grid
        for key in ((slice(None, None, -1),), (slice(1, None),)):
            if v.ndim >= 1 and v.shape[0] > 1:
                w = call("getitem", v.__getitem__, key)
                if w is not None:
                    one(w, ba, root, grid0, isz, depth + 1)

for rep in range(700):
    dt = rng.choice(DTYPES)
    isz = np.dtype(dt).itemsize
    nbytes = rng.choice([0, 1, isz - 1, isz, 2 * isz + 1, 13, 40, 64]) if rep % 7 else rng.randint(0, 3)
    nbytes = max(nbytes, 0)
    ba, root = guarded(nbytes)
    phase = rng.randint(0, min(isz - 1, nbytes)) if nbytes else 0
    cnt = (nbytes - phase) // isz
    arr = root[phase:phase + cnt * isz].view(dt)
    t = rt.from_numpy(arr)
    lo = root.__array_interface__["data"][0]
    ph = (arr.__array_interface__["data"][0] - lo) % isz  # (NumPy may move an empty view's pointer)
    grid0 = lo + ph  # the item grid through the first element
    assert t.backend.buffer_size(t._data) == max(0, (nbytes - ph) // isz), (nbytes, phase, isz)
    for _ in range(6):
        one(t, ba, root, grid0, isz, 0)
print("ok", stats, checked, accepted_exact)
""", timeout=60)
    assert out.startswith("ok"), out


def test_hostile_kernel_calls_in_a_child():
    """Every function of the compiled kernels with each argument replaced by hostile values
    (negative, 0, huge, PY_SSIZE_T_MAX, past it, wrong types, empty, short, misaligned,
    read-only, non-contiguous and wrong-item-size buffers), single and combined, with the SIMD
    loops on and off.  Outputs are guarded: a write outside a buffer fails the child."""
    if _fast._kernels is None:
        pytest.skip("compiled kernels not built")
    out = assert_survives(_PRELUDE + r"""
from runetensor._backend import _fast
k = _fast._kernels
rng = random.Random(5)
INTS = [-2**63, -2**31, -1, 0, 1, 2, 3, 7, 8, 31, 32, 33, 63, 64, 65, 2**31, 2**32 - 1, 2**32,
        MAX - 64, MAX - 33, MAX - 1, MAX, MAX + 1, 2**64, -2**64]
JUNK = [None, 1.5, "x", b"", object(), [1, 2], True]
GUARDED = []   # (bytearray, ...) of every guarded buffer
PAIRS = [(MAX - 64, MAX), (MAX - 33, MAX - 1), (MAX - 5, MAX), (MAX - 1, MAX), (MAX, MAX), (MAX - 8, MAX - 2),
         (2**62, 2**62 + 64), (MAX // 2 - 32, MAX // 2), (MAX // 2 - 64, MAX // 2 + 1), (2**32 * 4 - 8, 2**32 * 4 + 56),
         (0, MAX), (MAX, 0), (-1, 63), (64, 0), (MAX, 1), (1, MAX), (2**62, 2**10), (2**32, 2**32), (MAX, -1)]

def buf(isz, n, misalign=0, readonly=False, kind="np"):
    dt = {1: np.uint8, 2: np.uint16, 4: np.float32, 8: np.float64}[isz]
    ba, root = guarded(n * isz + misalign)
    a = root[misalign:].view(dt)
    a[...] = np.arange(n) % 3
    GUARDED.append(ba)
    if readonly:
        a = a.copy(); a.flags.writeable = False
    if kind == "mv":
        return memoryview(a)
    return a

BUFS = {}
for isz in (1, 2, 4, 8):
    L = []
    for n in (0, 1, 2, 3, 8, 33, 64):
        L.append(buf(isz, n))
    L += [buf(isz, 64, misalign=1), buf(isz, 64, readonly=True), buf(isz, 64, kind="mv"),
          buf(isz, 128)[::2], bytes(64 * isz)]
    BUFS[isz] = L
ALLBUFS = [b for L in BUFS.values() for b in L]
M2 = [np.arange(12, dtype=np.float32).reshape(3, 4).T, np.zeros((5, 7), np.uint8)[::-1, ::2],
      np.zeros((4, 4), np.complex128).T, np.lib.stride_tricks.as_strided(np.zeros(1, np.uint64), (2**59, 0), (0, 0)),
      np.lib.stride_tricks.as_strided(np.zeros(1, np.uint16), (3, 2**40), (0, 0))]

def pool(kind):
    if kind == "int":
        return INTS + JUNK[:3]
    if kind == "small":  # op codes, formats, rules
        return [-1, 0, 1, 2, 5, 6, 99, 2**31 - 1, 2**31, -2**31 - 1, None, 1.5]
    if kind == "m2":
        return M2 + ALLBUFS[:6] + JUNK
    return ALLBUFS + JUNK + [0.5, 1e300]

def B(isz, n=64):
    return buf(isz, n)

# name -> (argument kinds, a valid call's arguments)
SPEC = {
  "bf16_binary": (["small", "buf", "buf", "buf", "int", "int", "small"], lambda: [0, B(2), B(2), B(2), 0, 64, 0]),
  "bf16_unary": (["small", "buf", "buf", "int", "int"], lambda: [0, B(2), B(2), 0, 64]),
  "bf16_to_float32": (["buf", "buf", "int", "int"], lambda: [B(2), B(4), 0, 64]),
  "float32_to_bf16": (["buf", "buf", "int", "int"], lambda: [B(4), B(2), 0, 64]),
  "f16_binary": (["small", "buf", "buf", "buf", "int", "int", "small"], lambda: [0, B(2), B(2), B(2), 0, 64, 0]),
  "f16_to_float32": (["buf", "buf", "int", "int"], lambda: [B(2), B(4), 0, 64]),
  "float32_to_f16": (["buf", "buf", "int", "int"], lambda: [B(4), B(2), 0, 64]),
  "f8_binary": (["small", "small", "buf", "buf", "buf", "int", "int", "small"],
                lambda: [0, 0, B(1), B(1), B(1), 0, 64, 0]),
  "f8_unary": (["small", "small", "buf", "buf", "int", "int"], lambda: [1, 1, B(1), B(1), 0, 64]),
  "f8_to_float32": (["small", "buf", "buf", "int", "int"], lambda: [0, B(1), B(4), 0, 64]),
  "float32_to_f8": (["small", "buf", "buf", "int", "int"], lambda: [1, B(4), B(1), 0, 64]),
  "philox_stream": (["int", "int", "buf", "int", "int"], lambda: [1, 2, B(4), 0, 64]),
  "philox_uniform": (["int", "int", "buf", "int", "int", "small"], lambda: [1, 2, B(8), 0, 64, 1]),
  "where_select": (["buf", "buf", "buf", "buf", "int", "int"], lambda: [B(1), B(4), B(4), B(4), 0, 64]),
  "strided_copy": (["m2", "buf", "int", "int"], lambda: [M2[0], B(4, 12), 0, 4]),
  "round_half_away": (["buf", "buf", "int", "int"], lambda: [B(8), B(8), 0, 64]),
  "sum_f32": (["buf", "int", "int"], lambda: [B(4), 0, 64]),
  "sum_cols_f32": (["buf", "int", "int", "buf", "int", "int"], lambda: [B(4), 8, 8, B(4, 8), 0, 8]),
  "sum_rows_f32": (["buf", "int", "int", "buf", "int", "int"], lambda: [B(4), 8, 8, B(4, 8), 0, 8]),
  "sum_f32_claim": (["buf", "int", "buf", "buf"], lambda: [B(4), 16, B(8, 1), B(8, 4)]),
  "sum_rows_f32_claim": (["buf", "int", "int", "buf", "int", "buf"], lambda: [B(4), 8, 8, B(4, 8), 2, B(8, 1)]),
  "lut16": (["buf", "buf", "buf", "int", "int"], lambda: [B(2), B(2, 65536), B(2), 0, 64]),
  # the pool's polling wait: ns from the small pool (a valid one is at most 99 ns there; above 1e9 is refused)
  "spin_wait": (["buf", "int", "small"], lambda: [B(8, 1), 0, 1000]),
  "spinners": ([], lambda: []),
  "spin_reset": ([], lambda: []),
  # the 16-bit / float8 binary kernels' claimed form: (..., chunk, counter, share)
  "bf16_binary#claim": (["small", "buf", "buf", "buf", "int", "int", "small", "int", "buf", "small"],
                        lambda: [0, B(2), B(2), B(2), 0, 64, 0, 16, B(8, 1), 0]),
  "f16_binary#claim": (["small", "buf", "buf", "buf", "int", "int", "small", "int", "buf", "small"],
                       lambda: [0, B(2), B(2), B(2), 0, 64, 0, 16, B(8, 1), 0]),
  "f8_binary#claim": (["small", "small", "buf", "buf", "buf", "int", "int", "small", "int", "buf", "small"],
                      lambda: [0, 0, B(1), B(1), B(1), 0, 64, 0, 16, B(8, 1), 0]),
}
names = sorted(n for n in dir(k) if callable(getattr(k, n)))
missing = set(names) - {n.split("#")[0] for n in SPEC} - {"set_simd", "set_avx512"}
assert not missing, f"kernels without a hostile spec: {missing}"

def run(name, args):
    n0 = len(GUARDED)
    call(name, getattr(k, name.split("#")[0]), *args)
    for ba in GUARDED:
        if not guards_ok(ba):
            print("GUARD BYTES CHANGED by", name, repr(args)[:400]); sys.exit(6)

for simd in (True, False):
    k.set_simd(simd)
    for name, (kinds, valid) in SPEC.items():
        run(name, valid())                       # the valid call works
        for i, kind in enumerate(kinds):         # one argument hostile at a time
            for v in pool(kind):
                a = valid(); a[i] = v
                run(name, a)
        for _ in range(150):                     # several at once
            a = valid()
            for i, kind in enumerate(kinds):
                if rng.random() < 0.5:
                    a[i] = rng.choice(pool(kind))
            run(name, a)
        ints = [i for i, kd in enumerate(kinds) if kd == "int"]
        for i, j in zip(ints, ints[1:]):         # extreme pairs: ranges / counters / shapes at the ends
            for x, y in PAIRS:
                a = valid(); a[i], a[j] = x, y
                run(name, a)
        for bad in ([], [0] * (len(kinds) + 1)):   # wrong argument counts
            run(name, bad)
        del GUARDED[64:]  # the pool's own buffers stay checked; fresh ones are dropped
for v in (None, 2, "x"):
    call("set_simd", k.set_simd, v)
    call("set_avx512", k.set_avx512, v)
k.set_simd(True)
print("ok", stats)
""", timeout=60)
    assert out.startswith("ok"), out


def test_hostile_bigarray_harpie_and_internal_views_in_a_child():
    """bigarray and harpie reshape / sub / slice / window functions with hostile sizes, and the
    internal as_strided callers (diagonals, windows, contractions) on tensors at odd byte offsets
    and with odd byte strides: clean exceptions or NumPy's answers."""
    out = assert_survives(_PRELUDE + r"""
from runetensor import bigarray as ba
from runetensor import harpie as hp
rng = random.Random(9)
H = [-2**63, -2**31, -1, 0, 1, 2, 3, 2**31, 2**62, 2**63, 2**64, -2**64]

# bigarray: create / sub / slice / reshape / blit with hostile sizes (sizes are tiny or far beyond
# any allocation: nothing in between, so that nothing large is ever allocated)
for dims in ([2**62], [2**31, 2**31, 2**31], [-1], [2**63], [0, 2**62], [2**62, 0, 2**62], [3, -3], [1] * 17, []):
    call("Genarray.create", ba.Genarray.create, ba.int32, ba.c_layout, dims)
    call("Genarray.create", ba.Genarray.create, ba.float64, ba.fortran_layout, dims)
g = ba.Genarray.init(ba.int32, ba.c_layout, [4, 3], lambda i: 10 * i[0] + i[1])
gf = ba.Genarray.init(ba.int32, ba.fortran_layout, [4, 3], lambda i: 10 * i[0] + i[1])
a1 = ba.Array1.of_array(ba.int16_signed, ba.c_layout, list(range(7)))
for _ in range(400):
    o, n = rng.choice(H), rng.choice(H)
    call("sub_left", g.sub_left, o, n)
    call("sub_right", gf.sub_right, o, n)
    call("Array1.sub", a1.sub, o, n)
    call("slice_left", g.slice_left, [o])
    call("slice_right", gf.slice_right, [o, n])
    call("Array1.slice", a1.slice, o)
    dims = [rng.choice(H + [4, 3, 12, 6, 2]) for _ in range(rng.randint(0, 3))]
    call("reshape", ba.reshape, g, dims)
    call("reshape", ba.reshape, gf, dims)
    call("reshape_2", ba.reshape_2, a1, o, n)
    call("get", g.get, [o, n])
    call("set", g.set, [o, n], 1)
assert g.dims() == (4, 3) and gf.dims() == (4, 3) and a1.dim() == 7

# harpie: hostile sizes through the shape functions
t = hp.range([3, 4])
for _ in range(300):
    d, o, n = rng.choice(H + [0, 1]), rng.choice(H), rng.choice(H)
    for fn, args in ((hp.reshape, ([o, n],)), (hp.slice, (d, o, n)), (hp.take, (d, o)), (hp.drop, (d, o)),
                     (hp.select, (d, o)), (hp.rotate, (d, o)), (hp.windows, ([o, n],)), (hp.takes, ([d], [o])),
                     (hp.slices, ([d], [o], [n])), (hp.cut, ([o, n],)), (hp.inflate, (d, o)),
                     (hp.rerank, (o,)), (hp.elongate, (d,)), (hp.rotates, ([d], [o])), (hp.drops, ([d], [o])),
                     (hp.indexes, ([d], [o])), (hp.pad, (0, [o, n])), (hp.lpad, (0, [o, n])),
                     (hp.repeat, ([o, n],)), (hp.cycle, ([o, n],)), (hp.cut_suffix, ([o, n],)),
                     (hp.concats, ([d], o)), (hp.reorder, ([d, o],)), (hp.takes, ([d, o], [n, n]))):
        call(fn.__name__, fn, t, *args)
assert rt.to_numpy(t).tolist() == np.arange(12).reshape(3, 4).tolist()

# the internal as_strided callers on tensors at odd byte offsets (the grid is shifted) and with
# odd byte strides (copied on import): NumPy's answers
for start in (0, 1, 3, 5):
    ba_, root = guarded(4 * 16 + 8)
    a = root[start:start + 64].view(np.int32).reshape(4, 4)
    a[...] = np.arange(16).reshape(4, 4)
    for view in (a, a[::-1], a[:, ::-1], a.T, a[1:, 1:][::-1, ::-1]):
        tt = rt.from_numpy(view)
        assert rt.to_numpy(hp.diag(tt)).tolist() == np.diagonal(view).tolist()
        assert rt.to_numpy(rt.diagonal(tt)).tolist() == np.diagonal(view).tolist()
        w = rt.to_numpy(hp.windows(tt, [2, 2]))
        assert w.shape == (view.shape[0] - 1, view.shape[1] - 1, 2, 2) and (w[1, 1] == view[1:3, 1:3]).all()
        assert float(rt.to_numpy(hp.contract(tt, [0, 1], sum))) == float(np.trace(view))
        assert guards_ok(ba_)
s = np.zeros((4, 4), dtype=[("a", "u1"), ("b", "<i4")])
s["b"] = np.arange(16).reshape(4, 4)
for view in (s["b"], s["b"][::-1, ::-1], s["b"].T):
    tt = rt.from_numpy(view)
    assert rt.to_numpy(hp.diag(tt)).tolist() == np.diagonal(view).tolist()
    assert rt.to_numpy(rt.diagonal(tt)).tolist() == np.diagonal(view).tolist()
print("ok", stats)
""", timeout=60)
    assert out.startswith("ok"), out
