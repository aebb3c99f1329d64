"""Helpers of the tests that train: a folder's files, a run's stats without
the wall-clock field, a loss that interrupts training."""
import os

from graphgps_ext.files import read_jsonl
from graphgps_ext.logger import STATS_FILE
from graphgps_ext.task import SPLITS
from graphgps_ext.train.loss import cross_entropy


def snapshot(folder):
    """``{relative path: bytes}`` of every file below ``folder``."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, 'rb') as f:
                out[os.path.relpath(path, folder)] = f.read()
    return out


def stats(run_dir, split='train'):
    """The stats lines of ``split`` without the wall-clock field."""
    return [{k: v for k, v in r.items() if k != 'time_epoch'}
            for r in read_jsonl(os.path.join(run_dir, split, STATS_FILE))]


def all_stats(run_dir):
    """:func:`stats` of every split."""
    return {s: stats(run_dir, s) for s in SPLITS}


class Interrupt:
    """A loss that raises KeyboardInterrupt on its ``at``-th call (mid-epoch)."""

    def __init__(self, at):
        self.calls, self.at = 0, at

    def __call__(self, pred, true):
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return cross_entropy(pred, true)


def seal(run_dir, epochs=None, best_epoch=None, fingerprint='aaaa', identity=None,
         data='d0', seed=None, data_dir='/data', **extra):
    """Mark a seed folder written by hand as finished, as a run does: the
    fingerprint line at the top of ``config.yaml`` (written with the seed
    when missing) and a ``done`` marker with the run's record, its data
    record (``data``: its content fingerprint, read from ``data_dir``;
    ``None``: none, as an earlier version wrote) and the SHA-256 of its
    files. ``epochs`` and
    ``best_epoch`` default to the stats' and ``best.json``'s."""
    import json

    from graphgps_ext.results.seed_folder import file_digests
    from graphgps_ext.results.tree import FINGERPRINT_LINE
    run_dir = str(run_dir)
    seed = int(os.path.basename(os.path.normpath(run_dir))) if seed is None else seed
    config = os.path.join(run_dir, 'config.yaml')
    text = open(config).read() if os.path.exists(config) else f'seed: {seed}\n'
    if not text.startswith('# fingerprint:'):
        text = FINGERPRINT_LINE.format(fingerprint) + '\n' + text
    with open(config, 'w') as f:
        f.write(text)
    if epochs is None:
        epochs = len(read_jsonl(os.path.join(run_dir, 'train', STATS_FILE)))
    best_path = os.path.join(run_dir, 'best.json')
    if best_epoch is None and os.path.exists(best_path):
        best_epoch = json.load(open(best_path))['epoch']
    marker = {'epochs': epochs, 'best_epoch': best_epoch, 'fingerprint': fingerprint,
              'identity': identity or {}, 'seed': seed}
    if data is not None:
        marker['data'] = {'fingerprint': data, 'dir': data_dir}
    marker.update(extra)
    marker['files'] = file_digests(run_dir)
    if data is None:  # an earlier version: the files present, no data.json
        marker['files'] = {k: v for k, v in marker['files'].items()
                           if v is not None and k != 'data.json'}
    with open(os.path.join(run_dir, 'done'), 'w') as f:
        json.dump(marker, f)
    return marker
