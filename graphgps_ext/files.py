"""Result files written whole or not at all, and the reader of JSON lines.

Every result file (checkpoints, stats, ``best.json``, ``done``, the resolved
config, aggregates, reports, launcher scripts, cached encodings) is written
by :func:`atomic_write_bytes`: serialised in memory, written to a temporary
file ``<name>.tmp<pid>`` in the same directory, flushed to disk, then moved
over the target with :func:`os.replace`, so an interrupted write never
leaves a truncated file behind. A process killed in the middle of a write
leaves its temporary file; :func:`remove_temp_files` clears them when the
folder is next used. The temporary file is created exclusively and never
through a symbolic link (``O_CREAT | O_EXCL | O_NOFOLLOW``), and
:func:`os.replace` replaces a link at the target rather than following it,
so a write never lands outside its folder. A write the disk refuses (disk
full, read-only folder, no permission, a path too long) raises
:class:`ResultsWriteError` naming the file, with advice that matches the
cause (:attr:`ResultsWriteError.advice`).

:func:`confine` checks a path against the root of a tree the project
writes (the results tree, :mod:`graphgps_ext.results.tree`; a dataset folder):
inside the root, through no symbolic link below it.

Every JSON file of the project is parsed by :func:`loads`, which refuses
values nested deeper than :data:`MAX_JSON_DEPTH` before the parser sees
them (a hand-made file of 100,000 nested brackets would otherwise exhaust
the parser's recursion).
"""
import errno
import json
import os
import re
import stat
from typing import Any, Callable, List, Optional, Union

#: The deepest nesting :func:`loads` accepts (the project's files nest 4
#: levels at most).
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _depth(text: str) -> int:
    """The deepest nesting of ``[`` / ``{`` in the JSON ``text`` (brackets
    inside strings not counted), or a bound of it at most
    :data:`MAX_JSON_DEPTH`: a text with few brackets is not scanned."""
    opening = text.count('[') + text.count('{')
    if opening <= MAX_JSON_DEPTH:  # the usual case
        return opening
    import numpy as np
    bare = _JSON_STRING.sub('""', text).encode('utf-8', 'replace')
    chars = np.frombuffer(bare, dtype=np.uint8)
    step = (np.isin(chars, (ord('['), ord('{'))).astype(np.int64)
            - np.isin(chars, (ord(']'), ord('}'))))
    return int(np.cumsum(step).max(initial=0))


def loads(text: str) -> Any:
    """:func:`json.loads`, refusing nesting deeper than
    :data:`MAX_JSON_DEPTH` levels with a ``ValueError`` that says so (as
    :func:`json.loads` raises one for text that is not JSON)."""
    depth = _depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f'nested {depth} levels deep (at most {MAX_JSON_DEPTH} '
                         'are read)')
    try:
        return json.loads(text)
    except RecursionError:  # not reached after the check; kept as a guard
        raise ValueError('nested too deeply') from None


def load_file(path: str) -> Any:
    """The JSON value of the file ``path`` (:func:`loads`); ``OSError`` /
    ``ValueError`` (``UnicodeDecodeError`` included) when it cannot be
    read or is not JSON."""
    with open(path, encoding='utf-8') as f:
        return loads(f.read())


class UnsafePath(ValueError):
    """A path of the results tree that leaves its root or passes through a
    symbolic link below it (``main.py``, ``agg``, ``report``: exit code 2).
    ``path``: the path asked for; ``where``: the link or the escape."""

    def __init__(self, path: str, root: str, problem: str):
        super().__init__(
            f'{path}: {problem}. Nothing is read, written, moved or deleted '
            f'through a symbolic link below the results root {root}, nor outside '
            'it: remove the link (or move the real folder to where the link is), '
            'or choose another out_dir / run_name')
        self.path, self.root, self.problem = path, root, problem


def confine(path: Union[str, os.PathLike], root: Union[str, os.PathLike],
            link_ok: bool = False) -> str:
    """``path``, absolute and normalised, checked to lie inside the folder
    ``root`` and to pass through no symbolic link below it (its existing
    components are examined with :func:`os.lstat`; the missing ones will be
    created as plain folders). With ``link_ok`` the last component may be a
    link (for :func:`os.replace` and :func:`os.unlink`, which do not follow
    it). Raises :class:`UnsafePath`."""
    base = os.path.abspath(os.fspath(root))
    full = os.path.abspath(os.fspath(path))
    rel = os.path.relpath(full, base)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        raise UnsafePath(os.fspath(path), base, 'it lies outside the results root')
    if rel == os.curdir:
        return full
    parts = rel.split(os.sep)
    here = base
    for i, part in enumerate(parts):
        here = os.path.join(here, part)
        try:
            mode = os.lstat(here).st_mode
        except (FileNotFoundError, NotADirectoryError):
            break
        if stat.S_ISLNK(mode) and not (link_ok and i == len(parts) - 1):
            try:
                target = os.readlink(here)
            except OSError:
                target = '?'
            raise UnsafePath(os.fspath(path), base,
                             f'{here} is a symbolic link (to {target})')
    return full


class ResultsWriteError(OSError):
    """A result file could not be written (disk full, read-only folder,
    missing permission): ``path`` and the operating system's reason."""

    def __init__(self, path: str, err: OSError):
        super().__init__(err.errno, err.strerror or str(err), path)
        self.path = path

    def __str__(self):
        return f'could not write {self.path}: {self.strerror}'

    @property
    def advice(self) -> str:
        """What to do, in words that match the cause (the error number)."""
        code = self.errno
        if code == errno.ENOSPC:
            return 'The disk is full: free some space there'
        if code == getattr(errno, 'EDQUOT', None):
            return ('Your disk quota there is used up: free some space, or ask '
                    'for a larger quota, or set out_dir on another file system')
        if code == errno.EROFS:
            return ('The file system is mounted read-only: set out_dir to a '
                    'writable location')
        if code in (errno.EACCES, errno.EPERM):
            return ('You may not write there: make the folder writable (chmod, '
                    'or ask its owner), or set out_dir to a folder of yours')
        if code == errno.ENAMETOOLONG:
            longest = max(os.fsencode(self.path).split(b'/'), key=len)
            return (f'The path is too long for the file system ({len(os.fsencode(self.path))} '
                    f'bytes; its longest name has {len(longest)}; the usual limits are '
                    '255 bytes a name and 4,096 a path): use a shorter out_dir or '
                    'run_name')
        if code in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
            return ('A file stands where a folder is needed on that path (or a '
                    'folder where a file is): move it, or set out_dir elsewhere')
        if code == errno.ELOOP:
            return ('A symbolic link stands on that path: results are never '
                    'written through one; remove it')
        if code == errno.EIO:
            return 'The disk reported an input/output error: check the disk'
        return (f'The operating system refused ({errno.errorcode.get(code, code)}): '
                'fix the cause')

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
            if os.path.lexists(tmp):  # left by an earlier process of this pid
                os.unlink(tmp)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o666)
            with os.fdopen(fd, 'wb') as f:
                write_fn(f)
                f.flush()
                os.fsync(f.fileno())
            if keep_previous and os.path.exists(path):
                os.replace(path, keep_previous)
            os.replace(tmp, path)
        finally:
            if os.path.lexists(tmp):
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
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(loads(line))
            except ValueError:
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
