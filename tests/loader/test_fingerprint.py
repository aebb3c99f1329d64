"""The content fingerprint of the data a run reads
(:mod:`graphgps_ext.loader.fingerprint`): the graphs and splits, not the
folder they come from."""
import os

import torch
from torch_geometric.data import Data

from graphgps_ext.loader import load_dataset
from graphgps_ext.loader.fingerprint import content_fingerprint

from data_sources import copy_data

from .conftest import make_cfg


def _graphs(n=4):
    return [Data(x=torch.full((i + 2, 3), float(i)), edge_index=torch.tensor([[0], [1]]),
                 y=torch.tensor([i % 2])) for i in range(n)]


def test_graphs_and_splits_change_it():
    parts = {'train': _graphs(), 'val': _graphs(2)}
    base = content_fingerprint(parts)
    assert len(base) == 16 and base == content_fingerprint({'val': _graphs(2),
                                                             'train': _graphs()})
    edited = _graphs()
    edited[3].y = torch.tensor([0])
    fewer = _graphs(3)
    other_dtype = _graphs()
    other_dtype[0].x = other_dtype[0].x.double()
    nan = _graphs()
    nan[1].x[0, 0] = float('nan')
    for changed in (edited, fewer, other_dtype, nan, list(reversed(_graphs()))):
        assert content_fingerprint({'train': changed, 'val': _graphs(2)}) != base
    split = {'train': torch.tensor([0, 1]), 'val': torch.tensor([2])}
    assert content_fingerprint(parts, split) != base
    assert content_fingerprint(parts, split) != content_fingerprint(
        parts, {'train': torch.tensor([0, 2]), 'val': torch.tensor([1])})


def test_a_sample_and_a_moved_copy_of_nci1(tmp_path):
    """The loader's fingerprint (``DatasetBundle.info``): the same for the
    same graphs in another folder, for a cached read, for every seed's random
    split and ``dataset.max_graphs`` (config keys of the run's identity);
    another for an edited raw file."""
    here = copy_data(tmp_path / 'here', 'TUDataset')
    moved = copy_data(tmp_path / 'moved', 'TUDataset')

    def fingerprint(root, **keys):
        cfg = make_cfg(root, **{'dataset.format': 'PyG-TUDataset', 'dataset.name': 'NCI1',
                                **keys})
        return load_dataset(cfg).info['fingerprint']
    first = fingerprint(here)
    assert fingerprint(here) == first  # read from the processed cache
    assert fingerprint(moved) == first
    assert fingerprint(here, seed=1) == first
    assert fingerprint(here, **{'dataset.max_graphs': 100}) == first
    labels = os.path.join(moved, 'TUDataset', 'NCI1', 'raw', 'NCI1_graph_labels.txt')
    with open(labels) as f:
        lines = f.read().split('\n')
    lines[0] = '0' if lines[0].strip() == '1' else '1'
    with open(labels, 'w') as f:
        f.write('\n'.join(lines))
    assert fingerprint(moved) != first
