"""The launcher (``python -m graphgps_ext.sweep``, ``run/sweep.sh``) and
``run/reproduce.sh`` with a stand-in interpreter for the runs and a stand-in
sbatch (no training; the configs are resolved for real): the folders the
overrides decide, complete and stale seeds, command lines, the GPU queue,
failures, aggregation after the runs, the SLURM array and the dependent
aggregation job, its resources and the requeue margin."""
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time

import pytest

from graphgps_ext.sweep import cli, reproduce, slurm
from graphgps_ext.sweep.plan import SweepError, parse_seeds, resolve

from run_checks import seal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP = os.path.join(ROOT, 'run', 'sweep.sh')
REPRODUCE = os.path.join(ROOT, 'run', 'reproduce.sh')

# A stand-in interpreter. `main.py --cfg C [--overwrite] seed S KEY VALUE ...`
# records the run and writes <out_dir>/<run_name>/<S>/done with the
# fingerprint the test expects for C (FAKE_FPS), as main.py does;
# `-m MODULE ARGS` records the call. With a GPU it holds a lock directory per
# GPU so that two runs sharing a GPU fail loudly; configs named *fail* exit 3.
FAKE_PY = r'''#!/usr/bin/env python3
import hashlib, json, os, sys, time
args = sys.argv[1:]
def record(line):
    with open(os.environ['FAKE_EVENTS'], 'a') as f:
        f.write(line + '\n')
if args[0] == '-m':
    record(' '.join(['agg' if args[1] == 'graphgps_ext.agg' else args[1]] + args[2:]))
    sys.exit(0)
cfg, rest = args[2], args[3:]
overwrite = rest[:1] == ['--overwrite']
rest = rest[1:] if overwrite else rest
seed, opts = rest[1], dict(zip(rest[2::2], rest[3::2]))
rel = cfg.split('configs/', 1)[-1]
name = opts.get('run_name') or rel.rsplit('.', 1)[0].replace('/', '-')
out = os.path.join(opts.get('out_dir', 'results'), name, seed)
gpu = os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')
lock = os.path.join(os.environ.get('FAKE_LOCKS', '/nonexistent'), 'gpu' + gpu)
if gpu not in ('unset', '') and not os.environ.get('FAKE_SHARE'):
    try:
        os.mkdir(lock)
    except OSError:
        record('overlap ' + gpu)
        sys.exit(9)
record(f'run {name} {seed} gpu={gpu} overwrite={int(overwrite)} extra=' + ' '.join(rest[2:]))
print(f'log line of {name} {seed}', flush=True)
print(f'threads {os.environ.get("OMP_NUM_THREADS", "unset")}', flush=True)
start = time.time()
time.sleep(float(os.environ.get('FAKE_SECONDS', '0.2')))
with open(os.environ['FAKE_EVENTS'] + '.spans', 'a') as f:
    f.write(f'{start} {time.time()} {gpu}\n')
if gpu not in ('unset', '') and not os.environ.get('FAKE_SHARE'):
    os.rmdir(lock)
if 'fail' in name:
    sys.exit(3)
os.makedirs(out, exist_ok=True)
fp, ident = json.loads(os.environ.get('FAKE_FPS', '{}')).get(cfg, [None, {}])
stats = {'train': {}, 'val': {'accuracy': 0.5}, 'test': {'accuracy': 0.25}}
for split, values in stats.items():  # what a finished run holds
    os.makedirs(os.path.join(out, split), exist_ok=True)
    with open(os.path.join(out, split, 'stats.json'), 'w') as f:
        f.write(json.dumps({'epoch': 0, **values}) + '\n')
with open(os.path.join(out, 'config.yaml'), 'w') as f:
    f.write(f'# fingerprint: {fp}\n')
with open(os.path.join(out, 'best.json'), 'w') as f:
    json.dump({'epoch': 0, 'metric': 'accuracy', 'split': 'val', 'value': 0.5,
               'val': stats['val'], 'test': stats['test']}, f)
files = {'data.json': None}
for name in ('config.yaml', 'train/stats.json', 'val/stats.json', 'test/stats.json',
             'best.json'):
    files[name] = hashlib.sha256(open(os.path.join(out, name), 'rb').read()).hexdigest()
data = {'fingerprint': 'fake', 'dir': os.path.realpath(opts.get('dataset.dir', 'datasets'))}
with open(os.path.join(out, 'done'), 'w') as f:
    json.dump({'epochs': 1, 'seconds': 75.0, 'fingerprint': fp, 'identity': ident,
               'seed': int(seed), 'data': data, 'files': files}, f)
'''

FAKE_SBATCH = r'''#!/usr/bin/env bash
n=$(ls "$FAKE_SUBMIT" | grep -c "^args")
echo "$*" >"$FAKE_SUBMIT/args$n"
cp "${@: -1}" "$FAKE_SUBMIT/script$n"
if [[ -n ${FAKE_REFUSE:-} ]] && grep -q -- "$FAKE_REFUSE" "${@: -1}"; then
    echo "sbatch: error: Memory specification can not be satisfied" >&2; exit 1
fi
echo "$((1000 + n));cluster"
'''

# Stand-in SLURM queries: each prints $FAKE_<NAME> (scontrol: by subcommand,
# the word after its options and 'show') and fails, as without a reachable
# controller, when it is unset.
FAKE_QUERY = r'''#!/usr/bin/env bash
name=$(basename "$0")
if [[ $name == scontrol ]]; then
    words=(); for w in "$@"; do [[ $w == -* || $w == show ]] || words+=("$w"); done
    name=scontrol_${words[0]}
fi
echo "$name $*" >>"$FAKE_SUBMIT/../queries"
var=FAKE_${name^^}
[[ -n ${!var+x} ]] || { echo "$name: error: Unable to contact slurm controller" >&2; exit 1; }
printf '%s\n' "${!var}"
'''

CONFIGS = ('geaet/zinc.yaml', 'geaet/mnist.yaml', 'csa/zinc-rings.yaml', 'gt/fail.yaml')


def _exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def ws(tmp_path, monkeypatch, capsys):
    """A workspace (the current directory) with configs, a stand-in python
    and sbatch on PATH; ``ws(*args)`` runs the launcher in-process and
    returns ``(exit code, stdout lines)``."""
    for rel in CONFIGS:
        p = tmp_path / 'configs' / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text('optim:\n  max_epoch: 1\n')
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    _exe(bin_dir / 'fakepy', FAKE_PY)
    _exe(bin_dir / 'sbatch', FAKE_SBATCH)
    for name in ('scontrol', 'squeue', 'sinfo'):
        _exe(bin_dir / name, FAKE_QUERY)
    for var in ('CONFIG', 'PARTITION'):
        monkeypatch.delenv(f'FAKE_SCONTROL_{var}', raising=False)
    for var in ('FAKE_SQUEUE', 'FAKE_SINFO'):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / 'main.py').write_text('# the runs use the stand-in interpreter\n')
    for d in ('locks', 'submit'):
        (tmp_path / d).mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('PATH', f'{bin_dir}:{os.environ["PATH"]}')
    monkeypatch.setenv('FAKE_EVENTS', str(tmp_path / 'events'))
    monkeypatch.setenv('FAKE_LOCKS', str(tmp_path / 'locks'))
    monkeypatch.setenv('FAKE_SUBMIT', str(tmp_path / 'submit'))
    # The command lines below read 'python main.py ...' (default: sys.executable).
    monkeypatch.setenv('PYTHON', 'python')

    def run(*args, check=True, main=cli.main):
        out = []
        try:
            rc = main(list(args), say=out.append) if main is cli.main else main(list(args))
        except SystemExit as e:  # argparse
            rc = e.code
        captured = capsys.readouterr()
        text = '\n'.join(out) + captured.out
        run.err = captured.err
        if check and rc != 0:
            raise AssertionError(f'exit {rc}\n{text}\n{run.err}')
        return rc, text

    def events():
        p = tmp_path / 'events'
        return p.read_text().splitlines() if p.exists() else []

    def expect_fingerprints(*overrides):
        """The fingerprint of each config's runs under ``overrides``, for the
        stand-in interpreter to write into its done markers."""
        targets = {f'configs/{rel}': resolve(f'configs/{rel}', list(overrides))
                   for rel in CONFIGS}
        monkeypatch.setenv('FAKE_FPS', json.dumps(
            {c: [t.fingerprint, t.identity] for c, t in targets.items()}))
        return {c: t.fingerprint for c, t in targets.items()}

    run.events = events
    run.root = tmp_path
    run.expect_fingerprints = expect_fingerprints
    return run


