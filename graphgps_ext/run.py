"""One seed's run: data, model, training loop and results.

:func:`run_seed` writes ``<out_dir>/<run_name>/<seed>/``::

    config.yaml          fully resolved config
    logging.log          the run's log
    {train,val,test}/stats.json  one JSON object per line (GraphGym's name)
    best.json            best-validation epoch and every split's stats there
    ckpt/last.pt         resumable state (rewritten each epoch)
    ckpt/best.pt         weights of the best epoch
    data.json            the dataset as loaded (format, folder, sizes, stand-in)
    split_indices.pt     {split: LongTensor} when the dataset defines them
    events.out.tfevents.*  (tensorboard.use)   wandb/  (wandb.use)
    done                 written when the run finished

With ``train.auto_resume True`` a finished seed (``done`` present) is
skipped and an unfinished one continues from ``ckpt/last.pt``; otherwise the
seed directory's previous results are removed and the run starts afresh.

In a data-parallel run (a process group joined by
:func:`graphgps_ext.dist.init`) every process calls :func:`run_seed`: rank 0
decides skip/resume and writes every file; the dataset is loaded by rank 0
first (which processes and caches it), then by the others; each process
trains a DDP replica on its device and its shard of the data.
"""
import json
import os
import shutil
import time
from typing import Any, Callable, Dict, Optional, Sequence

import torch
import torch_geometric.graphgym.register as gg

from graphgps_ext import dist
from graphgps_ext.config import ConfigError
from graphgps_ext.config.load import dump_cfg, finalize_cfg
from graphgps_ext.logger import RunLogger, setup_logging, truncate_stats, write_json
from graphgps_ext.train import checkpoint as ckpt
from graphgps_ext.train.loop import NonFiniteLossError, Trainer
from graphgps_ext.train.loss import LOSSES

# What a fresh start removes from a seed directory (nothing else is touched).
_RUN_ENTRIES = ('config.yaml', 'logging.log', 'best.json', 'done',
                'split_indices.pt', 'train', 'val', 'test', 'ckpt', 'wandb')


def load_dataset(cfg):
    """:func:`graphgps_ext.loader.load_dataset` (imported on use)."""
    from graphgps_ext.loader import load_dataset as fn
    return fn(cfg)


def make_loaders(cfg, bundle, rank: int = 0, world_size: int = 1):
    """:func:`graphgps_ext.loader.make_loaders` (imported on use)."""
    from graphgps_ext.loader import make_loaders as fn
    return fn(cfg, bundle, rank=rank, world_size=world_size)


def run_dir_of(cfg) -> str:
    return os.path.join(cfg.out_dir, cfg.run_name, str(cfg.seed))


def clean_run_dir(run_dir: str):
    """Remove a previous run's outputs from ``run_dir`` (fresh start)."""
    if not os.path.isdir(run_dir):
        return
    for entry in os.listdir(run_dir):
        path = os.path.join(run_dir, entry)
        if entry in _RUN_ENTRIES or entry.startswith('events.out.tfevents'):
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def build_model(cfg, task) -> torch.nn.Module:
    if cfg.model.type not in gg.network_dict:
        raise ConfigError(f"unknown model.type '{cfg.model.type}'; registered: "
                          + ', '.join(sorted(gg.network_dict)))
    return gg.network_dict[cfg.model.type](cfg, task)


def resume_hint(cfg, cfg_file: Optional[str]) -> str:
    src = f'--cfg {cfg_file}' if cfg_file else '--cfg <your config>'
    return (f'python main.py {src} --seeds {cfg.seed} train.auto_resume True '
            '(plus the same overrides)')


