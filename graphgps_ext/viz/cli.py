"""``python -m graphgps_ext.viz``: attention pictures of trained runs.

    python -m graphgps_ext.viz --run results/geaet-zinc/0 \\
        --compare results/gps-zinc/0 --graphs 0,5,9 --out figs/

writes, for the graphs of ``--split`` (default ``test``):

- ``attention_nodes.{png,svg}``: one row per graph; the plain molecule, then
  for every run (``--run`` first, then each ``--compare``) and every
  attention branch it has, the molecule with atoms coloured by their
  attention score (:func:`graphgps_ext.viz.record.node_scores`; GEAET
  Fig. 4/8); MNA gives one panel per kernel weight :math:`\\alpha_k`;
- ``csa_<run>_g<i>.{png,svg}``: the per-channel ``n x n`` CSA maps of graph
  ``i`` (CSA Fig. 3/4), and with ``--csa-nodes`` the rows of those maps drawn
  on the molecule (``csa_<run>_g<i>_rows``, receiving node marked in blue);
- with ``--head-maps``: ``<branch>_<run>_g<i>`` per-head maps of the
  Transformer / GT branches.
"""
import argparse
import os
import sys
from typing import List, Optional, Sequence, Union

import torch

from graphgps_ext.branches import recording
from graphgps_ext.train.checkpoint import CheckpointError
from graphgps_ext.viz.draw import (Panel, Scale, atom_labels, draw_grid,
                                   draw_heatmaps, molecule_kind,
                                   selected_channels, to_molecule)
from graphgps_ext.viz.record import (LoadedRun, graph_maps, load_run,
                                     node_scores, record_attention,
                                     recorded_branches)


def _ints(text: Optional[str], what: str) -> List[int]:
    if not text:
        return []
    try:
        return [int(t) for t in text.split(',') if t.strip()]
    except ValueError:
        raise SystemExit(f'error: {what} takes comma-separated integers, '
                         f'got {text!r}') from None


def _layer(text: str) -> Union[int, str]:
    if text == 'mean':
        return text
    try:
        return int(text)
    except ValueError:
        raise SystemExit(f"error: --layer takes an integer (-1 = last) or "
                         f"'mean', got {text!r}") from None


def map_kind(branch: str, head_maps: bool = False) -> Optional[str]:
    """The ``n x n`` node-pair maps drawn for a recording branch, from its
    record layout in the branch catalogue: ``'channel'`` (per-channel maps,
    always: CSA), ``'head'`` (per-head maps of a dense layout, with
    ``--head-maps``: Transformer, GT), or ``None``."""
    layout = recording()[branch].record_layout
    if layout == 'channels':
        return 'channel'
    return 'head' if head_maps and layout == 'dense' else None


def _layer_name(layer: Union[int, str]) -> str:
    if layer == 'mean':
        return 'mean over layers'
    return 'last layer' if layer == -1 else f'layer {layer}'


def _same_graph(a, b) -> bool:
    return (a.num_nodes == b.num_nodes
            and torch.equal(a.edge_index.cpu(), b.edge_index.cpu()))


#: The per-node scores of every attention branch (GEANet, Transformer, GT,
#: CSA): shares that sum to 1 over a graph, all on one colour scale.
ATTENTION = Scale('attention on each node (its share; a graph\'s sum to 1)', from_zero=False)


