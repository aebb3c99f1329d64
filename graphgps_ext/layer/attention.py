r"""Node attention shared by the Transformer and MNA branches, and the size
blocks that CSA uses as well.

- :func:`key_mask`: the key-padding mask ``[B, 1, 1, n]`` of the dense
  layout (``ctx.layout``), computed once per batch (``ctx.cached``), used
  where the full attention map is recorded;
- :func:`node_attention`: :math:`\mathrm{Drop}(\mathrm{softmax}(Q K^\top
  / \sqrt{d_h} + \text{mask}))\, V` among the nodes of each graph from
  node-level ``q, k, v`` ``[N, d_h]`` per head. The graphs are sorted by size
  and padded in a few *blocks* of similar sizes (:func:`partition_sizes`,
  :func:`attention_blocks`); the node rows are gathered once into a padded
  buffer (one ``index_select``, no zero fill), split per block into
  ``[G B_b, n_b, d_h]`` batches of matrices for plain ``baddbmm`` / ``bmm``
  calls, and gathered back to the nodes once at the end. With
  dropout in training (where
  :func:`torch.nn.functional.scaled_dot_product_attention` falls back to its
  unfused path with a slow Bernoulli mask) or for small blocks
  (``n_b <= 64``) the scores are materialised and dropped out with
  :func:`graphgps_ext.layer.dropout.dropout`; larger blocks without dropout
  use the fused SDPA kernel.
"""
import math
from dataclasses import dataclass
from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.dropout import dropout, keep_scale


def key_mask(ctx: GraphContext) -> Tensor:
    r"""``[B, 1, 1, n_max]`` boolean, ``True`` at the real nodes of each graph
    (every key of a graph without nodes, so that no softmax row is empty)."""
    def compute():
        keep = ctx.layout.mask
        keep = keep | ~keep.any(dim=-1, keepdim=True)
        return keep[:, None, None, :]
    return ctx.cached('attention/key_mask', compute)


#: Largest block size ``n`` for which :func:`node_attention` materialises
#: the scores without dropout (above it the fused SDPA kernel is faster on CPU).
EXPLICIT_MAX_NODES = 64

#: Most blocks of :func:`attention_blocks` per batch.
MAX_BLOCKS = 4

#: Fixed cost of one more block, in score entries per head: the extra kernel
#: launches of a block (about ten forward and backward calls) cost about as
#: much as this many entries of the score, softmax and value products.
BLOCK_OVERHEAD = 4_000


@dataclass
class AttentionBlock:
    r"""Graphs of similar size padded together: ``graphs`` graphs of at most
    ``n`` nodes in rows ``[start, start + graphs * n)`` of the padded
    buffer; ``index [graphs]`` are their ids in the batch and ``keep
    [graphs, 1, n]`` marks their real keys (every key of a graph without
    nodes)."""
    start: int
    graphs: int
    n: int
    index: Tensor
    keep: Tensor


@dataclass
class AttentionBlocks:
    r"""Where every node sits in the padded layout of :func:`node_attention`.

    The blocks lie one after the other in a buffer of ``total`` rows; a
    block of ``graphs_b`` graphs of at most ``n_b`` nodes takes the rows
    ``[start_b, start_b + graphs_b * n_b)``, graph after graph, so that its
    rows view as ``[graphs_b, n_b, *]``.

    Attributes:
        blocks: the blocks, largest graphs first.
        slot: ``[N]`` buffer row of every node.
        gather: ``[total]`` node copied into every buffer row (padding rows
            repeat a real node: their keys are masked and their query rows
            dropped, so their values never reach the output).
        total: rows of the buffer, :math:`\sum_b \mathrm{graphs}_b\, n_b`.
    """
    blocks: List[AttentionBlock]
    slot: Tensor
    gather: Tensor
    total: int

    def to_blocks(self, rows: Tensor) -> List[Tensor]:
        """Node rows ``[N, *]`` -> per block ``[graphs_b * n_b, *]`` (views
        of one buffer filled by one ``index_select``)."""
        return list(rows.index_select(0, self.gather).split(
            [block.graphs * block.n for block in self.blocks]))

    def to_nodes(self, parts: List[Tensor]) -> Tensor:
        """Per-block rows ``[graphs_b * n_b, *]`` -> node rows ``[N, *]``
        (the inverse of :meth:`to_blocks` at the real nodes)."""
        out = parts[0] if len(parts) == 1 else torch.cat(parts)
        return out.index_select(0, self.slot)


