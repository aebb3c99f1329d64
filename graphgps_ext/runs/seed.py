"""One seed's run: claim its folder, decide, prepare, start, train, finish.

:func:`run_seed` writes ``<out_dir>/<run_name>/<seed>/``::

    lock                 held while the run is alive (who holds it)
    config.yaml          the config the run uses (first line:
                         ``# fingerprint: <hex>``, see graphgps_ext.results.identity)
    logging.log          the run's log
    {train,val,test}/stats.json  one JSON object per line (GraphGym's name)
    best.json            best-validation epoch and every split's stats there
    ckpt/last.pt         resumable state (rewritten each epoch; the one
                         before is kept as ckpt/last.prev.pt)
    ckpt/best.pt         weights of the best epoch
    data.json            the dataset as loaded (format, folder, sizes, stand-in,
                         content fingerprint)
    split_indices.pt     {split: LongTensor} when the dataset defines them
    resume_history.jsonl one line per resume: time, epoch, changed keys
    events.out.tfevents.*  (tensorboard.use)   wandb/  (wandb.use)
    done                 written when the run finished (JSON with the run's
                         fingerprint, identity, data record, seed and the
                         SHA-256 of its files)

The steps, each a function below:

1. :func:`claim`: take the seed folder's lock
   (:class:`graphgps_ext.results.seed_folder.SeedLock`); a seed in use by another
   process is refused at once, and so is a seed folder reached through a
   symbolic link below ``out_dir`` or outside it
   (:class:`graphgps_ext.results.tree.UnsafePath`).
2. :func:`decide`: finish what a killed run left (an unfinished
   replacement, temporary files), then

   - a finished seed (``done``) is reported and skipped, ``complete`` or
     ``stale`` with the keys that differ, unless ``overwrite``. Before it
     is skipped as ``complete``, :func:`verify` loads the data and compares
     its content fingerprint with the one ``done`` records (other data:
     ``stale``);
   - with ``train.auto_resume True`` and a checkpoint, resume: the
     checkpoint's identity is compared with this run's; changed optimiser
     hyper-parameters take effect, any other change is refused;
   - otherwise a fresh start.
3. :func:`prepare`: load the data, resolve the dataset-dependent config,
   build the model and loaders. Nothing in the seed folder has changed yet:
   a failure here leaves it as it was.
4. :func:`start`: a fresh start moves a previous run's entries aside, writes
   the config, data description, log and initial checkpoint, and only then
   deletes the old entries (:class:`graphgps_ext.results.seed_folder.Replacement`);
   a resume loads the state, applies the changed keys, and records them.
5. :func:`train`: :meth:`graphgps_ext.train.loop.Trainer.fit`.
6. :func:`finish`: the ``done`` marker.

In a data-parallel run (a process group joined by
:func:`graphgps_ext.dist.init`) every process calls :func:`run_seed`: rank 0
holds the lock, decides and writes every file; the dataset is loaded by
rank 0 first (which processes and caches it), then by the others; each
process trains a DDP replica on its device and its shard of the data.
"""
import os
import shlex
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch_geometric.graphgym.register as gg

from graphgps_ext import dist
from graphgps_ext.config import ConfigError, sizes
from graphgps_ext.files import remove_temp_files, write_guard
from graphgps_ext.logger import (RunLogger, attach_run_log, get_logger,
                                 setup_logging, truncate_stats)
from graphgps_ext.results.identity import (DATA_KEY, MISSING, data_record, fingerprint,
                                           format_changes, identity, resume_changes,
                                           seed_status)
from graphgps_ext.results.seed_folder import (Replacement, SeedFolderError, SeedLock,
                                              SeedLocked, check_seed, file_digests,
                                              read_best, recover, run_entries)
from graphgps_ext.results.tree import RunDir, RunFileError, UnsafePath
from graphgps_ext.runs.config import finalize_cfg
from graphgps_ext.train import checkpoint as ckpt
from graphgps_ext.train import compile_cache, speed
from graphgps_ext.train.loop import NonFiniteLossError, Trainer
from graphgps_ext.train.loss import LOSSES
from graphgps_ext.train.rng import seed_everything


