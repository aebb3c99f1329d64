r"""One pass over the size groups of a dataset computing every dense encoding.

For each group of equal-size graphs the counting adjacency ``[G, n, n]`` is
built once (one ``index_put`` over the group's own edges) and shared by all
requested encodings: each dense entry of the encoding catalogue
(:mod:`graphgps_ext.encodings`) computes its values from it with its
compute function, ``fn(adj, memo, **params)``; ``memo`` is shared by the
encodings of the group (e.g. LapPE and EquivStableLapPE with the same
eigen-parameters solve one eigenproblem).

Node attributes (``{attribute: [G, n, ...]}``) are written straight into
dataset-ordered output tensors; pair attributes
(:class:`~graphgps_ext.transform.dense.Pairs`) are assembled into
graph-ordered pair lists (:func:`~.dense.scatter_pairs`), one
:data:`~.dense.Entry` per kind.
"""
from typing import Dict, List

import torch
from torch import Tensor

from graphgps_ext.encodings import by_kind
from graphgps_ext.transform.dense import Entry, GraphStore, Pairs, scatter_pairs

#: The most entries of a group's dense tensors (its ``[G, n, n]`` adjacency
#: times the steps of a pair encoding).
MAX_ELEMS = 1 << 22


def dense_kinds() -> List[str]:
    """The kinds of the dense encodings of the catalogue."""
    return [kind for kind, e in by_kind().items() if e.dense]


def compute_dense(store: GraphStore, kinds: Dict[str, dict],
                  progress=None) -> Dict[str, Entry]:
    r"""Compute the dense ``kinds`` (``{kind: params}``) for every graph.

    Returns ``{kind: entry}``.
    """
    table = by_kind()
    unknown = sorted(k for k in kinds if k not in table or not table[k].dense)
    if unknown:
        raise ValueError(f'unknown dense encoding kinds {unknown}')
    functions = {kind: table[kind].function() for kind in kinds}
    N = store.num_nodes
    node: Dict[str, Tensor] = {}
    node_attrs: Dict[str, List[str]] = {kind: [] for kind in kinds}
    chunks: Dict[str, list] = {kind: [] for kind in kinds}
    steps = max([int(p.get('steps', 1)) for p in kinds.values()] + [1])

    def compute(adj: Tensor, ids: Tensor, idx: Tensor):
        memo: dict = {}
        for kind, params in kinds.items():
            out = functions[kind](adj, memo, **params)
            if isinstance(out, Pairs):
                chunks[kind].append((ids[out.graph], out.i, out.j, list(out.values.values())))
                node_attrs[kind] = list(out.values)
                continue
            for attr, values in out.items():
                rows = values.reshape((-1, ) + tuple(values.shape[2:]))
                if attr not in node:  # every row is written once
                    fill = float('nan') if rows.is_floating_point() else 0
                    node[attr] = rows.new_full((N, ) + tuple(rows.shape[1:]), fill)
                    node_attrs[kind].append(attr)
                node[attr][idx] = rows

    for n, ids, eids in store.groups(max_elems=max(1, MAX_ELEMS // steps)):
        A = store.dense_adj(ids, n, 'count', edge_ids=eids)
        compute(A, ids, store.node_index(ids, n))
        if progress is not None:
            progress.update(ids.numel())
    if store.num_graphs == 0:  # the shapes from an empty group
        empty = torch.empty(0, dtype=torch.long)
        compute(torch.zeros(0, 1, 1, dtype=torch.float64), empty, empty)

    ptr = store.node_ptr
    out: Dict[str, Entry] = {}
    for kind in kinds:
        if chunks[kind]:
            index, pptr, values = scatter_pairs(chunks[kind], store.num_graphs)
            out[kind] = {'pair_index': (index, pptr),
                         **{attr: (v, pptr) for attr, v in zip(node_attrs[kind], values)}}
        else:
            out[kind] = {attr: (node[attr], ptr) for attr in node_attrs[kind]}
    return out
