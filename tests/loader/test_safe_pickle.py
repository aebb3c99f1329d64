"""Raw data files that could run code are refused before any loader reads
them; plain data (containers, NumPy arrays, tensors) passes."""
import collections
import gzip
import io
import os
import pickle

import numpy as np
import pytest
import torch

from graphgps_ext.loader.safe_pickle import (UnsafeDataError, check_file,
                                             load_pickle)


class Payload:
    """Unpickling it would call ``fn(*args)``: a stand-in for any code."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


class Plain:
    """An ordinary class of a module: building it is not plain data."""


def _legacy_tensor_pickle(obj) -> bytes:
    return pickle.dumps(obj)  # tensors pickled as ZINC's raw files are


# (id, how to write the file (path, marker) -> None, the global named)
UNSAFE = [
    ('os-system', lambda p, m: p.write_bytes(pickle.dumps(
        {'train': [1, Payload(os.system, f'touch {m}')]})), 'system'),
    ('builtins-open', lambda p, m: p.write_bytes(pickle.dumps(
        [Payload(open, str(m), 'w')])), 'open'),
    ('builtins-eval', lambda p, m: p.write_bytes(pickle.dumps(
        Payload(eval, f"open({str(m)!r}, 'w')"))), 'builtins.eval'),
    ('exec-in-list', lambda p, m: p.write_bytes(pickle.dumps(
        [np.arange(3), Payload(exec, f"open({str(m)!r}, 'w')")])), 'builtins.exec'),
    ('a-class', lambda p, m: p.write_bytes(pickle.dumps(Plain())), 'Plain'),
    ('protocol-0', lambda p, m: p.write_bytes(pickle.dumps(
        Payload(open, str(m), 'w'), protocol=0)), 'open'),
    ('after-tensors', lambda p, m: p.write_bytes(_legacy_tensor_pickle(
        [{'atom_type': torch.arange(4)}, Payload(open, str(m), 'w')])), 'open'),
    ('torch-zip', lambda p, m: torch.save({'x': Payload(open, str(m), 'w')}, str(p)),
     'open'),
    ('torch-zip-system', lambda p, m: torch.save(
        [torch.ones(2), Payload(os.system, f'touch {m}')], str(p)), 'system'),
]

# (id, object): plain data that must load.
SAFE = [
    ('split-dict', {'train': np.arange(5), 'val': np.array([5]), 'test': [6, 7]}),
    ('ordered-dict', collections.OrderedDict(a=1, b=(2.5, 'x'), c={3}, d=frozenset([1]))),
    ('zinc-like', [{'num_atom': 3, 'atom_type': torch.tensor([1, 2, 3]),
                    'bond_type': torch.zeros(3, 3, dtype=torch.long),
                    'logP_SA_cycle_normalized': torch.tensor([0.5])}]),
    ('numpy-dtypes', [np.float32(1.5), np.zeros((2, 2), dtype=np.int64),
                      np.dtype('float16'), complex(1, 2), b'bytes', bytearray(b'x')]),
]


@pytest.mark.parametrize('write,named', [c[1:] for c in UNSAFE], ids=[c[0] for c in UNSAFE])
def test_crafted_file_is_refused_unread(tmp_path, write, named):
    marker = tmp_path / 'created-by-unpickling'
    path = tmp_path / 'split.pickle'
    write(path, marker)
    with pytest.raises(UnsafeDataError) as err:
        check_file(str(path), 'Peptides')
    message = str(err.value)
    assert str(path) in message and named in message and 'could run code' in message
    assert message.startswith('Peptides: refused to read')
    assert not marker.exists()


@pytest.mark.parametrize('obj', [c[1] for c in SAFE], ids=[c[0] for c in SAFE])
def test_plain_data_loads(tmp_path, obj):
    path = tmp_path / 'data.pickle'
    path.write_bytes(pickle.dumps(obj))
    check_file(str(path))
    got = load_pickle(str(path))
    assert type(got) is type(obj)
    assert repr(got) == repr(obj)


def test_other_formats_pass_and_damaged_pickles_are_named(tmp_path):
    text = tmp_path / 'graph.txt'
    text.write_text('1, 2\n')
    packed = tmp_path / 'table.csv.gz'
    with gzip.open(packed, 'wt') as f:
        f.write('a,b\n')
    truncated = tmp_path / 'train.pickle'
    truncated.write_bytes(pickle.dumps(list(range(1000)))[:50])
    zipped = tmp_path / 'ok.pt'
    torch.save({'w': torch.ones(2)}, str(zipped))
    for path in (text, packed, zipped, tmp_path / 'missing.pickle'):
        assert check_file(str(path)) is None  # nothing to refuse
    assert 'is truncated or not a pickle' in check_file(str(truncated))
    empty = tmp_path / 'val.pickle'
    empty.write_bytes(b'')
    assert check_file(str(empty)).startswith(f'{empty} is empty')
    with pytest.raises(Exception) as err:  # the loader reports it as corrupt
        load_pickle(str(truncated))
    assert not isinstance(err.value, UnsafeDataError)


def test_nested_serialized_storage_is_read_weights_only(tmp_path):
    """A tensor pickled with plain pickle carries its storage as bytes read
    by torch.load; a crafted storage blob is refused too."""
    buf = io.BytesIO()
    torch.save({'x': Payload(open, str(tmp_path / 'marker'), 'w')}, buf,
               _use_new_zipfile_serialization=False)

    class Storage:
        def __reduce__(self):
            import torch.storage
            return torch.storage._load_from_bytes, (buf.getvalue(),)

    path = tmp_path / 'train.pickle'
    path.write_bytes(pickle.dumps([Storage()]))
    with pytest.raises(Exception) as err:
        load_pickle(str(path))
    assert 'GLOBAL' in str(err.value) or isinstance(err.value, UnsafeDataError)
    assert not (tmp_path / 'marker').exists()


def test_crafted_peptides_split_file_is_refused(tmp_path):
    from graphgps_ext.loader.peptides import VARIANTS, read_split
    name = 'peptides-functional'
    folder = tmp_path / name
    folder.mkdir()
    marker = tmp_path / 'created-by-unpickling'
    (folder / VARIANTS[name]['split']).write_bytes(pickle.dumps(
        {'train': Payload(open, str(marker), 'w'), 'val': [0], 'test': [1]}))
    with pytest.raises(UnsafeDataError, match=VARIANTS[name]['split']):
        read_split(str(folder), name)
    assert not marker.exists()


def test_crafted_raw_file_is_refused_before_the_dataset_class_reads_it(tmp_path):
    """ProcessedCache checks the raw files before it builds the dataset."""
    from graphgps_ext.loader.integrity import ProcessedCache, RawFiles
    raw = tmp_path / 'raw'
    raw.mkdir()
    marker = tmp_path / 'created-by-unpickling'
    (raw / 'train.pickle').write_bytes(pickle.dumps([Payload(open, str(marker), 'w')]))
    built = []
    files = RawFiles("'ZINC'", [str(raw / 'train.pickle')], ['https://example.org'],
                     str(raw), inputs=[str(raw)])
    cache = ProcessedCache(files, str(tmp_path / 'processed'))
    with pytest.raises(UnsafeDataError, match='train.pickle'):
        cache.load(lambda: built.append(1), check=None)
    assert not built and not marker.exists()
