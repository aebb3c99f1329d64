"""Configuration: GraphGym's ``cfg`` extended with this project's groups.

Each group lives in its own module of this package and is registered
explicitly in :mod:`graphgps_ext.register`.  A group module may declare the
allowed values of its enumerated keys with :func:`choices`; :func:`load_cfg`
then rejects an unknown key or a bad value with a message naming the closest
valid ones.
"""
import difflib
from typing import Dict, Iterable, List, Optional, Sequence

from yacs.config import CfgNode

_CHOICES: Dict[str, List] = {}
# Keys that never change a run's results (paths, logging, threads, speed
# switches): outside the run fingerprint (:mod:`graphgps_ext.identity`).
_VOLATILE: List[str] = []
# Keys that a resumed run may change (optimiser hyper-parameters): they take
# effect from the next epoch instead of being refused.
_RESUMABLE: List[str] = []


class ConfigError(ValueError):
    """An unknown key or an invalid value in a config file or override."""


def choices(key: str, values: Iterable):
    """Declare the allowed values of the dotted config ``key``."""
    _CHOICES[key] = list(values)


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


def key_matches(key: str, patterns: Iterable[str]) -> bool:
    """Whether dotted ``key`` is one of ``patterns`` (``group.*`` matches
    every key below ``group``)."""
    for pat in patterns:
        if key == pat or (pat.endswith('.*') and key.startswith(pat[:-1])):
            return True
    return False


def volatile_keys() -> List[str]:
    return list(_VOLATILE)


def resumable_keys() -> List[str]:
    return list(_RESUMABLE)


def _all_keys(node: CfgNode, prefix: str = '') -> List[str]:
    out = []
    for k, v in node.items():
        full = f'{prefix}{k}'
        out.append(full)
        if isinstance(v, CfgNode):
            out.extend(_all_keys(v, full + '.'))
    return out


def closest(word: str, candidates: Sequence[str], n: int = 3) -> List[str]:
    """The ``n`` closest strings to ``word`` (difflib ratio), best first."""
    found = difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.5)
    if not found:  # fall back on the last dotted component
        tail = word.split('.')[-1]
        found = [c for c in candidates if c.split('.')[-1] == tail][:n]
    return found


def _check_keys(cfg: CfgNode, other: CfgNode, source: str, prefix: str = ''):
    keys = _all_keys(cfg, prefix)
    for k, v in other.items():
        full = f'{prefix}{k}'
        if k not in cfg:
            hint = closest(full, keys)
            msg = f"unknown config key '{full}' in {source}"
            if hint:
                msg += '; did you mean ' + ' or '.join(f"'{h}'" for h in hint) + '?'
            raise ConfigError(msg)
        if isinstance(v, CfgNode) and isinstance(cfg[k], CfgNode):
            _check_keys(cfg[k], v, source, full + '.')


def check_values(cfg: CfgNode):
    """Raise :class:`ConfigError` for a value outside its declared choices."""
    for key, allowed in _CHOICES.items():
        node = cfg
        parts = key.split('.')
        for p in parts[:-1]:
            node = node.get(p) if isinstance(node, CfgNode) else None
            if node is None:
                break
        if not isinstance(node, CfgNode) or parts[-1] not in node:
            continue
        value = node[parts[-1]]
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v not in allowed:
                hint = closest(str(v), [str(a) for a in allowed])
                msg = (f"bad value {v!r} for '{key}'; valid values: "
                       + ', '.join(repr(a) for a in allowed))
                if hint:
                    msg += f"; did you mean {hint[0]!r}?"
                raise ConfigError(msg)


def merge_file(cfg: CfgNode, path: str):
    """Merge a YAML file into ``cfg``, rejecting unknown keys clearly."""
    with open(path) as f:
        other = cfg.load_cfg(f)
    _check_keys(cfg, other, path)
    try:
        cfg.merge_from_other_cfg(other)
    except ValueError as err:  # yacs type mismatch
        raise ConfigError(f'{path}: {err}') from None


def merge_list(cfg: CfgNode, opts: Optional[Sequence[str]]):
    """Merge ``KEY VALUE`` overrides, rejecting unknown keys clearly."""
    opts = list(opts or [])
    if len(opts) % 2:
        raise ConfigError(f'overrides must come in KEY VALUE pairs, got {opts}')
    keys = _all_keys(cfg)
    for key in opts[0::2]:
        if key not in keys:
            hint = closest(key, keys)
            msg = f"unknown config key '{key}' on the command line"
            if hint:
                msg += '; did you mean ' + ' or '.join(f"'{h}'" for h in hint) + '?'
            raise ConfigError(msg)
    try:
        cfg.merge_from_list(opts)
    except ValueError as err:
        raise ConfigError(f'command line: {err}') from None


def merge_node(cfg: CfgNode, other: CfgNode, source: str):
    """Merge an already parsed config node (e.g. a translated GraphGPS config,
    :mod:`graphgps_ext.compat`), rejecting unknown keys clearly."""
    _check_keys(cfg, other, source)
    try:
        cfg.merge_from_other_cfg(other)
    except ValueError as err:  # yacs type mismatch
        raise ConfigError(f'{source}: {err}') from None
