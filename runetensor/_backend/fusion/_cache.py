"""The kernel cache of ``rt.jit``: a folder private to the user, sealed libraries, verified loads
(its environment settings are read by ``runetensor._settings``).

Trust model (docs/jit.md, "Trust model"): a compiled kernel is code this process runs, so nothing
is loaded that another user could have written or replaced.

* The folder (``$RUNETENSOR_JIT_CACHE`` or the per-user default) is resolved once, then opened one
  component at a time without following links; every parent must belong to root or the user and
  not be writable by others (unless sticky), the folder itself must belong to the user and be
  writable by nobody else.  Folders the library creates are made ``0700`` whatever the umask.  A
  folder that fails is refused with one warning and a fresh private folder (``tempfile.mkdtemp``,
  removed at exit) is used by this process instead.  The folder stays open: later operations go
  through its descriptor, so renaming a parent cannot redirect them.
* A library is written under a temporary name, sealed (its bytes followed by a marker and their
  SHA-256), made ``0600`` and renamed into place (atomic).  Loading opens it without following
  links, requires a regular file of the user that nobody else can write, reads it and checks the
  seal *before* anything maps it: a truncated, altered or foreign file is compiled again.  The
  verified bytes are then written to a private file of a unique name, mapped from there and
  unlinked, so what runs is exactly what was checked.
"""
from __future__ import annotations

import atexit
import ctypes
import errno
import hashlib
import itertools
import os
import shutil
import stat
import tempfile
import threading
import warnings
import weakref
from collections import OrderedDict
from typing import Any

from ..._settings import env_setting, megabytes

#: the seal after a library's bytes: this marker, then the SHA-256 of the bytes before it
MAGIC = b"\0runetensor-k1\0\0"
_SEAL = len(MAGIC) + 32
#: larger files are not kernels (the loader does not read them)
MAX_KERNEL_BYTES = 1 << 28
#: kernels kept loaded by the memory cache beyond those live programs use (least recently used dropped)
MEMORY_KERNELS = 256
#: verified folders kept open (one per configured folder: tests and tools switch between several)
_OPEN_FOLDERS = 8

_LOCK = threading.RLock()
_REFUSED: set = set()
_FOLDERS: dict = {}
_COPY = itertools.count()
_FLAGS_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FLAGS_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FLAGS_FILE = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


def _after_fork_in_child() -> None:
    global _LOCK
    _LOCK = threading.RLock()  # another thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def cache_dir() -> str | None:
    """The configured kernel cache folder, or None when the compiled path is off
    (``RUNETENSOR_JIT_CACHE=0``, or a platform without POSIX file permissions).  Kernels go there
    once it has been verified private (``private_folder``).

    >>> import os
    >>> os.environ["RUNETENSOR_JIT_CACHE"] = "off"
    >>> cache_dir() is None
    True
    >>> del os.environ["RUNETENSOR_JIT_CACHE"]
    """
    v = os.environ.get("RUNETENSOR_JIT_CACHE")
    if v is not None and v.strip().lower() in ("0", "off", "false", "no", "none", ""):
        return None
    if os.name != "posix":
        return None
    if v:
        return v
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "runetensor", "jit")


def disk_cache_limit() -> int:
    """The disk cache's size limit in bytes: ``$RUNETENSOR_JIT_CACHE_MAX_MB`` (default 256 MB; a bad
    value warns once and gives the default).

    >>> disk_cache_limit() > 0
    True
    """
    return int(env_setting("RUNETENSOR_JIT_CACHE_MAX_MB", 256, megabytes, "a finite number of megabytes >= 0")
               * 10**6)


# ------------------------------------------------------------------------------ the folder


class Refused(Exception):
    """A cache folder that is not private to the user (the message says why)."""


class Folder:
    """A verified private cache folder: ``path`` (its real path), ``fd`` (an open descriptor of it)
    and ``ref`` (the path loads go through: ``/proc/self/fd/N`` where that exists, else ``path``)."""

    __slots__ = ("path", "fd", "ref", "__weakref__")

    def __init__(self, path: str, fd: int):
        self.path = path
        self.fd = fd
        ref = f"/proc/self/fd/{fd}"
        self.ref = ref if os.path.isdir(ref) else path
        # closed once nothing uses it (a thread may still be compiling into it when it is replaced)
        weakref.finalize(self, os.close, fd).atexit = False

    def private(self) -> bool:
        """Whether the folder still exists, belongs to the user and nobody else can write it."""
        try:
            st = os.fstat(self.fd)
        except OSError:
            return False
        return st.st_nlink > 0 and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _check(fd: int, where: str, final: bool) -> None:
    st = os.fstat(fd)
    uid = os.geteuid()
    if final:
        if st.st_uid != uid:
            raise Refused(f"it belongs to uid {st.st_uid}, not to you (uid {uid})")
        if st.st_mode & 0o022:
            raise Refused(f"others can write to it (mode {stat.S_IMODE(st.st_mode):04o})")
    else:
        if st.st_uid not in (0, uid):
            raise Refused(f"its parent {where!r} belongs to uid {st.st_uid} (neither root nor you)")
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise Refused(f"its parent {where!r} is writable by others without the sticky bit "
                          f"(mode {stat.S_IMODE(st.st_mode):04o})")


