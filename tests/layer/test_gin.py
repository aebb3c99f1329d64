import torch
from yacs.config import CfgNode as CN

from branch_checks import (batch_dependence, check_degenerate, check_gradients,
                           check_permutation_equivariance, dense_adjacency,
                           graphs, run)
from graphgps_ext.config.mpnn import mpnn_cfg
from graphgps_ext.layer.gin import GIN

D = 8


def data():
    return graphs([4, 6, 3], D, seed=0, isolated=1)


def test_matches_dense_reference():
    torch.manual_seed(0)
    m = GIN(D, train_eps=True, out_act=True).double().eval()
    with torch.no_grad():
        m.conv.eps.fill_(0.3)
    x, e, batch = run(m, data())
    assert e is None
    A = dense_adjacency(batch)
    l1, l2 = m.conv.nn[0], m.conv.nn[2]
    h = 1.3 * batch.x + A @ batch.x
    ref = torch.relu(torch.relu(h @ l1.weight.T + l1.bias) @ l2.weight.T + l2.bias)
    torch.testing.assert_close(x, ref, atol=1e-5, rtol=1e-5)


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
    check_degenerate(GIN(D).double(), D)


def test_from_cfg():
    cfg = CN()
    mpnn_cfg(cfg)
    assert not isinstance(GIN.from_cfg(cfg, D).conv.eps, torch.nn.Parameter)
    cfg.mpnn.gin_train_eps, cfg.mpnn.act = True, 'gelu'
    m = GIN.from_cfg(cfg, D)
    assert isinstance(m.conv.eps, torch.nn.Parameter)
    assert isinstance(m.conv.nn[1], torch.nn.GELU)
