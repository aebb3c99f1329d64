r"""Ring relation for CSA-rings (CSA §3.4, Definition 3.1 with S = rings).

A *ring* is a chordless (induced) cycle of the undirected simple graph. Two
nodes are ring-bound, :math:`i \approx j`, iff some ring of length
:math:`\le K` (``max_size``) contains both; :math:`i \approx i` iff ``i``
lies on such a ring. The relation is symmetric.

**Algorithm** (no RDKit; exact for any graph):

1. Prune to the 2-core: nodes of degree :math:`\le 1` cannot lie on a cycle
   and are removed repeatedly (trees, chains and side groups vanish at once).
2. Enumerate every chordless cycle once, from its smallest node ``s``: a
   depth-first search grows simple paths ``s, u_1, ..., u_m`` through nodes
   ``> s`` where each new node is adjacent to no path node other than its
   predecessor — except ``s``, which closes the cycle (and stops the
   extension, since going on would leave the chord ``(s, v)``). Paths longer
   than ``K`` are cut. Each cycle is reached in both directions; the one
   with ``u_1 < u_m`` is kept.
3. Every ring of length ``L`` contributes its ``L^2`` ordered pairs (with the
   diagonal); duplicates across rings are removed.

The search is a per-graph Python loop in a one-time precompute (optional
multiprocessing over chunks of graphs); there is no loop over node pairs.
Molecules cost a few microseconds per ring.

Storage: ``ring_index`` ``[2, R]`` graph-local ordered pairs (``i == j``
included for ring atoms). The pair encoder densifies it to a boolean
``[B, n_max, n_max]`` relation.
"""
from typing import Dict, List, Set, Tuple

import numpy as np
import torch
from torch import Tensor
from torch_geometric.utils import cumsum

from graphgps_ext.transform.dense import Entry, GraphStore
from graphgps_ext.transform.workers import fork_pool


def _neighbours(num_nodes: int, edge_index: np.ndarray) -> List[Set[int]]:
    nbr: List[Set[int]] = [set() for _ in range(num_nodes)]
    for u, v in edge_index.T.tolist():
        if u != v:
            nbr[u].add(v)
            nbr[v].add(u)
    return nbr


def _two_core(nbr: List[Set[int]]) -> List[Set[int]]:
    nbr = [set(s) for s in nbr]
    stack = [v for v, s in enumerate(nbr) if len(s) <= 1]
    removed = set()
    while stack:
        v = stack.pop()
        if v in removed:
            continue
        removed.add(v)
        for u in nbr[v]:
            nbr[u].discard(v)
            if len(nbr[u]) <= 1 and u not in removed:
                stack.append(u)
        nbr[v] = set()
    return nbr


def chordless_cycles(num_nodes: int, edge_index, max_size: int
                     ) -> List[Tuple[int, ...]]:
    r"""All chordless cycles of length ``3..max_size`` (node tuples).

    Args:
        num_nodes: ``n``.
        edge_index: ``[2, E]`` edges (any direction; symmetrised here).
        max_size: the largest ring length ``K`` kept.
    """
    ei = np.asarray(edge_index, dtype=np.int64).reshape(2, -1)
    nbr = _two_core(_neighbours(num_nodes, ei))
    cycles: List[Tuple[int, ...]] = []
    for s in range(num_nodes):
        ns = nbr[s]
        if len(ns) < 2:
            continue
        # blocked[v] = number of path nodes (other than s) adjacent to v.
        for u1 in ns:
            if u1 < s:
                continue
            path = [s, u1]
            on_path = {s, u1}
            blocked: Dict[int, int] = {}
            for w in nbr[u1]:
                blocked[w] = blocked.get(w, 0) + 1
            _extend(nbr, s, ns, path, on_path, blocked, max_size, cycles)
    return cycles


def _extend(nbr, s, ns, path, on_path, blocked, max_size, cycles):
    last = path[-1]
    for v in nbr[last]:
        if v <= s or v in on_path:
            continue
        # v may touch only ``last`` among the inner path nodes (u_1..u_m).
        if blocked.get(v, 0) > 1:
            continue
        if v in ns:  # closes a cycle s, u_1, ..., last, v
            if path[1] < v:
                cycles.append(tuple(path) + (v, ))
            continue
        if len(path) + 1 >= max_size:  # a cycle through v would exceed K
            continue
        path.append(v)
        on_path.add(v)
        for w in nbr[v]:
            blocked[w] = blocked.get(w, 0) + 1
        _extend(nbr, s, ns, path, on_path, blocked, max_size, cycles)
        for w in nbr[v]:
            blocked[w] -= 1
        on_path.discard(v)
        path.pop()


def ring_pairs(num_nodes: int, edge_index, max_size: int) -> Tensor:
    r"""``[2, R]`` ordered pairs (diagonal included) of ring-bound nodes."""
    cycles = chordless_cycles(num_nodes, edge_index, max_size)
    if not cycles:
        return torch.empty(2, 0, dtype=torch.long)
    rel = np.zeros((num_nodes, num_nodes), dtype=bool)
    for c in cycles:
        idx = np.asarray(c)
        rel[np.ix_(idx, idx)] = True
    i, j = np.nonzero(rel)
    return torch.from_numpy(np.stack([i, j])).long()


def _ring_chunk(args):
    sizes, edge_lists, max_size = args
    return [ring_pairs(n, e, max_size) for n, e in zip(sizes, edge_lists)]


def compute_rings(store: GraphStore, max_size: int, num_workers: int = 0,
                  progress=None) -> Tuple[Tensor, Tensor]:
    r"""``(ring_index [2, R], ring_ptr [G + 1])`` for every graph of ``store``."""
    if max_size < 3:
        raise ValueError(f'ring max size must be >= 3, got {max_size}')
    sizes = store.sizes.tolist()
    ei = store.edge_index.numpy()
    eptr = store.edge_ptr.tolist()
    edge_lists = [ei[:, eptr[g]:eptr[g + 1]] for g in range(store.num_graphs)]
    chunk = 512
    jobs = [(sizes[s:s + chunk], edge_lists[s:s + chunk], max_size)
            for s in range(0, len(sizes), chunk)]
    results: List[Tensor] = []
    if num_workers > 0 and len(jobs) > 1:
        with fork_pool(num_workers) as pool:
            for res in pool.imap(_ring_chunk, jobs):
                results.extend(res)
                if progress is not None:
                    progress.update(len(res))
            pool.close()  # every result is in: let the workers finish
            pool.join()
    else:
        for job in jobs:
            res = _ring_chunk(job)
            results.extend(res)
            if progress is not None:
                progress.update(len(res))
    counts = torch.tensor([r.size(1) for r in results], dtype=torch.long)
    index = (torch.cat(results, 1) if results
             else torch.empty(2, 0, dtype=torch.long))
    return index, cumsum(counts)


def rings_entry(store: GraphStore, num_workers: int = 0, progress=None,
                max_size: int = 18) -> Entry:
    r"""The ring pairs of every graph of ``store`` as a precompute entry:
    ``{'ring_index': (ring_index [2, R], ring_ptr [G + 1])}``."""
    return {'ring_index': compute_rings(store, max_size, num_workers, progress)}
