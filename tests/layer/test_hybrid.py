"""HybridLayer composed with the MPNN / Transformer / GEANet branches:
GEAET eq. 8-10 and the edge stream threaded local -> global -> external."""
import pytest
import torch
from torch_geometric.data import Batch
from yacs.config import CfgNode as CN

from branch_checks import (batch_dependence, check_gradients,
                           check_permutation_equivariance, context, graphs,
                           randomise_batchnorms, run)
from graphgps_ext.branches import GEA_OPTIONS, MPNN_OPTIONS
from graphgps_ext.config.gt import gt_cfg
from graphgps_ext.layer import BRANCHES
from graphgps_ext.layer.hybrid import HybridLayer

D = 16


def cfg():
    c = CN()
    gt_cfg(c)
    MPNN_OPTIONS(c)
    GEA_OPTIONS(c)
    c.gt.n_heads, c.gea.n_heads, c.gea.num_slots = 2, 4, 6
    return c


def layer(local, glob, ext, c=None, **kw):
    c = c or cfg()
    build = lambda name: None if name is None else BRANCHES[name].from_cfg(c, D)
    return HybridLayer(D, build(local), build(glob), build(ext), **kw).double()


def data():
    return graphs([5, 3, 7], D, seed=0, isolated=1)


def test_geaet_layer_is_eq_8_to_10():
    torch.manual_seed(0)
    m = layer('GatedGCN', 'Transformer', 'GEANet')
    randomise_batchnorms(m)
    m.eval()
    batch = Batch.from_data_list(data())
    ctx = context(batch)
    x, e = batch.x, batch.edge_attr
    out, e_out = m(x, e, ctx)

    br, nm = m.branches, m.norms
    x_M, e_M = br['local'](x, e, ctx)             # eq. 8, MPNN
    x_T, _ = br['global'](x, e, ctx)              # eq. 8, TLayer
    x_G, e_G = br['external'](x, e_M, ctx)        # eq. 8, GEANet(X, E_M)
    h = (nm['local'](x + x_M) + nm['global'](x + x_T)
         + nm['external'](x + x_G))
    ref = m.ffn_norm(h + m.ffn(h))                # eq. 10, FFN
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(e_out, e_G)        # eq. 10, E' = E_G
    # GEANet really sees E_M, not E: feeding E gives other edges.
    _, e_wrong = br['external'](x, e, ctx)
    assert not torch.allclose(e_wrong, e_out)


def test_edge_stream_without_edge_updating_local_branch():
    """GCN leaves the edge stream alone: GEANet receives the input E."""
    torch.manual_seed(0)
    m = layer('GCN', None, 'GEANet').eval()
    batch = Batch.from_data_list(data())
    ctx = context(batch)
    _, e_out = m(batch.x, batch.edge_attr, ctx)
    _, e_ref = m.branches['external'](batch.x, batch.edge_attr, ctx)
    torch.testing.assert_close(e_out, e_ref)


def test_edge_stream_unchanged_without_edge_updates():
    torch.manual_seed(0)
    c = cfg()
    c.gea.edge_unit = False
    m = layer('GINE', 'Transformer', 'GEANet', c).eval()
    batch = Batch.from_data_list(data())
    _, e_out = m(batch.x, batch.edge_attr, context(batch))
    assert e_out is batch.edge_attr


def test_gatedgcn_edges_reach_next_layer():
    """Two stacked layers: layer 2's GatedGCN reads layer 1's E_G."""
    torch.manual_seed(0)
    l1 = layer('GatedGCN', None, 'GEANet').eval()
    l2 = layer('GatedGCN', 'Transformer', 'GEANet').eval()
    batch = Batch.from_data_list(data())
    ctx = context(batch)
    x1, e1 = l1(batch.x, batch.edge_attr, ctx)
    x2, e2 = l2(x1, e1, ctx)
    _, e_M = l2.branches['local'](x1, e1, ctx)
    _, e_G = l2.branches['external'](x1, e_M, ctx)
    torch.testing.assert_close(e2, e_G)


@pytest.mark.parametrize('layer_type', [
    ('GatedGCN', 'Transformer', 'GEANet'), ('GCN', None, 'GEANet'),
    ('GIN', 'Transformer', None), ('GINE', 'Transformer', 'GEANet'),
])
def test_layer_properties(layer_type):
    torch.manual_seed(0)
    m = layer(*layer_type, dropout=0.1)
    randomise_batchnorms(m)
    check_gradients(m, data(), zero_ok=('branches.global.qkv.bias', ))
    check_permutation_equivariance(m, data())
    assert batch_dependence(m, data()) < 1e-10


def test_parity_batch_softmax_breaks_batch_independence_of_layer():
    torch.manual_seed(0)
    c = cfg()
    c.gea.parity_batch_softmax = True
    assert batch_dependence(layer('GatedGCN', 'Transformer', 'GEANet', c),
                            data()) > 1e-4


def test_geaet_zinc_size_parameter_count():
    """One GatedGCN+Transformer+GEANet layer at d = 64 (4 + 4 heads, S = 16,
    BatchNorm): the figure quoted in the README."""
    c = cfg()
    c.gt.n_heads, c.gea.n_heads, c.gea.num_slots = 4, 4, 16
    d = 64
    build = lambda name: BRANCHES[name].from_cfg(c, d)
    m = HybridLayer(d, build('GatedGCN'), build('Transformer'), build('GEANet'))
    count = lambda mod: sum(p.numel() for p in mod.parameters())
    gated = 5 * (d * d + d) + 2 * 2 * d  # node and edge BatchNorm
    transformer = 4 * (d * d + d)
    gea = 2 * (2 * 16 * 16 + d * d) + d * d
    norms, ffn = 4 * 2 * d, (d * 2 * d + 2 * d) + (2 * d * d + d)
    assert count(m.branches['local']) == gated
    assert count(m.branches['global']) == transformer
    assert count(m.branches['external']) == gea
    assert count(m) == gated + transformer + gea + norms + ffn == 68_096


