"""The launcher on a stand-in SLURM 22.05 (:mod:`fake_slurm`): what sbatch
reads from the scripts (paths with spaces and quotes, options with spaces),
values that must never reach a script, options the launcher owns, partitions
that do not exist, every requested limit, the throttle over a sweep of
several arrays, unique script names, and the aggregation after a task
requeued by hand. The runs use the stand-in interpreter of test_sweep (no
training); the scheduler runs the scripts with bash."""
import datetime
import json
import os
import stat
import sys

import pytest

from fake_slurm import Cluster, script_arguments
from graphgps_ext.sweep import cli, slurm
from graphgps_ext.sweep.plan import resolve
from test_sweep import FAKE_PY, ROOT

PARTITIONS = [
    {'PartitionName': 'gpu', 'Default': 'YES', 'MaxTime': '1-00:00:00', 'MaxNodes': '4',
     'MinNodes': '0', 'State': 'UP', 'MaxMemPerNode': 'UNLIMITED', 'MaxCPUsPerNode': '32'},
    {'PartitionName': 'short', 'MaxTime': '00:30:00', 'MaxNodes': 'UNLIMITED', 'MinNodes': '0',
     'State': 'UP', 'MaxMemPerNode': '64000', 'MaxCPUsPerNode': 'UNLIMITED'},
    {'PartitionName': 'big', 'MaxTime': 'UNLIMITED', 'MinNodes': '2', 'State': 'UP'},
    {'PartitionName': 'secret', 'Hidden': 'YES', 'MaxTime': 'UNLIMITED', 'State': 'UP'},
]
NODES = {'gpu': ['g1|128000|32|gpu:a100:4(S:0-1)'], 'short': ['s1|64000|8|gpu:v100:2'],
         'big': ['b1|64000|8|gpu:a100:4', 'b2|64000|8|gpu:a100:4'],
         'secret': ['x1|64000|8|gpu:a100:1']}


@pytest.fixture
def ws(tmp_path, monkeypatch, capsys):
    """A workspace under a folder whose name has a space, a stand-in
    cluster on PATH and the stand-in interpreter ``fakepy``; ``ws(*args)``
    runs the launcher in-process: ``(exit code, stdout, stderr)``."""
    root = tmp_path / "my project's #1"
    (root / 'configs').mkdir(parents=True)
    for name in ('zinc', 'fail'):
        (root / 'configs' / f'{name}.yaml').write_text('optim:\n  max_epoch: 1\n')
    (root / 'main.py').write_text('# the runs use the stand-in interpreter\n')
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    (bin_dir / 'fakepy').write_text(FAKE_PY)
    (bin_dir / 'fakepy').chmod(0o755 | stat.S_IEXEC)
    cluster = Cluster(str(tmp_path), PARTITIONS, NODES, max_array_size=10)
    cluster.install(str(bin_dir))
    monkeypatch.chdir(root)
    monkeypatch.setenv('PATH', f'{bin_dir}:{os.environ["PATH"]}')
    monkeypatch.setenv('FAKE_EVENTS', str(tmp_path / 'events'))
    targets = {f'configs/{n}.yaml': resolve(f'configs/{n}.yaml', []) for n in ('zinc', 'fail')}
    monkeypatch.setenv('FAKE_FPS', json.dumps({c: [t.fingerprint, t.identity]
                                               for c, t in targets.items()}))

    def run(*args):
        rc = cli.main(['--python', 'fakepy', *args], say=print)
        out = capsys.readouterr()
        return rc, out.out, out.err

    run.root = root
    run.cluster = lambda: Cluster.load(str(tmp_path))
    run.events = lambda: ((tmp_path / 'events').read_text().splitlines()
                          if (tmp_path / 'events').exists() else [])
    return run


def _scripts(ws):
    return sorted((ws.root / 'results' / '_slurm').glob('*.sbatch'))


