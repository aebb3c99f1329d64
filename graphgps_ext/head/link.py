r"""Inductive link head (``inductive_link``: PCQM-Contact, LRGB).

Data: each graph carries its labelled node pairs in ``edge_label_index``
``[2, P]`` with ``edge_label`` ``[P]`` (PyG's ``LRGBDataset``; LRGB's and
GraphGPS's own loader name the index ``edge_index_labeled``, read as a
fallback).  Pairs with label 1 are the positives (contacts, both directions);
a missing ``edge_label`` means every listed pair is positive.  Both index
names contain ``index``, so PyG's collation offsets them like ``edge_index``.
"""
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from graphgps_ext.head.base import HeadMLP, mlp_kwargs

TRAIN_MODES = ('sampled', 'labeled', 'all', 'query_ce')


def labeled_pairs(batch) -> Tuple[Tensor, Tensor]:
    """``(index [2, P], label [P])`` of the batch's labelled node pairs."""
    index = getattr(batch, 'edge_label_index', None)
    if index is None:
        index = getattr(batch, 'edge_index_labeled', None)
    if index is None:
        raise ValueError('inductive_link head needs the labelled pairs in '
                         'batch.edge_label_index [2, P] (PyG LRGBDataset) or '
                         'batch.edge_index_labeled (LRGB loader)')
    label = getattr(batch, 'edge_label', None)
    if label is None:
        label = torch.ones(index.size(1), device=index.device)
    return index, label


