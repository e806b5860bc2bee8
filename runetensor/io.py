"""File I/O: NumPy ``.npy``/``.npz``, safetensors, text and images (``runetensor.io``).

Every writer builds the file under a temporary name in the target's directory
and renames it into place (``os.replace``), so a crash mid-write never leaves a
half-written file under the target name; an existing file keeps its mode, a new
one gets ``0o666`` minus the current umask, a symlink's target is replaced (the
link stays), and the directory is ``fsync``ed after the rename.  Every reader
checks what it reads: a truncated, corrupt or wrong-type file raises
``ValueError`` naming the function, the file and what was wrong; it never
returns garbage.  Every reader takes ``max_bytes``, the most bytes of tensor
data it allocates for an untrusted file (default: the file's size plus
``DEFAULT_MAX_EXTRA_BYTES``, 1 GiB), checked before allocating.

Formats and dtypes
------------------
* ``.npy`` / ``.npz``: every dtype except ``object``.  NumPy has no bfloat16,
  float8 or int4 types, so those are stored as a one-field structured dtype
  whose field name is the runetensor dtype and whose type is the raw unsigned
  integer of the same width: ``[('bfloat16', '<u2')]``, ``[('float8_e4m3',
  '|u1')]``, ``[('int4', '|u1')]``...  runetensor reads them back exactly;
  NumPy reads them as a structured array (``a['bfloat16'].view(ml_dtypes.bfloat16)``).
  Raw void data (``'<V2'``, as NumPy writes ml_dtypes arrays) loads with an
  explicit ``dtype=``.  Big-endian files load (byte-swapped copies).
* safetensors: written per the format's specification (8-byte little-endian
  header length, JSON header with ``dtype``/``shape``/``data_offsets`` and
  ``__metadata__``, header padded to 8 bytes); dtypes BOOL U8 I8 U16 I16 F16
  BF16 U32 I32 F32 U64 I64 F64 F8_E4M3 F8_E5M2 C64.  int4/uint4 and
  complex128 have no safetensors dtype and are refused with ``TypeError``.
* text: tensors of rank <= 2, one row per line; a ``# runetensor: dtype=...
  shape=...`` comment line makes the round trip exact in dtype and shape.
  Values are written in Python's shortest round-trip form, so every value
  comes back bit for bit except the payload and sign of NaNs.
* images: PNG and JPEG through Pillow (the optional extra ``image``:
  ``pip install 'runetensor[image]'``).  PNG round trips exactly; JPEG is lossy.

>>> import os, tempfile, runetensor as rt
>>> import runetensor.io as rio
>>> d = tempfile.mkdtemp()
>>> t = rt.create(rt.bfloat16, [2, 2], [1, 2, 3, 4])
>>> rio.save_npy(os.path.join(d, "t.npy"), t)
>>> print(rio.load_npy(os.path.join(d, "t.npy")))
[[1, 2],
 [3, 4]]
"""
from __future__ import annotations

import ast
import builtins
import errno
import io as _io
import json
import math
import mmap as _mmap
import numbers
import os
import stat as _stat
import struct
import sys
import zipfile
import zlib
from typing import Any, Callable, Mapping

from . import _dtypes as D
from ._autodiff._pytree import _REGISTRY as _PYTREE_NODES
from ._backend import get_backend
from ._dtypes import DType
from ._creation import check_chunks, int_range
from ._tensor import Tensor, as_tensor, wrap
from ._validate import MAX_NBYTES, MAX_RANK, check_nbytes
from .progress import Progress

__all__ = ["save_npy", "load_npy", "save_npz", "load_npz", "save_safetensors", "load_safetensors",
           "save_txt", "load_txt", "load_image", "save_image", "DEFAULT_MAX_EXTRA_BYTES",
           "DEFAULT_MAX_HEADER_BYTES"]

_LITTLE = sys.byteorder == "little"
#: the largest .npy header we accept (NumPy's own default limit is 10,000 bytes)
_MAX_NPY_HEADER = 1 << 20
#: safetensors' own limit on the JSON header (the format's specification)
_MAX_ST_HEADER = 100_000_000
#: with ``max_bytes=None``, a loader allocates at most the file's size plus this many bytes of
#: tensor data: formats that store their data as is (.npy, safetensors, stored .npz members)
#: load at any size, while a small file cannot inflate to gigabytes (deflate bombs, text, images)
DEFAULT_MAX_EXTRA_BYTES = 1 << 30
#: the default ``max_header_bytes`` of :func:`load_safetensors`: a JSON header costs ~30 times
#: its size in Python objects to parse, so the format's own 100 MB limit is too generous
DEFAULT_MAX_HEADER_BYTES = 16 << 20


# ---------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------
def _tensor(t: Any, fname: str) -> Tensor:
    t = as_tensor(t, fname)
    if t._dtype is D.object_:
        raise TypeError(f"{fname}: object tensors cannot be saved (only numeric and bool dtypes)")
    return t


def _path(path: Any, fname: str) -> str:
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(f"{fname}: expected a file path (str or os.PathLike), got {type(path).__name__}") from None


def _open_file(p: Any, fname: str, mode: str = "rb", encoding: str | None = None) -> Any:
    """Open the path ``p`` for a loader, refusing anything but a regular file without blocking.

    The file is opened with ``O_NONBLOCK`` (a FIFO without a writer would block ``open`` forever)
    and the open descriptor is checked with ``fstat`` (no window between a check and the open),
    then made blocking again for the reads.

    Raises:
        IsADirectoryError: naming ``fname``, for a directory.
        ValueError: naming ``fname``, for a FIFO, a device or a socket.
        OSError: a missing or unreadable file.
    """
    nonblock = getattr(os, "O_NONBLOCK", 0)  # (POSIX; Windows has no FIFOs to block on)
    flags = (os.O_RDWR if "+" in mode else os.O_RDONLY) | nonblock | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(p, flags)
    except IsADirectoryError:  # opened for writing ("r+b")
        raise IsADirectoryError(errno.EISDIR, f"{fname}: a directory, not a file", p) from None
    try:
        st = os.fstat(fd)
        if not _stat.S_ISREG(st.st_mode):
            if _stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, f"{fname}: a directory, not a file", p)
            kind = ("a FIFO (named pipe)" if _stat.S_ISFIFO(st.st_mode) else "a character device"
                    if _stat.S_ISCHR(st.st_mode) else "a block device" if _stat.S_ISBLK(st.st_mode)
                    else "a socket" if _stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise ValueError(f"{fname}: {p!r} is {kind}; expected a regular file (loaders read regular files "
                             "only: a pipe or a device could block or never end)")
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, mode, encoding=encoding) if encoding else os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def _brief(v: Any, n: int = 80) -> str:
    """``repr(v)`` cut to ``n`` characters, for an error message about a value read from a file:
    integers too long for Python to print in decimal (its 4300-digit limit) are shown by their size."""
    def r(x: Any) -> str:
        if type(x) is int and x.bit_length() > 3000:
            return f"<an integer of {x.bit_length()} bits>"
        if type(x) is tuple:
            return "(" + ", ".join(map(r, x[:40])) + ("," if len(x) == 1 else ", ..." if len(x) > 40 else "") + ")"
        if type(x) is list:
            return "[" + ", ".join(map(r, x[:40])) + (", ..." if len(x) > 40 else "") + "]"
        if type(x) is dict:
            return "{" + ", ".join(f"{r(k)}: {r(w)}" for k, w in list(x.items())[:40]) + "}"
        try:
            return repr(x)
        except ValueError:  # an int subclass or other value beyond the conversion limit
            return f"<a {type(x).__name__}>"
    try:
        return r(v)[:n]
    except RecursionError:
        return f"<a deeply nested {type(v).__name__}>"


