"""Running the declared checks (:mod:`graphgps_ext.config.rules`) on a
loaded config: choices, ranges, unused GraphGym keys, cross-key rules,
ineffective keys (errors or warnings) and advice. Every function reads the
declarations through :func:`~graphgps_ext.config.groups.declarations`, so
they are complete however the program was entered."""
import math
from typing import Any, Dict, List, Optional

from yacs.config import CfgNode

from graphgps_ext.config.keys import (_MISSING, COMMAND_LINE, ConfigError,
                                      did_you_mean, get_key, leaf_keys)
from graphgps_ext.config.groups import declarations
from graphgps_ext.config.rules import Text


def _choice_errors(cfg: CfgNode) -> List[str]:
    errors = []
    for key, allowed in declarations().choices.items():
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
    for dec in declarations().ignored:
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
    for k, test, requirement in declarations().bounds:
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

    found = declarations()
    errors = _choice_errors(cfg)
    for key, test, requirement in found.bounds:
        problem = _bound_error(key, get_key(cfg, key, None), test, requirement,
                               where(key))
        if problem:
            errors.append(problem)
    for key, instead in found.unused.items():
        if key in given:
            errors.append(
                f"'{key}'{where(key)} is a GraphGym key that graphgps_ext does not "
                'read, so it would change nothing; '
                + (f"use '{instead}' instead" if instead else 'remove it'))
    if not errors:
        errors += [m for m in (fn(cfg) for fn in found.rules) if m]
    if not errors:
        for key, value, dec, used in _ineffective(cfg, defaults):
            if key in given and (dec.in_file == 'error'
                                 or given[key] == COMMAND_LINE):
                errors.append(_ineffective_message(key, value, dec, used, cfg,
                                                   where(key)))
    if errors:
        raise ConfigError.listing(errors)


def config_warnings(cfg: CfgNode, defaults: CfgNode) -> List[str]:
    """Warnings for a validated ``cfg``: keys of an unselected alternative
    that a config file sets (:func:`ignored` with ``in_file='warn'``) and
    the declared :func:`advice`."""
    out = []
    for key, value, dec, used in _ineffective(cfg, defaults):
        if dec.in_file == 'warn' and not _same(value, get_key(defaults, key, None)):
            out.append(_ineffective_message(key, value, dec, used, cfg))
    out += [m for m in (fn(cfg) for fn in declarations().advice) if m]
    return out