class StartRefused(Exception):
    """The run cannot start as asked (seed in use, a resume that would
    change the model or the data, a checkpoint that does not fit)."""


def load_dataset(cfg):
    """:func:`graphgps_ext.loader.load_dataset` (imported on use)."""
    from graphgps_ext.loader import load_dataset as fn
    return fn(cfg)


def data_fingerprint(bundle) -> str:
    """:func:`graphgps_ext.loader.data_fingerprint` (imported on use)."""
    from graphgps_ext.loader import data_fingerprint as fn
    return fn(bundle)


def make_loaders(cfg, bundle, rank: int = 0, world_size: int = 1,
                 device=None, capacities=None):
    """:func:`graphgps_ext.loader.make_loaders` (imported on use)."""
    from graphgps_ext.loader import make_loaders as fn
    return fn(cfg, bundle, rank=rank, world_size=world_size, device=device,
              capacities=capacities)


def run_dir_of(cfg) -> str:
    return RunDir.of(cfg.out_dir, cfg.run_name, cfg.seed).path


def build_model(cfg, task) -> torch.nn.Module:
    """The model of ``cfg`` for ``task``, once its training memory (counted
    on the same model built on the ``meta`` device, which allocates
    nothing) fits the accelerator's (:func:`graphgps_ext.config.sizes.check`,
    else :class:`~graphgps_ext.config.ConfigError`)."""
    if cfg.model.type not in gg.network_dict:
        raise ConfigError(f"unknown model.type '{cfg.model.type}'; registered: "
                          + ', '.join(sorted(gg.network_dict)))
    network = gg.network_dict[cfg.model.type]
    params = None
    with torch.random.fork_rng(devices=[]):
        try:
            with torch.device('meta'):
                params = sum(p.numel() for p in network(cfg, task).parameters())
        except (NotImplementedError, RuntimeError):  # an op meta tensors lack
            params = None
    if params is not None:
        sizes.check([sizes.model_need(params, cfg)], str(cfg.accelerator))
    return network(cfg, task)


def resume_command(cfg_file: Optional[str], opts: Sequence[str], seed: int,
                   drop: Sequence[str] = ()) -> str:
    """The command line that continues seed ``seed`` of a run started with
    ``--cfg cfg_file`` and the ``KEY VALUE`` overrides ``opts`` (without
    the keys ``drop``)."""
    keep: List[str] = []
    for key, value in zip(opts[0::2], opts[1::2]):
        if key not in ('seed', 'train.auto_resume', *drop):
            keep += [key, value]
    return shlex.join(['python', 'main.py', '--cfg', cfg_file or 'CONFIG.yaml',
                       '--seeds', str(seed), *keep, 'train.auto_resume', 'True'])


@dataclass
class Plan:
    """What :func:`run_seed` does with a seed folder (decided by rank 0).

    Attributes:
        action: ``'fresh'``, ``'resume'`` or ``'skip'``.
        note: what is logged about the decision.
        checkpoint: (resume) the file the run continues from.
        changes: (resume) ``(key, old, new)`` that take effect.
        best: (skip) the finished run's checked best record.
    """
    action: str
    note: str = ''
    checkpoint: Optional[str] = None
    changes: List[Tuple[str, Any, Any]] = field(default_factory=list)
    best: Optional[Dict[str, Any]] = None


