"""``main.py --stack K`` (graphgps_ext.runs.stack): seeds trained as one
stacked model write the ordinary seed folders of their separate runs, with
the same curves (dropout off); a stack killed or interrupted at any point
resumes, its seeds at different epochs; complete seeds are not retrained;
a seed whose loss becomes non-finite fails alone; and every ``--stack``
that cannot run is refused at start with exit code 2, naming why."""
import math
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

import main
from graphgps_ext.results.identity import data_record, identity, seed_status
from graphgps_ext.results.tree import RunDir
from graphgps_ext.runs import stack as run_stack
from graphgps_ext.runs.config import load_cfg
from graphgps_ext.train import stack as stack_module
from graphgps_ext.train.loop import Trainer

from molecules import molecule_bundle
from run_checks import snapshot, stats

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONFIG = """\
out_dir: {out}
run_name: mol
accelerator: cpu
gt:
  layer_type: GINE+Transformer+None
  layers: 2
  dim_hidden: 16
  n_heads: 2
  dropout: 0.0
  attn_dropout: 0.0
  norm: layer
posenc_RWSE:
  enable: true
  kernel:
    times: [1, 2, 3, 4]
  dim_pe: 4
train:
  batch_size: 5
  eval_period: 1
optim:
  optimizer: adamW
  base_lr: 0.003
  scheduler: cosine_with_warmup
  num_warmup_epochs: 1
  max_epoch: 3
  clip_grad_norm: true
"""


@pytest.fixture
def molecules(monkeypatch, tmp_path):
    """A 40-graph ZINC-like dataset served to every run (``load_dataset``),
    and a config file for it; returns ``(config path, out_dir)``."""
    import graphgps_ext.runs.seed as run
    bundle = molecule_bundle(split_indices=None, info={'standard_split': True})
    monkeypatch.setattr(run, 'load_dataset', lambda cfg: bundle)
    path = tmp_path / 'mol.yaml'
    path.write_text(CONFIG.format(out=tmp_path / 'results'))
    return str(path), tmp_path / 'results' / 'mol'


def same_curves(stacked, separate, seeds):
    """Per seed and epoch, the losses and MAE of the stacked and separate
    runs agree (the stacked steps pad their batches: float32 sums in
    another order, which Adam's normalised steps enlarge a little). (Layer
    norms: with batch norms the bias before a norm gets gradients of pure
    rounding noise, which Adam turns into steps of the learning rate's
    size on either path; the running statistics then differ in the
    evaluations by up to about 1e-2. tests/train/test_stack.py holds each
    seed's batch norm to its separate run in float64.)"""
    for seed in seeds:
        for split, rel in (('train', 1e-4), ('val', 1e-3), ('test', 1e-3)):
            a = stats(os.path.join(stacked, str(seed)), split)
            b = stats(os.path.join(separate, str(seed)), split)
            assert [r['epoch'] for r in a] == [r['epoch'] for r in b]
            for x, y in zip(a, b):
                for key in ('loss', 'mae', 'lr'):
                    assert x[key] == pytest.approx(y[key], rel=rel), \
                        (seed, split, x['epoch'], key)


def test_stack_writes_the_separate_runs_folders(molecules, tmp_path, capsys,
                                                one_thread):
    path, folder = molecules
    separate = tmp_path / 'separate'
    assert main.main(['--cfg', path, '--seeds', '0-2', 'out_dir',
                      str(separate)]) == 0
    assert main.main(['--cfg', path, '--seeds', '0-2', '--stack', '3']) == 0
    same_curves(folder, separate / 'mol', range(3))
    for seed in range(3):
        run_dir = folder / str(seed)
        names = set(os.listdir(run_dir))
        assert {'done', 'best.json', 'config.yaml', 'logging.log', 'ckpt',
                'train', 'val', 'test'} <= names
        assert {'last.pt', 'best.pt'} <= set(os.listdir(run_dir / 'ckpt'))
        # a complete seed of this config, as the launcher and agg see it
        cfg = load_cfg(path, ['seed', str(seed)])
        assert seed_status(str(run_dir), identity(cfg), data_record(cfg)).state == 'complete'
        log = (run_dir / 'logging.log').read_text()
        assert f'seed {seed} -> ' in log and ' INFO epoch 2 | ' in log
        assert ' ETA ' in log and '| best epoch ' in log
        assert not any(f'run mol seed {s} ' in log for s in range(3) if s != seed)
        assert 'stack of 3 seeds' in log
    out = capsys.readouterr().out
    assert '[seed 2] epoch 2 | ' in out
    from graphgps_ext.agg import main as agg
    assert agg([str(folder)]) == 0
    # complete seeds are not retrained
    before = snapshot(folder)
    assert main.main(['--cfg', path, '--seeds', '0-2', '--stack', '3']) == 0
    assert 'complete: same config' in capsys.readouterr().out
    after = snapshot(folder)
    assert {k: v for k, v in after.items() if 'agg' not in k} == \
        {k: v for k, v in before.items() if 'agg' not in k}


