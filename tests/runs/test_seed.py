"""A seed's lifecycle through :func:`graphgps_ext.runs.seed.run_seed`, in-process
on the tiny dataset and TinyNet of ``tests/conftest.py``: a failed start
leaves a finished seed as it was, resume is honest (changed optimiser keys
take effect, others are refused, every resume is recorded), checkpoints
fall back and refuse, disk faults keep the last good state."""
import errno
import json
import os
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from graphgps_ext.config import ConfigError
from graphgps_ext.files import ResultsWriteError, read_jsonl
from graphgps_ext.results import seed_folder
from graphgps_ext.runs.seed import StartRefused
from graphgps_ext.train import checkpoint as ckpt
from graphgps_ext.train.loop import NonFiniteLossError
from graphgps_ext.train.loss import LOSSES, cross_entropy

from run_checks import Interrupt, all_stats, snapshot, stats


def run_dir_of(cfg):
    return os.path.join(cfg.out_dir, 'tiny', str(cfg.seed))


def interrupted(tiny_run, cfg, monkeypatch, at=21):
    """Run until the loss's ``at``-th call (21: in epoch 3, after two
    checkpoints), then restore the loss; returns the seed folder."""
    monkeypatch.setitem(LOSSES, 'cross_entropy', Interrupt(at))
    with pytest.raises(KeyboardInterrupt):
        tiny_run.run_seed(cfg.clone())
    monkeypatch.setitem(LOSSES, 'cross_entropy', cross_entropy)
    return run_dir_of(cfg)


# ------------------------------------------------- nothing deleted early --
def test_failed_start_leaves_a_finished_seed_untouched(tiny_run, tiny_cfg,
                                                       monkeypatch):
    tiny_run.run_seed(tiny_cfg.clone())
    run_dir = run_dir_of(tiny_cfg)
    before = snapshot(run_dir)
    done = json.loads(open(os.path.join(run_dir, 'done')).read())
    assert done['fingerprint'] and done['identity']['optim.base_lr'] == 0.01
    config = open(os.path.join(run_dir, 'config.yaml')).read()
    assert config.startswith(f'# fingerprint: {done["fingerprint"]}\n')

    # 1. before the data: the model cannot be built
    def broken(cfg, task):
        raise ConfigError('no such model')

    with monkeypatch.context() as m:
        m.setattr(tiny_run, 'build_model', broken)
        with pytest.raises(ConfigError):
            tiny_run.run_seed(tiny_cfg.clone(), overwrite=True)
    assert snapshot(run_dir) == before

    # 2. the disk is full: at the manifest of the replacement, then after
    # the old entries were moved aside (at the new config.yaml)
    real = os.fsync
    for room in (0, 1):
        calls = []

        def full(fd):
            calls.append(fd)
            if len(calls) > room:
                raise OSError(errno.ENOSPC, 'No space left on device')
            real(fd)

        with monkeypatch.context() as m:
            m.setattr(os, 'fsync', full)
            with pytest.raises(ResultsWriteError, match='No space left'):
                tiny_run.run_seed(tiny_cfg.clone(), overwrite=True)
        assert snapshot(run_dir) == before
    assert sorted(os.listdir(run_dir)) == sorted(
        {p.split(os.sep)[0] for p in before})  # no lock, no .replacing

    # 3. killed between moving the old run aside and its deletion: the next
    # start restores it (and, finished, skips it)
    rep = seed_folder.Replacement(run_dir)
    rep.aside()
    with open(os.path.join(run_dir, 'config.yaml'), 'w') as f:
        f.write('a new run had begun\n')
    tiny_run.run_seed(tiny_cfg.clone())
    assert snapshot(run_dir) == before


def test_stale_seed_is_reported_with_the_keys_and_skipped(tiny_run, tiny_cfg, capsys):
    tiny_run.run_seed(tiny_cfg.clone())
    run_dir = run_dir_of(tiny_cfg)
    before = snapshot(run_dir)
    tiny_cfg.optim.base_lr = 0.005
    tiny_run.run_seed(tiny_cfg.clone())
    out = capsys.readouterr().out
    assert 'is done (stale: optim.base_lr 0.01 -> 0.005); skipped' in out
    assert '--overwrite' in out and snapshot(run_dir) == before
    tiny_run.run_seed(tiny_cfg.clone(), overwrite=True)
    done = json.loads(open(os.path.join(run_dir, 'done')).read())
    assert done['identity']['optim.base_lr'] == 0.005
    assert not any(e.startswith('.replac') for e in os.listdir(run_dir))


