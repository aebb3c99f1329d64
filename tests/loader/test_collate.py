"""FastCollater builds exactly PyG's batches, on the package's real and
generated datasets; unsupported datasets keep PyG's loader."""
import itertools
import logging

import pytest
import torch
from torch_geometric.data import Batch, Data, InMemoryDataset
from torch_geometric.loader import DataLoader

from graphgps_ext.loader import load_dataset, make_loaders
from graphgps_ext.loader.collate import FastCollater, fast_collate_supported
from graphgps_ext.layer.context import host_node_counts
from graphgps_ext.loader.dataloader import graph_loader, placement

from data_sources import copy_data

from .conftest import make_cfg


def assert_same_batch(a: Batch, b: Batch):
    assert type(a).__name__ == type(b).__name__ == 'DataBatch'
    assert sorted(a.keys()) == sorted(b.keys())
    for key in b.keys():
        x, y = a[key], b[key]
        if isinstance(y, torch.Tensor):
            assert x.dtype == y.dtype and x.shape == y.shape, key
            assert torch.equal(x.nan_to_num(0.5), y.nan_to_num(0.5)), key
        else:
            assert x == y, key
    assert a.num_graphs == b.num_graphs
    assert a._slice_dict.keys() == b._slice_dict.keys()
    for key in b._slice_dict:
        assert torch.equal(a._slice_dict[key], b._slice_dict[key]), key
        assert torch.equal(a._inc_dict[key], b._inc_dict[key]), key
    for i in (0, b.num_graphs - 1):  # Batch.get_example reads both dicts
        ga, gb = a.get_example(i), b.get_example(i)
        for key in gb.keys():
            if isinstance(gb[key], torch.Tensor):
                assert torch.equal(ga[key].nan_to_num(0.5), gb[key].nan_to_num(0.5))


def check_dataset(ds, batch_size=7, seed=0):
    assert fast_collate_supported(ds) is None
    collate = FastCollater(ds)
    order = torch.randperm(len(ds), generator=torch.Generator().manual_seed(seed))
    for start in range(0, min(len(ds), 4 * batch_size), batch_size):
        idx = order[start:start + batch_size].tolist()
        assert_same_batch(collate(idx), Batch.from_data_list([ds[i] for i in idx]))


@pytest.fixture(scope='module')
def zinc(tmp_path_factory, source):
    root = copy_data(tmp_path_factory.mktemp('zinc'), 'ZINC', source=source)
    cfg = make_cfg(root, **{'dataset.format': 'PyG-ZINC', 'dataset.name': 'subset',
                            'dataset.max_graphs': 600,
                            'posenc_RWSE.enable': True,
                            'posenc_LapPE.enable': True,
                            'dataset.node_encoder_name': 'TypeDictNode+LapPE+RWSE'})
    return load_dataset(cfg)


def test_zinc_splits_with_encodings(zinc):
    for split in ('train', 'val', 'test'):  # index views of one storage
        ds = zinc.splits[split]
        assert {'pe_rwse', 'pe_lap_vec'} <= set(ds[0].keys())
        check_dataset(ds)


def test_nci1(tmp_path, source):
    root = copy_data(tmp_path, 'TUDataset', source=source)
    bundle = load_dataset(make_cfg(root, **{'dataset.format': 'PyG-TUDataset',
                                            'dataset.name': 'NCI1'}))
    check_dataset(bundle.splits['train'], batch_size=16)


@pytest.mark.parametrize('name', ['PATTERN', 'TreeNeighbourMatch'])
def test_generated(tmp_path, name):
    cfg = make_cfg(tmp_path, **{'dataset.format': 'synthetic', 'dataset.name': name,
                                'dataset.max_graphs': 24, 'dataset.tree_depth': 3})
    check_dataset(load_dataset(cfg).splits['train'], batch_size=5)


class Toy(InMemoryDataset):
    def __init__(self, graphs, transform=None):
        super().__init__(None, transform=transform)
        self.data, self.slices = self.collate(graphs)


