"""Fixtures of the loader tests: a config with the dataset keys, and
writable copies of ``../shared/data`` shared by the tests of a module."""
import os
import shutil

import pytest

# The benchmark data beside the checkout (``../shared/data``, as in CI), or
# wherever GRAPHGPS_EXT_SHARED_DATA points (same rule as tests/conftest.py).
SHARED_DATA = os.environ.get(
    'GRAPHGPS_EXT_SHARED_DATA',
    os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                 os.pardir, 'shared', 'data'))
SLOW = os.environ.get('GRAPHGPS_EXT_SLOW', '') not in ('', '0')


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'slow: minutes-long data processing; run with '
        'GRAPHGPS_EXT_SLOW=1')


def pytest_collection_modifyitems(config, items):
    if SLOW:
        return
    skip = pytest.mark.skip(reason='slow; set GRAPHGPS_EXT_SLOW=1 to run')
    for item in items:
        if 'slow' in item.keywords:
            item.add_marker(skip)


def make_cfg(root, **overrides):
    """GraphGym defaults + the groups the loader reads; ``dataset.dir`` =
    ``root``; ``overrides``: ``{'dataset.name': 'NCI1', ...}``."""
    from torch_geometric.graphgym.config import set_cfg
    from yacs.config import CfgNode

    from graphgps_ext.config.dataset import dataset_cfg
    from graphgps_ext.config.gt import gt_cfg
    from graphgps_ext.config.posenc import posenc_cfg
    from graphgps_ext.config.speed import speed_cfg
    cfg = CfgNode()
    set_cfg(cfg)
    gt_cfg(cfg)
    dataset_cfg(cfg)
    posenc_cfg(cfg)
    speed_cfg(cfg)
    cfg.model.loss_fun = 'auto'   # as graphgps_ext.config.train sets it
    cfg.dataset.dir = str(root)
    for key, value in overrides.items():
        node = cfg
        *path, last = key.split('.')
        for p in path:
            node = node[p]
        node[last] = value
    return cfg


def copy_shared(dst, *names):
    """Copy ``SHARED_DATA/<name>`` folders into ``dst`` (skip if absent)."""
    for name in names:
        src = os.path.join(SHARED_DATA, name)
        if not os.path.exists(src):
            pytest.skip(f'{src} not available')
        shutil.copytree(src, os.path.join(dst, name), dirs_exist_ok=True)
        for base, dirs, files in os.walk(os.path.join(dst, name)):
            for d in dirs:
                os.chmod(os.path.join(base, d), 0o755)
            for f in files:
                os.chmod(os.path.join(base, f), 0o644)
    return str(dst)


@pytest.fixture
def offline(monkeypatch):
    """Force offline mode (never download, whatever the network)."""
    monkeypatch.setenv('GRAPHGPS_EXT_OFFLINE', '1')
