r"""Files that can hold a pickle, read so that nothing but plain data is built.

Raw dataset pickles (ZINC's, the LRGB superpixels', the Peptides split
file), the files of ``torch.save`` (its zip format and the older legacy
format, e.g. ``MNIST_v2.pt``, LRGB's ``train.pt``, PCQM4Mv2's
``split_dict.pt``), processed dataset caches, checkpoints and encoding caches
are all read by :func:`load`, which never calls :func:`pickle.load` or
:func:`torch.load`: a crafted pickle runs code when those read it.

**The machine.** :func:`load` runs its own pickle machine over the opcodes
that :func:`pickletools.genops` decodes (which parses and never executes).
It builds

- constants and containers (``list``, ``tuple``, ``dict``, ``set``,
  ``frozenset``, ``bytearray``, ``collections.OrderedDict`` and
  ``Counter`` (a scheduler's milestones), ``range``,
  ``slice``);
- NumPy arrays, scalars and dtypes of plain (non-object) types;
- torch tensors over storages read from the same file, torch dtypes and
  sizes, ``torch.nn.Parameter``;
- PyG's ``Data`` and its storage records (processed files written by older
  PyG / OGB code), whose state is a dict of the above;

and raises :class:`UnsafePickleError`, before anything is imported or
called, for any other global (``os.system``, ``builtins.eval``, a class of
a module), a type called directly (``NEWOBJ``, ``INST``, ``OBJ``,
extension codes), a state set on anything but an array, a dtype or a PyG
record, out-of-band buffers, and persistent ids other than torch's storages.
Dict keys and set elements must be plain values (strings, bytes, integers
below :math:`2^{61}`, booleans, ``None``): nothing the machine hashes or
compares can take time beyond its own size.

**Sizes.** Everything the machine allocates is charged before it is
allocated against a budget, by default
:math:`B = ` :data:`FLOOR` :math:`+` :data:`FACTOR` :math:`\times` the file's
size: an array's ``shape x itemsize`` (``numpy`` reconstruct, dtype states),
``bytearray(n)``, a legacy storage (which must also fit in the bytes left in
the file), a zip record (its declared size, so a compressed record cannot
expand past it), every container slot. After the machine stops, the size the
result would take if every shared reference were a copy (as converting it
to arrays does: a list holding one list 1,000 times, nested) is bounded by
the same :math:`B`, and so is its nesting depth (:data:`MAX_DEPTH`). A file
beyond either raises :class:`OversizePickleError` naming both sizes.
A truncated or inconsistent file raises :class:`CorruptPickleError`.

Formats: a plain pickle (protocols 0-5); torch's zip format
(``<name>/data.pkl`` and its ``data/<key>`` records, little-endian); torch's
legacy format (a magic number, a protocol version, the system info, the
object, the storage keys, then each storage's bytes). The tar format of
torch < 0.4 is refused.
"""
import collections
import io
import math
import os
import pickletools
import struct
import zipfile
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import torch

from graphgps_ext.config.sizes import human

#: Every file may build this many bytes whatever its size.
FLOOR = 64 * 2 ** 20
#: ... plus this many times its own size.
FACTOR = 16
#: Deepest nesting of containers in a result.
MAX_DEPTH = 100
#: Largest item of a NumPy dtype (bytes).
MAX_ITEMSIZE = 2 ** 20
#: Dict keys and set elements that are integers stay below this (their hash
#: is the value itself: no two collide).
MAX_KEY_INT = 2 ** 61 - 1

#: The first pickle of a legacy ``torch.save`` file, and its protocol.
LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
LEGACY_PROTOCOL = 1001
ZIP_MAGIC = b'PK\x03\x04'


class PickleError(ValueError):
    """A file that :func:`load` does not read: ``path`` and ``why``."""

    def __init__(self, path: str, why: str):
        super().__init__(f'{path}: {why}')
        self.path, self.why = path, why

    def __reduce__(self):
        return type(self), (self.path, self.why)


class UnsafePickleError(PickleError):
    """The file asks for more than plain data (``why`` names what):
    unpickling it could run code, so it is not unpickled."""


class OversizePickleError(PickleError):
    """The file would build more than its size allows (``why`` names both
    sizes): refused before the memory is taken."""


class CorruptPickleError(PickleError):
    """The file is truncated, not a pickle, or inconsistent."""


class _Refused(Exception):
    """Raised inside the machine; :func:`load` adds the path."""

    def __init__(self, kind, why: str):
        super().__init__(why)
        self.kind, self.why = kind, why


def _unsafe(why: str) -> _Refused:
    return _Refused(UnsafePickleError, why)


def _corrupt(why: str) -> _Refused:
    return _Refused(CorruptPickleError, why)


def budget_for(size: int) -> int:
    """The bytes a file of ``size`` bytes may build: :data:`FLOOR` +
    :data:`FACTOR` x ``size``."""
    return FLOOR + FACTOR * max(0, int(size))


