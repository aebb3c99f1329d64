"""Aggregate the seeds of a run: ``python -m graphgps_ext.agg results/<name>``.

Reads ``results/<name>/<seed>/`` for every integer ``<seed>`` folder and
writes ``results/<name>/agg/<split>/best.json`` (mean and std over seeds of
every stat at each seed's best-validation epoch, from its ``best.json``; one
JSON line, as GraphGym's) and
``results/<name>/agg/<split>/stats.json`` (mean and std per epoch over the
seeds that reached it, one JSON object per line). Keys follow GraphGym:
``<stat>`` is the mean, ``<stat>_std`` the population standard deviation
(``ddof=0``, as GraphGym and GraphGPS), plus ``num_seeds``, ``seeds``,
``metric`` and ``mode`` (the selection metric and its direction). A table is
printed.

Only finished seeds (with a ``done`` marker) are aggregated unless
``--include-unfinished`` is given; unfinished seeds (still running,
interrupted or crashed) and, with ``--seeds``, missing ones are reported.
The seeds are chosen by :func:`graphgps_ext.results.identity.select_seeds`, the
rule ``report`` uses too: each seed counted once (a symbolic link to a seed
folder, hard links to its files or a copy of it are named and left out);
seeds finished with different configs (their ``done`` markers carry
different fingerprints, see :mod:`graphgps_ext.results.identity`) or on different
data (different data fingerprints) are never averaged together: without
``--fingerprint`` such a folder is refused (exit 2, the differing keys or
data named); with ``--fingerprint FP`` only the seeds of that config are
used and the others are reported (those of one config on different data
are still refused). The launcher passes the fingerprint of the runs it
launched. Every seed is checked before it is averaged
(:func:`graphgps_ext.results.seed_folder.check_seed`), NaN values included as
legitimate ones (a mean over seeds with a NaN is NaN).

Exit codes: 0 aggregated; 2 a refusal (bad arguments, no such folder,
nothing to aggregate, a mix, a damaged seed folder, a symbolic link out of
the run folder: the folder and file named); 4 ``agg/`` could not be written
(the file and the cause named).

Every file is written to a temporary file and renamed into place, so a
reader sees either the previous or the new version of a file, never a
partial one, and several aggregations of one folder may run at once.
Re-running gives the same files. With nothing to aggregate, ``agg/`` is left
as it was.

GraphGym's ``torch_geometric.graphgym.utils.agg_runs.agg_runs(results/<name>,
metric)`` reads the same seed folders and writes ``agg/train`` and
``agg/val`` with the same file names and keys (its values rounded to
``cfg.round``, without ``num_seeds``/``seeds``/``metric``, and TensorBoard
files when ``cfg.tensorboard_agg``); ``agg/test`` stays ours. Running
``python -m graphgps_ext.agg`` again writes ours back.
"""
import argparse
import os
import sys
from typing import Dict, List, Optional

import numpy as np

from graphgps_ext.files import ResultsWriteError
from graphgps_ext.results.identity import MixedRunsError, select_seeds
from graphgps_ext.results.seed_folder import SeedFolderError, check_seed, seed_folders
from graphgps_ext.results.tree import RunDir, RunRoot, UnsafePath
from graphgps_ext.task import SPLITS

_DONE = repr(RunDir.DONE)  # as messages quote it
__all__ = ['MixedRunsError', 'aggregate', 'find_seeds', 'format_table', 'main']


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


def find_seeds(root: str, duplicates: Optional[List[str]] = None):
    """``(finished, unfinished)`` seed lists of ``root``, each seed counted
    once (:func:`graphgps_ext.results.seed_folder.list_seeds`: a symbolic link to a
    seed folder, hard links or a copy of one are left out and named in
    ``duplicates``)."""
    finished, unfinished = [], []
    run_root = RunRoot(root, root)
    for entry in seed_folders(root, duplicates):
        (finished if os.path.lexists(run_root.seed(entry).done)
         else unfinished).append(int(entry))
    return sorted(finished), sorted(unfinished)


