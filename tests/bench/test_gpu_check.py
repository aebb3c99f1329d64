"""The ``gpu-check`` suite rehearsed on the CPU at small sizes."""
import json
import os

import pytest
import torch

from graphgps_ext.bench import gpu_check, main

TINY = ['gt.layers', 1, 'train.batch_size', 4]


def test_path_opts_use_the_keys_this_config_has():
    cpu, cuda = torch.device('cpu'), torch.device('cuda')
    fast, eager = gpu_check.path_opts(True, cpu), gpu_check.path_opts(False, cpu)
    assert fast[fast.index('train.data_placement') + 1] == 'device'
    assert eager[eager.index('train.data_placement') + 1] == 'host'
    assert fast[fast.index('train.compile') + 1] is False  # no compile on a CPU
    has_static = 'static_shapes' in gpu_check.make_cfg().train
    assert ('train.static_shapes' in fast) == has_static
    # Compiled on CUDA with static shapes (dynamic-shape compiles were
    # slower than eager), or when asked for.
    cuda_fast = gpu_check.path_opts(True, cuda)
    assert cuda_fast[cuda_fast.index('train.compile') + 1] is has_static
    forced = gpu_check.path_opts(True, cpu, use_compile=True)
    assert forced[forced.index('train.compile') + 1] is True
    # Compiled, the whole step: the update is compiled too.
    assert forced[forced.index('train.compile_step') + 1] is True
    assert 'train.compile_step' not in fast
    # On CUDA the compiled graphs replay as CUDA graphs.
    if has_static:
        assert cuda_fast[cuda_fast.index('train.compile_mode') + 1] == \
            'reduce-overhead'
    assert 'train.compile_mode' not in forced
    eager = gpu_check.path_opts(False, cuda, use_compile=True)
    assert eager[eager.index('train.compile') + 1] is False


def test_gpu_check_rehearsal_on_the_cpu(tmp_path):
    out = tmp_path / 'check.json'
    assert main(['--suite', 'gpu-check', '--rows', 'gps-gine', 'csa',
                 '--check-steps', '4', '--opts'] + [str(o) for o in TINY]
                + ['--threads', '0', '--mem-limit-gib', '0',
                   '--out', str(out)]) == 0
    res = json.loads(out.read_text())['suites']['gpu-check']
    assert [r['key'] for r in res['rows']] == ['gps-gine', 'csa']
    assert res['all_agree']
    for r in res['rows']:
        for path in ('fast', 'eager'):
            assert r[path]['train_graphs_per_s'] > 0
            assert r[path]['syncs_per_step'] == 0 and r[path]['ops_per_step'] > 0
        assert r['fast']['first_loss'] == r['eager']['first_loss']
    assert 'agree' in res['markdown']


def test_gpu_check_sees_a_fast_path_that_computes_something_else(monkeypatch):
    real = gpu_check.path_opts

    def broken(fast, device, use_compile=None):
        # A fast path with another model: its losses cannot agree.
        return real(fast, device, use_compile) + (
            ['model.graph_pooling', 'mean'] if fast else [])
    monkeypatch.setattr(gpu_check, 'path_opts', broken)
    res = gpu_check.run(torch.device('cpu'), rows=['gt'], steps=3, opts=TINY,
                        log=lambda *a: None)
    assert not res['all_agree'] and not res['rows'][0]['agree']
    assert not res['rows'][0]['fast']['final_agree']
    assert 'DISAGREEMENT' in res['markdown']


def test_gpu_check_script_passes_only_flags_the_commands_have():
    """``run/gpu_check.sh`` (the GPU measurements in one script; its
    rehearsal ``REHEARSE=1 run/gpu_check.sh OUT DATA`` takes minutes, so
    it is not run here): valid bash, and every flag it gives the benchmark
    and the launcher is one of theirs."""
    import os
    import re
    import subprocess

    from graphgps_ext.bench import parser as bench_parser
    from graphgps_ext.sweep.cli import build_parser
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = os.path.join(root, 'run', 'gpu_check.sh')
    assert subprocess.run(['bash', '-n', script]).returncode == 0
    text = open(script).read()
    known = {opt for p in (bench_parser(), build_parser())
             for action in p._actions for opt in action.option_strings}
    used = set(re.findall(r'(?<![\w-])(--[a-z][a-z0-9-]*)', text))
    assert used - {'--cfg'} <= known, used - known
    suites = set(re.findall(r'--suite ([a-z-]+)', text))
    assert suites == {'gpu-check', 'steps', 'profile'}
    assert suites <= set(bench_parser()._option_string_actions['--suite'].choices)


