"""What a sweep runs: configs x seeds, resolved as ``main.py`` resolves them.

Each config is loaded with the package's own :func:`~graphgps_ext.runs.config.load_cfg`
and the sweep's overrides, so its results folder ``<out_dir>/<run_name>``,
its log folder ``<out_dir>/<run_name>/logs`` and its identity
(:func:`graphgps_ext.results.identity.identity`) are those of the runs it launches
(``run_name`` and ``out_dir`` overrides included). A seed is skipped only
when :func:`~graphgps_ext.results.identity.seed_status` says ``complete`` (its
``done`` marker carries this identity's fingerprint); a seed finished with
another config is *stale*: reported with the keys that differ and re-run
only when asked.
"""
import glob
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from graphgps_ext.results.identity import (SeedStatus, data_record, fingerprint, identity,
                                           seed_status)
from graphgps_ext.results.tree import RunDir, RunRoot
from graphgps_ext.runs import seed_lists


class SweepError(ValueError):
    """A mistake on the command line or in an input file (exit code 2)."""


#: Runs one launch may plan (configs or points x seeds, counted before any
#: is resolved): each is a seed folder checked and a line of a script.
MAX_RUNS = 100_000


def check_runs(total: int, what: str):
    """Refuse a launch of more than :data:`MAX_RUNS` runs (``what``: how
    the count comes about, for the message)."""
    if total > MAX_RUNS:
        raise SweepError(f'{what} make {total:,} runs, more than {MAX_RUNS:,} in one launch: '
                         'launch fewer configs, points or seeds at a time')


def parse_seeds(spec: str) -> List[int]:
    """:func:`graphgps_ext.runs.seed_lists.parse_seeds` (``'0-3,8'`` -> ``[0, 1, 2, 3,
    8]``, at most :data:`~graphgps_ext.runs.seed_lists.MAX_SEEDS`), each seed within
    the range declared for ``seed``; raises :class:`SweepError`."""
    from graphgps_ext.config import check_key
    try:
        out = seed_lists.parse_seeds(spec)
    except ValueError as err:
        raise SweepError(str(err)) from None
    problem = check_key('seed', max(out), 'from --seeds')
    if problem:
        raise SweepError(problem)
    return out


def expand_config(arg: str) -> List[str]:
    """A YAML file, or the files a (quoted) glob matches, sorted."""
    paths = [arg] if os.path.isfile(arg) else sorted(p for p in glob.glob(arg)
                                                     if os.path.isfile(p))
    if not paths:
        raise SweepError(f"no config matches '{arg}'")
    for p in paths:
        if not p.endswith(('.yaml', '.yml')):
            raise SweepError(f"'{p}' is not a YAML config")
    return paths


def read_plan(path: str) -> List[Tuple[str, str]]:
    """``[(config or glob, seeds)]`` of a plan file: lines ``CONFIG SEEDS``,
    ``#`` comments."""
    if not os.path.isfile(path):
        raise SweepError(f"plan file '{path}' not found")
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                raise SweepError(f"{path}:{n}: bad plan line '{line}' (want: CONFIG SEEDS)")
            out.append((parts[0], parts[1]))
    return out


def override_keys(overrides: Sequence[str]) -> List[str]:
    return list(overrides[0::2])


@dataclass
class Target:
    """One config resolved with the sweep's overrides.

    Attributes:
        config: the YAML file.
        overrides: ``KEY VALUE`` words passed to ``main.py``.
        out_dir, name: ``cfg.out_dir`` and ``cfg.run_name``: the runs go to
            ``<out_dir>/<name>/<seed>``.
        identity, fingerprint: the runs' identity and its fingerprint.
    """
    config: str
    overrides: List[str]
    out_dir: str
    name: str
    identity: Dict
    fingerprint: str
    #: The data folder the runs read (:func:`graphgps_ext.results.identity.data_record`).
    data: Optional[Dict] = None

    @property
    def folder(self) -> str:
        return os.path.join(self.out_dir, self.name)

    def run_dir(self, seed: int) -> str:
        return RunRoot(self.folder).seed(seed).path

    def log(self, seed: int) -> str:
        return RunRoot(self.folder).seed_log(seed)