# --------------------------------------------------------------------------- quoting
def test_paths_with_spaces_quotes_and_hashes_reach_sbatch_and_the_runs(ws):
    """The project folder "my project's #1" and a results folder with a space:
    sbatch reads the #SBATCH paths whole, and the tasks run and aggregate."""
    rc, out, err = ws('--slurm', '--seeds', '0-1', '--results', 'res ults',
                      '--sbatch-opt', '--comment=two words', 'configs/zinc.yaml')
    assert rc == 0, err
    cluster = ws.cluster()
    array, agg = cluster.jobs
    assert array['chdir'] == str(ws.root)
    assert array['output'] == str(ws.root / 'res ults' / '_slurm' / '%x-%A_%a.out')
    assert array['options']['comment'] == 'two words'
    assert agg['dependency'] == f"afterany:{array['id']}"
    cluster.run(execute=True)
    assert all(t['state'] == 'COMPLETED' for _, _, t in cluster.tasks())
    assert sorted(e.split(' gpu')[0] for e in ws.events() if e.startswith('run')) == [
        'run zinc 0', 'run zinc 1']
    assert (ws.root / 'res ults' / 'zinc' / '1' / 'done').exists()
    assert [e.split(' --')[0] for e in ws.events() if e.startswith('agg')] == [
        'agg res ults/zinc']


def test_sbatch_reads_quoted_values_as_a_shell_does():
    """The stand-in's reading of #SBATCH lines (sbatch 22.05's), against
    shlex.quote: what the launcher writes is what sbatch reads."""
    for value in ("a b", "it's", 'say "hi"', '$HOME `x`', 'a#b', '50%', 'ünï'):
        line = f'#SBATCH --comment={slurm.sbatch_value(value, "v")}'
        assert script_arguments(f'#!/bin/bash\n{line}\necho\n') == [f'--comment={value}']
    # sbatch reads a backslash as an escape even inside quotes: refused.
    assert script_arguments("#SBATCH --comment='a\\b'\n") == ['--comment=ab']
    with pytest.raises(slurm.SweepError, match='backslash'):
        slurm.sbatch_value('a\\b', 'v')
    # The options end at the first command.
    assert script_arguments('#SBATCH -J a\nset -u\n#SBATCH -J b\n') == ['-J', 'a']


@pytest.mark.parametrize('args,names', [
    (['--partition', 'gpu\ntouch X'], '--partition'),
    (['--account', 'a\rb'], '--account'),
    (['--job-name', 'x\ny'], '--job-name'),
    (['--sbatch-opt', '--qos=a\ntouch X'], '--sbatch-opt'),
    (['--python', 'fakepy\ntouch X'], '--python'),
    (['--main', 'main.py\ntouch X'], '--main'),
    (['configs/zinc.yaml', '--', 'optim.base_lr', '0.1\ntouch X'], "override 'optim.base_lr'"),
    (['configs/zinc.yaml', '--', 'optim.base_lr\u2028', '0.1'], 'override key'),
    (['--results', 'a\x7fb'], '--results'),
    (['--job-name', 'a/b'], "without '/'"),
    (['--partition=-x'], "starts with '-'"),
    (['--results', 'r%j'], "holds '%'"),
    (['--results', 'r\\x'], 'backslash'),
    (['--results', 'my-hetjob'], "holds 'hetjob'"),
    (['--sbatch-opt', 'rm -rf x'], 'not an sbatch option'),
    (['--sbatch-opt', '--comment='], 'empty value'),
])
def test_values_that_cannot_enter_a_script_are_refused(ws, args, names):
    rc, out, err = ws('--slurm', *args, *([] if 'configs/zinc.yaml' in args
                                          else ['configs/zinc.yaml']))
    assert rc == 2 and names in err, err
    assert 'Traceback' not in err
    assert ws.cluster().jobs == [] and not (ws.root / 'X').exists()


