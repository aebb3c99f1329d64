"""``graphgps_ext.report`` on synthetic results folders, and the published
numbers / table mapping files it reads (no training)."""
import csv
import json
import os

import pytest

from graphgps_ext import report
from graphgps_ext.logger import STATS_FILE

from run_checks import seal

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBERS = os.path.join(ROOT, 'run', 'paper_numbers.csv')
TABLES = os.path.join(ROOT, 'run', 'tables.tsv')


# --------------------------------------------------------------------------- data files
def _numbers():
    with open(NUMBERS, newline='') as f:
        return list(csv.DictReader(f))


def test_paper_numbers_columns_and_unique_keys():
    rows = _numbers()
    assert rows, 'paper_numbers.csv is empty'
    assert list(rows[0])[:8] == ['paper', 'table', 'dataset', 'model', 'metric',
                                 'mean', 'std', 'seeds']
    keys = [report.paper_key(r) for r in rows]
    assert len(keys) == len(set(keys))
    for r in rows:
        assert r['paper'] in report.PAPER_TITLES
        assert r['split'] in ('test', 'val')
        assert r['unit'] in ('', '%')
        float(r['mean'])
        if r['std']:
            assert float(r['std']) >= 0
        if r['seeds']:
            assert int(r['seeds']) >= 1
        # Percentages are printed as percentages, everything else as fractions.
        if r['unit'] == '%':
            assert r['metric'] in ('accuracy', 'accuracy_sbm') and float(r['mean']) > 1


@pytest.mark.parametrize('key,mean,std', [
    (('geaet', 'table1', 'CIFAR10', 'GEAET', 'accuracy', 'test'), '76.634', '0.427'),
    (('geaet', 'table1', 'COCO-SP', 'GEAET', 'f1_macro', 'test'), '0.3895', '0.0050'),
    (('geaet', 'table2', 'PCQM-Contact', 'GatedGCN+GEANet', 'mrr', 'test'), '0.3321', '0.0008'),
    (('geaet', 'table3', 'ZINC', 'GIN+GEANet', 'mae', 'test'), '0.193', '0.001'),
    (('geaet', 'table4', 'PATTERN', 'GEAET units=node', 'accuracy_sbm', 'test'), '86.956', '0.038'),
    (('geaet', 'table7', 'Peptides-func', 'GCN+GEANet heads=8', 'ap', 'test'), '0.6912', '0.0012'),
    (('geaet', 'table9', 'PCQM-Contact', 'GEAET', 'hits@10', 'test'), '0.8626', '0.0032'),
    (('geaet', 'table10', 'PascalVOC-SP', 'GINE+GEANet PE=RWPE', 'f1_macro', 'test'), '0.2762', '0.0022'),
    (('csa', 'table1', 'ZINC', 'CSA-rings', 'mae', 'test'), '0.056', '0.002'),
    (('csa', 'table2', 'CLUSTER', 'CSA', 'accuracy_sbm', 'test'), '79.175', '0.126'),
    (('csa', 'table3', 'PCQM4Mv2', 'CSA-deep', 'mae', 'val'), '0.0853', ''),
    (('csa', 'table5', 'PCQM4Mv2-subset', 'CSA color=yes edge-value=no', 'mae', 'val'), '0.177', '0.039'),
    (('mna', 'table2', 'NCI1', 'MNA-GT', 'accuracy', 'test'), '82.73', '1.45'),
    (('mna', 'table3', 'ogbg-code2', 'MNA-GT', 'f1_subtoken', 'test'), '0.1998', '0.0031'),
    (('mna', 'table4', 'COLLAB', 'MNA-GT fusion=concat', 'accuracy', 'test'), '81.02', ''),
    (('gt', 'table1', 'CLUSTER', 'GT sparse LapPE BN', 'accuracy_sbm', 'test'), '73.169', '0.622'),
])
def test_paper_numbers_spot_checks(key, mean, std):
    rows = {report.paper_key(r): r for r in _numbers()}
    assert rows[key]['mean'] == mean and rows[key]['std'] == std


