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

After a kill (``kill -9``, an out-of-memory kill, a node failure) the
loggers may hold less than the stats: TensorBoard flushes after the stats
line is written, and W&B's service writes its file in the background. On
resume :meth:`RunLogger.replay` makes them equal the record again: the
TensorBoard scalars are rewritten from the stats (one event file holding
every kept epoch; the earlier files, whose later epochs the resume
discards, are removed once it is flushed), the epochs that no earlier W&B
offline file holds are logged into the resumed W&B run (online: every kept
epoch; W&B keeps those it lacks), and the ``best/*`` summary is logged
again. :func:`tensorboard_scalars` and :func:`wandb_offline_records` read
the files back.

Only the main process writes (see :func:`~graphgps_ext.dist.is_main_process`).
A write the disk refuses raises
:class:`~graphgps_ext.files.ResultsWriteError`; a failing
``logging.log`` is reported once and the log goes on on the terminal.
"""
import glob
import json
import logging
import netrc
import os
import struct
import sys
import zlib
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import urlparse

from graphgps_ext.dist import get_rank, is_main_process
from graphgps_ext.files import write_guard
from graphgps_ext.run_dir import RunDir
from graphgps_ext.task import SPLITS

#: Per-split stats file of a run (and of ``agg/``): one JSON object per line,
#: GraphGym's name (``torch_geometric.graphgym.utils.agg_runs`` reads it).
STATS_FILE = RunDir.STATS
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
    path = RunDir(run_dir).log
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
        folder = RunDir(run_dir)
        if not os.path.exists(folder.stats(split)):
            continue
        keep = [r for r in folder.read_stats(split) if r['epoch'] <= last_epoch]
        folder.write_stats(split, keep)


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


# --------------------------------------------------------------------------- reading back
def _tfrecords(path: str) -> Iterator[bytes]:
    """The payloads of a TFRecord file (length, crc, payload, crc); stops
    at a record cut short (a killed writer)."""
    with open(path, 'rb') as f:
        while True:
            head = f.read(12)
            if len(head) < 12:
                return
            (length,) = struct.unpack('<Q', head[:8])
            data = f.read(length)
            if len(data) < length or len(f.read(4)) < 4:
                return
            yield data


def event_files(run_dir: str) -> List[str]:
    """The TensorBoard event files of a run, oldest first."""
    return sorted(glob.glob(RunDir(run_dir).events_glob))


def tensorboard_scalars(run_dir: str, exclude: Sequence[str] = ()
                        ) -> Dict[str, Dict[int, float]]:
    """``{tag: {step: value}}`` of the run's event files (but ``exclude``),
    read in the order they were written; a later value of a step wins, and
    a step written after later steps of its tag drops those (TensorBoard's
    purge of orphaned data after a restart)."""
    from tensorboardX.proto.event_pb2 import Event
    out: Dict[str, Dict[int, float]] = {}
    for path in event_files(run_dir):
        if path in exclude:
            continue
        for data in _tfrecords(path):
            try:
                event = Event.FromString(data)
            except Exception:  # noqa: BLE001 - a damaged record ends the file
                break
            for v in event.summary.value:
                if v.WhichOneof('value') != 'simple_value':
                    continue
                steps = out.setdefault(v.tag, {})
                for later in [s for s in steps if s > event.step]:
                    del steps[later]
                steps[event.step] = v.simple_value
    return out


#: Header of a W&B ``.wandb`` file and its record framing (LevelDB's log
#: format: 32 KiB blocks of records ``crc32, length, type``).
_WANDB_HEADER = b':W&B\xe1\xbe\x00'
_WANDB_BLOCK = 32768


def _wandb_payloads(path: str) -> Iterator[bytes]:
    with open(path, 'rb') as f:
        data = f.read()
    if not data.startswith(_WANDB_HEADER):
        return
    pos, pending = len(_WANDB_HEADER), b''
    while pos + 7 <= len(data):
        left = _WANDB_BLOCK - pos % _WANDB_BLOCK
        if left < 7:  # a block's zero-padded tail
            pos += left
            continue
        crc, length, kind = struct.unpack('<IHB', data[pos:pos + 7])
        body = data[pos + 7:pos + 7 + length]
        if (kind == 0 or len(body) < length
                or zlib.crc32(body, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != crc):
            return  # cut short by a kill, or padding: the end of the record
        pos += 7 + length
        if kind == 1:  # full
            yield body
        elif kind == 2:  # first
            pending = body
        elif kind == 3:  # middle
            pending += body
        elif kind == 4:  # last
            yield pending + body


def wandb_offline_runs(run_dir: str) -> List[str]:
    """The W&B offline run folders of a run, oldest first."""
    return sorted(glob.glob(os.path.join(RunDir(run_dir).wandb, 'offline-run-*')))


def wandb_offline_records(run_dir: str, exclude: Sequence[str] = ()
                          ) -> Tuple[Dict[int, Dict[str, Any]], Dict[str, Any]]:
    """``(history {step: {key: value}}, summary {key: value})`` of the run's
    W&B offline files (but the folders ``exclude``), in the order they were
    written (a later value wins); records cut short by a kill end a file."""
    from wandb.proto import wandb_internal_pb2 as pb
    history: Dict[int, Dict[str, Any]] = {}
    summary: Dict[str, Any] = {}

    def key(item) -> str:
        return item.key or '.'.join(item.nested_key)

    for folder in wandb_offline_runs(run_dir):
        if folder in exclude:
            continue
        for path in sorted(glob.glob(os.path.join(folder, '*.wandb'))):
            for data in _wandb_payloads(path):
                rec = pb.Record.FromString(data)
                kind = rec.WhichOneof('record_type')
                if kind == 'history':
                    row = {key(i): json.loads(i.value_json) for i in rec.history.item}
                    step = row.get('_step', rec.history.step.num)
                    history.setdefault(int(step), {}).update(
                        {k: v for k, v in row.items() if not k.startswith('_')})
                elif kind == 'summary':
                    for i in rec.summary.update:
                        summary[key(i)] = json.loads(i.value_json)
    return history, summary


def wandb_runs_side_by_side() -> Dict[str, str]:
    """W&B settings under which every ``wandb.init`` of a process opens a
    run of its own beside those still open (the seeds of a stack,
    :mod:`graphgps_ext.run_stack`, each log their own run):
    ``reinit='create_new'``; empty for a W&B release without it (before
    0.19.10), whose ``wandb.init`` returns the run already open."""
    import wandb
    try:
        wandb.Settings(reinit='create_new')
    except Exception:  # noqa: BLE001 - an older release's validation error
        return {}
    return {'reinit': 'create_new'}


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
        self.wandb_mode: Optional[str] = None
        self._tb_earlier: List[str] = []  # event files of earlier segments
        if not self.main:
            return
        for split in SPLITS:
            with write_guard(RunDir(run_dir).split_dir(split)):
                os.makedirs(RunDir(run_dir).split_dir(split), exist_ok=True)
        if cfg.tensorboard.use:
            from tensorboardX import SummaryWriter
            self._tb_earlier = event_files(run_dir)
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
                             f'{RunDir(self.run_dir).wandb}; upload later with '
                             '`wandb sync <that folder>/offline-run-*`')
            mode = 'offline'
        import wandb
        self.wandb = wandb.init(
            project=self.cfg.wandb.project,
            entity=self.cfg.wandb.entity or None,
            group=self.name, name=f'{self.name}-s{self.cfg.seed}',
            id=self.wandb_id, resume='allow', dir=self.run_dir, mode=mode,
            config=cfg_to_dict(self.cfg),
            settings=wandb.Settings(silent=True, console='off',
                                    **wandb_runs_side_by_side()))
        self.wandb_id = self.wandb.id  # a new run's id, kept for resuming
        self.wandb_mode = mode

    def log_epoch(self, epoch: int, records: Dict[str, Dict[str, Any]]):
        """Append ``records[split]`` to the stats files, log one line."""
        if self.main:
            for split, rec in records.items():
                RunDir(self.run_dir).append_stats(split, rec)
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
        RunDir(self.run_dir).write_best(best)
        if self.wandb is not None:
            for split in SPLITS:
                for k, v in best.get(split, {}).items():
                    self.wandb.summary[f'best/{split}/{k}'] = v
            self.wandb.summary['best/epoch'] = best['epoch']

    def replay(self, last_epoch: int, best: Optional[Dict[str, Any]]) -> Dict[str, int]:
        """After a resume from the checkpoint of ``last_epoch``: make the
        TensorBoard and W&B records hold every epoch of the stats files
        (already cut at ``last_epoch``) and log ``best`` again (``best.json``
        and the W&B ``best/*`` summary). Returns the epochs replayed per
        logger."""
        done = {'tensorboard': 0, 'wandb': 0}
        if not self.main:
            return done
        epochs: Dict[int, Dict[str, float]] = {}
        for split in SPLITS:
            for rec in RunDir(self.run_dir).read_stats(split):
                if rec['epoch'] <= last_epoch:
                    epochs.setdefault(rec['epoch'], {}).update(
                        {f'{split}/{k}': v for k, v in rec.items()
                         if k != 'epoch' and isinstance(v, (int, float))})
        if self.tb is not None:
            for epoch in sorted(epochs):
                for tag, v in epochs[epoch].items():
                    self.tb.add_scalar(tag, v, epoch)
            self.tb.flush()
            for path in self._tb_earlier:  # the record is in this writer's file now
                with write_guard(path):
                    os.remove(path)
            done['tensorboard'] = len(epochs)
        if self.wandb is not None:
            if self.wandb_mode == 'offline':
                mine = os.path.dirname(os.path.normpath(self.wandb.dir))
                try:
                    have, _ = wandb_offline_records(self.run_dir, exclude=[mine])
                except Exception as err:  # noqa: BLE001 - unreadable: replay all
                    self.log.warning(f'could not read the earlier W&B offline files '
                                     f'({err}); every epoch is logged again')
                    have = {}
            else:
                have = {}
            for epoch in sorted(epochs):
                row = epochs[epoch]
                if not set(row) <= set(have.get(epoch, {})):
                    self.wandb.log(row, step=epoch)
                    done['wandb'] += 1
        if best is not None:
            self.log_best(best)
        return done

    def close(self, failed: bool = False):
        if self.tb is not None:
            self.tb.close()
            self.tb = None
        if self.wandb is not None:
            run, self.wandb = self.wandb, None
            try:
                run.finish(exit_code=1 if failed else 0)
            except Exception as err:  # noqa: BLE001 - see below
                # The W&B service process was stopped with the run (a
                # scheduler's SIGTERM reaches every process of the job).
                # Release W&B's connection (and its exit hook, which would
                # fail the same way); what the service wrote stays, and a
                # resume logs the epochs its files lack (replay).
                self.log.warning(f'W&B could not finish the run ({type(err).__name__}: '
                                 f'{err}): its service had stopped; the offline files keep '
                                 'what it wrote and a resume logs the epochs they lack')
                import wandb
                try:
                    wandb.teardown(exit_code=1)
                except Exception:  # noqa: BLE001 - the connection is gone already
                    pass