@pytest.mark.parametrize('opt,owned,use', [
    ('--time=99:00:00', '--time', '--time'),
    ('-t5', '--time', '--time'),
    ('--tim=5', '--time', '--time'),
    ('--mem-per-cpu=4G', '--mem-per-cpu', '--mem'),
    ('-p other', '--partition', '--partition'),
    ('--array=0-3', '--array', '--throttle'),
    ('--dependency=afterok:1', '--dependency', 'remove this option'),
    ('--gpus=8', '--gpus', '--gpus-per-task'),
    ('--output=/tmp/x', '--output', 'remove this option'),
])
def test_sbatch_options_the_launcher_owns_are_refused(ws, opt, owned, use):
    rc, _, err = ws('--slurm', '--sbatch-opt', opt, 'configs/zinc.yaml')
    assert rc == 2 and f'the launcher writes {owned} itself' in err and use in err, err
    assert ws.cluster().jobs == []


def test_other_sbatch_options_are_quoted(ws):
    rc, _, err = ws('--slurm', '--sbatch-opt', '--qos high', '--sbatch-opt', '-C a100&nvlink',
                    '--sbatch-opt', '--exclusive', '--no-agg', 'configs/zinc.yaml')
    assert rc == 0, err
    opts = ws.cluster().jobs[0]['options']
    assert opts['qos'] == 'high' and opts['constraint'] == 'a100&nvlink' and opts['exclusive']


# --------------------------------------------------------------------------- partitions
def test_a_partition_that_does_not_exist_is_named_with_those_that_do(ws):
    rc, _, err = ws('--slurm', '--partition', 'nosuch', 'configs/zinc.yaml')
    assert rc == 2
    assert ("--partition 'nosuch': no such partition (scontrol lists: big, gpu (default), "
            'secret, short); choose one of them') in err
    rc, _, err = ws('--slurm', '--partition', 'gpu,nosuch', 'configs/zinc.yaml')
    assert rc == 2 and "--partition 'nosuch': no such partition" in err
    # A hidden partition exists (scontrol --all lists it).
    rc, _, err = ws('--slurm', '--partition', 'secret', '--no-agg', 'configs/zinc.yaml')
    assert rc == 0, err
    assert ws.cluster().jobs[0]['partitions'] == ['secret']


def test_no_default_partition(ws):
    cluster = ws.cluster()
    cluster.state['partitions'] = [p for p in cluster.state['partitions']
                                   if p.get('Default') != 'YES']
    cluster.save()
    rc, _, err = ws('--slurm', 'configs/zinc.yaml')
    assert rc == 2 and 'the cluster has no default partition: give --partition' in err


def test_an_unreachable_controller_is_said_and_sbatch_answers(ws):
    cluster = ws.cluster()
    cluster.state['down'] = True
    cluster.save()
    rc, out, err = ws('--slurm', 'configs/zinc.yaml')
    assert '# partition (default) not checked: scontrol did not answer' in out
    assert rc == 1 and 'sbatch refused the array job' in err and 'Unable to contact' in err


@pytest.mark.parametrize('args,message', [
    (['--partition', 'short', '--time', '20', '--agg-time', '45'],
     "--agg-time 45 exceeds the MaxTime of partition 'short' (00:30:00): lower --agg-time"),
    (['--partition', 'short', '--time', '40'], "--time 40 exceeds the MaxTime"),
    (['--partition', 'short', '--time', '0'], "--time 0 exceeds the MaxTime"),
    (['--cpus-per-task', '48'], "--cpus-per-task 48 exceeds the MaxCPUsPerNode of partition "
                                "'gpu' (32)"),
    (['--agg-cpus', '40'], "--agg-cpus 40 exceeds the MaxCPUsPerNode"),
    (['--partition', 'big'], "--nodes 1 is below the MinNodes of partition 'big' (2)"),
    (['--partition', 'big', '--nodes', '2'], 'the aggregation job (one node) is below the '
                                             "MinNodes of partition 'big'"),
    (['--partition', 'short', '--time', '20', '--agg-mem', '70G', '--mem', '8G'],
     '--agg-mem 70G exceeds the MaxMemPerNode'),
    (['--partition', 'gpu,short', '--time', '2-00:00:00'], "exceeds the MaxTime of partition "
                                                           "'gpu'"),
])
def test_every_requested_limit_is_checked(ws, args, message):
    rc, _, err = ws('--slurm', *args, 'configs/zinc.yaml')
    assert rc == 2 and message in err, err
    assert ws.cluster().jobs == []


