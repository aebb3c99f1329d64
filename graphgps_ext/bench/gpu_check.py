r"""Suite ``gpu-check``: one command that checks the fast training path of
every model family on a GPU against the eager path, and measures it.

``python -m graphgps_ext.bench --suite gpu-check --device cuda`` trains each
family (one ``paper-zinc`` row per layer family, :data:`FAMILY_ROWS`) for
``--check-steps`` steps twice from the same initial weights on the same
batches: on the *fast* path (the batches made on the device,
``train.data_placement device``; static-shape batches, ``train.static_shapes
True``, and on CUDA ``torch.compile``, where the config has that key;
``torch.compile`` whenever ``--compile`` is given) and on the *eager* path (host batches, no static shapes, no
compilation), through the training loop's own step
(:meth:`graphgps_ext.train.loop.Trainer.train_batch`). Dropout is off in
both, so that they compute the same function. It reports per family and
path: train graphs/s (after warm-up steps), operators and host
synchronisations per step (:mod:`.steps`; on CUDA also the driver's count),
the first and the final losses, and whether the paths agree: the first
step's loss within ``rtol`` (same weights, same batch) and the mean loss of
the last tenth of the steps within ``final_rtol`` (float differences grow
over a training run; a broken fast path diverges far more).

With ``--device cpu`` and small sizes (``--check-steps 4 --opts gt.layers 1
train.batch_size 4``) it is a rehearsal that runs anywhere.
"""
import time
from typing import Dict, List, Optional, Sequence

import torch

from graphgps_ext.bench import common
from graphgps_ext.bench.models import (PAPER_ZINC_ROWS, build_model, make_cfg,
                                       make_dataset, row_cfg)

#: One ``paper-zinc`` row per layer family.
FAMILY_ROWS = ('gps-gine', 'gps-gatedgcn', 'geaet-gatedgcn', 'csa', 'mna', 'gt')

#: Both paths compute the same function: no dropout.
NO_DROPOUT = ('gt.dropout', 0.0, 'gt.attn_dropout', 0.0)


def path_opts(fast: bool, device: torch.device,
              use_compile: Optional[bool] = None) -> List:
    """Config overrides of the fast or the eager path. Keys that this
    checkout's config does not have (``train.static_shapes``) are left out.
    ``use_compile`` ``None``: compile the fast path on CUDA when batches
    have static shapes (with dynamic shapes the compiled step was measured
    slower than eager on a GPU)."""
    train = make_cfg().train
    opts: List = []
    static = 'static_shapes' in train
    if static:
        opts += ['train.static_shapes', bool(fast)]
    compile_fast = (device.type == 'cuda' and static if use_compile is None
                    else use_compile)
    opts += ['train.compile', bool(fast and compile_fast)]
    if fast and compile_fast and 'compile_step' in train:
        # The whole step: the update (clipping, AdamW) compiled too, and on
        # CUDA every compiled graph replayed as a CUDA graph.
        opts += ['train.compile_step', True]
        if device.type == 'cuda':
            opts += ['train.compile_mode', 'reduce-overhead']
    opts += ['train.data_placement', 'device' if fast else 'host']
    return opts


def train_row(row, dataset, device, opts, steps: int, warmup: int, seed: int):
    """Train ``steps`` steps; returns (losses [steps], graphs/s of the
    steps after ``warmup``, trainer, loader)."""
    from graphgps_ext.bench.steps import make_trainer
    from graphgps_ext.loader.dataloader import graph_loader
    from graphgps_ext.train.loop import PassStats
    from graphgps_ext.train.loss import LOSSES
    from graphgps_ext.train.speed import choose_fast_path
    cfg = row_cfg(row, list(opts))
    torch.manual_seed(seed)
    model = build_model(cfg, device)
    # As main.py: static shapes, compile and the compiled update as the
    # config resolves them on this device, after the one-batch check.
    fast = choose_fast_path(cfg, model, dataset, device, LOSSES['l1'])
    on_device = cfg.train.data_placement == 'device'
    loader = graph_loader(dataset, bool(cfg.train.fast_collate),
                          device=device if on_device else None,
                          capacities=fast.capacities,
                          batch_size=cfg.train.batch_size, shuffle=True,
                          generator=torch.Generator().manual_seed(seed))
    trainer = make_trainer(cfg, model, loader, device, fast_path=fast)
    trainer.model.train()
    done = PassStats()
    graphs, start, i = 0, None, 0
    with torch.enable_grad():
        while i < steps:
            for batch in loader:
                if i == warmup:
                    common.sync(device)
                    start = time.perf_counter()
                trainer.train_batch(i, batch.to(device, non_blocking=True), done)
                if i >= warmup:
                    graphs += batch.num_graphs
                i += 1
                if i == steps:
                    break
    common.sync(device)
    seconds = time.perf_counter() - start if start is not None else 0.0
    losses = torch.stack([l.float().reshape(()) for l in done.losses]).cpu()
    return losses, (graphs / seconds if seconds > 0 else float('nan')), \
        trainer, loader


