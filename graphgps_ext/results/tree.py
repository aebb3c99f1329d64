"""The results tree, named and formatted in one place.

Every file name of the results tree lives here; every other module asks
these classes for its paths (``tests/results/test_tree.py`` checks that no
other module spells one)::

    <out_dir>/                         Results
        REPORT.md                      python -m graphgps_ext.report
        _search/<task>/                SearchDir: a grid search's search.json,
                                       configs/, summary.csv, chosen.yaml
        _slurm/                        the launcher's sbatch scripts and output
    <out_dir>/<run_name>/              RunRoot
        <seed>/                        RunDir: one seed folder
            lock                       held by the process that runs the seed
            config.yaml                the resolved config, first line its fingerprint
            data.json                  the dataset's description
            split_indices.pt           the split's graph indices (when split here)
            logging.log                the run's log
            {train,val,test}/stats.json   one JSON record per evaluated epoch
            best.json                  the best epoch's record
            ckpt/last.pt               the resumable state (ckpt/last.prev.pt: the one before)
            ckpt/best.pt               the model of the best epoch
            resume_history.jsonl       one line per resume
            events.out.tfevents.*      TensorBoard (tensorboard.use)
            wandb/                     W&B files (wandb.use)
            done                       the marker of a finished run, written last
            .replacing/                an unfinished replacement (seed_folder.Replacement)
        agg/<split>/{best.json,stats.json}   mean and std over the seeds (agg)
        agg/curves.png                 the report's curves
        logs/seed<k>.log               the launcher's log of seed k

The formats are owned here too: every file of the tree that holds a
record is written and read by a method of its class (``RunDir.write_done``
/ ``read_done``, ``append_stats`` / ``read_stats``, ``RunRoot.write_agg``,
...), and no other module formats or parses one
(``tests/results/test_tree.py`` checks that as well):

- ``stats.json``, ``resume_history.jsonl`` and ``agg/<split>/stats.json``:
  one JSON object a line, appended a line at a time or rewritten whole; a
  torn last line (a kill mid-append) is dropped by the readers. A seed's
  stats are read strictly (another line that is not JSON:
  :class:`RunFileError`), the history and ``agg/`` up to such a line;
- ``best.json``, ``done``, ``data.json``: one indented JSON object;
  ``agg/<split>/best.json``: one JSON object on one line (GraphGym's);
- ``config.yaml``: the config as YAML, its first line
  ``# fingerprint: <hex>`` (:data:`FINGERPRINT_LINE`);
- ``lock``: one JSON object (who holds it) on one line, written in place by
  its holder; ``.replacing/manifest.json``: the JSON list of the entries
  moved aside;
- ``_search/<task>/`` (:class:`SearchDir`): ``search.json`` one indented
  JSON object, ``summary.csv`` a CSV table, ``configs/*.yaml`` and
  ``chosen.yaml`` configs under a ``#`` comment header (:func:`write_yaml`).

Every whole-file write is atomic (:mod:`graphgps_ext.files`); appends add
one line. The readers return the raw records (``None`` or ``{}`` for a
missing or unreadable file, as each method says) and raise
:class:`RunFileError` (the file and what is wrong) where the callers
report a damaged file. Every JSON value is parsed with a bound on its
nesting (:func:`graphgps_ext.files.loads`).

The tree is a jail. Each folder object knows the *root* of the tree it
belongs to (``out_dir`` for the folders :meth:`Results.run` and
:meth:`RunDir.of` give; by default the results folder two levels above a
seed folder, one above a run folder). Every path a folder gives is
checked by :func:`confine` when it is asked for: it must lie inside the
root (no ``..`` out of it, no absolute run name) and no existing component
below the root may be a symbolic link, the file itself included, so
nothing is read, written, moved or deleted through a link. The root itself
may be a link (``results -> /scratch/results``). :meth:`RunDir.entry`
allows the last component to be a link, for the operations that do not
follow one (moving a run entry aside, deleting it). A path that fails
raises :class:`UnsafePath`, naming the link or the escape. Run names are
Unicode-normalised (NFC), so the composed and decomposed spellings of one
name are one folder. The lock is created with ``O_CREAT | O_EXCL |
O_NOFOLLOW`` (:mod:`graphgps_ext.results.seed_folder`), temporary files of atomic
writes likewise (:mod:`graphgps_ext.files`), appends open with
``O_NOFOLLOW``, and ``.replacing/manifest.json`` holds entry names only
(:meth:`RunDir.read_manifest` refuses anything else).

What is not here: checking that the files of a seed folder agree with
each other, the lock and the replacement of a previous run
(:mod:`graphgps_ext.results.seed_folder`); the checkpoints' serialisation
(:mod:`graphgps_ext.train.checkpoint`, also of ``split_indices.pt``); the
text of ``REPORT.md`` (the report's Markdown) and of the SLURM scripts,
which their tools compose and write whole. Their names are given here.
"""
import json
import os
import re
import unicodedata
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from graphgps_ext.files import (UnsafePath, confine, load_file, loads, read_jsonl,
                                write_guard, write_json, write_text)

