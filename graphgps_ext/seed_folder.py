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
of :class:`~graphgps_ext.run_dir.RunDir` (which owns their names and
formats) and checks that they are records of one run and agree with each
other and with the ``done`` marker; a damaged file raises
:class:`SeedFolderError` naming the seed folder and the file.
"""
import datetime
import fcntl
import os
import shutil
import socket
import sys
from typing import Any, Dict, List, Optional

from graphgps_ext.files import write_guard
from graphgps_ext.run_dir import RunDir, RunFileError

LOCK_NAME = RunDir.LOCK
#: What a run writes into its seed folder (and a replacement moves).
RUN_ENTRIES = RunDir.ENTRIES
_PENDING = RunDir.PENDING
_TRASH = RunDir.TRASH


def is_run_entry(name: str) -> bool:
    return RunDir.is_entry(name)


def run_entries(run_dir: str) -> List[str]:
    """The run entries present in ``run_dir``, ``done`` first."""
    if not os.path.isdir(run_dir):
        return []
    names = [e for e in os.listdir(run_dir) if is_run_entry(e)]
    return sorted(names, key=lambda e: (e != RunDir.DONE, e))


def _remove(path: str):
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
    empty). Also a context manager."""

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, LOCK_NAME)
        self.fd: Optional[int] = None
        self.created: List[str] = []

    def acquire(self) -> 'SeedLock':
        with write_guard(self.path):
            self.created = self._makedirs()
            while True:
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
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
                    same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
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
    path = os.path.join(run_dir, LOCK_NAME)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
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
        self.pending = os.path.join(run_dir, _PENDING)
        self.moved: List[str] = []
        self.active = False

    def aside(self) -> List[str]:
        """Move the old run entries into ``.replacing/``; returns their names."""
        names = run_entries(self.run_dir)
        if not names:
            return []
        with write_guard(self.pending):
            os.makedirs(self.pending)
            self.active = True  # from here on, rollback() / recover() undo it
            RunDir(self.run_dir).write_manifest(names)
            for name in names:
                os.replace(os.path.join(self.run_dir, name),
                           os.path.join(self.pending, name))
                self.moved.append(name)
        return names

    def commit(self):
        """The new run has started: delete the old entries."""
        if not self.active:
            return
        trash = os.path.join(self.run_dir, _TRASH)
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
    pending = os.path.join(run_dir, _PENDING)
    old = RunDir(run_dir).read_manifest()
    if old is None:
        # Stopped before the manifest was complete: nothing was moved yet,
        # every entry in the folder is the old run's.
        _remove(pending)
        return []
    moved = [n for n in old if os.path.lexists(os.path.join(pending, n))]
    for name in run_entries(run_dir):
        if name not in old or name in moved:  # the new run's
            _remove(os.path.join(run_dir, name))
    # ``done`` last, so that the folder is never marked finished while its
    # other entries are still missing.
    for name in sorted(moved, key=lambda n: n == RunDir.DONE):
        with write_guard(run_dir):
            os.replace(os.path.join(pending, name), os.path.join(run_dir, name))
    _remove(pending)
    return moved


def recover(run_dir: str) -> List[str]:
    """Finish what a killed run left in ``run_dir``: restore an unfinished
    replacement (:func:`restore`) and delete a committed one's leftovers.
    Returns the names restored."""
    _remove(os.path.join(run_dir, _TRASH))
    if os.path.isdir(os.path.join(run_dir, _PENDING)):
        return restore(run_dir)
    return []



# ---------------------------------------------------------------- reading --
#: Files of a finished run whose SHA-256 the ``done`` marker records: a
#: reader refuses a seed whose file changed after the run finished.
CHECKED_FILES = RunDir.checked_files()
_SPLITS = RunDir.SPLITS
_TRAIN_STATS = RunDir.stats_name('train')
_DONE = repr(RunDir.DONE)  # as messages quote it


