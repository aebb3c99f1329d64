"""Seed lists: the one grammar of ``main.py --seeds``, the launcher's
``--seeds`` and the ``seeds`` column of ``run/tables.tsv``
(:func:`parse_seeds`), the one bound on how many seeds a list (or
``main.py --repeat``) may name (:data:`MAX_SEEDS`), and the seeds a run
trains (:func:`seed_list`: ``--seeds``, or ``seed`` with ``--repeat``, each
checked against the range declared for ``seed``)."""
import re
from typing import TYPE_CHECKING, List, Optional, Sequence

if TYPE_CHECKING:
    from yacs.config import CfgNode

_SEEDS = re.compile(r'\d+(-\d+)?(,\d+(-\d+)?)*')
_PART = re.compile(r'(\d+)(?:-(\d+))?')

#: Seeds one list may name (ranges counted in full, before any is built):
#: a paper's protocol has 3 to 10, a screening a few; a list beyond this is
#: a typo (``0-999999``) that would build and plan a million runs.
MAX_SEEDS = 10_000


class TooManySeeds(ValueError):
    """A seed list beyond :data:`MAX_SEEDS`."""


def parse_seeds(spec: str) -> List[int]:
    """``'0-3,8'`` -> ``[0, 1, 2, 3, 8]`` (ranges and lists; order kept,
    duplicates dropped; spaces ignored). The seeds are counted from the
    ranges before any list is built (at most :data:`MAX_SEEDS`), and the
    list is built in linear time. Raises ``ValueError`` naming what to write
    instead."""
    spec = ''.join(str(spec).split())
    if not _SEEDS.fullmatch(spec):
        raise ValueError(f"bad --seeds '{spec[:80]}': use ranges and lists such as 0-9 "
                         'or 0,2,5 or 0-3,8')
    parts = []
    count = 0
    for m in _PART.finditer(spec):
        if max(len(m.group(1)), len(m.group(2) or '')) > 10:
            raise ValueError(f"bad seed '{m.group(0)[:24]}': longer than 10 digits (a seed "
                             'is a NumPy seed, below 2**32)')
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if lo > hi:
            raise ValueError(f"bad seed range '{m.group(0)}' (start > end)")
        count += hi - lo + 1
        if count > MAX_SEEDS:
            raise TooManySeeds(f"--seeds '{spec[:80]}' names more than {MAX_SEEDS:,} seeds: "
                               f'give at most {MAX_SEEDS:,} (e.g. 0-9)')
        parts.append((lo, hi))
    return list(dict.fromkeys(s for lo, hi in parts for s in range(lo, hi + 1)))


def seed_list(cfg: 'CfgNode', seeds: Optional[Sequence[int]] = None,
              repeat: int = 1) -> List[int]:
    """The seeds a run trains: ``seeds`` (``--seeds``), else ``cfg.seed``
    ... ``cfg.seed + repeat - 1`` (``--repeat``). Each is checked against
    the range declared for ``seed`` at start, and their number against
    :data:`MAX_SEEDS` before the list is built, so a seed out of range or a
    list beyond the bound is refused
    (:class:`~graphgps_ext.config.ConfigError`) before the first one trains."""
    from graphgps_ext.config import ConfigError, check_key
    repeat = max(1, repeat)
    flag = '--seeds' if seeds is not None else f'seed {cfg.seed} with --repeat {repeat}'
    if seeds is None:
        problem = check_key('seed', cfg.seed + repeat - 1, f'from {flag}')
        if problem:
            raise ConfigError(problem)
    if (len(seeds) if seeds is not None else repeat) > MAX_SEEDS:
        raise ConfigError(f'{flag} names more than {MAX_SEEDS:,} seeds: give at most '
                          f'{MAX_SEEDS:,}')
    given = list(seeds) if seeds is not None else \
        list(range(cfg.seed, cfg.seed + repeat))
    for seed in (given if seeds is not None else []):
        problem = check_key('seed', seed, f'from {flag}')
        if problem:
            raise ConfigError(problem)
    return given
