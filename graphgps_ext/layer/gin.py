r"""Graph isomorphism network (GIN) branch (Xu et al., *How Powerful are Graph
Neural Networks?*, ICLR 2019)."""
from typing import Optional

from torch import Tensor, nn
from torch_geometric.nn import GINConv
from torch_geometric.nn.resolver import activation_resolver

from graphgps_ext import branches
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.norm import MaskedBatchNorm1d, normalize

#: MLP layouts of the GIN update (``mpnn.gin_mlp``).
GIN_MLPS = ('gin', 'graphgps')


def gin_mlp(dim: int, kind: str = 'gin', act: str = 'relu') -> nn.Sequential:
    r"""The two-layer MLP of a GIN update, ``d -> d -> d``:

    - ``'gin'``: :math:`W_2\, \mathrm{act}(\mathrm{BN}(W_1 h + b_1)) + b_2`,
      the GIN paper's MLP with batch normalisation on its hidden layer (Xu et
      al. §4 / §7; PyG's ``GIN`` model and GIN examples: ``MLP([d, d, d])``);
    - ``'graphgps'``: :math:`W_2\, \mathrm{act}(W_1 h + b_1) + b_2`, the MLP of
      GraphGPS's and GEAET's ``GIN`` / ``GINE`` local models.
    """
    if kind == 'gin':
        return nn.Sequential(nn.Linear(dim, dim), MaskedBatchNorm1d(dim),
                             activation_resolver(act), nn.Linear(dim, dim))
    if kind == 'graphgps':
        return nn.Sequential(nn.Linear(dim, dim), activation_resolver(act),
                             nn.Linear(dim, dim))
    raise ValueError(f"unknown GIN MLP '{kind}' (mpnn.gin_mlp): use one of "
                     f"{', '.join(GIN_MLPS)}")


class GIN(nn.Module):
    r"""GIN local branch: PyG :class:`~torch_geometric.nn.conv.GINConv`,

    .. math::
        x_i' = \mathrm{MLP}\Big((1 + \epsilon)\, x_i + \sum_{j \to i} x_j\Big)

    with the MLP of :func:`gin_mlp` (``mlp='gin'``: Linear-BN-act-Linear, the
    GIN paper's; ``'graphgps'``: Linear-act-Linear, GraphGPS/GEAET's).
    :math:`\epsilon = 0` unless ``train_eps``; followed by ``act`` when
    ``out_act`` (GEAET's ``local_out_act``; the GIN paper applies a ReLU
    after every layer). Edge features are ignored; the edge stream is left
    unchanged.

    Args:
        dim: hidden width ``d`` (input, MLP hidden and output).
        act: activation inside the MLP and, when ``out_act``, after it (PyG
            activation resolver name).
        train_eps: learn :math:`\epsilon` (``mpnn.gin_train_eps``).
        out_act: apply ``act`` to the output (``mpnn.out_act``).
        mlp: ``'gin'`` or ``'graphgps'``, the MLP of :func:`gin_mlp`
            (``mpnn.gin_mlp``).

    Shapes: ``x [N, d]`` -> ``(x_out [N, d], None)``.
    """

    def __init__(self, dim: int, act: str = 'relu', train_eps: bool = False,
                 out_act: bool = False, mlp: str = 'gin'):
        super().__init__()
        self.conv = GINConv(gin_mlp(dim, mlp, act), train_eps=train_eps)
        self.mlp_kind = mlp
        self.out_act = activation_resolver(act) if out_act else None

    from_cfg = classmethod(branches.from_cfg)

    def reset_parameters(self):
        self.conv.reset_parameters()

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext):
        if ctx.node_mask is None:
            out = self.conv(x, ctx.edge_index)
        else:  # GINConv's forward with the MLP's batch norm on real rows
            h = self.conv.propagate(ctx.edge_index, x=(x, x), size=None)
            h = h + (1 + self.conv.eps) * x
            for module in self.conv.nn:
                h = normalize(module, h, ctx.node_mask, ctx.real_nodes) if isinstance(
                    module, nn.modules.batchnorm._BatchNorm) else module(h)
            out = h
        return (self.out_act(out) if self.out_act is not None else out), None

    def extra_repr(self) -> str:
        return f'mlp={self.mlp_kind}'
