"""The fast path in the training loop: static-shape batches train exactly
as unpadded ones, compile once per capacity, and a failed one-batch check
falls back to the eager path with one warning."""
import os

import pytest
import torch

from graphgps_ext.loader.pad import Capacities
from graphgps_ext.runs.config import load_cfg
from graphgps_ext.train import speed

from molecules import GRAPH_TASK, molecule, molecule_bundle
from run_checks import stats

LAYER = 'GatedGCN+Transformer+GEANet'


def molecule_cfg(out_dir, *opts):
    cfg = load_cfg(None, [
        'out_dir', str(out_dir), 'run_name', 'mol', 'accelerator', 'cpu',
        'gt.layer_type', LAYER, 'gt.layers', '2', 'gt.dim_hidden', '16',
        'gt.n_heads', '2', 'gea.edge_norm', 'batch',
        'posenc_RWSE.enable', 'True', 'posenc_RWSE.kernel.times', '[1, 2, 3, 4]',
        'posenc_RWSE.dim_pe', '4', 'train.batch_size', '5',
        'train.eval_period', '1',
        'optim.max_epoch', '3', 'optim.scheduler', 'none',
        'optim.base_lr', '0.003'] + list(opts))
    cfg.defrost()
    cfg.gt.dropout = cfg.gt.attn_dropout = 0.0
    return cfg


@pytest.fixture
def molecule_run(monkeypatch):
    import graphgps_ext.runs.seed as run
    bundle = molecule_bundle(
        split_indices={'train': torch.arange(24), 'val': torch.arange(24, 32),
                       'test': torch.arange(32, 40)})
    monkeypatch.setattr(run, 'load_dataset', lambda cfg: bundle)
    return run


def test_training_loop_padded_equals_unpadded(molecule_run, tmp_path):
    runs = {}
    for static in (False, True):
        cfg = molecule_cfg(tmp_path / str(static), 'train.static_shapes',
                           str(static))
        molecule_run.run_seed(cfg)
        run_dir = os.path.join(cfg.out_dir, 'mol', '0')
        runs[static] = run_dir
    # float32: the sums run in another order (the float64 equality of every
    # branch, encoder and head is tests/loader/test_pad.py). The training
    # losses agree to about 1e-7; the evaluations after Adam's steps differ
    # by up to about 2e-4 (relative): the rounding differences of the steps,
    # which Adam's normalised update enlarges (see below).
    for split, rel in (('train', 1e-5), ('val', 5e-4), ('test', 5e-4)):
        plain, padded = stats(runs[False], split), stats(runs[True], split)
        assert len(plain) == len(padded) == 3
        for a, b in zip(plain, padded):
            assert b['loss'] == pytest.approx(a['loss'], rel=rel)
            assert b['mae'] == pytest.approx(a['mae'], rel=rel)
    # (The weights are not compared: the bias before a batch norm has a zero
    # gradient up to rounding, which Adam's normalised step turns into
    # different noise on either path.)


def test_static_shapes_auto_is_off_on_cpu(molecule_run, tmp_path):
    cfg = molecule_cfg(tmp_path)
    assert cfg.train.static_shapes == 'auto'
    assert not speed.static_shapes_wanted(cfg, 'cpu')
    assert speed.static_shapes_wanted(cfg, 'cuda')
    cfg.train.static_shapes = False
    assert not speed.static_shapes_wanted(cfg, 'cuda')


def _fast_path(molecule_run, tmp_path, *opts, log=None):
    from graphgps_ext.network import GPSModel
    from graphgps_ext.train.loss import LOSSES
    cfg = molecule_cfg(tmp_path, 'train.static_shapes', 'True', *opts)
    torch.manual_seed(0)
    model = GPSModel(cfg, GRAPH_TASK)
    bundle = molecule_run.load_dataset(cfg)
    fast = speed.choose_fast_path(cfg, model, bundle.splits['train'], 'cpu',
                                  LOSSES['l1'], log=log)
    return model, fast


def test_fast_path_check_passes_and_keeps_the_model(molecule_run, tmp_path):
    from graphgps_ext.network import GPSModel
    model, fast = _fast_path(molecule_run, tmp_path,
                             'train.fast_path_check', 'True')
    assert fast.reason is None and isinstance(fast.capacities, Capacities)
    cfg = molecule_cfg(tmp_path)
    torch.manual_seed(0)
    fresh = GPSModel(cfg, GRAPH_TASK)
    # the check restores parameters, buffers and gradients
    for (k, a), b in zip(fresh.state_dict().items(), model.state_dict().values()):
        assert torch.equal(a, b), k
    assert all(p.grad is None for p in model.parameters())