def test_stale_seed_with_a_damaged_best_is_refused_naming_the_file(tiny_run, tiny_cfg):
    tiny_run.run_seed(tiny_cfg.clone())
    run_dir = run_dir_of(tiny_cfg)
    with open(os.path.join(run_dir, 'best.json'), 'w') as f:
        f.write('{"epoch": 3,')
    before = snapshot(run_dir)
    tiny_cfg.optim.base_lr = 0.005
    with pytest.raises(StartRefused, match=r'best\.json.*--overwrite'):
        tiny_run.run_seed(tiny_cfg.clone())
    assert snapshot(run_dir) == before


def test_seed_in_use_is_refused(tiny_run, tiny_cfg):
    run_dir = run_dir_of(tiny_cfg)
    with seed_folder.SeedLock(run_dir):
        with pytest.raises(StartRefused, match=f'in use by another run: pid {os.getpid()}'):
            tiny_run.run_seed(tiny_cfg.clone())
        assert os.listdir(run_dir) == ['lock']


# ------------------------------------------------------- honest resume --
def diverging(pred, true):
    """Cross-entropy that turns NaN once the logits blow up (as float32 does
    a few steps later on real models)."""
    loss = cross_entropy(pred, true)
    return loss if pred.detach().abs().max() < 1e4 else loss * float('nan')


def test_lowered_lr_after_nan_takes_effect_on_resume(tiny_run, tiny_cfg,
                                                     monkeypatch):
    """``optim.base_lr 1e6`` stops on a NaN; resuming with a sane lr trains
    at that lr's schedule, records the change and rewrites config.yaml."""
    monkeypatch.setitem(LOSSES, 'cross_entropy', diverging)
    tiny_cfg.optim.scheduler = 'cosine_with_warmup'
    tiny_cfg.optim.num_warmup_epochs = 2
    tiny_cfg.optim.max_epoch = 5
    sane = tiny_cfg.clone()
    sane.out_dir = tiny_cfg.out_dir + '-sane'
    tiny_run.run_seed(sane.clone())
    reference = all_stats(run_dir_of(sane))

    tiny_cfg.optim.base_lr = 1e6
    with pytest.raises(NonFiniteLossError):
        tiny_run.run_seed(tiny_cfg.clone())
    run_dir = run_dir_of(tiny_cfg)
    last = ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))
    assert last['optimizer']['param_groups'][0]['initial_lr'] == 1e6

    resumed = sane.clone()
    resumed.out_dir = tiny_cfg.out_dir
    resumed.train.auto_resume = True
    tiny_run.run_seed(resumed)
    after = last['epoch'] + 1  # the first epoch trained after the resume
    got = all_stats(run_dir)
    assert [r['lr'] for r in got['train'][after:]] == pytest.approx(
        [r['lr'] for r in reference['train'][after:]])
    if after == 0:  # the NaN came in the first epoch: the very same run
        assert got == reference
    history = read_jsonl(os.path.join(run_dir, 'resume_history.jsonl'))
    assert history[-1]['changes'] == [
        {'key': 'optim.base_lr', 'old': 1e6, 'new': 0.01}]
    assert history[-1]['after_epoch'] == after
    assert 'base_lr: 0.01\n' in open(os.path.join(run_dir, 'config.yaml')).read()
    done = json.loads(open(os.path.join(run_dir, 'done')).read())
    assert done['identity']['optim.base_lr'] == 0.01


@pytest.mark.parametrize('scheduler', ['cosine_with_warmup', 'steps',
                                       'reduce_on_plateau'])
