"""Static-shape batches: padding changes nothing.

For every branch type, encoder and head, a model in float64 and training mode
gives on a padded batch the same loss, the same gradient of every parameter
and the same batch norm running statistics as on the unpadded batch. The
loss is the training loop's: on the padded batch computed inside the forward
pass on the padded output with the mask of the head's real rows
(:class:`~graphgps_ext.train.speed.ForwardLoss`), on the unpadded one as the
eager path computes it.
Dropout is off: a padded tensor draws more random numbers, so its masks
(same distribution) are not the unpadded batch's.
"""
import copy

import pytest
import torch
from torch_geometric.data import Batch

from graphgps_ext.layer.norm import MaskedBatchNorm1d
from graphgps_ext.loader.pad import (Capacities, Capacity, PadCollater,
                                     graph_sizes, pad_batch, row_mask, trim)
from graphgps_ext.network import GPSModel
from graphgps_ext.runs.config import load_cfg
from graphgps_ext.task import TaskInfo
from graphgps_ext.train.loss import LOSSES
from graphgps_ext.train.speed import ForwardLoss
from graphgps_ext.transform.precompute import EncodedList, precompute_encodings

from molecules import GRAPH_TASK, as_double, molecule

NODE_TASK = TaskInfo(name='pattern-like', task='node', task_type='classification',
                     num_outputs=3, loss='cross_entropy', metric='accuracy',
                     metric_direction='max', metrics=['accuracy'],
                     node_encoder='TypeDictNode', node_dim=1, node_num_types=28,
                     edge_encoder='TypeDictEdge', edge_dim=1, edge_num_types=4,
                     head='inductive_node')

BASE = ['gt.layers', '2', 'gt.dim_hidden', '16']
RWSE = ['posenc_RWSE.enable', 'True', 'posenc_RWSE.kernel.times', '[1, 2, 3, 4]',
        'posenc_RWSE.dim_pe', '4']

CASES = {
    'GCN': ('GCN+None+None', RWSE),
    'GIN': ('GIN+None+None', RWSE),
    'GINE': ('GINE+None+None', RWSE),
    'GatedGCN': ('GatedGCN+None+None', RWSE),
    'Transformer': ('GINE+Transformer+None', RWSE),
    'CSA': ('None+CSA+None', []),
    'CSA-spd-rings': ('None+CSA+None', ['pairenc.rpe', 'spd', 'pairenc.rings',
                                        'True']),
    'MNA': ('None+MNA+None', RWSE + ['gt.pre_norm', 'True']),
    'GT': ('None+GT+None', RWSE + ['gtlayer.edge_features', 'True']),
    'GEANet': ('GatedGCN+Transformer+GEANet', RWSE + ['gea.edge_norm', 'batch']),
    'GEANet-batch-softmax': ('GatedGCN+None+GEANet',
                             RWSE + ['gea.parity_batch_softmax', 'True']),
    'LapPE-DeepSet': ('GINE+None+None', [
        'posenc_LapPE.enable', 'True', 'posenc_LapPE.dim_pe', '4',
        'posenc_LapPE.eigen.max_freqs', '3', 'posenc_LapPE.raw_norm_type',
        'BatchNorm']),
    'LapPE-Transformer': ('GINE+None+None', [
        'posenc_LapPE.enable', 'True', 'posenc_LapPE.dim_pe', '4',
        'posenc_LapPE.model', 'Transformer', 'posenc_LapPE.eigen.max_freqs', '3',
        'posenc_LapPE.raw_norm_type', 'BatchNorm']),
    'EquivStableLapPE': ('GatedGCN+None+None', [
        'posenc_EquivStableLapPE.enable', 'True',
        'posenc_EquivStableLapPE.raw_norm_type', 'BatchNorm',
        'mpnn.equivstable_pe', 'True']),
    'encoder-bn': ('GINE+None+None', [
        'posenc_RWSE.kernel.times', '[1, 2, 3, 4]', 'posenc_RWSE.dim_pe', '4',
        'dataset.node_encoder', 'True',
        'dataset.node_encoder_name', 'TypeDictNode+RWSE',
        'dataset.edge_encoder_name', 'TypeDictEdge', 'dataset.node_encoder_bn', 'True',
        'dataset.edge_encoder', 'True', 'dataset.edge_encoder_bn', 'True']),
    'pool-add': ('GINE+None+None', RWSE + ['head.pool', 'add']),
    'pool-max': ('GINE+None+None', RWSE + ['head.pool', 'max']),
    'graph-node-mlp': ('GINE+None+None', RWSE + ['gnn.head', 'graph_node_mlp']),
    'virtual-node': ('None+Transformer+None', RWSE + ['head.pool', 'virtual_node']),
}