def _atomic_write(path: Any, fname: str, write: Callable[[Any], None]) -> None:
    """Run ``write(file)`` on a temporary file beside the target, then rename it into place.

    * A symlink is followed: the file it points to is replaced (in that file's directory) and
      the link itself stays (a dangling link gets its target created).
    * An existing file keeps its permission bits (and, where the OS allows, its owner and
      group); a new file gets ``0o666`` minus the umask of the moment, applied by the kernel
      when the temporary file is created (no process-wide ``os.umask`` round trip).
    * The data is ``fsync``ed before the rename and the directory after it.
    * On any error the temporary file is removed and the target is left as it was.
    """
    p = _path(path, fname)
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    target = os.path.realpath(p)
    directory, base = os.path.split(target)
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    if st is not None and not _stat.S_ISREG(st.st_mode):
        if _stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{fname}: cannot write to a directory", p)
        raise ValueError(f"{fname}: {p!r} is not a regular file (a device, FIFO or socket); atomic saves "
                         "replace regular files only")
    fd, tmp = _create_temp(directory, base)
    try:
        with os.fdopen(fd, "wb") as f:
            if st is not None:
                _keep_owner_and_mode(f.fileno(), tmp, st)
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _create_temp(directory: str, base: str) -> tuple[int, str]:
    """Create ``.<base>.<random>.tmp`` in ``directory`` with mode 0o666 (the kernel applies the
    umask and any default ACL), exclusively; returns (fd, path)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = os.path.join(directory, f".{base[:100]}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary file name", directory)  # pragma: no cover


def _keep_owner_and_mode(fd: int, tmp: str, st: os.stat_result) -> None:
    if hasattr(os, "fchown") and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)  # root, or the owner keeping a group of theirs
        except OSError:
            try:
                os.fchown(fd, -1, st.st_gid)
            except OSError:
                pass  # the new file belongs to the writer, as with any rename-based save
    mode = st.st_mode & 0o777  # never copy setuid/setgid/sticky bits onto a fresh file
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # pragma: no cover  (Windows)
        os.chmod(tmp, mode)


def _fsync_dir(directory: str) -> None:
    """Make the rename durable.  Filesystems (and systems) that cannot fsync a directory are skipped."""
    try:
        dfd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # pragma: no cover  (Windows cannot open directories)
        return
    try:
        os.fsync(dfd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF, errno.EROFS):
            raise
    finally:
        os.close(dfd)


def _limit(max_bytes: Any, fname: str, file_size: int | None) -> int | None:
    """The most bytes of tensor data a loader may allocate (None: no limit)."""
    if max_bytes is None:
        return None if file_size is None else file_size + DEFAULT_MAX_EXTRA_BYTES
    if isinstance(max_bytes, builtins.bool) or not isinstance(max_bytes, numbers.Integral):
        raise TypeError(f"{fname}: max_bytes must be an int or None, got {type(max_bytes).__name__} {max_bytes!r:.40}")
    if max_bytes < 0:
        raise ValueError(f"{fname}: max_bytes must be >= 0, got {max_bytes}")
    return int(max_bytes)


def _check_limit(n: int, limit: int | None, max_bytes: Any, fname: str, where: str, what: str) -> None:
    if limit is not None and n > limit:
        how = (f"max_bytes={limit}" if max_bytes is not None else
               f"the default limit of {limit} bytes (the file's size plus DEFAULT_MAX_EXTRA_BYTES)")
        raise ValueError(f"{fname}: {where}: {what}: {n} bytes, more than {how}; pass a larger max_bytes "
                         "to load a file you trust")


def _check_shape(shape: Any, d: DType | None, fname: str, where: str, what: str = "bad shape") -> None:
    """A shape must be a sequence of at most ``MAX_RANK`` (64) non-negative ints whose byte size (zero
    dimensions aside) fits in a signed machine word, as every array library requires."""
    if (not isinstance(shape, (tuple, list)) or len(shape) > MAX_RANK
            or not all(type(s) is int and s >= 0 for s in shape)):
        raise ValueError(f"{fname}: {where}: {what} {_brief(shape)} (expected at most {MAX_RANK} non-negative ints)")
    try:
        check_nbytes(tuple(shape), d.itemsize if d is not None else 1, fname, d)
    except ValueError:
        raise ValueError(f"{fname}: {where}: {what} {_brief(tuple(shape))}: more than {MAX_NBYTES} bytes"
                         + (f" of {d}" if d is not None else "") + ", larger than any array can be") from None


def _le_bytes(t: Tensor) -> bytes:
    """The tensor's elements in C order, little-endian."""
    be = t._backend
    if _LITTLE or t._dtype.itemsize == 1:
        return be.to_bytes(t._data)
    return _swap(be, be.to_bytes(t._data), t._dtype, t.size)  # pragma: no cover  (big-endian hosts)


_CHUNK = 1 << 24
#: reads and writes of at least this many bytes report through rt.progress, once they have taken
#: PROGRESS_DELAY seconds (silence it with rt.progress.set_enabled(False) or RUNETENSOR_PROGRESS=0)
PROGRESS_BYTES = 1 << 28
PROGRESS_DELAY = 2.0


