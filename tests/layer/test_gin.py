import pytest
import torch
from yacs.config import CfgNode as CN

from branch_checks import (batch_dependence, check_degenerate, check_gradients,
                           check_permutation_equivariance, dense_adjacency,
                           graphs, run)
from graphgps_ext.branches import MPNN_OPTIONS
from graphgps_ext.layer.gin import GIN

D = 8


def data():
    return graphs([4, 6, 3], D, seed=0, isolated=1)


def test_matches_dense_reference_graphgps_mlp():
    torch.manual_seed(0)
    m = GIN(D, train_eps=True, out_act=True, mlp='graphgps').double().eval()
    with torch.no_grad():
        m.conv.eps.fill_(0.3)
    x, e, batch = run(m, data())
    assert e is None
    A = dense_adjacency(batch)
    l1, l2 = m.conv.nn[0], m.conv.nn[2]
    h = 1.3 * batch.x + A @ batch.x
    ref = torch.relu(torch.relu(h @ l1.weight.T + l1.bias) @ l2.weight.T + l2.bias)
    torch.testing.assert_close(x, ref, atol=1e-12, rtol=1e-12)


def test_matches_dense_reference_gin_paper_mlp():
    """Linear-BN-ReLU-Linear (Xu et al.; PyG's GIN): eval-mode BatchNorm with
    its running statistics on the hidden layer."""
    torch.manual_seed(0)
    m = GIN(D, out_act=True).double()
    l1, bn, l2 = m.conv.nn[0], m.conv.nn[1], m.conv.nn[3]
    assert isinstance(bn, torch.nn.BatchNorm1d)
    with torch.no_grad():
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
    m.eval()
    x, _, batch = run(m, data())
    h = batch.x + dense_adjacency(batch) @ batch.x
    z = h @ l1.weight.T + l1.bias
    z = (z - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias
    ref = torch.relu(torch.relu(z) @ l2.weight.T + l2.bias)
    torch.testing.assert_close(x, ref, atol=1e-12, rtol=1e-12)
    assert sum(p.numel() for p in m.parameters()) == 2 * (D * D + D) + 2 * D


def test_permutation_equivariance():
    torch.manual_seed(0)
    check_permutation_equivariance(GIN(D).double(), data())


def test_batch_independence():
    torch.manual_seed(0)
    assert batch_dependence(GIN(D).double(), data()) < 1e-10


def test_gradients_reach_every_parameter():
    torch.manual_seed(0)
    check_gradients(GIN(D, train_eps=True).double(), data())


def test_degenerate_graphs_are_finite():
    # The checks include a one-node batch in training mode, which the GIN
    # paper's BatchNorm refuses (torch needs two values per channel).
    check_degenerate(GIN(D, mlp='graphgps').double(), D)


def test_unknown_mlp_is_a_clear_error():
    with pytest.raises(ValueError, match='mpnn.gin_mlp'):
        GIN(D, mlp='deep')


def test_from_cfg():
    cfg = CN()
    MPNN_OPTIONS(cfg)
    assert not isinstance(GIN.from_cfg(cfg, D).conv.eps, torch.nn.Parameter)
    assert isinstance(GIN.from_cfg(cfg, D).conv.nn[1], torch.nn.BatchNorm1d)
    cfg.mpnn.gin_train_eps, cfg.mpnn.act = True, 'gelu'
    cfg.mpnn.gin_mlp = 'graphgps'
    m = GIN.from_cfg(cfg, D)
    assert isinstance(m.conv.eps, torch.nn.Parameter)
    assert isinstance(m.conv.nn[1], torch.nn.GELU)