def test_tables_tsv_rows_join_paper_numbers_and_configs():
    rows = report.read_tables(TABLES)
    numbers = report.read_paper_numbers(NUMBERS)
    assert {r['paper'] for r in rows} == set(report.PAPER_TITLES)
    for r in rows:
        assert os.path.isfile(os.path.join(ROOT, r['config'])), r['config']
        assert report.parse_seeds(r['seeds']), r
        if r['metric'] != '-':
            key = (r['paper'], r['ref_table'], r['dataset'], r['model'], r['metric'],
                   r['split'])
            assert key in numbers, f'{r["config"]}: {key} not in paper_numbers.csv'


def test_every_main_result_has_a_config():
    """Each published number of our papers' own models is reproduced by a row."""
    rows = report.read_tables(TABLES)
    covered = {(r['paper'], r['ref_table'], r['dataset'], r['model'], r['metric'], r['split'])
               for r in rows if r['metric'] != '-'}
    own = [r for r in _numbers()
           if 'baseline' not in r['note'] and r['paper'] != 'gps'
           and not r['note'].startswith('approximate')]
    missing = [report.paper_key(r) for r in own if report.paper_key(r) not in covered]
    assert not missing, missing


# --------------------------------------------------------------------------- helpers
def test_parse_seeds_and_config_name():
    assert report.parse_seeds('0-3,7,2') == [0, 1, 2, 3, 7]
    assert report.config_name('configs/geaet/zinc.yaml') == 'geaet-zinc'
    assert report.config_name('/x/configs/gt/zinc-full-ln.yaml') == 'gt-zinc-full-ln'
    assert report.config_name('my.yaml') == 'my'


def test_config_differences():
    shipped = {'optim': {'max_epoch': 100, 'base_lr': 0.001}, 'gt': {'layers': 3},
               'seed': 0}
    run = {'optim': {'max_epoch': 5, 'base_lr': 1e-3}, 'gt': {'layers': 3}, 'seed': 4}
    assert report.config_differences(shipped, run) == ['optim.max_epoch 5 (config 100)']


# --------------------------------------------------------------------------- synthetic run
def _write_seed(root, name, seed, test_metric, epochs=5, done=True, metric='mae',
                max_epoch=5, data_dir=''):
    d = root / name / str(seed)
    for split in ('train', 'val', 'test'):
        (d / split).mkdir(parents=True)
        with open(d / split / STATS_FILE, 'w') as f:
            for e in range(epochs):  # the best (last) epoch's record is best.json's
                f.write(json.dumps({'epoch': e, 'loss': 1.0 / (e + 1) + 0.01 * seed,
                                    metric: test_metric + 0.1 * (epochs - e)}
                                   if e < epochs - 1 else
                                   {'epoch': e, 'loss': 0.1, metric: test_metric}) + '\n')
    best = {'epoch': epochs - 1, 'metric': metric, 'mode': 'min', 'split': 'val',
            'value': test_metric}
    for split in ('train', 'val', 'test'):
        best[split] = {'epoch': epochs - 1, 'loss': 0.1, metric: test_metric}
    (d / 'best.json').write_text(json.dumps(best))
    (d / 'config.yaml').write_text(
        f'seed: {seed}\nmetric_best: {metric}\noptim:\n  max_epoch: {max_epoch}\n'
        f'  base_lr: 0.001\ndataset:\n  dir: {data_dir}\n')
    if done:
        seal(d, seconds=1.0)


