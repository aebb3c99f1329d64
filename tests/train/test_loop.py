"""The training loop through :func:`graphgps_ext.runs.seed.run_seed`, in-process,
on the tiny dataset and TinyNet of ``tests/conftest.py``."""
import json
import math
import os

import pytest
import torch

from graphgps_ext.logger import STATS_FILE
from graphgps_ext.train import checkpoint as ckpt
from graphgps_ext.train.loop import NonFiniteLossError, all_finite, concat
from graphgps_ext.train.loss import LOSSES, cross_entropy

from run_checks import Interrupt, all_stats, stats


def test_run_writes_results_and_learns(tiny_run, tiny_cfg):
    tiny_cfg.optim.max_epoch = 8
    tiny_cfg.optim.base_lr = 0.03
    best = tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    for name in ('config.yaml', 'logging.log', 'best.json', 'done',
                 'split_indices.pt', 'ckpt/last.pt', 'ckpt/best.pt'):
        assert os.path.exists(os.path.join(run_dir, name)), name
    train = stats(run_dir, 'train')
    assert [r['epoch'] for r in train] == list(range(8))
    assert set(train[0]) == {'epoch', 'loss', 'accuracy', 'f1_macro', 'lr', 'params'}
    assert train[-1]['loss'] < 0.7 * train[0]['loss']
    assert best['val']['accuracy'] >= 0.8
    with open(os.path.join(run_dir, 'best.json')) as f:
        on_disk = json.load(f)
    assert on_disk['epoch'] == best['epoch']
    assert on_disk['val']['accuracy'] == max(r['accuracy'] for r in stats(run_dir, 'val'))
    assert set(on_disk) >= {'epoch', 'metric', 'mode', 'train', 'val', 'test'}
    last = ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))
    assert last['epoch'] == 7 and last['best']['epoch'] == best['epoch']
    assert ckpt.load(os.path.join(run_dir, 'ckpt', 'best.pt'))['epoch'] == best['epoch']
    assert 'INFO epoch 7 | ' in open(os.path.join(run_dir, 'logging.log')).read()


def test_same_seed_same_stats_other_seed_differs(tiny_run, tiny_cfg, tmp_path):
    tiny_run.run_seed(tiny_cfg)
    first = all_stats(os.path.join(tiny_cfg.out_dir, 'tiny', '0'))
    tiny_cfg.out_dir = str(tmp_path / 'again')
    tiny_run.run_seed(tiny_cfg)
    assert all_stats(os.path.join(tiny_cfg.out_dir, 'tiny', '0')) == first
    tiny_cfg.seed = 1
    tiny_cfg.optim.max_epoch = 1
    tiny_run.run_seed(tiny_cfg)
    assert stats(os.path.join(tiny_cfg.out_dir, 'tiny', '1'), 'train')[0] != first['train'][0]


@pytest.mark.parametrize('scheduler', ['cosine_with_warmup', 'reduce_on_plateau'])
def test_resume_reproduces_uninterrupted_run(tiny_run, tiny_cfg, tmp_path,
                                             monkeypatch, scheduler):
    tiny_cfg.optim.scheduler = scheduler
    tiny_cfg.optim.num_warmup_epochs = 2
    tiny_cfg.optim.schedule_patience = 0
    tiny_cfg.optim.reduce_factor = 0.5
    tiny_run.run_seed(tiny_cfg)
    reference = all_stats(os.path.join(tiny_cfg.out_dir, 'tiny', '0'))

    tiny_cfg.out_dir = str(tmp_path / 'interrupted')
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    # 4 train batches + 2 + 2 eval batches per epoch: call 21 is in epoch 2.
    monkeypatch.setitem(LOSSES, 'cross_entropy', Interrupt(21))
    with pytest.raises(KeyboardInterrupt):
        tiny_run.run_seed(tiny_cfg)
    assert not os.path.exists(os.path.join(run_dir, 'done'))
    assert ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))['epoch'] == 1
    assert 'Resume with' in open(os.path.join(run_dir, 'logging.log')).read()
    # A stats line written after the checkpoint (torn epoch) is dropped.
    with open(os.path.join(run_dir, 'train', STATS_FILE), 'a') as f:
        f.write(json.dumps({'epoch': 2, 'loss': 123.0}) + '\n')

    monkeypatch.setitem(LOSSES, 'cross_entropy', Interrupt(-1))
    tiny_cfg.train.auto_resume = True
    tiny_run.run_seed(tiny_cfg)
    assert all_stats(run_dir) == reference
    assert os.path.exists(os.path.join(run_dir, 'done'))


