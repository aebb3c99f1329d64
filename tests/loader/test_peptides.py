"""Peptides in the original LRGB layout (dataset.format OGB): real files (the
shipped sample, and the full release where present), a fast subset path, a
slow full run, and tiny hand-written folders for the release checks and
-struct."""
import ast
import gzip
import os
import pickle
import time

import numpy as np
import pandas as pd
import pytest
import torch

from graphgps_ext.loader import DatasetNotFoundError, load_dataset
from graphgps_ext.loader.errors import DataCorruptError
from graphgps_ext.loader.peptides import (STRUCT_TARGETS, VARIANTS,
                                          PeptidesDataset, md5sum, read_split,
                                          read_table)

from data_sources import FACTS, SOURCES, copy_data

from .conftest import make_cfg

FUNC = 'peptides-functional'


@pytest.fixture(scope='module')
def pep_root(tmp_path_factory, source):
    return copy_data(tmp_path_factory.mktemp('pep'), FUNC, source=source)


def test_full_counts_from_release_files(pep_root, source):
    # What the full processing yields, read without featurising the
    # molecules (15,535 of the release take ~60 s: see the slow test below).
    folder = os.path.join(pep_root, FUNC)
    split = read_split(folder, FUNC)
    sizes = FACTS[source]['peptides_sizes']
    assert {k: v.numel() for k, v in split.items()} == sizes
    every = torch.cat(list(split.values())).sort().values
    assert torch.equal(every, torch.arange(sum(sizes.values())))
    assert len(read_table(folder, FUNC)) == sum(sizes.values())


def test_subset_keeps_the_real_split(pep_root, source):
    cfg = make_cfg(pep_root, **{'dataset.format': 'OGB', 'dataset.name': FUNC,
                                'dataset.max_graphs': 40})
    b = load_dataset(cfg)
    sizes = {k: len(v) for k, v in b.splits.items()}
    # ceil(40 * n_split / n_all) per split
    assert sizes == FACTS[source]['peptides_max40']
    full = read_split(os.path.join(pep_root, FUNC), FUNC)
    for k, idx in b.split_indices.items():
        assert torch.equal(idx, full[k][:sizes[k]])
    t = b.task
    assert (t.task_type, t.num_outputs, t.loss, t.metric) == \
        ('classification_multilabel', 10, 'bce', 'ap')
    assert (t.node_encoder, t.node_dim, t.edge_encoder, t.edge_dim) == \
        ('Atom', 9, 'Bond', 3)
    assert b.task.extra['full_split_sizes'] == FACTS[source]['peptides_sizes']
    # graph 0 of val is csv row full['val'][0], featurised by smiles2graph
    from ogb.utils import smiles2graph
    row = int(full['val'][0])
    df = read_table(os.path.join(pep_root, FUNC), FUNC)
    g, ref = b.splits['val'][0], smiles2graph(df['smiles'][row])
    assert torch.equal(g.x, torch.from_numpy(ref['node_feat']).long())
    assert torch.equal(g.edge_index, torch.from_numpy(ref['edge_index']).long())
    assert g.edge_attr.shape == (g.edge_index.size(1), 3)
    want = torch.tensor(ast.literal_eval(df['labels'][row]), dtype=torch.float)
    assert torch.equal(g.y.view(-1), want)


# The full release takes ~60 s to featurise: slow; the sample is not.
@pytest.mark.parametrize('source', [
    pytest.param(s, marks=pytest.mark.slow) if s == 'offline' else s for s in SOURCES])
def test_full_processing(tmp_path, source):
    root = copy_data(tmp_path, FUNC, source=source)
    start = time.perf_counter()
    b = load_dataset(make_cfg(root, **{'dataset.format': 'OGB',
                                       'dataset.name': FUNC}))
    facts = FACTS[source]
    assert {k: len(v) for k, v in b.splits.items()} == facts['peptides_sizes']
    ds = PeptidesDataset(root, FUNC)
    assert ds._data.x.size(0) == facts['peptides_nodes']
    assert ds._data.edge_index.size(1) / len(ds) == \
        pytest.approx(facts['peptides_edges_per_graph'], abs=0.01)
    print(f'peptides-functional processed in {time.perf_counter() - start:.1f} s')


