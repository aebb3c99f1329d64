"""Dataset declarations (:mod:`graphgps_ext.loader.datasets`): one entry per
dataset from which the name checks, the task specs and the dry-run shapes
derive; a toy dataset added by one family file and one list line is read,
checked and shaped like the built-in ones."""
import pytest
import torch

from graphgps_ext.loader import datasets, shapes, sources
from graphgps_ext.loader.datasets import Dataset, Format

from .conftest import make_cfg

FIELDS = ('task', 'task_type', 'num_outputs', 'loss', 'metric', 'metrics',
          'node_encoder', 'node_dim', 'node_num_types', 'edge_encoder',
          'edge_dim', 'edge_num_types', 'head')


def test_every_declaration_is_complete():
    table = datasets.datasets()
    formats = datasets.formats()
    assert len(formats) >= 6
    for name, fmt in formats.items():
        assert callable(datasets.reader(name)), name
    for key, ds in table.items():
        spec = ds.spec
        assert {'task', 'task_type', 'num_outputs', 'loss', 'metric', 'metrics',
                'head'} <= set(spec), key
        assert spec['metric'] in spec['metrics'], key
    # the task of a name is found in the format that reads it, aliases included
    assert datasets.find('OGB', 'peptides-functional').key == 'peptides-func'
    assert datasets.find('PyG-LRGBDataset', 'PEPTIDES-FUNC').key == 'peptides-func'
    assert datasets.find('PyG-TUDataset', 'PROTEINS').key == 'TU'
    assert datasets.find('PyG-TUDataset', 'PROTEINS', any_name=False) is None
    assert datasets.find('OGB', 'ogbg-molhiv') is None  # task from the data
    assert datasets.find('nope', 'ZINC') is None


def test_output_counts_are_declared_once(tmp_path):
    """The dry-run targets take their width from the declared spec."""
    for fmt, name, width in [('PyG-LRGBDataset', 'Peptides-func', 10),
                             ('PyG-LRGBDataset', 'Peptides-struct', 11),
                             ('OGB', 'ogbg-molpcba', 128)]:
        cfg = make_cfg(tmp_path, **{'dataset.format': fmt, 'dataset.name': name})
        assert datasets.find(fmt, name).spec['num_outputs'] == width
        assert shapes.sample_graphs(cfg, 1)[0].y.shape == (1, width)
    for name, classes in [('PascalVOC-SP', 21), ('COCO-SP', 81)]:
        cfg = make_cfg(tmp_path, **{'dataset.format': 'PyG-LRGBDataset',
                                    'dataset.name': name})
        assert shapes.task_without_data(cfg).num_outputs == classes
    cfg = make_cfg(tmp_path, **{'dataset.format': 'synthetic',
                                'dataset.name': 'TreeNeighbourMatch',
                                'dataset.tree_depth': 3})
    task = shapes.task_without_data(cfg)
    assert task.num_outputs == 8 and task.extra['node_type_dims'] == [9, 9]


def test_declaring_twice_is_refused(monkeypatch, tmp_path):
    (tmp_path / 'twice_family.py').write_text(
        'from graphgps_ext.loader.datasets import Dataset\n'
        "DATASETS = [Dataset('ZINC', {})]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(datasets, 'FAMILIES', datasets.FAMILIES + ['twice_family'])
    with pytest.raises(ValueError, match="'ZINC' is declared twice"):
        datasets.datasets()


TOY = '''
"""A toy family: rings of 4 to 9 nodes, graph label = size is even."""
import torch
from torch_geometric.data import Data, InMemoryDataset

from graphgps_ext.loader.datasets import GRAPH_CLASSIFICATION, Dataset, Format
from graphgps_ext.loader.datasets.graphs import graph, one_hot
from graphgps_ext.loader.sources import Source

FORMATS = [Format('toy', 'toy_family:read')]


def ring(gen, n, cfg, outputs):
    return graph(n, one_hot(gen, n, 3), None, torch.tensor([n % outputs]))


DATASETS = [Dataset('toy-rings', dict(GRAPH_CLASSIFICATION, num_outputs=2,
                                      node_encoder='LinearNode', edge_encoder=None),
                    names={'toy': ('rings', 'Rings')}, graph=ring)]


class Rings(InMemoryDataset):
    def __init__(self, graphs):
        super().__init__()
        self.data, self.slices = self.collate(graphs)


def read(cfg):
    gen = torch.Generator().manual_seed(0)
    graphs = [ring(gen, 4 + i % 6, cfg, 2) for i in range(30)]
    split = {'train': torch.arange(20), 'val': torch.arange(20, 25),
             'test': torch.arange(25, 30)}
    return Source({'all': Rings(graphs)}, split, str(cfg.dataset.dir), 'toy-rings')
'''


@pytest.fixture
def toy_family(tmp_path, monkeypatch):
    """Adding a dataset: its family file and one line in FAMILIES."""
    (tmp_path / 'toy_family.py').write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(datasets, 'FAMILIES', datasets.FAMILIES + ['toy_family'])


def test_a_toy_dataset_is_one_file_and_one_line(toy_family, tmp_path):
    from graphgps_ext.loader import load_dataset
    cfg = make_cfg(tmp_path, **{'dataset.format': 'toy', 'dataset.name': 'rings'})
    # name checks
    sources.check_dataset(cfg)
    assert sources.dataset_names('toy') == ['rings', 'Rings']
    with pytest.raises(ValueError, match="did you mean 'rings'"):
        sources.check_dataset(make_cfg(tmp_path, **{'dataset.format': 'toy',
                                                    'dataset.name': 'ring'}))
    with pytest.raises(ValueError, match="did you mean 'toy'"):
        sources.check_dataset(make_cfg(tmp_path, **{'dataset.format': 'tyo'}))
    # the whole config check of a run, and --dry-run's model from its shapes
    from graphgps_ext.config import ConfigError
    from graphgps_ext.dry_run import check
    from graphgps_ext.runs.config import load_cfg
    opts = ['dataset.format', 'toy', 'dataset.name', 'rings', 'dataset.dir', str(tmp_path)]
    assert load_cfg(None, opts).dataset.format == 'toy'
    with pytest.raises(ConfigError, match="unknown dataset.format 'tyo'; did you mean 'toy'"):
        load_cfg(None, ['dataset.format', 'tyo'])
    dry = check(None, opts)
    assert dry.task.loss == 'cross_entropy' and dry.params > 0
    # the task spec without data, and the dry-run shapes
    assert sources.spec_of(cfg)['loss'] == 'cross_entropy'
    known = shapes.task_without_data(cfg).to_dict()
    assert [g.num_nodes for g in shapes.sample_graphs(cfg, 2)] == [5, 7]
    # read by the loader: the same task
    bundle = load_dataset(cfg)
    assert {k: len(v) for k, v in bundle.splits.items()} == {
        'train': 20, 'val': 5, 'test': 5}
    real = bundle.task.to_dict()
    assert {k: known[k] for k in FIELDS} == {k: real[k] for k in FIELDS}
    assert bool((bundle.splits['train'][0].y < 2).all())