def run_seed(cfg, cfg_file: Optional[str] = None,
             callbacks: Sequence[Callable] = (), opts: Sequence[str] = (),
             overwrite: bool = False) -> Optional[Dict[str, Any]]:
    """Train and evaluate one seed (``cfg.seed``, ``cfg`` as loaded by
    :func:`graphgps_ext.runs.config.load_cfg`); returns the best record.

    ``opts`` (the command line's overrides) go into the resume command that
    is logged on interruption; ``overwrite`` replaces a finished seed.

    Raises :class:`StartRefused`, :class:`~graphgps_ext.config.ConfigError`,
    :class:`~graphgps_ext.train.checkpoint.CheckpointError` before anything
    in the seed folder changed; :class:`NonFiniteLossError`,
    :class:`KeyboardInterrupt` and
    :class:`~graphgps_ext.files.ResultsWriteError` after logging
    how to resume.
    """
    ident = identity(cfg)  # as requested, before dataset-dependent values
    folder = RunDir.of(cfg.out_dir, cfg.run_name, cfg.seed)
    run_dir = folder.path
    setup_logging(None)
    lock = _on_main(lambda: claim(folder))
    try:
        plan, state = _on_main(
            lambda: decide(cfg, run_dir, ident, overwrite), default=(None, None))
        plan = dist.broadcast_object(plan)
        if plan.action == 'skip':
            return plan.best
        run = prepare(cfg, plan, state)
        trainer = start(cfg, run_dir, run, plan, ident, callbacks)
        best = train(trainer, lambda *drop: resume_command(
            cfg_file, opts, cfg.seed, drop))
        finish(run_dir, trainer, best, ident, trainer.elapsed(), data=run.data)
        return best
    finally:
        if lock is not None:
            lock.release()


def _on_main(fn: Callable, default=None):
    """``fn()`` on rank 0; an error it raises is raised on every process
    (rank 0 alone decides, the others follow). Returns ``default`` on the
    other ranks."""
    out, err = default, None
    if dist.is_main_process():
        try:
            out = fn()
        except (UnsafePath, RunFileError) as e:  # the results tree: refused
            err = StartRefused(str(e))
        except Exception as e:  # noqa: BLE001 - raised on every process below
            err = e
    err = dist.broadcast_object(err)
    if err is not None:
        raise err
    return out


def claim(run_dir) -> SeedLock:
    """Lock the seed folder (creating it): :class:`StartRefused` naming the
    holder when another process runs this seed, or the link when the folder
    (a :class:`~graphgps_ext.results.tree.RunDir`, checked from its root, or a
    path) is reached through a symbolic link or lies outside the tree."""
    try:
        if isinstance(run_dir, RunDir):
            run_dir.check()
        return SeedLock(os.fspath(run_dir)).acquire()
    except (SeedLocked, UnsafePath) as err:
        raise StartRefused(str(err)) from None


def decide(cfg, run_dir: str, ident: Dict[str, Any], overwrite: bool
           ) -> Tuple[Plan, Optional[Dict[str, Any]]]:
    """``(plan, checkpoint state)`` for the seed folder (rank 0, under the
    lock). See the module docstring."""
    log = get_logger()
    try:
        restored = recover(run_dir)
    except RunFileError as err:
        raise StartRefused(
            f'{run_dir}: a replacement of the run there was stopped, and its '
            f'{err}: it was not written by a run, so nothing it names is moved. '
            f'Move the entries of {RunDir(run_dir).pending} back by hand (or '
            'delete that folder), then start again') from None
    if restored:
        log.warning(f'{run_dir}: a run that was replacing this one was stopped '
                    'before it started; the previous run is restored '
                    f'({", ".join(restored)})')
    removed = remove_temp_files(run_dir)
    if removed:
        log.info(f'removed {len(removed)} temporary file(s) of interrupted '
                 'writes: ' + ', '.join(os.path.relpath(p, run_dir) for p in removed))
    status = seed_status(run_dir, ident, data_record(cfg))
    if status.state == 'damaged' and not overwrite:
        raise StartRefused(status.problem)
    if status.done is not None and not overwrite:
        if status.state == 'complete' or status.data_moved:
            return verify(cfg, run_dir, ident), None
        return _skip(run_dir, status), None
    last = RunDir(run_dir).last_ckpt
    if (cfg.train.auto_resume and not overwrite and status.done is None
            and ckpt.has_checkpoint(last)):
        state, used, warning = ckpt.load_latest(last)
        _check_state(state, used)
        try:  # the stats it continues must reach the checkpoint's epoch
            check_seed(run_dir, last_epoch=state['epoch'])
        except SeedFolderError as err:
            raise StartRefused(f'cannot resume: {err}') from None
        if warning:
            log.warning(warning)
            if os.path.exists(last):  # kept for inspection, out of the way
                with write_guard(last):
                    os.replace(last, RunDir(run_dir).ckpt('last.corrupt'))
        changes = _resume_changes(state.get('identity'), ident, run_dir)
        return Plan('resume', f'resuming from {used}', used, changes), state
    old = run_entries(run_dir)
    note = (f'starting afresh; the previous run\'s files ({", ".join(old)}) are '
            'replaced once this run has started' if old else 'starting afresh')
    return Plan('fresh', note), None