class Budget:
    """Bytes a file may still build (shared by the nested pickles of one
    file)."""

    def __init__(self, limit: int, size: int):
        self.limit, self.size, self.used = int(limit), int(size), 0

    def charge(self, nbytes: int, what: str):
        """Count ``nbytes`` for ``what``, or refuse before allocating."""
        nbytes = int(nbytes)
        if nbytes < 0:
            raise _corrupt(f'{what} has a negative size')
        self.used += nbytes
        if self.used > self.limit:
            raise self.refusal(self.used, what)

    def refusal(self, total: int, what: str) -> _Refused:
        return _Refused(OversizePickleError, (
            f'{what} would take the data it builds to {human(total)}, from a '
            f'file of {human(self.size)} (a file may build at most '
            f'{human(FLOOR)} + {FACTOR} x its size = {human(self.limit)}); '
            'a genuine file of this size holds far less, so it is refused '
            'before the memory is taken'))


# --------------------------------------------------------------- reading --
class _Reader:
    """A binary stream that never reads past ``size`` (so a length declared
    in the file cannot make a read allocate more than the file holds)."""

    def __init__(self, f: BinaryIO, size: int):
        self.f, self.size = f, size
        if isinstance(f, io.BytesIO):  # reads stop at its end already
            self.read, self.readline, self.tell = f.read, f.readline, f.tell

    def tell(self) -> int:
        return self.f.tell()

    def left(self) -> int:
        return max(0, self.size - self.f.tell())

    def read(self, n: int = -1) -> bytes:
        n = self.left() if n is None or n < 0 else min(int(n), self.left())
        return self.f.read(n)

    def readline(self, limit: int = -1) -> bytes:
        limit = self.left() if limit is None or limit < 0 else min(limit, self.left())
        return self.f.readline(limit)

    def readinto(self, buf) -> int:
        view = memoryview(buf).cast('B')
        if len(view) > self.left():
            raise _corrupt('the file ends inside a tensor storage (truncated)')
        got = self.f.readinto(view)
        if got != len(view):
            raise _corrupt('the file ends inside a tensor storage (truncated)')
        return got


# ---------------------------------------------------------- plain values --
def _is_key(value) -> bool:
    """A dict key or set element whose hash and comparisons cost no more
    than its size and never collide by construction."""
    if value is None or isinstance(value, (str, bytes, bool)):
        return True
    return type(value) is int and -MAX_KEY_INT < value < MAX_KEY_INT


def _check_keys(items, what: str):
    for item in items:
        if not _is_key(item):
            raise _unsafe(f'a {what} of type {type(item).__name__} (keys and '
                          'set elements must be strings, bytes, integers, '
                          'booleans or None)')


def _int(value, what: str) -> int:
    if type(value) is not int and not isinstance(value, np.integer):
        raise _corrupt(f'{what} is not an integer ({type(value).__name__})')
    return int(value)


def _shape(value, what: str) -> Tuple[int, ...]:
    if not isinstance(value, (tuple, list)):
        raise _corrupt(f'{what} is not a tuple of sizes')
    out = tuple(_int(v, what) for v in value)
    if any(v < 0 for v in out):
        raise _corrupt(f'{what} {out} has a negative size')
    return out


def _elements(shape: Tuple[int, ...]) -> int:
    return math.prod(shape) if shape else 1


# ------------------------------------------------------------------ numpy --
_NP_SCALARS = ('bool_', 'int8', 'int16', 'int32', 'int64', 'uint8', 'uint16',
               'uint32', 'uint64', 'float16', 'float32', 'float64',
               'complex64', 'complex128')


def _plain_dtype(dtype, what: str = 'an array') -> np.dtype:
    if not isinstance(dtype, np.dtype):
        raise _corrupt(f'{what} has no NumPy dtype ({type(dtype).__name__})')
    if dtype.hasobject:
        raise _unsafe(f'{what} of Python objects (NumPy dtype {dtype.str}); '
                      'only arrays of numbers, booleans and strings are data')
    if dtype.fields is not None or dtype.subdtype is not None:
        raise _unsafe(f'{what} of the structured NumPy dtype {dtype}')
    if not 0 < dtype.itemsize <= MAX_ITEMSIZE:
        raise _corrupt(f'{what} has items of {dtype.itemsize} bytes')
    return dtype


def _np_dtype(spec, align=False, copy=False):
    if isinstance(spec, bytes):
        spec = spec.decode('latin-1')
    if not isinstance(spec, str):
        raise _unsafe(f'a NumPy dtype built from a {type(spec).__name__}')
    try:
        dtype = np.dtype(spec, bool(align), bool(copy))  # copy: a fresh object
    except TypeError:
        raise _corrupt(f'unknown NumPy dtype {spec!r}') from None
    return _plain_dtype(dtype, f'the dtype {spec!r}')


def _dtype_state(dtype: np.dtype, state):
    if not isinstance(dtype, np.dtype):
        raise _unsafe(f'a state set on a {type(dtype).__name__}')
    if not isinstance(state, tuple) or len(state) not in (8, 9) or \
            state[2:5] != (None, None, None):
        raise _unsafe(f'the NumPy dtype state {state!r:.80} (only plain dtypes '
                      'are data)')
    if state[5] not in (-1, dtype.itemsize):
        raise _corrupt(f'a NumPy dtype state that changes the item size to {state[5]}')
    dtype.__setstate__(state)
    _plain_dtype(dtype)


def _np_type(name: str):
    kind = getattr(np, name)

    def make(*args):
        if len(args) > 1 or (args and not isinstance(
                args[0], (int, float, complex, bool, str, bytes))):
            raise _unsafe(f'numpy.{name} called on {type(args[0]).__name__}')
        return kind(*args)
    return make


