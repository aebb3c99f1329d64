"""``python -m graphgps_ext.agg`` on hand-written seed folders; seeds of
different configs; concurrent aggregations with readers; GraphGym's
``agg_runs`` on a results folder made by ``main.py``."""
import errno
import json
import os
import subprocess
import sys
import time

import pytest

from graphgps_ext.agg import MixedRunsError, aggregate, main
from graphgps_ext.files import read_jsonl
from graphgps_ext.logger import STATS_FILE

from run_checks import seal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_seed(root, seed, accs, best_epoch, done=True, fingerprint='aaaa', identity=None,
               data='d0'):
    """A seed folder as a run writes it; ``done``: finished (sealed, see
    :func:`run_checks.seal`, with the data fingerprint ``data``)."""
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
    (run / 'config.yaml').write_text(f'# fingerprint: {fingerprint}\nseed: {seed}\n')
    (run / 'data.json').write_text(json.dumps({'sizes': {'train': 8, 'val': 1, 'test': 1}}))
    if done:
        seal(run, fingerprint=fingerprint, identity=identity, data=data)


def _edit(path, text):
    path.write_text(text)


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
        write_seed(root, seed, [0.5, 0.7, 0.6 + seed / 10], 1)
    damage(root / '1')
    assert main([str(root)]) == 2
    err = capsys.readouterr().err
    assert f"seed folder {root / '1'}: {name}" in err and words in err, err
    assert 'Traceback' not in err and not (root / 'agg').exists()


def test_markers_of_an_earlier_version(tmp_path):
    """A marker with the SHA-256 of the files present but no data record
    (an earlier version) is read; one without any SHA-256 (edited, or of a
    version before they were recorded) is refused: its files cannot be
    verified."""
    from graphgps_ext.results.seed_folder import SeedFolderError
    root = tmp_path / 'old'
    write_seed(root, 0, [0.5, 0.7, 0.6], 1, data=None)
    assert aggregate(str(root))['used'] == [0]
    marker = json.loads((root / '0' / 'done').read_text())
    del marker['files']
    (root / '0' / 'done').write_text(json.dumps(marker))
    with pytest.raises(SeedFolderError, match="'done' records no SHA-256"):
        aggregate(str(root))


def test_a_symlinked_seed_folder_is_counted_once(tmp_path, capsys):
    root = tmp_path / 'quick'
    write_seed(root, 0, [0.5, 0.7, 0.6], 1)
    write_seed(root, 1, [0.4, 0.8, 0.9], 2)
    os.symlink(root / '1', root / '2')
    assert main([str(root)]) == 0
    out = capsys.readouterr().out
    assert '2 seed(s) aggregated [0, 1]' in out
    assert 'counted once: 2 (a symbolic link to 1)' in out


def test_copies_hard_links_and_links_of_a_seed_count_once(tmp_path, capsys):
    import shutil
    root = tmp_path / 'quick'
    write_seed(root, 0, [0.5, 0.7, 0.6], 1)
    write_seed(root, 1, [0.4, 0.8, 0.9], 2)
    shutil.copytree(root / '0', root / '5')  # cp -r
    shutil.copytree(root / '1', root / '6', copy_function=os.link)  # cp -al
    os.symlink('0', root / '7')
    assert main([str(root)]) == 0
    out = capsys.readouterr().out
    assert '2 seed(s) aggregated [0, 1]' in out
    assert ('counted once: 7 (a symbolic link to 0), 5 (a copy of 0: the same run '
            'identity and results), 6 (a copy of 1: hard links to its files)') in out
    # A copy whose original is gone is refused: it holds another seed's run.
    shutil.rmtree(root / '0')
    os.unlink(root / '7')
    assert main([str(root)]) == 2
    err = capsys.readouterr().err
    assert f"seed folder {root / '5'}: config.yaml is the config of seed 0" in err


