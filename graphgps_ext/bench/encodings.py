r"""Benchmark of the structural encodings.

Measures, on real molecules (ZINC-12k and Peptides-func in the loaders'
raw layout under ``--data``: ``ZINC/raw/`` and ``peptides-functional/raw/``,
see the README's Datasets section; default ``$GRAPHGPS_EXT_DATA`` or
``./datasets``, the default ``dataset.dir``):

- **precompute** seconds per 1,000 graphs of every kind on the first
  ``graphs`` ZINC-12k validation graphs (23 nodes on average) and the first
  ``graphs`` Peptides-func molecules (150 nodes), serial with 1 BLAS/torch
  thread (wall and process CPU time) and with 2 worker processes; plus PyG's
  per-graph transforms ``AddLaplacianEigenvectorPE`` + ``AddRandomWalkPE``
  as a reference;
- **on-the-fly** milliseconds per mini-batch of the pairwise encodings
  computed by the pair encoder on ``device`` (batch 32 ZINC / 16 Peptides):
  the raw RW / SPD values and the whole :math:`E^{(0)}` tensor.

``python -m graphgps_ext.bench.encodings [--graphs 1000] [--device cpu]``
prints Markdown tables; :func:`run` returns the rows (used by
``python -m graphgps_ext.bench --suite encodings``). Timings on shared
machines are noisy (the load average is recorded): compare rows of one run;
CPU time is less sensitive to other processes than wall time.
"""
import argparse
import os
import shutil
import tempfile
import time
from typing import Callable, Dict, List, Optional

import torch

# Real molecules: the folder of the datasets (as dataset.dir).
DATA = os.environ.get('GRAPHGPS_EXT_DATA', 'datasets')
# The raw files read, relative to the data folder.
NEEDED = (os.path.join('ZINC', 'raw', 'val.pickle'), os.path.join('ZINC', 'raw', 'val.index'),
          os.path.join('peptides-functional', 'raw', 'peptide_multi_class_dataset.csv.gz'))


def check_data(data_dir: str):
    """Stop with a message naming the missing raw files and where they go."""
    missing = [f for f in NEEDED if not os.path.isfile(os.path.join(data_dir, f))]
    if missing:
        raise SystemExit(
            f'bench encodings: missing {", ".join(missing)} under {os.path.abspath(data_dir)}. '
            'Point --encoding-data (or GRAPHGPS_EXT_DATA) at a folder holding ZINC/raw/ '
            "(molecules.zip's files) and peptides-functional/raw/ (the LRGB csv.gz), the "
            "layout of dataset.dir; the README's Datasets section says where each file "
            'comes from (tests/data holds small samples of both).')

#: Pair encodings stored by the precompute (not computed on the fly).
_STORED_PAIRS = ('pairenc.enable', True, 'pairenc.on_the_fly', False)

#: The benchmarked encodings: a label and the config overrides that ask for
#: them (the precompute computes what a run with that config computes).
ROWS = {
    'LapPE-10': ('posenc_LapPE.enable', True),
    'RWSE-20': ('posenc_RWSE.enable', True),
    'LapPE-10 + RWSE-20': ('posenc_LapPE.enable', True, 'posenc_RWSE.enable', True),
    'Edge-RWSE-16 (stored pairs)': _STORED_PAIRS + ('pairenc.steps', 16),
    'Edge-RWSE-20 (stored pairs)': _STORED_PAIRS + ('pairenc.steps', 20),
    'SPD-8 (stored pairs)': _STORED_PAIRS + ('pairenc.rpe', 'spd', 'pairenc.steps', 8),
    'SPD-10 (stored pairs)': _STORED_PAIRS + ('pairenc.rpe', 'spd', 'pairenc.steps', 10),
    'rings <= 18': ('pairenc.enable', True, 'pairenc.rpe', 'none', 'pairenc.rings', True),
}


#: The pair encoder's relative encodings computed per batch: a label and
#: its ``pairenc`` keys (``rpe`` by default Edge-RWSE).
ON_THE_FLY = {'rwse-16': dict(steps=16), 'rwse-20': dict(steps=20),
              'spd-8': dict(rpe='spd', steps=8)}


def wanted(overrides) -> Dict[str, dict]:
    """``{kind: params}`` the precompute computes for the default config
    with ``overrides`` (``KEY VALUE`` pairs)."""
    from graphgps_ext.config import merge_list
    from graphgps_ext.config.posenc import wanted_encodings
    from graphgps_ext.runs.config import default_cfg
    cfg = default_cfg().clone()
    merge_list(cfg, [str(o) for o in overrides])
    return wanted_encodings(cfg)


