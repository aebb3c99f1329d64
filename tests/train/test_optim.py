"""Optimisers and per-epoch learning-rate schedules."""
import math

import pytest
import torch

from graphgps_ext.train.optim import (build_optimizer, build_scheduler,
                                      cosine_with_warmup, current_lr)


def lrs(cfg, epochs):
    opt = build_optimizer(cfg, [torch.nn.Parameter(torch.zeros(1))])
    sched = build_scheduler(cfg, opt)
    out = []
    for _ in range(epochs):
        out.append(current_lr(opt))
        opt.step()
        if sched is not None:
            sched.step()
    return out


@pytest.mark.parametrize('name,cls', [('adam', torch.optim.Adam),
                                      ('adamW', torch.optim.AdamW),
                                      ('sgd', torch.optim.SGD)])
def test_optimizers(tiny_cfg, name, cls):
    tiny_cfg.optim.optimizer = name
    tiny_cfg.optim.weight_decay = 0.1
    opt = build_optimizer(tiny_cfg, [torch.nn.Parameter(torch.zeros(1))])
    assert type(opt) is cls
    assert opt.param_groups[0]['weight_decay'] == 0.1


def test_cosine_with_warmup_factor():
    f = cosine_with_warmup(4, 14)
    assert f(0) == 1e-6 and f(2) == 0.5 and f(4) == 1.0
    assert f(9) == pytest.approx(0.5)
    assert f(14) == pytest.approx(0.0)


def test_schedules(tiny_cfg):
    tiny_cfg.optim.base_lr = 1.0
    tiny_cfg.optim.max_epoch = 10
    tiny_cfg.optim.scheduler = 'none'
    assert lrs(tiny_cfg, 3) == [1.0, 1.0, 1.0]
    tiny_cfg.optim.scheduler = 'steps'
    tiny_cfg.optim.steps = [2]
    tiny_cfg.optim.lr_decay = 0.1
    assert lrs(tiny_cfg, 4) == pytest.approx([1.0, 1.0, 0.1, 0.1])
    tiny_cfg.optim.scheduler = 'cos'
    assert lrs(tiny_cfg, 6)[5] == pytest.approx(0.5 * (1 + math.cos(math.pi / 2)))
    tiny_cfg.optim.scheduler = 'cosine_with_warmup'
    tiny_cfg.optim.num_warmup_epochs = 2
    assert lrs(tiny_cfg, 3) == pytest.approx([1e-6, 0.5, 1.0])
