import pytest
import torch
from torch_geometric.data import Batch
from yacs.config import CfgNode as CN

from branch_checks import (batch_dependence, check_degenerate, check_gradients,
                           check_permutation_equivariance, context, graphs, run)
from graphgps_ext.config.gt import gt_cfg
from graphgps_ext.config.mpnn import mpnn_cfg
from graphgps_ext.layer.gatedgcn import GatedGCN

D = 8


def data():
    return graphs([4, 6, 3], D, seed=0, isolated=1)


def lin(m, x):
    return x @ m.weight.T + m.bias


def reference(m: GatedGCN, batch):
    """Bresson & Laurent / GraphGPS GatedGCN on dense [N, N] tensors."""
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
    x_out = torch.relu(lin(m.A, X) + num / (den + m.eps))
    e_out = batch.edge_attr + torch.relu(m.edge_norm(e_hat[dst, src]))
    return x_out, e_out


@pytest.mark.parametrize('pe', [False, True])
def test_matches_dense_reference(pe):
    torch.manual_seed(0)
    m = GatedGCN(D, equivstable_pe=pe).double()
    # Non-trivial running statistics for the eval-mode edge BatchNorm.
    with torch.no_grad():
        m.edge_norm.running_mean.uniform_(-1, 1)
        m.edge_norm.running_var.uniform_(0.5, 2)
        m.edge_norm.weight.uniform_(0.5, 2)
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
    check_degenerate(GatedGCN(D, edge_norm=norm, equivstable_pe=True).double(), D)


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
    mpnn_cfg(cfg)
    cfg.gt.dropout = 0.2
    m = GatedGCN.from_cfg(cfg, D)
    assert m.gate is None and m.dropout.p == 0.2
    assert isinstance(m.edge_norm, torch.nn.BatchNorm1d)
    # GraphGPS GatedGCNLayer: five d x d linears + edge BN (node BN is the
    # hybrid layer's).
    assert sum(p.numel() for p in m.parameters()) == 5 * (D * D + D) + 2 * D
    cfg.mpnn.equivstable_pe, cfg.mpnn.edge_norm = True, 'layer'
    m = GatedGCN.from_cfg(cfg, D)
    assert m.gate is not None and isinstance(m.edge_norm, torch.nn.LayerNorm)