def zinc_graphs(num: int, data_dir: str = DATA) -> list:
    """The first ``num`` ZINC-12k validation graphs (loaded from a copy,
    its pickles read by the one reader of pickled files)."""
    from torch_geometric.datasets import ZINC

    from graphgps_ext.loader.safe_pickle import guarded
    tmp = tempfile.mkdtemp(prefix='bench_zinc_')
    try:
        shutil.copytree(os.path.join(data_dir, 'ZINC'), os.path.join(tmp, 'ZINC'))
        with guarded("'ZINC' (bench)"):
            ds = ZINC(os.path.join(tmp, 'ZINC'), subset=True, split='val')
        return [ds[i] for i in range(min(num, len(ds)))]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def peptides_graphs(num: int, data_dir: str = DATA) -> list:
    """The first ``num`` Peptides-func molecules (OGB featurisation)."""
    import pandas as pd
    from ogb.utils import smiles2graph
    from torch_geometric.data import Data
    csv = os.path.join(data_dir, 'peptides-functional', 'raw',
                       'peptide_multi_class_dataset.csv.gz')
    smiles = pd.read_csv(csv, nrows=num)['smiles'].tolist()
    out = []
    for s in smiles:
        g = smiles2graph(s)
        out.append(Data(x=torch.from_numpy(g['node_feat']),
                        edge_index=torch.from_numpy(g['edge_index']),
                        edge_attr=torch.from_numpy(g['edge_feat']),
                        num_nodes=int(g['num_nodes'])))
    return out


def _time(fn: Callable[[], object], repeats: int,
          warmup: bool = True) -> Dict[str, float]:
    if warmup:  # allocations, imports, lazy CUDA init
        fn()
    walls, cpus = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return {'wall': min(walls), 'cpu': min(cpus)}


def precompute_rows(name: str, graphs: list, repeats: int = 3,
                    warmup: bool = True, log=print) -> List[dict]:
    """Seconds per 1,000 graphs of every encoding kind on ``graphs``."""
    from graphgps_ext.transform.precompute import (EncodedList, compute_entries,
                                                   graph_store, thread_limit)
    store = graph_store(EncodedList(graphs))
    scale = 1000.0 / len(graphs)
    rows = []
    for label, overrides in ROWS.items():
        kinds = wanted(overrides)
        for workers in (0, 2):
            with thread_limit(1):
                t = _time(lambda: compute_entries(kinds, store, workers),
                          repeats, warmup)
            rows.append({'dataset': name, 'encoding': label, 'workers': workers,
                         'wall_s_per_1k': t['wall'] * scale,
                         'cpu_s_per_1k': t['cpu'] * scale if not workers else None})
            log(f'  [encodings] {name:13s} {label:28s} workers={workers} '
                f"{t['wall'] * scale:.3f} s / 1k graphs")
    rows.append(_pyg_reference(name, graphs, scale, repeats, log))
    return rows


def _pyg_reference(name, graphs, scale, repeats, log) -> dict:
    from torch_geometric.transforms import AddLaplacianEigenvectorPE, AddRandomWalkPE
    from graphgps_ext.transform.precompute import thread_limit
    lap = AddLaplacianEigenvectorPE(10, attr_name='lap', is_undirected=True)
    rw = AddRandomWalkPE(20, attr_name='rw')

    def run():
        for d in graphs:
            d = d.clone()
            if d.num_nodes > 11:  # PyG needs k < n
                lap(d)
            rw(d)

    with thread_limit(1):
        t = _time(run, 1, warmup=False)
    log(f'  [encodings] {name:13s} PyG per-graph transforms    '
        f"{t['wall'] * scale:.3f} s / 1k graphs")
    return {'dataset': name, 'encoding': 'PyG AddLaplacianEigenvectorPE(10) + '
            'AddRandomWalkPE(20), per-graph loop (reference)', 'workers': 0,
            'wall_s_per_1k': t['wall'] * scale, 'cpu_s_per_1k': t['cpu'] * scale}


