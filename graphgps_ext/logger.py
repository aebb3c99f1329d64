"""Per-run logging: ``logging.log``, ``<split>/stats.json``, TensorBoard, W&B.

Epochs are numbered from 0 everywhere: in the log lines, in the files
(``epoch`` of ``stats.json``, ``best.json``, ``done``'s ``best_epoch``), in
``agg/`` and the report, and as the step of TensorBoard and W&B, as GraphGym
and GraphGPS number them. A run of ``optim.max_epoch`` N has the epochs
0 .. N - 1; counts (``done``'s ``epochs``, "6 epochs left") are counts.

A :class:`RunLogger` owns every output a run writes besides checkpoints:

- one JSON object per line, per epoch and split, in
  ``<run dir>/<split>/stats.json`` (:data:`STATS_FILE`, GraphGym's name and
  format, so that GraphGym's ``agg_runs`` reads it: ``epoch``, ``loss``, the
  metrics, ``lr``, ``time_epoch`` in seconds, ``params``); ``best.json`` with the best-validation epoch of every split;
- one summary line per epoch, the same on stdout and in
  ``<run dir>/logging.log`` (:meth:`RunLogger.epoch_line`): each split's
  loss and metrics, the learning rate, the epoch's seconds, the training
  time so far, the estimated time to the last epoch (ETA) and the best
  epoch so far with its selection value;
- with ``tensorboard.use``: tensorboardX event files in the run directory:
  the scalars of :func:`epoch_scalars` (step = epoch), the run's config
  (:func:`logged_config`) as text, and when the run finishes an HParams
  entry: that config beside the best epoch's metrics (``best/<split>/<key>``,
  ``best/epoch``), so that TensorBoard's HParams tab compares runs;
- with ``wandb.use``: a W&B run (project ``wandb.project``, entity
  ``wandb.entity`` or your default, group = config name, name =
  ``wandb.name`` or ``<name>-s<seed>``, ``wandb.tags``, ``wandb.notes``,
  ``wandb.job_type``; the config of :func:`logged_config` with the W&B mode
  the run used; per epoch the scalars of :func:`epoch_scalars` against the
  x-axis ``epoch`` (``define_metric``); the summary values
  ``best/<split>/<key>``, ``best/epoch`` and ``params``; with
  ``wandb.log_model`` the best checkpoint as a ``model`` artifact when the
  run finishes). ``wandb.mode online`` without an
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

from graphgps_ext.config import declarations, flatten, key_matches, unflatten
from graphgps_ext.dist import get_rank, is_main_process
from graphgps_ext.files import write_guard
from graphgps_ext.results.identity import identity
from graphgps_ext.results.tree import RunDir
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


def duration(seconds: float) -> str:
    """``'8.2s'``, ``'42s'``, ``'3m05s'``, ``'2h07m'``, ``'3d04h'``."""
    s = max(0.0, float(seconds))
    if s < 10:
        return f'{s:.1f}s'
    s = int(round(s))
    if s < 60:
        return f'{s}s'
    if s < 3600:
        return f'{s // 60}m{s % 60:02d}s'
    if s < 86400:
        return f'{s // 3600}h{s % 3600 // 60:02d}m'
    return f'{s // 86400}d{s % 86400 // 3600:02d}h'


#: Keys of a stats record that are not logged per split: the epoch (the
#: step) and the parameter count (a fact of the model: W&B's summary, the
#: TensorBoard config text). The learning rate is logged once, as
#: ``train/lr``.
NOT_LOGGED = ('epoch', 'params')


def epoch_scalars(split: str, record: Dict[str, Any]) -> Dict[str, float]:
    """``{'<split>/<key>': value}``: what TensorBoard and W&B get of a stats
    record (its numbers but :data:`NOT_LOGGED`, and ``lr`` of the train
    split only)."""
    return {f'{split}/{k}': v for k, v in record.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            and k not in NOT_LOGGED and (k != 'lr' or split == 'train')}


def logged_config(cfg) -> Dict[str, Any]:
    """The effective config, flat (``{dotted key: value}``): the keys that
    can change the run's results (:func:`graphgps_ext.results.identity.identity`)
    without the GraphGym keys this project does not read (declared
    ``unused``) and those this config makes ineffective (declared
    ``ignored``, e.g. the MNA keys of a run without an MNA branch); plus
    ``seed`` and ``run_name``."""
    decl = declarations()
    inert = list(decl.unused)
    for dec in decl.ignored:
        try:
            if not dec.unless(cfg):
                inert += list(dec.keys)
        except (AttributeError, KeyError):  # a config without the groups it reads
            continue
    out = {k: v for k, v in identity(cfg).items() if not key_matches(k, inert)}
    flat = flatten(cfg)
    out.update({k: flat[k] for k in ('seed', 'run_name') if k in flat})
    return dict(sorted(out.items()))


class EpochClock:
    """Elapsed time and ETA of a run, from the training time so far that the
    trainer reports after each epoch (``elapsed``: every segment of a
    resumed run). The ETA is the epochs left times the mean wall time of
    this segment's epochs after its first (the first also compiles and
    warms up; while it is the only one, its passes' own seconds stand in)."""

    def __init__(self):
        self.last: Optional[float] = None  # elapsed at the previous epoch
        self.times: List[float] = []       # wall seconds of later epochs

    def tick(self, elapsed: float, passes: float) -> float:
        """Record an epoch; returns the seconds per epoch of the estimate."""
        if self.last is not None:
            self.times.append(max(0.0, elapsed - self.last))
        self.last = elapsed
        return sum(self.times) / len(self.times) if self.times else passes


