r"""PATTERN and CLUSTER stochastic-block-model graphs (Dwivedi et al.,
"Benchmarking GNNs"), generated per ``SYNTHETIC.md`` as a **stand-in** for
the published files, which cannot be regenerated bit for bit (the reference
notebooks set no seed).

Every unordered node pair :math:`(i, j)` is an edge independently with

.. math::
    P[(i, j) \in E] = \begin{cases} p & c_i = c_j \\ q & c_i \ne c_j
    \end{cases}

* PATTERN: 5 base communities of size U{5..34}, :math:`p = 0.5`,
  :math:`q = 0.35`, base features U{0,1,2}; plus one of 100 fixed pattern
  instances (size U{5..34}, internal Erdos-Renyi(0.5) adjacency and features
  drawn once per instance) joined to the base nodes with probability 0.5.
  Label 1 for pattern nodes.  10,000 / 2,000 / 2,000 graphs (100 / 20 / 20
  per instance).
* CLUSTER: 6 communities of size U{5..34}, :math:`p = 0.55`, :math:`q = 0.25`;
  node feature 0 except one random node per community :math:`c` with
  feature :math:`c + 1`; label = community.  10,000 / 1,000 / 1,000 graphs.

A uniformly random node permutation is applied to every graph.  Pair sampling
is one vectorised draw of an upper-triangular uniform matrix per graph.

The graphs are written in PyG's :class:`~torch_geometric.datasets.
GNNBenchmarkDataset` raw layout, ``<root>/<NAME>/raw/<NAME>_v2.pt`` = three
lists (train, val, test) of dicts with ``x`` (float one-hot ``[N, 3]`` /
``[N, 7]``, PyG's 3 / 7 node features), ``edge_index`` ``[2, E]`` (both
directions, no self-loops) and ``y`` Long ``[N]``, so that PyG's own class
processes and loads them.  The graphs carry no ``edge_attr`` (the reference
edge feature is the constant 1; use a ``DummyEdge`` encoder).  A
``STAND_IN.txt`` file in ``<root>`` records the generation parameters.
"""
import os
import os.path as osp
from typing import Dict, List, Optional

import numpy as np
import torch

from graphgps_ext.files import atomic_write_bytes, write_text

PATTERN = dict(communities=5, p=0.5, q=0.35, num_features=3,
               pattern_instances=100, pattern_p=0.5, cross_p=0.5,
               splits={'train': 10_000, 'val': 2_000, 'test': 2_000})
CLUSTER = dict(communities=6, p=0.55, q=0.25, num_features=7,
               splits={'train': 10_000, 'val': 1_000, 'test': 1_000})
SPECS = {'PATTERN': PATTERN, 'CLUSTER': CLUSTER}
SIZE_LOW, SIZE_HIGH = 5, 35          # U{5..34}


