"""``run/sweep.sh`` and ``run/reproduce.sh`` with a stand-in Python and sbatch
(no training): the command lines, seeds, skipping, the GPU queue, failures,
aggregation after the runs, and the SLURM array + dependent aggregation."""
import os
import re
import stat
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP = os.path.join(ROOT, 'run', 'sweep.sh')
REPRODUCE = os.path.join(ROOT, 'run', 'reproduce.sh')

# A fake interpreter: `main.py --cfg C seed S out_dir R ...` records the run
# and writes R/<name>/<S>/done; `-m graphgps_ext.agg DIR` records the call.
# With a GPU, it holds a lock directory per GPU so that two runs sharing a GPU
# fail loudly; configs named *fail* exit with status 3.
FAKE_PY = r'''#!/usr/bin/env bash
ev=$FAKE_EVENTS
if [[ $1 == -m ]]; then echo "agg $3" >>"$ev"; exit 0; fi
cfg=$3; seed=$5; out=$7; shift 7
p=${cfg#configs/}; p=${p%.yaml}; name=${p//\//-}
gpu=${CUDA_VISIBLE_DEVICES-unset}
if [[ $gpu != unset && -n $gpu ]]; then
    mkdir "$FAKE_LOCKS/gpu$gpu" 2>/dev/null || { echo "overlap $gpu" >>"$ev"; exit 9; }
fi
echo "run $name $seed gpu=$gpu extra=$*" >>"$ev"
echo "log line of $name $seed"
sleep 0.2
[[ $gpu != unset && -n $gpu ]] && rmdir "$FAKE_LOCKS/gpu$gpu"
[[ $name == *fail* ]] && exit 3
mkdir -p "$out/$name/$seed" && echo '{"epochs": 1}' >"$out/$name/$seed/done"
'''

FAKE_SBATCH = r'''#!/usr/bin/env bash
n=$(ls "$FAKE_SUBMIT" | grep -c "^args")
echo "$*" >"$FAKE_SUBMIT/args$n"
cp "${@: -1}" "$FAKE_SUBMIT/script$n"
echo "$((1000 + n));cluster"
'''


def _exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def ws(tmp_path):
    """A workspace with configs, a fake python and a fake sbatch on PATH."""
    for rel in ('geaet/zinc.yaml', 'geaet/mnist.yaml', 'csa/zinc-rings.yaml',
                'gt/fail.yaml'):
        p = tmp_path / 'configs' / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text('optim:\n  max_epoch: 1\n')
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    _exe(bin_dir / 'fakepy', FAKE_PY)
    _exe(bin_dir / 'sbatch', FAKE_SBATCH)
    for d in ('locks', 'submit'):
        (tmp_path / d).mkdir()
    env = dict(os.environ, FAKE_EVENTS=str(tmp_path / 'events'),
               FAKE_LOCKS=str(tmp_path / 'locks'), FAKE_SUBMIT=str(tmp_path / 'submit'),
               PATH=f'{bin_dir}:{os.environ["PATH"]}')

    def run(*args, script=SWEEP, check=True, extra_env=None):
        out = subprocess.run(['bash', script, *args], cwd=tmp_path, capture_output=True,
                             text=True, env=dict(env, **(extra_env or {})), timeout=60)
        if check and out.returncode != 0:
            raise AssertionError(f'exit {out.returncode}\n{out.stdout}\n{out.stderr}')
        return out

    def events():
        p = tmp_path / 'events'
        return p.read_text().splitlines() if p.exists() else []

    run.events = events
    run.root = tmp_path
    return run


def _runs(text):
    return [ln for ln in text.splitlines() if ln.startswith('python main.py')]


