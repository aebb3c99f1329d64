"""A seed folder (``<out_dir>/<run_name>/<seed>/``): who owns it and how a
new run replaces an old one.

Ownership. :class:`SeedLock` holds an exclusive ``fcntl.flock`` on the file
``lock`` in the seed folder for the whole run; the file says who holds it
(pid, host, start time, command line). A second process asking for the same
seed gets :class:`SeedLocked` at once. The operating system releases the
lock when its process ends, however it ends (``kill -9`` included), so a
lock file left by a killed run never blocks a restart. The holder removes
the file when it is done. ``flock`` works across the hosts of a cluster on
NFS (Linux emulates it with NFS byte-range locks) and on Lustre mounted
with ``-o flock``.

Replacement. :class:`Replacement` replaces a previous run's entries
(:data:`RUN_ENTRIES`) only once the new run has started, and never leaves
a mixture of both:

1. ``aside()``: record the old entries in ``.replacing/manifest.json``, then
   move them (``done`` first) into ``.replacing/``;
2. the new run writes its first files (config, data, initial checkpoint);
3. ``commit()``: rename ``.replacing/`` to ``.replaced/`` (one atomic step:
   from here on the new run owns the folder), then delete it.

``rollback()`` undoes 1-2 when the start fails in-process. A process killed
between 1 and 3 leaves ``.replacing/``: the next run on this seed calls
:func:`recover` first, which moves the old entries back (the manifest tells
old from new) and removes the new run's partial files, so the folder holds
the old run exactly as before. A leftover ``.replaced/`` is deleted.
Anything in a seed folder that is not a run entry is never touched.

Checking. :func:`check_seed` reads a seed folder's files with the readers
of :class:`~graphgps_ext.results.tree.RunDir` (which owns their names and
formats) and checks that they are records of one run and agree with each
other and with the ``done`` marker; a damaged file raises
:class:`SeedFolderError` naming the seed folder and the file.
"""
import datetime
import fcntl
import json
import math
import os
import shutil
import socket
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from graphgps_ext.files import write_guard
from graphgps_ext.results.tree import RunDir, RunFileError, RunRoot, UnsafePath

LOCK_NAME = RunDir.LOCK
#: What a run writes into its seed folder (and a replacement moves).
RUN_ENTRIES = RunDir.ENTRIES
_PENDING = RunDir.PENDING
_TRASH = RunDir.TRASH


def _folder(run_dir: Union[str, RunDir]) -> RunDir:
    """``run_dir`` as a :class:`RunDir` (a path: its root two levels up)."""
    return run_dir if isinstance(run_dir, RunDir) else RunDir(run_dir)


def is_run_entry(name: str) -> bool:
    return RunDir.is_entry(name)


def run_entries(run_dir: str) -> List[str]:
    """The run entries present in ``run_dir``, ``done`` first."""
    if not os.path.isdir(_folder(run_dir).check()):
        return []
    names = [e for e in os.listdir(run_dir) if is_run_entry(e)]
    return sorted(names, key=lambda e: (e != RunDir.DONE, e))


def _remove(path: str):
    """Delete the file, link or folder ``path`` (a link is deleted, never
    followed; a folder's links likewise, :func:`shutil.rmtree`)."""
    with write_guard(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)


# ------------------------------------------------------------------ lock --
class SeedLocked(Exception):
    """Another live process holds the seed folder's lock."""


def _describe(info: Optional[Dict[str, Any]]) -> str:
    if not info:
        return 'a process that has not yet written its name'
    return (f"pid {info.get('pid')} on host {info.get('host')}, started "
            f"{info.get('started')}")


def _read_info(fd: int) -> Optional[Dict[str, Any]]:
    try:
        return RunDir.parse_lock(os.pread(fd, 65536, 0))
    except OSError:
        return None