@pytest.fixture
def synthetic(tmp_path):
    """A repo-like folder: configs, run/tables.tsv, paper_numbers.csv, results."""
    (tmp_path / 'configs' / 'geaet').mkdir(parents=True)
    (tmp_path / 'configs' / 'geaet' / 'zinc-gin-geanet.yaml').write_text(
        'optim:\n  max_epoch: 1000\n  base_lr: 0.001\n')
    (tmp_path / 'configs' / 'geaet' / 'mnist.yaml').write_text('optim:\n  max_epoch: 150\n')
    (tmp_path / 'configs' / 'mna').mkdir()
    (tmp_path / 'configs' / 'mna' / 'nci1-hops2.yaml').write_text('optim:\n  max_epoch: 100\n')
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / 'tables.tsv').write_text('\t'.join(report.TSV_COLUMNS) + '\n' + '\n'.join([
        '\t'.join(['geaet', 'table3', 'configs/geaet/zinc-gin-geanet.yaml', '0-3', '=',
                   'ZINC', 'GIN+GEANet', 'mae', 'test']),
        '\t'.join(['geaet', 'table1', 'configs/geaet/mnist.yaml', '0-9', '=', 'MNIST',
                   'GEAET', 'accuracy', 'test']),
        '\t'.join(['mna', 'fig2', 'configs/mna/nci1-hops2.yaml', '0-9', '=', 'NCI1',
                   'MNA-GT hops=2', '-', 'test']),
        '\t'.join(['gt', 'table1', 'configs/gt/zinc.yaml', '0-3', '=', 'ZINC',
                   'GT sparse LapPE BN (edge features)', 'mae', 'test']),
    ]) + '\n')
    results = tmp_path / 'results'
    results.mkdir()
    for i, v in enumerate([0.20, 0.22, 0.24]):
        _write_seed(results, 'geaet-zinc-gin-geanet', i, v, epochs=5, max_epoch=5)
    _write_seed(results, 'geaet-zinc-gin-geanet', 3, 9.0, done=False)  # running
    for i, v in enumerate([0.98, 0.99]):
        _write_seed(results, 'geaet-mnist', i, v, metric='accuracy', max_epoch=150,
                    epochs=4)
    _write_seed(results, 'mna-nci1-hops2', 0, 0.8, metric='accuracy', max_epoch=100)
    _write_seed(results, 'my-experiment', 0, 0.5)  # not in tables.tsv
    return tmp_path


def test_report_on_synthetic_results(synthetic):
    res = str(synthetic / 'results')
    text = report.make_report(res, str(synthetic / 'run' / 'tables.tsv'), NUMBERS,
                              repo_root=str(synthetic))
    assert (synthetic / 'results' / 'REPORT.md').read_text().strip() == text.strip()
    lines = {ln.split('|')[3].strip(): ln for ln in text.splitlines()
             if ln.startswith('| ') and '`' in ln}
    zinc = lines['`geaet-zinc-gin-geanet` ([curves](geaet-zinc-gin-geanet/agg/curves.png))']
    cells = [c.strip() for c in zinc.split('|')[1:-1]]
    # mean 0.22, population std 0.01633; paper 0.193 ± 0.001 -> (0.22 - 0.193) / 0.001 = +27.0
    assert cells[4] == '0.220 ± 0.016'
    assert cells[5] == '3/4 (+1 running)'
    assert cells[6] == '0.193 ± 0.001'
    assert cells[8] == '+27.0'
    assert cells[11] == '5 / 1000'
    assert 'changed: optim.max_epoch 5 (config 1000)' in cells[12]
    assert 'ZINC train split' in cells[12]
    # Welch: ours 0.22, sample std 0.02, n 3 against 0.193 ± 0.001 (seeds not printed)
    assert cells[9] == '—' and cells[10] == 'not comparable: 5 of 1000 epochs'
    mnist = [c.strip() for c in next(v for k, v in lines.items() if 'geaet-mnist' in k)
             .split('|')[1:-1]]
    # accuracy fractions are scaled to the paper's percent
    assert mnist[4] == '98.500 ± 0.500' and mnist[6] == '98.513 ± 0.086 %'
    assert mnist[8] == f'{(98.5 - 98.513) / 0.086:+.1f}'
    assert mnist[11] == '4 / 150'
    hops = [c.strip() for c in next(v for k, v in lines.items() if 'mna-nci1-hops2' in k)
            .split('|')[1:-1]]
    assert hops[1] == 'MNA-GT hops=2' and hops[6] == '—' and hops[4] == '80.00 ± 0.00'
    assert 'random 8:1:1 split per seed' in hops[12] and hops[10] == '—'
    assert 'gt-zinc' not in text  # nothing run: left out unless --all
    assert '`my-experiment`' in text  # other results section
    png = synthetic / 'results' / 'geaet-zinc-gin-geanet' / 'agg' / 'curves.png'
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_report_all_lists_missing_runs(synthetic):
    text = report.make_report(str(synthetic / 'results'),
                              str(synthetic / 'run' / 'tables.tsv'), NUMBERS,
                              repo_root=str(synthetic), curves=False,
                              include_missing=True, papers=['gt'])
    assert '`gt-zinc`' in text and 'not run' in text and '0.226 ± 0.014' in text
    assert 'geaet' not in text.split('## ')[-1]


