r"""Processed data that is complete, checked and built from the raw files at hand.

PyG / OGB dataset classes turn raw files into ``processed/`` files once and
reuse them whenever they exist: an interrupted processing run, a truncated
raw file or a raw file replaced later leaves a cache that fails far from its
cause, or silently holds other data. :class:`ProcessedCache` wraps the
construction of such a class (:meth:`ProcessedCache.load`):

1. under a lock (``processed/.lock``: concurrent runs on one dataset folder
   process it once), it compares a *fingerprint* of the raw files (SHA-1 of
   their content) with the one stamped in ``processed/integrity.json``. A
   raw file whose size and mtime equal the stamp's is taken as unchanged;
   otherwise its SHA-1 is computed (once per process), so a restored or
   copied file with a new mtime but the same content keeps the cache.
   Processed files built from other raw files, or written without a stamp
   (an interrupted run), are removed, with a warning;
2. it builds the dataset (PyG processes what is missing) inside
   :func:`~graphgps_ext.loader.safe_pickle.guarded`: every file the class
   reads -- raw pickles and torch files, processed files -- goes through the
   one reader of :mod:`graphgps_ext.safe_load` (plain data only, sizes
   bounded), and every *processed* file is hashed (SHA-1 of its content,
   never trusted on size and mtime) before it is read: a file whose hash
   differs from the stamp's was changed after it was written and is rebuilt,
   with a warning. Loading is safe whatever the stamp says (a rewritten
   ``integrity.json`` can make a replaced file pass the hash, never run
   code); a processed file that the reader refuses, or that cannot be read,
   is rebuilt once, with a warning. Raw files are looked at first
   (:func:`~graphgps_ext.loader.safe_pickle.check_files`: empty, a gzip or
   zip expanding past its bound) and the class's output is checked
   (:func:`check_storage`: every stored attribute covers the same graphs,
   slices are consistent, edges point to nodes of their own graph);
3. only then it writes the stamp (atomically) with the SHA-1 of every
   processed file (the hash of what was read, for the files read): they are
   *committed*.

Raw files that cannot be processed, or whose data fail the checks, raise
:class:`~graphgps_ext.loader.errors.DataCorruptError`: one paragraph naming
the dataset, the error, the raw files (with sizes), where they belong and the
URL to fetch them from. The processed files of the failed attempt are
removed, so the next run starts clean.
"""
import contextlib
import errno
import hashlib
import json
import logging
import os
import os.path as osp
import shutil
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
from torch_geometric.data import InMemoryDataset

from graphgps_ext.files import ResultsWriteError, write_text
from graphgps_ext.loader.errors import DataCorruptError, DataError
from graphgps_ext.loader.offline import require_files
from graphgps_ext.loader.safe_pickle import (OversizeDataError,
                                             UnsafeDataError, check_files,
                                             guarded)

STAMP = 'integrity.json'
LOCK = '.lock'
STAMP_VERSION = 1
log = logging.getLogger(__name__)

# (path, device, inode, size, mtime_ns, ctime_ns) -> SHA-1 of the content,
# for this process (ctime cannot be set back by a user: a rewritten file
# with its old size and mtime is hashed again).
_SHA1: Dict[tuple, str] = {}


def sha1_of(path: str) -> str:
    """SHA-1 of the file's content (memoised per process on the file's
    identity, size, mtime and ctime)."""
    st = os.stat(path)
    key = (osp.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
           st.st_ctime_ns)
    if key not in _SHA1:
        h = hashlib.sha1()
        with open(path, 'rb') as f:
            for block in iter(lambda: f.read(1 << 22), b''):
                h.update(block)
        _SHA1[key] = h.hexdigest()
    return _SHA1[key]


def file_state(paths: Dict[str, str], known: Dict[str, dict]) -> Dict[str, dict]:
    """``{name: {size, mtime_ns, sha1}}`` of the files ``{name: path}``; the
    SHA-1 is taken from ``known`` (a stamp) when size and mtime match it."""
    state = {}
    for name, path in paths.items():
        st = os.stat(path)
        old = known.get(name) or {}
        same = old.get('size') == st.st_size and old.get('mtime_ns') == st.st_mtime_ns
        state[name] = dict(size=st.st_size, mtime_ns=st.st_mtime_ns,
                           sha1=old['sha1'] if same and 'sha1' in old else sha1_of(path))
    return state


class CacheChanged(Exception):
    """A committed processed file whose content no longer has its stamped
    SHA-1 (rebuilt)."""

    def __init__(self, name: str):
        super().__init__(f'processed file(s) {name} changed since they were written')
        self.name = name


class StorageError(ValueError):
    """Processed data that is internally inconsistent; ``attribute``: the
    stored attribute at fault, if one is."""

    def __init__(self, message: str, attribute: Optional[str] = None):
        super().__init__(message)
        self.attribute = attribute