def test_changed_schedule_continues_from_the_current_epoch(
        tiny_run, tiny_cfg, monkeypatch, scheduler):
    """A resume with new optimiser values logs, from the resumed epoch on,
    the lrs of a run that had those values from the start (same epochs,
    same plateau reductions), and the new weight decay."""
    tiny_cfg.optim.scheduler = scheduler
    tiny_cfg.optim.optimizer = 'adamW'
    tiny_cfg.optim.num_warmup_epochs = 2
    tiny_cfg.optim.steps = [1, 3]
    tiny_cfg.optim.schedule_patience = 0
    tiny_cfg.optim.max_epoch = 5
    run_dir = interrupted(tiny_run, tiny_cfg, monkeypatch)
    saved = ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))
    assert saved['epoch'] == 1
    lr_then = saved['optimizer']['param_groups'][0]['lr']  # epoch 3's, as started
    new = tiny_cfg.clone()
    new.optim.base_lr = 0.004
    new.optim.weight_decay = 0.05
    new.optim.max_epoch = 6
    new.optim.lr_decay = 0.5
    reference = new.clone()
    reference.out_dir = tiny_cfg.out_dir + '-ref'
    tiny_run.run_seed(reference.clone())
    new.train.auto_resume = True
    seen = []
    tiny_run.run_seed(new, callbacks=[lambda t, e, r: seen.append(
        t.optimizer.param_groups[0]['weight_decay'])])
    lrs = [r['lr'] for r in stats(run_dir)]
    want = [r['lr'] for r in stats(run_dir_of(reference))]
    assert len(lrs) == 6
    if scheduler == 'reduce_on_plateau':  # its reductions so far carry over
        assert lrs[2] == pytest.approx(lr_then * 0.004 / 0.01)
    else:
        assert lrs[2:] == pytest.approx(want[2:])
    assert seen and set(seen) == {0.05}
    history = read_jsonl(os.path.join(run_dir, 'resume_history.jsonl'))
    assert [c['key'] for c in history[0]['changes']] == [
        'optim.base_lr', 'optim.lr_decay', 'optim.max_epoch', 'optim.weight_decay']


def test_other_changes_are_refused_at_start(tiny_run, tiny_cfg, monkeypatch):
    run_dir = interrupted(tiny_run, tiny_cfg, monkeypatch)
    before = snapshot(run_dir)
    tiny_cfg.gt.dim_hidden = 32
    tiny_cfg.optim.base_lr = 0.02
    tiny_cfg.train.auto_resume = True
    with pytest.raises(StartRefused) as err:
        tiny_run.run_seed(tiny_cfg.clone())
    text = str(err.value)
    assert 'gt.dim_hidden 16 -> 32 (old -> new)' in text
    assert 'optim.base_lr' not in text  # allowed: not named
    assert '--overwrite' in text and 'Restore the old values' in text
    assert snapshot(run_dir) == before
    tiny_run.run_seed(tiny_cfg.clone(), overwrite=True)  # afresh, as told
    assert [r['epoch'] for r in stats(run_dir)] == [0, 1, 2, 3]


# ------------------------------------------------------------ checkpoints --
def test_corrupt_last_checkpoint_falls_back_to_the_previous(
        tiny_run, tiny_cfg, tmp_path, monkeypatch, capsys):
    tiny_run.run_seed(tiny_cfg.clone())
    reference = all_stats(run_dir_of(tiny_cfg))
    tiny_cfg.out_dir = str(tmp_path / 'b')
    run_dir = interrupted(tiny_run, tiny_cfg, monkeypatch)
    last = os.path.join(run_dir, 'ckpt', 'last.pt')
    data = open(last, 'rb').read()
    with open(last, 'wb') as f:  # truncated, e.g. by a full disk elsewhere
        f.write(data[:len(data) // 3])
    open(last + '.tmp4242', 'wb').close()  # a killed write's leftover
    tiny_cfg.train.auto_resume = True
    tiny_run.run_seed(tiny_cfg.clone())
    out = capsys.readouterr().out
    assert 'cannot be read' in out and 'previous checkpoint' in out
    assert 'removed 1 temporary file(s) of interrupted writes: ckpt/last.pt.tmp4242' in out
    assert all_stats(run_dir) == reference
    assert sorted(os.listdir(os.path.join(run_dir, 'ckpt'))) == [
        'best.pt', 'last.corrupt.pt', 'last.prev.pt', 'last.pt']
    history = read_jsonl(os.path.join(run_dir, 'resume_history.jsonl'))
    assert history[0]['checkpoint'] == os.path.join('ckpt', 'last.prev.pt')


def test_crafted_checkpoint_is_refused_and_never_run(tiny_run, tiny_cfg, tmp_path,
                                                     monkeypatch):
    run_dir = interrupted(tiny_run, tiny_cfg, monkeypatch)
    marker = tmp_path / 'created-by-unpickling'

    class CreatesFile:
        def __reduce__(self):
            return open, (str(marker), 'w')

    state = ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))
    state['best'] = CreatesFile()
    torch.save(state, os.path.join(run_dir, 'ckpt', 'last.pt'))
    tiny_cfg.train.auto_resume = True
    with pytest.raises(ckpt.UnsafeCheckpointError, match='asks for io.open'):
        tiny_run.run_seed(tiny_cfg.clone())
    assert not marker.exists()