def test_report_from_aggregate_only(synthetic):
    """With only agg/ (python -m graphgps_ext.agg) kept, the report and the
    curves come from it."""
    import shutil
    from graphgps_ext import agg
    root = synthetic / 'results' / 'geaet-zinc-gin-geanet'
    agg.aggregate(str(root))
    for seed in ('0', '1', '2', '3'):
        shutil.rmtree(root / seed)
    res = report.load_results(str(synthetic / 'results'), 'geaet-zinc-gin-geanet')
    mean, std, n = report.ours_stats(res, 'test', 'mae')
    assert (mean, n) == (pytest.approx(0.22), 3) and std == pytest.approx(0.0163, abs=1e-4)
    text = report.make_report(str(synthetic / 'results'),
                              str(synthetic / 'run' / 'tables.tsv'), NUMBERS,
                              repo_root=str(synthetic), papers=['geaet'])
    row = next(ln for ln in text.splitlines() if 'geaet-zinc-gin-geanet' in ln)
    cells = [c.strip() for c in row.split('|')[1:-1]]
    assert cells[4] == '0.220 ± 0.016' and cells[5] == '3/4' and cells[11] == '5 / 1000'
    assert cells[10] == 'not comparable: 5 of 1000 epochs'
    assert (root / 'agg' / 'curves.png').read_bytes()[:4] == b'\x89PNG'


def test_report_errors(synthetic, tmp_path):
    bad = tmp_path / 'bad.tsv'
    bad.write_text('paper\ttable\tconfig\n')
    assert report.main(['--results', str(synthetic / 'results'), '--tables', str(bad),
                        '--numbers', NUMBERS]) == 2
    unknown = tmp_path / 'unknown.tsv'
    unknown.write_text('\t'.join(report.TSV_COLUMNS) + '\n' + '\t'.join(
        ['geaet', 'table3', 'configs/geaet/zinc-gin-geanet.yaml', '0', '=', 'ZINC',
         'GIN+GEANet-typo', 'mae', 'test']) + '\n')
    with pytest.raises(ValueError, match='not in paper_numbers.csv'):
        report.make_report(str(synthetic / 'results'), str(unknown), NUMBERS,
                           repo_root=str(synthetic), curves=False)


# --------------------------------------------------------------------------- consistency
# Welch's worked example (two samples of 15; t = -2.46, df = 24.99, p = 0.021).
A1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
A2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]


def test_welch_known_values():
    import numpy as np
    res = report.welch(np.mean(A1), np.std(A1, ddof=1), 15, np.mean(A2), np.std(A2, ddof=1), 15)
    assert res.t == pytest.approx(-2.4554, abs=1e-4)
    assert res.df == pytest.approx(24.9885, abs=1e-3)
    assert res.p == pytest.approx(0.02138, abs=1e-5)
    assert res.verdict == 'differs'
    # The population std of our seeds is converted: same answer from ddof=0.
    s1 = report.sample_std(float(np.std(A1)), 15)
    assert s1 == pytest.approx(np.std(A1, ddof=1))
    # Unequal sizes and variances, by hand: t = (10 - 9) / sqrt(4/5 + 1/10).
    res = report.welch(10.0, 2.0, 5, 9.0, 1.0, 10)
    assert res.t == pytest.approx(1 / (0.9 ** 0.5))
    assert res.df == pytest.approx(0.81 / (0.8 ** 2 / 4 + 0.1 ** 2 / 9))
    assert res.p == pytest.approx(0.33984, abs=1e-5) and res.verdict == 'consistent'
    from scipy.stats import ttest_ind_from_stats
    assert res.p == pytest.approx(ttest_ind_from_stats(10, 2, 5, 9, 1, 10, equal_var=False).pvalue)
    assert report.welch(1.0, 0.1, 1, 1.0, 0.1, 4) is None  # one seed: no test