def _np_dtype_class(kind):
    def make(*args):
        if args:
            raise _unsafe(f'{kind.__name__} called with arguments')
        return np.dtype(kind.type)
    return make


class _Machine:
    """The pickle machine (one per pickle; see the module docstring)."""

    def __init__(self, reader: _Reader, budget: Budget,
                 persistent: Optional[Callable[[Any], Any]] = None):
        self.reader, self.budget, self.persistent = reader, budget, persistent
        self.globals = _globals()

    # ---- allow-listed callables (each checks its arguments) --------------
    def reconstruct(self, cls, shape, dtype):
        if cls is not np.ndarray:
            raise _unsafe(f'numpy reconstruct of {type(cls).__name__}')
        shape = _shape(shape, 'an array shape')
        dtype = _np_dtype(dtype) if not isinstance(dtype, np.dtype) else _plain_dtype(dtype)
        self.budget.charge(_elements(shape) * dtype.itemsize, 'a NumPy array')
        return np.ndarray(shape, dtype)

    def array_state(self, array: np.ndarray, state):
        if not isinstance(state, tuple) or len(state) not in (4, 5):
            raise _corrupt('a NumPy array state that is not a 4- or 5-tuple')
        version, (shape, dtype, fortran, raw) = (state[0] if len(state) == 5 else 1,
                                                 state[-4:])
        shape = _shape(shape, 'an array shape')
        dtype = _plain_dtype(dtype)
        if isinstance(raw, str):
            raw = raw.encode('latin-1')
        if not isinstance(raw, (bytes, bytearray)):
            raise _unsafe(f'NumPy array data given as {type(raw).__name__}')
        need = _elements(shape) * dtype.itemsize
        if len(raw) != need:
            raise _corrupt(f'an array of shape {shape} and dtype {dtype} needs '
                           f'{need} bytes but holds {len(raw)}')
        self.budget.charge(need, 'a NumPy array')
        array.__setstate__((version, shape, dtype, bool(fortran), raw))

    def frombuffer(self, buf, dtype, shape, order='C'):
        dtype = _plain_dtype(dtype)
        shape = _shape(shape, 'an array shape')
        if not isinstance(buf, (bytes, bytearray)):
            raise _unsafe(f'NumPy array data given as {type(buf).__name__}')
        if len(buf) != _elements(shape) * dtype.itemsize:
            raise _corrupt(f'an array of shape {shape} does not match its '
                           f'{len(buf)} bytes')
        self.budget.charge(len(buf), 'a NumPy array')
        return np.frombuffer(bytearray(buf), dtype).reshape(shape, order=order)

    def scalar(self, dtype, data=None):
        dtype = _plain_dtype(dtype, 'a NumPy scalar')
        if isinstance(data, str):
            data = data.encode('latin-1')
        if not isinstance(data, bytes) or len(data) != dtype.itemsize:
            raise _corrupt('a NumPy scalar whose data does not match its dtype')
        return np.frombuffer(data, dtype)[0]

    def sized(self, kind: type, value=b'', *args):
        """``bytes`` / ``bytearray`` from bytes, text, a size or a list."""
        if isinstance(value, str):
            value = value.encode(*(args[:1] or ('utf-8',)))
        elif isinstance(value, bool) or not isinstance(
                value, (int, bytes, bytearray, list, tuple)):
            raise _unsafe(f'{kind.__name__} of a {type(value).__name__}')
        n = value if isinstance(value, int) else len(value)
        self.budget.charge(n, f'{kind.__name__}({n:,})' if isinstance(value, int)
                           else kind.__name__)
        return kind(value)

    def container(self, kind: type, items=()):
        if not isinstance(items, (list, tuple, set, frozenset, dict)):
            raise _unsafe(f'{kind.__name__} of a {type(items).__name__}')
        if issubclass(kind, dict):
            if not isinstance(items, dict):
                if any(not isinstance(p, (tuple, list)) or len(p) != 2 for p in items):
                    raise _corrupt(f'{kind.__name__} of items that are not pairs')
                _check_keys([p[0] for p in items], 'key')
                items = dict(items)
        elif kind in (set, frozenset):
            _check_keys(items, 'set element')
        self.budget.charge(8 * len(items) + 64, kind.__name__)
        return kind(items)

    def scalar_call(self, kind: type, *args):
        if any(a is not None and not isinstance(a, (int, float, str, bool, bytes))
               for a in args):
            raise _unsafe(f'{kind.__name__} of a non-scalar')
        if kind is str and args and not isinstance(args[0], str):
            raise _unsafe('str of a non-string')
        return kind(*args)

    def bounded_range(self, *args):
        if not args or any(type(a) is not int for a in args):
            raise _unsafe('range of non-integers')
        return range(*args)

    def encode(self, text, encoding='latin1'):
        if not isinstance(text, str) or encoding not in (
                'latin1', 'latin-1', 'utf-8', 'utf8', 'ascii'):
            raise _unsafe('_codecs.encode of a non-string or another encoding')
        self.budget.charge(len(text) * (1 if 'lat' in encoding else 4), 'encoded bytes')
        return text.encode(encoding)

    # ---- torch -----------------------------------------------------------
    def rebuild_tensor(self, storage, offset, size, stride, requires_grad=False,
                       hooks=None, metadata=None, dtype=None):
        if not isinstance(storage, _Storage):
            raise _unsafe(f'a tensor rebuilt on a {type(storage).__name__}')
        if hooks:
            raise _unsafe('a tensor with backward hooks')
        if metadata:
            raise _unsafe('a tensor with Python metadata')
        flat = storage.typed(dtype)
        offset = _int(offset, 'a tensor offset')
        size, stride = _shape(size, 'a tensor size'), _shape(stride, 'a tensor stride')
        if len(size) != len(stride) or offset < 0:
            raise _corrupt('a tensor whose sizes, strides and offset do not match')
        numel = _elements(size)
        if numel:
            last = offset + sum((s - 1) * st for s, st in zip(size, stride))
            if last >= flat.numel():
                raise _corrupt(f'a tensor of size {list(size)} reaches element '
                               f'{last} of a storage of {flat.numel()}')
        tensor = flat.as_strided(size, stride, flat.storage_offset() + offset)
        if requires_grad:
            tensor.requires_grad_(True)
        return tensor

    def rebuild_tensor_v3(self, storage, offset, size, stride, requires_grad,
                          hooks, dtype, metadata=None):
        if not isinstance(dtype, torch.dtype):
            raise _corrupt('a tensor without a torch dtype')
        return self.rebuild_tensor(storage, offset, size, stride, requires_grad,
                                   hooks, metadata, dtype)

    def parameter(self, data, requires_grad=True, hooks=None):
        if not isinstance(data, torch.Tensor) or hooks:
            raise _unsafe('a parameter that is not a plain tensor')
        return torch.nn.Parameter(data, bool(requires_grad))

    def torch_size(self, sizes=()):
        return torch.Size(_shape(sizes, 'a torch size'))

    def from_bytes(self, data):
        if not isinstance(data, (bytes, bytearray)):
            raise _unsafe(f'a storage read from a {type(data).__name__}')
        return _read_torch_or_pickle(_Reader(io.BytesIO(data), len(data)), self.budget)

    # ---- running -----------------------------------------------------------
    def find(self, module: str, name: str):
        if module == '__builtin__':
            name = _PY2_NAMES.get(name, name)
        module = _PY2_MODULES.get(module, module)
        found = self.globals.get((module, name))
        if found is None:
            records = _records()
            found = records.get((module, name))
        if found is None:
            raise _unsafe(f'it asks for {module}.{name}')
        return found

    def call(self, func, args):
        if not isinstance(func, _Call):
            name = getattr(func, 'name', None) or getattr(
                func, '__qualname__', type(func).__name__)
            raise _unsafe(f'it calls {name}')
        if not isinstance(args, tuple):
            raise _corrupt('call arguments that are not a tuple')
        return func.fn(self, *args)

    def build(self, obj, state):
        if type(obj) is np.ndarray:
            self.array_state(obj, state)
        elif isinstance(obj, np.dtype):
            _dtype_state(obj, state)
        elif type(obj) in _records().values():
            if not isinstance(state, dict) or any(not isinstance(k, str) for k in state):
                raise _unsafe(f'a {type(obj).__name__} state that is not a dict of names')
            setstate = getattr(type(obj), '__setstate__', None)
            if setstate is not None:
                setstate(obj, state)
            else:
                obj.__dict__.update(state)
        elif type(obj) in (collections.OrderedDict, collections.Counter) and (state is None or (
                isinstance(state, dict) and all(isinstance(k, str) for k in state))):
            obj.__dict__.update(state or {})  # a state_dict's _metadata
        else:
            raise _unsafe(f'it sets the state of a {type(obj).__name__}')

    def new(self, cls, args):
        if cls not in _records().values() or args != ():
            name = getattr(cls, '__qualname__', type(cls).__name__)
            raise _unsafe(f'it creates a {name} object')
        return cls.__new__(cls)

    def run(self) -> Any:
        stack: List[Any] = []
        marks: List[List[Any]] = []
        memo: Dict[int, Any] = {}
        charge = self.budget.charge

        def pop_mark() -> List[Any]:
            nonlocal stack
            items = stack
            stack = marks.pop()
            return items

        try:
            for op, arg, _ in pickletools.genops(self.reader):
                name = op.name
                if name in _CONSTANTS:
                    if isinstance(arg, (str, bytes, bytearray)):
                        charge(len(arg), 'a string')
                    value = bytearray(arg) if name == 'BYTEARRAY8' else arg
                    stack.append(_CONSTANTS[name] if name in _FIXED else value)
                elif name in ('BINPUT', 'LONG_BINPUT', 'PUT'):
                    memo[int(arg)] = stack[-1]
                elif name == 'MEMOIZE':
                    memo[len(memo)] = stack[-1]
                elif name in ('BINGET', 'LONG_BINGET', 'GET'):
                    if int(arg) not in memo:
                        raise _corrupt(f'memo entry {arg} read before it is written')
                    stack.append(memo[int(arg)])
                elif name == 'MARK':
                    marks.append(stack)
                    stack = []
                elif name == 'EMPTY_LIST':
                    charge(64, 'a list')
                    stack.append([])
                elif name == 'EMPTY_DICT':
                    charge(64, 'a dict')
                    stack.append({})
                elif name == 'EMPTY_SET':
                    charge(64, 'a set')
                    stack.append(set())
                elif name == 'EMPTY_TUPLE':
                    stack.append(())
                elif name in ('TUPLE1', 'TUPLE2', 'TUPLE3'):
                    n = int(name[-1])
                    if len(stack) < n:
                        raise _corrupt('a tuple of more items than the stack holds')
                    items = tuple(stack[-n:])
                    del stack[-n:]
                    charge(8 * n, 'a tuple')
                    stack.append(items)
                elif name in ('TUPLE', 'LIST'):
                    items = pop_mark()
                    charge(8 * len(items) + 64, 'a list')
                    stack.append(tuple(items) if name == 'TUPLE' else list(items))
                elif name == 'DICT':
                    items = pop_mark()
                    self._set_items({}, items, stack)
                elif name == 'FROZENSET':
                    items = pop_mark()
                    _check_keys(items, 'set element')
                    charge(16 * len(items) + 64, 'a frozenset')
                    stack.append(frozenset(items))
                elif name == 'APPEND':
                    value = stack.pop()
                    self._target(stack, list, 'APPEND').append(value)
                    charge(8, 'a list item')
                elif name == 'APPENDS':
                    items = pop_mark()
                    self._target(stack, list, 'APPENDS').extend(items)
                    charge(8 * len(items), 'list items')
                elif name == 'SETITEM':
                    value, key = stack.pop(), stack.pop()
                    _check_keys([key], 'key')
                    self._target(stack, dict, 'SETITEM')[key] = value
                    charge(16, 'a dict item')
                elif name == 'SETITEMS':
                    items = pop_mark()
                    self._set_items(self._target(stack, dict, 'SETITEMS'), items)
                elif name == 'ADDITEMS':
                    items = pop_mark()
                    _check_keys(items, 'set element')
                    self._target(stack, set, 'ADDITEMS').update(items)
                    charge(16 * len(items), 'set elements')
                elif name == 'POP':
                    if stack:
                        stack.pop()
                    else:
                        pop_mark()
                elif name == 'POP_MARK':
                    pop_mark()
                elif name == 'DUP':
                    stack.append(stack[-1])
                elif name == 'GLOBAL':
                    module, _, attr = str(arg).partition(' ')
                    stack.append(self.find(module, attr))
                elif name == 'STACK_GLOBAL':
                    attr, module = stack.pop(), stack.pop()
                    if not isinstance(module, str) or not isinstance(attr, str):
                        raise _corrupt('a global named by something that is not text')
                    stack.append(self.find(module, attr))
                elif name == 'REDUCE':
                    args = stack.pop()
                    stack[-1] = self.call(stack[-1], args)
                elif name == 'BUILD':
                    state = stack.pop()
                    self.build(stack[-1], state)
                elif name == 'NEWOBJ':
                    args = stack.pop()
                    stack[-1] = self.new(stack[-1], args)
                elif name == 'BINPERSID':
                    pid = stack.pop()
                    if self.persistent is None:
                        raise _unsafe('a persistent id (a reference to an object '
                                      'outside the pickle)')
                    stack.append(self.persistent(pid))
                elif name == 'PROTO':
                    if not 0 <= int(arg) <= 5:
                        raise _corrupt(f'unknown pickle protocol {arg}')
                elif name == 'FRAME':
                    continue
                elif name == 'STOP':
                    if len(stack) != 1 or marks:
                        raise _corrupt('the pickle ends with a malformed stack')
                    return stack[0]
                elif name in _UNSAFE_OPS:
                    raise _unsafe(_UNSAFE_OPS[name])
                else:
                    raise _corrupt(f'unknown pickle opcode {name}')
        except (IndexError, KeyError):
            raise _corrupt('malformed pickle (an opcode finds the stack empty)') from None
        except _Refused:
            raise
        except (ValueError, TypeError, OverflowError, UnicodeDecodeError,
                struct.error, RuntimeError) as err:
            text = str(err)
            if any(w in text for w in ('exhausted', 'remain', 'not enough data')):
                raise _corrupt('the file ends inside its pickle data (truncated)') from None
            # a type mismatch in a checked call, bytes that are no opcode
            raise _corrupt(f'unreadable pickle data ({type(err).__name__}: '
                           f'{text[:160]})') from None
        raise _corrupt('the pickle ends before its STOP opcode (truncated)')

    @staticmethod
    def _target(stack, kind: type, op: str):
        if not stack or not isinstance(stack[-1], kind):
            raise _corrupt(f'{op} on something that is not a {kind.__name__}')
        return stack[-1]

    def _set_items(self, target: dict, items: List[Any], push: Optional[list] = None):
        if len(items) % 2:
            raise _corrupt('dict items that are not key/value pairs')
        keys = items[0::2]
        _check_keys(keys, 'key')
        self.budget.charge(16 * len(keys) + 64, 'dict items')
        for key, value in zip(keys, items[1::2]):
            target[key] = value
        if push is not None:
            push.append(target)


