r"""Suite ``profile``: where the time of a training step goes.

``python -m graphgps_ext.bench --suite profile --device cuda --rows
geaet-gatedgcn`` trains each row (default :data:`DEFAULT_ROWS`) on the path
the GPU check calls *fast* (:func:`.gpu_check.path_opts`; ``--profile-path
eager`` for the eager one) for a few warm-up steps (compilation and capture
included), then ``--profile-steps`` steps under :mod:`torch.profiler`, and
summarises them:

- the operators (CPU) or kernels (CUDA) with the most total time, the top
  :data:`TOP` with their calls per step;
- operators dispatched per step (the profiler's ``aten::`` events at the
  top of their stack: the calls a step makes, not their internals);
- on CUDA: kernel launches per step (the runtime's launch calls, a CUDA
  graph replay counting one) and kernels run per step, and the
  *device-busy fraction*: the union of the kernels' time intervals over the
  wall time of the profiled steps. A step whose kernels are small and many
  leaves the GPU waiting for the host (a low fraction); a step that keeps
  it busy is limited by the kernels themselves (a fraction near 1).

On the CPU (``--device cpu``, small sizes) it is a rehearsal that runs
anywhere; the device figures are then ``None``.
"""
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from graphgps_ext.bench import common
from graphgps_ext.bench.models import PAPER_ZINC_ROWS, make_dataset, row_cfg

#: The row profiled by default: the GEAET model of the GPU targets.
DEFAULT_ROWS = ('geaet-gatedgcn', )
#: Rows of the top table.
TOP = 15
#: Runtime calls that start device work: a kernel launch or a CUDA graph
#: replay.
LAUNCH_CALLS = ('cudaLaunchKernel', 'cudaLaunchKernelExC', 'cuLaunchKernel',
                'cuLaunchKernelEx', 'cudaGraphLaunch', 'cudaLaunchCooperativeKernel')


def _device_time(evt) -> float:
    """Self device time of a profiler event (µs; the attribute was renamed
    across torch versions)."""
    for name in ('self_device_time_total', 'self_cuda_time_total'):
        value = getattr(evt, name, None)
        if value is not None:
            return float(value)
    return 0.0


def _on_device(evt) -> bool:
    """Whether a profiler event ran on the GPU (a kernel or a copy)."""
    return getattr(evt, 'device_type', None) == torch.autograd.DeviceType.CUDA


def busy_fraction(intervals: Sequence[Tuple[float, float]],
                  wall: float) -> Optional[float]:
    r"""The union of the ``[start, end)`` ``intervals`` over ``wall`` (same
    unit): :math:`|\bigcup_k [s_k, e_k)| / T`; ``None`` without intervals
    or time."""
    if not intervals or wall <= 0:
        return None
    busy, end = 0.0, float('-inf')
    for s, e in sorted(intervals):
        if e <= end:
            continue
        busy += e - max(s, end)
        end = e
    return min(1.0, busy / wall)


def summarize(prof, steps: int, wall_us: float, cuda: bool) -> Dict[str, object]:
    """The figures of the module docstring from a finished
    :class:`torch.profiler.profile` of ``steps`` steps that took ``wall_us``
    microseconds."""
    averages = prof.key_averages()
    if cuda:  # the device's own events (kernels, copies), not the CPU
        # operators that launched them (they carry their kernels' time too)
        ranked = sorted((e for e in averages if _on_device(e)),
                        key=_device_time, reverse=True)
        total = sum(_device_time(e) for e in ranked) or 1.0
        top = [{'name': e.key, 'calls_per_step': e.count / steps,
                'us_per_step': _device_time(e) / steps,
                'share': _device_time(e) / total} for e in ranked[:TOP]]
    else:
        ranked = sorted((e for e in averages if e.key.startswith('aten::')),
                        key=lambda e: e.self_cpu_time_total, reverse=True)
        total = sum(e.self_cpu_time_total for e in ranked) or 1.0
        top = [{'name': e.key, 'calls_per_step': e.count / steps,
                'us_per_step': e.self_cpu_time_total / steps,
                'share': e.self_cpu_time_total / total} for e in ranked[:TOP]]
    events = prof.events()
    # Top-level operators: aten:: events not nested in another aten:: event.
    ops = sum(1 for e in events if e.key.startswith('aten::') and not (
        e.cpu_parent is not None and e.cpu_parent.key.startswith('aten::')))
    out: Dict[str, object] = {
        'top': top, 'ops_per_step': ops / steps,
        'step_ms': wall_us / steps / 1e3,
        'launches_per_step': None, 'kernels_per_step': None,
        'device_busy_fraction': None}
    if cuda:
        launches = sum(e.count for e in averages if e.key in LAUNCH_CALLS)
        kernels = [e for e in events if _on_device(e)]
        out.update(
            launches_per_step=launches / steps,
            kernels_per_step=len(kernels) / steps,
            device_busy_fraction=busy_fraction(
                [(k.time_range.start, k.time_range.end) for k in kernels],
                wall_us))
    return out


