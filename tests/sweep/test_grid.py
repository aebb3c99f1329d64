"""Searches from GraphGym grid files: parsing, points and their names,
random samples, and a small search end to end through the launcher with
real ``main.py`` runs (2 points x 2 seeds), summarised and read by
GraphGym's ``agg_batch``."""
import csv
import json
import os
import re
import sys

import pytest
import yaml

from graphgps_ext.sweep import cli, grid
from graphgps_ext.sweep.plan import SweepError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICKSTART = os.path.join(ROOT, 'configs', 'quickstart.yaml')

GRID = """\
# Format for each row: name in config.py; alias; range to search
gt.layers l [2,3]
gt.dim_hidden d [32, 64]

# a second grid, added to the first
gt.layer_type lt ['GCN+Transformer+None','GINE+None+None']
optim.base_lr lr [0.001]
"""


def test_read_grid_and_points(tmp_path):
    path = tmp_path / 'g.txt'
    path.write_text(GRID)
    grids = grid.read_grid(str(path))
    assert [[(k.key, k.alias, k.values) for k in g] for g in grids] == [
        [('gt.layers', 'l', [2, 3]), ('gt.dim_hidden', 'd', [32, 64])],
        [('gt.layer_type', 'lt', ['GCN+Transformer+None', 'GINE+None+None']),
         ('optim.base_lr', 'lr', [0.001])]]
    assert grid.grid_size(grids) == 6
    pts = grid.points('quick', grids)
    assert [p.name for p in pts] == [
        'quick-l=2-d=32', 'quick-l=2-d=64', 'quick-l=3-d=32', 'quick-l=3-d=64',
        'quick-lt=GCN+Transformer+None-lr=0.001', 'quick-lt=GINE+None+None-lr=0.001']
    assert pts[3].values == {'gt.layers': 3, 'gt.dim_hidden': 64}
    # --sample: distinct points of the union, reproducible, in grid order.
    sample = grid.points('quick', grids, sample=3, seed=5)
    assert len(sample) == 3 and len({p.name for p in sample}) == 3
    assert [p.name for p in sample] == [p.name for p in pts if p in sample]
    assert [p.name for p in grid.points('quick', grids, sample=3, seed=5)] == \
        [p.name for p in sample]
    assert len(grid.points('quick', grids, sample=50)) == 6
    assert grid.task_name('configs/mna/nci1.yaml', 'grids/mna-nci1.txt') == 'nci1_grid_mna-nci1'
    assert grid.format_value([1, 'a/b']) == '1,a_b'


@pytest.mark.parametrize('text,message', [
    ('gt.layers l\n', "want 'key alias [v1,v2,...]'"),
    ('gt.layers l [2,\n', 'not a Python list'),
    ('gt.layers l 3\n', 'must be a non-empty list'),
    ('gt.layers l-x [1]\n', "alias 'l-x' may hold"),
    ('gt.layers l [1]\ngt.dim_hidden l [8]\n', 'repeated'),
    ('# only a comment\n', 'no grid line'),
    # One alias per key and one key per alias over the whole file (else two
    # points would share a name and one be lost).
    ('gt.layers l [1]\n\ngt.dim_hidden l [8]\n',
     "alias 'l' names both 'gt.layers' (line 1) and 'gt.dim_hidden'"),
    ('gt.layers l [1]\n\ngt.layers m [2]\n', "key 'gt.layers' has the alias 'm' here and 'l'"),
    ('gt.layers l ' + '[' * 300 + ']' * 300 + '\n', 'not a Python list'),
    ('#' * (1 << 20) + '\n', 'bytes, more than 1,048,576'),
])
def test_grid_file_errors(tmp_path, text, message):
    path = tmp_path / 'bad.txt'
    path.write_text(text)
    with pytest.raises(SweepError, match=re.escape(message)):
        grid.read_grid(str(path))


def test_point_config_sets_dotted_keys_and_refuses_a_value_as_group():
    base = {'gt': {'layers': 2, 'dim_hidden': 64}, 'optim': {'base_lr': 1e-3}}
    point = grid.Point('l=3', {'gt.layers': 3, 'mna.hops': 2}, {'gt.layers': 'l'})
    tree = grid.point_config(base, point, run_name='x')
    assert tree == {'gt': {'layers': 3, 'dim_hidden': 64}, 'optim': {'base_lr': 1e-3},
                    'mna': {'hops': 2}, 'run_name': 'x'}
    assert base['gt']['layers'] == 2
    bad = grid.Point('x', {'gt.layers.x': 1}, {})
    with pytest.raises(SweepError, match="grid key 'gt.layers.x': 'layers' of 'gt.layers.x' is "
                                         "not a group in the base config"):
        grid.point_config(base, bad)


