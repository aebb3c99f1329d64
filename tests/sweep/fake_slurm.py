"""A stand-in SLURM (slurmctld 22.05) for the launcher's tests.

``sbatch``, ``scontrol``, ``squeue`` and ``sinfo`` are small executables
sharing one state file (:class:`Cluster`), behaving as SLURM 22.05 does in
what the launcher relies on:

- ``sbatch`` takes its options from the command line and from the
  ``#SBATCH`` lines at the top of the script, split as sbatch splits them
  (``'...'`` and ``"..."`` quotes, a backslash escapes the next character
  even inside quotes, an unquoted ``#`` starts a comment, a line holding
  ``hetjob`` starts another job component, the first command line ends
  them); the command line wins over the script. It refuses, with sbatch's
  messages and exit code 1, an unknown option, a partition that does not
  exist, a malformed ``--time`` or ``--array`` (or an index beyond
  ``MaxArraySize``), a dependency on an unknown job. A job asking for more
  time than its partition's ``MaxTime`` is accepted and pends for ever
  (``PartitionTimeLimit``), as with ``EnforcePartLimits=NO``.
- ``scontrol [--all] [--oneliner] show partition [NAME]`` (hidden
  partitions only with ``--all``; ``Partition NAME not found``, exit 1),
  ``scontrol show config``, ``scontrol requeue JOB``.
- ``squeue --me -h -r -o FORMAT [-j JOB]`` (``%i %T %o``): the tasks not
  yet ended.
- ``sinfo -h -N -p PARTITION -o FORMAT`` (``%N|%m|%c|%G``).
- :meth:`Cluster.run`, the scheduler: starts pending tasks in submission
  order, at most ``slots`` at once, honouring each array's throttle
  (``%N``), ``afterany`` / ``afterok`` / ``singleton`` dependencies and the
  partition's ``MaxTime``; each task takes one step (optionally running its
  script with bash and ``SLURM_*`` variables, its exit code deciding
  ``COMPLETED`` or ``FAILED``, its output appended to its ``--output``
  file). It records the most tasks that ran at once.

Without a reachable controller (``Cluster(down=True)``) every command fails
as SLURM's do.
"""
import json
import os
import re
import shlex
import subprocess
import sys
from typing import Any, Dict, List, Optional

HERE = os.path.abspath(__file__)
ACTIVE = ('PENDING', 'RUNNING', 'REQUEUED')
ENDED = ('COMPLETED', 'FAILED', 'CANCELLED', 'TIMEOUT')

#: sbatch's options taking a value (long name -> short letter or None).
VALUED = {'job-name': 'J', 'chdir': 'D', 'output': 'o', 'error': 'e', 'time': 't',
          'mem': None, 'mem-per-cpu': None, 'mem-per-gpu': None, 'nodes': 'N', 'ntasks': 'n',
          'ntasks-per-node': None, 'cpus-per-task': 'c', 'partition': 'p', 'account': 'A',
          'array': 'a', 'gpus-per-task': None, 'gpus': 'G', 'gpus-per-node': None,
          'signal': None, 'open-mode': None, 'dependency': 'd', 'qos': 'q', 'constraint': 'C',
          'comment': None, 'gres': None, 'mail-type': None, 'mail-user': None, 'exclude': 'x',
          'nodelist': 'w', 'time-min': None, 'reservation': None, 'export': None}
FLAGS = {'parsable', 'requeue', 'no-requeue', 'exclusive', 'hold', 'wait'}
SHORT = {v: k for k, v in VALUED.items() if v}


# --------------------------------------------------------------------------- sbatch's reading
def script_arguments(text: str) -> List[str]:
    """The options of a batch script's ``#SBATCH`` lines, as sbatch 22.05
    reads them (see the module docstring)."""
    args: List[str] = []
    for line in text.split('\n'):
        if not line.startswith('#SBATCH'):
            stripped = line.strip()
            if stripped and not stripped.startswith('#'):
                break  # the first command ends the options
            continue
        if re.search('hetjob|packjob', line, re.I):
            raise SbatchError('heterogeneous job components are not supported here')
        rest = line[len('#SBATCH'):]
        i, n = 0, len(rest)
        while True:
            while i < n and rest[i].isspace():
                i += 1
            if i >= n:
                break
            arg, quote, escape = [], None, False
            while i < n and (quote or not rest[i].isspace()):
                c = rest[i]
                if escape:
                    escape = False
                elif c == '\\':
                    escape = True
                    i += 1
                    continue
                elif quote:
                    if c == quote:
                        quote = None
                        i += 1
                        continue
                elif c in '"\'':
                    quote = c
                    i += 1
                    continue
                elif c == '#':
                    i = n  # an unquoted '#': the rest of the line is a comment
                    break
                arg.append(c)
                i += 1
            if quote:
                raise SbatchError(f'line {line!r}: Unmatched `{quote}`')
            if arg:
                args.append(''.join(arg))
    return args


