"""Optimisers (plain and fused, ``optim.fused``) and per-epoch
learning-rate schedules."""
import copy
import math

import pytest
import torch

from graphgps_ext.config.speed import speed_cfg
from graphgps_ext.train.optim import (build_optimizer, build_scheduler,
                                      compiled_kwargs, cosine_with_warmup,
                                      current_lr, load_optimizer_state,
                                      plain_lrs, set_lr, transformer_warmup)
from graphgps_ext.train.speed import clip_grad_norm_


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
    opt = build_optimizer(tiny_cfg, [torch.nn.Parameter(torch.zeros(1))], flat=False)
    assert type(opt) is cls
    flat = build_optimizer(tiny_cfg, [torch.nn.Parameter(torch.zeros(1))], flat=True)
    assert isinstance(flat, cls) and type(flat) is not cls
    assert opt.param_groups[0]['weight_decay'] == 0.1


def test_cosine_with_warmup_factor():
    f = cosine_with_warmup(4, 14)
    assert f(0) == 1e-6 and f(2) == 0.5 and f(4) == 1.0
    assert f(9) == pytest.approx(0.5)
    assert f(14) == pytest.approx(0.0)


def test_transformer_warmup_factor():
    """Vaswani et al.'s min(s / W, sqrt(W / s)) at s = epoch + 1."""
    f = transformer_warmup(4)
    assert [f(t) for t in range(4)] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert f(15) == pytest.approx(0.5)  # sqrt(4 / 16)
    assert f(99) == pytest.approx(0.2)  # sqrt(4 / 100)
    assert transformer_warmup(0)(0) == 1.0


def test_transformer_warmup_resumes_exactly(tiny_cfg):
    """A scheduler restored from a state dict after k epochs continues with
    the learning rates of the uninterrupted run."""
    tiny_cfg.optim.base_lr = 2.0
    tiny_cfg.optim.scheduler = 'transformer_warmup'
    tiny_cfg.optim.num_warmup_epochs = 3
    full = lrs(tiny_cfg, 8)
    assert full[:3] == pytest.approx([2 / 3, 4 / 3, 2.0])
    assert full[7] == pytest.approx(2.0 * math.sqrt(3 / 8))
    opt = build_optimizer(tiny_cfg, [torch.nn.Parameter(torch.zeros(1))])
    sched = build_scheduler(tiny_cfg, opt)
    for _ in range(5):
        opt.step()
        sched.step()
    state = copy.deepcopy((opt.state_dict(), sched.state_dict()))
    opt2 = build_optimizer(tiny_cfg, [torch.nn.Parameter(torch.zeros(1))])
    sched2 = build_scheduler(tiny_cfg, opt2)
    load_optimizer_state(opt2, state[0])
    sched2.load_state_dict(state[1])
    resumed = []
    for _ in range(3):
        resumed.append(current_lr(opt2))
        opt2.step()
        sched2.step()
    assert resumed == pytest.approx(full[5:])


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


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 3))


def _steps(net, opt, cfg, n, start=0, update=None):
    """``n`` clipped steps on fixed data (step ``start`` .. ``start + n``);
    ``update``: the step's update (a :class:`~graphgps_ext.train.speed.Update`)
    instead of clipping and ``opt.step()``."""
    x = torch.randn(16, 5, generator=torch.Generator().manual_seed(1))
    for step in range(start, start + n):
        opt.zero_grad(set_to_none=True)
        (net(x) * (1 + step)).pow(2).mean().backward()
        if update is not None:
            update()
            continue
        clip_grad_norm_(net.parameters(), 0.5, cfg)
        opt.step()
    return torch.cat([p.detach().view(-1) for p in net.parameters()])


def _compiled_update(opt, cfg, monkeypatch):
    """The compiled update (clipping at 0.5, the optimiser step) through
    ``aot_eager``: the compiled update's optimiser is meant to run
    compiled (``capturable`` on the CPU too)."""
    from graphgps_ext.train import speed
    monkeypatch.setattr(speed, 'BACKEND', 'aot_eager')
    cfg.optim.clip_grad_norm = True
    cfg.optim.clip_grad_norm_value = 0.5
    torch._dynamo.reset()
    return speed.Update(opt, cfg, compiled=True)