@pytest.mark.parametrize('parity', [False, True])
def test_without_ffn_the_output_is_the_branch_sum(parity):
    """gt.ffn False: X' = sum of Norm(X + Drop(branch)); GEAET's code
    (gt.parity_norm_without_ffn) normalises that sum once more."""
    torch.manual_seed(0)
    m = layer('GCN', None, 'GEANet', ffn=False, norm_without_ffn=parity)
    randomise_batchnorms(m)
    m.eval()
    batch = Batch.from_data_list(data())
    ctx = context(batch)
    x, _ = m(batch.x, batch.edge_attr, ctx)
    h = sum(m.norms[k](batch.x + m.branches[k](batch.x, batch.edge_attr, ctx)[0])
            for k in ('local', 'external'))
    assert (m.ffn_norm is not None) == parity
    torch.testing.assert_close(x, m.ffn_norm(h) if parity else h)
    params = sum(p.numel() for p in m.parameters())
    plain = layer('GCN', None, 'GEANet', ffn=False)
    assert params - sum(p.numel() for p in plain.parameters()) == (2 * D if parity else 0)


def test_pre_norm_without_ffn_has_no_output_norm():
    m = layer(None, 'Transformer', None, pre_norm=True, ffn=False,
              norm_without_ffn=True)
    assert m.ffn_norm is None and m.ffn is None


@pytest.mark.parametrize('kw', [dict(), dict(pre_norm=True, norm='layer'),
                                dict(ffn=False, norm_without_ffn=True)])
def test_reset_parameters_reaches_every_parameter(kw):
    torch.manual_seed(0)
    hybrid = layer('GatedGCN', 'Transformer', 'GEANet', **kw)
    with torch.no_grad():
        for p in hybrid.parameters():
            p.fill_(0.123)
        for name, buf in hybrid.named_buffers():
            if name.endswith('running_mean'):
                buf.fill_(5.0)
    hybrid.reset_parameters()
    assert [n for n, p in hybrid.named_parameters() if bool((p == 0.123).all())] == []
    assert [n for n, b in hybrid.named_buffers()
            if n.endswith('running_mean') and bool(b.any())] == []
    out, _, _ = run(hybrid, data())
    assert bool(torch.isfinite(out).all())


@pytest.mark.parametrize('kind,per_node', [('graph_layer', 2), ('graphnorm', 3)])
def test_graph_norms_normalise_each_graph_alone(kind, per_node):
    """gt.norm graph_layer (PyG's graph-wise LayerNorm, GEAET's layer_norm)
    and graphnorm (GraphNorm, GraphGPS's): statistics per graph, so a
    graph's output does not depend on the others in its batch; per_node x d
    parameters per norm."""
    from torch_geometric.nn.norm import GraphNorm, LayerNorm
    torch.manual_seed(0)
    m = layer('GCN', 'Transformer', None, norm=kind)
    norms = list(m.norms.values()) + [m.ffn_norm]
    assert all(isinstance(n, GraphNorm if kind == 'graphnorm' else LayerNorm)
               for n in norms)
    assert all(sum(p.numel() for p in n.parameters()) == per_node * D for n in norms)
    m.eval()
    graphs_ = data()
    batch = Batch.from_data_list(graphs_)
    out, _ = m(batch.x, batch.edge_attr, context(batch))
    off = 0
    for g in graphs_:
        one = Batch.from_data_list([g])
        alone, _ = m(one.x, one.edge_attr, context(one))
        torch.testing.assert_close(alone, out[off:off + g.num_nodes])
        off += g.num_nodes
    # graph_layer: each graph's output of the FFN norm has mean beta and
    # variance gamma^2 over its nodes and channels (PyG's mode 'graph').
    if kind == 'graph_layer':
        n0 = graphs_[0].num_nodes
        x0 = out[:n0]
        torch.testing.assert_close(x0.mean(), torch.tensor(0.0, dtype=x0.dtype),
                                   atol=1e-6, rtol=0)


def test_branch_dropouts_override_the_layer_rate():
    m = layer('GCN', 'Transformer', 'GEANet', dropout=0.1,
              branch_dropout={'global': 0.3, 'external': 0.0})
    assert {k: d.p for k, d in m.dropouts.items()} == {
        'local': 0.1, 'global': 0.3, 'external': 0.0}
    assert m.ffn.dropout.p == 0.1


@pytest.mark.parametrize('kind', ['graph_layer', 'graphnorm'])
def test_graph_norms_ignore_the_padding_of_a_static_shape_batch(kind):
    """The padding nodes of a static-shape batch form their own graph: the
    real graphs' statistics (and outputs) are those of the unpadded batch."""
    from graphgps_ext.loader.pad import Capacities, Capacity, pad_batch
    torch.manual_seed(0)
    m = layer('GCN', 'Transformer', None, norm=kind)
    m.eval()
    batch = Batch.from_data_list(data())
    out, _ = m(batch.x, batch.edge_attr, context(batch))
    padded = pad_batch(Batch.from_data_list(data()),
                       Capacities([Capacity(32, 64, 5)]))
    assert padded.num_nodes == 32
    out_pad, _ = m(padded.x, padded.edge_attr, context(padded))
    torch.testing.assert_close(out_pad[:batch.num_nodes], out)
