r"""Suite ``gpu-check``: one command that checks the fast training path of
every model family on a GPU against the eager path, and measures it.

``python -m graphgps_ext.bench --suite gpu-check --device cuda`` trains each
family (one ``paper-zinc`` row per layer family, :data:`FAMILY_ROWS`) for
``--check-steps`` steps on each path of ``--paths`` (default ``fast
eager``; :data:`PATHS`), from the same initial weights on the same
batches, through the training loop's own step
(:meth:`graphgps_ext.train.loop.Trainer.train_batch`), the fast path
chosen and checked as ``main.py`` does
(:func:`graphgps_ext.train.speed.choose_fast_path`). Dropout is off, so
that the paths compute the same function.

Every path first *warms up*: :data:`WARM_CALLS` training steps on one
batch of every capacity that the training batches take (found by drawing
epochs of batches, the same batches for every path; unpadded on the eager
path), so that compilation and CUDA graph recording (which needs a few
calls per shape) are done before the timed steps; ``warmup_seconds`` is
that phase, from building the model (the fast path's check included) to
its last step, and ``compile_seconds`` the part of it in calls that
compiled (:class:`~graphgps_ext.train.compile_watch.CompileWatch`, with
the variants compiled and any recompilation after warm-up). Then the
timed steps: graphs/s of the steady state (real graphs, not padding
graphs), with the host synchronised at both ends.

It reports per family and path: those figures, operators and host
synchronisations per step of the paths that are not compiled
(:mod:`.steps`; on CUDA also the driver's count), the first and final
losses, and whether each path agrees with
the first path (``eager`` when given): the first step's loss within
``rtol`` and the mean loss of the last tenth of the steps within
``final_rtol`` (float differences grow over a training run; a broken
fast path diverges far more).

``--one-capacity`` pads every batch to the largest capacity (one compiled
variant per path: a check that fits a few minutes of a GPU, where each
capacity costs a compilation).

With ``--device cpu`` and small sizes (``--check-steps 4 --opts gt.layers 1
train.batch_size 4``) it is a rehearsal that runs anywhere.
"""
import time
from typing import Callable, Dict, List, Optional, Sequence

import torch

from graphgps_ext.bench import common
from graphgps_ext.bench.models import (PAPER_ZINC_ROWS, build_model, make_cfg,
                                       make_dataset, row_cfg)

#: One ``paper-zinc`` row per layer family.
FAMILY_ROWS = ('gps-gine', 'gps-gatedgcn', 'geaet-gatedgcn', 'csa', 'mna', 'gt')

#: Both paths compute the same function: no dropout.
NO_DROPOUT = ('gt.dropout', 0.0, 'gt.attn_dropout', 0.0)

#: The paths: ``eager`` (unpadded, not compiled: the CPU default),
#: ``static`` (static-shape batches, not compiled: ``main.py``'s default
#: on CUDA), ``compiled`` (static shapes, the forward pass and the update
#: compiled), ``graphs`` (the same replayed as CUDA graphs,
#: ``train.compile_mode reduce-overhead``), and ``fast`` (``graphs`` on
#: CUDA, ``static`` on a CPU, or compiled with ``--compile``).
PATHS = ('eager', 'static', 'compiled', 'graphs', 'fast')

#: Warm-up steps per capacity (CUDA graph trees record a graph on a later
#: call than its first).
WARM_CALLS = 3


def named_path_opts(name: str, device: torch.device,
                    use_compile: Optional[bool] = None) -> List:
    """Config overrides of path ``name`` (:data:`PATHS`)."""
    if name == 'fast':
        return path_opts(True, device, use_compile)
    if name == 'eager':
        return path_opts(False, device, use_compile)
    if name not in PATHS:
        raise ValueError(f"unknown path '{name}': use one of {', '.join(PATHS)}")
    opts: List = ['train.static_shapes', True,
                  'train.compile', name in ('compiled', 'graphs')]
    if name in ('compiled', 'graphs'):
        opts += ['train.compile_step', True, 'train.compile_mode',
                 'reduce-overhead' if name == 'graphs' else 'default']
    return opts + ['train.data_placement', 'device']


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


