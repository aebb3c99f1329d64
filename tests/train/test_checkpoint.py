"""Atomic checkpoint writes, safe loading and the fallback to the previous
checkpoint."""
import os
import random

import numpy as np
import pytest
import torch

from graphgps_ext.files import ResultsWriteError
from graphgps_ext.train import checkpoint as ckpt
from graphgps_ext.train.rng import rng_state, seed_everything, set_rng_state


def test_atomic_save_keeps_old_file_when_writing_fails(tmp_path):
    path = str(tmp_path / 'ckpt' / 'last.pt')
    ckpt.save({'epoch': 1}, path)
    assert ckpt.load(path)['epoch'] == 1

    class Boom:
        def __reduce__(self):
            raise KeyboardInterrupt  # interrupted in the middle of a write

    with pytest.raises(KeyboardInterrupt):
        ckpt.save({'epoch': 2, 'x': Boom()}, path)
    assert ckpt.load(path)['epoch'] == 1
    assert os.listdir(tmp_path / 'ckpt') == ['last.pt']  # no temp file left


class CreatesFile:
    """Unpickling it would call ``open(path, 'w')``: a stand-in for any code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (self.path, 'w')


class RunsShell(CreatesFile):
    """Unpickling it would run a shell command (``os.system``, a module that
    torch's weights-only unpickler reports as blocked, in other words)."""

    def __reduce__(self):
        return os.system, (f'touch {self.path}',)


@pytest.mark.parametrize('payload,zipped', [(CreatesFile, True), (RunsShell, True),
                                            (CreatesFile, False), (RunsShell, False)],
                         ids=['open-zip', 'system-zip', 'open-legacy', 'system-legacy'])
def test_crafted_pickle_is_refused_unread(tmp_path, payload, zipped):
    marker = tmp_path / 'created-by-unpickling'
    path = str(tmp_path / 'last.pt')
    torch.save({'epoch': 3, 'x': payload(str(marker))}, path,
               _use_new_zipfile_serialization=zipped)
    with pytest.raises(ckpt.UnsafeCheckpointError, match='refused to load .*could run code'):
        ckpt.load(path)
    # load_latest never skips an unsafe file for the previous checkpoint
    ckpt.save({'epoch': 2}, ckpt.previous_path(path))
    with pytest.raises(ckpt.UnsafeCheckpointError):
        ckpt.load_latest(path)
    assert not marker.exists()
    torch.load(path, weights_only=False)  # the control: it does run code
    assert marker.exists()


def test_state_is_tensors_and_plain_values(tmp_path):
    """Everything a checkpoint holds loads under weights_only=True, and the
    RNG states restore from it."""
    path = str(tmp_path / 'last.pt')
    gen = torch.Generator().manual_seed(1)
    seed_everything(4)
    ckpt.save({'rng': rng_state(gen)}, path)
    first = (random.random(), np.random.rand(), np.random.randn(), torch.rand(1).item())
    set_rng_state(ckpt.load(path)['rng'], gen)
    assert (random.random(), np.random.rand(), np.random.randn(),
            torch.rand(1).item()) == first


def test_legacy_numpy_rng_state_still_loads(tmp_path):
    path = str(tmp_path / 'old.pt')
    np.random.seed(3)
    torch.save({'rng': {'python': random.getstate(), 'numpy': np.random.get_state(),
                        'torch': torch.get_rng_state()}}, path)
    want = np.random.rand()
    state = ckpt.load(path)
    set_rng_state(state['rng'])
    assert np.random.rand() == want


def test_corrupt_last_falls_back_to_previous(tmp_path):
    path = str(tmp_path / 'ckpt' / 'last.pt')
    ckpt.save({'epoch': 0, 'w': torch.ones(100)}, path, keep_previous=True)
    ckpt.save({'epoch': 1, 'w': torch.ones(100)}, path, keep_previous=True)
    assert ckpt.load(ckpt.previous_path(path))['epoch'] == 0
    data = open(path, 'rb').read()
    for broken in (data[:len(data) // 2], b'', b'not a checkpoint'):
        with open(path, 'wb') as f:
            f.write(broken)
        with pytest.raises(ckpt.CorruptCheckpointError):
            ckpt.load(path)
        state, used, warning = ckpt.load_latest(path)
        assert state['epoch'] == 0 and used == ckpt.previous_path(path)
        assert 'cannot be read' in warning and 'previous checkpoint' in warning
    os.remove(path)  # killed between the two renames of a rotation
    assert ckpt.load_latest(path)[1] == ckpt.previous_path(path)
    os.remove(ckpt.previous_path(path))
    with pytest.raises(FileNotFoundError):
        ckpt.load_latest(path)


def test_disk_full_raises_results_write_error_and_keeps_the_old_file(
        tmp_path, monkeypatch):
    import errno
    path = str(tmp_path / 'last.pt')
    ckpt.save({'epoch': 1}, path)

    def full(fd):
        raise OSError(errno.ENOSPC, 'No space left on device')

    monkeypatch.setattr(os, 'fsync', full)
    with pytest.raises(ResultsWriteError,
                       match=r'could not write .*last.pt: No space left on device'):
        ckpt.save({'epoch': 2}, path, keep_previous=True)
    monkeypatch.undo()
    assert ckpt.load(path)['epoch'] == 1 and os.listdir(tmp_path) == ['last.pt']
