r"""Graph external attention (GEA) and the GEANet branch (GEAET paper, §3.1)."""
from typing import Optional, Tuple

import torch
from torch import Tensor, nn
from torch_geometric.nn.inits import reset
from torch_geometric.utils import scatter

from graphgps_ext import branches
from graphgps_ext.branches import HeadsError
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.hybrid import make_norm
from graphgps_ext.layer.norm import normalize


def group_log_softmax(src: Tensor, group: Tensor, num_groups: int) -> Tensor:
    r"""Log-softmax of ``src [M, *]`` over the rows of each group.

    :math:`\log \hat\alpha_{ik} = s_{ik} - \log\sum_{j:\,g(j)=g(i)} \exp s_{jk}`,
    computed with a per-group max shift (PyG ``scatter``), so it never
    underflows. ``group [M]`` gives each row's group in ``0..num_groups-1``.
    """
    shift = scatter(src.detach(), group, 0, dim_size=num_groups, reduce='amax')
    shifted = src - shift.index_select(0, group)
    denom = scatter(shifted.exp(), group, 0, dim_size=num_groups, reduce='sum')
    return shifted - denom.log().index_select(0, group)


def double_norm(scores: Tensor, group: Tensor, num_groups: int) -> Tensor:
    r"""Double normalisation of GEAET eq. 3 for ``scores [M, H, S]``.

    .. math::
        \hat\alpha_{ik} = \frac{\exp \tilde\alpha_{ik}}
            {\sum_{j \in G(i)} \exp \tilde\alpha_{jk}}, \qquad
        \alpha_{ik} = \frac{\hat\alpha_{ik}}{\sum_{k'} \hat\alpha_{ik'}}

    (softmax over the rows ``j`` of the same group ``G(i)`` for every head and
    slot, then L1 over the slots ``k``). The L1 step is taken as a softmax over
    slots of :math:`\log\hat\alpha`, which is the same quantity but cannot
    divide 0 by 0 when every :math:`\hat\alpha_{ik}` of a row underflows.
    """
    return group_log_softmax(scores, group, num_groups).softmax(dim=-1)


