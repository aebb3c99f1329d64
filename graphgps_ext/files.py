"""Result files written whole or not at all, and the reader of JSON lines.

Every result file (checkpoints, stats, ``best.json``, ``done``, the resolved
config, aggregates, reports, launcher scripts, cached encodings) is written
by :func:`atomic_write_bytes`: serialised in memory, written to a temporary
file ``<name>.tmp<pid>`` in the same directory, flushed to disk, then moved
over the target with :func:`os.replace`, so an interrupted write never
leaves a truncated file behind. A process killed in the middle of a write
leaves its temporary file; :func:`remove_temp_files` clears them when the
folder is next used. A write the disk refuses (disk full, read-only folder,
no permission) raises :class:`ResultsWriteError` naming the file.
"""
import json
import os
import re
from typing import Any, Callable, List, Optional


class ResultsWriteError(OSError):
    """A result file could not be written (disk full, read-only folder,
    missing permission): ``path`` and the operating system's reason."""

    def __init__(self, path: str, err: OSError):
        super().__init__(err.errno, err.strerror or str(err), path)
        self.path = path

    def __str__(self):
        return f'could not write {self.path}: {self.strerror}'

    def __reduce__(self):  # picklable (sent from rank 0 to the others)
        return type(self), (self.path, OSError(self.errno, self.strerror))


def write_guard(path: str):
    """A context manager that turns an :class:`OSError` into
    :class:`ResultsWriteError` naming ``path``."""
    return _WriteGuard(path)


class _WriteGuard:
    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        if err is not None and isinstance(err, OSError) and not isinstance(
                err, ResultsWriteError):
            raise ResultsWriteError(self.path, err) from err
        return False


_TMP = re.compile(r'\.tmp\d+$')


def atomic_write_bytes(path: str, write_fn: Callable,
                       keep_previous: Optional[str] = None):
    """Call ``write_fn(file)`` on a temporary file, fsync, then rename to
    ``path``; with ``keep_previous``, the file it replaces is first moved
    there (so that at every instant one of the two holds a whole file).
    Raises :class:`ResultsWriteError` when the disk refuses."""
    tmp = f'{path}.tmp{os.getpid()}'
    with write_guard(path):
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(tmp, 'wb') as f:
                write_fn(f)
                f.flush()
                os.fsync(f.fileno())
            if keep_previous and os.path.exists(path):
                os.replace(path, keep_previous)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def write_text(path: str, text: str):
    """Write ``text`` (UTF-8) to ``path``, atomically."""
    data = text.encode()
    atomic_write_bytes(path, lambda f: f.write(data))


def write_json(path: str, obj: Any):
    """Write ``obj`` as indented JSON, atomically."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=False) + '\n')


def read_jsonl(path: str) -> List[Any]:
    """The JSON objects of a JSON-lines file (a stats file, the resume
    history), one per line, skipping a torn last line; ``[]`` when there is
    no file."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return out


def remove_temp_files(folder: str) -> List[str]:
    """Remove the temporary files (``*.tmp<pid>``) that writes killed
    half-way left in ``folder`` and its sub-folders; returns their paths.
    Call it only while no other process writes there (the seed lock)."""
    removed = []
    for root, _, files in os.walk(folder):
        for name in files:
            if _TMP.search(name):
                path = os.path.join(root, name)
                with write_guard(path):
                    os.remove(path)
                removed.append(path)
    return sorted(removed)