def _progress(nbytes: int, what: str) -> Any:
    """A :class:`runetensor.progress.Progress` over ``nbytes`` in 16 MiB chunks, or None for small data."""
    if nbytes < PROGRESS_BYTES:
        return None
    return Progress(total=-(-nbytes // _CHUNK), desc=f"{what} {nbytes / 2**30:.2f} GiB", unit="chunk",
                    delay=PROGRESS_DELAY)


def _readinto(f: Any, buf: Any) -> int:
    """``f.readinto(buf)`` in 16 MiB chunks (with progress for large data); the bytes read."""
    if len(buf) < PROGRESS_BYTES:
        return f.readinto(buf) if len(buf) else 0
    mv, got, bar = builtins.memoryview(buf), 0, _progress(len(buf), "reading")
    while got < len(buf):
        k = f.readinto(mv[got:got + _CHUNK])
        if not k:
            break
        got += k
        bar.update(1)
    bar.close()
    return got


def _write_le(f: Any, t: Tensor) -> None:
    """Write the tensor's elements (C order, little-endian) to ``f`` in chunks of ~16 MiB,
    so a large tensor never needs one big temporary ``bytes`` copy."""
    be, h, d = t._backend, t._data, t._dtype
    n = t.size
    if n * d.itemsize <= _CHUNK or h.ndim == 0:
        f.write(_le_bytes(t))
        return
    flat = be.reshape(h, (n,))
    if flat is not None:  # C-contiguous (or flattenable as a view): slices of the flat view
        step = max(1, _CHUNK // d.itemsize)
        bar = _progress(n * d.itemsize, "writing")
        for i in range(0, n, step):
            part = be.view_index(flat, (slice(i, min(n, i + step), 1),))
            f.write(_le_bytes(wrap(part, d, be)))
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        return
    # a strided view: blocks of whole rows along axis 0 (each block is C order), recursing into big rows
    rows = h.shape[0]
    k = max(1, _CHUNK // max(1, (n // rows) * d.itemsize))
    rest = tuple(slice(0, s, 1) for s in h.shape[1:])
    for i in range(0, rows, k):
        block = be.view_index(h, (slice(i, min(rows, i + k), 1),) + rest)
        if k == 1:
            block = be.view_index(h, (i,) + rest)
        _write_le(f, wrap(block, d, be))


def _swap(be: Any, raw: Any, d: DType, n: int) -> bytes:
    """Reverse the byte order of each element (each part, for complex) of ``raw``."""
    part = d.itemsize // 2 if d.is_complex else d.itemsize
    u8 = be.from_buffer(raw, D.uint8, (n * d.itemsize // part, part), 0)
    return be.to_bytes(be.flip(u8, (1,)))


def _check_canonical(be: Any, buf: Any, d: DType, n: int, offset: int, fname: str, where: str) -> None:
    """bool bytes must be 0/1 and int4/uint4 bytes must hold the value in the low nibble."""
    if n == 0 or d not in (D.bool, D.int4, D.uint4):
        return
    u8 = be.from_buffer(buf, D.uint8, (n,), offset)
    top = be.to_list(be.reduce("max", u8, (0,), False))
    limit = 1 if d is D.bool else 15
    if top > limit:
        raise ValueError(f"{fname}: {where}: a byte of {top} is not a valid {d} value "
                         f"(expected at most {limit}); the file is corrupt")


def _view(be: Any, buf: Any, d: DType, shape: tuple[int, ...], offset: int) -> Any:
    if math.prod(shape) == 0:
        return be.empty(shape, d)
    return be.from_buffer(buf, d, shape, offset)


# ---------------------------------------------------------------------------
# .npy
# ---------------------------------------------------------------------------
_NPY_MAGIC = b"\x93NUMPY"
#: runetensor dtype -> .npy descr (little-endian)
_NPY_DESCR: dict[DType, Any] = {
    D.bool: "|b1", D.int8: "|i1", D.uint8: "|u1", D.int16: "<i2", D.uint16: "<u2", D.int32: "<i4",
    D.uint32: "<u4", D.int64: "<i8", D.uint64: "<u8", D.float16: "<f2", D.float32: "<f4",
    D.float64: "<f8", D.complex64: "<c8", D.complex128: "<c16",
    D.bfloat16: [("bfloat16", "<u2")], D.float8_e4m3: [("float8_e4m3", "|u1")],
    D.float8_e5m2: [("float8_e5m2", "|u1")], D.int4: [("int4", "|u1")], D.uint4: [("uint4", "|u1")],
}
_NPY_SIMPLE = {("b", 1): D.bool, ("i", 1): D.int8, ("u", 1): D.uint8, ("i", 2): D.int16, ("u", 2): D.uint16,
               ("i", 4): D.int32, ("u", 4): D.uint32, ("i", 8): D.int64, ("u", 8): D.uint64,
               ("f", 2): D.float16, ("f", 4): D.float32, ("f", 8): D.float64, ("c", 8): D.complex64,
               ("c", 16): D.complex128}
_NPY_EXTENDED = {"bfloat16": D.bfloat16, "float8_e4m3": D.float8_e4m3, "float8_e5m2": D.float8_e5m2,
                 "int4": D.int4, "uint4": D.uint4}


def _npy_header(t: Tensor) -> bytes:
    descr = _NPY_DESCR[t._dtype]
    shape = t.shape
    text = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (descr, shape)
    raw = text.encode("latin1")
    # magic (6) + version (2) + length (2 or 4) + header, padded with spaces and '\n' to 64 bytes
    for version, lenlen in ((1, 2), (2, 4)):
        total = 6 + 2 + lenlen + len(raw) + 1
        pad = (-total) % 64
        hlen = len(raw) + pad + 1
        if version == 2 or hlen < 65536:
            break
    fmt = "<H" if version == 1 else "<I"
    return _NPY_MAGIC + bytes([version, 0]) + struct.pack(fmt, hlen) + raw + b" " * pad + b"\n"


def _write_data(f: Any, t: Tensor) -> None:
    """``_write_le``, except that a Dask tensor goes to a seekable file block by block (each block
    computed in a bounded batch and written at its offsets: the tensor is never held whole)."""
    if t._backend.name == "dask" and t.ndim and t.size and _seekable(f):
        # deferred: optional dependency (the Dask backend imports Dask), loaded on first use
        from ._backend.dask_backend import write_c_order
        write_c_order(f, t._data, _LITTLE)
        return
    _write_le(f, t)


def _seekable(f: Any) -> bool:
    try:
        return bool(f.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def _write_npy(f: Any, t: Tensor) -> None:
    f.write(_npy_header(t))
    _write_data(f, t)


def save_npy(path: Any, t: Any) -> None:
    """Write ``t`` to a NumPy ``.npy`` file (format 1.0, or 2.0 for huge headers), atomically.

    Args:
        path: the file path, or a writable binary file object.
        t: the tensor (any dtype but ``object``; non-contiguous views are written in C order).
    Raises:
        TypeError: for object tensors.

    >>> import os, tempfile, numpy as np, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "x.npy")
    >>> rio.save_npy(p, rt.create(rt.int16, [2, 3], [1, 2, 3, 4, 5, 6]))
    >>> np.load(p).tolist()
    [[1, 2, 3], [4, 5, 6]]
    """
    t = _tensor(t, "save_npy")
    if hasattr(path, "write") and not isinstance(path, (str, bytes, os.PathLike)):
        _write_npy(path, t)
        return
    _atomic_write(path, "save_npy", lambda f: _write_npy(f, t))


def _parse_descr(descr: Any, fname: str, where: str, dtype: DType | None) -> tuple[DType, bool]:
    """(runetensor dtype, needs byte swap) for a .npy descr."""
    if isinstance(descr, list):
        if (len(descr) == 1 and isinstance(descr[0], tuple) and len(descr[0]) == 2
                and descr[0][0] in _NPY_EXTENDED and isinstance(descr[0][1], str)):
            d = _NPY_EXTENDED[descr[0][0]]
            want = _NPY_DESCR[d][0][1]
            if descr[0][1] != want and descr[0][1].replace("<", "|").replace(">", "|") != want.replace("<", "|"):
                raise ValueError(f"{fname}: {where}: field {descr[0][0]!r} has type {_brief(descr[0][1])}; "
                                 f"expected {want!r}")
            swap = descr[0][1].startswith(">") and d.itemsize > 1
            if dtype is not None and dtype is not d:
                raise ValueError(f"{fname}: {where} holds {d}, not the requested {dtype}")
            return d, swap
        raise ValueError(f"{fname}: {where}: structured dtype {_brief(descr)} is not supported "
                         "(only runetensor's one-field bfloat16/float8/int4 encodings)")
    if not isinstance(descr, str) or len(descr) < 2:
        raise ValueError(f"{fname}: {where}: bad dtype descr {_brief(descr)}")
    order = descr[0] if descr[0] in "<>|=" else "="
    body = descr[1:] if descr[0] in "<>|=" else descr
    kind, size = body[:1], body[1:]
    if not size.isdigit():
        raise ValueError(f"{fname}: {where}: dtype {descr!r} is not supported")
    n = int(size)
    if kind == "V":
        if dtype is None:
            raise ValueError(f"{fname}: {where} holds raw void data ({descr!r}), as NumPy writes bfloat16/float8/"
                             "int4 arrays; pass dtype= (e.g. rt.bfloat16) to read it")
        if dtype.itemsize != n or dtype is D.object_:
            raise ValueError(f"{fname}: {where}: void items of {n} bytes cannot hold {dtype}")
        return dtype, False
    d = _NPY_SIMPLE.get((kind, n))
    if d is None:
        raise ValueError(f"{fname}: {where}: dtype {descr!r} is not supported (expected bool, integer, float or "
                         "complex data)")
    if dtype is not None and dtype is not d:
        raise ValueError(f"{fname}: {where} holds {d}, not the requested {dtype}")
    swap = n > 1 and ((order == ">" and _LITTLE) or (order == "<" and not _LITTLE))
    return d, swap


def _read_exact(f: Any, n: int, fname: str, where: str, what: str) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise ValueError(f"{fname}: {where} is truncated: expected {n} bytes of {what}, got {len(b)}")
    return b


def _parse_npy_header(f: Any, fname: str, where: str, dtype: DType | None, avail: int | None
                      ) -> tuple[DType, tuple[int, ...], bool, bool, int]:
    """Read the header from ``f``: (dtype, shape, fortran_order, swap, data_offset)."""
    magic = f.read(8)
    if len(magic) < 8 or magic[:6] != _NPY_MAGIC:
        raise ValueError(f"{fname}: {where} is not a .npy file (expected the magic string \\x93NUMPY, "
                         f"got {bytes(magic[:6])!r})")
    major, minor = magic[6], magic[7]
    if (major, minor) == (1, 0):
        hl = struct.unpack("<H", _read_exact(f, 2, fname, where, "header length"))[0]
        start = 10
    elif (major, minor) in ((2, 0), (3, 0)):
        hl = struct.unpack("<I", _read_exact(f, 4, fname, where, "header length"))[0]
        start = 12
    else:
        raise ValueError(f"{fname}: {where}: unsupported .npy format version {major}.{minor}")
    if avail is not None and start + hl > avail:
        raise ValueError(f"{fname}: {where}: header length {hl} is larger than the file ({avail} bytes)")
    if hl > _MAX_NPY_HEADER:
        raise ValueError(f"{fname}: {where}: header length {hl} is too large (at most {_MAX_NPY_HEADER})")
    raw = _read_exact(f, hl, fname, where, "header")
    try:
        text = raw.decode("utf8" if major == 3 else "latin1")
        hdr = ast.literal_eval(text)
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError, TypeError):
        raise ValueError(f"{fname}: {where}: the header is not a valid Python literal: {raw[:80]!r}") from None
    if not isinstance(hdr, dict) or set(hdr) != {"descr", "fortran_order", "shape"}:
        raise ValueError(f"{fname}: {where}: the header must be a dict with keys descr, fortran_order, shape; "
                         f"got {_brief(hdr, 120)}")
    shape = hdr["shape"]
    if not isinstance(shape, tuple):
        raise ValueError(f"{fname}: {where}: bad shape {_brief(shape)} (expected a tuple of non-negative ints)")
    fo = hdr["fortran_order"]
    if not isinstance(fo, builtins.bool):
        raise ValueError(f"{fname}: {where}: fortran_order must be True or False, got {_brief(fo, 40)}")
    d, swap = _parse_descr(hdr["descr"], fname, where, dtype)
    _check_shape(shape, d, fname, where)
    return d, shape, fo, swap, start + hl


def _dtype_arg(dtype: Any, fname: str) -> DType | None:
    if dtype is None:
        return None
    d = D.dtype_of(dtype)
    if d is D.object_:
        raise TypeError(f"{fname}: dtype object cannot be loaded")
    return d


def _finish_npy(be: Any, buf: Any, d: DType, shape: tuple[int, ...], fo: bool, swap: bool, offset: int,
                fname: str, where: str) -> Tensor:
    n = math.prod(shape)
    if swap:
        raw = bytes(builtins.memoryview(buf)[offset:offset + n * d.itemsize])
        buf, offset = bytearray(_swap(be, raw, d, n)), 0
    _check_canonical(be, buf, d, n * d.itemsize if d in (D.bool, D.int4, D.uint4) else 0, offset, fname, where)
    if fo:
        h = _view(be, buf, d, tuple(reversed(shape)), offset)
        h = be.permute(h, tuple(range(len(shape) - 1, -1, -1)))
    else:
        h = _view(be, buf, d, shape, offset)
    return wrap(h, d, be)


def _read_npy_stream(f: Any, fname: str, where: str, dtype: DType | None, avail: int | None,
                     trusted: bool = True, limit: int | None = None, max_bytes: Any = None,
                     be: Any = None) -> Tensor:
    """Read a .npy from ``f``; ``avail`` is the stream's size if known (``trusted``: it is the
    real size, so the data buffer can be allocated up front; else it is read in chunks).
    At most ``limit`` bytes of data are allocated."""
    d, shape, fo, swap, off = _parse_npy_header(f, fname, where, dtype, avail)
    nbytes = math.prod(shape) * d.itemsize
    if avail is not None and off + nbytes != avail:
        raise ValueError(f"{fname}: {where}: shape {shape} of {d} needs {nbytes} bytes of data, but the file has "
                         f"{avail - off}")
    _check_limit(nbytes, limit, max_bytes, fname, where, f"shape {shape} of {d}")
    if trusted and avail is not None:
        buf = bytearray(nbytes)
        got = _readinto(f, buf)
    else:  # the claimed size may be a lie (a corrupt zip directory): grow with the data actually read
        buf = bytearray()
        while len(buf) < nbytes:
            chunk = f.read(min(1 << 24, nbytes - len(buf)))
            if not chunk:
                break
            buf += chunk
        got = len(buf)
    if got != nbytes:
        raise ValueError(f"{fname}: {where} is truncated: shape {shape} of {d} needs {nbytes} bytes of data, "
                         f"got {got}")
    if avail is None and f.read(1):
        raise ValueError(f"{fname}: {where} has data beyond the {nbytes} bytes that shape {shape} of {d} needs")
    return _finish_npy(be or get_backend(), buf, d, shape, fo, swap, 0, fname, where)


def load_npy(path: Any, mmap: Any = False, dtype: Any = None, *, max_bytes: int | None = None,
             backend: Any = None, chunks: Any = None) -> Tensor:
    """Read a NumPy ``.npy`` file.

    Args:
        path: the file path, or a readable binary file object.
        mmap: False (read into memory), True or ``"r"`` (memory-map read-only),
            ``"r+"`` (writes go to the file) or ``"c"`` (copy-on-write).
        dtype: required for raw void data (``'<V2'``/``'|V1'``, as NumPy writes
            bfloat16/float8/int4); otherwise, if given, it must match the file.
        max_bytes: the most bytes of data to read into memory (checked against
            the header before anything is allocated).  ``None``: no limit beyond
            the file's own size (a ``.npy`` stores its data as is; a file object
            is read in chunks, so a lying header costs no memory).  Ignored with
            ``mmap`` (nothing is read).
        backend: the backend of the result (default: the current default backend).
            With ``"dask"`` the result is lazy: each chunk is a task that
            memory-maps the file and copies its own slice, so the file is never
            read whole (``max_bytes`` does not apply; ``mmap`` may be False, True
            or ``"r"``).  The file must stay in place, unchanged, until the
            tensor is computed (a changed file raises ``ValueError`` then), and on
            a distributed cluster the workers must see it at the same path.
        chunks: the Dask chunking (``"auto"``, an int, a tuple per axis...);
            only with the Dask backend.
    Returns:
        The tensor (Fortran-order files come back as a Fortran-strided view).
    Raises:
        ValueError: wrong magic, truncated or corrupt header, unsupported
            dtype, a shape no array can have, data size that does not match
            the shape, invalid bool/int4 bytes, data above ``max_bytes``.
        OSError: a missing or unreadable file.

    >>> import os, tempfile, numpy as np, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "a.npy"); np.save(p, np.arange(4.0))
    >>> print(rio.load_npy(p, mmap=True))
    [0, 1, 2, 3]
    """
    fname = "load_npy"
    d = _dtype_arg(dtype, fname)
    limit = _limit(max_bytes, fname, None)
    be = get_backend(backend)
    chunked = be.name == "dask"
    if chunks is not None and not chunked:
        raise TypeError(f"load_npy: chunks= is an option of chunked backends (dask), not of the {be.name} backend")
    if hasattr(path, "read") and not isinstance(path, (str, bytes, os.PathLike)):
        if mmap:
            raise ValueError("load_npy: mmap needs a file path, not a file object")
        if chunked:  # a stream cannot be read by chunk tasks: read on the host, then move
            t = _read_npy_stream(path, fname, "the stream", d, None, limit=limit, max_bytes=max_bytes,
                                 be=get_backend("numpy"))
            return t.to_backend(be.name, chunks=chunks)
        return _read_npy_stream(path, fname, "the stream", d, None, limit=limit, max_bytes=max_bytes)
    p = _path(path, fname)
    where = repr(p)
    if chunked:
        if chunks is not None:
            check_chunks(chunks, fname)
        return _load_npy_chunked(p, mmap, d, chunks, fname, where)
    if not mmap:
        with _open_file(p, fname) as f:
            return _read_npy_stream(f, fname, where, d, os.fstat(f.fileno()).st_size, limit=limit,
                                    max_bytes=max_bytes)
    access = {True: _mmap.ACCESS_READ, "r": _mmap.ACCESS_READ, "r+": _mmap.ACCESS_WRITE,
              "c": _mmap.ACCESS_COPY}.get(mmap)
    if access is None:
        raise ValueError(f"load_npy: mmap must be False, True, 'r', 'r+' or 'c', got {mmap!r}")
    with _open_file(p, fname, "r+b" if access == _mmap.ACCESS_WRITE else "rb") as f:
        dd, shape, fo, swap, off = _npy_file_header(f, fname, where, d)
        if swap:
            raise ValueError(f"{fname}: {where} holds non-native byte order data, which cannot be memory-mapped; "
                             "load it with mmap=False")
        mm = _mmap.mmap(f.fileno(), 0, access=access)
    return _finish_npy(get_backend(), mm, dd, shape, fo, False, off, fname, where)


def _npy_file_header(f: Any, fname: str, where: str, d: DType | None
                     ) -> tuple[DType, tuple[int, ...], bool, bool, int]:
    """:func:`_parse_npy_header` of an open file whose data is used in place (memory-mapped or read
    by chunk), after checking that the file holds exactly the shape's bytes after the header."""
    size = os.fstat(f.fileno()).st_size
    dd, shape, fo, swap, off = _parse_npy_header(f, fname, where, d, size)
    nbytes = math.prod(shape) * dd.itemsize
    if off + nbytes != size:
        raise ValueError(f"{fname}: {where}: shape {shape} of {dd} needs {nbytes} bytes of data, but the file has "
                         f"{size - off}")
    return dd, shape, fo, swap, off


def _load_npy_chunked(p: str, mmap: Any, d: DType | None, chunks: Any, fname: str, where: str) -> Tensor:
    """``load_npy`` onto the Dask backend: the header is checked now, the data read chunk by chunk later."""
    if mmap not in (False, True, "r"):
        raise ValueError(f"load_npy: with backend='dask' mmap must be False, True or 'r' (each chunk reads its "
                         f"slice read-only), got {mmap!r}")
    # deferred: optional dependency (the Dask backend imports Dask), loaded on first use
    from ._backend.dask_backend import dask_backend, read_npy
    with _open_file(p, fname) as f:
        dd, shape, fo, swap, off = _npy_file_header(f, fname, where, d)
    return wrap(read_npy(p, off, dd, shape, fo, swap, chunks, fname), dd, dask_backend)


# ---------------------------------------------------------------------------
# .npz
# ---------------------------------------------------------------------------
def save_npz(path: Any, arrays: Mapping[str, Any] | None = None, *, compressed: bool = False,
             **named: Any) -> None:
    """Write several tensors to a NumPy ``.npz`` archive (a zip of ``.npy`` files), atomically.

    Args:
        path: the file path.
        arrays: a mapping name -> tensor (names become ``name.npy`` members).
        compressed: deflate the members (``np.savez_compressed``).
        named: more tensors by keyword.
    Raises:
        ValueError: for an empty or duplicate name, or a name that is not a
            plain member name: one holding NUL (zip truncates names there),
            ``/`` or ``\\`` (a path: ``../x``, ``/etc/x``, ``a/b``), or a lone
            surrogate (not UTF-8).
        TypeError: for object tensors or non-string names.

    Members switch to the zip64 format by their real size (header and data,
    and the worst case of deflate), so tensors of 2 GiB and more save.

    >>> import os, tempfile, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "a.npz")
    >>> rio.save_npz(p, {"w": rt.ones(rt.float32, [2])}, b=rt.zeros(rt.int8, [3]))
    >>> sorted(rio.load_npz(p))
    ['b', 'w']
    """
    fname = "save_npz"
    if arrays is not None and not isinstance(arrays, Mapping):
        raise TypeError(f"{fname}: arrays must be a mapping name -> tensor, got {type(arrays).__name__}")
    items: dict[str, Tensor] = {}
    for src in ((arrays or {}).items(), named.items()):
        for k, v in src:
            if not isinstance(k, str):
                raise TypeError(f"{fname}: names must be strings, got {type(k).__name__} {k!r}")
            _check_member_name(k, fname)
            if k in items:
                raise ValueError(f"{fname}: the name {k!r} is given twice")
            items[k] = _tensor(v, fname)
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED

    def write(f: Any) -> None:
        with zipfile.ZipFile(f, "w", compression=method, allowZip64=True) as zf:
            for k, t in items.items():
                size = len(_npy_header(t)) + t.nbytes
                with zf.open(k + ".npy", "w", force_zip64=_npz_needs_zip64(size, compressed)) as m:
                    _write_npy(m, t)

    _atomic_write(path, fname, write)


def _check_member_name(k: str, fname: str) -> None:
    if not k:
        raise ValueError(f"{fname}: names must be non-empty")
    if "\0" in k:
        raise ValueError(f"{fname}: the name {k!r} contains a NUL character, which zip member names cannot hold")
    if "/" in k or "\\" in k:
        raise ValueError(f"{fname}: the name {k!r} contains a path separator ('/' or '\\'); expected a plain "
                         "member name (no directories, no '..', not absolute)")
    try:
        k.encode("utf8")
    except UnicodeEncodeError:
        raise ValueError(f"{fname}: the name {k!r} is not valid Unicode text (a lone surrogate)") from None


def _npz_needs_zip64(size: int, compressed: bool) -> bool:
    """Whether an archive member of ``size`` bytes (.npy header + data) needs zip64 size fields:
    zipfile cannot know the size of a streamed member in advance and fails when a plain
    member grows past ``zipfile.ZIP64_LIMIT`` (2 GiB - 1); deflate can grow incompressible
    data a little, so compressed members are judged by zlib's worst case (``deflateBound``)."""
    if compressed:
        size += (size >> 12) + (size >> 14) + (size >> 25) + 64
    return size > zipfile.ZIP64_LIMIT


_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, NotImplementedError,
               struct.error, UnicodeDecodeError, RuntimeError)


def load_npz(path: Any, *, max_bytes: int | None = None) -> dict[str, Tensor]:
    """Read a NumPy ``.npz`` archive: a dict name -> tensor, in archive order.

    Args:
        path: the file path.
        max_bytes: the most bytes the members may decode to, all together
            (checked against the archive's directory before anything is
            decompressed; a member cannot decode to more than the directory
            says).  ``None``: the archive's size plus
            ``DEFAULT_MAX_EXTRA_BYTES`` (1 GiB), so stored archives load at any
            size while a small compressed archive cannot inflate to gigabytes.
    Raises:
        ValueError: for a file that is not a zip archive, a corrupt member
            (bad CRC, truncated data), a member that is not ``.npy``, a
            duplicate name, or members larger than ``max_bytes``.
        OSError: a missing or unreadable file.

    >>> import os, tempfile, numpy as np, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "a.npz"); np.savez(p, x=np.arange(3))
    >>> print(rio.load_npz(p)["x"])
    [0, 1, 2]
    """
    fname = "load_npz"
    p = _path(path, fname)
    out: dict[str, Tensor] = {}
    fh = _open_file(p, fname)  # a missing file is an OSError; after this, OSError means a corrupt archive
    try:
        with fh:
            limit = _limit(max_bytes, fname, os.fstat(fh.fileno()).st_size)
            with zipfile.ZipFile(fh, "r") as zf:
                infos = [i for i in zf.infolist() if not i.is_dir()]
                _check_limit(sum(i.file_size for i in infos), limit, max_bytes, fname, repr(p),
                             f"the {len(infos)} member(s) decompressed")
                for info in infos:
                    name = info.filename
                    if not name.endswith(".npy"):
                        raise ValueError(f"{fname}: {p!r}: member {name!r} is not a .npy file")
                    key = name[:-4]
                    if key in out:
                        raise ValueError(f"{fname}: {p!r}: member {name!r} appears twice")
                    with zf.open(info) as m:
                        out[key] = _read_npy_stream(m, fname, f"{p!r} member {name!r}", None, info.file_size,
                                                    trusted=False)
    except (*_ZIP_ERRORS, OSError) as e:
        raise ValueError(f"{fname}: {p!r} is not a valid .npz archive: {e}") from None
    return out


# ---------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------
_ST_DTYPE: dict[DType, str] = {
    D.bool: "BOOL", D.uint8: "U8", D.int8: "I8", D.uint16: "U16", D.int16: "I16", D.float16: "F16",
    D.bfloat16: "BF16", D.uint32: "U32", D.int32: "I32", D.float32: "F32", D.uint64: "U64", D.int64: "I64",
    D.float64: "F64", D.float8_e4m3: "F8_E4M3", D.float8_e5m2: "F8_E5M2", D.complex64: "C64",
}
_ST_FROM = {v: k for k, v in _ST_DTYPE.items()}


def save_safetensors(path: Any, tensors: Mapping[str, Any], metadata: Mapping[str, str] | None = None) -> None:
    """Write tensors to a safetensors file, atomically.

    Args:
        path: the file path.
        tensors: mapping name -> tensor (any shape; dtypes of the format, see the module doc).
        metadata: optional string -> string mapping stored as ``__metadata__``.
    Raises:
        TypeError: for a dtype safetensors cannot hold (int4, uint4,
            complex128, object) or non-string names/metadata.
        ValueError: for an empty name or the reserved name ``__metadata__``.

    >>> import os, tempfile, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "m.safetensors")
    >>> rio.save_safetensors(p, {"w": rt.create(rt.bfloat16, [2], [0.5, -1])}, metadata={"step": "3"})
    >>> t, meta = rio.load_safetensors(p, return_metadata=True)
    >>> print(t["w"], t["w"].dtype, meta)
    [0.5, -1] bfloat16 {'step': '3'}
    """
    fname = "save_safetensors"
    if not isinstance(tensors, Mapping):
        raise TypeError(f"{fname}: tensors must be a mapping name -> tensor, got {type(tensors).__name__}")
    header: dict[str, Any] = {}
    if metadata is not None:
        if not isinstance(metadata, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                        for k, v in metadata.items()):
            raise TypeError(f"{fname}: metadata must map strings to strings, got {metadata!r:.80}")
        header["__metadata__"] = dict(metadata)
    items: list[tuple[str, Tensor]] = []
    offset = 0
    for k, v in tensors.items():
        if not isinstance(k, str):
            raise TypeError(f"{fname}: names must be strings, got {type(k).__name__} {k!r}")
        if not k or k == "__metadata__":
            raise ValueError(f"{fname}: invalid tensor name {k!r}")
        if isinstance(v, (Mapping, list, tuple)) or type(v) in _PYTREE_NODES:
            raise TypeError(f"{fname}: the value of {k!r} is a {type(v).__name__}, not a tensor: save_safetensors "
                            "takes a flat mapping name -> tensor; save nested parameters, models or optimizer "
                            "states with runetensor.io.save_checkpoint(path, tree)")
        t = _tensor(v, fname)
        code = _ST_DTYPE.get(t._dtype)
        if code is None:
            raise TypeError(f"{fname}: {t._dtype} has no safetensors dtype (tensor {k!r}); cast it first")
        header[k] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + t.nbytes]}
        offset += t.nbytes
        items.append((k, t))
    hb = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf8")
    hb += b" " * ((-len(hb)) % 8)

    def write(f: Any) -> None:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for _, t in items:
            _write_data(f, t)

    _atomic_write(path, fname, write)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r} in the JSON header")
        out[k] = v
    return out


def _header_int(s: str) -> int:
    """An integer of a safetensors header: shapes and offsets fit 64 bits, so a number of more than
    40 digits is refused before Python converts it (quadratic time, and its 4300-digit limit)."""
    if len(s) > 40:
        raise ValueError(f"an integer of {len(s)} digits (shapes and offsets are at most 20 digits)")
    return int(s)


def load_safetensors(path: Any, mmap: bool = False, return_metadata: bool = False, *,
                     max_bytes: int | None = None, max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> Any:
    """Read a safetensors file: a dict name -> tensor, in header order.

    Args:
        path: the file path.
        mmap: memory-map the file read-only instead of reading it.
        return_metadata: also return the ``__metadata__`` dict (``{}`` if absent).
        max_bytes: the most bytes of tensor data to read into memory (checked
            before anything is allocated).  ``None``: no limit beyond the file's
            own size (the format stores its data as is).  Ignored with ``mmap``.
        max_header_bytes: the largest JSON header accepted (default
            ``DEFAULT_MAX_HEADER_BYTES``, 16 MiB: parsing costs ~30 times the
            header's size in memory); at most the format's own 100,000,000.
    Returns:
        ``tensors`` or ``(tensors, metadata)``.
    Raises:
        ValueError: truncated file, header length beyond the file or the
            limit, invalid JSON, unknown dtype, a shape no array can have,
            offsets that do not match the shape, overlap, leave holes or run
            past the data, invalid bool bytes, data above ``max_bytes``.
        OSError: a missing or unreadable file.

    >>> import os, tempfile, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "m.safetensors")
    >>> rio.save_safetensors(p, {"a": rt.ones(rt.float8_e4m3, [2, 2])})
    >>> rio.load_safetensors(p)["a"].shape
    (2, 2)
    """
    fname = "load_safetensors"
    p = _path(path, fname)
    where = repr(p)
    limit = _limit(max_bytes, fname, None)
    if (isinstance(max_header_bytes, builtins.bool) or not isinstance(max_header_bytes, numbers.Integral)):
        raise TypeError(f"{fname}: max_header_bytes must be an int, got {type(max_header_bytes).__name__}")
    if not 0 <= max_header_bytes <= _MAX_ST_HEADER:
        raise ValueError(f"{fname}: max_header_bytes must be in [0, {_MAX_ST_HEADER}] (the format's limit), "
                         f"got {max_header_bytes}")
    with _open_file(p, fname) as f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            raise ValueError(f"{fname}: {where} is truncated: {size} bytes, a safetensors file starts with an "
                             "8-byte header length")
        n = struct.unpack("<Q", f.read(8))[0]
        if n > size - 8:
            raise ValueError(f"{fname}: {where} is not a valid safetensors file: header length {n} exceeds the "
                             f"file ({size} bytes)")
        if n > max_header_bytes:
            raise ValueError(f"{fname}: {where}: the JSON header has {n} bytes, more than max_header_bytes="
                             f"{max_header_bytes}; pass a larger max_header_bytes to load a file you trust")
        hb = _read_exact(f, n, fname, where, "header")
        if mmap:
            buf: Any = _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_READ) if size > 8 + n else bytearray()
            base = 8 + n
        else:
            _check_limit(size - 8 - n, limit, max_bytes, fname, where, "the data")
            buf = bytearray(size - 8 - n)
            if _readinto(f, buf) != len(buf):
                raise ValueError(f"{fname}: {where} is truncated")
            base = 0
    try:
        if not hb.lstrip(b" ").startswith(b"{"):
            raise ValueError("the header does not start with '{'")
        header = json.loads(hb.decode("utf8"), object_pairs_hook=_no_duplicates, parse_int=_header_int)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"{fname}: {where} is not a valid safetensors file: bad JSON header ({e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{fname}: {where}: the header must be a JSON object")
    data_len = size - 8 - n
    meta = header.pop("__metadata__", {})
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise ValueError(f"{fname}: {where}: __metadata__ must map strings to strings")
    be = get_backend()
    spans: list[tuple[int, int, str]] = []
    entries: list[tuple[str, DType, tuple[int, ...], int]] = []
    for k, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise ValueError(f"{fname}: {where}: entry {k!r} must have exactly dtype, shape and data_offsets")
        d = _ST_FROM.get(e["dtype"]) if isinstance(e["dtype"], str) else None
        if d is None:
            raise ValueError(f"{fname}: {where}: entry {k!r} has unsupported dtype {e['dtype']!r}")
        shape = e["shape"]
        if not isinstance(shape, list):
            raise ValueError(f"{fname}: {where}: entry {k!r} has bad shape {shape!r:.80}")
        _check_shape(shape, d, fname, where, f"entry {k!r} has bad shape")
        offs = e["data_offsets"]
        if (not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int for o in offs)
                or not 0 <= offs[0] <= offs[1] <= data_len):
            raise ValueError(f"{fname}: {where}: entry {k!r} has data_offsets {offs!r:.80} outside the "
                             f"{data_len}-byte data")
        need = math.prod(shape) * d.itemsize
        if offs[1] - offs[0] != need:
            raise ValueError(f"{fname}: {where}: entry {k!r}: shape {tuple(shape)} of {d} needs {need} bytes, "
                             f"data_offsets span {offs[1] - offs[0]}")
        spans.append((offs[0], offs[1], k))
        entries.append((k, d, tuple(shape), offs[0]))
    pos = 0
    for b0, b1, k in sorted(spans):
        if b0 != pos:
            what = "overlaps the previous tensor" if b0 < pos else f"leaves a hole of {b0 - pos} bytes"
            raise ValueError(f"{fname}: {where}: entry {k!r} {what}")
        pos = b1
    if pos != data_len:
        raise ValueError(f"{fname}: {where}: {data_len - pos} bytes of data after the last tensor")
    out: dict[str, Tensor] = {}
    for k, d, shape, off in entries:
        nb = math.prod(shape) * d.itemsize
        _check_canonical(be, buf, d, nb if d is D.bool else 0, base + off, fname, f"{where} entry {k!r}")
        if not _LITTLE and d.itemsize > 1:  # pragma: no cover  (big-endian hosts)
            raw = bytes(builtins.memoryview(buf)[base + off:base + off + nb])
            out[k] = wrap(_view(be, bytearray(_swap(be, raw, d, math.prod(shape))), d, shape, 0), d, be)
        else:
            out[k] = wrap(_view(be, buf, d, shape, base + off), d, be)
    return (out, dict(meta)) if return_metadata else out


