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

Two things beyond the config keys change a run's numbers:

- **the speed switches that change its random draws.** With dropout on
  (any ``*dropout*`` key above 0), ``train.static_shapes`` draws the masks
  for padded tensors and ``train.compile`` draws them with the compiler's
  generator: the same distribution, other numbers. They are then part of
  the identity (:data:`DRAW_KEYS`), when set to other than their defaults
  (so the fingerprints of runs at the defaults stay those of earlier
  versions). Without dropout they stay out, as every other speed switch;
- **the data actually read** (:data:`DATA_KEY`): ``done`` records
  ``data`` = ``{'fingerprint': <content hash of the graphs and splits the
  run read>, 'dir': <dataset.dir resolved>}`` (the hash:
  :func:`graphgps_ext.loader.fingerprint.content_fingerprint`). Before the
  data is loaded (a launcher's plan, ``--dry-run``, ``main.py``'s first
  look) :func:`seed_status` compares the folder: a seed finished on other
  data folder is ``stale`` (``dataset.dir <old> -> <new>``); ``main.py``
  then loads the data and compares the content before it skips a seed as
  ``complete``: the same content in a moved folder is complete, other
  content is stale (``data fingerprint <old> -> <new>``). A seed finished
  by an earlier version records no data: it is ``stale`` (its data is not
  known), readable by ``agg`` and ``report`` but never averaged with seeds
  that record theirs.

:func:`select_seeds` is the one rule by which ``agg`` and ``report`` choose
the seeds they average: each seed counted once
(:func:`graphgps_ext.results.seed_folder.list_seeds`), finished seeds of one config
on one data (fingerprint and data fingerprint), a mix refused
(:class:`MixedRunsError`) with what differs named.
"""
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from yacs.config import CfgNode

from graphgps_ext.config import (effective_values, flatten, key_matches, resumable_keys,
                                 volatile_keys)
from graphgps_ext.config.speed import DEFAULTS as SPEED_DEFAULTS
from graphgps_ext.results.seed_folder import SeedFolderError, check_seed, list_seeds
from graphgps_ext.results.tree import RunDir, RunRoot, UnsafePath

#: Stands for a key that one of two identities does not have.
MISSING = '<missing>'
#: Speed switches that change the random draws of a run with dropout: part
#: of its identity then (see the module docstring).
DRAW_KEYS = ('train.static_shapes', 'train.compile')
#: The data a run read, as the key of a change (not a config key).
DATA_KEY = 'data fingerprint'
#: The data folder, as the key of a change.
DATA_DIR_KEY = 'dataset.dir'

Change = Tuple[str, Any, Any]


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def dropout_on(flat: Dict[str, Any]) -> bool:
    """Whether a flat config draws dropout masks (a ``*dropout*`` key > 0)."""
    return any('dropout' in k.rsplit('.', 1)[-1] and isinstance(v, (int, float))
               and not isinstance(v, bool) and v > 0 for k, v in flat.items())


def identity(cfg: CfgNode) -> Dict[str, Any]:
    """The keys of ``cfg`` that can change a run's results, sorted: every
    key but the volatile ones, and the :data:`DRAW_KEYS` that differ from
    their defaults when dropout is on."""
    skip = volatile_keys()
    flat = flatten(cfg)
    draws = dropout_on(flat)
    return {k: _plain(flat[k]) for k in sorted(flat) if not key_matches(k, skip)
            or (draws and k in DRAW_KEYS and flat[k] != SPEED_DEFAULTS.get(k))}


def data_folder(cfg: CfgNode) -> str:
    """``dataset.dir`` resolved (user, links): the folder a run reads."""
    return os.path.realpath(os.path.expanduser(str(cfg.dataset.dir)))


def data_record(cfg: CfgNode, content: Optional[str] = None) -> Dict[str, Any]:
    """What ``done`` records of the data (``{'fingerprint', 'dir'}``), and
    what :func:`seed_status` compares: ``dir`` only before the data is
    loaded, ``content`` (its fingerprint) after."""
    out: Dict[str, Any] = {'dir': data_folder(cfg)}
    if content is not None:
        out['fingerprint'] = content
    return out


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
            crashed), ``'complete'`` (finished with this identity and data),
            ``'damaged'`` (finished with this identity, but its files fail
            :func:`graphgps_ext.results.seed_folder.check_seed`: ``problem`` says
            which) or
            ``'stale'`` (finished with another identity or other data;
            ``changes`` lists the differing keys, old -> new, ``problem``
            says why when there are none to list).
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
                return 'stale: ' + (self.problem or 'finished without a recorded '
                                    'fingerprint')
            return 'stale: ' + format_changes(self.changes)
        return self.state

    @property
    def data_moved(self) -> bool:
        """Stale only by its data folder (the content is yet to compare)."""
        return self.state == 'stale' and [c[0] for c in self.changes] == [DATA_DIR_KEY]


#: Why a seed of an earlier version is stale.
NO_DATA_RECORD = ('finished without a record of the data it read (an earlier '
                  'version); run it again with --overwrite to have it counted')


def recorded_data(done: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The ``data`` record of a ``done`` marker (``None``: none, or not one)."""
    data = done.get('data')
    if isinstance(data, dict) and isinstance(data.get('fingerprint'), str):
        return data
    return None


