"""Run logging: TensorBoard event files, W&B offline files, stats truncation."""
import glob
import json
import os

from graphgps_ext.files import read_jsonl
from graphgps_ext.logger import (STATS_FILE, has_wandb_key, truncate_stats,
                                 wandb_offline_records)


def test_truncate_stats_and_torn_line(tmp_path):
    (tmp_path / 'train').mkdir()
    path = tmp_path / 'train' / STATS_FILE
    path.write_text(''.join(json.dumps({'epoch': e}) + '\n' for e in range(5)) + '{"epo')
    assert len(read_jsonl(str(path))) == 5
    truncate_stats(str(tmp_path), 2)
    assert [r['epoch'] for r in read_jsonl(str(path))] == [0, 1, 2]


def test_has_wandb_key(monkeypatch, tmp_path):
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.delenv('WANDB_API_KEY', raising=False)
    monkeypatch.delenv('NETRC', raising=False)
    assert not has_wandb_key()
    monkeypatch.setenv('WANDB_API_KEY', 'x' * 40)
    assert has_wandb_key()


def test_tensorboard_and_wandb_offline_fallback(tiny_run, tiny_cfg, monkeypatch, tmp_path):
    # No key and mode online: falls back to offline files in the run dir.
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.delenv('WANDB_API_KEY', raising=False)
    monkeypatch.delenv('WANDB_MODE', raising=False)
    tiny_cfg.optim.max_epoch = 2
    tiny_cfg.tensorboard.use = True
    tiny_cfg.wandb.use = True
    tiny_cfg.wandb.mode = 'online'
    tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    events = glob.glob(os.path.join(run_dir, 'events.out.tfevents.*'))
    assert events and os.path.getsize(events[0]) > 0
    offline = glob.glob(os.path.join(run_dir, 'wandb', 'offline-run-*'))
    assert len(offline) == 1
    assert glob.glob(os.path.join(offline[0], 'run-*.wandb'))
    log = open(os.path.join(run_dir, 'logging.log')).read()
    assert 'no W&B API key' in log and 'wandb sync' in log
    from graphgps_ext.train.checkpoint import load
    run_id = load(os.path.join(run_dir, 'ckpt', 'last.pt'))['wandb_id']
    assert offline[0].endswith(run_id)

    tags = {v.tag for e in read_events(events[0]) for v in e.summary.value}
    assert {'train/loss', 'train/lr', 'val/accuracy', 'test/accuracy'} <= tags


def read_events(path):
    """Parse a TFRecord event file (length, crc, payload, crc records)."""
    import struct

    from tensorboardX.proto.event_pb2 import Event
    out = []
    with open(path, 'rb') as f:
        while True:
            head = f.read(12)
            if len(head) < 12:
                return out
            (length,) = struct.unpack('<Q', head[:8])
            out.append(Event.FromString(f.read(length)))
            f.read(4)


# --------------------------------------------------------------------------- kill -9
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# main.py with a SIGKILL of its whole process group (the W&B service
# included, as an out-of-memory kill or a node failure) at epoch KILL_AT:
# 'unflushed' after the checkpoint of an epoch whose stats line was written
# but whose TensorBoard and W&B records were not (still queued when killed),
# 'logged' after every logger but before the checkpoint, 'saved' after the
# checkpoint.
KILLER = r'''
import os, signal, sys
sys.path.insert(0, os.environ['PROJECT_ROOT'])
phase, at = os.environ.get('KILL_PHASE', ''), int(os.environ.get('KILL_AT', '-1'))
from graphgps_ext import logger
from graphgps_ext.train import loop
log_epoch, save_last = logger.RunLogger.log_epoch, loop.Trainer.save_last

def killed_log_epoch(self, epoch, records, *args):
    if epoch == at and phase == 'unflushed':
        self.tb = self.wandb = None
    log_epoch(self, epoch, records, *args)
    if epoch == at and phase == 'logged':
        os.killpg(0, signal.SIGKILL)

def killed_save_last(self):
    save_last(self)
    if self.last_epoch == at and phase in ('saved', 'unflushed'):
        os.killpg(0, signal.SIGKILL)

logger.RunLogger.log_epoch, loop.Trainer.save_last = killed_log_epoch, killed_save_last
import main
sys.exit(main.main(sys.argv[1:]))
'''

SMALL = ['dataset.tree_depth', '2', 'dataset.max_graphs', '0',
         'gt.layer_type', 'GatedGCN+None+None', 'gt.layers', '1',
         'gt.dim_hidden', '16', 'train.batch_size', '32',
         'optim.base_lr', '0.01', 'optim.num_warmup_epochs', '1',
         'optim.max_epoch', '10', 'tensorboard.use', 'True', 'wandb.use', 'True',
         'wandb.mode', 'offline', 'train.auto_resume', 'True', 'run_name', 'k']


