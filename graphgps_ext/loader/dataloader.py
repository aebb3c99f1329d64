"""``make_loaders``: PyG data loaders for the splits of a
:class:`~graphgps_ext.loader.master.DatasetBundle`, sharded across the
processes of a data-parallel run."""
from typing import Dict, Iterator, Optional

import torch
from torch.utils.data import DistributedSampler, Sampler
from torch_geometric.loader import DataLoader

from graphgps_ext.loader.collate import (FastCollater, HostSizesCollater,
                                         fast_collate_supported, storage_bytes)
from graphgps_ext.loader.pad import PadCollater


class EpochShuffleSampler(DistributedSampler):
    """Training order as a function of ``(seed, epoch)`` only.

    Epoch ``e`` permutes the :math:`n` indices with ``torch.randperm`` seeded
    by ``seed + e`` (:class:`~torch.utils.data.DistributedSampler`); process
    ``r`` of ``W`` takes positions ``r, r + W, r + 2W, ...`` (padded with the
    first indices to a multiple of ``W``, so every process runs the same
    number of batches). Batch ``k`` of every process together is therefore
    positions ``[kWb, (k+1)Wb)`` of the permutation: the global batch of a
    single process with batch size ``Wb``, whatever ``W`` is.

    ``set_epoch(e)`` selects the epoch (the training loop calls it, so
    resuming needs no sampler state); iterating without it moves on to the
    next epoch's order.
    """

    def __iter__(self) -> Iterator[int]:
        indices = super().__iter__()  # computed eagerly for self.epoch
        self.epoch += 1
        return indices


class ShardSampler(Sampler):
    """Contiguous, unpadded shard ``[r n / W, (r+1) n / W)`` of ``range(n)``
    for evaluation: every element is seen exactly once across the ``W``
    processes, and the shards concatenated in rank order are ``range(n)``."""

    def __init__(self, n: int, rank: int, world_size: int):
        self.start = rank * n // world_size
        self.stop = (rank + 1) * n // world_size

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.stop))

    def __len__(self) -> int:
        return self.stop - self.start


def graph_loader(dataset, fast: bool = True, device=None, shared=None,
                 capacities=None,
                 **kwargs) -> torch.utils.data.DataLoader:
    """A mini-batch loader over ``dataset`` (``kwargs``: those of
    :class:`torch.utils.data.DataLoader`). With ``fast`` and a dataset that
    :func:`~graphgps_ext.loader.collate.fast_collate_supported`, the loader
    iterates over graph positions and a
    :class:`~graphgps_ext.loader.collate.FastCollater` gathers each batch
    from the storage; otherwise it is PyG's
    :class:`~torch_geometric.loader.DataLoader`. Both give the same batches,
    with the host copy of the node counts
    (:func:`~graphgps_ext.loader.collate.add_host_sizes`).

    ``device``: hold the storage on this device and batch there
    (``FastCollater(dataset, device, shared)``; collation then runs in the main
    process, so ``num_workers`` is set to 0). Datasets the fast collater
    cannot serve keep the host loader. ``capacities``
    (:class:`~graphgps_ext.loader.pad.Capacities`): every batch is padded to
    its capacity (``train.static_shapes``)."""
    if fast and fast_collate_supported(dataset) is None:
        if device is not None:
            kwargs.update(num_workers=0, persistent_workers=False,
                          pin_memory=False)
        collate = FastCollater(dataset, device, shared)
        if capacities is not None:
            collate = PadCollater(collate, capacities)
        return torch.utils.data.DataLoader(
            range(len(dataset)), collate_fn=collate, **kwargs)
    loader = DataLoader(dataset, **kwargs)
    loader.collate_fn = HostSizesCollater(loader.collate_fn)
    if capacities is not None:
        loader.collate_fn = PadCollater(loader.collate_fn, capacities)
    return loader


def placement(cfg, bundle, device: Optional[torch.device]) -> str:
    """Where the batches of a run are made (``train.data_placement``):
    ``'device'`` (the storage held on ``device``, batched there by index)
    or ``'host'`` (collated on the CPU; on CUDA from pinned memory, copied
    without waiting). ``auto`` holds the storage on a CUDA device when the
    fast collater serves every split and their storage takes at most
    :data:`DEVICE_DATA_FRACTION` of the free device memory."""
    mode = cfg.train.get('data_placement', 'auto')
    if device is None or mode == 'host':
        return 'host'
    splits = list(bundle.splits.values())
    servable = bool(cfg.train.fast_collate) and all(
        fast_collate_supported(s) is None for s in splits)
    if mode == 'device':
        if not servable:
            from graphgps_ext.logger import get_logger
            reason = ('train.fast_collate is False' if not cfg.train.fast_collate
                      else next(fast_collate_supported(s) for s in splits
                                if fast_collate_supported(s) is not None))
            get_logger().warning(
                f'train.data_placement device: the batches are made on the '
                f'host ({reason}; only the fast collater batches on a device)')
            return 'host'
        return 'device'
    if device.type != 'cuda' or not servable:
        return 'host'
    free, _ = torch.cuda.mem_get_info(device)
    # The splits are views of one storage or separate ones: count each once.
    stores = {id(s._data): storage_bytes(s) for s in splits}
    return 'device' if sum(stores.values()) <= DEVICE_DATA_FRACTION * free else 'host'


#: Largest share of the free device memory that ``train.data_placement
#: auto`` lets the datasets' storage take.
DEVICE_DATA_FRACTION = 0.25


def make_loaders(cfg, bundle, rank: int = 0, world_size: int = 1,
                 device: Optional[torch.device] = None, capacities=None
                 ) -> Dict[str, torch.utils.data.DataLoader]:
    """One loader per split (:func:`graph_loader`, ``train.fast_collate``).

    * batch size ``cfg.train.batch_size`` per process, ``cfg.num_workers``
      workers;
    * ``train``: :class:`EpochShuffleSampler` (seed ``cfg.seed``; call
      ``loaders['train'].sampler.set_epoch(epoch)`` every epoch): process
      ``rank`` sees its ``1/world_size`` share, and the global batches are
      those of one process with ``world_size`` times the batch size;
    * ``val``/``test``: in order; with ``world_size > 1`` each process gets
      a contiguous :class:`ShardSampler` shard (no padding duplicates), so
      gathering the predictions in rank order restores the split's order;
    * ``device`` (the run's): where the batches are made,
      :func:`placement` (``train.data_placement``).
    * ``capacities``: batches padded to static shapes (every split).
    """
    workers = int(cfg.num_workers)
    common = dict(fast=bool(cfg.train.fast_collate), capacities=capacities,
                  batch_size=int(cfg.train.batch_size), num_workers=workers,
                  persistent_workers=workers > 0)
    where = placement(cfg, bundle, device)
    if where == 'device':
        common.update(device=device, shared={})
    elif device is not None and device.type == 'cuda':
        common['pin_memory'] = True  # copied with non_blocking by the loop
    train = bundle.splits['train']
    sampler = EpochShuffleSampler(train, num_replicas=world_size, rank=rank,
                                  shuffle=True, seed=int(cfg.seed))
    loaders = {'train': graph_loader(train, sampler=sampler, **common)}
    for split in ('val', 'test'):
        data = bundle.splits[split]
        if world_size > 1:
            loaders[split] = graph_loader(
                data, sampler=ShardSampler(len(data), rank, world_size), **common)
        else:
            loaders[split] = graph_loader(data, shuffle=False, **common)
    return loaders