def test_disk_full_mid_run_keeps_the_last_good_state(tiny_run, tiny_cfg, tmp_path,
                                                     monkeypatch):
    tiny_run.run_seed(tiny_cfg.clone())
    reference = all_stats(run_dir_of(tiny_cfg))
    tiny_cfg.out_dir = str(tmp_path / 'b')
    run_dir = run_dir_of(tiny_cfg)
    real, calls = os.fsync, []

    def fills_up(fd):  # the disk is full from the 12th durable write on
        calls.append(fd)
        if len(calls) >= 12:
            raise OSError(errno.ENOSPC, 'No space left on device')
        real(fd)

    monkeypatch.setattr(os, 'fsync', fills_up)
    with pytest.raises(ResultsWriteError, match='No space left'):
        tiny_run.run_seed(tiny_cfg.clone())
    monkeypatch.setattr(os, 'fsync', real)
    assert not [p for p in snapshot(run_dir) if '.tmp' in p]
    assert ckpt.load(os.path.join(run_dir, 'ckpt', 'last.pt'))['epoch'] >= 0
    tiny_cfg.train.auto_resume = True
    tiny_run.run_seed(tiny_cfg.clone())
    assert all_stats(run_dir) == reference


# ------------------------------------------------------ single-node batch --
class NodeNormNet(nn.Module):
    """BatchNorm over the nodes, then mean pooling and a linear layer."""

    def __init__(self, cfg, task):
        super().__init__()
        self.norm = nn.BatchNorm1d(task.node_dim)
        self.lin = nn.Linear(task.node_dim, task.num_outputs)

    def forward(self, batch):
        from torch_geometric.utils import scatter
        h = scatter(self.norm(batch.x), batch.batch, dim=0,
                    dim_size=batch.num_graphs, reduce='mean')
        return self.lin(h), batch.y


def test_single_node_training_batch_is_skipped(tiny_run, tiny_cfg, tiny_bundle,
                                               monkeypatch, capsys):
    import torch_geometric.graphgym.register as gg
    from torch_geometric.data import Data
    monkeypatch.setitem(gg.network_dict, 'NodeNormNet', NodeNormNet)
    lone = Data(x=torch.tensor([[1.0, 0.0]]), edge_index=torch.zeros(2, 0, dtype=torch.long),
                y=torch.tensor([0]))
    tiny_bundle.splits['train'] = tiny_bundle.splits['train'][:15] + [lone]
    tiny_cfg.model.type = 'NodeNormNet'
    tiny_cfg.train.batch_size = 1
    tiny_cfg.optim.max_epoch = 2
    tiny_run.run_seed(tiny_cfg.clone())
    run_dir = run_dir_of(tiny_cfg)
    done = json.loads(open(os.path.join(run_dir, 'done')).read())
    assert done['skipped_batches'] == 2
    assert 'skipped 1 training batch(es) of a single node' in capsys.readouterr().out
    assert len(stats(run_dir)) == 2