def test_loggers_equal_the_stats_after_kill_9_and_resume(tmp_path):
    import shutil
    import subprocess
    import sys

    from graphgps_ext.logger import (SPLITS, epoch_scalars, tensorboard_scalars,
                                     wandb_offline_records, wandb_offline_runs)
    shutil.copy(os.path.join(ROOT, 'configs', 'quickstart.yaml'), tmp_path / 'q.yaml')
    (tmp_path / 'killer.py').write_text(KILLER)
    env = {k: v for k, v in os.environ.items() if not k.startswith('WANDB_')}
    env.update(PROJECT_ROOT=ROOT, PYTHONPATH=ROOT, HOME=str(tmp_path), OMP_NUM_THREADS='1',
               PYTHONUNBUFFERED='1')
    cmd = [sys.executable, str(tmp_path / 'killer.py'), '--cfg', str(tmp_path / 'q.yaml'),
           *SMALL, 'dataset.dir', str(tmp_path / 'data'), 'out_dir', str(tmp_path / 'out')]
    run_dir = tmp_path / 'out' / 'k' / '0'
    for phase, at in (('unflushed', 2), ('logged', 5), ('saved', 7), ('', -1)):
        proc = subprocess.run(cmd, cwd=tmp_path, env=dict(env, KILL_PHASE=phase,
                                                          KILL_AT=str(at)),
                              capture_output=True, text=True, timeout=600,
                              start_new_session=True)
        if phase:
            assert proc.returncode == -9, proc.stdout[-2000:] + proc.stderr[-2000:]
            assert [r['epoch'] for r in read_jsonl(str(run_dir / 'train' / STATS_FILE))][-1] == at
        else:
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'Traceback' not in proc.stderr
    stats = {s: read_jsonl(str(run_dir / s / STATS_FILE)) for s in SPLITS}
    assert [r['epoch'] for r in stats['train']] == list(range(10))
    # TensorBoard: every scalar of every epoch, from one event file.
    tb = tensorboard_scalars(str(run_dir))
    # W&B: four offline segments of one run id; together they hold every
    # epoch, and the last one's summary holds the current best.
    segments = wandb_offline_runs(str(run_dir))
    assert len(segments) == 4 and len({s.rsplit('-', 1)[1] for s in segments}) == 1
    history, _ = wandb_offline_records(str(run_dir))
    checked = 0
    for split, records in stats.items():
        for rec in records:
            for tag, value in epoch_scalars(split, rec).items():
                assert abs(tb[tag][rec['epoch']] - value) <= 1e-5 * max(1, abs(value)), tag
                assert history[rec['epoch']][tag] == value, (tag, rec['epoch'])
                checked += 1
    assert checked > 10 * 3 * 2
    assert all(row['epoch'] == step for step, row in history.items())  # the x-axis
    assert set(tb['train/loss']) == set(range(10)) and set(history) == set(range(10))
    assert len(glob.glob(str(run_dir / 'events.out.tfevents.*'))) == 1
    _, last_summary = wandb_offline_records(str(run_dir), exclude=segments[:-1])
    best = json.loads((run_dir / 'best.json').read_text())
    assert last_summary['best/epoch'] == best['epoch']
    metric = best['metric']
    for split in SPLITS:
        assert last_summary[f'best/{split}/{metric}'] == best[split][metric]
    # done.seconds: every segment's training up to its last checkpoint.
    done = json.loads((run_dir / 'done').read_text())
    epochs_seconds = sum(r['time_epoch'] for s in SPLITS for r in stats[s])
    assert done['seconds'] >= epochs_seconds, (done, epochs_seconds)
    log = (run_dir / 'logging.log').read_text()
    assert log.count('loggers brought up to the stats') >= 2, log


def test_close_survives_a_stopped_wandb_service(tiny_cfg, tmp_path, monkeypatch, caplog):
    """A job's SIGTERM stops W&B's service with the run: closing the logger
    warns and releases W&B (no traceback, no failing exit hook)."""
    import wandb

    from graphgps_ext.logger import RunLogger

    class Gone:
        id = 'x'

        def finish(self, exit_code=0):
            raise ConnectionResetError('Connection lost')

    torn = []
    monkeypatch.setattr(wandb, 'teardown', lambda exit_code=None: torn.append(exit_code))
    tiny_cfg.tensorboard.use = False
    tiny_cfg.wandb.use = False
    logger = RunLogger(tiny_cfg, str(tmp_path / 'run'), 'tiny')
    logger.wandb = Gone()
    logger.close(failed=True)
    assert logger.wandb is None and torn == [1]
    assert 'W&B could not finish the run (ConnectionResetError: Connection lost)' in caplog.text


