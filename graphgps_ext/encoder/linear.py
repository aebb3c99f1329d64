r"""Linear encoders of continuous node / edge features.

.. math::
    h_i = W x_i + b, \qquad e_{ij} = W' a_{ij} + b'

and of one-hot node types (:class:`OneHotNode`, no bias: :math:`h_i = W x_i`,
the column of :math:`W` of node :math:`i`'s type, i.e. an embedding table).

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


class OneHotNode(nn.Module):
    r"""One-hot node types ``[N, F]`` -> ``[N, d]`` by a bias-free linear map,
    :math:`h_i = W x_i = W_{:, t_i}` for the type :math:`t_i` of node
    :math:`i`: the ``nn.Embedding(F, d)`` of the Benchmarking-GNNs and GT
    code for PATTERN / CLUSTER (``F d`` parameters, ``d`` fewer than
    :class:`LinearNode`)."""

    def __init__(self, in_dim: int, dim: int):
        super().__init__()
        self.lin = nn.Linear(in_dim, dim, bias=False)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'OneHotNode':
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
