"""Several seeds of one config trained as one stacked model
(``main.py --seeds 0-9 --stack 10``).

:func:`run_seeds` splits the seeds into stacks of ``K`` (``--stack K``; the
last may be smaller), after leaving out the seeds that are complete (unless
``--overwrite``). :func:`run_stack` does for the seeds of one stack what
:func:`graphgps_ext.runs.seed.run_seed` does for one seed, with its steps:

1. claim every seed folder (:func:`graphgps_ext.runs.seed.claim`): a seed in use
   by another process refuses the stack before anything changed;
2. decide each (:func:`graphgps_ext.runs.seed.decide`): a complete seed is
   reported and skipped, an unfinished one resumes (``train.auto_resume``)
   from its own checkpoint, whatever epoch it holds, the others start
   afresh;
3. prepare each: the data (read once when the splits do not depend on the
   seed), the model built from the seed (the same initial weights as its
   separate run), the loaders (its own data order); then the checks of the
   stack, before any seed folder changes: the seeds' resolved configs must
   agree in every key but ``seed``, build models of one structure with a
   head that padded batches can use (:func:`graphgps_ext.train.stack.stack_unsupported`),
   and fit in memory (:func:`graphgps_ext.train.stack.estimate_memory`);
   a stack that does not fit is refused naming the largest ``K`` that does;
4. start each (:func:`graphgps_ext.runs.seed.start`): its folder written as a
   separate run writes it, or its checkpoint loaded;
5. train them together (:class:`graphgps_ext.train.stack.StackTrainer`);
6. finish each (:func:`graphgps_ext.runs.seed.finish`: ``best.json`` logged,
   ``done`` written).

Every seed folder is an ordinary one: ``logging.log`` holds the seed's own
lines, the stats, checkpoints, W&B run and TensorBoard files are those of
its separate run, so resume, agg, report and the skip and stale checks read
it unchanged. A stack killed at any point resumes with the same command and
``train.auto_resume True``: each seed from its last checkpoint.

A stack of one seed (the rest complete) runs as a separate run.
"""
import logging
import shlex
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Sequence

from graphgps_ext import dist
from graphgps_ext.config import ConfigError, flatten
from graphgps_ext.logger import _Held, get_logger, setup_logging
from graphgps_ext.results.identity import data_record, identity, seed_status
from graphgps_ext.runs.config import load_cfg
from graphgps_ext.runs.seed import (StartRefused, claim, decide, finish,
                                    prepare, run_dir_of, start, train)
from graphgps_ext.train.loop import NonFiniteLossError
from graphgps_ext.train.loss import LOSSES


def stack_command(cfg_file: Optional[str], opts: Sequence[str],
                  seeds: Sequence[int], k: int, drop: Sequence[str] = ()) -> str:
    """The command line that continues a stack of ``seeds``."""
    keep: List[str] = []
    for key, value in zip(opts[0::2], opts[1::2]):
        if key not in ('seed', 'train.auto_resume', *drop):
            keep += [key, value]
    return shlex.join(['python', 'main.py', '--cfg', cfg_file or 'CONFIG.yaml',
                       '--seeds', ','.join(map(str, seeds)), '--stack', str(k),
                       *keep, 'train.auto_resume', 'True'])


def groups(seeds: Sequence[int], k: int) -> List[List[int]]:
    """``seeds`` in stacks of ``k``, in order (the last may hold fewer)."""
    seeds = list(seeds)
    return [seeds[i:i + k] for i in range(0, len(seeds), k)]


def check_stack_args(seeds: Sequence[int], k: int, world_size: int = 1):
    """:class:`~graphgps_ext.config.ConfigError` for a ``--stack`` that
    cannot run: fewer than two seeds, more seeds per stack than listed, or
    a data-parallel run."""
    if k < 2:
        raise ConfigError(f'--stack {k}: a stack holds at least two seeds '
                          '(without --stack every seed runs on its own)')
    if len(seeds) < 2:
        raise ConfigError(
            f'--stack {k} with the single seed {seeds[0]}: list the seeds to '
            'stack, e.g. --seeds 0-3 --stack 4')
    if k > len(seeds):
        raise ConfigError(
            f'--stack {k} but only {len(seeds)} seeds listed '
            f'({",".join(map(str, seeds))}): use --stack {len(seeds)} or list '
            f'{k} seeds')
    if world_size > 1:
        raise ConfigError(
            f'--stack trains the seeds in one process; this is a data-parallel '
            f'run of {world_size} processes (torchrun / srun): run the stack '
            'as one process, or the seeds without --stack')