class SeedLock:
    """An exclusive lock on ``<run_dir>/lock`` (see the module docstring).

    ``acquire()`` creates the folder if needed and raises :class:`SeedLocked`
    naming the holder when another process has it; ``release()`` removes
    the lock file (and the folders ``acquire`` created, when they are still
    empty). Also a context manager.

    The holder writes only into a lock file it created itself
    (``O_CREAT | O_EXCL | O_NOFOLLOW``): a ``lock`` left by an ended
    process is locked (so that no one else takes it meanwhile), unlinked
    and created afresh; a ``lock`` that is a symbolic link is refused
    (:class:`~graphgps_ext.results.tree.UnsafePath`), so no file outside the
    seed folder is ever opened for writing, truncated or overwritten."""

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        self.path = _folder(run_dir).lock
        self.fd: Optional[int] = None
        self.created: List[str] = []

    def acquire(self) -> 'SeedLock':
        with write_guard(self.path):
            self.created = self._makedirs()
            while True:
                _folder(self.run_dir).lock  # noqa: B018 - checked: not a link
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL
                                 | os.O_NOFOLLOW, 0o644)
                    fresh = True
                except FileExistsError:
                    try:
                        fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
                    except FileNotFoundError:  # removed meanwhile: create it
                        continue
                    fresh = False
                except FileNotFoundError:  # a releasing holder removed the folder
                    self.created += self._makedirs()
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    info = _read_info(fd)
                    os.close(fd)
                    raise SeedLocked(
                        f'{self.run_dir} is in use by another run: '
                        f'{_describe(info)} (lock file {self.path}). Wait for '
                        'it to finish or stop it; the lock of a process that '
                        'has ended is released by the operating system.'
                    ) from None
                # The holder we waited for may have removed the file while we
                # opened it: the lock counts only on the file at self.path.
                try:
                    same = os.stat(self.path, follow_symlinks=False).st_ino \
                        == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if same and fresh:
                    break
                if same:  # left by an ended process: ours to replace
                    os.unlink(self.path)
                os.close(fd)
            self.fd = fd
            info = {'pid': os.getpid(), 'host': socket.gethostname(),
                    'started': datetime.datetime.now().isoformat(timespec='seconds'),
                    'argv': sys.argv}
            os.ftruncate(fd, 0)
            os.pwrite(fd, RunDir.lock_record(info), 0)
        return self

    def _makedirs(self) -> List[str]:
        """Create ``run_dir`` and missing parents; returns those created."""
        _folder(self.run_dir).check()
        missing, path = [], os.path.abspath(self.run_dir)
        while not os.path.isdir(path):
            missing.append(path)
            path = os.path.dirname(path)
        created = []
        for path in reversed(missing):
            try:
                os.mkdir(path)
                created.insert(0, path)  # deepest first
            except FileExistsError:  # made by another process meanwhile
                pass
        return created

    def release(self):
        if self.fd is None:
            return
        try:
            os.unlink(self.path)  # while still holding it (see acquire)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None
        for path in self.created:  # deepest first; only while empty
            try:
                os.rmdir(path)
            except OSError:
                break
        self.created = []

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False


def lock_holder(run_dir: str) -> Optional[Dict[str, Any]]:
    """``{'pid', 'host', 'started', 'argv'}`` of the process that holds
    ``run_dir``'s lock (``{}`` when it has not written them yet), or
    ``None`` when no live process holds it."""
    try:
        fd = os.open(_folder(run_dir).lock, os.O_RDONLY | os.O_NOFOLLOW)
    except (OSError, UnsafePath):
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_info(fd) or {}
    finally:
        os.close(fd)
    return None


