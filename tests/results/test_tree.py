"""``graphgps_ext.results.tree``: the one owner of the results tree's
names and formats.

Three parts: the paths the owner gives; its readers and writers (round
trips, the bytes on disk, atomic writes); and source checks that no other
module of the package (nor ``main.py``) spells one of its names or reads or
writes one of its files with format code of its own.
"""
import ast
import csv
import errno
import json
import os

import pytest
import yaml

import graphgps_ext
from graphgps_ext.files import ResultsWriteError
from graphgps_ext.results.seed_folder import CHECKED_FILES, RUN_ENTRIES, is_run_entry
from graphgps_ext.results.tree import (FINGERPRINT_LINE, Results, RunDir, RunFileError,
                                       RunRoot, SearchDir, UnsafePath, confine, is_seed_name,
                                       run_name_path, write_yaml)
from graphgps_ext.train.checkpoint import previous_path

PACKAGE_DIR = os.path.dirname(graphgps_ext.__file__)
REPO_DIR = os.path.dirname(PACKAGE_DIR)
OWNER = os.path.join(PACKAGE_DIR, 'results', 'tree.py')

#: Every name the owner declares (the seed folder's, the run folder's and the
#: results tree's; ``Results.CONFIGS`` is left out: ``configs`` is also the
#: repository's config folder).
OWNED = {
    RunDir.LOCK, RunDir.CONFIG, RunDir.DATA, RunDir.SPLIT_INDICES, RunDir.LOG,
    RunDir.STATS, RunDir.BEST, RunDir.CKPT, RunDir.HISTORY, RunDir.WANDB,
    RunDir.DONE, RunDir.PENDING, RunDir.MANIFEST, RunDir.TRASH,
    'last.pt', 'best.pt', 'last.prev.pt', 'last.corrupt.pt',
    RunRoot.AGG, RunRoot.CURVES, RunRoot.LOGS,
    Results.REPORT, Results.SEARCHES, Results.SLURM, Results.SEARCH,
    Results.SUMMARY, Results.CHOSEN,
}
#: Literals equal to an owned name that do not name a file, with the reason.
NOT_A_FILE = {
    ('config/train.py', 'wandb'): 'the package name (importlib.util.find_spec)',
    ('logger.py', 'wandb'): "a logger's name in the count of replayed epochs",
    ('sweep/slurm.py', 'done'): "the shell keyword closing a 'for' loop",
}


# ----------------------------------------------------------------- paths --
def test_seed_folder_paths(tmp_path):
    run = RunDir.of(tmp_path, 'zinc', 3)
    base = os.path.join(tmp_path, 'zinc', '3')
    assert run.path == base and os.fspath(run) == base and str(run) == base
    assert run.seed == '3' and run.root.path == os.path.join(tmp_path, 'zinc')
    expected = {
        run.lock: 'lock', run.config: 'config.yaml', run.data: 'data.json',
        run.split_indices: 'split_indices.pt', run.log: 'logging.log',
        run.best: 'best.json', run.history: 'resume_history.jsonl',
        run.done: 'done', run.wandb: 'wandb', run.pending: '.replacing',
        run.trash: '.replaced', run.ckpt_dir: 'ckpt',
        run.last_ckpt: 'ckpt/last.pt', run.best_ckpt: 'ckpt/best.pt',
        run.ckpt('last.corrupt'): 'ckpt/last.corrupt.pt',
        RunDir.previous(run.last_ckpt): 'ckpt/last.prev.pt',
        run.stats('val'): 'val/stats.json', run.split_dir('test'): 'test',
        run.events_glob: 'events.out.tfevents.*',
    }
    for path, rel in expected.items():
        assert path == os.path.join(base, rel)
    assert previous_path(run.last_ckpt) == RunDir.previous(run.last_ckpt)
    assert FINGERPRINT_LINE.format('ab12') == '# fingerprint: ab12'


