r"""The fast attention kernels: node attention shared by the Transformer and
MNA branches, and the size blocks that CSA uses as well.

What they compute is written plainly in
:mod:`graphgps_ext.layer.reference_attention` (the dense padded layout, one
softmax per graph); the tests hold these kernels to it.

- :func:`node_attention`: :math:`\mathrm{Drop}(\mathrm{softmax}(Q K^\top
  / \sqrt{d_h} + \text{mask}))\, V` among the nodes of each graph from
  node-level ``q, k, v`` ``[N, d_h]`` per head. The graphs are sorted by size
  and padded in a few *blocks* of similar sizes (:func:`partition_sizes`,
  :func:`attention_blocks`); the rows of every (node, q/k/v, head) are
  gathered once into a buffer laid out per block as ``[3, G, B_b, n_b,
  d_h]`` (:func:`head_layout`; one ``index_select``, no zero fill), so that
  each block's queries, keys and values are views ``[G B_b, n_b, d_h]`` for
  plain ``baddbmm`` / ``bmm`` calls, and the outputs are gathered back to
  the nodes once at the end. With dropout in training (where
  :func:`torch.nn.functional.scaled_dot_product_attention` falls back to its
  unfused path with a slow Bernoulli mask) or for small blocks
  (``n_b <= 64``) the scores are materialised and dropped out with the mask
  of :func:`graphgps_ext.layer.dropout.dropout_mask`; larger blocks without
  dropout use the fused SDPA kernel. In training with explicit scores the
  backward is written by hand (:class:`_BlockAttention`): it writes the
  gradients of every block straight into one buffer and gathers it back
  once, where autograd would copy, stack and scatter per block.
"""
import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.dropout import dropout_mask, keep_scale
from graphgps_ext.layer.stacked import host_reads_allowed


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
        block_start: ``[N]`` first buffer row of every node's block.
        block_rows: ``[N]`` rows of every node's block, ``graphs_b n_b``.
    """
    blocks: List[AttentionBlock]
    slot: Tensor
    gather: Tensor
    total: int
    block_start: Tensor
    block_rows: Tensor

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
        last = cuts.numel() - 1
        pick = sorted({round(i * last / (MAX_CANDIDATES - 1))
                       for i in range(MAX_CANDIDATES)})
        cuts = cuts[cuts.new_tensor(pick)]
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
        if ctx.graph_nodes:
            return _static_blocks(ctx)
        batch, B = ctx.batch, ctx.num_graphs
        device = batch.device
        counts, pos = ctx.sizes
        sizes, order = torch.sort(counts, descending=True, stable=True)
        # The same stable sort on the host copy of the sizes: Python reads
        # the block layout from it, never from the device.
        host = torch.sort(ctx.sizes_host(), descending=True, stable=True)[0]
        bounds = partition_sizes(host, max_blocks, overhead)
        sizes_list = host.tolist()
        blocks, start = [], 0
        block_of = torch.empty(B, dtype=torch.long, device=device)
        slot = torch.empty(B, dtype=torch.long, device=device)
        starts, widths, rows = [], [], []
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
            rows.append((hi - lo) * n)
            start += (hi - lo) * n
        node_block = block_of[batch]
        # Built on the host and copied without waiting (a tensor built
        # straight on a GPU from Python lists is a blocking copy).
        table = _to_device(torch.tensor([starts, widths, rows],
                                        dtype=torch.long), device)[:, node_block]
        slot = table[0] + slot[batch] * table[1] + pos
        gather = torch.zeros(start, dtype=torch.long, device=device)
        gather[slot] = torch.arange(batch.numel(), device=device)
        return AttentionBlocks(blocks, slot, gather, start, table[0], table[2])
    return ctx.cached(f'attention/blocks/{max_blocks}/{overhead}', compute)


def _to_device(t: Tensor, device: torch.device) -> Tensor:
    """A small host tensor on ``device``: on CUDA from pinned memory with
    ``non_blocking`` (the host does not wait for the copy)."""
    if device.type == 'cuda':
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def _static_blocks(ctx: GraphContext) -> AttentionBlocks:
    """One block of every graph at the fixed width ``ctx.graph_nodes`` of a
    static-shape batch: the same shapes for every batch of a capacity, and
    nothing planned from the graph sizes. Padding nodes past the width share
    the last row of their (padding) graph; real graphs fit the width."""
    batch, B, n = ctx.batch, ctx.num_graphs, ctx.graph_nodes
    device = batch.device
    counts, pos = ctx.sizes
    keep = torch.arange(n, device=device) < counts[:, None]
    keep = keep | ~keep.any(dim=-1, keepdim=True)
    graphs = torch.arange(B, device=device)
    N, total = batch.numel(), B * n
    slot = batch * n + pos.clamp(max=n - 1)
    gather = slot.new_zeros(total)
    gather[slot] = torch.arange(N, device=device)
    return AttentionBlocks([AttentionBlock(0, B, n, graphs, keep[:, None, :])],
                           slot, gather, total,
                           torch.zeros(N, dtype=torch.long, device=device),
                           torch.full((N, ), total, dtype=torch.long,
                                      device=device))


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
        return keep.new_zeros(keep.shape, dtype=dtype) \
            .masked_fill_(~keep, torch.finfo(dtype).min)
    return ctx.cached(f'attention/mask/{block.start}/{heads}/{dtype}', compute)


@dataclass
class HeadLayout:
    r"""Where the query, key and value rows of :math:`G` heads sit in the
    blocks of :func:`node_attention` (computed once per batch and head
    count, cached).

    The input rows are ``[N * 3 * G, d_h]`` (node-major: node, then q/k/v,
    then head). Block ``b`` of :class:`AttentionBlocks` (``g_b`` graphs of at
    most ``n_b`` nodes) takes ``3 G g_b n_b`` rows of the input buffer,
    ordered ``[3, G, g_b, n_b]`` so that its queries, keys and values are
    views ``[G g_b, n_b, d_h]`` for ``bmm``, and ``G g_b n_b`` rows of the
    output buffer, ordered ``[G, g_b, n_b]``.

    Attributes:
        take: ``[sum_b 3 G g_b n_b]`` input row copied into every buffer row
            (row 0 at padding).
        back: ``[N * 3 * G]`` buffer row of every input row (its real copy).
        out: ``[N * G]`` output-buffer row of every (node, head).
        out_back: ``[sum_b G g_b n_b]`` (node, head) row of every output-buffer
            row, ``N * G`` (a zero row appended to the gradient) at padding.
        in_sizes: ``3 G g_b n_b`` per block (its rows of the input buffer).
        out_sizes: ``G g_b n_b`` per block (its rows of the output buffer).
    """
    take: Tensor
    back: Tensor
    out: Tensor
    out_back: Tensor
    in_sizes: List[int]
    out_sizes: List[int]


def head_layout(ctx: GraphContext, heads: int) -> HeadLayout:
    """The :class:`HeadLayout` of the batch's :func:`attention_blocks` for
    ``heads`` heads (cached per batch). Row ``j`` (q/k/v and head) of a node
    at row ``r`` of a block that starts at row ``s`` and has ``w`` rows
    sits at ``3 G s + j w + (r - s)`` of the input buffer, and ``h w + (r -
    s)`` past ``G s`` in the output buffer: a few vectorised operations,
    no loop over the blocks."""
    def compute():
        plan = attention_blocks(ctx)
        N, G = ctx.num_nodes, heads
        device = plan.slot.device
        start, width = plan.block_start, plan.block_rows
        local = plan.slot - start  # row of every node inside its block

        def rows(k):  # [N * k]: buffer row of (node, j) for j < k
            j = torch.arange(k, device=device)
            return ((start * k + local)[:, None] + j * width[:, None]).view(-1)

        back, out = rows(3 * G), rows(G)
        # Padding rows read input row 0 (a real row: finite; masked as a key,
        # discarded as a query) and write to the zero row N G of the gradient.
        take = back.new_zeros(3 * G * plan.total)
        take[back] = torch.arange(N * 3 * G, device=device)
        out_back = out.new_full((G * plan.total, ), N * G)
        out_back[out] = torch.arange(N * G, device=device)
        out_sizes = [G * b.graphs * b.n for b in plan.blocks]
        return HeadLayout(take, back, out, out_back,
                          [3 * size for size in out_sizes], out_sizes)
    return ctx.cached(f'attention/heads/{heads}', compute)


def _attend(rows: Tensor, ctx: GraphContext, heads: int, scale: float,
            p: float, drop: bool, saved: Optional[list] = None
            ) -> Tuple[Tensor, Tensor]:
    """The attention outputs ``[N G, d_h]`` (node-major) of the input rows
    ``rows [N 3 G, d_h]`` (:class:`HeadLayout`), and the block buffer they
    were gathered into. Per block of :func:`attention_blocks`: explicit
    scores, softmax and dropout mask, or the fused SDPA kernel (large
    blocks without dropout). With ``saved`` (a list), the softmax weights
    and dropout masks of every block are appended for
    :class:`_BlockAttention`'s backward (and every block is explicit)."""
    plan, layout = attention_blocks(ctx), head_layout(ctx, heads)
    G, dh = heads, rows.size(-1)
    buf = rows.index_select(0, layout.take)
    outs = []
    for block, part in zip(plan.blocks, buf.split(layout.in_sizes)):
        q, k, v = part.view(3, G * block.graphs, block.n, dh).unbind(0)
        if drop or block.n <= EXPLICIT_MAX_NODES or saved is not None:
            scores = torch.baddbmm(_block_mask(ctx, block, G, buf.dtype), q,
                                   k.transpose(1, 2), alpha=scale)
            attn = scores.softmax(dim=-1)
            mask = dropout_mask(attn.shape, p, attn.dtype, attn.device) \
                if drop else None
            if saved is not None:
                saved += [attn, mask]
            out = torch.bmm(attn if mask is None else attn * mask, v)
        else:
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=_block_mask(ctx, block, G, torch.bool),
                scale=scale)
        outs.append(out.view(-1, dh))
    out = torch.cat(outs).index_select(0, layout.out)
    # Inverted dropout: the kept weights' scale, applied to the smaller output.
    return (out.mul_(keep_scale(p)) if drop else out), buf