# ---------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------
_TXT_TAG = "# runetensor:"


def _fmt_value(v: Any, d: DType) -> str:
    if d is D.bool:
        return "1" if v else "0"
    if d.is_int:
        return str(int(v))
    if d.is_complex:
        z = complex(v)
        return repr(z).strip("()")
    return repr(float(v))


def save_txt(path: Any, t: Any, delimiter: str = " ") -> None:
    """Write a tensor of rank <= 2 as text (one row per line), atomically.

    The first line is a comment ``# runetensor: dtype=<dtype> shape=<shape>``
    that :func:`load_txt` uses to restore the exact dtype and shape; NumPy's
    ``loadtxt`` skips it as a comment.

    Args:
        path: the file path.
        t: a 0-d, 1-D (written as one column) or 2-D tensor.
        delimiter: the separator between values of a row (not a digit, sign,
            letter, '.', '#', '(' or ')').
    Raises:
        ValueError: for rank > 2 or a bad delimiter.
        TypeError: for object tensors.

    >>> import os, tempfile, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "t.txt")
    >>> rio.save_txt(p, rt.create(rt.float32, [2, 2], [0.1, 2, -3, 4.5]))
    >>> print(open(p).read(), end="")
    # runetensor: dtype=float32 shape=(2, 2)
    0.10000000149011612 2.0
    -3.0 4.5
    """
    fname = "save_txt"
    t = _tensor(t, fname)
    if t.ndim > 2:
        raise ValueError(f"{fname}: expected a tensor of rank <= 2, got shape {t.shape}")
    if (not isinstance(delimiter, str) or not delimiter or delimiter.strip() and
            any(c.isalnum() or c in "+-.#()_" for c in delimiter) or "\n" in delimiter or "\r" in delimiter):
        raise ValueError(f"{fname}: bad delimiter {delimiter!r}")
    d, be, h = t._dtype, t._backend, t._data

    def write(f: Any) -> None:  # blocks of ~64K values: no Python list of every value
        f.write(f"{_TXT_TAG} dtype={d.name} shape={t.shape}\n".encode("utf8"))
        if t.ndim == 0:
            f.write((_fmt_value(be.to_list(h), d) + "\n").encode("utf8"))
            return
        nrows = t.shape[0]
        ncols = t.shape[1] if t.ndim == 2 else 1
        step = max(1, _TXT_BLOCK // max(1, ncols))
        rest = tuple(slice(0, s, 1) for s in t.shape[1:])
        for i in range(0, nrows, step):
            vals = be.to_list(be.view_index(h, (slice(i, min(nrows, i + step), 1),) + rest))
            if t.ndim == 1:
                lines = [_fmt_value(v, d) + "\n" for v in vals]
            else:
                lines = [delimiter.join([_fmt_value(v, d) for v in row]) + "\n" for row in vals]
            f.write("".join(lines).encode("utf8"))

    _atomic_write(path, fname, write)


#: values per block when text is written or parsed
_TXT_BLOCK = 1 << 16


def _parse_value(s: str, d: DType, fname: str, where: str) -> Any:
    try:
        if d is D.bool:
            low = s.lower()
            if low in ("1", "true"):
                return True
            if low in ("0", "false"):
                return False
            raise ValueError
        if d.is_int:
            return int(s)
        if d.is_complex:
            return complex(s)
        return float(s)
    except ValueError:
        raise ValueError(f"{fname}: {where}: {s!r} is not a valid {d} value") from None


def load_txt(path: Any, dtype: Any = None, delimiter: str | None = None, comments: str = "#", *,
             max_bytes: int | None = None) -> Tensor:
    """Read a text file of numbers (one row per line) into a tensor.

    The file is streamed: values are parsed and packed into the tensor's buffer
    in blocks, so memory holds one row of text plus the result (not a Python
    list of every value).

    Args:
        path: the file path.
        dtype: element type (default: the file's ``# runetensor:`` line, else float64).
        delimiter: value separator (default: any whitespace).
        comments: lines starting with this (after spaces) are skipped.
        max_bytes: the most bytes of tensor data to build (checked against the
            ``# runetensor:`` shape before reading on, and while reading).
            ``None``: the file's size plus ``DEFAULT_MAX_EXTRA_BYTES`` (1 GiB).
    Returns:
        With a ``# runetensor:`` line, the saved shape; otherwise 2-D
        ``(rows, columns)``, squeezed as NumPy's ``loadtxt`` does (one column
        or one row gives 1-D, a single value 0-d).
    Raises:
        ValueError: for ragged rows, unparsable values, values out of range
            for ``dtype``, a malformed ``# runetensor:`` line or one whose
            shape no array can have, a value count that does not match the
            saved shape, or data above ``max_bytes``.
        OSError: a missing or unreadable file.

    >>> import os, tempfile, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "t.txt")
    >>> _ = open(p, "w").write("1 2 3\\n4 5 6\\n")
    >>> print(rio.load_txt(p, dtype=rt.int32))
    [[1, 2, 3],
     [4, 5, 6]]
    """
    fname = "load_txt"
    p = _path(path, fname)
    where = repr(p)
    want = _dtype_arg(dtype, fname)
    saved_dtype: DType | None = None
    saved_shape: tuple[int, ...] | None = None
    be = get_backend()
    pack: _TxtPacker | None = None
    nrows = 0
    ncols: int | None = None
    try:
        with _open_file(p, fname, "r", encoding="utf8") as f:
            limit = _limit(max_bytes, fname, os.fstat(f.fileno()).st_size)
            for line in f:
                s = line.strip()
                if s.startswith(_TXT_TAG) and saved_shape is None and pack is None:
                    saved_dtype, saved_shape = _parse_tag(s, fname, where)
                    dd = want or saved_dtype
                    _check_shape(saved_shape, dd, fname, where, "the '# runetensor:' line has shape")
                    _check_limit(math.prod(saved_shape) * dd.itemsize, limit, max_bytes, fname, where,
                                 f"the saved shape {saved_shape} of {dd}")
                    continue
                blank_row = not s and saved_shape is not None and len(saved_shape) == 2 and saved_shape[1] == 0
                if not blank_row and (not s or (comments and s.startswith(comments))):
                    continue
                if pack is None:
                    pack = _TxtPacker(be, want or saved_dtype or D.float64, limit, max_bytes, fname, where,
                                      math.prod(saved_shape) if saved_shape is not None else None)
                r = [] if blank_row else s.split(delimiter) if delimiter is not None else s.split()
                nrows += 1
                if ncols is None:
                    ncols = len(r)
                elif len(r) != ncols:
                    raise ValueError(f"{fname}: {where}: row {nrows} has {len(r)} values, the first row has {ncols}")
                pack.add([x.strip() for x in r] if delimiter is not None else r, nrows)
    except UnicodeDecodeError:
        raise ValueError(f"{fname}: {p!r} is not a UTF-8 text file") from None
    d = want or saved_dtype or D.float64
    count = 0
    buf = bytearray()
    if pack is not None:
        buf, count = pack.finish()
    if saved_shape is not None:
        shape = saved_shape
        rows_want, cols_want = (shape[0], shape[1]) if len(shape) == 2 else (shape[0] if shape else 1, 1)
        if nrows and (nrows != rows_want or (ncols or 0) != cols_want):
            raise ValueError(f"{fname}: {where}: the header says shape {shape} but the file has {nrows} row(s) "
                             f"of {ncols} value(s)")
        if math.prod(shape) != count:
            raise ValueError(f"{fname}: {where}: the header says shape {shape} ({math.prod(shape)} values) but the "
                             f"file holds {count}")
    else:
        nc = ncols or 0
        shape = tuple(s for s in (nrows, nc) if s != 1) if nrows and nc else (nrows, nc) if nrows else (0,)
    if count == 0:
        return wrap(be.empty(shape, d), d, be)
    return wrap(be.from_buffer(buf, d, shape, 0), d, be)


class _TxtPacker:
    """Parses the values of text rows and packs them, a block at a time, into one bytearray
    (native byte order), checking ranges and the byte limit as it goes."""

    def __init__(self, be: Any, d: DType, limit: int | None, max_bytes: Any, fname: str, where: str,
                 expected: int | None) -> None:
        self.be, self.d, self.limit, self.max_bytes = be, d, limit, max_bytes
        self.fname, self.where, self.expected = fname, where, expected
        self.buf = bytearray()
        self.pending: list[Any] = []
        self.count = 0
        if d.is_int:
            self.range: tuple[int, int] | None = int_range(d)
        else:
            self.range = None

    def add(self, texts: list[str], row: int) -> None:
        d, fname, where = self.d, self.fname, self.where
        self.pending += [_parse_value(x, d, fname, f"{where} row {row}") for x in texts]
        self.count += len(texts)
        if self.expected is not None and self.count > self.expected:
            raise ValueError(f"{fname}: {where}: the header's shape holds {self.expected} values but the file "
                             f"holds more (row {row})")
        _check_limit(self.count * d.itemsize, self.limit, self.max_bytes, fname, where,
                     f"{self.count} values of {d} (and counting)")
        if len(self.pending) >= _TXT_BLOCK:
            self.flush()

    def flush(self) -> None:
        vals, d, fname, where = self.pending, self.d, self.fname, self.where
        if not vals:
            return
        if self.range is not None:
            lo, hi = min(vals), max(vals)
            if lo < self.range[0] or hi > self.range[1]:
                raise ValueError(f"{fname}: {where}: value {lo if lo < self.range[0] else hi} is out of range "
                                 f"for {d}")
        try:
            h, _ = self.be.asarray(vals, d, None)
        except (OverflowError, ValueError, TypeError) as e:
            raise ValueError(f"{fname}: {where}: a value is out of range for {d}: {e}") from None
        self.buf += self.be.to_bytes(h)
        self.pending = []

    def finish(self) -> tuple[bytearray, int]:
        self.flush()
        return self.buf, self.count


def _parse_tag(s: str, fname: str, where: str) -> tuple[DType, tuple[int, ...]]:
    body = s[len(_TXT_TAG):].strip()
    try:
        dpart, spart = body.split(" shape=", 1)
        if not dpart.startswith("dtype="):
            raise ValueError
        d = D.dtype_of(dpart[len("dtype="):].strip())
        shape = ast.literal_eval(spart.strip())
        if (not isinstance(shape, tuple) or len(shape) > 2
                or not all(type(x) is int and x >= 0 for x in shape)):
            raise ValueError
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(f"{fname}: {where}: malformed '# runetensor:' line {s!r:.80}") from None
    if d is D.object_:
        raise ValueError(f"{fname}: {where}: object tensors cannot be loaded from text")
    return d, shape


# ---------------------------------------------------------------------------
# images
# ---------------------------------------------------------------------------
def _pil(fname: str) -> Any:
    try:
        # deferred: optional dependency, loaded on first use (and a heavy import)
        from PIL import Image
    except ImportError:
        raise ImportError(f"{fname}: images need Pillow, the optional extra 'image': "
                          "pip install 'runetensor[image]'") from None
    return Image


#: Pillow mode -> (dtype, channels) kept as they are
_PIL_MODES = {"L": (D.uint8, 1), "LA": (D.uint8, 2), "RGB": (D.uint8, 3), "RGBA": (D.uint8, 4),
              "I;16": (D.uint16, 1), "I": (D.int32, 1), "F": (D.float32, 1)}


#: output mode -> bytes per pixel, for the size check before decoding
_PIL_OUT_BYTES = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "I;16": 2, "I": 4, "F": 4}