def _write_tiny(folder, name, smiles, labels, marker=True):
    os.makedirs(os.path.join(folder, 'raw'), exist_ok=True)
    meta = VARIANTS[name]
    df = pd.DataFrame({'smiles': smiles})
    if name == FUNC:
        df['labels'] = [str(list(map(int, row))) for row in labels]
    else:
        for j, col in enumerate(STRUCT_TARGETS):
            df[col] = labels[:, j]
    with gzip.open(os.path.join(folder, 'raw', meta['csv']), 'wt') as f:
        df.to_csv(f)
    n = len(smiles)
    split = {'train': np.arange(n - 2), 'val': np.array([n - 2]),
             'test': np.array([n - 1])}
    with open(os.path.join(folder, meta['split']), 'wb') as f:
        pickle.dump(split, f)
    if marker:
        open(os.path.join(folder, meta['version']), 'w').close()


SMILES = ['CC(=O)O', 'c1ccccc1O', 'CCN(CC)CC', 'OC(=O)C(N)C', 'CCOC(=O)C']


def test_structural_tiny_folder(tmp_path):
    name = 'peptides-structural'
    y = np.random.default_rng(0).normal(size=(5, 11)).astype(np.float32)
    _write_tiny(tmp_path / name, name, SMILES, y)
    b = load_dataset(make_cfg(tmp_path, **{'dataset.format': 'OGB',
                                           'dataset.name': name}))
    assert {k: len(v) for k, v in b.splits.items()} == \
        {'train': 3, 'val': 1, 'test': 1}
    assert (b.task.task_type, b.task.num_outputs, b.task.metric) == \
        ('regression', 11, 'mae')
    assert torch.allclose(b.splits['test'][0].y, torch.from_numpy(y[4:5]))


def test_unknown_file_without_marker_is_refused(tmp_path):
    labels = np.zeros((5, 10))
    _write_tiny(tmp_path / FUNC, FUNC, SMILES, labels, marker=False)
    cfg = make_cfg(tmp_path, **{'dataset.format': 'OGB', 'dataset.name': FUNC})
    with pytest.raises(DatasetNotFoundError, match='md5'):
        load_dataset(cfg)
    # the release marker vouches for the file (GraphGPS semantics)
    open(tmp_path / FUNC / VARIANTS[FUNC]['version'], 'w').close()
    assert len(load_dataset(cfg).splits['train']) == 3


