"""PATTERN / CLUSTER generators: structure and statistics against
the rules of docs/datasets.md ("Generated datasets") on a few hundred graphs."""
import os

import numpy as np
import pytest
import torch

from graphgps_ext.loader.generators import sbm


def _all(name, n):
    return [g for part in sbm.generate(name, seed=0, max_graphs=n) for g in part]


@pytest.fixture(scope='module')
def pattern():
    return _all('PATTERN', 420)


@pytest.fixture(scope='module')
def cluster():
    return _all('CLUSTER', 360)


def _check_simple_undirected(g):
    ei = g['edge_index']
    assert (ei[0] != ei[1]).all()                       # no self-loops
    n = g['x'].size(0)
    adj = torch.zeros(n, n, dtype=torch.long)
    adj[ei[0], ei[1]] += 1
    assert adj.max() == 1 and torch.equal(adj, adj.t())  # simple, symmetric


def _means(graphs):
    nodes = np.mean([g['x'].size(0) for g in graphs])
    edges = np.mean([g['edge_index'].size(1) / 2 for g in graphs])
    return nodes, edges


def test_pattern(pattern):
    assert len(pattern) == 300 + 60 + 60
    for g in pattern[:20]:
        _check_simple_undirected(g)
        assert g['x'].shape[1] == 3 and (g['x'].sum(1) == 1).all()
    nodes, edges = _means(pattern)
    # expectation under the generator's parameters (sbm.PATTERN): 117.0
    # nodes (sd of this mean ~1.5), 2,935 undirected edges (published 118.9 /
    # 3,039.3)
    assert nodes == pytest.approx(117.0, abs=5)
    assert edges == pytest.approx(2935, rel=0.08)
    y = torch.cat([g['y'] for g in pattern]).float()
    assert 0.13 < y.mean().item() < 0.21           # pattern-node fraction
    base = [int((g['y'] == 0).sum()) for g in pattern]
    assert np.mean(base) == pytest.approx(97.5, abs=2.5)


def test_pattern_instances_are_shared(pattern):
    # graph g of a split uses instance g mod 100: the pattern part of graphs
    # 0 and 100 (train) has the same size and feature multiset
    a, b = pattern[0], pattern[100]
    fa = a['x'][a['y'] == 1].argmax(1).sort().values
    fb = b['x'][b['y'] == 1].argmax(1).sort().values
    assert torch.equal(fa, fb)


def test_cluster(cluster):
    assert len(cluster) == 300 + 30 + 30
    for g in cluster[:20]:
        _check_simple_undirected(g)
        feat = g['x'].argmax(1)
        nz = feat.nonzero().view(-1)
        assert nz.numel() == 6                      # one seed node per class
        assert torch.equal(feat[nz], g['y'][nz] + 1)
    nodes, edges = _means(cluster)
    assert nodes == pytest.approx(117.0, abs=4)   # published 117.2
    assert edges == pytest.approx(2144.8, rel=0.07)  # published 2,150.9
    y = torch.cat([g['y'] for g in cluster])
    frac = torch.bincount(y, minlength=6).float() / y.numel()
    assert torch.allclose(frac, torch.full((6,), 1 / 6), atol=0.02)


def test_deterministic_and_sizes():
    a = sbm.generate('CLUSTER', seed=5, max_graphs=12)
    b = sbm.generate('CLUSTER', seed=5, max_graphs=12)
    c = sbm.generate('CLUSTER', seed=6, max_graphs=12)
    assert [len(s) for s in a] == [10, 1, 1]
    assert torch.equal(a[0][3]['edge_index'], b[0][3]['edge_index'])
    assert [g['x'].size(0) for g in a[0]] != [g['x'].size(0) for g in c[0]]
    assert sbm.split_sizes('PATTERN') == {'train': 10_000, 'val': 2_000,
                                          'test': 2_000}
    assert sbm.split_sizes('CLUSTER') == {'train': 10_000, 'val': 1_000,
                                          'test': 1_000}


def test_load_dataset_stand_in(tmp_path):
    from graphgps_ext.loader import load_dataset

    from ..conftest import make_cfg
    cfg = make_cfg(tmp_path, **{'dataset.format': 'synthetic',
                                'dataset.name': 'CLUSTER',
                                'dataset.max_graphs': 24})
    b = load_dataset(cfg)
    assert b.info['stand_in'] is True
    assert {k: len(v) for k, v in b.splits.items()} == \
        {'train': 20, 'val': 2, 'test': 2}
    assert (b.task.num_outputs, b.task.node_dim) == (6, 7)
    root = sbm.cache_root(str(tmp_path), 'CLUSTER', 11, 24)
    assert os.path.exists(os.path.join(root, 'STAND_IN.txt'))
    # the real benchmark folder is left alone
    assert not (tmp_path / 'GNNBenchmarkDataset').exists()
