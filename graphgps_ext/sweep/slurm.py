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

A sweep larger than the cluster's ``MaxArraySize`` (:func:`max_array_size`)
becomes several array jobs (:func:`split`), the aggregation depending on all
of them. Before submitting, the requests are checked against the partition
(:func:`check_partition`). Every task exports ``OMP_NUM_THREADS`` (its CPUs
shared among the processes it starts); ``--cpu`` tasks request no GPU and
hide CUDA (``CUDA_VISIBLE_DEVICES=``); with ``runs_per_task`` k > 1 a task
runs k seeds at once on its one GPU. :func:`queued_owners` reads which runs
the queued, running and requeued tasks of earlier submissions own.
"""
import datetime
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from graphgps_ext.run_dir import RunDir, RunRoot
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
    cpu: bool = False
    runs_per_task: int = 1

    def check(self):
        parse_time(self.time)
        parse_mem(self.mem)
        agg_resources(self.time, self.mem, self.agg_time, self.agg_mem, self.agg_cpus)
        for name in ('nodes', 'cpus_per_task'):
            if getattr(self, name) < 1:
                raise SweepError(f"--{name.replace('_', '-')} must be >= 1")
        if self.gpus_per_task < 0 or (self.throttle is not None and self.throttle < 1):
            raise SweepError('--gpus-per-task must be >= 0 and --throttle >= 1')
        if self.cpu and self.gpus_per_task:
            raise SweepError('--cpu jobs request no GPU: drop --gpus-per-task')
        if self.runs_per_task > 1 and (self.ddp or self.gpus_per_task != 1):
            raise SweepError('--runs-per-gpu shares one GPU among the runs of a task: '
                             'it needs --gpus-per-task 1 and --nodes 1')

    @property
    def ddp(self) -> bool:
        """Every run data parallel (srun + torchrun)."""
        return self.gpus_per_task > 1 or self.nodes > 1

    @property
    def procs_per_task(self) -> int:
        """Processes that share a task's (a node's) CPUs."""
        return max(self.gpus_per_task, 1) if self.ddp else self.runs_per_task


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


def _omp(procs: int) -> List[str]:
    return ['# The allocation\'s CPUs, shared among the processes of the task.',
            f'export OMP_NUM_THREADS=$(( ${{SLURM_CPUS_PER_TASK:-1}} / {procs} ))',
            '(( OMP_NUM_THREADS >= 1 )) || export OMP_NUM_THREADS=1']


def _compile_cache(runs: Sequence[Run]) -> List[str]:
    """torch.compile's caches shared by the tasks (on the shared file
    system, beside the results), unless the job's environment sets them
    (:func:`graphgps_ext.train.compile_cache.sweep_env`)."""
    from graphgps_ext.train.compile_cache import CACHE_ENV, cache_folder
    if not runs:
        return []
    folder = shlex.quote(cache_folder(runs[0].target.out_dir))
    return ['# torch.compile: one cache for the tasks (TORCHINDUCTOR_CACHE_DIR '
            'set for the job wins).',
            f'export {CACHE_ENV}=${{{CACHE_ENV}:-{folder}}}']


def array_script(runs: Sequence[Run], python: Sequence[str], main: str,
                 opt: SlurmOptions, root: str, slurm_dir: str, script_path: str) -> str:
    """The array job: one task per ``opt.runs_per_task`` runs of ``runs``."""
    ddp = opt.ddp
    k = opt.runs_per_task
    tasks = -(-len(runs) // k)
    lines = _header(opt, root, opt.job_name, os.path.join(slurm_dir, '%x-%A_%a.out'),
                    opt.time, opt.mem, opt.cpus_per_task, opt.nodes,
                    opt.nodes if ddp else 1)
    if ddp:
        lines.append('#SBATCH --ntasks-per-node=1')
    lines.append(f'#SBATCH --array=0-{tasks - 1}'
                 + (f'%{opt.throttle}' if opt.throttle else ''))
    if opt.gpus_per_task > 0 and not opt.cpu:
        lines.append(f'#SBATCH --gpus-per-task={opt.gpus_per_task}')
    if opt.requeue:
        lines += ['#SBATCH --requeue', '#SBATCH --open-mode=append',
                  f'#SBATCH --signal=B:USR1@{requeue_margin(opt.time)}']
    overrides = runs[0].target.overrides if runs else []
    lines += ['set -uo pipefail']
    if opt.cpu:
        lines += ['# CPU job: no GPU requested, CUDA hidden.', 'export CUDA_VISIBLE_DEVICES=']
    lines += _omp(opt.procs_per_task)
    lines += _compile_cache(runs)
    lines += [
        f'# Runs {k} at a time per task' + (' on its one GPU' if k > 1 else '')
        + '; every run (config, seed) as python -m graphgps_ext.sweep',
        '# resolved it: config, seed, run folder, fingerprint of the run, and',
        '# whether it replaces a finished seed (--force / --rerun-stale: main.py --overwrite).',
        f'K={k}',
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
        # graphgps_ext.sweep.torchrun: torchrun, stopped quietly by a signal.
        launch = (f'srun --ntasks-per-node=1 --kill-on-bad-exit=1 {_q(python)} '
                  f'-m graphgps_ext.sweep.torchrun{rdzv} --nproc_per_node={nproc} '
                  f'{shlex.quote(main)}')
    done = '$out/' + RunDir.DONE  # the seed's marker, in the script
    lines += [
        'i=${SLURM_ARRAY_TASK_ID:?not an array task}',
        'pids=()',
        'start() {  # run $1 of the arrays, in the background',
        '    local j=$1 cfg=${CFGS[$1]} seed=${SEEDS[$1]} out=${DIRS[$1]} fp=${FPS[$1]} log',
        f'    log=$(dirname "$out")/{RunRoot.seed_log_name("$seed")}',
        '    # Complete: its done marker carries this run\'s fingerprint (and, when it',
        '    # replaces a finished seed, was written after this script).',
        '    if [[ -e ' + done + ' ]] && grep -q "\\"fingerprint\\": *\\"$fp\\"" "' + done + '" \\',
        '            && { [[ ${OVERWRITE[$j]} == 0 ]] || [[ ' + done + ' -nt $SCRIPT ]]; }; then',
        '        echo "complete: ' + done + '"; return',
        '    fi',
        '    local flags=(); [[ ${OVERWRITE[$j]} == 1 ]] && flags=(--overwrite)',
        '    mkdir -p "$(dirname "$log")"',
        '    echo "[$(date -Iseconds)] job ${SLURM_JOB_ID:-?} task $i on $(hostname): $cfg seed $seed" >>"$log"',
        '    ' + launch + ' --cfg "$cfg" ${flags[@]+"${flags[@]}"} seed "$seed" '
        '${OVERRIDES[@]+"${OVERRIDES[@]}"} >>"$log" 2>&1 &',
        '    pids+=($!)',
        '}',
        'for (( j = i * K; j < (i + 1) * K && j < ${#CFGS[@]}; j++ )); do start "$j"; done',
    ]
    if opt.requeue:
        lines += [
            '# Near the time limit (USR1): stop the runs (they resume from their last',
            '# checkpoint: train.auto_resume True), then requeue this task. Requeueing',
            "# first would send SIGTERM to every process of the job, the runs' W&B",
            '# service included, while they close.',
            'REQUEUE=0',
            'requeue() { echo "[$(date -Iseconds)] time limit near: stop the runs, requeue" >&2;',
            '  REQUEUE=1; kill -TERM ${pids[@]+"${pids[@]}"} 2>/dev/null; }',
            'trap requeue USR1',
        ]
    lines += [
        'rc=0',
        'for pid in ${pids[@]+"${pids[@]}"}; do',
        '    # wait returns early (>128) when a trap fires: wait until the run stops',
        '    wait "$pid"; r=$?',
        '    while kill -0 "$pid" 2>/dev/null; do wait "$pid"; r=$?; done',
        '    (( r > rc )) && rc=$r',
        'done',
    ]
    if opt.requeue:
        lines += ['(( REQUEUE )) && scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"']
    lines += ['exit $rc']
    return '\n'.join(lines) + '\n'


def agg_script(commands: Sequence[Sequence[str]], opt: SlurmOptions, root: str,
               slurm_dir: str, folders: Optional[Sequence[Tuple[str, str]]] = None) -> str:
    """The aggregation job: every command once, after the array jobs.
    ``folders``: ``(results folder, fingerprint)`` of each command; a
    folder without a complete seed of that fingerprint (every seed failed
    or stale) is reported and left out, not an error."""
    time, mem, cpus = agg_resources(opt.time, opt.mem, opt.agg_time, opt.agg_mem,
                                    opt.agg_cpus)
    lines = _header(opt, root, f'{opt.job_name}-agg', os.path.join(slurm_dir, '%x-%j.out'),
                    time, mem, cpus, 1, 1)
    lines += ['set -uo pipefail', 'export CUDA_VISIBLE_DEVICES='] + _omp(1)
    lines += ['# Aggregation of the sweep, after the array jobs (afterany).',
              'rc=0']
    for n, cmd in enumerate(commands):
        if folders is None:
            lines.append(f'{_q(cmd)} || rc=1')
            continue
        folder, fp = folders[n]
        lines += [f'if grep -qs \'"fingerprint": *"{fp}"\' {shlex.quote(folder)}/*/done; then',
                  f'    {_q(cmd)} || rc=1',
                  f'else echo {shlex.quote(f"no complete seed of {folder} (fingerprint {fp}): every seed failed, is stale or did not run; not aggregated")}',
                  'fi']
    lines.append('exit $rc')
    return '\n'.join(lines) + '\n'


def script_paths(slurm_dir: str, job_name: str, parts: int = 1) -> Tuple[List[str], str]:
    """The array scripts (one per part) and the aggregation script."""
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    base = os.path.join(slurm_dir, f'{job_name}-{stamp}')
    arrays = ([base + '.sbatch'] if parts == 1 else
              [f'{base}-part{n + 1}.sbatch' for n in range(parts)])
    return arrays, base + '-agg.sbatch'


#: SLURM's default ``MaxArraySize`` (slurm.conf).
DEFAULT_MAX_ARRAY_SIZE = 1001
#: Seconds any query (scontrol, sinfo, squeue) may take.
QUERY_TIMEOUT = 20


def _query(args: Sequence[str]) -> Optional[str]:
    """stdout of a SLURM command, or ``None`` when it is not installed or
    fails (no controller reachable)."""
    exe = shutil.which(args[0])
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, *args[1:]], capture_output=True, text=True,
                             timeout=QUERY_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def max_array_size() -> Tuple[int, str]:
    """``(MaxArraySize, where it comes from)``: ``scontrol show config``, or
    SLURM's default 1001 when scontrol cannot tell."""
    text = _query(['scontrol', 'show', 'config'])
    m = re.search(r'^\s*MaxArraySize\s*=\s*(\d+)', text or '', re.M)
    if m:
        return int(m.group(1)), 'MaxArraySize of scontrol show config'
    return DEFAULT_MAX_ARRAY_SIZE, "SLURM's default MaxArraySize (scontrol show config did not say)"