def test_verdicts_consistent_differs_and_not_comparable(synthetic):
    """Full-protocol results get a verdict; stand-in data are not comparable."""
    cfg = synthetic / 'configs' / 'geaet' / 'zinc-gin-geanet.yaml'
    cfg.write_text('optim:\n  max_epoch: 5\n  base_lr: 0.001\n')  # the runs' protocol
    tables = str(synthetic / 'run' / 'tables.tsv')
    res = str(synthetic / 'results')
    numbers = synthetic / 'numbers.csv'
    with open(NUMBERS) as f:
        text = f.read()
    # Paper: ZINC GIN+GEANet 0.193 ± 0.001 over 4 seeds; MNIST as printed.
    numbers.write_text(text.replace('geaet,table3,ZINC,GIN+GEANet,mae,0.193,0.001,,',
                                    'geaet,table3,ZINC,GIN+GEANet,mae,0.215,0.01,4,'))
    assert 'GIN+GEANet,mae,0.215' in numbers.read_text()
    _, rows = report.write_report(res, tables, str(numbers), repo_root=str(synthetic),
                                  curves=False, papers=['geaet'])
    zinc = next(r for r in rows if r.name == 'geaet-zinc-gin-geanet')
    # ours 0.22, 0.02 (ddof=1), 3 seeds vs 0.215 ± 0.01 over 4: consistent.
    expected = report.welch(0.22, 0.02, 3, 0.215, 0.01, 4)
    assert zinc.welch_p == f'{expected.p:.2g}' and zinc.verdict == 'consistent'
    mnist = next(r for r in rows if r.name == 'geaet-mnist')
    assert mnist.verdict == 'not comparable: 4 of 150 epochs'
    # A stand-in train split (data.json) makes the ZINC result not comparable.
    for seed in (0, 1, 2):  # as the runs would have written it
        folder = synthetic / 'results' / 'geaet-zinc-gin-geanet' / str(seed)
        (folder / 'data.json').write_text(json.dumps({'stand_in': True}))
        seal(folder)
    _, rows = report.write_report(res, tables, str(numbers), repo_root=str(synthetic),
                                  curves=False, papers=['geaet'])
    zinc = next(r for r in rows if r.name == 'geaet-zinc-gin-geanet')
    assert zinc.verdict == 'not comparable: stand-in data'
    # Far from the paper: differs.
    numbers.write_text(text.replace('geaet,table3,ZINC,GIN+GEANet,mae,0.193,0.001,,',
                                    'geaet,table3,ZINC,GIN+GEANet,mae,0.120,0.01,4,'))
    for seed in (0, 1, 2):
        folder = synthetic / 'results' / 'geaet-zinc-gin-geanet' / str(seed)
        (folder / 'data.json').unlink()
        seal(folder)
    _, rows = report.write_report(res, tables, str(numbers), repo_root=str(synthetic),
                                  curves=False, papers=['geaet'])
    zinc = next(r for r in rows if r.name == 'geaet-zinc-gin-geanet')
    assert zinc.verdict == 'differs' and float(zinc.welch_p) < 0.05
    lines = report.verdict_lines(rows)
    assert any('geaet-zinc-gin-geanet' in ln and ': differs (Welch p = ' in ln for ln in lines)


def test_main_prints_verdicts_and_reads_numbers_beside_tables(synthetic, capsys):
    import shutil
    shutil.copy(NUMBERS, synthetic / 'run' / 'paper_numbers.csv')
    assert report.main(['--results', str(synthetic / 'results'),
                        '--tables', str(synthetic / 'run' / 'tables.tsv'),
                        '--root', str(synthetic), '--no-curves']) == 0
    out = capsys.readouterr().out
    assert 'geaet table3 ZINC GIN+GEANet (geaet-zinc-gin-geanet) mae' in out
    assert 'not comparable: 5 of 1000 epochs' in out