def dataset(cfg, node_y=False, sizes=(7, 12, 5, 9, 15, 6)):
    graphs = [molecule(n, i, node_y) for i, n in enumerate(sizes)]
    return precompute_encodings(EncodedList(graphs), cfg)


def build(layer_type, extra, task=GRAPH_TASK):
    cfg = load_cfg(None, ['gt.layer_type', layer_type] + BASE + extra)
    cfg.defrost()
    cfg.gt.n_heads, cfg.gt.dropout, cfg.gt.attn_dropout = 2, 0.0, 0.0
    # Random sign flips draw one sign per graph: padding graphs would draw more.
    cfg.posenc_LapPE.sign_flip = False
    torch.manual_seed(0)
    model = GPSModel(cfg, task).double()
    for m in model.modules():  # LapPE's torch Transformer has its own dropout
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
        if isinstance(m, torch.nn.MultiheadAttention):
            m.dropout = 0.0
    return cfg, model


def run(model, batch, task):
    """Loss, gradients and buffers after one training-mode pass."""
    model.train()
    model.zero_grad()
    # the task's loss (l1, cross-entropy) on the head's output: masked on a
    # padded batch, on every row of an unpadded one
    _, _, loss = ForwardLoss(model, LOSSES[task.loss])(batch)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()
             if p.grad is not None}
    buffers = {n: b.clone() for n, b in model.named_buffers()}
    return loss.detach(), grads, buffers


def check_same(model, plain, padded, task=GRAPH_TASK):
    m2 = copy.deepcopy(model)
    loss, grads, bufs = run(model, plain, task)
    loss_p, grads_p, bufs_p = run(m2, padded, task)
    assert torch.isfinite(loss)
    torch.testing.assert_close(loss_p, loss, rtol=1e-10, atol=1e-12)
    assert grads.keys() == grads_p.keys()
    for name in grads:
        torch.testing.assert_close(grads_p[name], grads[name], rtol=1e-9,
                                   atol=1e-11, msg=name)
    for name in bufs:
        torch.testing.assert_close(bufs_p[name], bufs[name], rtol=1e-10,
                                   atol=1e-12, msg=name)
    # evaluation mode (running statistics) after the update
    model.eval(), m2.eval()
    with torch.no_grad():
        rows = model.head.output_rows
        pred = trim(*model(plain), plain, rows)[0]
        pred_p = trim(*m2(padded), padded, rows)[0]
    torch.testing.assert_close(pred_p, pred, rtol=1e-10, atol=1e-12)


def batches(data, capacities):
    items = [data[i] for i in range(len(data))]
    plain = as_double(Batch.from_data_list(items))
    padded = as_double(pad_batch(Batch.from_data_list(items), capacities))
    return plain, padded


@pytest.fixture(params=['prefix', 'masked'])
def norm_path(request, monkeypatch):
    """``prefix``: eager batch norms run PyTorch's kernel on the leading real
    rows; ``masked``: the masked sums that run under torch.compile."""
    if request.param == 'masked':
        monkeypatch.setattr(torch.compiler, 'is_compiling', lambda: True)
    return request.param