# ----------------------------------------------------------- replacement --
class Replacement:
    """Replace the run entries of ``run_dir`` (see the module docstring).
    Use it only while holding the seed's :class:`SeedLock`."""

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        self.folder = _folder(run_dir)
        self.pending = self.folder.pending
        self.moved: List[str] = []
        self.active = False

    def aside(self) -> List[str]:
        """Move the old run entries into ``.replacing/``; returns their names."""
        names = run_entries(self.run_dir)
        if not names:
            return []
        with write_guard(self.pending):
            os.mkdir(self.folder.pending)
            self.active = True  # from here on, rollback() / recover() undo it
            self.folder.write_manifest(names)
            for name in names:
                os.replace(self.folder.entry(name),
                           self.folder.entry(os.path.join(_PENDING, name)))
                self.moved.append(name)
        return names

    def commit(self):
        """The new run has started: delete the old entries."""
        if not self.active:
            return
        trash = self.folder.entry(_TRASH)
        _remove(trash)
        with write_guard(self.pending):
            os.replace(self.pending, trash)
        self.active = False
        _remove(trash)

    def rollback(self):
        """The new run did not start: put the old entries back."""
        if self.active:
            restore(self.run_dir)
            self.active = False


def restore(run_dir: str) -> List[str]:
    """Undo an unfinished replacement of ``run_dir`` (``.replacing/``
    present): remove the new run's entries, move the old ones back. Returns
    the names restored."""
    folder = _folder(run_dir)
    pending = folder.pending
    # Names only (RunDir.read_manifest refuses paths such as '../../x'), each
    # path checked: nothing outside the seed folder is moved or deleted.
    old = folder.read_manifest()
    if old is None:
        # Stopped before the manifest was complete: nothing was moved yet,
        # every entry in the folder is the old run's.
        _remove(pending)
        return []
    aside = {n: folder.entry(os.path.join(_PENDING, n)) for n in old}
    moved = [n for n in old if os.path.lexists(aside[n])]
    for name in run_entries(run_dir):
        if name not in old or name in moved:  # the new run's
            _remove(folder.entry(name))
    # ``done`` last, so that the folder is never marked finished while its
    # other entries are still missing.
    for name in sorted(moved, key=lambda n: n == RunDir.DONE):
        with write_guard(run_dir):
            os.replace(aside[name], folder.entry(name))
    _remove(pending)
    return moved


def recover(run_dir: str) -> List[str]:
    """Finish what a killed run left in ``run_dir``: restore an unfinished
    replacement (:func:`restore`) and delete a committed one's leftovers.
    Returns the names restored. Raises
    :class:`~graphgps_ext.results.tree.RunFileError` for a manifest that holds
    anything but entry names (nothing is moved) and
    :class:`~graphgps_ext.results.tree.UnsafePath` for ``.replacing`` as a link."""
    folder = _folder(run_dir)
    _remove(folder.entry(_TRASH))
    if os.path.isdir(folder.pending):
        return restore(run_dir)
    return []



# ---------------------------------------------------------------- reading --
#: Files of a finished run whose SHA-256 the ``done`` marker records: a
#: reader refuses a seed whose file changed after the run finished.
CHECKED_FILES = RunDir.checked_files()
_SPLITS = RunDir.SPLITS
_TRAIN_STATS = RunDir.stats_name('train')
_DONE = repr(RunDir.DONE)  # as messages quote it
_RESULT_FILES = tuple(n for n in CHECKED_FILES if n != RunDir.CONFIG)


class SeedFolderError(ValueError):
    """A seed folder whose files are damaged or disagree with each other
    (``main.py`` and ``agg`` exit code 2): the seed and the file are named."""


@dataclass
class SeedListing:
    """The seed folders of a run folder (:func:`list_seeds`).

    Attributes:
        names: one folder name per seed, sorted by seed.
        duplicates: ``'<name> (<why>)'`` for each folder left out as a
            second copy of a listed one (a symbolic link to it, hard links to
            its files, or a copy with the same run identity and results).
        odd: names of digits that are not seed folder names (``'007'``,
            ``'²'``), never read as seeds.
    """
    names: List[str] = field(default_factory=list)
    duplicates: List[str] = field(default_factory=list)
    odd: List[str] = field(default_factory=list)


def _copy_key(folder: RunDir) -> Optional[Tuple]:
    """What two copies of one finished run share: the identity and the
    SHA-256 of every result file its ``done`` records (``None`` without)."""
    done = folder.read_done()
    if not done or not isinstance(done.get('files'), dict):
        return None
    files = done['files']
    digests = tuple((n, files.get(n)) for n in _RESULT_FILES)
    if not any(isinstance(d, str) for _, d in digests):
        return None
    return (str(done.get('fingerprint')), json.dumps(done.get('data'), sort_keys=True,
                                                      default=str), digests)


