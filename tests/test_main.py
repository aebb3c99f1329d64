"""End to end: ``python main.py`` (as a subprocess, or ``main.main``
in-process where only its answer matters) on generated TreeNeighbourMatch
(r = 2, 96 graphs): results layout, learning, seeds, Ctrl-C + resume ==
uninterrupted, aggregation with an unfinished seed, W&B offline and
TensorBoard files, config errors; faults: kill -9 + resume ==
uninterrupted, a seed in use, a failed start, a stale seed, a crafted
checkpoint, an unwritable results folder, bad command lines, bad data and
sizes beyond the machine."""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from graphgps_ext.files import read_jsonl
from graphgps_ext.logger import STATS_FILE

from run_checks import all_stats, snapshot

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAIN = os.path.join(ROOT, 'main.py')
QUICKSTART = os.path.join(ROOT, 'configs', 'quickstart.yaml')
SMALL = ['dataset.tree_depth', '2', 'dataset.max_graphs', '0',
         'gt.layer_type', 'GatedGCN+None+None', 'gt.layers', '2',
         'gt.dim_hidden', '16', 'train.batch_size', '32',
         'optim.base_lr', '0.01', 'optim.num_warmup_epochs', '1',
         'optim.max_epoch', '10']


def overriding(opts, *pairs):
    """``opts`` with the ``KEY VALUE`` ``pairs`` set (replaced where ``opts``
    has the key: main.py refuses a key given twice)."""
    opts = list(opts)
    for key, value in zip(pairs[0::2], pairs[1::2]):
        if key in opts[0::2]:
            opts[opts[0::2].index(key) * 2 + 1] = value
        else:
            opts += [key, value]
    return opts


def env(home):
    # No W&B variables from this process (an in-process wandb run of another
    # test exports e.g. its service address): a clean, key-less environment.
    e = {k: v for k, v in os.environ.items() if not k.startswith('WANDB_')}
    e.update(PYTHONUNBUFFERED='1', WANDB_MODE='offline', HOME=str(home),
             PYTHONPATH=ROOT)
    return e


def main_cmd(cfg_file, *args):
    return [sys.executable, MAIN, '--cfg', str(cfg_file), *args]


def run_main(tmp, cfg_file, *args, check=True):
    proc = subprocess.run(main_cmd(cfg_file, *args), cwd=tmp, env=env(tmp),
                          capture_output=True, text=True, timeout=600)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope='module')
def work(tmp_path_factory):
    """A working directory with the config copied outside ``configs/``."""
    tmp = tmp_path_factory.mktemp('e2e')
    shutil.copy(QUICKSTART, tmp / 'quick.yaml')
    return tmp


@pytest.fixture(scope='module')
def three_seeds(work):
    """``--repeat 3`` (seeds 0, 1, 2) with TensorBoard and W&B offline."""
    shutil.copy(work / 'quick.yaml', work / 'sweep.yaml')
    proc = run_main(work, work / 'sweep.yaml', '--repeat', '3', '--mark_done',
                    *SMALL, 'dataset.dir', str(work / 'datasets'),
                    'run_name', 'quick', 'out_dir', 'full',
                    'tensorboard.use', 'True', 'wandb.use', 'True')
    return work, proc


def test_results_layout_and_learning(three_seeds):
    work, proc = three_seeds
    assert not (work / 'sweep.yaml').exists() and (work / 'sweep.yaml_done').exists()
    for seed in range(3):
        run = work / 'full' / 'quick' / str(seed)
        for name in ('config.yaml', 'logging.log', 'best.json', 'done', 'ckpt/last.pt',
                     'ckpt/best.pt', f'train/{STATS_FILE}', f'val/{STATS_FILE}',
                     f'test/{STATS_FILE}', 'split_indices.pt', 'data.json'):
            assert (run / name).exists(), f'{run}/{name}'
        data = json.loads((run / 'data.json').read_text())
        assert data['name'] == 'TreeNeighbourMatch' and data['stand_in'] is False
        train = read_jsonl(str(run / 'train' / STATS_FILE))
        assert len(train) == 10
        assert set(train[0]) >= {'epoch', 'loss', 'accuracy', 'lr', 'time_epoch', 'params'}
        assert train[-1]['loss'] < train[0]['loss']  # it learns
        best = json.loads((run / 'best.json').read_text())
        assert best['metric'] == 'accuracy' and best['mode'] == 'max'
        assert set(best) >= {'epoch', 'train', 'val', 'test'}
        # W&B offline files (`wandb sync`-able) and TensorBoard event files
        assert glob.glob(str(run / 'wandb' / 'offline-run-*' / 'run-*.wandb'))
        assert glob.glob(str(run / 'events.out.tfevents.*'))
    resolved = (work / 'full' / 'quick' / '0' / 'config.yaml').read_text()
    for line in ('metric_best: accuracy', 'metric_agg: argmax',
                 'loss_fun: cross_entropy', 'accelerator: cpu', 'seed: 0',
                 'layer_type: GatedGCN+None+None', 'dim_inner: 16'):
        assert line in resolved
    assert 'seed: 2' in (work / 'full' / 'quick' / '2' / 'config.yaml').read_text()
    # The last epoch's line: epochs numbered from 0, nothing left to run.
    assert 'INFO epoch 9 | ' in proc.stdout and 'ETA 0.0s (0 epochs left)' in proc.stdout