@pytest.mark.parametrize('width', [0, 16])
@pytest.mark.parametrize('case', list(CASES))
def test_padding_changes_nothing(case, norm_path, width):
    layer_type, extra = CASES[case]
    cfg, model = build(layer_type, extra)
    data = dataset(cfg)
    # Large enough for padding nodes, edges and two padding graphs; width 16:
    # the dense layout is [9, 16] (the largest graph has 15 nodes), and the
    # 26 padding nodes overflow their graph's 16 slots.
    plain, padded = batches(data, Capacities([Capacity(80, 160, 9, width)]))
    assert padded.num_nodes == 80 and padded.edge_index.size(1) == 160
    assert padded.num_graphs == 9 and padded.real_graphs == 6
    assert getattr(padded, 'graph_nodes', 0) == width
    check_same(model, plain, padded)
    if any(isinstance(m, MaskedBatchNorm1d) for m in model.modules()):
        # The masks matter: without them the running statistics differ.
        unmasked = copy.copy(padded)
        for key in ('node_mask', 'edge_mask', 'graph_mask'):
            del unmasked[key]
        _, _, bufs = run(copy.deepcopy(model), unmasked, GRAPH_TASK)
        _, _, ref = run(copy.deepcopy(model), plain, GRAPH_TASK)
        assert any(not torch.allclose(bufs[n], ref[n]) for n in ref
                   if 'running_mean' in n)


@pytest.mark.parametrize('layer_type', ['GatedGCN+Transformer+GEANet',
                                        'GIN+None+None'])
def test_node_head(layer_type, norm_path):
    cfg, model = build(layer_type, RWSE, NODE_TASK)
    data = dataset(cfg, node_y=True)
    plain, padded = batches(data, Capacities([Capacity(72, 130, 7)]))
    check_same(model, plain, padded, NODE_TASK)


def test_masked_batch_norm_equals_batch_norm_on_real_rows():
    torch.manual_seed(0)
    for shape in [(10, 4), (10, 4, 2)]:
        x = torch.randn(*shape, dtype=torch.float64)
        mask = torch.arange(10) < 7
        a = MaskedBatchNorm1d(4).double()
        b = torch.nn.BatchNorm1d(4).double()
        b.load_state_dict(a.state_dict())
        for momentum in (0.1, None):
            a.momentum = b.momentum = momentum
            out = a(x, mask)
            ref = b(x[:7])
            torch.testing.assert_close(out[:7], ref)
            torch.testing.assert_close(a.running_mean, b.running_mean)
            torch.testing.assert_close(a.running_var, b.running_var)
            assert int(a.num_batches_tracked) == int(b.num_batches_tracked)
        a.eval(), b.eval()
        torch.testing.assert_close(a(x, mask), b(x))


def test_prefix_rows_use_the_batch_norm_kernel():
    torch.manual_seed(0)
    x = torch.randn(10, 4, 2)
    mask = torch.arange(10) < 7
    a, b = MaskedBatchNorm1d(4), torch.nn.BatchNorm1d(4)
    out = a(x, mask, 7)
    assert torch.equal(out[:7], b(x[:7])) and torch.equal(out[7:], torch.zeros(3, 4, 2))
    assert torch.equal(a.running_var, b.running_var)


def test_without_mask_it_is_batch_norm():
    x = torch.randn(6, 3)
    a, b = MaskedBatchNorm1d(3), torch.nn.BatchNorm1d(3)
    assert a.state_dict().keys() == b.state_dict().keys()
    torch.testing.assert_close(a(x), b(x))


def test_capacities_from_sizes():
    nodes = torch.arange(5, 35)  # 30 graphs of 5..34 nodes
    edges = 2 * nodes
    caps = Capacities.from_sizes(nodes, edges, batch_size=4)
    assert all(c.graphs == 5 for c in caps.buckets)
    assert all(c.nodes % 8 == 0 and c.edges % 8 == 0 for c in caps.buckets)
    top = caps.buckets[-1]
    assert top.nodes > 34 + 33 + 32 + 31 and top.edges >= 2 * (34 + 33 + 32 + 31)
    assert 2 <= len(caps.buckets) <= 4
    # the same buckets on every call (fixed generator)
    assert Capacities.from_sizes(nodes, edges, 4).buckets == caps.buckets
    # the smallest fitting bucket; beyond the largest, powers of two
    small = caps.buckets[0]
    assert caps.choose(small.nodes - 1, small.edges, 4) == small
    assert caps.choose(small.nodes, 0, 4) != small
    big = caps.choose(1000, 3000, 4)
    assert (big.nodes, big.edges, big.graphs) == (1024, 4096, 5)
    # the dense layout's width: the largest graph, rounded up to 8
    assert all(c.graph_nodes == 40 for c in caps.buckets)
    assert caps.choose(small.nodes - 1, small.edges, 4, largest=40) == small
    wide = caps.choose(small.nodes - 1, small.edges, 4, largest=41)
    assert wide.graph_nodes == 64 and wide not in caps.buckets