def open_private(path: str) -> Folder:
    """Open (creating what is missing, ``0700``) the folder ``path``, verifying it is private.

    Raises:
        Refused: a component is a link, belongs to another user or is writable by others.
        OSError: the folder cannot be created or opened.
    """
    real = os.path.realpath(os.path.abspath(os.path.expanduser(path)))
    parts = [p for p in real.split(os.sep) if p]
    fd = os.open(os.sep, _FLAGS_DIR)
    try:
        _check(fd, os.sep, not parts)
        for i, name in enumerate(parts):
            where = os.sep + os.sep.join(parts[:i + 1])
            made = False
            try:
                nfd = os.open(name, _FLAGS_DIR, dir_fd=fd)
            except FileNotFoundError:
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                    made = True
                except FileExistsError:
                    pass
                nfd = _open_dir(name, fd, where)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Refused(f"{where!r} is a symbolic link or not a folder") from None
                raise
            os.close(fd)
            fd = nfd
            if made:
                os.fchmod(fd, 0o700)  # whatever the umask
            _check(fd, where, i == len(parts) - 1)
        return Folder(real, fd)
    except BaseException:
        os.close(fd)
        raise


def _open_dir(name: str, parent: int, where: str) -> int:
    try:
        return os.open(name, _FLAGS_DIR, dir_fd=parent)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused(f"{where!r} is a symbolic link or not a folder") from None
        raise


def _remove_at_exit(path: str, pid: int) -> None:
    if os.getpid() == pid:
        shutil.rmtree(path, ignore_errors=True)


def private_folder(configured: str) -> Folder:
    """The verified private folder for the configured cache folder ``configured``: that folder when
    it passes (``open_private``), else (one ``RuntimeWarning`` per folder) a fresh private folder for
    this process.  Checked again on each use; re-opened if it was removed or its mode changed.

    Raises:
        OSError: a folder cannot be created or opened.
    """
    with _LOCK:
        f = _FOLDERS.get(configured)
        if f is not None:
            if f.private():
                return f
            del _FOLDERS[configured]
        try:
            f = open_private(configured)
        except Refused as e:
            tmp = tempfile.mkdtemp(prefix="runetensor-jit-")
            atexit.register(_remove_at_exit, tmp, os.getpid())
            if configured not in _REFUSED:
                _REFUSED.add(configured)
                warnings.warn(f"rt.jit: not using the kernel cache folder {configured!r}: {e}. A kernel in it could "
                              f"have been written by another user. Kernels of this process are compiled into the "
                              f"fresh private folder {tmp!r} instead; to keep a cache, point RUNETENSOR_JIT_CACHE "
                              f"at a folder only you can write (chmod 700)", RuntimeWarning, stacklevel=5)
            try:
                f = open_private(tmp)
            except Refused as e2:
                raise OSError(f"the temporary folder {tmp!r} is not private either: {e2}") from None
        _FOLDERS[configured] = f
        while len(_FOLDERS) > _OPEN_FOLDERS:
            del _FOLDERS[next(iter(_FOLDERS))]
        return f


# --------------------------------------------------------------------------- sealed libraries


def seal(data: bytes) -> bytes:
    """``data`` followed by the seal (marker, SHA-256 of ``data``)."""
    return data + MAGIC + hashlib.sha256(data).digest()


def sealed_ok(data: bytes) -> bool:
    """Whether ``data`` is an ELF library with an intact seal."""
    if len(data) < _SEAL + 64 or data[:4] != b"\x7fELF":
        return False
    body = memoryview(data)[:-_SEAL]
    return data[-_SEAL:-32] == MAGIC and hashlib.sha256(body).digest() == data[-32:]


def _read_all(fd: int, size: int) -> bytes:
    chunks = []
    n = 0
    while n <= size:
        b = os.read(fd, max(size + 1 - n, 1 << 16))
        if not b:
            break
        chunks.append(b)
        n += len(b)
    return b"".join(chunks)


def _own_regular(fd: int) -> os.stat_result | None:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022 \
            or st.st_size > MAX_KERNEL_BYTES:
        return None
    return st


