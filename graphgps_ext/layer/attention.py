r"""Shared pieces of the dense attention branches (Transformer, MNA, full GT).

- :func:`key_mask` / :func:`key_bias`: the key-padding mask ``[B, 1, 1, n]``
  of the dense layout, computed once per batch (``ctx.cached``) and reused by
  every layer;
- :func:`dropout_keep` and :func:`attention_dropout`: inverted dropout with
  a fast mask (16 random bits per entry taken from 64-bit draws, about five
  times cheaper than ``bernoulli_`` on CPU). The drop probability is
  :math:`p` rounded to a multiple of :math:`2^{-16}` (exact for 0.5, 0.25,
  ...; off by at most :math:`7.7 \cdot 10^{-6}` otherwise) and the kept
  entries are scaled by the exact inverse of the keep probability, so the
  expectation is unchanged;
- :func:`node_attention`: :math:`\mathrm{Drop}(\mathrm{softmax}(Q K^\top
  / \sqrt{d_h} + \text{mask}))\, V` among the nodes of each graph from
  node-level ``q, k, v`` ``[N, d_h]`` per head, scattered once into a
  head-major dense buffer ``[3, G, B, n, d_h]`` so that the score and value
  products are plain ``baddbmm`` / ``bmm`` calls on contiguous
  ``[G B, n, d_h]`` blocks (no permute copies), gathered back to the nodes
  at the end. With dropout in training (where
  :func:`torch.nn.functional.scaled_dot_product_attention` falls back to its
  unfused path with a slow Bernoulli mask) or for small graphs
  (``n_max <= 64``) the scores are materialised and masked with
  :func:`attention_dropout`; larger graphs without dropout use the fused
  SDPA kernel.
"""
import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from graphgps_ext.layer.context import GraphContext


def key_mask(ctx: GraphContext) -> Tensor:
    r"""``[B, 1, 1, n_max]`` boolean, ``True`` at the real nodes of each graph
    (every key of a graph without nodes, so that no softmax row is empty)."""
    def compute():
        keep = ctx.layout.mask
        keep = keep | ~keep.any(dim=-1, keepdim=True)
        return keep[:, None, None, :]
    return ctx.cached('attention/key_mask', compute)


def key_bias(ctx: GraphContext, dtype: torch.dtype) -> Tensor:
    r"""``[B, 1, 1, n_max]`` additive mask: 0 at real keys, the most negative
    finite value of ``dtype`` at padding (exactly zero weight after the
    softmax, never NaN)."""
    def compute():
        keep = key_mask(ctx)
        return torch.zeros(keep.shape, dtype=dtype, device=keep.device) \
            .masked_fill_(~keep, torch.finfo(dtype).min)
    return ctx.cached(f'attention/key_bias/{dtype}', compute)


def dropout_keep(shape, p: float, device=None) -> Tensor:
    r"""Boolean keep mask of ``shape``: ``True`` with probability
    :math:`1 - \lfloor 2^{16} p \rceil / 2^{16}` (see the module docstring)."""
    threshold = round(p * 65536) - 32768  # drop the int16 values below it
    if threshold > 32767:  # p = 1 (the int16 comparison would overflow)
        return torch.zeros(shape, dtype=torch.bool, device=device)
    numel = math.prod(shape)
    draws = torch.randint(-2 ** 63, 2 ** 63 - 1, ((numel + 3) // 4, ),
                          dtype=torch.int64, device=device)
    bits = draws.view(torch.int16)[:numel].view(shape)
    return bits >= threshold


def keep_scale(p: float) -> float:
    """``1 / P(keep)`` of :func:`dropout_keep` (0 when everything drops)."""
    keep = 1.0 - round(p * 65536) / 65536
    return 1.0 / keep if keep > 0 else 0.0


def attention_dropout(attn: Tensor, p: float, training: bool,
                      scale: bool = True) -> Tensor:
    """Inverted dropout of ``attn`` with :func:`dropout_keep`; with
    ``scale=False`` the kept entries are not rescaled (the caller multiplies
    a smaller tensor downstream by :func:`keep_scale`)."""
    if not training or p == 0.0:
        return attn
    # A float 0/1 mask: multiplying by it (and by it again in the backward)
    # is several times cheaper on CPU than ``where`` or a bool operand.
    keep = dropout_keep(attn.shape, p, attn.device).to(attn.dtype)
    out = attn * keep
    return out.mul_(keep_scale(p)) if scale else out


#: Largest ``n_max`` for which :func:`node_attention` materialises the scores
#: without dropout (above it the fused SDPA kernel is faster on CPU).
EXPLICIT_MAX_NODES = 64


def _head_key_bias(ctx: GraphContext, heads: int, dtype: torch.dtype) -> Tensor:
    """:func:`key_bias` repeated head-major: ``[heads * B, 1, n_max]``."""
    def compute():
        bias = key_bias(ctx, dtype)  # [B, 1, 1, n]
        B, n = bias.size(0), bias.size(-1)
        return bias.view(1, B, 1, n).expand(heads, B, 1, n).reshape(
            heads * B, 1, n)
    return ctx.cached(f'attention/head_key_bias/{heads}/{dtype}', compute)


def node_attention(qkv: Tensor, ctx: GraphContext, p: float = 0.0,
                   training: bool = False,
                   scale: Optional[float] = None) -> Tensor:
    r"""Multi-head attention among the nodes of each graph.

    Args:
        qkv: ``[3, *G, N, d_h]`` queries, keys and values of the ``N`` nodes
            for ``G`` heads (one or more head dimensions; any strides).
        ctx: the batch (dense layout and key mask, cached per batch).
        p: attention dropout (training only).
        scale: score scale, :math:`1/\sqrt{d_h}` by default.

    Returns ``[*G, N, d_h]``: per head, :math:`\mathrm{Drop}(\mathrm{softmax}_j
    (q_i \cdot k_j\, \mathrm{scale}))\, V` over the nodes ``j`` of the graph
    of ``i``.
    """
    layout = ctx.layout
    B, n = layout.num_graphs, layout.n_max
    heads, (N, dh) = tuple(qkv.shape[1:-2]), qkv.shape[-2:]
    G = math.prod(heads)
    scale = 1.0 / math.sqrt(dh) if scale is None else scale
    buf = torch.index_copy(qkv.new_zeros((3, ) + heads + (B * n, dh)),
                           qkv.dim() - 2, layout.index, qkv)
    buf = buf.view(3, G, B, n, dh)
    drop = training and p > 0.0
    if drop or n <= EXPLICIT_MAX_NODES:
        q, k, v = (t.reshape(G * B, n, dh) for t in buf.unbind(0))
        scores = torch.baddbmm(_head_key_bias(ctx, G, qkv.dtype), q,
                               k.transpose(1, 2), alpha=scale)
        attn = attention_dropout(scores.softmax(dim=-1), p, drop, scale=False)
        out = torch.bmm(attn, v)
        if drop:
            out = out.mul_(keep_scale(p))
    else:
        q, k, v = (t.transpose(0, 1) for t in buf.unbind(0))  # [B, G, n, d_h]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask(ctx),
                                             scale=scale).transpose(0, 1)
    return out.reshape(heads + (B * n, dh)).index_select(-2, layout.index)