def _upper_bernoulli(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """Symmetric boolean adjacency with zero diagonal: each unordered pair
    ``i < j`` is an edge with probability ``probs[i, j]``."""
    n = probs.shape[0]
    upper = np.triu(rng.random((n, n)) < probs, k=1)
    return upper | upper.T


def _sbm(rng: np.random.Generator, sizes: np.ndarray, p: float, q: float):
    comm = np.repeat(np.arange(sizes.size), sizes)
    probs = np.where(comm[:, None] == comm[None, :], p, q)
    return _upper_bernoulli(rng, probs), comm


def _to_dict(adj: np.ndarray, feat: np.ndarray, label: np.ndarray,
             num_features: int, rng: np.random.Generator) -> dict:
    perm = rng.permutation(adj.shape[0])
    adj, feat, label = adj[perm][:, perm], feat[perm], label[perm]
    edge_index = torch.from_numpy(np.stack(np.nonzero(adj))).long()
    x = torch.nn.functional.one_hot(torch.from_numpy(feat).long(),
                                    num_features).float()
    return {'x': x, 'edge_index': edge_index,
            'y': torch.from_numpy(label).long()}


def _pattern_instances(rng, spec) -> List[tuple]:
    out = []
    for _ in range(spec['pattern_instances']):
        s = int(rng.integers(SIZE_LOW, SIZE_HIGH))
        w0 = _upper_bernoulli(rng, np.full((s, s), spec['pattern_p']))
        u0 = rng.integers(0, 3, size=s)
        out.append((w0, u0))
    return out


def pattern_graph(rng, instance, spec=PATTERN) -> dict:
    w0, u0 = instance
    sizes = rng.integers(SIZE_LOW, SIZE_HIGH, size=spec['communities'])
    base, _ = _sbm(rng, sizes, spec['p'], spec['q'])
    nb, s = base.shape[0], w0.shape[0]
    adj = np.zeros((nb + s, nb + s), dtype=bool)
    adj[:nb, :nb] = base
    adj[nb:, nb:] = w0
    cross = rng.random((nb, s)) < spec['cross_p']
    adj[:nb, nb:] = cross
    adj[nb:, :nb] = cross.T
    feat = np.concatenate([rng.integers(0, 3, size=nb), u0])
    label = np.concatenate([np.zeros(nb, np.int64), np.ones(s, np.int64)])
    return _to_dict(adj, feat, label, spec['num_features'], rng)


def cluster_graph(rng, spec=CLUSTER) -> dict:
    sizes = rng.integers(SIZE_LOW, SIZE_HIGH, size=spec['communities'])
    adj, comm = _sbm(rng, sizes, spec['p'], spec['q'])
    feat = np.zeros(adj.shape[0], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    chosen = starts + (rng.random(sizes.size) * sizes).astype(np.int64)
    feat[chosen] = np.arange(1, sizes.size + 1)
    return _to_dict(adj, feat, comm, spec['num_features'], rng)


def split_sizes(name: str, max_graphs: int = 0) -> Dict[str, int]:
    """Graphs per split; ``max_graphs > 0`` keeps the proportions."""
    sizes = SPECS[name]['splits']
    total = sum(sizes.values())
    if max_graphs <= 0 or max_graphs >= total:
        return dict(sizes)
    return {k: max(1, round(max_graphs * v / total)) for k, v in sizes.items()}


def generate(name: str, seed: int = 11, max_graphs: int = 0) -> List[list]:
    """``[train, val, test]`` lists of graph dicts (PyG ``_v2.pt`` content).

    PATTERN graph ``g`` of a split uses pattern instance ``g mod 100``, so
    the full set has 100 / 20 / 20 graphs per instance."""
    if name not in SPECS:
        raise ValueError(f"no SBM generator for '{name}'; use one of "
                         f"{list(SPECS)}")
    spec = SPECS[name]
    rng = np.random.default_rng(seed)
    instances = _pattern_instances(rng, spec) if name == 'PATTERN' else None
    out = []
    for count in split_sizes(name, max_graphs).values():
        if instances is not None:
            graphs = [pattern_graph(rng, instances[g % len(instances)], spec)
                      for g in range(count)]
        else:
            graphs = [cluster_graph(rng, spec) for _ in range(count)]
        out.append(graphs)
    return out


def cache_root(base: str, name: str, seed: int, max_graphs: int = 0) -> str:
    """``<dataset.dir>/synthetic/SBM/<NAME>_seed<s>[_max<M>]`` (never the
    folder of the real ``GNNBenchmarkDataset``, so a stand-in is not
    mistaken for the benchmark)."""
    size = f'_max{max_graphs}' if max_graphs > 0 else ''
    return osp.join(base, 'synthetic', 'SBM', f'{name}_seed{seed}{size}')


def write_raw(root: str, name: str, seed: int = 11,
              max_graphs: int = 0) -> Optional[str]:
    """Generate ``name`` into ``<root>/<name>/raw/<name>_v2.pt`` unless it is
    there already. Returns the file path."""
    path = osp.join(root, name, 'raw', f'{name}_v2.pt')
    if osp.exists(path):
        return path
    os.makedirs(osp.dirname(path), exist_ok=True)
    splits = generate(name, seed, max_graphs)
    atomic_write_bytes(path, lambda f: torch.save(splits, f))
    write_text(osp.join(root, 'STAND_IN.txt'),
               f'{name}: generated stand-in (graphgps_ext.loader.generators.'
               f'sbm, SYNTHETIC.md), NOT the published benchmark files.\n'
               f'seed={seed} max_graphs={max_graphs} sizes='
               f'{[len(s) for s in splits]}\n')
    return path