def verify(cfg, run_dir: str, ident: Dict[str, Any]) -> Plan:
    """The skip plan of a finished seed of this config (rank 0): the data
    is loaded and its content compared with the data ``done`` records;
    ``complete`` when they agree, ``stale`` (naming the fingerprints and
    folders) when not. Writes nothing."""
    get_logger().info(f'{run_dir} is done with this config; comparing the data '
                      'it read with the data here')
    bundle = load_dataset(cfg)
    status = seed_status(run_dir, ident, data_record(cfg, data_fingerprint(bundle)))
    if status.state == 'damaged':
        raise StartRefused(status.problem)
    return _skip(run_dir, status)


def _skip(run_dir: str, status) -> Plan:
    """Report a finished seed and return its skip plan."""
    log = get_logger()
    if status.state == 'complete':
        note = (f'{run_dir} is done (complete: same config and data); skipped. '
                'Pass --overwrite to run it again')
    else:
        note = (f'{run_dir} is done ({status.describe()}); skipped. Pass '
                '--overwrite to replace it with a run of this config')
    try:  # a stale run's files are not checked by seed_status
        best = read_best(run_dir)
    except SeedFolderError as err:
        raise StartRefused(f'{err}; pass --overwrite to replace the '
                           'run') from None
    (log.info if status.state == 'complete' else log.warning)(note)
    return Plan('skip', note, best=best)


def _check_state(state: Dict[str, Any], path: str):
    """A checkpoint to resume from must be one this program wrote for a run:
    an integer epoch from -1 (the initial state), the identity of its run, a
    best record of an epoch it had trained."""
    def refuse(problem: str):
        raise StartRefused(
            f'cannot resume from {path}: {problem}; it was not written by a run of '
            'this program. Pass --overwrite to start this seed afresh, or restore '
            'the checkpoint from a copy')
    if not isinstance(state, dict):
        refuse('it is not a checkpoint record')
    epoch = state.get('epoch')
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < -1:
        refuse(f'its epoch is {epoch!r}, not an epoch of a run (-1 for the initial '
               'state, then 0, 1, ...)')
    if not isinstance(state.get('identity'), dict):
        refuse('it records no identity of the run that wrote it (which config, '
               'which data), so what a resume would continue cannot be checked')
    best = state.get('best')
    if best is not None and not (isinstance(best, dict) and isinstance(
            best.get('epoch'), int) and 0 <= best['epoch'] <= epoch):
        refuse(f'its best record is of epoch {_best_epoch(best)}, not one of the '
               f'epochs 0-{epoch} it had trained')


def _best_epoch(best: Any) -> Any:
    return best.get('epoch') if isinstance(best, dict) else best


def _resume_changes(old: Dict[str, Any], new: Dict[str, Any],
                    run_dir: str) -> List[Tuple[str, Any, Any]]:
    """The resumable changes between the checkpoint's identity and this
    run's (the data is compared once loaded, :func:`_resume`);
    :class:`StartRefused` naming the others."""
    old = {k: v for k, v in old.items() if k != DATA_KEY}  # compared once loaded
    allowed, refused = resume_changes(old, new)
    if refused:
        raise StartRefused(
            f'cannot resume {run_dir}: the run was started with other values '
            'of keys that change the model, the data or the loss: '
            f'{format_changes(refused, limit=20)} (old -> new). Restore the old '
            'values to resume it, or pass --overwrite to start this seed afresh.')
    return allowed