class _Call:
    """An allow-listed callable: the only thing ``REDUCE`` calls."""
    __slots__ = ('name', 'fn')

    def __init__(self, name: str, fn: Callable):
        self.name, self.fn = name, fn

    def __repr__(self):
        return f'<allowed {self.name}>'


class _StorageType:
    """A torch storage class named in a persistent id: its element dtype."""
    __slots__ = ('name', 'dtype')

    def __init__(self, name: str, dtype: torch.dtype):
        self.name, self.dtype = name, dtype


class _Storage:
    """Storage bytes read from the file (a 1-D ``uint8`` tensor) and their
    element dtype."""
    __slots__ = ('data', 'dtype')

    def __init__(self, data: torch.Tensor, dtype: torch.dtype):
        self.data, self.dtype = data, dtype

    def typed(self, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        dtype = dtype or self.dtype
        size = torch.empty(0, dtype=dtype).element_size()
        if self.data.numel() % size:
            raise _corrupt(f'a storage of {self.data.numel()} bytes read as {dtype}')
        return self.data.view(dtype) if self.data.numel() else torch.empty(0, dtype=dtype)

    @property
    def nbytes(self) -> int:
        return self.data.numel()


_STORAGE_DTYPES = {
    'FloatStorage': torch.float32, 'DoubleStorage': torch.float64,
    'HalfStorage': torch.float16, 'BFloat16Storage': torch.bfloat16,
    'LongStorage': torch.int64, 'IntStorage': torch.int32,
    'ShortStorage': torch.int16, 'CharStorage': torch.int8,
    'ByteStorage': torch.uint8, 'BoolStorage': torch.bool,
    'ComplexFloatStorage': torch.complex64,
    'ComplexDoubleStorage': torch.complex128, 'UntypedStorage': torch.uint8,
}

# Names in protocol 0-2 pickles written by Python 2.
_PY2_MODULES = {'__builtin__': 'builtins', 'copy_reg': 'copyreg'}
_PY2_NAMES = {'xrange': 'range', 'unicode': 'str', 'long': 'int'}

# Opcodes that push one constant (decoded by genops); _FIXED ones push the
# value given here.
_CONSTANTS = {name: None for name in (
    'INT', 'BININT', 'BININT1', 'BININT2', 'LONG', 'LONG1', 'LONG4', 'FLOAT',
    'BINFLOAT', 'STRING', 'BINSTRING', 'SHORT_BINSTRING', 'BINBYTES',
    'SHORT_BINBYTES', 'BINBYTES8', 'BYTEARRAY8', 'UNICODE', 'BINUNICODE',
    'SHORT_BINUNICODE', 'BINUNICODE8')}
_CONSTANTS.update(NONE=None, NEWTRUE=True, NEWFALSE=False)
_FIXED = ('NONE', 'NEWTRUE', 'NEWFALSE')

_UNSAFE_OPS = {
    'INST': 'it creates an object of a class (INST)',
    'OBJ': 'it creates an object of a class (OBJ)',
    'NEWOBJ_EX': 'it creates an object of a class (NEWOBJ_EX)',
    'EXT1': 'it asks for a registered extension object',
    'EXT2': 'it asks for a registered extension object',
    'EXT4': 'it asks for a registered extension object',
    'PERSID': 'a persistent id (a reference to an object outside the pickle)',
    'NEXT_BUFFER': 'an out-of-band buffer',
    'READONLY_BUFFER': 'an out-of-band buffer',
}


def _globals() -> Dict[Tuple[str, str], Any]:
    """The allow-list: ``{(module, name): value or _Call}`` (built once)."""
    if _GLOBALS:
        return _GLOBALS
    out: Dict[Tuple[str, str], Any] = {}

    def call(module, name, fn, *bound):
        out[(module, name)] = _Call(f'{module}.{name}', (
            lambda m, *args: fn(m, *bound, *args)) if bound else fn)

    M = _Machine
    for kind in (dict, list, tuple, set, frozenset):
        call('builtins', kind.__name__, M.container, kind)
    for kind in (collections.OrderedDict, collections.Counter):
        call('collections', kind.__name__, M.container, kind)
    for kind in (bytes, bytearray):
        call('builtins', kind.__name__, M.sized, kind)
    for kind in (str, int, float, bool, complex, slice):
        call('builtins', kind.__name__, M.scalar_call, kind)
    call('builtins', 'range', M.bounded_range)
    call('_codecs', 'encode', M.encode)
    for module in ('numpy.core.multiarray', 'numpy._core.multiarray'):
        call(module, '_reconstruct', M.reconstruct)
        call(module, 'scalar', M.scalar)
    for module in ('numpy.core.numeric', 'numpy._core.numeric'):
        call(module, '_frombuffer', M.frombuffer)
    out[('numpy', 'ndarray')] = np.ndarray
    call('numpy', 'dtype', lambda m, *args: _np_dtype(*args))
    for name in _NP_SCALARS:
        call('numpy', name, (lambda f: lambda m, *args: f(*args))(_np_type(name)))
        kind = type(np.dtype(getattr(np, name)))
        call('numpy.dtypes', kind.__name__,
             (lambda f: lambda m, *args: f(*args))(_np_dtype_class(kind)))
    for name in ('_rebuild_tensor', '_rebuild_tensor_v2'):
        call('torch._utils', name, M.rebuild_tensor)
    call('torch._utils', '_rebuild_tensor_v3', M.rebuild_tensor_v3)
    call('torch._utils', '_rebuild_parameter', M.parameter)
    call('torch.storage', '_load_from_bytes', M.from_bytes)
    call('torch', 'Size', M.torch_size)
    for name, dtype in _STORAGE_DTYPES.items():
        out[('torch', name)] = _StorageType(f'torch.{name}', dtype)
    out[('torch.storage', 'UntypedStorage')] = out[('torch', 'UntypedStorage')]
    for name in dir(torch):
        value = getattr(torch, name, None)
        if isinstance(value, torch.dtype):
            out[('torch', name)] = value
    _GLOBALS.update(out)
    return _GLOBALS


_GLOBALS: Dict[Tuple[str, str], Any] = {}
_RECORDS: Dict[Tuple[str, str], type] = {}


def _records() -> Dict[Tuple[str, str], type]:
    """PyG's graph containers that older processed files pickle as objects
    (their state: dicts of tensors and plain values)."""
    if not _RECORDS:
        from torch_geometric.data import data, storage
        for module, names in ((data, ('Data', 'DataEdgeAttr', 'DataTensorAttr')),
                              (storage, ('GlobalStorage', 'NodeStorage',
                                         'EdgeStorage'))):
            for name in names:
                if hasattr(module, name):
                    _RECORDS[(module.__name__, name)] = getattr(module, name)
    return _RECORDS


# ---------------------------------------------------------- torch formats --
def _storage_id(pid, legacy: bool) -> Tuple[_StorageType, str, int, Any]:
    if not isinstance(pid, tuple) or not pid or pid[0] not in ('storage', b'storage'):
        raise _unsafe(f'a persistent id {str(pid)[:60]!r} that is not a torch storage')
    parts = pid[1:]
    if len(parts) != (5 if legacy else 4):
        raise _corrupt('a torch storage id of the wrong length')
    kind, key, _location, numel = parts[:4]
    if not isinstance(kind, _StorageType):
        raise _unsafe('a torch storage of an unknown type')
    if not isinstance(key, str):
        raise _corrupt('a torch storage key that is not text')
    numel = _int(numel, 'a storage size')
    if numel < 0:
        raise _corrupt('a storage of negative size')
    return kind, key, numel, parts[4] if legacy else None


def _nbytes(kind: _StorageType, numel: int) -> int:
    return numel * torch.empty(0, dtype=kind.dtype).element_size()


def _read_zip(reader: _Reader, budget: Budget) -> Any:
    try:
        archive = zipfile.ZipFile(reader.f)
        names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError) as err:
        raise _corrupt(f'a damaged zip archive ({err})') from None
    pickles = [n for n in names if n == 'data.pkl' or n.endswith('/data.pkl')]
    if len(pickles) != 1:
        raise _corrupt('a zip archive that is not a torch file (no single data.pkl)')
    prefix = pickles[0][:-len('data.pkl')]
    infos = {i.filename: i for i in archive.infolist()}
    order = infos.get(prefix + 'byteorder')
    if order is not None and (order.file_size > 16 or archive.read(order).strip()
                              not in (b'little', b'')):
        raise _corrupt('a torch file saved on a big-endian machine')
    declared = sum(i.file_size for n, i in infos.items()
                   if n.startswith(prefix + 'data/') or n == pickles[0])
    if declared > budget.limit:
        raise budget.refusal(declared, 'the records of the zip archive')
    storages: Dict[str, _Storage] = {}

    def persistent(pid):
        kind, key, numel, _ = _storage_id(pid, legacy=False)
        if key not in storages:
            info = infos.get(f'{prefix}data/{key}')
            nbytes = _nbytes(kind, numel)
            if info is None or info.file_size != nbytes:
                raise _corrupt(f'storage {key} holds '
                               f'{"nothing" if info is None else info.file_size} '
                               f'bytes, not the {nbytes} its tensor needs')
            budget.charge(nbytes, f'tensor storage {key}')
            data = torch.empty(nbytes, dtype=torch.uint8)
            if nbytes:
                with archive.open(info) as f:
                    view = data.numpy()
                    got = f.readinto(view)
                    if got != nbytes:
                        raise _corrupt(f'storage {key} is truncated')
            storages[key] = _Storage(data, kind.dtype)
        return _Storage(storages[key].data, kind.dtype)

    data_pkl = archive.read(pickles[0])
    return _Machine(_Reader(io.BytesIO(data_pkl), len(data_pkl)), budget,
                    persistent).run()


