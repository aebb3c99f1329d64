r"""Dataset files read so that they cannot run code or exhaust memory.

Several benchmarks ship raw files as Python pickles (ZINC's
``{train,val,test}.pickle``, the LRGB superpixel pickles, the Peptides split
file) or as ``torch.save`` files (``MNIST_v2.pt``, LRGB's ``train.pt``,
PCQM4Mv2's ``split_dict.pt``), and PyG / OGB dataset classes read them, and
their processed caches, with :func:`pickle.load` / :func:`torch.load`: a
crafted file runs code when unpickled (``torch_geometric.io.fs.torch_load``
even retries a refused file with ``weights_only=False``).

One reader serves every such file: :func:`graphgps_ext.safe_load.load`
(plain data only, sizes bounded before allocation). This project's own
readers call it through :func:`load_file`; while a dataset class runs,
:func:`guarded` makes :func:`torch.load` and :func:`pickle.load` that
same reader, so the classes' own loading (raw files, processed files,
``pre_transform.pt``) never reaches another unpickler.
:class:`~graphgps_ext.loader.integrity.ProcessedCache` holds the guard
around every dataset class it builds.

A file that asks for more than plain data raises :class:`UnsafeDataError`;
one that would build more than its size allows (a 30 KB pickle claiming a
10^9-element array, ``bytearray(10**12)``, a list repeated through shared
references, a compressed record or a gzip file that expands a thousandfold)
raises :class:`OversizeDataError`; both are ``main.py`` exit code 5 and name
the file. :func:`check_file` looks at a raw file before any loader reads it:
empty, a gzip stream expanding past :func:`~graphgps_ext.safe_load.budget_for`
its size with :data:`GZIP_FACTOR`, a zip archive declaring more than that.
"""
import contextlib
import gzip
import os
import pickle
import threading
import zipfile
import zlib
from typing import Any, Callable, Iterable, Iterator, List, Optional

import torch

from graphgps_ext.loader.errors import DataError
from graphgps_ext.safe_load import (FLOOR, CorruptPickleError,
                                    OversizePickleError, PickleError,
                                    UnsafePickleError, human)
from graphgps_ext.safe_load import load as _load

#: A gzip file may decompress to FLOOR + this many times its size (text and
#: csv tables of the benchmarks compress 3 to 10 times).
GZIP_FACTOR = 64


class UnsafeDataError(DataError):
    """A data file asks for Python objects beyond plain data: reading it
    could run code, so it is refused (``main.py`` exit code 5)."""

    def __init__(self, message: str, path: str = ''):
        super().__init__(message)
        self.path = path


class OversizeDataError(DataError):
    """A data file would build far more than its size allows: refused
    before the memory is taken (``main.py`` exit code 5)."""

    def __init__(self, message: str, path: str = ''):
        super().__init__(message)
        self.path = path


def _what(dataset: str) -> str:
    return f'{dataset}: ' if dataset else ''


def refusal(err: PickleError, dataset: str = '') -> DataError:
    """The :class:`~graphgps_ext.loader.errors.DataError` for a refused
    file (unsafe or oversize)."""
    if isinstance(err, UnsafePickleError):
        return UnsafeDataError(
            f'{_what(dataset)}refused to read {err.path}: {err.why}. Reading it '
            'could run code, so it was not unpickled. A genuine data file holds '
            'only arrays, tensors and plain values: replace it with the original '
            "file from the dataset's download (or restore it from a copy you "
            'trust); processed data is rebuilt at the next run.', err.path)
    return OversizeDataError(
        f'{_what(dataset)}refused to read {err.path}: {err.why}. Replace it with '
        "the original file from the dataset's download; processed data is "
        'rebuilt at the next run.', err.path)


def load_file(source, dataset: str = '') -> Any:
    """The contents of a pickle or ``torch.save`` file (a path or a binary
    file object), read by :func:`graphgps_ext.safe_load.load`, after the
    ``on_read`` of every :func:`guarded` held has seen its path. Raises
    :class:`UnsafeDataError` / :class:`OversizeDataError` naming the file;
    a truncated or inconsistent file raises
    :class:`~graphgps_ext.safe_load.CorruptPickleError`."""
    path = _path_of(source)
    if path is not None:
        for hook in list(_ON_READ):
            hook(path)
    try:
        return _load(source)
    except (UnsafePickleError, OversizePickleError) as err:
        raise refusal(err, dataset) from None


def load_pickle(path: str, dataset: str = '') -> Any:
    """:func:`load_file` of the raw pickle ``path``."""
    return load_file(path, dataset)