def _inodes(folder: RunDir) -> List[Tuple[int, int]]:
    """``(device, inode)`` of the seed folder's ``done`` and stats files."""
    out = []
    for name in (RunDir.DONE, *(RunDir.stats_name(s) for s in _SPLITS)):
        try:
            st = os.stat(folder.join(name), follow_symlinks=False)
        except (OSError, UnsafePath):
            continue
        out.append((st.st_dev, st.st_ino))
    return out


def list_seeds(root: Union[str, RunRoot]) -> SeedListing:
    """The seed folders of the run folder ``root`` (a :class:`RunRoot`, or a
    path, which is then the root of the tree: the folder named may itself be
    a link), each seed counted once:

    - a name that is a symbolic link to a seed folder listed under its own
      name is a second name (left out, in ``duplicates``); a link to
      anything else (out of the run folder, to another run's seed) raises
      :class:`~graphgps_ext.results.tree.UnsafePath`: nothing is read through it;
    - a folder whose files are hard links to another's, or a copy of
      another (the same fingerprint, data and SHA-256 of every result file
      in ``done``), is left out (in ``duplicates``); the folder whose name is
      the seed its ``done`` records is kept, else the lower seed;
    - names of digits other than ``str(seed)`` are listed in ``odd``."""
    run_root = root if isinstance(root, RunRoot) else RunRoot(root, root)
    names, odd = run_root.seed_names()
    out = SeedListing(odd=odd)
    real: Dict[str, str] = {}
    links = []
    folders = []
    for name in names:
        path = run_root.entry(name)
        if os.path.islink(path):
            links.append(name)
        elif os.path.isdir(path):
            real[os.path.realpath(path)] = name
            folders.append(name)
    for name in links:
        path = run_root.entry(name)
        target = real.get(os.path.realpath(path))
        if target is None:
            run_root.seed(name).check()  # raises UnsafePath naming the link
        out.duplicates.append(f'{name} (a symbolic link to {target})')

    def preferred(name: str) -> Tuple[bool, int]:
        done = run_root.seed(name).read_done() or {}
        return (done.get('seed') != int(name), int(name))

    kept: Dict[Any, str] = {}
    for name in sorted(folders, key=preferred):
        folder = run_root.seed(name)
        same = next((kept[k] for k in _inodes(folder) if k in kept), None)
        why = 'hard links to its files'
        key = _copy_key(folder)
        if same is None and key is not None and key in kept:
            same, why = kept[key], 'the same run identity and results'
        if same is not None:
            out.duplicates.append(f'{name} (a copy of {same}: {why})')
            continue
        for k in _inodes(folder) + ([key] if key is not None else []):
            kept[k] = name
        out.names.append(name)
    out.names.sort(key=int)
    return out


def seed_folders(root: str, duplicates: Optional[List[str]] = None) -> List[str]:
    """The seed folder names of the run folder ``root``, sorted by seed, each
    seed counted once (:func:`list_seeds`); the names left out are appended
    to ``duplicates``, the odd names too (``'<name> (not a seed folder
    name)'``)."""
    listing = list_seeds(root)
    if duplicates is not None:
        duplicates.extend(listing.duplicates)
        duplicates.extend(f'{n} (not a seed folder name)' for n in listing.odd)
    return listing.names


def file_digest(path: str) -> Optional[str]:
    """SHA-256 of the file ``path`` (``None`` when there is none)."""
    import hashlib
    try:
        with open(path, 'rb') as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def file_digests(run_dir: str) -> Dict[str, Optional[str]]:
    """``{relative path: SHA-256}`` of every one of :data:`CHECKED_FILES`
    (``None`` for those the run did not write): the full set a finished
    run's ``done`` records."""
    folder = _folder(run_dir)
    return {name: file_digest(folder.join(name)) for name in CHECKED_FILES}