def test_dry_run_commands_names_seeds_overrides(ws):
    (ws.root / 'results' / 'geaet-zinc' / '1').mkdir(parents=True)
    (ws.root / 'results' / 'geaet-zinc' / '1' / 'done').write_text('{}')
    out = ws('--dry-run', '--seeds', '0-1,3', 'configs/geaet/*.yaml', '--',
             'optim.max_epoch', '5').stdout
    runs = _runs(out)
    assert runs[0] == ('python main.py --cfg configs/geaet/mnist.yaml seed 0 out_dir results '
                       'optim.max_epoch 5 > results/geaet-mnist/logs/seed0.log 2>&1')
    assert [re.search(r'--cfg (\S+) seed (\d+)', r).groups() for r in runs] == [
        ('configs/geaet/mnist.yaml', '0'), ('configs/geaet/mnist.yaml', '1'),
        ('configs/geaet/mnist.yaml', '3'), ('configs/geaet/zinc.yaml', '0'),
        ('configs/geaet/zinc.yaml', '3')]
    assert '# skip geaet-zinc seed 1 (complete: results/geaet-zinc/1/done)' in out
    assert out.rstrip().endswith('python -m graphgps_ext.agg results/geaet-mnist\n'
                                 'python -m graphgps_ext.agg results/geaet-zinc')
    assert ws.events() == []  # nothing ran


def test_force_resume_results_dir(ws):
    (ws.root / 'out' / 'geaet-zinc' / '0').mkdir(parents=True)
    (ws.root / 'out' / 'geaet-zinc' / '0' / 'done').write_text('{}')
    out = ws('--dry-run', '--results', 'out', 'configs/geaet/zinc.yaml').stdout
    assert _runs(out) == []
    out = ws('--dry-run', '--results', 'out', '--force', '--no-agg',
             'configs/geaet/zinc.yaml').stdout
    assert _runs(out) == ['python main.py --cfg configs/geaet/zinc.yaml seed 0 out_dir out '
                          '> out/geaet-zinc/logs/seed0.log 2>&1']
    assert 'graphgps_ext.agg' not in out
    out = ws('--dry-run', '--resume', 'configs/geaet/mnist.yaml').stdout
    assert 'train.auto_resume True' in _runs(out)[0]


@pytest.mark.parametrize('args,message', [
    (['--seeds', '3-1', 'configs/geaet/zinc.yaml'], 'start > end'),
    (['--seeds', 'a', 'configs/geaet/zinc.yaml'], 'bad --seeds'),
    (['configs/none/*.yaml'], "no config matches 'configs/none/*.yaml'"),
    (['configs/geaet/zinc.yaml', '--', 'optim.max_epoch'], 'KEY VALUE pairs'),
    (['--gpus', '0,a', 'configs/geaet/zinc.yaml'], '--gpus must be'),
    (['--slurm', '--gpus', '0', 'configs/geaet/zinc.yaml'], 'exclusive'),
    (['--bogus', 'configs/geaet/zinc.yaml'], "unknown option '--bogus'"),
    ([], 'no config given'),
])
def test_argument_errors(ws, args, message):
    out = ws('--dry-run', *args, check=False)
    assert out.returncode == 2 and message in out.stderr


def test_plan_file_per_config_seeds(ws):
    (ws.root / 'plan').write_text('# config seeds\nconfigs/geaet/zinc.yaml 0-1\n'
                                  'configs/csa/*.yaml\t2\nconfigs/geaet/zinc.yaml 1-2\n')
    runs = _runs(ws('--dry-run', '--plan', 'plan').stdout)
    got = [re.search(r'--cfg (\S+) seed (\d+)', r).groups() for r in runs]
    assert got == [('configs/geaet/zinc.yaml', '0'), ('configs/geaet/zinc.yaml', '1'),
                   ('configs/csa/zinc-rings.yaml', '2'), ('configs/geaet/zinc.yaml', '2')]
    runs = _runs(ws('--dry-run', '--plan', 'plan', '--seeds', '7').stdout)
    assert len(runs) == 2 and all(' seed 7 ' in r for r in runs)


