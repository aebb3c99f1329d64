"""load_dataset on real data (ZINC, NCI1: the shipped samples, and full
offline copies where present), task metadata, overrides, encodings hook and
the offline errors."""
import time

import pytest
import torch

from graphgps_ext.loader import DatasetNotFoundError, load_dataset
from graphgps_ext.loader.errors import DataError
from graphgps_ext.loader.offline import OFFLINE_ENV

from data_sources import FACTS, copy_data

from .conftest import make_cfg


@pytest.fixture(scope='module')
def zinc_root(tmp_path_factory, source):
    return copy_data(tmp_path_factory.mktemp('zinc'), 'ZINC', source=source)


@pytest.fixture(scope='module')
def zinc(zinc_root):
    return load_dataset(make_cfg(zinc_root, **{'dataset.format': 'PyG-ZINC',
                                               'dataset.name': 'subset'}))


@pytest.fixture(scope='module')
def nci1_root(tmp_path_factory, source):
    return copy_data(tmp_path_factory.mktemp('nci1'), 'TUDataset', source=source)


def _nci1(root, seed, **kw):
    cfg = make_cfg(root, **{'dataset.format': 'PyG-TUDataset',
                            'dataset.name': 'NCI1'}, **kw)
    cfg.seed = seed
    return load_dataset(cfg)


def _stats(ds):
    nodes = torch.tensor([g.num_nodes for g in ds], dtype=torch.float)
    edges = torch.tensor([g.num_edges / 2 for g in ds], dtype=torch.float)
    y = torch.cat([g.y.view(-1) for g in ds])
    return nodes, edges, y


def test_zinc_stand_in_marked_and_warned_once(zinc_root, zinc, caplog):
    """The shipped train split is a stand-in: data.json says so (from
    ``info``) and the log warns once per load."""
    assert zinc.info['stand_in'] is True
    assert 'STAND-IN' in zinc.info['stand_in_reason']
    with caplog.at_level('WARNING', logger='graphgps_ext'):
        again = load_dataset(make_cfg(zinc_root, **{'dataset.format': 'PyG-ZINC',
                                                    'dataset.name': 'subset'}))
    assert again.info['stand_in'] is True
    assert sum('STAND-IN' in r.getMessage() for r in caplog.records) == 1


def test_zinc_sizes_and_task(zinc, source):
    assert {k: len(v) for k, v in zinc.splits.items()} == FACTS[source]['zinc_sizes']
    assert zinc.split_indices is None  # standard split files
    t = zinc.task
    assert t.name == 'ZINC (subset)'
    assert (t.task, t.task_type, t.num_outputs, t.loss) == \
        ('graph', 'regression', 1, 'l1')
    assert (t.metric, t.metric_direction) == ('mae', 'min')
    assert (t.node_encoder, t.node_num_types) == ('TypeDictNode', 28)
    assert (t.edge_encoder, t.edge_num_types) == ('TypeDictEdge', 4)
    g = zinc.splits['train'][0]
    assert g.x.dtype == torch.long and g.x.dim() == 2 and g.x.size(1) == 1
    assert g.y.shape == (1, 1) and g.y.is_floating_point()


@pytest.mark.parametrize('split', ['val', 'test'])
def test_zinc_val_test_statistics(zinc, source, split):
    # These two splits are (a prefix of) the exact benchmark graphs.
    nodes, edges, lo, hi, mean, std = FACTS[source]['zinc_stats'][split]
    n, e, y = _stats(zinc.splits[split])
    assert n.mean().item() == pytest.approx(nodes, abs=0.005)
    assert e.mean().item() == pytest.approx(edges, abs=0.005)
    assert (int(n.min()), int(n.max())) == (lo, hi)
    assert y.mean().item() == pytest.approx(mean, abs=1e-4)
    assert y.std(unbiased=False).item() == pytest.approx(std, abs=1e-4)


def test_zinc_max_graphs_keeps_proportions(zinc_root):
    b = load_dataset(make_cfg(zinc_root, **{'dataset.format': 'PyG-ZINC',
                                            'dataset.name': 'subset',
                                            'dataset.max_graphs': 120}))
    assert {k: len(v) for k, v in b.splits.items()} == \
        {'train': 100, 'val': 10, 'test': 10}


def test_nci1_split_and_task(nci1_root, source):
    b = _nci1(nci1_root, seed=0)
    sizes = {k: len(v) for k, v in b.splits.items()}
    total, positive = FACTS[source]['nci1_graphs'], FACTS[source]['nci1_positive']
    assert sum(sizes.values()) == total
    for k, share in (('train', 0.8), ('val', 0.1), ('test', 0.1)):
        assert abs(sizes[k] - share * total) <= 1
    idx = b.split_indices
    every = torch.cat([idx['train'], idx['val'], idx['test']])
    assert torch.equal(every.sort().values, torch.arange(total))
    # stratified: both classes in every split, in the overall proportion
    # (within one graph of the split's size)
    for k in ('train', 'val', 'test'):
        frac = torch.cat([g.y for g in b.splits[k]]).float().mean().item()
        assert frac == pytest.approx(positive, abs=max(0.01, 1 / sizes[k]))
    t = b.task
    assert (t.node_encoder, t.node_dim, t.edge_encoder) == ('LinearNode', 37, None)
    assert (t.loss, t.metric, t.metric_direction, t.num_outputs) == \
        ('cross_entropy', 'accuracy', 'max', 2)
    assert b.splits['train'][0].x.shape[1] == 37


def test_nci1_split_depends_on_seed(nci1_root):
    a, a2, b = (_nci1(nci1_root, s).split_indices for s in (0, 0, 1))
    assert all(torch.equal(a[k], a2[k]) for k in a)
    assert not torch.equal(a['test'], b['test'])


