"""The static structure of a mini-batch, shared by every layer of a forward pass.

A :class:`GraphContext` holds what does not change from layer to layer: the
sparse connectivity, the node-to-graph assignment, and (computed once, on
first use) the dense padded layout used by all-pairs attention and the dense
pair features of CSA.  The node stream ``x`` and the edge stream
``edge_attr`` are passed to the branches separately because they do change.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import torch
from torch import Tensor

from graphgps_ext.layer.norm import prefix_rows


@dataclass
class DenseLayout:
    r"""Where each node sits in a padded ``[B, n_max]`` layout.

    Attributes:
        index: ``[N]`` flat position ``b * n_max + i`` of every node.
        mask: ``[B, n_max]`` boolean, ``True`` at real nodes.
        n_max: largest graph size in the batch.
    """
    index: Tensor
    mask: Tensor
    n_max: int

    @property
    def num_graphs(self) -> int:
        return self.mask.size(0)

    def to_dense(self, x: Tensor, fill: float = 0.0) -> Tensor:
        """``[N, *]`` -> ``[B, n_max, *]`` (padding filled with ``fill``)."""
        out = x.new_full((self.num_graphs * self.n_max, ) + tuple(x.shape[1:]),
                         fill)
        out[self.index] = x
        return out.view((self.num_graphs, self.n_max) + tuple(x.shape[1:]))

    def to_sparse(self, x: Tensor) -> Tensor:
        """``[B, n_max, *]`` -> ``[N, *]`` (real nodes only, in input order)."""
        return x.reshape((-1, ) + tuple(x.shape[2:]))[self.index]

    def pair_index(self, edge_index: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        """Dense coordinates ``(b, i, j)`` of the node pairs in ``edge_index``."""
        src = self.index[edge_index[0]]
        dst = self.index[edge_index[1]]
        return src // self.n_max, src % self.n_max, dst % self.n_max


#: Attribute of a batch that holds the node count of every graph as a CPU
#: tensor, computed by the collater before the batch moves to the device
#: (:func:`graphgps_ext.loader.collate.add_host_sizes`). Sizes that Python
#: needs (block layouts, the largest graph) are read from it, so a forward
#: pass never waits for the device to report them.
HOST_NODE_COUNTS = '_host_node_counts'


def host_node_counts(data) -> Optional[Tensor]:
    """The host copy of the node counts of ``data`` (see
    :data:`HOST_NODE_COUNTS`), or ``None`` when the collater left none."""
    counts = getattr(data, HOST_NODE_COUNTS, None)
    return counts if isinstance(counts, Tensor) else None


@dataclass
class GraphContext:
    r"""Static structure of a batch of graphs.

    Attributes:
        edge_index: ``[2, E]`` directed edges (source, target), both directions
            for undirected graphs.
        batch: ``[N]`` graph id of every node (sorted, as PyG collates).
        num_graphs: ``B``.
        pair: optional ``[B, n_max, n_max, d_pair]`` dense pair features
            ``E^(0)`` (CSA eq. 8-9), set by the pair encoder.
        extras: free slots for quantities a branch computes once per batch
            and reuses in every layer (keyed by the branch; e.g. the
            normalised adjacency of MNA).
        record: when not ``None``, branches store attention tensors here
            (see :mod:`graphgps_ext.viz`); ``None`` during training.
        ptr: optional ``[B + 1]`` node offsets of the graphs (on the
            device, as PyG collates them): the sizes without a ``bincount``.
        host_counts: optional ``[B]`` node counts on the CPU
            (:data:`HOST_NODE_COUNTS`); without them the sizes Python needs
            are read from the device (a host synchronisation).
        node_mask, edge_mask, graph_mask: ``[N]``, ``[E]``, ``[B]`` booleans,
            ``True`` at real rows, for a static-shape batch whose padding
            rows (appended nodes, self-loop edges on them, and padding graphs
            that hold them) must not enter batch statistics
            (:class:`~graphgps_ext.layer.norm.MaskedBatchNorm1d`) or
            batch-wide softmaxes; ``None`` (no padding) otherwise. Padding
            nodes form graphs of their own, so per-graph operations
            (message passing, attention, pooling) need no mask.
        real_nodes, real_edges: when the real nodes (edges) are the first
            rows, their count (a Python int from the collater), else
            ``None``.
        graph_nodes: the fixed width of the dense layout of a static-shape
            batch (its capacity's ``graph_nodes``, at least the largest real
            graph), else ``None`` (the width is the batch's largest graph).
            With it the dense layout is ``[num_graphs, graph_nodes]``
            whatever the batch: one shape per capacity. Padding nodes past
            the width share the last slot of their padding graph (their rows
            are never read by a real node).
    """
    edge_index: Tensor
    batch: Tensor
    num_graphs: int
    pair: Optional[Tensor] = None
    extras: Dict[str, Any] = field(default_factory=dict)
    record: Optional[Dict[str, list]] = None
    ptr: Optional[Tensor] = None
    host_counts: Optional[Tensor] = None
    node_mask: Optional[Tensor] = None
    edge_mask: Optional[Tensor] = None
    graph_mask: Optional[Tensor] = None
    real_nodes: Optional[int] = None
    real_edges: Optional[int] = None
    graph_nodes: Optional[int] = None

    @classmethod
    def from_batch(cls, data) -> 'GraphContext':
        batch = getattr(data, 'batch', None)
        if batch is None:
            batch = torch.zeros(data.num_nodes, dtype=torch.long,
                                device=data.edge_index.device)
        num_graphs = int(getattr(data, 'num_graphs', 1) or 1)
        ptr = getattr(data, 'ptr', None)
        if not isinstance(ptr, Tensor) or ptr.numel() != num_graphs + 1:
            ptr = None
        host = host_node_counts(data)
        if host is not None and host.numel() != num_graphs:
            host = None
        return cls(edge_index=data.edge_index, batch=batch,
                   num_graphs=num_graphs, ptr=ptr, host_counts=host,
                   node_mask=getattr(data, 'node_mask', None),
                   edge_mask=getattr(data, 'edge_mask', None),
                   graph_mask=getattr(data, 'graph_mask', None),
                   real_nodes=prefix_rows(data, 'real_nodes'),
                   real_edges=prefix_rows(data, 'real_edges'),
                   graph_nodes=getattr(data, 'graph_nodes', None) or None)

    @property
    def num_nodes(self) -> int:
        return self.batch.numel()

    @property
    def sizes(self) -> Tuple[Tensor, Tensor]:
        """``(counts [B], pos [N])``: the node count of every graph and each
        node's position inside its graph (computed once, cached)."""
        def compute():
            if self.ptr is not None:
                ptr = self.ptr
                counts = ptr[1:] - ptr[:-1]
            else:
                counts = torch.bincount(self.batch, minlength=self.num_graphs)
                ptr = torch.zeros(self.num_graphs + 1, dtype=torch.long,
                                  device=self.batch.device)
                ptr[1:] = counts.cumsum(0)
            pos = torch.arange(self.batch.numel(),
                               device=self.batch.device) - ptr[self.batch]
            return counts, pos
        return self.cached('context/sizes', compute)

    @property
    def layout(self) -> DenseLayout:
        """The dense padded layout, computed on first use and cached."""
        def compute():
            counts, pos = self.sizes
            if self.graph_nodes:  # static: the capacity's width
                n_max = self.graph_nodes
                pos = pos.clamp(max=n_max - 1)
            else:
                n_max = int(self.sizes_host().max()) if counts.numel() else 0
            index = self.batch * n_max + pos
            mask = index.new_zeros(self.num_graphs * n_max, dtype=torch.bool)
            mask[index] = True
            return DenseLayout(index, mask.view(self.num_graphs, n_max), n_max)
        return self.cached('context/layout', compute)

    def sizes_host(self) -> Tensor:
        """``[B]`` node counts on the CPU: the collater's
        (:attr:`host_counts`), else read from the device once per batch."""
        if self.host_counts is not None:
            return self.host_counts
        return self.cached('context/sizes_host', lambda: self.sizes[0].cpu())

    def cached(self, key: str, fn):
        """Return ``extras[key]``, computing it with ``fn()`` on first use."""
        if key not in self.extras:
            self.extras[key] = fn()
        return self.extras[key]

    def log(self, key: str, value: Tensor):
        """Store an attention tensor when recording is on (no-op otherwise)."""
        if self.record is not None:
            self.record.setdefault(key, []).append(value.detach().cpu())
