import pytest
import torch
import torch.nn.functional as F

from graphgps_ext.head import HEADS
from graphgps_ext.head.code2 import Code2SequenceHead
from graphgps_ext.metrics import METRICS

subtoken_f1 = METRICS['f1_subtoken']

V, L = 10, 5  # 8 subtokens w0..w7, __UNK__ = 8, __EOS__ = 9
UNK, EOS = 8, 9
# Hand example: (predicted ids, target y_arr, F1)
#  g0: pred {1, 2}, true {1, 4}            -> P 1/2, R 1/2, F1 0.5
#  g1: pred {UNK, 5}, true {UNK, 5, 6}     -> UNK never matches: P 1/2, R 1/3, F1 0.4
#  g2: pred {} (EOS first), true {3}       -> F1 0
#  g3: pred {7} (repeated), true {7}       -> F1 1
PRED = torch.tensor([[1, 2, 2, EOS, 3], [UNK, 5, EOS, EOS, EOS],
                     [EOS, 4, 4, 4, 4], [7, 7, 7, 7, 7]])
TRUE = torch.tensor([[1, 4, EOS, EOS, EOS], [UNK, 5, 6, EOS, EOS],
                     [3, EOS, EOS, EOS, EOS], [7, EOS, EOS, EOS, EOS]])
F1_HAND = (0.5 + 0.4 + 0.0 + 1.0) / 4


def _logits(ids):
    return F.one_hot(ids.reshape(-1), V).float() * 5.0


def test_metric_inputs_and_f1_against_hand_values():
    head = Code2SequenceHead(8, V, L)
    pred_m, true_m = head.metric_inputs(_logits(PRED), TRUE.reshape(-1), None)
    assert torch.equal(pred_m[0], torch.tensor([1, 2, 2, -1, -1]))
    assert torch.equal(pred_m[1], torch.tensor([V, 5, -1, -1, -1]))  # UNK -> V
    assert torch.equal(true_m[2], torch.tensor([3, -1, -1, -1, -1]))
    assert subtoken_f1(pred_m, true_m) == pytest.approx(F1_HAND)
    # Concatenation across batches gives the same value.
    a = head.metric_inputs(_logits(PRED[:2]), TRUE[:2].reshape(-1), None)
    b = head.metric_inputs(_logits(PRED[2:]), TRUE[2:].reshape(-1), None)
    assert subtoken_f1(torch.cat([a[0], b[0]]), torch.cat([a[1], b[1]])) == \
        pytest.approx(F1_HAND)


def test_f1_matches_ogb_evaluator():
    from ogb.graphproppred import Evaluator
    idx2vocab = [f'w{k}' for k in range(8)] + ['__UNK__', '__EOS__']

    def decode(row):
        out = []
        for t in row.tolist():
            if t == EOS:
                break
            out.append(idx2vocab[t])
        return out
    # OGB's reference holds the real (out-of-vocabulary) word where y_arr has UNK.
    refs = [[('oov' if w == '__UNK__' else w) for w in decode(r)] for r in TRUE]
    preds = [decode(r) for r in PRED]
    ogb = Evaluator('ogbg-code2').eval({'seq_ref': refs, 'seq_pred': preds})['F1']
    head = Code2SequenceHead(8, V, L)
    ours = subtoken_f1(*head.metric_inputs(_logits(PRED), TRUE.reshape(-1), None))
    assert ours == pytest.approx(float(ogb))


def test_forward_shapes_loss_and_gradients(cfg, make_task, make_batch):
    cfg.head.pool = 'mean'
    task = make_task('sequence', V, extra={'num_vocab': V - 2, 'max_seq_len': L})
    head = HEADS['code2_sequence'].from_cfg(cfg, task, 8)
    batch, ctx = make_batch([3, 4, 2, 5], y_arr=lambda g, n: TRUE[g:g + 1])
    pred, true = head(batch.x, batch, ctx)
    assert pred.shape == (4 * L, V) and torch.equal(true, TRUE.reshape(-1))
    # Row b*L + l is classifier l applied to graph b's pooled embedding.
    g = torch.stack([batch.x[ctx.batch == b].mean(0) for b in range(4)])
    assert torch.allclose(pred.view(4, L, V)[:, 2], head.classifiers[2](g),
                          atol=1e-6)
    loss = F.cross_entropy(pred, true)
    ogb_loss = sum(F.cross_entropy(pred.view(4, L, V)[:, l], TRUE[:, l])
                   for l in range(L))
    assert torch.allclose(loss * L, ogb_loss)
    loss.backward()
    for name, p in head.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_independent_of_batch(make_batch):
    head = Code2SequenceHead(8, V, L, pool='add').eval()
    batch, ctx = make_batch([3, 4], y_arr=lambda g, n: TRUE[g:g + 1])
    alone, actx = make_batch([3], y_arr=lambda g, n: TRUE[g:g + 1])
    p, _ = head(batch.x, batch, ctx)
    pa, _ = head(alone.x, alone, actx)
    assert torch.allclose(p[:L], pa, atol=1e-6)


def test_errors(cfg, make_task, make_batch):
    with pytest.raises(ValueError, match='num_vocab'):
        HEADS['code2_sequence'].from_cfg(cfg, make_task('sequence', V), 8)
    with pytest.raises(ValueError, match='disagrees'):
        HEADS['code2_sequence'].from_cfg(
            cfg, make_task('sequence', V, extra={'num_vocab': V}), 8)
    head = Code2SequenceHead(8, V, L)
    batch, ctx = make_batch([2])
    with pytest.raises(ValueError, match='y_arr'):
        head(batch.x, batch, ctx)
    batch.y_arr = torch.full((1, L), V + 1)
    with pytest.raises(ValueError, match='classes'):
        head(batch.x, batch, ctx)