def test_static_dense_layout_has_the_capacity_shape():
    # Every batch of a capacity: the layout [graphs, graph_nodes] and one
    # attention block of that shape, whatever the graph sizes.
    from graphgps_ext.layer.context import GraphContext
    from graphgps_ext.layer.fused_attention import attention_blocks
    cfg = load_cfg(None, BASE)
    data = dataset(cfg)
    cap = Capacity(80, 160, 9, 16)
    for items in ([0, 1, 2], [4, 5], [0, 1, 2, 3, 4, 5]):
        batch = pad_batch(Batch.from_data_list([data[i] for i in items]),
                          Capacities([cap]))
        assert batch.graph_nodes == 16
        ctx = GraphContext.from_batch(batch)
        assert ctx.layout.mask.shape == (9, 16) and ctx.layout.n_max == 16
        plan = attention_blocks(ctx)
        assert [(b.graphs, b.n) for b in plan.blocks] == [(9, 16)]
        # real nodes keep their own slots: the layout gives them back
        x = torch.arange(80.)
        back = ctx.layout.to_sparse(ctx.layout.to_dense(x))
        n = batch.real_nodes
        assert torch.equal(back[:n], x[:n])
        assert torch.equal(plan.to_nodes(plan.to_blocks(x))[:n], x[:n])
    # Without a width (hand-made capacities) the layout follows the batch.
    batch = pad_batch(Batch.from_data_list([data[0], data[2]]),
                      Capacities([Capacity(80, 160, 9)]))
    assert not hasattr(batch, 'graph_nodes')
    assert GraphContext.from_batch(batch).layout.n_max == 80 - 12


def test_attribute_levels_come_from_the_split():
    from graphgps_ext.loader.pad import attribute_levels
    graphs = [molecule(n, i) for i, n in enumerate((1, 1, 6))]
    for g in graphs:
        g.pe = torch.zeros(g.num_nodes, 3)
    # the single-node graphs alone allow node or graph for x and y; the
    # third graph decides
    assert attribute_levels(graphs[:2])['y'] == 'node'
    levels = attribute_levels(graphs)
    assert levels == {'x': 'node', 'pe': 'node', 'y': 'graph',
                      'edge_index': 'edge', 'edge_attr': 'edge'}
    caps = Capacities([Capacity(16, 16, 5)], levels)
    # a batch of single-node graphs: y padded per graph, x per node
    batch = pad_batch(Batch.from_data_list(graphs[:2]), caps)
    assert batch.y.size(0) == 5 and batch.x.size(0) == batch.pe.size(0) == 16
    assert Capacities.from_dataset(EncodedList(graphs), 2).levels == levels
    # at most `limit` graphs are read: the first two leave y ambiguous
    assert attribute_levels(graphs, limit=2)['y'] == 'node'


def test_graph_sizes_and_collater():
    cfg = load_cfg(None, BASE)
    data = dataset(cfg)
    nodes, edges = graph_sizes(data)
    assert nodes.tolist() == [7, 12, 5, 9, 15, 6]
    assert edges.tolist() == [int(data[i].num_edges) for i in range(6)]
    nodes, edges = graph_sizes(data[torch.tensor([4, 0])])
    assert nodes.tolist() == [15, 7]
    caps = Capacities.from_dataset(data, batch_size=2)
    collate = PadCollater(Batch.from_data_list, caps)
    batch = collate([data[0], data[4]])
    assert batch.num_graphs == 3 and batch.real_graphs == 2
    assert int(batch.node_mask.sum()) == 22 and batch.num_nodes > 22
    assert batch.ptr.tolist()[:3] == [0, 7, 22]
    # padding nodes: graph 2 (the first padding graph), self-loops on node 22
    assert (batch.batch[22:] == 2).all()
    assert (batch.edge_index[:, batch.real_edges:] == 22).all()
    assert batch.y.size(0) == 3
    # the real graphs can be read back from the padded batch
    assert torch.equal(batch.get_example(1).edge_index, data[4].edge_index)


