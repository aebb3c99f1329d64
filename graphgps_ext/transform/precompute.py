r"""The precompute pipeline: structural encodings attached to a dataset once
and cached.

:func:`precompute_encodings` computes what the config asks for (see
:func:`graphgps_ext.config.posenc.wanted_encodings`) and stores it as PyG
attributes of every graph. What each kind is, which function computes it
and whether it is dense is declared once, in the encoding catalogue
(:mod:`graphgps_ext.encodings`):

==================  ==========================================  ==================
kind                attributes (per graph)                      module
==================  ==========================================  ==================
``lappe``           ``pe_lap_vec [n, k]``, ``pe_lap_val [n, k]`` :mod:`.lappe`
``eslappe``         ``pe_eslap_vec [n, k]``                     :mod:`.lappe`
``rwse``            ``pe_rwse [n, K]``                          :mod:`.rwse`
``pair_rwse``       ``pair_index [2, P]``, ``pair_rw [P, p]``   :mod:`.edge_rwse`
``pair_spd``        ``pair_index [2, P]``, ``pair_spd [P]``     :mod:`.spd`
``rings``           ``ring_index [2, R]``                       :mod:`.rings`
==================  ==========================================  ==================

Keys containing ``index`` are incremented by PyG's collation, so a
mini-batch carries global node ids. Pairwise RW/SPD are only stored when
``pairenc.on_the_fly`` is off (by default they are computed per batch on the
model's device). Everything runs on the collated storage of an
:class:`~torch_geometric.data.InMemoryDataset` (``_data`` / ``slices``): the
dense encodings in one pass over groups of equal-size graphs
(:mod:`.dense_pass`), the others on the whole storage; under a BLAS/torch
thread limit (``posenc.blas_threads``), with a tqdm bar on a TTY and optional
worker processes (``posenc.num_workers``).
"""
import sys
from contextlib import contextmanager
from typing import Dict, List, Optional

import torch
from torch_geometric.data import InMemoryDataset
from torch_geometric.utils import cumsum

from graphgps_ext.config import sizes
from graphgps_ext.config.posenc import wanted_encodings
from graphgps_ext.config.sizes import Need, product
from graphgps_ext.encodings import by_kind
from graphgps_ext.transform.cache import EncodingCache, cache_key
from graphgps_ext.transform.dense import Entry, GraphStore
from graphgps_ext.transform.dense_pass import compute_dense
from graphgps_ext.transform.workers import fork_pool


class EncodedList(InMemoryDataset):
    """An in-memory dataset built from a list of ``Data`` (generic inputs)."""

    def __init__(self, data_list):
        super().__init__(None)
        self.data, self.slices = self.collate(list(data_list))


def graph_store(dataset) -> GraphStore:
    """The :class:`GraphStore` of an ``InMemoryDataset`` (whole storage)."""
    data, slices = dataset._data, dataset.slices
    if slices is None:  # one graph
        n = int(data.num_nodes)
        return GraphStore(data.edge_index.long(), torch.tensor([0, n]),
                          torch.tensor([0, data.edge_index.size(1)]))
    edge_ptr = slices['edge_index'].long()
    for key in ('x', 'pos'):
        if key in slices:
            node_ptr = slices[key].long()
            break
    else:
        num = getattr(data, '_num_nodes', None)
        if num is None:
            num = [dataset.get(i).num_nodes for i in range(edge_ptr.numel() - 1)]
        node_ptr = cumsum(torch.as_tensor(list(num), dtype=torch.long))
    return GraphStore(data.edge_index.long(), node_ptr, edge_ptr)


def compute_entries(wanted: Dict[str, dict], store: GraphStore,
                    num_workers: int = 0, progress=None) -> Dict[str, Entry]:
    r"""Compute the encodings ``{kind: params}``: ``{kind: {attribute: (values, ptr)}}``.

    All dense kinds share one pass over the size groups
    (:func:`~graphgps_ext.transform.dense_pass.compute_dense`); the others
    (rings: a per-graph search) run their compute function on the whole
    store.
    """
    table = by_kind()
    unknown = set(wanted) - set(table)
    if unknown:
        raise ValueError(f'unknown encoding kinds {sorted(unknown)}')
    out: Dict[str, Entry] = {}
    dense = {k: p for k, p in wanted.items() if table[k].dense}
    if dense:
        if num_workers > 0 and store.num_graphs > 1:
            out.update(_parallel(dense, store, num_workers, progress))
        else:
            out.update(compute_dense(store, dense, progress))
    for kind, params in wanted.items():
        if not table[kind].dense:
            out[kind] = table[kind].function()(store, num_workers=num_workers,
                                               progress=progress, **params)
    return out


def _worker(args):
    kinds, store = args
    torch.set_num_threads(1)
    return compute_dense(store, kinds)


