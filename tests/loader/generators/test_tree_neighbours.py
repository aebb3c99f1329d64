"""TreeNeighbourMatch: exact sizes per r, labels, keys, splits, caching."""
import pytest
import torch

from graphgps_ext.loader.generators.tree_neighbours import (
    TreeNeighbourMatch, generate, num_permutations, tree_structure)

# docs/datasets.md, "Generated datasets" (exact): graphs per r for both variants.
MLPMIXER = {2: 96, 3: 32_000, 4: 64_000, 5: 128_000, 6: 256_000,
            7: 512_000, 8: 640_000}
BOTTLENECK = {2: 96, 3: 8_000, 4: 16_000, 5: 32_000, 6: 32_000, 7: 32_000,
              8: 32_000}


@pytest.mark.parametrize('r', range(2, 9))
def test_dataset_sizes(r):
    assert num_permutations(r, 'mlpmixer') * 2 ** r == MLPMIXER[r]
    assert num_permutations(r, 'bottleneck') * 2 ** r == BOTTLENECK[r]


def _split_tensors(data, slices, r):
    n, k = 2 ** (r + 1) - 1, 2 ** r
    g = slices['y'].numel() - 1
    return data.x.view(g, n, 2), data.y, n, k, g


@pytest.mark.parametrize('r', range(2, 8))
def test_graphs(r):
    data, slices, split = generate(r, max_graphs=5 * 2 ** r)
    x, y, n, k, g = _split_tensors(data, slices, r)
    edges = slices['edge_index'][1:] - slices['edge_index'][:-1]
    assert (slices['x'][1:] - slices['x'][:-1] == n).all()  # 2^(r+1)-1 nodes
    assert (edges == 2 ** (r + 1) - 2).all()                # child -> parent
    template = data.edge_index[:, :edges[0]]
    # a tree rooted at 0: every non-root node has exactly one parent, the
    # parent id is smaller (DFS pre-order), no self-loops
    child, parent = template
    assert torch.equal(child.sort().values, torch.arange(1, n))
    assert (parent < child).all()
    _, leaves = tree_structure(r)
    assert leaves.numel() == k
    # leaves: keys 1..K once each, values a permutation of 1..K
    assert (x[:, leaves, 0] == torch.arange(1, k + 1)).all()
    assert (x[:, leaves, 1].sort(1).values == torch.arange(1, k + 1)).all()
    inner = torch.ones(n, dtype=torch.bool)
    inner[leaves] = False
    inner[0] = False
    assert (x[:, inner] == 0).all() and (x[:, 0, 1] == 0).all()
    # label = value of the leaf with the root's key, shifted to 0..K-1
    value = x[:, leaves, 1].gather(1, (x[:, 0, 0] - 1).view(-1, 1)).view(-1)
    assert torch.equal(y, value - 1)
    # exactly uniform labels
    assert (torch.bincount(y, minlength=k) == g // k).all()
    # within one permutation, graphs differ only in the root key
    block = x[:k]
    assert (block[:, 1:] == block[0, 1:]).all()
    assert torch.equal(block[:, 0, 0], torch.arange(1, k + 1))
    assert data.root_mask.view(g, n)[:, 0].all() and \
        data.root_mask.sum() == g
    # 60/20/20 stratified split, disjoint
    sizes = {s: v.numel() for s, v in split.items()}
    assert sizes == {'train': 3 * k, 'val': k, 'test': k}
    for s, idx in split.items():
        assert (torch.bincount(y[idx], minlength=k) == sizes[s] // k).all()
    assert torch.cat(list(split.values())).unique().numel() == g


def test_full_r3_split_sizes():
    data, slices, split = generate(3)
    assert {s: v.numel() for s, v in split.items()} == \
        {'train': 19_200, 'val': 6_400, 'test': 6_400}
    # r <= 3: the permutations are distinct
    x = data.x.view(-1, 15, 2)[::8]
    _, leaves = tree_structure(3)
    assert x[:, leaves, 1].unique(dim=0).size(0) == 4000


def test_bottleneck_variant():
    data, slices, split = generate(2, variant='bottleneck')
    assert (slices['edge_index'][1:] - slices['edge_index'][:-1] == 13).all()
    loops = data.edge_index[:, :13]
    assert (loops[0] == loops[1]).sum() == 7  # one self-loop per node
    assert {s: v.numel() for s, v in split.items()} == \
        {'train': 76, 'val': 20, 'test': 20}
    assert torch.equal(split['val'], split['test'])  # no validation set


def test_deterministic_and_cached(tmp_path):
    a = TreeNeighbourMatch(str(tmp_path / 'a'), 4, seed=3, max_graphs=200)
    b = TreeNeighbourMatch(str(tmp_path / 'b'), 4, seed=3, max_graphs=200)
    c = TreeNeighbourMatch(str(tmp_path / 'c'), 4, seed=4, max_graphs=200)
    assert len(a) == 12 * 16 and a[0].x.shape == (31, 2)
    assert torch.equal(a._data.x, b._data.x)
    assert all(torch.equal(a.split_idx[k], b.split_idx[k]) for k in a.split_idx)
    assert not torch.equal(a._data.x, c._data.x)
    again = TreeNeighbourMatch(str(tmp_path / 'a'), 4, seed=3, max_graphs=200)
    assert torch.equal(again._data.y, a._data.y)


def test_load_dataset_task(tmp_path):
    from graphgps_ext.loader import load_dataset

    from ..conftest import make_cfg
    cfg = make_cfg(tmp_path, **{'dataset.format': 'synthetic',
                                'dataset.name': 'TreeNeighbourMatch',
                                'dataset.tree_depth': 3,
                                'dataset.max_graphs': 40})
    b = load_dataset(cfg)
    t = b.task
    assert (t.num_outputs, t.head, t.node_encoder, t.metric) == \
        (8, 'root_node', 'MultiTypeNode', 'accuracy')
    assert t.extra['node_type_dims'] == [9, 9] and t.edge_encoder is None
    assert {k: len(v) for k, v in b.splits.items()} == \
        {'train': 24, 'val': 8, 'test': 8}
    g = b.splits['val'][0]
    assert g.y.shape == (1,) and g.root_mask.shape == (15,)