def best_values(best: Dict[str, Any]) -> Dict[str, Any]:
    """``{'best/<split>/<key>': value, 'best/epoch': epoch}`` of a best
    record: the W&B summary values and the TensorBoard HParams metrics."""
    out = {}
    for split in SPLITS:
        for k, v in best.get(split, {}).items():
            if k not in NOT_LOGGED and isinstance(v, (int, float)) \
                    and not isinstance(v, bool):
                out[f'best/{split}/{k}'] = v
    out['best/epoch'] = best['epoch']
    return out


def _config_text(config: Dict[str, Any]) -> str:
    """The config as Markdown for TensorBoard's text tab (a code block)."""
    import yaml
    text = yaml.safe_dump(unflatten(config), sort_keys=True, default_flow_style=False)
    return '\n'.join('    ' + line for line in text.splitlines())


def _hparam(value):
    """A value TensorBoard's HParams plugin takes (number, string, bool)."""
    if isinstance(value, (bool, int, float, str)):
        return value
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
    :mod:`graphgps_ext.runs.stack`, each log their own run):
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
        self.best: Optional[Dict[str, Any]] = None
        self.clock = EpochClock()
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
            self.tb.add_text('config', _config_text(logged_config(cfg)), 0)
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
        w = self.cfg.wandb
        config = unflatten(logged_config(self.cfg))
        config['wandb'] = {'mode': mode}  # as run (offline when it fell back)
        self.wandb = wandb.init(
            project=w.project, entity=w.entity or None,
            group=self.name, name=w.name or f'{self.name}-s{self.cfg.seed}',
            tags=list(w.tags) or None, notes=w.notes or None,
            job_type=w.job_type or None,
            id=self.wandb_id, resume='allow', dir=self.run_dir, mode=mode,
            config=config, settings=wandb.Settings(silent=True, console='off',
                                                   **wandb_runs_side_by_side()))
        self.wandb_id = self.wandb.id  # a new run's id, kept for resuming
        self.wandb_mode = mode
        # The epoch is the x-axis of every per-epoch value.
        self.wandb.define_metric('epoch')
        for split in SPLITS:
            self.wandb.define_metric(f'{split}/*', step_metric='epoch')

    def log_epoch(self, epoch: int, records: Dict[str, Dict[str, Any]],
                  best: Optional[Dict[str, Any]] = None,
                  elapsed: Optional[float] = None):
        """Append ``records[split]`` to the stats files, log them to
        TensorBoard and W&B, and log the epoch's line (:meth:`epoch_line`;
        ``best``: the best record so far, this epoch's selection included;
        ``elapsed``: the run's training seconds so far)."""
        if self.main:
            row: Dict[str, Any] = {}
            for split, rec in records.items():
                RunDir(self.run_dir).append_stats(split, rec)
                row.update(epoch_scalars(split, rec))
            if self.tb is not None:
                for tag, v in row.items():
                    self.tb.add_scalar(tag, v, epoch)
                self.tb.flush()
            if self.wandb is not None:
                self.wandb.log(dict(row, epoch=epoch), step=epoch)
                params = records.get('train', {}).get('params')
                if params is not None and epoch == 0:
                    self.wandb.summary['params'] = params
        self.log.info(self.epoch_line(epoch, records, best, elapsed))

    def epoch_line(self, epoch: int, records: Dict[str, Dict[str, Any]],
                   best: Optional[Dict[str, Any]] = None,
                   elapsed: Optional[float] = None) -> str:
        """``epoch 3 | train loss 0.52 accuracy 0.81 | val ... | lr 0.003 |
        took 1.2s | elapsed 5.1s, ETA 8.4s (7 epochs left) | best epoch 2: val
        accuracy 0.91`` (epochs from 0, :mod:`graphgps_ext.logger`)."""
        parts = [f'epoch {epoch}']
        for split, rec in records.items():
            keys = [k for k in rec if k not in ('epoch', 'lr', 'time_epoch', 'params')]
            parts.append(f'{split} ' + ' '.join(f'{k} {_fmt(rec[k])}' for k in keys))
        lr = records.get('train', {}).get('lr')
        if lr is not None:
            parts.append(f'lr {lr:.3g}')
        seconds = sum(r.get('time_epoch', 0.0) for r in records.values())
        parts.append(f'took {duration(seconds)}')
        if elapsed is not None:
            per_epoch = self.clock.tick(elapsed, seconds)
            left = max(0, self.cfg.optim.max_epoch - epoch - 1)
            parts.append(f'elapsed {duration(elapsed)}, ETA {duration(per_epoch * left)} '
                         f'({left} epoch{"s" if left != 1 else ""} left)')
        if best is not None:
            parts.append(f'best epoch {best["epoch"]}: {best["split"]} '
                         f'{best["metric"]} {_fmt(best["value"])}')
        return ' | '.join(parts)

    def log_best(self, best: Dict[str, Any]):
        """Write ``best.json`` and the W&B ``best/*`` summary values."""
        self.best = best
        if not self.main:
            return
        RunDir(self.run_dir).write_best(best)
        if self.wandb is not None:
            for key, v in best_values(best).items():
                self.wandb.summary[key] = v

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
                        epoch_scalars(split, rec))
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
                row = dict(epochs[epoch], epoch=epoch)
                if not set(row) <= set(have.get(epoch, {})):
                    self.wandb.log(row, step=epoch)
                    done['wandb'] += 1
        if best is not None:
            self.log_best(best)
        return done

    def _tb_hparams(self, best: Dict[str, Any]):
        """TensorBoard's HParams entry in the run's own event file: the
        effective config beside the best epoch's values (written as
        scalars at the best epoch, the tags ``best/...``)."""
        from tensorboardX.summary import hparams
        metrics = best_values(best)
        config = {k: _hparam(v) for k, v in logged_config(self.cfg).items()}
        for summary in hparams(config, metrics):
            self.tb.file_writer.add_summary(summary)
        for tag, v in metrics.items():
            self.tb.add_scalar(tag, v, best['epoch'])
        self.tb.flush()

    def _log_model(self, run, best: Dict[str, Any]):
        """``ckpt/best.pt`` as the W&B artifact ``model-<run id>`` (type
        ``model``, aliases ``best`` and ``epoch-<e>``)."""
        import wandb
        path = RunDir(self.run_dir).best_ckpt
        if not os.path.exists(path):
            return
        artifact = wandb.Artifact(
            f'model-{run.id}', type='model',
            metadata={'epoch': best['epoch'], 'metric': best['metric'],
                      'split': best['split'], 'value': best['value'],
                      'run_name': self.name, 'seed': self.cfg.seed})
        artifact.add_file(path, name=os.path.basename(path))
        run.log_artifact(artifact, aliases=['best', f'epoch-{best["epoch"]}'])

    def close(self, failed: bool = False):
        """Close TensorBoard and W&B. A run that finished (``failed``
        False) with a best epoch first gets its TensorBoard HParams entry
        and, with ``wandb.log_model``, its best checkpoint as a W&B
        artifact."""
        if self.tb is not None:
            if not failed and self.best is not None:
                self._tb_hparams(self.best)
            self.tb.close()
            self.tb = None
        if self.wandb is not None:
            run, self.wandb = self.wandb, None
            try:
                if not failed and self.best is not None and self.cfg.wandb.log_model:
                    self._log_model(run, self.best)
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