def check_family(name: str, dataset, device: torch.device, steps: int,
                 seed: int = 0, opts: Sequence = (), count: int = 3,
                 rtol: float = 1e-3, final_rtol: float = 0.1,
                 use_compile: Optional[bool] = None) -> Dict[str, object]:
    """Both paths of one family; see the module docstring."""
    from graphgps_ext.bench.steps import count_steps
    row = PAPER_ZINC_ROWS[name]
    warmup = min(5, max(steps - 1, 0))
    out: Dict[str, object] = {'key': name, 'model': row.name}
    losses = {}
    for path in ('fast', 'eager'):
        popts = list(NO_DROPOUT) + list(opts) + path_opts(
            path == 'fast', device, use_compile)
        loss, speed, trainer, loader = train_row(row, dataset, device, popts,
                                                 steps, warmup, seed)
        batches = []
        for batch in loader:
            batches.append(batch)
            if len(batches) == count + 2:
                break
        counted = count_steps(trainer, batches, device, warmup=2)
        losses[path] = loss
        out[path] = {'opts': [str(o) for o in popts],
                     'train_graphs_per_s': speed,
                     'ops_per_step': counted['ops_per_step'],
                     'syncs_per_step': counted['syncs_per_step'],
                     'sync_reasons': counted['sync_reasons'],
                     'cuda_syncs_per_step': counted.get('cuda_syncs_per_step'),
                     'first_loss': float(loss[0]), 'final_loss': _final(loss)}
    fast, eager = losses['fast'], losses['eager']
    first_ok = bool(torch.isclose(fast[0], eager[0], rtol=rtol, atol=1e-6))
    final_ok = abs(_final(fast) - _final(eager)) <= final_rtol * abs(_final(eager))
    out.update(first_agree=first_ok, final_agree=final_ok,
               agree=first_ok and final_ok and bool(torch.isfinite(fast).all()),
               max_step_rel_diff=float(((fast - eager).abs()
                                        / eager.abs().clamp_min(1e-12)).max()))
    return out


def _final(losses: torch.Tensor) -> float:
    """Mean loss of the last tenth of the steps (at least one)."""
    k = max(1, losses.numel() // 10)
    return float(losses[-k:].mean())


def run(device: torch.device, rows: Optional[Sequence[str]] = None,
        steps: int = 300, seed: int = 0, opts: Sequence = (),
        use_compile: Optional[bool] = None, log=print) -> Dict[str, object]:
    """Run the suite; returns ``{'rows': [...], 'markdown': str, ...}``."""
    names = common.check_names(rows or FAMILY_ROWS, PAPER_ZINC_ROWS,
                               'paper-zinc rows')
    cfg = row_cfg(PAPER_ZINC_ROWS[names[0]], opts)
    # Enough graphs for a few hundred distinct batches (epochs repeat).
    graphs = max(4 * cfg.train.batch_size,
                 min(steps * cfg.train.batch_size, 4000))
    dataset, _ = make_dataset(cfg, graphs, seed)
    out_rows = []
    for name in names:
        start = time.perf_counter()
        res = check_family(name, dataset, device, steps, seed, opts,
                           use_compile=use_compile)
        res['seconds'] = time.perf_counter() - start
        out_rows.append(res)
        log(f'  [gpu-check] {name:16s} fast {res["fast"]["train_graphs_per_s"]:8.1f} '
            f'eager {res["eager"]["train_graphs_per_s"]:8.1f} graphs/s, '
            f'losses {"agree" if res["agree"] else "DISAGREE"} '
            f'({res["seconds"]:.0f} s)')
    agree = all(r['agree'] for r in out_rows)
    text = markdown(out_rows) + ('\n\nAll families: the fast and the eager '
                                 'path agree.' if agree else
                                 '\n\nDISAGREEMENT: see the rows marked no.')
    return {'rows': out_rows, 'markdown': text, 'all_agree': agree,
            'settings': {'steps': steps, 'graphs': len(dataset),
                         'opts': [str(o) for o in opts]}}


def markdown(rows: List[dict]) -> str:
    headers = ['model', 'path', 'train graphs/s', 'ops / step',
               'host syncs / step', 'first loss', 'final loss', 'agree']
    table = []
    for r in rows:
        for path in ('fast', 'eager'):
            p = r[path]
            syncs = p['syncs_per_step']
            if p.get('cuda_syncs_per_step') is not None:
                syncs = f"{syncs:g} (driver {p['cuda_syncs_per_step']:g})"
            table.append([r['model'], path, p['train_graphs_per_s'],
                          p['ops_per_step'], syncs, f"{p['first_loss']:.5f}",
                          f"{p['final_loss']:.5f}",
                          ('yes' if r['agree'] else 'no') if path == 'fast' else ''])
    return common.markdown_table(headers, table)