def test_failed_check_falls_back_to_eager_with_one_warning(
        molecule_run, tmp_path, monkeypatch):
    calls = []

    def broken_compile(model, cfg, static=False, **kwargs):
        def net(batch):  # a capture that fails, as a CUDA graph can
            calls.append(static)
            raise RuntimeError('CUDA graph capture failed (simulated)')
        return net

    monkeypatch.setattr(speed, 'compile_model', broken_compile)
    with pytest.warns(RuntimeWarning) as record:
        model, fast = _fast_path(molecule_run, tmp_path,
                                 'train.fast_path_check', 'True')
    assert len(record) == 1
    message = str(record[0].message)
    assert 'fast path off, training eagerly' in message
    assert 'CUDA graph capture failed (simulated)' in message
    assert calls == [True]
    assert fast.capacities is None and fast.net is model
    assert 'capture failed' in fast.reason


def test_check_catches_a_fast_path_with_another_loss(molecule_run, tmp_path,
                                                     monkeypatch):
    def wrong(model, cfg, static=False, **kwargs):
        # the static path's net computes the loss inside (ForwardLoss)
        assert isinstance(model, speed.ForwardLoss)

        def net(batch):
            pred, true, loss = model(batch)
            return pred, true, loss + 1.0
        return net

    monkeypatch.setattr(speed, 'compile_model', wrong)
    with pytest.warns(RuntimeWarning, match='differs from the eager loss'):
        _, fast = _fast_path(molecule_run, tmp_path, 'train.fast_path_check',
                             'True')
    assert fast.capacities is None


def test_failed_check_trains_eagerly(molecule_run, tmp_path, monkeypatch):
    """A run whose fast path fails the check trains as the eager run does."""
    def broken_compile(model, cfg, static=False, **kwargs):
        def net(batch):
            raise RuntimeError('capture failed (simulated)')
        return net

    eager = molecule_cfg(tmp_path / 'eager', 'train.static_shapes', 'False')
    molecule_run.run_seed(eager)
    monkeypatch.setattr(speed, 'compile_model', broken_compile)
    cfg = molecule_cfg(tmp_path / 'fallback', 'train.static_shapes', 'True',
                       'train.fast_path_check', 'True')
    molecule_run.run_seed(cfg)
    a = stats(os.path.join(eager.out_dir, 'mol', '0'), 'train')
    b = stats(os.path.join(cfg.out_dir, 'mol', '0'), 'train')
    assert [r['loss'] for r in a] == [r['loss'] for r in b]
    log = open(os.path.join(cfg.out_dir, 'mol', '0', 'logging.log')).read()
    assert log.count('fast path off, training eagerly') == 1


#: Layer types of the compile test: message passing with GEANet, and the
#: dense attention branches (Transformer; CSA with its pair encoder; MNA),
#: and GCN (its normalised adjacency).
GEA = ['gea.n_heads', '2', 'gea.num_slots', '4', 'gea.edge_norm', 'batch']
HEADS = ['gt.n_heads', '2']
COMPILED = {'GINE+None+GEANet': GEA,
            'GatedGCN+Transformer+GEANet': GEA + HEADS,
            'None+CSA+None': HEADS, 'None+MNA+None': HEADS,
            'GCN+None+None': []}


INDUCTOR = pytest.mark.skipif(
    not os.environ.get('GRAPHGPS_EXT_INDUCTOR_TEST'),
    reason='inductor code generation takes minutes on a small CPU host; '
           'set GRAPHGPS_EXT_INDUCTOR_TEST=1 to run it')


@pytest.mark.parametrize('backend,layer_type', [
    ('aot_eager', 'GINE+None+GEANet'),
    *(pytest.param('inductor', t, marks=INDUCTOR) for t in COMPILED)])
