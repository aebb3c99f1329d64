"""Declarations of the config checks, and how a group's declarations are
collected.

Each config group has a ``declare()`` function that declares, with the
functions here, the choices, ranges, cross-key rules, ineffective keys,
unused GraphGym keys and advice of its keys, and which of them are volatile
(outside the run fingerprint) or resumable. :func:`collect` runs one
``declare()`` and returns what it declared as a :class:`Declarations`
value; a declaration function called outside :func:`collect` raises
``RuntimeError`` (nothing is declared by importing a module).

The declarations of every group are collected by
:func:`graphgps_ext.config.groups.declarations`, once per set of groups,
the first time a check reads them.
"""
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional,
                    Sequence, Tuple, Union)

from yacs.config import CfgNode

from graphgps_ext.branches import layer_type_of

Text = Union[str, Callable[[CfgNode], str]]
Check = Callable[[CfgNode], Optional[str]]


@dataclass
class Ignored:
    """A declaration of :func:`ignored`."""
    keys: Sequence[str]
    unless: Callable[[CfgNode], bool]
    why: Text
    fix: Text
    used: Optional[Callable[[CfgNode], Any]]
    in_file: str


def _frozen_map() -> Mapping:
    return MappingProxyType({})


@dataclass(frozen=True)
class Declarations:
    """Declarations in the order they were made (read-only)."""
    #: The allowed values of enumerated keys (:func:`choices`).
    choices: Mapping[str, Tuple] = field(default_factory=_frozen_map)
    #: Keys that take ``'auto'`` or a boolean (:func:`auto_or_bool`).
    auto_bool: Tuple[str, ...] = ()
    #: Keys (or ``group.*``) outside the run fingerprint (:func:`volatile`).
    volatile: Tuple[str, ...] = ()
    #: Keys that a resumed run may change (:func:`resumable`).
    resumable: Tuple[str, ...] = ()
    #: ``(key, test(value) -> bool, requirement)`` of numeric keys
    #: (:func:`bounded` and its shorthands).
    bounds: Tuple[Tuple[str, Callable[[Any], bool], str], ...] = ()
    #: Checks across keys: ``fn(cfg) -> error message or None`` (:func:`rule`).
    rules: Tuple[Check, ...] = ()
    #: Warnings: ``fn(cfg) -> message or None`` (:func:`advice`).
    advice: Tuple[Check, ...] = ()
    #: Ineffective keys (:func:`ignored`).
    ignored: Tuple[Ignored, ...] = ()
    #: GraphGym keys this project does not read -> the key to use instead
    #: (``''`` = none) (:func:`unused`).
    unused: Mapping[str, str] = field(default_factory=_frozen_map)

    def __add__(self, other: 'Declarations') -> 'Declarations':
        """Both, ``other``'s after ``self``'s; a key declared again in
        ``choices`` or ``unused`` keeps its place and takes the new value."""
        merged = {}
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            merged[f.name] = (MappingProxyType({**a, **b})
                              if isinstance(a, Mapping) else a + b)
        return Declarations(**merged)

    def __len__(self) -> int:
        """The number of entries: one per key of the choices, ``auto`` or
        boolean keys, volatile and resumable keys, ranges and unused keys,
        one per rule, advice and :func:`ignored` declaration."""
        return sum(len(getattr(self, f.name)) for f in fields(self))

    def keys(self) -> List[str]:
        """Every dotted key (or ``group.*`` pattern) named by a
        declaration (rules and advice name theirs in their messages)."""
        out = [*self.choices, *self.auto_bool, *self.volatile,
               *self.resumable, *(key for key, _, _ in self.bounds),
               *(key for dec in self.ignored for key in dec.keys),
               *self.unused]
        return list(dict.fromkeys(out))


class _Step:
    """The declarations of the step being run (mutable until it ends)."""

    def __init__(self, name: str):
        self.name = name
        self.choices: Dict[str, Tuple] = {}
        self.auto_bool: List[str] = []
        self.volatile: List[str] = []
        self.resumable: List[str] = []
        self.bounds: List[tuple] = []
        self.rules: List[Check] = []
        self.advice: List[Check] = []
        self.ignored: List[Ignored] = []
        self.unused: Dict[str, str] = {}

    def frozen(self) -> Declarations:
        return Declarations(**{
            f.name: (MappingProxyType(dict(getattr(self, f.name)))
                     if f.name in ('choices', 'unused')
                     else tuple(getattr(self, f.name)))
            for f in fields(Declarations)})


#: The step being collected (each thread and context its own).
_STEP: ContextVar[Optional[_Step]] = ContextVar('config declaration step', default=None)


