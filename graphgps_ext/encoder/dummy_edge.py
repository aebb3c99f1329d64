r"""A learned constant edge feature for datasets without edge features.

.. math::
    e_{ij} = w \in \mathbb{R}^d \quad \text{for every edge}

Shape: ``[E, d]`` (``E = batch.edge_index.size(1)``). Built when a branch
needs an edge stream (GINE, GatedGCN, GEANet) but the dataset has none, and
as the "bonded" embedding of the CSA pair features in that case.
"""
from torch import Tensor, nn


class DummyEdge(nn.Module):
    r"""``batch`` -> ``[E, d]`` copies of one learned vector."""

    def __init__(self, dim: int):
        super().__init__()
        self.emb = nn.Embedding(1, dim)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'DummyEdge':
        return cls(dim)

    def reset_parameters(self):
        self.emb.reset_parameters()

    def forward(self, batch) -> Tensor:
        ei = batch.edge_index
        return self.emb(ei.new_zeros(ei.size(1)))