__all__ = ['UnsafePath', 'confine', 'RunFileError', 'RunDir', 'RunRoot', 'Results',
           'SearchDir', 'FINGERPRINT_LINE', 'run_name_path', 'is_seed_name', 'write_yaml']

PathLike = Union[str, os.PathLike]


def run_name_path(name: str) -> str:
    """A run name as a folder name: Unicode NFC (one folder for the composed
    and the decomposed spelling of a name)."""
    return unicodedata.normalize('NFC', name)


#: A seed folder's name: a seed in plain ASCII digits, without leading zeros.
SEED_NAME = re.compile(r'0|[1-9][0-9]*', re.ASCII)


def is_seed_name(name: str) -> bool:
    """Whether ``name`` is the name of a seed folder (``str(seed)``; names
    such as ``'007'``, ``'²'`` or ``'٣'`` are not)."""
    return SEED_NAME.fullmatch(name) is not None

#: The first line of ``config.yaml``.
FINGERPRINT_LINE = '# fingerprint: {}'


class RunFileError(ValueError):
    """A file of the results tree that cannot be read in its format:
    ``name`` (relative to its folder) and ``problem`` (e.g. ``'line 3 is
    not JSON'``)."""

    def __init__(self, name: str, problem: str):
        super().__init__(f'{name} {problem}')
        self.name = name
        self.problem = problem


def _lines(records: Sequence[Any]) -> str:
    """JSON lines: one compact object per line."""
    return ''.join(json.dumps(r) + '\n' for r in records)


def _append_line(path: str, line: str):
    """Add one line to ``path`` (created if missing; never through a link)."""
    with write_guard(path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW,
                     0o666)
        with os.fdopen(fd, 'a', encoding='utf-8') as f:
            f.write(line + '\n')


def _read_lines(path: str, name: str) -> List[Tuple[int, Any]]:
    """``(line number, JSON value)`` of every line of ``path``, blank lines
    skipped; a
    last line without its newline that is not JSON (torn by a kill
    mid-append) is dropped. ``[]`` without a file. :class:`RunFileError`
    (``name``) for an unreadable file or another line that is not JSON."""
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding='utf-8') as f:
            lines = f.read().split('\n')
    except (OSError, UnicodeDecodeError) as err:
        raise RunFileError(name, f'cannot be read ({err})') from None
    out: List[Tuple[int, Any]] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append((i + 1, loads(line)))
        except ValueError as err:
            if i == len(lines) - 1:
                break
            why = f' ({err})' if 'nested' in str(err) else ''
            raise RunFileError(name, f'line {i + 1} is not JSON{why}') from None
    return out


def _read_json(path: str) -> Any:
    """The JSON value of ``path`` (:func:`graphgps_ext.files.load_file`:
    nesting bounded); ``OSError`` / ``ValueError``."""
    return load_file(path)