def test_interrupt_in_first_epoch_is_resumable(tiny_run, tiny_cfg, tmp_path,
                                               monkeypatch):
    tiny_run.run_seed(tiny_cfg)
    reference = all_stats(os.path.join(tiny_cfg.out_dir, 'tiny', '0'))
    tiny_cfg.out_dir = str(tmp_path / 'b')
    monkeypatch.setitem(LOSSES, 'cross_entropy', Interrupt(2))
    with pytest.raises(KeyboardInterrupt):
        tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    assert ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))['epoch'] == -1
    monkeypatch.setitem(LOSSES, 'cross_entropy', Interrupt(-1))
    tiny_cfg.train.auto_resume = True
    tiny_run.run_seed(tiny_cfg)
    assert all_stats(run_dir) == reference


def test_done_run_is_skipped_unless_overwrite(tiny_run, tiny_cfg, capsys):
    tiny_run.run_seed(tiny_cfg.clone())
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    mtime = os.path.getmtime(os.path.join(run_dir, 'ckpt', 'last.pt'))
    for auto_resume in (True, False):
        tiny_cfg.train.auto_resume = auto_resume
        best = tiny_run.run_seed(tiny_cfg.clone())
        assert best['epoch'] >= 0
        assert os.path.getmtime(os.path.join(run_dir, 'ckpt', 'last.pt')) == mtime
    assert capsys.readouterr().out.count('is done (complete: same config and data); skipped') == 2
    # --overwrite starts afresh (stats rewritten, not appended).
    tiny_run.run_seed(tiny_cfg.clone(), overwrite=True)
    assert len(stats(run_dir, 'train')) == tiny_cfg.optim.max_epoch
    assert os.path.getmtime(os.path.join(run_dir, 'ckpt', 'last.pt')) != mtime


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tiny_run, tiny_cfg):
    def poison(trainer, epoch, records):
        if epoch == 1:
            with torch.no_grad():
                next(trainer.model.parameters()).fill_(float('nan'))

    with pytest.raises(NonFiniteLossError, match=r'epoch 2, batch 0.*base_lr'):
        tiny_run.run_seed(tiny_cfg, callbacks=[poison])
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    last = ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))
    assert last['epoch'] == 1
    assert all(torch.isfinite(v).all() for v in last['model'].values()
               if v.is_floating_point())
    assert 'NaN loss in train at epoch 2' in open(
        os.path.join(run_dir, 'logging.log')).read()
    assert not os.path.exists(os.path.join(run_dir, 'done'))


def test_early_stopping(tiny_run, tiny_cfg):
    tiny_cfg.optim.base_lr = 0.0  # nothing improves after the first epoch
    tiny_cfg.train.early_stop_patience = 2
    tiny_cfg.optim.max_epoch = 20
    best = tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    assert best['epoch'] == 0
    assert len(stats(run_dir, 'train')) == 3
    assert ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))['stopped']


def test_reduce_on_plateau_stops_below_min_lr(tiny_run, tiny_cfg):
    tiny_cfg.optim.scheduler = 'reduce_on_plateau'
    tiny_cfg.optim.base_lr = 1e-6  # the validation loss plateaus at once
    tiny_cfg.optim.max_epoch = 8
    tiny_cfg.optim.schedule_patience = 1
    tiny_cfg.optim.reduce_factor = 0.5
    tiny_cfg.optim.min_lr = 0.0  # never stops
    tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    lrs = [r['lr'] for r in stats(run_dir, 'train')]
    assert len(lrs) == 8
    assert lrs[:4] == pytest.approx([1e-6, 1e-6, 1e-6, 5e-7])
    # 1e-6 -> 5e-7 (after epoch 3) -> 2.5e-7 (after epoch 5) < min_lr: stop.
    tiny_cfg.optim.min_lr = 3e-7
    tiny_run.run_seed(tiny_cfg, overwrite=True)
    assert len(stats(run_dir, 'train')) == 5


def test_eval_period_and_lr_schedule(tiny_run, tiny_cfg):
    tiny_cfg.train.eval_period = 3
    tiny_cfg.optim.max_epoch = 7
    tiny_cfg.optim.scheduler = 'cosine_with_warmup'
    tiny_cfg.optim.num_warmup_epochs = 2
    tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    assert [r['epoch'] for r in stats(run_dir, 'val')] == [0, 2, 5, 6]
    lrs = [r['lr'] for r in stats(run_dir, 'train')]
    assert lrs[0] == pytest.approx(0.01 * 1e-6)
    assert lrs[1] == pytest.approx(0.005)
    assert lrs[2] == pytest.approx(0.01)
    assert lrs[2:] == sorted(lrs[2:], reverse=True)
    assert lrs[6] == pytest.approx(0.01 * 0.5 * (1 + math.cos(math.pi * 4 / 5)))