def test_ctrl_c_agg_unfinished_and_resume_equals_uninterrupted(three_seeds, capsys):
    work, _ = three_seeds
    out = work / 'resumed'
    args = ['--seeds', '2', *SMALL, 'dataset.dir', str(work / 'datasets'),
            'run_name', 'quick', 'out_dir', 'resumed']
    # main.py with a real SIGINT that the process sends itself when it logs
    # epoch 1: a Ctrl-C at a fixed point, however fast the epochs run. Python's
    # Ctrl-C handler is installed explicitly: a shell starts background jobs
    # with SIGINT ignored, and the child would inherit that.
    ctrl_c = work / 'main_ctrl_c.py'
    ctrl_c.write_text(
        'import logging, os, runpy, signal, sys\n'
        'signal.signal(signal.SIGINT, signal.default_int_handler)\n'
        'def at_epoch_1(record):\n'
        "    if record.getMessage().startswith('epoch 1 | '):\n"
        '        os.kill(os.getpid(), signal.SIGINT)\n'
        '    return True\n'
        "logging.getLogger('graphgps_ext').addFilter(at_epoch_1)\n"
        f'sys.argv[0] = {MAIN!r}\n'
        f"runpy.run_path({MAIN!r}, run_name='__main__')\n")
    proc = subprocess.run([sys.executable, str(ctrl_c), '--cfg', str(work / 'quick.yaml'),
                           *args], cwd=work, env=env(work), capture_output=True,
                          text=True, timeout=300)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 130, text
    assert 'INFO epoch 2 | ' not in text
    assert 'holds the state after epoch 0. Resume with' in text  # epoch 1 unsaved
    assert 'Resume with' in text and 'train.auto_resume True' in text
    run = out / 'quick' / '2'
    assert (run / 'ckpt' / 'last.pt').exists() and not (run / 'done').exists()

    # Aggregate 3 seeds, one of them unfinished.
    for seed in ('0', '1'):
        shutil.copytree(work / 'full' / 'quick' / seed, out / 'quick' / seed)
    from graphgps_ext.agg import main as agg_main
    capsys.readouterr()
    assert agg_main([str(out / 'quick')]) == 0  # (the command: README's test)
    printed = capsys.readouterr().out
    assert "unfinished (no 'done' marker, skipped): [2]" in printed
    assert '±' in printed and 'accuracy' in printed
    best = json.loads((out / 'quick' / 'agg' / 'test' / 'best.json').read_text())
    assert best['seeds'] == [0, 1] and best['num_seeds'] == 2

    # Resume, then compare with the uninterrupted run of the same seed.
    run_main(work, work / 'quick.yaml', *args, 'train.auto_resume', 'True')
    assert (run / 'done').exists()
    assert all_stats(str(run)) == all_stats(str(work / 'full' / 'quick' / '2'))
    log = (run / 'logging.log').read_text()
    assert 'resuming from' in log and 'interrupted' in log

    # A finished seed is skipped with auto_resume.
    again = run_main(work, work / 'quick.yaml', *args, 'train.auto_resume', 'True')
    assert 'is done' in again.stdout


@pytest.fixture
def in_process(monkeypatch):
    """``main.main`` in this process (its SIGTERM handler restored)."""
    sys.path.insert(0, ROOT)
    import main
    monkeypatch.setattr(sys, 'path', sys.path)
    monkeypatch.setattr(signal, 'signal', lambda *a: None)
    return main.main


