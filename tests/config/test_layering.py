"""The config package only declares keys and their checks: no module of
``graphgps_ext/config/`` imports (at module level or inside a function) from
the layers above it (registry, model, layers, loaders, training, run). It
reads the modules of the package's ground floor beside it: the catalogues
(:mod:`graphgps_ext.branches`, :mod:`graphgps_ext.encodings`, their options
:mod:`graphgps_ext.options`; plain Python) and the metric table
(:mod:`graphgps_ext.metrics`, whose names ``metric_best`` takes). The whole
package's layering is checked by ``tests/test_architecture.py``."""
import ast
import os
import sys

import graphgps_ext.config

CONFIG_DIR = os.path.dirname(graphgps_ext.config.__file__)
# Third-party packages a key declaration may use; the standard library is
# allowed too.
ALLOWED = {'yacs', 'yaml', 'torch'}
# Modules of the package's ground floor that the config groups read.
GROUND = {'graphgps_ext.branches', 'graphgps_ext.encodings', 'graphgps_ext.options',
          'graphgps_ext.metrics'}


def _imports(path: str):
    """``(line, absolute module name)`` of every import in the file."""
    tree = ast.parse(open(path, encoding='utf-8').read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative to the package graphgps_ext.config
                base = ['graphgps_ext', 'config'][:3 - node.level]
                module = '.'.join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            if module == 'graphgps_ext':  # from graphgps_ext import branches
                for alias in node.names:
                    yield node.lineno, f'graphgps_ext.{alias.name}'
                continue
            yield node.lineno, module


def forbidden(path: str):
    out = []
    for line, module in sorted(_imports(path)):
        top = module.split('.')[0]
        if module == 'graphgps_ext.config' or module.startswith('graphgps_ext.config.'):
            continue
        if module in GROUND:
            continue
        if top in ALLOWED or top in sys.stdlib_module_names:
            continue
        out.append(f'{os.path.relpath(path, CONFIG_DIR)}:{line} imports {module}')
    return out


def test_config_imports_nothing_from_the_layers_above():
    files = sorted(os.path.join(CONFIG_DIR, f) for f in os.listdir(CONFIG_DIR)
                   if f.endswith('.py'))
    assert len(files) > 5
    problems = [p for f in files for p in forbidden(f)]
    assert problems == []


def test_the_check_sees_function_level_imports(tmp_path):
    path = tmp_path / 'group.py'
    path.write_text('import os\nfrom graphgps_ext.config import choices\n\n\n'
                    'def f():\n    from graphgps_ext.train.loss import LOSSES\n'
                    '    import torch_geometric\n    return LOSSES\n'
                    'from graphgps_ext import branches, layer\n')
    assert forbidden(str(path)) == [
        f'{os.path.relpath(str(path), CONFIG_DIR)}:6 imports graphgps_ext.train.loss',
        f'{os.path.relpath(str(path), CONFIG_DIR)}:7 imports torch_geometric',
        f'{os.path.relpath(str(path), CONFIG_DIR)}:9 imports graphgps_ext.layer']