def prepare(cfg, plan: Plan, state: Optional[Dict[str, Any]], bundle=None,
            fast_path: bool = True) -> SimpleNamespace:
    """Data, dataset-dependent config, model and loaders (and, on ranks > 0
    of a resume, the checkpoint's state). Writes nothing. ``bundle``: the
    data, already loaded (the seeds of a stack share it when their split
    does not depend on the seed); ``fast_path=False``: unpadded loaders and
    no fast path chosen (a stack pads and compiles its own steps)."""
    log = get_logger()
    rank, world_size = dist.get_rank(), dist.get_world_size()
    global_batch = dist.resolve_batch_size(cfg, world_size)
    log.info(f'run {cfg.run_name} seed {cfg.seed} -> {run_dir_of(cfg)}'
             + (f' ({plan.note})' if plan.note else ''))
    device = dist.local_device(cfg.accelerator)
    seed_everything(cfg.seed)
    if bundle is None:
        bundle = dist.in_turn(lambda: load_dataset(cfg))
    metric, mode = finalize_cfg(cfg, bundle.task)
    if cfg.model.loss_fun not in LOSSES:
        raise ConfigError(f"unknown model.loss_fun '{cfg.model.loss_fun}'; "
                          f"valid: {', '.join(LOSSES)}")
    # Re-seed so that model init and batching do not depend on whether the
    # dataset was processed now or read from its cache.
    seed_everything(cfg.seed)
    model = dist.wrap_model(build_model(cfg, bundle.task).to(device), cfg, device)
    # Compiled: inductor's cache shared by the results tree, the config's
    # artefacts of an earlier run loaded (compile_cache).
    artefacts = (compile_cache.start(cfg.out_dir, cfg.run_name, log)
                 if cfg.train.compile else None)
    # Static shapes and compile, checked on one batch where asked (CUDA).
    fast = (speed.choose_fast_path(
        cfg, model, bundle.splits['train'], device, LOSSES[cfg.model.loss_fun],
        world_size, log, eval_datasets=[bundle.splits[s] for s in ('val', 'test')
                                        if s in bundle.splits])
            if fast_path else None)
    loaders = make_loaders(cfg, bundle, rank=rank, world_size=world_size, device=device,
                           capacities=fast.capacities if fast is not None else None)
    if rank > 0:  # own dropout streams; rank 0 draws as one process would
        seed_everything(dist.rank_seed(cfg.seed, rank))
    if plan.action == 'resume' and state is None:
        state = ckpt.load(plan.checkpoint)
    data = data_record(cfg, data_fingerprint(bundle))
    if plan.action == 'resume':
        _same_data(cfg, state, data)
    return SimpleNamespace(bundle=bundle, task=bundle.task, metric=metric,
                           mode=mode, model=model, loaders=loaders, device=device,
                           fast=fast, data=data, artefacts=artefacts,
                           state=state, global_batch=global_batch)


def _write_run_files(cfg, run_dir: str, bundle, fp: str):
    folder = RunDir(run_dir)
    folder.write_config(cfg.dump(), fp)
    if getattr(bundle, 'info', None):
        folder.write_data(bundle.info)
    if getattr(bundle, 'split_indices', None) is not None:
        ckpt.save(bundle.split_indices, folder.split_indices)