def differing_keys(cfgs: Sequence, seeds: Sequence[int]) -> Optional[str]:
    """The keys in which the seeds' resolved configs differ (but ``seed``),
    as ``key (seed a: x, seed b: y)``, or ``None``."""
    flat = [flatten(c) for c in cfgs]
    keys = sorted(set().union(*flat) - {'seed'})
    out = []
    for key in keys:
        values = [f.get(key, '<missing>') for f in flat]
        if any(v != values[0] for v in values[1:]):
            j = next(i for i, v in enumerate(values) if v != values[0])
            out.append(f'{key} (seed {seeds[0]}: {values[0]!r}, seed {seeds[j]}: '
                       f'{values[j]!r})')
    return ', '.join(out) if out else None


# ------------------------------------------------------------ logging --
class SeedLogs(logging.Handler):
    """Each seed's lines into its own ``logging.log``, the stack's lines
    into every seed's; records of a seed whose folder is not started yet
    are held until :meth:`attach`. Stdout gets every line once, a seed's
    with ``[seed s]`` before it."""

    def __init__(self, seeds: Sequence[int]):
        super().__init__()
        self.seeds = list(seeds)
        self.files: Dict[int, logging.Handler] = {}
        self.held: Dict[int, List[logging.LogRecord]] = {s: [] for s in seeds}
        self.current: Optional[int] = None
        self.paused = False

    @contextmanager
    def only(self, seed: Optional[int]):
        """Log lines inside the context are ``seed``'s (``None``: every seed's)."""
        before, self.current = self.current, seed
        try:
            yield
        finally:
            self.current = before

    def emit(self, record):
        if self.paused:
            return
        for seed in ([self.current] if self.current is not None else self.seeds):
            if seed in self.files:
                self.files[seed].handle(record)
            elif seed in self.held:
                self.held[seed].append(record)

    def holder(self, seed: int) -> logging.Handler:
        """The seed's held records, for :func:`graphgps_ext.logger.attach_run_log`
        to write at the top of its log when :func:`graphgps_ext.runs.seed.start`
        opens it."""
        held = _Held()
        held.records = self.held.pop(seed, [])
        return held

    def attach(self, seed: int, handler: logging.Handler):
        self.files[seed] = handler

    def close(self):
        for h in self.files.values():
            h.close()
        self.files.clear()
        super().close()


class _Tagged(logging.Formatter):
    """The stdout format with ``[seed s]`` before a seed's lines."""

    def __init__(self, base: logging.Formatter, logs: SeedLogs):
        super().__init__(base._fmt, base.datefmt)
        self.logs = logs

    def formatMessage(self, record):
        text = super().formatMessage(record)
        seed = self.logs.current
        if seed is None:
            return text
        head, sep, msg = text.partition(f'{record.levelname} ')
        return f'{head}{sep}[seed {seed}] {msg}'


def _install(seeds: Sequence[int]) -> SeedLogs:
    """Logging for a stack: stdout (tagged) and :class:`SeedLogs`."""
    log = setup_logging(None)
    logs = SeedLogs(seeds)
    for h in list(log.handlers):
        if type(h) is logging.StreamHandler:
            h.setFormatter(_Tagged(h.formatter, logs))
        else:  # the records held until a log file is chosen: SeedLogs holds them
            log.removeHandler(h)
            h.close()
    if dist.is_main_process():
        log.addHandler(logs)
    return logs


@contextmanager
def _starting(logs: SeedLogs, seed: int):
    """Around :func:`graphgps_ext.runs.seed.start` of ``seed``: its held records
    go to the top of the log file it opens, which becomes the seed's."""
    log = get_logger()
    held = logs.holder(seed)
    log.addHandler(held)
    logs.paused = True
    before = set(log.handlers)
    try:
        with logs.only(seed):
            yield
    finally:
        logs.paused = False
        for h in list(log.handlers):
            if h not in before or h is held:
                log.removeHandler(h)
                if isinstance(h, logging.FileHandler):
                    logs.attach(seed, h)
                elif h is not held:
                    h.close()