def test_each_seed_keeps_its_schedule_and_early_stop(molecules, tmp_path,
                                                    one_thread):
    """reduce_on_plateau follows each seed's own validation loss, and each
    seed stops early on its own: as in its separate run."""
    path, folder = molecules
    opts = ['optim.scheduler', 'reduce_on_plateau', 'optim.schedule_patience',
            '0', 'optim.reduce_factor', '0.5', 'optim.max_epoch', '6',
            'train.early_stop_patience', '2']
    separate = tmp_path / 'separate'
    assert main.main(['--cfg', path, '--seeds', '0-2', 'out_dir',
                      str(separate)] + opts) == 0
    assert main.main(['--cfg', path, '--seeds', '0-2', '--stack', '3'] + opts) == 0
    # (here seed 2 stops after 4 epochs, seeds 0 and 1 after 6, and their
    # learning rates differ from epoch 3 on)
    same_curves(folder, separate / 'mol', range(3))
    for seed in range(3):
        assert (folder / str(seed) / 'done').exists()


def test_interrupted_stack_resumes_its_seeds_at_different_epochs(
        molecules, tmp_path, monkeypatch, one_thread):
    path, folder = molecules
    separate = tmp_path / 'separate'
    assert main.main(['--cfg', path, '--seeds', '0,1', 'out_dir',
                      str(separate)]) == 0
    save = Trainer.save_last

    def interrupt(self):  # after seed 0's second epoch is saved
        save(self)
        if self.cfg.seed == 0 and self.last_epoch == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, 'save_last', interrupt)
    assert main.main(['--cfg', path, '--seeds', '0,1', '--stack', '2']) == 130
    monkeypatch.setattr(Trainer, 'save_last', save)
    # seed 0 holds epoch 2, seed 1 epoch 1: the stack resumes both
    assert len(stats(folder / '0')) == 2 and len(stats(folder / '1')) == 1
    log = (folder / '1' / 'logging.log').read_text()
    assert '--seeds 0,1 --stack 2' in log and 'train.auto_resume True' in log
    assert main.main(['--cfg', path, '--seeds', '0,1', '--stack', '2',
                      'train.auto_resume', 'True']) == 0
    same_curves(folder, separate / 'mol', (0, 1))
    for seed in (0, 1):
        assert (folder / str(seed) / 'done').exists()
        assert 'resumed after epoch' in (folder / str(seed) / 'logging.log').read_text()


def test_a_complete_seed_is_left_out_of_the_stack(molecules, tmp_path,
                                                  monkeypatch, one_thread):
    path, folder = molecules
    assert main.main(['--cfg', path, '--seeds', '1']) == 0
    before = snapshot(folder / '1')
    sizes = []
    init = stack_module.StackTrainer.__init__

    def record(self, trainers, *args, **kwargs):
        sizes.append(sorted(t.cfg.seed for t in trainers))
        init(self, trainers, *args, **kwargs)

    monkeypatch.setattr(stack_module.StackTrainer, '__init__', record)
    assert main.main(['--cfg', path, '--seeds', '0-2', '--stack', '3']) == 0
    assert sizes == [[0, 2]]
    assert snapshot(folder / '1') == before
    assert (folder / '0' / 'done').exists() and (folder / '2' / 'done').exists()


def test_a_seed_with_a_non_finite_loss_fails_alone(molecules, monkeypatch,
                                                   capsys, one_thread):
    path, folder = molecules
    start = run_stack.start

    def poisoned(cfg, *args, **kwargs):
        trainer = start(cfg, *args, **kwargs)
        if cfg.seed == 1:
            with torch.no_grad():
                next(trainer.module.parameters()).fill_(math.nan)
        return trainer

    monkeypatch.setattr(run_stack, 'start', poisoned)
    assert main.main(['--cfg', path, '--seeds', '0-2', '--stack', '3']) == 3
    assert (folder / '0' / 'done').exists() and (folder / '2' / 'done').exists()
    assert not (folder / '1' / 'done').exists()
    assert len(stats(folder / '0')) == 3 and not stats(folder / '1')
    err = capsys.readouterr().out
    assert '[seed 1]' in err and 'NaN loss in train at epoch 0' in err