def split(runs: Sequence[Run], max_size: int, runs_per_task: int = 1) -> List[List[Run]]:
    """``runs`` in parts of at most ``max_size`` array tasks each (task
    indices 0 .. max_size - 1, as MaxArraySize allows)."""
    if max_size < 1:
        raise SweepError(f'--max-array-size must be >= 1, got {max_size}')
    per = max_size * runs_per_task
    return [list(runs[i:i + per]) for i in range(0, len(runs), per)]


# --------------------------------------------------------------------------- partition
@dataclass
class Partition:
    """What a partition offers: its limits (``scontrol show partition``)
    and its nodes' memory (MB), CPUs and GPUs (``sinfo``)."""
    name: str
    max_time: Optional[int] = None  # seconds; None: unlimited
    max_nodes: Optional[int] = None
    max_mem_per_node: Optional[int] = None  # MB
    nodes: List[Tuple[int, int, int]] = field(default_factory=list)  # (mem MB, cpus, gpus)


def _gpus(gres: str) -> int:
    """GPUs of a node's ``sinfo %G`` field, e.g. ``gpu:a100:4(S:0-1)``."""
    n = 0
    for part in re.split(r',(?![^(]*\))', gres or ''):
        m = re.match(r'gpu(?::[^:(]+)?:(\d+)', part.strip())
        if m:
            n += int(m.group(1))
    return n


