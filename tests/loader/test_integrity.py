"""Data errors: truncated or corrupt raw files give one clear paragraph and no
cache; processed data is rebuilt when the raw files change or the cache is
damaged; the ZINC stand-in is recognised; ``main.py`` exits with 5."""
import io
import logging
import os
import subprocess
import sys

import pytest
import torch
from torch_geometric.data import Data, InMemoryDataset

from graphgps_ext.loader import load_dataset
from graphgps_ext.loader.errors import DataCorruptError, DatasetNotFoundError
from graphgps_ext.loader.integrity import (STAMP, ProcessedCache, RawFiles,
                                           StorageError, check_storage,
                                           sha1_of)
from graphgps_ext.loader.sources import zinc_stand_in

from data_sources import FACTS, copy_data

from .conftest import make_cfg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOGGER = 'graphgps_ext'


def _nci1(root):
    return load_dataset(make_cfg(root, **{'dataset.format': 'PyG-TUDataset',
                                          'dataset.name': 'NCI1'}))


def _processed(root):
    folder = os.path.join(root, 'TUDataset', 'NCI1', 'processed')
    return folder, sorted(f for f in os.listdir(folder) if f.endswith('.pt'))


@pytest.fixture
def nci1_root(tmp_path, source):
    return copy_data(tmp_path, 'TUDataset', source=source)


def _raw(root, name):
    return os.path.join(root, 'TUDataset', 'NCI1', 'raw', name)


