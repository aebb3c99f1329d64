r"""Raw data files that cannot run code when read.

Several benchmarks ship raw files as Python pickles (ZINC's
``{train,val,test}.pickle``, the LRGB superpixel pickles, the Peptides split
file) or in torch's zip format, and PyG's loaders read them with
``pickle.load`` / ``torch.load``: a crafted file runs code when unpickled.
Every such file goes through :func:`check_file` before any loader sees it
(:class:`~graphgps_ext.loader.integrity.ProcessedCache` checks the raw files
before it builds a dataset from them), and this project's own readers load
them with :func:`load_pickle`. Both unpickle with :class:`SafeUnpickler`, which
builds only

- the builtin containers and scalars (``dict``, ``list``, ``tuple``,
  ``set``, ``frozenset``, ``bytearray``, ``complex``, ``slice``, ``range``,
  ``collections.OrderedDict``);
- NumPy arrays, scalars and dtypes;
- torch tensors and storages (a nested serialized storage is read with
  ``torch.load(weights_only=True)``) and torch dtypes / sizes;

and refuses any other global without calling it, raising
:class:`UnsafeDataError` (``main.py`` exit code 5) that names the file and
the global. A file in torch's zip format is read with
``torch.load(weights_only=True)`` and the NumPy part of the same allow-list.
"""
import collections
import io
import os
import pickle
import warnings
from typing import Any, Dict, Iterable, Optional, Tuple

import numpy as np
import torch

from graphgps_ext.loader.errors import DataError

#: The first bytes of a pickle (protocol 2 or later) and of a zip archive.
PICKLE_MAGIC = b'\x80'
ZIP_MAGIC = b'PK\x03\x04'
#: Names of files read as pickles whatever their first bytes (protocols 0, 1).
PICKLE_SUFFIXES = ('.pickle', '.pkl', '.pt', '.pth')


class UnsafeDataError(DataError):
    """A raw data file asks for Python objects beyond plain data: reading it
    could run code, so it is refused (``main.py`` exit code 5)."""


def _storage_from_bytes(data: bytes):
    # torch.storage._load_from_bytes, without its weights_only=False.
    return torch.load(io.BytesIO(data), weights_only=True)


def _numpy_globals() -> Dict[Tuple[str, str], Any]:
    core = getattr(np, '_core', None) or np.core
    out = {}
    for module in ('numpy.core.multiarray', 'numpy._core.multiarray'):
        out[(module, '_reconstruct')] = core.multiarray._reconstruct
        out[(module, 'scalar')] = core.multiarray.scalar
    out[('numpy', 'ndarray')] = np.ndarray
    out[('numpy', 'dtype')] = np.dtype
    for name in ('bool_', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16',
                 'uint32', 'uint64', 'float16', 'float32', 'float64',
                 'complex64', 'complex128'):
        out[('numpy', name)] = getattr(np, name)
    for kind in {type(np.dtype(t)) for t in (np.bool_, np.int8, np.int16, np.int32,
                                             np.int64, np.uint8, np.uint16, np.uint32,
                                             np.uint64, np.float16, np.float32,
                                             np.float64, np.complex64, np.complex128)}:
        out[('numpy.dtypes', kind.__name__)] = kind
    return out


def _torch_globals() -> Dict[Tuple[str, str], Any]:
    out = {('torch._utils', name): getattr(torch._utils, name)
           for name in ('_rebuild_tensor', '_rebuild_tensor_v2', '_rebuild_parameter')
           if hasattr(torch._utils, name)}
    out[('torch.storage', '_load_from_bytes')] = _storage_from_bytes
    out[('torch', 'Size')] = torch.Size
    for name in dir(torch):
        value = getattr(torch, name, None)
        if isinstance(value, torch.dtype):
            out[('torch', name)] = value
        elif name.endswith('Storage') and isinstance(value, type):
            out[('torch', name)] = value
    return out


def allowed_globals() -> Dict[Tuple[str, str], Any]:
    """``{(module, name): object}`` that :class:`SafeUnpickler` builds."""
    out = {('builtins', t.__name__): t for t in (
        dict, list, tuple, set, frozenset, bytearray, bytes, str, int, float,
        bool, complex, slice, range)}
    out[('__builtin__', 'set')] = set  # protocol-2 pickles of Python 2
    out[('collections', 'OrderedDict')] = collections.OrderedDict
    out[('_codecs', 'encode')] = _encode  # bytes in protocol-2 pickles
    out.update(_numpy_globals())
    out.update(_torch_globals())
    return out