def test_overrides(nci1_root):
    b = _nci1(nci1_root, 0, **{'dataset.num_outputs': 5,
                               'dataset.task_type': 'classification_multilabel',
                               'dataset.metrics': ['auroc']})
    assert b.task.num_outputs == 5
    assert b.task.task_type == 'classification_multilabel'
    assert b.task.metrics == ['accuracy', 'auroc']  # metric kept in the list
    cfg = make_cfg(nci1_root, **{'dataset.format': 'PyG-TUDataset',
                                 'dataset.name': 'NCI1', 'metric_best': 'auroc'})
    cfg.model.loss_fun = 'bce'
    t = load_dataset(cfg).task
    assert (t.loss, t.metric, t.metric_direction) == ('bce', 'auroc', 'max')
    assert t.metrics[0] == 'auroc'


def test_precompute_hook_receives_every_part(nci1_root, monkeypatch):
    import graphgps_ext.transform.precompute as transform
    calls = []

    def fake(dataset, cfg, cache_dir):
        calls.append((len(dataset), cache_dir))
        return dataset
    monkeypatch.setattr(transform, 'precompute_encodings', fake)
    b = _nci1(nci1_root, 0, **{'dataset.max_graphs': 100})
    assert sum(len(v) for v in b.splits.values()) == len(calls) * calls[0][0]
    assert calls[0][1].endswith('encodings/all_max100')
    # the saved indices point into the stored dataset: a prefix of each split
    full = _nci1(nci1_root, 0).split_indices
    for k, idx in b.split_indices.items():
        assert torch.equal(idx, full[k][:idx.numel()])
    from torch_geometric.datasets import TUDataset
    stored = TUDataset(f'{nci1_root}/TUDataset', 'NCI1')
    i = int(b.split_indices['val'][3])
    assert torch.equal(b.splits['val'][3].x, stored[i].x)


def test_unknown_format_suggests():
    cfg = make_cfg('/nonexistent', **{'dataset.format': 'PyG-ZINK'})
    with pytest.raises(ValueError, match="did you mean 'PyG-ZINC'"):
        load_dataset(cfg)


@pytest.mark.parametrize('fmt,name,expect', [
    ('PyG-ZINC', 'subset', 'molecules.zip'),
    ('PyG-TUDataset', 'NCI109', 'NCI109.zip'),
    ('PyG-GNNBenchmarkDataset', 'MNIST', 'MNIST_v2.zip'),
    ('PyG-LRGBDataset', 'COCO-SP', 'cocosp.zip'),
    ('OGB', 'peptides-structural', 'peptide_structure_normalized'),
    ('OGB', 'ogbg-molpcba', 'pcba.zip'),
    ('OGB', 'ogbg-code2', 'code2.zip'),
    ('OGB', 'PCQM4Mv2-subset', 'pcqm4m-v2.zip'),
])
def test_missing_data_offline_fails_fast(tmp_path, offline, fmt, name, expect):
    cfg = make_cfg(tmp_path, **{'dataset.format': fmt, 'dataset.name': name})
    start = time.perf_counter()
    with pytest.raises(DatasetNotFoundError) as err:
        load_dataset(cfg)
    assert time.perf_counter() - start < 5
    msg = str(err.value)
    assert expect in msg and str(tmp_path) in msg and 'Missing file' in msg
    assert OFFLINE_ENV in msg


def test_missing_data_without_network_fails_fast(tmp_path, monkeypatch):
    import graphgps_ext.loader.offline as offline
    monkeypatch.delenv(OFFLINE_ENV, raising=False)
    monkeypatch.setattr(offline, 'network_available', lambda url, timeout=2: False)
    cfg = make_cfg(tmp_path, **{'dataset.format': 'PyG-TUDataset',
                                'dataset.name': 'COLLAB'})
    with pytest.raises(DatasetNotFoundError, match='no network connection'):
        load_dataset(cfg)


def test_zinc_full_refuses_a_subset_folder(zinc_root):
    cfg = make_cfg(zinc_root, **{'dataset.format': 'PyG-ZINC',
                                 'dataset.name': 'full'})
    with pytest.raises(DataError, match='220,011'):
        load_dataset(cfg)


def test_fingerprint_is_the_content_actually_read(nci1_root, tmp_path):
    """Equal for the same data from another folder and for every seed's
    random split of it (the seed and dataset.max_graphs are config keys);
    different for one changed label: a run's data identity."""
    import os
    import re
    import shutil

    from graphgps_ext.loader.master import data_fingerprint
    first = _nci1(nci1_root, 0)
    fp = data_fingerprint(first)
    assert re.fullmatch('[0-9a-f]{16}', fp) and first.info['fingerprint'] == fp
    copy = tmp_path / 'copy'
    shutil.copytree(os.path.join(nci1_root, 'TUDataset'), copy / 'TUDataset')
    shutil.rmtree(copy / 'TUDataset' / 'NCI1' / 'processed')  # processed anew
    assert data_fingerprint(_nci1(str(copy), 0)) == fp
    assert data_fingerprint(_nci1(nci1_root, 1)) == fp  # another seed's split
    assert data_fingerprint(_nci1(nci1_root, 0, **{'dataset.max_graphs': 40})) == fp
    labels = copy / 'TUDataset' / 'NCI1' / 'raw' / 'NCI1_graph_labels.txt'
    lines = labels.read_text().splitlines()
    lines[5] = '0' if lines[5].strip() == '1' else '1'
    labels.write_text('\n'.join(lines) + '\n')
    assert data_fingerprint(_nci1(str(copy), 0)) != fp