def test_a_link_out_of_the_run_folder_is_refused(tmp_path, capsys):
    write_seed(tmp_path / 'other', 0, [0.1, 0.2], 1)
    root = tmp_path / 'quick'
    write_seed(root, 0, [0.5, 0.7], 1)
    os.symlink(tmp_path / 'other' / '0', root / '1')
    assert main([str(root)]) == 2
    err = capsys.readouterr().err
    assert f'{root / "1"} is a symbolic link (to {tmp_path / "other" / "0"})' in err
    assert 'Traceback' not in err and not (root / 'agg').exists()


def test_names_of_digits_that_are_not_seeds_are_not_read(tmp_path, capsys):
    import shutil
    root = tmp_path / 'quick'
    write_seed(root, 0, [0.5, 0.7], 1)
    for name in ('\u00b2', '007', '\u0663'):  # superscript two, 007, Arabic-Indic three
        shutil.copytree(root / '0', root / name)
    assert main([str(root)]) == 0
    out = capsys.readouterr().out
    assert '1 seed(s) aggregated [0]' in out
    assert "not read (digits, but not the name of a seed folder" in out
    assert "'007', '\\xb2', '\\u0663'" in out


def test_nan_metrics_are_values(tmp_path, capsys):
    """A test AP that is NaN (no positive label in the test split) is a
    value: the seed is not damaged, the mean over seeds is NaN."""
    root = tmp_path / 'quick'
    for seed in (0, 1):
        run = root / str(seed)
        write_seed(root, seed, [0.5, 0.7 + seed / 10], 1, done=False)
        stats = [json.loads(ln) for ln in (run / 'test' / STATS_FILE).read_text().splitlines()]
        best = json.loads((run / 'best.json').read_text())
        for rec in (stats[1], best['test']):
            rec['accuracy'] = float('nan')
        (run / 'test' / STATS_FILE).write_text(''.join(json.dumps(r) + '\n' for r in stats))
        (run / 'best.json').write_text(json.dumps(best))
        seal(run)
    assert 'NaN' in (root / '0' / 'best.json').read_text()
    assert main([str(root)]) == 0
    best = json.loads((root / 'agg' / 'test' / 'best.json').read_text())
    assert best['num_seeds'] == 2 and best['accuracy'] != best['accuracy']  # NaN
    val = json.loads((root / 'agg' / 'val' / 'best.json').read_text())
    assert val['accuracy'] == pytest.approx(0.75)


def _best(**change):
    def edit(run):
        best = json.loads((run / 'best.json').read_text())
        best.update(change)
        (run / 'best.json').write_text(json.dumps(best))
    return edit


def _marker(edit):
    def change(run):
        marker = json.loads((run / 'done').read_text())
        edit(marker)
        (run / 'done').write_text(json.dumps(marker))
    return change


# Edits made consistently (the files resealed), caught by what they hold.
# (id, edit(seed folder), reseal, the file named, words)
INCONSISTENT = [
    ('val-not-a-record', _best(val='x'), True, 'best.json', "'val' is not a record of val"),
    ('test-a-string', _best(test={'accuracy': 'x'}), True, 'best.json',
     "'test' is not a record of test"),
    ('epoch-beyond', _best(epoch=9), 'best', 'done',
     "records the best epoch 9, not one of the run's epochs 0-2"),
    ('epoch-negative', _best(epoch=-5), True, 'best.json', "integer 'epoch' >= 0"),
    ('no-metric', _best(metric=None), True, 'best.json', "and a 'metric'"),
    ('files-missing', _marker(lambda m: m.pop('files')), False, 'done',
     'records no SHA-256'),
    ('files-empty', _marker(lambda m: m.update(files={})), False, 'done',
     'records no SHA-256'),
    ('files-partial', _marker(lambda m: m['files'].pop('best.json')), False, 'best.json',
     'has no SHA-256'),
    ('files-not-a-digest', _marker(lambda m: m['files'].update({'best.json': ''})), False,
     'done', "records \"\" as the SHA-256 of best.json"),
    ('files-other-name', _marker(lambda m: m['files'].update({'../x': None})), False,
     'done', 'not a file of a seed folder'),
    ('epochs-a-string', _marker(lambda m: m.update(epochs='3')), False, 'done',
     "integer 'epochs'"),
    ('deep-done', lambda r: _edit(r / 'done', '[' * 100000 + ']' * 100000), False, 'done',
     'nested too deeply'),
    ('deep-stats', lambda r: _edit(r / 'val' / STATS_FILE, '[' * 100000 + ']' * 100000
                                   + '\n{"epoch": 0}\n'), False, 'val/stats.json',
     'line 1 is not JSON (nested 100000 levels deep'),
    ('deep-best', lambda r: _edit(r / 'best.json', '{"a": ' * 100000), False,
     'best.json', 'nested 100000 levels deep'),
    ('deep-data', lambda r: _edit(r / 'data.json', '[' * 100000), False, 'data.json',
     'was changed after the run finished'),
]