def toy_graphs():
    g = torch.Generator().manual_seed(0)
    out = []
    for n in (3, 1, 4, 2, 5):
        out.append(Data(x=torch.randn(n, 2, generator=g),
                        edge_index=torch.randint(0, n, (2, 2 * n), generator=g),
                        pair_index=torch.randint(0, n, (2, n * n), generator=g),
                        pair_attr=torch.randn(n * n, 3, generator=g),
                        y=torch.tensor([float(n)])))
    return out


def test_index_attributes_and_explicit_num_nodes():
    check_dataset(Toy(toy_graphs()), batch_size=3)
    nodes_only = [Data(edge_index=g.edge_index, num_nodes=g.num_nodes, y=g.y)
                  for g in toy_graphs()]
    check_dataset(Toy(nodes_only), batch_size=3)


def test_unsupported_datasets_keep_pyg_loader():
    with_transform = Toy(toy_graphs(), transform=lambda d: d)
    assert 'transform' in fast_collate_supported(with_transform)
    assert 'not an InMemoryDataset' in fast_collate_supported(toy_graphs())
    with pytest.raises(ValueError, match='train.fast_collate False'):
        FastCollater(with_transform)
    assert isinstance(graph_loader(with_transform, batch_size=2), DataLoader)
    assert not isinstance(graph_loader(Toy(toy_graphs()), batch_size=2), DataLoader)
    assert isinstance(graph_loader(Toy(toy_graphs()), False, batch_size=2), DataLoader)


def test_make_loaders_same_batches_either_way(zinc):
    cfg = make_cfg('/unused')
    cfg.train.batch_size = 16
    batches = {}
    for fast in (True, False):
        cfg.train.fast_collate = fast
        loaders = make_loaders(cfg, zinc)
        batches[fast] = {split: list(itertools.islice(loaders[split], 12))
                         for split in ('train', 'val')}
    for split in ('train', 'val'):
        assert len(batches[True][split]) == len(batches[False][split])
        for a, b in zip(batches[True][split], batches[False][split]):
            assert_same_batch(a, b)
            # Both give the host copy of the node counts.
            assert torch.equal(host_node_counts(a), host_node_counts(b))
            assert torch.equal(host_node_counts(a), a.ptr[1:] - a.ptr[:-1])


def test_data_on_the_device_gives_the_same_batches(zinc):
    # train.data_placement device: the storage held on the run's device
    # and batched there by index; on a CPU
    # the batches are the host loader's, in the same order.
    cfg = make_cfg('/unused')
    cfg.train.batch_size = 16
    cpu = torch.device('cpu')
    batches = {}
    for where in ('host', 'device'):
        cfg.train.data_placement = where
        loaders = make_loaders(cfg, zinc, device=cpu)
        batches[where] = {split: list(itertools.islice(loaders[split], 8))
                          for split in ('train', 'test')}
        collaters = [loaders[s].collate_fn for s in ('train', 'val', 'test')]
        if where == 'device':
            assert all(c.device == cpu for c in collaters)
            assert loaders['train'].num_workers == 0
    for split in ('train', 'test'):
        for a, b in zip(batches['device'][split], batches['host'][split]):
            assert_same_batch(a, b)
            assert torch.equal(host_node_counts(a), host_node_counts(b))


def test_placement_auto_is_host_off_cuda(zinc, caplog):
    cfg = make_cfg('/unused')
    assert cfg.train.data_placement == 'auto'
    assert placement(cfg, zinc, torch.device('cpu')) == 'host'
    assert placement(cfg, zinc, None) == 'host'
    cfg.train.data_placement = 'device'
    assert placement(cfg, zinc, torch.device('cpu')) == 'device'
    cfg.train.fast_collate = False  # the host loader cannot batch on a device
    with caplog.at_level(logging.WARNING):
        assert placement(cfg, zinc, torch.device('cpu')) == 'host'
    assert 'train.fast_collate is False' in caplog.text