@pytest.mark.parametrize('argv, message', [
    (['--seeds', '3', '--stack', '2'], 'with the single seed 3'),
    (['--seeds', '0-3', '--stack', '5'], 'only 4 seeds listed'),
    (['--seeds', '0-3', '--stack', '1'], 'at least two seeds'),
])
def test_refused_stacks(molecules, capsys, argv, message):
    path, folder = molecules
    assert main.main(['--cfg', path] + argv) == 2
    assert message in capsys.readouterr().err
    assert not folder.exists()


def test_refused_in_a_data_parallel_run(molecules, capsys, monkeypatch):
    from graphgps_ext import dist
    path, folder = molecules
    monkeypatch.setattr(dist, 'detect', lambda launcher='auto': dist.DistInfo(
        rank=0, world_size=2, local_rank=0, launcher='torchrun'))
    assert main.main(['--cfg', path, '--seeds', '0,1', '--stack', '2']) == 2
    assert 'data-parallel run of 2 processes' in capsys.readouterr().err


def test_refused_when_the_seeds_configs_differ(molecules, capsys, monkeypatch):
    path, folder = molecules
    from graphgps_ext.runs import seed as run_module
    finalize = run_module.finalize_cfg

    def per_seed(cfg, task):  # a dataset-dependent value that follows the seed
        out = finalize(cfg, task)
        cfg.model.edge_decoding = f'dot{cfg.seed}'
        return out

    monkeypatch.setattr(run_module, 'finalize_cfg', per_seed)
    assert main.main(['--cfg', path, '--seeds', '0,1', '--stack', '2']) == 2
    err = capsys.readouterr().err
    assert "model.edge_decoding (seed 0: 'dot0', seed 1: 'dot1')" in err
    for seed in (0, 1):  # nothing was written
        assert not os.path.exists(RunDir(str(folder / str(seed))).config)


def test_refused_when_the_stack_would_not_fit(molecules, capsys, monkeypatch):
    path, folder = molecules
    monkeypatch.setattr(stack_module, 'available_memory', lambda device: 1)
    assert main.main(['--cfg', path, '--seeds', '0-3', '--stack', '4']) == 2
    err = capsys.readouterr().err
    assert 'a stack of 4 seeds needs about' in err and 'without --stack' in err


def test_killed_stack_resumes(tmp_path, sample_data):
    """kill -9 in the middle of a stack of NCI1 seeds (whose splits depend
    on the seed: each evaluates its own), then the same command with
    train.auto_resume: every seed finishes with each epoch once."""
    root = sample_data('TUDataset')
    out = tmp_path / 'out'
    command = [sys.executable, 'main.py', '--cfg', 'configs/gin/nci1.yaml',
               '--seeds', '0-2', '--stack', '3', 'dataset.dir', str(root),
               'out_dir', str(out), 'accelerator', 'cpu',
               'gt.dim_hidden', '16', 'gt.layers', '2', 'train.batch_size', '16']
    env = dict(os.environ, OMP_NUM_THREADS='1', PYTHONPATH=REPO)
    proc = subprocess.Popen(command + ['optim.max_epoch', '200'], cwd=REPO,
                            env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    folder = out / 'gin-nci1'
    deadline = time.time() + 240
    try:
        first = folder / '0' / 'val' / 'stats.json'
        while time.time() < deadline and proc.poll() is None:
            if first.exists() and stats(folder / '0', 'val'):
                break  # seed 0 finished its first epoch: the others may not
            time.sleep(0.1)
        assert proc.poll() is None, 'the stack ended before it was killed'
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    epochs = [len(stats(folder / str(s))) if (folder / str(s) / 'train').exists()
              else 0 for s in range(3)]
    done = subprocess.run(command + ['optim.max_epoch', str(max(epochs) + 1),
                                     'train.auto_resume', 'True'],
                          cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    for s in range(3):
        assert (folder / str(s) / 'done').exists()
        for split in ('train', 'val', 'test'):
            got = [r['epoch'] for r in stats(folder / str(s), split)]
            assert got == list(range(max(epochs) + 1)), (s, split, got)
    assert 'each seed evaluates its own split' in done.stdout
