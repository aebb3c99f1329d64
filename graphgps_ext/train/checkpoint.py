"""Checkpoints (``ckpt/last.pt``, ``ckpt/best.pt``) and random-number states.

Every file is written atomically: to a temporary file in the same directory,
flushed to disk, then moved over the target with :func:`os.replace`, so an
interrupted write never leaves a truncated checkpoint behind.

``last.pt`` holds everything needed to continue a run exactly (see
:func:`graphgps_ext.train.loop.Trainer.state_dict`): model, optimiser and
scheduler states, the Python / NumPy / torch (and CUDA) RNG states (of
every process of a data-parallel run in ``rng_ranks``, with its
``world_size``), the training DataLoader's generator state when it shuffles
with one (``make_loaders``' sampler needs none: its order is a function of
seed and epoch), the epoch, the best-so-far record and the W&B run id.
``best.pt`` holds the model weights of the best validation epoch with
``epoch`` and the metric value.
"""
import os
import random
from typing import Any, Dict, Optional

import numpy as np
import torch
import torch.distributed as dist


def is_main_process() -> bool:
    """``True`` unless this is a non-zero rank of an initialised process
    group (all file writing is guarded by it: logs, stats, checkpoints,
    W&B and TensorBoard come from rank 0 only)."""
    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def atomic_write_bytes(path: str, write_fn):
    """Call ``write_fn(file)`` on a temporary file, fsync, then rename to ``path``."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f'{path}.tmp{os.getpid()}'
    try:
        with open(tmp, 'wb') as f:
            write_fn(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def save(obj: Any, path: str):
    """``torch.save(obj, path)``, atomically."""
    atomic_write_bytes(path, lambda f: torch.save(obj, f))


def load(path: str, map_location='cpu') -> Dict[str, Any]:
    """Load a checkpoint written by :func:`save` (our own files: RNG states
    need ``weights_only=False``)."""
    return torch.load(path, map_location=map_location, weights_only=False)


def rng_state(generator: Optional[torch.Generator] = None) -> Dict[str, Any]:
    """The Python, NumPy, torch (CPU and CUDA) and ``generator`` states."""
    state = {
        'python': random.getstate(),
        'numpy': np.random.get_state(),
        'torch': torch.get_rng_state(),
        'cuda': (torch.cuda.get_rng_state_all()
                 if torch.cuda.is_available() else None),
        'loader': generator.get_state() if generator is not None else None,
    }
    return state


def set_rng_state(state: Dict[str, Any],
                  generator: Optional[torch.Generator] = None):
    """Restore what :func:`rng_state` captured."""
    random.setstate(state['python'])
    np.random.set_state(state['numpy'])
    torch.set_rng_state(state['torch'])
    if state.get('cuda') is not None and torch.cuda.is_available():
        # A checkpoint of a machine with more GPUs restores what fits here.
        for index, cuda_state in enumerate(
                state['cuda'][:torch.cuda.device_count()]):
            torch.cuda.set_rng_state(cuda_state, index)
    if generator is not None and state.get('loader') is not None:
        generator.set_state(state['loader'])


def seed_everything(seed: int):
    """Seed Python, NumPy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def all_finite(module: torch.nn.Module) -> bool:
    """Whether every parameter and buffer of ``module`` is finite."""
    for t in list(module.parameters()) + list(module.buffers()):
        if t.is_floating_point() and not torch.isfinite(t).all():
            return False
    return True
