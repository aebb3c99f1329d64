"""Compilation paid once per config: the launcher's runs share inductor's
cache in the results tree (unless the environment names another), and a
config's portable artefacts are written after its first epoch and loaded
by its next run."""
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from graphgps_ext.train import compile_cache
from graphgps_ext.train.compile_cache import (CACHE_ENV, ArtefactSaver,
                                              artefacts_path, cache_folder,
                                              load_artefacts, save_artefacts,
                                              sweep_env)


def test_sweep_env_points_at_the_results_tree_unless_set(tmp_path):
    out = str(tmp_path / 'results')
    folder = os.path.join(os.path.abspath(out), '_compile_cache')
    assert cache_folder(out) == folder
    assert sweep_env(out, {}) == {CACHE_ENV: folder}
    assert sweep_env(out, {CACHE_ENV: '/fast/local'}) == {}
    assert artefacts_path(out, 'geaet-zinc') == os.path.join(
        folder, 'artefacts', 'geaet-zinc.bin')


def test_local_runs_get_the_shared_cache(tmp_path, monkeypatch):
    from graphgps_ext.sweep.local import run_one
    from graphgps_ext.sweep.plan import Run
    script = tmp_path / 'show.py'
    script.write_text('import os\nprint("cache", os.environ.get(%r))\n'
                      % CACHE_ENV)
    target = SimpleNamespace(config='c.yaml', overrides=[],
                             out_dir=str(tmp_path / 'results'))
    run = Run(target=target, seed=0, status=None)
    run.target.log = lambda seed: str(tmp_path / 'logs' / f'seed{seed}.log')
    monkeypatch.delenv(CACHE_ENV, raising=False)
    assert run_one(run, [sys.executable], str(script), None) == 0
    log = (tmp_path / 'logs' / 'seed0.log').read_text()
    assert f'cache {cache_folder(target.out_dir)}' in log
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / 'mine'))
    assert run_one(run, [sys.executable], str(script), None) == 0
    log = (tmp_path / 'logs' / 'seed0.log').read_text()
    assert f'cache {tmp_path / "mine"}' in log  # the user's choice wins


def test_slurm_tasks_export_the_shared_cache(tmp_path):
    from graphgps_ext.sweep.slurm import _compile_cache
    run = SimpleNamespace(target=SimpleNamespace(out_dir=str(tmp_path / 'r s')))
    lines = _compile_cache([run])
    export = [ln for ln in lines if ln.startswith('export ')]
    assert len(export) == 1
    value = subprocess.run(['bash', '-c', f'unset {CACHE_ENV}; {export[0]}; '
                            f'echo "${CACHE_ENV}"'], capture_output=True,
                           text=True).stdout.strip()
    assert value == cache_folder(str(tmp_path / 'r s'))
    value = subprocess.run(['bash', '-c', f'{export[0]}; echo "${CACHE_ENV}"'],
                           capture_output=True, text=True,
                           env=dict(os.environ, **{CACHE_ENV: '/node/local'})
                           ).stdout.strip()
    assert value == '/node/local'


def test_artefacts_are_written_once_per_new_variants_and_loaded(
        tmp_path, monkeypatch):
    loaded = []
    monkeypatch.setattr(torch.compiler, 'save_cache_artifacts',
                        lambda: (b'compiled' * 10, None), raising=False)
    monkeypatch.setattr(torch.compiler, 'load_cache_artifacts',
                        lambda data: loaded.append(data) or object(),
                        raising=False)
    path = artefacts_path(str(tmp_path), 'quickstart')
    assert load_artefacts(path) is None  # nothing yet: a cold start
    saver = ArtefactSaver(path)
    trainer = SimpleNamespace(watch=SimpleNamespace(variants={('train', )}))
    saver(trainer, 0, {})
    assert open(path, 'rb').read() == b'compiled' * 10
    os.remove(path)
    saver(trainer, 1, {})  # nothing new compiled: not written again
    assert not os.path.exists(path)
    trainer.watch.variants.add(('eval', ))
    saver(trainer, 2, {})
    assert os.path.exists(path) and not os.listdir(os.path.dirname(path))[1:]
    note = compile_cache.start(str(tmp_path), 'quickstart')
    assert note == path and loaded == [b'compiled' * 10]
    monkeypatch.setattr(torch.compiler, 'load_cache_artifacts',
                        lambda data: (_ for _ in ()).throw(ValueError('format')))
    assert 'not loaded (ValueError: format)' in load_artefacts(path)
    monkeypatch.setattr(torch.compiler, 'save_cache_artifacts', lambda: None,
                        raising=False)
    assert save_artefacts(str(tmp_path / 'none.bin')) is None


@pytest.mark.skipif(not os.environ.get('GRAPHGPS_EXT_INDUCTOR_TEST'),
                    reason='inductor code generation takes minutes on a small '
                    'CPU host; set GRAPHGPS_EXT_INDUCTOR_TEST=1 to run it')
def test_inductor_artefacts_round_trip(tmp_path):
    """A process that compiles with inductor writes artefacts that a
    process with an empty cache loads and then compiles from."""
    code = ('import sys, torch\n'
            'from graphgps_ext.train.compile_cache import load_artefacts, '
            'save_artefacts\n'
            'path = sys.argv[1]\n'
            'print(load_artefacts(path))\n'
            'f = torch.compile(lambda x: (x.sin() * 2).sum())\n'
            'f(torch.ones(8))\n'
            'from torch._dynamo.utils import counters\n'
            'print("hits", dict(counters["inductor"]))\n'
            'print(save_artefacts(path))\n')
    path = str(tmp_path / 'a.bin')
    runs = []
    for i in range(2):
        env = dict(os.environ, **{CACHE_ENV: str(tmp_path / f'cache{i}')})
        runs.append(subprocess.run([sys.executable, '-c', code, path],
                                   capture_output=True, text=True, env=env,
                                   check=True).stdout)
    assert runs[0].startswith('None') and 'compile artefacts loaded' in runs[1]
    assert "'fxgraph_cache_hit': 1" in runs[1]
