r"""Operators dispatched and host synchronisations of a piece of code, on
any device (the ``steps`` and ``gpu-check`` suites of the benchmark).

On a GPU every ATen operator is (at least) one kernel launch of a few
microseconds, and every read of a device value by the host (``.item()``,
``float(t)``, ``bool(t)``, ``.tolist()``, ``.cpu()``, ``.numpy()``, and the operators
whose output size depends on the data: ``nonzero``, ``masked_select``,
``unique``, boolean-mask indexing, ``repeat_interleave`` without
``output_size``, ``bincount``, ``equal``) stops the host until the device
has caught up. :class:`DispatchCounter` is a
:class:`~torch.utils._python_dispatch.TorchDispatchMode` that counts both
while the code runs, on the CPU as well: the operators a CUDA run would
launch are the same, so the count made on a CPU predicts the GPU's.

What runs on the host on a GPU is not a synchronisation there: the
optimiser's step counters (kept on the CPU unless the optimiser is
``capturable``) and the size metadata that the collater computes on the
CPU before the transfer (``batch._host``,
:func:`graphgps_ext.loader.collate.host_sizes`). On a CPU run they live on
the same device as the model, so the counter is told about them
(:meth:`DispatchCounter.mark_host`): reads of such tensors, and of tensors
computed only from them, are host work. On CUDA every tensor knows its
device, and :func:`cuda_sync_count` counts the synchronisations the driver
reports (:func:`torch.cuda.set_sync_debug_mode`) to confirm the count.
"""
import contextlib
import traceback
import warnings
from collections import Counter
from typing import Callable, Dict, Iterable, List, Optional

import torch
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

aten = torch.ops.aten

#: Operators whose output size depends on the values of their input: the
#: host must read the device to allocate the output.
DATA_DEPENDENT = {
    aten.nonzero.default: 'nonzero',
    aten.masked_select.default: 'masked_select',
    aten._unique.default: 'unique',
    aten._unique2.default: 'unique',
    aten.unique_dim.default: 'unique',
    aten.unique_consecutive.default: 'unique',
    aten.unique_dim_consecutive.default: 'unique',
    aten.bincount.default: 'bincount',
    aten.equal.default: 'equal',
    aten._local_scalar_dense.default: 'item',
}

_INDEXING = (aten.index.Tensor, aten.index_put.default, aten.index_put_.default,
             aten._index_put_impl_.default)


def sync_reason(func, args, kwargs) -> Optional[str]:
    """Why ``func(*args, **kwargs)`` makes the host wait for the device
    (a short name), or ``None`` when it does not."""
    if func in DATA_DEPENDENT:
        return DATA_DEPENDENT[func]
    if func in (aten.repeat_interleave.Tensor, aten.repeat_interleave.self_Tensor):
        if kwargs.get('output_size') is None and (
                len(args) < 4 or args[-1] is None):
            return 'repeat_interleave'
        return None
    if func in _INDEXING and len(args) > 1:
        for index in args[1]:
            if isinstance(index, Tensor) and index.dtype in (torch.bool, torch.uint8):
                return 'boolean index'
    return None