def done(root, folder, seed, config, *overrides):
    """A finished seed of ``config`` run with ``overrides``."""
    t = resolve(config, list(overrides))
    d = root / folder / str(seed)
    (d / 'train').mkdir(parents=True, exist_ok=True)
    (d / 'train' / 'stats.json').write_text('{"epoch": 0}\n')  # as a finished run
    (d / 'config.yaml').write_text(f'# fingerprint: {t.fingerprint}\n')
    seal(d, fingerprint=t.fingerprint, identity=t.identity, data_dir=t.data['dir'])
    return t


def _runs(text):
    return [ln for ln in text.splitlines() if ln.startswith('python main.py')]


def _cfg_seed(lines):
    return [re.search(r'--cfg (\S+)(?: --overwrite)? seed (\d+)', r).groups() for r in lines]


# --------------------------------------------------------------------------- plan
def test_parse_seeds():
    assert parse_seeds('0-3,8,2') == [0, 1, 2, 3, 8]
    assert parse_seeds('07') == [7]
    for bad, msg in (('3-1', 'start > end'), ('a', 'bad --seeds'), ('1,,2', 'bad --seeds')):
        with pytest.raises(SweepError, match=msg):
            parse_seeds(bad)


def test_overrides_decide_results_logs_skip_and_aggregation(ws):
    """A run_name override launches into its own folder, not into the
    config's complete one."""
    base = done(ws.root, 'results/geaet-zinc', 0, 'configs/geaet/zinc.yaml')
    done(ws.root, 'results/geaet-zinc', 1, 'configs/geaet/zinc.yaml')
    _, out = ws('--dry-run', 'configs/geaet/zinc.yaml', '--seeds', '0-1', '--',
                'run_name', 'myvariant', 'optim.base_lr', '0.001')
    fp = resolve('configs/geaet/zinc.yaml', ['run_name', 'myvariant', 'optim.base_lr',
                                             '0.001']).fingerprint
    assert fp != base.fingerprint
    assert _runs(out) == [
        f'python main.py --cfg configs/geaet/zinc.yaml seed {s} run_name myvariant '
        f'optim.base_lr 0.001 >> results/myvariant/logs/seed{s}.log 2>&1' for s in (0, 1)]
    assert (f'# configs/geaet/zinc.yaml: results results/myvariant/<seed>, logs '
            f'results/myvariant/logs, fingerprint {fp}') in out
    assert out.rstrip().endswith(f'python -m graphgps_ext.agg results/myvariant '
                                 f'--fingerprint {fp}')
    assert 'nothing to run' not in out and 'results/geaet-zinc' not in out
    # out_dir decides the root the same way.
    _, out = ws('--dry-run', 'configs/geaet/zinc.yaml', '--', 'out_dir', 'elsewhere')
    assert _runs(out)[0].endswith('>> elsewhere/geaet-zinc/logs/seed0.log 2>&1')
    # Without overrides both seeds are complete.
    _, out = ws('--dry-run', 'configs/geaet/zinc.yaml', '--seeds', '0-1')
    assert _runs(out) == [] and '# skip geaet-zinc seed 1 (complete: results/geaet-zinc/1)' in out


def test_stale_seeds_are_named_and_rerun_only_when_asked(ws):
    done(ws.root, 'results/geaet-zinc', 0, 'configs/geaet/zinc.yaml', 'optim.base_lr', '0.0005')
    done(ws.root, 'results/geaet-zinc', 1, 'configs/geaet/zinc.yaml', 'optim.base_lr', '0.001')
    (ws.root / 'results' / 'geaet-zinc' / '2').mkdir()
    (ws.root / 'results' / 'geaet-zinc' / '2' / 'config.yaml').write_text('x: 1\n')
    _, out = ws('--dry-run', '--seeds', '0-2', 'configs/geaet/zinc.yaml', '--',
                'optim.base_lr', '0.001')
    assert ('# skip geaet-zinc seed 0 (stale: optim.base_lr 0.0005 -> 0.001; '
            '--rerun-stale reruns it)') in out
    assert '# skip geaet-zinc seed 1 (complete: results/geaet-zinc/1)' in out
    assert '# unfinished geaet-zinc seed 2 (restarts)' in out
    assert _cfg_seed(_runs(out)) == [('configs/geaet/zinc.yaml', '2')]
    assert '1 complete run(s) skipped, 1 stale skipped' in out
    _, out = ws('--dry-run', '--seeds', '0-2', '--rerun-stale', '--resume',
                'configs/geaet/zinc.yaml', '--', 'optim.base_lr', '0.001')
    runs = _runs(out)
    assert runs[0].startswith('python main.py --cfg configs/geaet/zinc.yaml --overwrite seed 0 ')
    assert ' --overwrite' not in runs[1] and 'train.auto_resume True' in runs[1]
    assert '# unfinished geaet-zinc seed 2 (resumes from its checkpoint)' in out
    # A done marker without a fingerprint is stale, never complete.
    (ws.root / 'results' / 'geaet-zinc' / '1' / 'done').write_text('{"epochs": 4}')
    _, out = ws('--dry-run', '--seeds', '1', 'configs/geaet/zinc.yaml', '--',
                'optim.base_lr', '0.001')
    assert 'stale: finished without a recorded fingerprint' in out


def test_a_damaged_finished_seed_is_reported_and_rerun_on_request(ws):
    done(ws.root, 'results/geaet-zinc', 1, 'configs/geaet/zinc.yaml')
    (ws.root / 'results' / 'geaet-zinc' / '1' / 'train' / 'stats.json').write_text('')
    _, out = ws('--dry-run', '--seeds', '1', 'configs/geaet/zinc.yaml')
    assert '# skip geaet-zinc seed 1 (damaged: seed folder' in out
    assert 'train/stats.json holds 0 epoch(s)' in out and not _runs(out)
    _, out = ws('--dry-run', '--seeds', '1', '--rerun-stale', 'configs/geaet/zinc.yaml')
    assert [r for r in _runs(out) if '--overwrite seed 1' in r]


