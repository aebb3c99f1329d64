"""Reading config files and ``KEY VALUE`` overrides into a config: safe
YAML parsing (duplicate keys, alias bombs refused), type coercion to each
key's default, and merging with unknown keys named."""
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml
from yacs.config import CfgNode

from graphgps_ext.config.keys import (COMMAND_LINE, ConfigError, UnknownKeys,
                                      all_keys, did_you_mean, get_key, leaf_keys)
from graphgps_ext.config.groups import declarations


#: Bounds on a config file's node tree once YAML aliases are expanded (a
#: config has a few hundred nodes): a few nested aliases (the "billion laughs"
#: file) would otherwise expand to billions of values.
YAML_MAX_NODES = 100_000
YAML_MAX_DEPTH = 64


_MERGE = 'tag:yaml.org,2002:merge'


def _key(loader, key_node):
    return loader.construct_object(key_node, deep=True) \
        if isinstance(key_node, yaml.ScalarNode) else id(key_node)


def _merge_sources(node) -> List[Any]:
    """The mappings that ``<<`` keys of the mapping ``node`` merge in, in
    order (``<<: *a`` or ``<<: [*a, *b]``; anything else is left to the
    YAML constructor's own error)."""
    out = []
    for key_node, value in node.value:
        if key_node.tag == _MERGE:
            items = value.value if isinstance(value, yaml.SequenceNode) else [value]
            out += [v for v in items if isinstance(v, yaml.MappingNode)]
    return out


def _mapping_keys(loader, node, memo: Dict[int, Dict[Any, Any]]) -> Dict[Any, Any]:
    """``{key: value node}`` of what the mapping ``node`` holds once its own
    merges are applied (its keys first, then each merge's, the first
    winning, as YAML does)."""
    if id(node) not in memo:
        keys: Dict[Any, Any] = {}
        for key_node, value in node.value:
            if key_node.tag != _MERGE:
                keys.setdefault(_key(loader, key_node), value)
        for source in _merge_sources(node):
            for k, v in _mapping_keys(loader, source, memo).items():
                keys.setdefault(k, v)
        memo[id(node)] = keys
    return memo[id(node)]


def _merge_error(loader, node, explicit: Dict[Any, int], prefix: str,
                 memo: Dict[int, Dict[Any, Any]]) -> Optional[str]:
    """Why the ``<<`` merges of the mapping ``node`` would lose a value
    silently, else ``None``: a key that two merged mappings set (YAML keeps
    the first) and that the mapping does not set itself, or a group that the
    mapping sets itself over a merged group (a merge is shallow: the merged
    group's keys would be dropped whole). ``explicit``: the mapping's own
    keys and their lines."""
    sources = list({id(n): n for n in _merge_sources(node)}.values())  # each mapping once
    merged: Dict[Any, Tuple[int, Any]] = {}
    for source in sources:
        for k, v in _mapping_keys(loader, source, memo).items():
            line = source.start_mark.line + 1
            # The same value node through two merges (both merge one anchor) loses nothing.
            if k in merged and k not in explicit and merged[k][1] is not v:
                first = merged[k][0]
                where = f'line {line}' if line == first else f'lines {first} and {line}'
                return (f"key '{prefix}{k}' is set by two merged mappings ('<<', the "
                        f'mappings at {where}): YAML would silently keep the first and '
                        f"drop the other; set '{k}' in only one of them, or set "
                        f"'{prefix}{k}' explicitly beside the '<<'")
            merged.setdefault(k, (line, v))
    for k, line in explicit.items():
        if k in merged and isinstance(merged[k][1], yaml.MappingNode):
            own = next(v for kn, v in node.value if kn.tag != _MERGE and _key(loader, kn) == k)
            if isinstance(own, yaml.MappingNode):
                return (f"group '{prefix}{k}' (line {line}) replaces the group '{k}' merged "
                        f"in by '<<' (line {merged[k][0]}) whole: a YAML merge is shallow, so "
                        'the merged keys of that group would be silently dropped; write the '
                        'keys of the group out in full, without the merge')
    return None


def _duplicate_key_error(loader, node, prefix: str = '',
                         memo: Optional[Dict[int, Dict[Any, Any]]] = None) -> Optional[str]:
    """The first key given twice in one mapping under ``node`` (YAML keeps
    the last silently), named with its dotted path and both lines, else
    ``None``. Keys merged in by ``<<: *anchor`` may be overridden by a value
    of the mapping itself; a key two merges set, or a group replaced over a
    merged group, is refused too (:func:`_merge_error`)."""
    memo = {} if memo is None else memo
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            problem = _duplicate_key_error(loader, item, prefix, memo)
            if problem:
                return problem
    if not isinstance(node, yaml.MappingNode):
        return None
    seen: Dict[Any, int] = {}
    for key_node, value in node.value:
        if key_node.tag == _MERGE:
            continue
        key = _key(loader, key_node)
        line = key_node.start_mark.line + 1
        if key in seen:
            lines = f'line {line}' if line == seen[key] else \
                f'lines {seen[key]} and {line}'
            return (f"key '{prefix}{key}' is given twice ({lines}): YAML would "
                    'silently keep the second and drop the first; merge the two '
                    'into one')
        seen[key] = line
        problem = _duplicate_key_error(loader, value, f'{prefix}{key}.', memo)
        if problem:
            return problem
    return _merge_error(loader, node, seen, prefix, memo)


