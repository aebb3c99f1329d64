"""Hyper-parameter search from GraphGym grid files.

A grid file has one line per searched key::

    # key           alias  values
    gt.layers       l      [2,3,4,5]
    gt.dim_hidden   d      [128,256]
    optim.base_lr   lr     [0.001,0.0005]

(values: a Python list, read with :func:`ast.literal_eval`; ``#`` starts a
comment; a blank line starts another grid whose points are added to the
first's, as GraphGym's ``configs_gen.py``). The search space is the union of
the grids' Cartesian products. Every point becomes a config: the base YAML
with the point's values, named after the aliases as GraphGym names them,
``<base>-<alias>=<value>-...``, with ``run_name`` that name and ``out_dir``
``<results>/<base>_grid_<grid>``. ``--sample N`` draws N distinct points
uniformly from the space (seeded by ``--sample-seed``). The points are
counted as a product before any is built (at most :data:`MAX_POINTS`), and
every point has its own name: over the file one alias per key and one key
per alias, and two points whose values print alike are refused.

The point configs, ``search.json`` (the search: base, grid, points, the
overrides and seeds of the screening, each point's fingerprint) and the
summary are written to ``<results>/_search/<base>_grid_<grid>/``; the runs
go to ``<results>/<base>_grid_<grid>/<point>/<seed>/`` (GraphGym's layout,
which its ``agg_batch`` reads).

:func:`summarize` aggregates each point's seeds (only the runs of the
point's config, by fingerprint) and ranks the points by their mean
validation metric over seeds in the metric's direction, as GraphGym's
``agg_batch``: ``summary.csv`` (rank, point, the values, val and test mean
and std at each seed's best-validation epoch, seeds done / planned) and a
printed table. The best point's config, the base with its values and
``run_name`` set to the point's name (without the screening overrides), is
written as ``chosen.yaml`` for the final run over more seeds.

The ranking is deterministic: by the mean validation metric, then (equal
means) by the smaller standard deviation over seeds, then by the point's
name. Two flags say when a ranking means little: ``warm-up``, the point's
runs ended inside the learning-rate warm-up
(:func:`~graphgps_ext.sweep.plan.never_leaves_warmup`), and ``tie``, its
mean equals another point's (:data:`TIE_TOLERANCE`); a point whose mean is
NaN is flagged ``nan`` and not ranked. All points are ranked by one metric
in one direction: a grid over :data:`RANKING_KEYS` is refused, and so is a
summary whose points select on different metrics.
"""
import ast
import copy
import math
import os
import random
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from graphgps_ext.config import read_yaml, set_key
from graphgps_ext.results.tree import RunRoot, SearchDir, write_yaml
from graphgps_ext.sweep.plan import SweepError, never_leaves_warmup

_ALIAS = re.compile(r'[A-Za-z0-9_.+]+')

#: Points a search may have (the grids' product, counted before any point is
#: built; ``--sample N`` draws at most this many). Each point is a config
#: written, resolved and run over the seeds: a grid beyond this is a typo or
#: wants ``--sample``.
MAX_POINTS = 10_000
#: Bytes of a grid file (a grid has a few lines).
MAX_GRID_BYTES = 1 << 20
#: Keys a search cannot search: every point is ranked by one metric in one
#: direction (a point selecting on f1 is not comparable with one on accuracy).
RANKING_KEYS = ('metric_best', 'metric_agg')


def check_name(path: str, what: str):
    """Refuse a file name that holds a control character (it names the
    search's folders and reaches the scripts' lines)."""
    bad = [c for c in path if c < ' ' or c == '\x7f']
    if bad:
        raise SweepError(f'{what} {path!r} holds a control character ({bad[0]!r}): it names '
                         "the search's folders; rename the file")


@dataclass
class GridKey:
    key: str
    alias: str
    values: List[Any]