# ------------------------------------------------------------ seeds --
def run_seeds(cfg_file: str, opts: Sequence[str], seeds: Sequence[int], k: int,
              overwrite: bool = False) -> List[Optional[Dict[str, Any]]]:
    """Train ``seeds`` of the config in stacks of ``k``; returns their best
    records. The seeds that are complete (unless ``overwrite``) are left
    out before the stacks are formed (:func:`run_stack` reports them)."""
    from graphgps_ext.runs.seed import run_seed
    todo = []
    for seed in seeds:
        c = load_cfg(cfg_file, list(opts) + ['seed', str(seed)])
        state = seed_status(run_dir_of(c), identity(c), data_record(c)).state
        if overwrite or state != 'complete':
            todo.append(seed)
    done = [s for s in seeds if s not in todo]
    out = []
    if done:  # reported (and their best records read) by run_seed
        for seed in done:
            c = load_cfg(cfg_file, list(opts) + ['seed', str(seed)])
            out.append(run_seed(c, cfg_file=cfg_file, opts=opts))
    first_error = None
    for group in groups(todo, k):
        if len(group) == 1:
            c = load_cfg(cfg_file, list(opts) + ['seed', str(group[0])])
            out.append(run_seed(c, cfg_file=cfg_file, opts=opts,
                                overwrite=overwrite))
            continue
        try:
            out += run_stack(cfg_file, opts, group, k, overwrite)
        except NonFiniteLossError as err:  # the other stacks still run
            first_error = first_error or err
    if first_error is not None:
        raise first_error
    return out


def _wandb_side_by_side() -> bool:
    from graphgps_ext.logger import wandb_runs_side_by_side
    return bool(wandb_runs_side_by_side())


def _largest_batch(dataset, batch_size: int):
    """A batch of the ``batch_size`` largest graphs of ``dataset`` (the
    memory estimate's worst case)."""
    from torch_geometric.data import Batch
    from graphgps_ext.loader.pad import graph_sizes
    nodes, _ = graph_sizes(dataset)
    top = nodes.topk(min(batch_size, nodes.numel())).indices.tolist()
    return Batch.from_data_list([dataset[i] for i in top])


