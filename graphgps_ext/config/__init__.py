"""Configuration: GraphGym's ``cfg`` extended with this project's groups.

Each group lives in its own module of this package and is registered
explicitly in :mod:`graphgps_ext.register`.  A group module declares its keys
(the group function) and their checks, which :func:`load_cfg
<graphgps_ext.run_config.load_cfg>` runs at start, before any data is read:

- :func:`choices`: the allowed values of an enumerated key (a bad value gets
  the closest valid ones, compared case-insensitively);
- :func:`probability`, :func:`positive`, :func:`non_negative`,
  :func:`bounded`: the range of a numeric key; :func:`at_most`: a sane upper
  bound on a size or count;
- :func:`rule`: a check across keys (e.g. heads must divide the width);
- :func:`ignored`: a key that another key makes ineffective (e.g.
  ``gea.num_slots`` under ``gea.parity_slots_eq_head_dim``): setting it to a
  value the run would not use is an error, or, for keys of an alternative
  that is not selected (another branch, another scheduler) set in a file, a
  warning in the run's log;
- :func:`unused`: a GraphGym key this project does not read (setting it is
  an error that names the key to use instead);
- :func:`advice`: a warning for a config that runs but probably not as meant
  (e.g. a run shorter than its learning-rate warm-up);
- :func:`volatile`, :func:`resumable`: keys outside the run fingerprint, and
  keys a resumed run may change (:mod:`graphgps_ext.identity`).

A key counts as *set* when the config file or the command line gives it a
value other than its default (so a resolved ``config.yaml`` reloads as it
ran). This package imports nothing from the layers above it (the
registries, the model, the loaders, training): checks that need the
registries (model, branch, head, encoder, loss, metric and dataset names)
live one level up, in :mod:`graphgps_ext.run_config` and
:mod:`graphgps_ext.register` (``tests/config/test_layering.py``).
"""
import difflib
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import yaml
from yacs.config import CfgNode

from graphgps_ext.branches import layer_type_of

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

COMMAND_LINE = 'on the command line'
Text = Union[str, Callable[[CfgNode], str]]


class ConfigError(ValueError):
    """An invalid config: an unreadable file, an unknown key, a bad value, or
    keys that contradict each other (``main.py`` exit code 2)."""


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


def flatten(tree: Union[CfgNode, dict], prefix: str = '',
            keep_empty: bool = False) -> Dict[str, Any]:
    """``{dotted key: value}`` of the leaves of a nested mapping (a config, a
    parsed YAML file): ``{'a': {'b': 1}}`` -> ``{'a.b': 1}``. An empty group
    is left out, or kept as ``{}`` with ``keep_empty``."""
    out: Dict[str, Any] = {}
    for k, v in tree.items():
        key = f'{prefix}{k}'
        if isinstance(v, dict) and (v or not keep_empty):
            out.update(flatten(v, key + '.', keep_empty))
        else:
            out[key] = v
    return out


def set_key(tree: dict, key: str, value: Any) -> None:
    """``tree['a']['b'] = value`` for the dotted ``key`` ``'a.b'``, creating
    missing groups. A :class:`TypeError` names the part of ``key`` that is a
    value, not a group."""
    *groups, leaf = key.split('.')
    for part in groups:
        tree = tree.setdefault(part, {})
        if not isinstance(tree, dict):
            raise TypeError(f"'{part}' of '{key}' is not a group")
    tree[leaf] = value


def unflatten(flat: Dict[str, Any]) -> Dict[str, Any]:
    """The inverse of :func:`flatten`: ``{'a.b': 1}`` -> ``{'a': {'b': 1}}``."""
    out: Dict[str, Any] = {}
    for key, value in flat.items():
        set_key(out, key, value)
    return out


def leaf_keys(node: Union[CfgNode, dict], prefix: str = '') -> List[str]:
    """The dotted keys of the values (not the groups) of ``node``."""
    return list(flatten(node, prefix))


_MISSING, _RAISE = object(), object()


def get_key(cfg: CfgNode, key: str, default=_RAISE):
    """The value of dotted ``key`` (``default`` when absent; ``KeyError``
    without a default)."""
    node = cfg
    for part in key.split('.'):
        if not isinstance(node, dict) or part not in node:
            if default is _RAISE:
                raise KeyError(key)
            return default
        node = node[part]
    return node