def make_figures(runs: Sequence[LoadedRun], graphs: Sequence[int], out: str,
                 split: str = 'test', layer: Union[int, str] = -1,
                 channels: Optional[Sequence[int]] = None,
                 csa_nodes: Optional[Sequence[int]] = None,
                 head_maps: bool = False) -> List[str]:
    """Record the attention of every run on ``graphs`` of ``split`` (one
    batch per run) and draw the figures listed in the module docstring into
    ``out``; returns the written paths."""
    if not graphs:
        raise ValueError('no graphs selected: pass e.g. --graphs 0,5,9')
    first = runs[0]
    if split not in first.bundle.splits:
        raise ValueError(f"split '{split}' does not exist; the dataset has "
                         f"{', '.join(first.bundle.splits)}")
    ds0 = first.bundle.splits[split]
    bad = [g for g in graphs if not 0 <= g < len(ds0)]
    if bad:
        raise ValueError(f'graphs {bad} out of range: split {split} has '
                         f'{len(ds0)} graphs')
    datas = [ds0[g] for g in graphs]
    kind = molecule_kind(first.cfg, first.bundle.task)
    mols = [to_molecule(d, kind) if kind else None for d in datas]
    if any(m is None for m in mols):
        mols = [None] * len(datas)
    rows = [[Panel(d, m, None, f'{split} graph {g}')]
            for g, d, m in zip(graphs, datas, mols)]
    where = _layer_name(layer)
    written: List[str] = []
    for run in runs:
        if split not in run.bundle.splits:
            raise ValueError(f"run {run.label} has no split '{split}'")
        picked = [run.bundle.splits[split][g] for g in graphs]
        for g, a, b in zip(graphs, datas, picked):
            if not _same_graph(a, b):
                raise ValueError(
                    f'{split} graph {g} differs between {first.label} and '
                    f'{run.label}: compare runs trained on the same dataset')
        from torch_geometric.data import Batch
        batch = Batch.from_data_list(picked)
        rec = record_attention(run.model, batch)
        branches = recorded_branches(rec)
        if not branches:
            print(f'warning: {run.label} records no attention (its branches '
                  'are all message passing)', file=sys.stderr)
        ptr = batch.ptr.tolist()
        safe = run.label.replace('/', '_')
        for branch in branches:
            layout = recording()[branch].record_layout
            scores = node_scores(rec, branch, batch, layer)
            for pos, row in enumerate(rows):
                s = scores[ptr[pos]:ptr[pos + 1]]
                d, m = datas[pos], mols[pos]
                if layout == 'kernels':  # weights of a node over its kernels (MNA)
                    kernels = Scale(f'{branch} kernel weight α_k of each node, {split} '
                                    f'graph {graphs[pos]}', from_zero=False)
                    row.extend(Panel(d, m, s[:, k],
                                     f'{run.label} {branch} α_{k} ({k}-hop kernel)',
                                     scale=kernels) for k in range(s.size(1)))
                else:
                    row.append(Panel(d, m, s, f'{run.label} {branch}', scale=ATTENTION))
            what = map_kind(branch, head_maps)
            per_channel = what == 'channel'
            if what is not None:
                for pos, g in enumerate(graphs):
                    maps = graph_maps(rec, branch, batch, pos, layer)
                    ch = selected_channels(maps.size(0),
                                           channels if per_channel else None)
                    stem = os.path.join(out, f'{branch.lower()}_{safe}_g{g}')
                    written += draw_heatmaps(
                        maps[ch], stem, [f'{what} {c}' for c in ch],
                        f'{run.label} {branch}, {where}, {split} graph {g} '
                        '(row: receiving node i, column: node j)',
                        atom_labels(mols[pos]))
                    nodes = [v for v in (csa_nodes or []) if per_channel]
                    for v in nodes:
                        if not 0 <= v < maps.size(-1):
                            raise ValueError(f'--csa-nodes {v}: graph {g} has '
                                             f'{maps.size(-1)} nodes')
                    if nodes:
                        grid = [[Panel(datas[pos], mols[pos], maps[c, v],
                                       f'channel {c}: node {v} attends to',
                                       mark=v, scale=Scale(
                                           f'CSA attention of node {v} (blue) on each '
                                           'node; sums to 1'))
                                 for c in ch] for v in nodes]
                        written += draw_grid(grid, stem + '_rows')
    written += draw_grid(rows, os.path.join(out, 'attention_nodes'))
    return written


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog='python -m graphgps_ext.viz',
        description='Draw the attention of trained runs (GEAET Fig. 4/8, '
                    'CSA Fig. 3/4) as PNG and SVG.')
    p.add_argument('--run', required=True,
                   help='seed folder of a run, e.g. results/<name>/<seed>')
    p.add_argument('--compare', action='append', default=[],
                   help='another run drawn side by side (repeatable)')
    p.add_argument('--graphs', required=True,
                   help='comma-separated graph indices of the split, e.g. 0,5,9')
    p.add_argument('--out', required=True, help='output folder')
    p.add_argument('--split', default='test', help='train | val | test')
    p.add_argument('--ckpt', default='best', choices=['best', 'last'])
    p.add_argument('--layer', default='-1',
                   help="layer index (-1 = last) or 'mean' (default -1)")
    p.add_argument('--channels', default=None,
                   help='CSA channels to draw (default: all if <= 16, else 16 '
                        'evenly spaced)')
    p.add_argument('--csa-nodes', default=None,
                   help='receiving nodes whose CSA rows are drawn on the graph')
    p.add_argument('--head-maps', action='store_true',
                   help='also draw per-head maps of Transformer / GT branches')
    p.add_argument('--device', default='cpu', help='cpu | cuda (default cpu)')
    p.add_argument('--set', nargs=2, action='append', default=[],
                   metavar=('KEY', 'VALUE'),
                   help='override a key of the saved configs, e.g. --set '
                        'dataset.dir /data (repeatable)')
    return p.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    opts = [t for kv in args.set for t in kv]
    graphs = _ints(args.graphs, '--graphs')
    try:
        runs = [load_run(r, args.ckpt, args.device, opts)
                for r in [args.run] + args.compare]
        paths = make_figures(runs, graphs, args.out, args.split,
                             _layer(args.layer), _ints(args.channels, '--channels'),
                             _ints(args.csa_nodes, '--csa-nodes'), args.head_maps)
    except CheckpointError as err:  # unsafe or unreadable: never unpickled
        print(f'error: {err}', file=sys.stderr)
        return 6
    except (FileNotFoundError, ValueError, KeyError) as err:
        print(f'error: {err}', file=sys.stderr)
        return 2
    except ImportError as err:  # matplotlib, networkx
        print(f'error: {err.name or err} is not installed: '
              'pip install -e ".[viz]"', file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0
