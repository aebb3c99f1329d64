r"""Adaptive Multi-Neighborhood Attention (Li, Chen, He, *MNA-GT*, §4)."""
import math
from typing import Optional, Tuple

import torch
from torch import Tensor, nn
from torch_geometric.nn.resolver import activation_resolver
from torch_geometric.utils import scatter

from graphgps_ext.branches import HeadsError
from graphgps_ext.layer.fused_attention import node_attention
from graphgps_ext.layer.context import GraphContext

FUSIONS = ('adaptive', 'sum', 'mean', 'concat')
ADJ_NORMS = ('sym', 'rw')


def normalized_adjacency(edge_index: Tensor, num_nodes: int,
                         norm: str = 'sym', dtype: torch.dtype = torch.float32
                         ) -> Tuple[Tensor, Tensor]:
    r"""Sparse :math:`\hat A` as ``(edge_index, weight)`` with self-loops
    :math:`\tilde A = A + I` (an existing self-loop is kept once):
    ``'sym'`` :math:`D^{-1/2}\tilde A D^{-1/2}`, ``'rw'`` :math:`D^{-1}\tilde A`,
    :math:`D_{ii} = \sum_j \tilde A_{ij}`. Edge ``(j -> i)`` carries
    :math:`\hat A_{ij}`, so :math:`(\hat A X)_i = \sum_{(j \to i)} \hat A_{ij} x_j`.
    The shapes follow the input only (``E + N`` weights, ``dtype``): no
    data-dependent filtering, so it compiles once per capacity.
    """
    if norm not in ADJ_NORMS:
        raise ValueError(f"unknown adjacency normalisation '{norm}' "
                         f"(mna.adj_norm): use one of {ADJ_NORMS}")
    # The edges keep their places (an existing self-loop with weight 0, so
    # no data-dependent filtering and no host synchronisation), followed by
    # one self-loop of weight 1 per node: the same sums as removing the
    # existing loops first (PyG's ``add_remaining_self_loops``).
    loops = torch.arange(num_nodes, device=edge_index.device)
    keep = (edge_index[0] != edge_index[1]).to(dtype)
    edge_index = torch.cat([edge_index, loops.expand(2, -1)], dim=1)
    ones = torch.cat([keep, keep.new_ones(num_nodes)])
    src, dst = edge_index
    deg = scatter(ones, dst, dim=0, dim_size=num_nodes, reduce='sum')
    if norm == 'sym':
        inv_sqrt = deg.pow(-0.5)
        weight = inv_sqrt[src] * inv_sqrt[dst] * ones
    else:
        weight = deg.reciprocal()[dst] * ones
    return edge_index, weight


def propagate(x: Tensor, edge_index: Tensor, weight: Tensor) -> Tensor:
    r""":math:`\hat A X` with a sparse scatter: ``[N, *]`` -> ``[N, *]``."""
    src, dst = edge_index
    w = weight.view((-1, ) + (1, ) * (x.dim() - 1)).to(x.dtype)
    return scatter(w * x.index_select(0, src), dst, dim=0,
                   dim_size=x.size(0), reduce='sum')