def closest(word: str, candidates: Sequence[str], n: int = 3) -> List[str]:
    """The ``n`` closest strings to ``word`` (difflib ratio, ignoring case),
    best first; else those it begins, else those with its last dotted
    component."""
    lower: Dict[str, str] = {}
    for c in candidates:
        lower.setdefault(str(c).lower(), str(c))
    found = difflib.get_close_matches(str(word).lower(), list(lower), n=n,
                                      cutoff=0.5)
    found = [lower[f] for f in found]
    if not found:  # a prefix ('f1' -> 'f1_macro')
        found = [c for lc, c in lower.items() if lc.startswith(str(word).lower())][:n]
    if not found:  # the last dotted component
        tail = str(word).split('.')[-1].lower()
        found = [c for c in candidates if str(c).split('.')[-1].lower() == tail][:n]
    return found


def did_you_mean(word: str, candidates: Sequence[str], n: int = 1) -> str:
    """``"; did you mean 'x'?"`` (or ``''``) for ``word`` among ``candidates``."""
    hint = closest(word, candidates, n)
    return ('; did you mean ' + ' or '.join(f"'{h}'" for h in hint) + '?'
            if hint else '')


def _check_keys(cfg: CfgNode, other: CfgNode, source: str, prefix: str = ''):
    keys = _all_keys(cfg, prefix)
    for k, v in other.items():
        full = f'{prefix}{k}'
        if k not in cfg:
            raise ConfigError(f"unknown config key '{full}' in {source}"
                              + did_you_mean(full, keys, 3))
        if isinstance(v, CfgNode) and isinstance(cfg[k], CfgNode):
            _check_keys(cfg[k], v, source, full + '.')


def _choice_errors(cfg: CfgNode) -> List[str]:
    errors = []
    for key, allowed in _CHOICES.items():
        value = get_key(cfg, key, _MISSING)
        if value is _MISSING:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v not in allowed:
                errors.append(f"bad value {v!r} for '{key}'; valid values: "
                              + ', '.join(repr(a) for a in allowed)
                              + did_you_mean(str(v), [str(a) for a in allowed]))
    return errors


def check_values(cfg: CfgNode):
    """Raise :class:`ConfigError` for a value outside its declared choices."""
    errors = _choice_errors(cfg)
    if errors:
        raise ConfigError(errors[0])


#: Bounds on a config file's node tree once YAML aliases are expanded (a
#: config has a few hundred nodes): a few nested aliases (the "billion laughs"
#: file) would otherwise expand to billions of values.
YAML_MAX_NODES = 100_000
YAML_MAX_DEPTH = 64


def _duplicate_key_error(loader, node, prefix: str = '') -> Optional[str]:
    """The first key given twice in one mapping under ``node`` (YAML keeps
    the last silently), named with its dotted path and both lines, else
    ``None``. Keys merged in by ``<<: *anchor`` may be overridden."""
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            problem = _duplicate_key_error(loader, item, prefix)
            if problem:
                return problem
    if not isinstance(node, yaml.MappingNode):
        return None
    seen: Dict[Any, int] = {}
    for key_node, value in node.value:
        if key_node.tag == 'tag:yaml.org,2002:merge':
            continue
        key = loader.construct_object(key_node, deep=True) \
            if isinstance(key_node, yaml.ScalarNode) else id(key_node)
        line = key_node.start_mark.line + 1
        if key in seen:
            lines = f'line {line}' if line == seen[key] else \
                f'lines {seen[key]} and {line}'
            return (f"key '{prefix}{key}' is given twice ({lines}): YAML would "
                    'silently keep the second and drop the first; merge the two '
                    'into one')
        seen[key] = line
        problem = _duplicate_key_error(loader, value, f'{prefix}{key}.')
        if problem:
            return problem
    return None


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
    if key in _AUTO_BOOL:
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
    for key in _AUTO_BOOL:
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
    _check_keys(cfg, other, path)
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
    keys = _all_keys(cfg)
    for i in range(0, len(opts), 2):
        key = opts[i]
        if key not in keys:
            raise ConfigError(f"unknown config key '{key}' on the command line"
                              + did_you_mean(key, keys, 3))
        value = opts[i + 1]
        if isinstance(value, str):  # as yacs reads it: a Python literal or text
            value = CfgNode._decode_cfg_value(value)
        *path, last = key.split('.')
        node = get_key(cfg, '.'.join(path)) if path else cfg
        node[last] = coerce(key, value, node[last], COMMAND_LINE)
    return [str(k) for k in opts[0::2]]


# ------------------------------------------------------------- validation --
def _expand(cfg: CfgNode, pattern: str) -> List[str]:
    if pattern.endswith('.*'):
        node = get_key(cfg, pattern[:-2], None)
        return leaf_keys(node, pattern[:-1]) if isinstance(node, dict) else []
    return [pattern] if get_key(cfg, pattern, _MISSING) is not _MISSING else []


def _text(text: Text, cfg: CfgNode) -> str:
    return text(cfg) if callable(text) else text


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b))
        except (TypeError, ValueError):
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return list(a) == list(b)
    return a == b


