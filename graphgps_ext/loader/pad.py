r"""Static-shape batches (``train.static_shapes``): every batch padded to one
of a few capacities, with masks so that the padding changes nothing.

A GPU runs a batch as a sequence of kernels whose shapes are fixed when they
are compiled or captured (``torch.compile``, CUDA graphs); graph batches
change their node and edge counts every step. This module pads each batch to
a *capacity* :math:`(N_c, E_c, G_c)` taken from a few buckets:

- :class:`Capacities` chooses the buckets once from the training split's
  size distribution: the node and edge totals of random batches of
  ``batch_size`` graphs at the quantiles ``0.5, 0.9, 0.99``, and a last bucket
  that holds any batch (the ``batch_size`` largest graphs), each plus one
  padding node and rounded up to a multiple of 8; :math:`G_c` is
  ``batch_size + 1``. Every bucket also fixes the width :math:`W` of the
  dense ``[G_c, W]`` layout of all-pairs attention (``graph_nodes``: the
  split's largest graph, rounded up to a multiple of 8), so that its shape
  does not follow the batch's graph sizes either; padding nodes past
  :math:`W` share the last slot of their padding graph. A batch takes the
  smallest bucket it fits (its largest graph at most :math:`W`); a larger
  one (an evaluation split with bigger graphs) gets capacities rounded up to
  powers of two.
- :func:`pad_batch` appends :math:`N_c - N \ge 1` padding nodes (zero
  features) and :math:`E_c - E` padding edges (self-loops on the first
  padding node, zero features), and :math:`G_c - B \ge 1` padding graphs:
  the padding nodes form graph :math:`B`, graphs :math:`B+1, \dots` are
  empty. Padding nodes are therefore never neighbours of, nor in the same
  graph as, a real node: message passing, attention within a graph and
  pooling leave the real rows exactly as they are. What does see the whole
  batch reads the masks ``node_mask`` ``[N_c]``, ``edge_mask`` ``[E_c]``,
  ``graph_mask`` ``[G_c]`` (``True`` at real rows) the batch carries: batch
  norm statistics (:class:`~graphgps_ext.layer.norm.MaskedBatchNorm1d`) and
  the batch-wide softmax of GEANet. The real rows come first, so the
  metrics use the first ``real_graphs`` graph rows or ``real_nodes`` node
  rows of the head's output (:func:`trim`), counts the collater knows on
  the CPU, and the loss reads the whole padded output with the mask of its
  rows (:func:`row_mask`), so that it can be part of a compiled forward
  pass.

Which attributes are node-, edge- or graph-level is learnt once from the
training split's graphs (:func:`attribute_levels`): an attribute with one
row per node, per edge or per graph, graph by graph until each attribute
has one level (a batch of single-node graphs alone cannot tell a node-level
from a graph-level attribute). Attributes the split does not have are read
from the batch's slices in the same way. Other attributes (labelled pairs
``edge_label*``, any index but ``edge_index``) index real nodes only and
are left as they are.
"""
import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import torch
from torch import Tensor
from torch_geometric.data import Batch, InMemoryDataset

from graphgps_ext.layer.context import HOST_NODE_COUNTS

#: Quantiles of the batch totals that make the buckets below the bound.
QUANTILES = (0.5, 0.9, 0.99)
#: Capacities are multiples of this (aligned kernels, fewer distinct sizes).
ALIGN = 8


