"""Random stratified splits and subsets; split files and fractions checked."""
import math

import numpy as np
import pytest
import torch

from graphgps_ext.loader.errors import DataCorruptError, DataError
from graphgps_ext.loader.splits import (checked_indices, contiguous, limit,
                                        stratified_split)


def test_stratified_split():
    y = torch.tensor([0] * 600 + [1] * 400)
    s = stratified_split(y, [0.8, 0.1, 0.1], seed=0)
    assert [s[k].numel() for k in ('train', 'val', 'test')] == [800, 100, 100]
    assert torch.cat(list(s.values())).unique().numel() == 1000
    for idx in s.values():
        assert int(y[idx].sum()) * 10 == idx.numel() * 4  # exactly 40 % class 1
    again = stratified_split(y, [0.8, 0.1, 0.1], seed=0)
    other = stratified_split(y, [0.8, 0.1, 0.1], seed=1)
    assert torch.equal(s['val'], again['val'])
    assert not torch.equal(s['val'].sort().values, other['val'].sort().values)


def test_limit_and_contiguous():
    idx = {'train': torch.arange(80), 'val': torch.arange(80, 90),
           'test': torch.arange(90, 100)}
    assert limit(idx, 0) is idx
    small = limit(idx, 20)
    assert [small[k].tolist() for k in ('val', 'test')] == [[80, 81], [90, 91]]
    assert small['train'].numel() == 16
    c = contiguous({'train': 2, 'val': 1, 'test': 2})
    assert [c[k].tolist() for k in ('train', 'val', 'test')] == \
        [[0, 1], [2], [3, 4]]


def test_split_fractions_are_refused_not_rescaled():
    y = torch.tensor([0] * 60 + [1] * 40)
    for bad in ([0.8, 0.8, 0.8], [0.8, 0.0, 0.2], [0.9, 0.1, 0.0],
                [0.8, math.nan, 0.2], [0.8, 0.1], [0.5, 0.3, 0.1]):
        with pytest.raises(ValueError, match='dataset.split'):
            stratified_split(y, bad, seed=0)
    assert sum(v.numel() for v in stratified_split(
        y, [0.6, 0.2, 0.2], seed=0).values()) == 100  # sums to 1 within rounding
    with pytest.raises(DataError, match='cannot split the 4 graphs stratified'):
        stratified_split(torch.tensor([0, 0, 0, 1]), [0.5, 0.25, 0.25], seed=0)


def test_split_files_are_checked():
    good = {'train': np.arange(5), 'valid': torch.arange(5, 7), 'test-dev': [7, 8]}
    got = checked_indices(good, 'split_dict.pt', 'X', 9, names=('train', 'valid'))
    assert got['valid'].dtype == torch.long and got['test-dev'].tolist() == [7, 8]
    for bad, words in (
            (dict(good, train=np.array([0, 1, 7])), "puts index 7 in both its 'train'"),
            (dict(good, valid=torch.tensor([5, 9])), 'beyond the 9 items'),
            (dict(good, valid=np.array([[5, 6]])), 'not a list of integer indices'),
            (dict(good, valid=np.array([5, 5])), 'lists an index twice'),
            (dict(good, valid=np.array([-5])), 'negative indices'),
            ({'train': [0]}, "has no 'valid' split")):
        with pytest.raises(DataCorruptError, match=words) as err:
            checked_indices(bad, 'split_dict.pt', 'X', 9, names=('train', 'valid'))
        assert 'split_dict.pt' in str(err.value)