class InductiveLinkHead(nn.Module):
    r"""Per-node MLP, then dot-product scores of node pairs of the same graph
    (LRGB's ``inductive_edge`` head with ``edge_decoding: dot``).

    .. math::
        h_i = \mathrm{MLP}(x_i), \qquad s_{ij} = h_i^\top h_j
        \quad (\text{or } \cos(h_i, h_j))

    All scores of a graph are computed at once as a dense masked matrix
    ``S = H H^T`` of shape ``[B, n_max, n_max]`` (``H = to_dense(h)``).

    **Training signal** (``train_mode``), ``pred``/``true`` for the loss:

    - ``'sampled'`` (default, LRGB's structured negative sampling): every
      positive ``(i, j)`` plus ``num_neg`` negatives ``(i, j')`` drawn
      uniformly without replacement among the nodes ``j'`` of the graph that
      are not positives of ``i`` (``i`` itself allowed, as in LRGB), redrawn
      at every forward pass. ``pred [Q + Q_neg]`` logits, ``true`` 1/0 float;
      loss ``bce``.
    - ``'labeled'``: the listed pairs and their ``edge_label`` (for data that
      stores negatives); loss ``bce``.
    - ``'all'``: every ordered pair ``i != j`` of every graph (LRGB's
      ``complete_neg_transform``); loss ``bce``.
    - ``'query_ce'``: per positive ``(i, j)``, logits ``[Q, n_max]`` over the
      nodes of the graph with the other positives of ``i`` removed,
      ``true = j`` ``[Q]``; loss ``cross_entropy``.

    **Metrics** (:meth:`metric_inputs`): for every positive pair ``(i, j)`` (a
    query), the rank of :math:`s_{ij}` among the scores :math:`s_{ij'}` of
    candidates ``j'`` of the graph of ``i``:

    .. math::
        r^{raw} = 1 + |\{j' \ne j : s_{ij'} > s_{ij}\}|, \qquad
        r^{filt} = 1 + |\{j' \notin \mathrm{Pos}(i) : s_{ij'} > s_{ij}\}|

    (LRGB's ``compute_mrr``: raw candidates are all nodes but ``j``, ``i``
    itself included; filtered ones drop every other positive of ``i``, and
    with ``filter_self`` also ``i`` itself). ``ties='pessimistic'`` counts
    ``>=`` instead of ``>``. MRR is the mean of ``1/r``, Hits@k the share of
    ``r <= k``.

    Args:
        dim_in: node width ``d`` (the MLP keeps it: ``d -> d``).
        score: ``'dot'`` or ``'cosine'``.
        train_mode: one of ``'sampled'``, ``'labeled'``, ``'all'``,
            ``'query_ce'``.
        num_neg: negatives per positive for ``'sampled'``.
        ties: ``'optimistic'`` or ``'pessimistic'``.
        filter_self: drop ``(i, i)`` from the filtered candidates, the sampled
            negatives and the ``query_ce`` candidates.
        **mlp: :class:`~graphgps_ext.head.base.HeadMLP` options.
    """

    #: Kernel shapes follow the labelled pairs of the batch (``query_ce``'s
    #: ``[Q, n_max]`` logits, the labelled pairs' rows), not only a
    #: static-shape batch's capacity: under ``torch.compile`` such a model
    #: keeps dynamic shapes.
    static_shape = False

    def __init__(self, dim_in: int, score: str = 'dot',
                 train_mode: str = 'sampled', num_neg: int = 2,
                 ties: str = 'optimistic', filter_self: bool = False, **mlp):
        super().__init__()
        if score not in ('dot', 'cosine'):
            raise ValueError(f"unknown link score '{score}': use 'dot' or "
                             "'cosine' (head.link_score)")
        if train_mode not in TRAIN_MODES:
            raise ValueError(f"unknown link training mode '{train_mode}': use "
                             f"one of {', '.join(TRAIN_MODES)} (head.link_train)")
        if ties not in ('optimistic', 'pessimistic'):
            raise ValueError(f"unknown tie rule '{ties}': use 'optimistic' or "
                             "'pessimistic' (head.link_ties)")
        if num_neg < 1:
            raise ValueError(f'head.link_num_neg must be >= 1, got {num_neg}')
        self.score = score
        self.train_mode = train_mode
        self.num_neg = num_neg
        self.ties = ties
        self.filter_self = filter_self
        self.mlp = HeadMLP(dim_in, dim_in, **mlp)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'InductiveLinkHead':
        h = cfg.head
        return cls(dim, score=h.link_score, train_mode=h.link_train,
                   num_neg=h.link_num_neg, ties=h.link_ties,
                   filter_self=h.link_filter_self, **mlp_kwargs(cfg, 'node'))

    def reset_parameters(self):
        self.mlp.reset_parameters()

    #: Rows of labelled (real) pairs: a static-shape batch needs no cut.
    output_rows = 'pairs'

    def scores(self, x: Tensor, ctx) -> Tensor:
        """Dense pair scores ``[B, n_max, n_max]`` (padding rows/cols 0)."""
        h = self.mlp(x)
        if self.score == 'cosine':
            h = F.normalize(h, dim=-1)
        H = ctx.layout.to_dense(h)
        return H @ H.transpose(1, 2)

    def forward(self, x: Tensor, batch, ctx):
        layout = ctx.layout
        n = layout.n_max
        S = self.scores(x, ctx)
        index, label = labeled_pairs(batch)
        b, i, j = layout.pair_index(index[:, label == 1])
        # Dense positive mask P[b, i, j] and the per-query candidate masks.
        pos = torch.zeros(layout.num_graphs * n * n, dtype=torch.bool,
                          device=S.device)
        pos[(b * n + i) * n + j] = True
        pos = pos.view(-1, n, n)
        cols = torch.arange(n, device=S.device).unsqueeze(0)
        valid = layout.mask[b]                      # [Q, n]
        rows = S[b, i]                              # [Q, n]
        s_pos = S[b, i, j]                          # [Q]
        cand_filt = valid & ~pos[b, i]
        if self.filter_self:
            cand_filt = cand_filt & (cols != i.unsqueeze(1))

        with torch.no_grad():
            r, s = rows.detach(), s_pos.detach().unsqueeze(1)
            better = r > s if self.ties == 'optimistic' else r >= s
            raw = 1 + (better & valid & (cols != j.unsqueeze(1))).sum(1)
            filt = 1 + (better & cand_filt).sum(1)
            batch.link_ranks = torch.stack([raw, filt], dim=1)
            count = torch.bincount(b, minlength=layout.num_graphs)
            batch.link_query_weight = 1.0 / count[b].to(S.dtype)

        if self.train_mode == 'sampled':
            keys = torch.rand(rows.shape, device=S.device)
            keys = keys.masked_fill(~cand_filt, -1.0)
            top, neg = keys.topk(min(self.num_neg, n), dim=1)
            s_neg = rows.gather(1, neg)[top >= 0]
            pred = torch.cat([s_pos, s_neg])
            true = torch.cat([s_pos.new_ones(s_pos.numel()),
                              s_neg.new_zeros(s_neg.numel())])
        elif self.train_mode == 'labeled':
            lb, li, lj = layout.pair_index(index)
            pred = S[lb, li, lj]
            true = label.to(S.dtype)
        elif self.train_mode == 'all':
            pairs = layout.mask.unsqueeze(2) & layout.mask.unsqueeze(1)
            pairs = pairs & ~torch.eye(n, dtype=torch.bool, device=S.device)
            if ctx.graph_mask is not None:  # not the static-shape padding
                pairs = pairs & ctx.graph_mask.view(-1, 1, 1)
            pred = S[pairs]
            true = pos[pairs].to(S.dtype)
        else:  # query_ce
            cand = cand_filt | (cols == j.unsqueeze(1))
            pred = rows.masked_fill(~cand, torch.finfo(S.dtype).min)
            true = j
        return pred, true

    def metric_inputs(self, pred: Tensor, true: Tensor, batch):
        r"""``(ranks [Q, 2], weight [Q])`` of the last forward pass on ``batch``.

        ``ranks[:, 0]`` is the raw rank, ``ranks[:, 1]`` the filtered rank of
        each positive pair (long, ``>= 1``). ``weight`` is ``1 / Q_g`` with
        ``Q_g`` the number of positives of the query's graph: the plain mean
        of ``1/r`` over queries is the micro-averaged MRR, while
        ``sum(weight / r) / sum(weight)`` is LRGB's per-graph average.
        """
        ranks = getattr(batch, 'link_ranks', None)
        if ranks is None:
            raise ValueError('metric_inputs needs the batch passed through '
                             'forward() of this inductive_link head')
        return ranks, batch.link_query_weight
