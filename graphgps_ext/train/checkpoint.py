"""Checkpoints (``ckpt/last.pt``, ``ckpt/best.pt``).

Writing. Every file is written atomically
(:func:`graphgps_ext.files.atomic_write_bytes`: a temporary file in the same
directory, flushed to disk, then renamed over the target), so an
interrupted write never leaves a truncated checkpoint behind.
``save(..., keep_previous=True)`` (``last.pt``) first moves the previous
version to ``last.prev.pt``, so one good older state survives whatever
happens to the newest file. A failed write (disk full, read-only folder, no
permission) raises :class:`~graphgps_ext.files.ResultsWriteError`.

Reading. :func:`load` reads with ``torch.load(weights_only=True)``: tensors
and plain Python values only, never code. Everything a run writes is of
that kind (the NumPy RNG state is stored as a tensor,
:func:`graphgps_ext.train.rng.rng_state`). A file that asks for anything
else (a crafted pickle, which could run code when unpickled) raises
:class:`UnsafeCheckpointError` without being unpickled; a truncated or
otherwise unreadable file raises :class:`CorruptCheckpointError`.
:func:`load_latest` falls back from a corrupt ``last.pt`` to
``last.prev.pt``.

``last.pt`` holds everything needed to continue a run exactly (see
:func:`graphgps_ext.train.loop.Trainer.state_dict`): model, optimiser and
scheduler states, the Python / NumPy / torch (and CUDA) RNG states (of
every process of a data-parallel run in ``rng_ranks``, with its
``world_size``), the training DataLoader's generator state when it shuffles
with one (``make_loaders``' sampler needs none: its order is a function of
seed and epoch), the epoch, the best-so-far record, the W&B run id and the
run's identity (:mod:`graphgps_ext.identity`). ``best.pt`` holds the model
weights of the best validation epoch with ``epoch`` and the metric value.
"""
import io
import os
import pickle
import re
import warnings
from contextlib import nullcontext
from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch

from graphgps_ext.files import atomic_write_bytes
from graphgps_ext.run_dir import RunDir


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
    (:meth:`graphgps_ext.run_dir.RunDir.previous`)."""
    return RunDir.previous(path)


def _legacy_numpy_globals() -> list:
    """NumPy array reconstruction, for checkpoints that stored the NumPy RNG
    state as an array (it builds arrays only, never calls other code)."""
    core = getattr(np, '_core', None) or np.core
    return [core.multiarray._reconstruct, np.ndarray, np.dtype,
            type(np.dtype(np.uint32))]


def _allowing(safe: list):
    """``torch.serialization.safe_globals(safe)`` (torch < 2.5: allow-listed
    for the process with ``add_safe_globals``)."""
    scoped = getattr(torch.serialization, 'safe_globals', None)
    if scoped is not None:
        return scoped(safe)
    torch.serialization.add_safe_globals(safe)
    return nullcontext()


def load(path: str, map_location='cpu') -> Dict[str, Any]:
    """Read a checkpoint with ``torch.load(weights_only=True)``.

    Raises :class:`UnsafeCheckpointError` for a file that asks for Python
    objects other than tensors and plain values (it is not unpickled),
    :class:`CorruptCheckpointError` for a truncated or foreign file and
    :class:`FileNotFoundError` when there is none."""
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    try:
        with _allowing(_legacy_numpy_globals()), warnings.catch_warnings():
            warnings.simplefilter('ignore')  # e.g. on the pickle protocol
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        # torch names the global it refused, in words that vary by version.
        found = re.search(r'GLOBAL ([\w.]+)', str(err))
        if found or _asks_for_objects(path):
            raise UnsafeCheckpointError(path, (
                f'refused to load {path}: it is not a checkpoint of tensors and '
                'plain values (' + (f'it asks for {found.group(1)}' if found else
                                    'a pickle that builds Python objects')
                + '); unpickling it could run code. It was not written by this '
                'program: delete it or restore the file from a copy you '
                'trust.')) from None
        raise CorruptCheckpointError(path, f'{path} is not a checkpoint '
                                     '(unreadable pickle data)') from None
    except FileNotFoundError:
        raise
    except (RuntimeError, EOFError, KeyError, ValueError, IndexError,
            AttributeError, TypeError, OSError) as err:
        raise CorruptCheckpointError(path, (
            f'{path} is truncated or not a checkpoint '
            f'({type(err).__name__}: {_first_sentence(err)})')) from None


def _first_sentence(err: Exception) -> str:
    text = str(err).strip()
    return text.split('. ')[0].splitlines()[0] if text else 'empty file'


def _asks_for_objects(path: str) -> bool:
    """Whether the raw pickle in ``path`` names Python callables (read by
    :mod:`pickletools`, which parses and never executes)."""
    import pickletools
    calls = {'GLOBAL', 'STACK_GLOBAL', 'INST', 'OBJ', 'REDUCE', 'NEWOBJ',
             'NEWOBJ_EX', 'BUILD'}
    import zipfile
    try:
        if zipfile.is_zipfile(path):  # torch's zip format: the pickle inside
            with zipfile.ZipFile(path) as z:
                name = next(n for n in z.namelist() if n.endswith('/data.pkl'))
                data = z.read(name)
        else:
            with open(path, 'rb') as f:
                data = f.read()
        return any(op.name in calls for op, _, _ in pickletools.genops(data))
    except Exception:  # not a pickle at all: corrupt, not crafted
        return False


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