# ----------------------------------------------------------- run identity --
def test_a_seed_is_complete_only_for_the_data_it_read(tiny_run, tiny_cfg, tiny_bundle,
                                                      monkeypatch, capsys, tmp_path):
    """``done`` records the data (content fingerprint, folder), the seed and
    the SHA-256 of the full set of files. A finished seed is complete for
    the same graphs, moved or not, and stale for other graphs (a sample)."""
    from graphgps_ext.results.identity import data_folder
    from graphgps_ext.results.seed_folder import CHECKED_FILES
    tiny_cfg.dataset.dir = str(tmp_path / 'full')
    tiny_run.run_seed(tiny_cfg.clone())
    run_dir = run_dir_of(tiny_cfg)
    done = json.loads(open(os.path.join(run_dir, 'done')).read())
    assert done['seed'] == 0 and sorted(done['files']) == sorted(CHECKED_FILES)
    assert done['data'] == {'dir': data_folder(tiny_cfg),
                            'fingerprint': tiny_run.data_fingerprint(tiny_bundle)}
    before = snapshot(run_dir)
    moved = tiny_cfg.clone()
    moved.dataset.dir = str(tmp_path / 'moved')  # the same graphs elsewhere
    tiny_run.run_seed(moved)
    assert 'is done (complete: same config and data); skipped' in capsys.readouterr().out
    sample = SimpleNamespace(**vars(tiny_bundle))
    sample.splits = {k: v[:10] for k, v in tiny_bundle.splits.items()}
    monkeypatch.setattr(tiny_run, 'load_dataset', lambda cfg: sample)
    tiny_run.run_seed(moved)
    out = capsys.readouterr().out
    assert f"is done (stale: data fingerprint {done['data']['fingerprint']} -> " in out
    assert 'skipped. Pass --overwrite' in out and snapshot(run_dir) == before


def test_a_resume_on_other_data_is_refused(tiny_run, tiny_cfg, tiny_bundle,
                                           monkeypatch):
    run_dir = interrupted(tiny_run, tiny_cfg, monkeypatch)
    before = snapshot(run_dir)
    other = SimpleNamespace(**vars(tiny_bundle))
    other.splits = dict(tiny_bundle.splits, train=tiny_bundle.splits['train'][::-1])
    monkeypatch.setattr(tiny_run, 'load_dataset', lambda cfg: other)
    tiny_cfg.train.auto_resume = True
    with pytest.raises(StartRefused, match='the run was trained on other data '
                       r'\(data fingerprint '):
        tiny_run.run_seed(tiny_cfg.clone())
    assert snapshot(run_dir) == before


@pytest.mark.parametrize('edit,words', [
    (lambda s: s.update(epoch=-5), 'its epoch is -5'),
    (lambda s: s.update(epoch='1'), "its epoch is '1'"),
    (lambda s: s.pop('identity'), 'it records no identity'),
    (lambda s: s.update(identity=None), 'it records no identity'),
    (lambda s: s.update(best={'epoch': 9}), 'its best record is of epoch 9'),
])
def test_a_checkpoint_no_run_wrote_is_refused(tiny_run, tiny_cfg, monkeypatch, edit,
                                               words):
    run_dir = interrupted(tiny_run, tiny_cfg, monkeypatch)
    last = os.path.join(run_dir, 'ckpt', 'last.pt')
    state = ckpt.load(last)
    edit(state)
    ckpt.save(state, last)
    before = snapshot(run_dir)
    tiny_cfg.train.auto_resume = True
    with pytest.raises(StartRefused, match=f'cannot resume from {last}: {words}'):
        tiny_run.run_seed(tiny_cfg.clone())
    assert snapshot(run_dir) == before


def test_overwrite_through_a_linked_seed_folder_is_refused(tiny_run, tiny_cfg):
    tiny_run.run_seed(tiny_cfg.clone())
    run_dir = run_dir_of(tiny_cfg)
    before = snapshot(run_dir)
    os.symlink(run_dir, os.path.join(os.path.dirname(run_dir), '1'))
    other = tiny_cfg.clone()
    other.seed = 1
    with pytest.raises(StartRefused, match=r'tiny/1 is a symbolic link'):
        tiny_run.run_seed(other, overwrite=True)
    assert snapshot(run_dir) == before