def _encode(text: str, encoding: str = 'utf-8') -> bytes:
    return text.encode(encoding)


class SafeUnpickler(pickle.Unpickler):
    """A :class:`pickle.Unpickler` that builds only :func:`allowed_globals`
    (plain data) and raises :class:`pickle.UnpicklingError` for any other
    global, before it is imported or called."""
    _allowed: Dict[Tuple[str, str], Any] = {}

    def find_class(self, module: str, name: str):
        if not SafeUnpickler._allowed:
            SafeUnpickler._allowed = allowed_globals()
        found = SafeUnpickler._allowed.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f'global {module}.{name} is not allowed')
        return found

    def persistent_load(self, pid):
        raise pickle.UnpicklingError('persistent ids are not allowed in a raw pickle')


def _refuse(path: str, why: str, dataset: str = '') -> UnsafeDataError:
    what = f'{dataset}: ' if dataset else ''
    return UnsafeDataError(
        f'{what}refused to read {path}: {why}. Reading it could run code, so it '
        'was not unpickled. A genuine raw file holds only arrays, tensors and '
        'plain values: replace it with the original file from the dataset\'s '
        'download (or restore it from a copy you trust); the processed data is '
        'rebuilt at the next run.')


def load_pickle(path: str, dataset: str = '') -> Any:
    """The contents of the pickle ``path``, read by :class:`SafeUnpickler`.
    Raises :class:`UnsafeDataError` (naming ``path`` and the global) for a
    file that asks for anything beyond plain data; other failures (a
    truncated file) raise as :mod:`pickle` raises them."""
    with open(path, 'rb') as f:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                return SafeUnpickler(f).load()
        except pickle.UnpicklingError as err:
            if 'is not allowed' in str(err):
                raise _refuse(path, f'it asks for {str(err).split(" is not")[0]}',
                              dataset) from None
            raise


def _zip_check(path: str, dataset: str):
    # torch's weights-only unpickler, with the NumPy globals of the allow-list
    # (OGB's split_dict.pt holds NumPy arrays in torch's zip format).
    numpy_globals = [(obj, f'{module}.{name}')
                     for (module, name), obj in _numpy_globals().items()]
    try:
        with warnings.catch_warnings(), torch.serialization.safe_globals(numpy_globals):
            warnings.simplefilter('ignore')
            torch.load(path, map_location='cpu', weights_only=True)
    except pickle.UnpicklingError as err:
        import re
        found = re.search(r'GLOBAL ([\w.]+)', str(err))
        raise _refuse(path, f'it asks for {found.group(1) if found else "Python objects"}'
                      ' (torch zip format)', dataset) from None
    except Exception:  # noqa: BLE001 - truncated or foreign: the loader reports it
        return


def check_file(path: str, dataset: str = '') -> Optional[str]:
    """Refuse (:class:`UnsafeDataError`) the raw file ``path`` if it is a
    pickle or a torch zip file that asks for more than plain data. Returns
    why a pickle cannot be read (empty, truncated), for the caller to report
    as corrupt at once, else ``None``. Files in other formats (text,
    csv.gz) pass unread."""
    try:
        with open(path, 'rb') as f:
            head = f.read(4)
    except OSError:
        return None
    if head.startswith(ZIP_MAGIC):
        _zip_check(path, dataset)
    elif head.startswith(PICKLE_MAGIC) or path.endswith(PICKLE_SUFFIXES):
        try:
            load_pickle(path, dataset)
        except UnsafeDataError:
            raise
        except Exception as err:  # noqa: BLE001 - truncated or not a pickle
            what = 'is empty' if not head else 'is truncated or not a pickle'
            return f'{path} {what} ({type(err).__name__}: {err})'
    return None


def check_files(paths: Iterable[str], dataset: str = '') -> Optional[str]:
    """:func:`check_file` on each of ``paths`` (files only), smallest first
    (a crafted or empty file is usually small: it is found before the large
    ones are read); returns the first unreadable pickle's problem."""
    files = [p for p in paths if os.path.isfile(p)]
    for path in sorted(files, key=os.path.getsize):
        problem = check_file(path, dataset)
        if problem:
            return problem
    return None