def _damaged(run_dir: str, name: str, problem: str) -> SeedFolderError:
    return SeedFolderError(
        f'seed folder {run_dir}: {name} {problem}. Its results cannot be '
        'trusted: restore the file from a copy, or run the seed again with '
        '--overwrite (or move the folder out of the way)')


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same_value(a: Any, b: Any) -> bool:
    """``a == b``, with NaN equal to NaN (a metric that is undefined, e.g.
    the AP of a split without a positive label, is a legitimate value)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def read_stats(run_dir: str, split: str) -> List[Dict[str, Any]]:
    """The records of ``<run_dir>/<split>/stats.json``, checked: every line a
    JSON object with an integer ``epoch``, epochs strictly increasing (a torn
    last line, left by a kill mid-write, is dropped). ``[]`` without a file.
    Raises :class:`SeedFolderError` naming the seed folder and the file."""
    name = RunDir.stats_name(split)
    try:
        lines = _folder(run_dir).read_stats_lines(split)
    except RunFileError as err:
        raise _damaged(run_dir, err.name, err.problem) from None
    out: List[Dict[str, Any]] = []
    for i, rec in lines:
        if not isinstance(rec, dict) or not _is_int(rec.get('epoch')) \
                or rec['epoch'] < 0:
            raise _damaged(run_dir, name, f'line {i} is not a stats record '
                           "(a JSON object with an integer 'epoch' >= 0)")
        if out and rec['epoch'] <= out[-1]['epoch']:
            raise _damaged(run_dir, name, f'line {i} repeats or goes back to '
                           f"epoch {rec['epoch']} after epoch {out[-1]['epoch']}")
        out.append(rec)
    return out


def read_best(run_dir: str) -> Optional[Dict[str, Any]]:
    """``best.json`` of a seed folder, checked to be a JSON object with an
    integer ``epoch`` >= 0, a ``metric`` name and, for each split it holds,
    a record of that split's stats (a JSON object of numbers; NaN is one);
    ``None`` when there is none. Raises :class:`SeedFolderError`."""
    try:
        best = _folder(run_dir).read_best()
    except RunFileError as err:
        raise _damaged(run_dir, err.name, err.problem) from None
    if best is None:
        return None
    if not isinstance(best, dict) or not _is_int(best.get('epoch')) \
            or best['epoch'] < 0 or not isinstance(best.get('metric'), str):
        raise _damaged(run_dir, RunDir.BEST, "is not a best-epoch record (a JSON "
                       "object with an integer 'epoch' >= 0 and a 'metric')")
    for split in _SPLITS:
        if split not in best:
            continue
        rec = best[split]
        if not isinstance(rec, dict) or not all(
                _is_number(v) or v is None for v in rec.values()):
            raise _damaged(run_dir, RunDir.BEST, f'{split!r} is not a record of '
                           f'{split} stats (a JSON object of numbers), it holds '
                           f'{_short(rec)}')
    if 'value' in best and not (_is_number(best['value']) or best['value'] is None):
        raise _damaged(run_dir, RunDir.BEST, f"'value' is not a number: "
                       f"{_short(best['value'])}")
    return best


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + '...'


def recorded_seed(run_dir: str, done: Dict[str, Any]) -> Optional[int]:
    """The seed a finished run was trained with: ``done``'s ``seed``, or
    (markers of earlier versions) ``config.yaml``'s; ``None`` if neither
    says."""
    if _is_int(done.get('seed')):
        return done['seed']
    seed = _folder(run_dir).read_config().get('seed')
    return seed if _is_int(seed) else None


def required_files(done: Dict[str, Any]) -> Tuple[str, ...]:
    """The files whose SHA-256 a ``done`` marker must record: every one of
    :data:`CHECKED_FILES` (``data.json`` only for markers that record the
    data, which this version writes)."""
    return tuple(n for n in CHECKED_FILES if n != RunDir.DATA or 'data' in done)


def _check_done(run_dir: str, done: Dict[str, Any], epochs: List[int]):
    """The marker itself: a finished run's record, of the epochs the stats
    hold."""
    if not done:
        raise _damaged(run_dir, _DONE, 'cannot be read as a JSON object (not JSON, '
                       'nested too deeply, or not an object)')
    if not _is_int(done.get('epochs')) or done['epochs'] < 0:
        raise _damaged(run_dir, _DONE, "is not a finished run's record (a JSON "
                       "object with an integer 'epochs')")
    if len(epochs) != done['epochs']:
        raise _damaged(run_dir, _TRAIN_STATS, f'holds {len(epochs)} epoch(s) '
                       f"but the run finished after {done['epochs']} ({_DONE})")
    best_epoch = done.get('best_epoch')
    if best_epoch is not None and not (_is_int(best_epoch)
                                       and 0 <= best_epoch < done['epochs']):
        raise _damaged(run_dir, _DONE, f'records the best epoch {_short(best_epoch)}, '
                       f"not one of the run's epochs 0-{done['epochs'] - 1}")


def _check_files(run_dir: str, done: Dict[str, Any]):
    """The files of a finished run: the marker records the SHA-256 of the
    full set, every one unchanged; ``config.yaml`` carries the marker's
    fingerprint and is of this folder's seed."""
    best_epoch = done.get('best_epoch')
    recorded = done.get('files')
    if not isinstance(recorded, dict) or not recorded:
        raise _damaged(run_dir, _DONE, "records no SHA-256 of the run's files "
                       '(edited, or written by hand or by a version before they '
                       'were recorded): its results cannot be verified')
    folder = _folder(run_dir)
    for name in required_files(done):
        digest = recorded.get(name)
        exists = os.path.lexists(folder.join(name))
        if name not in recorded and (exists or name in (RunDir.CONFIG, _TRAIN_STATS)
                                     or (name == RunDir.BEST and best_epoch is not None)):
            raise _damaged(run_dir, name, f'has no SHA-256 in {_DONE} (its record '
                           'of the files is partial)')
        if not (digest is None or (isinstance(digest, str) and len(digest) == 64)):
            raise _damaged(run_dir, _DONE, f'records {_short(digest)} as the SHA-256 '
                           f'of {name}')
    for name, digest in sorted(recorded.items()):
        if name not in CHECKED_FILES:
            raise _damaged(run_dir, _DONE, f'records a SHA-256 of {_short(name)}, '
                           'not a file of a seed folder')
        now = file_digest(folder.join(name))
        if now != digest:
            raise _damaged(run_dir, name, 'is missing' if now is None else
                           'exists but the run did not write it' if digest is None
                           else 'was changed after the run finished (its '
                           f'SHA-256 differs from the one in {_DONE})')
    fp = done.get('fingerprint')
    if fp and folder.read_fingerprint() != f'{fp}':
        raise _damaged(run_dir, RunDir.CONFIG, 'does not carry the '
                       f'fingerprint {fp} recorded in {_DONE} (edited or '
                       'replaced after the run finished)')
    seed = recorded_seed(run_dir, done)
    name = os.path.basename(os.path.normpath(run_dir))
    if seed is not None and str(seed) != name:
        raise _damaged(run_dir, RunDir.CONFIG, f'is the config of seed {seed}, not '
                       f'of seed {name}: the folder is a copy or a move of '
                       f"another seed's; move it back to {seed}/ or remove it")