def on_the_fly_rows(name: str, graphs: list, batch_size: int,
                    device: torch.device, repeats: int = 10,
                    log=print) -> List[dict]:
    """Milliseconds per batch of the on-the-fly pairwise encodings."""
    from torch_geometric.data import Batch
    from yacs.config import CfgNode as CN

    from graphgps_ext.config.gt import gt_cfg
    from graphgps_ext.config.posenc import encodings_cfg
    from graphgps_ext.encoder.pair import PairEncoder
    from graphgps_ext.layer.context import GraphContext
    from graphgps_ext.task import TaskInfo

    from graphgps_ext.bench.common import sync

    batch = Batch.from_data_list(graphs[:batch_size]).to(device)
    ctx = GraphContext.from_batch(batch)
    ctx.layout  # noqa: B018  (build once, as the model does)
    task = TaskInfo(name=name, task='graph', task_type='regression', num_outputs=1,
                    loss='l1', metric='mae', metric_direction='min',
                    edge_encoder='Bond' if batch.edge_attr.dim() > 1 else 'TypeDictEdge',
                    edge_num_types=4)
    rows = []
    for label, overrides in ON_THE_FLY.items():
        cfg = CN()
        cfg.dataset = CN(dict(node_encoder=False, edge_encoder=False))
        gt_cfg(cfg)
        encodings_cfg(cfg)
        cfg.pairenc.update(enable=True, on_the_fly=True, **overrides)
        enc = PairEncoder.from_cfg(cfg, task, 64).to(device).eval()
        for what, fn in (('raw values', lambda: enc.relative_values(batch, ctx)),
                         ('E^(0) [B,n,n,64]', lambda: enc(batch, ctx))):
            def timed():
                with torch.no_grad():
                    fn()
                sync(device)
            t = _time(timed, repeats)
            rows.append({'dataset': name, 'encoding': f'{label} {what}',
                         'batch': batch_size, 'n_max': ctx.layout.n_max,
                         'device': str(device), 'ms_per_batch': t['wall'] * 1e3})
            log(f'  [encodings] on the fly {name:13s} {label} {what:18s} '
                f"{t['wall'] * 1e3:.2f} ms / batch of {batch_size}")
    return rows


def run(device: torch.device, graphs: int = 1000, seed: int = 0,
        log=print, data_dir: Optional[str] = None) -> Dict[str, object]:
    """Run the whole encodings benchmark; returns ``{'precompute': rows,
    'on_the_fly': rows}``."""
    torch.manual_seed(seed)
    data_dir = data_dir or DATA
    check_data(data_dir)
    zinc = zinc_graphs(graphs, data_dir)
    pep = peptides_graphs(graphs, data_dir)
    out = {'precompute': precompute_rows('ZINC', zinc, log=log)
           + precompute_rows('Peptides-func', pep, repeats=1, warmup=False,
                             log=log),
           'on_the_fly': on_the_fly_rows('ZINC', zinc, 32, device, log=log)
           + on_the_fly_rows('Peptides-func', pep, 16, device, log=log)}
    return out


def tables(res: Dict[str, object]) -> str:
    from graphgps_ext.bench.common import fmt, markdown_table
    pre = markdown_table(
        ['dataset', 'encoding', 'workers', 's / 1k graphs (wall)', 's / 1k (CPU)'],
        [[r['dataset'], r['encoding'], r['workers'], fmt(r['wall_s_per_1k'], 3),
          fmt(r['cpu_s_per_1k'], 3)]
         for r in res['precompute']])
    fly = markdown_table(
        ['dataset', 'encoding', 'batch', 'n_max', 'device', 'ms / batch'],
        [[r['dataset'], r['encoding'], r['batch'], r['n_max'], r['device'],
          fmt(r['ms_per_batch'], 2)] for r in res['on_the_fly']])
    return pre + '\n\n' + fly


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--graphs', type=int, default=1000)
    p.add_argument('--device', default='cpu')
    p.add_argument('--data', default=DATA, help='folder with ZINC/ and peptides-functional/')
    p.add_argument('--out', default='', help='write the rows as JSON here')
    args = p.parse_args(argv)
    from graphgps_ext.bench.common import environment, load_average, write_json
    device = torch.device(args.device)
    meta = environment(device, torch.get_num_threads())
    res = run(device, args.graphs, data_dir=args.data)
    meta['load_average_1min_end'] = load_average()
    print(f"\nload average (1 min): start {meta.get('load_average_1min')}, "
          f"end {meta['load_average_1min_end']}")
    print(tables(res))
    if args.out:
        write_json(args.out, {'meta': meta, 'encodings': res})
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