@pytest.mark.parametrize('edit,reseal,name,words', [d[1:] for d in INCONSISTENT],
                         ids=[d[0] for d in INCONSISTENT])
def test_edited_results_are_refused(tmp_path, capsys, edit, reseal, name, words):
    root = tmp_path / 'quick'
    for seed in (0, 1):
        write_seed(root, seed, [0.5, 0.7, 0.6 + seed / 10], 1)
    edit(root / '1')
    if reseal:  # 'best': done records best.json's epoch, else epoch 1
        seal(root / '1', best_epoch=None if reseal == 'best' else 1)
    assert main([str(root)]) == 2
    err = capsys.readouterr().err
    shown = repr(name) if name == 'done' else name
    assert f"seed folder {root / '1'}: {shown}" in err and words in err, err
    assert 'Traceback' not in err and not (root / 'agg').exists()


def test_a_best_epoch_the_run_never_trained_is_refused(tmp_path, capsys):
    root = tmp_path / 'quick'
    write_seed(root, 0, [0.5, 0.7, 0.6], 1, done=False)  # unfinished: no marker
    _best(epoch=7)(root / '0')
    assert main([str(root), '--include-unfinished']) == 2
    assert 'best.json is of epoch 7, beyond the epochs the run trained (0-2' in \
        capsys.readouterr().err


def test_runs_on_different_data_are_never_mixed(tmp_path, capsys):
    root = tmp_path / 'nci1'
    write_seed(root, 0, [0.5, 0.7], 1, data='full')
    write_seed(root, 1, [0.4, 0.6], 1, data='full')
    write_seed(root, 2, [0.9, 0.1], 0, data='sample')
    (root / '2' / 'data.json').write_text(json.dumps({'sizes': {'train': 254, 'val': 32,
                                                               'test': 32}}))
    seal(root / '2', data='sample')
    for argv in ([str(root)], [str(root), '--fingerprint', 'aaaa']):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert 'holds runs of one config on 2 different data' in err
        assert 'seeds [0, 1]: data full (from /data, 10 graphs)' in err
        assert 'seeds [2]: data sample (from /data, 318 graphs)' in err
    # A seed of an earlier version records no data: not averaged with the others.
    for seed in (0, 1):
        seal(root / str(seed), data=None)
    assert main([str(root)]) == 2
    assert 'seeds [0, 1]: no record of its data (an earlier version)' in \
        capsys.readouterr().err
    (root / '2' / 'done').unlink()
    assert main([str(root)]) == 0


def test_a_folder_that_cannot_be_written_exits_4(tmp_path, capsys, monkeypatch):
    from graphgps_ext import files
    root = tmp_path / 'quick'
    write_seed(root, 0, [0.5, 0.7], 1)

    def read_only(path, write_fn, keep_previous=None):
        with files.write_guard(path):
            raise OSError(errno.EROFS, 'Read-only file system')

    monkeypatch.setattr(files, 'atomic_write_bytes', read_only)
    assert main([str(root)]) == 4
    err = capsys.readouterr().err
    assert f"could not write {root / 'agg' / 'train' / 'best.json'}: Read-only" in err
    assert 'mounted read-only' in err and 'free some space' not in err.lower()


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
