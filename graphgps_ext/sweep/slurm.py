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
of them; with a throttle each array waits for the one before
(``afterany``), so that the throttle holds over the whole sweep. Before
submitting, every request is checked against the partition
(:func:`check_partition`; a partition that does not exist is refused,
naming those that do). Every task exports ``OMP_NUM_THREADS`` (its CPUs
shared among the processes it starts); ``--cpu`` tasks request no GPU and
hide CUDA (``CUDA_VISIBLE_DEVICES=``); with ``runs_per_task`` k > 1 a task
runs k seeds at once on its one GPU. :func:`queued_owners` reads which runs
the queued, running and requeued tasks of earlier submissions own.

A task restarted after the aggregation job ran (``scontrol requeue`` by hand
after a failure; ``SLURM_RESTART_COUNT`` > 0) submits the aggregation again,
after its array (``afterany``) and after any aggregation of that name
(``singleton``), unless the recorded aggregation job is still pending.

Every value that enters a script is checked and quoted: no value may hold a
control character (:func:`check_value`); shell words are quoted with
:func:`shlex.quote`; ``#SBATCH`` values too (sbatch reads ``'...'`` and
``"..."`` in those lines as a shell does), refusing what sbatch reads
otherwise (:func:`sbatch_value`: a backslash, ``hetjob``, ``%`` in a file
name). ``--sbatch-opt`` may not set an option the launcher writes and checks
itself (:func:`sbatch_option`). Scripts get unique names, created
exclusively (:func:`reserve_scripts`), so that two launches never share one.
"""
import datetime
import os
import re
import secrets
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from graphgps_ext.results.tree import RunDir, RunRoot
from graphgps_ext.sweep.plan import Run, SweepError

_TIME = re.compile(r'(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?')
_MEM = re.compile(r'(\d+)([KMGT]?)B?', re.IGNORECASE)


def parse_time(text: str) -> Optional[int]:
    """Seconds of a SLURM time limit (``MM``, ``MM:SS``, ``HH:MM:SS``,
    ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``); ``None`` for ``UNLIMITED`` /
    ``INFINITE`` and for a limit of zero (SLURM: no limit). Raises
    :class:`SweepError`."""
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
        seconds = ((int(days) * 24 + h) * 60 + mi) * 60 + s
    elif c is not None:  # HH:MM:SS
        seconds = (int(a) * 60 + int(b)) * 60 + int(c)
    elif b is not None:  # MM:SS
        seconds = int(a) * 60 + int(b)
    else:
        seconds = int(a) * 60  # MM
    return seconds or None


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


#: Characters no value of a script may hold: C0 and C1 controls (a newline
#: starts a script line of its own), DEL, Unicode line separators.
_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029]')


def check_value(value, what: str) -> str:
    """``value`` as text when it may enter a script, else :class:`SweepError`
    naming ``what`` (the option, key or path it comes from)."""
    text = str(value)
    m = _CONTROL.search(text)
    if m:
        raise SweepError(f'{what} {text!r} holds a control character ({m.group()!r}): every '
                         'value of a launch reaches the lines of its scripts; remove it')
    return text


def _word(value, what: str) -> str:
    """A shell word: ``value`` checked (:func:`check_value`) and quoted."""
    return shlex.quote(check_value(value, what))


def sbatch_value(value, what: str, filename: bool = False) -> str:
    """The quoted value of an ``#SBATCH`` option. sbatch splits those lines
    as a shell does (``'...'`` and ``"..."`` quotes, an unquoted ``#``
    starts a comment), so :func:`shlex.quote` holds; what it reads
    otherwise is refused, naming ``what``: a control character, a backslash
    (an escape there even inside quotes), ``hetjob`` / ``packjob`` (a line
    holding either starts another component of a heterogeneous job) and,
    in a file name, ``%`` (a pattern such as ``%j``)."""
    text = check_value(value, what)
    if '\\' in text:
        raise SweepError(f'{what} {text!r} holds a backslash: sbatch reads it in an #SBATCH '
                         'line as an escape, even inside quotes; remove it')
    low = text.lower()
    for word in ('hetjob', 'packjob'):
        if word in low:
            raise SweepError(f"{what} {text!r} holds '{word}': sbatch reads an #SBATCH line "
                             'holding it as the start of another component of a '
                             'heterogeneous job; rename it')
    if filename and '%' in text:
        raise SweepError(f"{what} {text!r} holds '%': sbatch reads it in a file name as a "
                         'pattern (%j, %x, ...); use a folder without it')
    return shlex.quote(text)


#: sbatch options the launcher writes itself, with the launcher's option
#: that sets them ('' when the sweep itself decides them).
OWNED = {
    'job-name': '--job-name', 'chdir': '', 'output': '', 'time': '--time',
    'mem': '--mem', 'mem-per-cpu': '--mem', 'mem-per-gpu': '--mem', 'nodes': '--nodes',
    'ntasks': '', 'ntasks-per-node': '', 'cpus-per-task': '--cpus-per-task',
    'partition': '--partition', 'account': '--account', 'array': '--throttle',
    'gpus-per-task': '--gpus-per-task', 'gpus': '--gpus-per-task',
    'gpus-per-node': '--gpus-per-task', 'requeue': '--requeue', 'no-requeue': '--requeue',
    'signal': '--requeue', 'open-mode': '--requeue', 'dependency': '',
}
#: sbatch's one-letter names of owned options.
SHORT_OWNED = {'A': 'account', 'a': 'array', 'c': 'cpus-per-task', 'D': 'chdir',
               'd': 'dependency', 'G': 'gpus', 'J': 'job-name', 'N': 'nodes', 'n': 'ntasks',
               'o': 'output', 'p': 'partition', 't': 'time'}
_LONG_OPT = re.compile(r'--([A-Za-z][A-Za-z0-9-]*)(?:(=)(.*)|\s+(\S.*))?', re.S)
_SHORT_OPT = re.compile(r'-([A-Za-z])\s*(.*)', re.S)


def sbatch_option(text: str) -> str:
    """The ``#SBATCH`` line of a ``--sbatch-opt`` value: ``--name=value``,
    ``--name value``, ``--name``, ``-X value`` or ``-X``, its value quoted
    (:func:`sbatch_value`). An option the launcher writes and checks itself
    (:data:`OWNED`; a prefix of one too: sbatch takes unambiguous
    abbreviations) is refused naming the launcher's option that sets it."""
    what = f'--sbatch-opt {text!r}'
    check_value(text, '--sbatch-opt')
    text = text.strip()
    long_ = _LONG_OPT.fullmatch(text)
    if long_:
        name = long_.group(1)
        value = long_.group(3) if long_.group(2) else long_.group(4)
        flag = f'--{name}'
        owned = [name] if name in OWNED else [o for o in OWNED if o.startswith(name)]
    else:
        short = _SHORT_OPT.fullmatch(text)
        if short is None:
            raise SweepError(f'{what} is not an sbatch option: write --name=value (e.g. '
                             '--sbatch-opt --qos=high) or -X value')
        flag, value = f'-{short.group(1)}', short.group(2) or None
        name = SHORT_OWNED.get(short.group(1))
        owned = [name] if name else []
    if owned:
        via = OWNED[owned[0]]
        raise SweepError(f'{what}: the launcher writes --{owned[0]} itself'
                         + (f' (checked against the partition): use {via} instead' if via
                            else ' (the sweep decides it); remove this option'))
    if value is not None and not value.strip():
        raise SweepError(f'{what}: {flag} has an empty value: give one, or drop the option')
    if value is None:
        return f'#SBATCH {flag}'
    quoted = sbatch_value(value.strip(), f'the value of {what}')
    return f'#SBATCH {flag}={quoted}' if long_ else f'#SBATCH {flag} {quoted}'


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
        """Refuse a request that is malformed, or a value that cannot enter
        an ``#SBATCH`` line as it is (:func:`sbatch_value`,
        :func:`sbatch_option`), naming the option."""
        parse_time(self.time)
        parse_mem(self.mem)
        agg_resources(self.time, self.mem, self.agg_time, self.agg_mem, self.agg_cpus)
        for name in ('nodes', 'cpus_per_task'):
            if getattr(self, name) < 1:
                raise SweepError(f"--{name.replace('_', '-')} must be >= 1")
        if self.agg_cpus is not None and self.agg_cpus < 1:
            raise SweepError(f'--agg-cpus must be >= 1, got {self.agg_cpus}')
        for flag, value in (('--partition', self.partition), ('--account', self.account),
                            ('--job-name', self.job_name)):
            sbatch_value(value, flag)
            if value.startswith('-'):
                raise SweepError(f"{flag} '{value}' starts with '-': give a name")
        for name in self.partitions:
            if not name or not re.fullmatch(r'[^\s,]+', name):
                raise SweepError(f"--partition '{self.partition}': give a partition name, or "
                                 'several separated by commas')
        if not self.job_name or '/' in self.job_name:
            raise SweepError(f"--job-name '{self.job_name}' names the output files (%x): give "
                             "a name without '/'")
        for text in self.sbatch_opts:
            sbatch_option(text)
        if self.gpus_per_task < 0 or (self.throttle is not None and self.throttle < 1):
            raise SweepError('--gpus-per-task must be >= 0 and --throttle >= 1')
        if self.cpu and self.gpus_per_task:
            raise SweepError('--cpu jobs request no GPU: drop --gpus-per-task')
        if self.runs_per_task > 1 and (self.ddp or self.gpus_per_task != 1):
            raise SweepError('--runs-per-gpu shares one GPU among the runs of a task: '
                             'it needs --gpus-per-task 1 and --nodes 1')

    @property
    def partitions(self) -> List[str]:
        """The partitions asked for (``--partition a,b``: either), ``[]``
        for the cluster's default."""
        return self.partition.split(',') if self.partition else []

    @property
    def ddp(self) -> bool:
        """Every run data parallel (srun + torchrun)."""
        return self.gpus_per_task > 1 or self.nodes > 1

    @property
    def procs_per_task(self) -> int:
        """Processes that share a task's (a node's) CPUs."""
        return max(self.gpus_per_task, 1) if self.ddp else self.runs_per_task


