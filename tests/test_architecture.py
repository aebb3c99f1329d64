"""The package's import graph follows its layout (README, "Layout").

Every module of ``graphgps_ext`` belongs to a *unit* (a sub-package or a
top-level module) and every unit to one of four parts, each importing only
from its own part and the parts below it:

``foundation``
    key declarations and checks (``config/``), the catalogues of branches
    and encodings with their options, task descriptions, metrics, atomic
    file writes, the reader of pickled files: plain facts every other part
    reads.
``library``
    the model library (layers, encoders, heads, the network, structural
    encodings), usable from plain PyG; its ``from_cfg`` class methods are the
    only bridge to a config.
``experiment``
    registration, running a config's seeds (``runs/``: config loading, seed
    lists, one seed's run, a stack of seeds), datasets, training, the
    results tree and what a seed's results are (``results/``), distribution,
    logging, foreign configs.
``tools``
    the commands: launcher and searches, aggregation, report, benchmarks,
    attention pictures, ``--dry-run``.

Imports inside functions count too. Between units there is no cycle, and
between modules neither (``from graphgps_ext.config import x`` imports the
package's ``__init__``, ``from graphgps_ext.config import rules`` the module
``rules``).
"""
import ast
import os

import pytest

import graphgps_ext

PACKAGE_DIR = os.path.dirname(graphgps_ext.__file__)

#: part -> its units, lowest part first.
PARTS = {
    'foundation': ('graphgps_ext', 'config', 'options', 'branches', 'encodings',
                   'files', 'metrics', 'safe_load', 'task'),
    'library': ('layer', 'encoder', 'head', 'network', 'transform'),
    'experiment': ('register', 'runs', 'compat', 'loader', 'train', 'results', 'dist',
                   'logger'),
    'tools': ('sweep', 'agg', 'report', 'tables', 'bench', 'viz', 'dry_run'),
}
LEVEL = {unit: i for i, units in enumerate(PARTS.values()) for unit in units}
PART_OF = {unit: part for part, units in PARTS.items() for unit in units}


def module_files(root: str = PACKAGE_DIR):
    """``(module name, path)`` of every ``.py`` file below ``root``."""
    base = os.path.dirname(root)
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        for f in sorted(files):
            if f.endswith('.py'):
                path = os.path.join(folder, f)
                name = os.path.relpath(path, base)[:-3].replace(os.sep, '.')
                yield name.removesuffix('.__init__'), path


