"""Offline helpers: fast network probe, clear errors, no stdin prompts,
torch >= 2.6 loading of old (Data, slices) files."""
import builtins
import time

import pytest
import torch
from torch_geometric.data import Data, InMemoryDataset

from graphgps_ext.loader import offline


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
    # OGB / GraphGPS write torch.save((data, slices)); torch >= 2.6 loads with
    # weights_only=True, which needs PyG's storage classes allow-listed.
    data, slices = InMemoryDataset.collate(
        [Data(x=torch.ones(2, 1), edge_index=torch.tensor([[0], [1]]))] * 2)
    path = tmp_path / 'old.pt'
    torch.save((data, slices), path)
    offline.allow_pyg_globals()
    loaded, _ = torch.load(path, weights_only=True)
    assert torch.equal(loaded.x, data.x)