def start(cfg, run_dir: str, run: SimpleNamespace, plan: Plan,
          ident: Dict[str, Any], callbacks: Sequence[Callable] = ()) -> Trainer:
    """Make the seed folder this run's and return its trainer, ready to
    :meth:`~Trainer.fit` (see the module docstring)."""
    main = dist.is_main_process()
    replacement = Replacement(run_dir)
    trainer = None
    fresh = plan.action == 'fresh'
    try:
        if main:
            if fresh:
                replacement.aside()
                _write_run_files(cfg, run_dir, run.bundle, fingerprint(ident))
            attach_run_log(run_dir)
        state = run.state
        run_logger = RunLogger(cfg, run_dir, cfg.run_name,
                               wandb_id=state.get('wandb_id') if state else None)
        trainer = Trainer(cfg, run.model, run.loaders, LOSSES[cfg.model.loss_fun],
                          run.metric, run.mode, run.task.metrics, run_dir,
                          run_logger, run.device, callbacks, fast_path=run.fast)
        # The checkpoints record the data too: a resume on other data is refused.
        trainer.identity = {**ident, DATA_KEY: run.data['fingerprint']}
        if getattr(run, 'artefacts', None):
            trainer.callbacks.append(compile_cache.ArtefactSaver(
                run.artefacts, get_logger()))
        _log_setup(cfg, run, trainer)
        if fresh:
            trainer.save_last()  # the initial state: resumable from here on
            if main:
                replacement.commit()
        else:
            _resume(cfg, run_dir, run, plan, ident, trainer)
    except BaseException:
        if trainer is not None:
            trainer.logger.close(failed=True)
        if main:
            try:
                replacement.rollback()
            except OSError as err:  # the start's own error matters more
                get_logger().error(f'could not restore {run_dir}: {err}; the '
                                   'next run on this seed restores it')
        raise
    return trainer


def _same_data(cfg, state: Dict[str, Any], data: Dict[str, Any]):
    """A resume continues on the data the checkpoint was trained on:
    :class:`StartRefused` otherwise (before anything is written)."""
    old = state['identity'].get(DATA_KEY, MISSING)
    if old == MISSING:
        get_logger().warning(
            f'the checkpoint of {run_dir_of(cfg)} records no data fingerprint (written '
            'by an earlier version): the data it was trained on cannot be compared')
    elif old != data['fingerprint']:
        raise StartRefused(
            f'cannot resume {run_dir_of(cfg)}: the run was trained on other data '
            f"({DATA_KEY} {old} -> {data['fingerprint']}, read from {data['dir']}). "
            'Point dataset.dir at the data it was trained on to resume it, or pass '
            '--overwrite to start this seed afresh.')


def _resume(cfg, run_dir: str, run: SimpleNamespace, plan: Plan,
            ident: Dict[str, Any], trainer: Trainer):
    try:
        trainer.load_state_dict(run.state)
    except RuntimeError as err:
        raise StartRefused(str(err)) from None
    trainer.retune(plan.changes)
    replayed = {}
    if dist.is_main_process():
        truncate_stats(run_dir, trainer.last_epoch)
        # The loggers may have lost epochs the stats kept (a kill -9), and
        # the best/* summary if the best came before the stop.
        replayed = trainer.logger.replay(trainer.last_epoch, trainer.best)
        _write_run_files(cfg, run_dir, run.bundle, fingerprint(ident))
        append_history(run_dir, trainer.last_epoch, plan)
    log = get_logger()
    log.info(f'resumed after epoch {trainer.last_epoch}' if trainer.last_epoch >= 0
             else 'resumed from the initial state (no epoch had finished)')
    if trainer.last_epoch >= 0 and any(replayed.values()):
        log.info('loggers brought up to the stats: ' + ', '.join(
            f'{n} {k} epoch(s)' for k, n in replayed.items() if n)
            + (' (TensorBoard rewritten from the stats)' if replayed.get('tensorboard') else ''))
    if plan.changes:
        log.info(f'changed on resume, in effect from epoch '
                 f'{trainer.last_epoch + 1}: {format_changes(plan.changes, 20)} '
                 f'(lr now {trainer.optimizer.param_groups[0]["lr"]:.3g})')