def imports(module: str, path: str):
    """``(line, absolute module name)`` of every ``graphgps_ext`` import."""
    tree = ast.parse(open(path, encoding='utf-8').read(), path)
    package = module if path.endswith('__init__.py') else module.rpartition('.')[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split('.')
                base = parts[:len(parts) - node.level + 1]
                names = ['.'.join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module]
            if names == ['graphgps_ext']:  # from graphgps_ext import dist
                names = [f'graphgps_ext.{alias.name}' for alias in node.names]
        else:
            continue
        for name in names:
            if name == 'graphgps_ext' or name.startswith('graphgps_ext.'):
                yield node.lineno, name


def module_imports(module: str, path: str, modules):
    """``(line, module)`` of every import of a module of ``modules`` (a
    name imported from a package that is itself a module counts as that
    module)."""
    tree = ast.parse(open(path, encoding='utf-8').read(), path)
    package = module if path.endswith('__init__.py') else module.rpartition('.')[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split('.')
                base = '.'.join(parts[:len(parts) - node.level + 1]
                                + ([node.module] if node.module else []))
            else:
                base = node.module
            targets = [f'{base}.{alias.name}' if f'{base}.{alias.name}' in modules
                       else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # a name inside a module
                target = target.rpartition('.')[0]
            if target and target != module:
                yield node.lineno, target


def module_graph(root: str = PACKAGE_DIR):
    """``{(importing module, imported module): ['module:line', ...]}``."""
    files = dict(module_files(root))
    edges = {}
    for module, path in files.items():
        for line, target in module_imports(module, path, files):
            edges.setdefault((module, target), []).append(f'{module}:{line}')
    return edges


def unit_of(module: str) -> str:
    """``graphgps_ext.loader.sources`` -> ``loader``; the package's own
    ``__init__`` (and names such as ``__version__``) -> ``graphgps_ext``."""
    parts = module.split('.')
    return parts[0] if len(parts) == 1 or parts[1].startswith('__') else parts[1]


def unit_graph(root: str = PACKAGE_DIR):
    """``{(importing unit, imported unit): ['module:line', ...]}``."""
    edges = {}
    for module, path in module_files(root):
        for line, name in imports(module, path):
            a, b = unit_of(module), unit_of(name)
            if a != b:
                edges.setdefault((a, b), []).append(f'{module}:{line}')
    return edges


def upward_imports(edges):
    """Imports from a lower part into a higher one, and units of no part."""
    out = []
    for (a, b), where in sorted(edges.items()):
        for unit in (a, b):
            if unit not in LEVEL:
                out.append(f"unit '{unit}' is in no part: add it to PARTS and "
                           "to the README layout")
        if a in LEVEL and b in LEVEL and LEVEL[a] < LEVEL[b]:
            out.append(f'{PART_OF[a]} {a} imports {PART_OF[b]} {b} '
                       f"({', '.join(where)})")
    return sorted(set(out))


def cycles(edges):
    """The strongly connected components of more than one unit (Tarjan)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_every_unit_is_in_one_part():
    units = {unit_of(m) for m, _ in module_files()}
    assert units - set(LEVEL) == set()
    assert len(LEVEL) == sum(len(u) for u in PARTS.values())


def test_no_import_runs_up_the_parts():
    assert upward_imports(unit_graph()) == []


def test_no_import_cycle_between_units():
    assert cycles(unit_graph()) == []


def test_no_import_cycle_between_modules():
    assert cycles(module_graph()) == []


def test_the_library_never_reads_graphgyms_global_config():
    """The library takes its config as an argument (``from_cfg(cfg, ...)``)."""
    found = []
    for module, path in module_files():
        if PART_OF.get(unit_of(module)) != 'library':
            continue
        text = open(path, encoding='utf-8').read()
        if 'graphgym.config import cfg' in text or 'from torch_geometric.graphgym import cfg' in text:
            found.append(module)
    assert found == []


@pytest.fixture
def toy_package(tmp_path):
    """A package with a cycle (``a`` <-> ``b``, via a function-level import)
    and a library module that imports a tool."""
    root = tmp_path / 'graphgps_ext'
    (root / 'layer').mkdir(parents=True)
    (root / '__init__.py').write_text('')
    (root / 'layer' / '__init__.py').write_text('from .. import report\n')
    (root / 'report.py').write_text('def f():\n    from graphgps_ext.sweep import x\n')
    (root / 'sweep').mkdir()
    (root / 'sweep' / '__init__.py').write_text('from graphgps_ext.report import f\n')
    return str(root)


def test_the_checks_see_cycles_and_upward_imports(toy_package):
    edges = unit_graph(toy_package)
    assert edges == {('layer', 'report'): ['graphgps_ext.layer:1'],
                     ('report', 'sweep'): ['graphgps_ext.report:2'],
                     ('sweep', 'report'): ['graphgps_ext.sweep:1']}
    assert cycles(edges) == [['report', 'sweep']]
    assert upward_imports(edges) == [
        'library layer imports tools report (graphgps_ext.layer:1)']


def test_the_module_check_sees_a_cycle_inside_a_unit(tmp_path):
    """Two modules of one package that import each other (one inside a
    function), and a submodule imported by name from its package."""
    root = tmp_path / 'graphgps_ext'
    (root / 'config').mkdir(parents=True)
    (root / '__init__.py').write_text('')
    (root / 'config' / '__init__.py').write_text('from .rules import x\n')
    (root / 'config' / 'rules.py').write_text(
        'x = 1\n\n\ndef f():\n    from graphgps_ext.config import groups\n')
    (root / 'config' / 'groups.py').write_text('from graphgps_ext.config.rules import x\n')
    edges = module_graph(str(root))
    assert edges == {('graphgps_ext.config', 'graphgps_ext.config.rules'):
                     ['graphgps_ext.config:1'],
                     ('graphgps_ext.config.rules', 'graphgps_ext.config.groups'):
                     ['graphgps_ext.config.rules:5'],
                     ('graphgps_ext.config.groups', 'graphgps_ext.config.rules'):
                     ['graphgps_ext.config.groups:1']}
    assert cycles(edges) == [['graphgps_ext.config.groups', 'graphgps_ext.config.rules']]
