r"""Data-parallel training on PyTorch's distributed engine (DDP).

A run started by ``torchrun`` (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR``, ``MASTER_PORT``) or by ``srun`` with one task per device
(``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS``, ``SLURM_LOCALID``, the first
host of ``SLURM_STEP_NODELIST`` as ``MASTER_ADDR``) initialises one process
group (:func:`init`); each process trains a
:class:`~torch.nn.parallel.DistributedDataParallel` replica on its own
device (``cuda:<local rank>``, or the CPU with the gloo backend) and its own
shard of the training set. Gradients are averaged across the :math:`W`
processes after every backward pass, so with per-process batches
:math:`\mathcal{B}_1, \dots, \mathcal{B}_W` of equal size :math:`b` and a
loss that is a mean over graphs,

.. math:: \frac{1}{W}\sum_{r=1}^{W} \nabla \frac{1}{b}\sum_{i \in \mathcal{B}_r}
          \ell_i = \nabla \frac{1}{Wb} \sum_{i \in \bigcup_r \mathcal{B}_r} \ell_i,

the gradient of one process on the global batch of :math:`W b` graphs.

Epoch statistics are exact: losses are reduced as (sum, count) and metric
inputs are gathered (:func:`all_gather_cat`, variable sizes) so that every
metric (MAE, accuracy, AP, MRR, F1, ...) is computed once on the whole split.

Outside a process group every helper is the single-process identity, so the
training code calls them unconditionally.
"""
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, List, Mapping, Optional

import torch
import torch.distributed as tdist
from torch import Tensor

from graphgps_ext.config import ConfigError

# Device of collective tensors: cuda:<i> with NCCL, the CPU with gloo.
_COMM_DEVICE = torch.device('cpu')
# Rank on this node of the process group joined by init().
_LOCAL_RANK = 0


@dataclass
class DistInfo:
    """Where this process sits in the job.

    Attributes:
        rank: global rank ``0 .. world_size - 1``.
        world_size: number of processes.
        local_rank: rank on this node (selects the GPU).
        launcher: ``'torchrun'``, ``'slurm'`` or ``'none'``.
        master_addr, master_port: rendezvous address (``env://``).
    """
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    launcher: str = 'none'
    master_addr: str = ''
    master_port: str = ''


def expand_nodelist(nodelist: str, scontrol: bool = True) -> List[str]:
    """Host names of a SLURM host list, in SLURM's order.

    ``scontrol show hostnames`` answers when it is installed (``scontrol``
    True); otherwise :func:`parse_nodelist` does, which follows SLURM's
    documented forms: ``'gpu[01-03,7],login1'`` -> ``['gpu01', 'gpu02',
    'gpu03', 'gpu7', 'login1']``, ``'node[1-2]-ib'`` -> ``['node1-ib',
    'node2-ib']``. Raises ``ValueError`` on a malformed list."""
    if scontrol:
        hosts = _scontrol_hostnames(nodelist)
        if hosts is not None:
            return hosts
    return parse_nodelist(nodelist)


def _scontrol_hostnames(nodelist: str) -> Optional[List[str]]:
    """``scontrol show hostnames NODELIST``, or ``None`` when scontrol is not
    installed or fails."""
    exe = shutil.which('scontrol')
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, 'show', 'hostnames', nodelist], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    hosts = out.stdout.split()
    return hosts if out.returncode == 0 and hosts else None


_RANGE = re.compile(r'(\d+)(?:-(\d+))?')