def test_gradient_clipping_bounds_the_update(tiny_run, tiny_cfg, monkeypatch):
    norms = []
    orig = torch.nn.utils.clip_grad_norm_

    def spy(params, max_norm, *a, **k):
        params = list(params)
        total = orig(params, max_norm, *a, **k)
        norms.append(float(torch.linalg.vector_norm(
            torch.stack([p.grad.norm() for p in params if p.grad is not None]))))
        assert max_norm == 0.05
        return total

    monkeypatch.setattr(torch.nn.utils, 'clip_grad_norm_', spy)
    tiny_cfg.optim.clip_grad_norm = True
    tiny_cfg.optim.clip_grad_norm_value = 0.05
    tiny_cfg.optim.max_epoch = 1
    tiny_run.run_seed(tiny_cfg)
    assert norms and max(norms) <= 0.05 + 1e-6


def test_evaluation_runs_under_inference_mode_and_training_resumes(tiny_run, tiny_cfg):
    seen = set()  # (module.training, inference mode, grad enabled)

    def hook(module, args, out):
        seen.add((module.training, torch.is_inference_mode_enabled(),
                  torch.is_grad_enabled()))

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        tiny_cfg.optim.max_epoch = 2  # train, evaluate, train again
        tiny_run.run_seed(tiny_cfg)
    finally:
        handle.remove()
    assert seen == {(True, False, True), (False, True, False)}


def test_concat_pads_ragged_sequences():
    out = concat([torch.tensor([[1, 2]]), torch.tensor([[3, 4, 5], [6, -1, -1]])])
    assert out.tolist() == [[1, 2, -1], [3, 4, 5], [6, -1, -1]]
    flt = concat([torch.ones(2, 1), torch.ones(1, 3)])
    assert flt.shape == (3, 3) and torch.isnan(flt[0, 1:]).all()


# ----------------------------------------------------- speed switches --
def _losses(run_dir):
    return {s: [r['loss'] for r in stats(run_dir, s)] for s in ('train', 'val', 'test')}


@pytest.mark.parametrize('key', ['fused', 'flat_params'])
def test_fused_or_flat_and_plain_training_give_the_same_losses(
        tiny_run, tiny_cfg, tmp_path, key):
    from graphgps_ext.config.speed import speed_cfg
    from graphgps_ext.train.flat import _ZeroInPlace
    speed_cfg(tiny_cfg)
    tiny_cfg.optim.max_epoch = 3
    tiny_cfg.optim.optimizer = 'adamW'
    tiny_cfg.optim.weight_decay = 0.01
    tiny_cfg.optim.clip_grad_norm = True
    tiny_cfg.optim.clip_grad_norm_value = 0.5
    losses, seen = {}, []
    for on in (True, False):
        tiny_cfg.optim[key] = on
        tiny_cfg.out_dir = str(tmp_path / str(on))
        tiny_run.run_seed(tiny_cfg, callbacks=[lambda t, e, r: seen.append(
            bool(t.optimizer.defaults['fused']) if key == 'fused'
            else isinstance(t.optimizer, _ZeroInPlace))])
        losses[on] = _losses(os.path.join(tiny_cfg.out_dir, 'tiny', '0'))
    assert seen == [True] * 3 + [False] * 3
    for split in ('train', 'val', 'test'):
        assert losses[True][split] == pytest.approx(losses[False][split],
                                                    rel=1e-5, abs=1e-5)


class AutocastProbe(torch.nn.Module):
    """TinyNet recording, per forward, (training, autocast on, output dtype)."""
    calls = []

    def __init__(self, cfg, task):
        super().__init__()
        from conftest import TinyNet
        self.net = TinyNet(cfg, task)

    def forward(self, batch):
        pred, true = self.net(batch)
        AutocastProbe.calls.append((self.training, torch.is_autocast_enabled('cpu'),
                                    pred.dtype))
        return pred, true