class _BlockAttention(torch.autograd.Function):
    r""":func:`node_attention` with explicit scores and a hand-written
    backward: per block, with :math:`P` the softmax weights, :math:`M` the
    dropout mask, :math:`s` the scale and :math:`\bar O` the output gradient,

    .. math::
        dV = (P \odot M)^\top \bar O, \quad
        dP = (\bar O V^\top) \odot M, \quad
        dS = P \odot (dP - \mathrm{rowsum}(dP \odot P)), \quad
        dQ = s\, dS\, K, \quad dK = s\, dS^\top Q,

    written straight into one gradient buffer that is gathered back to the
    input rows once (no per-block copies, stacks or scatters). Input
    ``rows [N 3 G, d_h]`` (:class:`HeadLayout`), output ``[N G, d_h]``."""

    @staticmethod
    def forward(fctx, rows, graph, heads, scale, p, drop):
        saved = []
        out, buf = _attend(rows, graph, heads, scale, p, drop, saved)
        fctx.graph, fctx.heads, fctx.scale, fctx.drop = graph, heads, scale, drop
        fctx.keep = keep_scale(p) if drop else 1.0
        fctx.save_for_backward(buf, *[t for t in saved if t is not None])
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(fctx, grad_out):
        G, scale = fctx.heads, fctx.scale
        buf, *saved = fctx.saved_tensors
        plan, layout = attention_blocks(fctx.graph), head_layout(fctx.graph, G)
        dh = buf.size(-1)
        grad = torch.cat([grad_out.reshape(-1, dh), grad_out.new_zeros(1, dh)])
        if fctx.drop:
            grad.mul_(fctx.keep)
        grad = grad.index_select(0, layout.out_back)
        grad_buf = torch.empty_like(buf)
        step = 2 if fctx.drop else 1
        parts = zip(plan.blocks, buf.split(layout.in_sizes),
                    grad_buf.split(layout.in_sizes),
                    grad.split(layout.out_sizes))
        for i, (block, part, grad_part, grad_o) in enumerate(parts):
            shape = (G * block.graphs, block.n, dh)
            q, k, v = part.view((3, ) + shape).unbind(0)
            gq, gk, gv = grad_part.view((3, ) + shape).unbind(0)
            grad_o = grad_o.view(shape)
            attn = saved[step * i]
            mask = saved[step * i + 1] if fctx.drop else None
            torch.bmm((attn if mask is None else attn * mask).transpose(1, 2),
                      grad_o, out=gv)
            d_attn = torch.bmm(grad_o, v.transpose(1, 2))
            if mask is not None:
                d_attn.mul_(mask)
            # P * (dP - rowsum(dP * P)) in one kernel (the op autograd's
            # softmax backward calls; the row sums over short rows are slow).
            d_scores = torch._softmax_backward_data(d_attn, attn, -1,
                                                    attn.dtype)
            torch.baddbmm(gq, d_scores, k, beta=0, alpha=scale, out=gq)
            torch.baddbmm(gk, d_scores.transpose(1, 2), q, beta=0,
                          alpha=scale, out=gk)
        return (grad_buf.index_select(0, layout.back), None, None, None,
                None, None)


