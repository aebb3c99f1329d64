r"""Root-node readout (``root_node``: TreeNeighbourMatch, Alon & Yahav's
bottleneck benchmark)."""
import torch
from torch import Tensor, nn

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
        root = mask.nonzero().view(-1)  # ascending node ids -> graph order
        graph = ctx.batch[root]
        # A static-shape batch's padding graphs have no root: the real
        # graphs come first, the padding rows are zeros (masked out of the loss).
        real = (ctx.num_graphs if ctx.graph_mask is None
                else getattr(batch, 'real_graphs', ctx.num_graphs))
        if root.numel() != real or not torch.equal(
                graph, torch.arange(real, device=graph.device)):
            raise ValueError(
                f'root_mask must mark exactly one node per graph; got '
                f'{root.numel()} roots for {real} graphs')
        pred = self.mlp(x[root])
        if real < ctx.num_graphs:
            pred = torch.cat([pred, pred.new_zeros(ctx.num_graphs - real,
                                                   pred.size(1))])
        return pred, batch.y.reshape(ctx.num_graphs)