def _read_legacy(reader: _Reader, budget: Budget) -> Any:
    protocol = _Machine(reader, budget).run()
    if protocol != LEGACY_PROTOCOL:
        raise _corrupt(f'a legacy torch file of protocol {protocol!r}')
    info = _Machine(reader, budget).run()
    if not isinstance(info, dict) or info.get('little_endian') is not True:
        raise _corrupt('a legacy torch file from a big-endian machine')
    storages: Dict[str, Tuple[_Storage, int]] = {}

    def persistent(pid):
        kind, key, numel, view = _storage_id(pid, legacy=True)
        nbytes = _nbytes(kind, numel)
        if key not in storages:
            # Its bytes come after the pickle: it cannot be larger than the
            # rest of the file.
            claimed = sum(s.nbytes for s, _ in storages.values()) + nbytes
            if claimed > reader.left():
                raise _corrupt(f'the storages claim {human(claimed)} but only '
                               f'{human(reader.left())} of the file are left')
            budget.charge(nbytes, f'tensor storage {key}')
            storages[key] = (_Storage(torch.zeros(nbytes, dtype=torch.uint8),
                                      kind.dtype), numel)
        root = storages[key][0]
        if view is None:
            return _Storage(root.data, kind.dtype)
        if not isinstance(view, tuple) or len(view) != 3:
            raise _corrupt('a storage view of the wrong form')
        size = _nbytes(kind, 1)
        start, length = _int(view[1], 'a view offset') * size, _int(view[2], 'a view size') * size
        if start < 0 or length < 0 or start + length > root.nbytes:
            raise _corrupt('a storage view outside its storage')
        return _Storage(root.data[start:start + length], kind.dtype)

    result = _Machine(reader, budget, persistent).run()
    keys = _Machine(reader, budget).run()
    if not isinstance(keys, list) or any(k not in storages for k in keys):
        raise _corrupt('the storage keys do not match the storages of the object')
    for key in keys:
        storage, numel = storages[key]
        head = reader.read(8)
        if len(head) != 8:
            raise _corrupt('the file ends before the data of its storages (truncated)')
        if struct.unpack('<q', head)[0] != numel:
            raise _corrupt(f'storage {key} holds another number of elements '
                           'than its tensor needs')
        if storage.nbytes:
            reader.readinto(storage.data.numpy())
    return result