def test_config_errors_exit_2_without_traceback(work, in_process, capsys, monkeypatch):
    # As a process: what a user sees, tracebacks included.
    proc = run_main(work, work / 'quick.yaml', 'optim.base_rl', '0.1', check=False)
    assert proc.returncode == 2
    assert "unknown config key 'optim.base_rl' on the command line; did you mean 'optim.base_lr'" in proc.stderr
    assert 'Traceback' not in proc.stderr
    # In this process (an uncaught exception fails the test).
    monkeypatch.chdir(work)
    cfg = str(work / 'quick.yaml')
    assert in_process(['--cfg', cfg, 'optim.scheduler', 'cosine']) == 2
    assert "bad value 'cosine' for 'optim.scheduler'" in capsys.readouterr().err
    assert in_process(['--cfg', cfg, 'gt.layer_type', 'GatedGCN+Transformr+None',
                       'dataset.dir', str(work / 'datasets'), 'out_dir', 'bad']) == 2
    assert "did you mean 'Transformer'" in capsys.readouterr().err
    assert not (work / 'bad').exists()  # failed before any output


def test_bad_data_exits_5_and_oversized_configs_2(in_process, capsys, monkeypatch,
                                                  tmp_path):
    """Each refused at start with its documented exit code, the file or the
    keys named, no traceback and no results."""
    from graphgps_ext.config import sizes

    from data_sources import copy_data
    data = copy_data(tmp_path / 'data', 'TUDataset')
    edges = os.path.join(data, 'TUDataset', 'NCI1', 'raw', 'NCI1_A.txt')
    with open(edges, 'a') as f:
        f.write('7, 0\n')
    nci1 = os.path.join(ROOT, 'configs', 'gin', 'nci1.yaml')
    out = tmp_path / 'results'
    assert in_process(['--cfg', nci1, 'dataset.dir', data, 'out_dir', str(out)]) == 5
    err = capsys.readouterr().err
    assert err.startswith("data error: Dataset 'NCI1' (PyG-TUDataset)") and 'Traceback' not in err
    assert 'NCI1_A.txt line' in err and 'node id 0 (TU node ids run from 1' in err
    monkeypatch.setattr(sizes, 'memory_budget', lambda device='cpu': 8 * 2 ** 30)
    assert in_process(['--cfg', QUICKSTART, 'dataset.tree_depth', '8', 'dataset.max_graphs',
                       '0', 'dataset.dir', str(tmp_path / 'gen'), 'out_dir', str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('config error: dataset.tree_depth 8, dataset.max_graphs 0')
    assert not out.exists() and not (tmp_path / 'gen' / 'synthetic').exists()


def test_cuda_asked_but_absent(work, in_process, capsys, monkeypatch):
    import torch
    if torch.cuda.is_available():
        pytest.skip('CUDA is available here')
    monkeypatch.chdir(work)
    assert in_process(['--cfg', str(work / 'quick.yaml'), 'accelerator', 'cuda',
                       'out_dir', 'cuda-absent']) == 2
    err = capsys.readouterr().err
    assert "accelerator 'cuda' was asked for but CUDA is not available" in err
    assert not (work / 'cuda-absent').exists()


# ------------------------------------------------------------- faults --
def test_kill_9_during_training_then_resume_equals_uninterrupted(work):
    """SIGKILL (no handler runs) after a few epochs; the resumed seed's stats
    equal those of an uninterrupted run started beside it."""
    long = overriding(SMALL, 'optim.max_epoch', '60', 'dataset.dir', str(work / 'datasets'),
                      'run_name', 'quick')
    ref = subprocess.Popen(main_cmd(work / 'quick.yaml', *long, 'out_dir', 'ref'),
                           cwd=work, env=env(work), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    args = [*long, 'out_dir', 'killed']
    proc = subprocess.Popen(main_cmd(work / 'quick.yaml', *args), cwd=work,
                            env=env(work), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    run = work / 'killed' / 'quick' / '0'
    deadline = time.time() + 300
    while len(read_jsonl(str(run / 'train' / STATS_FILE))) < 3:
        assert proc.poll() is None and time.time() < deadline
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert not (run / 'done').exists() and (run / 'lock').exists()
    run_main(work, work / 'quick.yaml', *args, 'train.auto_resume', 'True')
    assert ref.wait(timeout=300) == 0
    assert all_stats(str(run)) == all_stats(str(work / 'ref' / 'quick' / '0'))
    assert len(all_stats(str(run))['train']) == 60
    assert not (run / 'lock').exists()
    assert not [p for p in snapshot(run) if '.tmp' in p]


def test_seed_in_use_exits_2_naming_the_holder(work, in_process, capsys):
    """Another owner holds the seed's lock (an flock: a subprocess holding
    it is tested in tests/results/test_seed_folder.py): refused at once."""
    from graphgps_ext.results.seed_folder import SeedLock
    run = work / 'locked' / 'quick' / '0'
    with SeedLock(str(run)):
        rc = in_process(['--cfg', str(work / 'quick.yaml'), *SMALL,
                         'run_name', 'quick', 'out_dir', str(work / 'locked'),
                         'dataset.dir', str(work / 'datasets')])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert f'in use by another run: pid {os.getpid()} on host' in err
        assert os.listdir(run) == ['lock']  # nothing else written


def test_failed_start_and_stale_seed_leave_a_finished_seed_untouched(
        three_seeds, in_process, capsys):
    work, _ = three_seeds
    run = work / 'full' / 'quick' / '0'
    before = snapshot(run)
    base = ['--seeds', '0', *SMALL, 'dataset.dir', str(work / 'datasets'),
            'run_name', 'quick', 'out_dir', str(work / 'full'),
            'tensorboard.use', 'True', 'wandb.use', 'True']
    # the same config: complete, skipped
    assert in_process(['--cfg', str(work / 'quick.yaml'), *base]) == 0
    assert 'is done (complete: same config and data); skipped' in capsys.readouterr().out
    # another lr: stale, named, skipped
    assert in_process(['--cfg', str(work / 'quick.yaml'),
                       *overriding(base, 'optim.base_lr', '0.005')]) == 0
    out = capsys.readouterr().out
    assert 'is done (stale: optim.base_lr 0.01 -> 0.005); skipped' in out
    assert 'Pass --overwrite' in out
    assert snapshot(run) == before
    # --overwrite with data that is missing: the start fails, nothing changes
    try:
        rc = in_process(['--cfg', str(work / 'quick.yaml'), *base, '--overwrite',
                         'dataset.format', 'PyG-ZINC', 'dataset.name', 'subset',
                         'dataset.dir', str(work / 'no-data')])
    except Exception as err:  # a data error without its own exit code
        rc, _ = 1, capsys.readouterr()
        assert 'ZINC' in str(err)
    assert rc != 0
    assert snapshot(run) == before


@pytest.mark.parametrize('call,named', [('open', 'io.open'), ('system', 'posix.system')])
def test_crafted_checkpoint_exits_6_without_running_it(three_seeds, in_process,
                                                       capsys, tmp_path, call, named):
    """Whatever the global (torch names a blocked module in other words), the
    zip checkpoint is refused with exit 6, never skipped for last.prev.pt."""
    work, _ = three_seeds
    out = tmp_path / 'out'
    shutil.copytree(work / 'full' / 'quick' / '1', out / 'quick' / '1')
    os.remove(out / 'quick' / '1' / 'done')  # unfinished: resumable
    marker = tmp_path / 'created-by-unpickling'

    class CreatesFile:
        def __reduce__(self):
            if call == 'system':
                return os.system, (f'touch {marker}',)
            return open, (str(marker), 'w')

    import torch
    torch.save({'epoch': 3, 'model': CreatesFile()},
               out / 'quick' / '1' / 'ckpt' / 'last.pt')
    rc = in_process(['--cfg', str(work / 'quick.yaml'), '--seeds', '1', *SMALL,
                     'dataset.dir', str(work / 'datasets'), 'run_name', 'quick',
                     'out_dir', str(out), 'train.auto_resume', 'True'])
    err = capsys.readouterr().err
    assert rc == 6 and 'refused to load' in err and f'asks for {named}' in err
    assert not marker.exists()


def _empty(path):
    path.write_text('')


@pytest.mark.parametrize('damage,finished,words', [
    (lambda d: _empty(d / 'train' / 'stats.json'), False,
     'cannot resume: seed folder {d}: train/stats.json ends at epoch (none) but the '
     'checkpoint is of epoch'),
    (lambda d: _empty(d / 'val' / 'stats.json'), True,
     'seed folder {d}: val/stats.json has no record of epoch 0'),
    (lambda d: (d / 'best.json').write_text('garbage'), True,
     'seed folder {d}: best.json is not valid JSON'),
    (lambda d: (d / 'config.yaml').write_text(
        (d / 'config.yaml').read_text().replace('base_lr: 0.01', 'base_lr: 0.02')), True,
     'seed folder {d}: config.yaml was changed after the run finished'),
], ids=['resume-emptied-stats', 'skip-emptied-val', 'skip-garbage-best', 'skip-edited-config'])
def test_a_damaged_seed_folder_is_refused_at_start(three_seeds, in_process, capsys,
                                                   tmp_path, damage, finished, words):
    """Resume and the skip check read the seed folder through one checked
    reader: exit 2 naming the seed folder and the file, nothing trained."""
    work, _ = three_seeds
    out = tmp_path / 'out'
    shutil.copytree(work / 'full' / 'quick' / '1', out / 'quick' / '1')
    seed_dir = out / 'quick' / '1'
    if not finished:
        os.remove(seed_dir / 'done')  # unfinished: resumable
    damage(seed_dir)
    before = sorted(os.listdir(seed_dir))
    rc = in_process(['--cfg', str(work / 'quick.yaml'), '--seeds', '1', *SMALL,
                     'dataset.dir', str(work / 'datasets'), 'run_name', 'quick',
                     'out_dir', str(out), 'train.auto_resume', 'True'])
    err = capsys.readouterr().err
    assert rc == 2 and words.format(d=seed_dir) in err, err
    assert sorted(os.listdir(seed_dir)) == before


def test_unwritable_results_exit_4_with_the_resume_command(work, in_process,
                                                           capsys, tmp_path, monkeypatch):
    import errno
    real = os.open

    def read_only(path, *args, **kwargs):  # root writes anywhere: simulate it
        if str(path).endswith('/lock'):
            raise OSError(errno.EROFS, 'Read-only file system', str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, 'open', read_only)
    out = tmp_path / 'results'
    rc = in_process(['--cfg', str(work / 'quick.yaml'), *SMALL,
                     'dataset.dir', str(work / 'datasets'), 'out_dir', str(out)])
    err = capsys.readouterr().err
    assert rc == 4, err
    assert f'could not write {out}/quick/0/lock: Read-only file system' in err
    assert 'then continue with: python main.py --cfg' in err
    assert 'train.auto_resume True' in err and 'Traceback' not in err


def test_results_below_a_file_exit_2_at_start(work, in_process, capsys, tmp_path):
    blocker = tmp_path / 'a-file'
    blocker.write_text('not a folder\n')
    rc = in_process(['--cfg', str(work / 'quick.yaml'), *SMALL,
                     'dataset.dir', str(tmp_path / 'no-data-read'),
                     'out_dir', str(blocker / 'results')])
    err = capsys.readouterr().err
    assert rc == 2 and f"out_dir '{blocker}/results' lies below the file {blocker}" in err
    assert not (tmp_path / 'no-data-read').exists()  # refused before any data


@pytest.mark.parametrize('argv, message', [
    (['--repeat', '0'], "--repeat: takes an integer from 1 to 10,000 (seeds seed .. seed+N-1), "
                        "got '0'"),
    (['--repeat', '1000000000'], "got '1000000000'"),
    (['--repeat', '5000000000'], "got '5000000000'"),
    (['--repeat', '1e9'], "from 1 to 10,000"),
    (['--seeds', '0-999999'], "--seeds '0-999999' names more than 10,000 seeds"),
    # A KEY VALUE pair whose value reads as an option: neither the option nor a value.
    (['run_name', '--help'], "override 'run_name' has the value '--help', which reads as an "
                             'option'),
    (['run_name', '-h'], "value '-h'"),
    (['optim.base_lr', '0.1', 'out_dir', '--overwrite'], "override 'out_dir' has the value "
                                                         "'--overwrite'"),
    (['gt.layers', '--seeds', '3'], "override 'gt.layers' has the value '--seeds'"),
    (['--seeds', 'a,b'], "--seeds: takes comma-separated integers"),
    (['--seeds', ','], 'no seed'),
    (['--repeat', '2', '--seeds', '1'], 'not allowed with'),
])
def test_bad_command_lines_exit_2(in_process, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        in_process(['--cfg', QUICKSTART, *argv])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_options_after_the_overrides_are_options():
    sys.path.insert(0, ROOT)
    import main
    args = main.parse_args(['--cfg', 'x.yaml', 'optim.base_lr', '-1',
                            '--overwrite', '--seeds', '3,4', 'gt.layers', '2'])
    assert args.overwrite and args.seeds == [3, 4]
    assert args.opts == ['optim.base_lr', '-1', 'gt.layers', '2']
    args = main.parse_args(['--cfg', 'x.yaml', 'run_name', '-x', '--overwrite'])
    assert args.overwrite and args.opts == ['run_name', '-x']
