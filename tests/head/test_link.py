import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import Batch, Data

from graphgps_ext.head import HEADS
from graphgps_ext.head.link import InductiveLinkHead
from graphgps_ext.layer.context import GraphContext


def _graph(x, pairs, labels, index_key='edge_label_index'):
    x = torch.tensor(x, dtype=torch.float)
    n = x.size(0)
    src = torch.arange(n - 1)
    d = Data(x=x, edge_index=torch.stack([src, src + 1]), num_nodes=n)
    d[index_key] = torch.tensor(pairs, dtype=torch.long).t()
    d.edge_label = torch.tensor(labels)
    return d


def _toy(index_key='edge_label_index'):
    """Two graphs with 1-d features, so that s_ij = x_i x_j.

    A: x = (1, 4, 3, 2); positives (0,2), (0,1), (3,0); (1,2) negative.
    B: x = (1, 1, -1); positives (0,1), (2,0) (with ties in B).
    """
    a = _graph([[1.], [4.], [3.], [2.]], [[0, 2], [0, 1], [3, 0], [1, 2]],
               [1, 1, 1, 0], index_key)
    b = _graph([[1.], [1.], [-1.]], [[0, 1], [2, 0]], [1, 1], index_key)
    return a, b


def _identity_head(**kw):
    head = InductiveLinkHead(1, num_layers=1, **kw)
    with torch.no_grad():
        head.mlp.lins[0].weight.fill_(1.0)
        head.mlp.lins[0].bias.zero_()
    return head


def _run(head, graphs):
    batch = Batch.from_data_list(list(graphs))
    pred, true = head(batch.x, batch, GraphContext.from_batch(batch))
    return batch, pred, true


# Hand-computed ranks (raw, filtered), queries in data order:
#  A (0,2): row 0 ~ x_j = (1,4,3,2); raw: only j'=1 beats 3 -> 2; filtered
#           drops the other positive 1 -> 1   (filtered != raw)
#  A (0,1): 4 is the best -> 1, 1
#  A (3,0): row 3 = (2,8,6,4): 8, 6, 4 beat 2 -> 4, 4
#  B (0,1): row 0 = (1,1,-1): self ties with 1 -> optimistic 1, pessimistic 2
#  B (2,0): row 2 = (-1,-1,1): 1 beats, node 1 ties -> 2 / 3
OPTIMISTIC = [[2, 1], [1, 1], [4, 4], [1, 1], [2, 2]]
PESSIMISTIC = [[2, 1], [1, 1], [4, 4], [2, 2], [3, 3]]


@pytest.mark.parametrize('key', ['edge_label_index', 'edge_index_labeled'])
def test_ranks_mrr_hits_against_hand_values(key):
    head = _identity_head()
    batch, pred, true = _run(head, _toy(key))
    ranks, weight = head.metric_inputs(pred, true, batch)
    assert ranks.tolist() == OPTIMISTIC
    rr = 1.0 / ranks.double()
    assert rr[:, 0].mean().item() == pytest.approx(0.65)   # MRR raw
    assert rr[:, 1].mean().item() == pytest.approx(0.75)   # MRR filtered
    hits = {k: (ranks <= k).double().mean(0).tolist() for k in (1, 3, 10)}
    assert hits[1] == pytest.approx([0.4, 0.6])
    assert hits[3] == pytest.approx([0.8, 0.8])
    assert hits[10] == pytest.approx([1.0, 1.0])
    # LRGB's per-graph average via the weights: raw (7/12 + 3/4) / 2.
    assert weight.tolist() == pytest.approx([1 / 3] * 3 + [1 / 2] * 2)
    macro = ((weight[:, None] * rr).sum(0) / weight.sum()).tolist()
    assert macro == pytest.approx([(7 / 12 + 3 / 4) / 2, 0.75])


def test_pessimistic_ties_and_self_filter():
    head = _identity_head(ties='pessimistic')
    batch, pred, true = _run(head, _toy())
    assert head.metric_inputs(pred, true, batch)[0].tolist() == PESSIMISTIC
    head = _identity_head(filter_self=True)
    batch, pred, true = _run(head, _toy())
    ranks = head.metric_inputs(pred, true, batch)[0]
    assert ranks[:, 0].tolist() == [r for r, _ in OPTIMISTIC]
    assert ranks[:, 1].tolist() == [1, 1, 3, 1, 1]


def _lrgb_reference(batch, head):
    """LRGB's compute_mrr (raw and filtered), one graph at a time."""
    raw, filt = [], []
    h = head.mlp(batch.x)
    for data_h, data in zip(torch.split(h, batch.ptr.diff().tolist()),
                            batch.to_data_list()):
        pred = data_h @ data_h.t()
        pos = data.edge_label_index[:, data.edge_label == 1]
        pred_pos = pred[pos[0], pos[1]]
        mask = torch.ones(pos.size(1), data.num_nodes, dtype=torch.bool)
        mask[torch.arange(pos.size(1)), pos[1]] = False
        neg = pred[pos[0]][mask].view(pos.size(1), -1)
        for negs, out in ((neg, raw), (None, filt)):
            if negs is None:
                masked = pred.clone()
                masked[pos[0], pos[1]] -= float('inf')
                negs = masked[pos[0]]
            y = torch.cat([pred_pos.view(-1, 1), negs], dim=1)
            order = torch.argsort(y, dim=1, descending=True)
            out.append(torch.nonzero(order == 0)[:, 1] + 1)
    return torch.cat(raw), torch.cat(filt)