def read_grid(path: str) -> List[List[GridKey]]:
    """The grids of a grid file (see the module docstring). Raises
    :class:`SweepError` naming the file and line."""
    check_name(path, 'grid file')
    if not os.path.isfile(path):
        raise SweepError(f"grid file '{path}' not found")
    size = os.path.getsize(path)
    if size > MAX_GRID_BYTES:
        raise SweepError(f"grid file '{path}' holds {size:,} bytes, more than "
                         f'{MAX_GRID_BYTES:,}: a grid file has a line per searched key')
    grids: List[List[GridKey]] = [[]]
    try:
        with open(path, encoding='utf-8') as f:
            lines = f.read().splitlines(keepends=True)
    except (OSError, UnicodeDecodeError) as err:
        raise SweepError(f"grid file '{path}' cannot be read as UTF-8 text: {err}") from None
    keys: Dict[str, Tuple[str, int]] = {}  # key -> (alias, line), over every grid
    by_alias: Dict[str, Tuple[str, int]] = {}  # alias -> (key, line)
    for n, raw in enumerate(lines, 1):
        line = raw.split('#', 1)[0].strip()
        if not line:
            if grids[-1] and not raw.lstrip().startswith('#'):
                grids.append([])
            continue
        parts = line.split(None, 2)
        where = f'{path}:{n}'
        if len(parts) != 3:
            raise SweepError(f"{where}: want 'key alias [v1,v2,...]', got '{line}'")
        key, alias, text = parts
        if not _ALIAS.fullmatch(alias):
            raise SweepError(f"{where}: alias '{alias}' may hold letters, digits, "
                             "'_', '.' and '+' only (it names folders)")
        try:
            values = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise SweepError(f"{where}: values of '{key}' are not a Python list: "
                             f'{text[:80]}') from None
        if not isinstance(values, (list, tuple)) or not values:
            raise SweepError(f"{where}: values of '{key}' must be a non-empty list, "
                             f'got {text[:80]}')
        grid = grids[-1]
        if any(g.key == key or g.alias == alias for g in grid):
            raise SweepError(f"{where}: key '{key}' or alias '{alias}' repeated")
        # One alias per key and one key per alias over the whole file: the
        # aliases name the points, so two keys under one alias would give
        # two points one name (one of them lost), and the summary's
        # columns are the aliases.
        if key in keys and keys[key][0] != alias:
            raise SweepError(f"{where}: key '{key}' has the alias '{alias}' here and "
                             f"'{keys[key][0]}' on line {keys[key][1]}: give it one alias")
        if alias in by_alias and by_alias[alias][0] != key:
            raise SweepError(f"{where}: alias '{alias}' names both '{by_alias[alias][0]}' "
                             f"(line {by_alias[alias][1]}) and '{key}': the points of the two "
                             'would get the same names; give each key its own alias')
        keys.setdefault(key, (alias, n))
        by_alias.setdefault(alias, (key, n))
        grid.append(GridKey(key, alias, [list(v) if isinstance(v, tuple) else v
                                         for v in values]))
    grids = [g for g in grids if g]
    if not grids:
        raise SweepError(f'{path}: no grid line')
    return grids


def format_value(value: Any) -> str:
    """A value as it appears in a point's name (GraphGym's ``str(v)``
    without list brackets and quotes; no spaces, ``/`` as ``_``)."""
    if isinstance(value, (list, tuple)):
        text = ','.join(format_value(v) for v in value)
    else:
        text = str(value)
    return text.replace(' ', '').replace('/', '_')


@dataclass
class Point:
    """One point of the search space: ``values`` by dotted key."""
    name: str
    values: Dict[str, Any]
    aliases: Dict[str, str]  # key -> alias


def grid_size(grids: Sequence[Sequence[GridKey]]) -> int:
    return sum(math.prod(len(k.values) for k in g) for g in grids)