def test_dry_run_globs_seeds_overrides(ws):
    done(ws.root, 'results/geaet-zinc', 1, 'configs/geaet/zinc.yaml', 'optim.max_epoch', '5')
    _, out = ws('--dry-run', '--seeds', '0-1,3', 'configs/geaet/*.yaml', '--',
                'optim.max_epoch', '5')
    runs = _runs(out)
    assert runs[0] == ('python main.py --cfg configs/geaet/mnist.yaml seed 0 '
                       'optim.max_epoch 5 >> results/geaet-mnist/logs/seed0.log 2>&1')
    assert _cfg_seed(runs) == [
        ('configs/geaet/mnist.yaml', '0'), ('configs/geaet/mnist.yaml', '1'),
        ('configs/geaet/mnist.yaml', '3'), ('configs/geaet/zinc.yaml', '0'),
        ('configs/geaet/zinc.yaml', '3')]
    aggs = [ln for ln in out.splitlines() if 'graphgps_ext.agg' in ln]
    assert [a.split()[3] for a in aggs] == ['results/geaet-mnist', 'results/geaet-zinc']
    assert ws.events() == []  # nothing ran
    assert not (ws.root / 'results' / 'geaet-mnist').exists()  # nothing written


def test_force_results_dir_no_agg(ws):
    done(ws.root, 'out/geaet-zinc', 0, 'configs/geaet/zinc.yaml', 'out_dir', 'out')
    _, out = ws('--dry-run', '--results', 'out', 'configs/geaet/zinc.yaml')
    assert _runs(out) == []
    _, out = ws('--dry-run', '--results', 'out', '--force', '--no-agg',
                'configs/geaet/zinc.yaml')
    assert _runs(out) == ['python main.py --cfg configs/geaet/zinc.yaml --overwrite seed 0 '
                          'out_dir out >> out/geaet-zinc/logs/seed0.log 2>&1']
    assert '# rerun geaet-zinc seed 0 (complete; replaced: --overwrite)' in out
    assert 'graphgps_ext.agg' not in out


def test_two_configs_into_one_folder_are_refused(ws):
    (ws.root / 'configs' / 'csa' / 'zinc-rings.yaml').write_text('optim:\n  max_epoch: 2\n')
    rc, _ = ws('--dry-run', 'configs/geaet/zinc.yaml', 'configs/csa/zinc-rings.yaml', '--',
               'run_name', 'same', check=False)
    assert rc == 2 and 'both write to results/same but differ (optim.max_epoch 1 -> 2)' in ws.err
    # The same config twice is one target.
    _, out = ws('--dry-run', 'configs/geaet/zinc.yaml', 'configs/geaet/*.yaml', '--',
                'run_name', 'same')
    assert len(_runs(out)) == 1


@pytest.mark.parametrize('args,message', [
    (['--seeds', '3-1', 'configs/geaet/zinc.yaml'], 'start > end'),
    (['--seeds', 'a', 'configs/geaet/zinc.yaml'], 'bad --seeds'),
    (['configs/none/*.yaml'], "no config matches 'configs/none/*.yaml'"),
    (['configs/geaet/zinc.yaml', '--', 'optim.max_epoch'], 'KEY VALUE pairs'),
    (['configs/geaet/zinc.yaml', '--', 'optim.max_epok', '3'], "did you mean 'optim.max_epoch'"),
    (['configs/geaet/zinc.yaml', '--', 'seed', '3'], 'give seeds with --seeds'),
    (['--results', 'r', 'configs/geaet/zinc.yaml', '--', 'out_dir', 'o'], 'results root once'),
    (['--gpus', '0,a', 'configs/geaet/zinc.yaml'], '--gpus must be'),
    (['--slurm', '--gpus', '0', 'configs/geaet/zinc.yaml'], 'exclusive'),
    (['--slurm', '--time', '1h', 'configs/geaet/zinc.yaml'], "bad time '1h'"),
    (['--slurm', '--agg-mem', 'lots', 'configs/geaet/zinc.yaml'], "bad memory size 'lots'"),
    (['--bogus', 'configs/geaet/zinc.yaml'], 'unrecognized arguments: --bogus'),
    ([], 'no config given'),
    (['--seeds', '0-999999', 'configs/geaet/zinc.yaml'], 'names more than 10,000 seeds'),
    (['--seeds', '4294967296', 'configs/geaet/zinc.yaml'], "bad value 4294967296 for 'seed'"),
    # main.py reads these values as its options: refused, rather than runs printing help.
    (['configs/geaet/zinc.yaml', '--', 'run_name', '--help'],
     "override 'run_name' has the value '--help', which main.py reads as an option"),
    (['configs/geaet/zinc.yaml', '--', 'run_name', '-h'], "the value '-h'"),
    (['configs/geaet/zinc.yaml', '--', 'optim.max_epoch', '--overwrite'], "value '--overwrite'"),
])
def test_argument_errors(ws, args, message):
    rc, _ = ws('--dry-run', *args, check=False)
    assert rc == 2 and message in ws.err


def test_plan_file_per_config_seeds(ws):
    (ws.root / 'plan').write_text('# config seeds\nconfigs/geaet/zinc.yaml 0-1\n'
                                  'configs/csa/*.yaml\t2\nconfigs/geaet/zinc.yaml 1-2\n')
    _, out = ws('--dry-run', '--plan', 'plan')
    assert _cfg_seed(_runs(out)) == [
        ('configs/geaet/zinc.yaml', '0'), ('configs/geaet/zinc.yaml', '1'),
        ('configs/csa/zinc-rings.yaml', '2'), ('configs/geaet/zinc.yaml', '2')]
    _, out = ws('--dry-run', '--plan', 'plan', '--seeds', '7')
    assert len(_runs(out)) == 2 and all(' seed 7' in r for r in _runs(out))
    (ws.root / 'bad').write_text('configs/geaet/zinc.yaml\n')
    rc, _ = ws('--dry-run', '--plan', 'bad', check=False)
    assert rc == 2 and 'bad:1: bad plan line' in ws.err


def test_runs_are_counted_before_any_is_planned(ws):
    (ws.root / 'plan').write_text('configs/geaet/zinc.yaml 0-9999\n' * 11)
    rc, _ = ws('--dry-run', '--plan', 'plan', check=False)
    assert rc == 2 and '11 config(s) with their seeds make 110,000 runs, more than 100,000' in ws.err