def partition_info(name: str = '') -> Optional[Partition]:
    """The partition ``name`` (or the default one), or ``None`` when
    ``scontrol`` / ``sinfo`` cannot tell."""
    text = _query(['scontrol', 'show', 'partition', '--oneliner', *([name] if name else [])])
    if not text:
        return None
    fields = None
    for line in text.splitlines():
        kv = dict(re.findall(r'(\w+)=(\S*)', line))
        if kv.get('PartitionName') and (name or kv.get('Default') == 'YES'):
            fields = kv
            break
    if fields is None:
        return None
    part = Partition(fields['PartitionName'])
    if fields.get('MaxTime') not in (None, 'UNLIMITED', 'INFINITE'):
        try:
            part.max_time = parse_time(fields['MaxTime'])
        except SweepError:
            pass
    if (fields.get('MaxNodes') or 'UNLIMITED').isdigit():
        part.max_nodes = int(fields['MaxNodes'])
    if (fields.get('MaxMemPerNode') or 'UNLIMITED').isdigit():
        part.max_mem_per_node = int(fields['MaxMemPerNode'])
    nodes = _query(['sinfo', '-h', '-N', '-p', part.name, '-o', '%N|%m|%c|%G'])
    for line in (nodes or '').splitlines():
        cols = line.strip().split('|')
        if len(cols) == 4 and cols[1].rstrip('+').isdigit() and cols[2].rstrip('+').isdigit():
            part.nodes.append((int(cols[1].rstrip('+')), int(cols[2].rstrip('+')),
                               _gpus(cols[3])))
    return part


