"""Random stratified splits and subsets."""
import torch

from graphgps_ext.loader.splits import contiguous, limit, stratified_split


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
