"""The one reader of pickled files: plain data in every format loads as
pickle / torch.load would give it; code is refused unread; sizes beyond the
file's are refused before they are allocated (the bombs below are small
files and never allocate what they claim); damage is named as damage."""
import collections
import io
import os
import pickle
import struct
import time
import tracemalloc
import zipfile

import numpy as np
import pytest
import torch

from graphgps_ext import safe_load
from graphgps_ext.safe_load import (CorruptPickleError, OversizePickleError,
                                    UnsafePickleError)


class Payload:
    """Unpickling it would call ``fn(*args)``: a stand-in for any code."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


class Plain:
    """An ordinary class of a module: building it is not plain data."""


def _load(data: bytes):
    return safe_load.load(io.BytesIO(data))


def _torch_bytes(obj, zipped=True) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, _use_new_zipfile_serialization=zipped)
    return buf.getvalue()


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return (type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
                and a.stride() == b.stride() and torch.equal(a, b))
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(
            _same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and repr(a) == repr(b)


PLAIN = [
    {'train': np.arange(5), 'val': np.array([5]), 'test': [6, 7]},
    collections.OrderedDict(a=1, b=(2.5, 'x'), c={3}, d=frozenset([1])),
    [np.float32(1.5), np.zeros((2, 2), dtype=np.int64), np.dtype('float16'),
     complex(1, 2), b'bytes', bytearray(b'x'), None, True, 10 ** 30, -1.5e300],
    {'empty': np.zeros(0, dtype=np.int64), 'text': np.array(['ab', 'c']),
     'bool': np.array([True, False]), 'fortran': np.asfortranarray(np.ones((2, 3)))},
    [range(3, 9, 2), slice(1, None, 2), 'é', b'\xff'],
    collections.Counter({4: 1, 8: 2}),
]


@pytest.mark.parametrize('protocol', range(6))
def test_plain_pickles_load_as_pickle_gives_them(protocol):
    for obj in PLAIN:
        got = _load(pickle.dumps(obj, protocol=protocol))
        assert _same(obj, got), (protocol, obj, got)


def test_protocol_2_empty_array_is_plain_data():
    """An empty array in protocol 2 pickles its bytes as ``__builtin__.bytes``
    (a Python 2 name): plain data, never 'could run code'."""
    got = _load(pickle.dumps({'train': np.zeros(0, dtype=np.int64)}, protocol=2))
    assert got['train'].shape == (0,) and got['train'].dtype == np.int64


TENSORS = {
    'float': torch.arange(6.).view(2, 3), 'view': torch.arange(6)[2:],
    'transposed': torch.arange(6).view(2, 3).t(), 'bool': torch.tensor([True, False]),
    'half': torch.zeros(3, dtype=torch.float16), 'bf16': torch.ones(2, dtype=torch.bfloat16),
    'uint16': torch.arange(3).to(torch.uint16), 'empty': torch.empty(0),
    'int8': torch.tensor([-1, 2], dtype=torch.int8), 'scalar': torch.tensor(3.5),
}


@pytest.mark.parametrize('zipped', [True, False], ids=['zip', 'legacy'])
def test_torch_files_load_as_torch_load_gives_them(zipped):
    obj = dict(TENSORS, array=np.arange(3), nested=[{'w': torch.ones(2, 2)}],
               param=torch.nn.Parameter(torch.ones(2)))
    got = _load(_torch_bytes(obj, zipped))
    assert _same({k: v for k, v in obj.items() if k != 'param'},
                 {k: v for k, v in got.items() if k != 'param'})
    assert isinstance(got['param'], torch.nn.Parameter) and got['param'].requires_grad
    shared = _load(_torch_bytes([TENSORS['float'], TENSORS['float'][1]], zipped))
    shared[0][1, 0] = 42.  # views of one storage stay one storage
    assert shared[1][0] == 42.


def test_tensors_pickled_with_plain_pickle_load():
    """ZINC's raw pickles: tensors whose storages are nested legacy files."""
    obj = [{'num_atom': 3, 'atom_type': torch.tensor([1, 2, 3], dtype=torch.int8),
            'bond_type': torch.zeros(3, 3, dtype=torch.long)}]
    assert _same(obj, _load(pickle.dumps(obj)))


def test_a_checkpoint_and_old_processed_data_load():
    from torch_geometric.data import Data, InMemoryDataset
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [1, 3])
    state = {'model': model.state_dict(), 'opt': opt.state_dict(),
             'sched': sched.state_dict(), 'rng': torch.get_rng_state()}
    got = _load(_torch_bytes(state))
    model.load_state_dict(got['model'])
    opt.load_state_dict(got['opt'])
    sched.load_state_dict(got['sched'])
    assert got['model']._metadata == state['model']._metadata
    data, slices = InMemoryDataset.collate(
        [Data(x=torch.ones(2, 1), edge_index=torch.tensor([[0], [1]]))] * 2)
    old, old_slices = _load(_torch_bytes((data, slices)))  # OGB's (Data, slices)
    assert isinstance(old, Data) and torch.equal(old.x, data.x)
    new = _load(_torch_bytes((data.to_dict(), slices, Data)))  # PyG's own
    assert new[2] is Data and torch.equal(new[0]['edge_index'], data.edge_index)


