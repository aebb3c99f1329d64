r"""Suite ``stack``: ``K`` seeds trained as one stacked model
(:mod:`graphgps_ext.train.stack`, ``main.py --stack K``) against ``K``
separate runs, one after the other.

Rows (``--stack-rows``):

- ``quickstart``: the quick start's model (``configs/quickstart.yaml``:
  GCN+Transformer, 2 layers, width 32, LayerNorm, root-node head) on its
  TreeNeighbourMatch graphs (generated into ``--stack-data``, default a
  temporary folder), batch 32, AdamW;
- ``geaet``, ``gps``: the ``paper-zinc`` rows ``geaet-gatedgcn`` and
  ``gps-gine`` (:mod:`.models`: 10 layers, width 64, RWSE-20, BatchNorm,
  attention dropout 0.5, AdamW with clipping) on synthetic ZINC-size
  graphs, batch 32.

For every ``K`` of ``--stack-k`` both sides train ``K`` models of the row,
each initialised from its own seed, with its own shuffled loader,
optimiser (flat parameters, fused AdamW) and clipping, for
``--stack-steps`` steps per seed, loaders included: *separate* trains the
seeds one after the other as ``K`` runs would (the eager training step of
:mod:`graphgps_ext.train.loop`: forward, loss, backward, update); *stacked*
runs each step once for the ``K`` seeds (:func:`~graphgps_ext.train.stack.stack_batches`,
:class:`~graphgps_ext.train.stack.StackedModel`, the ``K`` updates). The
two sides alternate over ``--repeats`` passes (medians).

Reported per row and ``K``: training graphs/s of both sides (all seeds'
graphs over the wall-clock time), the speed-up of the stack, and the peak
tensor memory of one training step
(:func:`~graphgps_ext.bench.common.peak_step_memory`): one seed's step for
the separate runs (they run one at a time), the ``K`` seeds' step for the
stack. ``--compile`` compiles the stacked step only (one graph per
capacity bucket, the batches padded to the buckets); the separate side
stays eager.
"""
import os
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import torch

from graphgps_ext.bench import common


@dataclass(frozen=True)
class StackRow:
    """A model of the suite: ``key`` for ``--stack-rows``, ``name``, and
    ``paper`` the :mod:`.models` row it takes (``None``: the quick start)."""
    key: str
    name: str
    paper: Optional[str] = None


STACK_ROWS: Dict[str, StackRow] = {r.key: r for r in [
    StackRow('quickstart', 'quick start (GCN+Transformer, TreeNeighbourMatch r=3)'),
    StackRow('geaet', 'GEAET GatedGCN+Transformer+GEANet (ZINC, paper-zinc row)',
             'geaet-gatedgcn'),
    StackRow('gps', 'GPS GINE+Transformer (ZINC, paper-zinc row)', 'gps-gine'),
]}

#: Default stack sizes.
KS = (1, 2, 4, 8)

QUICKSTART = os.path.join('configs', 'quickstart.yaml')


def row_setup(row: StackRow, data_dir: str, graphs: int, seed: int,
              use_compile: bool):
    """``(cfg, task, train dataset)`` of a row."""
    from graphgps_ext.bench import models
    if row.paper is None:
        from graphgps_ext.loader import load_dataset
        from graphgps_ext.runs.config import finalize_cfg, load_cfg
        if not os.path.isfile(QUICKSTART):
            raise SystemExit(f'--suite stack: the quickstart row reads {QUICKSTART}: '
                             'run from the repository root, or drop the row '
                             '(--stack-rows geaet gps)')
        cfg = load_cfg(QUICKSTART, ['dataset.dir', data_dir, 'accelerator', 'cpu',
                                    'train.compile', str(use_compile)]).clone()
        bundle = load_dataset(cfg)
        finalize_cfg(cfg, bundle.task)
        return cfg, bundle.task, bundle.splits['train']
    paper = models.PAPER_ZINC_ROWS[row.paper]
    cfg = models.row_cfg(paper, ['train.compile', use_compile])
    dataset, _ = models.make_dataset(cfg, graphs, seed)
    return cfg, models.zinc_task(), dataset


class Seeds:
    """``k`` seeds of a row: models, loaders, optimisers and their updates."""

    def __init__(self, cfg, task, dataset, k: int, device: torch.device,
                 seed: int = 0):
        from graphgps_ext.loader.dataloader import graph_loader
        from graphgps_ext.network.model import GPSModel
        from graphgps_ext.train.loss import LOSSES
        from graphgps_ext.train.optim import build_optimizer
        from graphgps_ext.train.speed import Update
        self.cfg, self.device = cfg, device
        self.loss_fn = LOSSES[cfg.model.loss_fun if cfg.model.loss_fun in LOSSES
                              else task.loss]
        self.models, self.optimizers, self.updates, self.loaders = [], [], [], []
        for s in range(seed, seed + k):
            torch.manual_seed(s)
            model = GPSModel(cfg, task).to(device)
            optimizer = build_optimizer(cfg, model.parameters())
            self.models.append(model)
            self.optimizers.append(optimizer)
            self.updates.append(Update(optimizer, cfg))
            gen = torch.Generator().manual_seed(s)
            self.loaders.append(graph_loader(
                dataset, bool(cfg.train.fast_collate),
                batch_size=int(cfg.train.batch_size), shuffle=True,
                generator=gen, drop_last=True))

    def batches(self, k: int, steps: int):
        """``steps`` batches of seed ``k``'s loader (cycled)."""
        n = 0
        while True:
            for batch in self.loaders[k]:
                if n == steps:
                    return
                n += 1
                yield batch.to(self.device, non_blocking=True)

    def separate_step(self, k: int, batch):
        model = self.models[k]
        pred, true = model(batch)
        loss = self.loss_fn(pred.float(), true)
        self.optimizers[k].zero_grad(set_to_none=True)
        loss.backward()
        self.updates[k]()

    def separate(self, steps: int):
        """The seeds one after the other, ``steps`` steps each."""
        for k, model in enumerate(self.models):
            model.train()
            for batch in self.batches(k, steps):
                self.separate_step(k, batch)