def seed_status(run_dir: str, ident: Dict[str, Any],
                data: Optional[Dict[str, Any]] = None) -> SeedStatus:
    """The :class:`SeedStatus` of ``run_dir`` for a run of identity ``ident``
    on ``data`` (:func:`data_record`: the folder before loading, and the
    content fingerprint after; ``None``: not compared). A folder reached
    through a symbolic link (:class:`~graphgps_ext.results.tree.UnsafePath`) is
    ``damaged``, its problem naming the link."""
    try:
        return _seed_status(run_dir, ident, data)
    except UnsafePath as err:
        return SeedStatus('damaged', problem=str(err))


def _seed_status(run_dir: str, ident: Dict[str, Any],
                 data: Optional[Dict[str, Any]]) -> SeedStatus:
    done = RunDir(run_dir).read_done()
    if done is None:
        busy = os.path.isdir(run_dir) and any(
            e in os.listdir(run_dir) for e in (RunDir.CONFIG, RunDir.CKPT,
                                               RunDir.SPLITS[0]))
        return SeedStatus('unfinished' if busy else 'new')
    if not done:  # not a JSON object: unreadable, nested too deep, edited
        try:
            check_seed(run_dir, done)
        except SeedFolderError as err:
            return SeedStatus('damaged', done=done, problem=str(err))
    if done.get('fingerprint') != fingerprint(ident):
        old = done.get('identity')
        changes = diff(old, ident) if isinstance(old, dict) else []
        return SeedStatus('stale', changes, done)
    mine = recorded_data(done)
    if mine is None:
        return SeedStatus('stale', [], done, NO_DATA_RECORD)
    if data is not None and 'fingerprint' in data:
        if data['fingerprint'] != mine['fingerprint']:
            return SeedStatus('stale', [(DATA_KEY, mine['fingerprint'], data['fingerprint'])]
                              + ([(DATA_DIR_KEY, mine.get('dir'), data.get('dir'))]
                                 if data.get('dir') != mine.get('dir') else []), done)
    elif data is not None and data.get('dir') != mine.get('dir'):
        return SeedStatus('stale', [(DATA_DIR_KEY, mine.get('dir'), data.get('dir'))],
                          done)
    try:
        check_seed(run_dir, done)
    except SeedFolderError as err:
        return SeedStatus('damaged', done=done, problem=str(err))
    return SeedStatus('complete', done=done)


# ------------------------------------------------------------- selection --
class MixedRunsError(ValueError):
    """Finished seeds of one folder were run with different configs or on
    different data."""


@dataclass
class SeedSelection:
    """The seeds of a run folder that ``agg`` and ``report`` use
    (:func:`select_seeds`).

    Attributes:
        finished: finished seeds of the one config and data chosen.
        unfinished: seeds without a ``done`` marker.
        other: finished seeds of another config or data (with
            ``fingerprint``: those of another config than it).
        duplicates, odd: as :class:`graphgps_ext.results.seed_folder.SeedListing`.
        key: the chosen ``(fingerprint, data fingerprint)``.
    """
    finished: List[int] = field(default_factory=list)
    unfinished: List[int] = field(default_factory=list)
    other: List[int] = field(default_factory=list)
    duplicates: List[str] = field(default_factory=list)
    odd: List[str] = field(default_factory=list)
    key: Optional[Tuple[Optional[str], Optional[str]]] = None