@pytest.mark.parametrize('width', [0, 8])
@pytest.mark.parametrize('mode', ['labeled', 'all', 'query_ce'])
def test_link_head(mode, width):
    from graphgps_ext.head.link import InductiveLinkHead
    from graphgps_ext.layer.context import GraphContext
    gen = torch.Generator().manual_seed(0)
    graphs = []
    for n in (6, 4, 5):
        g = molecule(n, n)
        g.x = torch.randn(n, 4, generator=gen, dtype=torch.float64)
        pairs = torch.randint(0, n, (2, n), generator=gen)
        g.edge_label_index = pairs
        g.edge_label = (torch.arange(n) % 2 == 0).long()
        graphs.append(g)
    torch.manual_seed(0)
    head = InductiveLinkHead(4, train_mode=mode).double()
    plain = Batch.from_data_list(graphs)
    padded = pad_batch(Batch.from_data_list(graphs),
                       Capacities([Capacity(24, 40, 5, width)]))
    assert torch.equal(padded.edge_label_index, plain.edge_label_index)
    out = head(plain.x, plain, GraphContext.from_batch(plain))
    out_p = head(padded.x, padded, GraphContext.from_batch(padded))
    out_p = trim(*out_p, padded, head.output_rows)
    # labelled pairs index real nodes only: the loss needs no row mask
    assert row_mask(padded, head.output_rows) is None
    if mode == 'query_ce':
        # candidate columns up to the layout's n_max, which the padding graph
        # (or the capacity's width) may widen: the extra columns hold the
        # most negative value (zero weight in the cross entropy)
        n = out[0].size(1)
        assert (out_p[0][:, n:] == torch.finfo(torch.float64).min).all()
        torch.testing.assert_close(
            torch.nn.functional.cross_entropy(out_p[0], out_p[1]),
            torch.nn.functional.cross_entropy(out[0], out[1]))
        out_p = (out_p[0][:, :n], out_p[1])
    for a, b in zip(out, out_p):
        torch.testing.assert_close(b, a)
    torch.testing.assert_close(head.metric_inputs(*out_p, padded),
                               head.metric_inputs(*out, plain))


def test_masked_batch_norm_without_enough_real_rows_stays_finite():
    bn = MaskedBatchNorm1d(3)
    x = torch.randn(5, 3)
    for real in (0, 1):
        mask = torch.arange(5) < real
        out = bn(x, mask)
        assert torch.isfinite(out).all()
        assert torch.equal(bn.running_mean, torch.zeros(3))
        assert torch.equal(bn.running_var, torch.ones(3))


def test_masked_batch_norm_keeps_half_precision_inputs_exact_enough():
    torch.manual_seed(0)
    x = torch.randn(741, 4) * 3 + 5
    mask = torch.arange(741) < 700
    a, b = MaskedBatchNorm1d(4), torch.nn.BatchNorm1d(4)
    out = a(x.bfloat16(), mask)
    ref = b(x[:700])
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(a.running_mean, b.running_mean, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(out[:700].float(), ref, rtol=2e-2, atol=3e-2)


def test_root_node_head(norm_path):
    task = TaskInfo(name='tree-like', task='graph', task_type='classification',
                    num_outputs=3, loss='cross_entropy', metric='accuracy',
                    metric_direction='max', metrics=['accuracy'],
                    node_encoder='TypeDictNode', node_dim=1, node_num_types=28,
                    edge_encoder='TypeDictEdge', edge_dim=1, edge_num_types=4,
                    head='root_node')
    cfg, model = build('GINE+None+None', RWSE, task)
    data = dataset(cfg)
    graphs = []
    for i in range(len(data)):
        g = data[i]
        g.root_mask = torch.arange(g.num_nodes) == 0
        g.y = torch.tensor([i % 3])
        graphs.append(g)
    plain = as_double(Batch.from_data_list(graphs))
    padded = as_double(pad_batch(Batch.from_data_list(graphs),
                                 Capacities([Capacity(80, 160, 9)])))
    assert int(padded.root_mask.sum()) == len(graphs)
    check_same(model, plain, padded, NODE_TASK)  # cross entropy on the rows
