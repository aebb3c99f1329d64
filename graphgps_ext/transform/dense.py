r"""Collated graph storage and batched dense adjacency matrices for precompute.

Every precompute in this package works on a :class:`GraphStore`: the
concatenated, graph-local ``edge_index`` of a whole dataset plus node and edge
pointers (exactly what an :class:`~torch_geometric.data.InMemoryDataset`
keeps in ``_data`` / ``slices``). Graphs are processed in *size groups*: all
graphs with ``n`` nodes are stacked into one dense ``[G, n, n]`` tensor, so
eigendecompositions and matrix powers run batched, with no Python loop over
graphs or nodes.

Adjacency conventions (shared by all encodings):

- :meth:`GraphStore.dense_adj` ``A[g, i, j]`` = number of edges ``i -> j``
  (``edge_index[0] = i``, ``edge_index[1] = j``), self-loops and multi-edges
  kept (random walks use it as given, as PyG's ``AddRandomWalkPE`` does);
- ``structure='simple'``: ``1[A_ij > 0]`` with the diagonal cleared
  (shortest paths);
- ``structure='undirected'``: ``1[A_ij + A_ji > 0]`` with the diagonal
  cleared (Laplacian, rings).
"""
import hashlib
from dataclasses import dataclass
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import torch
from torch import Tensor
from torch_geometric.utils import cumsum

#: A precomputed encoding of every graph: ``{attribute: (values, ptr)}`` with
#: ``ptr`` ``[G + 1]`` the per-graph offsets along the concatenation dimension
#: (``-1`` for ``*_index`` attributes, ``0`` otherwise).
Entry = Dict[str, Tuple[Tensor, Tensor]]


class Pairs(NamedTuple):
    """Node pairs of a size group, as a dense encoding's compute function
    returns them: ``graph`` ``[P]`` (the graph's position in the group),
    ``i``, ``j`` ``[P]`` graph-local node ids, ``values`` ``{attribute:
    [P, ...]}``. Stored graph-ordered with ``pair_index`` ``[2, P]``
    (:func:`scatter_pairs`)."""
    graph: Tensor
    i: Tensor
    j: Tensor
    values: Dict[str, Tensor]


