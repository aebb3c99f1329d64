"""Offline helpers: fast network probe, clear errors, no stdin prompts;
old (Data, slices) processed files load through the one reader."""
import builtins
import time

import pytest
import torch
from torch_geometric.data import Data, InMemoryDataset

from graphgps_ext.loader import offline
from graphgps_ext.loader.safe_pickle import load_file


def test_probe_of_unroutable_host_is_bounded():
    start = time.perf_counter()
    # 192.0.2.0/24 is TEST-NET-1: never routable
    assert offline.network_available('https://192.0.2.1/x.zip', timeout=1.0) is False
    assert time.perf_counter() - start < 2.5


def test_require_files_message(tmp_path, monkeypatch):
    monkeypatch.setenv(offline.OFFLINE_ENV, '1')
    present = tmp_path / 'a.txt'
    present.write_text('x')
    offline.require_files([str(present)], dataset='A', urls=['https://h/a'],
                          folder=str(tmp_path))  # all there: no error
    with pytest.raises(offline.DatasetNotFoundError) as err:
        offline.require_files([str(present), str(tmp_path / 'b.txt')],
                              dataset='B', urls=['https://h/b.zip'],
                              folder=str(tmp_path / 'raw'), how='Unzip it.')
    msg = str(err.value)
    assert 'b.txt' in msg and 'a.txt' not in msg
    assert 'https://h/b.zip' in msg and str(tmp_path / 'raw') in msg
    assert 'Unzip it.' in msg
    assert isinstance(err.value, FileNotFoundError)


def test_offline_switches(monkeypatch):
    from yacs.config import CfgNode
    cfg = CfgNode({'dataset': CfgNode({'offline': False})})
    monkeypatch.delenv(offline.OFFLINE_ENV, raising=False)
    assert not offline.offline_forced(cfg)
    cfg.dataset.offline = True
    assert offline.offline_forced(cfg)
    monkeypatch.setenv(offline.OFFLINE_ENV, '0')
    assert not offline.offline_forced(None)
    monkeypatch.setenv(offline.OFFLINE_ENV, 'true')
    assert offline.offline_forced(None)


def test_no_prompt():
    original = builtins.input
    with offline.no_prompt():
        assert input('This will download 2.00GB. Will you proceed? (y/N)\n') == 'y'
        with pytest.raises(offline.DatasetNotFoundError, match='update'):
            input('Will you update the dataset now? (y/N)\n')
    assert builtins.input is original


def test_old_style_processed_file_loads(tmp_path):
    # OGB / GraphGPS write torch.save((data, slices)): PyG's Data and storage
    # objects, which the one reader builds from their dict states.
    data, slices = InMemoryDataset.collate(
        [Data(x=torch.ones(2, 1), edge_index=torch.tensor([[0], [1]]))] * 2)
    path = tmp_path / 'old.pt'
    torch.save((data, slices), path)
    loaded, loaded_slices = load_file(str(path))
    assert isinstance(loaded, Data) and torch.equal(loaded.x, data.x)
    assert torch.equal(loaded.edge_index, data.edge_index)
    assert loaded_slices.keys() == slices.keys()