class GEANet(nn.Module):
    r"""Graph external attention network: the external branch of GEAET.

    Channels are split into :math:`H` heads of width :math:`d_h = d / H`;
    every head uses the same external units (GEAET eq. 5). For nodes
    (eq. 2-5), with :math:`\tilde X = X U_s` (shared unit, eq. 4):

    .. math::
        A^{(h)} &= \mathrm{norm}\big(\tilde X^{(h)} U_{nk}^\top\big)
            \in \mathbb{R}^{n \times S} \\
        X_G &= \mathrm{Concat}\big(A^{(1)} U_{nv}, \dots,
            A^{(H)} U_{nv}\big)\, W_o \in \mathbb{R}^{n \times d}

    and for edges, with their own units :math:`U_{ek}, U_{ev}`, projection
    :math:`W_{eo}` and the same :math:`U_s`:

    .. math::
        E_G = \mathrm{Norm}_e\Big(E + \mathrm{Concat}_h\big(
            \mathrm{norm}(\tilde E^{(h)} U_{ek}^\top)\, U_{ev}\big)\, W_{eo}\Big)

    ``norm`` is the double normalisation of eq. 3 (:func:`double_norm`): a
    softmax over the nodes (edges) **of each graph** for every slot, then an
    L1 normalisation over the :math:`S` slots of every node (edge). So, in
    eval mode, a graph's output does not depend on the other graphs of its
    mini-batch. :math:`U_{nk}, U_{nv}, U_{ek}, U_{ev} \in \mathbb{R}^{S
    \times d_h}`; :math:`U_s \in \mathbb{R}^{d \times d}` applied before the
    head split (eq. 4; ``shared_width='full'``) or
    :math:`\in \mathbb{R}^{d_h \times d_h}` applied to every head
    (``'head'``). The node skip connection of GEANet and its norm are applied
    by :class:`~graphgps_ext.layer.hybrid.HybridLayer`; the edge skip
    connection is applied here (``E_G`` replaces the edge stream, eq. 10).

    Unit switches (GEAET Table 4): without the node unit the branch returns
    zeros for the nodes (the hybrid layer then contributes only its skip
    term) and only updates edges; without the edge unit it returns ``None``
    for the edges (the stream is left unchanged); without the shared unit
    :math:`U_s = I`. Table 4's "none" row is the external branch ``None``.

    Parity switches (the authors' public code; all off by default):

    - ``batch_softmax``: the slot softmax runs over all nodes (edges) of the
      mini-batch, so a graph's output depends on its batch-mates;
    - ``unit_bias``: the units (and :math:`U_s`) are affine maps with biases;
    - ``out_proj=False``: no :math:`W_o` / :math:`W_{eo}`;
    - ``strided_edge_heads``: edge head ``h`` takes channels
      ``h, h+H, h+2H, ...`` and the outputs are concatenated head by head,
      i.e. the channel permutation is not undone;
    - ``edge_skip=False``: :math:`E_G` is the attention output alone (no skip).

    "S = d/H" (the authors' unit size) is ``num_slots=dim // n_heads``.

    Args:
        dim: hidden width :math:`d` of nodes and edges.
        n_heads: heads :math:`H` (must divide ``dim``).
        num_slots: slots :math:`S` of every external unit.
        node_unit, edge_unit, shared_unit: use :math:`U_{nk}, U_{nv}` /
            :math:`U_{ek}, U_{ev}` / :math:`U_s`.
        shared_width: ``'full'`` or ``'head'`` (see above).
        edge_norm: ``'batch'``, ``'layer'`` or ``'none'`` on the new edges.
        batch_softmax, unit_bias, out_proj, strided_edge_heads, edge_skip:
            see the parity switches above.

    Shapes: ``x [N, d]``, ``edge_attr [E, d]`` ->
    ``(x_out [N, d], edge_attr_out [E, d] | None)``. Cost
    :math:`O((N + E)\, S\, d)`. Attention maps :math:`\alpha` ``[N, H, S]`` /
    ``[E, H, S]`` are offered to ``ctx.log('gea/node' | 'gea/edge', ...)``,
    and the per-slot softmax over each graph's nodes :math:`\hat\alpha`
    ``[N, H, S]`` (before the L1 step) to ``ctx.log('gea/node_col', ...)``.
    """

    def __init__(self, dim: int, n_heads: int = 4, num_slots: int = 16,
                 node_unit: bool = True, edge_unit: bool = True,
                 shared_unit: bool = True, shared_width: str = 'full',
                 edge_norm: str = 'none', batch_softmax: bool = False,
                 unit_bias: bool = False, out_proj: bool = True,
                 strided_edge_heads: bool = False, edge_skip: bool = True):
        super().__init__()
        if dim % n_heads:
            raise HeadsError(f'GEANet: hidden width {dim} is not divisible by '
                             f'gea.n_heads={n_heads}; change one of them', dim, n_heads)
        if num_slots < 1:
            raise ValueError(f'GEANet: gea.num_slots must be >= 1, got {num_slots}')
        if not (node_unit or edge_unit):
            raise ValueError(
                'GEANet without node and edge units does nothing: set '
                "gea.node_unit or gea.edge_unit, or use 'None' as the external "
                "branch in gt.layer_type (GEAET Table 4, row 'none')")
        if shared_width not in ('full', 'head'):
            raise ValueError(f"GEANet: shared_width must be 'full' or 'head', "
                             f'got {shared_width!r}')
        self.dim, self.n_heads, self.num_slots = dim, n_heads, num_slots
        self.head_dim = dim // n_heads
        self.shared_width = shared_width
        self.batch_softmax = batch_softmax
        self.strided_edge_heads = strided_edge_heads
        self.edge_skip = edge_skip
        dh, S = self.head_dim, num_slots

        def unit_pair():
            # key: d_h -> S (weight = U_k [S, d_h]); value: S -> d_h
            # (weight = U_v^T, so that A U_v = value(A)).
            return (nn.Linear(dh, S, bias=unit_bias),
                    nn.Linear(S, dh, bias=unit_bias))

        def out_lin():
            return nn.Linear(dim, dim, bias=False) if out_proj else None

        self.node_key = self.node_value = self.node_out = None
        if node_unit:
            self.node_key, self.node_value = unit_pair()
            self.node_out = out_lin()
        self.edge_key = self.edge_value = self.edge_out = self.edge_norm = None
        if edge_unit:
            self.edge_key, self.edge_value = unit_pair()
            self.edge_out = out_lin()
            self.edge_norm = make_norm(edge_norm, dim)
        self.shared = None
        if shared_unit:
            width = dim if shared_width == 'full' else dh
            self.shared = nn.Linear(width, width, bias=unit_bias)
        self.reset_parameters()

    @classmethod
    def uses_edges(cls, cfg) -> bool:
        """The edge unit (eq. 4) reads and updates the edge stream."""
        return bool(cfg.gea.edge_unit)

    from_cfg = classmethod(branches.from_cfg)

    def reset_parameters(self):
        for child in self.children():
            reset(child)

    def _share(self, h: Tensor) -> Tensor:
        """``[M, d]`` -> ``[M, H, d_h]``: apply ``U_s`` and split heads."""
        M = h.size(0)
        if self.shared is not None and self.shared_width == 'full':
            h = self.shared(h)
        return h.view(M, self.n_heads, self.head_dim)

    def _attend(self, h: Tensor, key: nn.Linear, value: nn.Linear,
                group: Tensor, num_groups: int,
                mask: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Tensor]:
        r"""Heads ``[M, H, d_h]`` -> (outputs ``[M, H, d_h]``, maps
        :math:`\alpha` ``[M, H, S]``, :math:`\log\hat\alpha` ``[M, H, S]``).
        ``mask`` (``[M]``, static-shape padding): the batch-wide softmax
        normalises over the real rows only (padding rows get finite values
        normalised by the same sum)."""
        if self.shared is not None and self.shared_width == 'head':
            h = self.shared(h)
        if self.batch_softmax and mask is not None:
            score = key(h)
            real = mask.view((-1, ) + (1, ) * (score.dim() - 1))
            log_col = score - torch.where(real, score, float('-inf')).logsumexp(
                dim=0, keepdim=True)
        elif self.batch_softmax:  # one group: the whole mini-batch
            log_col = key(h).log_softmax(dim=0)
        else:
            log_col = group_log_softmax(key(h), group, num_groups)
        attn = log_col.softmax(dim=-1)  # = double_norm(key(h), ...) (eq. 3)
        return value(attn), attn, log_col

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext):
        N = x.size(0)
        if self.node_key is not None:
            h, attn, log_col = self._attend(self._share(x), self.node_key,
                                            self.node_value, ctx.batch,
                                            ctx.num_graphs, ctx.node_mask)
            ctx.log('gea/node', attn)
            if ctx.record is not None:
                ctx.log('gea/node_col', log_col.exp())
            x_out = h.reshape(N, self.dim)
            if self.node_out is not None:
                x_out = self.node_out(x_out)
        else:
            x_out = torch.zeros_like(x)

        if self.edge_key is None:
            return x_out, None
        if edge_attr is None:
            raise ValueError(
                'GEANet with gea.edge_unit needs edge features but the batch '
                'has none: enable an edge encoder (e.g. DummyEdge for datasets '
                'without edge features) or set gea.edge_unit False')
        E = edge_attr.size(0)
        h = self._share(edge_attr)
        if self.strided_edge_heads:
            # Head k takes channels k, k+H, ... (authors' reshape(E, -1, H)).
            h = h.reshape(E, self.head_dim, self.n_heads).transpose(1, 2)
        edge_graph = ctx.cached('edge_batch', lambda: ctx.batch[ctx.edge_index[0]])
        h, attn, _ = self._attend(h, self.edge_key, self.edge_value,
                                  edge_graph, ctx.num_graphs, ctx.edge_mask)
        ctx.log('gea/edge', attn)
        e_out = h.reshape(E, self.dim)
        if self.edge_out is not None:
            e_out = self.edge_out(e_out)
        if self.edge_skip:
            e_out = edge_attr + e_out
        return x_out, normalize(self.edge_norm, e_out, ctx.edge_mask,
                                 ctx.real_edges)

    def extra_repr(self) -> str:
        return (f'dim={self.dim}, heads={self.n_heads}, slots={self.num_slots}, '
                f'batch_softmax={self.batch_softmax}')
