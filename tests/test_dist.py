"""Data-parallel training (:mod:`graphgps_ext.dist`) on CPU with gloo.

- environment parsing (torchrun, SLURM steps, node lists), batch-size and
  learning-rate rules, samplers (global batches independent of the number
  of processes, unpadded evaluation shards);
- 2 processes (``torch.multiprocessing.spawn``): gathering variable-size
  metric inputs with an odd number of samples, every metric equal to the
  single-process value, a sharded evaluation (uneven last batches) equal to
  the single-process one, DDP gradients equal to the full-batch gradient;
- end to end with ``torchrun --nproc_per_node 2 main.py``: same stats as one
  process with the same global batch, one results folder, rank-0-only
  logging, and a 2-process checkpoint resumed in 1 process.
"""
import os
import shutil
import subprocess
import sys

import pytest
import torch

from graphgps_ext import dist
from graphgps_ext.config import ConfigError
from graphgps_ext.loader.dataloader import EpochShuffleSampler, ShardSampler

from run_checks import all_stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------------ environment
@pytest.mark.parametrize('nodelist,hosts', [
    ('n5', ['n5']),
    ('gpu[01-03,7],login1', ['gpu01', 'gpu02', 'gpu03', 'gpu7', 'login1']),
    ('a[9-10],b[1]', ['a9', 'a10', 'b1']),
    ('a[08-10]', ['a08', 'a09', 'a10']),          # zero padding: width of the start
    ('n[098-100]', ['n098', 'n099', 'n100']),
    ('node[1-2]-ib', ['node1-ib', 'node2-ib']),   # suffix after the brackets
    ('rack[1-2]-node[01-02]', ['rack1-node01', 'rack1-node02',
                               'rack2-node01', 'rack2-node02']),  # first group outermost
    ('a,b[1-2]-x,c', ['a', 'b1-x', 'b2-x', 'c']),
    ('', []),
])
def test_parse_nodelist_slurm_forms(nodelist, hosts):
    assert dist.parse_nodelist(nodelist) == hosts
    assert dist.expand_nodelist(nodelist, scontrol=False) == hosts


@pytest.mark.parametrize('bad', ['n[1-', 'n]1', 'n[a]', 'n[3-1]', 'n[[1]]'])
def test_parse_nodelist_errors(bad, monkeypatch):
    with pytest.raises(ValueError, match='host list'):
        dist.parse_nodelist(bad)
    # Without SLURM's scontrol (an installed one answers for itself, and
    # answers some malformed lists), the parser's error reaches the config.
    monkeypatch.setattr(dist, '_scontrol_hostnames', lambda nodelist: None)
    with pytest.raises(ConfigError, match='SLURM_STEP_NODELIST'):
        dist.detect('auto', {'SLURM_PROCID': '0', 'SLURM_STEP_NUM_TASKS': '2',
                             'SLURM_STEP_NODELIST': bad})


def test_expand_nodelist_prefers_scontrol(tmp_path, monkeypatch):
    fake = tmp_path / 'scontrol'
    fake.write_text('#!/bin/sh\n[ "$1 $2" = "show hostnames" ] || exit 1\n'
                    'echo "from-scontrol-$3"\n')
    fake.chmod(0o755)
    monkeypatch.setenv('PATH', f'{tmp_path}:{os.environ["PATH"]}')
    assert dist.expand_nodelist('node[1-2]') == ['from-scontrol-node[1-2]']
    assert dist.expand_nodelist('node[1-2]', scontrol=False) == ['node1', 'node2']
    fake.write_text('#!/bin/sh\nexit 1\n')  # scontrol fails: the parser answers
    assert dist.expand_nodelist('node[1-2]') == ['node1', 'node2']