def _pil_out_mode(mode: str, info: Mapping[str, Any]) -> str:
    """The mode :func:`load_image` returns for an image of Pillow mode ``mode``."""
    if mode in ("I;16", "I;16L"):
        return "I;16"
    if mode in _PIL_MODES:
        return mode
    if mode == "1":
        return "L"
    if mode == "P" and "transparency" in info or mode in ("PA", "RGBa", "La"):
        return "RGBA"
    return "RGB"


def _decode_error(e: BaseException) -> bool:
    """Whether an exception from Pillow means "not a readable image" (rather than an I/O error
    of the disk, which has an errno and stays an OSError, or a MemoryError)."""
    if isinstance(e, MemoryError):
        return False
    if isinstance(e, OSError):
        return e.errno is None
    return isinstance(e, Exception)


class _CappedReader:
    """A file whose ``read(n)`` never asks for more than what is left of the file: Python's
    buffered ``read(n)`` allocates ``n`` bytes up front, and image decoders pass sizes read
    from the file (a corrupt chunk length of 4 GB would allocate 4 GB for a 200-byte file)."""

    def __init__(self, f: Any, size: int) -> None:
        self._f, self._size = f, size

    def read(self, n: int | None = -1) -> bytes:
        left = max(0, self._size - self._f.tell())
        return self._f.read(left if n is None or n < 0 else min(n, left))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


