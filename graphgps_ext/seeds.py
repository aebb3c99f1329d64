"""Seed lists: the one grammar of ``main.py --seeds``, the launcher's
``--seeds`` and the ``seeds`` column of ``run/tables.tsv``."""
import re
from typing import List

_SEEDS = re.compile(r'\d+(-\d+)?(,\d+(-\d+)?)*')


def parse_seeds(spec: str) -> List[int]:
    """``'0-3,8'`` -> ``[0, 1, 2, 3, 8]`` (ranges and lists; order kept,
    duplicates dropped; spaces ignored). Raises ``ValueError`` naming what
    to write instead."""
    spec = ''.join(str(spec).split())
    if not _SEEDS.fullmatch(spec):
        raise ValueError(f"bad --seeds '{spec}': use ranges and lists such as 0-9 "
                         'or 0,2,5 or 0-3,8')
    out: List[int] = []
    for part in spec.split(','):
        lo, _, hi = part.partition('-')
        if hi and int(lo) > int(hi):
            raise ValueError(f"bad seed range '{part}' (start > end)")
        for seed in range(int(lo), int(hi or lo) + 1):
            if seed not in out:
                out.append(seed)
    return out
