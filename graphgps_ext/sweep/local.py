"""Running a sweep's runs on this machine: one after the other (on the
environment's devices or on the CPU), ``jobs`` at a time on the CPU (each
with ``OMP_NUM_THREADS`` = cores / jobs), or as a queue over GPUs with one
run per GPU at a time (``CUDA_VISIBLE_DEVICES``), the next run starting when
a GPU frees up; with ``per_gpu`` k > 1, k runs share each GPU (each its own
process). Each run's output is appended to its log file
(``<out_dir>/<run_name>/logs/seed<S>.log``, earlier attempts kept), headed by
the command line. Each finished run is announced with its best epoch and
metric (:func:`outcome`). Unless the environment sets
``TORCHINDUCTOR_CACHE_DIR``, every run gets ``<out_dir>/_compile_cache``
there (:func:`graphgps_ext.train.compile_cache.sweep_env`)."""
import datetime
import os
import queue
import shlex
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, Optional, Sequence

from graphgps_ext.logger import duration
from graphgps_ext.results.tree import RunDir, RunFileError
from graphgps_ext.sweep.plan import Run, main_command
from graphgps_ext.train.compile_cache import sweep_env

#: ``devices``: ``None`` = the environment's, ``[]`` = the CPU, else GPU ids.
Devices = Optional[List[str]]


def _now() -> str:
    return datetime.datetime.now().strftime('%H:%M:%S')


def _num(value) -> str:
    return f'{value:.4g}' if isinstance(value, float) else str(value)


def outcome(run_dir: str) -> str:
    """What a finished seed folder reports: ``best epoch 6: val accuracy 1,
    test accuracy 0.98; 10 epochs in 51s`` (epochs numbered from 0; the
    selection split first), or ``''`` when it has no readable best epoch."""
    folder = RunDir(run_dir)
    try:
        best, done = folder.read_best(), folder.read_done() or {}
    except RunFileError:
        return ''
    if not isinstance(best, dict) or 'epoch' not in best or 'metric' not in best:
        return ''
    metric, first = best['metric'], best.get('split', 'val')
    values = [f'{split} {metric} {_num(best[split][metric])}'
              for split in dict.fromkeys([first, 'val', 'test'])
              if isinstance(best.get(split), dict) and metric in best[split]]
    text = f'best epoch {best["epoch"]}: ' + ', '.join(values)
    if isinstance(done.get('epochs'), int) and isinstance(done.get('seconds'), (int, float)):
        text += f'; {done["epochs"]} epochs in {duration(done["seconds"])}'
    return text


def threads_per_job(jobs: int) -> Optional[int]:
    """Threads of each of ``jobs`` concurrent CPU runs: this machine's cores
    divided among them, or ``None`` (the default) for one job or when the
    environment sets ``OMP_NUM_THREADS`` itself."""
    if jobs <= 1 or os.environ.get('OMP_NUM_THREADS'):
        return None
    return max(1, (os.cpu_count() or 1) // jobs)


def run_one(run: Run, python: Sequence[str], main: str, device: Optional[str],
            threads: Optional[int] = None) -> int:
    """Run ``run`` with ``CUDA_VISIBLE_DEVICES=device`` (``None``: inherit)
    and ``OMP_NUM_THREADS=threads`` (``None``: inherit), output to its log
    file; returns the exit code."""
    cmd = main_command(python, main, run)
    env = dict(os.environ)
    # torch.compile's caches shared by the runs of the results tree
    env.update(sweep_env(run.target.out_dir, env))
    if device is not None:
        env['CUDA_VISIBLE_DEVICES'] = device
    if threads is not None:
        env['OMP_NUM_THREADS'] = str(threads)
    os.makedirs(os.path.dirname(run.log), exist_ok=True)
    with open(run.log, 'a') as log:
        where = (f' CUDA_VISIBLE_DEVICES={device}' if device is not None else '')
        log.write(f'[{datetime.datetime.now().isoformat(timespec="seconds")}]{where} '
                  f'{shlex.join(cmd)}\n')
        log.flush()
        try:
            return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=env).returncode
        except OSError as err:  # the interpreter itself cannot start
            log.write(f'cannot start: {err}\n')
            return 127


def run_all(runs: Sequence[Run], python: Sequence[str], main: str, devices: Devices,
            say: Callable[[str], None] = print, jobs: int = 1,
            threads: Optional[int] = None, per_gpu: int = 1) -> List[str]:
    """Run every run (sequentially, ``jobs`` at a time with ``threads`` each
    on the CPU, or as a GPU queue when ``devices`` lists GPUs, ``per_gpu``
    runs at a time on each); returns one line per failed run."""
    failed: List[str] = []
    lock = threading.Lock()

    def one(run: Run, device: Optional[str]):
        where = ('' if devices is None else ' on CPU' if device == '' else f' on GPU {device}')
        with lock:
            say(f'[{_now()}] start {run.target.name} seed {run.seed}{where} -> {run.log}')
        rc = run_one(run, python, main, device, threads)
        with lock:
            if rc == 0:
                result = outcome(run.run_dir)
                say(f'[{_now()}] done {run.target.name} seed {run.seed}'
                    + (f': {result}' if result else ''))
            else:
                say(f'[{_now()}] FAILED {run.target.name} seed {run.seed} (exit {rc})')
                failed.append(f'{run.target.name} seed {run.seed} (exit {rc}, log {run.log})')

    if not devices:
        device = None if devices is None else ''
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for f in [pool.submit(one, run, device) for run in runs]:
                f.result()
        return failed
    free: 'queue.Queue[str]' = queue.Queue()
    for _ in range(per_gpu):  # slot by slot: the first runs spread over the GPUs
        for gpu in devices:
            free.put(gpu)

    def on_gpu(run: Run):
        gpu = free.get()
        try:
            one(run, gpu)
        finally:
            free.put(gpu)

    # As many workers as GPU slots: a run starts as soon as one is free, in order.
    with ThreadPoolExecutor(max_workers=len(devices) * per_gpu) as pool:
        for f in [pool.submit(on_gpu, run) for run in runs]:
            f.result()
    return failed