def _point(base: str, grid: Sequence[GridKey], index: int) -> Point:
    """The ``index``-th point of one grid (mixed radix, last key fastest)."""
    values, aliases = {}, {}
    for k in reversed(grid):
        index, i = divmod(index, len(k.values))
        values[k.key] = k.values[i]
        aliases[k.key] = k.alias
    values = {k.key: values[k.key] for k in grid}
    name = base + ''.join(f'-{k.alias}={format_value(values[k.key])}' for k in grid)
    return Point(name, values, {k.key: k.alias for k in grid})


def _size_text(grids: Sequence[Sequence[GridKey]]) -> str:
    return ' + '.join(' x '.join(f'{len(k.values)} {k.alias}' for k in g) for g in grids)


def points(base: str, grids: Sequence[Sequence[GridKey]], sample: Optional[int] = None,
           seed: int = 0) -> List[Point]:
    """Every point of the grids' union (in file order), or ``sample``
    distinct ones drawn uniformly (``seed``), in the same order; the same
    point in two grids counts once. The points are counted as a product
    first: more than :data:`MAX_POINTS` (without ``--sample``), or a sample
    beyond it, is refused before any is built. Two points with different
    values but one name (values that print alike, e.g. ``1`` and ``'1'``)
    are refused, naming the key and both values."""
    sizes = [math.prod(len(k.values) for k in g) for g in grids]
    total = sum(sizes)
    indices: Sequence[int] = range(total)
    if sample is not None:
        if sample < 1:
            raise SweepError('--sample must be >= 1')
        if sample > MAX_POINTS:
            raise SweepError(f'--sample {sample} draws more than {MAX_POINTS:,} points: '
                             f'give at most {MAX_POINTS:,}')
        indices = sorted(random.Random(seed).sample(range(total), min(sample, total)))
    elif total > MAX_POINTS:
        raise SweepError(f'the grid has {total:,} points ({_size_text(grids)} values), more '
                         f'than {MAX_POINTS:,}: search fewer values, or draw some points '
                         'with --sample N')
    out, names = [], {}
    for flat in indices:
        g = 0
        while flat >= sizes[g]:
            flat -= sizes[g]
            g += 1
        p = _point(base, grids[g], flat)
        other = names.get(p.name)
        if other is None:
            names[p.name] = p
            out.append(p)
        elif other.values != p.values or any(type(v) is not type(other.values[k])
                                             for k, v in p.values.items()):
            diff = next((k for k in p.values if k not in other.values
                         or repr(p.values[k]) != repr(other.values[k])), None)
            what = (f"'{diff}' = {other.values.get(diff)!r} and {p.values[diff]!r}"
                    if diff in other.values else f"'{diff}'")
            raise SweepError(f'two points of the grid get the same name {p.name} ({what} '
                             'print alike in a name): one would be lost; give values that '
                             'differ as text')
    return out


def same_runs(pts: Sequence[Point], fingerprints: Sequence[str]
              ) -> Tuple[List[Point], Dict[str, str], List[str]]:
    """``(kept, duplicates, no_effect)``: the points that run (the first of
    each fingerprint, :func:`graphgps_ext.results.identity.effective_fingerprint`),
    ``{point name: the kept point it equals}`` for the others, and the grid
    keys that change no point's run (for every two points that differ in
    that key only, the fingerprints agree)."""
    kept, duplicates, first = [], {}, {}
    for p, fp in zip(pts, fingerprints):
        if fp in first:
            duplicates[p.name] = first[fp]
        else:
            first[fp] = p.name
            kept.append(p)
    keys = list(dict.fromkeys(k for p in pts for k in p.values))
    no_effect = []
    for key in keys:
        groups: Dict[str, set] = {}
        sizes: Dict[str, int] = {}
        for p, fp in zip(pts, fingerprints):
            if key not in p.values:
                continue
            rest = repr(sorted((k, repr(v)) for k, v in p.values.items() if k != key))
            groups.setdefault(rest, set()).add(fp)
            sizes[rest] = sizes.get(rest, 0) + 1
        if any(n > 1 for n in sizes.values()) and all(len(g) == 1 for g in groups.values()):
            no_effect.append(key)
    return kept, duplicates, no_effect


