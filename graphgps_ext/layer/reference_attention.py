r"""Readable reference versions of the attention kernels.

:func:`dense_node_attention` computes what
:func:`graphgps_ext.layer.fused_attention.node_attention` computes, written
plainly on the dense padded layout of the batch (``ctx.layout``): every
graph padded to the largest, one masked softmax per graph and head,

.. math::
    \mathrm{out}_i = \sum_{j \in G(i)} \mathrm{softmax}_j\big(
        \mathrm{scale}\; q_i \cdot k_j\big)\, v_j,

at the cost of :math:`B\, n_{\max}^2` scores per head where the fast kernel
pads graphs of similar size together and writes its backward by hand. The
tests hold the fast kernel to it; :func:`key_mask` (the key-padding mask of
the dense layout) is also what the branches use when they record the full
attention maps.
"""
import math
from typing import Optional

from torch import Tensor

from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.dropout import dropout


def key_mask(ctx: GraphContext) -> Tensor:
    r"""``[B, 1, 1, n_max]`` boolean, ``True`` at the real nodes of each graph
    (every key of a graph without nodes, so that no softmax row is empty);
    cached per batch."""
    def compute():
        keep = ctx.layout.mask
        keep = keep | ~keep.any(dim=-1, keepdim=True)
        return keep[:, None, None, :]
    return ctx.cached('attention/key_mask', compute)


def dense_node_attention(qkv: Tensor, ctx: GraphContext, p: float = 0.0,
                         training: bool = False,
                         scale: Optional[float] = None) -> Tensor:
    r"""Multi-head attention among the nodes of each graph, on the dense layout.

    Args:
        qkv: ``[3, *G, N, d_h]`` queries, keys and values of the ``N`` nodes
            for ``G`` heads.
        ctx: the batch.
        p: dropout on the attention weights (training only; inverted).
        scale: score scale, :math:`1/\sqrt{d_h}` by default.

    Returns ``[*G, N, d_h]``, as
    :func:`~graphgps_ext.layer.fused_attention.node_attention`.
    """
    heads, dh = tuple(qkv.shape[1:-2]), qkv.size(-1)
    G = math.prod(heads)
    scale = 1.0 / math.sqrt(dh) if scale is None else scale
    layout = ctx.layout
    q, k, v = (layout.to_dense(t.reshape(G, -1, dh).transpose(0, 1))  # [B, n, G, d_h]
               .permute(0, 2, 1, 3) for t in qkv)                   # [B, G, n, d_h]
    scores = scale * q @ k.transpose(-1, -2)                         # [B, G, n, n]
    scores = scores.masked_fill(~key_mask(ctx), float('-inf'))
    weights = dropout(scores.softmax(dim=-1), p, training)
    out = (weights @ v).permute(0, 2, 1, 3)                          # [B, n, G, d_h]
    return layout.to_sparse(out).transpose(0, 1).reshape(heads + (-1, dh))
