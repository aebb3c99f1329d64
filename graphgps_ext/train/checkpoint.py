"""Checkpoints (``ckpt/last.pt``, ``ckpt/best.pt``).

Writing. Every file is written atomically
(:func:`graphgps_ext.files.atomic_write_bytes`: a temporary file in the same
directory, flushed to disk, then renamed over the target), so an
interrupted write never leaves a truncated checkpoint behind.
``save(..., keep_previous=True)`` (``last.pt``) first moves the previous
version to ``last.prev.pt``, so one good older state survives whatever
happens to the newest file. A failed write (disk full, read-only folder, no
permission) raises :class:`~graphgps_ext.files.ResultsWriteError`.

Reading. :func:`load` reads with the project's one reader of pickled files
(:func:`graphgps_ext.safe_load.load`, never :func:`torch.load`): tensors and
plain Python values only, never code, and nothing beyond what the file's
size allows. Everything a run writes is of that kind (the NumPy RNG state
is stored as a tensor, :func:`graphgps_ext.train.rng.rng_state`). A file
that asks for anything else (a crafted pickle, which could run code when
unpickled), or that would build far more than its size (a pickle bomb),
raises :class:`UnsafeCheckpointError` without being unpickled, in words
that say which; a truncated or otherwise unreadable file raises
:class:`CorruptCheckpointError`.
:func:`load_latest` falls back from a corrupt ``last.pt`` to
``last.prev.pt``.

``last.pt`` holds everything needed to continue a run exactly (see
:func:`graphgps_ext.train.loop.Trainer.state_dict`): model, optimiser and
scheduler states, the Python / NumPy / torch (and CUDA) RNG states (of
every process of a data-parallel run in ``rng_ranks``, with its
``world_size``), the training DataLoader's generator state when it shuffles
with one (``make_loaders``' sampler needs none: its order is a function of
seed and epoch), the epoch, the best-so-far record, the W&B run id and the
run's identity (:mod:`graphgps_ext.results.identity`). ``best.pt`` holds the model
weights of the best validation epoch with ``epoch`` and the metric value.
"""
import io
import os
from typing import Any, Dict, Optional, Tuple

import torch

from graphgps_ext import safe_load
from graphgps_ext.files import atomic_write_bytes
from graphgps_ext.results.tree import RunDir


class CheckpointError(Exception):
    """A checkpoint that cannot be used (``path`` names it)."""

    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path

    def __reduce__(self):  # picklable (sent from rank 0 to the others)
        return type(self), (self.path, str(self))


class UnsafeCheckpointError(CheckpointError):
    """The file is a pickle that asks for more than tensors and plain
    values: loading it could run code, so it is refused unread."""


class CorruptCheckpointError(CheckpointError):
    """The file is truncated, not a checkpoint, or cannot be read."""


def save(obj: Any, path: str, keep_previous: bool = False):
    """``torch.save(obj, path)``, atomically; with ``keep_previous`` the
    file it replaces becomes :func:`previous_path` (``last.pt``)."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, lambda f: f.write(buf.getbuffer()),
                       previous_path(path) if keep_previous else None)


def previous_path(path: str) -> str:
    """``ckpt/last.pt`` -> ``ckpt/last.prev.pt``
    (:meth:`graphgps_ext.results.tree.RunDir.previous`)."""
    return RunDir.previous(path)


def load(path: str, map_location='cpu') -> Dict[str, Any]:
    """Read a checkpoint with :func:`graphgps_ext.safe_load.load` (its
    tensors moved to ``map_location``).

    Raises :class:`UnsafeCheckpointError` for a file that asks for Python
    objects other than tensors and plain values, or would build far more
    than its size allows (it is not unpickled), :class:`CorruptCheckpointError`
    for a truncated or foreign file and :class:`FileNotFoundError` when there
    is none."""
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    try:
        state = safe_load.load(path)
    except safe_load.UnsafePickleError as err:
        raise UnsafeCheckpointError(path, (
            f'refused to load {path}: it is not a checkpoint of tensors and plain '
            f'values ({err.why}); unpickling it could run code. It was not '
            'written by this program: delete it or restore the file from a copy '
            'you trust.')) from None
    except safe_load.OversizePickleError as err:
        raise UnsafeCheckpointError(path, (
            f'refused to load {path}: {err.why}. It was not written by this '
            'program: delete it or restore the file from a copy you trust.')) from None
    except safe_load.CorruptPickleError as err:
        raise CorruptCheckpointError(path, f'{path} is truncated or not a '
                                     f'checkpoint ({err.why})') from None
    except OSError as err:
        raise CorruptCheckpointError(path, f'{path} cannot be read '
                                     f'({err.strerror or err})') from None
    if map_location not in (None, 'cpu') and torch.device(map_location).type != 'cpu':
        state = _to(state, torch.device(map_location))
    return state


def _to(obj, device):
    """``obj`` with every tensor in its dicts, lists and tuples moved to
    ``device``."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        out = type(obj)((k, _to(v, device)) for k, v in obj.items())
        out.__dict__.update(getattr(obj, '__dict__', {}))
        return out
    if isinstance(obj, (list, tuple)) and type(obj) in (list, tuple):
        return type(obj)(_to(v, device) for v in obj)
    return obj


def load_latest(path: str, map_location='cpu'
                ) -> Tuple[Dict[str, Any], str, Optional[str]]:
    """``(state, file read, warning)``: ``path`` if it loads, else its
    :func:`previous_path` (then ``warning`` says why). Raises the error of
    ``path`` when neither loads (an unsafe ``path`` is never skipped: it
    raises at once)."""
    prev = previous_path(path)
    try:
        return load(path, map_location), path, None
    except (CorruptCheckpointError, FileNotFoundError) as err:
        if not os.path.isfile(prev):
            raise
        reason = ('is missing' if isinstance(err, FileNotFoundError)
                  else f'cannot be read ({err})')
        state = load(prev, map_location)
        return state, prev, (f'{path} {reason}; continuing from the previous '
                             f'checkpoint {prev} (after epoch {state["epoch"]})')


def has_checkpoint(path: str) -> bool:
    """Whether ``path`` or its previous version exists."""
    return os.path.isfile(path) or os.path.isfile(previous_path(path))
