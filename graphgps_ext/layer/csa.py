r"""Chromatic Self-Attention (Menegaux et al., *Self-Attention in Colors*, §3)."""
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphgps_ext import branches
from graphgps_ext.branches import HeadsError
from graphgps_ext.layer.fused_attention import (AttentionBlock, AttentionBlocks,
                                          attention_blocks)
from graphgps_ext.layer.context import DenseLayout, GraphContext
from graphgps_ext.layer.dropout import dropout_mask, keep_scale

DROPOUT_MODES = ('connection', 'node', 'channel')

#: Most size blocks per batch (:func:`~graphgps_ext.layer.fused_attention.attention_blocks`).
MAX_BLOCKS = 8

#: Fixed cost of one more size block, in padded pairs: the thirty-odd extra
#: kernel calls of a block cost about as much as this many pairs of the
#: ``[g, n, n, H, C]`` filter tensor (d entries per pair, so blocks pay for
#: themselves sooner than in node attention).
BLOCK_OVERHEAD = 1_000

#: :math:`E^{\mathrm{att}}` and :math:`E^{\mathrm{val}}` (or ``None``) of a block.
EdgeTerms = Tuple[Tensor, Optional[Tensor]]


class CSA(nn.Module):
    r"""Chromatic Self-Attention: attention *filters* with one score per channel
    (CSA eq. 5-7, Appendix B).

    For the nodes :math:`i, j` of one graph, with :math:`H` heads of width
    :math:`d_h = d / H` and :math:`h(c)` the head of channel :math:`c`:

    .. math::
        a_c(i, j) &= \exp\Big(\tfrac{1}{\sqrt{d_h}} Q_{i,h(c)} \cdot K_{j,h(c)}
                     + E^{\mathrm{att}}_{ij,c}\Big) \\
        \tilde a_c(i, j) &= a_c(i, j) \,/\, \textstyle\sum_k a_c(i, k) \\
        \mathrm{out}_i &= W_O \textstyle\sum_j \tilde{\mathbf a}(i, j) \odot
                     (V_j + E^{\mathrm{val}}_{ij})

    with :math:`Q = W_Q h`, :math:`K = W_K h`, :math:`V = W_V h` (bias-free, as
    the authors' code), :math:`E^{\mathrm{att}} = W_{EA} E^{(0)}` and
    :math:`E^{\mathrm{val}} = W_{EV} E^{(0)}` computed from the dense pair
    features :math:`E^{(0)}` (``ctx.pair``, eq. 8-9; ``ctx.pair[b, i, j]`` is
    the pair (i, j) of the pair encoder, the edge :math:`i \to j` where bonded,
    as ``to_dense_adj`` in the authors' code; symmetric for undirected graphs).
    The softmax runs over the nodes :math:`j` of the graph of :math:`i`,
    **separately for every channel**.
    The sum over :math:`j` is over all nodes of the graph, so the branch
    returns only the attention term; the hybrid layer adds :math:`h_i`.

    *CSA-mono* (``mono=True``): :math:`E^{\mathrm{att}}_{ij}` is one scalar per
    head (``W_EA: d_pair -> H``), so the filter is constant on a head's
    channels (standard multi-head attention with an edge bias).

    *Attention dropout* on :math:`\tilde{\mathbf a}` after the softmax
    (inverted: kept entries are scaled by :math:`1/(1-p)`): ``'connection'``
    zeroes whole pairs :math:`(i, j)` on all channels (the authors' configs),
    ``'node'`` zeroes whole key nodes :math:`j` (for every :math:`i`),
    ``'channel'`` zeroes single entries :math:`(i, j, c)`.

    *Edge parameter sharing* (``share_edge_params=True``): :meth:`tie_to`
    makes :math:`W_{EA}, W_{EV}` the first layer's modules, and
    :math:`E^{\mathrm{att}}, E^{\mathrm{val}}` are computed once per batch
    (``ctx.cached``) and reused by every layer.

    *Size blocks.* The per-channel softmax needs a filter tensor with
    :math:`d` entries per pair, the intrinsic cost of CSA (paper §3.5;
    ``mono`` keeps it at :math:`H` except for the value-edge term). Rather
    than padding every graph to the largest of the batch (:math:`B\,
    n_{\max}^2\, d`), the graphs are sorted by size and padded per block of
    similar sizes (:func:`~graphgps_ext.layer.fused_attention.attention_blocks`
    with :data:`MAX_BLOCKS`, :data:`BLOCK_OVERHEAD`): a block of :math:`g`
    graphs of at most :math:`n` nodes works on ``[g, n, n, H, C]`` tensors,
    :math:`\sum_b g_b n_b^2\, d` in all (on ZINC batches of 32, 1.13 times
    the unpadded :math:`\sum_i n_i^2\, d` against 1.86 times for one padded
    block). The projections are gathered into the blocks with one
    ``index_select``, the pairs of the blocks with one more per batch, and
    the outputs gathered back to the nodes once.

    Args:
        dim: node width :math:`d` (divisible by ``heads``).
        heads: number of heads :math:`H`.
        pair_dim: width of ``ctx.pair`` (default ``dim``).
        mono: CSA-mono (scalar edge bias per head).
        share_edge_params: tie :math:`W_{EA}, W_{EV}` across layers.
        attn_dropout: attention dropout rate :math:`p`.
        attn_dropout_mode: ``'connection'``, ``'node'`` or ``'channel'``.
        out_proj: apply :math:`W_O` (``nn.Linear`` with bias; the authors'
            ``linear_attn``, part of the paper's parameter budgets).
        edge_value: keep the value-edge term :math:`E^{\mathrm{val}}`
            (``False``: :math:`\sum_j \tilde{\mathbf a}(i,j) \odot V_j`, the
            "no edge value" rows of CSA Table 5).
        edge_bias: biases on :math:`W_{EA}, W_{EV}` (parity with the authors'
            shared edge encoder; the :math:`E^{\mathrm{att}}` bias cancels in
            the softmax and gets no gradient).
        chunk_elems: memory bound for large graphs: when the filter tensors
            ``[g, n, n, H, C]`` of the size blocks have more than
            ``chunk_elems`` entries in all, the query rows ``i`` of every
            block are processed in chunks whose filter tensors stay below
            it, each chunk under activation checkpointing (its edge terms
            are computed from ``ctx.pair`` inside the chunk and its
            intermediates recomputed in the backward pass), so peak memory
            is about ``ctx.pair`` plus a few chunks instead of a dozen full
            ``[g, n, n, d]`` tensors. Same outputs and gradients; ``0``
            never chunks (default ``2**26``, as ``csa.chunk_elems``).

    Shapes:
        ``x`` ``[N, d]``, ``ctx.pair`` ``[B, n_max, n_max, pair_dim]``
        -> ``([N, d], None)`` (the edge stream is not touched).
    """

    def __init__(self, dim: int, heads: int = 4, pair_dim: Optional[int] = None,
                 mono: bool = False, share_edge_params: bool = False,
                 attn_dropout: float = 0.0,
                 attn_dropout_mode: str = 'connection', out_proj: bool = True,
                 edge_bias: bool = False, edge_value: bool = True,
                 chunk_elems: int = 2 ** 26):
        super().__init__()
        if dim % heads != 0:
            raise HeadsError(f'CSA: dim {dim} is not divisible by the number of '
                             f'heads {heads} (gt.dim_hidden / gt.n_heads)', dim, heads)
        if attn_dropout_mode not in DROPOUT_MODES:
            raise ValueError(f"CSA: unknown attn_dropout_mode '{attn_dropout_mode}'"
                             f" (csa.attn_dropout_mode): use one of {DROPOUT_MODES}")
        if not 0.0 <= attn_dropout <= 1.0:
            raise ValueError(f'CSA: attn_dropout must be in [0, 1], got {attn_dropout}')
        self.dim, self.heads, self.head_dim = dim, heads, dim // heads
        self.pair_dim = dim if pair_dim is None else pair_dim
        self.mono = mono
        self.share_edge_params = share_edge_params
        self.attn_dropout = attn_dropout
        self.attn_dropout_mode = attn_dropout_mode
        self.chunk_elems = int(chunk_elems)
        self.lin_q = nn.Linear(dim, dim, bias=False)
        self.lin_k = nn.Linear(dim, dim, bias=False)
        self.lin_v = nn.Linear(dim, dim, bias=False)
        self.lin_edge_att = nn.Linear(self.pair_dim, heads if mono else dim,
                                      bias=edge_bias)
        self.lin_edge_val = (nn.Linear(self.pair_dim, dim, bias=edge_bias)
                             if edge_value else None)
        self.lin_out = nn.Linear(dim, dim) if out_proj else None

    from_cfg = classmethod(branches.from_cfg)

    def reset_parameters(self):
        for lin in (self.lin_q, self.lin_k, self.lin_v, self.lin_edge_att,
                    self.lin_edge_val, self.lin_out):
            if lin is not None:
                lin.reset_parameters()

    def tie_to(self, first: 'CSA'):
        """Share ``first``'s edge maps :math:`W_{EA}, W_{EV}` (no-op unless
        ``share_edge_params``)."""
        if not self.share_edge_params:
            return
        def shapes(m):
            return [None if lin is None else lin.weight.shape
                    for lin in (m.lin_edge_att, m.lin_edge_val)]
        if not isinstance(first, CSA) or shapes(first) != shapes(self):
            raise ValueError('CSA.tie_to: the first layer must be a CSA branch '
                             'with the same dim, pair_dim, mono and edge_value '
                             'settings')
        self.lin_edge_att = first.lin_edge_att
        self.lin_edge_val = first.lin_edge_val

    def edge_terms(self, ctx: GraphContext) -> List[EdgeTerms]:
        r""":math:`E^{\mathrm{att}}` ``[g, n, n, H, C]`` (``C`` = :math:`d_h`,
        or 1 for mono) and :math:`E^{\mathrm{val}}` ``[g, n, n, H, d_h]``
        (``None`` without the value-edge term) of every size block."""
        def compute():
            plan = self._plan(ctx)
            e_att, e_val = self._edge_maps(self._pair_rows(ctx, plan))
            sizes = [blk.graphs * blk.n * blk.n for blk in plan.blocks]
            e_vals = e_val.split(sizes) if e_val is not None else \
                [None] * len(sizes)
            terms = []
            for blk, a, v in zip(plan.blocks, e_att.split(sizes), e_vals):
                shape = (blk.graphs, blk.n, blk.n)
                terms.append((a.view(shape + a.shape[1:]),
                              None if v is None else v.view(shape + v.shape[1:])))
            return terms

        if self.share_edge_params:
            return ctx.cached(f'csa/edge/{id(self.lin_edge_att)}', compute)
        return compute()

    @staticmethod
    def _plan(ctx: GraphContext) -> AttentionBlocks:
        return attention_blocks(ctx, MAX_BLOCKS, BLOCK_OVERHEAD)

    def _pair(self, ctx: GraphContext) -> Tensor:
        """``ctx.pair`` after a shape check."""
        pair = ctx.pair
        if pair is None:
            raise ValueError(
                'CSA needs dense pair features ctx.pair [B, n_max, n_max, d]: '
                'enable pairenc (the CSA pair encoder) in the config')
        B, n = ctx.layout.num_graphs, ctx.layout.n_max
        if pair.shape[:3] != (B, n, n) or pair.size(-1) != self.pair_dim:
            raise ValueError(
                f'CSA: ctx.pair has shape {tuple(pair.shape)}, expected '
                f'[{B}, {n}, {n}, {self.pair_dim}] (batch size, n_max, n_max, '
                'pair width)')
        return pair

    def _pair_rows(self, ctx: GraphContext, plan: AttentionBlocks) -> Tensor:
        """The pairs of the size blocks, block after block, as rows
        ``[sum g n^2, pair_dim]`` (one gather, once per batch)."""
        pair = self._pair(ctx)

        def compute():
            B, n_max = pair.shape[:2]
            ar = torch.arange(n_max, device=pair.device)
            index = [((blk.index.view(-1, 1, 1) * n_max + ar[:blk.n].view(-1, 1))
                      * n_max + ar[:blk.n]).view(-1) for blk in plan.blocks]
            flat = pair.reshape(B * n_max * n_max, pair.size(-1))
            return flat.index_select(0, torch.cat(index))
        return ctx.cached('csa/pair_rows', compute)

    def _edge_maps(self, pair: Tensor) -> Tuple[Tensor, Optional[Tensor]]:
        r""":math:`E^{\mathrm{att}}, E^{\mathrm{val}}` of the pairs ``pair``
        ``[*, pair_dim]`` as ``[*, H, C]`` / ``[*, H, d_h]``."""
        shape = pair.shape[:-1] + (self.heads, )
        c = 1 if self.mono else self.head_dim
        e_att = self.lin_edge_att(pair).view(shape + (c, ))
        e_val = None if self.lin_edge_val is None else \
            self.lin_edge_val(pair).view(shape + (self.head_dim, ))
        return e_att, e_val

    def _block_proj(self, x: Tensor, plan: AttentionBlocks, lins) -> List[Tuple[Tensor, ...]]:
        """The projections ``lins`` of ``x`` (one matmul) gathered into the
        size blocks (one ``index_select``): per block, a ``[g, n, H, d_h]``
        view per projection."""
        weight = torch.cat([lin.weight for lin in lins]) if len(lins) > 1 \
            else lins[0].weight
        parts = plan.to_blocks(F.linear(x, weight))
        return [part.view(blk.graphs, blk.n, len(lins), self.heads,
                          self.head_dim).unbind(2)
                for blk, part in zip(plan.blocks, parts)]

    def attention(self, x: Tensor, ctx: GraphContext) -> Tensor:
        r"""Normalised (and, in training, dropped-out) filters
        :math:`\tilde{\mathbf a}` on the dense layout ``[B, n_max, n_max, H,
        C]`` (query ``i``, key ``j``; zero at padding), computed by the size
        blocks as in :meth:`forward`."""
        plan = self._plan(ctx)
        edges = self.edge_terms(ctx)
        maps = []
        for blk, (q, k), (e_att, _) in zip(
                plan.blocks, self._block_proj(x, plan, (self.lin_q, self.lin_k)),
                edges):
            node_keep = self._node_keep(blk.graphs, blk.n, x.device)
            attn, scale = self._filters(q, k, e_att, blk.keep, node_keep)
            maps.append(attn if scale == 1.0 else attn * scale)
        return self._dense(maps, plan, ctx.layout)

    @staticmethod
    def _dense(maps: List[Tensor], plan: AttentionBlocks,
               layout: DenseLayout) -> Tensor:
        """Per-block filters ``[g, n, n, H, C]`` on the dense layout, zero at
        padded queries and keys."""
        B, n_max = layout.num_graphs, layout.n_max
        out = maps[0].new_zeros((B, n_max, n_max) + maps[0].shape[3:])
        for blk, attn in zip(plan.blocks, maps):
            out[blk.index, :blk.n, :blk.n] = attn
        real = layout.mask[:, :, None] & layout.mask[:, None, :]
        return out * real[..., None, None]

    def _filters(self, q: Tensor, k: Tensor, e_att: Tensor, keep: Tensor,
                 node_keep: Optional[Tensor] = None) -> Tuple[Tensor, float]:
        """Filters ``[g, r, n, H, C]`` of the query rows ``q`` ``[g, r, H,
        d_h]`` against the keys ``k`` ``[g, n, H, d_h]`` (``keep [g, 1, n]``
        marks the real ones) after dropout, and the inverted-dropout scale
        still to apply (1 unless the channel mode defers it to the smaller
        output tensor)."""
        score = torch.einsum('bihc,bjhc->bijh', q, k) * self.head_dim**-0.5
        # Padding keys get a huge negative finite score (before the edge bias
        # is broadcast over the channels): exactly zero weight, and no NaN
        # even for a query row without any real key.
        score = score.masked_fill(~keep[..., None],
                                  torch.finfo(score.dtype).min / 2)
        attn = torch.softmax(score.unsqueeze(-1) + e_att, dim=2)  # [g, r, n, H, C]
        return self._dropout(attn, node_keep)

    def _node_keep(self, B: int, n: int, device) -> Optional[Tensor]:
        """The ``'node'`` dropout mask ``[B, 1, n, 1, 1]`` (scaled), drawn once
        per forward and block so that every chunk of query rows drops the
        same keys."""
        if not self.training or self.attn_dropout == 0.0 or \
                self.attn_dropout_mode != 'node':
            return None
        p = self.attn_dropout
        keep = dropout_mask((B, 1, n, 1, 1), p, torch.float32, device)
        return keep.mul_(keep_scale(p))

    def _dropout(self, attn: Tensor,
                 node_keep: Optional[Tensor] = None) -> Tuple[Tensor, float]:
        p = self.attn_dropout
        if not self.training or p == 0.0:
            return attn, 1.0
        B, r, n, H, C = attn.shape
        if self.attn_dropout_mode == 'channel':
            if C != self.head_dim:  # mono: a filter entry per channel
                attn = attn.expand(B, r, n, H, self.head_dim)
            keep = dropout_mask(attn.shape, p, attn.dtype, attn.device)
            return attn * keep, keep_scale(p)
        if self.attn_dropout_mode == 'node':
            keep = node_keep if node_keep is not None else \
                self._node_keep(B, n, attn.device)
            return attn * keep.to(attn.dtype), 1.0
        # Connection mode: the mask [B, r, n, 1, 1] is small, the scale goes
        # into it.
        keep = dropout_mask((B, r, n, 1, 1), p, attn.dtype, attn.device)
        return attn * keep.mul_(keep_scale(p)), 1.0

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext) -> Tuple[Tensor, None]:
        self._pair(ctx)  # a clear error before any work
        if x.size(0) == 0:
            return x.new_zeros(0, self.dim), None
        plan = self._plan(ctx)
        record = ctx.record is not None
        # Over the memory bound, every block runs in checkpointed chunks of
        # query rows (a block below it in one chunk).
        filters = sum(blk.graphs * blk.n * blk.n for blk in plan.blocks) * self.dim
        chunked = not record and 0 < self.chunk_elems < filters
        edges = [None] * len(plan.blocks) if chunked else self.edge_terms(ctx)
        proj = self._block_proj(x, plan, (self.lin_q, self.lin_k, self.lin_v))
        outs, maps = [], []
        for blk, (q, k, v), edge in zip(plan.blocks, proj, edges):
            node_keep = self._node_keep(blk.graphs, blk.n, x.device)
            if chunked:
                rows = self._block_rows(blk.graphs, blk.n)
                out = self._chunks(q, k, v, ctx, blk, rows, node_keep)
            else:
                attn, scale = self._filters(q, k, edge[0], blk.keep, node_keep)
                if record:
                    maps.append(attn if scale == 1.0 else attn * scale)
                out = self._aggregate(attn, scale, v, edge[1])
            outs.append(out.reshape(blk.graphs * blk.n, self.dim))
        if record:
            ctx.log('csa', self._dense(maps, plan, ctx.layout))
        out = plan.to_nodes(outs)
        if self.lin_out is not None:
            out = self.lin_out(out)
        return out, None

    @staticmethod
    def _aggregate(attn: Tensor, scale: float, v: Tensor,
                   e_val: Optional[Tensor]) -> Tensor:
        r""":math:`\sum_j \tilde{\mathbf a}(i, j) \odot (V_j + E^{\mathrm{val}}_{ij})`
        ``[g, r, H, d_h]`` for filters ``attn`` ``[g, r, n, H, C]``."""
        if attn.size(-1) == 1:  # mono filters: one weight per head
            a = attn.squeeze(-1)
            out = torch.einsum('bijh,bjhc->bihc', a, v)
            if e_val is not None:
                out = out + torch.einsum('bijh,bijhc->bihc', a, e_val)
        elif e_val is None:
            out = torch.einsum('bijhc,bjhc->bihc', attn, v)
        else:
            out = (attn * (v.unsqueeze(1) + e_val)).sum(dim=2)
        return out * scale if scale != 1.0 else out

    def _block_rows(self, B: int, n: int) -> int:
        """Query rows per chunk so that the filter tensor of a chunk of ``B``
        graphs of ``n`` nodes has at most :attr:`chunk_elems` entries (at
        most ``n``)."""
        if self.chunk_elems <= 0:
            return n
        return min(n, max(1, self.chunk_elems // (B * n * self.dim)))

    def _chunk(self, q: Tensor, k: Tensor, v: Tensor, pair: Tensor,
               index: Tensor, keep: Tensor,
               node_keep: Optional[Tensor]) -> Tensor:
        """Output rows ``[g, r, H, d_h]`` of the query rows ``q`` of the
        graphs ``index``, whose pairs are ``pair[index]`` (``pair`` ``[B, r,
        n, pair_dim]``: a view of ``ctx.pair`` at these rows, gathered here
        so that the copy is not kept for the backward pass)."""
        e_att, e_val = self._edge_maps(pair.index_select(0, index))
        attn, scale = self._filters(q, k, e_att, keep, node_keep)
        return self._aggregate(attn, scale, v, e_val)

    def _chunks(self, q: Tensor, k: Tensor, v: Tensor, ctx: GraphContext,
                blk: AttentionBlock, rows: int,
                node_keep: Optional[Tensor]) -> Tensor:
        """All query rows of a size block in chunks of ``rows`` (see
        ``chunk_elems``), each checkpointed when gradients are needed."""
        from torch.utils.checkpoint import checkpoint
        pair = ctx.pair[:, :, :blk.n]
        outs = []
        for start in range(0, blk.n, rows):
            stop = min(start + rows, blk.n)
            chunk = (q[:, start:stop], k, v, pair[:, start:stop], blk.index,
                     blk.keep, node_keep)
            if torch.is_grad_enabled():
                outs.append(checkpoint(self._chunk, *chunk, use_reentrant=False))
            else:
                outs.append(self._chunk(*chunk))
        return torch.cat(outs, dim=1)

    def extra_repr(self) -> str:
        return (f'dim={self.dim}, heads={self.heads}, mono={self.mono}, '
                f'share_edge_params={self.share_edge_params}, '
                f'attn_dropout={self.attn_dropout} ({self.attn_dropout_mode})')