# --------------------------------------------------------------------------- selections
def _seed_curves(root, name, seed, val, test, metric='accuracy'):
    """A finished seed whose val and test curves are given; best.json is
    the epoch of best validation (train repeats the val curve)."""
    mode = 'min' if metric == 'mae' else 'max'
    pick = min if mode == 'min' else max
    best_epoch = val.index(pick(val))
    d = root / name / str(seed)
    curves = {'train': val, 'val': val, 'test': test}
    best = {'epoch': best_epoch, 'metric': metric, 'mode': mode, 'split': 'val',
            'value': val[best_epoch]}
    for split, curve in curves.items():
        (d / split).mkdir(parents=True)
        (d / split / STATS_FILE).write_text(''.join(
            json.dumps({'epoch': e, 'loss': 0.5, metric: v}) + '\n' for e, v in enumerate(curve)))
        best[split] = {'epoch': best_epoch, 'loss': 0.5, metric: curve[best_epoch]}
    (d / 'best.json').write_text(json.dumps(best))
    (d / 'config.yaml').write_text(f'seed: {seed}\nmetric_best: {metric}\n'
                                   f'optim:\n  max_epoch: {len(val)}\n')
    seal(d, seconds=1.0)


def test_report_shows_both_selections_labelled(tmp_path, capsys):
    """--best-over-epochs: the best-validation epoch's test accuracy and each
    seed's best test accuracy over all epochs, side by side and labelled."""
    (tmp_path / 'configs' / 'mna').mkdir(parents=True)
    (tmp_path / 'configs' / 'mna' / 'nci1.yaml').write_text('optim:\n  max_epoch: 4\n')
    tables = tmp_path / 'tables.tsv'
    tables.write_text('\t'.join(report.TSV_COLUMNS) + '\n' + '\t'.join(
        ['mna', 'table2', 'configs/mna/nci1.yaml', '0-1', '=', 'NCI1', 'MNA-GT', 'accuracy',
         'test']) + '\n')
    results = tmp_path / 'results'
    # best-val epochs 1 and 2: test 0.60 and 0.72; best test over epochs 0.75 and 0.90
    _seed_curves(results, 'mna-nci1', 0, [0.50, 0.70, 0.60, 0.65], [0.55, 0.60, 0.75, 0.70])
    _seed_curves(results, 'mna-nci1', 1, [0.60, 0.62, 0.80, 0.70], [0.50, 0.70, 0.72, 0.90])
    args = ['--results', str(results), '--tables', str(tables), '--numbers', NUMBERS,
            '--root', str(tmp_path), '--no-curves']
    assert report.main(args) == 0
    plain = (results / 'REPORT.md').read_text()
    assert 'best over epochs' not in plain and '| metric | ours | seeds |' in plain
    assert report.main(args + ['--best-over-epochs']) == 0
    out = capsys.readouterr().out
    text = (results / 'REPORT.md').read_text()
    header = next(ln for ln in text.splitlines() if ln.startswith('| dataset'))
    assert '| ours (best-val epoch) | best over epochs |' in header
    row = next(ln for ln in text.splitlines() if '`mna-nci1`' in ln)
    cells = [c.strip() for c in row.split('|')[1:-1]]
    assert len(cells) == len(header.split('|')) - 2
    assert cells[4] == '66.000 ± 6.000'   # mean of 0.60, 0.72 (population std)
    assert cells[5] == '82.500 ± 7.500'   # mean of 0.75, 0.90
    assert cells[6] == '2/2' and cells[7] == '82.73 ± 1.45 %'
    assert '- **best over epochs**' in text
    assert 'ours 66.000 ± 6.000 [2/2 seeds] (best over epochs 82.500 ± 7.500)' in out