class _Folder:
    """A folder of the results tree, path-like: ``os.path.join(folder,
    ...)`` and ``open`` take it; :meth:`join` gives a path below it,
    checked against the tree's root (:func:`confine`). ``tree``: the root
    (by default :attr:`LEVELS` folders above this one)."""
    #: How many folders above this one the root lies by default.
    LEVELS = 0

    def __init__(self, path: PathLike, tree: Optional[PathLike] = None):
        self.path = os.fspath(path)
        if tree is None:
            tree = os.path.normpath(self.path)
            for _ in range(self.LEVELS):
                tree = os.path.dirname(tree)
        self.tree = os.fspath(tree)

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.path!r})'

    def join(self, *names: str) -> str:
        """The path of ``names`` below this folder, checked: inside the root,
        through no link (:class:`UnsafePath`)."""
        path = os.path.join(self.path, *names)
        confine(path, self.tree)
        return path

    def entry(self, name: str) -> str:
        """The path of the entry ``name`` of this folder for moving or
        deleting it: checked as :meth:`join`, except that the entry itself
        may be a link (which is moved or deleted, never followed)."""
        path = os.path.join(self.path, name)
        confine(path, self.tree, link_ok=True)
        return path

    def check(self) -> str:
        """This folder's path, checked as :meth:`join` checks its files."""
        confine(self.path, self.tree)
        return self.path