def _set(tree: Dict[str, Any], key: str, value: Any):
    try:
        set_key(tree, key, value)
    except TypeError as e:
        raise SweepError(f"grid key '{key}': {e} in the base config") from None


def point_config(base_yaml: Dict[str, Any], point: Point, **keys: Any) -> Dict[str, Any]:
    """The base config (as read from its YAML) with the point's values and
    the top-level ``keys`` (e.g. ``run_name``, ``out_dir``)."""
    tree = copy.deepcopy(base_yaml)
    for key, value in point.values.items():
        _set(tree, key, value)
    tree.update(keys)
    return tree


def stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def task_name(base: str, grid: str) -> str:
    """GraphGym's ``<base>_grid_<grid>`` (file stems)."""
    return f'{stem(base)}_grid_{stem(grid)}'


# --------------------------------------------------------------------------- summary
@dataclass
class PointResult:
    point: Dict[str, Any]  # the entry of search.json
    val: Optional[Tuple[float, float]] = None
    test: Optional[Tuple[float, float]] = None
    seeds: int = 0
    epoch: Optional[float] = None
    rank: Optional[int] = None
    flags: List[str] = field(default_factory=list)
    metric: Optional[Tuple[str, str]] = None  # (metric_best, 'max' or 'min')
    problem: Optional[str] = None  # why the point's seeds were not aggregated


#: Relative tolerance under which two mean validation metrics tie.
TIE_TOLERANCE = 1e-9


def _identity(folder: str, fp: Optional[str]) -> Optional[Dict[str, Any]]:
    """The identity in a ``done`` marker of the point's runs (fingerprint
    ``fp``), or ``None``."""
    if not os.path.isdir(folder):
        return None
    for entry in sorted(os.listdir(folder)):
        seed = RunRoot(folder).seed(entry)
        if not (entry.isdigit() and os.path.isfile(seed.done)):
            continue
        marker = seed.read_done()  # {} when it is not a JSON object
        if fp is None or marker.get('fingerprint') == fp:
            ident = marker.get('identity')
            if isinstance(ident, dict):
                return ident
    return None


def rank(results: List[PointResult], mode: str) -> List[PointResult]:
    """Rank the points with results (see the module docstring) and flag
    ties; returns them best first. A point whose mean is NaN (a metric
    undefined on its validation split) is flagged ``nan`` and not ranked."""
    for r in results:
        if r.val is not None and math.isnan(r.val[0]) and 'nan' not in r.flags:
            r.flags.append('nan')
    done = [r for r in results if r.val is not None and not math.isnan(r.val[0])]
    sign = -1 if mode == 'max' else 1
    done.sort(key=lambda r: (sign * r.val[0], r.val[1], r.point['name']))
    for i, r in enumerate(done, 1):
        r.rank = i
        for other in done:
            if other is not r and math.isclose(r.val[0], other.val[0], rel_tol=TIE_TOLERANCE,
                                               abs_tol=1e-12) and 'tie' not in r.flags:
                r.flags.append('tie')
    return done


#: Bytes of a ``search.json`` (a search of :data:`MAX_POINTS` points holds a
#: few MB).
MAX_RECORD_BYTES = 64 << 20


