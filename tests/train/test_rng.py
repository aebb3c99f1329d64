"""Seeding and RNG state round trips."""
import random

import numpy as np
import torch

from graphgps_ext.train.rng import rng_state, seed_everything, set_rng_state


def test_rng_state_round_trip():
    gen = torch.Generator().manual_seed(3)
    seed_everything(5)
    state = rng_state(gen)
    first = (random.random(), np.random.rand(), torch.rand(1).item(),
             torch.rand(1, generator=gen).item())
    set_rng_state(state, gen)
    again = (random.random(), np.random.rand(), torch.rand(1).item(),
             torch.rand(1, generator=gen).item())
    assert first == again