# --------------------------------------------------------------------------- local
def test_gpu_queue_one_run_per_gpu_then_aggregation(ws):
    fps = ws.expect_fingerprints('optim.max_epoch', '2')
    _, out = ws('--python', 'fakepy', '--gpus', '0,1', '--seeds', '0-2',
                'configs/geaet/*.yaml', 'configs/csa/zinc-rings.yaml', '--',
                'optim.max_epoch', '2')
    ev = ws.events()
    runs = [e for e in ev if e.startswith('run ')]
    assert len(runs) == 9 and not any(e.startswith('overlap') for e in ev)
    assert {re.search(r'gpu=(\S+)', r).group(1) for r in runs} == {'0', '1'}
    assert all(r.endswith('overwrite=0 extra=optim.max_epoch 2') for r in runs)
    aggs = [e for e in ev if e.startswith('agg ')]
    assert aggs == [f'agg results/{n} --fingerprint {fps[c]}' for n, c in (
        ('geaet-mnist', 'configs/geaet/mnist.yaml'), ('geaet-zinc', 'configs/geaet/zinc.yaml'),
        ('csa-zinc-rings', 'configs/csa/zinc-rings.yaml'))]
    assert ev.index(aggs[0]) == len(runs)  # aggregation once, after the queue drained
    log = (ws.root / 'results' / 'geaet-zinc' / 'logs' / 'seed2.log').read_text()
    assert 'log line of geaet-zinc 2' in log
    assert 'CUDA_VISIBLE_DEVICES=' in log.splitlines()[0]
    assert '9 run(s) to do' in out
    # Everything is complete now: a second sweep runs nothing new.
    ws('--python', 'fakepy', '--gpus', '0,1', '--seeds', '0-2', 'configs/geaet/*.yaml',
       '--', 'optim.max_epoch', '2')
    assert len([e for e in ws.events() if e.startswith('run ')]) == 9
    # Another max_epoch: every seed is stale, nothing runs without --rerun-stale.
    _, out = ws('--python', 'fakepy', '--cpu', '--seeds', '0', 'configs/geaet/zinc.yaml',
                '--', 'optim.max_epoch', '3')
    assert 'stale: optim.max_epoch 2 -> 3' in out
    assert len([e for e in ws.events() if e.startswith('run ')]) == 9


def test_cpu_sequential_and_failures(ws):
    ws.expect_fingerprints()
    rc, out = ws('--python', 'fakepy', '--cpu', '--seeds', '0,1', 'configs/gt/fail.yaml',
                 'configs/geaet/zinc.yaml', check=False)
    assert rc == 1
    assert '2 run(s) failed' in ws.err and 'gt-fail seed 1 (exit 3' in ws.err
    runs = [e for e in ws.events() if e.startswith('run ')]
    assert [r.split(' overwrite')[0] for r in runs] == [
        'run gt-fail 0 gpu=', 'run gt-fail 1 gpu=', 'run geaet-zinc 0 gpu=',
        'run geaet-zinc 1 gpu=']
    # Only configs with a complete run are aggregated.
    assert [e.split(' --')[0] for e in ws.events() if e.startswith('agg ')] == [
        'agg results/geaet-zinc']
    assert 'no complete run of gt-fail' in out
    # Each finished seed is announced with its best epoch and metric.
    done = [line.split('] ', 1)[1] for line in out.splitlines() if '] done ' in line]
    assert done == [f'done geaet-zinc seed {s}: best epoch 0: val accuracy 0.5, '
                    'test accuracy 0.25; 1 epochs in 1m15s' for s in (0, 1)]


def test_cpu_jobs_run_side_by_side_with_a_share_of_the_cores(ws, monkeypatch):
    monkeypatch.delenv('OMP_NUM_THREADS', raising=False)
    monkeypatch.setattr(os, 'cpu_count', lambda: 8)
    ws.expect_fingerprints()
    _, out = ws('--python', 'fakepy', '--cpu', '--jobs', '2', '--seeds', '0-3',
                'configs/geaet/zinc.yaml')
    assert len([e for e in ws.events() if e.startswith('run ')]) == 4
    spans = [tuple(map(float, line.split()[:2])) for line in
             (ws.root / 'events.spans').read_text().splitlines()]
    at_once = [sum(a <= t < b for a, b in spans) for t, _ in spans]
    assert max(at_once) == 2  # two at a time, never more
    log = (ws.root / 'results' / 'geaet-zinc' / 'logs' / 'seed3.log').read_text()
    assert 'threads 4' in log  # 8 cores / 2 jobs
    _, out = ws('--cpu', '--jobs', '2', '--dry-run', '--force', 'configs/geaet/zinc.yaml')
    assert "2 runs at a time on CPU (CUDA_VISIBLE_DEVICES='', OMP_NUM_THREADS=4)" in out
    rc, _ = ws('--jobs', '2', 'configs/geaet/zinc.yaml', check=False)
    assert rc == 2 and '--jobs runs several runs at a time on the CPU' in ws.err