def load_image(path: Any, *, max_bytes: int | None = None) -> Tensor:
    """Read a PNG or JPEG (any format Pillow reads) as a ``(H, W)`` or ``(H, W, C)`` tensor.

    Modes: grayscale ``L`` -> uint8 ``(H, W)``; ``LA``/``RGB``/``RGBA`` ->
    uint8 ``(H, W, 2|3|4)``; 16-bit grayscale -> uint16 ``(H, W)``; 32-bit
    ``I``/``F`` -> int32/float32 ``(H, W)``; palette and other modes are
    converted to RGB (RGBA when transparent).

    Args:
        path: the file path.
        max_bytes: the most bytes of pixels to decode, checked against the
            image's header before decoding.  ``None``: the file's size plus
            ``DEFAULT_MAX_EXTRA_BYTES`` (1 GiB).  Pillow's own decompression
            bomb limit (``Image.MAX_IMAGE_PIXELS``) applies as well.
    Raises:
        ImportError: if Pillow (the extra ``image``) is missing.
        ValueError: for a file that is not a readable image (unknown format,
            truncated, corrupt, a decompression bomb) or larger than ``max_bytes``.
        OSError: a missing or unreadable file (``FileNotFoundError``...), as
            with the other loaders.

    >>> import os, tempfile, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "i.png")
    >>> rio.save_image(p, rt.create(rt.uint8, [1, 2, 3], [255, 0, 0, 0, 0, 255]))
    >>> img = rio.load_image(p)
    >>> img.shape, img.dtype, rt.to_array(img)
    ((1, 2, 3), rt.uint8, [255, 0, 0, 0, 0, 255])
    """
    fname = "load_image"
    Image = _pil(fname)
    p = _path(path, fname)
    where = repr(p)
    with _open_file(p, fname) as f:  # a missing or unreadable file is an OSError, as for every loader
        size = os.fstat(f.fileno()).st_size
        limit = _limit(max_bytes, fname, size)
        try:
            with Image.open(_CappedReader(f, size)) as im:
                mode = _pil_out_mode(im.mode, im.info)
                w, h = im.size
                _check_limit(w * h * _PIL_OUT_BYTES[mode], limit, max_bytes, fname, where,
                             f"a {w}x{h} {mode} image")
                im.load()
                im2 = im if mode == im.mode or mode == "I;16" else im.convert(mode)
                w, h = im2.size
                raw = im2.tobytes("raw", mode)
        except ValueError as e:
            if str(e).startswith(fname + ":"):
                raise
            raise ValueError(f"{fname}: {where} is not a readable image: {e}") from None
        except BaseException as e:
            if not _decode_error(e):
                raise
            raise ValueError(f"{fname}: {where} is not a readable image: {type(e).__name__}: {e}") from None
    d, c = _PIL_MODES[mode]
    shape = (h, w) if c == 1 else (h, w, c)
    if len(raw) != math.prod(shape) * d.itemsize:  # pragma: no cover  (Pillow guarantees this)
        raise ValueError(f"{fname}: {where}: decoded {len(raw)} bytes for a {shape} {d} image")
    be = get_backend()
    buf = bytearray(raw)
    if not _LITTLE and d.itemsize > 1:  # pragma: no cover
        buf = bytearray(_swap(be, raw, d, math.prod(shape)))
    return wrap(_view(be, buf, d, shape, 0), d, be)


