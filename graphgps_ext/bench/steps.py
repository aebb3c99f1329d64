r"""Suite ``steps``: operators dispatched and host synchronisations per
training step of every ``paper-zinc`` row (:mod:`.models`).

A step is what the training loop does with one batch on the device
(:meth:`graphgps_ext.train.loop.Trainer.train_batch`): forward, loss, the
non-finite check, backward, gradient clipping, the optimiser step and the
loss and metric accumulation. The batches come from the loop's own loader
(:func:`graphgps_ext.loader.dataloader.graph_loader`) and are moved to the
device before the count starts; :class:`.dispatch_count.DispatchCounter`
counts over ``steps`` steps after ``warmup`` steps (the optimiser creates
its state in the first one) and the suite reports the mean per step.

Every row is counted on two paths, each from the same initial weights:
the eager path on unpadded batches (``ops_per_step``, ``syncs_per_step``),
and the static-shape path (``static_ops_per_step``,
``static_syncs_per_step``): the loader pads every batch to its capacity
(:class:`~graphgps_ext.loader.pad.Capacities` of the training split,
:class:`~graphgps_ext.loader.pad.PadCollater`, with the collater's host copy
of the node counts), as ``train.static_shapes True`` gives the training
loop: the loss is computed inside the forward pass on the padded output
with the mask of its real rows (:class:`~graphgps_ext.train.speed.ForwardLoss`).

Each path also counts the operators the loop dispatches between the return
of its forward pass and the start of its backward pass
(``between_ops_per_step``, ``static_between_ops_per_step``; the
``zero_grad`` before the backward pass dispatches none). Under
``train.compile`` the forward pass and the backward pass are compiled
graphs and these operators run eagerly between them: on CUDA, under
``train.compile_mode reduce-overhead``, kernels outside the CUDA graph
replays.

On a GPU each operator is at least one kernel launch and each
synchronisation stalls the launch queue: the two figures bound how fast a
step can be, whatever the arithmetic. On CUDA the synchronisations the
driver reports (:func:`.dispatch_count.cuda_sync_count`) are given
beside the counter's.
"""
import contextlib
from typing import Dict, List, Optional, Sequence

import torch

from graphgps_ext.bench import common
from graphgps_ext.bench.dispatch_count import (DispatchCounter, cuda_sync_count,
                                               optimizer_host_tensors)
from graphgps_ext.bench.models import (PAPER_ZINC_ROWS, build_model,
                                       make_dataset, row_cfg)


#: The two paths every row is counted on: result key prefix -> padded.
PATHS = {'': False, 'static_': True}


def make_trainer(cfg, model, loader, device: torch.device, fast_path=None):
    """A :class:`~graphgps_ext.train.loop.Trainer` of ``model`` on the
    train ``loader`` (L1 loss, MAE), as ``main.py`` builds it (``fast_path``:
    the :class:`~graphgps_ext.train.speed.FastPath` of a static-shape run);
    it writes nothing unless asked to."""
    from graphgps_ext.train.loop import Trainer
    from graphgps_ext.train.loss import LOSSES
    return Trainer(cfg, model, {'train': loader}, LOSSES['l1'], 'mae', 'min',
                   ['mae'], run_dir='', logger=None, device=device,
                   fast_path=fast_path)


def host_tensors(batch, trainer) -> List[torch.Tensor]:
    """What a GPU run keeps on the host: the batch's size metadata and the
    optimiser's step counters."""
    from graphgps_ext.layer.context import host_node_counts
    counts = host_node_counts(batch)
    return (([] if counts is None else [counts])
            + optimizer_host_tensors(trainer.optimizer))


@contextlib.contextmanager
def between_forward_and_backward(trainer, device: torch.device):
    """Count (a :class:`.dispatch_count.DispatchCounter`, yielded) the
    operators ``trainer``'s training steps dispatch between the return of
    the forward pass (``trainer.train_net``) and the start of the backward
    pass (``trainer._step``), while in the block."""
    counter = DispatchCounter(device=device)
    net, step = trainer.train_net, trainer._step
    active = [False]

    def stop():
        if active[0]:
            counter.__exit__(None, None, None)
            active[0] = False

    def forward(batch):
        stop()  # (a skipped step has no backward pass)
        out = net(batch)
        counter.__enter__()
        active[0] = True
        return out

    def backward(loss):
        stop()
        return step(loss)

    trainer.train_net, trainer._step = forward, backward
    try:
        yield counter
    finally:
        stop()
        trainer.train_net, trainer._step = net, step