def _gzip_size(path: str, limit: int) -> int:
    """Bytes the gzip file decompresses to, counting at most ``limit + 1``
    (never holding more than a block in memory)."""
    total = 0
    with gzip.open(path, 'rb') as f:
        while total <= limit:
            block = f.read(1 << 20)
            if not block:
                break
            total += len(block)
    return total


def gzip_limit(size: int) -> int:
    """The bytes a gzip file of ``size`` bytes may decompress to."""
    return FLOOR + GZIP_FACTOR * size


def read_gzip(path: str, dataset: str = '') -> bytes:
    """The decompressed content of ``path``, refused
    (:class:`OversizeDataError`) past :func:`gzip_limit` of its size before
    more is held."""
    size = os.path.getsize(path)
    limit = gzip_limit(size)
    out = bytearray()
    with gzip.open(path, 'rb') as f:
        while True:
            block = f.read(1 << 20)
            if not block:
                return bytes(out)
            out += block
            if len(out) > limit:
                raise _gzip_refusal(path, size, limit, dataset)


def _gzip_refusal(path: str, size: int, limit: int, dataset: str) -> DataError:
    return OversizeDataError(
        f'{_what(dataset)}refused to read {path}: a {human(size)} gzip file that '
        f'decompresses to more than {human(limit)} (at most {human(FLOOR)} + '
        f'{GZIP_FACTOR} x its size); a genuine file of this size holds far less. '
        "Replace it with the original file from the dataset's download.", path)


def check_file(path: str, dataset: str = '') -> Optional[str]:
    """Look at the raw file ``path`` before a loader reads it. Returns why
    it cannot be read (empty, a damaged gzip stream), for the caller to
    report as corrupt, else ``None``; raises :class:`OversizeDataError` for
    a gzip file or zip archive that expands past its bound. Its pickled
    content is read (and refused when unsafe) by whoever reads the file,
    through :func:`load_file` or :func:`guarded`."""
    try:
        size = os.path.getsize(path)
        with open(path, 'rb') as f:
            head = f.read(4)
    except OSError:
        return None
    if size == 0:
        return f'{path} is empty'
    if head[:2] == b'\x1f\x8b':
        limit = gzip_limit(size)
        try:
            if _gzip_size(path, limit) > limit:
                raise _gzip_refusal(path, size, limit, dataset)
        except (OSError, EOFError, zlib.error) as err:
            return f'{path} is truncated or not gzip data ({type(err).__name__}: {err})'
    elif head == b'PK\x03\x04':
        try:
            with zipfile.ZipFile(path) as archive:
                declared = sum(i.file_size for i in archive.infolist())
        except (zipfile.BadZipFile, OSError) as err:
            return f'{path} is a damaged zip archive ({err})'
        limit = gzip_limit(size)
        if declared > limit:
            raise OversizeDataError(
                f'{_what(dataset)}refused to read {path}: a {human(size)} archive '
                f'declaring {human(declared)} of content (at most {human(limit)}). '
                "Replace it with the original file from the dataset's download.",
                path)
    return None


def check_files(paths: Iterable[str], dataset: str = '') -> Optional[str]:
    """:func:`check_file` on each of ``paths`` (files only); returns the
    first problem."""
    for path in sorted(p for p in paths if os.path.isfile(p)):
        problem = check_file(path, dataset)
        if problem:
            return problem
    return None


_GUARD = threading.RLock()
_ON_READ: List[Callable[[str], None]] = []


def _path_of(source) -> Optional[str]:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    name = getattr(source, 'name', None) or getattr(source, 'path', None)
    return name if isinstance(name, str) else None


@contextlib.contextmanager
def guarded(dataset: str = '', on_read: Optional[Callable[[str], None]] = None
            ) -> Iterator[None]:
    """While held, :func:`torch.load` and :func:`pickle.load` are
    :func:`load_file` (whatever ``weights_only`` they are given): a dataset
    class's own loading reads through the one reader. ``on_read(path)`` is
    called before each file :func:`load_file` reads (the processed cache
    checks the file's content hash there). Process-wide while held: other
    threads' calls get the same reader."""
    def read(source, *args, **kwargs):
        return load_file(source, dataset)

    with _GUARD:
        saved = torch.load, pickle.load
        torch.load, pickle.load = read, read
        if on_read is not None:
            _ON_READ.append(on_read)
        try:
            yield
        finally:
            torch.load, pickle.load = saved
            if on_read is not None:
                _ON_READ.remove(on_read)


__all__ = ['UnsafeDataError', 'OversizeDataError', 'CorruptPickleError',
           'GZIP_FACTOR', 'refusal', 'load_file', 'load_pickle', 'read_gzip',
           'gzip_limit', 'check_file', 'check_files', 'guarded']
