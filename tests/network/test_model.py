"""The full network (encoders -> hybrid layers -> head) for every branch kind.

Checks on ZINC-shaped random molecules: a graph's prediction does not depend
on the other graphs of its batch (eval mode), is invariant to a permutation of
its nodes, and every parameter receives a gradient.
"""
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.utils import to_dense_adj

from graphgps_ext.network import GPSModel, num_parameters
from graphgps_ext.runs.config import load_cfg
from graphgps_ext.task import TaskInfo
from graphgps_ext.transform.rwse import rwse_dense

from molecules import GRAPH_TASK, molecule as random_molecule

LAYER_TYPES = [
    ('GINE+Transformer+None', []),
    ('GatedGCN+Transformer+GEANet', []),
    ('GCN+None+GEANet', []),
    ('GIN+None+None', []),
    ('None+CSA+None', []),
    ('None+MNA+None', ['gt.pre_norm', 'True', 'gt.norm', 'layer']),
    ('None+GT+None', ['gtlayer.edge_features', 'True']),
]


def molecule(n: int, seed: int) -> Data:
    """A random molecule with its RWSE."""
    data = random_molecule(n, seed, dtype=torch.float32)
    adj = to_dense_adj(data.edge_index, max_num_nodes=n)
    data.pe_rwse = rwse_dense(adj, list(range(1, 9)))[0]
    return data


def build(layer_type, extra):
    cfg = load_cfg(None, [
        'gt.layer_type', layer_type, 'gt.layers', '2', 'gt.dim_hidden', '32',
        'gt.n_heads', '4', 'posenc_RWSE.enable', 'True',
        'posenc_RWSE.kernel.times', '[1, 2, 3, 4, 5, 6, 7, 8]',
        'posenc_RWSE.dim_pe', '8'] + extra)
    torch.manual_seed(0)
    return GPSModel(cfg, GRAPH_TASK)


def edge_only_parameters(model, batch):
    """Parameters that only shape the final edge stream, which no node or
    graph head reads (e.g. GEANet's edge unit of the last layer, or its whole
    edge path beside a GCN, which ignores edges: GEAET eq. 4)."""
    x, e, ctx = model.encode(batch)
    for layer in model.layers:
        x, e = layer(x, e, ctx)
    params = dict(model.named_parameters())
    if e is None:
        return set()
    grads = torch.autograd.grad(e.sum(), list(params.values()), allow_unused=True)
    return {n for n, g in zip(params, grads) if g is not None}


def check_eval_invariance(model, graphs):
    """In eval mode, graph 1's prediction does not depend on the other graphs
    of its batch nor on the order of its nodes."""
    model.eval()
    with torch.no_grad():
        together = model(Batch.from_data_list(graphs))[0]
        alone = model(Batch.from_data_list([graphs[1]]))[0]
        assert torch.allclose(together[1], alone[0], atol=1e-5)

        # node permutation of graph 1 leaves its prediction unchanged
        g = graphs[1]
        perm = torch.randperm(g.num_nodes, generator=torch.Generator().manual_seed(3))
        inv = torch.empty_like(perm)
        inv[perm] = torch.arange(g.num_nodes)
        gp = Data(x=g.x[perm], edge_index=inv[g.edge_index], edge_attr=g.edge_attr,
                  pe_rwse=g.pe_rwse[perm], y=g.y, num_nodes=g.num_nodes)
        permuted = model(Batch.from_data_list([graphs[0], gp, graphs[2]]))[0]
        assert torch.allclose(permuted, together, atol=1e-5)


@pytest.mark.parametrize('layer_type,extra', LAYER_TYPES)
def test_full_model(layer_type, extra):
    model = build(layer_type, extra)
    graphs = [molecule(n, s) for s, n in enumerate([7, 12, 5])]

    # gradients reach every parameter
    model.train()
    pred, true = model(Batch.from_data_list(graphs))
    assert pred.shape == (3, 1) and true.shape == (3, 1)
    (pred - true).abs().mean().backward()
    missing = {n for n, p in model.named_parameters() if p.grad is None}
    assert not missing - edge_only_parameters(model, Batch.from_data_list(graphs)), \
        missing
    assert num_parameters(model) > 0

    check_eval_invariance(model, graphs)