def test_best_over_epochs_follows_the_metric_direction_and_needs_curves(synthetic):
    """MAE improves downwards: the lowest test value of each seed; without
    per-epoch records (only agg/) there is nothing to select from."""
    import shutil
    from graphgps_ext import agg
    res_dir = str(synthetic / 'results')
    res = report.load_results(res_dir, 'geaet-zinc-gin-geanet', curves=True)
    # each test curve decreases to its last epoch: the lowest is best.json's value
    mean, std, n = report.best_over_epochs(res, 'test', 'mae')
    assert (mean, n) == (pytest.approx(0.22), 3) and std == pytest.approx(0.0163, abs=1e-4)
    mnist = report.load_results(res_dir, 'geaet-mnist', curves=True)
    # accuracy: the highest, here epoch 0's 0.98 + 0.1 * 4 (seed 0) and 0.99 + 0.4
    assert report.best_over_epochs(mnist, 'test', 'accuracy')[0] == pytest.approx(1.385)
    assert report.best_over_epochs(res, 'test', 'no-such-metric') is None
    root = synthetic / 'results' / 'geaet-zinc-gin-geanet'
    agg.aggregate(str(root))
    for seed in ('0', '1', '2', '3'):
        shutil.rmtree(root / seed)
    _, rows = report.write_report(res_dir, str(synthetic / 'run' / 'tables.tsv'), NUMBERS,
                                  repo_root=str(synthetic), curves=False, papers=['geaet'],
                                  over_epochs=True)
    zinc = next(r for r in rows if r.name == 'geaet-zinc-gin-geanet')
    assert zinc.ours == '0.220 ± 0.016' and zinc.best_over == '—'

# --------------------------------------------------------------------------- what is averaged
def _main(synthetic):
    return report.main(['--results', str(synthetic / 'results'),
                        '--tables', str(synthetic / 'run' / 'tables.tsv'),
                        '--numbers', NUMBERS, '--root', str(synthetic), '--no-curves'])


@pytest.mark.parametrize('mix', ['config', 'data'])
def test_report_refuses_the_mixes_agg_refuses(synthetic, capsys, mix):
    from graphgps_ext import agg
    seed = synthetic / 'results' / 'geaet-zinc-gin-geanet' / '2'
    if mix == 'config':  # another config's run, as it writes its files
        text = (seed / 'config.yaml').read_text().split('\n', 1)[1]
        (seed / 'config.yaml').write_text('# fingerprint: bbbb\n' + text)
        seal(seed, fingerprint='bbbb')
    else:
        seal(seed, data='other')
    assert agg.main([str(seed.parent)]) == 2
    agg_err = capsys.readouterr().err
    assert _main(synthetic) == 2
    err = capsys.readouterr().err
    words = ('holds runs of 2 different configs' if mix == 'config'
             else 'holds runs of one config on 2 different data')
    assert words in agg_err and words in err


def test_report_counts_a_copy_once(synthetic):
    import shutil
    base = synthetic / 'results' / 'geaet-zinc-gin-geanet'
    shutil.copytree(base / '0', base / '7')
    res = report.load_results(str(synthetic / 'results'), 'geaet-zinc-gin-geanet')
    assert [s.seed for s in res.done] == [0, 1, 2]
    assert report.ours_stats(res, 'test', 'mae')[2] == 3


def test_one_run_name_in_two_unicode_spellings_is_refused(synthetic, capsys):
    import shutil
    results = synthetic / 'results'
    shutil.copytree(results / 'my-experiment', results / 'caf\u00e9')
    assert _main(synthetic) == 0
    capsys.readouterr()
    shutil.copytree(results / 'my-experiment', results / 'cafe\u0301')
    assert _main(synthetic) == 2
    err = capsys.readouterr().err
    assert "one name in two Unicode spellings" in err and "'caf\\xe9'" in err


def test_a_nan_metric_gets_no_verdict(synthetic):
    """A mean over seeds with a NaN (an undefined metric) is reported, not
    tested against the paper."""
    base = synthetic / 'results' / 'geaet-zinc-gin-geanet'
    for seed in ('0', '1', '2'):
        best = json.loads((base / seed / 'best.json').read_text())
        stats = [json.loads(ln) for ln in
                 (base / seed / 'test' / STATS_FILE).read_text().splitlines()]
        for rec in (best['test'], stats[-1]):
            rec['mae'] = float('nan')
        (base / seed / 'best.json').write_text(json.dumps(best))
        (base / seed / 'test' / STATS_FILE).write_text(
            ''.join(json.dumps(r) + '\n' for r in stats))
        seal(base / seed)
    _, rows = report.write_report(str(synthetic / 'results'),
                                  str(synthetic / 'run' / 'tables.tsv'), NUMBERS,
                                  repo_root=str(synthetic), curves=False, papers=['geaet'])
    zinc = next(r for r in rows if r.name == 'geaet-zinc-gin-geanet')
    assert zinc.verdict == 'no test: the metric is NaN (undefined) for a seed'