def warm_indices(dataset, batch_size: int, seed: int, capacities,
                 epochs: int = 8) -> List[List[int]]:
    """One index list (a batch of ``batch_size`` graphs) per capacity that
    random training batches take, found in up to ``epochs`` random orders
    (drawn from ``seed``), in order of first appearance."""
    from graphgps_ext.loader.pad import graph_sizes
    nodes, edges = graph_sizes(dataset)
    gen = torch.Generator().manual_seed(seed + 1)
    found = {}
    for _ in range(epochs):
        perm = torch.randperm(len(dataset), generator=gen)
        for start in range(0, len(dataset) - batch_size + 1, batch_size):
            idx = perm[start:start + batch_size]
            cap = capacities.choose(int(nodes[idx].sum()), int(edges[idx].sum()),
                                    idx.numel(), int(nodes[idx].max()))
            found.setdefault(cap, idx.tolist())
        if len(found) >= len(capacities.buckets):
            break
    return list(found.values())


def batch_of(dataset, indices: Sequence[int], cfg, capacities):
    """The graphs ``indices`` of ``dataset`` as the run's loader batches
    them (padded to ``capacities`` unless ``None``), on the CPU."""
    from graphgps_ext.loader.dataloader import graph_loader
    sub = dataset[torch.as_tensor(list(indices), dtype=torch.long)]
    return next(iter(graph_loader(sub, bool(cfg.train.fast_collate),
                                  capacities=capacities,
                                  batch_size=len(indices))))


def one_capacity(capacities):
    """``capacities`` with its largest bucket only."""
    from graphgps_ext.loader.pad import Capacities
    return Capacities([capacities.buckets[-1]], capacities.levels)


def train_row(row, dataset, device, opts, steps: int, seed: int,
              warm: Sequence[Sequence[int]] = (), single: bool = False):
    """Warm up (:data:`WARM_CALLS` steps on each of the ``warm`` index
    lists), then train ``steps`` timed steps from the loader. Returns a
    dict: ``losses`` [warm-up + timed steps], ``graphs_per_s`` (timed),
    ``warmup_seconds``, ``trainer``, ``loader``, ``fast`` (the
    :class:`~graphgps_ext.train.speed.FastPath`). ``single``: one capacity
    (:func:`one_capacity`)."""
    from graphgps_ext.bench.steps import make_trainer
    from graphgps_ext.loader.dataloader import graph_loader
    from graphgps_ext.train.loop import PassStats
    from graphgps_ext.train.loss import LOSSES
    cfg = row_cfg(row, list(opts))
    common.sync(device)
    began = time.perf_counter()
    torch.manual_seed(seed)
    model = build_model(cfg, device)
    # As main.py: static shapes, compile and the compiled update as the
    # config resolves them on this device, after the one-batch check.
    fast = _choose(cfg, model, dataset, device, LOSSES['l1'], single)
    on_device = cfg.train.data_placement == 'device'
    loader = graph_loader(dataset, bool(cfg.train.fast_collate),
                          device=device if on_device else None,
                          capacities=fast.capacities,
                          batch_size=cfg.train.batch_size, shuffle=True,
                          generator=torch.Generator().manual_seed(seed))
    trainer = make_trainer(cfg, model, loader, device, fast_path=fast)
    trainer.model.train()
    done = PassStats()
    i = 0
    with torch.enable_grad():
        warm_batches = [batch_of(dataset, idx, cfg, fast.capacities).to(device)
                        for idx in warm]
        for _ in range(WARM_CALLS):
            for batch in warm_batches:
                trainer.train_batch(i, batch, done)
                i += 1
        common.sync(device)
        warmup_seconds = time.perf_counter() - began
        graphs, start, timed = 0, time.perf_counter(), 0
        while timed < steps:
            for batch in loader:
                batch = batch.to(device, non_blocking=True)
                trainer.train_batch(i, batch, done)
                graphs += getattr(batch, 'real_graphs', None) or batch.num_graphs
                i += 1
                timed += 1
                if timed == steps:
                    break
        common.sync(device)
    seconds = time.perf_counter() - start
    losses = torch.stack([l.float().reshape(()) for l in done.losses]).cpu()
    return {'losses': losses, 'warm_steps': WARM_CALLS * len(warm),
            'graphs_per_s': graphs / seconds if seconds > 0 and steps else
            float('nan'), 'warmup_seconds': warmup_seconds,
            'trainer': trainer, 'loader': loader, 'fast': fast}