def check_seed(run_dir: str, done: Optional[Dict[str, Any]] = None,
               last_epoch: Optional[int] = None) -> Dict[str, Any]:
    """Read and check the results of one seed folder; every reader (resume,
    the skip check, ``agg``, ``report``) goes through here. Returns
    ``{'best': best.json or None, 'stats': {split: records}}``.

    Checks: the stats files parse (:func:`read_stats`); the train epochs
    are ``0, 1, ...`` without a gap and the val/test epochs are among them,
    starting at epoch 0 (always evaluated); with ``last_epoch`` (the
    checkpoint's, on resume) the train epochs reach it. ``best.json``
    (:func:`read_best`) is of an epoch the run trained and evaluated, and
    each split's record in it equals that split's stats at that epoch (NaN
    equals NaN). For a finished seed (``done``, its marker): the marker
    records the SHA-256 of the full set of files (:func:`required_files`)
    and every file is unchanged, ``config.yaml`` carries the marker's
    fingerprint and is of this folder's seed, the train epochs are the
    marker's ``epochs``, ``best.json`` exists and is the marker's best
    epoch. Raises :class:`SeedFolderError` naming the folder and the file."""
    stats = {split: read_stats(run_dir, split) for split in _SPLITS}
    epochs = [r['epoch'] for r in stats['train']]
    if epochs != list(range(len(epochs))):
        gap = next(i for i, e in enumerate(epochs) if e != i)
        raise _damaged(run_dir, _TRAIN_STATS, f'has no record of epoch {gap} '
                       f'(its epochs: {_span(epochs)})')
    if done is not None:
        _check_done(run_dir, done, epochs)
    if last_epoch is not None and len(epochs) <= last_epoch:
        raise _damaged(run_dir, _TRAIN_STATS, f'ends at epoch '
                       f'{epochs[-1] if epochs else "(none)"} but the checkpoint '
                       f'is of epoch {last_epoch}')
    folder = _folder(run_dir)
    for split in ('val', 'test'):
        got = [r['epoch'] for r in stats[split]]
        name = RunDir.stats_name(split)
        if os.path.exists(folder.join(name)) and epochs and \
                (not got or got[0] != 0):
            raise _damaged(run_dir, name, 'has no record of epoch 0 (the first '
                           'epoch is always evaluated)')
        extra = sorted(set(got) - set(epochs))
        if extra:
            raise _damaged(run_dir, name, f'has epochs that {_TRAIN_STATS} does '
                           f'not have: {_span(extra)}')
    best = read_best(run_dir)
    if done is not None:
        if best is None and done.get('best_epoch') is not None:
            raise _damaged(run_dir, RunDir.BEST, 'is missing')
        if best is not None and 'best_epoch' in done and done['best_epoch'] is None:
            raise _damaged(run_dir, RunDir.BEST, f'exists but {_DONE} records no best '
                           'epoch (no epoch was evaluated)')
    if best is not None:
        epoch = best['epoch']
        if done is not None and done.get('best_epoch') is not None \
                and epoch != done['best_epoch']:
            raise _damaged(run_dir, RunDir.BEST, f"is of epoch {epoch} but "
                           f"{_DONE} records the best epoch {done['best_epoch']}")
        if epoch >= len(epochs):
            raise _damaged(run_dir, RunDir.BEST, f'is of epoch {epoch}, beyond the '
                           f'epochs the run trained ({_span(epochs)}, '
                           f'{_TRAIN_STATS})')
        for split in _SPLITS:
            mine = best.get(split)
            if mine is None:
                continue
            at = [r for r in stats[split] if r['epoch'] == epoch]
            if not at:
                raise _damaged(run_dir, RunDir.BEST, f'reports {split} stats of '
                               f'epoch {epoch}, which {RunDir.stats_name(split)} '
                               'does not have')
            if any(k in at[0] and not same_value(at[0][k], v)
                   for k, v in mine.items() if k != 'epoch'):
                raise _damaged(run_dir, RunDir.BEST, f'{split} values differ from '
                               f"{RunDir.stats_name(split)} at epoch {epoch}")
    if done is not None:
        _check_files(run_dir, done)
    return {'best': best, 'stats': stats}


def _span(epochs: List[int]) -> str:
    if not epochs:
        return 'none'
    if epochs == list(range(epochs[0], epochs[-1] + 1)):
        return f'{epochs[0]}-{epochs[-1]}' if len(epochs) > 1 else str(epochs[0])
    return ', '.join(map(str, epochs[:8])) + (' ...' if len(epochs) > 8 else '')
