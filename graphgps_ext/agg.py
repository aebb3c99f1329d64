"""Aggregate the seeds of a run: ``python -m graphgps_ext.agg results/<name>``.

Reads ``results/<name>/<seed>/`` for every integer ``<seed>`` folder and
writes ``results/<name>/agg/<split>/best.json`` (mean and std over seeds of
every stat at each seed's best-validation epoch, from its ``best.json``) and
``results/<name>/agg/<split>/stats.jsonl`` (mean and std per epoch over the
seeds that reached it). Keys follow GraphGym: ``<stat>`` is the mean,
``<stat>_std`` the population standard deviation (``ddof=0``, as GraphGym and
GraphGPS), plus ``num_seeds`` and ``seeds``. A table is printed.

Only finished seeds (with a ``done`` marker) are aggregated unless
``--include-unfinished`` is given; unfinished seeds (still running,
interrupted or crashed) and, with ``--seeds``, missing ones are reported.
Re-running rewrites ``agg/`` from scratch, so it is idempotent.
"""
import argparse
import json
import os
import shutil
import sys
from typing import Dict, List, Optional

import numpy as np

from graphgps_ext.logger import SPLITS, read_jsonl, write_json


def _mean_std(records: List[Dict]) -> Dict:
    out = {}
    keys = [k for k in records[0] if all(k in r for r in records)]
    for key in keys:
        values = [r[key] for r in records]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   for v in values):
            continue
        arr = np.asarray(values, dtype=float)
        if key == 'params':
            out[key] = int(arr[0])
            continue
        out[key] = float(arr.mean())
        out[f'{key}_std'] = float(arr.std())
    return out


def find_seeds(root: str):
    """``(finished, unfinished)`` seed lists of ``root``."""
    finished, unfinished = [], []
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if not (entry.isdigit() and os.path.isdir(path)):
            continue
        (finished if os.path.exists(os.path.join(path, 'done'))
         else unfinished).append(int(entry))
    return sorted(finished), sorted(unfinished)


def aggregate(root: str, include_unfinished: bool = False,
              expected: Optional[List[int]] = None) -> Dict:
    """Write ``root/agg`` and return ``{'best': {split: ...}, 'finished': [...],
    'unfinished': [...], 'missing': [...], 'used': [...]}``."""
    if not os.path.isdir(root):
        raise FileNotFoundError(f'{root} is not a directory')
    finished, unfinished = find_seeds(root)
    present = set(finished) | set(unfinished)
    missing = sorted(set(expected or []) - present)
    candidates = finished + (unfinished if include_unfinished else [])
    bests = {}
    for seed in sorted(candidates):
        path = os.path.join(root, str(seed), 'best.json')
        if os.path.exists(path):
            with open(path) as f:
                bests[seed] = json.load(f)
    used = sorted(bests)
    agg_dir = os.path.join(root, 'agg')
    if os.path.isdir(agg_dir):
        shutil.rmtree(agg_dir)
    result = {'finished': finished, 'unfinished': unfinished,
              'missing': missing, 'used': used, 'best': {}}
    if not used:
        return result
    for split in SPLITS:
        records = []
        for seed in used:
            if split in bests[seed]:
                rec = dict(bests[seed][split])
                rec['epoch'] = bests[seed]['epoch']
                records.append(rec)
        if not records:
            continue
        best = _mean_std(records)
        best.update(num_seeds=len(records), seeds=used,
                    metric=bests[used[0]]['metric'])
        result['best'][split] = best
        os.makedirs(os.path.join(agg_dir, split), exist_ok=True)
        write_json(os.path.join(agg_dir, split, 'best.json'), best)
        per_epoch: Dict[int, List[Dict]] = {}
        for seed in used:
            for rec in read_jsonl(os.path.join(root, str(seed), split, 'stats.jsonl')):
                per_epoch.setdefault(rec['epoch'], []).append(rec)
        with open(os.path.join(agg_dir, split, 'stats.jsonl'), 'w') as f:
            for epoch in sorted(per_epoch):
                row = {'epoch': epoch}
                row.update(_mean_std(per_epoch[epoch]))
                row.pop('epoch_std', None)
                row['num_seeds'] = len(per_epoch[epoch])
                f.write(json.dumps(row) + '\n')
    return result


def format_table(result: Dict) -> str:
    """A plain-text table: one row per split, ``mean ± std`` per stat."""
    best = result['best']
    if not best:
        return 'no finished seed to aggregate'
    keys = [k for k in best.get('test', next(iter(best.values())))
            if not k.endswith('_std') and k not in ('num_seeds', 'seeds', 'metric',
                                                    'params', 'lr', 'time_epoch')]
    header = ['split'] + keys
    rows = []
    for split, rec in best.items():
        rows.append([split] + [f"{rec[k]:.4f} ± {rec.get(k + '_std', 0.0):.4f}"
                               if k in rec else '-' for k in keys])
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = ['  '.join(str(c).ljust(w) for c, w in zip(r, widths))
             for r in [header] + rows]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m graphgps_ext.agg',
        description='Aggregate the seeds of results/<name> into results/<name>/agg.')
    parser.add_argument('root', help='results/<name>')
    parser.add_argument('--include-unfinished', action='store_true',
                        help="also use seeds without a 'done' marker "
                             '(their best so far)')
    parser.add_argument('--seeds', default=None,
                        help='comma-separated seeds you expect; missing ones are reported')
    args = parser.parse_args(argv)
    expected = ([int(s) for s in args.seeds.split(',') if s.strip()]
                if args.seeds else None)
    try:
        result = aggregate(args.root, args.include_unfinished, expected)
    except FileNotFoundError as err:
        print(f'error: {err}', file=sys.stderr)
        return 1
    best = result['best']
    metric = next(iter(best.values()))['metric'] if best else None
    print(f"{args.root}: {len(result['used'])} seed(s) aggregated {result['used']}"
          + (f'; selection metric {metric} at each seed\'s best validation epoch'
             if metric else ''))
    if result['unfinished']:
        print("unfinished (no 'done' marker"
              + (', included' if args.include_unfinished else ', skipped')
              + f"): {result['unfinished']}")
    if result['missing']:
        print(f"missing: {result['missing']}")
    print(format_table(result))
    return 0 if result['used'] else 1


if __name__ == '__main__':
    sys.exit(main())
