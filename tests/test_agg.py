"""``python -m graphgps_ext.agg`` on hand-written seed folders."""
import json
import os

import pytest

from graphgps_ext.agg import aggregate, main
from graphgps_ext.logger import read_jsonl


def write_seed(root, seed, accs, best_epoch, done=True):
    run = root / str(seed)
    for split in ('train', 'val', 'test'):
        (run / split).mkdir(parents=True)
        with open(run / split / 'stats.jsonl', 'w') as f:
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
        (run / 'done').write_text('{}')


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
    best = json.loads((root / 'agg' / 'test' / 'best.json').read_text())
    assert best['accuracy'] == pytest.approx(0.8)
    assert best['accuracy_std'] == pytest.approx(0.1)  # population std
    assert best['epoch'] == pytest.approx(1.5)
    assert best['num_seeds'] == 2 and best['seeds'] == [0, 1]
    assert best['params'] == 42
    rows = read_jsonl(str(root / 'agg' / 'val' / 'stats.jsonl'))
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
    assert main([str(root)]) == 1
    assert 'no finished seed' in capsys.readouterr().out
    assert main([str(tmp_path / 'absent')]) == 1
