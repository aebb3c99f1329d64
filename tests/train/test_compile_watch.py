"""A compiled run stays compiled: a fixed number of variants whatever the
epochs and the learning rate, the check's variants reused by training, a
recompilation after warm-up reported with its reason, and dynamo's
recompile limit set from the capacities. (``aot_eager``: dynamo and AOT
autograd, as on a GPU, without inductor's code generation.)"""
import logging
import os
from types import SimpleNamespace

import pytest
import torch

from graphgps_ext.loader.pad import Capacities, used_capacities
from graphgps_ext.runs.config import load_cfg
from graphgps_ext.train import speed
from graphgps_ext.train.compile_watch import (CompileWatch, recompile_limit,
                                              variant)
from graphgps_ext.transform.precompute import EncodedList

from molecules import GRAPH_TASK, molecule


def _graphs(sizes, seeds):
    graphs = [molecule(n, s, dtype=torch.float32) for n, s in zip(sizes, seeds)]
    return EncodedList(graphs)


@pytest.fixture
def two_capacity_run(monkeypatch):
    """``run_seed`` on molecules whose training batches take two
    capacities in every epoch, whatever the order: 7 equal 5-node graphs
    and one of 30 nodes, 4 per batch (one batch holds the large graph, the
    other does not); the evaluation splits add capacities of their own."""
    import graphgps_ext.runs.seed as run
    train = _graphs([5] * 7 + [30], [0] * 7 + [1])
    val = _graphs([6, 7, 8, 9, 40], [2, 3, 4, 5, 6])
    test = _graphs([5, 5, 5, 5, 9], [0] * 4 + [9])
    bundle = SimpleNamespace(splits={'train': train, 'val': val, 'test': test},
                             task=GRAPH_TASK, split_indices=None)
    monkeypatch.setattr(run, 'load_dataset', lambda cfg: bundle)
    monkeypatch.setattr(speed, 'BACKEND', 'aot_eager')
    # a run past the limit would fail here instead of running eagerly
    config = torch._dynamo.config
    monkeypatch.setattr(config, 'fail_on_recompile_limit_hit'
                        if hasattr(config, 'fail_on_recompile_limit_hit')
                        else 'fail_on_cache_limit_hit', True)
    return run


def _cfg(out_dir, *opts):
    cfg = load_cfg(None, [
        'out_dir', str(out_dir), 'run_name', 'mol', 'accelerator', 'cpu',
        'gt.layer_type', 'GCN+None+None', 'gt.layers', '1',
        'gt.dim_hidden', '8', 'train.batch_size', '4',
        'train.static_shapes', 'True', 'train.compile', 'True',
        'optim.optimizer', 'adamW', 'optim.base_lr', '0.003',
        'optim.scheduler', 'cosine_with_warmup', 'optim.num_warmup_epochs', '2',
        'optim.clip_grad_norm', 'True', 'train.eval_period', '1'] + list(opts))
    cfg.defrost()
    cfg.gt.dropout = cfg.gt.attn_dropout = 0.0
    return cfg


def _counts():
    from torch._dynamo.utils import counters
    return (counters['frames'].get('total', 0),
            counters['stats'].get('unique_graphs', 0))


def _compiled_run(run, out_dir, epochs, *opts):
    """Compiled counts after each epoch, the trainer and the run's log."""
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    after, trainers = [], []

    def record(trainer, epoch, records):
        after.append(_counts())
        trainers.append(trainer)
        assert records['train']['lr'] > 0

    cfg = _cfg(out_dir, 'optim.max_epoch', str(epochs), *opts)
    run.run_seed(cfg, callbacks=[record])
    with open(os.path.join(cfg.out_dir, 'mol', '0', 'logging.log')) as f:
        log = f.read()
    return after, trainers[0], log


