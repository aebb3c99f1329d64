"""Generated datasets (``dataset.format synthetic``): the tree
neighbour-matching task of Alon & Yahav (``TreeNeighbourMatch``, depth
``dataset.tree_depth``); PATTERN and CLUSTER are declared with the GNN
benchmark."""
import torch
from torch_geometric.data import Data

from graphgps_ext.loader.datasets import Dataset, Format

FORMATS = [Format('synthetic', 'graphgps_ext.loader.sources:synthetic')]


def tree_facts(depth: int) -> dict:
    """What a tree of depth ``r`` fixes: ``2**r`` leaves, so ``2**r`` classes
    and ``2**r + 1`` ids in each of the two node-type columns."""
    return dict(num_outputs=2 ** depth, node_type_dims=[2 ** depth + 1] * 2)


def complete_tree(r: int):
    """Complete binary tree of depth r, DFS pre-order, child -> parent edges."""
    n = 2 ** (r + 1) - 1
    edges = []

    def build(v, m):
        if v == m:
            return
        left = v + 1
        right = v + 1 + (m - v) // 2
        edges.append((left, v))
        edges.append((right, v))
        build(left, right - 1)
        build(right, m)

    build(0, n - 1)
    return n, torch.tensor(edges, dtype=torch.long).t()


def _tree_graph(gen, n, cfg, outputs):
    r = int(cfg.dataset.tree_depth)
    n, ei = complete_tree(r)
    k = 2 ** r
    x = torch.zeros(n, 2, dtype=torch.long)
    leaves = torch.tensor([v for v in range(n) if v not in set(ei[1].tolist())])
    perm = torch.randperm(k, generator=gen) + 1
    x[leaves, 0] = torch.arange(1, k + 1)
    x[leaves, 1] = perm
    key = int(torch.randint(1, k + 1, (1,), generator=gen))
    x[0, 0] = key
    root_mask = torch.zeros(n, dtype=torch.bool)
    root_mask[0] = True
    return Data(x=x, edge_index=ei, y=perm[key - 1].view(1) - 1,
                root_mask=root_mask, num_nodes=n)


def _tree_extras(cfg) -> dict:
    r = int(cfg.dataset.tree_depth)
    return dict(tree_facts(r), tree_depth=r)


DATASETS = [
    Dataset('TreeNeighbourMatch', dict(task='graph', task_type='classification',
                                       loss='cross_entropy', metric='accuracy',
                                       metrics=['accuracy'], head='root_node',
                                       node_encoder='MultiTypeNode',
                                       edge_encoder=None, num_outputs=None),
            names={'synthetic': ('TreeNeighbourMatch', )}, graph=_tree_graph,
            extras=_tree_extras),
]