def run_stack(cfg_file: str, opts: Sequence[str], seeds: Sequence[int], k: int,
              overwrite: bool = False) -> List[Optional[Dict[str, Any]]]:
    """Train the ``seeds`` (two or more) of one config as one stacked model
    (see the module docstring); ``k`` is the ``--stack`` of the command
    (for the resume command). Returns the best record of every seed.

    Raises :class:`~graphgps_ext.runs.seed.StartRefused` (a seed in use, the
    stack's checks) and :class:`~graphgps_ext.config.ConfigError` before
    any seed folder changed; :class:`~graphgps_ext.train.loop.NonFiniteLossError`
    (a seed whose loss became non-finite, after the others finished),
    :class:`KeyboardInterrupt` and
    :class:`~graphgps_ext.files.ResultsWriteError` after logging how to
    resume."""
    from graphgps_ext.train.stack import (StackError, StackTrainer,
                                          check_memory, check_same_structure,
                                          estimate_memory, stack_unsupported)
    from graphgps_ext.loader.pad import Capacities, attribute_levels
    seeds = list(seeds)
    # load_cfg fills GraphGym's one global config: a copy per seed.
    cfgs = [load_cfg(cfg_file, list(opts) + ['seed', str(s)]).clone()
            for s in seeds]
    idents = [identity(c) for c in cfgs]
    dirs = [run_dir_of(c) for c in cfgs]
    logs = _install(seeds)
    locks = []
    trainers: Dict[int, Any] = {}
    try:
        for s, d in zip(seeds, dirs):
            with logs.only(s):
                locks.append(claim(d))
        plans, states = {}, {}
        for s, c, d, ident in zip(seeds, cfgs, dirs, idents):
            with logs.only(s):
                plans[s], states[s] = decide(c, d, ident, overwrite)
        skipped = {s: plans[s].best for s in seeds if plans[s].action == 'skip'}
        todo = [s for s in seeds if s not in skipped]
        index = {s: i for i, s in enumerate(seeds)}
        if len(todo) == 1:  # the rest are complete: a separate run
            s = todo[0]
            i = index[s]
            with logs.only(s):
                run = prepare(cfgs[i], plans[s], states[s])
            with _starting(logs, s):
                trainer = start(cfgs[i], dirs[i], run, plans[s], idents[i])
            with logs.only(s):
                best = train(trainer, lambda *drop: stack_command(
                    cfg_file, opts, seeds, k, drop))
                finish(dirs[i], trainer, best, idents[i], trainer.elapsed(), data=run.data)
            skipped[s] = best
        if len(todo) < 2:
            return [skipped.get(s) for s in seeds]
        prepared: Dict[int, SimpleNamespace] = {}
        bundle = None
        for s in todo:
            i = index[s]
            with logs.only(s):
                prepared[s] = prepare(cfgs[i], plans[s], states[s], bundle, fast_path=False)
            info = getattr(prepared[s].bundle, 'info', None) or {}
            if info.get('standard_split', True):
                bundle = prepared[s].bundle  # the splits do not depend on the seed
        shared_eval = len({id(prepared[s].bundle) for s in todo}) == 1
        names = [f'seed {s}' for s in todo]
        members = [cfgs[index[s]] for s in todo]
        problem = differing_keys(members, todo)
        if problem:
            raise StartRefused(
                f'--stack: the seeds resolve to configs that differ in '
                f'{problem}; a stack trains seeds of one config (run these '
                'seeds without --stack)')
        modules = [prepared[s].model for s in todo]
        try:
            check_same_structure(modules, names)
        except StackError as err:
            raise StartRefused(f'--stack: {err}') from None
        why = stack_unsupported(modules[0])
        if why is not None:
            raise StartRefused(f'--stack: {why}; run the seeds without --stack')
        if members[0].wandb.use and not _wandb_side_by_side():
            raise StartRefused(
                '--stack with wandb.use True logs one W&B run per seed at once, '
                'which needs wandb >= 0.19.10 (reinit create_new): upgrade wandb, '
                'set wandb.use False, or run the seeds without --stack')
        cfg0, run0 = members[0], prepared[todo[0]]
        train_split = run0.bundle.splits['train']
        batch_size = int(cfg0.train.batch_size)
        capacities = (Capacities.from_dataset(train_split, batch_size)
                      if cfg0.train.compile else None)
        levels = (capacities.levels if capacities is not None
                  else attribute_levels(train_split))
        loss_fn = LOSSES[cfg0.model.loss_fun]
        estimate = estimate_memory(
            modules[0], _largest_batch(train_split, batch_size).to(run0.device),
            loss_fn, cfg0, run0.device)
        refusal = check_memory(estimate, len(todo), run0.device)
        if refusal is not None:
            raise StartRefused(f'--stack {k}: {refusal}')
        for s in todo:
            i = index[s]
            with _starting(logs, s):
                trainers[s] = start(cfgs[i], dirs[i], prepared[s], plans[s], idents[i])
        get_logger().info(
            f'stack of {len(todo)} seeds ({", ".join(map(str, todo))}): one '
            f'model, {sum(p.numel() for p in modules[0].parameters()):,} '
            'parameters per seed; about '
            f'{estimate.per_seed / 2**20:.1f} MiB per seed in training'
            + (f' ({estimate.free / 2**20:,.0f} MiB free)' if estimate.free else '')
            + ('' if shared_eval else '; each seed evaluates its own split'))
        stack = StackTrainer([trainers[s] for s in todo], loss_fn,
                             capacities, levels, shared_eval,
                             only=lambda j: logs.only(None if j is None else todo[j]))
        command = lambda *drop: stack_command(cfg_file, opts, seeds, k, drop)  # noqa: E731
        failed: Dict[int, BaseException] = {}

        def on_fail(j: int, err: BaseException):
            s = todo[j]
            failed[s] = err
            t = trainers[s]
            t.logger.close(failed=True)
            get_logger().error(
                f'{err} Resume with, e.g.: {command("optim.base_lr")} '
                f'optim.base_lr {t.cfg.optim.base_lr / 10:g} (the other seeds '
                'go on)')

        try:
            bests = stack.fit(on_fail)
        except KeyboardInterrupt:
            for s in todo:
                if s not in failed:
                    with logs.only(s):
                        trainers[s].logger.close(failed=True)
                        get_logger().error(
                            f'interrupted; {trainers[s].last_path} holds '
                            + (f'the state after epoch {trainers[s].last_epoch}'
                               if trainers[s].last_epoch >= 0 else 'the initial state'))
            get_logger().error(f'interrupted; resume the stack with: {command()}')
            raise
        except BaseException:
            for s in todo:
                if s not in failed:
                    trainers[s].logger.close(failed=True)
            raise
        for j, s in enumerate(todo):
            if s in failed:
                continue
            i = index[s]
            with logs.only(s):
                trainers[s].logger.close()
                finish(dirs[i], trainers[s], bests[j], idents[i],
                       trainers[s].elapsed(), data=prepared[s].data)
            skipped[s] = bests[j]
        if failed:
            raise next(iter(failed.values()))
        return [skipped.get(s) for s in seeds]
    finally:
        for trainer in trainers.values():  # (closed ones: a no-op)
            trainer.logger.close(failed=True)
        for lock in locks:
            lock.release()
        logs.close()
        get_logger().removeHandler(logs)
