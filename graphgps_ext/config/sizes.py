r"""Memory a config asks for, as products of its keys, checked before it is
allocated.

Every size key has its own bound (:func:`~graphgps_ext.config.at_most`),
but memory is a product of several: graphs x nodes x width, layers x
width², the padded graphs of a batch x their width, walk lengths x the
dataset's nodes. Each place that is about to allocate such a product first
states it as a :class:`Need` -- what it is, its bytes, the keys that drive
it and the product in words -- and :func:`check` refuses a need beyond the
memory the machine offers (:func:`memory_budget`) with a
:class:`~graphgps_ext.config.ConfigError` (``main.py`` exit code 2) that
names the keys, the estimate and the budget:

=====================================  ============================================  ==========================
need                                   product                                       checked in
=====================================  ============================================  ==========================
generated TreeNeighbourMatch graphs    graphs x (nodes x 17 + edges x 16 + 8)        the synthetic reader
                                       bytes, x 3 while PyG saves them
model parameters, training             parameters x 16 bytes (weights, gradients,    config load (per branch),
                                       Adam's two moments), counted on a model       ``build_model`` (whole
                                       built on the ``meta`` device                  model, also ``--dry-run``)
static-shape batch                     (padded nodes + padded graphs x the widest    the fast-path choice
                                       graph) x ``gt.dim_hidden`` x ``gt.layers``
                                       x 4 bytes
precomputed encodings                  the dataset's nodes x encoding width          the encoding precompute
                                       x 4 bytes (e.g. RWSE walk lengths)
=====================================  ============================================  ==========================

An estimate counts what the product itself takes (the arrays it names),
not the rest of the process, so a refusal is never a false alarm about a
config that would fit.
"""
import math
import os
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from graphgps_ext.config.keys import ConfigError


@dataclass(frozen=True)
class Need:
    """Memory a config asks for.

    Attributes:
        what: what takes it (``'the generated TreeNeighbourMatch graphs'``).
        nbytes: the estimate.
        keys: the config keys (with their values) that drive it, e.g.
            ``('dataset.tree_depth 8', 'dataset.max_graphs 0')``.
        how: the product, in words.
        fix: what to change.
    """
    what: str
    nbytes: int
    keys: Sequence[str]
    how: str
    fix: str = ''


def human(nbytes: float) -> str:
    """``3.2e9`` -> ``'3.0 GB'`` (powers of 1024)."""
    for unit in ('bytes', 'KB', 'MB', 'GB', 'TB', 'PB'):
        if abs(nbytes) < 1024 or unit == 'PB':
            return f'{int(nbytes)} bytes' if unit == 'bytes' else f'{nbytes:.1f} {unit}'
        nbytes /= 1024
    return f'{nbytes:.1f} PB'


def _read_int(path: str) -> Optional[int]:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def host_memory() -> Optional[int]:
    """Bytes this process can allocate on the host: the ``MemAvailable`` of
    ``/proc/meminfo``, lowered to a cgroup's limit (a SLURM job's
    ``--mem``) when one is set; the physical memory where there is no
    ``/proc``; ``None`` when unknown."""
    found = []
    try:
        with open('/proc/meminfo') as f:
            for line in f:
                if line.startswith('MemAvailable:'):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    for path in ('/sys/fs/cgroup/memory.max',
                 '/sys/fs/cgroup/memory/memory.limit_in_bytes'):
        limit = _read_int(path)
        if limit is not None and limit < 2 ** 60:
            found.append(limit)
    if not found:
        try:
            found.append(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES'))
        except (ValueError, OSError, AttributeError):
            return None
    return min(found)


def memory_budget(device: str = 'cpu') -> Optional[int]:
    """Bytes the machine offers for allocations on ``device``: a CUDA
    device's total memory, else :func:`host_memory` (``None``: unknown, no
    check)."""
    if str(device).startswith('cuda'):
        import torch
        if torch.cuda.is_available():
            index = torch.device(device).index
            return int(torch.cuda.get_device_properties(
                torch.cuda.current_device() if index is None else index).total_memory)
    return host_memory()


def check(needs: Iterable[Need], device: str = 'cpu',
          budget: Optional[int] = None):
    """Raise :class:`~graphgps_ext.config.ConfigError` for the first need
    beyond ``budget`` (default :func:`memory_budget` of ``device``)."""
    needs = list(needs)
    if not needs:
        return
    if budget is None:
        budget = memory_budget(device)
    if budget is None:
        return
    where = 'this GPU' if str(device).startswith('cuda') else 'this machine'
    for need in needs:
        if need.nbytes > budget:
            raise ConfigError(
                f"{', '.join(need.keys)}: {need.what} would need about "
                f'{human(need.nbytes)} ({need.how}), more than the '
                f'{human(budget)} {where} has available. '
                + (need.fix or 'Lower ' + ' or '.join(k.split()[0] for k in need.keys))
                + '.')


#: Bytes per float32 parameter in training: the weight, its gradient and
#: Adam's two moments.
TRAIN_BYTES_PER_PARAM = 16
#: The keys that size a model.
MODEL_KEYS = ('gt.layers', 'gt.dim_hidden')


def model_need(params: int, cfg, what: str = 'the model') -> Need:
    """The memory of training a model of ``params`` float32 parameters."""
    keys = tuple(f'{k} {_get(cfg, k)}' for k in MODEL_KEYS)
    return Need(f'training {what}', product(params, TRAIN_BYTES_PER_PARAM), keys,
                f'{params:,} parameters x {TRAIN_BYTES_PER_PARAM} bytes (weights, '
                "gradients and Adam's two moments)",
                'Lower gt.layers or gt.dim_hidden')


def static_batch_need(nodes: int, graphs: int, width: int, cfg) -> Need:
    """The features of the largest static-shape batch: ``nodes`` padded
    nodes and their dense ``[graphs, width]`` layout, at the hidden width,
    kept for the backward pass of every layer."""
    dim, layers = int(cfg.gt.dim_hidden), int(cfg.gt.layers)
    return Need('a static-shape batch',
                product(nodes + graphs * width, dim, layers, 4),
                (f'train.batch_size {cfg.train.batch_size}',
                 f'gt.dim_hidden {dim}', f'gt.layers {layers}'),
                f'({nodes:,} padded nodes + {graphs:,} padded graphs x the widest '
                f'graph {width:,}) x {dim:,} features x {layers:,} layers x 4 bytes',
                'Lower train.batch_size (each batch is padded to it: the padded '
                "graphs count even past the split's own), or set "
                'train.static_shapes False')


def _get(cfg, key: str):
    node = cfg
    for part in key.split('.'):
        node = node[part]
    return node


def product(*factors: int) -> int:
    """The product of ``factors`` (exact, as a Python int)."""
    return math.prod(int(f) for f in factors)