def aggregate(root: str, include_unfinished: bool = False,
              expected: Optional[List[int]] = None,
              fingerprint: Optional[str] = None) -> Dict:
    """Write ``root/agg`` and return ``{'best': {split: ...}, 'finished': [...],
    'unfinished': [...], 'missing': [...], 'other': [...], 'used': [...]}``
    (``other``: finished seeds of another config than ``fingerprint``).

    Raises ``FileNotFoundError`` when ``root`` is not a folder,
    :class:`MixedRunsError` when its finished seeds (of ``fingerprint``, when
    given) carry different fingerprints or data,
    :class:`~graphgps_ext.results.seed_folder.SeedFolderError` for a damaged seed,
    :class:`~graphgps_ext.results.tree.UnsafePath` for a link out of the folder,
    :class:`~graphgps_ext.files.ResultsWriteError` when ``agg/`` cannot be
    written."""
    if not os.path.isdir(root):
        raise FileNotFoundError(f'{root} is not a directory')
    run_root = RunRoot(root, root)
    chosen = select_seeds(run_root, fingerprint)
    finished, unfinished, other = chosen.finished, chosen.unfinished, chosen.other
    duplicates = chosen.duplicates
    present = set(finished) | set(unfinished) | set(other)
    missing = sorted(set(expected or []) - present)
    candidates = finished + (unfinished if include_unfinished else [])
    bests, stats, no_best = {}, {}, []
    for seed in sorted(candidates):
        folder = run_root.seed(seed)
        # Checked before it is averaged (seed_folder.check_seed): a damaged
        # seed raises SeedFolderError naming the seed and the file.
        record = check_seed(folder.path, folder.read_done()
                            if seed in finished else None)
        if record['best'] is None:
            no_best.append(seed)
            continue
        bests[seed], stats[seed] = record['best'], record['stats']
    used = sorted(bests)
    result = {'finished': finished, 'unfinished': unfinished, 'missing': missing,
              'other': other, 'used': used, 'best': {}, 'duplicates': duplicates,
              'odd': chosen.odd, 'no_best': no_best}
    if not used:
        return result
    for split in SPLITS:
        records = []
        for seed in used:
            if split in bests[seed]:
                rec = dict(bests[seed][split])
                rec['epoch'] = bests[seed]['epoch']
                records.append(rec)
        if not records:  # no seed has this split (any more): drop our files
            run_root.remove_agg(split)
            continue
        best = _mean_std(records)
        best.update(num_seeds=len(records), seeds=used,
                    metric=bests[used[0]]['metric'])
        if bests[used[0]].get('mode'):
            best['mode'] = bests[used[0]]['mode']
        result['best'][split] = best
        per_epoch: Dict[int, List[Dict]] = {}
        for seed in used:
            for rec in stats[seed][split]:
                per_epoch.setdefault(rec['epoch'], []).append(rec)
        rows = []
        for epoch in sorted(per_epoch):
            row = {'epoch': epoch}
            row.update(_mean_std(per_epoch[epoch]))
            row.pop('epoch_std', None)
            row['num_seeds'] = len(per_epoch[epoch])
            rows.append(row)
        # best.json one line, as GraphGym's (its agg_batch reads it).
        run_root.write_agg(split, best, rows)
    return result


def format_table(result: Dict) -> str:
    """A plain-text table: one row per split, ``mean ± std`` per stat."""
    best = result['best']
    if not best:
        return 'no finished seed to aggregate'
    keys = [k for k in best.get('test', next(iter(best.values())))
            if not k.endswith('_std') and k not in ('num_seeds', 'seeds', 'metric', 'mode',
                                                    'params', 'lr', 'time_epoch')]
    header = ['split'] + ['best epoch' if k == 'epoch' else k for k in keys]
    rows = []
    for split, rec in best.items():
        # The best epoch (numbered from 0) is a mean over seeds: one decimal.
        rows.append([split] + [(f"{rec[k]:.1f} ± {rec.get(k + '_std', 0.0):.1f}"
                                if k == 'epoch' else
                                f"{rec[k]:.4f} ± {rec.get(k + '_std', 0.0):.4f}")
                               if k in rec else '-' for k in keys])
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = ['  '.join(str(c).ljust(w) for c, w in zip(r, widths))
             for r in [header] + rows]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    """Exit codes: 0 aggregated; 2 a user error: bad arguments, no such
    folder, nothing to aggregate, a folder mixing configs or data, a
    damaged seed folder (the seed and file named), a symbolic link out of
    the folder; 4 ``agg/`` could not be written (the file and cause named)."""
    parser = argparse.ArgumentParser(
        prog='python -m graphgps_ext.agg',
        description='Aggregate the seeds of results/<name> into results/<name>/agg.')
    parser.add_argument('root', help='results/<name>')
    parser.add_argument('--include-unfinished', action='store_true',
                        help=f'also use seeds without a {_DONE} marker '
                             '(their best so far)')
    parser.add_argument('--seeds', default=None,
                        help='comma-separated seeds you expect; missing ones are reported')
    parser.add_argument('--fingerprint', default=None,
                        help="only the finished seeds of this config (the 'fingerprint' "
                             f'of their {_DONE} marker); the others are reported')
    args = parser.parse_args(argv)
    try:
        expected = ([int(s) for s in args.seeds.split(',') if s.strip()]
                    if args.seeds else None)
    except ValueError:
        parser.error(f'--seeds takes comma-separated integers, got {args.seeds!r}')
    try:
        result = aggregate(args.root, args.include_unfinished, expected, args.fingerprint)
    except ResultsWriteError as err:
        print(f'error: {err}. {err.advice}; the seed folders are unchanged',
              file=sys.stderr)
        return 4
    except (OSError, MixedRunsError, SeedFolderError, UnsafePath) as err:
        print(f'error: {err}', file=sys.stderr)
        return 2
    best = result['best']
    metric = next(iter(best.values()))['metric'] if best else None
    print(f"{args.root}: {len(result['used'])} seed(s) aggregated {result['used']}"
          + (f'; selection metric {metric} at each seed\'s best validation epoch'
             if metric else ''))
    if result['other']:
        print(f"finished with another config (not aggregated): {result['other']}")
    if result['unfinished']:
        print(f'unfinished (no {_DONE} marker'
              + (', included' if args.include_unfinished else ', skipped')
              + f"): {result['unfinished']}")
    if result['missing']:
        print(f"missing: {result['missing']}")
    if result['no_best']:
        print(f"no best.json (no epoch evaluated yet): {result['no_best']}")
    if result['duplicates']:
        print('counted once: ' + ', '.join(result['duplicates']))
    if result['odd']:
        print('not read (digits, but not the name of a seed folder, which is the seed '
              'as written by str): ' + ', '.join(map(ascii, result['odd'])))
    print(format_table(result))
    agg = RunRoot(args.root, args.root).agg
    if not result['used'] and os.path.isdir(agg):
        print(f'{agg} left as it was')
    if not result['used']:
        print(f'error: {args.root} has no seed to aggregate', file=sys.stderr)
    return 0 if result['used'] else 2


if __name__ == '__main__':
    sys.exit(main())
