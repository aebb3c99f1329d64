"""make_loaders: batch size, seeded shuffling, distributed sharding."""
import torch
from torch_geometric.data import Data

from graphgps_ext.loader import DatasetBundle, make_loaders
from graphgps_ext.task import TaskInfo

from .conftest import make_cfg


def _bundle(n=40):
    graphs = [Data(x=torch.full((2, 1), float(i)),
                   edge_index=torch.tensor([[0, 1], [1, 0]]),
                   y=torch.tensor([i])) for i in range(n)]
    task = TaskInfo(name='toy', task='graph', task_type='classification',
                    num_outputs=2, loss='cross_entropy', metric='accuracy',
                    metric_direction='max')
    return DatasetBundle({'train': graphs, 'val': graphs[:8],
                          'test': graphs[8:16]}, task)


def _order(loader):
    return torch.cat([b.y for b in loader]).tolist()


def test_seeded_shuffle(tmp_path):
    cfg = make_cfg(tmp_path)
    cfg.train.batch_size = 8
    cfg.seed = 1
    loaders = make_loaders(cfg, _bundle())
    assert next(iter(make_loaders(cfg, _bundle())['train'])).num_graphs == 8
    a = _order(loaders['train'])
    assert a == _order(make_loaders(cfg, _bundle())['train'])  # same seed
    assert sorted(a) == list(range(40)) and a != list(range(40))
    assert _order(loaders['train']) != a  # next epoch: a new order
    cfg.seed = 2
    assert _order(make_loaders(cfg, _bundle())['train']) != a
    assert _order(loaders['val']) == list(range(8))  # eval not shuffled


def test_distributed_shards(tmp_path):
    cfg = make_cfg(tmp_path)
    cfg.train.batch_size = 4
    shards = [_order(make_loaders(cfg, _bundle(), rank=r, world_size=2)['train'])
              for r in range(2)]
    assert len(shards[0]) == len(shards[1]) == 20
    assert sorted(shards[0] + shards[1]) == list(range(40))
    loaders = make_loaders(cfg, _bundle(), rank=1, world_size=2)
    assert _order(loaders['test']) == list(range(12, 16))  # contiguous shard, no padding
