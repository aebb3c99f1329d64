r"""Residual gated graph convnet (GatedGCN) branch: the ``GatedGCNLayer`` of
GraphGPS (Rampášek et al., 2022), which the GEAET and CSA authors' code use
unchanged."""
from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.nn.resolver import activation_resolver
from torch_geometric.utils import scatter

from graphgps_ext import branches
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.dropout import Dropout
from graphgps_ext.layer.hybrid import make_norm
from graphgps_ext.layer.norm import normalize

#: ``ctx.extras`` key under which the EquivStableLapPE positions ``[N, k]``
#: are handed to the layers.
EQUIVSTABLE_PE_KEY = 'pe_equiv'


def equivstable_positions(ctx: GraphContext, layer: str) -> Tensor:
    """The EquivStableLapPE positions ``[N, k]`` of the batch, or a clear error."""
    pe = ctx.extras.get(EQUIVSTABLE_PE_KEY)
    if pe is None:
        raise ValueError(
            f"{layer} with mpnn.equivstable_pe needs the EquivStableLapPE "
            f"positions in ctx.extras['{EQUIVSTABLE_PE_KEY}']: add the "
            "EquivStableLapPE node encoder (e.g. dataset.node_encoder_name "
            "'TypeDictNode+EquivStableLapPE') or set mpnn.equivstable_pe False")
    return pe


class EquivStableGate(nn.Module):
    r"""Edge gate of EquivStableLapPE (Wang et al., ICLR 2022; GraphGPS):

    .. math::
        r_{ij} = \sigma\big(W_2\, \mathrm{ReLU}(W_1 \|p_i - p_j\|^2 + b_1)
            + b_2\big) \in (0, 1),

    with :math:`W_1 \in \mathbb{R}^{d \times 1}`,
    :math:`W_2 \in \mathbb{R}^{1 \times d}`. Depends on the positions only
    through distances, so it is invariant to their sign and basis.
    Shapes: ``pe [N, k]``, ``edge_index [2, E]`` -> ``[E, 1]``.
    """

    def __init__(self, dim: int):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(1, dim), nn.ReLU(),
                                 nn.Linear(dim, 1), nn.Sigmoid())

    def reset_parameters(self):
        self.mlp[0].reset_parameters()
        self.mlp[2].reset_parameters()

    def forward(self, pe: Tensor, edge_index: Tensor) -> Tensor:
        src, dst = edge_index
        dist = (pe[dst] - pe[src]).pow(2).sum(dim=-1, keepdim=True)
        return self.mlp(dist)