def test_an_aggregation_beyond_the_partition_pends_for_ever_without_the_check(ws):
    """What the check prevents: the stand-in cluster accepts the job and
    never starts it (PartitionTimeLimit), as slurmctld 22.05 does."""
    rc, _, err = ws('--slurm', '--partition', 'short', '--time', '20', '--agg-time', '45',
                    '--no-partition-check', 'configs/zinc.yaml')
    assert rc == 0, err
    cluster = ws.cluster()
    cluster.run(execute=True)
    agg = cluster.jobs[1]
    assert agg['tasks']['-']['state'] == 'PENDING' and agg['reason'] == 'PartitionTimeLimit'


def test_a_partition_list_fits_if_one_partition_fits(ws):
    rc, out, err = ws('--slurm', '--partition', 'gpu,short', '--time', '2:00:00', '--no-agg',
                      'configs/zinc.yaml')
    assert rc == 0, err
    assert "# warning: --time 2:00:00 exceeds the MaxTime of partition 'short'" in out


# --------------------------------------------------------------------------- the queue
def test_throttle_holds_over_a_sweep_of_several_arrays(ws):
    """25 runs in arrays of at most 10 tasks: with --throttle 3 each array
    waits for the one before, so no more than 3 tasks ever run at once."""
    rc, out, err = ws('--slurm', '--seeds', '0-24', '--throttle', '3', 'configs/zinc.yaml')
    assert rc == 0, err
    assert '3 array jobs of 10, 10, 5 tasks, one after the other (--throttle 3' in out
    cluster = ws.cluster()
    a, b, c, agg = cluster.jobs
    assert (b['dependency'], c['dependency']) == (f"afterany:{a['id']}", f"afterany:{b['id']}")
    assert agg['dependency'] == f"afterany:{a['id']}:{b['id']}:{c['id']}"
    assert cluster.run()['peak'] == 3
    assert all(t['state'] == 'COMPLETED' for _, _, t in cluster.tasks())
    # Without a throttle the arrays run side by side.
    rc, _, _ = ws('--slurm', '--seeds', '25-49', '--no-agg', 'configs/zinc.yaml')
    cluster = ws.cluster()
    assert [j['dependency'] for j in cluster.jobs[4:]] == ['', '', '']
    assert cluster.run()['peak'] == 25


def test_two_launches_in_one_second_never_share_a_script(ws, monkeypatch):
    class Frozen(datetime.datetime):  # both launches in the same second
        @classmethod
        def now(cls, tz=None):
            return cls(2024, 5, 6, 7, 8, 9)

    monkeypatch.setattr(datetime, 'datetime', Frozen)
    tokens = iter(['aaaaaaaa', 'aaaaaaaa', 'bbbbbbbb'])  # the second draws the first's name
    monkeypatch.setattr(slurm.secrets, 'token_hex', lambda n: next(tokens))
    rc, _, _ = ws('--slurm', '--seeds', '0-1', 'configs/zinc.yaml')
    first = {p: p.read_text() for p in _scripts(ws)}
    assert [p.name for p in first] == ['ggx-zinc-20240506-070809-aaaaaaaa-agg.sbatch',
                                       'ggx-zinc-20240506-070809-aaaaaaaa.sbatch']
    rc, out, err = ws('--slurm', '--seeds', '0-3', 'configs/zinc.yaml')
    assert rc == 0, err
    assert {p: p.read_text() for p in first} == first  # untouched
    assert [p.name for p in _scripts(ws) if p not in first] == [
        'ggx-zinc-20240506-070809-bbbbbbbb-agg.sbatch', 'ggx-zinc-20240506-070809-bbbbbbbb.sbatch']
    # Seeds 0 and 1 are owned by the first launch's pending tasks: not resubmitted.
    assert '# skip zinc seed 0 (owned by SLURM task 1000_0 PENDING, same config)' in out
    assert 'SEEDS=( 2 3 )' in ws.cluster().jobs[2]['text']


