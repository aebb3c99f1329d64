r"""Run identity: which config a seed folder's results belong to.

A run's *identity* is its resolved config as requested (YAML file plus
``KEY VALUE`` overrides, before the dataset-dependent ``auto`` values are
filled in), flattened to ``{dotted key: value}``, without the keys that
cannot change its results: paths, logging, thread and worker counts, and the
speed switches whose results equal the plain path's. The config groups
declare those keys with :func:`graphgps_ext.config.volatile`. The
*fingerprint* is a short hash of the identity.

A finished seed's ``done`` marker records both (``fingerprint`` and
``identity``), so that a launcher can tell whether the results in a seed
folder were produced by the run it is about to launch
(:func:`seed_status`), and name the keys that differ when they were not::

    stale: optim.base_lr 0.001 -> 0.0005

On resume, :func:`resume_changes` splits the differences into those that may
take effect from the next epoch (optimiser hyper-parameters, declared with
:func:`graphgps_ext.config.resumable`) and those that must be refused (the
model, the data, the loss).
"""
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from yacs.config import CfgNode

from graphgps_ext.config import (effective_values, flatten, key_matches, resumable_keys,
                                 volatile_keys)
from graphgps_ext.run_dir import RunDir
from graphgps_ext.seed_folder import SeedFolderError, check_seed

#: Stands for a key that one of two identities does not have.
MISSING = '<missing>'

Change = Tuple[str, Any, Any]


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def identity(cfg: CfgNode) -> Dict[str, Any]:
    """The keys of ``cfg`` that can change a run's results, sorted."""
    skip = volatile_keys()
    flat = flatten(cfg)
    return {k: _plain(flat[k]) for k in sorted(flat) if not key_matches(k, skip)}


def fingerprint(ident: Dict[str, Any]) -> str:
    """A 16-hex-digit hash of an identity (stable across processes)."""
    text = json.dumps(ident, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def effective_fingerprint(cfg: CfgNode, defaults: CfgNode) -> str:
    """The fingerprint of the run ``cfg`` actually performs: its identity
    with every ineffective key (:func:`graphgps_ext.config.effective_values`)
    at the value the run uses. Two configs that differ only in keys without
    effect share it (a search runs them once)."""
    ident = identity(cfg)
    for key, used in effective_values(cfg, defaults).items():
        if key in ident:
            ident[key] = _plain(used)
    return fingerprint(ident)


def diff(old: Dict[str, Any], new: Dict[str, Any]) -> List[Change]:
    """``[(key, old value, new value)]`` for every key whose value differs,
    sorted by key (:data:`MISSING` where one side lacks the key)."""
    keys = sorted(set(old) | set(new))
    return [(k, old.get(k, MISSING), new.get(k, MISSING)) for k in keys
            if old.get(k, MISSING) != new.get(k, MISSING)]


def format_changes(changes: List[Change], limit: int = 8) -> str:
    """``'optim.base_lr 0.001 -> 0.0005, gt.layers 4 -> 6'`` (at most
    ``limit`` keys, then ``(+N more)``)."""
    parts = [f'{k} {a} -> {b}' for k, a, b in changes[:limit]]
    if len(changes) > limit:
        parts.append(f'(+{len(changes) - limit} more)')
    return ', '.join(parts)


def resume_changes(old: Dict[str, Any], new: Dict[str, Any]
                   ) -> Tuple[List[Change], List[Change]]:
    """``(allowed, refused)``: the changes between the identity a run was
    started with and the one it is resumed with; ``allowed`` are resumable
    keys, which take effect from the next epoch."""
    allowed, refused = [], []
    keys = resumable_keys()
    for change in diff(old, new):
        (allowed if key_matches(change[0], keys) else refused).append(change)
    return allowed, refused


@dataclass
class SeedStatus:
    """What a seed folder holds for a given identity.

    Attributes:
        state: ``'new'`` (no folder or an empty one), ``'unfinished'`` (a run
            started there and did not finish: running, interrupted or
            crashed), ``'complete'`` (finished with this identity),
            ``'damaged'`` (finished with this identity, but its files fail
            :func:`graphgps_ext.seed_folder.check_seed`: ``problem`` says
            which) or
            ``'stale'`` (finished with another identity; ``changes`` lists
            the differing keys, old -> new).
        changes: see ``state``.
        done: the ``done`` marker, when there is one.
    """
    state: str
    changes: List[Change] = field(default_factory=list)
    done: Optional[Dict[str, Any]] = None
    problem: str = ''

    def describe(self) -> str:
        if self.state == 'damaged':
            return f'damaged: {self.problem}'
        if self.state == 'stale':
            if not self.changes:
                return 'stale: finished without a recorded fingerprint'
            return 'stale: ' + format_changes(self.changes)
        return self.state


def seed_status(run_dir: str, ident: Dict[str, Any]) -> SeedStatus:
    """The :class:`SeedStatus` of ``run_dir`` for a run of identity ``ident``."""
    done = RunDir(run_dir).read_done()
    if done is None:
        busy = os.path.isdir(run_dir) and any(
            e in os.listdir(run_dir) for e in (RunDir.CONFIG, RunDir.CKPT,
                                               RunDir.SPLITS[0]))
        return SeedStatus('unfinished' if busy else 'new')
    if done.get('fingerprint') == fingerprint(ident):
        try:
            check_seed(run_dir, done)
        except SeedFolderError as err:
            return SeedStatus('damaged', done=done, problem=str(err))
        return SeedStatus('complete', done=done)
    old = done.get('identity')
    changes = diff(old, ident) if isinstance(old, dict) else []
    return SeedStatus('stale', changes, done)