def count_steps(trainer, batches: Sequence, device: torch.device,
                warmup: int = 2, stacks: bool = False) -> Dict[str, object]:
    """Run ``warmup`` then ``len(batches) - warmup`` training steps of
    ``trainer``; returns ``ops_per_step``, ``syncs_per_step``, the
    synchronising operators (``sync_reasons``, totals over the counted
    steps), with ``stacks`` where they came from (``sync_sites``), the
    operators between the forward and the backward pass
    (``between_ops_per_step``, :func:`between_forward_and_backward`), and
    on CUDA ``cuda_syncs_per_step``."""
    from graphgps_ext.train.loop import PassStats
    trainer.model.train()
    done = PassStats()
    counted = batches[warmup:]
    if not counted:
        raise ValueError(f'count_steps needs more than {warmup} batches')
    with torch.enable_grad():
        for i, batch in enumerate(batches[:warmup]):
            trainer.train_batch(i, batch.to(device), done)
        moved = [b.to(device) for b in counted]
        common.sync(device)
        counter = DispatchCounter(stacks=stacks, device=device)
        for batch in moved:
            counter.mark_host(host_tensors(batch, trainer))
        with cuda_sync_count(device) as cuda_syncs, counter, \
                between_forward_and_backward(trainer, device) as between:
            for i, batch in enumerate(moved):
                trainer.train_batch(warmup + i, batch, done)
    n = len(moved)
    out = {'ops_per_step': counter.ops / n, 'syncs_per_step': counter.syncs / n,
           'sync_reasons': dict(counter.reasons), 'steps': n,
           'between_ops_per_step': between.ops / n}
    if stacks:
        out['sync_sites'] = dict(counter.where)
    if cuda_syncs[0] is not None:
        out['cuda_syncs_per_step'] = cuda_syncs[0] / n
    return out


def count_row(cfg, dataset, device: torch.device, steps: int, warmup: int,
              seed: int, stacks: bool, padded: bool) -> Dict[str, object]:
    """:func:`count_steps` of one row's model (built from ``seed``) on
    batches from the training loop's loader over ``dataset``; ``padded``:
    every batch padded to the capacities of ``dataset``, as
    ``train.static_shapes True`` trains."""
    from graphgps_ext.loader.dataloader import graph_loader
    from graphgps_ext.loader.pad import Capacities
    from graphgps_ext.train.loss import LOSSES
    from graphgps_ext.train.speed import FastPath, static_net
    torch.manual_seed(seed)
    model = build_model(cfg, device)
    capacities = (Capacities.from_dataset(dataset, int(cfg.train.batch_size))
                  if padded else None)
    loader = graph_loader(dataset, bool(cfg.train.fast_collate),
                          batch_size=cfg.train.batch_size, shuffle=True,
                          generator=torch.Generator().manual_seed(seed),
                          capacities=capacities)
    fast_path = None
    if padded:
        net, inside = static_net(model, LOSSES['l1'], cfg, device.type)
        fast_path = FastPath(capacities, net, loss_inside=inside)
    trainer = make_trainer(cfg, model, loader, device, fast_path)
    batches = list(loader)[:steps + warmup]
    return count_steps(trainer, batches, device, warmup, stacks)


def run(device: torch.device, rows: Optional[Sequence[str]] = None,
        steps: int = 4, seed: int = 0, opts: Sequence = (),
        stacks: bool = False, log=print) -> Dict[str, object]:
    """Run the suite; returns ``{'rows': [...], 'markdown': str, ...}``."""
    names = common.check_names(rows, PAPER_ZINC_ROWS, 'paper-zinc rows')
    warmup = 2
    first = row_cfg(PAPER_ZINC_ROWS[names[0]], opts)
    dataset, _ = make_dataset(first, first.train.batch_size * (steps + warmup),
                              seed)
    out_rows = []
    for name in names:
        row = PAPER_ZINC_ROWS[name]
        cfg = row_cfg(row, opts)
        res = {'key': name, 'model': row.name}
        for prefix, padded in PATHS.items():
            counted = count_row(cfg, dataset, device, steps, warmup, seed,
                                stacks, padded)
            res.update({prefix + k: v for k, v in counted.items()})
        out_rows.append(res)
        log(f'  [steps] {name:24s} {res["ops_per_step"]:8.1f} ops '
            f'{res["syncs_per_step"]:5.1f} syncs per step unpadded, '
            f'{res["static_ops_per_step"]:8.1f} ops '
            f'{res["static_syncs_per_step"]:5.1f} syncs static shapes, '
            f'{res["between_ops_per_step"]:g} / '
            f'{res["static_between_ops_per_step"]:g} ops between forward and '
            f'backward {res["sync_reasons"] or ""}'
            f'{res["static_sync_reasons"] or ""}')
    return {'rows': out_rows, 'markdown': markdown(out_rows),
            'settings': {'steps': steps, 'warmup': warmup,
                         'batch_size': first.train.batch_size,
                         'opts': [str(o) for o in opts]}}


def markdown(rows: List[dict]) -> str:
    cuda = any('cuda_syncs_per_step' in r for r in rows)
    headers = ['model', 'ops / step', 'host syncs / step',
               'ops / step, static shapes', 'host syncs / step, static shapes',
               'ops between forward and backward (unpadded; static shapes)',
               'synchronising operators (unpadded; static shapes)']
    if cuda:
        headers.append('CUDA syncs / step (driver; unpadded, static shapes)')
    table = []
    for r in rows:
        reasons = '; '.join(', '.join(
            f'{k} {v / r[p + "steps"]:g}'
            for k, v in sorted(r[p + 'sync_reasons'].items())) or '–'
            for p in PATHS)
        line = [r['model'], r['ops_per_step'], r['syncs_per_step'],
                r['static_ops_per_step'], r['static_syncs_per_step'],
                f"{r['between_ops_per_step']:g}; "
                f"{r['static_between_ops_per_step']:g}", reasons]
        if cuda:
            line.append(f'{r.get("cuda_syncs_per_step")}, '
                        f'{r.get("static_cuda_syncs_per_step")}')
        table.append(line)
    return common.markdown_table(headers, table)