@pytest.mark.parametrize('name', ['adam', 'adamW'])
def test_fused_matches_the_plain_update(tiny_cfg, name):
    """Several clipped steps (so that the moment estimates count too)."""
    speed_cfg(tiny_cfg)
    tiny_cfg.optim.optimizer = name
    tiny_cfg.optim.weight_decay = 0.01
    net = _net()
    out = {}
    for fused in (True, False):
        tiny_cfg.optim.fused = fused
        m = copy.deepcopy(net)
        opt = build_optimizer(tiny_cfg, m.parameters())
        assert bool(opt.defaults['fused']) is fused
        out[fused] = _steps(m, opt, tiny_cfg, 5)
    assert not torch.equal(out[True], torch.cat([p.view(-1) for p in net.parameters()]))
    torch.testing.assert_close(out[True], out[False], rtol=1e-6, atol=1e-7)


def test_fused_keeps_lr_scale_and_param_groups(tiny_cfg):
    speed_cfg(tiny_cfg)
    net = _net()
    opt = build_optimizer(tiny_cfg, [{'params': net[0].parameters()},
                                     {'params': net[2].parameters(), 'lr': 0.5}],
                          lr_scale=4.0)
    assert opt.defaults['fused'] is True
    assert [g['lr'] for g in opt.param_groups] == [0.04, 0.5]


def test_fused_only_where_it_applies(tiny_cfg):
    speed_cfg(tiny_cfg)
    ints = torch.nn.Parameter(torch.zeros(2, dtype=torch.long), requires_grad=False)
    opt = build_optimizer(tiny_cfg, [torch.nn.Parameter(torch.zeros(1)), ints])
    assert not opt.defaults['fused']  # a non-floating parameter: plain loop
    tiny_cfg.optim.optimizer = 'sgd'
    assert not build_optimizer(tiny_cfg, _net().parameters()).defaults['fused']


def test_resume_across_fused_and_plain(tiny_cfg):
    """A plain optimiser's state continues in a fused one (and back) with
    the uninterrupted plain run's update."""
    speed_cfg(tiny_cfg)
    tiny_cfg.optim.fused = False
    net = _net()
    ref_net = copy.deepcopy(net)
    ref = _steps(ref_net, build_optimizer(tiny_cfg, ref_net.parameters()),
                 tiny_cfg, 6)
    opt = build_optimizer(tiny_cfg, net.parameters())
    _steps(net, opt, tiny_cfg, 2)
    for fused, start in ((True, 2), (False, 4)):
        state = copy.deepcopy(opt.state_dict())
        tiny_cfg.optim.fused = fused
        opt = build_optimizer(tiny_cfg, net.parameters())
        load_optimizer_state(opt, state)
        assert all(bool(g['fused']) is fused for g in opt.param_groups)
        out = _steps(net, opt, tiny_cfg, 2, start)
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize('flat', [False, True])
def test_compiled_update_optimiser_is_foreach(tiny_cfg, flat, monkeypatch):
    """``train.compile_step``: Adam/AdamW with the ``foreach``
    implementation, ``capturable`` (step counters and the learning rate
    tensors on the parameters' device), the same update as the fused one;
    SGD keeps its own."""
    speed_cfg(tiny_cfg)
    tiny_cfg.optim.optimizer = 'adamW'
    tiny_cfg.optim.weight_decay = 0.01
    net = _net()
    assert compiled_kwargs(tiny_cfg, list(net.parameters())) == {
        'foreach': True, 'capturable': True}
    out = {}
    for compiled in (False, True):
        m = copy.deepcopy(net)
        opt = build_optimizer(tiny_cfg, m.parameters(), flat=flat,
                              compiled=compiled)
        assert bool(opt.defaults['fused']) is not compiled
        assert bool(opt.defaults['foreach']) is compiled
        assert isinstance(opt.param_groups[0]['lr'], torch.Tensor) is compiled
        update = (_compiled_update(opt, tiny_cfg, monkeypatch) if compiled
                  else None)
        out[compiled] = _steps(m, opt, tiny_cfg, 5, update=update)
    # (capturable Adam computes its bias corrections from tensors, in
    # another order: float32 rounding, a few 1e-7 after five steps)
    torch.testing.assert_close(out[True], out[False], rtol=1e-6, atol=1e-6)
    tiny_cfg.optim.optimizer = 'sgd'
    assert compiled_kwargs(tiny_cfg, list(net.parameters())) == {}


def test_resume_from_fused_into_the_compiled_update_optimiser(tiny_cfg,
                                                              monkeypatch):
    """A fused optimiser's checkpoint continues in the compiled update's
    (foreach, capturable) optimiser with the uninterrupted run's update."""
    speed_cfg(tiny_cfg)
    net = _net()
    ref_net = copy.deepcopy(net)
    ref = _steps(ref_net, build_optimizer(tiny_cfg, ref_net.parameters()),
                 tiny_cfg, 4)
    opt = build_optimizer(tiny_cfg, net.parameters())
    _steps(net, opt, tiny_cfg, 2)
    state = copy.deepcopy(opt.state_dict())
    opt = build_optimizer(tiny_cfg, net.parameters(), compiled=True)
    lr = opt.param_groups[0]['lr']
    load_optimizer_state(opt, state)
    assert all(g['foreach'] and not g['fused'] and g['capturable']
               for g in opt.param_groups)
    assert opt.param_groups[0]['lr'] is lr  # the same tensor, refilled
    out = _steps(net, opt, tiny_cfg, 2, 2,
                 update=_compiled_update(opt, tiny_cfg, monkeypatch))
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize('scheduler', ['cosine_with_warmup', 'steps',
                                       'reduce_on_plateau'])