def test_search_refuses_unknown_keys_and_overrides_of_searched_keys(tmp_path, monkeypatch,
                                                                    capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'g.txt').write_text('gt.layerz l [1,2]\n')
    assert cli.main([QUICKSTART, '--grid', 'g.txt', '--dry-run']) == 2
    assert "unknown config key 'gt.layerz'; did you mean 'gt.layers'?" in capsys.readouterr().err
    (tmp_path / 'g.txt').write_text('gt.layers l [1,2]\n')
    assert cli.main([QUICKSTART, '--grid', 'g.txt', '--dry-run', '--', 'gt.layers', '3']) == 2
    assert "'gt.layers' is searched by g.txt" in capsys.readouterr().err
    assert cli.main([QUICKSTART, '--grid', 'g.txt', '--', 'run_name', 'x']) == 2
    assert cli.main([QUICKSTART, '--sample', '2']) == 2
    assert '--sample needs --grid' in capsys.readouterr().err


def test_search_end_to_end(tmp_path, monkeypatch, capsys):
    """2 points x 2 seeds of the quick start config (2 epochs, 200 graphs):
    point configs, runs in GraphGym's layout, the ranking, the chosen config."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('PYTHONPATH', ROOT)
    monkeypatch.setenv('OMP_NUM_THREADS', '1')
    monkeypatch.setenv('WANDB_MODE', 'disabled')
    (tmp_path / 'quick.yaml').write_text(open(QUICKSTART).read())
    (tmp_path / 'g.txt').write_text('gt.layers l [1,2]\n')
    screening = ['optim.max_epoch', '2', 'dataset.max_graphs', '200',
                 'dataset.dir', str(tmp_path / 'datasets')]
    args = ['quick.yaml', '--grid', 'g.txt', '--seeds', '0-1', '--cpu', '--jobs', '2',
            '--python',
            sys.executable, '--main', os.path.join(ROOT, 'main.py'), '--no-agg',
            '--', *screening]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert '# search quick_grid_g: 2 of 2 points x 2 seed(s)' in out
    search_dir = tmp_path / 'results' / '_search' / 'quick_grid_g'
    point = yaml.safe_load((search_dir / 'configs' / 'quick-l=2.yaml').read_text())
    assert point['gt']['layers'] == 2 and point['run_name'] == 'quick-l=2'
    assert point['out_dir'] == os.path.join('results', 'quick_grid_g')
    search = json.loads((search_dir / 'search.json').read_text())
    for p in search['points']:
        for seed in (0, 1):
            run = tmp_path / p['folder'] / str(seed)
            assert (run / 'done').exists() and (run / 'val' / 'stats.json').exists()
            # main.py records the fingerprint in `done` once run identities
            # are written by it; until then the test stands in for it.
            marker = json.loads((run / 'done').read_text())
            if 'fingerprint' not in marker:
                marker.update(fingerprint=p['fingerprint'])
                (run / 'done').write_text(json.dumps(marker))
    assert cli.main(['--summarize', str(search_dir)]) == 0
    out = capsys.readouterr().out
    assert 'points ranked by mean val accuracy over seeds (highest first; equal means' in out
    with open(search_dir / 'summary.csv') as f:
        rows = list(csv.DictReader(f))
    # Two epochs with the quick start's two warm-up epochs: flagged.
    assert all('warm-up' in r['flags'].split() for r in rows)
    assert 'warning: 2 of 2 point(s) never left the learning-rate warm-up' in out
    assert 'see the warnings above]' in out
    assert [r['rank'] for r in rows] == ['1', '2'] and {r['l'] for r in rows} == {'1', '2'}
    assert all(r['num_seeds'] == '2' and r['planned_seeds'] == '2' for r in rows)
    assert float(rows[0]['val_mean']) >= float(rows[1]['val_mean'])
    best = rows[0]['point']
    assert f'chosen: {best} (val accuracy {float(rows[0]["val_mean"]):.4f}' in out
    chosen = yaml.safe_load((search_dir / 'chosen.yaml').read_text())
    assert chosen['run_name'] == best and chosen['out_dir'] == 'results'
    assert chosen['gt']['layers'] == int(rows[0]['l'])
    assert chosen['optim']['max_epoch'] == 10  # the base's, not the screening's
    # Relaunching the search runs nothing: every seed is complete.
    assert cli.main(args[:-len(screening) - 1] + ['--dry-run', '--', *screening]) == 0
    assert '# 0 run(s), 4 complete run(s) skipped' in capsys.readouterr().out
    # GraphGym's agg_batch reads the search's results folder.
    from torch_geometric.graphgym.config import cfg, set_cfg
    from torch_geometric.graphgym.utils.agg_runs import agg_batch
    set_cfg(cfg)
    agg_batch(str(tmp_path / 'results' / 'quick_grid_g'), 'accuracy')
    with open(tmp_path / 'results' / 'quick_grid_g' / 'agg' / 'val_best.csv') as f:
        theirs = {r['l']: float(r['accuracy']) for r in csv.DictReader(f)}
    assert theirs == {r['l']: pytest.approx(float(r['val_mean'])) for r in rows}


def test_search_on_slurm_summarises_in_the_aggregation_job(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('PYTHON', 'python')
    # No SLURM controller answers (whatever this machine has installed).
    (tmp_path / 'bin').mkdir()
    for name in ('scontrol', 'squeue', 'sinfo'):
        (tmp_path / 'bin' / name).write_text('#!/bin/sh\nexit 1\n')
        (tmp_path / 'bin' / name).chmod(0o755)
    monkeypatch.setenv('PATH', f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    (tmp_path / 'quick.yaml').write_text(open(QUICKSTART).read())
    (tmp_path / 'g.txt').write_text('gt.layers l [1,2,3]\noptim.base_lr lr [0.001,0.003]\n')
    assert cli.main(['quick.yaml', '--grid', 'g.txt', '--sample', '2', '--seeds', '0-2',
                     '--slurm', '--dry-run', '--', 'optim.max_epoch', '2']) == 0
    out = capsys.readouterr().out
    assert '# search quick_grid_g: 2 of 6 points x 3 seed(s)' in out
    assert '#SBATCH --array=0-5' in out and '#SBATCH --job-name=ggx-quick_grid_g' in out
    assert f'# --- {tmp_path}/results/_slurm/ggx-quick_grid_g-' in out
    assert 'python -m graphgps_ext.sweep --summarize results/_search/quick_grid_g || rc=1' in out
    configs = re.findall(r'results/_search/quick_grid_g/configs/(quick-l=\S+\.yaml)', out)
    assert len(set(configs)) == 2
    assert '# warning: quick-l=' in out and 'never leaves the warm-up' in out
    assert 'for a short trial add `optim.num_warmup_epochs 0` after --' in out
    assert not (tmp_path / 'results').exists()  # a dry run writes nothing


def test_ranking_is_deterministic_and_flags_ties():
    def point(name, mean, std):
        return grid.PointResult({'name': name}, val=(mean, std), seeds=2)
    results = [point('b', 0.5, 0.1), point('a', 0.5, 0.1), point('c', 0.5, 0.05),
               point('d', 0.7, 0.2), grid.PointResult({'name': 'e'})]
    ranked = grid.rank(results, 'max')
    assert [r.point['name'] for r in ranked] == ['d', 'c', 'a', 'b']  # e: no result
    assert [r.flags for r in ranked] == [[], ['tie'], ['tie'], ['tie']]
    assert [r.point['name'] for r in grid.rank(results, 'min')] == ['c', 'a', 'b', 'd']
    assert grid.rank([point('x', 0.1, 0.0), point('y', 0.1 + 1e-6, 0.0)], 'max')[1].flags == []


def test_points_that_build_the_same_run_run_once(tmp_path, monkeypatch, capsys):
    """A grid over a key without effect for the config (mna.hops on a
    Transformer config): its points are one run each, and the key is named."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'g.txt').write_text('gt.layers l [2,3]\nmna.hops h [1,2,3]\n'
                                    'optim.base_lr lr [0.001, 0.002]\n')
    assert cli.main([QUICKSTART, '--grid', 'g.txt', '--dry-run', '--results',
                     str(tmp_path / 'res')]) == 0
    out = capsys.readouterr().out
    assert "grid key 'mna.hops' has no effect on any point" in out
    assert "grid key 'gt.layers'" not in out and "grid key 'optim.base_lr'" not in out
    assert '12 of 12 points' in out and '# 4 distinct run(s): 8 point(s) repeat another' in out
    assert 'quickstart-l=2-h=2-lr=0.001 is the same run as quickstart-l=2-h=1-lr=0.001' in out
    assert '# 4 run(s), 0 complete run(s) skipped' in out
    assert len(re.findall(r'^\S+ main\.py --cfg ', out, re.M)) == 4
    assert not (tmp_path / 'res').exists()  # a dry run writes nothing