def append_history(run_dir: str, last_epoch: int, plan: Plan):
    """One line of ``resume_history.jsonl``: when; ``after_epoch``, the
    number of epochs done, which is also the epoch (numbered from 0) the
    resumed run starts with; from which checkpoint; and the keys that
    changed (old -> new)."""
    RunDir(run_dir).append_history({
        'time': time.strftime('%Y-%m-%dT%H:%M:%S'),
        'after_epoch': last_epoch + 1,
        'checkpoint': os.path.relpath(plan.checkpoint, run_dir),
        'changes': [{'key': k, 'old': a, 'new': b} for k, a, b in plan.changes],
    })


def _log_setup(cfg, run: SimpleNamespace, trainer: Trainer):
    bundle, task = run.bundle, run.task
    world_size = trainer.world_size
    get_logger().info(
        f'{task.name}: {task.task}-level {task.task_type}, '
        f'{sum(len(d) for d in bundle.splits.values())} graphs '
        f'({", ".join(f"{k} {len(v)}" for k, v in bundle.splits.items())}); '
        f'model {cfg.model.type} {cfg.gt.layer_type} x{cfg.gt.layers}, '
        f'{trainer.params:,} parameters; selecting on {trainer.select_split} '
        f'{run.metric} ({run.mode}); device {run.device}'
        + (f'; {world_size} processes ({dist.backend_name()}), batch '
           f'{cfg.train.batch_size} per process = {run.global_batch} global, '
           f'base lr {cfg.optim.base_lr * dist.lr_scale(cfg, world_size):.3g} '
           f'(optim.lr_scaling {cfg.optim.lr_scaling})'
           if world_size > 1 else ''))


def train(trainer: Trainer, resume_cmd: Callable[..., str]
          ) -> Optional[Dict[str, Any]]:
    """:meth:`Trainer.fit`; on failure log how to resume (``resume_cmd(*keys)``:
    the command without the overrides of ``keys``), close the loggers and
    re-raise."""
    log = get_logger()
    try:
        best = trainer.fit()
    except KeyboardInterrupt:
        trainer.logger.close(failed=True)
        state = (f'the state after epoch {trainer.last_epoch}' if trainer.last_epoch >= 0
                 else 'the initial state (no epoch had finished)')
        log.error(f'interrupted; {trainer.last_path} holds {state}. '
                  f'Resume with: {resume_cmd()}')
        raise
    except NonFiniteLossError as err:
        trainer.logger.close(failed=True)
        key = getattr(err, 'key', 'optim.base_lr')
        if key is None:  # not a setting: nothing to resume with
            log.error(str(err))
        else:
            value = err.value if err.value is not None else trainer.cfg.optim.base_lr / 10
            log.error(f'{err} Resume with, e.g.: {resume_cmd(key)} {key} {value:g}')
        raise
    except BaseException:
        trainer.logger.close(failed=True)
        raise
    trainer.logger.close()
    return best


def finish(run_dir: str, trainer: Trainer, best: Optional[Dict[str, Any]],
           ident: Dict[str, Any], seconds: float,
           data: Optional[Dict[str, Any]] = None):
    """Log the best epoch and write ``done`` (rank 0). ``seconds``: the
    training time over every segment of the run (a resumed segment adds its
    own to the earlier ones' up to their last checkpoint); ``data``: the
    data record (:func:`graphgps_ext.results.identity.data_record` with the content
    fingerprint), without which the seed counts as ``stale``."""
    metric = trainer.metric
    if best is not None:
        get_logger().info(f'best epoch {best["epoch"]}: ' + ' | '.join(
            f'{s} {metric} {best[s][metric]:.4g}' for s in ('train', 'val', 'test')
            if s in best))
    if dist.is_main_process():
        RunDir(run_dir).write_done({
            'finished': time.strftime('%Y-%m-%dT%H:%M:%S'),
            'epochs': trainer.last_epoch + 1,
            'seconds': round(seconds, 2),
            'best_epoch': best['epoch'] if best else None,
            'world_size': trainer.world_size,
            'skipped_batches': trainer.skipped_batches,
            'fingerprint': fingerprint(ident),
            'identity': ident,
            'seed': trainer.cfg.seed,
            **({'data': data} if data is not None else {}),
            'files': file_digests(run_dir),
        })