def parse_nodelist(nodelist: str) -> List[str]:
    """Expand a SLURM host list without SLURM.

    Hosts are separated by commas outside brackets; each may hold several
    bracket groups of comma-separated numbers and ranges, expanded with the
    first group outermost and the width of each range's first number
    (``'rack[1-2]-node[01-02]'`` -> ``rack1-node01 rack1-node02 rack2-node01
    rack2-node02``; ``'n[8-10]'`` -> ``n8 n9 n10``; ``'n[08-10]'`` -> ``n08
    n09 n10``). Raises ``ValueError`` on unbalanced brackets or a bad range."""
    hosts: List[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(nodelist + ','):
        if ch == '[':
            depth += 1
            if depth > 1:
                raise ValueError(f"nested '[' in host list {nodelist!r}")
        elif ch == ']':
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in host list {nodelist!r}")
        elif ch == ',' and depth == 0:
            expr = nodelist[start:i].strip()
            if expr:
                hosts.extend(_expand_host(expr, nodelist))
            start = i + 1
    if depth:
        raise ValueError(f"unbalanced '[' in host list {nodelist!r}")
    return hosts


def _expand_host(expr: str, nodelist: str) -> List[str]:
    if '[' not in expr:
        return [expr]
    open_, close = expr.index('['), expr.index(']')
    prefix, body, rest = expr[:open_], expr[open_ + 1:close], expr[close + 1:]
    tails = _expand_host(rest, nodelist)
    out = []
    for part in body.split(','):
        m = _RANGE.fullmatch(part.strip())
        if m is None:
            raise ValueError(f'bad range {part!r} in host list {nodelist!r}')
        lo, hi = m.group(1), m.group(2) or m.group(1)
        if int(hi) < int(lo):
            raise ValueError(f'bad range {part!r} (start > end) in host list {nodelist!r}')
        out.extend(f'{prefix}{i:0{len(lo)}d}{tail}'
                   for i in range(int(lo), int(hi) + 1) for tail in tails)
    return out


def detect(launcher: str = 'auto',
           environ: Optional[Mapping[str, str]] = None) -> DistInfo:
    """Read the process layout from the environment.

    ``auto``: torchrun's variables if ``WORLD_SIZE`` is set, else SLURM's if
    this is an ``srun`` step (``SLURM_STEP_NUM_TASKS``; the batch script
    itself is not), else a single process. ``torchrun`` / ``slurm`` insist on
    their variables; ``none`` is always a single process.
    """
    env = os.environ if environ is None else environ
    if launcher == 'none':
        return DistInfo()
    if launcher in ('auto', 'torchrun') and 'WORLD_SIZE' in env:
        return DistInfo(rank=int(env.get('RANK', 0)),
                        world_size=int(env['WORLD_SIZE']),
                        local_rank=int(env.get('LOCAL_RANK', 0)),
                        launcher='torchrun',
                        master_addr=env.get('MASTER_ADDR', ''),
                        master_port=env.get('MASTER_PORT', ''))
    if launcher == 'torchrun':
        raise ConfigError("dist.launcher 'torchrun' but WORLD_SIZE is not set: "
                          'start with `torchrun --nproc_per_node G main.py ...`, '
                          "or use dist.launcher auto")
    step_tasks = env.get('SLURM_STEP_NUM_TASKS')
    if launcher == 'slurm' and step_tasks is None:
        step_tasks = env.get('SLURM_NTASKS')
    if step_tasks is None or 'SLURM_PROCID' not in env:
        if launcher == 'slurm':
            raise ConfigError("dist.launcher 'slurm' but SLURM_PROCID / "
                              'SLURM_NTASKS are not set: launch with `srun '
                              "--ntasks-per-node G python main.py ...`")
        return DistInfo()
    var = 'SLURM_STEP_NODELIST' if env.get('SLURM_STEP_NODELIST') else 'SLURM_JOB_NODELIST'
    nodes = env.get(var, '')
    try:
        hosts = expand_nodelist(nodes) if nodes and not env.get('MASTER_ADDR') else []
    except ValueError as err:
        raise ConfigError(f'{var}: {err}; set MASTER_ADDR to the first host') from None
    job = env.get('SLURM_JOB_ID', '0')
    port = env.get('MASTER_PORT') or str(
        20000 + int(job) % 20000 if job.isdigit() else 29500)
    return DistInfo(rank=int(env['SLURM_PROCID']), world_size=int(step_tasks),
                    local_rank=int(env.get('SLURM_LOCALID', 0)), launcher='slurm',
                    master_addr=env.get('MASTER_ADDR') or (hosts[0] if hosts
                                                           else '127.0.0.1'),
                    master_port=port)


def is_initialized() -> bool:
    return tdist.is_available() and tdist.is_initialized()


def get_rank() -> int:
    return tdist.get_rank() if is_initialized() else 0


def is_main_process() -> bool:
    """``True`` unless this is a non-zero rank of an initialised process
    group (all file writing is guarded by it: logs, stats, checkpoints,
    W&B and TensorBoard come from rank 0 only)."""
    return get_rank() == 0


def get_world_size() -> int:
    return tdist.get_world_size() if is_initialized() else 1


def backend_name() -> str:
    """The process group's backend (``'nccl'``, ``'gloo'``), or ``'none'``."""
    return str(tdist.get_backend()) if is_initialized() else 'none'


def get_local_rank() -> int:
    return _LOCAL_RANK if is_initialized() else 0


def local_device(accelerator: str) -> torch.device:
    """This process's device: ``cuda:<local rank mod #GPUs>`` for a CUDA
    accelerator in a process group, else ``accelerator`` itself."""
    if is_initialized() and str(accelerator).startswith('cuda'):
        return torch.device('cuda', get_local_rank() % torch.cuda.device_count())
    return torch.device(accelerator)


def init(cfg) -> DistInfo:
    """Join the process group described by the environment (``cfg.dist``);
    a no-op for one process. Returns the layout."""
    info = detect(cfg.dist.launcher)
    if info.world_size <= 1 or is_initialized():
        return info
    cuda = str(cfg.accelerator).startswith('cuda')
    backend = cfg.dist.backend
    if backend == 'auto':
        backend = 'nccl' if cuda else 'gloo'
    if backend == 'nccl' and not cuda:
        raise ConfigError("dist.backend 'nccl' needs CUDA (accelerator "
                          f"'{cfg.accelerator}'); use dist.backend gloo on CPU")
    global _COMM_DEVICE, _LOCAL_RANK
    _LOCAL_RANK = info.local_rank
    if cuda:
        index = info.local_rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        if backend == 'nccl':
            _COMM_DEVICE = torch.device('cuda', index)
    os.environ.setdefault('MASTER_ADDR', info.master_addr or '127.0.0.1')
    os.environ.setdefault('MASTER_PORT', info.master_port or '29500')
    tdist.init_process_group(backend=backend, init_method='env://',
                             rank=info.rank, world_size=info.world_size,
                             timeout=timedelta(minutes=float(cfg.dist.timeout_min)))
    return info


def cleanup():
    """Leave the process group (if any)."""
    global _COMM_DEVICE
    if is_initialized():
        tdist.destroy_process_group()
    _COMM_DEVICE = torch.device('cpu')


def barrier():
    if is_initialized():
        tdist.barrier()


def in_turn(fn: Callable[[], Any]) -> Any:
    """``fn()`` on every process, first on rank 0, then on the other
    processes with local rank 0, then on the rest, so that a dataset is
    processed and cached once (per node when caches are node-local) before
    the others read it."""
    if not is_initialized():
        return fn()
    rank, local = get_rank(), get_local_rank()
    stage = 0 if rank == 0 else (1 if local == 0 else 2)
    out = None
    for turn in range(3):
        if turn == stage:
            out = fn()
        tdist.barrier()
    return out


def broadcast_object(obj: Any, src: int = 0) -> Any:
    """``obj`` of rank ``src`` on every process (picklable objects)."""
    if not is_initialized():
        return obj
    box = [obj]
    tdist.broadcast_object_list(box, src=src, device=_COMM_DEVICE
                                if _COMM_DEVICE.type == 'cuda' else None)
    return box[0]


def all_gather_object(obj: Any) -> List[Any]:
    """``[obj of rank 0, obj of rank 1, ...]`` on every process."""
    if not is_initialized():
        return [obj]
    out = [None] * get_world_size()
    tdist.all_gather_object(out, obj)
    return out


def all_reduce_sum(t: Tensor) -> Tensor:
    """Element-wise sum over processes (a new tensor on ``t``'s device)."""
    if not is_initialized():
        return t
    buf = t.detach().to(_COMM_DEVICE, copy=True)
    tdist.all_reduce(buf, op=tdist.ReduceOp.SUM)
    return buf.to(t.device)


def any_true(flag: bool) -> bool:
    """Whether ``flag`` holds on at least one process."""
    if not is_initialized():
        return bool(flag)
    return bool(all_reduce_sum(torch.tensor([float(bool(flag))])).item() > 0)


def _fill_value(dtype: torch.dtype):
    if dtype.is_floating_point or dtype.is_complex:
        return float('nan')
    return 0 if dtype == torch.bool else -1


def all_gather_cat(t: Tensor) -> Tensor:
    """Concatenate ``t`` of every process along dim 0, in rank order.

    The processes may hold different numbers of rows and different trailing
    sizes (e.g. decoded sequences): every tensor is padded to the largest
    shape for the collective (``NaN`` for floating, ``-1`` for integer
    tensors, as :func:`graphgps_ext.train.loop.concat`), then the padding
    rows are dropped again; trailing padding stays. A process without rows
    (an empty shard) contributes nothing.
    """
    if not is_initialized():
        return t
    metas = all_gather_object((tuple(t.shape), t.dtype, t.numel() > 0))
    full = [(shape, dtype) for shape, dtype, nonempty in metas if nonempty]
    if not full:
        return t
    ndims = {len(shape) for shape, _ in full}
    if len(ndims) > 1:
        raise ValueError(f'all_gather_cat: the processes hold tensors of '
                         f'different ranks {sorted(ndims)}')
    dtype = full[0][1]
    trailing = [max(shape[d] for shape, _ in full)
                for d in range(1, len(full[0][0]))]
    rows = [shape[0] if nonempty else 0 for shape, _, nonempty in metas]
    fill = _fill_value(dtype)
    buf = torch.full([max(rows)] + trailing, fill, dtype=dtype,
                     device=_COMM_DEVICE)
    if t.numel() > 0:
        buf[tuple(slice(0, n) for n in t.shape)] = t.to(_COMM_DEVICE, dtype)
    send = buf.to(torch.uint8) if dtype == torch.bool else buf
    parts = [torch.empty_like(send) for _ in rows]
    tdist.all_gather(parts, send)
    out = torch.cat([p[:n] for p, n in zip(parts, rows)], dim=0)
    return out.to(dtype).to(t.device)


def sync_buffers(module: torch.nn.Module, src: int = 0):
    """Copy ``module``'s floating buffers (BatchNorm running statistics) of
    rank ``src`` to every process."""
    if not is_initialized():
        return
    for buf in module.buffers():
        tmp = buf.detach().to(_COMM_DEVICE, copy=True)
        tdist.broadcast(tmp, src=src)
        buf.data.copy_(tmp.to(buf.device))


def rank_seed(seed: int, rank: int) -> int:
    """The seed of process ``rank``'s random numbers (dropout etc.): ``seed``
    itself on rank 0, so that rank 0 draws as a single process does, and
    distinct streams on the other ranks."""
    return seed + 1_000_003 * rank


def resolve_batch_size(cfg, world_size: int) -> int:
    """Set ``cfg.train.batch_size`` to the per-process batch and return the
    effective (global) batch: ``train.batch_size_global / world_size`` when
    ``train.batch_size_global`` is set (it must divide), else
    ``train.batch_size`` per process (global = that x ``world_size``)."""
    total = int(cfg.train.batch_size_global)
    if total > 0:
        if cfg.optim.lr_scaling != 'none':
            raise ConfigError('train.batch_size_global keeps the effective batch '
                              'fixed, so optim.lr_scaling must be none (got '
                              f"'{cfg.optim.lr_scaling}')")
        if total % world_size:
            raise ConfigError(f'train.batch_size_global {total} is not divisible '
                              f'by the {world_size} processes; choose a multiple '
                              f'of {world_size} or set train.batch_size (per process)')
        cfg.train.batch_size = total // world_size
    if cfg.train.batch_size < 1:
        raise ConfigError(f'train.batch_size must be >= 1, got {cfg.train.batch_size}')
    return int(cfg.train.batch_size) * world_size


def lr_scale(cfg, world_size: int) -> float:
    """Factor on ``optim.base_lr``: ``world_size`` for ``optim.lr_scaling
    linear``, else 1."""
    return float(world_size) if cfg.optim.lr_scaling == 'linear' else 1.0


def wrap_model(model: torch.nn.Module, cfg, device: torch.device) -> torch.nn.Module:
    """``model`` as a :class:`DistributedDataParallel` replica on ``device``
    (BatchNorm -> SyncBatchNorm with ``dist.sync_batchnorm``), or ``model``
    itself outside a process group."""
    if not is_initialized():
        return model
    if cfg.dist.sync_batchnorm:
        if device.type != 'cuda':
            raise ConfigError('dist.sync_batchnorm True needs CUDA devices '
                              "(torch's SyncBatchNorm has no CPU kernel); set "
                              'dist.sync_batchnorm False on CPU')
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    from torch.nn.parallel import DistributedDataParallel
    return DistributedDataParallel(
        model, device_ids=[device.index] if device.type == 'cuda' else None,
        find_unused_parameters=bool(cfg.dist.find_unused_parameters))


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The module inside a DDP wrapper (its state dict has no ``module.``)."""
    from torch.nn.parallel import DistributedDataParallel
    return model.module if isinstance(model, DistributedDataParallel) else model