def _yaml_size_error(root) -> Optional[str]:
    """Why the node graph under ``root`` is too large once aliases are
    expanded (more than :data:`YAML_MAX_NODES` nodes, deeper than
    :data:`YAML_MAX_DEPTH`, or an alias inside its own anchor), else ``None``.
    Linear in the file: each distinct node is sized once."""
    size: Dict[int, int] = {}
    depth: Dict[int, int] = {}
    open_ = set()
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = []
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if done:
            open_.discard(id(node))
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
            depth[id(node)] = 1 + max((depth[id(c)] for c in children), default=0)
            line = node.start_mark.line + 1
            if size[id(node)] > YAML_MAX_NODES:
                return (f'its aliases expand to more than {YAML_MAX_NODES:,} values '
                        f'(from line {line}); a config has a few hundred')
            if depth[id(node)] > YAML_MAX_DEPTH:
                return (f'it nests deeper than {YAML_MAX_DEPTH} levels (from line '
                        f'{line}); a config has groups of keys, two or three deep')
            continue
        if id(node) in size:
            continue
        if id(node) in open_:
            return (f'the value anchored at line {node.start_mark.line + 1} holds an '
                    'alias to itself (a recursive alias)')
        open_.add(id(node))
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)
    return None


def _load_yaml(stream, path: str):
    """The document in ``stream``, read by PyYAML's safe loader (no Python
    objects, no code), refused with :class:`ConfigError` when its aliases
    expand beyond the bounds or a mapping gives a key twice."""
    loader = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)(stream)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        problem = _yaml_size_error(node)
        if problem:
            raise ConfigError(f"config file '{path}' is refused: {problem}")
        problem = _duplicate_key_error(loader, node)
        if problem:
            raise ConfigError(f"config file '{path}': {problem}")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def read_yaml(path: str) -> dict:
    """The mapping of a YAML config file, read with a safe loader (no Python
    objects, no code). Raises :class:`ConfigError` for anything that is not a
    readable, non-empty YAML mapping with a ``.yaml`` / ``.yml`` name."""
    if os.path.splitext(path)[1].lower() not in ('.yaml', '.yml'):
        raise ConfigError(
            f"config file '{path}' is not a YAML file: --cfg takes a .yaml or "
            '.yml file (Python config files are not supported, so that '
            'loading a config never runs code)')
    if os.path.isdir(path):
        raise ConfigError(f"config file '{path}' is a directory, not a YAML file")
    if not os.path.isfile(path):
        raise ConfigError(f"config file '{path}' does not exist")
    try:
        with open(path, encoding='utf-8') as f:
            data = _load_yaml(f, path)
    except UnicodeDecodeError as err:
        raise ConfigError(f"config file '{path}' is not UTF-8 text ({err.reason} "
                          f'at byte {err.start})') from None
    except yaml.YAMLError as err:
        where = getattr(err, 'problem_mark', None)
        at = f' (line {where.line + 1}, column {where.column + 1})' if where else ''
        what = getattr(err, 'problem', None) or str(err).splitlines()[0]
        raise ConfigError(f"config file '{path}' is not valid YAML{at}: {what}"
                          ) from None
    except OSError as err:
        raise ConfigError(f"config file '{path}' cannot be read: "
                          f'{err.strerror or err}') from None
    if data is None or data == {}:
        raise ConfigError(
            f"config file '{path}' is empty: it sets no keys, so the run would "
            'silently use the package defaults. Start from a shipped config '
            '(e.g. configs/quickstart.yaml) or write the keys you mean')
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file '{path}' must be a mapping of config groups to keys "
            f"(e.g. 'optim:' then '  base_lr: 0.001'), not a "
            f'{type(data).__name__}')
    return data


def _type_name(value) -> str:
    return {bool: 'a boolean (True/False)', int: 'an integer', float: 'a number',
            str: 'a string', list: 'a list', tuple: 'a list'}.get(
                type(value), type(value).__name__)


def coerce(key: str, value, default, where: str):
    """``value`` for the key whose default is ``default``: an integer where a
    float is expected becomes a float, a tuple a list (and back); any other
    type change raises :class:`ConfigError` naming the expected type."""
    if default is None:
        return value
    if key in declarations().auto_bool:
        if isinstance(value, str) and value.lower() in ('true', 'false'):
            return value.lower() == 'true'
        if isinstance(value, bool) or value == 'auto':
            return value
        raise ConfigError(f"bad value {value!r} for '{key}' ({where}): expected "
                          "'auto', True or False")
    if isinstance(value, str) and not isinstance(default, str):
        # As yacs reads a value: a Python literal in text (YAML 1.1 reads
        # '1e-5', without a dot, as a string).
        value = CfgNode._decode_cfg_value(value)
    if type(value) is type(default):
        return value
    if isinstance(default, float) and isinstance(value, int) \
            and not isinstance(value, bool):
        return float(value)
    if isinstance(default, (list, tuple)) and isinstance(value, (list, tuple)):
        return type(default)(value)
    if isinstance(default, CfgNode):
        raise ConfigError(f"'{key}' ({where}) is a group of keys, not a value: "
                          f"write '{key}:' followed by indented keys, or set "
                          f"'{key}.<name>'")
    raise ConfigError(f"bad value {value!r} for '{key}' ({where}): expected "
                      f'{_type_name(default)} like {default!r}, got '
                      f'{_type_name(value)}')