class SbatchError(Exception):
    pass


def parse_options(argv: List[str]) -> Dict[str, Any]:
    """``{long name: value (True for a flag)}`` of sbatch options (the last
    one wins); the first non-option word and what follows: ``'script'``."""
    out: Dict[str, Any] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word.startswith('--'):
            name, eq, value = word[2:].partition('=')
            full = [o for o in list(VALUED) + list(FLAGS) if o == name] or \
                [o for o in list(VALUED) + list(FLAGS) if o.startswith(name)]
            if len(full) != 1:
                raise SbatchError(f"unrecognized option '{word}'" if not full else
                                  f"option '{word}' is ambiguous")
            name = full[0]
            if name in FLAGS:
                out[name] = True
            else:
                if not eq:
                    i += 1
                    if i >= len(argv):
                        raise SbatchError(f"option '--{name}' requires an argument")
                    value = argv[i]
                out[name] = value
        elif word.startswith('-') and len(word) > 1:
            name = SHORT.get(word[1])
            if name is None:
                raise SbatchError(f"invalid option -- '{word[1]}'")
            value = word[2:]
            if not value:
                i += 1
                value = argv[i]
            out[name] = value
        else:
            out['script'] = argv[i:]
            break
        i += 1
    return out


def parse_time(text: str) -> Optional[int]:
    """Seconds of a SLURM time (``None``: no limit); ``ValueError``."""
    if text.upper() in ('UNLIMITED', 'INFINITE'):
        return None
    m = re.fullmatch(r'(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?', text)
    if m is None:
        raise ValueError(text)
    d, a, b, c = m.groups()
    if d is not None:
        s = ((int(d) * 24 + int(a)) * 60 + int(b or 0)) * 60 + int(c or 0)
    elif c is not None:
        s = (int(a) * 60 + int(b)) * 60 + int(c)
    elif b is not None:
        s = int(a) * 60 + int(b)
    else:
        s = int(a) * 60
    return s or None