def test_bf16_autocast_trains_close_to_float32(tiny_run, tiny_cfg, tmp_path,
                                               monkeypatch):
    import torch_geometric.graphgym.register as gg

    from graphgps_ext.config.speed import speed_cfg
    monkeypatch.setitem(gg.network_dict, 'TinyNet', AutocastProbe)
    loss_dtypes = []

    def loss(pred, true):
        loss_dtypes.append((pred.dtype, torch.is_autocast_enabled('cpu')))
        return cross_entropy(pred, true)

    monkeypatch.setitem(LOSSES, 'cross_entropy', loss)
    speed_cfg(tiny_cfg)
    tiny_cfg.optim.max_epoch = 3
    tiny_cfg.optim.base_lr = 0.03
    losses = {}
    for amp in ('none', 'bf16'):
        AutocastProbe.calls.clear()
        loss_dtypes.clear()
        tiny_cfg.train.amp = amp
        tiny_cfg.out_dir = str(tmp_path / amp)
        tiny_run.run_seed(tiny_cfg)
        losses[amp] = _losses(os.path.join(tiny_cfg.out_dir, 'tiny', '0'))
        low = amp == 'bf16'
        want = torch.bfloat16 if low else torch.float32
        # train and eval forwards, all under autocast with bf16 (none without)
        assert {c[0] for c in AutocastProbe.calls} == {True, False}
        assert {c[1:] for c in AutocastProbe.calls} == {(low, want)}
        assert set(loss_dtypes) == {(torch.float32, False)}  # loss in float32
    for split in ('train', 'val', 'test'):
        assert all(math.isfinite(v) for v in losses['bf16'][split])
        assert losses['bf16'][split] == pytest.approx(losses['none'][split],
                                                      rel=0.02, abs=0.01)
    assert losses['bf16']['train'][-1] < losses['bf16']['train'][0]


def test_compiled_run_matches_eager_and_resumes_eagerly(tiny_run, tiny_cfg,
                                                        tiny_bundle):
    """``train.compile``: the forward passes are compiled; the checkpoint
    holds the plain module (loads into an eager TinyNet, whose outputs
    equal the logged compiled evaluation) and the run resumes eagerly."""
    from conftest import TinyNet
    from torch_geometric.loader import DataLoader

    from graphgps_ext.config.speed import speed_cfg
    speed_cfg(tiny_cfg)
    tiny_cfg.train.compile = True
    tiny_cfg.optim.max_epoch = 1
    nets = []
    tiny_run.run_seed(tiny_cfg.clone(), callbacks=[  # keeps tiny_cfg as loaded
        lambda t, e, r: nets.append((t.train_net, t.eval_net, t.model))])
    train_net, eval_net, model = nets[0]
    assert train_net is eval_net and train_net is not model
    assert train_net._orig_mod is model  # a torch.compile wrapper of the model
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    for name in ('last', 'best'):
        state = ckpt.load(os.path.join(run_dir, 'ckpt', f'{name}.pt'))['model']
        assert not any(k.startswith('_orig_mod.') for k in state)
    eager = TinyNet(tiny_cfg, tiny_bundle.task).eval()
    eager.load_state_dict(state)  # strict
    with torch.no_grad():
        for batch in DataLoader(tiny_bundle.splits['val'], batch_size=16):
            torch.testing.assert_close(eval_net(batch)[0], eager(batch)[0],
                                       rtol=1e-5, atol=1e-6)
        val = torch.cat([eager(b)[0] for b in
                         DataLoader(tiny_bundle.splits['val'], batch_size=16)])
    logged = stats(run_dir, 'val')[0]['loss']
    y = torch.cat([g.y for g in tiny_bundle.splits['val']])
    assert float(cross_entropy(val, y)) == pytest.approx(logged, rel=1e-5)
    # Continue the compiled run's checkpoint in an eager run.
    os.remove(os.path.join(run_dir, 'done'))
    tiny_cfg.train.compile = False
    tiny_cfg.train.auto_resume = True
    tiny_cfg.optim.max_epoch = 2
    nets.clear()
    tiny_run.run_seed(tiny_cfg, callbacks=[lambda t, e, r: nets.append(t.train_net)])
    assert [r['epoch'] for r in stats(run_dir, 'train')] == [0, 1]
    assert len(nets) == 1 and isinstance(nets[0], TinyNet)


def test_all_finite():
    lin = torch.nn.Linear(2, 2)
    assert all_finite(lin)
    with torch.no_grad():
        lin.bias[0] = float('inf')
    assert not all_finite(lin)


class Recording:
    """``cross_entropy`` that also reads every loss on the host, as the
    loop did once per step, with the batch's count."""

    def __init__(self):
        self.values = []

    def __call__(self, pred, true):
        loss = cross_entropy(pred, true)
        self.values.append((float(loss.detach()), true.size(0)))
        return loss


