"""Per-run logging: ``logging.log``, ``<split>/stats.json``, TensorBoard, W&B.

A :class:`RunLogger` owns every output a run writes besides checkpoints:

- one JSON object per line, per epoch and split, in
  ``<run dir>/<split>/stats.json`` (:data:`STATS_FILE`, GraphGym's name and
  format, so that GraphGym's ``agg_runs`` reads it: ``epoch``, ``loss``, the
  metrics, ``lr``, ``time_epoch`` in seconds, ``params``); ``best.json`` with the best-validation epoch of every split;
- one summary line per epoch on stdout and in ``<run dir>/logging.log``;
- with ``tensorboard.use``: tensorboardX event files in the run directory
  (scalars ``<split>/<key>``, step = epoch);
- with ``wandb.use``: a W&B run (project ``wandb.project``, entity
  ``wandb.entity`` or your default, group = config name, name =
  ``<name>-s<seed>``, the resolved config, per-epoch ``<split>/<key>`` and
  ``best/<split>/<key>`` summary values). ``wandb.mode online`` without an
  API key (``WANDB_API_KEY`` or ``~/.netrc``) falls back to ``offline`` with
  a warning; offline runs are written to ``<run dir>/wandb/`` for
  ``wandb sync``. The environment variable ``WANDB_MODE``, when set, wins
  over ``wandb.mode``. W&B never prompts (``WANDB_SILENT``).

Only the main process writes (see :func:`~graphgps_ext.dist.is_main_process`).
A write the disk refuses raises
:class:`~graphgps_ext.files.ResultsWriteError`; a failing
``logging.log`` is reported once and the log goes on on the terminal.
"""
import json
import logging
import netrc
import os
import sys
from typing import Any, Dict, List, Optional
from urllib.parse import urlparse

from graphgps_ext.dist import get_rank, is_main_process
from graphgps_ext.files import read_jsonl, write_guard, write_json, write_text
from graphgps_ext.task import SPLITS

#: Per-split stats file of a run (and of ``agg/``): one JSON object per line,
#: GraphGym's name (``torch_geometric.graphgym.utils.agg_runs`` reads it).
STATS_FILE = 'stats.json'
LOGGER_NAME = 'graphgps_ext'


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)


class _Held(logging.Handler):
    """Keeps the records logged before the run's log file is chosen (they
    are written into it by :func:`attach_run_log`)."""

    def __init__(self, capacity: int = 10000):
        super().__init__()
        self.records: List[logging.LogRecord] = []
        self.capacity = capacity

    def emit(self, record):
        if len(self.records) < self.capacity:
            self.records.append(record)


class _RunFileHandler(logging.FileHandler):
    """``logging.log``; a failing write (e.g. disk full) is reported once on
    stderr instead of a traceback per record."""

    failed = False

    def handleError(self, record):
        if not self.failed:
            self.failed = True
            err = sys.exc_info()[1]
            print(f'warning: could not write {self.baseFilename} ({err}); '
                  'the log continues on the terminal only', file=sys.stderr)

    def emit(self, record):
        if not self.failed:
            super().emit(record)


def setup_logging(run_dir: Optional[str] = None) -> logging.Logger:
    """Log to stdout and (if ``run_dir``) append to ``<run_dir>/logging.log``.

    Without ``run_dir`` the records are also held in memory until
    :func:`attach_run_log` writes them into the run's log file (a run
    chooses its folder's fate only after its start succeeded).

    In a data-parallel run only rank 0 logs information; the other ranks
    print warnings and errors only, prefixed with ``[rank r]``."""
    log = get_logger()
    for h in list(log.handlers):
        log.removeHandler(h)
        h.close()
    main = is_main_process()
    log.setLevel(logging.INFO if main else logging.WARNING)
    log.propagate = False
    stream = logging.StreamHandler(sys.stdout)
    stream.setFormatter(_formatter())
    log.addHandler(stream)
    if main:
        log.addHandler(_Held())
    if run_dir is not None:
        attach_run_log(run_dir)
    return log


def attach_run_log(run_dir: str) -> logging.Logger:
    """Append the log to ``<run_dir>/logging.log`` (main process), starting
    with the records held since :func:`setup_logging`."""
    log = get_logger()
    if not is_main_process():
        return log
    path = os.path.join(run_dir, 'logging.log')
    with write_guard(path):
        os.makedirs(run_dir, exist_ok=True)
        fh = _RunFileHandler(path)
    fh.setFormatter(_formatter())
    for h in list(log.handlers):
        if isinstance(h, (_Held, logging.FileHandler)):
            log.removeHandler(h)
            for record in getattr(h, 'records', ()):
                fh.handle(record)
            h.close()
    log.addHandler(fh)
    return log


def _formatter() -> logging.Formatter:
    prefix = '' if is_main_process() else f'[rank {get_rank()}] '
    return logging.Formatter(f'%(asctime)s %(levelname)s {prefix}%(message)s',
                             datefmt='%H:%M:%S')


