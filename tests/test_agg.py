"""``python -m graphgps_ext.agg`` on hand-written seed folders; seeds of
different configs; concurrent aggregations with readers; GraphGym's
``agg_runs`` on a results folder made by ``main.py``."""
import json
import os
import subprocess
import sys
import time

import pytest

from graphgps_ext.agg import MixedRunsError, aggregate, main
from graphgps_ext.files import read_jsonl
from graphgps_ext.logger import STATS_FILE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_seed(root, seed, accs, best_epoch, done=True, fingerprint=None, identity=None):
    run = root / str(seed)
    for split in ('train', 'val', 'test'):
        (run / split).mkdir(parents=True)
        with open(run / split / STATS_FILE, 'w') as f:
            for epoch, acc in enumerate(accs):
                f.write(json.dumps({'epoch': epoch, 'loss': 1.0 - acc,
                                    'accuracy': acc, 'lr': 0.1,
                                    'time_epoch': 0.5, 'params': 42}) + '\n')
    best = {'epoch': best_epoch, 'metric': 'accuracy', 'mode': 'max',
            'split': 'val', 'value': accs[best_epoch]}
    for split in ('train', 'val', 'test'):
        best[split] = {'epoch': best_epoch, 'loss': 1 - accs[best_epoch],
                       'accuracy': accs[best_epoch], 'params': 42}
    (run / 'best.json').write_text(json.dumps(best))
    if done:
        marker = {'epochs': len(accs)}
        if fingerprint:
            marker.update(fingerprint=fingerprint, identity=identity or {})
            (run / 'config.yaml').write_text(f'# fingerprint: {fingerprint}\nseed: {seed}\n')
        (run / 'done').write_text(json.dumps(marker))


def _edit(path, text):
    path.write_text(text)


def _seal(run):
    """Record the files' SHA-256 in ``done``, as a finished run does."""
    from graphgps_ext.seed_folder import file_digests
    marker = json.loads((run / 'done').read_text())
    marker['files'] = file_digests(str(run))
    marker['best_epoch'] = json.loads((run / 'best.json').read_text())['epoch']
    (run / 'done').write_text(json.dumps(marker))


# (id, damage(seed folder), the file named, words of the message)
DAMAGES = [
    ('stats-emptied', lambda r: _edit(r / 'train' / STATS_FILE, ''),
     'train/stats.json', 'holds 0 epoch(s) but the run finished after 3'),
    ('stats-epochs-4-7', lambda r: _edit(r / 'train' / STATS_FILE, ''.join(
        json.dumps({'epoch': e, 'accuracy': 0.5}) + '\n' for e in (1, 2))),
     'train/stats.json', 'has no record of epoch 0'),
    ('stats-garbage-line', lambda r: _edit(r / 'val' / STATS_FILE,
                                           'not json\n{"epoch": 1}\n'),
     'val/stats.json', 'line 1 is not JSON'),
    ('stats-repeated-epoch', lambda r: _edit(r / 'test' / STATS_FILE, ''.join(
        json.dumps({'epoch': e}) + '\n' for e in (0, 1, 1))),
     'test/stats.json', 'repeats or goes back to epoch 1'),
    ('stats-no-epoch', lambda r: _edit(r / 'train' / STATS_FILE, '[1, 2]\n'),
     'train/stats.json', 'not a stats record'),
    ('best-garbage', lambda r: _edit(r / 'best.json', '{"epoch": 1, "metric'),
     'best.json', 'is not valid JSON'),
    ('best-not-a-record', lambda r: _edit(r / 'best.json', '[1, 2, 3]'),
     'best.json', 'not a best-epoch record'),
    ('best-deleted', lambda r: (r / 'best.json').unlink(), 'best.json', 'is missing'),
    ('best-other-epoch', lambda r: _edit(r / 'best.json', json.dumps(
        {'epoch': 0, 'metric': 'accuracy', 'val': {'accuracy': 0.5}})),
     'best.json', "is of epoch 0 but 'done' records the best epoch 1"),
    ('config-edited', lambda r: _edit(r / 'config.yaml', '# fingerprint: aaaa\nseed: 7\n'),
     'config.yaml', 'was changed after the run finished'),
    ('config-deleted', lambda r: (r / 'config.yaml').unlink(), 'config.yaml', 'is missing'),
]


@pytest.mark.parametrize('damage,name,words', [d[1:] for d in DAMAGES],
                         ids=[d[0] for d in DAMAGES])
def test_a_damaged_seed_is_refused_naming_seed_and_file(tmp_path, capsys, damage, name,
                                                        words):
    root = tmp_path / 'quick'
    for seed in (0, 1):
        write_seed(root, seed, [0.5, 0.7, 0.6], 1, fingerprint='aaaa')
        _seal(root / str(seed))
    damage(root / '1')
    assert main([str(root)]) == 2
    err = capsys.readouterr().err
    assert f"seed folder {root / '1'}: {name}" in err and words in err, err
    assert 'Traceback' not in err and not (root / 'agg').exists()