def read_kernel(folder: Folder, name: str) -> bytes | None:
    """The verified bytes of library ``name`` of ``folder`` (and its use time refreshed), or None
    when it is missing, a link, not a regular file of the user, writable by others, or its seal
    does not match (truncated, altered, or not written by this library)."""
    try:
        fd = os.open(name, _FLAGS_FILE, dir_fd=folder.fd)
    except OSError:
        return None
    try:
        st = _own_regular(fd)
        if st is None:
            return None
        data = _read_all(fd, st.st_size)
        if not sealed_ok(data):
            return None
        try:
            os.utime(fd)  # used: the disk cache drops the least recently used libraries first
        except OSError:
            pass
        return data
    except OSError:
        return None
    finally:
        os.close(fd)


def seal_file(folder: Folder, tmp: str, name: str) -> bytes:
    """Seal the compiler's output ``tmp`` (a file of ``folder``), make it ``0600`` and rename it to
    ``name`` (atomic); its sealed bytes.

    Raises:
        OSError: the file is not the user's regular file, or writing failed (a full disk).
    """
    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, dir_fd=folder.fd)
    except PermissionError:  # the linker's mode follows the umask (a umask of 0o7xx: not even ours)
        os.chmod(tmp, 0o600, dir_fd=folder.fd)
        fd = os.open(tmp, flags, dir_fd=folder.fd)
    try:
        st0 = os.fstat(fd)
        if stat.S_ISREG(st0.st_mode) and st0.st_uid == os.geteuid():
            os.fchmod(fd, 0o600)  # before anything is read from it: the linker's mode follows the umask
        st = _own_regular(fd)
        if st is None:
            raise OSError(f"the compiler's output {tmp!r} is not a regular file of yours")
        body = _read_all(fd, st.st_size)
        trailer = MAGIC + hashlib.sha256(body).digest()
        if os.write(fd, trailer) != len(trailer):
            raise OSError(errno.ENOSPC, f"could not seal {tmp!r} (disk full?)")
    finally:
        os.close(fd)
    os.replace(tmp, name, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
    return body + trailer


def load_verified(folder: Folder, data: bytes, tag: str) -> Any:
    """``ctypes.CDLL`` of the verified library bytes ``data``, mapped from a private copy of a unique
    name in ``folder`` (unlinked once loaded), so that the bytes checked are the bytes run.

    Raises:
        OSError: writing the copy or loading it failed.
    """
    name = f".{tag}.{os.getpid()}.{next(_COPY)}.load.so"
    fd = os.open(name, _FLAGS_NEW, 0o600, dir_fd=folder.fd)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        finally:
            os.close(fd)
        return ctypes.CDLL(f"{folder.ref}/{name}")
    finally:
        try:
            os.unlink(name, dir_fd=folder.fd)
        except OSError:
            pass


def remove(folder: Folder, name: str) -> None:
    """Delete ``name`` from ``folder`` (a library that failed verification), ignoring errors."""
    try:
        os.unlink(name, dir_fd=folder.fd)
    except OSError:
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def trim(folder: Folder, keep: str) -> None:
    """Delete the kernel libraries used least recently (oldest modification time first) until the
    folder's libraries fit ``disk_cache_limit()``; never ``keep``.  Safe with other processes: a
    library that is loaded stays mapped, one that vanishes is compiled again.  Also removes the load
    copies a killed process left behind."""
    limit = disk_cache_limit()
    files = []
    try:
        with os.scandir(folder.fd) as it:
            for e in it:
                if e.name.startswith(".k") and e.name.endswith(".load.so"):
                    try:
                        if not _pid_alive(int(e.name.split(".")[2])):
                            os.unlink(e.name, dir_fd=folder.fd)
                    except (ValueError, IndexError, OSError):
                        pass
                    continue
                if e.name.startswith("k") and e.name.endswith(".so") and ".tmp" not in e.name:
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    files.append((st.st_mtime, st.st_size, e.name))
    except OSError:
        return
    total = sum(f[1] for f in files)
    for _, size, name in sorted(files):
        if total <= limit:
            break
        if name == keep:
            continue
        try:
            os.unlink(name, dir_fd=folder.fd)
            total -= size
        except OSError:
            pass


class Memo:
    """The kernels loaded in this process by source hash, least recently used dropped beyond
    ``MEMORY_KERNELS`` (a dropped kernel is unloaded once no program uses it: ``_jitrun.Kernel``)."""

    def __init__(self) -> None:
        self.d: OrderedDict = OrderedDict()

    def get(self, h: str) -> Any:
        with _LOCK:
            k = self.d.get(h)
            if k is not None:
                self.d.move_to_end(h)
            return k

    def put(self, h: str, k: Any) -> None:
        with _LOCK:
            self.d[h] = k
            self.d.move_to_end(h)
            drop = []
            while len(self.d) > max(0, MEMORY_KERNELS):
                drop.append(self.d.popitem(last=False))
        del drop  # freed outside the lock

    def clear(self) -> None:
        with _LOCK:
            old = self.d
            self.d = OrderedDict()
        del old

    def __len__(self) -> int:
        return len(self.d)