def test_same_runs_by_fingerprint():
    pts = [grid.Point(f'p{i}', {'a': a, 'b': b}, {}) for i, (a, b) in
           enumerate([(1, 1), (1, 2), (2, 1), (2, 2)])]
    kept, dup, no_effect = grid.same_runs(pts, ['x', 'x', 'y', 'y'])  # b has no effect
    assert [p.name for p in kept] == ['p0', 'p2'] and dup == {'p1': 'p0', 'p3': 'p2'}
    assert no_effect == ['b']
    kept, dup, no_effect = grid.same_runs(pts, ['w', 'x', 'y', 'z'])
    assert len(kept) == 4 and not dup and not no_effect


def _keys(*sizes):
    return [grid.GridKey(f'k{i}', f'a{i}', list(range(n))) for i, n in enumerate(sizes)]


def test_points_are_counted_as_a_product_first():
    huge = [_keys(*[10] * 9)]  # 10**9 points
    with pytest.raises(SweepError, match=r'the grid has 1,000,000,000 points \(10 a0 x 10 a1'):
        grid.points('b', huge)
    sample = grid.points('b', huge, sample=3, seed=1)  # drawn, never enumerated
    assert len(sample) == 3 and all(len(p.values) == 9 for p in sample)
    with pytest.raises(SweepError, match='--sample 20000 draws more than 10,000 points'):
        grid.points('b', huge, sample=20000)
    assert len(grid.points('b', [_keys(100, 100)])) == grid.MAX_POINTS


