r"""Benchmarks: ``python -m graphgps_ext.bench``.

Suites (``--suite``):

- ``paper-zinc`` (:mod:`.models`): whole models at the authors' ZINC
  configuration (10 layers, d 64, RWSE-20, batch 32, AdamW + clipping) on
  synthetic ZINC-size graphs: parameters, train and eval graphs/s, ratio to
  the authors' code, peak memory per step;
- ``layers`` (:mod:`.layers`): forward + backward graphs/s and peak memory of
  every layer type at ZINC, Peptides and superpixel sizes;
- ``scaling`` (:mod:`.scaling`): time per epoch against graph size at fixed
  nodes per epoch, with slope fits and a PNG plot;
- ``encodings`` (:mod:`.encodings`): precompute time of the encodings per
  1,000 graphs;
- ``steps`` (:mod:`.steps`): operators dispatched and host
  synchronisations per training step of every ``paper-zinc`` row
  (``ops_per_step``, ``syncs_per_step`` in the JSON), and the operators
  between the forward and the backward pass (``between_ops_per_step``),
  unpadded and on static shapes (``static_`` keys);
- ``all``: every suite above;
- ``gpu-check`` (:mod:`.gpu_check`, not part of ``all``): each model family
  trained a few hundred steps on the fast path and the eager path, the
  losses compared, with graphs/s, operators and host synchronisations per
  step (``--device cuda``; ``--device cpu`` with small sizes rehearses it);
- ``stack`` (:mod:`.stack`, not part of ``all``): ``K`` seeds trained as
  one stacked model (``main.py --stack K``) against ``K`` separate runs:
  training graphs/s of both and the peak memory of a step, for the quick
  start's model and the GEAET and GPS ``paper-zinc`` rows;
- ``profile`` (:mod:`.profile`, not part of ``all``): a few steps of a row
  under :mod:`torch.profiler`: the top operators or kernels, operators,
  kernel launches and kernels per step, and on CUDA the fraction of the
  step the device is busy.

Every run prints Markdown tables and writes one JSON file (``--out``) with
the environment (versions, threads, load average, and the host's
memory-copy bandwidth and matrix-product speed at the start and end,
:func:`.common.host_probe`; ``paper-zinc`` probes before every pass too),
the arguments and each suite's rows. Timings on shared machines vary by up
to ±25 % (more when a neighbour takes the memory bandwidth): compare rows
of one run (the suites interleave repeated passes) rather than runs. When
the probes of a run disagree by more than 25 %, it prints a warning
(:func:`.common.host_warning`, ``meta.host_warning`` in the JSON).
"""
import argparse
import os
import resource
import sys
from typing import Dict, List, Optional