def test_epoch_stats_equal_the_per_step_reads(tiny_run, tiny_cfg, monkeypatch):
    # The losses stay on the device during a pass and are read once at its
    # end: the epoch's loss is the same sum of per-step reads as before.
    tiny_cfg.optim.max_epoch = 2
    rec = Recording()
    monkeypatch.setitem(LOSSES, 'cross_entropy', rec)
    tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    # Per epoch: 4 train batches, then 2 val and 2 test batches.
    for epoch, record in enumerate(stats(run_dir, 'train')):
        part = rec.values[8 * epoch:8 * epoch + 4]
        total = 0.0
        for value, n in part:
            total += value * n
        assert record['loss'] == total / sum(n for _, n in part)
    for k, split in ((4, 'val'), (6, 'test')):
        part = rec.values[k:k + 2]
        total = 0.0
        for value, n in part:
            total += value * n
        assert stats(run_dir, split)[0]['loss'] == pytest.approx(
            total / sum(n for _, n in part), rel=1e-6)


class NanAt:
    """``cross_entropy`` with a NaN loss on its ``at``-th call."""

    def __init__(self, at):
        self.calls, self.at = 0, at

    def __call__(self, pred, true):
        self.calls += 1
        loss = cross_entropy(pred, true)
        return loss * float('nan') if self.calls == self.at else loss


def test_nan_loss_mid_epoch_is_reported_at_its_batch(tiny_run, tiny_cfg,
                                                     monkeypatch):
    # Read at the end of the pass, a NaN loss still stops the run (exit 3)
    # naming its batch, and no checkpoint of that epoch is written.
    monkeypatch.setitem(LOSSES, 'cross_entropy', NanAt(8 + 3))
    with pytest.raises(NonFiniteLossError,
                       match=r'NaN loss in train at epoch 1, batch 2'):
        tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    last = ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))
    assert last['epoch'] == 0
    assert all(torch.isfinite(v).all() for v in last['model'].values()
               if v.is_floating_point())
    assert len(stats(run_dir, 'train')) == 1


def test_early_stopping_counts_evaluations(tiny_run, tiny_cfg):
    """Patience counts evaluated epochs: with ``train.eval_period 3`` the
    epochs between evaluations say nothing about improvement."""
    tiny_cfg.optim.base_lr = 0.0  # nothing improves after the first epoch
    tiny_cfg.train.early_stop_patience = 2
    tiny_cfg.train.eval_period = 3
    tiny_cfg.optim.max_epoch = 20
    tiny_run.run_seed(tiny_cfg)
    run_dir = os.path.join(tiny_cfg.out_dir, 'tiny', '0')
    # evaluated: 0 (best), 2, 5 -> two evaluations without improvement
    assert [r['epoch'] for r in stats(run_dir, 'val')] == [0, 2, 5]
    assert len(stats(run_dir, 'train')) == 6


def test_a_non_finite_loss_names_its_likely_cause(tiny_run, tiny_cfg, monkeypatch):
    # The first batch, before any step: not the learning rate.
    with monkeypatch.context() as m:
        m.setitem(LOSSES, 'cross_entropy', NanAt(1))
        with pytest.raises(NonFiniteLossError, match='first batch, before any optimiser '
                           r'step: the cause is the data') as err:
            tiny_run.run_seed(tiny_cfg.clone())
    assert err.value.key is None and 'Lower optim.base_lr' not in str(err.value)
    # A weight decay that blows the weights up: named, with a value to try.
    cfg = tiny_cfg.clone()
    cfg.optim.weight_decay = 1e300
    with pytest.raises(NonFiniteLossError, match=r'Likely cause: optim.weight_decay 1e\+300'
                       ) as err:
        tiny_run.run_seed(cfg, overwrite=True)
    assert (err.value.key, err.value.value) == ('optim.weight_decay', 0.01)
    assert 'Lower optim.base_lr' not in str(err.value)
    log = open(os.path.join(cfg.out_dir, 'tiny', '0', 'logging.log')).read()
    assert 'train.auto_resume True optim.weight_decay 0.01' in log


def test_a_nan_metric_is_a_value_not_damage(tiny_run, tiny_cfg, monkeypatch, capsys):
    """A metric that is NaN on every split (e.g. an AP without a positive
    label): the first evaluation is the best, the finished seed is complete
    (not damaged) when asked again, and agg averages it."""
    from graphgps_ext import metrics
    from graphgps_ext.agg import main as agg
    monkeypatch.setitem(metrics.METRICS, 'accuracy', lambda pred, true: float('nan'))
    best = tiny_run.run_seed(tiny_cfg.clone())
    assert best['epoch'] == 0 and math.isnan(best['test']['accuracy'])
    tiny_run.run_seed(tiny_cfg.clone())
    assert 'is done (complete: same config and data); skipped' in capsys.readouterr().out
    assert agg([os.path.join(tiny_cfg.out_dir, 'tiny')]) == 0