class MNA(nn.Module):
    r"""Adaptive Multi-Neighborhood Attention (MNA-GT eq. 5-11).

    With the normalised adjacency :math:`\hat A` (self-loops, ``sym`` or ``rw``)
    and :math:`c` = ``hops``, kernel :math:`k = 0..c` (:math:`\hat A^0 X = X`)
    is multi-head attention over all nodes of the graph with queries and keys
    from the propagated features and values from :math:`X` (eq. 7-8):

    .. math::
        Z^k &= \big\Vert_{h=1}^{m} \mathrm{softmax}\Big(
               \tfrac{(\hat A^k X W_Q^{k,h})(\hat A^k X W_K^{k,h})^\top}
                     {\sqrt{d_h}}\Big) X W_V^{k,h} \; W_O^k \\
        \alpha_{v,k} &= \mathrm{softmax}_k\big(\sigma(z_v^k W)\, w^\top\big),
        \qquad z_v = \textstyle\sum_{k=0}^{c} \alpha_{v,k} z_v^k
        \quad \text{(eq. 9-10, per node } v)

    Ablations (Table 4): ``fusion='sum'`` :math:`\sum_k z^k`, ``'mean'``,
    ``'concat'`` :math:`[z^0 \Vert \dots \Vert z^c] W_{cat}` (back to ``d``).
    The residual term of eq. 11 is :meth:`skip` :math:`= \hat A X`; the hybrid
    layer with ``pre_norm`` gives :math:`Z' = \mathrm{MNA}(\mathrm{LN}(X)) +
    \hat A X` and eq. 12. :math:`\hat A` (sparse edge weights) is computed once
    per batch (``ctx.cached``); :math:`\hat A^k X` uses sparse scatters; the
    :math:`(c+1) m` attention heads of all kernels run in one masked
    attention call over the nodes of each graph
    (:func:`graphgps_ext.layer.fused_attention.node_attention`).

    All projections are bias-free matrices, as written in eq. 8-10 (the paper
    has no public code); :math:`\sigma` is not named by the paper
    (``fusion_act``, default ``tanh`` as the semantic attention it mirrors).

    Args:
        dim: width :math:`d`.
        heads: heads per kernel :math:`m`.
        hops: largest propagation step :math:`c` (``c + 1`` kernels).
        adj_norm: ``'sym'`` or ``'rw'``.
        fusion: ``'adaptive'``, ``'sum'``, ``'mean'`` or ``'concat'``.
        fusion_act: :math:`\sigma` of eq. 10 (PyG activation name or
            ``'identity'``).
        head_dim: width :math:`d_h` of a head (default ``dim // heads``).
        attn_dropout: dropout on the attention weights.
        fused: hand-written attention backward (``gt.fused_attention``).

    Shapes:
        ``x`` ``[N, d]`` -> ``([N, d], None)``; ``ctx.log('mna/alpha')``
        receives :math:`\alpha` ``[N, c+1]`` (adaptive fusion).
    """

    def __init__(self, dim: int, heads: int = 4, hops: int = 2,
                 adj_norm: str = 'sym', fusion: str = 'adaptive',
                 fusion_act: str = 'tanh', head_dim: Optional[int] = None,
                 attn_dropout: float = 0.0, fused: bool = True):
        super().__init__()
        if hops < 0:
            raise ValueError(f'MNA: hops (mna.hops) must be >= 0, got {hops}')
        if fusion not in FUSIONS:
            raise ValueError(f"MNA: unknown fusion '{fusion}' (mna.fusion): use "
                             f'one of {FUSIONS}')
        if adj_norm not in ADJ_NORMS:
            raise ValueError(f"MNA: unknown adj_norm '{adj_norm}' (mna.adj_norm):"
                             f' use one of {ADJ_NORMS}')
        if not head_dim:
            if dim % heads != 0:
                raise HeadsError(
                    f'MNA: dim {dim} is not divisible by heads {heads}; set '
                    'mna.head_dim to the width of one head', dim, heads)
            head_dim = dim // heads
        self.dim, self.heads, self.head_dim = dim, heads, head_dim
        self.hops, self.kernels = hops, hops + 1
        self.adj_norm, self.fusion = adj_norm, fusion
        self.attn_dropout = attn_dropout
        self.fused = fused
        inner = heads * head_dim
        K = self.kernels
        # Stacked per-kernel projections: W_Q^k, W_K^k, W_V^k [d, m d_h],
        # W_O^k [m d_h, d] (the m heads of a kernel are column blocks).
        self.weight_q = nn.Parameter(torch.empty(K, dim, inner))
        self.weight_k = nn.Parameter(torch.empty(K, dim, inner))
        self.weight_v = nn.Parameter(torch.empty(K, dim, inner))
        self.weight_o = nn.Parameter(torch.empty(K, inner, dim))
        self.fusion_act = fusion_act
        if fusion == 'adaptive':
            self.lin_fuse = nn.Linear(dim, dim, bias=False)  # W of eq. 10
            self.fuse_vec = nn.Parameter(torch.empty(dim))   # w of eq. 10
            self.act = (nn.Identity() if fusion_act == 'identity'
                        else activation_resolver(fusion_act))
        elif fusion == 'concat':
            self.lin_fuse = nn.Linear(K * dim, dim, bias=False)
        self.reset_parameters()

    @classmethod
    def from_cfg(cls, cfg, dim: int) -> 'MNA':
        return cls(dim, heads=cfg.gt.n_heads, hops=cfg.mna.hops,
                   adj_norm=cfg.mna.adj_norm, fusion=cfg.mna.fusion,
                   fusion_act=cfg.mna.fusion_act,
                   head_dim=cfg.mna.head_dim or None,
                   attn_dropout=cfg.gt.attn_dropout,
                   fused=cfg.gt.fused_attention)

    def reset_parameters(self):
        # nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) per matrix.
        for w in (self.weight_q, self.weight_k, self.weight_v, self.weight_o):
            bound = 1.0 / math.sqrt(w.size(1))
            nn.init.uniform_(w, -bound, bound)
        if self.fusion in ('adaptive', 'concat'):
            self.lin_fuse.reset_parameters()
        if self.fusion == 'adaptive':
            bound = 1.0 / math.sqrt(self.dim)
            nn.init.uniform_(self.fuse_vec, -bound, bound)

    def adjacency(self, ctx: GraphContext) -> Tuple[Tensor, Tensor]:
        r"""Sparse :math:`\hat A` of the batch, computed once per batch."""
        return ctx.cached(
            f'mna/adj/{self.adj_norm}', lambda: normalized_adjacency(
                ctx.edge_index, ctx.num_nodes, self.adj_norm))

    def skip(self, x: Tensor, ctx: GraphContext) -> Tensor:
        r"""Residual term of eq. 11: :math:`\hat A X`."""
        return propagate(x, *self.adjacency(ctx))

    def kernels_out(self, x: Tensor, ctx: GraphContext) -> Tensor:
        r"""Outputs of all kernels :math:`Z^k`, ``[N, c+1, d]``."""
        edge_index, weight = self.adjacency(ctx)
        N = x.size(0)
        K, m, dh = self.kernels, self.heads, self.head_dim
        props = [x]
        for _ in range(self.hops):  # Â^k X, k = 1..c (loop over hops)
            props.append(propagate(props[-1], edge_index, weight))
        p = torch.stack(props)  # [K, N, d]
        q = torch.bmm(p, self.weight_q)  # [K, N, m d_h]
        k = torch.bmm(p, self.weight_k)
        v = torch.einsum('nd,kde->kne', x, self.weight_v)
        # [3, K, m, N, d_h]: the K m heads of all kernels in one attention
        # call over the nodes of each graph (key mask cached per batch).
        qkv = torch.stack([q, k, v]).view(3, K, N, m, dh).transpose(2, 3)
        z = node_attention(qkv, ctx, self.attn_dropout, self.training,
                           fused=self.fused)
        z = z.permute(2, 0, 1, 3).reshape(N, K, m * dh)  # [N, K, m d_h]
        return torch.einsum('nki,kid->nkd', z, self.weight_o)

    def fuse(self, z: Tensor, ctx: Optional[GraphContext] = None) -> Tensor:
        r"""``[N, c+1, d]`` -> ``[N, d]`` by the configured fusion."""
        if self.fusion == 'sum':
            return z.sum(dim=1)
        if self.fusion == 'mean':
            return z.mean(dim=1)
        if self.fusion == 'concat':
            return self.lin_fuse(z.reshape(z.size(0), -1))
        score = self.act(self.lin_fuse(z)) @ self.fuse_vec  # [N, c+1]
        alpha = torch.softmax(score, dim=1)
        if ctx is not None:
            ctx.log('mna/alpha', alpha)
        return (alpha.unsqueeze(-1) * z).sum(dim=1)

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext) -> Tuple[Tensor, None]:
        return self.fuse(self.kernels_out(x, ctx), ctx), None

    def extra_repr(self) -> str:
        return (f'dim={self.dim}, heads={self.heads}, head_dim={self.head_dim}, '
                f'hops={self.hops}, adj_norm={self.adj_norm}, '
                f'fusion={self.fusion}')
