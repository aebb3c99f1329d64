import pytest
import torch

from graphgps_ext.head.base import (HeadMLP, align_target, mlp_kwargs,
                                    pool_name, resolve_pool)


def test_mlp_widths_halving_and_constant():
    mlp = HeadMLP(64, 1, num_layers=3, width='halving')
    assert [(l.in_features, l.out_features) for l in mlp.lins] == \
        [(64, 32), (32, 16), (16, 1)]
    # GraphGPS san_graph parameter count at d = 64 (2,625).
    assert sum(p.numel() for p in mlp.parameters()) == 2080 + 528 + 17
    mlp = HeadMLP(8, 3, num_layers=3, width='constant', bias=False)
    assert [(l.in_features, l.out_features) for l in mlp.lins] == \
        [(8, 8), (8, 8), (8, 3)]
    assert all(l.bias is None for l in mlp.lins)


def test_mlp_forward_matches_manual():
    torch.manual_seed(0)
    mlp = HeadMLP(6, 2, num_layers=2, width='halving', act='gelu')
    x = torch.randn(5, 6)
    l0, l1 = mlp.lins
    ref = l1(torch.nn.functional.gelu(l0(x)))
    assert torch.allclose(mlp(x), ref, atol=1e-6)


def test_input_dropout_acts_before_the_first_layer():
    """input_dropout (GEAET's mlp_graph: Dropout before every Linear): the
    input is dropped out in training; eval mode is the plain MLP."""
    torch.manual_seed(0)
    mlp = HeadMLP(4, 4, num_layers=1, input_dropout=0.5, bias=False)
    with torch.no_grad():
        mlp.lins[0].weight.copy_(torch.eye(4))
    x = torch.ones(200, 4)
    mlp.train()
    out = mlp(x)
    assert set(out.unique().tolist()) == {0.0, 2.0}
    mlp.eval()
    assert torch.equal(mlp(x), x)


def test_mlp_errors():
    with pytest.raises(ValueError, match='at least one'):
        HeadMLP(8, 1, num_layers=0)
    with pytest.raises(ValueError, match='shrink width'):
        HeadMLP(4, 1, num_layers=4, width='halving')
    with pytest.raises(ValueError, match='head.width'):
        HeadMLP(4, 1, width='pyramid')
    with pytest.raises(ValueError, match='head.pool'):
        resolve_pool('sum')


def test_cfg_resolution(cfg):
    kw = mlp_kwargs(cfg, 'graph')
    assert kw['num_layers'] == 2 and kw['width'] == 'halving'
    assert mlp_kwargs(cfg, 'node')['width'] == 'constant'
    cfg.gnn.layers_post_mp = 0  # GraphGym: < 1 means 1
    assert mlp_kwargs(cfg, 'graph')['num_layers'] == 1
    cfg.head.layers = 3
    cfg.head.width = 'constant'
    assert mlp_kwargs(cfg, 'graph') == dict(num_layers=3, width='constant',
                                            act='relu', dropout=0.0, bias=True,
                                            input_dropout=0.0)
    assert pool_name(cfg) == 'add'  # model.graph_pooling
    cfg.head.pool = 'max'
    assert pool_name(cfg) == 'max'


def test_align_target_shapes():
    assert align_target(torch.randn(4), 4, 'regression', 1).shape == (4, 1)
    assert align_target(torch.randn(4, 3), 4, 'regression', 3).shape == (4, 3)
    y = torch.tensor([[2], [0], [1]])
    assert torch.equal(align_target(y, 3, 'classification', 5),
                       torch.tensor([2, 0, 1]))
    assert align_target(torch.ones(3), 3, 'classification', 1).shape == (3, 1)
    assert align_target(torch.ones(3, 10), 3, 'classification_multilabel',
                        10).shape == (3, 10)
    with pytest.raises(ValueError, match='num_outputs'):
        align_target(torch.randn(4, 2), 4, 'regression', 3)
    with pytest.raises(ValueError, match='one class index'):
        align_target(torch.zeros(4, 2, dtype=torch.long), 4, 'classification', 3)
    with pytest.raises(ValueError, match='no target'):
        align_target(None, 4, 'regression', 1)