def _graph_counts(slices: Dict[str, torch.Tensor]) -> Dict[str, int]:
    return {k: int(s.numel()) - 1 for k, s in slices.items()
            if isinstance(s, torch.Tensor)}


def check_storage(dataset: InMemoryDataset):
    r"""Raise :class:`StorageError` unless the collated storage of
    ``dataset`` is consistent: at least one graph; every attribute's slices
    start at 0, never decrease, end at the attribute's length and cover the
    same number of graphs; every edge ``(i, j)`` of a graph with :math:`n`
    nodes has :math:`0 \le i, j < n`. Vectorised (no loop over graphs)."""
    from graphgps_ext.loader.storage import node_slices
    data, slices = dataset._data, dataset.slices
    if slices is None:  # a single graph
        ei = data.get('edge_index')
        if ei is not None and ei.numel() and (
                int(ei.min()) < 0 or int(ei.max()) >= data.num_nodes):
            raise StorageError("edge_index points outside the graph's "
                               f'{data.num_nodes} nodes', 'edge_index')
        return
    counts = _graph_counts(slices)
    if len(set(counts.values())) > 1:
        raise StorageError('the stored attributes cover different numbers of '
                           'graphs: ' + ', '.join(f'{k} {n}' for k, n in counts.items()),
                           min(counts, key=counts.get))
    if not counts or next(iter(counts.values())) < 1:
        raise StorageError('the processed data holds no graph')
    for key, s in slices.items():
        value = data[key]
        if not isinstance(s, torch.Tensor) or not isinstance(value, torch.Tensor):
            continue
        dim = data.__cat_dim__(key, value)
        dim = dim + value.dim() if dim < 0 else dim
        if int(s[0]) != 0 or bool((s[1:] < s[:-1]).any()) or \
                int(s[-1]) != value.size(dim):
            raise StorageError(f"the slices of '{key}' do not partition its "
                               f'{value.size(dim)} entries', key)
    ei = data.get('edge_index')
    if ei is not None and 'edge_index' in slices and ei.numel():
        nodes = node_slices(dataset)
        n_per = nodes[1:] - nodes[:-1]
        e_slices = slices['edge_index']
        graph = torch.repeat_interleave(torch.arange(n_per.numel()),
                                        e_slices[1:] - e_slices[:-1])
        bad = (ei < 0).any(0) | (ei >= n_per[graph]).any(0)
        if bool(bad.any()):
            g = int(graph[bad.nonzero()[0, 0]])
            raise StorageError(
                f'{int(bad.sum())} edges point outside their graph (first in '
                f'graph {g}, which has {int(n_per[g])} nodes)', 'edge_index')


def check_datasets(out: Any):
    """:func:`check_storage` on ``out``: a dataset, or a dict of them."""
    for ds in (out.values() if isinstance(out, dict) else [out]):
        if isinstance(ds, InMemoryDataset):
            check_storage(ds)


@dataclass
class RawFiles:
    """Where a dataset's raw files are and where they come from.

    Attributes:
        dataset: display name, e.g. ``"'NCI1' (PyG-TUDataset)"``.
        required: files that must exist (checked by :meth:`require`).
        inputs: files or folders (all files directly inside) the processed
            data is built from: their content is fingerprinted.
        urls: where to download them.
        folder: where they belong.
        how: how to unpack them there.
        roles: stored attribute -> the raw file it comes from (named when
            the checks fail on that attribute).
        validate: ``validate() -> problem or None``: the format's own checks
            of the raw files, run before they are processed.
    """
    dataset: str
    required: List[str]
    urls: List[str]
    folder: str
    how: str = ''
    inputs: List[str] = field(default_factory=list)
    roles: Dict[str, str] = field(default_factory=dict)
    validate: Optional[Callable[[], Optional[str]]] = None

    def require(self, cfg=None):
        """:func:`~graphgps_ext.loader.offline.require_files` on the
        required files (a download is allowed when online)."""
        require_files(self.required, dataset=self.dataset, urls=self.urls,
                      folder=self.folder, how=self.how, cfg=cfg)

    def files(self) -> List[str]:
        out = []
        for p in (self.inputs or self.required):
            if osp.isdir(p):
                out += sorted(osp.join(p, f) for f in os.listdir(p)
                              if osp.isfile(osp.join(p, f)))
            elif osp.isfile(p):
                out.append(p)
        return out

    def corrupt(self, problem: str, attribute: Optional[str] = None) -> DataCorruptError:
        """The paragraph for raw files that give ``problem``."""
        def size(p):
            mb = os.path.getsize(p) / 2 ** 20
            return f'{mb:.2f} MB' if mb >= 0.01 else f'{os.path.getsize(p)} bytes'
        if not self.files():  # generated data
            return DataCorruptError(f'Dataset {self.dataset}: the generated data is '
                                    f"unusable: {problem.rstrip('.')}. {self.how}")
        suspect = self.roles.get(attribute) if attribute else None
        lines = [f'Dataset {self.dataset}: the raw files give unusable data: '
                 f"{problem.rstrip('.')}."]
        if suspect:
            lines.append(f'The data of {attribute!r} comes from {suspect}.')
        lines.append('A raw file is probably truncated or corrupt. Raw files:')
        lines += [f'  {p} ({size(p)})' for p in self.files()]
        lines.append('Replace them with the original files from:')
        lines += [f'  {u}' for u in self.urls]
        lines.append(f'and put them into: {self.folder}')
        if self.how:
            lines.append(self.how)
        lines.append('The processed files are rebuilt at the next run.')
        return DataCorruptError('\n'.join(lines))