# --------------------------------------------------------------------------- what a person reads
def test_epoch_line_has_elapsed_eta_and_best_so_far(tiny_cfg, tmp_path):
    from graphgps_ext.logger import RunLogger, duration
    tiny_cfg.optim.max_epoch = 10
    logger = RunLogger(tiny_cfg, str(tmp_path / 'run'), 'tiny')
    rec = {'epoch': 3, 'loss': 0.5, 'accuracy': 0.75, 'lr': 0.001, 'time_epoch': 2.0,
           'params': 10}
    best = {'epoch': 2, 'split': 'val', 'metric': 'accuracy', 'value': 0.875}
    # Epochs after a segment's first are timed from the elapsed seconds:
    # 3 s each, 6 left after epoch 3.
    logger.clock.tick(10.0, 1.0)
    line = logger.epoch_line(3, {'train': rec, 'val': dict(rec, lr=0.001)}, best, 13.0)
    assert line.startswith('epoch 3 | train loss 0.5 accuracy 0.75 | val loss 0.5 ')
    assert '| lr 0.001 | took 4.0s | elapsed 13s, ETA 18s (6 epochs left) | ' in line
    assert line.endswith('| best epoch 2: val accuracy 0.875')
    # The first epoch of a segment: its passes' seconds stand in.
    first = RunLogger(tiny_cfg, str(tmp_path / 'run'), 'tiny').epoch_line(
        0, {'train': rec}, None, 120.0)
    assert 'elapsed 2m00s, ETA 18s (9 epochs left)' in first and 'best' not in first
    assert [duration(s) for s in (0.04, 42.4, 185, 7620, 273600)] == [
        '0.0s', '42s', '3m05s', '2h07m', '3d04h']


def test_the_log_file_has_the_line_and_its_best_epoch_is_best_json(tiny_run, tiny_cfg):
    tiny_cfg.optim.max_epoch = 3
    best = tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    log = open(os.path.join(run_dir, 'logging.log')).read()
    lines = [ln for ln in log.splitlines() if ' INFO epoch ' in ln]
    assert [ln.split(' INFO ')[1].split(' |')[0] for ln in lines] == [
        'epoch 0', 'epoch 1', 'epoch 2']
    assert all(' ETA ' in ln and '| best epoch ' in ln for ln in lines)
    assert '(0 epochs left)' in lines[-1]
    on_disk = json.load(open(os.path.join(run_dir, 'best.json')))
    assert on_disk['epoch'] == best['epoch']
    assert f"INFO best epoch {on_disk['epoch']}: " in log
    assert lines[-1].endswith(f"best epoch {on_disk['epoch']}: val accuracy "
                              f"{on_disk['val']['accuracy']:.4g}")


def wandb_records(run_dir, kind):
    """The records of one type (``'run'``, ``'metric'``, ``'artifact'``) of
    a run's W&B offline files."""
    from wandb.proto import wandb_internal_pb2 as pb

    from graphgps_ext.logger import _wandb_payloads, wandb_offline_runs
    out = []
    for folder in wandb_offline_runs(run_dir):
        for path in glob.glob(os.path.join(folder, '*.wandb')):
            for data in _wandb_payloads(path):
                rec = pb.Record.FromString(data)
                if rec.WhichOneof('record_type') == kind:
                    out.append(getattr(rec, kind))
    return out