_IMAGE_EXT = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".bmp": "BMP", ".gif": "GIF", ".tif": "TIFF",
              ".tiff": "TIFF", ".webp": "WEBP"}


def save_image(path: Any, t: Any, format: str | None = None, quality: int = 95) -> None:  # noqa: A002
    """Write a uint8 ``(H, W)``, ``(H, W, 1|2|3|4)`` or uint16 ``(H, W)`` tensor as an image, atomically.

    The image is encoded in memory first, then written like every other
    format (temporary file, ``fsync``, rename): an encoding problem is a
    ``ValueError``, a problem of the disk (full, read-only...) an ``OSError``.

    Args:
        path: the file path; the format comes from its extension (``.png``,
            ``.jpg``/``.jpeg``) unless ``format`` is given.
        t: the image (rows, columns, channels).
        format: ``"PNG"`` or ``"JPEG"`` (or another format Pillow writes).
        quality: JPEG quality, an int from 1 to 100 (Pillow advises at most 95);
            checked for every format, used by JPEG.
    Raises:
        ImportError: if Pillow is missing.
        TypeError: for a dtype other than uint8 (or uint16 grayscale), or a
            non-int ``quality``.
        ValueError: for a bad shape, an unknown format, alpha/16-bit data in a
            JPEG, a ``quality`` outside 1..100, or data the encoder refuses.
        OSError: when the file cannot be written.

    >>> import os, tempfile, runetensor as rt, runetensor.io as rio
    >>> p = os.path.join(tempfile.mkdtemp(), "g.jpg")
    >>> rio.save_image(p, rt.full(rt.uint8, [8, 8], 128), quality=90)
    >>> rio.load_image(p).shape
    (8, 8)
    """
    fname = "save_image"
    Image = _pil(fname)
    t = _tensor(t, fname)
    p = _path(path, fname)
    if isinstance(quality, builtins.bool) or not isinstance(quality, numbers.Integral):
        raise TypeError(f"{fname}: quality must be an int from 1 to 100, got {type(quality).__name__} {quality!r:.40}")
    if not 1 <= quality <= 100:
        raise ValueError(f"{fname}: quality must be from 1 to 100, got {quality}")
    fmt = format
    if fmt is None:
        fmt = _IMAGE_EXT.get(os.path.splitext(os.fsdecode(p))[1].lower())
        if fmt is None:
            raise ValueError(f"{fname}: cannot tell the image format from {p!r}; pass format='PNG' or 'JPEG'")
    if not isinstance(fmt, str):
        raise TypeError(f"{fname}: format must be a string such as 'PNG', got {type(fmt).__name__}")
    fmt = fmt.upper()
    if fmt == "JPG":
        fmt = "JPEG"
    Image.init()
    if fmt not in Image.SAVE:
        raise ValueError(f"{fname}: unknown image format {format!r}; expected one Pillow writes, such as "
                         "'PNG' or 'JPEG'")
    shape = t.shape
    if t.ndim == 3 and shape[2] == 1:
        shape = shape[:2]
    if len(shape) not in (2, 3) or (len(shape) == 3 and shape[2] not in (2, 3, 4)) or 0 in shape:
        raise ValueError(f"{fname}: expected a non-empty (H, W) or (H, W, 1|2|3|4) tensor, got shape {t.shape}")
    if t._dtype is D.uint8:
        mode = "L" if len(shape) == 2 else {2: "LA", 3: "RGB", 4: "RGBA"}[shape[2]]
    elif t._dtype is D.uint16 and len(shape) == 2:
        mode = "I;16"
    else:
        raise TypeError(f"{fname}: expected uint8 pixels (or uint16 grayscale), got {t._dtype} of shape {t.shape}; "
                        "scale and cast first")
    if fmt == "JPEG" and mode not in ("L", "RGB"):
        raise ValueError(f"{fname}: JPEG holds only grayscale or RGB uint8 images, got mode {mode}")
    raw = t._backend.to_bytes(t._data)
    if mode == "I;16" and not _LITTLE:  # pragma: no cover
        raw = _swap(t._backend, raw, D.uint16, t.size)
    im = Image.frombytes(mode, (shape[1], shape[0]), raw)
    kw: dict[str, Any] = {"quality": int(quality)} if fmt == "JPEG" else {}
    out = _io.BytesIO()
    try:
        im.save(out, format=fmt, **kw)
    except BaseException as e:  # the encoder writes to memory: any error here is about the data
        if not _decode_error(e):
            raise
        raise ValueError(f"{fname}: cannot write a {mode} image as {fmt}: {type(e).__name__}: {e}") from None
    data = out.getbuffer()
    _atomic_write(p, fname, lambda f: f.write(data))

from ._checkpoint import load_checkpoint, save_checkpoint  # noqa: E402  (it uses the savers above)
__all__ += ["save_checkpoint", "load_checkpoint"]

# the __future__ import binds the name ``annotations``: not part of this namespace
del annotations
