"""The virtual-node readout: one node per graph connected to all its nodes,
inserted before the layers; its final state is the graph representation."""
import pytest
import torch
from torch_geometric.data import Batch, Data

from graphgps_ext.head.base import resolve_pool
from graphgps_ext.head.virtual_node import VirtualNode, virtual_node_pool
from graphgps_ext.layer.context import GraphContext


def path_graphs(sizes, dim=3):
    out = []
    for n in sizes:
        src = torch.arange(max(n - 1, 0))
        ei = torch.stack([torch.cat([src, src + 1]), torch.cat([src + 1, src])])
        out.append(Data(x=torch.randn(n, dim), edge_index=ei, num_nodes=n))
    return Batch.from_data_list(out)


def explicit(batch, emb):
    """The same graphs built by hand: the virtual node first in each graph,
    joined to every node in both directions."""
    graphs = []
    for g in batch.to_data_list():
        n = g.num_nodes
        x = torch.cat([emb.view(1, -1), g.x])
        nodes = torch.arange(1, n + 1)
        vn = torch.zeros(n, dtype=torch.long)
        ei = torch.cat([g.edge_index + 1, torch.stack([vn, nodes]),
                        torch.stack([nodes, vn])], 1)
        graphs.append(Data(x=x, edge_index=ei, num_nodes=n + 1))
    return Batch.from_data_list(graphs)


def as_sets(edge_index):
    return set(map(tuple, edge_index.t().tolist()))


def test_attach_matches_the_hand_built_graphs():
    torch.manual_seed(0)
    batch = path_graphs([3, 1, 4, 2])
    vn = VirtualNode(3)
    with torch.no_grad():
        vn.embedding.uniform_(-1, 1)
    x, ctx = vn.attach(batch.x, None, GraphContext.from_batch(batch))
    ref = explicit(batch, vn.embedding.detach())
    torch.testing.assert_close(x, ref.x)
    assert torch.equal(ctx.batch, ref.batch) and ctx.num_graphs == 4
    assert as_sets(ctx.edge_index) == as_sets(ref.edge_index)
    assert ctx.edge_index.size(1) == batch.edge_index.size(1) + 2 * batch.num_nodes
    # The readout is the virtual node's row of every graph.
    torch.testing.assert_close(virtual_node_pool(x, ctx.batch, 4), vn.embedding.expand(4, -1))
    assert resolve_pool('virtual_node') is virtual_node_pool


def test_gradient_reaches_the_embedding():
    batch = path_graphs([2, 3])
    vn = VirtualNode(3)
    x, ctx = vn.attach(batch.x, None, GraphContext.from_batch(batch))
    virtual_node_pool(x * 2, ctx.batch, ctx.num_graphs).sum().backward()
    torch.testing.assert_close(vn.embedding.grad, torch.full((3, ), 4.0))


def test_inputs_it_cannot_extend_are_refused():
    batch = path_graphs([2])
    ctx = GraphContext.from_batch(batch)
    with pytest.raises(ValueError, match='virtual-node readout'):
        VirtualNode(3).attach(batch.x, torch.zeros(2, 3), ctx)
