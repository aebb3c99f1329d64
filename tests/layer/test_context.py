import torch
from torch_geometric.data import Batch, Data
from torch_geometric.utils import to_dense_batch

from graphgps_ext.layer.context import GraphContext


def _batch(sizes):
    graphs = []
    for n in sizes:
        ei = torch.stack([torch.arange(n - 1), torch.arange(1, n)]) if n > 1 \
            else torch.empty(2, 0, dtype=torch.long)
        graphs.append(Data(x=torch.randn(n, 3), edge_index=ei, num_nodes=n))
    return Batch.from_data_list(graphs)


def test_layout_matches_to_dense_batch():
    data = _batch([3, 1, 5, 2])
    ctx = GraphContext.from_batch(data)
    dense = ctx.layout.to_dense(data.x)
    ref, ref_mask = to_dense_batch(data.x, data.batch)
    assert torch.equal(dense, ref)
    assert torch.equal(ctx.layout.mask, ref_mask)
    assert ctx.layout.n_max == 5 and ctx.num_graphs == 4
    assert torch.equal(ctx.layout.to_sparse(dense), data.x)


def test_layout_is_cached_and_pair_index():
    data = _batch([4, 3])
    ctx = GraphContext.from_batch(data)
    assert ctx.layout is ctx.layout
    b, i, j = ctx.layout.pair_index(data.edge_index)
    # Second graph's first edge (nodes 4 -> 5) sits at (1, 0, 1).
    k = (data.edge_index[0] == 4).nonzero()[0, 0]
    assert (b[k].item(), i[k].item(), j[k].item()) == (1, 0, 1)


def test_cached_and_log():
    ctx = GraphContext.from_batch(_batch([2]))
    calls = []
    v1 = ctx.cached('k', lambda: calls.append(1) or 5)
    v2 = ctx.cached('k', lambda: calls.append(1) or 6)
    assert v1 == v2 == 5 and len(calls) == 1
    ctx.log('a', torch.ones(1))  # recording off: no-op
    assert ctx.record is None
    ctx.record = {}
    ctx.log('a', torch.ones(1, requires_grad=True))
    assert len(ctx.record['a']) == 1 and not ctx.record['a'][0].requires_grad


def test_single_graph_without_batch_vector():
    data = Data(x=torch.randn(3, 2), edge_index=torch.tensor([[0, 1], [1, 2]]))
    ctx = GraphContext.from_batch(data)
    assert ctx.num_graphs == 1 and ctx.layout.mask.shape == (1, 3)