def test_run_folder_paths(tmp_path):
    root = RunRoot(tmp_path / 'zinc')
    base = os.path.join(tmp_path, 'zinc')
    assert root.seed(0).path == os.path.join(base, '0')
    assert root.agg_best('val') == os.path.join(base, 'agg', 'val', 'best.json')
    assert root.agg_stats('test') == os.path.join(base, 'agg', 'test', 'stats.json')
    assert root.agg_split('train') == os.path.join(base, 'agg', 'train')
    assert root.curves == os.path.join(base, 'agg', 'curves.png')
    assert root.seed_log(7) == os.path.join(base, 'logs', 'seed7.log')
    assert RunRoot.seed_log_name('$seed') == 'logs/seed$seed.log'


def test_results_tree_paths(tmp_path):
    res = Results(tmp_path)
    assert res.run('zinc').seed(1).path == os.path.join(tmp_path, 'zinc', '1')
    assert res.report == os.path.join(tmp_path, 'REPORT.md')
    assert res.slurm == os.path.join(tmp_path, '_slurm')
    assert res.search('quick_grid_g') == os.path.join(tmp_path, '_search', 'quick_grid_g')
    assert (Results.SEARCH, Results.SUMMARY, Results.CHOSEN, Results.CONFIGS) == (
        'search.json', 'summary.csv', 'chosen.yaml', 'configs')


def test_entries_and_checked_files():
    assert RUN_ENTRIES == RunDir.ENTRIES and RUN_ENTRIES[0] == 'done'
    assert set(RUN_ENTRIES) == {'done', 'config.yaml', 'logging.log', 'best.json',
                                'data.json', 'split_indices.pt',
                                'resume_history.jsonl', 'train', 'val', 'test',
                                'ckpt', 'wandb'}
    assert CHECKED_FILES == ('config.yaml', 'best.json', 'data.json', 'train/stats.json',
                             'val/stats.json', 'test/stats.json')
    assert is_run_entry('events.out.tfevents.1.host') and is_run_entry('ckpt')
    for other in ('lock', '.replacing', 'notes.txt', 'logs'):
        assert not is_run_entry(other)


# --------------------------------------------------------- formats --
RECORD = {'finished': '2026-01-02T03:04:05', 'epochs': 3, 'best_epoch': 1,
          'identity': {'gt.layers': 4, 'optim.base_lr': 0.001}, 'files': {}}


def _seed(tmp_path) -> RunDir:
    run = RunDir.of(tmp_path, 'zinc', 0)
    os.makedirs(run.path)
    return run


def test_done_round_trip_and_format(tmp_path):
    run = _seed(tmp_path)
    assert run.read_done() is None
    run.write_done(RECORD)
    assert run.read_done() == RECORD
    with open(run.done) as f:  # one indented JSON object
        assert f.read() == json.dumps(RECORD, indent=2) + '\n'
    for text in ('not json', '[1, 2]'):  # by hand: a marker, but no record
        with open(run.done, 'w') as f:
            f.write(text)
        assert run.read_done() == {}


def test_best_round_trip_and_format(tmp_path):
    run = _seed(tmp_path)
    best = {'epoch': 1, 'metric': 'mae', 'mode': 'min', 'val': {'mae': 0.25}}
    assert run.read_best() is None
    run.write_best(best)
    assert run.read_best() == best
    with open(run.best) as f:
        assert f.read() == json.dumps(best, indent=2) + '\n'
    with open(run.best, 'w') as f:
        f.write('{"epoch": 1, "metric')
    with pytest.raises(RunFileError, match='is not valid JSON') as err:
        run.read_best()
    assert err.value.name == 'best.json'


