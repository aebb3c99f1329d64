r"""Inductive node head (``inductive_node``: PATTERN, CLUSTER, PascalVOC-SP,
COCO-SP)."""
from torch import Tensor, nn

from graphgps_ext.head.base import HeadMLP, align_target, mlp_kwargs


class InductiveNodeHead(nn.Module):
    r"""Per-node MLP for node-level prediction (GraphGPS ``inductive_node``).

    .. math::
        \hat{y}_i = \mathrm{MLP}(x_i)

    Args:
        dim_in: node width ``d``.
        dim_out: ``C`` classes (or ``T`` targets / labels).
        task_type: decides the target's shape (see
            :func:`~graphgps_ext.head.base.align_target`).
        **mlp: :class:`~graphgps_ext.head.base.HeadMLP` options.

    Shapes: ``x [N, d]``, ``batch.y [N]`` -> ``pred [N, C]``, ``true [N]``
    (multi-class) or ``[N, T]``.
    """

    #: One output row per node (padding nodes are cut after the real ones).
    output_rows = 'node'

    def __init__(self, dim_in: int, dim_out: int,
                 task_type: str = 'classification', **mlp):
        super().__init__()
        self.task_type = task_type
        self.dim_out = dim_out
        self.mlp = HeadMLP(dim_in, dim_out, **mlp)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'InductiveNodeHead':
        return cls(dim, task.num_outputs, task_type=task.task_type,
                   **mlp_kwargs(cfg, 'node'))

    def reset_parameters(self):
        self.mlp.reset_parameters()

    def forward(self, x: Tensor, batch, ctx):
        pred = self.mlp(x)
        true = align_target(batch.y, x.size(0), self.task_type, self.dim_out,
                            what='node')
        return pred, true