def _parallel(kinds, store, num_workers, progress) -> Dict[str, Entry]:
    G = store.num_graphs
    nchunks = min(G, 4 * num_workers)
    bounds = torch.linspace(0, G, nchunks + 1).long().tolist()
    jobs = [(kinds, store.subset(torch.arange(a, b)))
            for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    parts = []
    with fork_pool(num_workers) as pool:
        for job, res in zip(jobs, pool.imap(_worker, jobs)):
            parts.append(res)
            if progress is not None:
                progress.update(job[1].num_graphs)
        pool.close()  # every result is in: let the workers finish
        pool.join()
    out: Dict[str, Entry] = {}
    for kind in parts[0]:
        out[kind] = {}
        for attr in parts[0][kind]:
            vals = [p[kind][attr][0] for p in parts]
            counts = torch.cat([p[kind][attr][1][1:] - p[kind][attr][1][:-1]
                                for p in parts])
            dim = -1 if 'index' in attr else 0
            out[kind][attr] = (torch.cat(vals, dim), cumsum(counts))
    return out


@contextmanager
def thread_limit(n: int):
    """Limit BLAS (threadpoolctl) and torch intra-op threads to ``n``."""
    from threadpoolctl import threadpool_limits
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, n))
    try:
        with threadpool_limits(limits=max(1, n)):
            yield
    finally:
        torch.set_num_threads(before)


def _attach(dataset: InMemoryDataset, entry: Entry):
    data = dataset._data
    for attr, (values, ptr) in entry.items():
        data[attr] = values
        if dataset.slices is not None:  # ``None``: a single-graph dataset
            dataset.slices[attr] = ptr
    dataset._data_list = None


def encoding_needs(wanted: Dict[str, dict], store: GraphStore) -> List[Need]:
    r"""The memory of the values of each kind of ``wanted`` whose catalogue
    entry gives its ``width``: :math:`N` nodes x the values per node, 4 bytes
    each; for an encoding stored per node pair, at least one pair per node
    (the diagonal is always kept) x (2 indices of 8 bytes + the values per
    pair)."""
    nodes = store.num_nodes
    table = by_kind()
    out = []
    for kind, params in wanted.items():
        entry = table[kind]
        if entry.width is None:
            continue
        width = entry.width(params)
        if entry.rpe is None:
            size = product(nodes, width, 4)
            how = f'{nodes:,} nodes x {width:,} values x 4 bytes'
        else:
            size = product(nodes, 16 + 4 * width)
            how = f'at least {nodes:,} node pairs x (16 + {width:,} x 4) bytes'
        out.append(Need(f'the {entry.name} encodings of this dataset', size,
                        (f'{entry.size_key} ({width:,} values per '
                         f"{'pair' if entry.rpe else 'node'})", ), how,
                        f'Lower {entry.size_key}'))
    return out


def precompute_encodings(dataset, cfg, cache_dir: Optional[str] = None):
    r"""Attach the encodings that ``cfg`` asks for to every graph of ``dataset``.

    Args:
        dataset: an :class:`~torch_geometric.data.InMemoryDataset` (modified in
            place, including views created with ``dataset[idx]`` that share
            its storage) or any sequence of ``Data`` (collated into a new
            in-memory dataset).
        cfg: the config (``posenc_*``, ``pairenc``, ``posenc``,
            ``dataset.node_encoder_name``, ``gt.layer_type``).
        cache_dir: folder for the on-disk cache (normally under the dataset's
            ``processed`` folder); ``None`` or ``posenc.cache: False``
            disables caching.

    Returns:
        the dataset with the encodings attached.
    """
    wanted = wanted_encodings(cfg)
    if not wanted:
        return dataset
    if not isinstance(dataset, InMemoryDataset):
        dataset = EncodedList(dataset)
    opts = cfg.posenc
    cache = EncodingCache(cache_dir if opts.cache else None)
    store = graph_store(dataset)
    fingerprint = store.fingerprint()
    show = bool(opts.progress) and sys.stderr.isatty()
    entries, missing = {}, {}
    for kind, params in wanted.items():
        key = cache_key(kind, params, fingerprint)
        entry = cache.load(kind, key)
        if entry is None:
            missing[kind] = (params, key)
        else:
            entries[kind] = entry
    if missing:
        sizes.check(encoding_needs({k: p for k, (p, _) in missing.items()}, store))
        with thread_limit(opts.blas_threads):
            new = _run_with_bar({k: p for k, (p, _) in missing.items()}, store,
                                opts.num_workers, show)
        for kind, (_, key) in missing.items():
            cache.save(kind, key, new[kind])
        entries.update(new)
    for kind in wanted:
        _attach(dataset, entries[kind])
    return dataset


def _run_with_bar(wanted, store, num_workers, show) -> Dict[str, Entry]:
    if not show:
        return compute_entries(wanted, store, num_workers)
    from tqdm import tqdm
    table = by_kind()
    dense = [k for k in wanted if table[k].dense]
    passes = int(bool(dense)) + len(wanted) - len(dense)
    with tqdm(total=passes * store.num_graphs, unit='graph', file=sys.stderr,
              desc='encodings: ' + '+'.join(wanted)) as bar:
        return compute_entries(wanted, store, num_workers, bar)