def collect(declare: Callable[[], None], name: str = '') -> Declarations:
    """Run ``declare()``, which calls the declaration functions of this
    module, and return what it declared (in order). Collections may nest:
    each returns its own declarations."""
    token = _STEP.set(_Step(name or getattr(declare, '__qualname__', 'declare')))
    try:
        declare()
        return _STEP.get().frozen()
    finally:
        _STEP.reset(token)


def _open() -> _Step:
    step = _STEP.get()
    if step is None:
        raise RuntimeError(
            "config checks are declared inside a config group's declare() "
            '(collected by graphgps_ext.config.rules.collect), not when a module '
            'is imported')
    return step


def choices(key: str, values: Iterable):
    """Declare the allowed values of the dotted config ``key``."""
    _open().choices[key] = tuple(values)


def auto_or_bool(key: str):
    """Declare the dotted config ``key`` as ``'auto'``, ``True`` or ``False``
    (default ``'auto'``; ``true``/``false`` in any case read as booleans)."""
    step = _open()
    step.auto_bool.append(key)
    step.choices[key] = ('auto', True, False)


def volatile(*keys: str):
    """Declare dotted keys (or ``group.*``) that never change results:
    paths, logging, thread and worker counts, speed switches whose results
    equal the plain path's. They are left out of the run fingerprint."""
    _open().volatile.extend(keys)


def resumable(*keys: str):
    """Declare dotted keys that a resumed run may change (they take effect
    from the next epoch); changing any other fingerprinted key on resume is
    refused."""
    _open().resumable.extend(keys)


def bounded(key: str, test: Callable[[Any], bool], requirement: str):
    """Declare that the numeric ``key`` must pass ``test`` (described by
    ``requirement``, e.g. ``'-1 or >= 1'``)."""
    _open().bounds.append((key, test, requirement))


def probability(*keys: str):
    """Declare keys that are probabilities in [0, 1) (dropout rates)."""
    for key in keys:
        bounded(key, lambda v: 0 <= v < 1, 'a probability in [0, 1)')


def positive(*keys: str):
    """Declare counts and sizes that must be positive (>= 1 for integers)."""
    for key in keys:
        bounded(key, lambda v: v > 0, 'positive')


def non_negative(*keys: str):
    """Declare keys that must be >= 0."""
    for key in keys:
        bounded(key, lambda v: v >= 0, '>= 0')


def at_most(limit: int, *keys: str):
    """Declare a sane upper bound on sizes and counts (layers, widths,
    heads, batch sizes, epochs): a mistyped value (``gt.layers
    1000000000000``) is refused at start, naming the key, instead of
    allocating until the machine runs out of memory."""
    for key in keys:
        bounded(key, lambda v, m=limit: v <= m, f'at most {limit:,}')


def rule(fn: Check) -> Check:
    """Declare a check across keys: ``fn(cfg)`` returns an error message
    (naming the keys and what to change) or ``None``. Runs after every
    single-key check passed."""
    _open().rules.append(fn)
    return fn


def advice(fn: Check) -> Check:
    """Declare a warning: ``fn(cfg)`` returns a message (naming the keys and
    what to change) for a config that runs but probably not as intended, or
    ``None``. Logged at the start of the run."""
    _open().advice.append(fn)
    return fn


def ignored(*keys: str, unless: Callable[[CfgNode], bool], why: Text,
            fix: Text = '', used: Optional[Callable[[CfgNode], Any]] = None,
            in_file: str = 'error'):
    """Declare ``keys`` (dotted, or ``group.*``) that have no effect unless
    ``unless(cfg)``.

    ``why`` (text or ``fn(cfg) -> text``) names the key that makes them
    ineffective; ``fix`` says how to make them effective instead of removing
    them. ``used(cfg)``: the value the run uses instead (default: the key's
    default). A key set to another value is an
    error; with ``in_file='warn'`` (keys of an alternative that is not
    selected, e.g. the options of a branch that is not in ``gt.layer_type``)
    a config file that sets it only gets a warning, so that one file serves
    its ablations. Keys already reported by an earlier declaration are
    skipped (declare a whole group before its single keys).
    """
    if in_file not in ('error', 'warn'):
        raise ValueError(f"in_file must be 'error' or 'warn', got {in_file!r}")
    _open().ignored.append(Ignored(keys, unless, why, fix, used, in_file))


def unused(*keys: str, instead: str = ''):
    """Declare GraphGym keys that this project does not read; setting one is
    an error that points to ``instead`` (the key to use)."""
    step = _open()
    for key in keys:
        step.unused[key] = instead


def has_branch(cfg: CfgNode, *names: str) -> bool:
    """Whether ``gt.layer_type`` has one of the branches ``names`` (never
    for a value that is not three parts: the ``gt`` group reports it)."""
    layer_type = layer_type_of(cfg)
    return layer_type is not None and layer_type.has(*names)