class Stack:
    """The seeds of a :class:`Seeds` run as one stacked model."""

    def __init__(self, seeds: Seeds, capacities=None):
        from graphgps_ext.train.stack import StackedModel
        self.seeds = seeds
        self.capacities = capacities
        self.model = StackedModel(seeds.models, seeds.loss_fn, seeds.cfg,
                                  seeds.device.type)
        self.index = list(range(len(seeds.models)))

    def step(self, batches: List):
        from graphgps_ext.train.stack import stack_batches
        levels = None if self.capacities is None else self.capacities.levels
        data, padded = stack_batches(batches, self.capacities, levels)
        for optimizer in self.seeds.optimizers:
            optimizer.zero_grad(set_to_none=True)
        loss = self.model.run(self.index, padded[0], True, data)[2]
        loss.sum().backward()
        for update in self.seeds.updates:
            update()

    def train(self, steps: int):
        for model in self.seeds.models:
            model.train()
        streams = [self.seeds.batches(k, steps) for k in self.index]
        for batches in zip(*streams):
            self.step(list(batches))


def _first_batches(seeds: Seeds) -> List:
    return [next(iter(loader)).to(seeds.device) for loader in seeds.loaders]


def run(device: torch.device, rows: Optional[Sequence[str]] = None,
        ks: Sequence[int] = KS, steps: int = 20, repeats: int = 3,
        graphs: int = 2_000, seed: int = 0, use_compile: bool = False,
        data_dir: Optional[str] = None, log=print) -> Dict[str, object]:
    """Measure every row and stack size (see the module docstring)."""
    keys = common.check_names(rows or list(STACK_ROWS), STACK_ROWS, 'stack row')
    tmp = None
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix='ggx-stack-bench-')
        data_dir = tmp.name
    out_rows: List[Dict[str, object]] = []
    try:
        for key in keys:
            row = STACK_ROWS[key]
            cfg, task, dataset = row_setup(row, data_dir, graphs, seed, use_compile)
            capacities = None
            if use_compile:
                from graphgps_ext.loader.pad import Capacities
                capacities = Capacities.from_dataset(dataset,
                                                     int(cfg.train.batch_size))
            for k in ks:
                seeds = Seeds(cfg, task, dataset, k, device, seed)
                stack = Stack(seeds, capacities)
                # warm-up (optimiser state, compilation, allocator)
                seeds.separate(2)
                stack.train(2)
                times = {'separate': [], 'stacked': []}
                for _ in range(repeats):
                    times['separate'].append(
                        common.timed(lambda: seeds.separate(steps), device))
                    times['stacked'].append(
                        common.timed(lambda: stack.train(steps), device))
                count = k * steps * int(cfg.train.batch_size)
                sep = count / common.median(times['separate'])
                stk = count / common.median(times['stacked'])
                first = _first_batches(seeds)
                mem_sep = common.peak_step_memory(
                    lambda: seeds.separate_step(0, first[0]), device)
                mem_stk = common.peak_step_memory(
                    lambda: stack.step(_first_batches(seeds)), device)
                res = {'row': key, 'name': row.name, 'k': k, 'steps': steps,
                       'separate_graphs_per_s': sep, 'stacked_graphs_per_s': stk,
                       'speedup': stk / sep, 'separate_seconds': times['separate'],
                       'stacked_seconds': times['stacked'],
                       'separate_step_mib': mem_sep, 'stacked_step_mib': mem_stk,
                       'host': [common.host_probe(device)]}
                out_rows.append(res)
                log(f'  [{key}] K={k}: separate {sep:.0f} graphs/s, stacked '
                    f'{stk:.0f} graphs/s (x{stk / sep:.2f}); step memory '
                    f'{mem_sep:.0f} MiB (one seed) / {mem_stk:.0f} MiB (stack)')
                del seeds, stack
    finally:
        if tmp is not None:
            tmp.cleanup()
    return {'rows': out_rows, 'markdown': table(out_rows)}


def table(rows: List[Dict[str, object]]) -> str:
    headers = ['model', 'K', 'separate graphs/s', 'stacked graphs/s',
               'speed-up', 'step MiB, one seed', 'step MiB, stack of K']
    return common.markdown_table(headers, [
        [r['row'], r['k'], common.fmt(r['separate_graphs_per_s'], 0),
         common.fmt(r['stacked_graphs_per_s'], 0), f"{r['speedup']:.2f}",
         common.fmt(r['separate_step_mib'], 1), common.fmt(r['stacked_step_mib'], 1)]
        for r in rows])