# --------------------------------------------------------------------------- tables and curves
def test_report_writes_csv_and_latex_tables_with_the_best_marked(synthetic):
    from graphgps_ext.tables import latex_escape
    res = synthetic / 'results'
    report.make_report(str(res), str(synthetic / 'run' / 'tables.tsv'), NUMBERS,
                       repo_root=str(synthetic))
    rows = list(csv.DictReader(open(res / 'REPORT.csv')))
    by_config = {r['config']: r for r in rows}
    zinc = by_config['geaet-zinc-gin-geanet']
    assert (zinc['paper'], zinc['table'], zinc['metric'], zinc['seeds']) == (
        'geaet', 'table3', 'mae', '3')
    assert float(zinc['mean']) == pytest.approx(0.22) and float(zinc['std']) == pytest.approx(
        0.0163299, rel=1e-4)
    assert zinc['best'] == '1' and zinc['paper_value'] == '0.193 ± 0.001'
    assert float(by_config['geaet-mnist']['mean']) == pytest.approx(98.5)  # the paper's %
    assert by_config['my-experiment']['table'] == 'other'
    tex = (res / 'REPORT.tex').read_text()
    assert tex.count('\\begin{tabular}') == tex.count('\\end{table}') >= 3
    assert '\\textbf{0.220 $\\pm$ 0.016}' in tex and '\\texttt{geaet-zinc-gin-geanet}' in tex
    assert latex_escape('a_b & 50% #1') == 'a\\_b \\& 50\\% \\#1'


def test_the_best_of_a_group_follows_the_metrics_direction():
    from graphgps_ext.tables import Entry, mark_best
    e = [Entry('p', 't', 'ZINC', m, m, 'mae', 'test', v, 0.0, 3, 'min')
         for m, v in (('a', 0.3), ('b', 0.2), ('c', 0.2))]
    e += [Entry('p', 't', 'MNIST', 'd', 'd', 'accuracy', 'test', 0.9, 0.0, 3, 'max'),
          Entry('p', 't', 'MNIST', 'e', 'e', 'accuracy', 'test', 0.95, 0.0, 3, 'max'),
          Entry('', 'other', 'ZINC', 'f', 'f', 'mae', 'test', 0.1, 0.0, 1, 'min')]
    assert [x.best for x in mark_best(e)] == [False, True, True, False, True, True]


def test_curves_clip_bands_mark_best_epochs_and_overlay(synthetic):
    res = report.load_results(str(synthetic / 'results'), 'geaet-zinc-gin-geanet')
    loss = report.curve(res, 'train', 'loss')
    assert list(loss.epochs) == [0, 1, 2, 3, 4]  # epochs from 0
    assert report.best_epochs(res) == [4, 4, 4]
    assert report.value_range('accuracy') == (0.0, 1.0)
    assert report.value_range('loss') == (0.0, float('inf'))
    assert report.value_range('mae') == (0.0, float('inf'))
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from graphgps_ext.report import Curve, _band
    fig, ax = plt.subplots()
    import numpy as np
    _band(ax, Curve(np.arange(3), np.array([0.9, 0.95, 0.99]), np.array([0.2, 0.1, 0.05])),
          'accuracy', 'C0', 'val')
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.max() <= 1.0 and band.min() >= 0.7 - 1e-9  # clipped at accuracy 1
    plt.close(fig)
    out = report.overlay(str(synthetic / 'results'), ['geaet-zinc-gin-geanet', 'my-experiment'])
    assert out.endswith('overlay_geaet-zinc-gin-geanet_my-experiment.png')
    assert open(out, 'rb').read()[:8] == b'\x89PNG\r\n\x1a\n'
    with pytest.raises(ValueError, match='no results in'):
        report.overlay(str(synthetic / 'results'), ['nothing-here'])
