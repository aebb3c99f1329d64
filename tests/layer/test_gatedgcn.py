import pytest
import torch
from torch_geometric.data import Batch
from yacs.config import CfgNode as CN

from branch_checks import (batch_dependence, check_degenerate, check_gradients,
                           check_permutation_equivariance, context, graphs,
                           randomise_batchnorms, run)
from graphgps_ext.config.gt import gt_cfg
from graphgps_ext.branches import MPNN_OPTIONS
from graphgps_ext.layer.gatedgcn import GatedGCN

D = 8


def data():
    return graphs([4, 6, 3], D, seed=0, isolated=1)


def lin(m, x):
    return x @ m.weight.T + m.bias


def reference(m: GatedGCN, batch):
    """GraphGPS's GatedGCNLayer on dense [N, N] tensors (one gate per node
    pair and channel, masked by the adjacency), without its node dropout and
    residual (the hybrid layer's, checked in test_hybrid_layer_is_gps_layer)."""
    N = batch.num_nodes
    src, dst = batch.edge_index
    A = torch.zeros(N, N, dtype=batch.x.dtype)
    A[dst, src] = 1.0
    Edense = torch.zeros(N, N, D, dtype=batch.x.dtype)
    Edense[dst, src] = batch.edge_attr
    X = batch.x
    # e_hat[i, j] = C e_ij + D h_i + E h_j for the edge j -> i.
    e_hat = lin(m.C, Edense) + lin(m.D, X)[:, None, :] + lin(m.E, X)[None, :, :]
    sigma = torch.sigmoid(e_hat) * A[..., None]
    if m.gate is not None:
        P = batch.pe_equiv
        r = (P[:, None, :] - P[None, :, :]).pow(2).sum(-1, keepdim=True)
        sigma = sigma * m.gate.mlp(r)
    num = (sigma * lin(m.B, X)[None, :, :]).sum(1)
    den = sigma.sum(1)
    x_out = torch.relu(m.node_norm(lin(m.A, X) + num / (den + m.eps)))
    e_out = batch.edge_attr + torch.relu(m.edge_norm(e_hat[dst, src]))
    return x_out, e_out


@pytest.mark.parametrize('pe,node_norm', [(False, 'batch'), (True, 'batch'),
                                          (False, 'layer'), (False, 'none')])
