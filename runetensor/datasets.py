"""Minibatches and standard image data sets from local files (``rt.datasets``).

``rt.data`` is the seed's buffer accessor, so this module is ``datasets``:

* :func:`batches` cuts a pytree of tensors, NumPy arrays or memory maps (all with the same
  leading size) into minibatches, in order or shuffled by a random key
  (:mod:`runetensor.random`): the same key gives the same batches.
* :func:`mnist`, :func:`fashion_mnist` and :func:`cifar10` read the official files from a local
  directory (nothing is downloaded; ``docs/data.md`` says where to get them) and return
  ``(images, labels)``: uint8 images and int32 labels.  MNIST and Fashion-MNIST are idx files,
  gzipped or not; CIFAR-10 is its *binary* version (the directory ``cifar-10-batches-bin`` or the
  archive ``cifar-10-binary.tar.gz``, read in place: nothing is extracted and nothing is
  unpickled).  The published MD5 digests of the official files are checked (``verify=``).
"""
from __future__ import annotations

import builtins
import gzip
import hashlib
import os
import struct
import tarfile
from typing import Any, Iterator

import runetensor as rt  # the public namespace (imported first: this module loads after it)

from . import _dtypes as D
from ._backend import get_backend
from ._tensor import Tensor, wrap

__all__ = ["batches", "Batches", "mnist", "fashion_mnist", "cifar10", "OFFICIAL_FILES"]


# ---------------------------------------------------------------------------------------------
# minibatches
# ---------------------------------------------------------------------------------------------

class Batches:
    """The minibatches of a pytree (what :func:`batches` returns): iterable any number of times, with ``len``.

    Every iteration yields the same batches in the same order (the order is drawn once, from the
    key, when the object is made).  ``len(b)`` is the number of batches; ``b.size`` the number of
    examples; ``b.order`` the int32 tensor of example indices in batch order (None when not shuffled).
    """

    def __init__(self, leaves: list[Tensor], treedef: Any, batch_size: int, order: Tensor | None,
                 drop_last: bool) -> None:
        self._leaves = leaves
        self._treedef = treedef
        self.batch_size = batch_size
        self.order = order
        self.drop_last = drop_last
        self.size = leaves[0].shape[0] if leaves else 0

    def __len__(self) -> int:
        n, b = self.size, self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            lo, hi = i * self.batch_size, min(self.size, (i + 1) * self.batch_size)
            if self.order is None:
                parts = [x[lo:hi] for x in self._leaves]
            else:
                idx = self.order[lo:hi]
                parts = [rt.take(x, idx, axis=0) for x in self._leaves]
            yield rt.tree_unflatten(self._treedef, parts)

    def __repr__(self) -> str:
        return (f"Batches({len(self)} batches of {self.batch_size} from {self.size} examples, "
                f"{'shuffled' if self.order is not None else 'in order'}, drop_last={self.drop_last})")