def test_truncated_raw_file_fails_clearly_and_leaves_no_poisoned_cache(nci1_root,
                                                                      source):
    path = _raw(nci1_root, 'NCI1_A.txt')
    with open(path, 'rb') as f:
        original = f.read()
    half = original.rindex(b'\n', 0, len(original) // 2) + 1  # whole lines
    with open(path, 'wb') as f:
        f.write(original[:half])
    with pytest.raises(DataCorruptError) as err:
        _nci1(nci1_root)
    msg = str(err.value)
    for fragment in ("Dataset 'NCI1' (PyG-TUDataset)", 'cover different numbers of graphs',
                     "The data of 'edge_index' comes from NCI1_A.txt",
                     f'{path} ({half / 2 ** 20:.2f} MB)', 'NCI1.zip',
                     f"put them into: {os.path.dirname(path)}"):
        assert fragment in msg, msg
    assert _processed(nci1_root)[1] == []  # nothing half-made is kept
    with open(path, 'wb') as f:  # the file restored: it just works
        f.write(original)
    assert sum(len(s) for s in _nci1(nci1_root).splits.values()) == \
        FACTS[source]['nci1_graphs']


def test_short_labels_file_names_it(nci1_root):
    path = _raw(nci1_root, 'NCI1_graph_labels.txt')
    with open(path) as f:
        lines = f.read().splitlines()
    with open(path, 'w') as f:
        f.write('\n'.join(lines[:100]) + '\n')
    with pytest.raises(DataCorruptError,
                       match="NCI1_graph_labels.txt has 100 lines, not one per graph"):
        _nci1(nci1_root)


def test_cache_follows_the_content_of_the_raw_files(nci1_root, caplog):
    first = _nci1(nci1_root)
    folder, files = _processed(nci1_root)
    assert files == ['data.pt', 'pre_filter.pt', 'pre_transform.pt']
    os.remove(os.path.join(folder, STAMP))  # as after an interrupted run
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _nci1(nci1_root)
    assert 'without a completion stamp' in caplog.text
    assert os.path.exists(os.path.join(folder, STAMP))
    # Same content, new mtime (a restored backup, a copy): the cache is kept.
    path = _raw(nci1_root, 'NCI1_graph_labels.txt')
    data_pt = os.path.join(folder, 'data.pt')
    mtime = os.path.getmtime(data_pt)
    os.utime(path, (mtime + 100, mtime + 100))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _nci1(nci1_root)
    assert caplog.text == '' and os.path.getmtime(data_pt) == mtime
    # Other content: rebuilt from it.
    with open(path) as f:
        labels = f.read().splitlines()
    labels[0] = '0' if labels[0].strip() == '1' else '1'
    with open(path, 'w') as f:
        f.write('\n'.join(labels) + '\n')
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        changed = _nci1(nci1_root)
    assert 'built from other raw files (changed: raw/NCI1_graph_labels.txt)' \
        in caplog.text
    assert int(changed.splits['train']._data.y[0]) != int(first.splits['train']._data.y[0])


def test_damaged_cache_is_rebuilt(nci1_root, source, caplog):
    total = FACTS[source]['nci1_graphs']
    _nci1(nci1_root)
    folder, files = _processed(nci1_root)
    data_pt = os.path.join(folder, 'data.pt')
    size = os.path.getsize(data_pt)
    with open(data_pt, 'r+b') as f:  # garbage inside, same size
        f.seek(size // 2)
        f.write(b'\0' * 4096)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert sum(len(s) for s in _nci1(nci1_root).splits.values()) == total
    assert 'processed file(s) data.pt changed since they were written' in caplog.text
    mtime = os.stat(data_pt).st_mtime_ns
    with open(data_pt, 'r+b') as f:  # unreadable, with size and mtime kept:
        f.write(b'\0' * 4096)       # the content hash sees it
    os.utime(data_pt, ns=(mtime, mtime))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert sum(len(s) for s in _nci1(nci1_root).splits.values()) == total
    assert 'processed file(s) data.pt changed since they were written' in caplog.text
    with open(data_pt, 'r+b') as f:  # and integrity.json rewritten to match it
        f.write(b'\0' * 4096)
    _restamp(folder, 'data.pt')
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert sum(len(s) for s in _nci1(nci1_root).splits.values()) == total
    assert 'cannot use the processed data' in caplog.text


def _restamp(folder, name):
    """integrity.json rewritten to vouch for the file ``name`` as it is now."""
    import json
    stamp_path = os.path.join(folder, STAMP)
    with open(stamp_path) as f:
        stamp = json.load(f)
    path = os.path.join(folder, name)
    st = os.stat(path)
    stamp['files'][name] = dict(size=st.st_size, mtime_ns=st.st_mtime_ns,
                                sha1=sha1_of(path))
    with open(stamp_path, 'w') as f:
        json.dump(stamp, f)


class _Payload:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


@pytest.mark.parametrize('how', ['same-size-and-mtime', 'stamp-rewritten'])
def test_replaced_processed_file_never_runs_code(nci1_root, caplog, tmp_path, how):
    """A crafted processed file: with its old size and mtime it fails the
    content hash and is rebuilt unread; with integrity.json rewritten to vouch
    for it, the reader refuses it and it is rebuilt; no code runs either way."""
    total = sum(len(s) for s in _nci1(nci1_root).splits.values())
    folder, _ = _processed(nci1_root)
    data_pt = os.path.join(folder, 'data.pt')
    marker = tmp_path / 'created-by-unpickling'
    crafted = io.BytesIO()
    torch.save((_Payload(os.system, f'touch {marker}'), {}), crafted)
    st = os.stat(data_pt)
    with open(data_pt, 'wb') as f:
        f.write(crafted.getvalue().ljust(st.st_size, b'\0')[:st.st_size]
                if how == 'same-size-and-mtime' else crafted.getvalue())
    os.utime(data_pt, ns=(st.st_atime_ns, st.st_mtime_ns))
    if how == 'stamp-rewritten':
        _restamp(folder, 'data.pt')
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        again = _nci1(nci1_root)
    assert sum(len(s) for s in again.splits.values()) == total
    assert not marker.exists()
    expected = ('changed since they were written' if how == 'same-size-and-mtime'
                else 'refused to read')
    assert expected in caplog.text, caplog.text
    assert how == 'same-size-and-mtime' or '.system' in caplog.text


def test_missing_raw_file_is_a_data_error(nci1_root, offline):
    os.remove(_raw(nci1_root, 'NCI1_A.txt'))
    with pytest.raises(DatasetNotFoundError, match='NCI1_A.txt'):
        _nci1(nci1_root)


def _graphs(edges):
    return [Data(x=torch.zeros(3, 1), edge_index=torch.tensor(e).t().reshape(2, -1))
            for e in edges]


class _Mem(InMemoryDataset):
    def __init__(self, graphs):
        super().__init__(None)
        self.data, self.slices = self.collate(graphs)


def test_check_storage():
    check_storage(_Mem(_graphs([[[0, 1], [1, 2]], [[2, 0]]])))
    with pytest.raises(StorageError, match='1 edges point outside their graph') as err:
        check_storage(_Mem(_graphs([[[0, 1]], [[0, 3]]])))
    assert err.value.attribute == 'edge_index'
    ds = _Mem(_graphs([[[0, 1]], [[1, 2]]]))
    ds.slices['y'] = torch.tensor([0, 1])  # one graph's worth of labels
    ds._data.y = torch.zeros(1)
    with pytest.raises(StorageError, match='different numbers of graphs') as err:
        check_storage(ds)
    assert err.value.attribute == 'y'


@pytest.fixture
def zinc_root(tmp_path, source):
    return copy_data(tmp_path, 'ZINC', source=source)


def test_zinc_corrupt_pickle(zinc_root):
    path = os.path.join(zinc_root, 'ZINC', 'raw', 'train.pickle')
    with open(path, 'r+b') as f:
        f.truncate(1000)
    cfg = make_cfg(zinc_root, **{'dataset.format': 'PyG-ZINC', 'dataset.name': 'subset'})
    with pytest.raises(DataCorruptError) as err:
        load_dataset(cfg)
    msg = str(err.value)
    for fragment in ("Dataset 'ZINC' (PyG-ZINC)", 'pickle', f'{path} (1000 bytes)',
                     'molecules.zip', 'rename its folder'):
        assert fragment in msg, msg


def test_zinc_stand_in_is_recognised(zinc_root, source, monkeypatch):
    root = os.path.join(zinc_root, 'ZINC')
    raw = os.path.join(root, 'raw')
    if source == 'samples':  # the sample's train split plays the known file
        import graphgps_ext.loader.sources as sources
        monkeypatch.setattr(sources, 'ZINC_STAND_IN_SHA1',
                            {sha1_of(os.path.join(raw, 'train.pickle'))})

    def reason():
        files = RawFiles('ZINC', [raw], [], raw, inputs=[raw])
        return zinc_stand_in(root, ProcessedCache(files, os.path.join(root, 'subset',
                                                                     'processed')))
    assert 'train_standin_sources.csv.gz lists the molecules' in reason()
    assert 'STAND-IN' in reason() and 'README.md' in reason()
    os.remove(os.path.join(root, 'train_standin_sources.csv.gz'))
    assert 'train.pickle is the known stand-in file' in reason()  # by its hash
    with open(os.path.join(raw, 'train.pickle'), 'ab') as f:
        f.write(b'\n')  # other content
    assert reason() is None


def test_peptides_corrupt_files(tmp_path, source):
    root = copy_data(tmp_path, 'peptides-functional', source=source)
    folder = os.path.join(root, 'peptides-functional')
    cfg = make_cfg(root, **{'dataset.format': 'OGB', 'dataset.name': 'peptides-functional',
                            'dataset.max_graphs': 40})
    split = os.path.join(folder, 'splits_random_stratified_peptide.pickle')
    with open(split, 'rb') as f:
        good = f.read()
    with open(split, 'wb') as f:
        f.write(good[:100])
    with pytest.raises(DataCorruptError) as err:
        load_dataset(cfg)
    assert 'peptides-functional' in str(err.value) and 'dropbox' in str(err.value)
    with open(split, 'wb') as f:
        f.write(good)
    csv = os.path.join(folder, 'raw', 'peptide_multi_class_dataset.csv.gz')
    with open(csv, 'r+b') as f:
        f.truncate(os.path.getsize(csv) // 2)
    with pytest.raises(DataCorruptError, match='peptide_multi_class_dataset.csv.gz'):
        load_dataset(cfg)


def test_main_exits_5_on_missing_data(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1',
               GRAPHGPS_EXT_OFFLINE='1')
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, 'main.py'), '--cfg',
         os.path.join(ROOT, 'configs', 'mna', 'nci1.yaml'), 'dataset.dir',
         str(tmp_path / 'nothing'), 'out_dir', str(tmp_path / 'results')],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 5, proc.stderr
    assert 'Traceback' not in proc.stdout + proc.stderr
    assert proc.stderr.startswith("data error: Dataset 'NCI1' (PyG-TUDataset) is not available")
    assert 'NCI1.zip' in proc.stderr and 'put the files into' in proc.stderr


def test_generated_data_cache_is_guarded_too(tmp_path, caplog):
    cfg = make_cfg(tmp_path, **{'dataset.format': 'synthetic',
                                'dataset.name': 'TreeNeighbourMatch',
                                'dataset.max_graphs': 64})
    first = load_dataset(cfg)
    folder = os.path.join(str(tmp_path), 'synthetic', 'TreeNeighbourMatch', 'processed')
    (split,) = [f for f in os.listdir(folder) if f.endswith('_split.pt')]
    with open(os.path.join(folder, split), 'r+b') as f:  # a run killed mid-write
        f.truncate(10)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        again = load_dataset(cfg)
    assert f'processed file(s) {split} changed since they were written' in caplog.text
    assert {k: len(v) for k, v in again.splits.items()} == \
        {k: len(v) for k, v in first.splits.items()}


@pytest.mark.parametrize('how', ['checked-before', 'fails-while-writing'])
def test_read_only_dataset_folder_is_not_called_corrupt(tmp_path, monkeypatch, how):
    """A processed folder that cannot be written is named as such (the raw
    files are fine), whether found before building or while writing."""
    import errno
    from graphgps_ext.loader.errors import DataError
    raw = tmp_path / 'raw'
    raw.mkdir()
    (raw / 'a.txt').write_text('1\n')
    processed = tmp_path / 'processed'
    files = RawFiles("'X'", [str(raw / 'a.txt')], ['https://example.org'], str(raw))
    cache = ProcessedCache(files, str(processed))
    if how == 'checked-before':
        real = os.access
        monkeypatch.setattr(os, 'access', lambda p, mode: False if str(p).startswith(
            str(tmp_path)) and mode == os.W_OK else real(p, mode))
        build = lambda: None  # noqa: E731
    else:
        def build():
            raise PermissionError(errno.EACCES, 'Permission denied',
                                  str(processed / 'data.pt'))
    with pytest.raises(DataError) as err:
        cache.load(build, check=None)
    message = str(err.value)
    assert not isinstance(err.value, DataCorruptError)
    assert 'cannot write the processed data into' in message and 'read-only' in message
    assert 'raw files are fine' in message and 'dataset.dir' in message