SUITES = ('paper-zinc', 'layers', 'scaling', 'encodings', 'steps')


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog='python -m graphgps_ext.bench',
        description='Throughput, memory and scaling benchmarks of graphgps_ext.')
    p.add_argument('--suite', default='paper-zinc',
                   choices=list(SUITES) + ['gpu-check', 'profile', 'stack', 'all'])
    p.add_argument('--device', default='cpu', help="'cpu' or 'cuda[:i]'")
    p.add_argument('--threads', type=int, default=2,
                   help='torch intra-op threads (0: leave as is)')
    p.add_argument('--out', default='bench.json', help='JSON output path')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--compile', action='store_true',
                   help='torch.compile the models (train.compile)')
    p.add_argument('--bf16', action='store_true',
                   help='bfloat16 autocast of the forward pass (train.amp bf16)')
    p.add_argument('--mem-limit-gib', type=float, default=8.0,
                   help='CPU: cap the address space growth of this process '
                   '(a case that needs more is reported as oom; 0: no cap)')
    g = p.add_argument_group('paper-zinc')
    g.add_argument('--graphs', type=int, default=10_000,
                   help='graphs per train / eval pass')
    g.add_argument('--repeats', type=int, default=1,
                   help='passes per row (rows interleaved; medians reported)')
    g.add_argument('--rows', nargs='*', default=None,
                   help='subset of rows: gps-gine gps-gatedgcn geaet-gatedgcn '
                   'geaet-gine geaet-gatedgcn-batchsm geaet-gine-batchsm csa '
                   'mna gt (default: all)')
    g.add_argument('--opts', nargs='*', default=[],
                   help='config overrides KEY VALUE ... applied to every row '
                   '(e.g. gt.layers 4)')
    g.add_argument('--ab', nargs='*', default=[],
                   help='back to back: each row also with these overrides '
                   'KEY VALUE ... (e.g. gt.fused_attention False), passes '
                   'alternating in one process; prints both medians and '
                   'the passes each side won')
    g = p.add_argument_group('steps (also --rows, --opts)')
    g.add_argument('--count-steps', type=int, default=4,
                   help='training steps counted per row (after 2 warm-up steps)')
    g.add_argument('--sync-sites', action='store_true',
                   help='record the source line of every host synchronisation')
    g = p.add_argument_group('gpu-check (also --rows, --opts, --compile)')
    g.add_argument('--check-steps', type=int, default=300,
                   help='timed training steps per family and path (after '
                   'the warm-up of every capacity)')
    g.add_argument('--paths', nargs='*', default=['fast', 'eager'],
                   help='paths to train and compare: eager static compiled '
                   'graphs fast (default: fast eager)')
    g.add_argument('--one-capacity', action='store_true',
                   help='pad every batch to the largest capacity (one '
                   'compiled variant per path; gpu-check and profile)')
    g = p.add_argument_group('profile (also --rows, --opts, --compile)')
    g.add_argument('--profile-steps', type=int, default=20,
                   help='training steps profiled per row')
    g.add_argument('--profile-warmup', type=int, default=10,
                   help='training steps before them (compilation, capture)')
    g.add_argument('--profile-path', choices=['fast', 'eager'], default='fast',
                   help="the GPU check's fast path (default) or the eager one")
    g = p.add_argument_group('stack (also --repeats, --compile)')
    g.add_argument('--stack-rows', nargs='*', default=None,
                   help='subset of rows: quickstart geaet gps (default: all)')
    g.add_argument('--stack-k', nargs='*', type=int, default=None,
                   help='stack sizes K (default 1 2 4 8)')
    g.add_argument('--stack-steps', type=int, default=20,
                   help='training steps per seed and pass')
    g.add_argument('--stack-graphs', type=int, default=2000,
                   help='synthetic ZINC-size graphs of the geaet and gps rows')
    g.add_argument('--stack-data', default=None,
                   help="dataset.dir of the quickstart row (default: a temporary "
                        "folder, the graphs generated there)")
    g = p.add_argument_group('layers and scaling')
    g.add_argument('--layer-types', nargs='*', default=None,
                   help='subset of layer types (default: all)')
    g.add_argument('--families', nargs='*', default=None,
                   help='graph families of the layers suite '
                   '(zinc peptides superpixel)')
    g.add_argument('--layer-depth', type=int, default=1,
                   help='hybrid layers per step')
    g.add_argument('--steps', type=int, default=10,
                   help='timed steps per case (layers)')
    g.add_argument('--budget-s', type=float, default=20.0,
                   help='stop timing a case after this many seconds (layers)')
    g.add_argument('--sizes', nargs='*', type=int, default=None,
                   help='graph sizes of the scaling suite')
    g.add_argument('--scaling-batch-nodes', type=int, default=800)
    g.add_argument('--scaling-batches', type=int, default=8,
                   help='batches per epoch (scaling)')
    g.add_argument('--scaling-repeats', type=int, default=3,
                   help='epochs timed per point (scaling; median step time)')
    g = p.add_argument_group('encodings')
    g.add_argument('--encoding-graphs', type=int, default=1000)
    g.add_argument('--encoding-data', default=None,
                   help='folder with ZINC/ and peptides-functional/ (as dataset.dir; '
                        'default $GRAPHGPS_EXT_DATA or ./datasets)')
    return p


