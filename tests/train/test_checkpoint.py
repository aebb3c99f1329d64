"""Atomic checkpoint writes and RNG state round trips."""
import os
import random

import numpy as np
import pytest
import torch

from graphgps_ext.train import checkpoint as ckpt


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


def test_rng_state_round_trip():
    gen = torch.Generator().manual_seed(3)
    ckpt.seed_everything(5)
    state = ckpt.rng_state(gen)
    first = (random.random(), np.random.rand(), torch.rand(1).item(),
             torch.rand(1, generator=gen).item())
    ckpt.set_rng_state(state, gen)
    again = (random.random(), np.random.rand(), torch.rand(1).item(),
             torch.rand(1, generator=gen).item())
    assert first == again


def test_all_finite():
    lin = torch.nn.Linear(2, 2)
    assert ckpt.all_finite(lin)
    with torch.no_grad():
        lin.bias[0] = float('inf')
    assert not ckpt.all_finite(lin)
