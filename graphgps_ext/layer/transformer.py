r"""Full multi-head self-attention over the nodes of each graph (global branch)."""
import math
from typing import Optional

from torch import Tensor, nn

from graphgps_ext.layer.fused_attention import node_attention
from graphgps_ext.layer.reference_attention import key_mask
from graphgps_ext import branches
from graphgps_ext.branches import HeadsError
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.dropout import dropout


class Transformer(nn.Module):
    r"""Multi-head self-attention among all nodes of each graph (GraphGPS,
    GEAET eq. 1 and 8):

    .. math::
        Q^{(h)}, K^{(h)}, V^{(h)} &= X W_Q^{(h)} + b_Q^{(h)},\ X W_K^{(h)} + b_K^{(h)},
            \ X W_V^{(h)} + b_V^{(h)} \\
        X_T &= \mathrm{Concat}_h\Big(\mathrm{Drop}\big(\mathrm{softmax}
            (Q^{(h)} K^{(h)\top} / \sqrt{d_h})\big) V^{(h)}\Big) W_O + b_O

    where the softmax runs over the nodes of the query's own graph. Computed
    by :func:`graphgps_ext.layer.fused_attention.node_attention` on padded blocks
    of graphs of similar size with key padding masks cached per batch:
    explicit scores (``baddbmm``) with a fast dropout mask for small blocks
    or in training with ``attn_dropout > 0``,
    :func:`torch.nn.functional.scaled_dot_product_attention` otherwise.
    Memory is :math:`O(\sum_b B_b\, n_b^2 H)` over the blocks ``b``;
    padded query rows attend to the real nodes of their graph (finite, then
    discarded). The parameters
    match :class:`torch.nn.MultiheadAttention`.

    When ``ctx.record`` is set, the attention is computed explicitly and the
    map ``[B, H, n_max, n_max]`` (zero at padded rows and columns) is offered
    to ``ctx.log('transformer', ...)``.

    Args:
        dim: width :math:`d`.
        n_heads: heads :math:`H` (must divide ``dim``).
        attn_dropout: dropout on the attention weights (training only).
        fused: hand-written attention backward (``gt.fused_attention``;
            see :func:`~graphgps_ext.layer.fused_attention.node_attention`).

    Shapes: ``x [N, d]`` -> ``(x_out [N, d], None)``.
    """

    def __init__(self, dim: int, n_heads: int = 4, attn_dropout: float = 0.0,
                 fused: bool = True):
        super().__init__()
        if dim % n_heads:
            raise HeadsError(f'Transformer: hidden width {dim} is not divisible '
                             f'by gt.n_heads={n_heads}; change one of them', dim, n_heads)
        self.dim, self.n_heads, self.head_dim = dim, n_heads, dim // n_heads
        self.attn_dropout = attn_dropout
        self.fused = fused
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    from_cfg = classmethod(branches.from_cfg)

    def reset_parameters(self):
        self.qkv.reset_parameters()
        self.out.reset_parameters()

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext):
        H, dh, N = self.n_heads, self.head_dim, x.size(0)
        p = self.attn_dropout if self.training else 0.0
        if ctx.record is None:
            qkv = self.qkv(x).view(N, 3, H, dh).permute(1, 2, 0, 3)  # [3, H, N, dh]
            h = node_attention(qkv, ctx, p, self.training,
                               fused=self.fused)  # [H, N, dh]
            return self.out(h.permute(1, 0, 2).reshape(N, self.dim)), None
        # Recording: the explicit map [B, H, n, n] on the dense layout.
        layout = ctx.layout
        B, n = layout.num_graphs, layout.n_max
        qkv = layout.to_dense(self.qkv(x))  # [B, n, 3d]
        q, k, v = qkv.view(B, n, 3, H, dh).permute(2, 0, 3, 1, 4)  # [B, H, n, dh]
        # A graph without nodes has every key kept (no NaN rows).
        keep = key_mask(ctx)  # [B, 1, 1, n]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        attn = scores.masked_fill(~keep, float('-inf')).softmax(dim=-1)
        ctx.log('transformer',
                attn * layout.mask[:, None, :, None] * layout.mask[:, None, None, :])
        h = dropout(attn, p, self.training) @ v
        h = h.transpose(1, 2).reshape(B, n, self.dim)
        return self.out(layout.to_sparse(h)), None

    def extra_repr(self) -> str:
        return (f'dim={self.dim}, heads={self.n_heads}, '
                f'attn_dropout={self.attn_dropout}')
