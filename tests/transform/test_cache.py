"""The encoding cache: atomic writes, and damaged entries recomputed with a
warning instead of a crash."""
import logging
import os

import pytest
import torch

import graphgps_ext.transform.precompute as T
from graphgps_ext.transform import precompute_encodings
from graphgps_ext.transform.cache import EncodingCache, check_entry

from test_precompute import random_graphs


def _entry():
    return {'pe_rwse': (torch.rand(5, 3), torch.tensor([0, 2, 5]))}


def test_save_and_load_leave_no_temporary_file(tmp_path):
    cache = EncodingCache(str(tmp_path))
    cache.save('rwse', 'k', _entry())
    assert os.listdir(tmp_path) == ['rwse-k.pt']
    assert torch.equal(cache.load('rwse', 'k')['pe_rwse'][1], torch.tensor([0, 2, 5]))

    class Boom:  # torch.save fails half-way: no partial file remains
        def __reduce__(self):
            raise RuntimeError('disk full')
    with pytest.raises(RuntimeError, match='disk full'):
        cache.save('rwse', 'bad', {'x': Boom()})
    assert os.listdir(tmp_path) == ['rwse-k.pt']


@pytest.mark.parametrize('damage', ['truncate', 'garbage', 'wrong_shape'])
def test_damaged_entry_is_recomputed_with_a_warning(make_cfg, tmp_path, monkeypatch,
                                                    caplog, damage):
    cfg = make_cfg()
    cfg.posenc_RWSE.enable = True
    cfg.posenc_RWSE.kernel.times_func = 'range(1, 4)'
    folder = str(tmp_path / 'enc')
    first = precompute_encodings(random_graphs(), cfg, folder)
    (name,) = os.listdir(folder)
    path = os.path.join(folder, name)
    if damage == 'truncate':
        with open(path, 'r+b') as f:
            f.truncate(os.path.getsize(path) // 2)
    elif damage == 'garbage':
        with open(path, 'wb') as f:
            f.write(b'not a torch file')
    else:
        torch.save({'pe_rwse': (torch.rand(3, 3), torch.tensor([0, 9]))}, path)
    calls = []
    real = T.compute_entries
    monkeypatch.setattr(T, 'compute_entries',
                        lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    # setup_logging (run by other tests) stops propagation to caplog's handler
    monkeypatch.setattr(logging.getLogger('graphgps_ext'), 'propagate', True)
    with caplog.at_level(logging.WARNING, logger='graphgps_ext'):
        again = precompute_encodings(random_graphs(), cfg, folder)
    assert f'encoding cache {path} cannot be used' in caplog.text
    assert 'recomputing it' in caplog.text and len(calls) == 1
    assert torch.equal(first._data.pe_rwse, again._data.pe_rwse)
    check_entry(torch.load(path, weights_only=True))  # rewritten, whole


def test_check_entry():
    check_entry(_entry())
    for bad in ({}, {'a': torch.zeros(2)}, {'a': (torch.zeros(4, 1), torch.tensor([0, 3]))},
                {'a': (torch.zeros(4, 1), torch.tensor([0, 3, 2, 4]))}):
        with pytest.raises(ValueError):
            check_entry(bad)