class RunDir(_Folder):
    """One seed folder ``<out_dir>/<run_name>/<seed>/`` and its file names.

    The class attributes are the names (relative to the folder); the
    properties and methods give the paths under :attr:`path`. A ``RunDir``
    is path-like: ``os.path.join(run_dir, ...)`` and ``open`` take it.
    """
    LOCK = 'lock'
    CONFIG = 'config.yaml'
    DATA = 'data.json'
    SPLIT_INDICES = 'split_indices.pt'
    LOG = 'logging.log'
    STATS = 'stats.json'
    BEST = 'best.json'
    CKPT = 'ckpt'
    HISTORY = 'resume_history.jsonl'
    EVENTS = 'events.out.tfevents'
    WANDB = 'wandb'
    DONE = 'done'
    #: An unfinished replacement, its manifest, and a committed one's leftovers.
    PENDING = '.replacing'
    MANIFEST = 'manifest.json'
    TRASH = '.replaced'
    #: The splits that have a stats folder.
    SPLITS: Tuple[str, ...] = ('train', 'val', 'test')
    #: What a run writes into its seed folder (and a replacement moves);
    #: TensorBoard's event files too (:meth:`is_entry`).
    ENTRIES: Tuple[str, ...] = (DONE, CONFIG, LOG, BEST, DATA, SPLIT_INDICES,
                                HISTORY, *SPLITS, CKPT, WANDB)

    LEVELS = 2

    @classmethod
    def of(cls, out_dir: PathLike, run_name: str, seed: int) -> 'RunDir':
        """The seed folder of ``seed`` in ``<out_dir>/<run_name>`` (its root:
        ``out_dir``)."""
        return Results(out_dir).run(run_name).seed(seed)

    # ----------------------------------------------------------- names --
    @classmethod
    def stats_name(cls, split: str) -> str:
        """``<split>/stats.json``, relative to the seed folder."""
        return f'{split}/{cls.STATS}'

    @classmethod
    def ckpt_name(cls, which: str) -> str:
        """``ckpt/<which>.pt`` (``last``, ``best``, ``last.corrupt``)."""
        return f'{cls.CKPT}/{which}.pt'

    @staticmethod
    def previous(path: str) -> str:
        """The kept previous version of a checkpoint file:
        ``ckpt/last.pt`` -> ``ckpt/last.prev.pt``."""
        stem, ext = os.path.splitext(path)
        return f'{stem}.prev{ext}'

    @classmethod
    def checked_files(cls) -> Tuple[str, ...]:
        """The files of a finished run whose SHA-256 the ``done`` marker
        records (relative paths)."""
        return (cls.CONFIG, cls.BEST, cls.DATA, *(cls.stats_name(s) for s in cls.SPLITS))

    @classmethod
    def is_entry(cls, name: str) -> bool:
        """Whether ``name`` (an entry of a seed folder) is a run's."""
        return name in cls.ENTRIES or name.startswith(cls.EVENTS)

    # ----------------------------------------------------------- paths --
    @property
    def lock(self) -> str:
        return self.join(self.LOCK)

    @property
    def config(self) -> str:
        return self.join(self.CONFIG)

    @property
    def data(self) -> str:
        return self.join(self.DATA)

    @property
    def split_indices(self) -> str:
        return self.join(self.SPLIT_INDICES)

    @property
    def log(self) -> str:
        return self.join(self.LOG)

    @property
    def best(self) -> str:
        return self.join(self.BEST)

    @property
    def history(self) -> str:
        return self.join(self.HISTORY)

    @property
    def done(self) -> str:
        return self.join(self.DONE)

    @property
    def wandb(self) -> str:
        return self.join(self.WANDB)

    @property
    def events_glob(self) -> str:
        """A glob pattern of TensorBoard's event files."""
        return self.join(self.EVENTS + '.*')

    @property
    def pending(self) -> str:
        return self.join(self.PENDING)

    @property
    def trash(self) -> str:
        return self.join(self.TRASH)

    def split_dir(self, split: str) -> str:
        return self.join(split)

    def stats(self, split: str) -> str:
        return self.join(self.stats_name(split))

    @property
    def ckpt_dir(self) -> str:
        return self.join(self.CKPT)

    def ckpt(self, which: str) -> str:
        """``ckpt/<which>.pt``: ``last`` (resumable state), ``best`` (the
        best epoch's model), ``last.corrupt`` (an unreadable ``last.pt``
        set aside)."""
        return self.join(self.ckpt_name(which))

    @property
    def last_ckpt(self) -> str:
        return self.ckpt('last')

    @property
    def best_ckpt(self) -> str:
        return self.ckpt('best')

    @property
    def seed(self) -> str:
        """The folder's name (the seed)."""
        return os.path.basename(os.path.normpath(self.path))

    @property
    def root(self) -> 'RunRoot':
        """The run folder that holds this seed folder."""
        return RunRoot(os.path.dirname(os.path.normpath(self.path)), self.tree)

    # --------------------------------------------------------- formats --
    @staticmethod
    def lock_record(info: Dict[str, Any]) -> bytes:
        """The contents of ``lock``: ``info`` (who holds it) as one JSON
        line (written in place by the holder, which keeps the file open)."""
        return (json.dumps(info) + '\n').encode()

    @staticmethod
    def parse_lock(data: bytes) -> Optional[Dict[str, Any]]:
        """The holder's ``info`` from the contents of ``lock``, or ``None``
        (empty: not written yet, or not a JSON object)."""
        try:
            info = loads(data.decode() or 'null')
        except ValueError:  # UnicodeDecodeError included
            return None
        return info if isinstance(info, dict) else None

    def write_config(self, text: str, fingerprint: str):
        """``config.yaml``: :data:`FINGERPRINT_LINE`, then ``text`` (the
        config as YAML), atomically; the file loads as a config."""
        write_text(self.config, FINGERPRINT_LINE.format(fingerprint) + '\n' + text)

    def read_fingerprint(self) -> Optional[str]:
        """The fingerprint on the first line of ``config.yaml`` (``None``
        without a readable file or without the line)."""
        try:
            with open(self.config, encoding='utf-8') as f:
                first = f.readline().strip()
        except (OSError, UnicodeDecodeError):
            return None
        prefix = FINGERPRINT_LINE.format('')
        return first[len(prefix):] if first.startswith(prefix) else None

    def read_config(self) -> Dict[str, Any]:
        """The mapping of ``config.yaml``
        (:func:`graphgps_ext.config.read_yaml`), ``{}`` when it cannot be
        read."""
        from graphgps_ext.config import ConfigError, read_yaml
        try:
            return read_yaml(self.config)
        except ConfigError:
            return {}

    def write_data(self, info: Dict[str, Any]):
        """``data.json``: the dataset's description, atomically."""
        write_json(self.data, info)

    def read_data(self) -> Optional[Any]:
        """``data.json``'s value, or ``None`` (no file, not JSON)."""
        try:
            return _read_json(self.data)
        except (OSError, ValueError):
            return None

    def append_stats(self, split: str, record: Dict[str, Any]):
        """Add one epoch's record to ``<split>/stats.json`` (one line)."""
        _append_line(self.stats(split), json.dumps(record))

    def write_stats(self, split: str, records: Sequence[Dict[str, Any]]):
        """Rewrite ``<split>/stats.json`` with ``records``, atomically."""
        write_text(self.stats(split), _lines(records))

    def read_stats(self, split: str) -> List[Any]:
        """The lines of ``<split>/stats.json`` as JSON values, unchecked
        (:func:`graphgps_ext.results.seed_folder.read_stats` checks them): ``[]``
        without a file, a torn last line dropped; :class:`RunFileError` for
        an unreadable file or an earlier line that is not JSON."""
        return [rec for _, rec in self.read_stats_lines(split)]

    def read_stats_lines(self, split: str) -> List[Tuple[int, Any]]:
        """:meth:`read_stats` with each value's line number (1-based), for
        the checks that name a line."""
        return _read_lines(self.stats(split), self.stats_name(split))

    def write_best(self, best: Dict[str, Any]):
        """``best.json``: the best epoch's record, atomically."""
        write_json(self.best, best)

    def read_best(self) -> Optional[Any]:
        """``best.json``'s value, unchecked
        (:func:`graphgps_ext.results.seed_folder.read_best` checks it), ``None``
        without a file; :class:`RunFileError` when it is not JSON."""
        if not os.path.exists(self.best):
            return None
        try:
            return _read_json(self.best)
        except (OSError, ValueError) as err:
            raise RunFileError(self.BEST, f'is not valid JSON ({err})') from None

    def append_history(self, record: Dict[str, Any]):
        """Add one resume's record to ``resume_history.jsonl`` (one line;
        values JSON does not know are written as text)."""
        _append_line(self.history, json.dumps(record, default=str))

    def read_history(self) -> List[Any]:
        """The records of ``resume_history.jsonl`` (``[]`` without one; a
        torn last line dropped)."""
        return read_jsonl(self.history)

    def write_done(self, record: Dict[str, Any]):
        """The ``done`` marker, atomically: written last, when the run has
        finished."""
        write_json(self.done, record)

    def read_done(self) -> Optional[Dict[str, Any]]:
        """The ``done`` marker as a dict (``{}`` when it is not a JSON
        object, e.g. written by hand), or ``None`` when there is none."""
        if not os.path.lexists(self.done):
            return None
        try:
            data = _read_json(self.done)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def manifest(self) -> str:
        """``.replacing/manifest.json``."""
        return os.path.join(self.pending, self.MANIFEST)

    @classmethod
    def is_entry_name(cls, name: Any) -> bool:
        """Whether ``name`` is the plain name of a run entry (no path: no
        separator, not ``.`` or ``..``)."""
        return (isinstance(name, str) and cls.is_entry(name) and '/' not in name
                and os.sep not in name and '\0' not in name
                and name not in (os.curdir, os.pardir))

    def write_manifest(self, names: Sequence[str]):
        """The entries a replacement moves aside (their names, never paths),
        atomically."""
        bad = [n for n in names if not self.is_entry_name(n)]
        if bad:
            raise ValueError(f'not names of run entries: {bad}')
        write_text(self.manifest, json.dumps(list(names)))

    def read_manifest(self) -> Optional[List[str]]:
        """The entries recorded by :meth:`write_manifest`, or ``None`` when
        the manifest is missing or incomplete (not JSON). A manifest that
        holds anything but a list of entry names (a path such as
        ``../../x``) raises :class:`RunFileError`: it was not written by a
        run, and nothing it names is moved."""
        name = f'{self.PENDING}/{self.MANIFEST}'
        try:
            names = _read_json(self.manifest)
        except FileNotFoundError:
            return None
        except ValueError as err:
            if 'nested' in str(err):
                raise RunFileError(name, f'is not a list of entry names ({err})') from None
            return None  # torn by a kill while it was written: nothing moved yet
        except OSError as err:
            raise RunFileError(name, f'cannot be read ({err})') from None
        if not isinstance(names, list) or not all(map(self.is_entry_name, names)):
            shown = [n for n in names if not self.is_entry_name(n)][:3] \
                if isinstance(names, list) else type(names).__name__
            raise RunFileError(name, f'holds {shown!r}, not only names of run '
                               f'entries ({", ".join(self.ENTRIES)})')
        return names


