r"""One pass over the size groups of a dataset computing every dense encoding.

For each group of equal-size graphs the counting adjacency ``[G, n, n]`` is
built once (one ``index_put`` over the group's own edges) and shared by all
requested kinds:

- ``lappe`` / ``eslappe``: :func:`~.lappe.laplacian_eigen` (identical
  eigen-parameters are solved once);
- ``rwse``: :func:`~.rwse.rwse_dense` (in float32);
- ``pair_rwse``: :func:`~.edge_rwse.pair_rwse_group`;
- ``pair_spd``: :func:`~.spd.pair_spd_group`.

Results are written straight into the dataset-ordered output tensors
(node-level) or assembled into graph-ordered pair lists
(:func:`~.dense.scatter_pairs`), one :data:`~.dense.Entry` per kind.
"""
from typing import Dict

import torch
from torch import Tensor

from graphgps_ext.transform.dense import Entry, GraphStore, derive_adj, scatter_pairs
from graphgps_ext.transform.edge_rwse import pair_rwse_group
from graphgps_ext.transform.lappe import laplacian_eigen
from graphgps_ext.transform.rwse import rwse_dense
from graphgps_ext.transform.spd import pair_spd_group

DENSE_KINDS = ('lappe', 'eslappe', 'rwse', 'pair_rwse', 'pair_spd')


def compute_dense(store: GraphStore, kinds: Dict[str, dict],
                  progress=None) -> Dict[str, Entry]:
    r"""Compute the dense ``kinds`` (``{kind: params}``) for every graph.

    Returns ``{kind: entry}``.
    """
    unknown = set(kinds) - set(DENSE_KINDS)
    if unknown:
        raise ValueError(f'unknown dense encoding kinds {sorted(unknown)}')
    N = store.num_nodes
    node: Dict[str, Tensor] = {}
    for kind in ('lappe', 'eslappe'):
        if kind in kinds:
            k = kinds[kind]['k']
            node[kind + '/vec'] = torch.full((N, k), float('nan'))
            if kind == 'lappe':
                node[kind + '/val'] = torch.full((N, k), float('nan'))
    if 'rwse' in kinds:
        node['rwse'] = torch.zeros(N, len(kinds['rwse']['times']))
    chunks = {kind: [] for kind in ('pair_rwse', 'pair_spd') if kind in kinds}
    steps = max([kinds[k]['steps'] for k in chunks] + [1])

    for n, ids, eids in store.groups(max_elems=max(1, (1 << 22) // steps)):
        A = store.dense_adj(ids, n, 'count', edge_ids=eids)
        idx = store.node_index(ids, n)
        eig_cache = {}
        for kind in ('lappe', 'eslappe'):
            if kind not in kinds:
                continue
            p = kinds[kind]
            key = (p['k'], p['norm'], p['skip_trivial'])
            if key not in eig_cache:
                if 'und' not in eig_cache:
                    eig_cache['und'] = derive_adj(A, 'undirected')
                eig_cache[key] = laplacian_eigen(eig_cache['und'], *key)
            vec, val = eig_cache[key]
            node[kind + '/vec'][idx] = vec.reshape(-1, p['k']).float()
            if kind == 'lappe':
                node['lappe/val'][idx] = val.unsqueeze(1).expand(
                    -1, n, -1).reshape(-1, p['k']).float()
        if 'rwse' in kinds:
            times = kinds['rwse']['times']
            # float32 walks (as GraphGPS; 1.6x faster than float64, within
            # 1e-7 of it): the encoding is stored in float32 anyway.
            node['rwse'][idx] = rwse_dense(A.float(), times).reshape(-1, len(times))
        if 'pair_rwse' in kinds:
            b, i, j, v = pair_rwse_group(A, kinds['pair_rwse']['steps'])
            chunks['pair_rwse'].append((ids[b], i, j, [v]))
        if 'pair_spd' in kinds:
            b, i, j, v = pair_spd_group(derive_adj(A, 'simple'),
                                        kinds['pair_spd']['steps'])
            chunks['pair_spd'].append((ids[b], i, j, [v]))
        if progress is not None:
            progress.update(ids.numel())

    ptr = store.node_ptr
    out: Dict[str, Entry] = {}
    if 'lappe' in kinds:
        out['lappe'] = {'pe_lap_vec': (node['lappe/vec'], ptr),
                        'pe_lap_val': (node['lappe/val'], ptr)}
    if 'eslappe' in kinds:
        out['eslappe'] = {'pe_eslap_vec': (node['eslappe/vec'], ptr)}
    if 'rwse' in kinds:
        out['rwse'] = {'pe_rwse': (node['rwse'], ptr)}
    for kind, attr, empty in (('pair_rwse', 'pair_rw', (0, steps)),
                              ('pair_spd', 'pair_spd', (0, ))):
        if kind in kinds:
            index, pptr, values = scatter_pairs(chunks[kind], store.num_graphs)
            val = values[0] if values else torch.empty(empty)
            out[kind] = {'pair_index': (index, pptr), attr: (val, pptr)}
    return out