def check_partition(opt: SlurmOptions, part: Partition) -> List[str]:
    """Warnings about ``opt``'s requests on ``part``; a request that no node
    (or a partition limit) allows raises :class:`SweepError` naming the
    option to change."""
    where = f"partition '{part.name}'"
    sec = parse_time(opt.time)
    if part.max_time is not None and (sec is None or sec > part.max_time):
        raise SweepError(f'--time {opt.time} exceeds the MaxTime of {where} '
                         f'({format_time(part.max_time)}): lower --time (with --requeue a '
                         'run continues over several tasks)')
    if part.max_nodes is not None and opt.nodes > part.max_nodes:
        raise SweepError(f'--nodes {opt.nodes} exceeds the MaxNodes of {where} '
                         f'({part.max_nodes}): lower --nodes')
    agg_time, agg_mem, agg_cpus = agg_resources(opt.time, opt.mem, opt.agg_time, opt.agg_mem,
                                                opt.agg_cpus)
    asks = [('--mem', opt.mem, parse_mem(opt.mem)), ('--agg-mem', agg_mem, parse_mem(agg_mem))]
    for flag, text, mb in asks:
        if part.max_mem_per_node is not None and mb > part.max_mem_per_node:
            raise SweepError(f'{flag} {text} exceeds the MaxMemPerNode of {where} '
                             f'({part.max_mem_per_node}M): lower {flag}')
    if not part.nodes:
        return [f'# {where}: sinfo lists no node; memory, CPUs and GPUs not checked']
    gpus = 0 if opt.cpu else opt.gpus_per_task
    needs = [('--mem', opt.mem, 0, parse_mem(opt.mem)),
             ('--cpus-per-task', str(opt.cpus_per_task), 1, opt.cpus_per_task),
             ('--gpus-per-task', str(gpus), 2, gpus),
             ('--agg-mem', agg_mem, 0, parse_mem(agg_mem)),
             ('--agg-cpus', str(agg_cpus), 1, agg_cpus)]
    what = ('memory (MB)', 'CPUs', 'GPUs')
    for flag, text, col, need in needs:
        have = sorted({n[col] for n in part.nodes})
        # --mem 0 asks for a whole node's memory: it always fits.
        if need and max(have) < need:
            fix = (f'lower {flag}' if col != 2 or max(have) else
                   'add --cpu (the partition has no GPU) or choose another --partition')
            raise SweepError(f'{flag} {text} fits no node of {where} (its nodes have '
                             f"{what[col]} {', '.join(map(str, have))}): {fix}")
    fit = [n for n in part.nodes if (not parse_mem(opt.mem) or n[0] >= parse_mem(opt.mem))
           and n[1] >= opt.cpus_per_task and n[2] >= gpus]
    if not fit:
        raise SweepError(f'no node of {where} has --mem {opt.mem}, --cpus-per-task '
                         f'{opt.cpus_per_task} and {gpus} GPU(s) together: lower --mem or '
                         '--cpus-per-task')
    if len(fit) < opt.nodes:
        raise SweepError(f'--nodes {opt.nodes}: only {len(fit)} node(s) of {where} fit the '
                         'request: lower --nodes, --mem or --cpus-per-task')
    if len(fit) < len(part.nodes):
        return [f'# warning: {len(fit)} of the {len(part.nodes)} nodes of {where} fit --mem '
                f'{opt.mem} --cpus-per-task {opt.cpus_per_task}'
                + (f' --gpus-per-task {gpus}' if gpus else '')
                + ': the tasks wait for those nodes (lower them to use every node)']
    return []