def _record_error(search: Any) -> Optional[str]:
    """What is wrong with the value of a ``search.json``, else ``None``."""
    if not isinstance(search, dict):
        return f'it holds a {type(search).__name__}, not an object'
    shapes = {'task': str, 'base': str, 'grid': str, 'points': list, 'aliases': dict,
              'seeds': list, 'overrides': list}
    for key, kind in shapes.items():
        if not isinstance(search.get(key), kind):
            return f"'{key}' is {'missing' if key not in search else 'not a ' + kind.__name__}"
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in search['aliases'].items()):
        return "'aliases' maps keys to names: not all of them are strings"
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in search['seeds']):
        return "'seeds' holds something other than integers"
    if not all(isinstance(w, str) for w in search['overrides']):
        return "'overrides' holds something other than strings"
    for n, p in enumerate(search['points']):
        if not isinstance(p, dict):
            return f'point {n} is not an object'
        for key, kind in (('name', str), ('folder', str), ('config', str), ('values', dict)):
            if not isinstance(p.get(key), kind):
                return f"point {n} has no '{key}' {kind.__name__}"
        if not isinstance(p.get('fingerprint'), (str, type(None))):
            return f"point {n}'s 'fingerprint' is not a string"
    return None


def read_record(search_dir: str) -> Dict[str, Any]:
    """The checked ``search.json`` of ``search_dir``; :class:`SweepError`
    naming the file and what is wrong with it."""
    here = SearchDir(search_dir)
    path = here.record
    if not os.path.isfile(path):
        raise SweepError(f'{path} not found: give the folder of a search '
                         '(<results>/_search/<base>_grid_<grid>)')
    rerun = ('; it is written by the search command (python -m graphgps_ext.sweep CONFIG '
             '--grid FILE ...): run that again to rewrite it')
    if os.path.getsize(path) > MAX_RECORD_BYTES:
        raise SweepError(f'{path} holds more than {MAX_RECORD_BYTES:,} bytes{rerun}')
    try:
        search = here.read_record()
    except (OSError, ValueError, RecursionError) as err:
        raise SweepError(f'{path} cannot be read as JSON ({type(err).__name__}: '
                         f'{str(err)[:120]}){rerun}') from None
    problem = _record_error(search)
    if problem:
        raise SweepError(f'{path} is malformed: {problem}{rerun}')
    return search


def summarize(search_dir: str) -> Tuple[List[PointResult], Dict[str, Any]]:
    """Aggregate every point of the search in ``search_dir`` and rank them
    (best first; points without a finished seed last). Writes
    ``summary.csv`` and, when a point has results, ``chosen.yaml``. Points
    that select on different metrics or directions are refused
    (:class:`SweepError`): one ranking compares one metric."""
    from graphgps_ext.agg import aggregate
    from graphgps_ext.config import ConfigError
    from graphgps_ext.results.seed_folder import SeedFolderError
    here = SearchDir(search_dir)
    search = read_record(search_dir)
    results, selections = [], {}
    for p in search['points']:
        res = PointResult(p)
        folder = p['folder']
        if os.path.isdir(folder):
            try:
                agg = aggregate(folder, fingerprint=p.get('fingerprint'))
            except SeedFolderError as err:
                res.flags.append('damaged')
                res.problem = str(err)
                results.append(res)
                continue
            best = agg['best']
            if 'val' in best:
                m = best['val']['metric']
                res.metric = (m, best['val'].get('mode') or 'max')
                selections.setdefault(res.metric, []).append(p['name'])
                res.val = (best['val'][m], best['val'][f'{m}_std'])
                res.seeds = best['val']['num_seeds']
                res.epoch = best['val'].get('epoch')
                if 'test' in best:
                    res.test = (best['test'][m], best['test'][f'{m}_std'])
            ident = _identity(folder, p.get('fingerprint'))
            if ident is not None and never_leaves_warmup(ident):
                res.flags.append('warm-up')
        results.append(res)
    if len(selections) > 1:
        groups = '; '.join(f"{m} ({'highest' if d == 'max' else 'lowest'} best): "
                           f"{', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"
                           for (m, d), names in selections.items())
        raise SweepError(f'the points of {search["task"]} select on different metrics '
                         f'({groups}): one ranking compares one metric in one direction; '
                         'give every point the same metric_best (search the others '
                         'separately)')
    metric, mode = next(iter(selections), (None, 'max'))
    done = rank(results, mode)
    ranked = done + [r for r in results if r.rank is None]
    search['metric'], search['mode'] = metric, mode
    _write_summary(search_dir, search, ranked)
    if done:
        best = done[0].point
        try:
            base = read_yaml(search['base'])
        except ConfigError as err:
            raise SweepError(f'the chosen point is {best["name"]}, but its config cannot be '
                             f'written: the base config {err}') from None
        tree = point_config(base, Point(best['name'], best['values'], {}),
                            run_name=best['name'])
        write_yaml(here.chosen, tree,
                   f"The chosen point of the search {search['task']}: {best['name']}\n"
                   f"(best mean val {metric} over {done[0].seeds} seed(s); screening "
                   f"overrides not included: {' '.join(search['overrides']) or 'none'}).\n"
                   f"Base config: {search['base']}; grid: {search['grid']}.")
    return ranked, search


