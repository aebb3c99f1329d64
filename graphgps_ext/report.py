r"""Our results beside the papers' numbers: ``python -m graphgps_ext.report``.

Inputs (all plain files):

- ``run/tables.tsv``: one row per (paper, table, config, compared number) with
  the columns ``paper table config seeds ref_table dataset model metric
  split``. ``ref_table`` names the table of ``paper_numbers.csv`` that holds
  the number (``=``: the row's own table; figures reuse their table's
  numbers); ``model``/``metric`` are ``-`` for runs without a published
  number (e.g. MNA-GT Figures 2-4); ``dataset`` is always given.
- ``run/paper_numbers.csv``: ``paper table dataset model metric mean std
  seeds split unit note`` as printed in the papers (``unit`` ``%`` marks
  percentages; our metrics are fractions and are scaled to match).
- ``results/<name>/<seed>/``: ``best.json`` (best-validation epoch with every
  split's stats), ``done`` (``epochs`` actually run), ``{train,val,test}/
  stats.json`` (per-epoch curves), ``config.yaml`` (resolved config),
  ``data.json`` (the data as loaded; ``stand_in``). Only seeds with ``done``
  count; unfinished ones are reported as running. Without seed folders,
  ``results/<name>/agg/`` of ``python -m graphgps_ext.agg`` is used
  (``<split>/best.json``: ``<stat>``, ``<stat>_std``, ``num_seeds``;
  ``<split>/stats.json`` per epoch).

Outputs: ``results/REPORT.md`` (one Markdown table per paper table: ours
mean ± std, completed/planned seeds, the paper's mean ± std and seeds, the
deviation :math:`(\mu_{ours} - \mu_{paper}) / \sigma_{paper}`, Welch's test
of the two means and its verdict, epochs run vs. the shipped config's
``optim.max_epoch``, and caveats: data stand-ins, values that differ from
the shipped config), the same results as tables to publish beside it,
``results/REPORT.csv`` and ``results/REPORT.tex`` (:mod:`graphgps_ext.tables`:
across configs, mean ± std, the best of each table marked; the configs of
no paper table too), one verdict line per compared number on stdout, and
``results/<name>/agg/curves.png`` (:func:`plot_curves`: mean ± std band over
seeds of the loss and the selection metric per split and epoch, clipped to
the stat's range, each seed's best epoch marked, the learning rate below).
``--overlay NAME ...`` draws instead the curves of several configs in one
figure (:func:`plot_overlay`). Epochs are numbered from 0, as in the files.

**Consistency.** Our mean :math:`\bar x_1` over :math:`n_1` seeds and the
paper's :math:`\bar x_2` over :math:`n_2` are compared with Welch's
unequal-variance t-test (:func:`welch`):

.. math:: t = \frac{\bar x_1 - \bar x_2}{\sqrt{s_1^2/n_1 + s_2^2/n_2}},
   \qquad \nu = \frac{(s_1^2/n_1 + s_2^2/n_2)^2}
   {\frac{(s_1^2/n_1)^2}{n_1 - 1} + \frac{(s_2^2/n_2)^2}{n_2 - 1}},

two-sided :math:`p = 2\,P(T_\nu > |t|)`; *consistent* when
:math:`p \ge 0.05`, *differs* otherwise. :math:`s_1` is our sample standard
deviation (ours are stored with ``ddof=0`` and converted), :math:`s_2` the
paper's as printed. A result trained for fewer epochs than the shipped
config (the paper's setting) or on stand-in or reduced data is *not
comparable*, whatever the test says; without two seeds on each side, or
without the paper's std or seed count, there is no test.

Standard deviations in the tables are population standard deviations
(``ddof=0``, as the GraphGPS aggregation) over seeds.

**Selections.** *ours* is each seed's value at its best-validation epoch
(``best.json``). With ``--best-over-epochs`` a second column gives each
seed's best value of the same split over all its evaluated epochs
(``<split>/stats.json``; the highest, or the lowest for a metric that
improves downwards), mean ± std over seeds: an optimistic selection that
looks at the test split, shown for comparison with a paper that does not
say which epoch it reports; the verdict stays on the best-validation epoch.
"""
import argparse
import csv
import datetime
import glob
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from graphgps_ext.config import ConfigError, flatten, read_yaml
from graphgps_ext.files import write_text
from graphgps_ext.metrics import RANGES, direction
from graphgps_ext.runs.config import config_name
from graphgps_ext.results.tree import Results, run_name_path
from graphgps_ext.results.identity import select_seeds
from graphgps_ext.results.seed_folder import check_seed
from graphgps_ext.runs.seed_lists import parse_seeds
from graphgps_ext.tables import Entry, mark_best, write_csv, write_latex
from graphgps_ext.task import SPLITS

TSV_COLUMNS = ('paper', 'table', 'config', 'seeds', 'ref_table', 'dataset',
               'model', 'metric', 'split')
CSV_COLUMNS = ('paper', 'table', 'dataset', 'model', 'metric', 'mean', 'std',
               'seeds', 'split', 'unit', 'note')
PAPER_TITLES = {
    'geaet': 'GEAET (Liang et al., ICML 2024)',
    'csa': 'CSA (Menegaux et al., 2023)',
    'mna': 'MNA-GT (Li, Chen, He, 2023)',
    'gt': 'GT (Dwivedi & Bresson, 2021)',
    'gps': 'GraphGPS baselines (Rampášek et al., 2022)',
}
# Metrics the papers print in percent.
PERCENT_METRICS = ('accuracy', 'accuracy_sbm')
# Keys that always differ between a run and its shipped config.
_IGNORED_KEYS = {'seed', 'out_dir', 'run_name', 'accelerator', 'train.auto_resume',
                 'metric_best', 'metric_agg', 'model.loss_fun', 'gnn.dim_inner',
                 'cfg_dest', 'dataset.dir', 'wandb.use', 'wandb.mode',
                 'tensorboard.use', 'num_threads', 'num_workers', 'run_dir',
                 'dataset.offline', 'posenc.num_workers', 'posenc.progress',
                 'dataset.max_graphs'}  # reported by data_caveats