def resolve(config: str, overrides: Sequence[str]) -> Target:
    """Load ``config`` with ``overrides`` as ``main.py`` does. The
    accelerator is resolved as ``cpu`` here (it is not part of the identity),
    so that a login node without GPUs resolves GPU configs. Raises
    :class:`SweepError` naming the config on a config error."""
    from graphgps_ext.config import ConfigError
    from graphgps_ext.runs.config import load_cfg
    try:
        cfg = load_cfg(config, list(overrides) + ['accelerator', 'cpu'])
    except ConfigError as err:
        raise SweepError(f'{config}: {err}') from None
    ident = identity(cfg)
    return Target(config, list(overrides), str(cfg.out_dir), str(cfg.run_name), ident,
                  fingerprint(ident), data_record(cfg))


@dataclass
class Run:
    """One seed of a target to run; ``overwrite``: it replaces a finished
    seed (``main.py --overwrite``)."""
    target: Target
    seed: int
    status: SeedStatus
    overwrite: bool = False

    @property
    def run_dir(self) -> str:
        return self.target.run_dir(self.seed)

    @property
    def log(self) -> str:
        return self.target.log(self.seed)


@dataclass
class StackRun:
    """Seeds of one target run as one stacked model in one process
    (``--stack K``: ``main.py --seeds a,b,.. --stack K``, see
    docs/stacking.md). ``seed`` names them (``'0,1,2'``) where a run names
    its one seed: in messages, the log file name and the SLURM arrays."""
    target: Target
    runs: List[Run]

    @property
    def seeds(self) -> List[int]:
        return [r.seed for r in self.runs]

    @property
    def seed(self) -> str:
        return ','.join(map(str, self.seeds))

    @property
    def overwrite(self) -> bool:
        return self.runs[0].overwrite

    @property
    def run_dir(self) -> str:
        return self.runs[0].run_dir

    @property
    def log(self) -> str:
        return self.target.log(self.seed)


def stacks(runs: Sequence[Run], k: int) -> List:
    """``runs`` with the seeds of each target in stacks of ``k`` (in order;
    a target's last stack may hold fewer, a single seed stays a
    :class:`Run`). Seeds that replace a finished run (``--overwrite``) stack
    only with each other."""
    out: List = []
    group: List[Run] = []

    def close():
        if len(group) == 1:
            out.append(group[0])
        elif group:
            out.append(StackRun(group[0].target, list(group)))

    for run in runs:
        if group and (run.target is not group[0].target
                      or run.overwrite != group[0].overwrite or len(group) == k):
            close()
            group = []
        group.append(run)
    close()
    return out


@dataclass
class Plan:
    """The runs to do and the seeds left alone, per target in order."""
    targets: List[Target] = field(default_factory=list)
    runs: List[Run] = field(default_factory=list)
    complete: List[Run] = field(default_factory=list)
    stale: List[Run] = field(default_factory=list)
    owned: List[Tuple[Run, str]] = field(default_factory=list)

    def claim_owned(self, queued: Dict[str, Tuple[str, str, str]]):
        """Move the runs that another process owns to ``owned`` (with who):
        a live process holding the seed's lock, or a queued, running or
        requeued SLURM task (``queued``: :func:`graphgps_ext.sweep.slurm.queued_owners`)."""
        keep = []
        for r in self.runs:
            owner = queued.get(os.path.normpath(r.run_dir))
            holder = lock_holder(r.run_dir)
            if owner is not None:
                fp, job, state = owner
                same = ('same config' if fp == r.target.fingerprint else
                        'another config: rerun it after that task ends')
                self.owned.append((r, f'SLURM task {job} {state}, {same}'))
            elif holder is not None:
                self.owned.append((r, f'a live run: {holder}'))
            else:
                keep.append(r)
        self.runs = keep

    def notes(self) -> List[str]:
        """One line per seed left alone or run for a reason worth saying."""
        out = []
        for r, who in self.owned:
            out.append(f'# skip {r.target.name} seed {r.seed} (owned by {who})')
        for r in self.complete:
            out.append(f'# skip {r.target.name} seed {r.seed} (complete: {r.run_dir})')
        for r in self.stale:
            out.append(f'# skip {r.target.name} seed {r.seed} ({r.status.describe()}; '
                       '--rerun-stale reruns it)')
        for r in self.runs:
            if r.status.state in ('stale', 'complete', 'damaged'):
                out.append(f'# rerun {r.target.name} seed {r.seed} ({r.status.describe()}; '
                           'replaced: --overwrite)')
            elif r.status.state == 'unfinished':
                how = ('resumes from its checkpoint' if 'train.auto_resume' in
                       override_keys(r.target.overrides) else 'restarts')
                out.append(f'# unfinished {r.target.name} seed {r.seed} ({how})')
        return out