class RunRoot(_Folder):
    """A run's folder ``<out_dir>/<run_name>/``: its seed folders, the
    aggregation ``agg/`` and the launcher's ``logs/``."""
    AGG = 'agg'
    CURVES = 'curves.png'
    LOGS = 'logs'
    LEVELS = 1

    def seed(self, seed: Union[int, str]) -> RunDir:
        return RunDir(os.path.join(self.path, str(seed)), self.tree)

    def seed_names(self) -> Tuple[List[str], List[str]]:
        """``(seed folder names, other names that look like seeds)`` among
        the entries of this folder: a seed folder's name is ``str(seed)``
        (:func:`is_seed_name`); names of digits in another form (``'007'``,
        ``'²'``, ``'٣'``) are listed apart, never read as seeds."""
        names, odd = [], []
        for entry in sorted(os.listdir(self.check())):
            if is_seed_name(entry):
                names.append(entry)
            elif any(c.isdigit() for c in entry) and all(
                    c.isdigit() or c.isspace() for c in entry):
                odd.append(entry)
        return sorted(names, key=int), odd

    @property
    def agg(self) -> str:
        return self.join(self.AGG)

    def agg_split(self, split: str) -> str:
        return self.join(self.AGG, split)

    def agg_best(self, split: str) -> str:
        return self.join(self.AGG, split, RunDir.BEST)

    def agg_stats(self, split: str) -> str:
        return self.join(self.AGG, split, RunDir.STATS)

    @property
    def curves(self) -> str:
        return self.join(self.AGG, self.CURVES)

    def write_agg(self, split: str, best: Dict[str, Any],
                  stats: Sequence[Dict[str, Any]]):
        """``agg/<split>/best.json`` (one JSON object on one line, as
        GraphGym's) and ``agg/<split>/stats.json`` (one object per epoch and
        line), each atomically."""
        write_text(self.agg_best(split), json.dumps(best) + '\n')
        write_text(self.agg_stats(split), _lines(stats))

    def remove_agg(self, split: str):
        """Remove ``agg/<split>/``'s files (where present)."""
        for name in (RunDir.BEST, RunDir.STATS):
            path = self.entry(os.path.join(self.AGG, split, name))
            with write_guard(path):
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass

    def read_agg_best(self, split: str) -> Optional[Dict[str, Any]]:
        """``agg/<split>/best.json``, or ``None`` (none, not a JSON object)."""
        try:
            best = _read_json(self.agg_best(split))
        except (OSError, ValueError):
            return None
        return best if isinstance(best, dict) else None

    def read_agg_stats(self, split: str) -> List[Any]:
        """The records of ``agg/<split>/stats.json`` (``[]`` without one)."""
        return read_jsonl(self.agg_stats(split))

    @property
    def logs(self) -> str:
        return self.join(self.LOGS)

    @classmethod
    def seed_log_name(cls, seed: Union[int, str]) -> str:
        """``logs/seed<k>.log``, relative to the run folder (``seed`` may
        be a shell expression such as ``'$seed'``)."""
        return f'{cls.LOGS}/seed{seed}.log'

    def seed_log(self, seed: int) -> str:
        return self.join(self.seed_log_name(seed))