def _read_torch_or_pickle(reader: _Reader, budget: Budget) -> Any:
    start = reader.tell()
    head = reader.read(512)
    reader.f.seek(start)
    if head.startswith(ZIP_MAGIC):
        return _read_zip(reader, budget)
    if len(head) >= 262 and head[257:262] == b'ustar':
        raise _corrupt('a torch file in the tar format of torch < 0.4 (not read)')
    first = _Machine(reader, budget).run()
    if type(first) is int and first == LEGACY_MAGIC:
        return _read_legacy(reader, budget)
    return first


def _expanded(obj: Any, budget: Budget) -> int:
    """The bytes ``obj`` takes when every shared reference is a copy, its
    nesting checked against :data:`MAX_DEPTH` and cycles refused
    (iterative: no recursion limit)."""
    sizes: Dict[int, int] = {}
    stack: List[Tuple[Any, int, bool]] = [(obj, 0, False)]
    open_ids = set()
    while stack:
        item, depth, done = stack.pop()
        key = id(item)
        if done:
            open_ids.discard(key)
            total = sum(sizes[id(c)] + 8 for c in _children(item))
            sizes[key] = total
            if total > budget.limit:
                raise budget.refusal(total, 'shared references (the same object '
                                            'many times over)')
            continue
        if key in sizes:
            continue
        own = _own_size(item)
        if own is not None:
            sizes[key] = own
            if own > budget.limit:
                raise budget.refusal(own, f'a {type(item).__name__}')
            continue
        if key in open_ids:
            raise _corrupt('an object that contains itself')
        if depth > MAX_DEPTH:
            raise _corrupt(f'data nested deeper than {MAX_DEPTH} levels')
        open_ids.add(key)
        stack.append((item, depth, True))
        for child in _children(item):
            if id(child) not in sizes:
                stack.append((child, depth + 1, False))
    return sizes[id(obj)]


