"""Flat parameters (optim.flat_params): the same updates as per-parameter
optimisers, parameters and gradients as views of the buffers, checkpoints
in the per-parameter layout."""
import copy

import pytest
import torch
from torch import nn

from graphgps_ext.config.speed import speed_cfg
from graphgps_ext.train.flat import flatten_parameters
from graphgps_ext.train.optim import (build_optimizer, load_optimizer_state,
                                      stepped_params)
from graphgps_ext.train.speed import clip_grad_norm_


def _net():
    torch.manual_seed(0)
    # (no bias right before the norm: its gradient is rounding noise, which
    # Adam's normalisation would blow up differently on either path)
    return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.BatchNorm1d(8),
                         nn.Linear(8, 3))


def _steps(net, opt, cfg, n, start=0, clip=0.5):
    x = torch.randn(16, 5, generator=torch.Generator().manual_seed(1))
    for step in range(start, start + n):
        opt.zero_grad(set_to_none=True)
        (net(x) * (1 + step)).pow(2).mean().backward()
        clip_grad_norm_(stepped_params(opt), clip, cfg)
        opt.step()
    return torch.cat([p.detach().view(-1) for p in net.parameters()])


@pytest.fixture
def cfg(tiny_cfg):
    speed_cfg(tiny_cfg)
    tiny_cfg.optim.weight_decay = 0.01
    tiny_cfg.optim.momentum = 0.9
    return tiny_cfg


@pytest.mark.parametrize('name', ['adam', 'adamW', 'sgd'])
@pytest.mark.parametrize('fused', [True, False])
def test_flat_matches_per_parameter_update(cfg, name, fused):
    cfg.optim.optimizer, cfg.optim.fused = name, fused
    net = _net()
    out = {}
    for flat in (True, False):
        m = copy.deepcopy(net)
        out[flat] = _steps(m, build_optimizer(cfg, m.parameters(), flat=flat), cfg, 5)
    assert not torch.equal(out[True], torch.cat([p.view(-1) for p in net.parameters()]))
    torch.testing.assert_close(out[True], out[False], rtol=1e-6, atol=1e-7)


def test_parameters_and_grads_are_views_of_the_buffers():
    net = _net()
    before = [p.detach().clone() for p in net.parameters()]
    frozen = net[2].weight
    frozen.requires_grad_(False)
    params = [p for p in net.parameters() if p.requires_grad]
    (flat, members), = flatten_parameters(params)
    assert flat.numel() == sum(p.numel() for p in params)
    for p, b in zip(net.parameters(), before):
        assert torch.equal(p, b)  # values kept
    for (i, offset, n, shape), p in zip(members, params):
        assert p.data_ptr() == flat.data_ptr() + 4 * offset and p.shape == shape
        assert p.grad.data_ptr() == flat.grad.data_ptr() + 4 * offset
    net(torch.randn(4, 5)).sum().backward()
    assert flat.grad.abs().sum() > 0  # autograd accumulated into the buffer
    assert frozen.grad is None
    with torch.no_grad():
        flat.add_(1.0)
    assert torch.equal(params[0], before[0] + 1.0)


def test_zero_grad_keeps_views_and_clipping_is_global(cfg):
    cfg.optim.optimizer = 'adamW'
    net = _net()
    opt = build_optimizer(cfg, net.parameters())
    buffer, = stepped_params(opt)
    views = [p.grad for p in net.parameters()]
    net(torch.randn(4, 5)).pow(2).sum().backward()
    total = torch.linalg.vector_norm(torch.cat([g.view(-1) for g in views]))
    assert float(clip_grad_norm_(stepped_params(opt), 1e-3, cfg)) == \
        pytest.approx(float(total), rel=1e-6)
    assert float(torch.linalg.vector_norm(buffer.grad)) == pytest.approx(1e-3, rel=1e-4)
    opt.zero_grad(set_to_none=True)
    assert all(p.grad is v for p, v in zip(net.parameters(), views))
    assert float(buffer.grad.abs().sum()) == 0.0


@pytest.mark.parametrize('name', ['adamW', 'sgd'])
def test_state_dict_layout_and_resume_across_flat_and_plain(cfg, name):
    """A flat optimiser writes a per-parameter state dict (the plain one's),
    and a run continues across flat -> plain -> flat with the uninterrupted
    plain run's update."""
    cfg.optim.optimizer = name
    net = _net()
    ref_net, plain_net = copy.deepcopy(net), copy.deepcopy(net)
    ref = _steps(ref_net, build_optimizer(cfg, ref_net.parameters(), flat=False), cfg, 6)
    plain = build_optimizer(cfg, plain_net.parameters(), flat=False)
    _steps(plain_net, plain, cfg, 2)
    opt = build_optimizer(cfg, net.parameters(), flat=True)
    _steps(net, opt, cfg, 2)
    a, b = opt.state_dict(), plain.state_dict()
    assert a['param_groups'][0]['params'] == b['param_groups'][0]['params']
    assert a['state'].keys() == b['state'].keys()
    for i in b['state']:
        for key, value in b['state'][i].items():
            if isinstance(value, torch.Tensor):
                torch.testing.assert_close(a['state'][i][key].float(), value.float(),
                                           rtol=1e-6, atol=1e-8)
    for flat, start in ((False, 2), (True, 4)):
        state = copy.deepcopy(opt.state_dict())
        opt = build_optimizer(cfg, net.parameters(), flat=flat)
        load_optimizer_state(opt, state)
        out = _steps(net, opt, cfg, 2, start)
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-7)


def test_state_of_another_model_is_refused(cfg):
    cfg.optim.optimizer = 'adamW'
    opt = build_optimizer(cfg, _net().parameters(), flat=True)
    other = build_optimizer(cfg, nn.Linear(2, 2).parameters(), flat=False)
    with pytest.raises(ValueError, match='cannot load into this model'):
        opt.load_state_dict(other.state_dict())


def test_param_groups_keep_the_per_parameter_optimiser(cfg):
    net = _net()
    opt = build_optimizer(cfg, [{'params': net[0].parameters()},
                                {'params': net[3].parameters(), 'lr': 0.5}])
    assert type(opt) is torch.optim.Adam
    assert [len(g['params']) for g in opt.param_groups] == [2, 2]
    assert len(stepped_params(opt)) == 4