def test_unknown_branch_is_named():
    with pytest.raises(ValueError, match="did you mean 'GatedGCN'"):
        build('GatedGCNN+None+None', [])


@pytest.mark.parametrize('layer_type,extra', [
    ('None+MNA+None', ['gt.pre_norm', 'True', 'gt.norm', 'layer']),
    ('GIN+None+None', ['gt.ffn', 'False']),
])
def test_virtual_node_readout(layer_type, extra):
    """head.pool virtual_node: the graph representation is the state of a
    node joined to all nodes; batch independence, permutation invariance and
    gradients (the virtual node's embedding included) hold."""
    model = build(layer_type, extra + ['head.pool', 'virtual_node'])
    assert model.virtual_node is not None
    graphs = [molecule(n, s) for s, n in enumerate([7, 12, 5])]
    model.train()
    pred, _ = model(Batch.from_data_list(graphs))
    assert pred.shape == (3, 1)
    pred.sum().backward()
    assert model.virtual_node.embedding.grad is not None
    assert not [n for n, p in model.named_parameters() if p.grad is None]
    check_eval_invariance(model, graphs)


def test_virtual_node_readout_needs_a_graph_task_and_no_edge_stream():
    node_task = TaskInfo(name='sbm', task='node', task_type='classification',
                         num_outputs=2, loss='cross_entropy', metric='accuracy',
                         metric_direction='max', node_encoder='TypeDictNode',
                         node_num_types=28, head='inductive_node')
    cfg = load_cfg(None, ['gt.layer_type', 'GIN+None+None', 'head.pool', 'virtual_node'])
    with pytest.raises(ValueError, match='graph-level tasks'):
        GPSModel(cfg, node_task)
    model = build('GINE+None+None', ['head.pool', 'virtual_node'])
    with pytest.raises(ValueError, match='virtual-node readout'):
        model(Batch.from_data_list([molecule(5, 0)]))


def check_reset_parameters(module, fresh):
    """``module.reset_parameters()`` re-initialises every parameter and norm
    statistic of ``module`` (each overwritten with a constant first): a
    parameter that ``fresh`` (an identically built module) has constant
    (a zero bias, a unit norm weight) gets that constant back, every other
    one leaves the constant."""
    with torch.no_grad():
        for p in module.parameters():
            p.fill_(0.123)
        for name, buf in module.named_buffers():
            if name.endswith(('running_mean', 'running_var')):
                buf.fill_(5.0)
    module.reset_parameters()
    new, ref = dict(module.named_parameters()), dict(fresh.named_parameters())
    assert new.keys() == ref.keys()
    for name, p in new.items():
        if ref[name].numel() > 1 and bool((ref[name] == ref[name].flatten()[0]).all()):
            assert torch.equal(p, ref[name]), name
        else:
            assert not bool((p == 0.123).all()), f'{name} was not reset'
    for name, buf in module.named_buffers():
        if name.endswith('running_mean'):
            assert torch.equal(buf, torch.zeros_like(buf)), name
        if name.endswith('running_var'):
            assert torch.equal(buf, torch.ones_like(buf)), name


@pytest.mark.parametrize('layer_type,extra', LAYER_TYPES + [
    ('None+MNA+None', ['gt.pre_norm', 'True', 'gt.norm', 'layer',
                       'head.pool', 'virtual_node']),
    ('None+CSA+None', ['csa.share_edge_params', 'True'])])
def test_reset_parameters(layer_type, extra):
    model = build(layer_type, extra)
    check_reset_parameters(model, build(layer_type, extra))
    graphs = [molecule(n, s) for s, n in enumerate([7, 12, 5])]
    pred, _ = model(Batch.from_data_list(graphs))
    assert pred.shape == (3, 1) and bool(torch.isfinite(pred).all())
    # the same seed gives the same re-initialisation
    torch.manual_seed(1)
    model.reset_parameters()
    first = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(1)
    model.reset_parameters()
    assert all(torch.equal(first[k], v) for k, v in model.state_dict().items())
