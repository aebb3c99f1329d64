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
holds a dict ``{attribute: (values, ptr)}`` of tensors, loaded with
``weights_only=True``. Writes go to a temporary file that is renamed, so an
interrupted run never leaves a truncated cache.
"""
import hashlib
import json
import os
from typing import Dict, Optional, Tuple

import torch
from torch import Tensor

# 2: Laplacian eigenvectors in the canonical basis of their eigenspaces.
CACHE_VERSION = 2

Entry = Dict[str, Tuple[Tensor, Tensor]]


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
        path = self.path(kind, key)
        if path is None or not os.path.exists(path):
            return None
        return torch.load(path, weights_only=True)

    def save(self, kind: str, key: str, entry: Entry):
        path = self.path(kind, key)
        if path is None:
            return
        os.makedirs(self.cache_dir, exist_ok=True)
        tmp = f'{path}.tmp{os.getpid()}'
        torch.save(entry, tmp)
        os.replace(tmp, path)