@contextlib.contextmanager
def _lock(folder: str):
    """An exclusive lock on ``folder/.lock`` (no lock where the folder cannot
    be written, or without ``fcntl``)."""
    try:
        import fcntl
        os.makedirs(folder, exist_ok=True)
        handle = open(osp.join(folder, LOCK), 'a')
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        handle.close()  # releases the lock


class ProcessedCache:
    """The ``processed/`` folder of a dataset built from :class:`RawFiles`
    (see the module docstring)."""

    def __init__(self, raw: RawFiles, processed_dir: str):
        self.raw, self.dir = raw, processed_dir
        self._state: Optional[Dict[str, dict]] = None
        self._committed: Dict[str, dict] = {}  # stamped processed files
        self._read: Dict[str, str] = {}  # processed file -> SHA-1 as read

    # ---- raw fingerprint --------------------------------------------------
    def _rel(self, path: str) -> str:
        return osp.relpath(path, osp.dirname(self.dir))

    def raw_state(self, stamp: Optional[dict] = None) -> Dict[str, dict]:
        """``{relative path: {size, mtime_ns, sha1}}`` of the raw files (see
        :func:`file_state`)."""
        if self._state is None:
            self._state = file_state({self._rel(p): p for p in self.raw.files()},
                                     (stamp or {}).get('raw', {}))
        return self._state

    def sha1(self, path: str) -> str:
        """SHA-1 of the raw file ``path`` (from the stamp when unchanged)."""
        return self.raw_state(self._read_stamp()).get(self._rel(path), {}).get(
            'sha1') or sha1_of(path)

    # ---- stamp --------------------------------------------------------------
    def _read_stamp(self) -> Optional[dict]:
        try:
            with open(osp.join(self.dir, STAMP)) as f:
                stamp = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(stamp, dict) or stamp.get('version') != STAMP_VERSION:
            return None
        return stamp

    def _listing(self) -> Dict[str, str]:
        """``{name: path}`` of the processed files (not the stamp, the lock or
        temporary files)."""
        if not osp.isdir(self.dir):
            return {}
        return {f: osp.join(self.dir, f) for f in os.listdir(self.dir)
                if f not in (STAMP, LOCK) and '.tmp' not in f
                and osp.isfile(osp.join(self.dir, f))}

    def _write_stamp(self, state: Dict[str, dict], known: Dict[str, dict]):
        files = {}
        for name, path in self._listing().items():
            if name in self._read:  # the hash of what was read
                st = os.stat(path)
                files[name] = dict(size=st.st_size, mtime_ns=st.st_mtime_ns,
                                   sha1=self._read[name])
            else:
                files.update(file_state({name: path}, known))
        stamp = dict(version=STAMP_VERSION, dataset=self.raw.dataset, raw=state,
                     files=files)
        path = osp.join(self.dir, STAMP)
        try:
            write_text(path, json.dumps(stamp, indent=1, sort_keys=True))
        except ResultsWriteError as err:  # a read-only dataset folder: no stamp
            log.warning('%s: cannot write %s (%s); the processed data is used '
                        'but not stamped', self.raw.dataset, path, err.strerror)

    def _clear(self, names: Optional[Sequence[str]] = None):
        """Remove ``names`` (default: every processed file and folder, the
        lock excepted) from the processed folder."""
        if not osp.isdir(self.dir):
            return
        for name in (os.listdir(self.dir) if names is None else names):
            if name == LOCK:
                continue
            path = osp.join(self.dir, name)
            if osp.isdir(path) and not osp.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)

    def _prepare(self) -> bool:
        """Remove what is not a committed processed file of these raw files;
        returns whether committed files remain (their content is checked
        when they are read, :meth:`_verify`)."""
        stamp = self._read_stamp()
        state = self.raw_state(stamp)
        files = self._listing()
        self._committed, self._read = {}, {}
        if stamp is None:
            if files:
                log.warning('%s: %s holds processed files without a completion '
                            'stamp (an interrupted run, or processed by another '
                            'program); rebuilding them', self.raw.dataset, self.dir)
                self._clear()
            return False
        old = {k: v.get('sha1') for k, v in stamp.get('raw', {}).items()}
        new = {k: v['sha1'] for k, v in state.items()}
        if old != new:
            changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            log.warning('%s: the processed data in %s was built from other raw '
                        'files (changed: %s); rebuilding it', self.raw.dataset,
                        self.dir, ', '.join(changed))
            self._clear()
            return False
        committed = stamp.get('files', {})
        if not isinstance(committed, dict):
            committed = {}
        self._clear([f for f in files if f not in committed])
        self._committed = {f: dict(committed[f]) for f in files if f in committed
                           and isinstance(committed[f], dict)}
        return bool(self._committed)

    def _verify(self, path: str):
        """Before a file is read during the build: a processed file's
        SHA-1 is recorded, and must equal its stamp's when committed
        (:class:`CacheChanged`)."""
        if not self._inside(path) or not osp.isfile(path):
            return
        name = osp.basename(path)
        digest = sha1_of(path)
        self._read[name] = digest
        expected = self._committed.get(name, {}).get('sha1')
        if expected is not None and expected != digest:
            raise CacheChanged(name)

    # ---- writable -----------------------------------------------------------
    def _read_only(self, where: str) -> DataError:
        return DataError(
            f'Dataset {self.raw.dataset}: cannot write the processed data into '
            f'{self.dir} ({where} is read-only or not writable by this user). The '
            'raw files are fine: make dataset.dir writable, or copy the dataset '
            "folder to a writable one (e.g. 'cp -r DIR /tmp/data') and point "
            'dataset.dir there')

    def _check_writable(self):
        """Refuse (:class:`DataError`) a processed folder that cannot be
        written before the dataset class tries to."""
        path = osp.abspath(self.dir)
        while not osp.exists(path) and osp.dirname(path) != path:
            path = osp.dirname(path)
        if not os.access(path, os.W_OK):
            raise self._read_only(path)

    # ---- load ---------------------------------------------------------------
    def load(self, build: Callable[[], Any],
             check: Optional[Callable[[Any], None]] = check_datasets) -> Any:
        """``build()`` (the dataset class, which processes what is missing),
        checked by ``check``; see the module docstring. Raises
        :class:`DataCorruptError` (with the processed files removed)."""
        with _lock(self.dir):
            cached = self._prepare()
            while True:
                if not cached:  # the dataset class reads its raw files now
                    problem = check_files(self.raw.files(), self.raw.dataset) or (
                        self.raw.validate() if self.raw.validate else None)
                    if problem:  # found before the dataset class reads them
                        raise self.raw.corrupt(problem)
                    self._check_writable()
                try:
                    with guarded(self.raw.dataset, self._verify):
                        out = build()
                    if check is not None:
                        check(out)
                    break
                except CacheChanged as err:
                    log.warning('%s: %s; rebuilding them', self.raw.dataset, err)
                    self._clear()
                    self._committed, self._read, cached = {}, {}, False
                    continue
                except (UnsafeDataError, OversizeDataError) as err:
                    if not (cached and self._inside(err.path)):
                        raise
                    # A processed file the reader refuses: rebuilt, never read.
                    problem = str(err)
                except (DataError, ImportError, MemoryError, NameError,
                        NotImplementedError):  # not the data's fault
                    raise
                except Exception as err:  # noqa: BLE001 - any failure of the data
                    # Not the raw files' fault: a folder that cannot be written.
                    code = getattr(err, 'errno', None)
                    if code in (errno.EACCES, errno.EPERM, errno.EROFS):
                        raise self._read_only(getattr(err, 'filename', None)
                                              or self.dir) from None
                    if code in (errno.ENOSPC, errno.EDQUOT):
                        raise DataError(f'Dataset {self.raw.dataset}: cannot write the '
                                        f'processed data into {self.dir}: '
                                        f'{err.strerror}. Free some space there') from None
                    problem = (str(err) if isinstance(err, StorageError)
                               else f'{type(err).__name__}: {err}')
                    if not cached:
                        self._clear()
                        raise self.raw.corrupt(problem, err.attribute if isinstance(
                            err, StorageError) else None) from None
                # the cache itself may be what is broken
                log.warning('%s: cannot use the processed data in %s (%s); '
                            'rebuilding it from the raw files',
                            self.raw.dataset, self.dir, problem)
                self._clear()
                self._committed, self._read, cached = {}, {}, False
            self._state = None  # a download may have added raw files
            self._write_stamp(self.raw_state(), self._committed)
        return out

    def _inside(self, path: str) -> bool:
        """Whether ``path`` is a file of the processed folder."""
        return bool(path) and osp.dirname(osp.abspath(path)) == osp.abspath(self.dir)