def make_plan(pairs: Sequence[Tuple[str, Sequence[int]]], overrides: Sequence[str],
              force: bool = False, rerun_stale: bool = False) -> Plan:
    """Resolve every ``(config, seeds)`` and sort its seeds into runs to do,
    complete and stale ones. Two configs that resolve to one results folder
    with different identities are refused (their seeds would mix)."""
    plan = Plan()
    by_folder: Dict[str, Target] = {}
    seen = set()
    for config, seeds in pairs:
        target = resolve(config, overrides)
        known = by_folder.get(os.path.normpath(target.folder))
        if known is None:
            by_folder[os.path.normpath(target.folder)] = target
            plan.targets.append(target)
        elif known.fingerprint != target.fingerprint:
            from graphgps_ext.results.identity import diff, format_changes
            raise SweepError(
                f'{known.config} and {target.config} both write to {target.folder} but '
                f'differ ({format_changes(diff(known.identity, target.identity))}): give '
                'them different run_name values')
        else:
            target = known
        for seed in seeds:
            key = (os.path.normpath(target.folder), seed)
            if key in seen:
                continue
            seen.add(key)
            status = seed_status(target.run_dir(seed), target.identity, target.data)
            run = Run(target, seed, status)
            if status.state == 'complete' and not force:
                plan.complete.append(run)
            elif status.state in ('stale', 'damaged') and not (force or rerun_stale):
                plan.stale.append(run)  # a damaged seed: reported like a stale one
            else:
                run.overwrite = status.state in ('complete', 'stale', 'damaged')
                plan.runs.append(run)
    return plan


#: Schedulers with a linear learning-rate warm-up over ``optim.num_warmup_epochs``.
WARMUP_SCHEDULERS = ('cosine_with_warmup', 'transformer_warmup')


def never_leaves_warmup(ident: Dict) -> bool:
    """Whether runs of this identity (flat ``key: value``) end inside the
    learning-rate warm-up (``optim.max_epoch <= optim.num_warmup_epochs``
    with a warm-up scheduler): the learning rate never reaches
    ``optim.base_lr``, so their results say little about the config."""
    warm, epochs = ident.get('optim.num_warmup_epochs'), ident.get('optim.max_epoch')
    return (ident.get('optim.scheduler') in WARMUP_SCHEDULERS and isinstance(warm, int)
            and isinstance(epochs, int) and epochs <= warm)


def lock_holder(run_dir: str) -> Optional[str]:
    """Who holds the seed lock of ``run_dir`` (a live run:
    :class:`graphgps_ext.results.seed_folder.SeedLock`), or ``None``. The probe is
    a shared, non-blocking lock released at once."""
    import fcntl
    try:
        fd = os.open(RunDir(run_dir).lock, os.O_RDONLY | os.O_NOFOLLOW)
    except (OSError, ValueError):  # ValueError: a link on the path (run_dir.UnsafePath)
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                info = RunDir.parse_lock(os.pread(fd, 65536, 0))
            except OSError:
                info = None
            if isinstance(info, dict):
                return (f"pid {info.get('pid')} on host {info.get('host')}, started "
                        f"{info.get('started')}")
            return 'a process that has not yet written its name'
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def main_command(python: Sequence[str], main: str, run) -> List[str]:
    """``python main.py --cfg CONFIG [--overwrite] seed S KEY VALUE ...``
    (a :class:`StackRun`: ``--seeds a,b,.. --stack K`` instead of ``seed S``)."""
    seeds = (['--seeds', run.seed, '--stack', str(len(run.runs))]
             if isinstance(run, StackRun) else ['seed', str(run.seed)])
    return ([*python, main, '--cfg', run.target.config]
            + (['--overwrite'] if run.overwrite else [])
            + seeds + list(run.target.overrides))


def agg_command(python: Sequence[str], target: Target) -> List[str]:
    return [*python, '-m', 'graphgps_ext.agg', target.folder,
            '--fingerprint', target.fingerprint]
