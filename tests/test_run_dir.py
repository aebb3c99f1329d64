"""``graphgps_ext.run_dir``: the one owner of the results tree's names.

Two parts: the paths the owner gives, and a source check that no other
module of the package (nor ``main.py``) spells one of its names.
"""
import ast
import os

import pytest

import graphgps_ext
from graphgps_ext.run_dir import FINGERPRINT_LINE, Results, RunDir, RunRoot
from graphgps_ext.seed_folder import CHECKED_FILES, RUN_ENTRIES, is_run_entry
from graphgps_ext.train.checkpoint import previous_path

PACKAGE_DIR = os.path.dirname(graphgps_ext.__file__)
REPO_DIR = os.path.dirname(PACKAGE_DIR)
OWNER = os.path.join(PACKAGE_DIR, 'run_dir.py')

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
    assert CHECKED_FILES == ('config.yaml', 'best.json', 'train/stats.json',
                             'val/stats.json', 'test/stats.json')
    assert is_run_entry('events.out.tfevents.1.host') and is_run_entry('ckpt')
    for other in ('lock', '.replacing', 'notes.txt', 'logs'):
        assert not is_run_entry(other)


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
                       'graphgps_ext/run_dir.py (ask RunDir / RunRoot):\n'
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
