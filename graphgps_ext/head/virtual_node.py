r"""Virtual-node readout: one extra node per graph, connected to all its nodes,
whose final state is the graph representation.

MNA-GT §4.2 lists it among the readouts of its graph head: "adding a virtual
node connecting to all nodes in the graph and further training a graph
representation" (Gilmer et al., 2017, the *master node*). Before the first
layer, every graph :math:`G_b` gets a node :math:`v_b` with the learned
embedding :math:`u \in \mathbb{R}^d` (initialised to 0, as OGB's virtual
node) and the edges :math:`v_b \to i` and :math:`i \to v_b` for every node
:math:`i` of :math:`G_b`:

.. math::
    X \leftarrow [\,u;\ X_{G_1};\ u;\ X_{G_2};\ \dots\,], \qquad
    \mathcal{E} \leftarrow \mathcal{E} \cup \{(v_b, i), (i, v_b)\},

so every layer treats :math:`v_b` as a node of its graph (in the attention,
the message passing and MNA's :math:`\hat A`). The readout is
:math:`g_b = x_{v_b}` after the last layer (pooling ``virtual_node``:
:func:`virtual_node_pool`). The virtual node sits first in its graph, so the
node order stays sorted by graph as PyG collates it.

Layers that read edge features, the CSA pair features and the
EquivStableLapPE positions have no values for the new node or edges: the
readout refuses them with a clear error.
"""
from typing import Optional, Tuple

import torch
from torch import Tensor, nn

from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.gatedgcn import EQUIVSTABLE_PE_KEY


def first_nodes(batch: Tensor, num_graphs: int) -> Tensor:
    """Index of the first node of every graph (``batch`` sorted): the
    number of nodes of the graphs before it (a search, not a ``bincount``,
    whose size a GPU would have to report to the host)."""
    graphs = torch.arange(num_graphs, dtype=batch.dtype, device=batch.device)
    return torch.searchsorted(batch, graphs)


def virtual_node_pool(x: Tensor, batch: Tensor, size: Optional[int] = None) -> Tensor:
    r"""``[N, d]`` -> ``[B, d]``: the state of each graph's virtual node (the
    first node of the graph, where :class:`VirtualNode` puts it)."""
    size = int(batch.max()) + 1 if size is None else size
    return x.index_select(0, first_nodes(batch, size))


class VirtualNode(nn.Module):
    r"""Inserts the virtual node of every graph (see the module docstring).

    Args:
        dim: node width :math:`d`.

    Shapes: ``attach(x [N, d], edge_attr, ctx)`` -> ``(x' [N + B, d], ctx')``.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.embedding = nn.Parameter(torch.zeros(dim))

    def reset_parameters(self):
        nn.init.zeros_(self.embedding)

    def attach(self, x: Tensor, edge_attr: Optional[Tensor],
               ctx: GraphContext) -> Tuple[Tensor, GraphContext]:
        if (edge_attr is not None or ctx.pair is not None
                or EQUIVSTABLE_PE_KEY in ctx.extras):
            raise ValueError(
                'the virtual-node readout (head.pool virtual_node) has no edge '
                'features, pair features or positional inputs for its new node '
                'and edges: use it with branches that read none (e.g. MNA, '
                'Transformer, GCN, GIN) and no EquivStableLapPE, or pool with '
                'mean / add')
        B, N = ctx.num_graphs, x.size(0)
        graph = torch.arange(B, device=x.device)
        # Node i of graph b moves to i + b + 1; the virtual node of b sits at
        # (first node of b) + b, i.e. just before the graph's nodes.
        new_index = torch.arange(N, device=x.device) + ctx.batch + 1
        vn_index = first_nodes(ctx.batch, B) + graph
        out = x.new_empty(N + B, x.size(1))
        out[new_index] = x
        out[vn_index] = self.embedding.to(x.dtype).expand(B, -1)
        batch = ctx.batch.new_empty(N + B)
        batch[new_index] = ctx.batch
        batch[vn_index] = graph
        nodes = new_index
        vn = vn_index[ctx.batch]
        edge_index = torch.cat([new_index[ctx.edge_index],
                                torch.stack([vn, nodes]), torch.stack([nodes, vn])], 1)
        # One more node per graph: the sizes follow without a device read.
        ptr = (None if ctx.ptr is None
               else ctx.ptr + torch.arange(B + 1, device=x.device))
        host = None if ctx.host_counts is None else ctx.host_counts + 1
        node_mask = edge_mask = None
        if ctx.node_mask is not None:  # static-shape padding: extend the masks
            node_mask = ctx.node_mask.new_empty(N + B)
            node_mask[new_index] = ctx.node_mask
            node_mask[vn_index] = ctx.graph_mask
            edge_mask = torch.cat([ctx.edge_mask, ctx.node_mask, ctx.node_mask])
        return out, GraphContext(edge_index=edge_index, batch=batch, num_graphs=B,
                                 record=ctx.record, ptr=ptr, host_counts=host,
                                 node_mask=node_mask, edge_mask=edge_mask,
                                 graph_mask=ctx.graph_mask,
                                 graph_nodes=(ctx.graph_nodes + 1
                                              if ctx.graph_nodes else None))

    def extra_repr(self) -> str:
        return f'dim={self.embedding.numel()}'