def _run_key(done: Dict[str, Any]) -> Tuple[Optional[str], Optional[str]]:
    data = recorded_data(done)
    fp = done.get('fingerprint')
    return (fp if isinstance(fp, str) else None,
            data['fingerprint'] if data is not None else None)


def _describe_data(run_root: RunRoot, seed: int, done: Dict[str, Any]) -> str:
    data = recorded_data(done)
    if data is None:
        return 'no record of its data (an earlier version)'
    info = run_root.seed(seed).read_data()
    sizes = info.get('sizes') if isinstance(info, dict) else None
    count = (f', {sum(v for v in sizes.values() if isinstance(v, int))} graphs'
             if isinstance(sizes, dict) else '')
    return f"data {data['fingerprint']} (from {data.get('dir')}{count})"


def _mixed_message(run_root: RunRoot, groups: Dict[Tuple, List[int]],
                   dones: Dict[int, Dict[str, Any]]) -> str:
    fps = {k[0] for k in groups}
    if len(fps) > 1:
        parts = [f'seeds {seeds} ({fp or "no fingerprint"})'
                 for fp, seeds in _merge(groups, 0).items()]
        msg = f'{run_root} holds runs of {len(fps)} different configs: ' + ', '.join(parts)
        (_, seeds_a), (_, seeds_b) = list(_merge(groups, 0).items())[:2]
        old, new = dones[seeds_a[0]].get('identity'), dones[seeds_b[0]].get('identity')
        if isinstance(old, dict) and isinstance(new, dict):
            msg += f'; they differ in {format_changes(diff(old, new))}'
        return (msg + '. Aggregate one config with --fingerprint FP, or move the '
                'other seeds to another folder')
    parts = [f'seeds {seeds}: {_describe_data(run_root, seeds[0], dones[seeds[0]])}'
             for seeds in groups.values()]
    return (f'{run_root} holds runs of one config on {len(groups)} different data: '
            + '; '.join(parts) + '. Their results are not comparable: move the '
            'seeds of the other data to another folder (or rerun them with '
            '--overwrite on the data you mean)')


def _merge(groups: Dict[Tuple, List[int]], i: int) -> Dict[Any, List[int]]:
    out: Dict[Any, List[int]] = {}
    for key, seeds in groups.items():
        out.setdefault(key[i], []).extend(seeds)
    return {k: sorted(v) for k, v in out.items()}


def select_seeds(root: Union[str, RunRoot], fingerprint: Optional[str] = None
                 ) -> SeedSelection:
    """The seeds of the run folder ``root`` that ``agg`` and ``report``
    average (see the module docstring): every seed counted once; finished
    seeds grouped by ``(fingerprint, data fingerprint)`` of their ``done``
    markers. Without ``fingerprint`` one group must remain; with it, the
    seeds of other configs are set apart in ``other`` and those of the
    fingerprint must share one data. Raises :class:`MixedRunsError` naming
    what differs, and :class:`~graphgps_ext.results.tree.UnsafePath` for a link
    out of the folder."""
    run_root = root if isinstance(root, RunRoot) else RunRoot(root, root)
    listing = list_seeds(run_root)
    out = SeedSelection(duplicates=listing.duplicates, odd=listing.odd)
    groups: Dict[Tuple, List[int]] = {}
    dones: Dict[int, Dict[str, Any]] = {}
    for name in listing.names:
        done = run_root.seed(name).read_done()
        if done is None:
            out.unfinished.append(int(name))
            continue
        if not done:  # not a JSON object: unreadable, nested too deep, edited
            check_seed(run_root.seed(name), done)  # raises, naming the file
        dones[int(name)] = done
        groups.setdefault(_run_key(done), []).append(int(name))
    if fingerprint is not None:
        out.other = sorted(s for k, seeds in groups.items() if k[0] != fingerprint
                           for s in seeds)
        groups = {k: v for k, v in groups.items() if k[0] == fingerprint}
    if len(groups) > 1:
        raise MixedRunsError(_mixed_message(run_root, groups, dones))
    if groups:
        out.key, out.finished = next(iter(groups.items()))
    return out
