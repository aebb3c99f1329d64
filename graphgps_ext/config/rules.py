"""Declarations of the config checks: each group module declares the
choices, ranges, cross-key rules, ineffective keys, unused GraphGym keys and
advice of its keys with the functions here; :mod:`graphgps_ext.config.validation`
runs them."""
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

from yacs.config import CfgNode

from graphgps_ext.branches import layer_type_of

# The allowed values of enumerated keys.
_CHOICES: Dict[str, List] = {}
# Keys that take 'auto' or a boolean.
_AUTO_BOOL: List[str] = []
# Keys that never change a run's results (paths, logging, threads, speed
# switches): outside the run fingerprint (:mod:`graphgps_ext.identity`).
_VOLATILE: List[str] = []
# Keys that a resumed run may change (optimiser hyper-parameters): they take
# effect from the next epoch instead of being refused.
_RESUMABLE: List[str] = []
# (key, test(value) -> bool, requirement) of numeric keys.
_BOUNDS: List[tuple] = []
# Checks across keys: fn(cfg) -> error message or None.
_RULES: List[Callable[[CfgNode], Optional[str]]] = []
# Advice: fn(cfg) -> warning or None.
_ADVICE: List[Callable[[CfgNode], Optional[str]]] = []
_IGNORED: List['Ignored'] = []
# GraphGym keys this project does not read -> what to use instead ('' = none).
_UNUSED: Dict[str, str] = {}

Text = Union[str, Callable[[CfgNode], str]]


def choices(key: str, values: Iterable):
    """Declare the allowed values of the dotted config ``key``."""
    _CHOICES[key] = list(values)


def auto_or_bool(key: str):
    """Declare the dotted config ``key`` as ``'auto'``, ``True`` or ``False``
    (default ``'auto'``; ``true``/``false`` in any case read as booleans)."""
    _AUTO_BOOL.append(key)
    _CHOICES[key] = ['auto', True, False]


def volatile(*keys: str):
    """Declare dotted keys (or ``group.*``) that never change results:
    paths, logging, thread and worker counts, speed switches whose results
    equal the plain path's. They are left out of the run fingerprint."""
    _VOLATILE.extend(keys)


def resumable(*keys: str):
    """Declare dotted keys that a resumed run may change (they take effect
    from the next epoch); changing any other fingerprinted key on resume is
    refused."""
    _RESUMABLE.extend(keys)


def bounded(key: str, test: Callable[[Any], bool], requirement: str):
    """Declare that the numeric ``key`` must pass ``test`` (described by
    ``requirement``, e.g. ``'-1 or >= 1'``)."""
    _BOUNDS.append((key, test, requirement))


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


def rule(fn: Callable[[CfgNode], Optional[str]]):
    """Declare a check across keys: ``fn(cfg)`` returns an error message
    (naming the keys and what to change) or ``None``. Runs after every
    single-key check passed."""
    _RULES.append(fn)
    return fn


def advice(fn: Callable[[CfgNode], Optional[str]]):
    """Declare a warning: ``fn(cfg)`` returns a message (naming the keys and
    what to change) for a config that runs but probably not as intended, or
    ``None``. Logged at the start of the run."""
    _ADVICE.append(fn)
    return fn


@dataclass
class Ignored:
    """A declaration of :func:`ignored`."""
    keys: Sequence[str]
    unless: Callable[[CfgNode], bool]
    why: Text
    fix: Text
    used: Optional[Callable[[CfgNode], Any]]
    in_file: str


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
    _IGNORED.append(Ignored(keys, unless, why, fix, used, in_file))


def unused(*keys: str, instead: str = ''):
    """Declare GraphGym keys that this project does not read; setting one is
    an error that points to ``instead`` (the key to use)."""
    for key in keys:
        _UNUSED[key] = instead


def has_branch(cfg: CfgNode, *names: str) -> bool:
    """Whether ``gt.layer_type`` has one of the branches ``names`` (never
    for a value that is not three parts: the ``gt`` group reports it)."""
    layer_type = layer_type_of(cfg)
    return layer_type is not None and layer_type.has(*names)



def volatile_keys() -> List[str]:
    return list(_VOLATILE)


def resumable_keys() -> List[str]:
    return list(_RESUMABLE)