# --------------------------------------------------------------------------- inputs
def read_tables(path: str) -> List[Dict[str, str]]:
    """Rows of ``run/tables.tsv`` (``#`` lines are comments)."""
    rows = []
    with open(path, newline='') as f:
        lines = [ln for ln in f if ln.strip() and not ln.startswith('#')]
    reader = csv.DictReader(lines, delimiter='\t')
    missing = [c for c in TSV_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f'{path}: missing column(s) {missing}; expected {TSV_COLUMNS}')
    for row in reader:
        row = {k: (v or '').strip() for k, v in row.items() if k is not None}
        if row['ref_table'] in ('', '='):
            row['ref_table'] = row['table']
        if not row['split'] or row['split'] == '-':
            row['split'] = 'test'
        row['name'] = config_name(row['config'])
        rows.append(row)
    return rows


def read_paper_numbers(path: str) -> Dict[Tuple[str, ...], Dict[str, str]]:
    """``paper_numbers.csv`` keyed by (paper, table, dataset, model, metric, split)."""
    out = {}
    with open(path, newline='') as f:
        reader = csv.DictReader(f)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f'{path}: missing column(s) {missing}')
        for row in reader:
            key = paper_key(row)
            if key in out:
                raise ValueError(f'{path}: duplicate row {key}')
            out[key] = row
    return out


def paper_key(row: Dict[str, str], table_field: str = 'table') -> Tuple[str, ...]:
    return (row['paper'], row[table_field], row['dataset'], row['model'],
            row['metric'], row.get('split') or 'test')


def _read_yaml(path: str) -> Dict[str, Any]:
    """The mapping of a YAML file (:func:`graphgps_ext.config.read_yaml`),
    ``{}`` when there is none."""
    try:
        return read_yaml(path)
    except ConfigError:
        return {}


@dataclass
class SeedResult:
    seed: int
    done: bool
    best: Optional[Dict[str, Any]]
    epochs: Optional[int]
    config: Dict[str, Any]
    stats: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)
    data_info: Optional[Dict[str, Any]] = None


@dataclass
class ConfigResults:
    """A config's results: its seed folders, and ``agg/`` (``python -m
    graphgps_ext.agg``: ``agg/<split>/best.json`` with ``<stat>``,
    ``<stat>_std``, ``num_seeds``; ``agg/<split>/stats.json`` per epoch),
    which is used when the seed folders are absent (e.g. only ``agg/`` was
    committed)."""
    name: str
    seeds: List[SeedResult]
    agg: Optional[Dict[str, Any]] = None
    agg_stats: Dict[str, List[Dict[str, Any]]] = field(default_factory=dict)

    @property
    def done(self) -> List[SeedResult]:
        return [s for s in self.seeds if s.done and s.best is not None]

    @property
    def running(self) -> List[SeedResult]:
        return [s for s in self.seeds if not s.done]


def load_results(results_dir: str, name: str, curves: bool = True) -> Optional[ConfigResults]:
    """Every seed of ``results/<name>/`` (``None`` when nothing is there),
    chosen by the rule ``agg`` follows
    (:func:`graphgps_ext.results.identity.select_seeds`: each seed once, the
    finished ones of one config on one data; a mix raises
    :class:`~graphgps_ext.results.identity.MixedRunsError`)."""
    run_root = Results(results_dir).run(name)
    base = run_root.path
    if not os.path.isdir(base):
        return None
    chosen = select_seeds(run_root)
    seeds = []
    for entry in sorted(chosen.finished + chosen.unfinished):
        folder = run_root.seed(entry)
        done_info = folder.read_done()
        done = done_info is not None
        # Checked before anything is reported (a damaged seed raises
        # SeedFolderError naming the seed folder and the file).
        record = check_seed(folder, done_info)
        stats = record['stats'] if curves or not done_info else {}
        epochs = None
        if isinstance(done_info, dict) and isinstance(done_info.get('epochs'), int):
            epochs = done_info['epochs']
        elif record['stats'].get('train'):
            epochs = record['stats']['train'][-1]['epoch'] + 1
        seeds.append(SeedResult(int(entry), done, record['best'],
                                epochs, folder.read_config(), stats,
                                folder.read_data()))
    agg = {}
    for split in SPLITS:
        best = run_root.read_agg_best(split)
        if best is not None:
            agg[split] = best
    agg_stats = {s: run_root.read_agg_stats(s)
                 for s in SPLITS} if agg and (curves or not seeds) else {}
    if not seeds and not agg:
        return None
    return ConfigResults(name, sorted(seeds, key=lambda s: s.seed), agg or None, agg_stats)


# --------------------------------------------------------------------------- statistics
def seed_values(res: ConfigResults, split: str, metric: str) -> List[float]:
    vals = []
    for s in res.done:
        rec = s.best.get(split) if isinstance(s.best, dict) else None
        if isinstance(rec, dict) and isinstance(rec.get(metric), (int, float)):
            vals.append(float(rec[metric]))
    return vals


def agg_value(agg: Optional[Dict[str, Any]], split: str, metric: str
              ) -> Optional[Tuple[float, float, int]]:
    """(mean, std, seeds) of ``metric`` from ``agg/<split>/best.json``."""
    rec = (agg or {}).get(split)
    if isinstance(rec, dict) and isinstance(rec.get(metric), (int, float)):
        std = rec.get(f'{metric}_std', float('nan'))
        n = rec.get('num_seeds', 0)
        return float(rec[metric]), float(std), int(n) if isinstance(n, (int, float)) else 0
    return None


def ours_stats(res: ConfigResults, split: str, metric: str
               ) -> Optional[Tuple[float, float, int]]:
    vals = seed_values(res, split, metric)
    if vals:
        return float(np.mean(vals)), float(np.std(vals)), len(vals)
    if not res.seeds and res.agg is not None:
        return agg_value(res.agg, split, metric)
    return None