def test_wandb_and_tensorboard_as_their_users_expect(tiny_run, tiny_cfg, monkeypatch,
                                                     tmp_path):
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.delenv('WANDB_API_KEY', raising=False)
    monkeypatch.delenv('WANDB_MODE', raising=False)
    tiny_cfg.optim.max_epoch = 2
    tiny_cfg.tensorboard.use = True
    tiny_cfg.wandb.use = True
    tiny_cfg.wandb.mode = 'online'  # no key: runs offline, and says so
    tiny_cfg.wandb.name = 'my-run'
    tiny_cfg.wandb.tags = ['ablation', 'tiny']
    tiny_cfg.wandb.notes = 'a note'
    tiny_cfg.wandb.job_type = 'train'
    tiny_cfg.wandb.log_model = True
    tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    run = wandb_records(run_dir, 'run')[0]
    assert (run.display_name, list(run.tags), run.notes, run.job_type) == (
        'my-run', ['ablation', 'tiny'], 'a note', 'train')
    config = {i.key: json.loads(i.value_json) for i in run.config.update}
    # (W&B has stored a config value both bare and as {'value': ...}.)
    config = {k: v['value'] if isinstance(v, dict) and 'value' in v else v
              for k, v in config.items()}
    assert config['wandb'] == {'mode': 'offline'}  # as run
    assert config['gt']['layers'] == tiny_cfg.gt.layers
    assert 'layers_mp' not in config.get('gnn', {})  # inert
    assert 'mem' not in config and 'view_emb' not in config
    metrics = {m.name or m.glob_name: m.step_metric for m in wandb_records(run_dir, 'metric')}
    assert metrics['train/*'] == metrics['val/*'] == metrics['test/*'] == 'epoch'
    history, summary = wandb_offline_records(run_dir)
    assert all(row['epoch'] == step for step, row in history.items())
    keys = set(history[0])
    assert 'train/lr' in keys and not {'val/lr', 'test/lr', 'train/params'} & keys
    assert summary['params'] > 0 and summary['best/epoch'] in (0, 1)
    artifacts = wandb_records(run_dir, 'artifact')
    assert [a.type for a in artifacts] == ['model'] and artifacts[0].name.startswith('model-')
    # TensorBoard: the config as text, and an HParams entry with the best values.
    from tensorboardX.proto.event_pb2 import Event

    from graphgps_ext.logger import _tfrecords, event_files
    plugins, tags = set(), set()
    for path in event_files(run_dir):
        for data in _tfrecords(path):
            for v in Event.FromString(data).summary.value:
                plugins.add(v.metadata.plugin_data.plugin_name)
                tags.add(v.tag)
    assert {'hparams', 'text'} <= plugins
    assert {'config/text_summary', 'best/val/accuracy', 'best/epoch', 'train/lr'} <= tags
    assert 'val/lr' not in tags and 'train/params' not in tags


def test_wandb_keys_of_graphgps_and_wandb_init_are_accepted(capsys, monkeypatch):
    monkeypatch.syspath_prepend(ROOT)
    import main
    rc = main.main(['--cfg', os.path.join(ROOT, 'configs', 'quickstart.yaml'), '--dry-run',
                    'wandb.name', 'my-run', 'wandb.tags', "['ablation', 'cpu']",
                    'wandb.notes', 'first try', 'wandb.job_type', 'train',
                    'wandb.log_model', 'True'])
    assert rc == 0, capsys.readouterr().err
    from graphgps_ext.runs.config import load_cfg
    cfg = load_cfg(None, ['wandb.tags', "['ablation', 'cpu']"])
    assert list(cfg.wandb.tags) == ['ablation', 'cpu']


def test_logged_config_leaves_out_inert_keys():
    from graphgps_ext.logger import logged_config
    from graphgps_ext.runs.config import load_cfg
    cfg = load_cfg(os.path.join(ROOT, 'configs', 'quickstart.yaml'), ['seed', '3'])
    flat = logged_config(cfg)
    assert flat['seed'] == 3 and flat['run_name'] == cfg.run_name
    assert flat['gt.layer_type'] == 'GCN+Transformer+None' and 'optim.base_lr' in flat
    for inert in ('gnn.layers_mp', 'gnn.agg', 'mna.hops', 'csa.num_channels',
                  'gea.num_slots', 'optim.steps', 'dataset.dir', 'wandb.use', 'mem.inplace'):
        assert inert not in flat, inert
    assert len(flat) < 100
def test_wandb_runs_of_a_stack_side_by_side(tiny_cfg, tmp_path):
    """The seeds of a stack log at once, each into its own W&B run (whose
    files W&B's service writes in the background: only the runs are
    checked here)."""
    from graphgps_ext.logger import RunLogger, wandb_offline_runs
    tiny_cfg.wandb.use, tiny_cfg.wandb.mode = True, 'offline'
    loggers = []
    for seed in (0, 1):
        tiny_cfg.seed = seed
        loggers.append(RunLogger(tiny_cfg.clone(), str(tmp_path / str(seed)), 'n'))
    runs = [logger.wandb for logger in loggers]
    assert runs[0] is not runs[1] and runs[0].id != runs[1].id
    assert [r.name for r in runs] == ['n-s0', 'n-s1']
    for seed, logger in enumerate(loggers):
        logger.log_epoch(0, {'train': {'epoch': 0, 'loss': float(seed)}})
    for logger in loggers:
        logger.close()
    for seed, logger in enumerate(loggers):
        folders = wandb_offline_runs(str(tmp_path / str(seed)))
        assert len(folders) == 1 and folders[0].endswith(logger.wandb_id)