def _coerce_tree(cfg: CfgNode, data: dict, where: str, prefix: str = '') -> dict:
    out = {}
    for k, v in data.items():
        full = f'{prefix}{k}'
        if k not in cfg:
            out[k] = v  # reported as an unknown key
        elif isinstance(cfg[k], CfgNode) and isinstance(v, dict):
            out[k] = _coerce_tree(cfg[k], v, where, full + '.')
        elif isinstance(cfg[k], CfgNode) and v is None:
            out[k] = {}  # an empty group
        else:
            out[k] = coerce(full, v, cfg[k], where)
    return out


def merge_file(cfg: CfgNode, path: str) -> List[str]:
    """Merge a YAML file into ``cfg`` (:func:`read_yaml`), rejecting unknown
    keys clearly; returns the dotted keys the file sets."""
    return merge_data(cfg, read_yaml(path), path)


def merge_data(cfg: CfgNode, data: dict, path: str) -> List[str]:
    """Merge the parsed contents ``data`` of the config file ``path`` (e.g. a
    translated GraphGPS config, :mod:`graphgps_ext.compat`) into ``cfg``,
    rejecting unknown keys clearly; returns the dotted keys it sets."""
    data = _coerce_tree(cfg, data, f'in {path}')
    keys = leaf_keys(data)
    # 'auto'-or-boolean keys change type: set directly (yacs' merge refuses).
    direct = {}
    for key in declarations().auto_bool:
        *parents, last = key.split('.')
        node = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and last in node:
            direct[key] = node.pop(last)
    try:
        other = CfgNode(data)
    except (AssertionError, TypeError, ValueError) as err:  # e.g. a date value
        raise ConfigError(f'{path}: {err}') from None
    unknown = _unknown_keys(cfg, other, path)
    if unknown:  # all of them at once
        raise UnknownKeys.listing(unknown)
    try:
        cfg.merge_from_other_cfg(other)
    except ValueError as err:  # yacs type mismatch
        raise ConfigError(f'{path}: {err}') from None
    for key, value in direct.items():
        *parents, last = key.split('.')
        get_key(cfg, '.'.join(parents))[last] = value
    return keys


def check_overrides(opts: Sequence[str]):
    """Refuse a user's ``KEY VALUE`` overrides that are not pairs or that
    give a key twice (the last would silently win). Callers that append
    their own keys (``seed`` per seed) merge with :func:`merge_list`, where
    the last value wins."""
    opts = list(opts)
    if len(opts) % 2:
        raise ConfigError(f'overrides must come in KEY VALUE pairs, got {opts}')
    given: Dict[str, str] = {}
    for key, value in zip(opts[0::2], opts[1::2]):
        if key in given:
            raise ConfigError(
                f"config key '{key}' is given twice on the command line "
                f'({given[key]!r} and {value!r}): the last would silently win; '
                'give it once')
        given[key] = value


def merge_list(cfg: CfgNode, opts: Optional[Sequence[str]]) -> List[str]:
    """Merge ``KEY VALUE`` overrides, rejecting unknown keys clearly; returns
    the keys."""
    opts = list(opts or [])
    if len(opts) % 2:
        raise ConfigError(f'overrides must come in KEY VALUE pairs, got {opts}')
    keys = all_keys(cfg)
    unknown = [f"unknown config key '{key}' on the command line"
               + did_you_mean(key, keys, 3) for key in opts[0::2] if key not in keys]
    if unknown:  # all of them at once
        raise UnknownKeys.listing(unknown)
    for i in range(0, len(opts), 2):
        key = opts[i]
        value = opts[i + 1]
        if isinstance(value, str):  # as yacs reads it: a Python literal or text
            value = CfgNode._decode_cfg_value(value)
        *path, last = key.split('.')
        node = get_key(cfg, '.'.join(path)) if path else cfg
        node[last] = coerce(key, value, node[last], COMMAND_LINE)
    return [str(k) for k in opts[0::2]]



def _unknown_keys(cfg: CfgNode, other: CfgNode, source: str, prefix: str = ''
                  ) -> List[str]:
    """A message for every key of ``other`` that ``cfg`` does not have."""
    keys = all_keys(cfg, prefix)
    out = []
    for k, v in other.items():
        full = f'{prefix}{k}'
        if k not in cfg:
            out.append(f"unknown config key '{full}' in {source}"
                       + did_you_mean(full, keys, 3))
        elif isinstance(v, CfgNode) and isinstance(cfg[k], CfgNode):
            out += _unknown_keys(cfg[k], v, source, full + '.')
    return out