def _children(item) -> List[Any]:
    if isinstance(item, dict):
        return [*item.keys(), *item.values()]
    if isinstance(item, (list, tuple, set, frozenset)):
        return list(item)
    if type(item) in _records().values():
        return [v for k, v in vars(item).items() if k != '_parent']
    return []


def _own_size(item) -> Optional[int]:
    """The size of a leaf; ``None`` for a container."""
    if isinstance(item, (dict, list, tuple, set, frozenset)) or \
            type(item) in _records().values():
        return None
    if isinstance(item, torch.Tensor):
        return item.numel() * item.element_size()
    if isinstance(item, np.ndarray):
        return int(item.size) * max(1, item.itemsize)
    if isinstance(item, (str, bytes, bytearray)):
        return len(item)
    if isinstance(item, range):
        return 8 * len(item)
    if isinstance(item, _Storage):  # only tensors hand their storage out
        raise _corrupt('a bare tensor storage outside any tensor (not read)')
    return 8


# -------------------------------------------------------------------- API --
Source = Union[str, os.PathLike, BinaryIO]


def load(source: Source, limit: Optional[int] = None) -> Any:
    """The contents of ``source`` (a path, or a binary file object positioned
    at the start of the data), read by the machine of the module docstring:
    a plain pickle, or a torch file in its zip or legacy format.

    ``limit``: the bytes it may build (default :func:`budget_for` its size).
    Raises :class:`UnsafePickleError`, :class:`OversizePickleError` or
    :class:`CorruptPickleError` (each naming the file); :class:`OSError`
    when it cannot be opened."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, 'rb') as f:
            return _load(f, path, limit)
    name = getattr(source, 'name', None) or getattr(source, 'path', None)
    return _load(source, str(name) if name else '<stream>', limit)


def _load(f: BinaryIO, path: str, limit: Optional[int]) -> Any:
    start = f.tell()
    f.seek(0, os.SEEK_END)
    size = f.tell() - start
    f.seek(start)
    if size == 0:
        raise CorruptPickleError(path, 'the file is empty')
    budget = Budget(budget_for(size) if limit is None else limit, size)
    reader = _Reader(f, start + size)
    try:
        result = _read_torch_or_pickle(reader, budget)
        _expanded(result, budget)
    except _Refused as err:
        raise err.kind(path, err.why) from None
    return result