def _round_up(value: int, multiple: int = ALIGN) -> int:
    return max(multiple, -(-int(value) // multiple) * multiple)


def _pow2(value: int) -> int:
    return 1 << max(3, math.ceil(math.log2(max(1, int(value)))))


@dataclass(frozen=True, order=True)
class Capacity:
    """Padded sizes of a batch: nodes, edges and graphs, and ``graph_nodes``,
    the width of the dense ``[graphs, graph_nodes]`` layout of all-pairs
    attention (at least the largest real graph; ``0``: the layout follows
    the batch's graph sizes)."""
    nodes: int
    edges: int
    graphs: int
    graph_nodes: int = 0

    def fits(self, nodes: int, edges: int, graphs: int,
             largest: int = 0) -> bool:
        # One padding node and one padding graph at least.
        return (self.nodes > nodes and self.edges >= edges
                and self.graphs > graphs
                and (not self.graph_nodes or largest <= self.graph_nodes))


class Capacities:
    """The capacity buckets of a split (see the module docstring).

    Args:
        buckets: the capacities, any order (sorted by nodes, edges).
        levels: ``key -> 'node' | 'edge' | 'graph'`` of the attributes to
            pad (:func:`attribute_levels`); keys not given are read from
            each batch's slices.
    """

    def __init__(self, buckets: Sequence[Capacity],
                 levels: Optional[Dict[str, str]] = None):
        if not buckets:
            raise ValueError('static shapes need at least one capacity')
        self.buckets: List[Capacity] = sorted(set(buckets))
        self.levels: Dict[str, str] = dict(levels or {})

    @classmethod
    def from_sizes(cls, nodes: Tensor, edges: Tensor, batch_size: int,
                   quantiles: Sequence[float] = QUANTILES, draws: int = 512,
                   seed: int = 0) -> 'Capacities':
        r"""Buckets from per-graph node and edge counts ``[G]``: the
        quantiles of the totals of ``draws`` random batches of
        ``min(batch_size, G)`` graphs (drawn with replacement by a fixed
        generator: the same buckets on every machine) and the bound
        :math:`\sum` of the largest graphs."""
        nodes = torch.as_tensor(nodes, dtype=torch.long)
        edges = torch.as_tensor(edges, dtype=torch.long)
        if nodes.numel() == 0:
            raise ValueError('static shapes need a non-empty training split')
        b = max(1, min(int(batch_size), nodes.numel()))
        gen = torch.Generator().manual_seed(seed)
        picks = torch.randint(nodes.numel(), (draws, b), generator=gen)
        totals = torch.stack([nodes[picks].sum(1), edges[picks].sum(1)], 1)
        graphs = int(batch_size) + 1
        width = _round_up(int(nodes.max()))  # the largest graph
        out = []
        for q in quantiles:
            n, e = torch.quantile(totals.double(), q, dim=0).ceil().long().tolist()
            out.append(Capacity(_round_up(n + 1), _round_up(e), graphs, width))
        bound_n = int(nodes.topk(b).values.sum())
        bound_e = int(edges.topk(b).values.sum())
        out.append(Capacity(_round_up(bound_n + 1), _round_up(bound_e), graphs,
                            width))
        return cls(out)

    @classmethod
    def from_dataset(cls, dataset, batch_size: int) -> 'Capacities':
        """Buckets from the graph sizes of ``dataset`` (the training split),
        and the levels of its attributes."""
        nodes, edges = graph_sizes(dataset)
        caps = cls.from_sizes(nodes, edges, batch_size)
        caps.levels = attribute_levels(dataset)
        return caps

    def choose(self, nodes: int, edges: int, graphs: int,
               largest: int = 0) -> Capacity:
        """The smallest bucket that holds the batch (``largest``: its
        largest graph); beyond the largest, capacities rounded up to powers
        of two."""
        for cap in self.buckets:
            if cap.fits(nodes, edges, graphs, largest):
                return cap
        top = self.buckets[-1]
        return Capacity(max(top.nodes, _pow2(nodes + 1)),
                        max(top.edges, _pow2(edges)),
                        max(top.graphs, graphs + 1),
                        max(top.graph_nodes, _pow2(largest))
                        if top.graph_nodes else 0)

    def __repr__(self) -> str:
        return 'Capacities(' + ', '.join(
            f'{c.nodes}/{c.edges}/{c.graphs}' for c in self.buckets) + ')'


def used_capacities(capacities: Capacities, dataset,
                    batch_size: int) -> set:
    """The capacities that the batches of ``dataset`` in order (an
    evaluation split: consecutive runs of ``batch_size`` graphs) are padded
    to: one compiled variant each."""
    nodes, edges = graph_sizes(dataset)
    out = set()
    for start in range(0, nodes.numel(), int(batch_size)):
        n = nodes[start:start + int(batch_size)]
        e = edges[start:start + int(batch_size)]
        out.add(capacities.choose(int(n.sum()), int(e.sum()), n.numel(),
                                  int(n.max())))
    return out


def graph_sizes(dataset) -> Tuple[Tensor, Tensor]:
    """Node and edge counts ``[G]`` of every graph of ``dataset`` (from the
    collated storage of an in-memory dataset, without separating graphs)."""
    if isinstance(dataset, InMemoryDataset) and dataset.slices is not None \
            and 'edge_index' in dataset.slices:
        from graphgps_ext.loader.storage import node_slices
        try:
            ns = node_slices(dataset)
        except ValueError:
            ns = None
        if ns is not None:
            idx = torch.as_tensor(dataset.indices(), dtype=torch.long)
            es = dataset.slices['edge_index']
            return (ns[idx + 1] - ns[idx]), (es[idx + 1] - es[idx])
    nodes = torch.tensor([int(d.num_nodes) for d in dataset], dtype=torch.long)
    edges = torch.tensor([int(d.num_edges) for d in dataset], dtype=torch.long)
    return nodes, edges


def _padded(key: str, value) -> bool:
    """Whether padding extends attribute ``key``: tensors but ``batch`` and
    ``ptr``; other index attributes than ``edge_index`` (labelled pairs,
    pair indices) and pair labels point at real nodes and are never
    padded."""
    if key in ('batch', 'ptr') or not isinstance(value, Tensor):
        return False
    return key == 'edge_index' or not ('index' in key
                                       or key.startswith('edge_label'))


def _choose(key: str, levels: Iterable[str]) -> Optional[str]:
    """The level of ``key`` among the ``levels`` its row counts allow:
    ``edge_*`` attributes prefer edges, the others nodes, then edges, then
    graphs (``None``: no level, not padded)."""
    order = (('edge', 'node', 'graph') if key.startswith('edge_')
             else ('node', 'edge', 'graph'))
    return next((level for level in order if level in levels), None)


def attribute_levels(dataset, limit: int = 1000) -> Dict[str, str]:
    """``key -> 'node' | 'edge' | 'graph'`` of the attributes of
    ``dataset``'s graphs that padding extends: the levels whose count (the
    graph's nodes, its edges, 1) equals the attribute's rows, intersected
    graph by graph until every attribute has one (usually after the first
    graph); an attribute still ambiguous after ``limit`` graphs or all of
    them (a split of single-node graphs) takes the first of
    :func:`_choose`'s order."""
    allowed: Dict[str, set] = {}
    for i, data in enumerate(dataset):
        if i == limit:
            break
        counts = (('node', data.num_nodes), ('edge', data.num_edges),
                  ('graph', 1))
        for key, value in data.items():
            if not _padded(key, value):
                continue
            dim = data.__cat_dim__(key, value)
            rows = 1 if dim is None or value.dim() == 0 else value.size(dim)
            here = {level for level, count in counts if rows == count}
            allowed[key] = allowed[key] & here if key in allowed else here
        if all(len(levels) <= 1 for levels in allowed.values()):
            break
    return {key: level for key, levels in allowed.items()
            if (level := _choose(key, levels)) is not None}


def _levels(batch: Batch, known: Dict[str, str]) -> dict:
    """``key -> 'node' | 'edge' | 'graph'`` for the attributes of ``batch``
    to pad: ``known`` ones as given, the others from the batch's slices."""
    slices = getattr(batch, '_slice_dict', None)
    if not slices or 'edge_index' not in slices:
        raise ValueError('static shapes need a collated batch with slices '
                         '(PyG or the fast collater)')
    B = batch.num_graphs
    node_s = batch.ptr
    per_level = {'node': node_s, 'edge': slices['edge_index'],
                 'graph': torch.arange(B + 1)}
    out = {}
    for key in batch.keys():
        value = batch[key]
        if key not in slices or not _padded(key, value):
            continue
        if key in known:
            out[key] = known[key]
            continue
        s = slices[key].to(node_s.device)
        level = _choose(key, [lv for lv, ls in per_level.items()
                              if torch.equal(s, ls.to(s.device))])
        if level is not None:
            out[key] = level
    return out


def pad_batch(batch: Batch, capacities: Capacities) -> Batch:
    """``batch`` padded to its capacity (see the module docstring). Adds
    ``node_mask``, ``edge_mask``, ``graph_mask``, the real counts
    ``real_nodes``, ``real_edges``, ``real_graphs`` (Python ints) and, when
    the capacity has one, the dense layout's width ``graph_nodes``."""
    N, E, B = int(batch.num_nodes), int(batch.edge_index.size(1)), batch.num_graphs
    host = getattr(batch, HOST_NODE_COUNTS, None)
    if host is None:  # (in the collater, before any transfer)
        host = batch.ptr.diff().cpu()
    cap = capacities.choose(N, E, B, int(host.max()) if host.numel() else 0)
    pad = {'node': cap.nodes - N, 'edge': cap.edges - E, 'graph': cap.graphs - B}
    size = {'node': cap.nodes, 'edge': cap.edges, 'graph': cap.graphs}
    slices = dict(batch._slice_dict)
    incs = dict(getattr(batch, '_inc_dict', {}) or {})
    extra_graphs = cap.graphs - B
    for key, level in _levels(batch, capacities.levels).items():
        value = batch[key]
        dim = batch.__cat_dim__(key, value)
        dim = 0 if dim is None else dim % value.dim()
        shape = list(value.shape)
        shape[dim] = pad[level]
        if 'index' in key or key == 'face':
            filler = value.new_full(shape, N)  # the first padding node
        else:
            filler = value.new_zeros(shape)
        batch[key] = torch.cat([value, filler], dim=dim)
        s = slices[key]
        if level == 'graph':
            step = (s[1] - s[0]) if s.numel() > 1 else 1
            slices[key] = torch.cat([s, s[-1] + step * torch.arange(
                1, extra_graphs + 1, dtype=s.dtype)])
        else:  # padding graph B holds the padding rows, the rest are empty
            slices[key] = torch.cat([s, s.new_full((extra_graphs, ), size[level])])
        if key in incs and isinstance(incs[key], Tensor) and incs[key].dim() > 0:
            inc = incs[key]  # node offsets of the padding graphs (index keys)
            extra = inc.new_full((extra_graphs, ), cap.nodes)
            extra[0] = N
            incs[key] = torch.cat([inc, extra if bool(inc.any()) else extra * 0])
    dev = batch.batch.device
    batch.batch = torch.cat([batch.batch, torch.full(
        (cap.nodes - N, ), B, dtype=batch.batch.dtype, device=dev)])
    batch.ptr = torch.cat([batch.ptr, batch.ptr.new_full((extra_graphs, ), cap.nodes)])
    host = getattr(batch, HOST_NODE_COUNTS, None)
    if host is not None:  # the collater's CPU copy of the node counts
        extra = host.new_zeros(extra_graphs)
        extra[0] = cap.nodes - N  # padding graph B holds the padding nodes
        setattr(batch, HOST_NODE_COUNTS, torch.cat([host, extra]))
    batch._slice_dict = slices
    batch._inc_dict = incs
    batch._num_graphs = cap.graphs
    batch.num_nodes = cap.nodes
    batch.node_mask = torch.arange(cap.nodes, device=dev) < N
    batch.edge_mask = torch.arange(cap.edges, device=dev) < E
    batch.graph_mask = torch.arange(cap.graphs, device=dev) < B
    batch.real_nodes, batch.real_edges, batch.real_graphs = N, E, B
    if cap.graph_nodes:
        batch.graph_nodes = cap.graph_nodes
    return batch


class PadCollater:
    """A collate function followed by :func:`pad_batch` (picklable, for
    loader worker processes)."""

    def __init__(self, collate, capacities: Capacities):
        self.collate, self.capacities = collate, capacities

    def __call__(self, items):
        return pad_batch(self.collate(items), self.capacities)


def real_rows(batch, level: Optional[str]) -> Optional[int]:
    """How many leading rows of a ``level`` (``'graph'``, ``'node'``) output
    are real in ``batch``; ``None`` when nothing is to be cut."""
    if level is None or getattr(batch, 'real_graphs', None) is None:
        return None
    return {'graph': batch.real_graphs, 'node': batch.real_nodes}[level]


def row_mask(batch, level: Optional[str]) -> Optional[Tensor]:
    """The mask of the real rows of a ``level`` (``'graph'``, ``'node'``)
    output of ``batch`` (``graph_mask`` or ``node_mask``, on the device), for
    a loss computed on the padded output
    (:mod:`graphgps_ext.train.loss`); ``None`` for an unpadded batch and for
    ``'pairs'`` outputs (they index real rows only). Only the masks are
    read, not the real counts: under :func:`torch.compile` a Python count
    would be specialised on, a recompilation for every new count."""
    if level not in ('graph', 'node'):
        return None
    return getattr(batch, 'graph_mask' if level == 'graph' else 'node_mask', None)


def trim(pred, true, batch, level: Optional[str]):
    """``(pred, true)`` without the padding rows of a static-shape batch
    (``level``: the head's ``output_rows``, ``'graph'`` or ``'node'``;
    ``'pairs'``: outputs that index real rows only, e.g. labelled pairs). Unchanged for
    an unpadded batch. A slice by a count known on the CPU: no host sync."""
    n = real_rows(batch, None if level == 'pairs' else level)
    if n is None:
        return pred, true
    return pred[:n], (true[:n] if isinstance(true, Tensor) and true.dim() > 0
                      else true)
