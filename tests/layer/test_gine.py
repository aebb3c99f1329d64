import pytest
import torch
from torch_geometric.data import Batch
from yacs.config import CfgNode as CN

from branch_checks import (batch_dependence, check_degenerate, check_gradients,
                           check_permutation_equivariance, context, graphs, run)
from graphgps_ext.branches import MPNN_OPTIONS
from graphgps_ext.layer.gine import GINE

D = 8


def data():
    return graphs([4, 6, 3], D, seed=0, isolated=1)


def reference(m: GINE, batch, eps=0.0):
    """x_i' = MLP((1 + eps) x_i + sum_{j->i} ReLU(x_j + e_ji) [* r_ji]),
    edge by edge."""
    agg = (1 + eps) * batch.x.clone()
    for k in range(batch.edge_index.size(1)):
        j, i = batch.edge_index[:, k].tolist()
        msg = torch.relu(batch.x[j] + batch.edge_attr[k])
        if m.gate is not None:
            r = (batch.pe_equiv[i] - batch.pe_equiv[j]).pow(2).sum().view(1)
            g1, g2 = m.gate.mlp[0], m.gate.mlp[2]
            msg = msg * torch.sigmoid(torch.relu(r @ g1.weight.T + g1.bias)
                                      @ g2.weight.T + g2.bias)
        agg[i] = agg[i] + msg
    l1, l2 = m.conv.nn[0], m.conv.nn[2]
    return torch.relu(agg @ l1.weight.T + l1.bias) @ l2.weight.T + l2.bias


@pytest.mark.parametrize('pe', [False, True])
def test_matches_dense_reference(pe):
    torch.manual_seed(0)
    m = GINE(D, train_eps=True, equivstable_pe=pe, out_act=True).double().eval()
    with torch.no_grad():
        m.conv.eps.fill_(-0.2)
    x, e, batch = run(m, data())
    assert e is None
    torch.testing.assert_close(x, reference(m, batch, eps=-0.2).relu(), atol=1e-5,
                               rtol=1e-5)


@pytest.mark.parametrize('pe', [False, True])
def test_permutation_equivariance(pe):
    torch.manual_seed(0)
    check_permutation_equivariance(GINE(D, equivstable_pe=pe).double(), data())


@pytest.mark.parametrize('pe', [False, True])
def test_batch_independence(pe):
    torch.manual_seed(0)
    assert batch_dependence(GINE(D, equivstable_pe=pe).double(), data()) < 1e-10


@pytest.mark.parametrize('pe', [False, True])
def test_gradients_reach_every_parameter(pe):
    torch.manual_seed(0)
    check_gradients(GINE(D, train_eps=True, equivstable_pe=pe).double(), data())


def test_degenerate_graphs_are_finite():
    check_degenerate(GINE(D).double(), D)
    check_degenerate(GINE(D, equivstable_pe=True).double(), D)


def test_clear_errors():
    batch = Batch.from_data_list(graphs([3], D, dtype=torch.float32))
    with pytest.raises(ValueError, match='DummyEdge'):
        GINE(D)(batch.x, None, context(batch))
    ctx = context(batch)
    ctx.extras.clear()
    with pytest.raises(ValueError, match='EquivStableLapPE'):
        GINE(D, equivstable_pe=True)(batch.x, batch.edge_attr, ctx)


def test_from_cfg():
    cfg = CN()
    MPNN_OPTIONS(cfg)
    assert GINE.from_cfg(cfg, D).gate is None
    cfg.mpnn.equivstable_pe = True
    m = GINE.from_cfg(cfg, D)
    assert m.gate is not None
    # GraphGPS's GINEConvESLapPE: GINE + gate MLP 1 -> d -> 1.
    assert sum(p.numel() for p in m.parameters()) == \
        2 * (D * D + D) + (D + D) + (D + 1)