def truncate_stats(run_dir: str, last_epoch: int):
    """Drop the stats lines after ``last_epoch`` (resume from a checkpoint)."""
    for split in SPLITS:
        path = os.path.join(run_dir, split, STATS_FILE)
        if not os.path.exists(path):
            continue
        keep = [r for r in read_jsonl(path) if r['epoch'] <= last_epoch]
        write_text(path, ''.join(json.dumps(r) + '\n' for r in keep))


def has_wandb_key() -> bool:
    """Whether W&B credentials exist (``WANDB_API_KEY`` or a netrc entry)."""
    if os.environ.get('WANDB_API_KEY'):
        return True
    host = urlparse(os.environ.get('WANDB_BASE_URL', 'https://api.wandb.ai')).hostname
    try:
        return netrc.netrc().authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def cfg_to_dict(cfg) -> Dict[str, Any]:
    from yacs.config import CfgNode
    return {k: cfg_to_dict(v) if isinstance(v, CfgNode) else v
            for k, v in cfg.items()}


def _fmt(value) -> str:
    if isinstance(value, float):
        return f'{value:.4g}'
    return str(value)


class RunLogger:
    """Writes a run's stats, summary lines, TensorBoard and W&B records.

    Args:
        cfg: the resolved config.
        run_dir: ``<out_dir>/<name>/<seed>``.
        name: the config name (W&B group).
        wandb_id: id of the W&B run to continue (resume), or ``None``.
    """

    def __init__(self, cfg, run_dir: str, name: str,
                 wandb_id: Optional[str] = None):
        self.cfg = cfg
        self.run_dir = run_dir
        self.name = name
        self.log = get_logger()
        self.main = is_main_process()
        self.tb = None
        self.wandb = None
        self.wandb_id = wandb_id
        if not self.main:
            return
        for split in SPLITS:
            with write_guard(os.path.join(run_dir, split)):
                os.makedirs(os.path.join(run_dir, split), exist_ok=True)
        if cfg.tensorboard.use:
            from tensorboardX import SummaryWriter
            self.tb = SummaryWriter(logdir=run_dir)
        if cfg.wandb.use:
            self._init_wandb()

    def _init_wandb(self):
        os.environ.setdefault('WANDB_SILENT', 'true')
        mode = os.environ.get('WANDB_MODE') or self.cfg.wandb.mode
        if mode == 'disabled':
            return
        if mode == 'online' and not has_wandb_key():
            self.log.warning('wandb.mode online but no W&B API key found '
                             '(WANDB_API_KEY or ~/.netrc): logging offline to '
                             f'{self.run_dir}/wandb; upload later with '
                             '`wandb sync <that folder>/offline-run-*`')
            mode = 'offline'
        import wandb
        self.wandb = wandb.init(
            project=self.cfg.wandb.project,
            entity=self.cfg.wandb.entity or None,
            group=self.name, name=f'{self.name}-s{self.cfg.seed}',
            id=self.wandb_id, resume='allow', dir=self.run_dir, mode=mode,
            config=cfg_to_dict(self.cfg),
            settings=wandb.Settings(silent=True, console='off'))
        self.wandb_id = self.wandb.id  # a new run's id, kept for resuming

    def log_epoch(self, epoch: int, records: Dict[str, Dict[str, Any]]):
        """Append ``records[split]`` to the stats files, log one line."""
        if self.main:
            for split, rec in records.items():
                path = os.path.join(self.run_dir, split, STATS_FILE)
                with write_guard(path), open(path, 'a') as f:
                    f.write(json.dumps(rec) + '\n')
                scalars = {k: v for k, v in rec.items()
                           if k != 'epoch' and isinstance(v, (int, float))}
                if self.tb is not None:
                    for k, v in scalars.items():
                        self.tb.add_scalar(f'{split}/{k}', v, epoch)
                if self.wandb is not None:
                    self.wandb.log({f'{split}/{k}': v for k, v in scalars.items()},
                                   step=epoch)
            if self.tb is not None:
                self.tb.flush()
        parts = [f'epoch {epoch + 1}/{self.cfg.optim.max_epoch}']
        for split, rec in records.items():
            keys = [k for k in rec if k not in ('epoch', 'lr', 'time_epoch', 'params')]
            parts.append(f'{split} ' + ' '.join(f'{k} {_fmt(rec[k])}' for k in keys))
        lr = records.get('train', {}).get('lr')
        if lr is not None:
            parts.append(f'lr {lr:.3g}')
        seconds = sum(r.get('time_epoch', 0.0) for r in records.values())
        parts.append(f'{seconds:.2f} s/epoch')
        self.log.info(' | '.join(parts))

    def log_best(self, best: Dict[str, Any]):
        """Write ``best.json`` and the W&B ``best/*`` summary values."""
        if not self.main:
            return
        write_json(os.path.join(self.run_dir, 'best.json'), best)
        if self.wandb is not None:
            for split in SPLITS:
                for k, v in best.get(split, {}).items():
                    self.wandb.summary[f'best/{split}/{k}'] = v
            self.wandb.summary['best/epoch'] = best['epoch']

    def close(self, failed: bool = False):
        if self.tb is not None:
            self.tb.close()
            self.tb = None
        if self.wandb is not None:
            self.wandb.finish(exit_code=1 if failed else 0)
            self.wandb = None