def test_stats_round_trip_and_format(tmp_path):
    run = _seed(tmp_path)
    os.makedirs(run.split_dir('val'))
    assert run.read_stats('val') == []
    records = [{'epoch': e, 'mae': 1.0 / (e + 1), 'lr': 0.001} for e in range(3)]
    for rec in records:
        run.append_stats('val', rec)
    assert run.read_stats('val') == records
    lines = ''.join(json.dumps(r) + '\n' for r in records)  # one object a line
    with open(run.stats('val')) as f:
        assert f.read() == lines
    run.write_stats('val', records[:2])
    with open(run.stats('val')) as f:
        assert f.read() == ''.join(json.dumps(r) + '\n' for r in records[:2])
    with open(run.stats('val'), 'a') as f:  # killed mid-append: dropped
        f.write('\n{"epoch": 2, "m')
    assert run.read_stats('val') == records[:2]
    assert [n for n, _ in run.read_stats_lines('val')] == [1, 2]
    with open(run.stats('val'), 'w') as f:
        f.write('{"epoch": 0}\n\nnot json\n{"epoch": 1}\n')
    with pytest.raises(RunFileError, match='line 3 is not JSON') as err:
        run.read_stats('val')
    assert err.value.name == 'val/stats.json'
    with pytest.raises(ResultsWriteError, match='test/stats.json'):
        run.append_stats('test', records[0])  # no such folder: named


def test_history_round_trip_and_format(tmp_path):
    run = _seed(tmp_path)
    assert run.read_history() == []
    first = {'time': 't', 'after_epoch': 2, 'checkpoint': 'ckpt/last.pt',
             'changes': [{'key': 'optim.base_lr', 'old': 0.001, 'new': 0.0005}]}
    second = {'time': 't2', 'after_epoch': 4, 'checkpoint': tmp_path, 'changes': []}
    run.append_history(first)
    run.append_history(second)  # a value JSON does not know: written as text
    assert run.read_history() == [first, dict(second, checkpoint=str(tmp_path))]
    with open(run.history) as f:
        assert f.read() == (json.dumps(first) + '\n'
                            + json.dumps(second, default=str) + '\n')


def test_config_round_trip_and_fingerprint_line(tmp_path):
    run = _seed(tmp_path)
    assert run.read_fingerprint() is None and run.read_config() == {}
    text = 'dataset:\n  name: ZINC\nseed: 0\n'
    run.write_config(text, 'ab12cd34ef56ab78')
    with open(run.config) as f:
        assert f.read() == '# fingerprint: ab12cd34ef56ab78\n' + text
    assert run.read_fingerprint() == 'ab12cd34ef56ab78'
    assert run.read_config() == {'dataset': {'name': 'ZINC'}, 'seed': 0}
    with open(run.config, 'w') as f:
        f.write('seed: 0\n')  # no fingerprint line
    assert run.read_fingerprint() is None
    with open(run.config, 'w') as f:
        f.write('seed: [0\n')  # not YAML
    assert run.read_config() == {}


def test_data_round_trip_and_format(tmp_path):
    run = _seed(tmp_path)
    assert run.read_data() is None
    info = {'format': 'PyG-ZINC', 'sizes': {'train': 10}, 'stand_in': False}
    run.write_data(info)
    assert run.read_data() == info
    with open(run.data) as f:
        assert f.read() == json.dumps(info, indent=2) + '\n'
    with open(run.data, 'w') as f:
        f.write('{')
    assert run.read_data() is None


def test_lock_record_and_manifest(tmp_path):
    info = {'pid': 12, 'host': 'h', 'started': 's', 'argv': ['main.py']}
    assert RunDir.lock_record(info) == (json.dumps(info) + '\n').encode()
    assert RunDir.parse_lock(RunDir.lock_record(info)) == info
    for data in (b'', b'[1]', b'{"pid": 1', b'\xff'):
        assert RunDir.parse_lock(data) is None
    run = _seed(tmp_path)
    assert run.read_manifest() is None
    run.write_manifest(['done', 'config.yaml'])
    assert run.read_manifest() == ['done', 'config.yaml']
    with open(run.manifest) as f:
        assert f.read() == json.dumps(['done', 'config.yaml'])
    with open(run.manifest, 'w') as f:
        f.write('["done", "conf')  # stopped mid-write
    assert run.read_manifest() is None


