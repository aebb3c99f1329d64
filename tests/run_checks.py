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