def _legacy_with(position: int, payload) -> bytes:
    """A legacy torch file whose ``position``-th pickle (0 magic, 1 protocol,
    2 system info, 3 object, 4 storage keys) is ``payload``."""
    parts = [safe_load.LEGACY_MAGIC, safe_load.LEGACY_PROTOCOL,
             {'protocol_version': 1001, 'little_endian': True,
              'type_sizes': {'short': 2, 'int': 4, 'long': 4}}, {'x': 1}, []]
    parts[position] = payload
    return b''.join(pickle.dumps(p, protocol=2) for p in parts)


UNSAFE = [
    ('os-system', lambda m: pickle.dumps({'a': [1, Payload(os.system, f'touch {m}')]}),
     'system'),
    ('open', lambda m: pickle.dumps([Payload(open, m, 'w')]), 'open'),
    ('eval', lambda m: pickle.dumps(Payload(eval, f'open({m!r}, "w")')), 'eval'),
    ('exec-after-arrays', lambda m: pickle.dumps([np.arange(3), Payload(
        exec, f'open({m!r}, "w")')]), 'exec'),
    ('a-class', lambda m: pickle.dumps(Plain()), 'Plain'),
    ('protocol-0-open', lambda m: pickle.dumps(Payload(open, m, 'w'), protocol=0), 'open'),
    ('getattr', lambda m: pickle.dumps(Payload(getattr, 'x', 'upper')), 'getattr'),
    ('torch-zip', lambda m: _torch_bytes({'x': Payload(open, m, 'w')}), 'open'),
    ('torch-legacy-object', lambda m: _torch_bytes(
        [torch.ones(2), Payload(os.system, f'touch {m}')], zipped=False), 'system'),
    ('legacy-system-info', lambda m: _legacy_with(2, Payload(open, m, 'w')), 'open'),
    ('legacy-object', lambda m: _legacy_with(3, Payload(open, m, 'w')), 'open'),
    ('legacy-storage-keys', lambda m: _legacy_with(4, Payload(open, m, 'w')), 'open'),
    ('nested-storage-blob', lambda m: pickle.dumps([Payload(
        torch.storage._load_from_bytes, _torch_bytes(Payload(open, m, 'w'), False))]),
     'open'),
    ('storage-class-called', lambda m: pickle.dumps(Payload(torch.FloatStorage, 10)),
     'torch.FloatStorage'),
    ('object-array', lambda m: pickle.dumps(np.array([1, 'a'], dtype=object)), 'objects'),
    ('tuple-key', lambda m: pickle.dumps({(1, 2): 3}), 'tuple'),
    ('float-set-element', lambda m: pickle.dumps({1.5}), 'float'),
    ('persistent-id-in-plain-pickle', lambda m: b'\x80\x02K\x01Q.', 'persistent'),
    ('extension-code', lambda m: b'\x80\x02\x82\x01.', 'extension'),
    ('state-on-a-list', lambda m: b'\x80\x02]}U\x01a]sb.', 'state'),
]


@pytest.mark.parametrize('make,named', [c[1:] for c in UNSAFE], ids=[c[0] for c in UNSAFE])
def test_code_is_refused_unread(tmp_path, make, named):
    marker = str(tmp_path / 'created-by-unpickling')
    with pytest.raises(UnsafePickleError) as err:
        _load(make(marker))
    assert named in err.value.why and not os.path.exists(marker)


def _shared_lists(levels: int, width: int) -> bytes:
    """A list holding one list ``width`` times, ``levels`` deep: a few KB
    that expand to ``width ** levels`` elements."""
    obj = [0] * width
    for _ in range(levels):
        obj = [obj] * width
    return pickle.dumps(obj)


def _deflated_record(tmp_path, nbytes: int) -> bytes:
    """A torch zip file whose one storage record inflates to ``nbytes``
    (written in blocks: the test never holds it)."""
    src = zipfile.ZipFile(io.BytesIO(_torch_bytes(torch.ones(2))))
    path = tmp_path / 'bomb.pt'
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as out:
        for name in src.namelist():
            if name.endswith('data/0'):
                with out.open(name, 'w') as f:
                    for _ in range(nbytes >> 20):
                        f.write(bytes(1 << 20))
            else:
                out.writestr(name, src.read(name))
    return path.read_bytes()


class Sized:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


OVERSIZE = [
    # numpy's reconstruct of an array of 10**6 x 10**6 bytes
    ('numpy-shape', lambda t: (b'\x80\x02cnumpy.core.multiarray\n_reconstruct\n'
                               b'cnumpy\nndarray\nJ@B\x0f\x00J@B\x0f\x00\x86C\x01b\x87R.')),
    ('bytearray-1e12', lambda t: pickle.dumps(Sized(bytearray, 10 ** 12))),
    ('bytes-1e11', lambda t: pickle.dumps(Sized(bytes, 10 ** 11))),
    ('range-1e12', lambda t: pickle.dumps(range(10 ** 12))),
    ('list-repetition', lambda t: _shared_lists(3, 1000)),
    ('stride-0-tensor', lambda t: _torch_bytes(torch.ones(1).expand(10 ** 5, 10 ** 5))),
    ('deflated-record', lambda t: _deflated_record(t, 80 << 20)),
]