def best_over_epochs(res: ConfigResults, split: str, metric: str
                     ) -> Optional[Tuple[float, float, int]]:
    """(mean, population std, seeds) over the completed seeds of each seed's
    best ``metric`` on ``split`` over all its evaluated epochs (the highest,
    or the lowest for ``mae``-like metrics); ``None`` without per-epoch
    records (e.g. only ``agg/`` kept) or for a metric of unknown direction.
    Needs the seeds' curves (``load_results(..., curves=True)``)."""
    try:
        pick = min if direction(metric) == 'min' else max
    except KeyError:
        return None
    vals = []
    for s in res.done:
        recs = [float(r[metric]) for r in s.stats.get(split, [])
                if isinstance(r.get(metric), (int, float)) and not math.isnan(r[metric])]
        if recs:
            vals.append(pick(recs))
    if not vals:
        return None
    return float(np.mean(vals)), float(np.std(vals)), len(vals)


def _num(s: str) -> Optional[float]:
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _decimals(s: str) -> int:
    return len(s.split('.')[1]) if s and '.' in s else 0


def fmt_pm(mean: float, std: Optional[float], decimals: int) -> str:
    if std is None or math.isnan(std):
        return f'{mean:.{decimals}f}'
    return f'{mean:.{decimals}f} ± {std:.{decimals}f}'


# --------------------------------------------------------------------------- consistency
#: Two-sided significance level of the consistency verdict.
ALPHA = 0.05


@dataclass
class Welch:
    """Welch's t-test of two means from their summaries."""
    t: float
    df: float
    p: float

    @property
    def verdict(self) -> str:
        return 'consistent' if self.p >= ALPHA else 'differs'


def welch(mean1: float, std1: float, n1: int, mean2: float, std2: float, n2: int
          ) -> Optional[Welch]:
    """Welch's unequal-variance t-test of two means given as mean, *sample*
    standard deviation (``ddof=1``) and count (two-sided p-value, see the
    module docstring); ``None`` when a side has fewer than 2 samples or both
    standard deviations are 0."""
    from scipy.stats import t as student_t
    if n1 < 2 or n2 < 2 or (std1 <= 0 and std2 <= 0):
        return None
    v1, v2 = std1 ** 2 / n1, std2 ** 2 / n2
    t = (mean1 - mean2) / math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1 ** 2 / (n1 - 1) + v2 ** 2 / (n2 - 1))
    return Welch(t, df, float(2 * student_t.sf(abs(t), df)))


def sample_std(population_std: float, n: int) -> float:
    """The sample standard deviation (``ddof=1``) of ``n`` values from their
    population one (``ddof=0``)."""
    return population_std * math.sqrt(n / (n - 1)) if n > 1 else float('nan')


def not_comparable(res: 'ConfigResults', shipped: Dict[str, Any], caveats: List[str]
                   ) -> List[str]:
    """Why a result cannot be compared with the paper's: fewer epochs than
    the shipped config's ``optim.max_epoch`` (the paper's setting; with
    early stopping, the run's own ``optim.max_epoch`` counts), stand-in or
    reduced data."""
    reasons = []
    planned = flatten(shipped).get('optim.max_epoch')
    runs = res.done
    if runs:
        # Epochs run, or the run's own max_epoch where early stopping ended it.
        fewer = []
        for s in runs:
            flat = flatten(s.config)
            ran = s.epochs
            if (flat.get('train.early_stop_patience') or 0) > 0:
                ran = flat.get('optim.max_epoch', ran)
            if isinstance(ran, int) and isinstance(planned, int) and ran < planned:
                fewer.append(ran)
        if fewer:
            reasons.append(f'{max(fewer)} of {planned} epochs')
        if any((s.data_info or {}).get('stand_in') for s in runs):
            reasons.append('stand-in data')
    elif not res.seeds and res.agg_stats.get('train') and isinstance(planned, int):
        ran = max(int(r['epoch']) for r in res.agg_stats['train']) + 1
        if ran < planned:
            reasons.append(f'{ran} of {planned} epochs')
    for c in caveats:
        if c.startswith('reduced data'):
            reasons.append('reduced data')
        elif 'stand-in' in c and 'not checked' not in c:  # data_caveats' wording
            reasons.append('stand-in data')
    return list(dict.fromkeys(reasons))


# --------------------------------------------------------------------------- caveats
def data_caveats(dataset: str, config: Dict[str, Any],
                 data_info: Optional[Dict[str, Any]] = None) -> List[str]:
    """Known differences of a run's data from the paper's.

    ``dataset``: the paper's dataset name (``run/tables.tsv``); ``config``:
    the run's resolved ``config.yaml``; ``data_info``: the run's
    ``data.json`` (the loader's ``DatasetBundle.info``) when it exists.
    """
    out = []
    flat = flatten(config)
    ds = dataset.lower()
    fmt = str(flat.get('dataset.format', ''))
    data_dir = str(flat.get('dataset.dir', '') or '')
    info = data_info or {}
    if ds == 'zinc':
        marker = os.path.join(data_dir, 'ZINC', 'train_standin_sources.csv.gz')
        if data_dir and os.path.exists(marker):
            out.append('ZINC train split is a stand-in (10k ZINC-full val molecules); '
                       'val/test exact')
        elif not data_dir or not os.path.isdir(data_dir):
            out.append('ZINC train split: provenance not checked (dataset.dir absent here)')
    elif ds in ('pattern', 'cluster') and (fmt in ('synthetic', '') or info.get('stand_in')):
        out.append(f'generated {dataset} stand-in (SBM generator, docs/datasets.md), '
                   'not the published files')
    elif ds.startswith('treeneighbourmatch'):
        variant = flat.get('dataset.tree_variant')
        out.append('TreeNeighbourMatch generated (docs/datasets.md'
                   + (f', {variant} variant' if variant else '') + ')')
    elif ds in ('nci1', 'nci109', 'collab'):
        out.append('random 8:1:1 split per seed')
    if info.get('stand_in') and ds not in ('pattern', 'cluster'):
        out.append('data is a stand-in (loader)')
    max_graphs = flat.get('dataset.max_graphs')
    if isinstance(max_graphs, int) and max_graphs > 0:
        sizes = info.get('sizes')
        out.append(f'reduced data: dataset.max_graphs {max_graphs}'
                   + (f' ({"/".join(str(v) for v in sizes.values())} train/val/test)'
                      if isinstance(sizes, dict) else ''))
    return out


_SHIPPED: Dict[str, Dict[str, Any]] = {}


