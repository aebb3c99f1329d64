r"""Graph isomorphism network (GIN) branch (Xu et al., 2019)."""
from typing import Optional

from torch import Tensor, nn
from torch_geometric.nn import GINConv
from torch_geometric.nn.resolver import activation_resolver

from graphgps_ext.layer.context import GraphContext


class GIN(nn.Module):
    r"""GIN local branch: PyG :class:`~torch_geometric.nn.conv.GINConv` with a
    two-layer MLP (GraphGPS):

    .. math::
        x_i' = W_2\, \mathrm{act}\Big(W_1 \big((1 + \epsilon)\, x_i
            + \sum_{j \to i} x_j\big) + b_1\Big) + b_2

    :math:`\epsilon = 0` unless ``train_eps``; followed by ``act`` when
    ``out_act`` (GEAET's ``local_out_act``). Edge features are ignored; the
    edge stream is left unchanged.

    Shapes: ``x [N, d]`` -> ``(x_out [N, d], None)``.
    """

    def __init__(self, dim: int, act: str = 'relu', train_eps: bool = False,
                 out_act: bool = False):
        super().__init__()
        mlp = nn.Sequential(nn.Linear(dim, dim), activation_resolver(act),
                            nn.Linear(dim, dim))
        self.conv = GINConv(mlp, train_eps=train_eps)
        self.out_act = activation_resolver(act) if out_act else None

    @classmethod
    def from_cfg(cls, cfg, dim: int) -> 'GIN':
        return cls(dim, act=cfg.mpnn.act, train_eps=cfg.mpnn.gin_train_eps,
                   out_act=cfg.mpnn.out_act)

    def reset_parameters(self):
        self.conv.reset_parameters()

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext):
        out = self.conv(x, ctx.edge_index)
        return (self.out_act(out) if self.out_act is not None else out), None
