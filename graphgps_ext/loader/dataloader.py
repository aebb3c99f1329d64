"""``make_loaders``: PyG data loaders for the splits of a
:class:`~graphgps_ext.loader.master.DatasetBundle`."""
from typing import Dict

import torch
from torch.utils.data import DistributedSampler
from torch_geometric.loader import DataLoader


def make_loaders(cfg, bundle, rank: int = 0,
                 world_size: int = 1) -> Dict[str, DataLoader]:
    """One PyG :class:`~torch_geometric.loader.DataLoader` per split.

    * batch size ``cfg.train.batch_size``, ``cfg.num_workers`` workers;
    * ``train`` is shuffled by a :class:`torch.Generator` seeded with
      ``cfg.seed`` (same seed, same batch order);
    * ``world_size > 1``: ``train`` uses a :class:`DistributedSampler`
      (``seed=cfg.seed``; call ``loaders['train'].sampler.set_epoch(epoch)``
      every epoch), so each rank sees its own ``1/world_size`` share;
      ``val``/``test`` are *not* sharded (a distributed sampler would pad
      them with duplicates): every rank gets the whole split, so evaluate on
      one rank (or on all and keep one result).
    """
    workers = int(cfg.num_workers)
    common = dict(batch_size=int(cfg.train.batch_size), num_workers=workers,
                  persistent_workers=workers > 0)
    train = bundle.splits['train']
    if world_size > 1:
        sampler = DistributedSampler(train, num_replicas=world_size, rank=rank,
                                     shuffle=True, seed=int(cfg.seed))
        loaders = {'train': DataLoader(train, sampler=sampler, **common)}
    else:
        gen = torch.Generator()
        gen.manual_seed(int(cfg.seed))
        loaders = {'train': DataLoader(train, shuffle=True, generator=gen,
                                       **common)}
    for split in ('val', 'test'):
        loaders[split] = DataLoader(bundle.splits[split], shuffle=False,
                                    **common)
    return loaders