def profile_row(name: str, dataset, device: torch.device, steps: int,
                warmup: int, seed: int = 0, opts: Sequence = (),
                fast: bool = True, use_compile: Optional[bool] = None,
                single: bool = False) -> Dict[str, object]:
    """Warm up row ``name`` (every capacity, as the GPU check does), train
    ``warmup`` steps, then profile ``steps`` more (see the module
    docstring). ``single``: one capacity (``--one-capacity``)."""
    import time

    from torch.profiler import ProfilerActivity, profile

    from graphgps_ext.bench.gpu_check import (NO_DROPOUT, one_capacity,
                                              path_opts, train_row,
                                              warm_indices)
    from graphgps_ext.loader.pad import Capacities
    from graphgps_ext.train.loop import PassStats
    row = PAPER_ZINC_ROWS[name]
    popts = list(NO_DROPOUT) + list(opts) + path_opts(fast, device, use_compile)
    cfg = row_cfg(row, popts)
    caps = Capacities.from_dataset(dataset, int(cfg.train.batch_size))
    warm = warm_indices(dataset, int(cfg.train.batch_size), seed,
                        one_capacity(caps) if single else caps)
    res = train_row(row, dataset, device, popts, warmup, seed, warm, single)
    trainer, loader = res['trainer'], res['loader']
    batches = []
    for batch in loader:
        batches.append(batch.to(device, non_blocking=True))
        if len(batches) == steps:
            break
    if len(batches) < steps:
        raise ValueError(f'the dataset gives {len(batches)} batches, '
                         f'fewer than --profile-steps {steps}')
    cuda = device.type == 'cuda'
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    done = PassStats()
    trainer.model.train()
    with torch.enable_grad(), profile(activities=activities) as prof:
        common.sync(device)
        start = time.perf_counter()
        for i, batch in enumerate(batches):
            trainer.train_batch(i, batch, done)
        common.sync(device)
        wall_us = (time.perf_counter() - start) * 1e6
    out = {'key': name, 'model': row.name, 'path': 'fast' if fast else 'eager',
           'opts': [str(o) for o in popts], 'steps': steps}
    out.update(summarize(prof, steps, wall_us, cuda))
    return out


def run(device: torch.device, rows: Optional[Sequence[str]] = None,
        steps: int = 20, warmup: int = 10, seed: int = 0, opts: Sequence = (),
        fast: bool = True, use_compile: Optional[bool] = None,
        log=print, single: bool = False, on_row=None) -> Dict[str, object]:
    """Run the suite; returns ``{'rows': [...], 'markdown': str, ...}``;
    ``on_row(result so far)`` after every row."""
    names = common.check_names(rows or DEFAULT_ROWS, PAPER_ZINC_ROWS,
                               'paper-zinc rows')
    cfg = row_cfg(PAPER_ZINC_ROWS[names[0]], opts)
    dataset, _ = make_dataset(cfg, (steps + warmup + 1) * cfg.train.batch_size,
                              seed)
    out_rows = []
    settings = {'steps': steps, 'warmup': warmup,
                'path': 'fast' if fast else 'eager', 'one_capacity': single,
                'opts': [str(o) for o in opts]}
    for name in names:
        res = profile_row(name, dataset, device, steps, warmup, seed, opts,
                          fast, use_compile, single)
        out_rows.append(res)
        if on_row is not None:
            on_row({'rows': out_rows, 'markdown': markdown(out_rows),
                    'settings': settings})
        busy = res['device_busy_fraction']
        log(f'  [profile] {name:16s} {res["step_ms"]:.2f} ms/step, '
            f'{res["ops_per_step"]:.0f} ops/step'
            + ('' if busy is None else
               f', {res["launches_per_step"]:.0f} launches/step, '
               f'device busy {100 * busy:.0f} %'))
    return {'rows': out_rows, 'markdown': markdown(out_rows),
            'settings': settings}


def markdown(rows: List[dict]) -> str:
    parts = []
    for r in rows:
        busy = r['device_busy_fraction']
        head = (f"### {r['model']} ({r['path']} path)\n\n"
                f"{r['step_ms']:.2f} ms per step, {r['ops_per_step']:.0f} "
                'operators per step'
                + ('' if busy is None else
                   f", {r['launches_per_step']:.0f} launches and "
                   f"{r['kernels_per_step']:.0f} kernels per step, device busy "
                   f'{100 * busy:.0f} % of the step') + '.\n\n')
        table = common.markdown_table(
            ['operator' if busy is None else 'kernel', 'calls / step',
             'µs / step', 'share'],
            [[t['name'][:80], t['calls_per_step'], t['us_per_step'],
              f"{100 * t['share']:.1f} %"] for t in r['top']])
        parts.append(head + table)
    return '\n\n'.join(parts)