def test_agg_round_trip_and_format(tmp_path):
    root = RunRoot(tmp_path / 'zinc')
    assert root.read_agg_best('val') is None and root.read_agg_stats('val') == []
    best = {'mae': 0.2, 'mae_std': 0.01, 'num_seeds': 2, 'seeds': [0, 1]}
    rows = [{'epoch': 0, 'mae': 0.5, 'num_seeds': 2},
            {'epoch': 1, 'mae': 0.2, 'num_seeds': 2}]
    root.write_agg('val', best, rows)
    assert root.read_agg_best('val') == best and root.read_agg_stats('val') == rows
    with open(root.agg_best('val')) as f:  # one line, as GraphGym's
        assert f.read() == json.dumps(best) + '\n'
    with open(root.agg_stats('val')) as f:
        assert f.read() == ''.join(json.dumps(r) + '\n' for r in rows)
    root.remove_agg('val')
    root.remove_agg('val')  # nothing left: no error
    assert os.listdir(root.agg_split('val')) == []
    with open(root.agg_best('val'), 'w') as f:
        f.write('[1]')
    assert root.read_agg_best('val') is None


def test_search_round_trip_and_format(tmp_path):
    search = SearchDir(Results(tmp_path).search('quick_grid_g'))
    assert search.record == os.path.join(search.path, 'search.json')
    assert search.config('quick-l=2') == os.path.join(search.path, 'configs',
                                                      'quick-l=2.yaml')
    record = {'task': 'quick_grid_g', 'points': [{'name': 'quick-l=2'}]}
    search.write_record(record)
    assert search.read_record() == record
    with open(search.record) as f:
        assert f.read() == json.dumps(record, indent=2) + '\n'
    search.write_summary(['rank', 'point', 'flags'], [[1, 'quick-l=2', 'tie warm-up'],
                                                      ['', 'quick-l=3', '']])
    with open(search.summary, newline='') as f:
        assert list(csv.reader(f)) == [['rank', 'point', 'flags'],
                                       ['1', 'quick-l=2', 'tie warm-up'],
                                       ['', 'quick-l=3', '']]
    write_yaml(search.chosen, {'gt': {'layers': 2}, 'a': 1}, 'The chosen point\nof q.')
    with open(search.chosen) as f:
        assert f.read() == '# The chosen point\n# of q.\ngt:\n  layers: 2\na: 1\n'
    assert yaml.safe_load(open(search.chosen)) == {'gt': {'layers': 2}, 'a': 1}


#: Every whole-file writer, with what it writes.
WRITERS = {
    'done': (lambda r: r.write_done(RECORD), lambda r: r.done),
    'best': (lambda r: r.write_best({'epoch': 0}), lambda r: r.best),
    'stats': (lambda r: r.write_stats('val', [{'epoch': 0}]), lambda r: r.stats('val')),
    'config': (lambda r: r.write_config('seed: 1\n', 'ff'), lambda r: r.config),
    'data': (lambda r: r.write_data({'format': 'x'}), lambda r: r.data),
    'manifest': (lambda r: r.write_manifest(['done']), lambda r: r.manifest),
    'agg': (lambda r: r.root.write_agg('val', {'a': 1}, [{'epoch': 0}]),
            lambda r: r.root.agg_best('val')),
    'search': (lambda r: SearchDir(r.path).write_record({'a': 1}),
               lambda r: SearchDir(r.path).record),
    'summary': (lambda r: SearchDir(r.path).write_summary(['a'], [[1]]),
                lambda r: SearchDir(r.path).summary),
}