def test_recompiles_no_more_in_five_epochs_than_in_two(two_capacity_run,
                                                       tmp_path):
    """Five epochs of a changing learning rate (cosine with warm-up) and
    several capacities compile what the first two compile; the one-batch
    check's variants, made from the loader's own batches, are ones
    training uses (none is called by the check alone)."""
    after, trainer, log = _compiled_run(two_capacity_run, tmp_path / 'a', 5,
                                        'train.fast_path_check', 'True')
    lrs = [r['lr'] for r in _stats(tmp_path / 'a')]
    assert len(set(lrs)) == 5  # a new learning rate every epoch
    assert after[1] == after[4]  # frames and graphs after 2 and 5 epochs
    watch = trainer.watch
    assert not watch.late and not watch.limit_hits
    assert isinstance(trainer.optimizer.param_groups[0]['lr'], torch.Tensor)
    forward = {v for v in watch.variants if v[0] in ('train', 'eval')}
    train_caps = {v for v in forward if v[0] == 'train'}
    assert len(train_caps) == 2 and len(forward) - len(train_caps) >= 3
    assert 'fast path checked on one batch' in log
    assert 'none recompiled after warm-up' in log
    assert f'torch.compile: {len(watch.variants)} variant(s)' in log
    assert min(watch.calls[v] for v in forward) > 1


def _stats(out_dir):
    from run_checks import stats
    return stats(os.path.join(str(out_dir), 'mol', '0'))


def test_late_recompilation_is_a_warning_naming_its_reason(caplog):
    """A compiled function that specialises on a value which changes (a
    Python float) recompiles in a warm call: one warning with dynamo's
    reason; the first call of each variant is its warm-up."""
    torch._dynamo.reset()
    log = logging.getLogger('test-compile-watch')
    watch = CompileWatch(log)
    try:
        scale = torch.compile(lambda x, k: x * k, backend='aot_eager')
        with caplog.at_level(logging.WARNING, logger='test-compile-watch'):
            for k in (0.5, 0.5, 0.25):
                with watch.call(('train', )):
                    scale(torch.ones(3), k)
            with watch.call(('eval', )):  # a new variant: its warm-up
                scale(torch.ones(4), 0.125)
    finally:
        watch.close()
    assert len(watch.late) == 1 and 'k == 0.5' in watch.late[0][1]
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and 'recompiled after warm-up' in warned[0]
    assert 'k == 0.5' in warned[0]
    assert watch.variants == {('train', ), ('eval', )}
    assert 'none recompiled' not in watch.summary()


def test_recompile_limit_follows_the_capacities(monkeypatch):
    """Dynamo's limit of variants per compiled function is set from the
    training capacities and those the evaluation splits are padded to."""
    from graphgps_ext.network import GPSModel
    from graphgps_ext.train.loss import LOSSES
    assert recompile_limit(2, 1) == 8  # never below dynamo's default
    assert recompile_limit(4, 5) == 13
    train = _graphs([5] * 7 + [30], [0] * 7 + [1])
    big = _graphs([40, 70, 130, 260, 520, 1030], list(range(6)))
    caps = Capacities.from_dataset(train, 1)
    evals = used_capacities(caps, big, 1)
    assert len(evals) == 6  # one graph each, every one past the buckets
    limits = []

    def fake(fn, cfg, dynamic, recompile_limit=None):
        limits.append(recompile_limit)
        return fn
    monkeypatch.setattr(speed, '_compile', fake)
    cfg = _cfg('/nonexistent', 'train.batch_size', '1')
    speed.choose_fast_path(cfg, GPSModel(cfg, GRAPH_TASK), train, 'cpu',
                           LOSSES['l1'], eval_datasets=[big])
    assert limits == [recompile_limit(len(caps.buckets), 6)]


def test_variant_of_a_batch():
    from torch_geometric.data import Batch

    from graphgps_ext.loader.pad import pad_batch
    graphs = [molecule(5, 0), molecule(7, 1)]
    caps = Capacities.from_sizes([5, 7], [10, 14], batch_size=2)
    padded = pad_batch(Batch.from_data_list(graphs), caps)
    cap = caps.buckets[0]
    assert variant('train', padded, True) == ('train', cap.nodes, cap.edges,
                                               cap.graphs)
    assert variant('eval', padded, False) == ('eval', )