class DispatchCounter(TorchDispatchMode):
    """Count the ATen operators dispatched and the host synchronisations
    while active (``with DispatchCounter() as c: ...``; then ``c.ops``,
    ``c.syncs``, ``c.reasons``, a :class:`~collections.Counter` of the
    synchronising operators, and with ``stacks`` the Python frames of
    this package that caused each, in ``c.where``).

    Args:
        stacks: record where every synchronisation came from (slow).
        device: the device the step runs on; on a GPU, operators on CPU
            tensors only are host work (on a CPU nothing tells them apart:
            :meth:`mark_host`).
    """

    def __init__(self, stacks: bool = False,
                 device: Optional[torch.device] = None):
        super().__init__()
        self.device = torch.device('cpu') if device is None else torch.device(device)
        self.ops = 0
        self.syncs = 0
        self.host_ops = 0
        self.reasons: Counter = Counter()
        self.where: Counter = Counter()
        self.stacks = stacks
        self._host: Dict[int, Tensor] = {}
        self._patches: List[tuple] = []

    # -------------------------------------------------------------- host --
    def mark_host(self, tensors: Iterable[Tensor]):
        """Declare ``tensors`` host-side (see the module docstring)."""
        for t in tensors:
            if isinstance(t, Tensor):
                self._host[id(t)] = t

    def is_host(self, t: Tensor) -> bool:
        return id(t) in self._host or (self.device.type != 'cpu'
                                       and t.device.type == 'cpu')

    def _sync(self, reason: str):
        self.syncs += 1
        self.reasons[reason] += 1
        if self.stacks:
            frames = [f for f in traceback.extract_stack()[:-2]
                      if 'graphgps_ext' in f.filename
                      and 'dispatch_count' not in f.filename]
            if frames:
                f = frames[-1]
                self.where[f'{reason} at {f.filename.split("graphgps_ext/")[-1]}'
                           f':{f.lineno} ({f.name})'] += 1

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = [t for t in tree_flatten((args, kwargs))[0]
                  if isinstance(t, Tensor)]
        if not inputs:  # a factory: where its output is
            inputs = [t for t in tree_flatten(out)[0] if isinstance(t, Tensor)
                      and self.device.type != 'cpu' and t.device.type == 'cpu']
        if inputs and all(self.is_host(t) for t in inputs):
            # Host work on host tensors: its outputs are host-side too.
            self.host_ops += 1
            self.mark_host(tree_flatten(out)[0])
            return out
        self.ops += 1
        reason = sync_reason(func, args, kwargs)
        if reason is not None:
            self._sync(reason)
        return out

    # Reads of a whole tensor that dispatch no operator on a CPU tensor
    # (``tolist``, ``numpy``, ``cpu``): wrapped while active. (``.to(d)``
    # is not: on a CPU run a copy to the CPU cannot be told from a move to
    # the model's device.)
    def _wrap(self, name: str, is_read: Callable):
        original = getattr(Tensor, name)
        counter = self

        def wrapper(t, *args, **kwargs):
            if is_read(t, *args, **kwargs) and not counter.is_host(t):
                counter._sync(name)
            return original(t, *args, **kwargs)
        setattr(Tensor, name, wrapper)
        self._patches.append((name, original))

    def __enter__(self):
        self._wrap('tolist', lambda t: True)
        self._wrap('numpy', lambda t, *a, **k: True)
        self._wrap('cpu', lambda t, *a, **k: True)
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            for name, original in reversed(self._patches):
                setattr(Tensor, name, original)
            self._patches.clear()


def optimizer_host_tensors(optimizer: torch.optim.Optimizer) -> List[Tensor]:
    """The optimiser state PyTorch keeps on the host on every device: the
    ``step`` counters of an optimiser that is neither ``capturable`` nor
    ``fused`` (their reads are host reads on a GPU)."""
    out = []
    for group in optimizer.param_groups:
        if group.get('capturable') or group.get('fused'):
            continue
        for p in group['params']:
            step = optimizer.state.get(p, {}).get('step')
            if isinstance(step, Tensor):
                out.append(step)
    return out


@contextlib.contextmanager
def cuda_sync_count(device: torch.device):
    """On CUDA, count the synchronisations the driver reports in the block
    (:func:`torch.cuda.set_sync_debug_mode` ``'warn'``): yields a one-item
    list that holds the count on exit. Elsewhere yields ``[None]``."""
    result: List[Optional[int]] = [None]
    if device.type != 'cuda':
        yield result
        return
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        torch.cuda.set_sync_debug_mode('warn')
        try:
            yield result
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    result[0] = sum('synchroniz' in str(w.message) for w in caught)