def test_a_task_requeued_by_hand_is_aggregated_again(ws, tmp_path):
    rc, _, err = ws('--slurm', '--seeds', '0-1', 'configs/zinc.yaml')
    assert rc == 0, err
    broken = tmp_path / 'broken'  # the first attempt's interpreter fails
    broken.mkdir()
    (broken / 'fakepy').write_text('#!/bin/sh\nexit 3\n')
    (broken / 'fakepy').chmod(0o755)
    cluster = ws.cluster()
    cluster.run(execute=True, env=dict(os.environ, PATH=f"{broken}:{os.environ['PATH']}"))
    array, agg = cluster.jobs
    assert [t['state'] for t in array['tasks'].values()] == ['FAILED', 'FAILED']
    assert agg['tasks']['-']['state'] == 'COMPLETED'  # nothing to aggregate: it says so
    assert ws.events() == []
    # Requeued by hand once fixed: the task runs again, then the aggregation.
    cluster.scontrol(['requeue', f"{array['id']}_0"])
    cluster.save()
    cluster.run(execute=True)
    again = cluster.jobs[2]
    assert again['dependency'] == f"afterany:{array['id']},singleton"
    assert again['name'] == agg['name'] and again['tasks']['-']['state'] == 'COMPLETED'
    assert [e.split(' gpu')[0] for e in ws.events()][0] == 'run zinc 0'
    assert [e.split(' --')[0] for e in ws.events()][1:] == ['agg results/zinc']
    # A restart while the recorded aggregation still pends submits nothing more.
    cluster.jobs[2]['tasks']['-']['state'] = 'PENDING'
    cluster.scontrol(['requeue', f"{array['id']}_1"])
    cluster.save()
    cluster.run(execute=True)
    assert len(cluster.jobs) == 3
    assert [e.split(' --')[0].split(' gpu')[0] for e in ws.events()][2:] == [
        'run zinc 1', 'agg results/zinc']


def test_an_aggregation_with_nothing_to_aggregate_succeeds(ws):
    rc, _, err = ws('--slurm', '--seeds', '0', 'configs/fail.yaml')
    assert rc == 0, err
    cluster = ws.cluster()
    cluster.run(execute=True)
    array, agg = cluster.jobs
    assert array['tasks']['0']['state'] == 'FAILED'
    assert agg['tasks']['-']['state'] == 'COMPLETED'


def test_a_search_whose_runs_all_failed_ends_its_aggregation_completed(ws, tmp_path):
    """The aggregation job of a search summarises for real (the launcher's
    own interpreter; the runs the stand-in, which fails every run of a
    config named *fail*): nothing to rank is said, and the job completes."""
    real = tmp_path / 'bin' / 'both'
    real.write_text('#!/bin/sh\n[ "$1 $2" = "-m graphgps_ext.sweep" ] && '
                    f'exec {sys.executable} "$@"\nexec fakepy "$@"\n')
    real.chmod(0o755)
    (ws.root / 'g.txt').write_text('optim.base_lr lr [0.1,0.2]\n')
    rc, out, err = ws('--slurm', '--python', 'both', '--grid', 'g.txt', 'configs/fail.yaml')
    assert rc == 0, err
    cluster = ws.cluster()
    cluster.run(execute=True, env=dict(os.environ, PYTHONPATH=ROOT))
    array, agg = cluster.jobs
    assert [t['state'] for t in array['tasks'].values()] == ['FAILED', 'FAILED']
    assert agg['tasks']['-'] == {'state': 'COMPLETED', 'restarts': 0, 'exit': 0}
    log = (ws.root / 'results' / '_slurm' / f"{agg['name']}-{agg['id']}.out").read_text()
    assert 'nothing to rank: no point of fail_grid_g has a finished seed' in log
    search = ws.root / 'results' / '_search' / 'fail_grid_g'
    assert (search / 'summary.csv').exists() and not (search / 'chosen.yaml').exists()