class GatedGCN(nn.Module):
    r"""GatedGCN (Bresson & Laurent, 2017) with edge gates, as GraphGPS's
    ``GatedGCNLayer``.

    For an edge :math:`j \to i` (source :math:`j`, target :math:`i`):

    .. math::
        \hat e_{ij} &= C e_{ij} + D h_i + E h_j, \qquad
            \sigma_{ij} = \mathrm{sigmoid}(\hat e_{ij})\ [\,\cdot\, r_{ij}] \\
        h_i' &= \mathrm{act}\Big(\mathrm{Norm}_h\Big(A h_i
            + \frac{\sum_{j \to i} \sigma_{ij} \odot B h_j}
                   {\sum_{j \to i} \sigma_{ij} + \varepsilon}\Big)\Big) \\
        e_{ij}' &= e_{ij} + \mathrm{Drop}\big(\mathrm{act}(
            \mathrm{Norm}_e(\hat e_{ij}))\big)

    where :math:`r_{ij}` is the optional EquivStableLapPE gate
    (:class:`EquivStableGate`, ``equivstable_pe=True``). The branch returns
    :math:`h'`; the hybrid layer (:class:`~graphgps_ext.layer.hybrid.HybridLayer`)
    then applies the node dropout, residual and branch norm, so that the
    node output of a layer is

    .. math::
        \mathrm{Norm}_{local}\big(h_i + \mathrm{Drop}(h_i')\big),

    exactly GraphGPS's (and GEAET's) ``x_in + dropout(act(bn_node_x(Ax +
    aggr)))`` inside ``GatedGCNLayer`` followed by ``norm1_local`` in
    ``GPSLayer``. The edge stream's own residual, norm and dropout are
    applied here. The letters :math:`A, \dots, E` are GraphGPS's (other texts
    write the edge update as :math:`C e_{ij} + A h_i + B h_j`).

    Args:
        dim: width :math:`d` of nodes and edges.
        act: activation (PyG resolver name).
        dropout: dropout on the edge update.
        node_norm: ``'batch'`` (GraphGPS's ``bn_node_x``), ``'layer'`` or
            ``'none'`` for :math:`\mathrm{Norm}_h`.
        edge_norm: ``'batch'``, ``'layer'`` or ``'none'`` for :math:`\mathrm{Norm}_e`.
        edge_residual: add :math:`e_{ij}` to the edge update.
        equivstable_pe: gate messages with :math:`r_{ij}`; the positions are
            read from ``ctx.extras['pe_equiv']``.
        eps: :math:`\varepsilon` of the gate normalisation.

    Shapes: ``x [N, d]``, ``edge_attr [E, d]`` -> ``(x_out [N, d], e_out [E, d])``.
    """

    def __init__(self, dim: int, act: str = 'relu', dropout: float = 0.0,
                 node_norm: str = 'batch', edge_norm: str = 'batch',
                 edge_residual: bool = True, equivstable_pe: bool = False,
                 eps: float = 1e-6):
        super().__init__()
        self.dim = dim
        self.A = nn.Linear(dim, dim)
        self.B = nn.Linear(dim, dim)
        self.C = nn.Linear(dim, dim)
        self.D = nn.Linear(dim, dim)
        self.E = nn.Linear(dim, dim)
        self.gate = EquivStableGate(dim) if equivstable_pe else None
        self.node_norm = make_norm(node_norm, dim)
        self.edge_norm = make_norm(edge_norm, dim)
        self.act = activation_resolver(act)
        self.dropout = Dropout(dropout)
        self.edge_residual = edge_residual
        self.eps = eps
        self.reset_parameters()

    @classmethod
    def uses_edges(cls, cfg) -> bool:
        """GatedGCN gates read and update the edge stream."""
        return True

    from_cfg = classmethod(branches.from_cfg)

    def reset_parameters(self):
        for lin in (self.A, self.B, self.C, self.D, self.E):
            lin.reset_parameters()
        if self.gate is not None:
            self.gate.reset_parameters()
        for norm in (self.node_norm, self.edge_norm):
            if hasattr(norm, 'reset_parameters'):
                norm.reset_parameters()

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext):
        if edge_attr is None:
            raise ValueError(
                'GatedGCN needs edge features but the batch has none: enable '
                'an edge encoder (e.g. DummyEdge for datasets without edge '
                "features) or use a local branch without edges ('GCN', 'GIN')")
        src, dst = ctx.edge_index
        e_hat = self.C(edge_attr) + self.D(x).index_select(0, dst) \
            + self.E(x).index_select(0, src)
        sigma = torch.sigmoid(e_hat)
        if self.gate is not None:
            pe = equivstable_positions(ctx, 'GatedGCN')
            sigma = sigma * self.gate(pe, ctx.edge_index)
        N = x.size(0)
        num = scatter(sigma * self.B(x).index_select(0, src), dst, 0,
                      dim_size=N, reduce='sum')
        den = scatter(sigma, dst, 0, dim_size=N, reduce='sum')
        x_out = self.act(normalize(self.node_norm, self.A(x) + num / (den + self.eps),
                                   ctx.node_mask, ctx.real_nodes))
        e_out = self.dropout(self.act(normalize(self.edge_norm, e_hat,
                                                ctx.edge_mask, ctx.real_edges)))
        if self.edge_residual:
            e_out = edge_attr + e_out
        return x_out, e_out

    def extra_repr(self) -> str:
        return f'dim={self.dim}, equivstable_pe={self.gate is not None}'