@dataclass
class GraphStore:
    r"""Graph structure of a dataset in collated form.

    Attributes:
        edge_index: ``[2, E]`` edges with graph-local node ids, graphs
            concatenated in order.
        node_ptr: ``[G + 1]`` node offsets (graph ``g`` owns nodes
            ``node_ptr[g]:node_ptr[g+1]`` of every node-level tensor).
        edge_ptr: ``[G + 1]`` edge offsets into :attr:`edge_index`.
    """
    edge_index: Tensor
    node_ptr: Tensor
    edge_ptr: Tensor

    @property
    def num_graphs(self) -> int:
        return self.node_ptr.numel() - 1

    @property
    def num_nodes(self) -> int:
        return int(self.node_ptr[-1])

    @property
    def sizes(self) -> Tensor:
        """``[G]`` number of nodes per graph."""
        return self.node_ptr[1:] - self.node_ptr[:-1]

    @property
    def edge_counts(self) -> Tensor:
        return self.edge_ptr[1:] - self.edge_ptr[:-1]

    def edge_graph(self) -> Tensor:
        """``[E]`` graph id of every edge."""
        return torch.repeat_interleave(torch.arange(self.num_graphs),
                                       self.edge_counts)

    @classmethod
    def from_data_list(cls, data_list: Sequence) -> 'GraphStore':
        sizes = torch.tensor([int(d.num_nodes) for d in data_list],
                             dtype=torch.long)
        eis = [d.edge_index for d in data_list]
        counts = torch.tensor([e.size(1) for e in eis], dtype=torch.long)
        ei = torch.cat(eis, dim=1) if eis else torch.empty(2, 0, dtype=torch.long)
        return cls(ei.long(), cumsum(sizes), cumsum(counts))

    def subset(self, graph_ids: Tensor) -> 'GraphStore':
        """The store restricted to ``graph_ids`` (in that order)."""
        graph_ids = graph_ids.long()
        counts = self.edge_counts[graph_ids]
        starts = self.edge_ptr[graph_ids]
        idx = _ranges(starts, counts)
        return GraphStore(self.edge_index[:, idx], cumsum(self.sizes[graph_ids]),
                          cumsum(counts))

    def groups(self, max_elems: int = 1 << 22
               ) -> Iterator[Tuple[int, Tensor, Tensor]]:
        r"""Yield ``(n, graph_ids, edge_ids)`` for every graph size ``n``.

        ``edge_ids`` are the positions in :attr:`edge_index` of the edges of
        ``graph_ids``. Groups are split so that ``len(graph_ids) * n * n <=
        max_elems`` (a bound on the dense tensor built for the group). The
        edges are sorted once, so a group costs time in its own edges only.
        """
        sizes = self.sizes
        order = torch.argsort(sizes, stable=True)
        rank = torch.empty_like(order)
        rank[order] = torch.arange(order.numel())
        edge_order = torch.argsort(rank[self.edge_graph()], stable=True)
        eptr = cumsum(self.edge_counts[order])
        uniq, counts = torch.unique_consecutive(sizes[order], return_counts=True)
        a = 0
        for n, c in zip(uniq.tolist(), counts.tolist()):
            step = max(1, max_elems // max(1, n * n))
            for s in range(a, a + c, step):
                b = min(s + step, a + c)
                yield n, order[s:b], edge_order[int(eptr[s]):int(eptr[b])]
            a += c

    def dense_adj(self, graph_ids: Tensor, n: int, structure: str = 'count',
                  dtype=torch.float64, edge_ids: Optional[Tensor] = None
                  ) -> Tensor:
        r"""``[G, n, n]`` adjacency of the graphs ``graph_ids`` (all of size ``n``).

        Args:
            structure: ``'count'`` (edge multiplicities, self-loops kept),
                ``'simple'`` (binary, no self-loops) or ``'undirected'``
                (binary, symmetrised, no self-loops).
            edge_ids: the edges of ``graph_ids`` (from :meth:`groups`); found
                by a scan over all edges when omitted.
        """
        G = graph_ids.numel()
        pos = torch.full((self.num_graphs, ), -1, dtype=torch.long)
        pos[graph_ids] = torch.arange(G)
        if edge_ids is None:
            edge_ids = (pos[self.edge_graph()] >= 0).nonzero().view(-1)
        eg = torch.searchsorted(self.edge_ptr, edge_ids, right=True) - 1
        b = pos[eg]
        src, dst = self.edge_index[0, edge_ids], self.edge_index[1, edge_ids]
        adj = torch.zeros(G, n, n, dtype=dtype)
        adj.index_put_((b, src, dst), torch.ones(b.numel(), dtype=dtype),
                       accumulate=True)
        return derive_adj(adj, structure)

    def node_index(self, graph_ids: Tensor, n: int) -> Tensor:
        """``[G * n]`` global node positions of the group's nodes (row-major)."""
        return (self.node_ptr[graph_ids].unsqueeze(1)
                + torch.arange(n).unsqueeze(0)).reshape(-1)

    def fingerprint(self) -> str:
        """A hash of the structure (node pointers and edges)."""
        h = hashlib.sha1()
        h.update(self.node_ptr.numpy().tobytes())
        h.update(self.edge_ptr.numpy().tobytes())
        h.update(self.edge_index.contiguous().numpy().tobytes())
        return h.hexdigest()


def _ranges(starts: Tensor, counts: Tensor) -> Tensor:
    """Concatenation of ``arange(s, s + c)`` for every ``(s, c)``, vectorised."""
    total = int(counts.sum())
    if total == 0:
        return torch.empty(0, dtype=torch.long)
    offs = cumsum(counts)[:-1]
    rep = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    return starts[rep] + torch.arange(total) - offs[rep]


def scatter_pairs(chunks: List[Tuple[Tensor, Tensor, Tensor, Sequence[Tensor]]],
                  num_graphs: int) -> Tuple[Tensor, Tensor, List[Tensor]]:
    r"""Assemble per-group pair lists into graph-ordered collated storage.

    Args:
        chunks: per group ``(graph_id [P], i [P], j [P], values)`` with
            ``values`` a sequence of ``[P, ...]`` tensors.
        num_graphs: ``G``.

    Returns:
        ``(pair_index [2, P_total], pair_ptr [G + 1], values)``; pairs of graph
        ``g`` are ``pair_ptr[g]:pair_ptr[g+1]``, local node ids, row-major
        within a graph.
    """
    if not chunks:
        return (torch.empty(2, 0, dtype=torch.long),
                torch.zeros(num_graphs + 1, dtype=torch.long), [])
    gid = torch.cat([c[0] for c in chunks])
    order = torch.argsort(gid, stable=True)
    index = torch.stack([torch.cat([c[1] for c in chunks]),
                         torch.cat([c[2] for c in chunks])])[:, order]
    nval = len(chunks[0][3])
    values = [torch.cat([c[3][v] for c in chunks])[order] for v in range(nval)]
    counts = torch.bincount(gid, minlength=num_graphs)
    return index, cumsum(counts), values


def derive_adj(adj: Tensor, structure: str) -> Tensor:
    r"""From a counting adjacency ``[G, n, n]`` to ``structure``
    (``'count'`` unchanged, ``'simple'``, ``'undirected'``)."""
    if structure == 'count':
        return adj
    if structure == 'undirected':
        adj = adj + adj.transpose(1, 2)
    elif structure != 'simple':
        raise ValueError(f"unknown structure '{structure}': use 'count', "
                         "'simple' or 'undirected'")
    adj = (adj > 0).to(adj.dtype)
    adj.diagonal(dim1=1, dim2=2).zero_()
    return adj


def layout_adj(edge_index: Tensor, layout, structure: str = 'count',
               dtype=torch.float32) -> Tensor:
    r"""``[B, n_max, n_max]`` adjacency of a mini-batch on its own device.

    Args:
        edge_index: ``[2, E]`` batch edges (global node ids).
        layout: the batch's :class:`~graphgps_ext.layer.context.DenseLayout`.
        structure: as in :meth:`GraphStore.dense_adj`.
    """
    B, n = layout.num_graphs, layout.n_max
    b, i, j = layout.pair_index(edge_index)
    adj = b.new_zeros(B, n, n, dtype=dtype)
    adj.index_put_((b, i, j), b.new_ones(b.numel(), dtype=dtype),
                   accumulate=True)
    return derive_adj(adj, structure)