@pytest.mark.parametrize('name', sorted(WRITERS))
def test_a_failing_write_leaves_the_old_file(tmp_path, monkeypatch, name):
    """Written whole or not at all (graphgps_ext.files): the disk fills up
    during the write; the previous version stays, no temporary file."""
    run = _seed(tmp_path)
    write, path = WRITERS[name]
    os.makedirs(os.path.dirname(path(run)), exist_ok=True)
    with open(path(run), 'w') as f:
        f.write('the old version\n')

    def full(fd):
        raise OSError(errno.ENOSPC, 'No space left on device')

    monkeypatch.setattr(os, 'fsync', full)
    with pytest.raises(ResultsWriteError, match='No space left on device'):
        write(run)
    monkeypatch.undo()
    with open(path(run)) as f:
        assert f.read() == 'the old version\n'
    assert not [n for n in os.listdir(os.path.dirname(path(run))) if '.tmp' in n]
    write(run)  # and with room, the new version
    with open(path(run)) as f:
        assert f.read() != 'the old version\n'


# ----------------------------------------------------------- the jail --
def _outside(tmp_path):
    """A file outside the results tree, and its bytes."""
    victim = tmp_path / 'outside' / 'victim.txt'
    victim.parent.mkdir()
    victim.write_text('not yours\n')
    return victim


@pytest.mark.parametrize('link', ['run', 'seed', 'ckpt', 'file'])
def test_no_path_through_a_link_below_the_root(tmp_path, link):
    """A link anywhere below out_dir (the run folder, the seed folder, a
    sub-folder, the file itself) is never followed: the path is refused,
    naming the link, and nothing outside changes."""
    victim = _outside(tmp_path)
    out = tmp_path / 'results'
    real = tmp_path / 'outside'
    chain = {'run': out / 'zinc', 'seed': out / 'zinc' / '0',
             'ckpt': out / 'zinc' / '0' / 'ckpt', 'file': out / 'zinc' / '0' / 'ckpt' / 'last.pt'}
    chain[link].parent.mkdir(parents=True, exist_ok=True)
    os.symlink(victim if link == 'file' else real, chain[link])
    run = RunDir.of(out, 'zinc', 0)
    with pytest.raises(UnsafePath, match=f'{chain[link]} is a symbolic link'):
        run.last_ckpt
    assert victim.read_text() == 'not yours\n'
    if link == 'file':  # moving or deleting the link itself is allowed
        assert run.entry('ckpt/last.pt') == str(chain['file'])


def test_root_may_be_a_link_and_names_may_not_leave_it(tmp_path):
    (tmp_path / 'scratch').mkdir()
    os.symlink(tmp_path / 'scratch', tmp_path / 'results')
    run = RunDir.of(tmp_path / 'results', 'zinc', 3)
    assert run.done == str(tmp_path / 'results' / 'zinc' / '3' / 'done')
    for name in ('..', '../elsewhere', '/etc', 'a/../../b'):
        with pytest.raises(UnsafePath, match='outside the results root'):
            RunDir.of(tmp_path / 'results', name, 0).done
    assert confine(tmp_path / 'results' / 'x' / '..' / 'y', tmp_path / 'results') == \
        str(tmp_path / 'results' / 'y')


def test_one_folder_for_both_unicode_spellings(tmp_path):
    nfc, nfd = 'caf\u00e9', 'cafe\u0301'
    assert nfc != nfd and run_name_path(nfd) == nfc
    assert RunDir.of(tmp_path, nfd, 0).path == RunDir.of(tmp_path, nfc, 0).path


@pytest.mark.parametrize('names', [['../../../victim.txt'], ['done', '/etc/passwd'],
                                   ['ckpt/../../x'], ['..'], [''], ['done\0x'], [1],
                                   {'done': 1}, 'done', ['not-an-entry']])
def test_a_manifest_holds_names_only(tmp_path, names):
    run = _seed(tmp_path)
    os.makedirs(run.pending)
    with open(run.manifest, 'w') as f:
        json.dump(names, f)
    with pytest.raises(RunFileError, match='not only names of run entries'):
        run.read_manifest()
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        with pytest.raises(ValueError, match='not names of run entries'):
            run.write_manifest(names)