def shipped_config(path: str) -> Dict[str, Any]:
    """The config file resolved with the defaults (:func:`load_cfg`), so that an
    override of a key the file does not set is seen too; the bare YAML if the
    package cannot resolve it."""
    if path not in _SHIPPED:
        data = _read_yaml(path)
        try:
            from graphgps_ext.runs.config import load_cfg
            from graphgps_ext.logger import cfg_to_dict
            data = cfg_to_dict(load_cfg(path, []))
        except Exception:  # noqa: BLE001 - any failure: compare the file as written
            pass
        _SHIPPED[path] = data
    return _SHIPPED[path]


def config_differences(shipped: Dict[str, Any], run: Dict[str, Any]) -> List[str]:
    """``key run-value (config value)`` for every shipped key the run changed."""
    ship = flatten(shipped)
    ran = flatten(run)
    out = []
    for key, value in sorted(ship.items()):
        if key in _IGNORED_KEYS or key not in ran:
            continue
        rv = ran[key]
        same = rv == value
        if not same and isinstance(rv, (int, float)) and isinstance(value, (int, float)):
            same = math.isclose(float(rv), float(value), rel_tol=1e-9, abs_tol=1e-12)
        if not same and str(rv) == str(value):
            same = True
        if not same:
            out.append(f'{key} {rv} (config {value})')
    return out


# --------------------------------------------------------------------------- curves
def value_range(key: str) -> Tuple[float, float]:
    """The values a curve's stat takes, to which mean ± std bands are
    clipped: a loss is non-negative (every loss of
    :mod:`graphgps_ext.train.loss`), a metric as :data:`~graphgps_ext.metrics.RANGES`
    says, the learning rate non-negative."""
    if key in RANGES:
        return RANGES[key]
    if key in ('loss', 'lr'):
        return 0.0, math.inf
    return -math.inf, math.inf


@dataclass
class Curve:
    """One split's stat over the epochs (numbered from 0): mean and
    population std over the seeds, and the seeds behind each point."""
    epochs: np.ndarray
    mean: np.ndarray
    std: np.ndarray


def curve(res: ConfigResults, split: str, key: str) -> Optional[Curve]:
    """``key`` of ``split`` per epoch over the seeds of :func:`curve_seeds`
    (or from ``agg/<split>/stats.json`` without seed folders); ``None``
    when no epoch has it."""
    seeds = curve_seeds(res)
    if not seeds:
        recs = [r for r in res.agg_stats.get(split, [])
                if isinstance(r.get(key), (int, float))]
        if not recs:
            return None
        return Curve(np.array([int(r['epoch']) for r in recs]),
                     np.array([float(r[key]) for r in recs]),
                     np.array([float(r.get(f'{key}_std', 0.0)) for r in recs]))
    per_epoch: Dict[int, List[float]] = {}
    for s in seeds:
        for rec in s.stats.get(split, []):
            v = rec.get(key)
            if isinstance(v, (int, float)) and not math.isnan(v):
                per_epoch.setdefault(int(rec['epoch']), []).append(float(v))
    if not per_epoch:
        return None
    ep = np.array(sorted(per_epoch))
    return Curve(ep, np.array([np.mean(per_epoch[e]) for e in ep]),
                 np.array([np.std(per_epoch[e]) for e in ep]))


def curve_seeds(res: ConfigResults) -> List[SeedResult]:
    """The seeds whose curves are drawn: the finished ones, or while none
    has finished the running ones."""
    seeds = [s for s in res.seeds if any(s.stats.get(sp) for sp in SPLITS)]
    return [s for s in seeds if s.done] or seeds


def best_epochs(res: ConfigResults) -> List[int]:
    """The best (selection) epoch of each drawn seed; from ``agg/`` the
    mean best epoch, rounded."""
    seeds = curve_seeds(res)
    if seeds:
        return [int(s.best['epoch']) for s in seeds
                if isinstance(s.best, dict) and isinstance(s.best.get('epoch'), int)]
    rec = (res.agg or {}).get('val') or next(iter((res.agg or {}).values()), None)
    if isinstance(rec, dict) and isinstance(rec.get('epoch'), (int, float)):
        return [int(round(rec['epoch']))]
    return []


def selection_metric(res: ConfigResults, metric: Optional[str] = None) -> Optional[str]:
    """``metric``, else the metric the runs selected on."""
    if metric and metric != 'auto':
        return metric
    for s in curve_seeds(res):
        m = s.best.get('metric') if isinstance(s.best, dict) else None
        m = m or flatten(s.config).get('metric_best')
        if m and m != 'auto':
            return m
    m = next(iter((res.agg or {}).values()), {}).get('metric')
    return m if m and m != 'auto' else None


def _band(ax, c: Curve, key: str, color, label: str, style: str = '-'):
    """The mean line and its ± std band, clipped to ``key``'s range."""
    lo, hi = value_range(key)
    ax.plot(c.epochs, c.mean, style, color=color, label=label, linewidth=1.4)
    ax.fill_between(c.epochs, np.clip(c.mean - c.std, lo, hi), np.clip(c.mean + c.std, lo, hi),
                    color=color, alpha=0.18, linewidth=0)


def _mark_best(ax, epochs: Sequence[int], color='0.35', label: Optional[str] = None):
    for i, e in enumerate(sorted(set(epochs))):
        ax.axvline(e, color=color, linestyle=':', linewidth=1.1,
                   label=label if i == 0 else None)


def _best_label(epochs: Sequence[int]) -> Optional[str]:
    if not epochs:
        return None
    if len(set(epochs)) == 1:
        return f'best epoch {epochs[0]}' + (f' ({len(epochs)} seeds)' if len(epochs) > 1 else '')
    return f'best epochs {min(epochs)}–{max(epochs)} (per seed)'


def _figure(ncols: int, with_lr: bool):
    """A figure of ``ncols`` stat panels side by side and, ``with_lr``, one
    learning-rate panel below them all, sharing their epoch axis:
    ``(fig, panels, lr panel or None)``."""
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(5.6 * ncols, 5.8 if with_lr else 4.2))
    grid = fig.add_gridspec(2 if with_lr else 1, ncols,
                            height_ratios=[3, 1] if with_lr else None)
    panels = [fig.add_subplot(grid[0, 0])]
    panels += [fig.add_subplot(grid[0, i], sharex=panels[0]) for i in range(1, ncols)]
    lr_ax = fig.add_subplot(grid[1, :], sharex=panels[0]) if with_lr else None
    for ax in [*panels, *([lr_ax] if lr_ax is not None else [])]:
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    for ax in (panels if lr_ax is None else [lr_ax]):
        ax.set_xlabel('epoch (from 0)')
    if lr_ax is not None:
        lr_ax.set_ylabel('learning rate')
    return fig, panels, lr_ax


