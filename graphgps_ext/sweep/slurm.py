"""A sweep as a SLURM array job, and its aggregation as a dependent job.

The array script has one task per run still to do; every task knows its
config, seed, run folder and fingerprint as the launcher resolved them, and
exits at once when its run is complete (a requeued task whose run finished).
The aggregation job (``--dependency=afterany:<array job>``) aggregates every
results folder of the sweep (or summarises a search); its resources default
to a small share of an array task's (:func:`agg_resources`).

With ``--requeue`` a task asks for ``USR1`` shortly before its time limit
(:func:`requeue_margin`), requeues itself and stops its run, which resumes
from its last checkpoint (``train.auto_resume True``).
"""
import datetime
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from graphgps_ext.sweep.plan import Run, SweepError

_TIME = re.compile(r'(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?')
_MEM = re.compile(r'(\d+)([KMGT]?)B?', re.IGNORECASE)


def parse_time(text: str) -> Optional[int]:
    """Seconds of a SLURM time limit (``MM``, ``MM:SS``, ``HH:MM:SS``,
    ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``); ``None`` for ``UNLIMITED`` /
    ``INFINITE``. Raises :class:`SweepError`."""
    text = str(text).strip()
    if text.upper() in ('UNLIMITED', 'INFINITE'):
        return None
    m = _TIME.fullmatch(text)
    if m is None:
        raise SweepError(f"bad time '{text}': use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM "
                         'or D-HH:MM:SS (SLURM --time)')
    days, a, b, c = m.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        h, mi, s = int(a), int(b or 0), int(c or 0)
        return ((int(days) * 24 + h) * 60 + mi) * 60 + s
    if c is not None:  # HH:MM:SS
        return (int(a) * 60 + int(b)) * 60 + int(c)
    if b is not None:  # MM:SS
        return int(a) * 60 + int(b)
    return int(a) * 60  # MM


def format_time(seconds: int) -> str:
    """``HH:MM:SS`` (SLURM accepts hours beyond 24)."""
    h, rest = divmod(int(seconds), 3600)
    return f'{h:02d}:{rest // 60:02d}:{rest % 60:02d}'