def test_compile_once_per_capacity_never_after_warm_up(backend, layer_type):
    """torch.compile of the model alone (a loss without a row mask) on
    static shapes: one graph per capacity bucket, no recompilation when
    later batches of other sizes reuse a bucket, also for the dense
    attention layout (``[graphs, graph_nodes]`` of the capacity).
    (``aot_eager``: dynamo and AOT autograd as on a GPU, without the
    inductor's code generation, to stay within seconds on a CPU; every
    family compiles with the loss inside in
    :func:`test_compiled_forward_and_loss_equal_the_eager_step`.)"""
    from torch._dynamo.utils import counters
    from torch_geometric.data import Batch

    from graphgps_ext.loader.pad import pad_batch, trim
    from graphgps_ext.network import GPSModel
    cfg = load_cfg(None, ['gt.layer_type', layer_type, 'gt.layers', '1',
                          'gt.dim_hidden', '8'] + COMPILED[layer_type])
    torch.manual_seed(0)
    model = GPSModel(cfg, GRAPH_TASK)
    assert speed.capacity_static(model)
    graphs = [molecule(5 + (7 * i) % 13, i) for i in range(24)]
    for g in graphs:
        g.y = g.y.float()
    caps = Capacities.from_sizes([g.num_nodes for g in graphs],
                                 [g.num_edges for g in graphs], batch_size=4)
    torch._dynamo.reset()
    counters.clear()
    net = torch.compile(model, backend=backend, dynamic=False)
    opt = torch.optim.Adam(model.parameters())
    seen, sizes = set(), set()
    for step in range(12):
        batch = Batch.from_data_list(graphs[2 * step:2 * step + 4]
                                     if step < 10 else graphs[step:step + 3])
        sizes.add(batch.num_nodes)
        batch = pad_batch(batch, caps)
        seen.add(batch.num_nodes)
        pred, true = trim(*net(batch), batch, 'graph')
        loss = (pred - true).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert len(sizes) > len(seen) >= 2  # several real sizes, fewer capacities
    assert counters['stats']['unique_graphs'] == len(seen)
    assert counters['frames']['ok'] == len(seen)
    assert not counters['graph_break']


def test_attention_models_compile_static():
    from graphgps_ext.network import GPSModel
    cfg = molecule_cfg('/nonexistent')
    model = GPSModel(cfg, GRAPH_TASK)
    # Transformer: the dense layout is the capacity's [graphs, graph_nodes]
    assert speed.capacity_static(model)


def _step_run(cfg_opts, compiled: bool, steps: int = 8, inside: bool = True,
              between=None):
    """``steps`` training steps of a tiny model through the trainer on
    static-shape batches; ``compiled``: the forward pass and the update
    compiled (``aot_eager``); ``inside``: the loss inside the forward pass
    (:class:`~graphgps_ext.train.speed.ForwardLoss`, as a static-shape run
    has it), else cut rows and the loss after it; ``between``: a list that
    gets the operators dispatched between the forward and the backward pass
    of every step after the first two. Returns (losses, parameters,
    trainer, number of capacities used)."""
    from torch_geometric.data import Batch

    from graphgps_ext.bench.steps import (between_forward_and_backward,
                                          make_trainer)
    from graphgps_ext.loader.pad import pad_batch
    from graphgps_ext.network import GPSModel
    from graphgps_ext.train.loop import PassStats
    from graphgps_ext.train.loss import LOSSES
    cfg = load_cfg(None, ['gt.layer_type', 'GINE+None+GEANet', 'gt.layers', '1',
                          'gt.dim_hidden', '8', 'train.static_shapes', 'True',
                          'train.compile', str(compiled),
                          'optim.clip_grad_norm', 'True',
                          'optim.clip_grad_norm_value', '0.05',
                          'optim.optimizer', 'adamW', 'optim.weight_decay',
                          '0.01', 'optim.base_lr', '0.01'] + GEA + list(cfg_opts))
    cfg.defrost()
    cfg.gt.dropout = cfg.gt.attn_dropout = 0.0
    torch.manual_seed(0)
    # float64: a bias before a batch norm has a gradient of rounding noise,
    # which Adam's normalisation would turn into steps of random sign.
    model = GPSModel(cfg, GRAPH_TASK).double()
    graphs = [molecule(5 + (7 * i) % 13, i) for i in range(24)]
    for g in graphs:
        g.y = g.y.double()
    caps = Capacities.from_sizes([g.num_nodes for g in graphs],
                                 [g.num_edges for g in graphs], batch_size=4)
    if inside:
        net, _ = speed.static_net(model, LOSSES['l1'], cfg, 'cpu')
    else:
        net = speed.compile_model(model, cfg, static=True)
    fast = speed.FastPath(caps, net, loss_inside=inside,
                          compile_step=speed.compile_step_wanted(cfg, True))
    trainer = make_trainer(cfg, model, [], torch.device('cpu'), fast_path=fast)
    trainer.model.train()
    done, seen = PassStats(), set()
    with torch.enable_grad():
        for step in range(steps):
            if step == steps // 2:  # a schedule's new lr: no recompilation
                for group in trainer.optimizer.param_groups:
                    group['lr'] = 0.005
            batch = pad_batch(Batch.from_data_list(
                graphs[2 * step:2 * step + 4] if step % 3 else graphs[step:step + 3]),
                caps)
            seen.add(batch.num_nodes)
            if between is not None and step >= 2:  # after the compilations
                with between_forward_and_backward(
                        trainer, torch.device('cpu')) as counter:
                    trainer.train_batch(step, batch, done)
                between.append(counter.ops)
            else:
                trainer.train_batch(step, batch, done)
    losses = torch.stack([l.reshape(()) for l in done.losses])
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return losses, params, trainer, len(seen)