def test_every_path_warms_up_every_capacity_then_is_timed(monkeypatch):
    """Each path warms up one batch of every capacity (the same batches,
    unpadded on the eager path) before its timed steps, and its losses
    agree with the eager path's; the JSON is written after every row. With
    ``--one-capacity`` a compiled path (``aot_eager`` here) compiles one
    forward variant and its update, and nothing after warm-up."""
    from graphgps_ext.bench import parser, run_suites
    from graphgps_ext.train import speed
    monkeypatch.setattr(speed, 'BACKEND', 'aot_eager')
    written = []
    args = parser().parse_args(
        ['--suite', 'gpu-check', '--rows', 'gps-gine', '--check-steps', '3',
         '--paths', 'eager', 'static', '--threads', '0', '--opts']
        + [str(o) for o in TINY])
    payload = run_suites(args, log=lambda *a: None,
                         checkpoint=lambda p: written.append(
                             len(p['suites']['gpu-check']['rows'])))
    res = payload['suites']['gpu-check']
    row = res['rows'][0]
    # after each of the two paths, and after the row
    assert written == [1, 1, 1] and res['all_agree'] and row['reference'] == 'eager'
    caps = row['warmed_capacities']
    assert row['capacities'] >= caps >= 2
    for path in ('eager', 'static'):
        p = row[path]
        assert p['warm_steps'] == gpu_check.WARM_CALLS * caps
        assert p['train_graphs_per_s'] > 0 and p['warmup_seconds'] > 0
        assert p['variants'] == 0 and p['recompiles_after_warmup'] == 0
    single = gpu_check.check_family('gps-gine', _dataset(), torch.device('cpu'),
                                    3, opts=TINY, paths=('eager', 'compiled'),
                                    single=True, count=0)
    p = single['compiled']
    assert single['capacities'] == single['warmed_capacities'] == 1
    assert p['warm_steps'] == gpu_check.WARM_CALLS and single['agree']
    # the training step's variant and the update (no check on a CPU)
    assert p['variants'] == 2 and p['compile_seconds'] > 0
    assert p['recompiles_after_warmup'] == 0


def _dataset():
    from graphgps_ext.bench.models import PAPER_ZINC_ROWS, make_dataset, row_cfg
    cfg = row_cfg(PAPER_ZINC_ROWS['gps-gine'], TINY)
    return make_dataset(cfg, 64, 0)[0]


def _fake_python(tmp_path, body):
    fake = tmp_path / 'fakepy'
    fake.write_text('#!/usr/bin/env bash\n' + body + '\n')
    fake.chmod(0o755)
    return str(fake)


@pytest.mark.parametrize('body,code', [
    ('echo "ran $*"', '0'),            # every step exits 0: the script too
    ('exit 3', '3'),                   # a step that fails
    ('exec sleep 30', '124'),          # a step killed by its time limit
])
def test_gpu_check_script_exits_non_zero_when_a_step_fails_or_is_killed(
        tmp_path, body, code):
    """The script's own bookkeeping, with a stand-in interpreter
    (``PYTHON``): every step's exit code in ``status.tsv``; the script
    exits 0 only when every step did."""
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    env = dict(os.environ, PYTHON=_fake_python(tmp_path, body), REHEARSE='1',
               QUICK='1', QUICK_LIMIT='2')
    out = tmp_path / 'out'
    done = subprocess.run(['bash', os.path.join(root, 'run', 'gpu_check.sh'),
                           str(out)], env=env, capture_output=True, text=True,
                          timeout=60)
    status = (out / 'status.tsv').read_text().splitlines()
    assert status[0] == 'step\texit\tseconds'
    assert [line.split('\t')[:2] for line in status[1:]] == [['paths', code]]
    assert (done.returncode == 0) is (code == '0')
    if code == '0':
        assert 'ran -m graphgps_ext.bench' in (out / 'paths.md').read_text()


def test_gpu_check_script_stopped_stops_its_step_and_fails(tmp_path):
    """A stopped script (SIGTERM: the machine's time is up) stops the
    running step, records it and exits non-zero."""
    import signal
    import subprocess
    import time
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    env = dict(os.environ, PYTHON=_fake_python(tmp_path, 'exec sleep 30'),
               REHEARSE='1', QUICK='1')
    out = tmp_path / 'out'
    proc = subprocess.Popen(['bash', os.path.join(root, 'run', 'gpu_check.sh'),
                             str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    log = out / 'paths.log'
    for _ in range(100):  # until the step runs
        if log.exists():
            break
        time.sleep(0.1)
    time.sleep(0.5)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) != 0
    assert time.monotonic() - started < 10  # the step did not run on
    assert 'paths\tstopped by TERM' in (out / 'status.tsv').read_text()