def test_ranks_match_lrgb_on_random_graphs():
    torch.manual_seed(0)
    graphs = []
    for n in (5, 9, 2, 7):
        pairs = torch.randint(0, n, (6, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]].unique(dim=0)
        labels = (torch.rand(len(pairs)) < 0.7).long()
        labels[0] = 1
        graphs.append(Data(x=torch.randn(n, 4), edge_index=torch.zeros(2, 0, dtype=torch.long),
                           edge_label_index=pairs.t(), edge_label=labels))
    head = InductiveLinkHead(4, num_layers=2)
    batch, pred, true = _run(head, graphs)
    ranks = head.metric_inputs(pred, true, batch)[0]
    raw, filt = _lrgb_reference(batch, head)
    assert torch.equal(ranks[:, 0], raw) and torch.equal(ranks[:, 1], filt)


def test_sampled_negatives():
    torch.manual_seed(1)
    a = _graph(torch.randn(6, 3).tolist(), [[0, 1], [0, 2], [4, 5]], [1, 1, 1])
    b = _graph(torch.randn(5, 3).tolist(), [[3, 1]], [1])
    head = InductiveLinkHead(3, num_layers=1, num_neg=2)
    batch, pred, true = _run(head, [a, b])
    Q = 4
    assert pred.shape == true.shape == (Q + 2 * Q, )
    assert true[:Q].eq(1).all() and true[Q:].eq(0).all()
    h = head.mlp(batch.x)
    offs = [0, 0, 0, 6]
    heads_ = [0, 0, 4, 3]
    positives = [{1, 2}, {1, 2}, {5}, {1}]
    sizes = [6, 6, 6, 5]
    neg = pred[Q:].view(Q, 2)
    for q in range(Q):
        i = offs[q] + heads_[q]
        allowed = {j for j in range(sizes[q]) if j not in positives[q]}
        scores = {j: (h[i] * h[offs[q] + j]).sum() for j in allowed}
        picked = [min(allowed, key=lambda j: abs(scores[j] - s)) for s in neg[q]]
        for j, s in zip(picked, neg[q]):
            assert torch.allclose(scores[j], s, atol=1e-6)
        assert picked[0] != picked[1]  # without replacement


def test_sampled_skips_missing_candidates():
    # Node 0 of a 2-node graph: its only partner is positive, only itself is
    # a candidate (1 negative instead of 2); with filter_self none at all.
    g = _graph([[1.], [2.]], [[0, 1]], [1])
    _, pred, true = _run(_identity_head(num_neg=2), [g])
    assert pred.tolist() == [2.0, 1.0] and true.tolist() == [1.0, 0.0]
    _, pred, true = _run(_identity_head(filter_self=True), [g])
    assert pred.tolist() == [2.0] and true.tolist() == [1.0]


def test_labeled_all_and_query_ce_modes():
    graphs = _toy()
    _, pred, true = _run(_identity_head(train_mode='labeled'), graphs)
    # s = x_i x_j for (0,2) (0,1) (3,0) (1,2) | (0,1) (2,0)
    assert pred.tolist() == [3., 4., 2., 12., 1., -1.]
    assert true.tolist() == [1., 1., 1., 0., 1., 1.]
    _, pred, true = _run(_identity_head(train_mode='all'), graphs)
    assert pred.numel() == 4 * 3 + 3 * 2 and true.sum() == 5
    _, pred, true = _run(_identity_head(train_mode='query_ce'), graphs)
    assert pred.shape == (5, 4) and true.tolist() == [2, 1, 0, 1, 0]
    low = torch.finfo(pred.dtype).min
    # Query A (0,2): candidates 0, 3 and the target 2; positive 1 removed.
    assert pred[0].tolist() == [1., low, 3., 2.]
    # Query B (0,1): nodes 0..2 of B, padding column removed.
    assert pred[3].tolist() == [1., 1., -1., low]
    assert torch.isfinite(F.cross_entropy(pred, true))


@pytest.mark.parametrize('mode', ['sampled', 'labeled', 'all', 'query_ce'])
def test_gradients_reach_every_parameter(mode, cfg, make_task):
    cfg.head.link_train = mode
    cfg.head.layers = 2
    head = HEADS['inductive_link'].from_cfg(cfg, make_task('ranking', 1), 1)
    _, pred, true = _run(head, _toy())
    if mode == 'query_ce':
        loss = F.cross_entropy(pred, true)
    else:
        loss = F.binary_cross_entropy_with_logits(pred, true)
    loss.backward()
    for name, p in head.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_independent_of_batch():
    torch.manual_seed(0)
    head = InductiveLinkHead(1, num_layers=2, train_mode='query_ce',
                             score='cosine').eval()
    a, b = _toy()
    batch, pred, true = _run(head, [a, b])
    alone, pred_a, true_a = _run(head, [a])
    assert torch.equal(head.metric_inputs(pred, true, batch)[0][:3],
                       head.metric_inputs(pred_a, true_a, alone)[0])
    assert torch.allclose(pred[:3], pred_a, atol=1e-6)
    _, pred_b, _ = _run(head, [b])
    assert torch.allclose(pred[3:, :3], pred_b, atol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match='head.link_train'):
        InductiveLinkHead(4, train_mode='contrastive')
    with pytest.raises(ValueError, match='head.link_ties'):
        InductiveLinkHead(4, ties='random')
    head = InductiveLinkHead(1)
    g = Data(x=torch.ones(2, 1), edge_index=torch.zeros(2, 0, dtype=torch.long))
    with pytest.raises(ValueError, match='edge_label_index'):
        _run(head, [g])
    batch = Batch.from_data_list([g])
    with pytest.raises(ValueError, match='forward'):
        head.metric_inputs(None, None, batch)
