"""Shared test fixtures.

- ``sample_data``: copies folders of the shipped real-data samples
  (``tests/data``, see :mod:`data_sources`) into ``tmp_path`` so that
  loaders can write ``processed/``.
- ``tiny_cfg``: a GraphGym config with this project's training keys, for
  unit tests that need no dataset or model modules.
- ``tiny_bundle``: a small learnable graph-classification dataset (graph
  label = majority node colour) with a :class:`TaskInfo`, and ``TinyNet`` a
  small network registered as ``model.type TinyNet``; with them the training
  loop and :func:`graphgps_ext.runs.seed.run_seed` are tested in-process.
- every test starts with the package logger as a fresh process has it (a
  run's ``setup_logging`` stops its propagation, which would hide the records
  of later tests from ``caplog``).
"""
import logging
from types import SimpleNamespace

import pytest
import torch
from torch import nn
from yacs.config import CfgNode as CN

from graphgps_ext.config.gt import gt_cfg
from graphgps_ext.config.posenc import encodings_cfg

from data_sources import copy_data


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'extra_data: uses material that does not ship (full offline '
        "copies of the datasets, GEAET's configs): runs where it is present")


def pytest_collection_modifyitems(config, items):
    # A test run on the full offline data (data_sources.SOURCES) is extra.
    for item in items:
        callspec = getattr(item, 'callspec', None)
        if callspec is not None and callspec.params.get('source') == 'offline':
            item.add_marker(pytest.mark.extra_data)


@pytest.fixture(autouse=True)
def fresh_package_logger():
    log = logging.getLogger('graphgps_ext')
    for handler in list(log.handlers):
        log.removeHandler(handler)
        handler.close()
    log.propagate = True
    log.setLevel(logging.NOTSET)
    yield


@pytest.fixture
def one_thread():
    """One intra-op thread for the test: tiny graphs gain nothing from more
    on shared cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def sample_data(tmp_path):
    """``copy(*names) -> root``: copy the shipped real-data samples
    ``tests/data/<name>`` to a writable ``tmp_path/data`` and return that
    root."""
    return lambda *names: copy_data(tmp_path / 'data', *names)


def make_tiny_cfg(out_dir):
    """GraphGym defaults + the ``gt``, ``dataset_ext``, ``train_ext`` and
    ``speed`` groups (no registry)."""
    from torch_geometric.graphgym.config import set_cfg
    from yacs.config import CfgNode

    from graphgps_ext.config.dataset import dataset_cfg
    from graphgps_ext.config.gt import gt_cfg
    from graphgps_ext.config.speed import speed_cfg
    from graphgps_ext.config.train import train_cfg
    cfg = CfgNode()
    set_cfg(cfg)
    gt_cfg(cfg)
    dataset_cfg(cfg)
    train_cfg(cfg)
    speed_cfg(cfg)
    cfg.out_dir = str(out_dir)
    cfg.run_name = 'tiny'
    cfg.accelerator = 'cpu'
    cfg.model.type = 'TinyNet'
    cfg.train.batch_size = 16
    cfg.train.eval_period = 1
    cfg.optim.optimizer = 'adam'
    cfg.optim.base_lr = 0.01
    cfg.optim.weight_decay = 0.0
    cfg.optim.scheduler = 'none'
    cfg.optim.max_epoch = 4
    cfg.gt.dim_hidden = 16
    return cfg


@pytest.fixture
def tiny_cfg(tmp_path):
    return make_tiny_cfg(tmp_path / 'results')


class TinyNet(nn.Module):
    """Mean-pool the node features, then an MLP with dropout (so that the
    run consumes random numbers, as real models do)."""

    def __init__(self, cfg, task):
        super().__init__()
        dim = cfg.gt.dim_hidden
        self.mlp = nn.Sequential(nn.Linear(task.node_dim, dim), nn.ReLU(),
                                 nn.Dropout(0.2), nn.Linear(dim, task.num_outputs))

    def forward(self, batch):
        from torch_geometric.utils import scatter
        h = scatter(batch.x, batch.batch, dim=0, dim_size=batch.num_graphs,
                    reduce='mean')
        return self.mlp(h), batch.y


def tiny_dataset(num_graphs: int, seed: int):
    """Random graphs with one-hot colour features ``[N, 2]`` (float); the
    label is the majority colour."""
    from torch_geometric.data import Data
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(num_graphs):
        n = int(torch.randint(4, 9, (1,), generator=g))
        p = float(torch.rand(1, generator=g))
        colour = (torch.rand(n, generator=g) < p).long()
        src = torch.arange(n - 1)
        edge_index = torch.stack([torch.cat([src, src + 1]),
                                  torch.cat([src + 1, src])])
        y = (colour.float().mean() > 0.5).long().view(1)
        out.append(Data(x=nn.functional.one_hot(colour, 2).float(),
                        edge_index=edge_index, y=y))
    return out


def tiny_task():
    from graphgps_ext.task import TaskInfo
    return TaskInfo(name='tiny', task='graph', task_type='classification',
                    num_outputs=2, loss='cross_entropy', metric='accuracy',
                    metric_direction='max', metrics=['accuracy', 'f1_macro'],
                    node_encoder='LinearNode', node_dim=2)


def tiny_loaders(cfg, bundle, rank=0, world_size=1, device=None, capacities=None):
    from torch_geometric.loader import DataLoader

    from graphgps_ext.loader.pad import PadCollater
    gen = torch.Generator().manual_seed(cfg.seed)
    loaders = {split: DataLoader(ds, batch_size=cfg.train.batch_size,
                                 shuffle=split == 'train',
                                 generator=gen if split == 'train' else None)
               for split, ds in bundle.splits.items()}
    if capacities is not None:
        for loader in loaders.values():
            loader.collate_fn = PadCollater(loader.collate_fn, capacities)
    return loaders


@pytest.fixture
def tiny_bundle():
    data = tiny_dataset(128, seed=123)
    return SimpleNamespace(
        splits={'train': data[:64], 'val': data[64:96], 'test': data[96:]},
        task=tiny_task(),
        split_indices={'train': torch.arange(64), 'val': torch.arange(64, 96),
                       'test': torch.arange(96, 128)})


@pytest.fixture
def tiny_run(monkeypatch, tiny_bundle):
    """Patch :mod:`graphgps_ext.runs.seed` to use the tiny dataset and TinyNet."""
    import torch_geometric.graphgym.register as gg

    import graphgps_ext.runs.seed as run
    monkeypatch.setitem(gg.network_dict, 'TinyNet', TinyNet)
    monkeypatch.setattr(run, 'load_dataset', lambda cfg: tiny_bundle)
    monkeypatch.setattr(run, 'make_loaders', tiny_loaders)
    return run


@pytest.fixture
def make_cfg():
    """A fresh config with the groups the encodings read (no global state;
    tests/encoder and tests/transform)."""
    def make():
        c = CN()
        c.dataset = CN(dict(node_encoder=False, node_encoder_name='Atom',
                            node_encoder_bn=True, edge_encoder=False,
                            edge_encoder_name='Bond', edge_encoder_bn=True))
        gt_cfg(c)
        encodings_cfg(c)
        c.posenc.progress = False
        return c
    return make