def batches(tree: Any, batch_size: int, *, key: Tensor | None = None, drop_last: bool = False) -> Batches:
    """The minibatches of a pytree of tensors, NumPy arrays or memory maps, in order or shuffled.

    Every leaf is cut along its first axis; all leaves must have the same first dimension ``n``.
    Batch ``i`` holds examples ``i * batch_size`` up to ``(i + 1) * batch_size`` of the order:
    ``0 .. n-1`` without a key, ``rt.random.permutation(key, n)`` with one (the same key gives
    the same batches on every run and every machine; use ``rt.random.fold_in(key, epoch)`` for
    a fresh order each epoch).  NumPy arrays and memory maps are not copied: unshuffled batches
    are views (slices) of them, shuffled batches gather just their own rows, so a memory-mapped
    data set is read batch by batch.

    With ``rt.jit``: a jitted step traces once per distinct batch shape.  With
    ``drop_last=True`` every batch has exactly ``batch_size`` rows, so the step traces once;
    otherwise the last batch of an epoch, when ``n`` is not a multiple of ``batch_size``, has
    ``n % batch_size`` rows and the step traces a second time for it (once, then it is cached).

    Args:
        tree: a pytree (``rt.tree_flatten``) whose leaves are tensors, NumPy arrays or anything
            ``rt.asarray`` takes, each with at least one dimension and the same first dimension.
        batch_size: examples per batch, an int > 0.
        key: a random key (``rt.random.key``) to shuffle with; None keeps the order.
        drop_last: drop the last batch when it would be smaller than ``batch_size``.
    Returns:
        A :class:`Batches`: iterate it (as often as needed) for pytrees of the same structure
        whose leaves are tensors with ``batch_size`` (or fewer, last) rows; ``len()`` counts them.
    Raises:
        TypeError: for a non-integer ``batch_size``, a bad key, or a leaf that is not array-like.
        ValueError: for ``batch_size <= 0``, an empty tree, a 0-d leaf, or leaves whose first
            dimensions differ.

    >>> import runetensor as rt
    >>> x = rt.arange(rt.int32, 0, 10, 1)
    >>> data = {"x": x, "y": x * 10}
    >>> [rt.to_array(b["x"]) for b in rt.datasets.batches(data, 4)]
    [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    >>> b = rt.datasets.batches(data, 4, key=rt.random.key(0), drop_last=True)
    >>> len(b), [tuple(batch["y"].shape) for batch in b]
    (2, [(4,), (4,)])
    >>> all(rt.to_array(t["y"]) == [10 * v for v in rt.to_array(t["x"])] for t in b)
    True
    """
    fname = "batches"
    if isinstance(batch_size, builtins.bool) or not isinstance(batch_size, builtins.int) \
            and not hasattr(batch_size, "__index__"):
        raise TypeError(f"{fname}: batch_size must be an integer, got {type(batch_size).__name__} {batch_size!r}")
    bs = int(batch_size)
    if bs <= 0:
        raise ValueError(f"{fname}: batch_size must be > 0, got {bs}")
    raw, treedef = rt.tree_flatten(tree)
    if not raw:
        raise ValueError(f"{fname}: the tree has no leaves; expected tensors or arrays with a leading batch axis")
    leaves: list[Tensor] = []
    for i, x in enumerate(raw):
        if not isinstance(x, Tensor):
            try:
                x = rt.asarray(x)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{fname}: leaf {i} ({type(x).__name__}) is not a tensor or an array: {e}") from None
        if x.ndim == 0:
            raise ValueError(f"{fname}: leaf {i} is 0-d; every leaf needs a leading axis of examples")
        leaves.append(x)
    n = leaves[0].shape[0]
    for i, x in enumerate(leaves):
        if x.shape[0] != n:
            raise ValueError(f"{fname}: leaf {i} has {x.shape[0]} examples (shape {tuple(x.shape)}) but leaf 0 "
                             f"has {n}; every leaf must have the same first dimension")
    order = None
    if key is not None:
        order = rt.random.permutation(key, n)
    return Batches(leaves, treedef, bs, order, builtins.bool(drop_last))


# ---------------------------------------------------------------------------------------------
# file checks
# ---------------------------------------------------------------------------------------------

