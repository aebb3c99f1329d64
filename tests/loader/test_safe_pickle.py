"""Dataset files go through the one reader: a crafted raw file, split file
or PyG processed file is refused unread (exit code 5, the file named) through
every path that reads it -- this project's readers, PyG's and OGB's own
loading (``torch.load``, ``fs.torch_load`` and its ``weights_only=False``
retry, ``pickle.load``) -- and a file or gzip stream that expands far past
its size is refused before the memory is taken."""
import gzip
import os
import pickle
import zipfile

import numpy as np
import pytest
import torch

from graphgps_ext.loader import load_dataset
from graphgps_ext.loader.errors import DataError
from graphgps_ext.loader.safe_pickle import (GZIP_FACTOR, OversizeDataError,
                                             UnsafeDataError, check_file,
                                             guarded, load_file, read_gzip)
from graphgps_ext.safe_load import FLOOR, CorruptPickleError

from .conftest import make_cfg


class Payload:
    """Unpickling it would call ``fn(*args)``: a stand-in for any code."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


@pytest.fixture
def marker(tmp_path):
    """A file that only running the payload creates."""
    path = tmp_path / 'created-by-unpickling'
    yield path
    assert not path.exists(), 'the payload ran'


def test_refusals_are_data_errors_naming_the_file(tmp_path, marker):
    path = tmp_path / 'split.pickle'
    path.write_bytes(pickle.dumps({'train': Payload(open, str(marker), 'w')}))
    with pytest.raises(UnsafeDataError) as err:
        load_file(str(path), 'Peptides')
    message = str(err.value)
    assert message.startswith(f'Peptides: refused to read {path}: it asks for ')
    assert 'could run code' in message and err.value.path == str(path)
    big = tmp_path / 'train.pickle'
    big.write_bytes(pickle.dumps(Payload(bytearray, 2 ** 30)))
    with pytest.raises(OversizeDataError) as err:
        load_file(str(big), 'ZINC')
    assert 'would take the data it builds to 1.0 GB' in str(err.value)
    assert 'could run code' not in str(err.value) and isinstance(err.value, DataError)
    empty = tmp_path / 'val.pickle'
    empty.write_bytes(b'')
    with pytest.raises(CorruptPickleError, match='empty'):
        load_file(str(empty))


def test_guard_routes_every_loader_of_pyg_and_torch(tmp_path, marker):
    """Inside the guard, torch.load (whatever weights_only), PyG's
    fs.torch_load (which retries a refused file with weights_only=False)
    and pickle.load all read through the one reader."""
    from torch_geometric.io import fs
    legacy, zipped, plain = (tmp_path / n for n in ('a.pt', 'b.pt', 'c.pickle'))
    payload = Payload(open, str(marker), 'w')
    torch.save({'x': torch.ones(2), 'p': payload}, legacy,
               _use_new_zipfile_serialization=False)
    torch.save([payload], zipped)
    plain.write_bytes(pickle.dumps(payload))
    original = torch.load, pickle.load
    seen = []
    with guarded('X', on_read=seen.append):
        for path in (legacy, zipped):
            with pytest.raises(UnsafeDataError, match='asks for'):
                torch.load(str(path), weights_only=False)
            with pytest.raises(UnsafeDataError, match='asks for'):
                fs.torch_load(str(path))
        with open(plain, 'rb') as f, pytest.raises(UnsafeDataError, match='asks for'):
            pickle.load(f)
        good = tmp_path / 'good.pt'
        torch.save({'w': torch.arange(3)}, good)
        assert torch.equal(torch.load(str(good))['w'], torch.arange(3))
    assert (torch.load, pickle.load) == original
    assert str(legacy) in seen and str(plain) in seen


def _crafted_legacy(path, payload, good):
    """A legacy torch file shaped like ``good`` whose object holds ``payload``."""
    torch.save([good, payload], path, _use_new_zipfile_serialization=False)


def test_crafted_mnist_v2_is_refused_through_pyg(tmp_path, marker):
    raw = tmp_path / 'GNNBenchmarkDataset' / 'MNIST' / 'raw'
    raw.mkdir(parents=True)
    _crafted_legacy(raw / 'MNIST_v2.pt', Payload(os.system, f'touch {marker}'),
                    {'x': torch.rand(4, 1)})
    with pytest.raises(UnsafeDataError, match='MNIST_v2.pt: it asks for'):
        load_dataset(make_cfg(tmp_path, **{'dataset.format': 'PyG-GNNBenchmarkDataset',
                                           'dataset.name': 'MNIST'}))


def test_crafted_lrgb_train_pt_is_refused_through_pyg(tmp_path, marker):
    raw = tmp_path / 'LRGBDataset' / 'peptides-func' / 'raw'
    raw.mkdir(parents=True)
    for split in ('train', 'val', 'test'):
        _crafted_legacy(raw / f'{split}.pt', Payload(open, str(marker), 'w'),
                        (torch.zeros(2, 9).long(), torch.zeros(2, 3).long(),
                         torch.tensor([[0, 1], [1, 0]]), torch.zeros(1, 10)))
    with pytest.raises(UnsafeDataError, match=r'train.pt: it asks for .*open'):
        load_dataset(make_cfg(tmp_path, **{'dataset.format': 'PyG-LRGBDataset',
                                           'dataset.name': 'Peptides-func'}))


def test_crafted_pcqm_split_dict_is_refused(tmp_path, marker):
    import pandas as pd
    folder = tmp_path / 'pcqm4m-v2'
    (folder / 'raw').mkdir(parents=True)
    pd.DataFrame({'idx': range(4), 'smiles': ['CCO', 'CC', 'CCN', 'CO'],
                  'homolumogap': [1.0, 2.0, 3.0, 4.0]}).to_csv(
        folder / 'raw' / 'data.csv.gz', index=False)
    torch.save({'train': np.arange(2), 'valid': np.arange(2, 3),
                'test-dev': Payload(open, str(marker), 'w')}, folder / 'split_dict.pt',
               _use_new_zipfile_serialization=False)
    open(folder / 'RELEASE_v1.txt', 'w').close()
    with pytest.raises(UnsafeDataError, match='split_dict.pt: it asks for'):
        load_dataset(make_cfg(tmp_path, **{'dataset.format': 'OGB',
                                           'dataset.name': 'PCQM4Mv2-full'}))


def _gzip_bomb(path, nbytes):
    with gzip.open(path, 'wb') as f:
        for _ in range(nbytes >> 20):
            f.write(bytes(1 << 20))


def test_gzip_and_zip_expansion_is_bounded(tmp_path):
    bomb = tmp_path / 'table.csv.gz'
    _gzip_bomb(bomb, FLOOR + (8 << 20))
    size = os.path.getsize(bomb)
    assert FLOOR + GZIP_FACTOR * size < FLOOR + (8 << 20)  # about 70 KB
    with pytest.raises(OversizeDataError, match='gzip file that decompresses to more'):
        check_file(str(bomb), 'X')
    with pytest.raises(OversizeDataError, match='table.csv.gz'):
        read_gzip(str(bomb), 'X')
    archive = tmp_path / 'data.npz'
    with zipfile.ZipFile(archive, 'w', zipfile.ZIP_DEFLATED) as z, \
            z.open('a.npy', 'w') as f:
        for _ in range((FLOOR >> 20) + 8):
            f.write(bytes(1 << 20))
    with pytest.raises(OversizeDataError, match='declaring'):
        check_file(str(archive))
    fine = tmp_path / 'ok.csv.gz'
    with gzip.open(fine, 'wt') as f:
        f.write('a,b\n1,2\n')
    assert check_file(str(fine)) is None and read_gzip(str(fine)) == b'a,b\n1,2\n'
    broken = tmp_path / 'broken.csv.gz'
    broken.write_bytes(fine.read_bytes()[:12])
    assert 'truncated or not gzip data' in check_file(str(broken))
    empty = tmp_path / 'e.txt'
    empty.write_bytes(b'')
    assert check_file(str(empty)) == f'{empty} is empty'