def seed_folders(root: str, duplicates: Optional[List[str]] = None) -> List[str]:
    """The seed folder names (integers) of the run folder ``root``, sorted by
    seed. A name that is a second name of a folder already listed (a
    symbolic link to it) is left out, so a seed is never counted twice, and
    ``'<name> (the same folder as <seed>)'`` is appended to ``duplicates``."""
    names = [e for e in os.listdir(root)
             if e.isdigit() and os.path.isdir(os.path.join(root, e))]
    real: Dict[str, str] = {}
    for name in sorted(names, key=lambda e: (os.path.islink(os.path.join(root, e)),
                                             int(e))):
        target = os.path.realpath(os.path.join(root, name))
        if target in real:
            if duplicates is not None:
                duplicates.append(f'{name} (the same folder as {real[target]})')
            continue
        real[target] = name
    return sorted(real.values(), key=int)


class SeedFolderError(ValueError):
    """A seed folder whose files are damaged or disagree with each other
    (``main.py`` and ``agg`` exit code 2): the seed and the file are named."""


def file_digest(path: str) -> Optional[str]:
    """SHA-256 of the file ``path`` (``None`` when there is none)."""
    import hashlib
    try:
        with open(path, 'rb') as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def file_digests(run_dir: str) -> Dict[str, str]:
    """``{relative path: SHA-256}`` of the :data:`CHECKED_FILES` present."""
    out = {}
    for name in CHECKED_FILES:
        digest = file_digest(os.path.join(run_dir, name))
        if digest is not None:
            out[name] = digest
    return out


def _damaged(run_dir: str, name: str, problem: str) -> SeedFolderError:
    return SeedFolderError(
        f'seed folder {run_dir}: {name} {problem}. Its results cannot be '
        'trusted: restore the file from a copy, or run the seed again with '
        '--overwrite (or move the folder out of the way)')


def read_stats(run_dir: str, split: str) -> List[Dict[str, Any]]:
    """The records of ``<run_dir>/<split>/stats.json``, checked: every line a
    JSON object with an integer ``epoch``, epochs strictly increasing (a torn
    last line, left by a kill mid-write, is dropped). ``[]`` without a file.
    Raises :class:`SeedFolderError` naming the seed folder and the file."""
    name = RunDir.stats_name(split)
    try:
        lines = RunDir(run_dir).read_stats_lines(split)
    except RunFileError as err:
        raise _damaged(run_dir, err.name, err.problem) from None
    out: List[Dict[str, Any]] = []
    for i, rec in lines:
        if not isinstance(rec, dict) or not isinstance(rec.get('epoch'), int) \
                or isinstance(rec.get('epoch'), bool):
            raise _damaged(run_dir, name, f'line {i} is not a stats record '
                           "(a JSON object with an integer 'epoch')")
        if out and rec['epoch'] <= out[-1]['epoch']:
            raise _damaged(run_dir, name, f'line {i} repeats or goes back to '
                           f"epoch {rec['epoch']} after epoch {out[-1]['epoch']}")
        out.append(rec)
    return out


def read_best(run_dir: str) -> Optional[Dict[str, Any]]:
    """``best.json`` of a seed folder, checked to be a JSON object with an
    integer ``epoch`` and a ``metric`` (``None`` when there is none)."""
    try:
        best = RunDir(run_dir).read_best()
    except RunFileError as err:
        raise _damaged(run_dir, err.name, err.problem) from None
    if best is None:
        return None
    if not isinstance(best, dict) or not isinstance(best.get('epoch'), int) \
            or 'metric' not in best:
        raise _damaged(run_dir, RunDir.BEST, "is not a best-epoch record (a JSON "
                       "object with an integer 'epoch' and a 'metric')")
    return best