#: Most candidate boundaries of :func:`partition_sizes` (batches with more
#: distinct graph sizes use evenly spaced ones among them).
MAX_CANDIDATES = 256


def partition_sizes(sizes: Tensor, max_blocks: int = MAX_BLOCKS,
                    overhead: float = BLOCK_OVERHEAD) -> List[int]:
    r"""Split sizes sorted in descending order into contiguous runs that
    minimise the padded attention cost plus a fixed cost per run,

    .. math::
        \min_{0 = b_0 < \dots < b_k = B,\ k \le K}\ \sum_{r=1}^{k}
            (b_r - b_{r-1})\, s_{b_{r-1}}^2 + k\, \lambda,

    by dynamic programming over the table of run costs between candidate
    boundaries (a vectorised min per extra run). An optimal split only cuts
    where the size changes (moving a cut inside a run of equal sizes to its
    start never costs more), so the candidates are those positions (at most
    :data:`MAX_CANDIDATES`, evenly spaced among them beyond that). Returns
    the boundaries ``[b_0, ..., b_k]``.
    """
    B = sizes.numel()
    if B <= 1 or max_blocks <= 1:
        return [0, B]
    cuts = torch.nonzero(sizes[1:] != sizes[:-1]).view(-1) + 1
    if cuts.numel() > MAX_CANDIDATES:
        pick = torch.linspace(0, cuts.numel() - 1, MAX_CANDIDATES).round()
        cuts = cuts[pick.long().unique()]
    bounds = torch.cat([cuts.new_zeros(1), cuts, cuts.new_full((1, ), B)])
    sq = sizes[bounds[:-1]].to(torch.float64).pow(2)  # first size of a run
    end = bounds.to(torch.float64)
    begin = end[:-1, None]
    run = ((end - begin) * sq[:, None]).masked_fill(end <= begin, math.inf)
    C = bounds.numel() - 1  # run[j, i]: the run from bound j to bound i
    cost, best, best_k = run[0], run[0, C] + overhead, 1
    args = []
    for k in range(2, min(max_blocks, C) + 1):
        cost, arg = (cost[:C, None] + run).min(dim=0)
        args.append(arg)
        if cost[C] + k * overhead < best:
            best, best_k = cost[C] + k * overhead, k
    picked = [C]
    for arg in reversed(args[:best_k - 1]):
        picked.append(int(arg[picked[-1]]))
    return [0] + [int(bounds[i]) for i in reversed(picked)]


def attention_blocks(ctx: GraphContext, max_blocks: Optional[int] = None,
                     overhead: Optional[float] = None) -> AttentionBlocks:
    """The :class:`AttentionBlocks` of a batch (computed once per setting,
    cached): the graphs sorted by size and padded per block of
    :func:`partition_sizes` (``max_blocks``, ``overhead``; by default
    :data:`MAX_BLOCKS`, :data:`BLOCK_OVERHEAD`)."""
    max_blocks = MAX_BLOCKS if max_blocks is None else max_blocks
    overhead = BLOCK_OVERHEAD if overhead is None else overhead

    def compute():
        batch, B = ctx.batch, ctx.num_graphs
        device = batch.device
        counts, pos = ctx.sizes
        sizes, order = torch.sort(counts, descending=True, stable=True)
        bounds = partition_sizes(sizes.cpu(), max_blocks, overhead)
        sizes_list = sizes.tolist()
        blocks, start = [], 0
        block_of = torch.empty(B, dtype=torch.long, device=device)
        slot = torch.empty(B, dtype=torch.long, device=device)
        starts, widths = [], []
        for b, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
            n = sizes_list[lo]
            graphs = order[lo:hi]
            block_of[graphs] = b
            slot[graphs] = torch.arange(hi - lo, device=device)
            keep = torch.arange(n, device=device) < sizes[lo:hi, None]
            keep = keep | ~keep.any(dim=-1, keepdim=True)
            blocks.append(AttentionBlock(start, hi - lo, n, graphs,
                                         keep[:, None, :]))
            starts.append(start)
            widths.append(n)
            start += (hi - lo) * n
        node_block = block_of[batch]
        table = torch.tensor([starts, widths], dtype=torch.long,
                             device=device)[:, node_block]
        slot = table[0] + slot[batch] * table[1] + pos
        gather = torch.zeros(start, dtype=torch.long, device=device)
        gather[slot] = torch.arange(batch.numel(), device=device)
        return AttentionBlocks(blocks, slot, gather, start)
    return ctx.cached(f'attention/blocks/{max_blocks}/{overhead}', compute)