@pytest.mark.parametrize('grids,message', [
    ([[grid.GridKey('gt.layers', 'l', [1, '1'])]], "'gt.layers' = 1 and '1'"),
    ([[grid.GridKey('dataset.dir', 'd', ['a/b', 'a_b'])]], "'dataset.dir' = 'a/b' and 'a_b'"),
    ([[grid.GridKey('gt.norm', 'n', ['a b', 'ab'])]], "'gt.norm' = 'a b' and 'ab'"),
    # Across grids: a value that prints as another grid's alias=value pair.
    ([[grid.GridKey('x', 'x', ['1-y=2'])],
      [grid.GridKey('x', 'x', [1]), grid.GridKey('y', 'y', [2])]], "'x' = '1-y=2' and 1"),
])
def test_two_points_of_one_name_are_refused(grids, message):
    with pytest.raises(SweepError, match='two points of the grid get the same name') as err:
        grid.points('b', grids)
    assert message in str(err.value)


def test_the_same_point_in_two_grids_runs_once():
    g = [grid.GridKey('x', 'x', [1, 2])]
    assert [p.name for p in grid.points('b', [g, g])] == ['b-x=1', 'b-x=2']


@pytest.mark.parametrize('text,name,message', [
    ("metric_best m ['accuracy','f1']\n", 'g.txt', "cannot search 'metric_best'"),
    ("metric_agg m ['argmax','argmin']\n", 'g.txt', "cannot search 'metric_agg'"),
    ('gt.layers l [0,2]\n', 'g.txt', "point quickstart-l=0 (gt.layers 0) is not a valid config: "
                                     "bad value 0 for 'gt.layers'"),
    ('gt.layers l [1,2]\n', 'g\nx.txt', "grid file 'g\\nx.txt' holds a control character"),
    ('gt.layers l [1,2]\n', 'g.txt', '11 points x 10,000 seeds make 110,000 runs'),
])
def test_searches_refused_at_start(tmp_path, monkeypatch, capsys, text, name, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text if 'make' not in message else
                                 'gt.layers l [1,2,3,4,5,6,7,8,9,10,11]\n')
    seeds = ['--seeds', '0-9999'] if 'make' in message else []
    assert cli.main([QUICKSTART, '--grid', name, '--dry-run', *seeds]) == 2
    err = capsys.readouterr().err
    assert message in err and 'Traceback' not in err
    assert not (tmp_path / 'results').exists()


