"""ZINC-shaped random molecules for model tests, and their task."""
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
