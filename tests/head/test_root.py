import pytest
import torch
from torch_geometric.data import Batch, Data

from graphgps_ext.head import HEADS
from graphgps_ext.head.root import RootNodeHead
from graphgps_ext.layer.context import GraphContext


def _tree(n, root, label, seed):
    gen = torch.Generator().manual_seed(seed)
    mask = torch.zeros(n, dtype=torch.bool)
    mask[root] = True
    src = torch.arange(n - 1)
    ei = torch.stack([torch.cat([src, src + 1]), torch.cat([src + 1, src])])
    return Data(x=torch.randn(n, 8, generator=gen), edge_index=ei,
                root_mask=mask, y=torch.tensor([label]))


def _run(head, graphs):
    batch = Batch.from_data_list(graphs)
    return head(batch.x, batch, GraphContext.from_batch(batch))


def test_bias_free_linear_from_cfg(cfg, make_task):
    cfg.head.bias = False
    cfg.gnn.layers_post_mp = 1
    head = HEADS['root_node'].from_cfg(cfg, make_task('classification', 4), 8)
    assert len(head.mlp.lins) == 1 and head.mlp.lins[0].bias is None


def test_reads_root_even_when_graphs_are_permuted():
    head = RootNodeHead(8, 4, num_layers=1, bias=False).eval()
    graphs = [_tree(5, 3, 0, 0), _tree(3, 0, 1, 1), _tree(4, 2, 3, 2)]
    pred, true = _run(head, graphs)
    assert pred.shape == (3, 4) and torch.equal(true, torch.tensor([0, 1, 3]))
    for g, data in enumerate(graphs):  # exactly the root's features
        assert torch.allclose(pred[g], head.mlp(data.x[data.root_mask])[0])
    perm = [2, 0, 1]
    pred_p, true_p = _run(head, [graphs[k] for k in perm])
    assert torch.allclose(pred_p, pred[perm], atol=1e-6)
    assert torch.equal(true_p, true[perm])


def test_bad_root_masks_raise():
    head = RootNodeHead(8, 4)
    two = _tree(4, 1, 0, 0)
    two.root_mask[2] = True
    with pytest.raises(ValueError, match='exactly one node per graph'):
        _run(head, [two, _tree(3, 0, 1, 1)])
    none = _tree(4, 1, 0, 0)
    none.root_mask[:] = False
    with pytest.raises(ValueError, match='exactly one node per graph'):
        _run(head, [none, _tree(3, 0, 1, 1)])
    plain = Data(x=torch.randn(3, 8), edge_index=torch.zeros(2, 0, dtype=torch.long),
                 y=torch.tensor([0]))
    with pytest.raises(ValueError, match='root_mask'):
        _run(head, [plain])


def test_gradients_reach_every_parameter():
    head = RootNodeHead(8, 4, num_layers=2)
    pred, true = _run(head, [_tree(5, 3, 0, 0), _tree(3, 0, 1, 1)])
    torch.nn.functional.cross_entropy(pred, true).backward()
    for name, p in head.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_padded_and_compiled_without_a_graph_break():
    """On a static-shape batch the root head reads no data-dependent shape:
    compiled whole (``fullgraph``, ``aot_eager``) it gives the eager head's
    rows for the real graphs and zeros for the padding graphs, for batches
    of other sizes in one capacity without a recompilation."""
    from graphgps_ext.loader.pad import Capacities, pad_batch
    head = RootNodeHead(8, 4, num_layers=2).double().eval()
    graphs = [_tree(n, (3 * n) % n, n % 4, n) for n in (3, 4, 5, 6, 7, 5)]
    for g in graphs:
        g.x = g.x.double()
    caps = Capacities([max(Capacities.from_sizes(
        [g.num_nodes for g in graphs], [g.num_edges for g in graphs],
        batch_size=3).buckets)])
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, b, ctx: head(x, b, ctx),
                             backend='aot_eager', fullgraph=True, dynamic=False)
    for part in (graphs[:3], graphs[3:5]):
        ref, _ = _run(head, part)
        batch = pad_batch(Batch.from_data_list(part), caps)
        pred, true = compiled(batch.x, batch, GraphContext.from_batch(batch))
        n = len(part)
        torch.testing.assert_close(pred[:n], ref)
        assert pred.shape[0] == batch.num_graphs and not pred[n:].any()
    bad = pad_batch(Batch.from_data_list(graphs[:3]), caps)
    bad.root_mask[1] = True  # a second root in the first graph
    with pytest.raises(RuntimeError, match='exactly one node per graph'):
        compiled(bad.x, bad, GraphContext.from_batch(bad))