def test_checks_without_recorded_digests(tmp_path):
    """A marker of an older version (no digests): the files still parse,
    epochs are contiguous and agree with 'done', best.json with the stats."""
    from graphgps_ext.seed_folder import SeedFolderError
    root = tmp_path / 'old'
    write_seed(root, 0, [0.5, 0.7, 0.6], 1, fingerprint='aaaa')
    assert aggregate(str(root))['used'] == [0]
    best = json.loads((root / '0' / 'best.json').read_text())
    best['test']['accuracy'] = 0.99  # hand-edited result
    (root / '0' / 'best.json').write_text(json.dumps(best))
    with pytest.raises(SeedFolderError, match='test values differ from test/stats.json'):
        aggregate(str(root))


def test_a_symlinked_seed_folder_is_counted_once(tmp_path, capsys):
    root = tmp_path / 'quick'
    write_seed(root, 0, [0.5, 0.7, 0.6], 1)
    write_seed(root, 1, [0.4, 0.8, 0.9], 2)
    os.symlink(root / '1', root / '2')
    assert main([str(root)]) == 0
    out = capsys.readouterr().out
    assert '2 seed(s) aggregated [0, 1]' in out
    assert 'counted once (a second name of a seed folder): 2 (the same folder as 1)' in out


def test_mean_std_at_best_epochs_and_unfinished_seed(tmp_path, capsys):
    root = tmp_path / 'results' / 'quick'
    write_seed(root, 0, [0.5, 0.7, 0.6], best_epoch=1)
    write_seed(root, 1, [0.4, 0.8, 0.9], best_epoch=2)
    write_seed(root, 2, [0.1, 0.2], best_epoch=1, done=False)  # still running
    (root / 'notes').mkdir()  # not a seed

    assert main([str(root), '--seeds', '0,1,2,3']) == 0
    out = capsys.readouterr().out
    assert 'unfinished' in out and '[2]' in out and 'missing: [3]' in out
    assert '0.8000 ± 0.1000' in out  # test accuracy mean ± std
    assert 'best epoch' in out and '1.5 ± 0.5' in out  # epochs 1 and 2, from 0
    best = json.loads((root / 'agg' / 'test' / 'best.json').read_text())
    assert best['accuracy'] == pytest.approx(0.8)
    assert best['accuracy_std'] == pytest.approx(0.1)  # population std
    assert best['epoch'] == pytest.approx(1.5)
    assert best['num_seeds'] == 2 and best['seeds'] == [0, 1]
    assert best['params'] == 42
    rows = read_jsonl(str(root / 'agg' / 'val' / STATS_FILE))
    assert [r['epoch'] for r in rows] == [0, 1, 2]
    assert rows[2]['accuracy'] == pytest.approx(0.75)
    assert rows[2]['accuracy_std'] == pytest.approx(0.15)
    assert rows[0]['num_seeds'] == 2

    # Idempotent: a second run gives the same files.
    before = {p: open(os.path.join(d, p)).read()
              for d, _, fs in os.walk(root / 'agg') for p in fs}
    assert main([str(root)]) == 0
    after = {p: open(os.path.join(d, p)).read()
             for d, _, fs in os.walk(root / 'agg') for p in fs}
    assert before == after

    # The unfinished seed on request.
    result = aggregate(str(root), include_unfinished=True)
    assert result['used'] == [0, 1, 2]
    assert result['best']['test']['accuracy'] == pytest.approx((0.7 + 0.9 + 0.2) / 3)


def test_nothing_to_aggregate(tmp_path, capsys):
    root = tmp_path / 'empty'
    root.mkdir()
    assert main([str(root)]) == 2
    assert 'no finished seed' in capsys.readouterr().out
    assert main([str(tmp_path / "absent")]) == 2


def test_nothing_new_leaves_agg_as_it_was(tmp_path, capsys):
    root = tmp_path / 'kept'
    write_seed(root, 0, [0.5, 0.7], best_epoch=1)
    assert main([str(root)]) == 0
    best = (root / 'agg' / 'test' / 'best.json').read_text()
    (root / '0' / 'done').unlink()  # the seed is no longer finished
    assert main([str(root)]) == 2
    assert 'agg left as it was' in capsys.readouterr().out
    assert (root / 'agg' / 'test' / 'best.json').read_text() == best


