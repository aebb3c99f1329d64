r"""Graph Transformer layer of Dwivedi & Bresson, *A Generalization of
Transformer Networks to Graphs*."""
import math
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn.inits import reset
from torch_geometric.utils import scatter, softmax

from graphgps_ext import branches
from graphgps_ext.branches import HeadsError
from graphgps_ext.layer.dropout import Dropout, dropout
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.hybrid import make_norm
from graphgps_ext.layer.norm import normalize

CLAMP = 5.0  # the authors' score clamp
EPS = 1e-6   # the authors' denominator epsilon


class GT(nn.Module):
    r"""Graph Transformer attention (Dwivedi & Bresson, eq. 4-5 and 9-18).

    *Node layer* (``edge_features=False``), per head :math:`k` of width
    :math:`d_k = d / H`:

    .. math::
        w_{ij}^k = \mathrm{softmax}_{j \in \mathcal N_i}\Big(
            \frac{Q^k h_i \cdot K^k h_j}{\sqrt{d_k}}\Big), \qquad
        \hat h_i = O_h \big\Vert_{k=1}^{H} \textstyle\sum_{j \in \mathcal N_i}
            w_{ij}^k V^k h_j

    *Edge-feature layer* (``edge_features=True``), per channel of head
    :math:`k`:

    .. math::
        \hat w_{ij}^k = \Big(\frac{Q^k h_i \odot K^k h_j}{\sqrt{d_k}}\Big)
            \odot E^k e_{ij}, \quad
        w_{ij}^k = \mathrm{softmax}_j\Big(\textstyle\sum_{c} \hat w_{ij,c}^k\Big),
        \quad \hat e_{ij} = O_e \big\Vert_{k=1}^{H} \hat w_{ij}^k

    and the edge stream of eq. 16-18 is updated inside the branch:
    :math:`\hat{\hat e} = \mathrm{Norm}(e + \hat e)`,
    :math:`e' = \mathrm{Norm}(\hat{\hat e} + W_{e,2}\,\mathrm{ReLU}(W_{e,1}
    \hat{\hat e}))` (``d -> 2d -> d``; without the residuals when
    ``residual=False``). The node residual, norm and FFN (eq. 6-8, 13-15) are
    the hybrid layer's.

    :math:`\mathcal N_i`: with ``full_graph=False`` (the paper's sparse graph)
    the sources :math:`j` of the edges :math:`j \to i` of ``ctx.edge_index``
    (no self-loop is added: a node attends to itself only if the data has a
    self-loop), using PyG's sparse ``softmax``/``scatter``; with
    ``full_graph=True`` every other node :math:`j \neq i` of the graph (the
    authors' complete graph has no self-loops), dense and masked. A node with
    no :math:`j` gets :math:`\hat h_i = O_h 0` (finite). The full graph has no
    features for non-adjacent pairs, so it works with the node layer only
    (the paper drops edge features there).

    :math:`Q, K, V, E` are bias-free, :math:`O_h, O_e` have biases (authors'
    code). Parity (``clamp_exp``): the weights are
    :math:`\exp(\mathrm{clamp}(s, -5, 5)) / (\sum_j \exp(\cdot) + 10^{-6})`;
    with ``no_eps`` the node layer divides without the :math:`10^{-6}`, as the
    authors' node layer (a node without neighbours gives NaN).

    Args:
        dim: width :math:`d` (divisible by ``heads``).
        heads: number of heads :math:`H`.
        full_graph: attend over all pairs of the graph instead of neighbours.
        edge_features: edge-feature layer with its edge stream.
        attn_dropout: dropout on the attention weights.
        dropout: dropout of the edge stream (before :math:`O_e`, in its FFN).
        norm: edge-stream norm, ``'batch'``, ``'layer'`` or ``'none'``.
        residual: edge-stream residual connections.
        clamp_exp: parity, clamped exponential normalised by its sum.
        no_eps: parity (with ``clamp_exp``, node layer), no epsilon.

    Shapes:
        ``x`` ``[N, d]``, ``edge_attr`` ``[E, d]`` (edge layer) ->
        ``([N, d], [E, d] | None)``.
    """

    def __init__(self, dim: int, heads: int = 8, full_graph: bool = False,
                 edge_features: bool = False, attn_dropout: float = 0.0,
                 dropout: float = 0.0, norm: str = 'batch', residual: bool = True,
                 clamp_exp: bool = False, no_eps: bool = False):
        super().__init__()
        if dim % heads != 0:
            raise HeadsError(f'GT: dim {dim} is not divisible by the number of '
                             f'heads {heads} (gt.dim_hidden / gt.n_heads)', dim, heads)
        if full_graph and edge_features:
            raise ValueError(
                'GT: the full-graph attention has no edge features for '
                'non-adjacent pairs (the paper drops them): set '
                'gtlayer.edge_features False or gtlayer.full_graph False')
        self.dim, self.heads, self.head_dim = dim, heads, dim // heads
        self.full_graph, self.edge_features = full_graph, edge_features
        # The full-graph attention runs on the dense layout (sizes of the
        # batch; see Transformer.static_shape).
        self.static_shape = not full_graph
        self.attn_dropout, self.dropout = attn_dropout, dropout
        self.residual = residual
        self.clamp_exp, self.no_eps = clamp_exp, no_eps
        self.lin_q = nn.Linear(dim, dim, bias=False)
        self.lin_k = nn.Linear(dim, dim, bias=False)
        self.lin_v = nn.Linear(dim, dim, bias=False)
        self.lin_o = nn.Linear(dim, dim)
        if edge_features:
            self.lin_e = nn.Linear(dim, dim, bias=False)
            self.lin_oe = nn.Linear(dim, dim)
            self.norm1_e = make_norm(norm, dim)
            self.ffn_e = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(),
                                       Dropout(dropout),
                                       nn.Linear(2 * dim, dim))
            self.norm2_e = make_norm(norm, dim)

    @classmethod
    def uses_edges(cls, cfg) -> bool:
        """The edge-feature layer reads and updates the edge stream."""
        return bool(cfg.gtlayer.edge_features)

    from_cfg = classmethod(branches.from_cfg)

    def reset_parameters(self):
        for child in self.children():
            reset(child)

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext) -> Tuple[Tensor, Optional[Tensor]]:
        N, H, dk = x.size(0), self.heads, self.head_dim
        # Q, K, V (bias-free) in one matmul.
        qkv = F.linear(x, torch.cat([self.lin_q.weight, self.lin_k.weight,
                                     self.lin_v.weight]))
        q, k, v = qkv.view(N, 3, H, dk).unbind(1)
        if self.full_graph:
            out = self._dense(q, k, v, ctx)
            return self.lin_o(out.reshape(N, self.dim)), None
        src, dst = ctx.edge_index
        if self.edge_features:
            if edge_attr is None or edge_attr.shape != (src.numel(), self.dim):
                raise ValueError(
                    'GT edge-feature layer needs edge features [E, d] '
                    f'(got {None if edge_attr is None else tuple(edge_attr.shape)}):'
                    ' enable an edge encoder (dataset.edge_encoder) or set '
                    'gtlayer.edge_features False')
            qk = q.index_select(0, dst) * k.index_select(0, src)
            w_hat = qk / math.sqrt(dk) * self.lin_e(edge_attr).view(-1, H, dk)
            score = w_hat.sum(dim=-1)
        else:
            qk = q.index_select(0, dst) * k.index_select(0, src)  # [E, H, d_k]
            score = qk.sum(dim=-1) / math.sqrt(dk)  # [E, H]
        out = self._sparse(score, v.index_select(0, src), dst, N, ctx)
        out = self.lin_o(out.reshape(N, self.dim))
        if not self.edge_features:
            return out, None
        e = self.lin_oe(dropout(w_hat.reshape(-1, self.dim), self.dropout,
                                self.training))
        e = normalize(self.norm1_e, edge_attr + e if self.residual else e,
                      ctx.edge_mask, ctx.real_edges)
        f = self.ffn_e(e)
        e = normalize(self.norm2_e, e + f if self.residual else f, ctx.edge_mask,
                      ctx.real_edges)
        return out, e

    def _sparse(self, score: Tensor, v_src: Tensor, dst: Tensor, N: int,
                ctx: GraphContext) -> Tensor:
        """Normalise ``score`` ``[E, H]`` over the incoming edges of each node
        and aggregate the messages ``v_src`` ``[E, H, d_k]`` -> ``[N, H, d_k]``."""
        if not self.clamp_exp:
            attn = softmax(score, dst, num_nodes=N)
            ctx.log('gt', attn)
            attn = dropout(attn, self.attn_dropout, self.training)
            return scatter(attn.unsqueeze(-1) * v_src, dst, dim=0, dim_size=N,
                           reduce='sum')
        ex = score.clamp(-CLAMP, CLAMP).exp()
        z = scatter(ex, dst, dim=0, dim_size=N, reduce='sum')  # [N, H]
        eps = 0.0 if (self.no_eps and not self.edge_features) else EPS
        ctx.log('gt', ex / (z[dst] + eps))
        ex = dropout(ex, self.attn_dropout, self.training)
        wv = scatter(ex.unsqueeze(-1) * v_src, dst, dim=0, dim_size=N,
                     reduce='sum')
        return wv / (z.unsqueeze(-1) + eps)

    def _dense(self, q: Tensor, k: Tensor, v: Tensor,
               ctx: GraphContext) -> Tensor:
        """All pairs ``j != i`` of each graph, on the dense layout."""
        layout = ctx.layout
        n = layout.n_max
        qd, kd, vd = (layout.to_dense(t) for t in (q, k, v))  # [B, n, H, d_k]
        score = torch.einsum('bihc,bjhc->bhij', qd, kd) / math.sqrt(self.head_dim)
        eye = torch.eye(n, dtype=torch.bool, device=score.device)
        valid = (layout.mask[:, None, :, None] & layout.mask[:, None, None, :]
                 & ~eye)  # [B, 1, n, n]
        if not self.clamp_exp:
            score = score.masked_fill(~valid, torch.finfo(score.dtype).min)
            # A row without any valid key (single-node graph) gets all zeros.
            attn = torch.softmax(score, dim=-1) * valid
            ctx.log('gt', attn)
            attn = dropout(attn, self.attn_dropout, self.training)
            out = torch.einsum('bhij,bjhc->bihc', attn, vd)
        else:
            ex = score.clamp(-CLAMP, CLAMP).exp() * valid
            z = ex.sum(dim=-1, keepdim=True)  # [B, H, n, 1]
            # Padding queries: add 1 so that no 0/0 reaches the gradients.
            z = z + (~layout.mask)[:, None, :, None].to(z.dtype)
            denom = z + (0.0 if self.no_eps else EPS)
            ctx.log('gt', ex / denom)
            ex = dropout(ex, self.attn_dropout, self.training)
            out = torch.einsum('bhij,bjhc->bihc', ex, vd) / denom.permute(0, 2, 1, 3)
        return layout.to_sparse(out)

    def extra_repr(self) -> str:
        return (f'dim={self.dim}, heads={self.heads}, '
                f'full_graph={self.full_graph}, '
                f'edge_features={self.edge_features}, '
                f'clamp_exp={self.clamp_exp}')