@pytest.mark.parametrize('make', [c[1] for c in OVERSIZE], ids=[c[0] for c in OVERSIZE])
def test_bombs_are_refused_before_allocating(tmp_path, make):
    data = make(tmp_path)
    assert len(data) < 200_000
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(OversizePickleError) as err:
            _load(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 10
    assert peak < 16 * 2 ** 20  # nothing like what the file claims was built
    why = err.value.why
    assert 'would take the data it builds to' in why and 'truncated' not in why
    assert f'a file of {safe_load.human(len(data))}' in why


def test_the_budget_follows_the_file_size():
    assert safe_load.budget_for(0) == safe_load.FLOOR
    assert safe_load.budget_for(10 ** 6) == safe_load.FLOOR + safe_load.FACTOR * 10 ** 6
    data = pickle.dumps(bytes(1000))
    with pytest.raises(OversizePickleError):
        safe_load.load(io.BytesIO(data), limit=500)
    assert safe_load.load(io.BytesIO(data), limit=5000) == bytes(1000)


def _nested_tuples(depth: int) -> bytes:
    """``t = (t, t)`` ``depth`` times over, left on the stack: hashing it
    takes 2**depth steps."""
    ops = [b'\x80\x04)\x94']
    for i in range(depth):
        ops += [b'0h' + bytes([i]), b'h' + bytes([i]), b'\x86\x94']
    return b''.join(ops)


def test_hash_and_nesting_bombs_end_at_once():
    start = time.perf_counter()
    for tail in (b'0\x8f(h\x3c\x90.',   # a set holding the 2**60-step tuple
                 b'0}h\x3cK\x01s.'):     # a dict keyed by it
        with pytest.raises(UnsafePickleError, match='keys and set elements'):
            _load(_nested_tuples(60) + tail)
    with pytest.raises(CorruptPickleError, match='nested deeper'):
        _load(_nested_tuples(200) + b'.')
    with pytest.raises(CorruptPickleError, match='nested deeper'):
        _load(b'\x80\x04' + b']' * 5000 + b'a' * 4999 + b'.')
    with pytest.raises(CorruptPickleError, match='contains itself'):
        _load(b'\x80\x04]\x94h\x00a.')
    assert time.perf_counter() - start < 5


def test_damage_is_named_as_damage():
    good = pickle.dumps(list(range(1000)))
    for data, words in ((good[:50], 'truncated'), (b'\x80\x02K\x01K\x02.', 'malformed'),
                        (b'\x80\x02h\x05.', 'memo entry'), (b'not a pickle', 'unreadable'),
                        (b'\x80\x09K\x01.', 'protocol')):
        with pytest.raises(CorruptPickleError, match=words):
            _load(data)
    legacy = _torch_bytes({'w': torch.ones(100)}, zipped=False)
    with pytest.raises(CorruptPickleError, match='truncated'):
        _load(legacy[:-40])
    claims = legacy.replace(b'K\x64', b'J\x00\x00\x00\x01', 1)  # 2**24 floats
    with pytest.raises(CorruptPickleError, match='claim'):
        _load(claims)
    zipped = _torch_bytes({'w': torch.ones(100)})
    with pytest.raises(CorruptPickleError):
        _load(zipped[:len(zipped) // 2])
    with pytest.raises(CorruptPickleError, match='empty'):
        _load(b'')
    with pytest.raises(CorruptPickleError, match='bare tensor storage'):
        _load(_torch_bytes(torch.ones(2).untyped_storage()))


def test_a_path_names_itself(tmp_path):
    path = tmp_path / 'split.pickle'
    path.write_bytes(pickle.dumps(Payload(open, 'x', 'w')))
    with pytest.raises(UnsafePickleError) as err:
        safe_load.load(str(path))
    assert err.value.path == str(path) and str(path) in str(err.value)
    assert pickle.loads(pickle.dumps(err.value)).why == err.value.why


def test_big_endian_and_tar_torch_files_are_not_read():
    head = bytearray(1024)
    head[257:262] = b'ustar'
    with pytest.raises(CorruptPickleError, match='tar format'):
        _load(bytes(head))
    parts = [safe_load.LEGACY_MAGIC, safe_load.LEGACY_PROTOCOL,
             {'protocol_version': 1001, 'little_endian': False}]
    with pytest.raises(CorruptPickleError, match='big-endian'):
        _load(b''.join(pickle.dumps(p, protocol=2) for p in parts))


def test_legacy_storage_sizes_come_from_the_file():
    """A legacy storage's length is read from the file after the object: one
    that disagrees with its tensor is damage."""
    data = bytearray(_torch_bytes(torch.ones(4), zipped=False))
    tail = struct.pack('<q', 4)
    at = data.rindex(tail)
    data[at:at + 8] = struct.pack('<q', 5)
    with pytest.raises(CorruptPickleError, match='number of elements'):
        _load(bytes(data))