def test_appends_never_follow_a_link(tmp_path):
    victim = _outside(tmp_path)
    run = _seed(tmp_path)
    os.makedirs(run.split_dir('val'))
    os.symlink(victim, os.path.join(run.path, 'val', 'stats.json'))
    with pytest.raises(UnsafePath):
        run.append_stats('val', {'epoch': 0})
    # Below the checks, the append itself opens without following a link.
    from graphgps_ext.results.tree import _append_line
    with pytest.raises(ResultsWriteError):
        _append_line(os.path.join(run.path, 'val', 'stats.json'), '{}')
    assert victim.read_text() == 'not yours\n'


@pytest.mark.parametrize('name', ['best', 'done', 'data', 'stats', 'history', 'agg',
                                  'manifest'])
def test_deep_json_is_refused_not_recursed(tmp_path, name):
    """100,000 nested brackets (a hand-made file) are refused by the one
    JSON reader before the parser recurses; every reader answers as it does
    for any file that is not JSON."""
    run = _seed(tmp_path)
    deep = '[' * 100_000 + ']' * 100_000
    paths = {'best': run.best, 'done': run.done, 'data': run.data,
             'stats': run.stats('val'), 'history': run.history,
             'agg': run.root.agg_stats('val'), 'manifest': run.manifest}
    os.makedirs(os.path.dirname(paths[name]), exist_ok=True)
    with open(paths[name], 'w') as f:
        f.write(deep + '\n' + ('{"epoch": 0}\n' if name in ('stats', 'history', 'agg')
                               else ''))
    if name == 'best':
        with pytest.raises(RunFileError, match='nested 100000 levels deep'):
            run.read_best()
    elif name == 'stats':
        with pytest.raises(RunFileError, match='line 1 is not JSON .nested'):
            run.read_stats('val')
    elif name == 'manifest':
        with pytest.raises(RunFileError, match='nested'):
            run.read_manifest()
    else:
        read = {'done': run.read_done, 'data': run.read_data, 'history': run.read_history,
                'agg': lambda: run.root.read_agg_stats('val')}[name]
        assert read() in ({}, None, [])
    assert RunDir.parse_lock(deep.encode()) is None


def test_seed_folder_names():
    assert [n for n in ('0', '7', '12', '007', '00', '²', '٣', '1e3', '-1', ' 1', '3 ')
            if is_seed_name(n)] == ['0', '7', '12']