@pytest.mark.parametrize('source', list(SOURCES))
def test_release_file_without_marker_passes_md5(tmp_path, monkeypatch, source):
    root = copy_data(tmp_path, FUNC, source=source)
    os.remove(os.path.join(root, FUNC, VARIANTS[FUNC]['version']))
    csv = os.path.join(root, FUNC, 'raw', VARIANTS[FUNC]['csv'])
    if source == 'samples':  # the sample plays the release: its md5 is the one
        monkeypatch.setitem(VARIANTS[FUNC], 'version', md5sum(csv))
    ds = PeptidesDataset(root, FUNC, max_graphs=7)
    sizes = FACTS[source]['peptides_sizes']
    n = sum(sizes.values())
    assert len(ds) == sum(-(-7 * k // n) for k in sizes.values())


def _tiny_split(folder, split):
    with open(os.path.join(folder, VARIANTS[FUNC]['split']), 'wb') as f:
        pickle.dump(split, f, protocol=2)


@pytest.mark.parametrize('split,words', [
    ({'train': np.array([0, 1, -1]), 'val': np.array([3]), 'test': np.array([4])},
     "negative indices in its 'train' split"),
    ({'train': np.array([0, 1, 2]), 'val': np.array([2]), 'test': np.array([4])},
     "puts index 2 in both its 'train' and 'val' splits"),
    ({'train': np.array([0, 1, 1]), 'val': np.array([3]), 'test': np.array([4])},
     "lists an index twice in its 'train' split"),
    ({'train': np.array([0, 1, 2]), 'val': np.array([3]), 'test': np.array([9])},
     "beyond the 5 items of the data in its 'test' split"),
    ({'train': np.array([0., 1.5]), 'val': np.array([3]), 'test': np.array([4])},
     'not a list of integer indices'),
    ({'train': np.array([0, 1, 2]), 'val': np.array([3])}, "has no 'test' split"),
    ([0, 1, 2], 'not a dict of index arrays'),
])
def test_bad_split_file_is_refused_naming_it(tmp_path, split, words):
    _write_tiny(tmp_path / FUNC, FUNC, SMILES, np.zeros((5, 10)))
    _tiny_split(tmp_path / FUNC, split)
    cfg = make_cfg(tmp_path, **{'dataset.format': 'OGB', 'dataset.name': FUNC})
    with pytest.raises(DataCorruptError) as err:
        load_dataset(cfg)
    assert words in str(err.value) and VARIANTS[FUNC]['split'] in str(err.value)


@pytest.mark.parametrize('cell,words', [
    ('[0, 1, 0, 0, 0, 0, 0, 0, 0, 2]', 'values of 0 or 1'),
    ('[0, 1, 0]', 'values of 0 or 1'),
    ('[0, 1, 0, 0, 0, 0, 0, 0, 0, inf]', 'values of 0 or 1'),
    ('[0, 1, 0, 0, 0, 0, 0, 0, 0, x]', 'are not numbers'),
    ('__import__("os")', 'not a bracketed list'),
    ('[' + '0, ' * 30_000 + '0]', "'labels' cell of 90,003 characters"),
])
def test_bad_label_cells_are_refused_unevaluated(tmp_path, cell, words):
    _write_tiny(tmp_path / FUNC, FUNC, SMILES, np.zeros((5, 10)))
    path = os.path.join(tmp_path, FUNC, 'raw', VARIANTS[FUNC]['csv'])
    df = pd.read_csv(path, index_col=0)
    df.loc[2, 'labels'] = cell
    with gzip.open(path, 'wt') as f:
        df.to_csv(f)
    cfg = make_cfg(tmp_path, **{'dataset.format': 'OGB', 'dataset.name': FUNC})
    with pytest.raises(DataCorruptError) as err:
        load_dataset(cfg)
    assert words in str(err.value) and VARIANTS[FUNC]['csv'] in str(err.value)
    if 'bracketed' in words or 'numbers' in words or '0 or 1' in words:
        assert 'row 2' in str(err.value)


def test_non_finite_struct_target_is_refused_naming_the_row(tmp_path):
    name = 'peptides-structural'
    y = np.zeros((5, 11), dtype=np.float32)
    y[1, 4] = np.inf
    _write_tiny(tmp_path / name, name, SMILES, y)
    with pytest.raises(DataCorruptError, match=r'row 1: the target Inertia_valence_b is inf'):
        load_dataset(make_cfg(tmp_path, **{'dataset.format': 'OGB',
                                           'dataset.name': name}))


def test_a_csv_that_expands_a_thousandfold_is_refused(tmp_path):
    """A small csv.gz that decompresses past its bound: refused before the
    table (or any label cell) is parsed."""
    from graphgps_ext.loader.safe_pickle import OversizeDataError
    from graphgps_ext.safe_load import FLOOR
    _write_tiny(tmp_path / FUNC, FUNC, SMILES, np.zeros((5, 10)))
    path = os.path.join(tmp_path, FUNC, 'raw', VARIANTS[FUNC]['csv'])
    with gzip.open(path, 'wb') as f:
        f.write(b',smiles,labels\n0,CC,"[')
        for _ in range((FLOOR >> 20) + 8):
            f.write(b'0,' * (1 << 19))
        f.write(b'0]"\n')
    assert os.path.getsize(path) < 500_000
    cfg = make_cfg(tmp_path, **{'dataset.format': 'OGB', 'dataset.name': FUNC})
    with pytest.raises(OversizeDataError, match='decompresses to more than'):
        load_dataset(cfg)