def test_compiled_update_lr_stays_one_tensor(tiny_cfg, scheduler):
    """The compiled update's learning rate is one tensor that every change
    fills in place: the schedule, a resume from a checkpoint (of either
    kind of run), and a rebuilt schedule; checkpoints hold floats."""
    speed_cfg(tiny_cfg)
    tiny_cfg.optim.scheduler = scheduler
    tiny_cfg.optim.base_lr = 1.0
    tiny_cfg.optim.steps = [1]
    tiny_cfg.optim.lr_decay = 0.5
    params = [torch.nn.Parameter(torch.zeros(2))]
    opt = build_optimizer(tiny_cfg, params, compiled=True)
    lr = opt.param_groups[0]['lr']
    assert isinstance(lr, torch.Tensor) and lr.dim() == 0
    sched = build_scheduler(tiny_cfg, opt)
    for epoch in range(3):
        if scheduler == 'reduce_on_plateau':
            sched.step(1.0)
        else:
            sched.step()
        assert opt.param_groups[0]['lr'] is lr
    opt_state = opt.state_dict()
    sched_state = plain_lrs(sched.state_dict())
    for group in opt_state['param_groups']:
        assert isinstance(group['lr'], float)
        assert isinstance(group.get('initial_lr', 0.0), float)
    assert all(isinstance(v, float) for v in sched_state.get('base_lrs', []))
    plain = build_optimizer(tiny_cfg, [torch.nn.Parameter(torch.zeros(2))])
    load_optimizer_state(plain, opt_state)
    assert isinstance(plain.param_groups[0]['lr'], float)
    assert plain.param_groups[0]['lr'] == pytest.approx(float(lr))
    again = build_optimizer(tiny_cfg, params, compiled=True)
    kept = again.param_groups[0]['lr']
    sched2 = build_scheduler(tiny_cfg, again)
    load_optimizer_state(again, plain.state_dict())
    sched2.load_state_dict(sched_state)
    assert again.param_groups[0]['lr'] is kept
    assert float(kept) == pytest.approx(float(lr))
    sched2.step(1.0) if scheduler == 'reduce_on_plateau' else sched2.step()
    assert again.param_groups[0]['lr'] is kept
    set_lr(again.param_groups[0], 'lr', 0.25)
    assert again.param_groups[0]['lr'] is kept and float(kept) == 0.25


@pytest.mark.parametrize('scheduler', ['cosine_with_warmup',
                                       'reduce_on_plateau'])
def test_trainer_keeps_the_compiled_update_lr_tensor_on_resume(tiny_cfg,
                                                               scheduler):
    """A run with the compiled update resumed with a new base lr (its
    schedule rebuilt, :meth:`Trainer.retune`) keeps updating through the
    same learning-rate tensor, with the new value."""
    from graphgps_ext.bench.steps import make_trainer
    from graphgps_ext.train.speed import FastPath
    speed_cfg(tiny_cfg)
    tiny_cfg.train.compile = True
    tiny_cfg.optim.scheduler = scheduler
    tiny_cfg.optim.num_warmup_epochs = 2
    net = _net()
    trainer = make_trainer(tiny_cfg, net, [], torch.device('cpu'),
                           fast_path=FastPath(None, net, compile_step=True))
    lr = trainer.optimizer.param_groups[0]['lr']
    assert isinstance(lr, torch.Tensor)
    state = trainer.optimizer.state_dict(), trainer.scheduler.state_dict()
    load_optimizer_state(trainer.optimizer, state[0])
    trainer.scheduler.load_state_dict(state[1])
    trainer.start_epoch = 3
    old = tiny_cfg.optim.base_lr
    tiny_cfg.optim.base_lr = old / 2
    trainer.retune([('optim.base_lr', old, old / 2)])
    assert trainer.optimizer.param_groups[0]['lr'] is lr
    expected = (old / 2 if scheduler == 'reduce_on_plateau'
                else old / 2 * cosine_with_warmup(2, tiny_cfg.optim.max_epoch)(3))
    assert float(lr) == pytest.approx(expected)