def limit_memory(gib: float):
    """Cap the address space at the current size + ``gib`` GiB (CPU runs),
    so an oversized case fails with an allocation error instead of pushing
    a shared machine into swap or the OOM killer."""
    if gib <= 0:
        return
    with open('/proc/self/status') as f:
        size_kib = next(int(line.split()[1]) for line in f
                        if line.startswith('VmSize'))
    cap = size_kib * 1024 + int(gib * 2 ** 30)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def run_suites(args, log=print, checkpoint=None) -> Dict[str, object]:
    """Run the suites asked for by ``args``; returns the JSON payload.
    ``checkpoint(payload)`` is called after every row of the suites that
    report rows as they finish (``gpu-check``, ``profile``)."""
    import torch

    from graphgps_ext.bench import common

    device = torch.device(args.device)
    if device.type == 'cuda' and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: CUDA is not available "
                         f"(torch {torch.__version__})")
    common.setup(args.threads, args.seed)
    if device.type == 'cpu' and os.path.exists('/proc/self/status'):
        limit_memory(args.mem_limit_gib)
    suites = list(SUITES) if args.suite == 'all' else [args.suite]
    payload = {'meta': common.environment(device, args.threads),
               'args': vars(args), 'suites': {}}
    payload['meta']['host_start'] = common.host_probe(device)
    log(f"host: {common.describe_host(payload['meta']['host_start'])}")
    for suite in suites:
        log(f'== suite {suite} ==')
        if suite == 'paper-zinc':
            from graphgps_ext.bench import models
            res = models.run(device, rows=args.rows, graphs=args.graphs,
                             repeats=args.repeats, seed=args.seed,
                             use_compile=args.compile, bf16=args.bf16,
                             opts=args.opts, ab=args.ab, log=log)
        elif suite == 'steps':
            from graphgps_ext.bench import steps
            res = steps.run(device, rows=args.rows, steps=args.count_steps,
                            seed=args.seed, opts=args.opts,
                            stacks=args.sync_sites, log=log)
        elif suite == 'gpu-check':
            from graphgps_ext.bench import gpu_check
            res = gpu_check.run(device, rows=args.rows, steps=args.check_steps,
                                seed=args.seed, opts=args.opts,
                                use_compile=True if args.compile else None,
                                log=log, paths=args.paths,
                                single=args.one_capacity,
                                on_row=_partial(payload, suite, checkpoint))
        elif suite == 'stack':
            from graphgps_ext.bench import stack
            res = stack.run(device, rows=args.stack_rows,
                            ks=args.stack_k or stack.KS, steps=args.stack_steps,
                            repeats=max(1, args.repeats), graphs=args.stack_graphs,
                            seed=args.seed, use_compile=args.compile,
                            data_dir=args.stack_data, log=log)
        elif suite == 'profile':
            from graphgps_ext.bench import profile
            res = profile.run(device, rows=args.rows, steps=args.profile_steps,
                              warmup=args.profile_warmup, seed=args.seed,
                              opts=args.opts, fast=args.profile_path == 'fast',
                              use_compile=True if args.compile else None,
                              log=log, single=args.one_capacity,
                              on_row=_partial(payload, suite, checkpoint))
        elif suite == 'layers':
            from graphgps_ext.bench import layers
            from graphgps_ext.bench.data import FAMILIES
            res = layers.run(device, families=args.families or list(FAMILIES),
                             types=args.layer_types, depth=args.layer_depth,
                             steps=args.steps, budget_s=args.budget_s,
                             seed=args.seed, amp=args.bf16,
                             use_compile=args.compile, log=log)
        elif suite == 'scaling':
            from graphgps_ext.bench import scaling
            res = scaling.run(device, sizes=args.sizes or scaling.SIZES,
                              types=args.layer_types,
                              batch_nodes=args.scaling_batch_nodes,
                              batches=args.scaling_batches,
                              repeats=args.scaling_repeats, seed=args.seed,
                              log=log)
            png = os.path.splitext(args.out)[0] + '_scaling.png'
            scaling.plot(res, png)
            res['plot'] = png
            log(f'  [scaling] plot written to {png}')
        else:
            from graphgps_ext.bench import encodings
            res = encodings.run(device, graphs=args.encoding_graphs,
                                seed=args.seed, log=log, data_dir=args.encoding_data)
            res['markdown'] = encodings.tables(res)
        payload['suites'][suite] = res
    payload['meta']['load_average_1min_end'] = common.load_average()
    payload['meta']['host_end'] = common.host_probe(device)
    probes = [payload['meta']['host_start'], payload['meta']['host_end']] + [
        probe for res in payload['suites'].values()
        for row in res.get('rows', []) for probe in row.get('host', [])]
    payload['meta']['host_warning'] = common.host_warning(probes)
    return payload


def _partial(payload, suite: str, checkpoint):
    """``on_row`` of a suite: its result so far into ``payload``, then
    ``checkpoint(payload)``."""
    if checkpoint is None:
        return None

    def on_row(res):
        payload['suites'][suite] = res
        checkpoint(payload)
    return on_row


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    from graphgps_ext.bench import common
    # Written after every row of gpu-check and profile: a run stopped
    # half-way (a time limit) keeps what it measured.
    payload = run_suites(args, checkpoint=lambda p: common.write_json(args.out, p))
    common.write_json(args.out, payload)
    meta = payload['meta']
    print(f"\n# graphgps_ext benchmarks — {meta['device']}, "
          f"{meta['threads']} threads, torch {meta['torch']}, "
          f"load average {meta['load_average_1min']} -> "
          f"{meta['load_average_1min_end']}; host "
          f"{common.describe_host(meta['host_start'])} -> "
          f"{common.describe_host(meta['host_end'])}\n")
    if meta['host_warning']:
        print(f"WARNING: {meta['host_warning']}\n")
    for suite, res in payload['suites'].items():
        print(f'## {suite}\n')
        print(res['markdown'])
        print()
    print(f'JSON written to {args.out}', file=sys.stderr)
    return 0