def check_seed(run_dir: str, done: Optional[Dict[str, Any]] = None,
               last_epoch: Optional[int] = None) -> Dict[str, Any]:
    """Read and check the results of one seed folder; every reader (resume,
    the skip check, ``agg``, ``report``) goes through here. Returns
    ``{'best': best.json or None, 'stats': {split: records}}``.

    Checks: the stats files parse (:func:`read_stats`); the train epochs
    are ``0, 1, ...`` without a gap and the val/test epochs are among them,
    starting at epoch 0 (always evaluated); with ``last_epoch`` (the
    checkpoint's, on resume) the train epochs reach it. For a finished seed
    (``done``, its marker): every file whose SHA-256 the marker recorded is
    unchanged, ``config.yaml`` carries the marker's fingerprint, the train
    epochs are the marker's ``epochs``, ``best.json`` exists, is the
    marker's best epoch and agrees with the stats of that epoch. Raises
    :class:`SeedFolderError` naming the folder and the file."""
    stats = {split: read_stats(run_dir, split) for split in _SPLITS}
    epochs = [r['epoch'] for r in stats['train']]
    if epochs != list(range(len(epochs))):
        gap = next(i for i, e in enumerate(epochs) if e != i)
        raise _damaged(run_dir, _TRAIN_STATS, f'has no record of epoch {gap} '
                       f'(its epochs: {_span(epochs)})')
    if done is not None and isinstance(done.get('epochs'), int) \
            and len(epochs) != done['epochs']:
        raise _damaged(run_dir, _TRAIN_STATS, f'holds {len(epochs)} epoch(s) '
                       f"but the run finished after {done['epochs']} ({_DONE})")
    if last_epoch is not None and len(epochs) <= last_epoch:
        raise _damaged(run_dir, _TRAIN_STATS, f'ends at epoch '
                       f'{epochs[-1] if epochs else "(none)"} but the checkpoint '
                       f'is of epoch {last_epoch}')
    for split in ('val', 'test'):
        got = [r['epoch'] for r in stats[split]]
        name = RunDir.stats_name(split)
        if os.path.exists(os.path.join(run_dir, name)) and epochs and \
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
    if best is not None:
        if done is not None and done.get('best_epoch') is not None \
                and best['epoch'] != done['best_epoch']:
            raise _damaged(run_dir, RunDir.BEST, f"is of epoch {best['epoch']} but "
                           f"{_DONE} records the best epoch {done['best_epoch']}")
        for split in _SPLITS:
            at = [r for r in stats[split] if r['epoch'] == best['epoch']]
            mine = best.get(split)
            if at and isinstance(mine, dict) and any(
                    k in at[0] and at[0][k] != v for k, v in mine.items()
                    if k != 'epoch'):
                raise _damaged(run_dir, RunDir.BEST, f'{split} values differ from '
                               f"{RunDir.stats_name(split)} at epoch {best['epoch']}")
    if done is not None:
        recorded = done.get('files')
        if isinstance(recorded, dict):
            for name, digest in sorted(recorded.items()):
                now = file_digest(os.path.join(run_dir, name))
                if now != digest:
                    raise _damaged(run_dir, name, 'is missing' if now is None else
                                   'was changed after the run finished (its '
                                   f'SHA-256 differs from the one in {_DONE})')
        fp = done.get('fingerprint')
        if fp:
            if RunDir(run_dir).read_fingerprint() != f'{fp}':
                raise _damaged(run_dir, RunDir.CONFIG, 'does not carry the '
                               f'fingerprint {fp} recorded in {_DONE} (edited or '
                               'replaced after the run finished)')
    return {'best': best, 'stats': stats}


def _span(epochs: List[int]) -> str:
    if not epochs:
        return 'none'
    if epochs == list(range(epochs[0], epochs[-1] + 1)):
        return f'{epochs[0]}-{epochs[-1]}' if len(epochs) > 1 else str(epochs[0])
    return ', '.join(map(str, epochs[:8])) + (' ...' if len(epochs) > 8 else '')