def _search(tmp_path, record):
    folder = tmp_path / 'results' / '_search' / 's'
    folder.mkdir(parents=True)
    (folder / 'search.json').write_text(record)
    return str(folder)


POINT = {'name': 'b-l=1', 'folder': 'results/s/b-l=1', 'config': 'c.yaml',
         'values': {'gt.layers': 1}, 'fingerprint': 'ab12'}
RECORD = {'task': 's', 'base': QUICKSTART, 'grid': 'g.txt', 'sample': None, 'sample_seed': 0,
          'seeds': [0], 'overrides': [], 'aliases': {'gt.layers': 'l'},
          'results': 'results/s', 'points': [POINT]}


@pytest.mark.parametrize('text,message', [
    ('{"points": ', 'cannot be read as JSON'),
    ('[' * 100000 + ']' * 100000, 'cannot be read as JSON'),
    ('[]', 'is malformed: it holds a list, not an object'),
    ('{"points": 3}', "is malformed: 'task' is missing"),
    (json.dumps(dict(RECORD, points=3)), "'points' is not a list"),
    (json.dumps(dict(RECORD, points=[dict(POINT, folder=None)])), "point 0 has no 'folder' str"),
    (json.dumps(dict(RECORD, seeds=['0'])), "'seeds' holds something other than integers"),
    (json.dumps(dict(RECORD, aliases={'gt.layers': 3})), "'aliases' maps keys to names"),
])
def test_a_malformed_search_record_is_named(tmp_path, monkeypatch, capsys, text, message):
    monkeypatch.chdir(tmp_path)
    folder = _search(tmp_path, text)
    assert cli.main(['--summarize', folder]) == 2
    err = capsys.readouterr().err
    assert 'search.json' in err and message in err and 'rewrite it' in err, err
    assert 'Traceback' not in err


def test_a_search_with_nothing_to_rank_succeeds_saying_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    folder = _search(tmp_path, json.dumps(RECORD))
    assert cli.main(['--summarize', folder]) == 0
    out = capsys.readouterr().out
    assert 'nothing to rank: no point of s has a finished seed' in out
    assert os.path.exists(os.path.join(folder, 'summary.csv'))
    assert not os.path.exists(os.path.join(folder, 'chosen.yaml'))


def _fake_aggregate(monkeypatch, by_folder):
    """Stand-in for agg.aggregate: ``{folder: (metric, mode, val mean)}``."""
    import graphgps_ext.agg as agg

    def aggregate(folder, fingerprint=None):
        metric, mode, val = by_folder[os.path.basename(folder)]
        best = {'metric': metric, 'mode': mode, metric: val, f'{metric}_std': 0.0,
                'num_seeds': 1, 'epoch': 1}
        return {'best': {'val': best}}
    monkeypatch.setattr(agg, 'aggregate', aggregate)


def test_points_selecting_on_different_metrics_are_not_ranked_together(tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.chdir(tmp_path)
    points = [dict(POINT, name=n, folder=f'results/s/{n}') for n in ('p1', 'p2', 'p3')]
    for p in points:
        os.makedirs(p['folder'])
    folder = _search(tmp_path, json.dumps(dict(RECORD, points=points)))
    _fake_aggregate(monkeypatch, {'p1': ('accuracy', 'max', 0.9), 'p2': ('f1', 'max', 0.95),
                                  'p3': ('accuracy', 'max', 0.8)})
    assert cli.main(['--summarize', folder]) == 2
    err = capsys.readouterr().err
    assert ('select on different metrics (accuracy (highest best): p1, p3; f1 (highest best): '
            'p2)') in err
    # One metric, one with NaN (undefined on its validation split): not ranked, flagged.
    _fake_aggregate(monkeypatch, {'p1': ('ap', 'max', 0.5), 'p2': ('ap', 'max', float('nan')),
                                  'p3': ('ap', 'max', 0.7)})
    assert cli.main(['--summarize', folder]) == 0
    out = capsys.readouterr().out
    assert 'chosen: p3 (val ap 0.7000' in out
    assert '1 point(s) have a NaN mean val ap' in out