#: the official files: data set -> file name -> (size in bytes, MD5 hex digest), as published
#: by the data sets' authors (MNIST's as listed by the mirrors torchvision uses; the original
#: site published none)
OFFICIAL_FILES: dict[str, dict[str, tuple[int, str]]] = {
    "mnist": {
        "train-images-idx3-ubyte.gz": (9912422, "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        "train-labels-idx1-ubyte.gz": (28881, "d53e105ee54ea40749a09fcbcd1e9432"),
        "t10k-images-idx3-ubyte.gz": (1648877, "9fb629c4189551a2d022fa330f9573f3"),
        "t10k-labels-idx1-ubyte.gz": (4542, "ec29112dd5afa0611ce80d1b7f02629c"),
    },
    "fashion_mnist": {
        "train-images-idx3-ubyte.gz": (26421880, "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        "train-labels-idx1-ubyte.gz": (29515, "25c81989df183df01b3e8a0aad5dffbe"),
        "t10k-images-idx3-ubyte.gz": (4422102, "bef4ecab320f06d8554ea6380940ec79"),
        "t10k-labels-idx1-ubyte.gz": (5148, "bb300cfdad3c16e7a12a480ee83cd310"),
    },
    "cifar10": {
        "cifar-10-binary.tar.gz": (170052171, "c32a1d4ab5d03f1284b67883e8d87530"),
    },
}

_VERIFY = ("auto", True, False)


def _md5(path: str) -> str:
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _verify(path: str, dataset: str, verify: Any, fname: str) -> None:
    """Check ``path`` against the published digest of its name (see the readers' ``verify``)."""
    if verify is False:
        return
    name = os.path.basename(path)
    official = OFFICIAL_FILES[dataset].get(name)
    size = os.path.getsize(path)
    if official is None:
        if verify is True:
            raise ValueError(f"{fname}: {path!r} has no published checksum (only the official compressed files "
                             f"{sorted(OFFICIAL_FILES[dataset])} have one); pass verify='auto' or False to read it")
        return
    want_size, want_md5 = official
    if verify == "auto" and size != want_size:
        return  # not the official file (a subset, a test file): read it, structure checked
    got = _md5(path)
    if size != want_size or got != want_md5:
        raise ValueError(f"{fname}: {path!r} does not match the official {name} ({want_size} bytes, MD5 "
                         f"{want_md5}): it has {size} bytes, MD5 {got}. The file is corrupt or altered; "
                         f"download it again (docs/data.md)")


def _check_verify(verify: Any, fname: str) -> Any:
    if not any(verify is v or (isinstance(verify, str) and verify == v) for v in _VERIFY):
        raise ValueError(f"{fname}: verify must be 'auto', True or False, got {verify!r}")
    return verify


def _read_all(f: Any, nbytes: int, path: str, fname: str, what: str) -> bytearray:
    """Exactly ``nbytes`` from ``f`` (in chunks, so a lying header costs no memory), and nothing more."""
    buf = bytearray()
    while len(buf) < nbytes:
        chunk = f.read(min(1 << 24, nbytes - len(buf)))
        if not chunk:
            raise ValueError(f"{fname}: {path!r} is truncated: {what} needs {nbytes} bytes of data, got {len(buf)}")
        buf += chunk
    if f.read(1):
        raise ValueError(f"{fname}: {path!r} has data beyond the {nbytes} bytes that {what} needs")
    return buf


#: the most bytes a header may claim (an idx file of MNIST's 60,000 images holds 47 MB)
_MAX_IDX_BYTES = 1 << 34


def _read_idx(path: str, ndim: int, fname: str) -> tuple[bytearray, tuple[int, ...]]:
    """An idx file of unsigned bytes (``0x00 0x00 0x08 ndim`` then big-endian int32 dimensions)."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            head = f.read(4 + 4 * ndim)
            if len(head) < 4 or head[:2] != b"\x00\x00":
                raise ValueError(f"{fname}: {path!r} is not an idx file (its first bytes are {bytes(head[:4])!r}, "
                                 f"expected 00 00 08 {ndim:02x})")
            if head[2] != 0x08:
                raise ValueError(f"{fname}: {path!r} holds idx type code 0x{head[2]:02x}; expected 0x08 "
                                 "(unsigned bytes), as MNIST and Fashion-MNIST")
            if head[3] != ndim or len(head) < 4 + 4 * ndim:
                raise ValueError(f"{fname}: {path!r} is an idx file of {head[3]} dimensions, expected {ndim}")
            shape = struct.unpack(f">{ndim}I", head[4:])
            nbytes = 1
            for s in shape:
                nbytes *= s
            if nbytes > _MAX_IDX_BYTES:
                raise ValueError(f"{fname}: {path!r} claims shape {shape} ({nbytes} bytes), more than any such data "
                                 "set; the file is corrupt")
            return _read_all(f, nbytes, path, fname, f"shape {shape}"), tuple(shape)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise ValueError(f"{fname}: cannot read {path!r}: {e}") from None


def _find(root: str, stem: str, fname: str) -> str:
    for name in (stem + ".gz", stem):
        p = os.path.join(root, name)
        if os.path.isfile(p):
            return p
    raise FileNotFoundError(f"{fname}: neither {stem}.gz nor {stem} is in {root!r}; docs/data.md says where to "
                            "get the files")


def _uint8(buf: Any, shape: tuple[int, ...]) -> Tensor:
    be = get_backend()
    n = 1
    for s in shape:
        n *= s
    h = be.empty(shape, D.uint8) if n == 0 else be.from_buffer(buf, D.uint8, shape, 0)
    return wrap(h, D.uint8, be)


def _labels(buf: Any, n: int, path: str, fname: str) -> Tensor:
    lab = _uint8(buf, (n,))
    if n and builtins.max(buf) > 9:
        raise ValueError(f"{fname}: {path!r} holds a label of {builtins.max(buf)}; these data sets have labels "
                         "0..9 (the file is corrupt)")
    return lab.astype(D.int32)


def _split(split: Any, fname: str) -> str:
    if split not in ("train", "test"):
        raise ValueError(f"{fname}: split must be 'train' or 'test', got {split!r}")
    return split


def _root(root: Any, fname: str) -> str:
    try:
        r = os.fspath(root)
    except TypeError:
        raise TypeError(f"{fname}: root must be a directory path, got {type(root).__name__}") from None
    if isinstance(r, bytes):
        r = os.fsdecode(r)
    if not os.path.isdir(r):
        raise FileNotFoundError(f"{fname}: {r!r} is not a directory")
    return r


def _idx_pair(root: Any, split: str, verify: Any, dataset: str, fname: str) -> tuple[Tensor, Tensor]:
    r = _root(root, fname)
    _split(split, fname)
    _check_verify(verify, fname)
    prefix = "train" if split == "train" else "t10k"
    ip = _find(r, f"{prefix}-images-idx3-ubyte", fname)
    lp = _find(r, f"{prefix}-labels-idx1-ubyte", fname)
    for p in (ip, lp):
        _verify(p, dataset, verify, fname)
    ibuf, ishape = _read_idx(ip, 3, fname)
    lbuf, lshape = _read_idx(lp, 1, fname)
    if ishape[0] != lshape[0]:
        raise ValueError(f"{fname}: {ip!r} holds {ishape[0]} images but {lp!r} holds {lshape[0]} labels")
    return _uint8(ibuf, ishape), _labels(lbuf, lshape[0], lp, fname)


def mnist(root: Any, split: str = "train", *, verify: Any = "auto") -> tuple[Tensor, Tensor]:
    """MNIST's handwritten digits from the idx files in ``root`` (gzipped or not).

    Reads ``train-images-idx3-ubyte[.gz]`` and ``train-labels-idx1-ubyte[.gz]`` (or ``t10k-...``
    for ``split="test"``); a ``.gz`` file is preferred when both exist.

    Args:
        root: the directory holding the files.
        split: ``"train"`` (60,000 images) or ``"test"`` (10,000).
        verify: ``"auto"`` (default): a file with an official name *and* the official size must
            have the published MD5 (others, such as subsets or uncompressed files, are read with
            their structure checked); ``True``: every file must be an official compressed file with
            its published MD5; ``False``: no checksum.
    Returns:
        ``(images, labels)``: uint8 images of shape ``(N, 28, 28)`` (0 = background) and int32
        labels of shape ``(N,)`` in ``0..9``.
    Raises:
        FileNotFoundError: if ``root`` or a file is missing.
        ValueError: for a checksum mismatch, a file that is not an idx file of unsigned bytes of
            the expected rank, a truncated file or one with trailing data, labels above 9, image
            and label counts that differ, or a bad ``split``/``verify``.

    >>> import gzip, os, struct, tempfile, runetensor as rt
    >>> d = tempfile.mkdtemp()
    >>> with gzip.open(os.path.join(d, "t10k-images-idx3-ubyte.gz"), "wb") as f:
    ...     _ = f.write(struct.pack(">4B3I", 0, 0, 8, 3, 2, 28, 28) + bytes(2 * 784))
    >>> with open(os.path.join(d, "t10k-labels-idx1-ubyte"), "wb") as f:
    ...     _ = f.write(struct.pack(">4BI", 0, 0, 8, 1, 2) + bytes([7, 2]))
    >>> x, y = rt.datasets.mnist(d, "test")
    >>> x.shape, x.dtype, rt.to_array(y)
    ((2, 28, 28), rt.uint8, [7, 2])
    """
    return _idx_pair(root, split, verify, "mnist", "mnist")


def fashion_mnist(root: Any, split: str = "train", *, verify: Any = "auto") -> tuple[Tensor, Tensor]:
    """Fashion-MNIST (Zalando's article images) from the idx files in ``root``: the same format and names as MNIST.

    Labels: 0 T-shirt/top, 1 trouser, 2 pullover, 3 dress, 4 coat, 5 sandal, 6 shirt, 7 sneaker,
    8 bag, 9 ankle boot.

    Args:
        root: the directory holding the files (keep it apart from MNIST's: the names are the same).
        split: ``"train"`` (60,000 images) or ``"test"`` (10,000).
        verify: ``"auto"``, True or False, as :func:`mnist` (checked against Fashion-MNIST's digests).
    Returns:
        ``(images, labels)``: uint8 ``(N, 28, 28)`` and int32 ``(N,)``.
    Raises:
        FileNotFoundError, ValueError: as :func:`mnist`.

    >>> import os, struct, tempfile, runetensor as rt
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "train-images-idx3-ubyte"), "wb") as f:
    ...     _ = f.write(struct.pack(">4B3I", 0, 0, 8, 3, 1, 28, 28) + bytes(range(256)) * 3 + bytes(16))
    >>> with open(os.path.join(d, "train-labels-idx1-ubyte"), "wb") as f:
    ...     _ = f.write(struct.pack(">4BI", 0, 0, 8, 1, 1) + bytes([9]))
    >>> x, y = rt.datasets.fashion_mnist(d)
    >>> int(x[0, 9, 3]), rt.to_array(y)
    (255, [9])
    """
    return _idx_pair(root, split, verify, "fashion_mnist", "fashion_mnist")


_CIFAR_DIR = "cifar-10-batches-bin"
_CIFAR_TAR = "cifar-10-binary.tar.gz"
_CIFAR_REC = 1 + 3 * 32 * 32
_CIFAR_FILES = {"train": [f"data_batch_{i}.bin" for i in range(1, 6)], "test": ["test_batch.bin"]}


def _cifar_records(buf: Any, where: str, fname: str) -> tuple[Tensor, Tensor]:
    if len(buf) % _CIFAR_REC:
        raise ValueError(f"{fname}: {where} has {len(buf)} bytes, not a whole number of {_CIFAR_REC}-byte records "
                         "(1 label byte and 3x32x32 pixels); the file is corrupt or truncated")
    n = len(buf) // _CIFAR_REC
    rec = _uint8(buf, (n, _CIFAR_REC))
    lab = rec[:, 0]
    if n and int(rt.max(lab)) > 9:
        raise ValueError(f"{fname}: {where} holds a label of {int(rt.max(lab))}; CIFAR-10's labels are 0..9 "
                         "(the file is corrupt)")
    return rt.reshape(rec[:, 1:].contiguous(), [n, 3, 32, 32]), lab.astype(D.int32)


def cifar10(root: Any, split: str = "train", *, verify: Any = "auto") -> tuple[Tensor, Tensor]:
    """CIFAR-10 from its binary version in ``root``: the batch files, or the official archive read in place.

    Looks for ``data_batch_1.bin`` .. ``data_batch_5.bin`` (``split="train"``) or
    ``test_batch.bin`` (``"test"``) in ``root/cifar-10-batches-bin`` or ``root`` itself; failing
    that, reads those members straight out of ``root/cifar-10-binary.tar.gz`` (regular members
    under their official names only; nothing is extracted to disk).  Each record is one label
    byte then 3072 pixel bytes (the red, green and blue 32x32 planes, rows top to bottom).
    The Python (pickled) version is not read: unpickling runs code from the file.

    Args:
        root: the directory holding ``cifar-10-batches-bin/`` or ``cifar-10-binary.tar.gz``.
        split: ``"train"`` (50,000 images) or ``"test"`` (10,000).
        verify: for the archive, as :func:`mnist`'s (the published MD5 of
            ``cifar-10-binary.tar.gz``); the batch files have no published digests, so their
            structure is checked (whole records, labels 0..9) and, with ``verify=True``, only the
            archive is accepted.
    Returns:
        ``(images, labels)``: uint8 images of shape ``(N, 3, 32, 32)`` (NCHW) and int32 labels
        ``(N,)`` (0 airplane, 1 automobile, 2 bird, 3 cat, 4 deer, 5 dog, 6 frog, 7 horse, 8 ship,
        9 truck).
    Raises:
        FileNotFoundError: if neither the batch files nor the archive are there.
        ValueError: for a checksum mismatch, a damaged archive, a size that is not whole
            records, labels above 9, or a bad ``split``/``verify``.

    >>> import os, tempfile, runetensor as rt
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "test_batch.bin"), "wb") as f:
    ...     _ = f.write(bytes([3]) + bytes(1024) + bytes([255]) * 1024 + bytes(1024))
    >>> x, y = rt.datasets.cifar10(d, "test")
    >>> x.shape, rt.to_array(y), int(x[0, 1, 5, 5])
    ((1, 3, 32, 32), [3], 255)
    """
    fname = "cifar10"
    r = _root(root, fname)
    names = _CIFAR_FILES[_split(split, fname)]
    _check_verify(verify, fname)
    for d in (os.path.join(r, _CIFAR_DIR), r):
        paths = [os.path.join(d, n) for n in names]
        if verify is not True and all(os.path.isfile(p) for p in paths):
            parts = []
            for p in paths:
                with open(p, "rb") as f:
                    parts.append(_cifar_records(f.read(), repr(p), fname))
            break
    else:
        tar = os.path.join(r, _CIFAR_TAR)
        if not os.path.isfile(tar):
            where = f"{os.path.join(r, _CIFAR_DIR)!r} or {r!r}"
            raise FileNotFoundError(f"{fname}: {', '.join(names)} not found in {where}, and no {_CIFAR_TAR} in "
                                    f"{r!r}; docs/data.md says where to get the files")
        _verify(tar, "cifar10", verify, fname)
        parts = []
        try:
            with tarfile.open(tar, "r:gz") as tf:
                for n in names:
                    try:
                        m = tf.getmember(f"{_CIFAR_DIR}/{n}")
                    except KeyError:
                        raise ValueError(f"{fname}: {tar!r} has no member {_CIFAR_DIR}/{n}") from None
                    if not m.isfile():
                        raise ValueError(f"{fname}: {tar!r}: {m.name} is not a regular file")
                    f = tf.extractfile(m)
                    assert f is not None
                    parts.append(_cifar_records(_read_all(f, m.size, tar, fname, m.name), f"{tar!r}: {m.name}", fname))
        except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile) as e:
            raise ValueError(f"{fname}: cannot read {tar!r}: {e}") from None
    if len(parts) == 1:
        return parts[0]
    return rt.concatenate([p[0] for p in parts], axis=0), rt.concatenate([p[1] for p in parts], axis=0)