def _block_mask(ctx: GraphContext, block: AttentionBlock, heads: int,
                dtype: torch.dtype) -> Tensor:
    """Key mask of a block, head-major ``[heads * graphs, 1, n]``, cached
    per batch: boolean (``True`` at real keys) for ``dtype`` ``torch.bool``,
    else additive (0 at real keys, the most negative finite value of
    ``dtype`` at padding: exactly zero weight after the softmax, never NaN)."""
    def compute():
        keep = block.keep.expand(heads, -1, -1, -1).reshape(
            heads * block.graphs, 1, block.n)
        if dtype == torch.bool:
            return keep
        return torch.zeros(keep.shape, dtype=dtype, device=keep.device) \
            .masked_fill_(~keep, torch.finfo(dtype).min)
    return ctx.cached(f'attention/mask/{block.start}/{heads}/{dtype}', compute)


def node_attention(qkv: Tensor, ctx: GraphContext, p: float = 0.0,
                   training: bool = False,
                   scale: Optional[float] = None) -> Tensor:
    r"""Multi-head attention among the nodes of each graph.

    Args:
        qkv: ``[3, *G, N, d_h]`` queries, keys and values of the ``N`` nodes
            for ``G`` heads (one or more head dimensions; any strides).
        ctx: the batch (blocks and key masks, cached per batch).
        p: attention dropout (training only).
        scale: score scale, :math:`1/\sqrt{d_h}` by default.

    Returns ``[*G, N, d_h]``: per head, :math:`\mathrm{Drop}(\mathrm{softmax}_j
    (q_i \cdot k_j\, \mathrm{scale}))\, V` over the nodes ``j`` of the graph
    of ``i``.

    The node rows are gathered once into a buffer of padded blocks
    (:func:`attention_blocks`: graphs of similar size together, so that a
    few large graphs do not pad the whole batch to their size), each block
    is a batch of ``[n_b, d_h]`` matrices for ``baddbmm`` / ``bmm`` (or the
    fused SDPA kernel), and the outputs are gathered back once. Node-major
    inputs (``qkv`` a permuted view of ``[N, 3, *G, d_h]``) are read
    without a copy, and the result is a view of node-major ``[N, *G, d_h]``.
    """
    heads, (N, dh) = tuple(qkv.shape[1:-2]), qkv.shape[-2:]
    G = math.prod(heads)
    scale = 1.0 / math.sqrt(dh) if scale is None else scale
    if N == 0:
        return qkv.new_zeros(heads + (0, dh))
    plan = attention_blocks(ctx)
    # Node-major rows [N, 3 G d_h] (a view when qkv is a permuted projection
    # [N, 3, *G, d_h]), copied once into the padded buffer.
    parts = plan.to_blocks(qkv.movedim(-2, 0).reshape(N, 3 * G * dh))
    drop = training and p > 0.0
    outs = []
    for block, part in zip(plan.blocks, parts):
        g, n = block.graphs, block.n
        # [3, G g, n, d_h], head-major batches of matrices
        q, k, v = part.view(g, n, 3, G, dh).permute(2, 3, 0, 1, 4) \
            .reshape(3, G * g, n, dh).unbind(0)
        if drop or n <= EXPLICIT_MAX_NODES:
            scores = torch.baddbmm(_block_mask(ctx, block, G, qkv.dtype), q,
                                   k.transpose(1, 2), alpha=scale)
            attn = dropout(scores.softmax(dim=-1), p, drop, scale=False)
            out = torch.bmm(attn, v)
        else:
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=_block_mask(ctx, block, G, torch.bool),
                scale=scale)
        # back to node-major rows [g n, G d_h]
        outs.append(out.view(G, g, n, dh).permute(1, 2, 0, 3)
                    .reshape(g * n, G * dh))
    out = plan.to_nodes(outs)
    if drop:
        out = out * keep_scale(p)
    return out.view((N, ) + heads + (dh, )).movedim(0, -2)