def _choose(cfg, model, dataset, device, loss_fn, single: bool):
    """:func:`~graphgps_ext.train.speed.choose_fast_path`, with one
    capacity when ``single``."""
    from graphgps_ext.loader.pad import Capacities
    from graphgps_ext.train import speed
    caps = None
    if single and speed.static_shapes_wanted(cfg, torch.device(device).type):
        caps = one_capacity(Capacities.from_dataset(
            dataset, int(cfg.train.batch_size)))
    return speed.choose_fast_path(cfg, model, dataset, device, loss_fn,
                                  capacities=caps)


def check_family(name: str, dataset, device: torch.device, steps: int,
                 seed: int = 0, opts: Sequence = (), count: int = 3,
                 rtol: float = 1e-3, final_rtol: float = 0.1,
                 use_compile: Optional[bool] = None,
                 paths: Sequence[str] = ('fast', 'eager'),
                 single: bool = False, on_path=None) -> Dict[str, object]:
    """The ``paths`` of one family; see the module docstring.
    ``on_path(row so far)`` after every path."""
    from graphgps_ext.bench.steps import count_steps
    from graphgps_ext.loader.pad import Capacities
    row = PAPER_ZINC_ROWS[name]
    cfg = row_cfg(row, list(opts))
    caps = Capacities.from_dataset(dataset, int(cfg.train.batch_size))
    if single:
        caps = one_capacity(caps)
    warm = warm_indices(dataset, int(cfg.train.batch_size), seed, caps)
    out: Dict[str, object] = {'key': name, 'model': row.name,
                              'paths': list(paths),
                              'capacities': len(caps.buckets),
                              'warmed_capacities': len(warm)}
    losses = {}
    for path in paths:
        popts = list(NO_DROPOUT) + list(opts) + named_path_opts(
            path, device, use_compile)
        res = train_row(row, dataset, device, popts, steps, seed, warm, single)
        trainer, loader = res['trainer'], res['loader']
        watch = trainer.watch
        counted = {}
        # Operators and syncs of the eager code only: under a dispatch
        # mode (the counter) dynamo runs compiled code eagerly, so a
        # compiled path's count would be its eager twin's (the profile
        # suite counts a compiled step's kernel launches on CUDA).
        if count > 0 and not trainer.cfg.train.compile:
            batches = []
            for batch in loader:
                batches.append(batch)
                if len(batches) == count + 2:
                    break
            counted = count_steps(trainer, batches, device, warmup=2)
        loss = res['losses']
        losses[path] = loss
        timed = loss[res['warm_steps']:]
        out[path] = {'opts': [str(o) for o in popts],
                     'fast_path': res['fast'].reason or 'ok',
                     'train_graphs_per_s': res['graphs_per_s'],
                     'warmup_seconds': res['warmup_seconds'],
                     'warm_steps': res['warm_steps'],
                     'compile_seconds': watch.seconds if watch else 0.0,
                     'variants': len(watch.variants) if watch else 0,
                     'graphs_compiled': watch.graphs if watch else 0,
                     'recompiles_after_warmup': len(watch.late) if watch else 0,
                     'recompile_reasons': [r for _, r in watch.late]
                     if watch else [],
                     'ops_per_step': counted.get('ops_per_step'),
                     'syncs_per_step': counted.get('syncs_per_step'),
                     'sync_reasons': counted.get('sync_reasons'),
                     'cuda_syncs_per_step': counted.get('cuda_syncs_per_step'),
                     'first_loss': float(loss[0]),
                     'final_loss': _final(timed if timed.numel() else loss)}
        if watch is not None:
            watch.close()
        if on_path is not None:
            on_path(dict(out, paths=list(losses), agree=None,
                         reference=None))
    ref_name = 'eager' if 'eager' in losses else paths[0]
    ref = losses[ref_name]
    agree = True
    for path in paths:
        got = losses[path]
        first_ok = bool(torch.isclose(got[0], ref[0], rtol=rtol, atol=1e-6))
        final_ok = (abs(_final(got) - _final(ref))
                    <= final_rtol * abs(_final(ref)))
        ok = first_ok and final_ok and bool(torch.isfinite(got).all())
        out[path].update(first_agree=first_ok, final_agree=final_ok, agree=ok,
                         max_step_rel_diff=float(
                             ((got - ref).abs()
                              / ref.abs().clamp_min(1e-12)).max()))
        agree = agree and ok
    out.update(reference=ref_name, agree=agree)
    if 'fast' in out and 'eager' in out:  # (the two-path layout of before)
        out.update(first_agree=out['fast']['first_agree'],
                   final_agree=out['fast']['final_agree'],
                   max_step_rel_diff=out['fast']['max_step_rel_diff'])
    return out


