r"""The one GPS-style hybrid layer that every model of this package stacks.

A layer composes up to three *branches* chosen by a config string
``"<local>+<global>+<external>"`` (e.g. ``"GatedGCN+Transformer+GEANet"``,
``"GCN+None+GEANet"``, ``"None+CSA+None"``), as in GEAET eq. 8-10 and GraphGPS:

.. math::
    X_M, E_M &= \mathrm{MPNN}(X, E, A) \\
    X_T      &= \mathrm{Global}(X) \quad (\text{Transformer, CSA, MNA, GT}) \\
    X_G, E_G &= \mathrm{GEANet}(X, E_M) \\
    X'       &= \mathrm{FFN}(X_M + X_T + X_G), \qquad E' = E_G

Each branch ``b`` gets its own dropout, residual and norm:

- post-norm (GraphGPS, GEAET, CSA, GT):
  :math:`h_b = \mathrm{Norm}_b(\mathrm{skip}_b(X) + \mathrm{Drop}(b(X)))`;
- pre-norm (MNA-GT eq. 11):
  :math:`h_b = \mathrm{skip}_b(X) + \mathrm{Drop}(b(\mathrm{Norm}_b(X)))`,

where :math:`\mathrm{skip}_b(X) = X` except where a branch defines its own
(MNA: :math:`\hat{A} X`). The branch outputs are summed and passed through a
two-layer FFN with its own residual and norm (post: ``Norm(h + FFN(h))``;
pre: ``h + FFN(Norm(h))``). Without the FFN (``ffn=False``) the layer output
is the sum of the normalised branches, :math:`X' = \sum_b h_b` (GEAET eq. 10
without its FFN); ``norm_without_ffn=True`` still applies the FFN's norm to
that sum, :math:`X' = \mathrm{Norm}(\sum_b h_b)`, as the GEAET authors' code
does with ``use_ffn: False`` (its ``norm2``): for a single branch two norms
back to back.

A branch that applies its own residual and dropout inside (GraphGPS's
``GatedGCNLayer``) is written here without them: :class:`~graphgps_ext.layer.gatedgcn.GatedGCN`
returns :math:`\mathrm{act}(\mathrm{Norm}_h(\cdot))` and this layer adds the
dropout, the residual and the branch norm, once each.

The edge stream is threaded through the branches in the order local, global,
external: a branch that returns new edge features replaces the stream for the
branches after it and for the next layer (GEANet receives :math:`E_M`).

**Branch protocol.** A branch is an ``nn.Module`` with

- ``forward(x [N, d], edge_attr [E, d_e] | None, ctx: GraphContext)
  -> (x_out [N, d], edge_attr_out [E, d_e] | None)``; ``None`` leaves the edge
  stream unchanged; any edge residual/norm is the branch's own business;
- optionally ``skip(x, ctx) -> [N, d]`` (the residual term, default ``x``);
- ``from_cfg(cfg, dim) -> Branch`` (class method) used by the network builder
  (for the package's branches :func:`graphgps_ext.branches.from_cfg`, which
  reads the options of the branch's catalogue entry); the constructor itself
  takes plain arguments so the branch is usable and testable without
  GraphGym.

Shapes: ``x`` is ``[N, d]`` for ``N`` nodes in the batch, ``edge_attr`` is
``[E, d]`` for ``E`` directed edges.
"""
from typing import Dict, Optional

from torch import Tensor, nn
from torch_geometric.nn import norm as pyg_norm
from torch_geometric.nn.inits import reset
from torch_geometric.nn.resolver import activation_resolver

from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.dropout import Dropout
from graphgps_ext.layer.norm import MaskedBatchNorm1d, normalize

BRANCH_KINDS = ('local', 'global', 'external')


def make_norm(kind: str, dim: int) -> nn.Module:
    """``'batch'`` -> BatchNorm1d (:class:`~graphgps_ext.layer.norm.MaskedBatchNorm1d`,
    which skips the padding rows of a static-shape batch), ``'layer'`` ->
    LayerNorm, ``'graph_layer'`` -> :class:`GraphLayerNorm`, ``'graphnorm'`` ->
    :class:`GraphNorm`, ``'none'`` -> Identity."""
    if kind == 'batch':
        return MaskedBatchNorm1d(dim)
    if kind == 'layer':
        return nn.LayerNorm(dim)
    if kind == 'graph_layer':
        return GraphLayerNorm(dim)
    if kind == 'graphnorm':
        return GraphNorm(dim)
    if kind in ('none', None):
        return nn.Identity()
    raise ValueError(f"unknown norm '{kind}': use 'batch', 'layer', "
                     "'graph_layer', 'graphnorm' or 'none'")


class GraphLayerNorm(pyg_norm.LayerNorm):
    r"""PyG's graph-wise LayerNorm (``mode='graph'``): for each graph
    :math:`G`, :math:`y_i = \gamma \odot (x_i - \mu_G) / \sqrt{\sigma_G^2 +
    \varepsilon} + \beta` with :math:`\mu_G, \sigma_G^2` the mean and variance
    over all nodes and channels of :math:`G` (``2 d`` parameters). The
    ``gt.layer_norm`` of GEAET's layer.

    ``forward(x, ctx)`` reads the graph ids ``ctx.batch``; with a static-shape
    batch the padding nodes form their own graphs, so the real graphs'
    statistics do not see them."""

    def __init__(self, dim: int):
        super().__init__(dim, mode='graph')

    def forward(self, x: Tensor, ctx: GraphContext) -> Tensor:
        return super().forward(x, ctx.batch, ctx.num_graphs)