def parse_mem(text: str) -> int:
    """Megabytes of a SLURM memory size (``K``, ``M`` (default), ``G``,
    ``T``). Raises :class:`SweepError`."""
    m = _MEM.fullmatch(str(text).strip())
    if m is None:
        raise SweepError(f"bad memory size '{text}': use e.g. 4000, 500M, 16G (SLURM --mem)")
    n, unit = int(m.group(1)), m.group(2).upper()
    return {'K': max(1, n // 1024) if n else 0, '': n, 'M': n, 'G': n * 1024,
            'T': n * 1024 * 1024}[unit]


def requeue_margin(time_limit: str) -> int:
    """Seconds before the time limit at which a ``--requeue`` task is
    signalled: a tenth of the limit, at most 300 s (a 5-minute task gets
    30 s, not a signal at its start that would requeue it for ever)."""
    seconds = parse_time(time_limit)
    if seconds is None:
        return 300
    return max(1, min(300, seconds // 10))


def agg_resources(time_limit: str, mem: str, agg_time: Optional[str] = None,
                  agg_mem: Optional[str] = None, agg_cpus: Optional[int] = None
                  ) -> Tuple[str, str, int]:
    """``(time, mem, cpus)`` of the aggregation job. Defaults: a tenth of an
    array task's time (10 min to 1 h, never more than the task's), an
    eighth of its memory (1 to 4 GB, never more than the task's; 2 GB for
    ``--mem 0``), one CPU."""
    if agg_time is None:
        task = parse_time(time_limit)
        seconds = 3600 if task is None else min(task, max(600, min(3600, task // 10)))
        agg_time = format_time(seconds)
    else:
        parse_time(agg_time)
    if agg_mem is None:
        task_mb = parse_mem(mem)
        mb = 2048 if task_mb == 0 else min(task_mb, max(1024, min(4096, task_mb // 8)))
        agg_mem = f'{mb}M'
    else:
        parse_mem(agg_mem)
    return agg_time, agg_mem, agg_cpus or 1


@dataclass
class SlurmOptions:
    """The ``#SBATCH`` settings of a sweep (see ``--help``)."""
    time: str = '24:00:00'
    mem: str = '32G'
    partition: str = ''
    account: str = ''
    nodes: int = 1
    gpus_per_task: int = 1
    cpus_per_task: int = 4
    throttle: Optional[int] = None
    requeue: bool = False
    job_name: str = 'ggx'
    sbatch_opts: List[str] = field(default_factory=list)
    agg_time: Optional[str] = None
    agg_mem: Optional[str] = None
    agg_cpus: Optional[int] = None

    def check(self):
        parse_time(self.time)
        parse_mem(self.mem)
        agg_resources(self.time, self.mem, self.agg_time, self.agg_mem, self.agg_cpus)
        for name in ('nodes', 'cpus_per_task'):
            if getattr(self, name) < 1:
                raise SweepError(f"--{name.replace('_', '-')} must be >= 1")
        if self.gpus_per_task < 0 or (self.throttle is not None and self.throttle < 1):
            raise SweepError('--gpus-per-task must be >= 0 and --throttle >= 1')


def _q(words: Sequence[str]) -> str:
    return ' '.join(shlex.quote(str(w)) for w in words)


def _array(name: str, values: Sequence) -> str:
    return f'{name}=( ' + ' '.join(shlex.quote(str(v)) for v in values) + ' )'


def _header(opt: SlurmOptions, root: str, job_name: str, output: str, time: str,
            mem: str, cpus: int, nodes: int, ntasks: int) -> List[str]:
    lines = ['#!/usr/bin/env bash',
             f'#SBATCH --job-name={job_name}',
             f'#SBATCH --chdir={root}',
             f'#SBATCH --output={output}',
             f'#SBATCH --time={time}',
             f'#SBATCH --mem={mem}',
             f'#SBATCH --nodes={nodes}',
             f'#SBATCH --ntasks={ntasks}',
             f'#SBATCH --cpus-per-task={cpus}']
    if opt.partition:
        lines.append(f'#SBATCH --partition={opt.partition}')
    if opt.account:
        lines.append(f'#SBATCH --account={opt.account}')
    lines += [f'#SBATCH {o}' for o in opt.sbatch_opts]
    return lines


def array_script(runs: Sequence[Run], python: Sequence[str], main: str,
                 opt: SlurmOptions, root: str, slurm_dir: str, script_path: str) -> str:
    """The array job: one task per run in ``runs``."""
    ddp = opt.gpus_per_task > 1 or opt.nodes > 1
    lines = _header(opt, root, opt.job_name, os.path.join(slurm_dir, '%x-%A_%a.out'),
                    opt.time, opt.mem, opt.cpus_per_task, opt.nodes,
                    opt.nodes if ddp else 1)
    if ddp:
        lines.append('#SBATCH --ntasks-per-node=1')
    lines.append(f'#SBATCH --array=0-{len(runs) - 1}'
                 + (f'%{opt.throttle}' if opt.throttle else ''))
    if opt.gpus_per_task > 0:
        lines.append(f'#SBATCH --gpus-per-task={opt.gpus_per_task}')
    if opt.requeue:
        lines += ['#SBATCH --requeue', '#SBATCH --open-mode=append',
                  f'#SBATCH --signal=B:USR1@{requeue_margin(opt.time)}']
    overrides = runs[0].target.overrides if runs else []
    lines += [
        'set -uo pipefail',
        '# One task per (config, seed) still to run, as python -m graphgps_ext.sweep',
        '# resolved them: config, seed, run folder, fingerprint of the run, and',
        '# whether it replaces a finished seed (--force / --rerun-stale: main.py --overwrite).',
        _array('CFGS', [r.target.config for r in runs]),
        _array('SEEDS', [r.seed for r in runs]),
        _array('DIRS', [r.run_dir for r in runs]),
        _array('FPS', [r.target.fingerprint for r in runs]),
        _array('OVERWRITE', [int(r.overwrite) for r in runs]),
        _array('OVERRIDES', overrides),
        f'SCRIPT={shlex.quote(script_path)}',
    ]
    if any(r.target.overrides != overrides for r in runs):
        raise ValueError('every run of one array job has the same overrides')
    launch = _q([*python, main])
    if ddp:
        nproc = max(opt.gpus_per_task, 1)
        if opt.nodes > 1:
            lines += ['# Rendezvous of the torchrun agents on the first node.',
                      'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
                      'MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))']
            rdzv = (f' --nnodes={opt.nodes} --rdzv_backend=c10d'
                    ' --rdzv_endpoint="$MASTER_ADDR:$MASTER_PORT" --rdzv_id="$SLURM_JOB_ID"')
        else:
            rdzv = ' --standalone --nnodes=1'
        launch = (f'srun --ntasks-per-node=1 --kill-on-bad-exit=1 {_q(python)} '
                  f'-m torch.distributed.run{rdzv} --nproc_per_node={nproc} {shlex.quote(main)}')
    lines += [
        'i=${SLURM_ARRAY_TASK_ID:?not an array task}',
        'cfg=${CFGS[$i]}; seed=${SEEDS[$i]}; out=${DIRS[$i]}; fp=${FPS[$i]}',
        'log=$(dirname "$out")/logs/seed$seed.log',
        '# Complete: its done marker carries this run\'s fingerprint (and, when it',
        '# replaces a finished seed, was written after this script).',
        'if [[ -e $out/done ]] && grep -q "\\"fingerprint\\": *\\"$fp\\"" "$out/done" \\',
        '        && { [[ ${OVERWRITE[$i]} == 0 ]] || [[ $out/done -nt $SCRIPT ]]; }; then',
        '    echo "complete: $out/done"; exit 0',
        'fi',
        'flags=(); [[ ${OVERWRITE[$i]} == 1 ]] && flags=(--overwrite)',
        'mkdir -p "$(dirname "$log")"',
        'echo "[$(date -Iseconds)] job ${SLURM_JOB_ID:-?} task $i on $(hostname): $cfg seed $seed" >>"$log"',
    ]
    run = (launch + ' --cfg "$cfg" ${flags[@]+"${flags[@]}"} seed "$seed" '
           '${OVERRIDES[@]+"${OVERRIDES[@]}"} >>"$log" 2>&1')
    if opt.requeue:
        lines += [
            '# Near the time limit (USR1): requeue this task and stop the run, which',
            '# resumes from its last checkpoint (train.auto_resume True).',
            'requeue() { echo "[$(date -Iseconds)] time limit near: requeue" >>"$log";',
            '  scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"; kill -TERM "$pid" 2>/dev/null; }',
            'trap requeue USR1',
            run + ' &',
            'pid=$!',
            'wait "$pid"; rc=$?',
            '# wait returns early (>128) when the trap fires: wait for the run to stop',
            'while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done',
            'exit $rc',
        ]
    else:
        lines.append('exec ' + run)
    return '\n'.join(lines) + '\n'


def agg_script(commands: Sequence[Sequence[str]], opt: SlurmOptions, root: str,
               slurm_dir: str) -> str:
    """The aggregation job: every command once, after the array job."""
    time, mem, cpus = agg_resources(opt.time, opt.mem, opt.agg_time, opt.agg_mem,
                                    opt.agg_cpus)
    lines = _header(opt, root, f'{opt.job_name}-agg', os.path.join(slurm_dir, '%x-%j.out'),
                    time, mem, cpus, 1, 1)
    lines += ['set -uo pipefail',
              '# Aggregation of the sweep, after the array job (afterany).',
              'rc=0']
    lines += [f'{_q(cmd)} || rc=1' for cmd in commands]
    lines.append('exit $rc')
    return '\n'.join(lines) + '\n'


def script_paths(slurm_dir: str, job_name: str) -> Tuple[str, str]:
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    base = os.path.join(slurm_dir, f'{job_name}-{stamp}')
    return base + '.sbatch', base + '-agg.sbatch'


def sbatch(args: Sequence[str]) -> str:
    """Submit with ``sbatch --parsable ARGS``; returns the job id. Raises
    :class:`RuntimeError` with sbatch's message."""
    exe = shutil.which('sbatch')
    if exe is None:
        raise SweepError('sbatch not found: run on a SLURM login node or use --dry-run')
    out = subprocess.run([exe, '--parsable', *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError((out.stderr or out.stdout).strip()
                           or f'sbatch exited with {out.returncode}')
    return out.stdout.strip().split(';')[0]
