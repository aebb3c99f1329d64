r"""On-disk cache of precomputed encodings.

One file per encoding kind::

    <cache_dir>/<kind>-<key>.pt       e.g.  processed/encodings/rwse-3f9c0a1b2d4e5f60.pt

``key`` = the first 16 hex digits of
``sha1(version, kind, params, structure fingerprint)`` where ``params`` are
exactly the parameters that change the values (e.g. ``{'times': [1..20]}``)
and the fingerprint hashes the dataset's node pointers and edges
(:meth:`~graphgps_ext.transform.dense.GraphStore.fingerprint`). Unchanged
parameters on the same data load the file; any change gives a new key and a
recompute (older files are left in place, so switching back is free). A file
holds a dict ``{attribute: (values, ptr)}`` of tensors, read by the
project's one reader of pickled files (:func:`graphgps_ext.safe_load.load`:
plain data only, sizes bounded). Writes are atomic
(:func:`graphgps_ext.files.atomic_write_bytes`), so an interrupted run never
leaves a truncated entry. An entry that
cannot be read or is not of that form (a damaged disk, a file written by
something else) is removed with a warning and recomputed.
"""
import contextlib
import hashlib
import json
import logging
import os
from typing import Optional

import torch
from torch import Tensor

from graphgps_ext import safe_load
from graphgps_ext.files import atomic_write_bytes
from graphgps_ext.transform.dense import Entry

# 2: Laplacian eigenvectors in the canonical basis of their eigenspaces.
CACHE_VERSION = 2

log = logging.getLogger(__name__)


def cache_key(kind: str, params: dict, fingerprint: str) -> str:
    blob = json.dumps({'v': CACHE_VERSION, 'kind': kind, 'params': params,
                       'data': fingerprint}, sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


class EncodingCache:
    """Load/save encodings under ``cache_dir`` (``None`` disables caching)."""

    def __init__(self, cache_dir: Optional[str]):
        self.cache_dir = cache_dir

    def path(self, kind: str, key: str) -> Optional[str]:
        if self.cache_dir is None:
            return None
        return os.path.join(self.cache_dir, f'{kind}-{key}.pt')

    def load(self, kind: str, key: str) -> Optional[Entry]:
        """The stored entry, or ``None`` (absent, unreadable or malformed: the
        file is then removed with a warning, so the caller recomputes it)."""
        path = self.path(kind, key)
        if path is None or not os.path.exists(path):
            return None
        try:
            entry = safe_load.load(path)
            check_entry(entry)
            return entry
        except Exception as err:  # noqa: BLE001 - any damage: recompute
            log.warning('encoding cache %s cannot be used (%s: %s); '
                        'recomputing it', path, type(err).__name__, err)
            with contextlib.suppress(OSError):
                os.remove(path)
            return None

    def save(self, kind: str, key: str, entry: Entry):
        path = self.path(kind, key)
        if path is None:
            return
        atomic_write_bytes(path, lambda f: torch.save(entry, f))


def check_entry(entry):
    """Raise ``ValueError`` unless ``entry`` is ``{attribute: (values,
    ptr)}`` with ``ptr`` a 1-D offset tensor from 0 to ``values.size(0)``."""
    if not isinstance(entry, dict) or not entry:
        raise ValueError('not a non-empty dict of attributes')
    for name, item in entry.items():
        if not (isinstance(item, (tuple, list)) and len(item) == 2
                and all(isinstance(t, Tensor) for t in item)):
            raise ValueError(f"'{name}' is not a (values, ptr) pair of tensors")
        values, ptr = item
        if ptr.dim() != 1 or ptr.numel() < 1 or int(ptr[0]) != 0 or \
                int(ptr[-1]) != values.size(0) or bool((ptr[1:] < ptr[:-1]).any()):
            raise ValueError(f"the offsets of '{name}' do not fit its "
                             f'{values.size(0)} rows')