def test_detect_launchers():
    torchrun = {'RANK': '3', 'WORLD_SIZE': '8', 'LOCAL_RANK': '1',
                'MASTER_ADDR': 'h', 'MASTER_PORT': '1234'}
    info = dist.detect('auto', torchrun)
    assert (info.rank, info.world_size, info.local_rank, info.launcher) == (3, 8, 1, 'torchrun')
    step = {'SLURM_PROCID': '5', 'SLURM_STEP_NUM_TASKS': '8', 'SLURM_LOCALID': '1',
            'SLURM_STEP_NODELIST': 'gpu[07-08]', 'SLURM_JOB_ID': '20123',
            'SLURM_NTASKS': '8'}
    info = dist.detect('auto', step)
    assert (info.rank, info.world_size, info.local_rank, info.launcher) == (5, 8, 1, 'slurm')
    assert (info.master_addr, info.master_port) == ('gpu07', '20123')
    # srun torchrun: torchrun's variables win over the step's.
    assert dist.detect('auto', {**step, **torchrun}).world_size == 8
    assert dist.detect('auto', {**step, **torchrun}).rank == 3
    # The batch script of a multi-task job is one process (no srun step).
    batch = {'SLURM_PROCID': '0', 'SLURM_NTASKS': '8', 'SLURM_JOB_ID': '1'}
    assert dist.detect('auto', batch).world_size == 1
    assert dist.detect('slurm', batch).world_size == 8
    assert dist.detect('none', torchrun).world_size == 1
    assert dist.detect('auto', {}).world_size == 1
    with pytest.raises(ConfigError, match='torchrun --nproc_per_node'):
        dist.detect('torchrun', {})
    with pytest.raises(ConfigError, match='srun'):
        dist.detect('slurm', {})


def test_batch_size_and_lr_rules(tiny_cfg):
    tiny_cfg.train.batch_size = 16
    assert dist.resolve_batch_size(tiny_cfg, 4) == 64  # per process x world
    assert tiny_cfg.train.batch_size == 16
    assert dist.lr_scale(tiny_cfg, 4) == 1.0
    tiny_cfg.optim.lr_scaling = 'linear'
    assert dist.lr_scale(tiny_cfg, 4) == 4.0
    tiny_cfg.train.batch_size_global = 32
    with pytest.raises(ConfigError, match='lr_scaling must be none'):
        dist.resolve_batch_size(tiny_cfg, 2)
    tiny_cfg.optim.lr_scaling = 'none'
    assert dist.resolve_batch_size(tiny_cfg, 2) == 32
    assert tiny_cfg.train.batch_size == 16
    assert dist.resolve_batch_size(tiny_cfg, 1) == 32 and tiny_cfg.train.batch_size == 32
    with pytest.raises(ConfigError, match='not divisible by the 3 processes'):
        dist.resolve_batch_size(tiny_cfg, 3)


def test_sync_batchnorm_needs_cuda(tiny_cfg, monkeypatch):
    monkeypatch.setattr(dist, 'is_initialized', lambda: True)
    tiny_cfg.dist.sync_batchnorm = True
    with pytest.raises(ConfigError, match='sync_batchnorm False on CPU'):
        dist.wrap_model(torch.nn.BatchNorm1d(3), tiny_cfg, torch.device('cpu'))


