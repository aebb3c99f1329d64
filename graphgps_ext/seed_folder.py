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
"""
import datetime
import fcntl
import json
import os
import shutil
import socket
import sys
from typing import Any, Dict, List, Optional

from graphgps_ext.files import write_guard, write_text

LOCK_NAME = 'lock'
#: What a run writes into its seed folder (and a replacement moves).
RUN_ENTRIES = ('done', 'config.yaml', 'logging.log', 'best.json', 'data.json',
               'split_indices.pt', 'resume_history.jsonl', 'train', 'val',
               'test', 'ckpt', 'wandb')
_PENDING = '.replacing'
_TRASH = '.replaced'
_MANIFEST = 'manifest.json'


def is_run_entry(name: str) -> bool:
    return name in RUN_ENTRIES or name.startswith('events.out.tfevents')


def run_entries(run_dir: str) -> List[str]:
    """The run entries present in ``run_dir``, ``done`` first."""
    if not os.path.isdir(run_dir):
        return []
    names = [e for e in os.listdir(run_dir) if is_run_entry(e)]
    return sorted(names, key=lambda e: (e != 'done', e))


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
        data = os.pread(fd, 65536, 0)
        info = json.loads(data.decode() or 'null')
        return info if isinstance(info, dict) else None
    except (OSError, ValueError):
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
            os.pwrite(fd, (json.dumps(info) + '\n').encode(), 0)
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
            write_text(os.path.join(self.pending, _MANIFEST), json.dumps(names))
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
    try:
        with open(os.path.join(pending, _MANIFEST)) as f:
            old = json.load(f)
    except (FileNotFoundError, ValueError):
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
    for name in sorted(moved, key=lambda n: n == 'done'):
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