def _fmt(pair: Optional[Tuple[float, float]]) -> str:
    return '—' if pair is None else f'{pair[0]:.4f} ± {pair[1]:.4f}'


def _write_summary(search_dir: str, search: Dict[str, Any], ranked: List[PointResult]):
    aliases = search['aliases']
    planned = len(search['seeds'])
    header = ['rank', 'point', *aliases.values(), 'val_mean', 'val_std', 'test_mean',
              'test_std', 'num_seeds', 'planned_seeds', 'best_epoch', 'flags', 'config']
    rows = []
    for r in ranked:
        vals = [r.point['values'].get(k, '') for k in aliases]
        rows.append([r.rank or '', r.point['name'], *vals,
                     *(r.val or ('', '')), *(r.test or ('', '')), r.seeds, planned,
                     '' if r.epoch is None else r.epoch, ' '.join(r.flags), r.point['config']])
    SearchDir(search_dir).write_summary(header, rows)


def format_summary(ranked: List[PointResult], search: Dict[str, Any]) -> str:
    """The printed table: one row per point, best first."""
    metric = search.get('metric') or 'metric'
    aliases = list(search['aliases'].items())
    planned = len(search['seeds'])
    header = ['rank', *[a for _, a in aliases], f'val {metric}', f'test {metric}', 'seeds',
              'flags']
    rows = [[str(r.rank or '-'), *[format_value(r.point['values'].get(k, '')) for k, _ in aliases],
             _fmt(r.val), _fmt(r.test), f'{r.seeds}/{planned}', ' '.join(r.flags)]
            for r in ranked]
    widths = [max(len(x[i]) for x in [header] + rows) for i in range(len(header))]
    lines = ['  '.join(c.ljust(wd) for c, wd in zip(row, widths)) for row in [header] + rows]
    lines.insert(1, '  '.join('-' * wd for wd in widths))
    direction = 'highest' if search.get('mode', 'max') == 'max' else 'lowest'
    title = (f"search {search['task']}: {len(ranked)} points ranked by mean val {metric} "
             f'over seeds ({direction} first; equal means: smaller std, then name); '
             'mean ± std (ddof=0) at each seed\'s best-validation epoch')
    notes = []
    warm = [r for r in ranked if 'warm-up' in r.flags]
    if warm:
        notes.append(f'warning: {len(warm)} of {len(ranked)} point(s) never left the '
                     'learning-rate warm-up (optim.max_epoch <= optim.num_warmup_epochs): '
                     'their ranking says little; screen with more epochs than warm-up epochs')
    ties = [r for r in ranked if 'tie' in r.flags]
    if ties:
        notes.append(f'warning: {len(ties)} point(s) tie on the mean val {metric}; among '
                     'them the smaller std, then the name decides')
    nan = [r for r in ranked if 'nan' in r.flags]
    if nan:
        notes.append(f'warning: {len(nan)} point(s) have a NaN mean val {metric} (the metric '
                     'is undefined on their validation split): not ranked')
    for r in ranked:
        if r.problem:
            notes.append(f"warning: point {r.point['name']} not aggregated: {r.problem}")
    return '\n'.join([title, *lines, *notes])