def _final(losses: torch.Tensor) -> float:
    """Mean loss of the last tenth of the steps (at least one)."""
    k = max(1, losses.numel() // 10)
    return float(losses[-k:].mean())


def run(device: torch.device, rows: Optional[Sequence[str]] = None,
        steps: int = 300, seed: int = 0, opts: Sequence = (),
        use_compile: Optional[bool] = None, log=print,
        paths: Sequence[str] = ('fast', 'eager'), single: bool = False,
        on_row: Optional[Callable[[Dict[str, object]], None]] = None
        ) -> Dict[str, object]:
    """Run the suite; returns ``{'rows': [...], 'markdown': str, ...}``.
    ``on_row(result so far)`` after every path of every family (the bench
    writes its JSON there, so that a run stopped half-way keeps what it
    measured)."""
    names = common.check_names(rows or FAMILY_ROWS, PAPER_ZINC_ROWS,
                               'paper-zinc rows')
    for path in paths:
        named_path_opts(path, device, use_compile)  # unknown names: now
    cfg = row_cfg(PAPER_ZINC_ROWS[names[0]], opts)
    # Enough graphs for a few hundred distinct batches (epochs repeat).
    graphs = max(4 * cfg.train.batch_size,
                 min(steps * cfg.train.batch_size, 4000))
    dataset, _ = make_dataset(cfg, graphs, seed)
    out_rows = []
    settings = {'steps': steps, 'graphs': len(dataset), 'paths': list(paths),
                'one_capacity': single, 'opts': [str(o) for o in opts]}

    def result(partial=None):
        rows = out_rows + ([partial] if partial is not None else [])
        if partial is not None:  # a family half-way: its paths so far
            return {'rows': rows, 'markdown': markdown(rows),
                    'all_agree': None, 'settings': settings}
        agree = all(r['agree'] for r in out_rows)
        text = markdown(out_rows) + (
            f'\n\nAll families: every path agrees with the {out_rows[0]["reference"]} path.'
            if agree and out_rows else '\n\nDISAGREEMENT: see the rows marked no.'
            if out_rows else '')
        return {'rows': out_rows, 'markdown': text, 'all_agree': agree,
                'settings': settings}

    for name in names:
        start = time.perf_counter()
        res = check_family(name, dataset, device, steps, seed, opts,
                           use_compile=use_compile, paths=paths, single=single,
                           on_path=None if on_row is None else
                           (lambda partial: on_row(result(partial))))
        res['seconds'] = time.perf_counter() - start
        out_rows.append(res)
        log(f'  [gpu-check] {name:16s} ' + ', '.join(
            f'{p} {res[p]["train_graphs_per_s"]:.1f} graphs/s '
            f'(warm-up {res[p]["warmup_seconds"]:.0f} s)' for p in paths)
            + f'; losses {"agree" if res["agree"] else "DISAGREE"} '
            f'({res["seconds"]:.0f} s)')
        if on_row is not None:
            on_row(result())
    return result()


def markdown(rows: List[dict]) -> str:
    headers = ['model', 'path', 'train graphs/s', 'warm-up s', 'compile s',
               'variants', 'recompiles after warm-up', 'ops / step',
               'host syncs / step', 'first loss', 'final loss', 'agree']
    table = []
    for r in rows:
        for path in r['paths']:
            p = r[path]
            syncs = p['syncs_per_step']
            if syncs is not None and p.get('cuda_syncs_per_step') is not None:
                syncs = f"{syncs:g} (driver {p['cuda_syncs_per_step']:g})"
            table.append([r['model'], path if p['fast_path'] == 'ok'
                          else f"{path} (fell back: {p['fast_path']})",
                          p['train_graphs_per_s'], p['warmup_seconds'],
                          p['compile_seconds'], p['variants'],
                          p['recompiles_after_warmup'], p['ops_per_step'],
                          syncs, f"{p['first_loss']:.5f}",
                          f"{p['final_loss']:.5f}",
                          '' if path == r['reference'] or 'agree' not in p
                          else ('yes' if p['agree'] else 'no')])
    return common.markdown_table(headers, table)
