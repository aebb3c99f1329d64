"""Run logging: TensorBoard event files, W&B offline files, stats truncation."""
import glob
import json
import os

from graphgps_ext.files import read_jsonl
from graphgps_ext.logger import STATS_FILE, has_wandb_key, truncate_stats


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