def run_seed(cfg, cfg_file: Optional[str] = None,
             callbacks: Sequence[Callable] = ()) -> Optional[Dict[str, Any]]:
    """Train and evaluate one seed (``cfg.seed``); returns the best record.

    Raises :class:`NonFiniteLossError` (NaN/inf loss) and
    :class:`KeyboardInterrupt` after logging how to resume.
    """
    run_dir = run_dir_of(cfg)
    last_path = os.path.join(run_dir, 'ckpt', 'last.pt')
    done_path = os.path.join(run_dir, 'done')
    main = ckpt.is_main_process()
    rank, world_size = dist.get_rank(), dist.get_world_size()
    global_batch = dist.resolve_batch_size(cfg, world_size)
    log = setup_logging(None)
    # Rank 0 looks at the files; every process follows its decision.
    done = bool(cfg.train.auto_resume and os.path.exists(done_path))
    resume = bool(cfg.train.auto_resume and os.path.exists(last_path))
    done, resume = dist.broadcast_object((done, resume))
    if done:
        log.info(f'{run_dir} is done (remove {done_path} to run it again); skipped')
        best_path = os.path.join(run_dir, 'best.json')
        best = None
        if main and os.path.exists(best_path):
            with open(best_path) as f:
                best = json.load(f)
        return dist.broadcast_object(best)
    if main:
        if not resume:
            clean_run_dir(run_dir)
        os.makedirs(run_dir, exist_ok=True)
    log = setup_logging(run_dir)
    log.info(f'run {cfg.run_name} seed {cfg.seed} -> {run_dir}'
             + (f' (resuming from {last_path})' if resume else ''))

    device = dist.local_device(cfg.accelerator)
    ckpt.seed_everything(cfg.seed)
    bundle = dist.in_turn(lambda: load_dataset(cfg))
    task = bundle.task
    metric, mode = finalize_cfg(cfg, task)
    if cfg.model.loss_fun not in LOSSES:
        raise ConfigError(f"unknown model.loss_fun '{cfg.model.loss_fun}'; "
                          f"valid: {', '.join(LOSSES)}")
    if main:
        dump_cfg(cfg, os.path.join(run_dir, 'config.yaml'))
        if getattr(bundle, 'info', None):
            write_json(os.path.join(run_dir, 'data.json'), bundle.info)
        if getattr(bundle, 'split_indices', None) is not None:
            ckpt.save(bundle.split_indices, os.path.join(run_dir, 'split_indices.pt'))

    # Re-seed so that model init and batching do not depend on whether the
    # dataset was processed now or read from its cache.
    ckpt.seed_everything(cfg.seed)
    model = dist.wrap_model(build_model(cfg, task).to(device), cfg, device)
    loaders = make_loaders(cfg, bundle, rank=rank, world_size=world_size)
    if rank > 0:  # own dropout streams; rank 0 draws as one process would
        ckpt.seed_everything(dist.rank_seed(cfg.seed, rank))
    state = ckpt.load(last_path) if resume else None
    run_logger = RunLogger(cfg, run_dir, cfg.run_name,
                           wandb_id=state.get('wandb_id') if state else None)
    trainer = Trainer(cfg, model, loaders, LOSSES[cfg.model.loss_fun], metric,
                      mode, task.metrics, run_dir, run_logger, device, callbacks)
    log.info(f'{task.name}: {task.task}-level {task.task_type}, '
             f'{sum(len(d) for d in bundle.splits.values())} graphs '
             f'({", ".join(f"{k} {len(v)}" for k, v in bundle.splits.items())}); '
             f'model {cfg.model.type} {cfg.gt.layer_type} x{cfg.gt.layers}, '
             f'{trainer.params:,} parameters; selecting on {trainer.select_split} '
             f'{metric} ({mode}); device {device}'
             + (f'; {world_size} processes ({dist.backend_name()}), batch '
                f'{cfg.train.batch_size} per process = {global_batch} global, '
                f'lr {trainer.optimizer.param_groups[0]["lr"]:.3g} '
                f'(optim.lr_scaling {cfg.optim.lr_scaling})'
                if world_size > 1 else ''))
    if state is not None:
        trainer.load_state_dict(state)
        if main:
            truncate_stats(run_dir, trainer.last_epoch)
            if trainer.best is not None:
                write_json(os.path.join(run_dir, 'best.json'), trainer.best)
        log.info(f'resumed after epoch {trainer.last_epoch + 1}')

    start = time.perf_counter()
    try:
        best = trainer.fit()
    except KeyboardInterrupt:
        run_logger.close(failed=True)
        log.error(f'interrupted; {last_path} holds the state after epoch '
                  f'{trainer.last_epoch + 1}. Resume with: '
                  + resume_hint(cfg, cfg_file))
        raise
    except NonFiniteLossError as err:
        run_logger.close(failed=True)
        log.error(str(err))
        raise
    except BaseException:
        run_logger.close(failed=True)
        raise
    run_logger.close()
    elapsed = time.perf_counter() - start
    if best is not None:
        log.info(f'best epoch {best["epoch"] + 1}: ' + ' | '.join(
            f'{s} {metric} {best[s][metric]:.4g}' for s in ('train', 'val', 'test')
            if s in best))
    if main:
        write_json(done_path, {'finished': time.strftime('%Y-%m-%dT%H:%M:%S'),
                               'epochs': trainer.last_epoch + 1,
                               'seconds': round(elapsed, 2),
                               'best_epoch': best['epoch'] if best else None,
                               'world_size': world_size})
    return best