def test_matches_dense_reference(pe, node_norm):
    torch.manual_seed(0)
    m = GatedGCN(D, node_norm=node_norm, equivstable_pe=pe).double()
    randomise_batchnorms(m)
    m.eval()
    x, e, batch = run(m, data())
    x_ref, e_ref = reference(m, batch)
    torch.testing.assert_close(x, x_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e, e_ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize('pe', [False, True])
def test_permutation_equivariance(pe):
    torch.manual_seed(0)
    check_permutation_equivariance(GatedGCN(D, equivstable_pe=pe).double(), data())


@pytest.mark.parametrize('pe', [False, True])
def test_batch_independence(pe):
    torch.manual_seed(0)
    assert batch_dependence(GatedGCN(D, equivstable_pe=pe).double(), data()) < 1e-10


@pytest.mark.parametrize('pe', [False, True])
def test_gradients_reach_every_parameter(pe):
    torch.manual_seed(0)
    check_gradients(GatedGCN(D, dropout=0.1, equivstable_pe=pe).double(), data())


@pytest.mark.parametrize('norm', ['batch', 'layer', 'none'])
def test_degenerate_graphs_are_finite(norm):
    # The checks include a one-node batch in training mode, which a node
    # BatchNorm refuses (torch needs two values per channel, as any BatchNorm
    # of the hybrid layer): the node norm is a LayerNorm there.
    node_norm = 'layer' if norm == 'batch' else norm
    check_degenerate(GatedGCN(D, node_norm=node_norm, edge_norm=norm,
                              equivstable_pe=True).double(), D)


def test_edge_residual_switch():
    torch.manual_seed(0)
    m = GatedGCN(D, edge_norm='none').double().eval()
    _, e_res, batch = run(m, data())
    m.edge_residual = False
    _, e_plain, _ = run(m, data())
    torch.testing.assert_close(e_res - e_plain, batch.edge_attr)


def test_clear_errors():
    batch = Batch.from_data_list(graphs([3], D, dtype=torch.float32))
    with pytest.raises(ValueError, match='DummyEdge'):
        GatedGCN(D)(batch.x, None, context(batch))
    ctx = context(batch)
    ctx.extras.clear()
    with pytest.raises(ValueError, match="pe_equiv"):
        GatedGCN(D, equivstable_pe=True)(batch.x, batch.edge_attr, ctx)


def test_from_cfg():
    cfg = CN()
    gt_cfg(cfg)
    MPNN_OPTIONS(cfg)
    cfg.gt.dropout = 0.2
    m = GatedGCN.from_cfg(cfg, D)
    assert m.gate is None and m.dropout.p == 0.2
    assert isinstance(m.edge_norm, torch.nn.BatchNorm1d)
    # GraphGPS GatedGCNLayer: five d x d linears, node BN and edge BN.
    assert sum(p.numel() for p in m.parameters()) == 5 * (D * D + D) + 2 * 2 * D
    cfg.mpnn.equivstable_pe, cfg.mpnn.edge_norm = True, 'layer'
    cfg.mpnn.node_norm = 'none'
    m = GatedGCN.from_cfg(cfg, D)
    assert m.gate is not None and isinstance(m.edge_norm, torch.nn.LayerNorm)
    assert isinstance(m.node_norm, torch.nn.Identity)


def test_train_mode_node_batchnorm_uses_batch_statistics():
    """In training the node BatchNorm normalises A h + aggr over the batch's
    nodes (each channel mean 0, variance 1 before the activation)."""
    torch.manual_seed(0)
    m = GatedGCN(D, act='relu', edge_norm='none').double().train()
    seen = {}
    m.node_norm.register_forward_hook(lambda mod, i, o: seen.update(out=o))
    run(m, data())
    out = seen['out']
    torch.testing.assert_close(out.mean(0), torch.zeros(D, dtype=out.dtype),
                               atol=1e-12, rtol=0)
    torch.testing.assert_close(out.var(0, unbiased=False),
                               torch.ones(D, dtype=out.dtype), atol=1e-4, rtol=0)


def gps_layer_reference(layer, batch):
    """GraphGPS ``GPSLayer`` with a ``CustomGatedGCN`` local model and no global
    model, eval mode, written out: GatedGCNLayer (node BN, ReLU, residual),
    ``norm1_local``, then ``norm2(h + FFN(h))``."""
    g = layer.branches['local']
    x, e = reference(g, batch)  # relu(bn_node_x(A x + aggr)), e_in + relu(bn(e))
    h = layer.norms['local'](batch.x + x)
    ffn = layer.ffn
    h = layer.ffn_norm(h + lin(ffn.lin2, torch.relu(lin(ffn.lin1, h))))
    return h, e


def test_hybrid_layer_is_gps_layer():
    """HybridLayer(GatedGCN) equals GraphGPS's GPSLayer around its
    GatedGCNLayer: node norm before the activation inside the branch, one
    residual and one norm1_local outside it."""
    from graphgps_ext.layer.hybrid import HybridLayer
    torch.manual_seed(0)
    layer = HybridLayer(D, local=GatedGCN(D), dropout=0.2).double()
    randomise_batchnorms(layer)
    layer.eval()
    batch = Batch.from_data_list(data())
    x, e = layer(batch.x, batch.edge_attr, context(batch))
    x_ref, e_ref = gps_layer_reference(layer, batch)
    torch.testing.assert_close(x, x_ref, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(e, e_ref, atol=1e-12, rtol=1e-12)


def test_hybrid_layer_drops_the_node_update_once():
    """Training mode, no norms, no residual, no FFN: the node output is
    Drop(act(A x + aggr)), each entry 0 or the update scaled by 1/(1-p)
    (a second dropout would give 1/(1-p)^2)."""
    from graphgps_ext.layer.hybrid import HybridLayer
    torch.manual_seed(0)
    g = GatedGCN(D, node_norm='none', edge_norm='none').double()
    layer = HybridLayer(D, local=g, norm='none', residual=False, dropout=0.5,
                        ffn=False).double().train()
    batch = Batch.from_data_list(data())
    x, _ = layer(batch.x, batch.edge_attr, context(batch))
    full, _ = g.eval()(batch.x, batch.edge_attr, context(batch))
    ratio = x[full > 1e-6] / full[full > 1e-6]
    assert set(ratio.round(decimals=9).unique().tolist()) == {0.0, 2.0}