class GraphNorm(pyg_norm.GraphNorm):
    r"""PyG's GraphNorm (Cai et al.): per graph and channel,
    :math:`y_i = \gamma \odot (x_i - \alpha \odot \mu_G) / \sigma_G + \beta`
    with a learned mean scale :math:`\alpha` (``3 d`` parameters). The
    ``gt.layer_norm`` of GraphGPS's layer. ``forward(x, ctx)`` as
    :class:`GraphLayerNorm`."""

    def forward(self, x: Tensor, ctx: GraphContext) -> Tensor:
        return super().forward(x, ctx.batch, ctx.num_graphs)


def _norm(norm: nn.Module, x: Tensor, ctx: GraphContext) -> Tensor:
    """``norm(x)`` for the nodes of ``ctx`` (graph-wise norms read the graph
    ids; batch norms skip the padding rows of a static-shape batch)."""
    if isinstance(norm, (GraphLayerNorm, GraphNorm)):
        return norm(x, ctx)
    return normalize(norm, x, ctx.node_mask, ctx.real_nodes)


class FeedForward(nn.Module):
    r"""Two-layer MLP :math:`W_2\,\mathrm{Drop}(\sigma(W_1 h))`, ``d -> m d -> d``."""

    def __init__(self, dim: int, mult: float = 2.0, act: str = 'relu',
                 dropout: float = 0.0):
        super().__init__()
        hidden = int(round(mult * dim))
        self.lin1 = nn.Linear(dim, hidden)
        self.lin2 = nn.Linear(hidden, dim)
        self.act = activation_resolver(act)
        self.dropout = Dropout(dropout)

    def reset_parameters(self):
        self.lin1.reset_parameters()
        self.lin2.reset_parameters()

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.lin2(self.dropout(self.act(self.lin1(x)))))


class HybridLayer(nn.Module):
    r"""Local + global + external branches, summed, then an FFN.

    Args:
        dim: hidden width ``d``.
        local, glob, external: branch modules or ``None`` (absent).
        norm: ``'batch'``, ``'layer'``, ``'graph_layer'``, ``'graphnorm'`` or
            ``'none'`` for every branch and the FFN.
        pre_norm: normalise before each block (MNA) instead of after it.
        residual: add the branch's skip term (``x`` by default).
        dropout: dropout on each branch output and inside the FFN.
        branch_dropout: ``{kind: rate}`` overriding ``dropout`` on the
            output of the branch ``kind`` (GEAET's per-branch rates).
        ffn: whether to apply the FFN block (off: the sum of the branches).
        norm_without_ffn: post-norm without FFN: still normalise the sum of
            the branches with the FFN's norm (GEAET's code; parity switch
            ``gt.parity_norm_without_ffn``).
        ffn_mult: FFN hidden width as a multiple of ``d``.
        act: FFN activation (PyG activation resolver name).
    """

    def __init__(self, dim: int, local: Optional[nn.Module] = None,
                 glob: Optional[nn.Module] = None,
                 external: Optional[nn.Module] = None, norm: str = 'batch',
                 pre_norm: bool = False, residual: bool = True,
                 dropout: float = 0.0, ffn: bool = True, ffn_mult: float = 2.0,
                 act: str = 'relu', norm_without_ffn: bool = False,
                 branch_dropout: Optional[Dict[str, float]] = None):
        super().__init__()
        branches = dict(zip(BRANCH_KINDS, (local, glob, external)))
        self.branches = nn.ModuleDict(
            {k: b for k, b in branches.items() if b is not None})
        if len(self.branches) == 0:
            raise ValueError('a hybrid layer needs at least one branch '
                             "(layer_type 'None+None+None' is empty)")
        self.norms = nn.ModuleDict(
            {k: make_norm(norm, dim) for k in self.branches})
        self.pre_norm = pre_norm
        self.residual = residual
        rates = dict(branch_dropout or {})
        self.dropouts = nn.ModuleDict(
            {k: Dropout(rates.get(k, dropout)) for k in self.branches})
        self.ffn = FeedForward(dim, ffn_mult, act, dropout) if ffn else None
        keep = ffn or (norm_without_ffn and not pre_norm)
        self.ffn_norm = make_norm(norm, dim) if keep else None

    def reset_parameters(self):
        """Re-initialise the branches, their norms and the FFN block."""
        for branch in self.branches.values():
            reset(branch)
        for norm in self.norms.values():
            reset(norm)
        if self.ffn is not None:
            self.ffn.reset_parameters()
        if self.ffn_norm is not None:
            reset(self.ffn_norm)

    def forward(self, x: Tensor, edge_attr: Optional[Tensor],
                ctx: GraphContext):
        out = None
        for kind, branch in self.branches.items():
            norm = self.norms[kind]
            h, e = branch(_norm(norm, x, ctx) if self.pre_norm else x,
                          edge_attr, ctx)
            h = self.dropouts[kind](h)
            if self.residual:
                skip = getattr(branch, 'skip', None)
                h = h + (skip(x, ctx) if skip is not None else x)
            if not self.pre_norm:
                h = _norm(norm, h, ctx)
            if e is not None:
                edge_attr = e
            out = h if out is None else out + h
        if self.ffn is not None:
            if self.pre_norm:
                out = out + self.ffn(_norm(self.ffn_norm, out, ctx))
            else:
                out = _norm(self.ffn_norm, out + self.ffn(out), ctx)
        elif self.ffn_norm is not None:
            out = _norm(self.ffn_norm, out, ctx)
        return out, edge_attr