# ---------------------------------------------------------- one owner --
def _docstrings(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                yield first.value


def _path_words(text: str):
    """The path components a string literal names: every ``/``-separated
    part of a literal without white space (a name joined into a path), and of
    a shell path (``$out/done``) inside a generated script. Prose (messages,
    help, comments in a script) describes files and is not checked."""
    if not any(c.isspace() for c in text):
        tokens = [text]
    else:
        tokens = [t.strip('"') for t in text.split() if t.startswith(('$', '"$'))]
    for token in tokens:
        yield from token.split('/')


def literal_uses(path: str):
    """``(line, literal)`` of every string literal of ``path`` (docstrings
    left out) that names an owned file."""
    tree = ast.parse(open(path, encoding='utf-8').read(), path)
    docs = {id(c) for c in _docstrings(tree)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docs:
            words = set(_path_words(node.value))
            if words & OWNED or any(w.startswith(RunDir.EVENTS) for w in words) \
                    or any(w.startswith('seed') and w.endswith('.log') for w in words):
                yield node.lineno, node.value


def sources():
    for folder, dirs, files in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        for f in sorted(files):
            if f.endswith('.py'):
                yield os.path.join(folder, f)
    yield os.path.join(REPO_DIR, 'main.py')


def test_no_run_file_name_outside_its_owner():
    found = []
    for path in sources():
        if path == OWNER:
            continue
        rel = os.path.relpath(path, PACKAGE_DIR)
        for line, value in literal_uses(path):
            if (rel, value) not in NOT_A_FILE:
                found.append(f'{os.path.relpath(path, REPO_DIR)}:{line}: {value!r}')
    assert not found, ('results-tree file names spelled outside '
                       'graphgps_ext/results/tree.py (ask RunDir / RunRoot):\n'
                       + '\n'.join(found))


def test_the_owner_declares_them():
    assert {v for _, v in literal_uses(OWNER)} >= {
        'lock', 'config.yaml', 'best.json', 'stats.json', 'done', 'ckpt',
        'agg', 'logs', 'events.out.tfevents', 'REPORT.md', '_search', '_slurm'}


@pytest.mark.parametrize('text, bad', [
    ("os.path.join(run_dir, 'done')", True),
    ("f'{run_dir}/ckpt/last.pt'", True),
    ("'    log=$(dirname \"$out\")/logs/seed$seed.log'", True),
    ("'    if [[ -e $out/done ]]; then'", True),
    ("os.path.join(root, 'agg', split, 'best.json')", True),
    ("glob.glob(os.path.join(run_dir, 'events.out.tfevents.*'))", True),
    ("log.info(\"no 'done' marker: unfinished\")", False),
    ("print('agg/curves.png is drawn by report')", False),
    ("RunDir(run_dir).done", False),
])
def test_the_check_finds_literals(tmp_path, text, bad):
    """The source check is not vacuous: it catches the forms a file name
    took before it had one owner, and leaves prose alone."""
    path = tmp_path / 'module.py'
    path.write_text('"""A module."""\nx = ' + text + '\n')
    assert bool(list(literal_uses(str(path)))) is bad


# ------------------------------------------------- one owner of formats --
#: The classes whose objects and constants name results-tree files.
OWNERS = {'RunDir', 'RunRoot', 'Results', 'SearchDir'}
#: Calls that read or write a file's contents with format code of their
#: own (the owner's methods are the way for results-tree files).
FORMAT_CALLS = {'open', 'write_json', 'write_text', 'read_jsonl', 'atomic_write_bytes',
                'read_yaml', 'read_text', 'write_bytes', 'read_bytes'}
#: Methods that give another owner object (``RunRoot.seed``, ``Results.run``,
#: ``RunDir.root``, ``RunDir.of``).
TO_OWNER = {'seed', 'run', 'root', 'of'}
#: The owners' methods that read or write (what they give is not a path).
FORMAT_METHODS = {n for cls in (RunDir, RunRoot, Results, SearchDir) for n in dir(cls)
                  if n.startswith(('read_', 'write_', 'append_', 'remove_', 'parse_'))
                  } | {'lock_record'}
#: Format calls on a results-tree path outside the owner, with the reason.
FORMAT_ALLOWED = {
    ('report.py', 'write_text'): 'REPORT.md is the Markdown text the report '
                                 'composes (also to --out), written whole',
}


def _is_owner(node, objects) -> bool:
    """Whether ``node`` gives a RunDir / RunRoot / Results / SearchDir."""
    if isinstance(node, ast.Name):
        return node.id in objects
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id in OWNERS
        return (isinstance(func, ast.Attribute) and func.attr in TO_OWNER
                and (_is_owner(func.value, objects)
                     or isinstance(func.value, ast.Name) and func.value.id in OWNERS))
    if isinstance(node, ast.Attribute):
        return node.attr in TO_OWNER and _is_owner(node.value, objects)
    return False


def _names_a_tree_file(node, objects, paths) -> bool:
    """Whether the expression ``node`` is built from a results-tree path: an
    attribute of an owner object (``RunDir(d).best``, ``root.agg_stats(s)``),
    an owner's name constant (``os.path.join(d, Results.SUMMARY)``), or a
    name bound to one of those."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr not in FORMAT_METHODS and (
                _is_owner(sub.value, objects)
                or isinstance(sub.value, ast.Name) and sub.value.id in OWNERS):
            return True
        if isinstance(sub, ast.Name) and sub.id in paths:
            return True
    return False


def _bindings(nodes, objects, paths):
    """Add to ``objects`` / ``paths`` the names that the assignments among
    ``nodes`` bind to an owner object / a results-tree path."""
    assigns = []
    for node in nodes:
        if isinstance(node, ast.Assign):
            targets = [t for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            targets = [node.target] if isinstance(node.target, ast.Name) else []
        else:
            continue
        assigns += [(t.id, node.value) for t in targets]
    while True:
        before = len(objects) + len(paths)
        for name, value in assigns:
            if _is_owner(value, objects):
                objects.add(name)
            elif _names_a_tree_file(value, objects, paths):
                paths.add(name)
        if len(objects) + len(paths) == before:
            return


def _format_call(node) -> str:
    """The name of a :data:`FORMAT_CALLS` call (``os.open``, the lock's
    descriptor, is not one), or ``''``."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id if func.id in FORMAT_CALLS else ''
    if isinstance(func, ast.Attribute) and func.attr in FORMAT_CALLS and not (
            isinstance(func.value, ast.Name) and func.value.id == 'os'):
        return func.attr
    return ''


def format_uses(path: str):
    """``(line, call)`` of every call of :data:`FORMAT_CALLS` in ``path``
    whose first argument is a results-tree path. Names are followed through
    the assignments of the function the call is in (and of the module's top
    level): ``folder = RunDir(d)``, ``path = folder.done``."""
    tree = ast.parse(open(path, encoding='utf-8').read(), path)
    top_objects, top_paths = set(), set()
    _bindings(tree.body, top_objects, top_paths)
    scopes = [(tree, top_objects, top_paths)]
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            objects, paths = set(top_objects), set(top_paths)
            _bindings(ast.walk(node), objects, paths)
            scopes.append((node, objects, paths))
    found = set()
    for scope, objects, paths in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Call) and node.args and _format_call(node) \
                    and _names_a_tree_file(node.args[0], objects, paths):
                found.add((node.lineno, _format_call(node)))
    yield from sorted(found)


def test_no_run_file_format_outside_its_owner():
    found, allowed = [], set()
    for path in sources():
        if path == OWNER:
            continue
        rel = os.path.relpath(path, PACKAGE_DIR)
        for line, call in format_uses(path):
            if (rel, call) in FORMAT_ALLOWED:
                allowed.add((rel, call))
            else:
                found.append(f'{os.path.relpath(path, REPO_DIR)}:{line}: {call}(...)')
    assert allowed == set(FORMAT_ALLOWED), 'an exception no longer needed'
    assert not found, ('results-tree files read or written outside '
                       'graphgps_ext/results/tree.py (add a method to RunDir / RunRoot / '
                       'SearchDir and call it):\n' + '\n'.join(found))


@pytest.mark.parametrize('text, bad', [
    ("with open(RunDir(run_dir).done) as f:\n    done = json.load(f)", True),
    ("write_json(RunDir(run_dir).best, best)", True),
    ("folder = RunDir(run_dir)\nwrite_text(folder.config, FP + text)", True),
    ("path = RunRoot(root).agg_stats(split)\nrows = read_jsonl(path)", True),
    ("f = open(RunRoot(root).seed(3).stats('val'), 'a')", True),
    ("run = Results(d).run('zinc')\nwrite_text(run.agg_best('val'), text)", True),
    ("write_text(os.path.join(search_dir, Results.SUMMARY), text)", True),
    ("def f(run_dir):\n    p = RunDir.of(o, n, s).history\n    open(p, 'a')", True),
    ("RunDir(run_dir).write_done(record)", False),
    ("done = RunRoot(root).seed(3).read_done()", False),
    ("with open(cfg_file) as f:\n    text = f.read()", False),
    ("cfg = load_cfg(RunDir(run_dir).config, [])", False),
    ("rec = SearchDir(d).read_record()\nbase = read_yaml(rec['base'])", False),
])
def test_the_check_finds_format_code(tmp_path, text, bad):
    """The source check is not vacuous: it catches the ways the results
    files were read and written before their formats had one owner, and
    leaves the owner's methods and other files alone."""
    path = tmp_path / 'module.py'
    path.write_text('"""A module."""\n' + text + '\n')
    assert bool(list(format_uses(str(path)))) is bad
