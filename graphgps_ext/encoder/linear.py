r"""Linear encoders of continuous node / edge features.

.. math::
    h_i = W x_i + b, \qquad e_{ij} = W' a_{ij} + b'

Shapes: ``batch.x`` ``[N, F]`` (or ``[N]``) -> ``[N, d]``;
``batch.edge_attr`` ``[E, F']`` (or ``[E]``) -> ``[E, d]``. Input widths come
from ``task.node_dim`` / ``task.edge_dim``.
"""
from torch import Tensor, nn


def _as_2d(v: Tensor) -> Tensor:
    v = v.float()
    return v.unsqueeze(1) if v.dim() == 1 else v


class LinearNode(nn.Module):
    r"""``[N, F]`` float -> ``[N, d]``."""

    def __init__(self, in_dim: int, dim: int):
        super().__init__()
        self.lin = nn.Linear(in_dim, dim)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'LinearNode':
        return cls(task.node_dim, dim)

    def reset_parameters(self):
        self.lin.reset_parameters()

    def forward(self, batch) -> Tensor:
        return self.lin(_as_2d(batch.x))


class LinearEdge(nn.Module):
    r"""``[E, F']`` float -> ``[E, d]``."""

    def __init__(self, in_dim: int, dim: int):
        super().__init__()
        self.lin = nn.Linear(in_dim, dim)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'LinearEdge':
        return cls(task.edge_dim, dim)

    def reset_parameters(self):
        self.lin.reset_parameters()

    def forward(self, batch) -> Tensor:
        return self.lin(_as_2d(batch.edge_attr))