def set_keys(cfg: CfgNode, defaults: CfgNode,
             sources: Dict[str, str]) -> Dict[str, str]:
    """``{key: source}`` of the keys of ``sources`` (dotted key -> ``'on the
    command line'`` or ``'in <file>'``) whose value differs from the
    default."""
    return {k: src for k, src in sources.items()
            if not _same(get_key(cfg, k, None), get_key(defaults, k, None))}


def _ineffective(cfg: CfgNode, defaults: CfgNode):
    """``(key, value, rule, used)`` of every key that differs from the value
    the run uses while a declaration makes it ineffective."""
    seen = set()
    for dec in _IGNORED:
        keys = [k for p in dec.keys for k in _expand(cfg, p) if k not in seen]
        try:
            if not keys or dec.unless(cfg):
                continue
        except (AttributeError, KeyError):  # a config without the groups it reads
            continue
        for key in keys:
            value = get_key(cfg, key)
            used = dec.used(cfg) if dec.used else get_key(defaults, key, None)
            if _same(value, used):
                continue
            seen.add(key)
            yield key, value, dec, used


def effective_values(cfg: CfgNode, defaults: CfgNode) -> Dict[str, Any]:
    """``{key: the value the run uses}`` of every key set to a value that a
    declaration of :func:`ignored` makes ineffective (e.g. ``mna.hops`` on a
    config without an MNA branch)."""
    return {key: used for key, _, _, used in _ineffective(cfg, defaults)}


def _ineffective_message(key, value, dec, used, cfg, where='') -> str:
    msg = f"'{key}' = {value!r}{where} has no effect: {_text(dec.why, cfg)}"
    if dec.used is not None:
        msg += f' (the run uses {used!r})'
    fix = _text(dec.fix, cfg)
    return msg + f"; remove '{key}'" + (f' or {fix}' if fix else '')


def _bound_error(key: str, value, test, requirement: str, where: str) -> Optional[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        requirement = f'a finite number, {requirement}'
    elif test(value):
        return None
    req = '>= 1' if requirement == 'positive' and isinstance(value, int) \
        else requirement
    return f"bad value {value!r} for '{key}'{where}: must be {req}"


def check_key(key: str, value, where: str) -> Optional[str]:
    """Why ``value`` is outside a range declared for ``key`` (``where``: how
    it was given, e.g. ``'from --seeds'``), else ``None``."""
    for k, test, requirement in _BOUNDS:
        problem = _bound_error(k, value, test, requirement, f' ({where})') \
            if k == key else None
        if problem:
            return problem
    return None


def validate(cfg: CfgNode, defaults: CfgNode, sources: Dict[str, str]):
    """Run every declared check on ``cfg``; raise one :class:`ConfigError`
    listing all problems.

    ``defaults``: the config with nothing merged; ``sources``: dotted key ->
    where it was given (``'on the command line'``, ``'in <file>'``) for the
    keys of the file and of the command line.
    """
    given = set_keys(cfg, defaults, sources)

    def where(key):
        return f' ({given[key]})' if key in given else (
            f' ({sources[key]})' if key in sources else '')

    errors = _choice_errors(cfg)
    for key, test, requirement in _BOUNDS:
        problem = _bound_error(key, get_key(cfg, key, None), test, requirement,
                               where(key))
        if problem:
            errors.append(problem)
    for key, instead in _UNUSED.items():
        if key in given:
            errors.append(
                f"'{key}'{where(key)} is a GraphGym key that graphgps_ext does not "
                'read, so it would change nothing; '
                + (f"use '{instead}' instead" if instead else 'remove it'))
    if not errors:
        errors += [m for m in (fn(cfg) for fn in _RULES) if m]
    if not errors:
        for key, value, dec, used in _ineffective(cfg, defaults):
            if key in given and (dec.in_file == 'error'
                                 or given[key] == COMMAND_LINE):
                errors.append(_ineffective_message(key, value, dec, used, cfg,
                                                   where(key)))
    if len(errors) == 1:
        raise ConfigError(errors[0])
    if errors:
        raise ConfigError(f'{len(errors)} problems:\n'
                          + '\n'.join(f'  - {e}' for e in errors))


def config_warnings(cfg: CfgNode, defaults: CfgNode) -> List[str]:
    """Warnings for a validated ``cfg``: keys of an unselected alternative
    that a config file sets (:func:`ignored` with ``in_file='warn'``) and
    the declared :func:`advice`."""
    out = []
    for key, value, dec, used in _ineffective(cfg, defaults):
        if dec.in_file == 'warn' and not _same(value, get_key(defaults, key, None)):
            out.append(_ineffective_message(key, value, dec, used, cfg))
    out += [m for m in (fn(cfg) for fn in _ADVICE) if m]
    return out