# --------------------------------------------------------------------------- the queue
#: squeue states of a job that still owns its runs.
ACTIVE = ('PENDING', 'RUNNING', 'REQUEUED', 'REQUEUE_HOLD', 'REQUEUE_FED', 'CONFIGURING',
          'COMPLETING', 'SUSPENDED', 'RESIZING', 'SIGNALING', 'STAGE_OUT', 'STOPPED',
          'RESV_DEL_HOLD', 'SPECIAL_EXIT')


def read_arrays(script: str) -> Optional[Dict[str, List[str]]]:
    """The ``NAME=( ... )`` arrays and ``K`` of an array script this module
    wrote, or ``None`` for another script."""
    try:
        with open(script) as f:
            text = f.read()
    except OSError:
        return None
    arrays: Dict[str, List[str]] = {}
    for m in re.finditer(r'^(CFGS|SEEDS|DIRS|FPS)=\( (.*) \)$', text, re.M):
        try:
            arrays[m.group(1)] = shlex.split(m.group(2))
        except ValueError:
            return None
    k = re.search(r'^K=(\d+)$', text, re.M)
    if set(arrays) != {'CFGS', 'SEEDS', 'DIRS', 'FPS'}:
        return None
    arrays['K'] = [k.group(1) if k else '1']
    return arrays


def queued_owners() -> Optional[Dict[str, Tuple[str, str, str]]]:
    """``{normalised run folder: (fingerprint, job id, state)}`` of the runs
    that queued, running or requeued array tasks (of this user) own, read
    from ``squeue`` and the tasks' scripts; ``None`` when squeue cannot
    tell."""
    text = _query(['squeue', '--me', '-h', '-r', '-o', '%i|%T|%o'])
    if text is None:
        return None
    owners: Dict[str, Tuple[str, str, str]] = {}
    scripts: Dict[str, Optional[Dict[str, List[str]]]] = {}
    for line in text.splitlines():
        cols = line.strip().split('|', 2)
        if len(cols) != 3 or cols[1] not in ACTIVE:
            continue
        jobid, state, command = cols
        task = re.fullmatch(r'\d+_(\d+)', jobid)
        if task is None:
            continue
        script = command.split()[0] if command.split() else ''
        if script not in scripts:
            scripts[script] = read_arrays(script)
        arrays = scripts[script]
        if arrays is None:
            continue
        k = int(arrays['K'][0])
        i = int(task.group(1))
        for j in range(i * k, min((i + 1) * k, len(arrays['DIRS']))):
            owners[os.path.normpath(arrays['DIRS'][j])] = (arrays['FPS'][j], jobid, state)
    return owners


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
