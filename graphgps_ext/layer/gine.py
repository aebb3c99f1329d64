r"""GIN with edge features (GINE) branch (Hu et al., 2020), as in GraphGPS."""
from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.nn import GINEConv
from torch_geometric.nn.resolver import activation_resolver
from torch_geometric.utils import scatter

from graphgps_ext import branches
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.gatedgcn import EquivStableGate, equivstable_positions
from graphgps_ext.layer.stacked import is_stacked


class GINE(nn.Module):
    r"""GINE local branch: PyG :class:`~torch_geometric.nn.conv.GINEConv` with
    the GraphGPS two-layer MLP:

    .. math::
        x_i' = \mathrm{MLP}\Big((1 + \epsilon)\, x_i + \sum_{j \to i}
            \mathrm{ReLU}(x_j + e_{ji})\ [\,\cdot\, r_{ji}]\Big), \qquad
        \mathrm{MLP} = W_2\, \mathrm{act}(W_1 \cdot + b_1) + b_2

    with the optional EquivStableLapPE gate :math:`r_{ji}`
    (:class:`~graphgps_ext.layer.gatedgcn.EquivStableGate`, GraphGPS's
    ``GINEConvESLapPE``, computed with the conv's own MLP and
    :math:`\epsilon`); followed by ``act`` when ``out_act`` (GEAET's
    ``local_out_act``). The edge stream is read, not updated.

    Args:
        dim: hidden width ``d`` of nodes, edges and the MLP.
        act: activation inside the MLP and, when ``out_act``, after it (PyG
            activation resolver name).
        train_eps: learn :math:`\epsilon` (``mpnn.gin_train_eps``).
        equivstable_pe: gate the messages with :math:`r_{ji}` from the
            EquivStableLapPE positions in ``ctx`` (``mpnn.equivstable_pe``).
        out_act: apply ``act`` to the output (``mpnn.out_act``).

    Shapes: ``x [N, d]``, ``edge_attr [E, d]`` -> ``(x_out [N, d], None)``.
    """

    def __init__(self, dim: int, act: str = 'relu', train_eps: bool = False,
                 equivstable_pe: bool = False, out_act: bool = False):
        super().__init__()
        mlp = nn.Sequential(nn.Linear(dim, dim), activation_resolver(act),
                            nn.Linear(dim, dim))
        self.conv = GINEConv(mlp, train_eps=train_eps)
        self.out_act = activation_resolver(act) if out_act else None
        self.gate = EquivStableGate(dim) if equivstable_pe else None

    @classmethod
    def uses_edges(cls, cfg) -> bool:
        """GINE messages read the edge stream."""
        return True

    from_cfg = classmethod(branches.from_cfg)

    def reset_parameters(self):
        self.conv.reset_parameters()
        if self.gate is not None:
            self.gate.reset_parameters()

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext):
        if edge_attr is None:
            raise ValueError(
                'GINE needs edge features but the batch has none: enable an '
                'edge encoder (e.g. DummyEdge for datasets without edge '
                "features) or use 'GIN' as the local branch")
        out = self._conv(x, edge_attr, ctx)
        return (self.out_act(out) if self.out_act is not None else out), None

    def _conv(self, x: Tensor, edge_attr: Tensor, ctx: GraphContext) -> Tensor:
        # GINEConv's operator written out (the same maths as
        # ``self.conv(x, edge_index, edge_attr)`` without MessagePassing's
        # per-call Python machinery); with the gate it is GraphGPS's
        # GINEConvESLapPE.
        src, dst = ctx.edge_index
        msg = (x.index_select(0, src) + edge_attr).relu()
        if self.gate is not None:
            msg = msg * self.gate(equivstable_positions(ctx, 'GINE'),
                                  ctx.edge_index)
        agg = scatter(msg, dst, 0, dim_size=x.size(0), reduce='sum')
        # (1 + eps) x added in place: one pass, no temporary (out of place
        # in a stacked pass, where the in-place form runs seed by seed).
        if is_stacked():
            return self.conv.nn(torch.addcmul(agg, x, 1 + self.conv.eps))
        return self.conv.nn(agg.addcmul_(x, 1 + self.conv.eps))