def test_gpu_queue_one_run_per_gpu_then_aggregation(ws):
    out = ws('--python', 'fakepy', '--gpus', '0,1', '--seeds', '0-2',
             'configs/geaet/*.yaml', 'configs/csa/zinc-rings.yaml', '--',
             'optim.max_epoch', '2')
    ev = ws.events()
    runs = [e for e in ev if e.startswith('run ')]
    assert len(runs) == 9 and not any(e.startswith('overlap') for e in ev)
    assert {re.search(r'gpu=(\S+)', r).group(1) for r in runs} == {'0', '1'}
    assert all(r.endswith('extra=optim.max_epoch 2') for r in runs)
    aggs = [e for e in ev if e.startswith('agg ')]
    assert aggs == ['agg results/geaet-mnist', 'agg results/geaet-zinc',
                    'agg results/csa-zinc-rings']
    assert ev.index(aggs[0]) == len(runs)  # aggregation once, after the queue drained
    log = ws.root / 'results' / 'geaet-zinc' / 'logs' / 'seed2.log'
    assert 'log line of geaet-zinc 2' in log.read_text()
    assert 'CUDA_VISIBLE_DEVICES=' in log.read_text().splitlines()[0]
    assert '9 runs to do' in out.stdout
    # Everything is complete now: a second sweep runs nothing new.
    ws('--python', 'fakepy', '--gpus', '0,1', '--seeds', '0-2', 'configs/geaet/*.yaml')
    assert len([e for e in ws.events() if e.startswith('run ')]) == 9


def test_cpu_sequential_and_failures(ws):
    out = ws('--python', 'fakepy', '--cpu', '--seeds', '0,1', 'configs/gt/fail.yaml',
             'configs/geaet/zinc.yaml', check=False)
    assert out.returncode == 1
    assert '2 run(s) failed' in out.stderr and 'gt-fail seed 1 (exit 3' in out.stderr
    runs = [e for e in ws.events() if e.startswith('run ')]
    assert [r.split(' extra')[0] for r in runs] == [
        'run gt-fail 0 gpu=', 'run gt-fail 1 gpu=', 'run geaet-zinc 0 gpu=',
        'run geaet-zinc 1 gpu=']
    # Only configs with a complete run are aggregated.
    assert [e for e in ws.events() if e.startswith('agg ')] == ['agg results/geaet-zinc']
    assert 'no complete run of gt-fail' in out.stdout


def test_slurm_array_and_dependent_aggregation(ws):
    (ws.root / 'results' / 'geaet-zinc' / '0').mkdir(parents=True)
    (ws.root / 'results' / 'geaet-zinc' / '0' / 'done').write_text('{}')
    out = ws('--slurm', '--seeds', '0-3', '--throttle', '3', '--time', '2:00:00',
             '--mem', '16G', '--partition', 'gpu', '--account', 'proj', '--requeue',
             '--gpus-per-task', '2', '--nodes', '1', '--sbatch-opt', '--qos=high',
             'configs/geaet/zinc.yaml', 'configs/geaet/mnist.yaml', '--', 'optim.max_epoch', '9')
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
    assert 'OVERRIDES=( out_dir results optim.max_epoch 9 train.auto_resume True )' in script
    assert 'scontrol requeue' in script
    agg = (sub / 'script1').read_text()
    assert 'python -m graphgps_ext.agg results/geaet-zinc || rc=1' in agg
    assert 'python -m graphgps_ext.agg results/geaet-mnist || rc=1' in agg
    assert 'submitted array job 1000 (7 tasks' in out.stdout
    assert 'submitted aggregation job 1001 (after 1000)' in out.stdout


def test_slurm_task_runs_the_right_run(ws):
    ws('--slurm', '--python', 'fakepy', '--seeds', '0-1', '--no-agg',
       'configs/geaet/zinc.yaml', 'configs/csa/zinc-rings.yaml')
    script = next(ws.root.glob('results/_slurm/*.sbatch'))
    assert not (ws.root / 'submit' / 'args1').exists()  # --no-agg: one submission
    for i in range(4):
        subprocess.run(['bash', str(script)], cwd=ws.root, check=True, timeout=30,
                       env=dict(os.environ, PATH=f'{ws.root / "bin"}:{os.environ["PATH"]}',
                                FAKE_EVENTS=str(ws.root / 'events'),
                                FAKE_LOCKS=str(ws.root / 'locks'),
                                SLURM_ARRAY_TASK_ID=str(i), SLURM_JOB_ID='77'))
    log = (ws.root / 'results' / 'csa-zinc-rings' / 'logs' / 'seed1.log').read_text()
    assert 'job 77 task 3' in log and 'log line of csa-zinc-rings 1' in log
    assert [e.split(' gpu')[0] for e in ws.events()] == [
        'run geaet-zinc 0', 'run geaet-zinc 1', 'run csa-zinc-rings 0', 'run csa-zinc-rings 1']
    # A requeued task whose run is complete exits at once.
    subprocess.run(['bash', str(script)], cwd=ws.root, check=True, timeout=30,
                   env=dict(os.environ, PATH=f'{ws.root / "bin"}:{os.environ["PATH"]}',
                            FAKE_EVENTS=str(ws.root / 'events'), SLURM_ARRAY_TASK_ID='0'))
    assert len(ws.events()) == 4