def _q(words: Sequence[str], what: str = 'a command word') -> str:
    return ' '.join(_word(w, what) for w in words)


def _array(name: str, values: Sequence, what: str) -> str:
    return f'{name}=( ' + ' '.join(_word(v, what) for v in values) + ' )'


def _header(opt: SlurmOptions, root: str, job_name: str, slurm_dir: str, pattern: str,
            time: str, mem: str, cpus: int, nodes: int, ntasks: int) -> List[str]:
    """The ``#SBATCH`` lines, every value quoted (:func:`sbatch_value`); the
    output file is ``<slurm_dir>/<pattern>``."""
    sbatch_value(slurm_dir, 'the SLURM folder (<results>/_slurm)', filename=True)
    lines = ['#!/usr/bin/env bash',
             f"#SBATCH --job-name={sbatch_value(job_name, '--job-name')}",
             f"#SBATCH --chdir={sbatch_value(root, 'the working directory')}",
             f"#SBATCH --output={sbatch_value(os.path.join(slurm_dir, pattern), 'the output')}",
             f"#SBATCH --time={sbatch_value(time, '--time')}",
             f"#SBATCH --mem={sbatch_value(mem, '--mem')}",
             f'#SBATCH --nodes={int(nodes)}',
             f'#SBATCH --ntasks={int(ntasks)}',
             f'#SBATCH --cpus-per-task={int(cpus)}']
    if opt.partition:
        lines.append(f"#SBATCH --partition={sbatch_value(opt.partition, '--partition')}")
    if opt.account:
        lines.append(f"#SBATCH --account={sbatch_value(opt.account, '--account')}")
    lines += [sbatch_option(o) for o in opt.sbatch_opts]
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
                 opt: SlurmOptions, root: str, slurm_dir: str, script_path: str,
                 agg_path: Optional[str] = None) -> str:
    """The array job: one task per ``opt.runs_per_task`` runs of ``runs``.
    ``agg_path``: the aggregation script, submitted again by a task that was
    restarted after the aggregation ran (see the module docstring)."""
    ddp = opt.ddp
    k = opt.runs_per_task
    tasks = -(-len(runs) // k)
    lines = _header(opt, root, opt.job_name, slurm_dir, '%x-%A_%a.out',
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
        _array('CFGS', [r.target.config for r in runs], 'the config file'),
        _array('SEEDS', [r.seed for r in runs], 'the seed'),
        _array('DIRS', [r.run_dir for r in runs], 'the run folder (out_dir/run_name)'),
        _array('FPS', [r.target.fingerprint for r in runs], 'the fingerprint'),
        _array('OVERWRITE', [int(r.overwrite) for r in runs], 'the overwrite flag'),
        '# Seeds per stacked run (main.py --seeds S --stack K; 0: one seed).',
        _array('STACKS', [len(getattr(r, 'runs', ())) for r in runs], 'the stack size'),
        _array('OVERRIDES', overrides, 'the override'),
        f"SCRIPT={_word(script_path, 'the script')}",
    ]
    if any(r.target.overrides != overrides for r in runs):
        raise ValueError('every run of one array job has the same overrides')
    if agg_path is not None:
        lines += [
            f"AGG={_word(agg_path, 'the aggregation script')}",
            '# Restarted after the aggregation ran (a task requeued by hand after it',
            '# failed): aggregate again, after this array and after any aggregation of',
            '# this name, unless the recorded aggregation job is still pending.',
            'if (( ${SLURM_RESTART_COUNT:-0} > 0 )) && [[ -n ${SLURM_ARRAY_JOB_ID:-} ]]; then',
            '    aggid=$(cat "$AGG.jobid" 2>/dev/null)',
            '    state=$( [[ -n $aggid ]] && squeue -h -j "$aggid" -o %T 2>/dev/null)',
            '    if [[ $state != PENDING ]]; then',
            '        if newid=$(sbatch --parsable '
            '--dependency="afterany:${SLURM_ARRAY_JOB_ID},singleton" "$AGG"); then',
            '            echo "${newid%%;*}" >"$AGG.jobid.$$"',
            '            mv -f "$AGG.jobid.$$" "$AGG.jobid"',
            '            echo "restarted task: aggregation job ${newid%%;*} submitted" >&2',
            '        else',
            '            echo "restarted task: could not submit the aggregation;" \\',
            '                 "run: sbatch $AGG" >&2',
            '        fi',
            '    fi',
            'fi',
        ]
    launch = _q([*python, main], '--python / --main')
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
        launch = (f"srun --ntasks-per-node=1 --kill-on-bad-exit=1 {_q(python, '--python')} "
                  f'-m graphgps_ext.sweep.torchrun{rdzv} --nproc_per_node={nproc} '
                  f"{_word(main, '--main')}")
    done = '$out/' + RunDir.DONE  # the seed's marker, in the script
    lines += [
        'i=${SLURM_ARRAY_TASK_ID:?not an array task}',
        'pids=()',
        'start() {  # run $1 of the arrays, in the background',
        '    local j=$1 cfg=${CFGS[$1]} seed=${SEEDS[$1]} out=${DIRS[$1]} fp=${FPS[$1]} log',
        f'    log=$(dirname "$out")/{RunRoot.seed_log_name("$seed")}',
        '    # Complete: its done marker carries this run\'s fingerprint (and, when it',
        '    # replaces a finished seed, was written after this script). A stack',
        '    # leaves out its complete seeds itself.',
        '    if (( ${STACKS[$j]} == 0 )) && [[ -e ' + done + ' ]] \\',
        '            && grep -q "\\"fingerprint\\": *\\"$fp\\"" "' + done + '" \\',
        '            && { [[ ${OVERWRITE[$j]} == 0 ]] || [[ ' + done + ' -nt $SCRIPT ]]; }; then',
        '        echo "complete: ' + done + '"; return',
        '    fi',
        '    local flags=(); [[ ${OVERWRITE[$j]} == 1 ]] && flags=(--overwrite)',
        '    local sel=(seed "$seed")',
        '    (( ${STACKS[$j]} )) && sel=(--seeds "$seed" --stack "${STACKS[$j]}")',
        '    mkdir -p "$(dirname "$log")"',
        '    echo "[$(date -Iseconds)] job ${SLURM_JOB_ID:-?} task $i on $(hostname): $cfg seed $seed" >>"$log"',
        '    ' + launch + ' --cfg "$cfg" ${flags[@]+"${flags[@]}"} "${sel[@]}" '
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
    lines = _header(opt, root, f'{opt.job_name}-agg', slurm_dir, '%x-%j.out',
                    time, mem, cpus, 1, 1)
    lines += ['set -uo pipefail', 'export CUDA_VISIBLE_DEVICES='] + _omp(1)
    lines += ['# Aggregation of the sweep, after the array jobs (afterany).',
              'rc=0']
    for n, cmd in enumerate(commands):
        if folders is None:
            lines.append(f"{_q(cmd, 'the aggregation command')} || rc=1")
            continue
        folder, fp = folders[n]
        if not re.fullmatch(r'[0-9a-f]+', fp):
            raise ValueError(f'a fingerprint is hexadecimal, got {fp!r}')
        note = (f'no complete seed of {folder} (fingerprint {fp}): every seed failed, is '
                'stale or did not run; not aggregated')
        lines += [f"if grep -qs '\"fingerprint\": *\"{fp}\"' "
                  f"{_word(folder, 'the results folder')}/*/done; then",
                  f"    {_q(cmd, 'the aggregation command')} || rc=1",
                  f"else echo {_word(note, 'the results folder')}",
                  'fi']
    lines.append('exit $rc')
    return '\n'.join(lines) + '\n'


def script_paths(slurm_dir: str, job_name: str, parts: int = 1) -> Tuple[List[str], str]:
    """The array scripts (one per part) and the aggregation script:
    ``<job name>-<date>-<time>-<random>``, unique to this launch (two
    launches in one second get two names; :func:`reserve_scripts` makes
    sure)."""
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    base = os.path.join(slurm_dir, f'{job_name}-{stamp}-{secrets.token_hex(4)}')
    arrays = ([base + '.sbatch'] if parts == 1 else
              [f'{base}-part{n + 1}.sbatch' for n in range(parts)])
    return arrays, base + '-agg.sbatch'


def reserve_scripts(slurm_dir: str, job_name: str, parts: int, agg: bool
                    ) -> Tuple[List[str], str]:
    """Create the script files of one launch (:func:`script_paths`, empty),
    each exclusively (``O_EXCL``, no symlink followed): a name that exists
    already, another launch's, is never reused or overwritten; another
    name is drawn. Returns the array scripts and the aggregation script."""
    os.makedirs(slurm_dir, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0)
    for _ in range(100):
        arrays, agg_path = script_paths(slurm_dir, job_name, parts)
        made: List[str] = []
        try:
            for path in arrays + ([agg_path] if agg else []):
                os.close(os.open(path, flags, 0o644))
                made.append(path)
            return arrays, agg_path
        except FileExistsError:
            for path in made:
                os.unlink(path)
    raise RuntimeError(f'no free script name in {slurm_dir} after 100 draws')


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
    min_nodes: int = 0
    max_mem_per_node: Optional[int] = None  # MB
    max_cpus_per_node: Optional[int] = None
    state: str = 'UP'
    nodes: List[Tuple[int, int, int]] = field(default_factory=list)  # (mem MB, cpus, gpus)


def _gpus(gres: str) -> int:
    """GPUs of a node's ``sinfo %G`` field, e.g. ``gpu:a100:4(S:0-1)``."""
    n = 0
    for part in re.split(r',(?![^(]*\))', gres or ''):
        m = re.match(r'gpu(?::[^:(]+)?:(\d+)', part.strip())
        if m:
            n += int(m.group(1))
    return n


def _limit(fields: Dict[str, str], key: str) -> Optional[int]:
    value = fields.get(key) or 'UNLIMITED'
    return int(value) if value.isdigit() else None


def partition_table() -> Optional[Dict[str, Dict[str, str]]]:
    """``{name: fields}`` of every partition, hidden ones included
    (``scontrol --all --oneliner show partition``), or ``None`` when scontrol
    does not answer (not installed, no controller reachable)."""
    text = _query(['scontrol', '--all', '--oneliner', 'show', 'partition'])
    if text is None:
        return None
    table = {}
    for line in text.splitlines():
        fields = dict(re.findall(r'(\w+)=(\S*)', line))
        if fields.get('PartitionName'):
            table[fields['PartitionName']] = fields
    return table


def partition_info(name: str = '', table: Optional[Dict[str, Dict[str, str]]] = None
                   ) -> Optional[Partition]:
    """The partition ``name`` (or the default one) with its nodes, or
    ``None`` when scontrol cannot tell. A partition that the controller does
    not list (or no default partition) is refused (:class:`SweepError`,
    exit 2) naming the partitions there are."""
    table = partition_table() if table is None else table
    if table is None:
        return None
    names = sorted(table)
    listed = (', '.join(f"{n}{' (default)' if table[n].get('Default') == 'YES' else ''}"
                        for n in names) or 'none')
    if name:
        fields = table.get(name)
        if fields is None:
            raise SweepError(f"--partition '{name}': no such partition (scontrol lists: "
                             f'{listed}); choose one of them')
    else:
        fields = next((f for f in table.values() if f.get('Default') == 'YES'), None)
        if fields is None:
            raise SweepError(f'the cluster has no default partition: give --partition '
                             f'(scontrol lists: {listed})')
    part = Partition(fields['PartitionName'], state=fields.get('State', 'UP'))
    if fields.get('MaxTime') not in (None, 'UNLIMITED', 'INFINITE'):
        try:
            part.max_time = parse_time(fields['MaxTime'])
        except SweepError:
            pass
    part.max_nodes = _limit(fields, 'MaxNodes')
    part.min_nodes = _limit(fields, 'MinNodes') or 0
    part.max_mem_per_node = _limit(fields, 'MaxMemPerNode')
    part.max_cpus_per_node = _limit(fields, 'MaxCPUsPerNode')
    nodes = _query(['sinfo', '-h', '-N', '-p', part.name, '-o', '%N|%m|%c|%G'])
    for line in (nodes or '').splitlines():
        cols = line.strip().split('|')
        if len(cols) == 4 and cols[1].rstrip('+').isdigit() and cols[2].rstrip('+').isdigit():
            part.nodes.append((int(cols[1].rstrip('+')), int(cols[2].rstrip('+')),
                               _gpus(cols[3])))
    return part


def check_partitions(opt: SlurmOptions) -> List[str]:
    """Check ``opt``'s requests against the partition(s) asked for (each
    must exist; with several, the tasks must fit at least one): the lines to
    print (warnings, or that scontrol did not answer). Raises
    :class:`SweepError` for a partition that does not exist or a request
    that fits none."""
    table = partition_table()
    if table is None:
        return [f"# partition {opt.partition or '(default)'} not checked: scontrol did not "
                'answer (no SLURM controller reachable from here?)']
    parts = [partition_info(name, table) for name in (opt.partitions or [''])]
    out, errors = [], []
    for part in parts:
        try:
            out += check_partition(opt, part)
        except SweepError as err:
            errors.append(err)
    if len(errors) == len(parts):
        raise errors[0]
    for err in errors:
        out.append(f'# warning: {err} (the tasks go to the other partitions)')
    return out


def check_partition(opt: SlurmOptions, part: Partition) -> List[str]:
    """Warnings about ``opt``'s requests on ``part``; a request that no node
    (or a partition limit) allows raises :class:`SweepError` naming the
    option to change. Every job the launcher submits is checked: the array
    tasks (``--time``, ``--mem``, ``--nodes``, ``--cpus-per-task``,
    ``--gpus-per-task``) and the aggregation job (``--agg-time``,
    ``--agg-mem``, ``--agg-cpus``, one node)."""
    where = f"partition '{part.name}'"
    agg_time, agg_mem, agg_cpus = agg_resources(opt.time, opt.mem, opt.agg_time, opt.agg_mem,
                                                opt.agg_cpus)
    if part.max_time is not None:
        for flag, text in (('--time', opt.time), ('--agg-time', agg_time)):
            sec = parse_time(text)
            if sec is None or sec > part.max_time:
                fix = (f'lower {flag}' + (' (with --requeue a run continues over several '
                                          'tasks)' if flag == '--time' else ''))
                raise SweepError(f'{flag} {text} exceeds the MaxTime of {where} '
                                 f'({format_time(part.max_time)}): {fix}')
    if part.max_nodes is not None and opt.nodes > part.max_nodes:
        raise SweepError(f'--nodes {opt.nodes} exceeds the MaxNodes of {where} '
                         f'({part.max_nodes}): lower --nodes')
    if part.min_nodes > 1:
        who = ('the aggregation job (one node)' if opt.nodes >= part.min_nodes else
               f'--nodes {opt.nodes}')
        raise SweepError(f'{who} is below the MinNodes of {where} ({part.min_nodes}): '
                         'choose another --partition')
    asks = [('--mem', opt.mem, parse_mem(opt.mem)), ('--agg-mem', agg_mem, parse_mem(agg_mem))]
    for flag, text, mb in asks:
        if part.max_mem_per_node is not None and mb > part.max_mem_per_node:
            raise SweepError(f'{flag} {text} exceeds the MaxMemPerNode of {where} '
                             f'({part.max_mem_per_node}M): lower {flag}')
    for flag, cpus in (('--cpus-per-task', opt.cpus_per_task), ('--agg-cpus', agg_cpus)):
        if part.max_cpus_per_node is not None and cpus > part.max_cpus_per_node:
            raise SweepError(f'{flag} {cpus} exceeds the MaxCPUsPerNode of {where} '
                             f'({part.max_cpus_per_node}): lower {flag}')
    notes = []
    if part.state.upper() != 'UP':
        notes.append(f'# warning: {where} is {part.state}: the jobs pend until it is UP')
    if not part.nodes:
        return notes + [f'# {where}: sinfo lists no node; memory, CPUs and GPUs not checked']
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
        notes.append(f'# warning: {len(fit)} of the {len(part.nodes)} nodes of {where} fit '
                     f'--mem {opt.mem} --cpus-per-task {opt.cpus_per_task}'
                     + (f' --gpus-per-task {gpus}' if gpus else '')
                     + ': the tasks wait for those nodes (lower them to use every node)')
    return notes


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
        # The command is the script's path as submitted (it may hold spaces);
        # a command with arguments is not a script of this module.
        script = command.strip()
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
