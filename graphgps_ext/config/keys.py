"""Dotted config keys: the error type of every config check, and the
utilities that read, write, flatten and match dotted keys of a config or a
parsed YAML file (``'optim.base_lr'`` for ``cfg.optim.base_lr``)."""
import difflib
from typing import Any, Dict, Iterable, List, Sequence, Union

from yacs.config import CfgNode

COMMAND_LINE = 'on the command line'


class ConfigError(ValueError):
    """An invalid config: an unreadable file, an unknown key, a bad value, or
    keys that contradict each other (``main.py`` exit code 2)."""

    @classmethod
    def listing(cls, problems: Sequence[str]) -> 'ConfigError':
        """One error for every problem: the problem itself, or ``N
        problems:`` and one ``- problem`` line each; ``problems`` keeps
        them."""
        problems = list(problems)
        text = problems[0] if len(problems) == 1 else (
            f'{len(problems)} problems:\n' + '\n'.join(f'  - {p}' for p in problems))
        err = cls(text)
        err.problems = problems
        return err


class UnknownKeys(ConfigError):
    """Keys that no config group declares, all of them in ``problems``."""



def key_matches(key: str, patterns: Iterable[str]) -> bool:
    """Whether dotted ``key`` is one of ``patterns`` (``group.*`` matches
    every key below ``group``)."""
    for pat in patterns:
        if key == pat or (pat.endswith('.*') and key.startswith(pat[:-1])):
            return True
    return False


def all_keys(node: CfgNode, prefix: str = '') -> List[str]:
    """Every dotted key of ``node``, groups included."""
    out = []
    for k, v in node.items():
        full = f'{prefix}{k}'
        out.append(full)
        if isinstance(v, CfgNode):
            out.extend(all_keys(v, full + '.'))
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
