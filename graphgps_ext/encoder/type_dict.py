r"""Embedding of one categorical node / edge feature column (GraphGPS ``TypeDict*``).

.. math::
    h_i = W_{\mathrm{node}}[x_i] \in \mathbb{R}^d, \qquad
    e_{ij} = W_{\mathrm{edge}}[a_{ij}] \in \mathbb{R}^d

Shapes: ``batch.x`` ``[N]`` or ``[N, F]`` (column 0 is used) -> ``[N, d]``;
``batch.edge_attr`` ``[E]`` or ``[E, F]`` -> ``[E, d]``. Vocabulary sizes
come from the dataset (``task.node_num_types`` / ``task.edge_num_types``).
"""
from torch import Tensor, nn


def _column0(v: Tensor) -> Tensor:
    return (v[:, 0] if v.dim() > 1 else v).long()


class TypeDictNode(nn.Module):
    r"""``[N(, F)]`` integer node types -> ``[N, d]`` embeddings."""

    def __init__(self, num_types: int, dim: int):
        super().__init__()
        if num_types < 1:
            raise ValueError('TypeDictNode needs the number of node types '
                             f'(task.node_num_types), got {num_types}')
        self.emb = nn.Embedding(num_types, dim)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'TypeDictNode':
        return cls(task.node_num_types, dim)

    def reset_parameters(self):
        self.emb.reset_parameters()

    def forward(self, batch) -> Tensor:
        return self.emb(_column0(batch.x))


class TypeDictEdge(nn.Module):
    r"""``[E(, F)]`` integer edge types -> ``[E, d]`` embeddings."""

    def __init__(self, num_types: int, dim: int):
        super().__init__()
        if num_types < 1:
            raise ValueError('TypeDictEdge needs the number of edge types '
                             f'(task.edge_num_types), got {num_types}')
        self.emb = nn.Embedding(num_types, dim)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'TypeDictEdge':
        return cls(task.edge_num_types, dim)

    def reset_parameters(self):
        self.emb.reset_parameters()

    def forward(self, batch) -> Tensor:
        return self.emb(_column0(batch.edge_attr))
