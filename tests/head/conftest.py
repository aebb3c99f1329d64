"""Shared fixtures of the head tests: a minimal config and tiny batches."""
import pytest
import torch
from torch_geometric.data import Batch, Data
from yacs.config import CfgNode as CN

from graphgps_ext.config.head import head_cfg
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.task import TaskInfo


@pytest.fixture
def cfg():
    """GraphGym's two reused keys plus the ``head`` group, defaults."""
    c = CN()
    c.model = CN()
    c.model.graph_pooling = 'add'
    c.gnn = CN()
    c.gnn.layers_post_mp = 2
    head_cfg(c)
    return c


def _make_task(task_type='regression', num_outputs=1, **kw):
    return TaskInfo(name='toy', task='graph', task_type=task_type,
                    num_outputs=num_outputs, loss='l1', metric='mae',
                    metric_direction='min', **kw)


def _make_batch(sizes, dim=8, seed=0, **per_graph):
    """A batch of graphs of the given sizes (path graphs), node features
    ``[n, dim]``; ``per_graph[key](g, n)`` builds extra attributes."""
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for g, n in enumerate(sizes):
        src = torch.arange(n - 1)
        ei = torch.stack([torch.cat([src, src + 1]), torch.cat([src + 1, src])])
        d = Data(x=torch.randn(n, dim, generator=gen), edge_index=ei,
                 num_nodes=n)
        for key, fn in per_graph.items():
            d[key] = fn(g, n)
        graphs.append(d)
    b = Batch.from_data_list(graphs)
    return b, GraphContext.from_batch(b)


@pytest.fixture
def make_task():
    """Factory ``make_task(task_type, num_outputs, **kw) -> TaskInfo``."""
    return _make_task


@pytest.fixture
def make_batch():
    """Factory ``make_batch(sizes, dim=8, seed=0, **per_graph) -> (batch, ctx)``."""
    return _make_batch
