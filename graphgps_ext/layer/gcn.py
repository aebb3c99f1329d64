r"""Graph convolutional network (GCN) branch (Kipf & Welling, 2017)."""
from typing import Optional

from torch import Tensor, nn
from torch_geometric.nn import GCNConv
from torch_geometric.nn.resolver import activation_resolver

from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.mna import normalized_adjacency


class GCN(nn.Module):
    r"""GCN local branch: PyG :class:`~torch_geometric.nn.conv.GCNConv`.

    .. math::
        X' = \hat D^{-1/2} (A + I) \hat D^{-1/2} X W + b, \qquad
        \hat D_{ii} = 1 + \sum_j A_{ij}

    (symmetric normalisation with self-loops, an existing self-loop kept
    once as in PyG's ``gcn_norm``), followed by ``act`` when ``out_act``
    (GEAET's ``local_out_act``). The normalised adjacency is computed once
    per batch and shared by all layers (``ctx.cached``), without
    data-dependent shapes (:func:`~graphgps_ext.layer.mna.normalized_adjacency`:
    no host synchronisation, one compiled graph per capacity).
    Edge features are ignored; the edge stream is left unchanged.

    Args:
        dim: hidden width ``d`` (input and output).
        act: activation after the convolution (PyG activation resolver name),
            applied only when ``out_act``.
        out_act: apply ``act`` to the output (``mpnn.out_act``).

    Shapes: ``x [N, d]`` -> ``(x_out [N, d], None)``.
    """

    def __init__(self, dim: int, act: str = 'relu', out_act: bool = False):
        super().__init__()
        self.conv = GCNConv(dim, dim, normalize=False)
        self.out_act = activation_resolver(act) if out_act else None

    @classmethod
    def from_cfg(cls, cfg, dim: int) -> 'GCN':
        return cls(dim, act=cfg.mpnn.act, out_act=cfg.mpnn.out_act)

    def reset_parameters(self):
        self.conv.reset_parameters()

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext):
        edge_index, weight = ctx.cached(
            'gcn_norm', lambda: normalized_adjacency(
                ctx.edge_index, ctx.num_nodes, 'sym', dtype=x.dtype))
        out = self.conv(x, edge_index, weight)
        return (self.out_act(out) if self.out_act is not None else out), None
