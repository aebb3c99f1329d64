"""Checkpoints (``ckpt/last.pt``, ``ckpt/best.pt``) and random-number states.

Writing. Every file is written atomically: serialised in memory, written to
a temporary file ``<name>.tmp<pid>`` in the same directory, flushed to disk,
then moved over the target with :func:`os.replace`, so an interrupted write
never leaves a truncated file behind. A process killed in the middle of a
write leaves its temporary file; :func:`remove_temp_files` clears them when
the seed folder is next used. ``save(..., keep_previous=True)`` (``last.pt``) first
moves the previous version to ``last.prev.pt``, so one good older state
survives whatever happens to the newest file. A failed write (disk full,
read-only folder, no permission) raises :class:`ResultsWriteError`.

Reading. :func:`load` reads with ``torch.load(weights_only=True)``: tensors
and plain Python values only, never code. Everything this module writes is
of that kind (the NumPy RNG state is stored as a tensor). A file that asks
for anything else (a crafted pickle, which could run code when unpickled)
raises :class:`UnsafeCheckpointError` without being unpickled; a truncated
or otherwise unreadable file raises :class:`CorruptCheckpointError`.
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
import random
import re
import warnings
from contextlib import nullcontext
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.distributed as dist


class ResultsWriteError(OSError):
    """A result file could not be written (disk full, read-only folder,
    missing permission): ``path`` and the operating system's reason."""

    def __init__(self, path: str, err: OSError):
        super().__init__(err.errno, err.strerror or str(err), path)
        self.path = path

    def __str__(self):
        return f'could not write {self.path}: {self.strerror}'

    def __reduce__(self):  # picklable (sent from rank 0 to the others)
        return type(self), (self.path, OSError(self.errno, self.strerror))


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


def is_main_process() -> bool:
    """``True`` unless this is a non-zero rank of an initialised process
    group (all file writing is guarded by it: logs, stats, checkpoints,
    W&B and TensorBoard come from rank 0 only)."""
    return not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0


def write_guard(path: str):
    """A context manager that turns an :class:`OSError` into
    :class:`ResultsWriteError` naming ``path``."""
    return _WriteGuard(path)


class _WriteGuard:
    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        if err is not None and isinstance(err, OSError) and not isinstance(
                err, ResultsWriteError):
            raise ResultsWriteError(self.path, err) from err
        return False


_TMP = re.compile(r'\.tmp\d+$')


def atomic_write_bytes(path: str, write_fn: Callable,
                       keep_previous: Optional[str] = None):
    """Call ``write_fn(file)`` on a temporary file, fsync, then rename to
    ``path``; with ``keep_previous``, the file it replaces is first moved
    there (so that at every instant one of the two holds a whole file).
    Raises :class:`ResultsWriteError` when the disk refuses."""
    tmp = f'{path}.tmp{os.getpid()}'
    with write_guard(path):
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(tmp, 'wb') as f:
                write_fn(f)
                f.flush()
                os.fsync(f.fileno())
            if keep_previous and os.path.exists(path):
                os.replace(path, keep_previous)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def remove_temp_files(folder: str) -> List[str]:
    """Remove the temporary files (``*.tmp<pid>``) that writes killed
    half-way left in ``folder`` and its sub-folders; returns their paths.
    Call it only while no other process writes there (the seed lock)."""
    removed = []
    for root, _, files in os.walk(folder):
        for name in files:
            if _TMP.search(name):
                path = os.path.join(root, name)
                with write_guard(path):
                    os.remove(path)
                removed.append(path)
    return sorted(removed)


def save(obj: Any, path: str, keep_previous: bool = False):
    """``torch.save(obj, path)``, atomically; with ``keep_previous`` the
    file it replaces becomes :func:`previous_path` (``last.pt``)."""
    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, lambda f: f.write(buf.getbuffer()),
                       previous_path(path) if keep_previous else None)


def previous_path(path: str) -> str:
    """``ckpt/last.pt`` -> ``ckpt/last.prev.pt``."""
    stem, ext = os.path.splitext(path)
    return f'{stem}.prev{ext}'


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
        found = re.search(r'Unsupported global: GLOBAL ([\w.]+)', str(err))
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
    try:
        with open(path, 'rb') as f:
            return any(op.name in calls for op, _, _ in pickletools.genops(f))
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
                             f'checkpoint {prev} (epoch {state["epoch"] + 1})')


def has_checkpoint(path: str) -> bool:
    """Whether ``path`` or its previous version exists."""
    return os.path.isfile(path) or os.path.isfile(previous_path(path))


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