# ------------------------------------------------------------------ samplers
def test_global_batches_do_not_depend_on_world_size():
    n, batch = 52, 8
    one = EpochShuffleSampler(range(n), num_replicas=1, rank=0, seed=3)
    one.set_epoch(2)
    order = list(one)
    assert sorted(order) == list(range(n))
    assert list(one) != order  # the next epoch without set_epoch: a new order
    shards = []
    for r in range(2):
        s = EpochShuffleSampler(range(n), num_replicas=2, rank=r, seed=3)
        s.set_epoch(2)
        shards.append(list(s))
    for k in range(0, n // 2, batch // 2):
        got = sorted(shards[0][k:k + batch // 2] + shards[1][k:k + batch // 2])
        assert got == sorted(order[2 * k:2 * k + batch])


def test_eval_shards_are_contiguous_and_unpadded():
    for n in (0, 1, 7, 33):
        shards = [list(ShardSampler(n, r, 2)) for r in range(2)]
        assert shards[0] + shards[1] == list(range(n))
        assert abs(len(shards[0]) - len(shards[1])) <= 1


# ------------------------------------------------------------------ 2 processes
def _shard(t, rank, world):
    n = t.size(0)
    return t[rank * n // world:(rank + 1) * n // world]


def _metric_data():
    """Full-epoch metric inputs, 7 samples (odd)."""
    g = torch.Generator().manual_seed(0)
    reg = torch.randn(7, 2, generator=g)
    reg_true = torch.randn(7, 2, generator=g)
    reg_true[3, 1] = float('nan')
    logits = torch.randn(7, 3, generator=g)
    labels = torch.tensor([0, 1, 2, 2, 1, 0, 1])
    ml = torch.randn(7, 4, generator=g)
    ml_true = (torch.rand(7, 4, generator=g) > 0.5).float()
    ml_true[0, 2] = float('nan')
    ranks = torch.randint(1, 20, (7, 2), generator=g).float()
    weights = torch.rand(7, generator=g) + 0.1
    return {'mae': (reg, reg_true), 'mse': (reg, reg_true),
            'accuracy': (logits, labels), 'f1_macro': (logits, labels),
            'ap': (ml, ml_true), 'auroc': (ml, ml_true),
            'mrr': (ranks, weights), 'hits@3': (ranks, weights)}


def _sequences(rank):
    """Decoded sequences whose length differs between the processes."""
    if rank == 0:
        return torch.tensor([[1, 2, 3], [4, -1, -1], [5, 6, -1], [7, 8, 9]])
    return torch.tensor([[1, 2, 3, 4, 5], [6, -1, -1, -1, -1], [2, 2, 2, 2, -1]])


def _tiny_eval(cfg, bundle, out_dir):
    """The val record of Trainer.run_split for TinyNet (seed 0) in the
    current process group (or one process)."""
    from conftest import TinyNet

    from graphgps_ext.loader import make_loaders
    from graphgps_ext.logger import RunLogger
    from graphgps_ext.train.loop import Trainer
    from graphgps_ext.train.loss import LOSSES
    torch.manual_seed(0)
    model = TinyNet(cfg, bundle.task)
    model = dist.wrap_model(model, cfg, torch.device('cpu'))
    loaders = make_loaders(cfg, bundle, dist.get_rank(), dist.get_world_size())
    trainer = Trainer(cfg, model, loaders, LOSSES['cross_entropy'], 'accuracy',
                      'max', bundle.task.metrics, out_dir,
                      RunLogger(cfg, out_dir, 'tiny'), torch.device('cpu'))
    record = trainer.run_split('val', 0, train=False)
    record.pop('time_epoch')
    return record, len(loaders['val'])


def _tiny_setup(out_dir):
    from types import SimpleNamespace

    from conftest import make_tiny_cfg, tiny_dataset, tiny_task
    cfg = make_tiny_cfg(out_dir)
    cfg.train.batch_size = 4
    data = tiny_dataset(64, seed=5)
    bundle = SimpleNamespace(splits={'train': data[:24], 'val': data[24:57],
                                     'test': data[57:]}, task=tiny_task())
    return cfg, bundle


def _worker(rank, world, init_file, out_dir):
    import torch.distributed as tdist

    from graphgps_ext.metrics import compute_metrics
    from graphgps_ext.train.loop import concat
    torch.set_num_threads(1)
    tdist.init_process_group('gloo', init_method=f'file://{init_file}',
                             rank=rank, world_size=world)
    try:
        # Metric inputs of 7 samples: 4 on rank 0, 3 on rank 1.
        for name, (pred, true) in _metric_data().items():
            got_p = dist.all_gather_cat(_shard(pred, rank, world))
            got_t = dist.all_gather_cat(_shard(true, rank, world))
            assert torch.equal(got_p, pred) and torch.allclose(got_t, true, equal_nan=True)
            assert compute_metrics([name], got_p, got_t) == compute_metrics([name], pred, true)
        seqs = dist.all_gather_cat(_sequences(rank))
        assert torch.equal(seqs, concat([_sequences(0), _sequences(1)]))
        # An empty shard (1 sample, 2 processes) contributes nothing.
        one = torch.tensor([[0.5, 1.5]])
        mine = one if rank == 0 else torch.empty(0)
        assert torch.equal(dist.all_gather_cat(mine), one)
        assert torch.equal(dist.all_reduce_sum(torch.tensor([1.0, rank])),
                           torch.tensor([2.0, 1.0]))
        assert dist.any_true(rank == 1) and not dist.any_true(False)
        assert dist.in_turn(lambda: rank) == rank

        # DDP: one SGD step on per-process halves of a batch equals the step
        # of one process on the whole batch (an unused parameter included).
        g = torch.Generator().manual_seed(1)
        x, y = torch.randn(8, 3, generator=g), torch.randn(8, 1, generator=g)

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(3, 1)
                self.unused = torch.nn.Linear(2, 2)

            def forward(self, inp):
                return self.lin(inp)

        def step(net, xs, ys):
            opt = torch.optim.SGD(net.parameters(), lr=0.5)
            torch.nn.functional.mse_loss(net(xs), ys).backward()
            opt.step()
            return dist.unwrap(net).lin.weight.detach().clone()

        torch.manual_seed(0)
        full = step(Net(), x, y)
        torch.manual_seed(0)
        local = step(Net(), _shard(x, rank, world), _shard(y, rank, world))
        torch.manual_seed(0)
        from types import SimpleNamespace
        cfg = SimpleNamespace(dist=SimpleNamespace(sync_batchnorm=False,
                                                   find_unused_parameters=True))
        ddp = step(dist.wrap_model(Net(), cfg, torch.device('cpu')),
                   _shard(x, rank, world), _shard(y, rank, world))
        assert torch.allclose(ddp, full, atol=1e-6), (ddp, full)
        assert not torch.allclose(local, full, atol=1e-3)  # the test can fail
        assert torch.equal(torch.stack(dist.all_gather_object(ddp)).std(0),
                           torch.zeros_like(ddp))

        # A sharded evaluation: 33 val graphs, batch 4 -> 16 + 17 graphs,
        # uneven last batches.
        cfg, bundle = _tiny_setup(out_dir)
        record, batches = _tiny_eval(cfg, bundle, out_dir)
        assert batches == (4 if rank == 0 else 5)
        torch.save(record, os.path.join(out_dir, f'record{rank}.pt'))
    finally:
        tdist.destroy_process_group()


def test_two_processes_reduce_exactly(tmp_path):
    import torch.multiprocessing as mp
    os.environ.setdefault('OMP_NUM_THREADS', '1')
    out = tmp_path / 'out'
    out.mkdir()
    # fork: the workers inherit this process's imports (no interpreter
    # start-up); they use one thread each.
    mp.start_processes(_worker, args=(2, str(tmp_path / 'init'), str(out)),
                       nprocs=2, join=True, start_method='fork')
    cfg, bundle = _tiny_setup(str(tmp_path / 'single'))
    single, _ = _tiny_eval(cfg, bundle, str(tmp_path / 'single'))
    for rank in range(2):
        record = torch.load(out / f'record{rank}.pt')
        assert record.keys() == single.keys()
        for key, value in single.items():
            assert record[key] == pytest.approx(value, rel=1e-6, abs=1e-7), key
    # Only rank 0 wrote the run logger's folders.
    assert sorted(os.listdir(out)) == ['record0.pt', 'record1.pt', 'test', 'train', 'val']


# ------------------------------------------------------------------ end to end
SMALL = ['dataset.tree_depth', '2', 'dataset.max_graphs', '90',
         'gt.layer_type', 'GatedGCN+None+None', 'mpnn.edge_norm', 'layer',
         'mpnn.node_norm', 'layer',  # BatchNorm statistics are per process
         'gt.layers', '2', 'gt.dim_hidden', '16', 'train.batch_size_global', '32',
         'optim.base_lr', '0.01', 'optim.scheduler', 'none', 'run_name', 'q']


def _close(a, b, tol=1e-4):
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        assert ra.keys() == rb.keys()
        for k in ra:
            assert ra[k] == pytest.approx(rb[k], rel=tol, abs=tol), (k, ra, rb)


def _main_in_process(work, monkeypatch, *args):
    """``python main.py`` in this process (saves an interpreter start)."""
    import signal
    sys.path.insert(0, ROOT)
    try:
        import main as entry
    finally:
        sys.path.remove(ROOT)
    monkeypatch.chdir(work)
    handler = signal.getsignal(signal.SIGTERM)
    try:
        assert entry.main(['--cfg', str(work / 'q.yaml'), *args]) == 0
    finally:
        signal.signal(signal.SIGTERM, handler)


def test_torchrun_two_processes_equal_one_and_resume_in_one(tmp_path, monkeypatch):
    work = tmp_path
    shutil.copy(os.path.join(ROOT, 'configs', 'quickstart.yaml'), work / 'q.yaml')
    data = ['dataset.dir', str(work / 'datasets')]
    # 1 process, global batch 32, 4 epochs (also generates the dataset).
    _main_in_process(work, monkeypatch, *SMALL, *data, 'out_dir', 'one',
                     'optim.max_epoch', '4')
    # 2 processes x 16, 2 epochs.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('WANDB_', 'SLURM_'))}
    env.update(PYTHONPATH=ROOT, OMP_NUM_THREADS='1', WANDB_MODE='offline',
               PYTHONUNBUFFERED='1')
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone',
           '--nproc_per_node', '2', os.path.join(ROOT, 'main.py'),
           '--cfg', str(work / 'q.yaml'), *SMALL, *data, 'out_dir', 'two',
           'optim.max_epoch', '2']
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    one, two = all_stats(str(work / 'one' / 'q' / '0')), all_stats(str(work / 'two' / 'q' / '0'))
    for split in ('train', 'val', 'test'):
        _close(two[split], one[split][:2])
    # One results folder, written by rank 0 only; one log line per epoch.
    assert os.listdir(work / 'two') == ['q'] and os.listdir(work / 'two' / 'q') == ['0']
    log = (work / 'two' / 'q' / '0' / 'logging.log').read_text()
    assert log.count('INFO epoch 1 | ') == 1 and '2 processes (gloo), batch 16 per process' in log
    # The start line states the base learning rate, not the first warm-up step's.
    assert '= 32 global, base lr 0.01 (optim.lr_scaling none)' in log
    assert proc.stdout.count('INFO epoch 1 | ') == 1
    last = torch.load(work / 'two' / 'q' / '0' / 'ckpt' / 'last.pt', weights_only=False)
    assert last['world_size'] == 2 and len(last['rng_ranks']) == 2
    assert not any(k.startswith('module.') for k in last['model'])

    # Resume the 2-process run in 1 process up to epoch 4: the same stats
    # as the uninterrupted 1-process run.
    os.remove(work / 'two' / 'q' / '0' / 'done')
    _main_in_process(work, monkeypatch, *SMALL, *data, 'out_dir', 'two',
                     'optim.max_epoch', '4', 'train.auto_resume', 'True')
    resumed = all_stats(str(work / 'two' / 'q' / '0'))
    for split in ('train', 'val', 'test'):
        _close(resumed[split], one[split])
    assert 'written by 2 process(es), resuming in 1' in (
        work / 'two' / 'q' / '0' / 'logging.log').read_text()
