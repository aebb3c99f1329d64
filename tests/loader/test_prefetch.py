"""Batches made ahead in a background thread: the loader's batches in its
order, errors raised where they happened, the thread stopped when the
consumer stops, ordinary tensors inside inference mode, and training
that gives the same results with and without it."""
import os
import threading

import pytest
import torch
from torch_geometric.data import Batch

from graphgps_ext.loader.dataloader import graph_loader
from graphgps_ext.loader.pad import Capacities
from graphgps_ext.loader.prefetch import (Prefetcher, made_batches,
                                          prefetch_safe)
from graphgps_ext.transform.precompute import EncodedList

from molecules import molecule
from run_checks import stats


def _loader(shuffle=True, capacities=None):
    data = EncodedList([molecule(5 + (7 * i) % 13, i) for i in range(23)])
    return graph_loader(data, batch_size=4, shuffle=shuffle,
                        capacities=capacities,
                        generator=torch.Generator().manual_seed(0)), data


def _same(a: Batch, b: Batch):
    assert a.keys() == b.keys()
    for key in a.keys():
        if isinstance(a[key], torch.Tensor):
            assert torch.equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


def test_prefetched_batches_are_the_loaders_in_its_order():
    loader, data = _loader()
    caps = Capacities.from_dataset(data, 4)
    for capacities in (None, caps):
        loader, _ = _loader(capacities=capacities)
        torch.manual_seed(1)
        plain = list(loader)
        loader, _ = _loader(capacities=capacities)
        torch.manual_seed(1)
        ahead = list(Prefetcher(loader, torch.device('cpu'), depth=2))
        assert len(ahead) == len(plain) == 6
        for a, b in zip(ahead, plain):
            _same(a, b)


class _Broken:
    def __init__(self, fail_at):
        self.fail_at = fail_at

    def __iter__(self):
        for i in range(5):
            if i == self.fail_at:
                raise ValueError(f'bad batch {i}')
            yield torch.full((2, ), i)

    def __len__(self):
        return 5


def test_an_error_in_the_thread_is_raised_at_its_batch():
    got = []
    with pytest.raises(ValueError, match='bad batch 3'):
        for batch in Prefetcher(_Broken(3)):
            got.append(int(batch[0]))
    assert got == [0, 1, 2]


def test_the_thread_stops_when_the_consumer_stops():
    before = threading.active_count()
    batches = iter(Prefetcher(_Broken(None), depth=1))
    assert int(next(batches)[0]) == 0
    batches.close()  # a consumer that stops early (an error, a break)
    assert threading.active_count() == before


def test_batches_are_ordinary_tensors_inside_inference_mode():
    """Evaluation makes its batches inside ``torch.inference_mode``; they
    are ordinary tensors either way (with and without the thread), as the
    fast-path check's are: compiled code guarded on them serves both."""
    loader, _ = _loader(shuffle=False)
    with torch.inference_mode():
        made = next(made_batches(loader))
        ahead = next(iter(Prefetcher(loader)))
        inside = next(iter(loader))
    assert not made.x.is_inference() and not ahead.x.is_inference()
    assert inside.x.is_inference()  # what the loader alone makes there


def test_a_dataset_with_a_transform_is_not_prefetched():
    loader, data = _loader()
    assert prefetch_safe(loader)
    data.transform = lambda d: d
    plain = torch.utils.data.DataLoader(data, batch_size=2)
    assert not prefetch_safe(plain)


def test_training_with_prefetch_equals_training_without(tiny_run, tiny_cfg,
                                                        tmp_path):
    runs = {}
    for prefetch in (False, True):
        tiny_cfg.out_dir = str(tmp_path / str(prefetch))
        tiny_cfg.train.prefetch = prefetch
        tiny_run.run_seed(tiny_cfg)
        runs[prefetch] = os.path.join(tiny_cfg.out_dir, tiny_cfg.run_name,
                                      str(tiny_cfg.seed))
    for split in ('train', 'val', 'test'):
        assert stats(runs[True], split) == stats(runs[False], split)