def test_slurm_dry_run_prints_scripts_without_submitting(ws):
    out = ws('--slurm', '--dry-run', '--seeds', '0-9', 'configs/geaet/zinc.yaml').stdout
    assert '#SBATCH --array=0-9' in out and '-agg.sbatch' in out
    assert 'sbatch --parsable --dependency=afterany:<jobid>' in out
    assert not list((ws.root / 'submit').iterdir())
    assert not (ws.root / 'results' / '_slurm').exists()


# --------------------------------------------------------------------------- reproduce.sh
def _tables(ws):
    rows = [('geaet', 'table1', 'configs/geaet/mnist.yaml', '0-9'),
            ('geaet', 'table3', 'configs/geaet/zinc.yaml', '0-3'),
            ('geaet', 'table4', 'configs/geaet/mnist.yaml', '0-9'),
            ('csa', 'table1', 'configs/csa/zinc-rings.yaml', '0-9')]
    text = 'paper\ttable\tconfig\tseeds\tref_table\tdataset\tmodel\tmetric\tsplit\n'
    text += ''.join('\t'.join(r + ('=', 'X', 'Y', 'mae', 'test')) + '\n' for r in rows)
    (ws.root / 't.tsv').write_text(text)
    return {'TABLES': str(ws.root / 't.tsv')}


def test_reproduce_maps_paper_and_table_to_configs_and_seeds(ws):
    env = _tables(ws)
    out = ws('geaet', '--dry-run', script=REPRODUCE, extra_env=env).stdout
    runs = _runs(out)
    assert len(runs) == 14  # mnist x 10 (shared by tables 1 and 4) + zinc x 4
    assert '#   table4   configs/geaet/mnist.yaml' in out
    out = ws('geaet', 'table3', '--dry-run', '--seeds', '0', script=REPRODUCE,
             extra_env=env).stdout
    assert _runs(out) == ['python main.py --cfg configs/geaet/zinc.yaml seed 0 out_dir results '
                          '> results/geaet-zinc/logs/seed0.log 2>&1']
    out = ws('csa', '--dry-run', '--slurm', script=REPRODUCE, extra_env=env).stdout
    assert '#SBATCH --job-name=ggx-csa' in out
    listing = ws('--list', script=REPRODUCE, extra_env=env).stdout
    assert re.search(r'geaet\s+table1\s+1 configs', listing)
    bad = ws('geaet', 'table9', script=REPRODUCE, extra_env=env, check=False)
    assert bad.returncode == 2 and 'known: table1 table3 table4' in bad.stderr
    bad = ws('nope', script=REPRODUCE, extra_env=env, check=False)
    assert bad.returncode == 2 and "unknown paper 'nope'" in bad.stderr


@pytest.mark.parametrize('paper', ['geaet', 'csa', 'mna', 'gt', 'gps'])
def test_reproduce_dry_run_lists_every_table_of_the_repo(paper):
    """The shipped run/tables.tsv: every table of the paper appears with its runs."""
    out = subprocess.run(['bash', REPRODUCE, paper, '--dry-run', '--results',
                          '/nonexistent-results'], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    with open(os.path.join(ROOT, 'run', 'tables.tsv')) as f:
        rows = [ln.rstrip('\n').split('\t') for ln in f if not ln.startswith(('#', 'paper'))]
    rows = [r for r in rows if r and r[0] == paper]
    for _, table, cfg, seeds, *_ in rows:
        assert re.search(rf'#\s+{table}\s+{re.escape(cfg)}\s+seeds {seeds}', out.stdout), \
            (table, cfg)
    n_runs = len(_runs(out.stdout))
    assert n_runs >= len({r[2] for r in rows})