class Results(_Folder):
    """The results tree ``<out_dir>/``: the run folders, the report, the
    grid searches and the launcher's SLURM files."""
    REPORT = 'REPORT.md'
    SEARCHES = '_search'
    SLURM = '_slurm'
    #: torch.compile's caches shared by the runs of the tree
    #: (:mod:`graphgps_ext.train.compile_cache`).
    COMPILE_CACHE = '_compile_cache'
    #: A search folder's files.
    SEARCH = 'search.json'
    CONFIGS = 'configs'
    SUMMARY = 'summary.csv'
    CHOSEN = 'chosen.yaml'

    def run(self, run_name: str) -> RunRoot:
        """The run folder of ``run_name`` (Unicode NFC, :func:`run_name_path`),
        its root this results folder."""
        return RunRoot(os.path.join(self.path, run_name_path(run_name)), self.path)

    @property
    def report(self) -> str:
        return self.join(self.REPORT)

    @property
    def slurm(self) -> str:
        return self.join(self.SLURM)

    @property
    def compile_cache(self) -> str:
        return os.path.join(self.path, self.COMPILE_CACHE)

    def search(self, task: str) -> str:
        """The folder of the grid search ``task`` (:class:`SearchDir`)."""
        return self.join(self.SEARCHES, task)

    def overlay(self, names: Sequence[str]) -> str:
        """The figure of ``python -m graphgps_ext.report --overlay`` for
        the run folders ``names``: ``overlay_<name>_<name>...png``."""
        return os.path.join(self.path, 'overlay_' + '_'.join(names) + '.png')


