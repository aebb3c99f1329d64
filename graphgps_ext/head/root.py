r"""Root-node readout (``root_node``: TreeNeighbourMatch, Alon & Yahav's
bottleneck benchmark)."""
import torch
from torch import Tensor, nn
from torch_geometric.utils import scatter

from graphgps_ext.head.base import HeadMLP, mlp_kwargs


class RootNodeHead(nn.Module):
    r"""Classify each graph from its root node only.

    .. math::
        \hat{y}_b = \mathrm{MLP}(x_{r_b}), \qquad r_b = \text{the node of }
        G_b \text{ with } \texttt{root\_mask} = \text{True}

    With one Linear layer and ``bias=False`` this is the bottleneck
    reference's ``out_layer`` (there with ``C + 1`` outputs because its labels
    start at 1; ours are shifted to ``0..C-1``).

    Args:
        dim_in: node width ``d``.
        dim_out: ``C = 2^r`` classes.
        **mlp: :class:`~graphgps_ext.head.base.HeadMLP` options.

    Shapes: ``x [N, d]``, ``batch.root_mask [N]`` bool (exactly one ``True``
    per graph), ``batch.y [B]`` -> ``pred [B, C]``, ``true [B]``.
    """

    #: One output row per graph (padding graphs after the real ones).
    output_rows = 'graph'

    def __init__(self, dim_in: int, dim_out: int, **mlp):
        super().__init__()
        self.mlp = HeadMLP(dim_in, dim_out, **mlp)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'RootNodeHead':
        return cls(dim, task.num_outputs, **mlp_kwargs(cfg, 'node'))

    def reset_parameters(self):
        self.mlp.reset_parameters()

    def forward(self, x: Tensor, batch, ctx):
        mask = getattr(batch, 'root_mask', None)
        if mask is None:
            raise ValueError('root_node head needs batch.root_mask [N] (bool, '
                             'one True per graph); use it with '
                             'TreeNeighbourMatch or add the mask to the data')
        # The root of graph b by sums over its nodes (no data-dependent
        # shape: one compiled graph per capacity): r_b = sum of the ids of
        # its masked nodes, checked to be exactly one. A static-shape
        # batch's padding graphs have no root; their rows are zeros
        # (masked out of the loss).
        mask = mask.view(-1)
        B = ctx.num_graphs
        ids = torch.arange(mask.numel(), device=mask.device)
        roots = scatter(mask.long(), ctx.batch, dim=0, dim_size=B,
                        reduce='sum')
        root = scatter(torch.where(mask, ids, 0), ctx.batch, dim=0,
                       dim_size=B, reduce='sum')
        want = (torch.ones_like(roots) if ctx.graph_mask is None
                else ctx.graph_mask.long())
        ok = (roots == want).all()
        message = 'root_mask must mark exactly one node per graph'
        if torch.compiler.is_compiling():  # checked on the device
            torch._assert_async(ok, message)
        elif not bool(ok):
            real = int(want.sum())
            raise ValueError(f'{message}; got {int(mask.sum())} roots for '
                             f'{real} graphs ({int((roots != want).sum())} '
                             'graph(s) with none or several)')
        pred = self.mlp(x.index_select(0, root))
        if ctx.graph_mask is not None:
            pred = torch.where(ctx.graph_mask[:, None], pred, 0.0)
        return pred, batch.y.reshape(B)