def test_shell_wrappers(ws):
    """run/sweep.sh and run/reproduce.sh run the Python launcher of this checkout."""
    env = dict(os.environ, PYTHON=sys.executable)
    out = subprocess.run(['bash', SWEEP, '--dry-run', 'configs/geaet/zinc.yaml', '--seeds',
                          '0-1', '--', 'run_name', 'myvariant', 'optim.base_lr', '0.001'],
                         cwd=ws.root, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert '>> results/myvariant/logs/seed1.log 2>&1' in out.stdout
    assert 'python -m graphgps_ext.agg results/myvariant --fingerprint' in out.stdout
    out = subprocess.run(['bash', REPRODUCE, '--list', 'mna'], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert re.search(r'^mna\s+table2\s+\d+ configs$', out.stdout, re.M)


# --------------------------------------------------------------------------- SLURM
def test_slurm_time_memory_margin_and_agg_resources():
    assert [slurm.parse_time(t) for t in ('30', '4:30', '2:00:00', '1-12', '1-0:30',
                                          '2-00:00:10')] == [
        1800, 270, 7200, 129600, 88200, 172810]
    assert slurm.parse_time('UNLIMITED') is None
    assert [slurm.parse_mem(m) for m in ('8000', '500M', '16G', '1T', '2048K')] == [
        8000, 500, 16384, 1048576, 2]
    # The requeue signal comes a tenth of the limit early, at most 5 minutes.
    assert slurm.requeue_margin('24:00:00') == 300
    assert slurm.requeue_margin('4') == 24 and slurm.requeue_margin('2:00') == 12
    # Aggregation: a small share of the task's resources, never more.
    assert slurm.agg_resources('24:00:00', '32G') == ('01:00:00', '4096M', 1)
    assert slurm.agg_resources('2:00:00', '16G') == ('00:12:00', '2048M', 1)
    assert slurm.agg_resources('5', '8000') == ('00:05:00', '1024M', 1)
    assert slurm.agg_resources('5', '800M') == ('00:05:00', '800M', 1)
    assert slurm.agg_resources('1:00:00', '0') == ('00:10:00', '2048M', 1)
    assert slurm.agg_resources('1:00:00', '8G', '30', '3G', 2) == ('30', '3G', 2)


def test_slurm_array_and_dependent_aggregation(ws):
    done(ws.root, 'results/geaet-zinc', 0, 'configs/geaet/zinc.yaml', 'optim.max_epoch', '9')
    _, out = ws('--slurm', '--seeds', '0-3', '--throttle', '3', '--time', '2:00:00',
                '--mem', '16G', '--partition', 'gpu', '--account', 'proj', '--requeue',
                '--gpus-per-task', '2', '--nodes', '1', '--sbatch-opt', '--qos=high',
                'configs/geaet/zinc.yaml', 'configs/geaet/mnist.yaml', '--',
                'optim.max_epoch', '9')
    sub = ws.root / 'submit'
    args0, args1 = (sub / 'args0').read_text().split(), (sub / 'args1').read_text().split()
    assert args0[0] == '--parsable' and args1[:2] == ['--parsable', '--dependency=afterany:1000']
    script = (sub / 'script0').read_text()
    for line in ('#SBATCH --array=0-6%3', '#SBATCH --time=2:00:00', '#SBATCH --mem=16G',
                 '#SBATCH --partition=gpu', '#SBATCH --account=proj', '#SBATCH --requeue',
                 '#SBATCH --gpus-per-task=2', '#SBATCH --nodes=1', '#SBATCH --qos=high',
                 '#SBATCH --signal=B:USR1@300'):
        assert line in script.splitlines(), line
    assert 'SEEDS=( 1 2 3 0 1 2 3 )' in script  # geaet-zinc seed 0 is complete
    assert 'DIRS=( results/geaet-zinc/1 ' in script
    assert 'OVERRIDES=( optim.max_epoch 9 train.auto_resume True )' in script
    assert 'scontrol requeue' in script
    assert 'graphgps_ext.sweep.torchrun --standalone' in script
    agg = (sub / 'script1').read_text()
    for line in ('#SBATCH --time=00:12:00', '#SBATCH --mem=2048M', '#SBATCH --cpus-per-task=1',
                 '#SBATCH --partition=gpu'):
        assert line in agg.splitlines(), line
    assert re.search(r'python -m graphgps_ext.agg results/geaet-zinc --fingerprint \w+ \|\| rc=1',
                     agg)
    assert 'submitted array job 1000 (7 tasks' in out
    assert 'submitted aggregation job 1001 (after 1000)' in out


def test_slurm_short_time_limit_and_refused_aggregation(ws):
    ws('--slurm', '--time', '4', '--requeue', '--agg-mem', '9000M', '--agg-time', '20',
       'configs/geaet/zinc.yaml', check=False)
    script = (ws.root / 'submit' / 'script0').read_text()
    assert '#SBATCH --signal=B:USR1@24' in script.splitlines()
    agg = (ws.root / 'submit' / 'script1').read_text()
    assert '#SBATCH --mem=9000M' in agg and '#SBATCH --time=20' in agg
    # A refused aggregation job is reported with the way out (exit 1).
    os.environ['FAKE_REFUSE'] = '--mem=9000M'
    try:
        rc, out = ws('--slurm', '--agg-mem', '9000M', 'configs/geaet/mnist.yaml', check=False)
    finally:
        del os.environ['FAKE_REFUSE']
    assert rc == 1 and 'submitted array job' in out
    assert 'refused the aggregation job (sbatch: error: Memory' in ws.err
    assert '--agg-mem' in ws.err and 'python -m graphgps_ext.agg results/geaet-mnist' in ws.err


def _task_env(ws, task):
    return dict(os.environ, SLURM_ARRAY_TASK_ID=str(task), SLURM_JOB_ID='77')


def test_slurm_task_runs_the_right_run(ws):
    fps = ws.expect_fingerprints()
    ws('--slurm', '--python', 'fakepy', '--seeds', '0-1', '--no-agg',
       'configs/geaet/zinc.yaml', 'configs/csa/zinc-rings.yaml')
    script = next(ws.root.glob('results/_slurm/*.sbatch'))
    assert not (ws.root / 'submit' / 'args1').exists()  # --no-agg: one submission
    for i in range(4):
        subprocess.run(['bash', str(script)], cwd=ws.root, check=True, timeout=30,
                       env=_task_env(ws, i))
    log = (ws.root / 'results' / 'csa-zinc-rings' / 'logs' / 'seed1.log').read_text()
    assert 'job 77 task 3' in log and 'log line of csa-zinc-rings 1' in log
    assert [e.split(' gpu')[0] for e in ws.events()] == [
        'run geaet-zinc 0', 'run geaet-zinc 1', 'run csa-zinc-rings 0', 'run csa-zinc-rings 1']
    done_fp = json.loads((ws.root / 'results/geaet-zinc/0/done').read_text())['fingerprint']
    assert done_fp == fps['configs/geaet/zinc.yaml']
    # A requeued task whose run is complete exits at once.
    subprocess.run(['bash', str(script)], cwd=ws.root, check=True, timeout=30,
                   env=_task_env(ws, 0))
    assert len(ws.events()) == 4
    # Forced: the complete seed reruns once (--overwrite), then counts as done.
    for f in (ws.root / 'submit').iterdir():
        f.unlink()
    ws('--slurm', '--python', 'fakepy', '--force', '--no-agg', 'configs/geaet/zinc.yaml')
    forced = max(ws.root.glob('results/_slurm/*.sbatch'), key=os.path.getmtime)
    assert 'OVERWRITE=( 1 )' in forced.read_text()
    for _ in range(2):
        subprocess.run(['bash', str(forced)], cwd=ws.root, check=True, timeout=30,
                       env=_task_env(ws, 0))
    assert ws.events()[4:] == ['run geaet-zinc 0 gpu=unset overwrite=1 extra=']


def test_slurm_dry_run_prints_scripts_without_submitting(ws):
    _, out = ws('--slurm', '--dry-run', '--seeds', '0-9', 'configs/geaet/zinc.yaml')
    assert '#SBATCH --array=0-9' in out and '-agg.sbatch' in out
    assert 'sbatch --parsable --dependency=afterany:<jobid>' in out
    assert not list((ws.root / 'submit').iterdir())
    assert not (ws.root / 'results').exists()
    for s in range(10):
        done(ws.root, 'results/geaet-zinc', s, 'configs/geaet/zinc.yaml')
    _, out = ws('--slurm', '--dry-run', '--seeds', '0-9', 'configs/geaet/zinc.yaml')
    assert out.startswith('# skip geaet-zinc seed 0') and 'nothing to run: all 10 runs' in out


# --------------------------------------------------------------------------- reproduce
def _tables(ws):
    rows = [('geaet', 'table1', 'configs/geaet/mnist.yaml', '0-9'),
            ('geaet', 'table3', 'configs/geaet/zinc.yaml', '0-3'),
            ('geaet', 'table4', 'configs/geaet/mnist.yaml', '0-9'),
            ('csa', 'table1', 'configs/csa/zinc-rings.yaml', '0-9')]
    text = 'paper\ttable\tconfig\tseeds\tref_table\tdataset\tmodel\tmetric\tsplit\n'
    text += ''.join('\t'.join(r + ('=', 'X', 'Y', 'mae', 'test')) + '\n' for r in rows)
    (ws.root / 't.tsv').write_text(text)
    return ['--tables', str(ws.root / 't.tsv')]


def test_reproduce_maps_paper_and_table_to_configs_and_seeds(ws):
    t = _tables(ws)
    _, out = ws(*t, 'geaet', '--dry-run', main=reproduce.main)
    assert len(_runs(out)) == 14  # mnist x 10 (shared by tables 1 and 4) + zinc x 4
    assert '#   table4   configs/geaet/mnist.yaml' in out
    _, out = ws(*t, 'geaet', 'table3', '--dry-run', '--seeds', '0', main=reproduce.main)
    assert _runs(out) == ['python main.py --cfg configs/geaet/zinc.yaml seed 0 '
                          '>> results/geaet-zinc/logs/seed0.log 2>&1']
    _, out = ws(*t, 'csa', '--dry-run', '--slurm', main=reproduce.main)
    assert '#SBATCH --job-name=ggx-csa' in out
    _, out = ws(*t, '--list', main=reproduce.main)
    assert re.search(r'geaet\s+table1\s+1 configs', out)
    rc, _ = ws(*t, 'geaet', 'table9', check=False, main=reproduce.main)
    assert rc == 2 and 'known: table1 table3 table4' in ws.err
    rc, _ = ws(*t, 'nope', check=False, main=reproduce.main)
    assert rc == 2 and "unknown paper 'nope'" in ws.err


@pytest.mark.parametrize('paper', ['geaet', 'csa', 'mna', 'gt', 'gps'])
def test_reproduce_dry_run_lists_every_table_of_the_repo(paper, monkeypatch, capsys):
    """The shipped run/tables.tsv: every table of the paper with its runs,
    none skipped on a fresh results root."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv('PYTHON', 'python')
    assert reproduce.main([paper, '--dry-run', '--results', '/nonexistent-results']) == 0
    out = capsys.readouterr().out
    with open(os.path.join(ROOT, 'run', 'tables.tsv')) as f:
        rows = [ln.rstrip('\n').split('\t') for ln in f if not ln.startswith(('#', 'paper'))]
    rows = [r for r in rows if r and r[0] == paper]
    for _, table, cfg, seeds, *_ in rows:
        assert re.search(rf'#\s+{table}\s+{re.escape(cfg)}\s+seeds {seeds}', out), (table, cfg)
    n_runs = len([ln for ln in out.splitlines() if ln.startswith('python main.py')])
    seeds = {}
    for r in rows:
        seeds.setdefault(r[2], set()).update(parse_seeds(r[3]))
    assert n_runs == sum(len(s) for s in seeds.values())
    assert '# skip' not in out and ', 0 complete run(s) skipped' in out


def test_repository_ships_no_runs():
    """results/ is run output: ignored, nothing of it tracked but the README
    of its layout."""
    with open(os.path.join(ROOT, '.gitignore')) as f:
        ignored = f.read().split()
    assert '/results/*' in ignored and '!/results/README.md' in ignored
    git = subprocess.run(['git', 'ls-files', 'results'], cwd=ROOT, capture_output=True,
                         text=True)
    if git.returncode != 0:
        pytest.skip('not a git checkout')
    assert git.stdout == 'results/README.md\n'


# --------------------------------------------------------------------------- cluster
def _script_blocks(out):
    """``{script path: text}`` of a dry run's printed scripts."""
    blocks, name = {}, None
    for line in out.splitlines():
        m = re.match(r'# --- (\S+\.sbatch)', line)
        if m:
            name = m.group(1)
            blocks[name] = []
        elif line.startswith('# --- '):
            name = None
        elif name:
            blocks[name].append(line)
    return {k: '\n'.join(v) for k, v in blocks.items()}


def test_slurm_cpu_jobs_request_no_gpu_and_hide_cuda(ws):
    _, out = ws('--slurm', '--cpu', '--dry-run', '--cpus-per-task', '6', '--seeds', '0-1',
                'configs/geaet/zinc.yaml')
    array = next(v for k, v in _script_blocks(out).items() if not k.endswith('-agg.sbatch'))
    assert not [ln for ln in array.splitlines() if ln.startswith('#SBATCH') and 'gpu' in ln
                or 'gres' in ln]
    assert 'export CUDA_VISIBLE_DEVICES=' in array.splitlines()
    assert 'export OMP_NUM_THREADS=$(( ${SLURM_CPUS_PER_TASK:-1} / 1 ))' in array
    # The default GPU job asks for one GPU per task.
    _, out = ws('--slurm', '--dry-run', 'configs/geaet/zinc.yaml')
    assert '#SBATCH --gpus-per-task=1' in out.splitlines()
    assert 'export CUDA_VISIBLE_DEVICES=' not in out.split('-agg.sbatch')[0]


@pytest.mark.parametrize('args,message', [
    (['--slurm', '--cpu', '--jobs', '2'], '--jobs is for local CPU runs'),
    (['--slurm', '--jobs', '2'], '--jobs is for local CPU runs'),
    (['--slurm', '--cpu', '--gpus-per-task', '1'], '--cpu jobs request no GPU'),
    (['--cpu', '--runs-per-gpu', '2'], '--runs-per-gpu shares GPUs'),
    (['--runs-per-gpu', '2'], '--runs-per-gpu needs --gpus'),
    (['--runs-per-gpu', '0', '--gpus', '0'], '--runs-per-gpu must be >= 1'),
    (['--slurm', '--runs-per-gpu', '2', '--gpus-per-task', '2'], 'it needs --gpus-per-task 1'),
    (['--gpus-per-task', '2'], '--gpus-per-task is a SLURM request'),
    (['--max-array-size', '10'], '--max-array-size needs --slurm'),
    (['--slurm', '--max-array-size', '0'], '--max-array-size must be >= 1'),
])
def test_contradictory_options_exit_2(ws, args, message):
    rc, _ = ws(*args, '--dry-run', 'configs/geaet/zinc.yaml', check=False)
    assert rc == 2 and message in ws.err, ws.err
    assert 'Traceback' not in ws.err


def test_sweep_beyond_the_array_limit_becomes_several_arrays(ws, monkeypatch):
    # scontrol does not answer: SLURM's default MaxArraySize 1001.
    _, out = ws('--slurm', '--dry-run', '--seeds', '0-2500', 'configs/geaet/zinc.yaml')
    blocks = _script_blocks(out)
    arrays = [v for k, v in blocks.items() if not k.endswith('-agg.sbatch')]
    assert [re.search(r'#SBATCH --array=(\S+)', a).group(1) for a in arrays] == [
        '0-1000', '0-1000', '0-498']
    assert re.search(r'SEEDS=\( 2002 .* 2500 \)', arrays[2])
    assert "exceed the array size 1001 (SLURM's default MaxArraySize" in out
    assert '3 array jobs of 1001, 1001, 499 tasks; the aggregation after all of them' in out
    assert re.search(r'sbatch --parsable --dependency=afterany:<jobid1>:<jobid2>:<jobid3> \S+-agg'
                     r'\.sbatch', out)
    assert not (ws.root / 'results').exists()
    # The cluster's MaxArraySize, then the option.
    monkeypatch.setenv('FAKE_SCONTROL_CONFIG', 'AccountingStorageType = none\n'
                                               'MaxArraySize            = 600\nMaxJobCount = 1')
    _, out = ws('--slurm', '--dry-run', '--seeds', '0-2500', 'configs/geaet/zinc.yaml')
    assert '5 array jobs of 600, 600, 600, 600, 101 tasks' in out
    assert '(MaxArraySize of scontrol show config)' in out
    _, out = ws('--slurm', '--dry-run', '--seeds', '0-2500', '--max-array-size', '2000',
                'configs/geaet/zinc.yaml')
    assert '2 array jobs of 2000, 501 tasks' in out and '(--max-array-size)' in out
    # Submitted: the aggregation depends on every array.
    _, out = ws('--slurm', '--seeds', '0-2500', '--max-array-size', '1001',
                'configs/geaet/zinc.yaml')
    sub = ws.root / 'submit'
    assert (sub / 'args3').read_text().split()[:2] == ['--parsable',
                                                      '--dependency=afterany:1000:1001:1002']
    assert 'SEEDS=( 1001 ' in (sub / 'script1').read_text()
    assert 'submitted aggregation job 1003 (after 1000, 1001, 1002)' in out


PARTITION = ('PartitionName=small AllowGroups=ALL Default=YES MaxNodes=UNLIMITED '
             'MaxTime=1-00:00:00 MinNodes=0 State=UP TotalCPUs=6 MaxMemPerNode=UNLIMITED')


@pytest.mark.parametrize('args,message', [
    (['--mem', '32G'], '--mem 32G fits no node of partition \'small\' (its nodes have memory '
                       '(MB) 8000, 16000): lower --mem'),
    (['--cpus-per-task', '8'], '--cpus-per-task 8 fits no node'),
    (['--gpus-per-task', '4'], '--gpus-per-task 4 fits no node'),
    (['--time', '2-00:00:00'], '--time 2-00:00:00 exceeds the MaxTime of partition \'small\''),
    (['--mem', '15G', '--cpus-per-task', '4', '--gpus-per-task', '0'],
     "no node of partition 'small' has --mem 15G, --cpus-per-task 4"),
    (['--agg-mem', '20G', '--mem', '4G'], '--agg-mem 20G fits no node'),
])
def test_requests_are_checked_against_the_partition(ws, monkeypatch, args, message):
    monkeypatch.setenv('FAKE_SCONTROL_PARTITION', PARTITION)
    monkeypatch.setenv('FAKE_SINFO', 'n1|16000|2|gpu:a100:2(S:0-1)\nn2|8000|4|(null)')
    rc, _ = ws('--slurm', '--cpus-per-task', '2', '--mem', '4G', *args,
               'configs/geaet/zinc.yaml', check=False)
    assert rc == 2 and message in ws.err, ws.err
    assert not list((ws.root / 'submit').iterdir())


def test_partition_warning_and_a_partition_without_gpus(ws, monkeypatch):
    monkeypatch.setenv('FAKE_SCONTROL_PARTITION', PARTITION)
    monkeypatch.setenv('FAKE_SINFO', 'n1|16000|2|(null)\nn2|8000|4|(null)')
    _, out = ws('--slurm', '--dry-run', '--cpu', '--mem', '12G', '--cpus-per-task', '2',
                'configs/geaet/zinc.yaml')
    assert ("# warning: 1 of the 2 nodes of partition 'small' fit --mem 12G "
            '--cpus-per-task 2: the tasks wait for those nodes') in out
    rc, _ = ws('--slurm', '--mem', '4G', '--cpus-per-task', '2', 'configs/geaet/zinc.yaml',
               check=False)
    assert rc == 2 and 'add --cpu (the partition has no GPU)' in ws.err
    assert 'sinfo -h -N -p small' in (ws.root / 'queries').read_text()
    # The partition asked for by name.
    ws('--slurm', '--dry-run', '--cpu', '--mem', '4G', '--cpus-per-task', '2',
       '--partition', 'small', 'configs/geaet/zinc.yaml')
    assert 'sinfo -h -N -p small' in (ws.root / 'queries').read_text()


def test_relaunch_skips_seeds_that_queued_tasks_or_live_runs_own(ws, monkeypatch):
    ws('--slurm', '--seeds', '0-4', '--no-agg', '--runs-per-gpu', '2',
       'configs/geaet/zinc.yaml', 'configs/geaet/mnist.yaml')
    script = next(ws.root.glob('results/_slurm/*.sbatch'))
    # Task 1 (seeds 2, 3 of geaet-zinc) pending, task 3 (mnist seeds 1, 2)
    # requeued, task 2 (zinc 4, mnist 0) finished, task 0 never listed.
    monkeypatch.setenv('FAKE_SQUEUE', f'1000_1|PENDING|{script}\n1000_3|REQUEUED|{script}\n'
                                      f'1000_2|COMPLETED|{script}\n999|RUNNING|/x/other.sh')
    _, out = ws('--slurm', '--dry-run', '--seeds', '0-4', '--no-agg',
                'configs/geaet/zinc.yaml', 'configs/geaet/mnist.yaml')
    for name, seed, task, state in (('geaet-zinc', 2, '1000_1', 'PENDING'),
                                    ('geaet-zinc', 3, '1000_1', 'PENDING'),
                                    ('geaet-mnist', 1, '1000_3', 'REQUEUED'),
                                    ('geaet-mnist', 2, '1000_3', 'REQUEUED')):
        assert (f'# skip {name} seed {seed} (owned by SLURM task {task} {state}, same config)'
                in out)
    assert 'SEEDS=( 0 1 4 0 3 4 )' in out
    assert '6 runs' in out and '4 owned by other runs skipped' in out
    # Another config of a queued seed is not started beside it either.
    _, out = ws('--slurm', '--dry-run', '--seeds', '2', '--no-agg', 'configs/geaet/zinc.yaml',
                '--', 'optim.max_epoch', '7')
    assert ('# skip geaet-zinc seed 2 (owned by SLURM task 1000_1 PENDING, another config: '
            'rerun it after that task ends)') in out
    # A live run's seed lock, locally.
    from graphgps_ext.results.seed_folder import SeedLock
    with SeedLock(str(ws.root / 'results' / 'geaet-zinc' / '0')):
        _, out = ws('--cpu', '--dry-run', '--seeds', '0-1', 'configs/geaet/zinc.yaml')
    assert f'# skip geaet-zinc seed 0 (owned by a live run: pid {os.getpid()} on host' in out
    assert len(_runs(out)) == 1


def test_local_logs_are_appended(ws):
    ws.expect_fingerprints()
    for _ in range(2):
        ws('--python', 'fakepy', '--cpu', '--force', 'configs/geaet/zinc.yaml')
    log = (ws.root / 'results' / 'geaet-zinc' / 'logs' / 'seed0.log').read_text()
    assert log.count('log line of geaet-zinc 0') == 2
    assert log.count('main.py --cfg configs/geaet/zinc.yaml') == 2


def test_aggregation_job_without_a_complete_seed_exits_0(ws):
    done(ws.root, 'results/geaet-zinc', 0, 'configs/geaet/zinc.yaml', 'optim.max_epoch', '3')
    done(ws.root, 'results/geaet-mnist', 0, 'configs/geaet/mnist.yaml')
    ws('--slurm', '--python', 'fakepy', '--rerun-stale', '--seeds', '0',
       'configs/geaet/zinc.yaml', 'configs/geaet/mnist.yaml')
    agg = (ws.root / 'submit' / 'script1').read_text()
    out = subprocess.run(['bash', '-c', agg], cwd=ws.root, capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    assert 'no complete seed of results/geaet-zinc' in out.stdout and 'not aggregated' in out.stdout
    assert [e.split(' --')[0] for e in ws.events()] == ['agg results/geaet-mnist']


def test_grid_dry_run_writes_nothing(ws):
    (ws.root / 'g.txt').write_text('optim.base_lr lr [0.01,0.001]\n')
    _, out = ws('--grid', 'g.txt', '--dry-run', '--seeds', '0-1', 'configs/geaet/zinc.yaml')
    assert not (ws.root / 'results').exists()
    runs = _runs(out)
    assert len(runs) == 4
    assert runs[0].startswith('python main.py --cfg results/_search/zinc_grid_g/configs/'
                              'zinc-lr=0.01.yaml seed 0 >> results/zinc_grid_g/zinc-lr=0.01/logs/seed0.log')
    _, out = ws('--grid', 'g.txt', '--slurm', '--dry-run', 'configs/geaet/zinc.yaml')
    assert not (ws.root / 'results').exists() and 'CFGS=( results/_search/zinc_grid_g/' in out


def test_scripts_use_the_launching_interpreter(ws, monkeypatch):
    monkeypatch.delenv('PYTHON')
    _, out = ws('--slurm', '--dry-run', 'configs/geaet/zinc.yaml')
    assert f'{sys.executable} main.py --cfg' in out
    assert f'{sys.executable} -m graphgps_ext.agg results/geaet-zinc' in out


def test_runs_per_gpu_locally_share_each_gpu(ws, monkeypatch):
    ws.expect_fingerprints()
    monkeypatch.setenv('FAKE_SHARE', '1')
    monkeypatch.setenv('FAKE_SECONDS', '0.6')
    _, out = ws('--python', 'fakepy', '--gpus', '0,1', '--runs-per-gpu', '2', '--seeds', '0-7',
                'configs/geaet/zinc.yaml')
    spans = [line.split() for line in (ws.root / 'events.spans').read_text().splitlines()]
    assert len(spans) == 8 and {g for _, _, g in spans} == {'0', '1'}
    for gpu in ('0', '1'):
        mine = [(float(a), float(b)) for a, b, g in spans if g == gpu]
        at_once = [sum(a <= t < b for a, b in mine) for t, _ in mine]
        assert max(at_once) == 2, (gpu, mine)  # two runs share the GPU, never three
    assert [e.split(' --')[0] for e in ws.events() if e.startswith('agg')] == [
        'agg results/geaet-zinc']
    _, out = ws('--gpus', '0,1', '--runs-per-gpu', '3', '--dry-run', '--force',
                'configs/geaet/zinc.yaml')
    assert '# GPU queue on 0,1: 3 run(s) per GPU at a time' in out


def test_runs_per_gpu_in_a_slurm_task(ws, monkeypatch):
    ws.expect_fingerprints()
    ws('--slurm', '--python', 'fakepy', '--seeds', '0-4', '--runs-per-gpu', '2',
       '--cpus-per-task', '8', 'configs/geaet/zinc.yaml')
    script = (ws.root / 'submit' / 'script0').read_text()
    assert '#SBATCH --array=0-2' in script and 'K=2' in script
    assert '#SBATCH --gpus-per-task=1' in script
    path = next(p for p in ws.root.glob('results/_slurm/*.sbatch') if '-agg' not in p.name)
    monkeypatch.setenv('FAKE_SECONDS', '0.6')
    env = dict(_task_env(ws, 0), SLURM_CPUS_PER_TASK='8')
    subprocess.run(['bash', str(path)], cwd=ws.root, check=True, timeout=30, env=env)
    spans = [tuple(map(float, ln.split()[:2])) for ln in
             (ws.root / 'events.spans').read_text().splitlines()]
    assert len(spans) == 2 and spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]
    log = (ws.root / 'results' / 'geaet-zinc' / 'logs' / 'seed1.log').read_text()
    assert 'threads 4' in log  # 8 CPUs / 2 runs
    subprocess.run(['bash', str(path)], cwd=ws.root, check=True, timeout=30,
                   env=_task_env(ws, 2))
    assert [e.split(' gpu')[0] for e in ws.events()] == [
        'run geaet-zinc 0', 'run geaet-zinc 1', 'run geaet-zinc 4'] or \
        sorted(e.split(' gpu')[0] for e in ws.events()[:2]) == ['run geaet-zinc 0',
                                                                 'run geaet-zinc 1']
    assert ws.events()[2].startswith('run geaet-zinc 4')


def test_requeue_stops_quietly():
    """A second SIGTERM (scontrol requeue and the task's own) does not
    interrupt main.py's clean-up; torchrun stopped by a signal prints one
    line, no traceback."""
    import signal
    sys.path.insert(0, ROOT)
    import main as entry
    old = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, entry._sigterm)
        with pytest.raises(KeyboardInterrupt):
            entry._sigterm(signal.SIGTERM, None)
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, old)


