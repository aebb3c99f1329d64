r"""A node type encoder composed with PE encoders (``'TypeDictNode+RWSE'``).

.. math::
    h_i = \big[\,T(x_i) \,\|\, P_1(i) \,\|\, \dots\big]
          + \sum_{\text{added}} P_m(i) \in \mathbb{R}^d

PEs with ``combine: concat`` (GraphGPS) give ``dim_pe`` columns each and the
type encoder ``T`` gets the rest, ``d - Σ dim_pe``; PEs with ``combine: add``
(GT) are mapped to ``d`` and added. PE encoders that return ``None`` (e.g.
``EquivStableLapPE``, which only stores ``batch.pe_equiv``) contribute
nothing. Optional BatchNorm on the result (GraphGPS ``node_encoder_bn``).

Shapes: ``batch`` -> ``[N, d]``.
"""
from typing import List, Optional, Sequence

import torch
from torch import Tensor, nn
from torch_geometric.nn.inits import reset

from graphgps_ext.layer.norm import normalize, prefix_rows


class CompositeNodeEncoder(nn.Module):
    r"""Type encoder ``[N, d_t]`` ‖ concatenated PEs, plus added PEs -> ``[N, d]``."""

    def __init__(self, type_encoder: nn.Module, concat: Sequence[nn.Module] = (),
                 add: Sequence[nn.Module] = (), side: Sequence[nn.Module] = (),
                 norm: Optional[nn.Module] = None):
        super().__init__()
        self.type_encoder = type_encoder
        self.concat = nn.ModuleList(concat)
        self.add = nn.ModuleList(add)
        self.side = nn.ModuleList(side)  # run for their side effects only
        self.norm = norm

    def reset_parameters(self):
        for child in self.children():
            reset(child)

    def forward(self, batch) -> Tensor:
        for enc in self.side:
            enc(batch)
        parts: List[Tensor] = [self.type_encoder(batch)]
        parts += [enc(batch) for enc in self.concat]
        h = torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]
        for enc in self.add:
            h = h + enc(batch)
        if self.norm is not None:
            h = normalize(self.norm, h, getattr(batch, 'node_mask', None),
                      prefix_rows(batch, 'real_nodes'))
        return h
