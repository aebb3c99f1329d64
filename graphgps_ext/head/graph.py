r"""Graph-level heads: pool-then-MLP (``graph_mlp``) and MLP-then-pool
(``graph_node_mlp``)."""
from torch import Tensor, nn

from graphgps_ext.head.base import (HeadMLP, align_target, mlp_kwargs,
                                    pool_name, resolve_pool)


class GraphMLPHead(nn.Module):
    r"""Graph head ``graph_mlp``: global pooling, then an MLP (GraphGPS
    ``san_graph`` / GraphGym's default graph head).

    .. math::
        g_b = \mathrm{POOL}_{i \in G_b}\, x_i \quad(\text{mean, sum or max}),
        \qquad \hat{y}_b = \mathrm{MLP}(g_b)

    Args:
        dim_in: node width ``d``.
        dim_out: ``T`` targets, ``C`` classes or ``T`` labels.
        pool: ``'mean' | 'add' | 'max'``.
        task_type: ``regression``, ``classification`` or
            ``classification_multilabel`` (decides the target's shape).
        **mlp: :class:`~graphgps_ext.head.base.HeadMLP` options.

    Shapes: ``x [N, d]``, ``batch.y`` ``[B]``/``[B, T]`` ->
    ``pred [B, dim_out]``; ``true [B]`` (multi-class indices) or
    ``[B, dim_out]`` (regression, binary, multi-label).
    """

    #: One output row per graph (a static-shape batch's padding graphs are
    #: cut after the real ones, :func:`graphgps_ext.loader.pad.trim`).
    output_rows = 'graph'

    def __init__(self, dim_in: int, dim_out: int, pool: str = 'mean',
                 task_type: str = 'regression', **mlp):
        super().__init__()
        self.pool_name = pool
        self.pool = resolve_pool(pool)
        self.task_type = task_type
        self.dim_out = dim_out
        self.mlp = HeadMLP(dim_in, dim_out, **mlp)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'GraphMLPHead':
        return cls(dim, task.num_outputs, pool=pool_name(cfg),
                   task_type=task.task_type, **mlp_kwargs(cfg, 'graph'))

    def reset_parameters(self):
        self.mlp.reset_parameters()

    def forward(self, x: Tensor, batch, ctx):
        g = self.pool(x, ctx.batch, size=ctx.num_graphs)
        pred = self.mlp(g)
        true = align_target(batch.y, ctx.num_graphs, self.task_type,
                            self.dim_out)
        return pred, true


class GraphNodeMLPHead(GraphMLPHead):
    r"""Graph head ``graph_node_mlp``: an MLP on every node, then global
    pooling (the head of CSA's authors' code, with sum pooling).

    .. math::
        \hat{y}_b = \mathrm{POOL}_{i \in G_b}\, \mathrm{MLP}(x_i)

    Arguments and shapes as :class:`GraphMLPHead`.
    """

    def forward(self, x: Tensor, batch, ctx):
        pred = self.pool(self.mlp(x), ctx.batch, size=ctx.num_graphs)
        true = align_target(batch.y, ctx.num_graphs, self.task_type,
                            self.dim_out)
        return pred, true