def node_attention(qkv: Tensor, ctx: GraphContext, p: float = 0.0,
                   training: bool = False,
                   scale: Optional[float] = None, fused: bool = True) -> Tensor:
    r"""Multi-head attention among the nodes of each graph.

    Args:
        qkv: ``[3, *G, N, d_h]`` queries, keys and values of the ``N`` nodes
            for ``G`` heads (one or more head dimensions; any strides).
        ctx: the batch (blocks and key masks, cached per batch).
        p: attention dropout (training only).
        scale: score scale, :math:`1/\sqrt{d_h}` by default.
        fused: in training with explicit scores, use the hand-written
            backward of :class:`_BlockAttention` (``gt.fused_attention``);
            ``False``: autograd through the same forward (the plain path).

    Returns ``[*G, N, d_h]``: per head, :math:`\mathrm{Drop}(\mathrm{softmax}_j
    (q_i \cdot k_j\, \mathrm{scale}))\, V` over the nodes ``j`` of the graph
    of ``i``.

    The rows are gathered once into a buffer of padded blocks
    (:func:`attention_blocks`: graphs of similar size together, so that a
    few large graphs do not pad the whole batch to their size;
    :func:`head_layout`), each block is a batch of ``[n_b, d_h]`` matrices
    for ``baddbmm`` / ``bmm`` (or the fused SDPA kernel), and the outputs
    are gathered back once. In training with explicit scores (float32 or
    float64) the gradient is :class:`_BlockAttention`'s (``fused``; not under
    :func:`torch.compile`). Node-major
    inputs (``qkv`` a permuted view of ``[N, 3, *G, d_h]``) are read
    without a copy, and the result is a view of node-major ``[N, *G, d_h]``.
    """
    heads, (N, dh) = tuple(qkv.shape[1:-2]), qkv.shape[-2:]
    G = math.prod(heads)
    scale = 1.0 / math.sqrt(dh) if scale is None else scale
    if N == 0:
        return qkv.new_zeros(heads + (0, dh))
    rows = qkv.movedim(-2, 0).reshape(N * 3 * G, dh)  # a view if node-major
    drop = training and p > 0.0
    plan = attention_blocks(ctx)
    # Under torch.compile autograd differentiates the forward (the compiler
    # fuses it; the hand-written backward reads the per-batch layout cached
    # on ctx, which a traced graph cannot carry into its backward).
    if fused and host_reads_allowed() and torch.is_grad_enabled() \
            and rows.requires_grad and (drop or max(
            block.n for block in plan.blocks) <= EXPLICIT_MAX_NODES) \
            and rows.dtype in (torch.float32, torch.float64):
        out = _BlockAttention.apply(rows, ctx, G, scale, p, drop)
    else:
        out, _ = _attend(rows, ctx, G, scale, p, drop)
    return out.view((N, ) + heads + (dh, )).movedim(0, -2)
