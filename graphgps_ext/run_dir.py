"""The results tree, named in one place.

Every file name of the results tree lives here; every other module asks
these classes for its paths (``tests/test_run_dir.py`` checks that no
other module spells one)::

    <out_dir>/                         Results
        REPORT.md                      python -m graphgps_ext.report
        _search/<task>/                a grid search: search.json, configs/,
                                       summary.csv, chosen.yaml
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

The formats: ``stats.json`` and ``resume_history.jsonl`` hold one JSON
object a line; ``best.json``, ``done`` and ``data.json`` one JSON object;
``config.yaml`` is YAML whose first line is ``# fingerprint: <hex>``
(:data:`FINGERPRINT_LINE`). Reading and checking them is
:mod:`graphgps_ext.seed_folder`'s job.
"""
import os
from typing import Tuple, Union

PathLike = Union[str, os.PathLike]

#: The first line of ``config.yaml``.
FINGERPRINT_LINE = '# fingerprint: {}'


class RunDir:
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

    def __init__(self, path: PathLike):
        self.path = os.fspath(path)

    @classmethod
    def of(cls, out_dir: PathLike, run_name: str, seed: int) -> 'RunDir':
        """The seed folder of ``seed`` in ``<out_dir>/<run_name>``."""
        return RunRoot(os.path.join(out_dir, run_name)).seed(seed)

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f'RunDir({self.path!r})'

    def join(self, *names: str) -> str:
        return os.path.join(self.path, *names)

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
        return (cls.CONFIG, cls.BEST, *(cls.stats_name(s) for s in cls.SPLITS))

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
        return RunRoot(os.path.dirname(os.path.normpath(self.path)))


class RunRoot:
    """A run's folder ``<out_dir>/<run_name>/``: its seed folders, the
    aggregation ``agg/`` and the launcher's ``logs/``."""
    AGG = 'agg'
    CURVES = 'curves.png'
    LOGS = 'logs'

    def __init__(self, path: PathLike):
        self.path = os.fspath(path)

    def __fspath__(self) -> str:
        return self.path

    def __str__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f'RunRoot({self.path!r})'

    def seed(self, seed: Union[int, str]) -> RunDir:
        return RunDir(os.path.join(self.path, str(seed)))

    @property
    def agg(self) -> str:
        return os.path.join(self.path, self.AGG)

    def agg_split(self, split: str) -> str:
        return os.path.join(self.agg, split)

    def agg_best(self, split: str) -> str:
        return os.path.join(self.agg, split, RunDir.BEST)

    def agg_stats(self, split: str) -> str:
        return os.path.join(self.agg, split, RunDir.STATS)

    @property
    def curves(self) -> str:
        return os.path.join(self.agg, self.CURVES)

    @property
    def logs(self) -> str:
        return os.path.join(self.path, self.LOGS)

    @classmethod
    def seed_log_name(cls, seed: Union[int, str]) -> str:
        """``logs/seed<k>.log``, relative to the run folder (``seed`` may
        be a shell expression such as ``'$seed'``)."""
        return f'{cls.LOGS}/seed{seed}.log'

    def seed_log(self, seed: int) -> str:
        return os.path.join(self.path, self.seed_log_name(seed))


class Results:
    """The results tree ``<out_dir>/``: the run folders, the report, the
    grid searches and the launcher's SLURM files."""
    REPORT = 'REPORT.md'
    SEARCHES = '_search'
    SLURM = '_slurm'
    #: A search folder's files.
    SEARCH = 'search.json'
    CONFIGS = 'configs'
    SUMMARY = 'summary.csv'
    CHOSEN = 'chosen.yaml'

    def __init__(self, path: PathLike):
        self.path = os.fspath(path)

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f'Results({self.path!r})'

    def run(self, run_name: str) -> RunRoot:
        return RunRoot(os.path.join(self.path, run_name))

    @property
    def report(self) -> str:
        return os.path.join(self.path, self.REPORT)

    @property
    def slurm(self) -> str:
        return os.path.join(self.path, self.SLURM)

    def search(self, task: str) -> str:
        """The folder of the grid search ``task``."""
        return os.path.join(self.path, self.SEARCHES, task)
