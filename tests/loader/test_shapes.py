"""The dataset shapes known without data (:mod:`graphgps_ext.loader.shapes`)
equal what the loader reads from the real data, and every dataset they know
builds a model."""
import pytest

from graphgps_ext.loader.shapes import (ShapesUnknown, sample_graphs, spec_of,
                                        task_without_data)

from data_sources import copy_data

from .conftest import make_cfg

FIELDS = ('task', 'task_type', 'num_outputs', 'loss', 'metric', 'metrics',
          'node_encoder', 'node_dim', 'node_num_types', 'edge_encoder',
          'edge_dim', 'edge_num_types', 'head')


@pytest.mark.parametrize('folder,overrides', [
    ('TUDataset', {'dataset.format': 'PyG-TUDataset', 'dataset.name': 'NCI1'}),
    ('peptides-functional', {'dataset.format': 'OGB',
                             'dataset.name': 'peptides-functional',
                             'dataset.max_graphs': 40}),
])
def test_known_shapes_equal_the_loaders(tmp_path, offline, source, folder,
                                       overrides):
    from graphgps_ext.loader import load_dataset
    root = copy_data(tmp_path, folder, source=source)
    cfg = make_cfg(root, **overrides)
    real = load_dataset(cfg).task.to_dict()
    known = task_without_data(cfg).to_dict()
    assert {k: known[k] for k in FIELDS} == {k: real[k] for k in FIELDS}


def test_sample_graphs_are_shaped_like_the_task(tmp_path):
    cfg = make_cfg(tmp_path, **{'dataset.format': 'PyG-ZINC', 'dataset.name': 'subset'})
    task = task_without_data(cfg)
    graphs = sample_graphs(cfg, num=3, seed=1)
    assert [g.num_nodes for g in graphs] == [5, 7, 9]
    assert task.node_num_types == 28 and task.edge_num_types == 4
    assert all(int(g.x.max()) < 28 and int(g.edge_attr.max()) < 4 for g in graphs)
    again = sample_graphs(cfg, num=3, seed=1)
    assert all((a.x == b.x).all() for a, b in zip(graphs, again))


def test_unknown_dataset_needs_its_data(tmp_path):
    cfg = make_cfg(tmp_path, **{'dataset.format': 'PyG-TUDataset',
                                'dataset.name': 'PROTEINS'})
    with pytest.raises(ShapesUnknown, match="'PROTEINS'"):
        spec_of(cfg)