# --------------------------------------------------------------------------- the state
class Cluster:
    """The stand-in controller: its partitions, nodes and jobs in
    ``<folder>/slurm.json``; :meth:`install` puts its commands on a
    ``bin`` folder."""

    def __init__(self, folder: str, partitions: Optional[List[Dict[str, str]]] = None,
                 nodes: Optional[Dict[str, List[str]]] = None, max_array_size: int = 1001,
                 down: bool = False):
        self.folder = folder
        self.path = os.path.join(folder, 'slurm.json')
        if partitions is None:
            partitions = [{'PartitionName': 'gpu', 'Default': 'YES', 'MaxTime': '2-00:00:00',
                           'MaxNodes': 'UNLIMITED', 'MinNodes': '0', 'State': 'UP',
                           'MaxMemPerNode': 'UNLIMITED', 'MaxCPUsPerNode': 'UNLIMITED'}]
        if nodes is None:
            nodes = {p['PartitionName']: ['n1|64000|16|gpu:a100:4(S:0-1)'] for p in partitions}
        self.state = {'partitions': partitions, 'nodes': nodes, 'down': down,
                      'config': {'MaxArraySize': max_array_size}, 'next_id': 1000,
                      'jobs': [], 'calls': []}
        self.save()

    def save(self):
        with open(self.path + '.tmp', 'w') as f:
            json.dump(self.state, f)
        os.replace(self.path + '.tmp', self.path)

    @classmethod
    def load(cls, folder: str) -> 'Cluster':
        self = cls.__new__(cls)
        self.folder = folder
        self.path = os.path.join(folder, 'slurm.json')
        with open(self.path) as f:
            self.state = json.load(f)
        return self

    def install(self, bin_dir: str):
        """Write ``sbatch``, ``scontrol``, ``squeue`` and ``sinfo`` into
        ``bin_dir`` (put it first on ``PATH``)."""
        os.makedirs(bin_dir, exist_ok=True)
        for name in ('sbatch', 'scontrol', 'squeue', 'sinfo'):
            path = os.path.join(bin_dir, name)
            with open(path, 'w') as f:
                f.write(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(HERE)} '
                        f'{shlex.quote(self.folder)} {name} "$@"\n')
            os.chmod(path, 0o755)

    # ------------------------------------------------------------------ queries
    @property
    def jobs(self) -> List[Dict[str, Any]]:
        return self.state['jobs']

    def job(self, jobid) -> Optional[Dict[str, Any]]:
        return next((j for j in self.jobs if j['id'] == int(jobid)), None)

    def partition(self, name: str) -> Optional[Dict[str, str]]:
        return next((p for p in self.state['partitions'] if p['PartitionName'] == name), None)

    def tasks(self):
        """``(job, task index or None, task record)`` of every task."""
        for j in self.jobs:
            for idx, t in j['tasks'].items():
                yield j, (None if idx == '-' else int(idx)), t

    # ------------------------------------------------------------------ commands
    def sbatch(self, argv: List[str]) -> int:
        opts = parse_options(argv)
        script = (opts.get('script') or [None])[0]
        if script is None:
            raise SbatchError('a batch script is required')
        with open(script) as f:
            text = f.read()
        merged = parse_options(script_arguments(text))
        merged.pop('script', None)
        merged.update({k: v for k, v in opts.items() if k != 'script'})
        names = (merged.get('partition') or '').split(',') if merged.get('partition') else []
        if not names:
            default = next((p for p in self.state['partitions'] if p.get('Default') == 'YES'),
                           None)
            if default is None:
                raise SbatchError('Batch job submission failed: No partition specified or '
                                  'system default partition')
            names = [default['PartitionName']]
        for name in names:
            if self.partition(name) is None:
                raise SbatchError('Batch job submission failed: Invalid partition name '
                                  'specified')
        try:
            seconds = parse_time(merged.get('time', '60'))
        except ValueError:
            raise SbatchError('Invalid --time specification') from None
        indices, throttle = [None], None
        if 'array' in merged:
            m = re.fullmatch(r'(\d+)-(\d+)(?:%(\d+))?', merged['array'])
            if m is None or int(m.group(2)) >= self.state['config']['MaxArraySize']:
                raise SbatchError('Batch job submission failed: Invalid job array '
                                  'specification')
            indices = list(range(int(m.group(1)), int(m.group(2)) + 1))
            throttle = int(m.group(3)) if m.group(3) else None
        dependency = merged.get('dependency', '')
        for part in re.split('[,?]', dependency) if dependency else []:
            kind, _, ids = part.partition(':')
            if kind not in ('afterany', 'afterok', 'afternotok', 'singleton') or \
                    any(self.job(i.split('_')[0]) is None for i in ids.split(':') if i):
                raise SbatchError('Batch job submission failed: Job dependency problem')
        jobid = self.state['next_id']
        self.state['next_id'] += 1
        self.jobs.append({
            'id': jobid, 'name': merged.get('job-name', os.path.basename(script)),
            'partitions': names, 'time': seconds, 'throttle': throttle,
            'dependency': dependency, 'script': script, 'text': text,
            'output': merged.get('output'), 'chdir': merged.get('chdir'), 'options': merged,
            'tasks': {('-' if i is None else str(i)): {'state': 'PENDING', 'restarts': 0}
                      for i in indices}})
        print(jobid if opts.get('parsable') else f'Submitted batch job {jobid}')
        return 0

    def scontrol(self, argv: List[str]) -> int:
        show_all = any(a in ('-a', '--all') for a in argv)
        words = [a for a in argv if not a.startswith('-')]
        if words[:2] == ['show', 'partition']:
            parts = [p for p in self.state['partitions']
                     if show_all or p.get('Hidden') != 'YES']
            if len(words) > 2:
                parts = [p for p in parts if p['PartitionName'] == words[2]]
                if not parts:
                    print(f'Partition {words[2]} not found')
                    return 1
            for p in parts:
                print(' '.join(f'{k}={v}' for k, v in p.items()))
            return 0
        if words[:2] == ['show', 'config']:
            for k, v in self.state['config'].items():
                print(f'{k:<24}= {v}')
            return 0
        if words[:1] == ['requeue']:
            jobid, _, idx = words[1].partition('_')
            job = self.job(jobid)
            task = job and job['tasks'].get(idx or '-')
            if task is None:
                print('Invalid job id specified', file=sys.stderr)
                return 1
            task['state'] = 'PENDING'
            task['restarts'] += 1
            return 0
        print(f'invalid command: {argv}', file=sys.stderr)
        return 1

    def squeue(self, argv: List[str]) -> int:
        fmt = argv[argv.index('-o') + 1] if '-o' in argv else '%i %T'
        only = argv[argv.index('-j') + 1] if '-j' in argv else None
        if only is not None and self.job(only.split('_')[0]) is None:
            print('slurm_load_jobs error: Invalid job id specified', file=sys.stderr)
            return 1
        for job, idx, task in self.tasks():
            if task['state'] not in ACTIVE or (only and str(job['id']) != only):
                continue
            ident = str(job['id']) if idx is None else f"{job['id']}_{idx}"
            print(fmt.replace('%i', ident).replace('%T', task['state'])
                  .replace('%o', job['script']))
        return 0

    def sinfo(self, argv: List[str]) -> int:
        part = argv[argv.index('-p') + 1]
        for line in self.state['nodes'].get(part, []):
            print(line)
        return 0

    # ------------------------------------------------------------------ the scheduler
    def _ready(self, job: Dict[str, Any]) -> bool:
        dep = job['dependency']
        for part in re.split(',', dep) if dep else []:
            kind, _, ids = part.partition(':')
            if kind == 'singleton':  # after every earlier job of its name has ended
                if any(j['id'] < job['id'] and j['name'] == job['name'] and
                       any(t['state'] not in ENDED for t in j['tasks'].values())
                       for j in self.jobs):
                    return False
                continue
            for i in ids.split(':'):
                states = [t['state'] for t in self.job(i)['tasks'].values()]
                if any(s not in ENDED for s in states):
                    return False
                if kind == 'afterok' and any(s != 'COMPLETED' for s in states):
                    return False
        limit = self.partition(job['partitions'][0]).get('MaxTime', 'UNLIMITED')
        limit = parse_time(limit)
        if limit is not None and (job['time'] is None or job['time'] > limit):
            job['reason'] = 'PartitionTimeLimit'
            return False
        return True

    def run(self, slots: int = 10 ** 6, execute: bool = False, env: Optional[dict] = None,
            max_steps: int = 10_000) -> Dict[str, Any]:
        """Schedule until nothing more can start (see the module
        docstring); returns ``{'peak': most tasks at once, 'steps': n}``.
        With ``execute`` each task's script runs (bash, in its ``--chdir``)."""
        peak = steps = 0
        for _ in range(max_steps):
            started = []
            for job, idx, task in list(self.tasks()):
                if len(started) >= slots:
                    break
                if task['state'] != 'PENDING' or not self._ready(job):
                    continue
                running = sum(1 for t in job['tasks'].values() if t['state'] == 'RUNNING')
                if job['throttle'] is not None and running >= job['throttle']:
                    continue
                task['state'] = 'RUNNING'
                started.append((job, idx, task))
            if not started:
                break
            steps += 1
            peak = max(peak, sum(1 for _, _, t in self.tasks() if t['state'] == 'RUNNING'))
            self.save()
            for job, idx, task in started:
                rc = 0
                if execute:
                    task_env = dict(env or os.environ, SLURM_JOB_ID=str(job['id']),
                                    SLURM_JOB_NAME=job['name'],
                                    SLURM_RESTART_COUNT=str(task['restarts']))
                    if idx is not None:
                        task_env.update(SLURM_ARRAY_JOB_ID=str(job['id']),
                                        SLURM_ARRAY_TASK_ID=str(idx))
                    proc = subprocess.run(['bash', job['script']], cwd=job['chdir'] or None,
                                          env=task_env, capture_output=True, text=True,
                                          timeout=120)
                    rc = proc.returncode
                    if job['output']:  # the job's output file, its pattern expanded
                        path = re.sub('%[xAaj]', lambda m: {
                            '%x': job['name'], '%A': str(job['id']), '%j': str(job['id']),
                            '%a': str(idx)}[m.group()], job['output'])
                        with open(os.path.join(job['chdir'] or '', path), 'a') as f:
                            f.write(proc.stdout + proc.stderr)
                    fresh = Cluster.load(self.folder)  # the task may have submitted jobs
                    self.state['jobs'] += fresh.jobs[len(self.jobs):]
                    self.state['next_id'] = fresh.state['next_id']
                    self.state['calls'] = fresh.state['calls']
                task['state'] = 'COMPLETED' if rc == 0 else 'FAILED'
                task['exit'] = rc
            self.save()
        return {'peak': peak, 'steps': steps}


def main(argv: List[str]) -> int:
    folder, command, args = argv[0], argv[1], argv[2:]
    cluster = Cluster.load(folder)
    cluster.state['calls'].append([command, *args])
    cluster.save()
    if cluster.state['down']:
        print(f'{command}: error: Unable to contact slurm controller (connect failure)',
              file=sys.stderr)
        return 1
    try:
        rc = getattr(cluster, command)(args)
    except SbatchError as err:
        print(f'{command}: error: {err}', file=sys.stderr)
        return 1
    cluster.save()
    return rc


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
