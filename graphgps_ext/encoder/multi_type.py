r"""Sum of embeddings of several categorical node columns.

.. math::
    h_i = \sum_{c=1}^{F} W_c[x_{i,c}] \in \mathbb{R}^d

Shapes: ``batch.x`` ``[N, F]`` long -> ``[N, d]``. Column sizes come from
``task.extra['node_type_dims']`` (e.g. TreeNeighbourMatch ``(key, value)``:
``[2^r + 1, 2^r + 1]``).
"""
from typing import Sequence

import torch
from torch import Tensor, nn


class MultiTypeNode(nn.Module):
    r"""``[N, F]`` integer columns -> ``[N, d]`` (column embeddings summed)."""

    def __init__(self, type_dims: Sequence[int], dim: int):
        super().__init__()
        if not type_dims:
            raise ValueError("MultiTypeNode needs task.extra['node_type_dims'] "
                             '(one vocabulary size per column)')
        self.embs = nn.ModuleList(nn.Embedding(int(n), dim) for n in type_dims)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'MultiTypeNode':
        return cls(task.extra.get('node_type_dims', []), dim)

    def reset_parameters(self):
        for emb in self.embs:
            emb.reset_parameters()

    def forward(self, batch) -> Tensor:
        x = batch.x.long()
        if x.dim() == 1:
            x = x.unsqueeze(1)
        if x.size(1) != len(self.embs):
            raise ValueError(f'MultiTypeNode expects {len(self.embs)} columns, '
                             f'got x of shape {tuple(x.shape)}')
        return torch.stack([emb(x[:, c]) for c, emb in enumerate(self.embs)]).sum(0)
