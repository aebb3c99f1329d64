"""ZINC-shaped random molecules for model tests, their task, and a small
dataset of them as a run's data."""
from types import SimpleNamespace

import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from graphgps_ext.task import TaskInfo

#: Graph regression on :func:`molecule`'s graphs (ZINC's encoders and head).
GRAPH_TASK = TaskInfo(name='zinc-like', task='graph', task_type='regression',
                      num_outputs=1, loss='l1', metric='mae',
                      metric_direction='min', metrics=['mae'],
                      node_encoder='TypeDictNode', node_dim=1, node_num_types=28,
                      edge_encoder='TypeDictEdge', edge_dim=1, edge_num_types=4,
                      head='graph_mlp')


def molecule(n: int, seed: int, node_y: bool = False,
             dtype: torch.dtype = torch.float64) -> Data:
    """A random tree on ``n`` nodes plus one extra bond (connected, with
    molecule-like degrees), 28 atom types, bond types 1-3 (the undirected
    pairs draw independent types), and a regression label ``y [1, 1]`` of
    ``dtype`` (``node_y``: a class in 0-2 per node instead)."""
    g = torch.Generator().manual_seed(seed)
    parents = torch.tensor([int(torch.randint(0, i, (1, ), generator=g))
                            for i in range(1, n)])
    src = torch.cat([torch.arange(1, n), torch.tensor([0])])
    dst = torch.cat([parents, torch.tensor([n - 1])])
    ei = to_undirected(torch.stack([src, dst]), num_nodes=n)
    y = (torch.randint(0, 3, (n, ), generator=g) if node_y
         else torch.randn(1, 1, generator=g, dtype=dtype))
    return Data(x=torch.randint(0, 28, (n, 1), generator=g), edge_index=ei,
                edge_attr=torch.randint(1, 4, (ei.size(1), ), generator=g),
                y=y)


def as_double(batch):
    """``batch`` with its floating-point attributes in float64 (in place)."""
    for key in batch.keys():
        v = batch[key]
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            batch[key] = v.double()
    return batch


def molecule_bundle(**attrs) -> SimpleNamespace:
    """40 molecules of 5 to 17 atoms with RWSE of walks 1-4 (float32 labels
    and encodings), split 24 / 8 / 8, as the data bundle a run loads;
    ``attrs``: its other attributes (``split_indices``, ``info``)."""
    from graphgps_ext.runs.config import load_cfg
    from graphgps_ext.transform.precompute import EncodedList, precompute_encodings
    cfg = load_cfg(None, ['posenc_RWSE.enable', 'True',
                          'posenc_RWSE.kernel.times', '[1, 2, 3, 4]'])
    sizes = [5 + (7 * i) % 13 for i in range(40)]
    data = precompute_encodings(
        EncodedList([molecule(n, i) for i, n in enumerate(sizes)]), cfg)
    for key in ('y', 'pe_rwse'):
        data._data[key] = data._data[key].float()
    return SimpleNamespace(
        splits={'train': data[:24], 'val': data[24:32], 'test': data[32:]},
        task=GRAPH_TASK, **attrs)
