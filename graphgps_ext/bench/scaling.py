r"""Suite ``scaling``: time per epoch against graph size at a fixed number of
nodes.

For every layer type of :data:`graphgps_ext.bench.layers.LAYER_TYPES` and
every graph size ``n`` (default 25, 50, 100, 200, 400) an *epoch* is
``--scaling-batches`` forward + backward steps of one hybrid layer
(:func:`graphgps_ext.bench.layers.layer_step`) on batches of
``--scaling-batch-nodes / n`` molecule-like graphs of exactly ``n`` nodes
(ZINC's edge density, ``m = n + 2`` undirected edges), so every epoch sees
the same number of nodes and edges whatever ``n`` is.

A layer whose cost is linear in nodes + edges (MPNNs, GEANet, sparse GT)
then takes the same time at every ``n``; dense all-pairs attention
(Transformer, CSA, MNA, full GT) costs :math:`O(n^2)` per graph, i.e.
:math:`O(N n)` per epoch. The suite fits
:math:`\log t = a + s \log n` by least squares and reports the slope
:math:`s` (0: linear in nodes + edges; 1: quadratic per graph) next to the
expected class. The table and a log-log PNG plot (matplotlib, Agg backend)
are written next to the JSON output.
"""
import math
from typing import Dict, List, Optional, Sequence

import torch

from graphgps_ext.bench import common
from graphgps_ext.bench.data import scaling_family
from graphgps_ext.bench.layers import (LAYER_TYPES, build_layers, layer_cfg,
                                       layer_step, make_layer_batches,
                                       measure_steps)

SIZES = (25, 50, 100, 200, 400)


def fit_slope(sizes: Sequence[float], times: Sequence[float]) -> float:
    r"""Least-squares slope of :math:`\log t` against :math:`\log n`
    (finite points only; NaN with fewer than two)."""
    pts = [(math.log(n), math.log(t)) for n, t in zip(sizes, times)
           if t is not None and t == t and t > 0]
    if len(pts) < 2:
        return float('nan')
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in pts)
    return sxy / sxx


def verdict(slope: float) -> str:
    """What the measured slope says: ``flat`` (cost linear in nodes + edges
    over the measured sizes), ``∝ n`` (quadratic per graph) or between."""
    if slope != slope:
        return '–'
    if slope < 0.3:
        return 'flat: ∝ N+E'
    if slope > 0.7:
        return '∝ n: quadratic per graph'
    return 'between'


def run(device: torch.device, sizes: Sequence[int] = SIZES,
        types: Optional[Sequence[str]] = None, batch_nodes: int = 800,
        batches: int = 8, distinct_batches: int = 2, dim: int = 64,
        repeats: int = 3, seed: int = 0, log=print) -> Dict[str, object]:
    """Run the suite; returns ``{'rows': [...], 'fits': [...], 'markdown'}``.

    An epoch holds ``batches * batch_nodes`` nodes at every size."""
    names = list(types or LAYER_TYPES)
    unknown = [t for t in names if t not in LAYER_TYPES]
    if unknown:
        raise ValueError(f'unknown layer types {unknown}; choose from '
                         + ', '.join(LAYER_TYPES))
    bad = [n for n in sizes if n > batch_nodes]
    if bad:
        raise ValueError(f'graph sizes {bad} exceed --scaling-batch-nodes '
                         f'{batch_nodes}: raise it')
    rows, fits = [], []
    for name in names:
        lt = LAYER_TYPES[name]
        torch.manual_seed(seed)
        layers = build_layers(layer_cfg(lt, dim), 1).to(device).train()
        epoch_s = []
        for n in sizes:
            bs = batch_nodes // n
            family = scaling_family(n, bs)
            items = make_layer_batches(family, distinct_batches, dim, seed,
                                       lt.pair_features, device, bs)
            m = measure_steps(lambda it: layer_step(layers, it), items, device,
                              warmup=1, steps=batches * repeats,
                              budget_s=float('inf'), graphs_per_item=bs,
                              memory=False)
            per_epoch = (batches * m.ms_per_batch / 1e3 if m.status == 'ok'
                         else float('nan'))
            epoch_s.append(per_epoch)
            rows.append({'layer': name, 'n': n, 'graphs_per_batch': bs,
                         'nodes_per_epoch': bs * n * batches,
                         'edges_per_epoch': int(items[0].batch.edge_index.size(1))
                         * batches,
                         'epoch_s': per_epoch, 'status': m.status})
            log(f'  [scaling] {name:28s} n={n:4d} x{bs:3d}  '
                f'{common.fmt(per_epoch, 3):>8s} s/epoch  {m.status}')
        slope = fit_slope(sizes, epoch_s)
        fits.append({'layer': name, 'slope': slope, 'verdict': verdict(slope),
                     'expected': ('O(N+E)' if lt.complexity == 'linear'
                                  else 'O(Σ n²) dense attention')})
        layers = None  # free this layer type's memory
    return {'rows': rows, 'fits': fits, 'sizes': list(sizes),
            'markdown': markdown(rows, fits, sizes),
            'settings': {'batch_nodes': batch_nodes, 'batches': batches,
                         'dim': dim, 'repeats': repeats,
                         'nodes_per_epoch': batch_nodes * batches}}


def markdown(rows: List[dict], fits: List[dict], sizes: Sequence[int]) -> str:
    by = {(r['layer'], r['n']): r for r in rows}
    headers = (['layer type'] + [f'n={n} (ms/epoch)' for n in sizes]
               + ['slope d log t / d log n', 'measured', 'expected'])
    table = []
    for f in fits:
        line = [f['layer']]
        for n in sizes:
            r = by.get((f['layer'], n))
            line.append(None if r is None or r['status'] != 'ok'
                        else 1e3 * r['epoch_s'])
        slope = f['slope']
        line += [None if slope != slope else f'{slope:.2f}', f['verdict'],
                 f['expected']]
        table.append(line)
    return common.markdown_table(headers, table)


def plot(result: Dict[str, object], path: str):
    """Log-log plot of seconds per epoch against ``n``, one line per layer."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    sizes = result['sizes']
    by = {(r['layer'], r['n']): r['epoch_s'] for r in result['rows']}
    from matplotlib.ticker import NullFormatter
    fig, ax = plt.subplots(figsize=(7.5, 5))
    colors = plt.get_cmap('tab20').colors
    for i, f in enumerate(result['fits']):
        ys = [by.get((f['layer'], n), float('nan')) for n in sizes]
        dashed = f['expected'] != 'O(N+E)'
        ax.plot(sizes, ys, marker='o', linestyle='--' if dashed else '-',
                color=colors[(2 * i) % 20 + (2 * i) // 20],
                label=f"{f['layer']} (slope {f['slope']:.2f})")
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(n) for n in sizes])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel('nodes per graph n (fixed nodes per epoch)')
    ax.set_ylabel('seconds per epoch (forward + backward, one layer)')
    nodes = result['settings']['nodes_per_epoch']
    ax.set_title(f'Scaling at {nodes:,} nodes per epoch '
                 '(solid: linear branches, dashed: dense attention)')
    ax.grid(True, which='both', alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