def write_yaml(path: PathLike, tree: Dict[str, Any], header: str):
    """A config file (a search's point or its chosen point): ``header`` as
    ``#`` comment lines, then ``tree`` as block YAML in its key order,
    atomically."""
    import yaml
    write_text(os.fspath(path), ''.join(f'# {ln}\n' for ln in header.splitlines())
               + yaml.safe_dump(tree, sort_keys=False, default_flow_style=False))


class SearchDir(_Folder):
    """A grid search's folder ``<out_dir>/_search/<task>/``: its record
    ``search.json`` (one indented JSON object: what was searched, the
    points, their run folders and fingerprints), the points' configs
    ``configs/<point>.yaml``, the ranking ``summary.csv`` and the best
    point's config ``chosen.yaml`` (the configs: :func:`write_yaml`)."""
    LEVELS = 2

    @property
    def record(self) -> str:
        return self.join(Results.SEARCH)

    @property
    def configs(self) -> str:
        return self.join(Results.CONFIGS)

    def config(self, point: str) -> str:
        """``configs/<point>.yaml``."""
        return self.join(Results.CONFIGS, f'{point}.yaml')

    @property
    def summary(self) -> str:
        return self.join(Results.SUMMARY)

    @property
    def chosen(self) -> str:
        return self.join(Results.CHOSEN)

    def write_record(self, search: Dict[str, Any]):
        """``search.json``, atomically."""
        write_json(self.record, search)

    def read_record(self) -> Any:
        """``search.json``'s value (``OSError`` / ``ValueError`` as
        :func:`json.load` raises them)."""
        return _read_json(self.record)

    def write_summary(self, header: Sequence[Any], rows: Sequence[Sequence[Any]]):
        """``summary.csv``: ``header``, then ``rows`` (the csv module's
        dialect), atomically."""
        import csv
        import io
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(header)
        w.writerows(rows)
        write_text(self.summary, buf.getvalue())