def plot_curves(res: ConfigResults, out_path: str, metric: Optional[str] = None) -> bool:
    """Loss and ``metric`` per epoch (mean ± std over seeds, the band clipped
    to the stat's range) for each split, the learning rate below, and the
    best (selection) epoch of each seed marked; epochs numbered from 0."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    seeds = curve_seeds(res)
    if not seeds and not any(res.agg_stats.get(sp) for sp in SPLITS):
        return False
    metric = selection_metric(res, metric)
    keys = ['loss'] + ([metric] if metric else [])
    lr = curve(res, 'train', 'lr')
    fig, panels, lr_ax = _figure(len(keys), lr is not None)
    colors = {'train': 'tab:blue', 'val': 'tab:orange', 'test': 'tab:green'}
    best = best_epochs(res)
    drawn = False
    for ax, key in zip(panels, keys):
        for split in SPLITS:
            c = curve(res, split, key)
            if c is not None:
                _band(ax, c, key, colors[split], split)
                drawn = True
        _mark_best(ax, best, label=_best_label(best))
        ax.set_ylabel(key)
        ax.legend(fontsize=8)
    if lr_ax is not None:
        lr_ax.plot(lr.epochs, lr.mean, color='0.25', linewidth=1.2)
        _mark_best(lr_ax, best)
    if seeds:
        n, state = len(seeds), 'completed' if any(s.done for s in seeds) else 'running'
    else:
        n = int(next(iter(res.agg.values())).get('num_seeds', 0)) if res.agg else 0
        state = 'aggregated'
    fig.suptitle(f'{res.name}: mean ± std over {n} {state} seed{"s" if n != 1 else ""}')
    fig.tight_layout()
    if drawn:
        os.makedirs(os.path.dirname(out_path) or '.', exist_ok=True)
        fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return drawn


def plot_overlay(results: Sequence[ConfigResults], out_path: str, split: str = 'val',
                 metric: Optional[str] = None) -> str:
    """The curves of several configs in one figure (an ablation): loss and
    ``metric`` of ``split`` per epoch, mean ± std over each config's seeds
    (bands clipped to the stat's range), each config's best epochs marked
    in its colour, and the learning rate below. Returns the path written."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    metric = next((m for m in (selection_metric(r, metric) for r in results) if m), None)
    keys = ['loss'] + ([metric] if metric else [])
    fig, panels, lr_ax = _figure(len(keys), True)
    palette = plt.rcParams['axes.prop_cycle'].by_key()['color']
    styles = ['-', '--', '-.', ':']
    for i, res in enumerate(results):
        color = palette[i % len(palette)]
        n = len(curve_seeds(res)) or int((res.agg or {}).get(split, {}).get('num_seeds', 0))
        label = f'{res.name} ({n} seed{"s" if n != 1 else ""})'
        best = best_epochs(res)
        for ax, key in zip(panels, keys):
            c = curve(res, split, key)
            if c is not None:
                _band(ax, c, key, color, label)
            _mark_best(ax, best, color=color)
        lr = curve(res, 'train', 'lr')
        if lr is not None:  # equal schedules: the line styles tell them apart
            lr_ax.plot(lr.epochs, lr.mean, styles[i % len(styles)], color=color,
                       linewidth=1.2, label=res.name)
        _mark_best(lr_ax, best, color=color)
    for ax, key in zip(panels, keys):
        ax.set_ylabel(f'{split} {key}')
        ax.legend(fontsize=8, title='dotted: best epochs', title_fontsize=7)
    fig.suptitle(f'{split} curves of {len(results)} configs: mean ± std over seeds')
    fig.tight_layout()
    os.makedirs(os.path.dirname(out_path) or '.', exist_ok=True)
    fig.savefig(out_path, dpi=100)
    plt.close(fig)
    return out_path


# --------------------------------------------------------------------------- report
@dataclass
class Row:
    """One line of a report table."""
    paper: str
    table: str
    config: str
    name: str
    dataset: str
    model: str
    metric: str
    split: str
    ours: str
    seeds: str
    paper_value: str
    paper_seeds: str
    deviation: str
    epochs: str
    caveats: List[str]
    z: Optional[float] = None
    welch_p: str = '—'
    verdict: str = '—'
    best_over: Optional[str] = None  # --best-over-epochs: best of the split over epochs
    #: (mean, std, seeds) as printed in ``ours`` (scaled to the paper's
    #: unit), the metric's direction and the decimals printed: the CSV and
    #: LaTeX tables (:mod:`graphgps_ext.tables`).
    value: Optional[Tuple[float, float, int]] = None
    mode: str = 'max'
    decimals: int = 4


def _epochs_text(res: ConfigResults, shipped: Dict[str, Any]) -> str:
    eps = sorted({s.epochs for s in res.done if s.epochs is not None})
    if not eps and not res.seeds and res.agg_stats.get('train'):
        eps = [max(int(r['epoch']) for r in res.agg_stats['train']) + 1]
    if not eps:
        return '—'
    ran = str(eps[0]) if len(eps) == 1 else f'{eps[0]}–{eps[-1]}'
    planned = flatten(shipped).get('optim.max_epoch')
    return f'{ran} / {planned}' if planned is not None else ran


def build_rows(tables: List[Dict[str, str]], numbers: Dict[Tuple[str, ...], Dict[str, str]],
               results_dir: str, repo_root: str, include_missing: bool = False,
               cache: Optional[Dict[str, Optional[ConfigResults]]] = None,
               over_epochs: bool = False) -> List[Row]:
    """One :class:`Row` per line of ``tables``; ``over_epochs`` also fills
    :attr:`Row.best_over` (:func:`best_over_epochs`)."""
    cache = {} if cache is None else cache
    rows = []
    for t in tables:
        name = t['name']
        if name not in cache:
            cache[name] = load_results(results_dir, name, curves=over_epochs)
        res = cache[name]
        has_number = t['metric'] not in ('', '-')
        key = (t['paper'], t['ref_table'], t['dataset'], t['model'], t['metric'], t['split'])
        paper = numbers.get(key) if has_number else None
        if has_number and paper is None:
            raise ValueError(f'run/tables.tsv row {t["paper"]} {t["table"]} {t["config"]} '
                             f'refers to {key}, which is not in paper_numbers.csv')
        metric = t['metric'] if has_number else None
        stats = None
        if res is not None:
            if metric is None:
                metric = next((s.best.get('metric') for s in res.done), None)
            if metric is None and res.agg:
                metric = next(iter(res.agg.values())).get('metric')
            if metric:
                stats = ours_stats(res, t['split'], metric)
        if stats is None and not include_missing:
            continue
        # Papers print accuracies in percent (unit '%'), our metrics are fractions.
        percent = (paper.get('unit') == '%') if paper is not None else metric in PERCENT_METRICS
        scale = 100.0 if percent else 1.0
        dec = max(_decimals(paper['mean']), 3) if paper is not None else (2 if percent else 4)
        planned = len(parse_seeds(t['seeds'])) if t['seeds'] else 0
        running = len(res.running) if res is not None else 0
        if stats is not None:
            mean, std, n = stats
            ours = fmt_pm(mean * scale, std * scale, dec)
            seeds = f'{n}/{planned}' + (f' (+{running} running)' if running else '')
        else:
            mean = std = None
            n = 0
            ours = 'not run' if running == 0 else f'{running} running'
            seeds = f'0/{planned}'
        pv = ps = dev = '—'
        z = None
        shipped = shipped_config(os.path.join(repo_root, t['config']))
        caveats = []
        if res is not None:
            done = res.done
            first = done[0] if done else (res.seeds[0] if res.seeds else None)
            caveats += data_caveats(t['dataset'], first.config if first else {},
                                    first.data_info if first else None)
            diffs = sorted({d for s in done for d in config_differences(shipped, s.config)})
            if diffs:
                caveats.append('changed: ' + '; '.join(diffs))
        welch_p = verdict = '—'
        if paper is not None:
            pm, psd = _num(paper['mean']), _num(paper['std'])
            pn = int(paper['seeds']) if (paper['seeds'] or '').isdigit() else None
            pv = paper['mean'] + (f' ± {paper["std"]}' if paper['std'] else '')
            if paper.get('unit') == '%':
                pv += ' %'
            ps = paper['seeds'] or '?'
            if mean is not None and math.isnan(mean):
                # A metric undefined for a seed (e.g. AP without a positive
                # label): a legitimate value, but no mean to compare.
                verdict = 'no test: the metric is NaN (undefined) for a seed'
            elif mean is not None and pm is not None:
                if psd:
                    z = (mean * scale - pm) / psd
                    dev = f'{z:+.1f}'
                else:
                    dev = f'Δ {mean * scale - pm:+.{dec}f} (no std)'
                test = (welch(mean * scale, sample_std(std * scale, n), n, pm, psd, pn)
                        if psd is not None and pn is not None else None)
                if test is not None:
                    welch_p = f'{test.p:.2g}'
                reasons = not_comparable(res, shipped, caveats)
                if reasons:
                    verdict = 'not comparable: ' + ', '.join(reasons)
                elif test is not None:
                    verdict = test.verdict
                else:
                    verdict = 'no test: ' + ('1 seed' if n < 2 else
                                             'paper std or seeds not given')
        if paper is not None and paper.get('note'):
            caveats.append('paper: ' + paper['note'])
        over = None
        if over_epochs:
            best = best_over_epochs(res, t['split'], metric) if res and metric else None
            over = fmt_pm(best[0] * scale, best[1] * scale, dec) if best else '—'
        rows.append(Row(t['paper'], t['table'], t['config'], name, t['dataset'],
                        t['model'] if t['model'] not in ('', '-') else name,
                        f'{metric or "?"}' + (f' ({t["split"]})' if t['split'] != 'test' else ''),
                        t['split'], ours, seeds, pv, ps, dev,
                        _epochs_text(res, shipped) if res is not None else '—', caveats, z,
                        welch_p, verdict, over,
                        value=(mean * scale, std * scale, n) if mean is not None else None,
                        mode=_mode(metric, res), decimals=dec))
    return rows


def _mode(metric: Optional[str], res: Optional[ConfigResults]) -> str:
    """``'min'`` or ``'max'``: the direction of ``metric`` (the runs' own
    ``mode`` for a metric the table does not know)."""
    try:
        return direction(metric)
    except KeyError:
        modes = [s.best.get('mode') for s in (res.done if res is not None else [])]
        return next((m for m in modes if m in ('min', 'max')), 'max')


def _table_sort_key(table: str):
    m = re.match(r'([a-z]+)(\d*)', table)
    kind, num = (m.group(1), int(m.group(2) or 0)) if m else (table, 0)
    return (0 if kind == 'table' else 1, kind, num, table)


def render(rows: List[Row], extra: List[Tuple[str, str]], results_dir: str,
           n_configs: int) -> str:
    def esc(s: str) -> str:
        return str(s).replace('|', '\\|')

    over = any(r.best_over is not None for r in rows)
    now = datetime.datetime.now().strftime('%Y-%m-%d %H:%M')
    lines = [
        '# Results beside the papers',
        '',
        f'Generated by `python -m graphgps_ext.report` on {now} from `{results_dir}/` '
        f'({n_configs} configs with results).',
        '',
        '- **ours**: mean ± std (population std, ddof=0) over the completed seeds of the '
        'metric at the best-validation epoch; accuracies in % where the paper prints %.',
        *(['- **best over epochs**: mean ± std over the same seeds of each seed\'s best value '
           'of the split over all its evaluated epochs (an optimistic selection that looks at '
           'the test split, for papers that do not say which epoch they report; the verdict '
           'is on the best-validation epoch).'] if over else []),
        '- **seeds**: completed / planned by `run/tables.tsv`; **Δ/σ**: (ours − paper) / '
        'paper std (sign: ours above the paper is +, for every metric).',
        f'- **Welch p**, **verdict**: Welch\'s t-test of our mean against the paper\'s '
        f'(our sample std, the paper\'s std and seeds as printed): *consistent* when '
        f'p ≥ {ALPHA}, *differs* otherwise; *not comparable* when the run had fewer epochs '
        'than the shipped config or stand-in / reduced data; *no test* without 2 seeds on '
        'each side or the paper\'s std and seed count.',
        '- **epochs**: epochs actually run / the shipped config\'s `optim.max_epoch` '
        '(fewer means a reduced protocol; the numbers are then not comparable).',
        '- **caveats**: data stand-ins, values changed from the shipped config '
        '(overrides), and the paper\'s own notes (from `run/paper_numbers.csv`).',
        '',
    ]
    by_paper: Dict[str, Dict[str, List[Row]]] = {}
    for r in rows:
        by_paper.setdefault(r.paper, {}).setdefault(r.table, []).append(r)
    order = [p for p in PAPER_TITLES if p in by_paper] + sorted(
        p for p in by_paper if p not in PAPER_TITLES)
    if not rows:
        lines += ['No finished run of a config listed in `run/tables.tsv` was found.', '']
    for paper in order:
        lines += [f'## {PAPER_TITLES.get(paper, paper)}', '']
        for table in sorted(by_paper[paper], key=_table_sort_key):
            lines += [f'### {paper} {table}', '',
                      '| dataset | model | config | metric | '
                      + ('ours (best-val epoch) | best over epochs' if over else 'ours')
                      + ' | seeds | paper | paper seeds | Δ/σ | Welch p | verdict | epochs | '
                      'caveats |', '|---' * (14 if over else 13) + '|']
            for r in by_paper[paper][table]:
                curve = Results(results_dir).run(r.name).curves
                cfg = f'`{r.name}`' + (f' ([curves]({os.path.relpath(curve, results_dir)}))'
                                       if os.path.exists(curve) else '')
                lines.append('| ' + ' | '.join(esc(x) for x in (
                    r.dataset, r.model, cfg, r.metric, r.ours,
                    *([r.best_over or '—'] if over else []), r.seeds, r.paper_value,
                    r.paper_seeds, r.deviation, r.welch_p, r.verdict, r.epochs,
                    '; '.join(r.caveats) or '—')) + ' |')
            lines.append('')
    if extra:
        lines += ['## Other results (configs not in `run/tables.tsv`)', '',
                  '| config | metric | ours (test at best val) | seeds | epochs |',
                  '|---|---|---|---|---|']
        for name, text in extra:
            lines.append(f'| `{name}` | {text} |')
        lines.append('')
    return '\n'.join(lines)


def run_names(results_dir: str) -> List[str]:
    """The folder names of ``results_dir``, sorted; two names that are one
    name in two Unicode spellings (composed and decomposed: they look the
    same) raise ``ValueError``, as their seeds would be split in two."""
    spellings: Dict[str, List[str]] = {}
    for base in sorted(glob.glob(os.path.join(glob.escape(results_dir), '*'))):
        if os.path.isdir(base):
            name = os.path.basename(base)
            spellings.setdefault(run_name_path(name), []).append(name)
    twins = [names for names in spellings.values() if len(names) > 1]
    if twins:
        raise ValueError(f'{results_dir} holds run folders whose names are one name in '
                         'two Unicode spellings (composed and decomposed): '
                         f'{", ".join(ascii(n) for n in twins[0])}; move the seeds of one '
                         'into the other (run names are written composed, NFC)')
    return sorted(n for names in spellings.values() for n in names)


def _others(results_dir: str, known: Sequence[str]):
    """``(name, results, metric, (mean, std, n) or None, epochs text)`` of
    every config with finished seeds that ``run/tables.tsv`` does not list
    (the test split at the best validation epoch)."""
    for name in run_names(results_dir):
        base = os.path.join(results_dir, name)
        if name in known or name.startswith('_') or not os.path.isdir(base):
            continue
        res = load_results(results_dir, name, curves=False)
        if res is None or not res.done:
            continue
        metric = res.done[0].best.get('metric', '?')
        eps = sorted({s.epochs for s in res.done if s.epochs is not None})
        yield (name, res, metric, ours_stats(res, 'test', metric),
               '–'.join(str(e) for e in (eps[:1] + eps[-1:] if len(eps) > 1 else eps)) or '—')


def _other_results(results_dir: str, known: Sequence[str]) -> List[Tuple[str, str]]:
    out = []
    for name, res, metric, st, eps in _others(results_dir, known):
        ours = fmt_pm(st[0], st[1], 4) if st else '—'
        out.append((name, f'{metric} | {ours} | {len(res.done)} | {eps}'))
    return out


def table_entries(rows: Sequence[Row], results_dir: str, known: Sequence[str],
                  others: bool = True) -> List[Entry]:
    """The report's results as :class:`~graphgps_ext.tables.Entry` (every
    row with a result, then, with ``others``, the configs of no paper
    table), the best of each group marked."""
    entries = [Entry(r.paper, r.table, r.dataset, r.model, r.name, r.metric.split(' (')[0],
                     r.split, r.value[0], r.value[1], r.value[2], r.mode, r.decimals,
                     r.paper_value if r.paper_value != '—' else '',
                     r.verdict if r.verdict != '—' else '', r.epochs)
               for r in rows if r.value is not None]
    for name, res, metric, st, eps in (_others(results_dir, known) if others else ()):
        if st is None:
            continue
        dataset = str(flatten(res.done[0].config).get('dataset.name', '') or '?')
        entries.append(Entry('', 'other', dataset, name, name, metric, 'test', st[0], st[1],
                             st[2], _mode(metric, res), epochs=eps))
    return mark_best(entries)


def make_report(results_dir: str = 'results', tables_path: str = 'run/tables.tsv',
                numbers_path: str = 'run/paper_numbers.csv',
                out_path: Optional[str] = None, repo_root: str = '.',
                curves: bool = True, papers: Optional[Sequence[str]] = None,
                include_missing: bool = False, over_epochs: bool = False) -> str:
    """Write the report (and curves); returns the Markdown text."""
    return write_report(results_dir, tables_path, numbers_path, out_path, repo_root,
                        curves, papers, include_missing, over_epochs)[0]


def verdict_lines(rows: List[Row]) -> List[str]:
    """One line per result compared with a paper's number."""
    out = []
    for r in rows:
        if r.verdict == '—':
            continue
        out.append(f'{r.paper} {r.table} {r.dataset} {r.model} ({r.name}) {r.metric}: '
                   f'ours {r.ours} [{r.seeds} seeds]'
                   + (f' (best over epochs {r.best_over})' if r.best_over else '')
                   + f' vs paper {r.paper_value} '
                   f'[{r.paper_seeds}]: {r.verdict}'
                   + (f' (Welch p = {r.welch_p})' if r.welch_p != '—' else ''))
    return out


def write_report(results_dir: str = 'results', tables_path: str = 'run/tables.tsv',
                 numbers_path: str = 'run/paper_numbers.csv',
                 out_path: Optional[str] = None, repo_root: str = '.',
                 curves: bool = True, papers: Optional[Sequence[str]] = None,
                 include_missing: bool = False, over_epochs: bool = False
                 ) -> Tuple[str, List[Row]]:
    """:func:`make_report`, returning the Markdown text and the table rows;
    ``over_epochs`` adds the best over epochs beside the best-validation
    epoch (``--best-over-epochs``)."""
    tables = read_tables(tables_path)
    if papers:
        unknown = sorted(set(papers) - {t['paper'] for t in tables})
        if unknown:
            raise ValueError(f'unknown paper(s) {unknown}; known: '
                             + ', '.join(sorted({t["paper"] for t in tables})))
        tables = [t for t in tables if t['paper'] in papers]
    numbers = read_paper_numbers(numbers_path)
    if os.path.isdir(results_dir):
        run_names(results_dir)  # one spelling per run name
    cache: Dict[str, Optional[ConfigResults]] = {}
    rows = build_rows(tables, numbers, results_dir, repo_root, include_missing, cache,
                      over_epochs)
    known = sorted({t['name'] for t in tables})
    extra = [] if papers else _other_results(results_dir, known)
    names_with_results = sorted({r.name for r in rows if r.ours not in ('not run',)}
                                | {n for n, _ in extra})
    if curves:
        for name in names_with_results:
            res = load_results(results_dir, name, curves=True)
            if res is not None:
                metric = next((t['metric'] for t in tables
                               if t['name'] == name and t['metric'] not in ('', '-')), None)
                plot_curves(res, Results(results_dir).run(name).curves, metric)
    text = render(rows, extra, results_dir, len(names_with_results))
    out_path = out_path or Results(results_dir).report
    os.makedirs(os.path.dirname(out_path) or '.', exist_ok=True)
    write_text(out_path, text + '\n')
    entries = table_entries(rows, results_dir, known, others=not papers)
    stem = os.path.splitext(out_path)[0]
    write_csv(entries, stem + '.csv')
    write_latex(entries, stem + '.tex', PAPER_TITLES)
    return text, rows


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog='python -m graphgps_ext.report',
        description='Markdown tables of our results beside the papers\' numbers, '
                    'and learning curves per config.')
    p.add_argument('--results', default='results', help='results root (default results)')
    p.add_argument('--tables', default='run/tables.tsv',
                   help='paper/table -> config mapping (default run/tables.tsv)')
    p.add_argument('--numbers', default=None,
                   help='published numbers (default paper_numbers.csv beside --tables)')
    p.add_argument('--out', default=None, help='output file (default <results>/REPORT.md)')
    p.add_argument('--root', default='.', help='repository root holding configs/ (default .)')
    p.add_argument('--paper', action='append', default=None,
                   help='only this paper (repeatable): geaet, csa, mna, gt, gps')
    p.add_argument('--all', action='store_true',
                   help='also list the planned runs that have no result yet')
    p.add_argument('--no-curves', action='store_true', help='do not draw curves.png')
    p.add_argument('--best-over-epochs', action='store_true',
                   help='also show each seed\'s best value over all epochs (labelled; the '
                        'default selection is the best-validation epoch), for papers that do '
                        'not say which epoch they report')
    p.add_argument('--overlay', nargs='+', metavar='NAME', default=None,
                   help='instead of the report: the curves of these configs '
                        '(results/<NAME>) in one figure, e.g. an ablation')
    p.add_argument('--split', default='val', choices=SPLITS,
                   help='the split of --overlay (default val)')
    p.add_argument('--metric', default=None,
                   help='the metric of --overlay (default: the selection metric)')
    args = p.parse_args(argv)
    numbers = args.numbers or os.path.join(os.path.dirname(args.tables) or '.',
                                           'paper_numbers.csv')
    try:
        if args.overlay:
            print(f'wrote {overlay(args.results, args.overlay, args.out, args.split, args.metric)}')
            return 0
        _, rows = write_report(args.results, args.tables, numbers, args.out, args.root,
                               curves=not args.no_curves, papers=args.paper,
                               include_missing=args.all, over_epochs=args.best_over_epochs)
    except (OSError, ValueError) as err:
        print(f'report: error: {err}', file=sys.stderr)
        return 2
    except ImportError as err:  # scipy (Welch's test), matplotlib (curves)
        print(f'report: error: {err.name or err} is not installed: '
              'pip install -e ".[report]"', file=sys.stderr)
        return 2
    for line in verdict_lines(rows):
        print(line)
    out = args.out or Results(args.results).report
    stem = os.path.splitext(out)[0]
    print(f'wrote {out}, {stem}.csv, {stem}.tex')
    return 0


def overlay(results_dir: str, names: Sequence[str], out: Optional[str] = None,
            split: str = 'val', metric: Optional[str] = None) -> str:
    """:func:`plot_overlay` of the configs ``results/<name>`` into ``out``
    (default :meth:`Results.overlay <graphgps_ext.results.tree.Results.overlay>`);
    ``ValueError`` naming a
    config without results."""
    found = []
    for name in names:
        res = load_results(results_dir, name, curves=True)
        if res is None:
            raise ValueError(f'no results in {os.path.join(results_dir, name)}')
        found.append(res)
    out = out or Results(results_dir).overlay(names)
    return plot_overlay(found, out, split, metric)


if __name__ == '__main__':
    sys.exit(main())
