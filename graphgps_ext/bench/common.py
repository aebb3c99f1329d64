"""Measurement helpers shared by the benchmark suites.

- :func:`setup` fixes the thread count and the seed;
- :func:`sync` waits for queued device work before a clock is read;
- :func:`peak_step_memory` measures the peak tensor memory of one step:
  on CUDA ``torch.cuda.max_memory_allocated`` above the pre-step level; on
  CPU the allocation/free events of :mod:`torch.profiler` (``profile_memory``)
  replayed in time order (allocations at an op's start, frees at its end, so
  the figure is an upper bound at op granularity), i.e. the activation and
  gradient memory of the step on top of parameters and inputs;
- :func:`environment` records versions, threads and the load average (the
  machines are shared: a load above the thread count means noisy timings);
- :func:`host_probe` measures the machine's memory-copy bandwidth and
  matrix-product speed at the moment (on shared machines a neighbour can
  take most of the memory bandwidth while the compute speed is unchanged,
  which slows the memory-bound training steps two- or threefold), and
  :func:`host_warning` says when the probes of one run disagree;
- :func:`markdown_table` renders rows for the terminal and the README.
"""
import contextlib
import os
import platform
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

import torch

from graphgps_ext import files

MiB = 2.0 ** 20


def setup(threads: int, seed: int = 0):
    """Set torch's intra-op threads and the global seed."""
    if threads > 0:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)


def sync(device: torch.device):
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], object], device: torch.device) -> float:
    """Wall-clock seconds of ``fn()`` including queued device work."""
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def peak_step_memory(step: Callable[[], object], device: torch.device) -> float:
    """Peak memory (MiB) allocated by tensors during ``step()`` above the
    memory held before it (see the module docstring for the CPU method)."""
    if device.type == 'cuda':
        sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        step()
        sync(device)
        return (torch.cuda.max_memory_allocated(device) - base) / MiB
    from torch.profiler import ProfilerActivity, profile
    with _native_stderr_silenced():  # Kineto prints start/stop lines
        with profile(activities=[ProfilerActivity.CPU],
                     profile_memory=True) as prof:
            step()
    points = []
    for ev in prof.events():
        size = ev.self_cpu_memory_usage
        if size > 0:
            points.append((ev.time_range.start, size))
        elif size < 0:
            points.append((ev.time_range.end, size))
    points.sort(key=lambda p: p[0])
    cur = peak = 0
    for _, size in points:
        cur += size
        peak = max(peak, cur)
    return peak / MiB


@contextlib.contextmanager
def _native_stderr_silenced():
    """Send file descriptor 2 (native code's stderr) to /dev/null inside the
    block; Python exceptions still propagate normally."""
    try:
        saved = os.dup(2)
    except OSError:  # no usable stderr descriptor
        yield
        return
    try:
        sys.stderr.flush()
        with open(os.devnull, 'w') as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float('nan')


def load_average() -> Optional[float]:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # not available on every platform
        return None


def environment(device: torch.device, threads: int) -> Dict[str, object]:
    import torch_geometric
    info = {
        'torch': torch.__version__,
        'torch_geometric': torch_geometric.__version__,
        'python': platform.python_version(),
        'machine': platform.machine(),
        'cpu_count': os.cpu_count(),
        'threads': torch.get_num_threads(),
        'threads_requested': threads,
        'device': str(device),
        'load_average_1min': load_average(),
        'time': time.strftime('%Y-%m-%dT%H:%M:%S'),
    }
    if device.type == 'cuda':
        info['gpu'] = torch.cuda.get_device_name(device)
    return info


def host_probe(device: torch.device, repeats: int = 5) -> Dict[str, float]:
    r"""The machine's speed right now, with the current thread count:
    ``copy_gb_s``, the bandwidth of a 64 MiB float32 copy (bytes read plus
    written, best of ``repeats``), and ``matmul_gflop_s``, the speed of
    ``[1600, 64] x [64, 64]`` products (the size of an edge-level linear
    map in a ZINC batch; best of ``repeats`` rounds of 20). About 0.1 s on
    a CPU. Recorded at the start and end of every benchmark run, so that
    runs on a shared machine can be told apart by what the host gave them."""
    src = torch.ones(16 * 2 ** 20, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)  # first touch of the pages
    copy_s = min(timed(lambda: dst.copy_(src), device) for _ in range(repeats))
    x = torch.randn(1600, 64, device=device)
    w = torch.randn(64, 64, device=device)
    torch.mm(x, w)  # warm-up

    def products():
        for _ in range(20):
            torch.mm(x, w)
    mm_s = min(timed(products, device) for _ in range(repeats)) / 20
    return {'copy_gb_s': round(2 * src.numel() * 4 / copy_s / 1e9, 2),
            'matmul_gflop_s': round(2 * 1600 * 64 * 64 / mm_s / 1e9, 1)}


def describe_host(probe: Dict[str, float]) -> str:
    """``host_probe``'s figures as one line."""
    return (f"memory copy {probe['copy_gb_s']:.1f} GB/s, "
            f"matmul {probe['matmul_gflop_s']:.0f} GFLOP/s")


def host_warning(probes: Sequence[Dict[str, float]],
                 tolerance: float = 0.25) -> Optional[str]:
    """A warning when the :func:`host_probe` figures of one run (its start,
    end and, in ``paper-zinc``, every pass) spread by more than
    ``tolerance`` (fastest over slowest above ``1 + tolerance``), else
    ``None``: the timings of such a run are not comparable with one another
    or with figures measured elsewhere (such as the anchors of the authors'
    code in ``docs/performance.md``)."""
    spreads = []
    for key, unit in (('copy_gb_s', 'GB/s memory copy'),
                      ('matmul_gflop_s', 'GFLOP/s matmul')):
        values = [p[key] for p in probes if p.get(key)]
        if values and max(values) > (1 + tolerance) * min(values):
            spreads.append(f'{min(values):g}-{max(values):g} {unit}')
    if not spreads:
        return None
    return ('the host changed speed during this run (' + ', '.join(spreads)
            + '): compare settings back to back in one run (--ab), not '
            'across runs or with figures measured on another host')


def fmt(value, digits: int = 1) -> str:
    if value is None:
        return '–'
    if isinstance(value, float):
        if value != value:  # NaN
            return '–'
        return f'{value:,.{digits}f}'
    if isinstance(value, int):
        return f'{value:,}'
    return str(value)


def markdown_table(headers: List[str], rows: List[List[object]]) -> str:
    """A GitHub Markdown table; floats with one decimal, ints with commas."""
    cells = [[fmt(c) for c in row] for row in rows]
    lines = ['| ' + ' | '.join(headers) + ' |',
             '|' + '|'.join('---' for _ in headers) + '|']
    lines += ['| ' + ' | '.join(r) + ' |' for r in cells]
    return '\n'.join(lines)


def write_json(path: str, payload: Dict[str, object]):
    """Write ``payload`` as indented JSON (NaN written as ``null``),
    atomically."""
    def clean(obj):
        if isinstance(obj, float) and obj != obj:
            return None
        if isinstance(obj, dict):
            return {k: clean(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [clean(v) for v in obj]
        return obj
    files.write_json(path, clean(payload))


def check_names(names: Sequence[str], known, what: str) -> List[str]:
    """``names`` as a list, or every name of ``known`` when none are given;
    a :class:`ValueError` naming the unknown ones (``what``: e.g.
    ``'paper-zinc rows'``) and the choices."""
    names = list(names or known)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f'unknown {what} {unknown}; choose from '
                         + ', '.join(known))
    return names