def test_requeue_stops_the_runs_then_requeues_the_task(ws, monkeypatch):
    ws.expect_fingerprints()
    ws('--slurm', '--python', 'fakepy', '--requeue', '--seeds', '0-1', '--runs-per-gpu', '2',
       '--no-agg', 'configs/geaet/zinc.yaml')
    path = next(p for p in ws.root.glob('results/_slurm/*.sbatch') if '-agg' not in p.name)
    env = dict(_task_env(ws, 0), SLURM_ARRAY_JOB_ID='77', FAKE_SECONDS='60')
    task = subprocess.Popen(['bash', str(path)], cwd=ws.root, env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while len([e for e in ws.events() if e.startswith('run ')]) < 2:
            assert time.time() < deadline and task.poll() is None
            time.sleep(0.1)
        task.send_signal(signal.SIGUSR1)
        _, err = task.communicate(timeout=30)
    finally:
        if task.poll() is None:
            task.kill()
    assert 'time limit near: stop the runs, requeue' in err
    # Both runs were stopped (no done marker), then the task requeued itself.
    assert not list(ws.root.glob('results/geaet-zinc/*/done'))
    assert 'scontrol_requeue requeue 77_0' in (ws.root / 'queries').read_text()


# --------------------------------------------------------------------------- stacks
def test_stack_runs_each_configs_seeds_k_at_a_time(ws):
    done(ws.root, 'results/geaet-zinc', 1, 'configs/geaet/zinc.yaml')
    _, out = ws('--dry-run', '--seeds', '0-5', '--stack', '2',
                'configs/geaet/zinc.yaml', 'configs/geaet/mnist.yaml')
    runs = _runs(out)
    # the complete seed 1 is left out; a last single seed runs on its own
    assert [re.search(r'--cfg (\S+) (.*?) >>', r).groups() for r in runs] == [
        ('configs/geaet/zinc.yaml', '--seeds 0,2 --stack 2'),
        ('configs/geaet/zinc.yaml', '--seeds 3,4 --stack 2'),
        ('configs/geaet/zinc.yaml', 'seed 5'),
        ('configs/geaet/mnist.yaml', '--seeds 0,1 --stack 2'),
        ('configs/geaet/mnist.yaml', '--seeds 2,3 --stack 2'),
        ('configs/geaet/mnist.yaml', '--seeds 4,5 --stack 2')]
    assert 'logs/seed0,2.log' in runs[0]


def test_slurm_task_of_a_stack(ws):
    _, out = ws('--slurm', '--dry-run', '--seeds', '0-2', '--stack', '2',
                'configs/geaet/zinc.yaml')
    assert '#SBATCH --array=0-1' in out
    assert "SEEDS=( 0,1 2 )" in out and 'STACKS=( 2 0 )' in out
    assert 'sel=(--seeds "$seed" --stack "${STACKS[$j]}")' in out
    script = out.split('# --- ')[1].split('\n', 1)[1]
    check = subprocess.run(['bash', '-n'], input=script, text=True,
                           capture_output=True)
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize('args, message', [
    (('--stack', '1'), '--stack must be >= 2'),
    (('--stack', '2', '--slurm', '--gpus-per-task', '2'), 'cannot run data parallel'),
])
def test_stack_refusals(ws, args, message):
    rc, _ = ws(*args, '--seeds', '0-3', 'configs/geaet/zinc.yaml', check=False)
    assert rc == 2 and message in ws.err
