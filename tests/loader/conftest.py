"""Fixtures of the loader tests: a config with the dataset keys, and the
data sources (:mod:`data_sources`: the shipped samples, and full offline
copies where present) that tests reading real data run over."""
import os

import pytest

from data_sources import SOURCES

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
    from graphgps_ext.config.posenc import encodings_cfg
    from graphgps_ext.config.speed import speed_cfg
    cfg = CfgNode()
    set_cfg(cfg)
    gt_cfg(cfg)
    dataset_cfg(cfg)
    encodings_cfg(cfg)
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


@pytest.fixture(scope='module', params=list(SOURCES))
def source(request):
    """The name of a data source (``samples``, and ``offline`` where
    present): a test using it runs once per source."""
    return request.param


@pytest.fixture
def offline(monkeypatch):
    """Force offline mode (never download, whatever the network)."""
    monkeypatch.setenv('GRAPHGPS_EXT_OFFLINE', '1')