def test_compiled_whole_step_trains_as_the_eager_step(monkeypatch):
    """``train.compile True`` on static shapes compiles the update
    (clipping, AdamW) beside the forward pass: the same losses and
    parameters as the eager step, one forward graph per capacity, one
    update graph set for all, no recompilation after warm-up (also when the
    learning rate changes)."""
    from torch._dynamo.utils import counters
    monkeypatch.setattr(speed, 'BACKEND', 'aot_eager')
    # the reference: the eager step, the padding rows cut before the loss,
    # on per-parameter tensors as the compiled update has them (flat
    # parameters would also decay the parameters without a gradient)
    ref_losses, ref_params, eager, _ = _step_run(
        ['optim.flat_params', 'False'], compiled=False, inside=False)
    assert eager.update.compiled is None
    torch._dynamo.reset()
    counters.clear()
    between = []
    losses, params, trainer, n_caps = _step_run([], compiled=True,
                                                between=between)
    assert trainer.update.compiled is not None and trainer.update.reason is None
    assert trainer.loss_inside
    # compiled forward and loss, then its compiled backward: no eager
    # operator between them
    assert between == [0] * 6
    # (The update has its graph breaks: the optimiser step splits around
    # its grad mode. The forward pass and loss have none:
    # test_compiled_forward_and_loss_equal_the_eager_step.)
    assert n_caps >= 2
    torch.testing.assert_close(losses, ref_losses, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(params, ref_params, rtol=1e-5, atol=1e-5)
    # (Not to float64 rounding: the compiled AdamW computes its bias
    # corrections from a float32 step tensor, 1e-7 relative.)
    # The forward pass: one graph per capacity; the update: the same
    # graphs (the optimiser step breaks the graph around its grad mode) for
    # every capacity.
    update_frames = counters['frames']['ok'] - n_caps
    assert update_frames >= 1
    torch._dynamo.reset()
    counters.clear()
    # Two steps compile as many update frames as eight: none of them
    # depends on the batch or its capacity.
    _, _, _, one = _step_run([], compiled=True, steps=2)
    assert counters['frames']['ok'] == one + update_frames


def test_failed_compiled_update_falls_back_to_eager_with_one_warning(
        monkeypatch):
    """A compiled update that fails (here: a simulated CUDA graph capture
    failure on its first call) is replaced by the eager update, with one
    warning in the run's log, and training goes on as the eager step."""
    import logging

    from graphgps_ext.logger import LOGGER_NAME
    monkeypatch.setattr(speed, 'BACKEND', 'aot_eager')
    ref_losses, ref_params, _, _ = _step_run(['optim.flat_params', 'False'],
                                             compiled=False)

    def broken(fn, cfg, dynamic, **kwargs):
        def capture(*args):  # a capture that fails, as a CUDA graph can
            raise RuntimeError('CUDA graph capture failed')
        if getattr(fn, '__name__', None) == '_update':
            return capture
        return torch.compile(fn, backend='aot_eager', dynamic=dynamic)

    monkeypatch.setattr(speed, '_compile', broken)
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(handler)
    try:
        losses, params, trainer, _ = _step_run([], compiled=True)
    finally:
        logger.removeHandler(handler)
    assert len([r for r in records
                if 'compiled update off' in r.getMessage()]) == 1
    assert 'CUDA graph capture failed' in trainer.update.reason
    torch.testing.assert_close(losses, ref_losses, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(params, ref_params, rtol=1e-5, atol=1e-5)


def test_loss_outside_the_forward_pass_runs_operators_between():
    """The count can fail: with the rows cut and the loss computed after
    the compiled forward pass (a loss without the row mask), the step runs
    eager operators between the forward and the backward pass."""
    from graphgps_ext.train.loss import LOSSES
    between = []
    _step_run([], compiled=False, steps=4, inside=False, between=between)
    # 2 slices and the L1 loss's operators
    assert len(between) == 2 and between[0] == between[1] >= 10
    inside = []
    _step_run([], compiled=False, steps=4, between=inside)
    assert inside == [0, 0]
    # a loss that takes no row mask keeps the cut rows and the loss outside
    cfg = molecule_cfg('/nonexistent', 'train.static_shapes', 'True')
    from graphgps_ext.network import GPSModel
    model = GPSModel(cfg, GRAPH_TASK)
    net, loss_inside = speed.static_net(
        model, lambda pred, true: LOSSES['l1'](pred, true), cfg, 'cpu')
    assert net is model and not loss_inside


@pytest.mark.parametrize('layer_type', list(COMPILED))
def test_compiled_forward_and_loss_equal_the_eager_step(layer_type,
                                                        monkeypatch):
    """Static shapes under ``train.compile`` (``aot_eager``: dynamo and AOT
    autograd, as on a GPU, without code generation): the forward pass and
    the masked loss compiled as one graph per capacity give, in float64,
    the eager unpadded step's loss and gradients; no recompilation, no
    graph break."""
    from torch._dynamo.utils import counters
    from torch_geometric.data import Batch

    from graphgps_ext.loader.pad import pad_batch
    from graphgps_ext.network import GPSModel
    from graphgps_ext.train.loss import LOSSES
    monkeypatch.setattr(speed, 'BACKEND', 'aot_eager')
    cfg = load_cfg(None, ['gt.layer_type', layer_type, 'gt.layers', '1',
                          'gt.dim_hidden', '8', 'train.static_shapes', 'True',
                          'train.compile', 'True'] + COMPILED[layer_type])
    cfg.defrost()
    cfg.gt.dropout = cfg.gt.attn_dropout = 0.0
    torch.manual_seed(0)
    model = GPSModel(cfg, GRAPH_TASK).double()
    model.train()
    graphs = [molecule(5 + (7 * i) % 13, i) for i in range(24)]
    caps = Capacities.from_sizes([g.num_nodes for g in graphs],
                                 [g.num_edges for g in graphs], batch_size=4)
    net, inside = speed.static_net(model, LOSSES['l1'], cfg, 'cpu')
    assert inside and isinstance(net._orig_mod, speed.ForwardLoss)
    torch._dynamo.reset()
    counters.clear()
    seen, sizes = set(), set()
    for step in range(8):
        items = graphs[2 * step:2 * step + 4] if step % 3 else graphs[step:step + 3]
        plain = Batch.from_data_list(items)
        padded = pad_batch(Batch.from_data_list(items), caps)
        sizes.add(plain.num_nodes)
        seen.add(padded.num_nodes)
        model.zero_grad(set_to_none=True)
        ref = LOSSES['l1'](*model(plain))  # the eager unpadded step
        ref.backward()
        ref_grads = {n: p.grad.clone() for n, p in model.named_parameters()
                     if p.grad is not None}
        model.zero_grad(set_to_none=True)
        pred, true, loss = net(padded)
        loss.backward()
        assert pred.size(0) == padded.num_graphs  # padded outputs returned
        torch.testing.assert_close(loss, ref, rtol=1e-10, atol=1e-12)
        grads = {n: p.grad for n, p in model.named_parameters()
                 if p.grad is not None}
        assert grads.keys() == ref_grads.keys()
        for name, g in grads.items():
            torch.testing.assert_close(g, ref_grads[name], rtol=1e-9,
                                       atol=1e-11, msg=name)
    assert len(sizes) > len(seen) >= 2  # several real sizes, fewer capacities
    # One graph per capacity: a recompilation (e.g. a guard on a batch's
    # real count) would compile one more frame.
    assert counters['stats']['unique_graphs'] == len(seen)
    assert counters['frames']['total'] == counters['frames']['ok'] == len(seen)
    assert not counters['graph_break']


def _static_trainer(*opts):
    """A tiny GINE+GEANet model (batch norms) and its trainer on the
    static-shape path, the loss inside the (eager) forward pass."""
    from graphgps_ext.bench.steps import make_trainer
    from graphgps_ext.network import GPSModel
    from graphgps_ext.train.loss import LOSSES
    cfg = load_cfg(None, ['gt.layer_type', 'GINE+None+GEANet', 'gt.layers', '1',
                          'gt.dim_hidden', '8', 'train.static_shapes', 'True']
                   + GEA + list(opts))
    cfg.defrost()
    cfg.gt.dropout = cfg.gt.attn_dropout = 0.0
    torch.manual_seed(0)
    model = GPSModel(cfg, GRAPH_TASK)
    graphs = [molecule(5 + (7 * i) % 13, i) for i in range(12)]
    for g in graphs:
        g.y = g.y.float()
    caps = Capacities.from_sizes([g.num_nodes for g in graphs],
                                 [g.num_edges for g in graphs], batch_size=4)
    net, inside = speed.static_net(model, LOSSES['l1'], cfg, 'cpu')
    trainer = make_trainer(cfg, model, [], torch.device('cpu'),
                           fast_path=speed.FastPath(caps, net, loss_inside=inside))
    return trainer, graphs, caps


def test_single_node_batch_is_checked_and_skipped_with_the_loss_inside():
    from torch_geometric.data import Batch

    from graphgps_ext.loader.pad import attribute_levels, pad_batch
    from graphgps_ext.train.loop import PassStats
    trainer, graphs, caps = _static_trainer()
    assert trainer.loss_inside and trainer.needs_two_nodes
    from torch_geometric.data import Data

    def graph(n):
        return Data(x=torch.full((n, 1), 3), edge_index=torch.zeros(
            2, 0, dtype=torch.long), edge_attr=torch.zeros(0, dtype=torch.long),
            y=torch.ones(1, 1))
    # A batch of one single-node graph: its node and graph slices are alike;
    # the levels come from the training split (Capacities.from_dataset).
    caps = Capacities(caps.buckets, attribute_levels(graphs))
    lone = [graph(1)]
    done = PassStats()
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.model.train()
    with torch.enable_grad():
        trainer.train_batch(0, pad_batch(Batch.from_data_list(lone), caps), done)
    assert done.skipped == 1 and not done.losses  # checked, then skipped
    assert all(torch.equal(a, p) for a, p in
               zip(before, trainer.model.parameters()))
    with torch.enable_grad():
        trainer.train_batch(1, pad_batch(Batch.from_data_list(graphs[:4]), caps),
                            done)
    # kept: the loss and the real rows of the output (4 graphs, not 5)
    assert len(done.losses) == 1 and done.counts == [4]
    assert done.preds[0].size(0) == 4


def test_loss_inside_under_bf16_autocast_is_float32_and_matches_the_cut_rows():
    from torch_geometric.data import Batch

    from graphgps_ext.loader.pad import pad_batch, trim
    from graphgps_ext.train.loss import LOSSES
    trainer, graphs, caps = _static_trainer('train.amp', 'bf16')
    net = trainer.train_net
    assert isinstance(net, speed.ForwardLoss) and net.amp
    batch = pad_batch(Batch.from_data_list(graphs[:4]), caps)
    trainer.model.eval()
    with torch.no_grad():
        pred, true, loss = net(batch)
        with speed.autocast(trainer.cfg, 'cpu'):
            ref_pred, ref_true = trainer.model(batch)
    assert pred.dtype == loss.dtype == torch.float32
    ref = LOSSES['l1'](*trim(ref_pred.float(), ref_true, batch, 'graph'))
    torch.testing.assert_close(loss, ref, rtol=1e-6, atol=1e-7)


def test_check_runs_the_compiled_forward_and_loss(molecule_run, tmp_path,
                                                  monkeypatch):
    """Under ``train.compile`` the one-batch check compares the compiled
    forward pass and masked loss (``aot_eager``) with the eager unpadded
    loss, and the run gets that step."""
    import logging
    monkeypatch.setattr(speed, 'BACKEND', 'aot_eager')
    records = []
    log = logging.getLogger('test-fast-path')
    log.addHandler(logging.Handler())
    log.handlers[-1].emit = records.append
    log.setLevel(logging.INFO)
    torch._dynamo.reset()
    model, fast = _fast_path(molecule_run, tmp_path, 'train.compile', 'True',
                             'gt.layers', '1', 'train.fast_path_check', 'True',
                             log=log)
    assert fast.reason is None and fast.loss_inside and fast.compile_step
    assert isinstance(fast.net._orig_mod, speed.ForwardLoss)
    assert fast.net._orig_mod.model is model
    messages = [r.getMessage() for r in records]
    assert any('fast path checked on one batch' in m
               and 'loss in the forward pass' in m for m in messages), messages


def _backward_accumulations(trainer, batch) -> int:
    """In-place additions dispatched by one backward pass of ``trainer``'s
    training step (autograd accumulating into existing ``.grad`` tensors:
    one kernel per parameter tensor; the compiled backward's own graph is
    functional)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        adds = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.overloadpacket in (torch.ops.aten.add_, ):
                Count.adds += 1
            return func(*args, **(kwargs or {}))

    loss = trainer._forward(trainer.train_net, batch)[2]
    trainer.optimizer.zero_grad(set_to_none=True)
    with Count():
        loss.backward()
    return Count.adds


def test_compiled_update_takes_the_gradients_without_a_kernel(monkeypatch):
    """Under the compiled update the optimiser keeps per-parameter tensors:
    the gradients of the compiled backward become the parameters' ``.grad``
    as they are; flat parameters (the eager update's) add one accumulation
    kernel per parameter tensor outside the compiled graphs."""
    from torch_geometric.data import Batch

    from graphgps_ext.loader.pad import pad_batch
    monkeypatch.setattr(speed, 'BACKEND', 'aot_eager')
    torch._dynamo.reset()
    graphs = [molecule(5 + (7 * i) % 13, i) for i in range(24)]
    for g in graphs:
        g.y = g.y.double()
    adds, with_grad = {}, None
    caps = Capacities.from_sizes([g.num_nodes for g in graphs],
                                 [g.num_edges for g in graphs], 4)
    batch = pad_batch(Batch.from_data_list(graphs[2:6]), caps)
    for compiled in (True, False):
        _, _, trainer, _ = _step_run([], compiled=compiled, steps=1)
        stepped = trainer.optimizer.param_groups[0]['params']
        params = [p for p in trainer.model.parameters() if p.requires_grad]
        assert (len(stepped) == len(params)) is compiled  # else one flat buffer
        with torch.enable_grad():
            adds[compiled] = _backward_accumulations(trainer, batch)
        if compiled:
            with_grad = sum(p.grad is not None for p in params)
    assert adds[True] == 0
    assert adds[False] == with_grad > 0  # one per parameter with a gradient


def test_check_records_cuda_graphs_before_training(molecule_run, tmp_path,
                                                   monkeypatch):
    """When compiled graphs replay as CUDA graphs, the check calls each
    mode three times (CUDA graph trees run a function's first call as a
    warm-up and record a later one), so that a capture that fails on its
    recording falls back to eager with one warning here, not in training."""
    calls, marks = [], []
    monkeypatch.setattr(speed, '_graphs_replayed', lambda cfg, device: True)
    monkeypatch.setattr(torch.compiler, 'cudagraph_mark_step_begin',
                        lambda: marks.append(1))

    def recording_fails(net, cfg, static=False, **kwargs):
        def run(batch):  # ``net`` is the ForwardLoss of the model
            calls.append('train' if net.model.training else 'eval')
            if calls.count('train') == 2:
                raise RuntimeError('CUDA graph capture failed (simulated, '
                                   'on recording)')
            return net(batch)
        return run

    monkeypatch.setattr(speed, 'compile_model', recording_fails)
    with pytest.warns(RuntimeWarning) as record:
        _, fast = _fast_path(molecule_run, tmp_path, 'train.fast_path_check',
                             'True')
    assert calls == ['eval'] * 3 + ['train'] * 2 and len(marks) == 5
    assert len(record) == 1 and 'on recording' in fast.reason
    assert fast.capacities is None  # the eager path
