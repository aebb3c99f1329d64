"""Peptides in the original LRGB layout (dataset.format OGB): the real files
of /work/shared/data/peptides-functional, a fast subset path, a slow full
run, and tiny hand-written folders for the release checks and -struct."""
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
from graphgps_ext.loader.peptides import (STRUCT_TARGETS, VARIANTS,
                                          PeptidesDataset, read_split,
                                          read_table)

from .conftest import copy_shared, make_cfg

FUNC = 'peptides-functional'


@pytest.fixture(scope='module')
def pep_root(tmp_path_factory):
    return copy_shared(tmp_path_factory.mktemp('pep'), FUNC)


def test_full_counts_from_release_files(pep_root):
    # What the full processing yields, read without featurising 15,535
    # molecules (that takes ~60 s: see the slow test below).
    folder = os.path.join(pep_root, FUNC)
    split = read_split(folder, FUNC)
    assert {k: v.numel() for k, v in split.items()} == \
        {'train': 10_873, 'val': 2_331, 'test': 2_331}
    every = torch.cat(list(split.values())).sort().values
    assert torch.equal(every, torch.arange(15_535))
    assert len(read_table(folder, FUNC)) == 15_535


def test_subset_keeps_the_real_split(pep_root):
    cfg = make_cfg(pep_root, **{'dataset.format': 'OGB', 'dataset.name': FUNC,
                                'dataset.max_graphs': 40})
    b = load_dataset(cfg)
    sizes = {k: len(v) for k, v in b.splits.items()}
    assert sizes == {'train': 28, 'val': 7, 'test': 7}  # ceil(40 * n / 15535)
    full = read_split(os.path.join(pep_root, FUNC), FUNC)
    for k, idx in b.split_indices.items():
        assert torch.equal(idx, full[k][:sizes[k]])
    t = b.task
    assert (t.task_type, t.num_outputs, t.loss, t.metric) == \
        ('classification_multilabel', 10, 'bce', 'ap')
    assert (t.node_encoder, t.node_dim, t.edge_encoder, t.edge_dim) == \
        ('Atom', 9, 'Bond', 3)
    assert b.task.extra['full_split_sizes']['train'] == 10_873
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


@pytest.mark.slow
def test_full_processing(pep_root):
    start = time.perf_counter()
    b = load_dataset(make_cfg(pep_root, **{'dataset.format': 'OGB',
                                           'dataset.name': FUNC}))
    assert {k: len(v) for k, v in b.splits.items()} == \
        {'train': 10_873, 'val': 2_331, 'test': 2_331}
    ds = PeptidesDataset(pep_root, FUNC)
    assert ds._data.x.size(0) == 2_344_859
    assert ds._data.edge_index.size(1) / len(ds) == pytest.approx(307.30, abs=0.01)
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


def test_real_file_without_marker_passes_md5(tmp_path):
    root = copy_shared(tmp_path, FUNC)
    os.remove(os.path.join(root, FUNC, VARIANTS[FUNC]['version']))
    ds = PeptidesDataset(root, FUNC, max_graphs=7)
    assert len(ds) == 5 + 2 + 2  # ceil(7 * n_split / 15535) per split
