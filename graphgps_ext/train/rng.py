"""Seeding and the state of every random-number generator a run uses.

:func:`rng_state` captures the Python, NumPy, torch (CPU and CUDA) states and
a DataLoader's generator as tensors and plain values, so that a checkpoint
holding them is plain data for the project's reader of pickled files
(:func:`graphgps_ext.safe_load.load`; the NumPy state is stored as a
tensor); :func:`set_rng_state` restores them, also from older checkpoints
that stored the NumPy state as an array.
"""
import random
from typing import Any, Dict, Optional

import numpy as np
import torch


def seed_everything(seed: int):
    """Seed Python, NumPy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _numpy_state() -> Dict[str, Any]:
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {'kind': kind, 'keys': torch.from_numpy(keys.astype(np.int64)),
            'pos': int(pos), 'has_gauss': int(has_gauss), 'gauss': float(gauss)}


def _set_numpy_state(state):
    if isinstance(state, dict):
        state = (state['kind'], state['keys'].numpy().astype(np.uint32),
                 state['pos'], state['has_gauss'], state['gauss'])
    np.random.set_state(state)


def rng_state(generator: Optional[torch.Generator] = None) -> Dict[str, Any]:
    """The Python, NumPy, torch (CPU and CUDA) and ``generator`` states, as
    tensors and plain values."""
    state = {
        'python': random.getstate(),
        'numpy': _numpy_state(),
        'torch': torch.get_rng_state(),
        'cuda': (torch.cuda.get_rng_state_all()
                 if torch.cuda.is_available() else None),
        'loader': generator.get_state() if generator is not None else None,
    }
    return state


def set_rng_state(state: Dict[str, Any],
                  generator: Optional[torch.Generator] = None):
    """Restore what :func:`rng_state` captured."""
    version, internal, gauss = state['python']
    random.setstate((version, tuple(internal), gauss))
    _set_numpy_state(state['numpy'])
    torch.set_rng_state(state['torch'])
    if state.get('cuda') is not None and torch.cuda.is_available():
        # A checkpoint of a machine with more GPUs restores what fits here.
        for index, cuda_state in enumerate(
                state['cuda'][:torch.cuda.device_count()]):
            torch.cuda.set_rng_state(cuda_state, index)
    if generator is not None and state.get('loader') is not None:
        generator.set_state(state['loader'])