def test_seeds_of_different_configs_are_never_mixed(tmp_path, capsys):
    root = tmp_path / 'mixed'
    write_seed(root, 0, [0.5, 0.7], 1, fingerprint='aaaa', identity={'optim.base_lr': 0.001})
    write_seed(root, 1, [0.4, 0.6], 1, fingerprint='aaaa', identity={'optim.base_lr': 0.001})
    write_seed(root, 2, [0.9, 0.1], 0, fingerprint='bbbb', identity={'optim.base_lr': 0.0005})
    with pytest.raises(MixedRunsError, match=r'optim.base_lr 0.001 -> 0.0005'):
        aggregate(str(root))
    assert main([str(root)]) == 2
    err = capsys.readouterr().err
    assert 'seeds [0, 1] (aaaa)' in err and 'seeds [2] (bbbb)' in err
    assert not (root / 'agg').exists()
    assert main([str(root), '--fingerprint', 'aaaa']) == 0
    out = capsys.readouterr().out
    assert 'finished with another config (not aggregated): [2]' in out
    best = json.loads((root / 'agg' / 'test' / 'best.json').read_text())
    assert best['seeds'] == [0, 1] and best['accuracy'] == pytest.approx(0.65)


READER_SECONDS = 2.0
AGG_LOOP = '''
import sys, time
from graphgps_ext.agg import aggregate
root, seconds = sys.argv[1], float(sys.argv[2])
print('ready', flush=True)
sys.stdin.readline()
n, end = 0, time.time() + seconds
while time.time() < end:
    aggregate(root)
    n += 1
print(n)
'''


def test_concurrent_aggregations_and_readers(tmp_path):
    """Three processes aggregate one folder in a loop while this one reads
    the files: every call succeeds and every read finds a whole file."""
    root = tmp_path / 'busy'
    for seed in range(3):
        write_seed(root, seed, [0.01 * ((e * (seed + 3)) % 97) for e in range(300)],
                   best_epoch=7)
    aggregate(str(root))
    expected = {split: (root / 'agg' / split / STATS_FILE).read_text()
                for split in ('train', 'val', 'test')}
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')
    procs = [subprocess.Popen([sys.executable, '-c', AGG_LOOP, str(root),
                               str(READER_SECONDS)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(3)]
    for p in procs:  # start the loops together, after the imports
        assert p.stdout.readline().strip() == 'ready'
    for p in procs:
        p.stdin.write('go\n')
        p.stdin.flush()
    reads = bad = 0
    end = time.time() + READER_SECONDS
    while time.time() < end:
        for split in ('train', 'val', 'test'):
            for name in (STATS_FILE, 'best.json'):
                with open(root / 'agg' / split / name) as f:
                    text = f.read()
                reads += 1
                if name == STATS_FILE:
                    bad += text != expected[split]
                else:
                    bad += json.loads(text)['num_seeds'] != 3
    calls = 0
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err[-2000:]
        calls += int(out.split()[-1])
    assert calls >= 3 and reads > 100
    assert bad == 0
    assert sorted(os.listdir(root / 'agg' / 'val')) == ['best.json', STATS_FILE]


@pytest.fixture(scope='module')
def quick_results(tmp_path_factory):
    """Two seeds of the quick start config (2 epochs, 200 graphs) by main.py."""
    tmp = tmp_path_factory.mktemp('quick')
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1', WANDB_MODE='disabled')
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'main.py'), '--cfg',
         os.path.join(ROOT, 'configs', 'quickstart.yaml'), '--repeat', '2',
         'optim.max_epoch', '2', 'dataset.max_graphs', '200',
         'dataset.dir', str(tmp / 'datasets'), 'out_dir', str(tmp / 'results'),
         'accelerator', 'cpu'],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return tmp / 'results' / 'quickstart'


def test_graphgym_agg_runs_reads_our_results(quick_results):
    """GraphGym's own aggregation reads the seed folders main.py writes, and
    agrees with ours; ours writes its files back afterwards."""
    from torch_geometric.graphgym.config import cfg, set_cfg
    from torch_geometric.graphgym.utils.agg_runs import agg_runs

    root = str(quick_results)
    assert main([root]) == 0
    ours = {s: json.loads((quick_results / 'agg' / s / 'best.json').read_text())
            for s in ('train', 'val', 'test')}
    set_cfg(cfg)  # GraphGym's defaults: metric_agg argmax (accuracy), round 4
    cfg.tensorboard_agg = False
    agg_runs(root, 'accuracy')
    for split in ('train', 'val'):
        theirs = json.loads((quick_results / 'agg' / split / 'best.json').read_text())
        assert theirs['accuracy'] == pytest.approx(ours[split]['accuracy'], abs=1e-4)
        assert theirs['loss'] == pytest.approx(ours[split]['loss'], abs=1e-4)
        curve = read_jsonl(str(quick_results / 'agg' / split / STATS_FILE))
        assert [r['epoch'] for r in curve] == [0, 1]
    # agg/test is ours, untouched; a second run of ours restores train/val.
    assert json.loads((quick_results / 'agg' / 'test' / 'best.json').read_text()) == ours['test']
    assert main([root]) == 0
    for split in ('train', 'val'):
        again = json.loads((quick_results / 'agg' / split / 'best.json').read_text())
        assert again == ours[split]
