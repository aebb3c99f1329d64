import pytest
import torch
from torch_geometric.data import Batch
from yacs.config import CfgNode as CN

from branch_checks import (batch_dependence, check_degenerate, check_gradients,
                           check_permutation_equivariance, context,
                           dense_adjacency, graphs, run)
from graphgps_ext.branches import MPNN_OPTIONS
from graphgps_ext.layer.gcn import GCN

D = 8


def data():
    return graphs([4, 6, 3], D, seed=0, isolated=1)


@pytest.mark.parametrize('out_act', [False, True])
def test_matches_dense_reference(out_act):
    torch.manual_seed(0)
    m = GCN(D, act='gelu', out_act=out_act).double().eval()
    x, e, batch = run(m, data())
    assert e is None
    A = dense_adjacency(batch) + torch.eye(batch.num_nodes, dtype=torch.float64)
    dinv = A.sum(1).pow(-0.5)
    A_hat = dinv[:, None] * A * dinv[None, :]
    W, b = m.conv.lin.weight, m.conv.bias
    ref = A_hat @ batch.x @ W.T + b
    if out_act:
        ref = torch.nn.functional.gelu(ref)
    torch.testing.assert_close(x, ref, atol=1e-5, rtol=1e-5)


def test_normalised_adjacency_is_cached_per_batch():
    m = GCN(D).double()
    batch = Batch.from_data_list(data())
    ctx = context(batch)
    m(batch.x, None, ctx)
    cached = ctx.extras['gcn_norm']
    m(batch.x, None, ctx)
    assert ctx.extras['gcn_norm'] is cached


def test_permutation_equivariance():
    torch.manual_seed(0)
    check_permutation_equivariance(GCN(D).double(), data())


def test_batch_independence():
    torch.manual_seed(0)
    assert batch_dependence(GCN(D).double(), data()) < 1e-10


def test_gradients_reach_every_parameter():
    torch.manual_seed(0)
    check_gradients(GCN(D).double(), data())


def test_degenerate_graphs_are_finite():
    check_degenerate(GCN(D).double(), D)


def test_from_cfg():
    cfg = CN()
    MPNN_OPTIONS(cfg)
    assert GCN.from_cfg(cfg, D).out_act is None
    cfg.mpnn.out_act, cfg.mpnn.act = True, 'gelu'
    assert isinstance(GCN.from_cfg(cfg, D).out_act, torch.nn.GELU)
