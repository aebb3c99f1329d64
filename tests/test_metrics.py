"""Metrics against reference implementations (sklearn, OGB Evaluators,
benchmarking-gnns' accuracy_SBM)."""
import numpy as np
import pytest
import torch

from graphgps_ext.metrics import DIRECTIONS, METRICS, compute_metrics, direction, is_better


def test_names_and_directions():
    assert set(METRICS) == {'mae', 'mse', 'accuracy', 'accuracy_sbm', 'ap', 'f1_macro',
                            'auroc', 'mrr', 'mrr_filtered', 'hits@1', 'hits@3',
                            'hits@10', 'f1_subtoken'}
    assert direction('mae') == 'min' and direction('ap') == 'max'
    assert all(DIRECTIONS[m] == 'max' for m in METRICS if m not in ('mae', 'mse'))
    with pytest.raises(KeyError, match='unknown metric'):
        compute_metrics(['acc'], torch.zeros(1), torch.zeros(1))
    assert is_better(0.1, 0.2, 'min') and not is_better(0.2, 0.2, 'max')


def test_regression():
    pred = torch.tensor([[1.0, 2.0], [3.0, 5.0]])
    true = torch.tensor([[1.5, float('nan')], [3.0, 4.0]])
    assert METRICS['mae'](pred, true) == pytest.approx(0.5)
    assert METRICS['mse'](pred, true) == pytest.approx((0.25 + 1) / 3)


def test_accuracy_multiclass_and_binary():
    assert METRICS['accuracy'](torch.tensor([[0.1, 0.9], [2.0, 1.0]]),
                               torch.tensor([1, 1])) == 0.5
    assert METRICS['accuracy'](torch.tensor([[0.3], [-2.0]]), torch.tensor([1, 0])) == 1.0


def reference_accuracy_sbm(scores, targets):
    """benchmarking-gnns' accuracy_SBM (as a fraction)."""
    from sklearn.metrics import confusion_matrix
    S = targets.numpy()
    C = scores.argmax(1).numpy()
    CM = confusion_matrix(S, C).astype(np.float32)
    pr = np.zeros(CM.shape[0])
    for r in range(CM.shape[0]):
        n = (S == r).sum()
        pr[r] = CM[r, r] / n if n else 0.0
    return pr.sum() / CM.shape[0]


@pytest.mark.parametrize('seed', range(3))
def test_accuracy_sbm_matches_benchmarking_gnns(seed):
    g = torch.Generator().manual_seed(seed)
    true = torch.cat([torch.zeros(50, dtype=torch.long), torch.ones(10, dtype=torch.long),
                      torch.full((5,), 2)])
    scores = torch.randn(65, 4, generator=g)  # class 3 only ever predicted
    assert METRICS['accuracy_sbm'](scores, true) == pytest.approx(
        reference_accuracy_sbm(scores, true), abs=1e-6)


def test_ap_auroc_match_ogb_evaluator():
    from ogb.graphproppred import Evaluator
    g = torch.Generator().manual_seed(0)
    true = (torch.rand(60, 128, generator=g) < 0.3).float()
    true[torch.rand(60, 128, generator=g) < 0.2] = float('nan')
    true[:, 5] = 0.0  # a label with no positives is skipped
    pred = torch.randn(60, 128, generator=g) + torch.nan_to_num(true)
    ref = Evaluator('ogbg-molpcba').eval({'y_true': true.numpy(), 'y_pred': pred.numpy()})
    assert METRICS['ap'](pred, true) == pytest.approx(ref['ap'], abs=1e-9)
    t1, p1 = true[:, :1].clone(), pred[:, :1]
    t1[torch.isnan(t1)] = 0
    ref = Evaluator('ogbg-molhiv').eval({'y_true': t1.numpy(), 'y_pred': p1.numpy()})
    assert METRICS['auroc'](p1, t1) == pytest.approx(ref['rocauc'], abs=1e-9)
    assert np.isnan(METRICS['ap'](pred[:, 5:6], true[:, 5:6]))


def test_f1_macro_matches_sklearn():
    from sklearn.metrics import f1_score
    g = torch.Generator().manual_seed(1)
    pred, true = torch.randn(100, 5, generator=g), torch.randint(0, 5, (100,), generator=g)
    assert METRICS['f1_macro'](pred, true) == pytest.approx(
        f1_score(true.numpy(), pred.argmax(1).numpy(), average='macro'))


def test_rank_metrics():
    ranks = torch.tensor([[1, 1], [2, 1], [4, 3], [20, 12]])
    assert METRICS['mrr'](ranks, None) == pytest.approx((1 + 0.5 + 0.25 + 0.05) / 4)
    assert METRICS['mrr_filtered'](ranks, None) == pytest.approx((1 + 1 + 1 / 3 + 1 / 12) / 4)
    assert METRICS['hits@1'](ranks, None) == 0.25
    assert METRICS['hits@3'](ranks, None) == 0.5
    assert METRICS['hits@10'](ranks, None) == 0.75
    # per-graph average: graph A holds queries 0-2, graph B query 3
    weight = torch.tensor([1 / 3, 1 / 3, 1 / 3, 1.0])
    assert METRICS['mrr'](ranks, weight) == pytest.approx(((1 + 0.5 + 0.25) / 3 + 0.05) / 2)
    assert METRICS['hits@3'](ranks, weight) == pytest.approx((2 / 3 + 0) / 2)
    with pytest.raises(ValueError, match=r'\[Q, 2\]'):
        METRICS['mrr'](torch.ones(3), None)


def test_f1_subtoken_matches_ogb_code2_evaluator():
    from ogb.graphproppred import Evaluator
    ref = [['get', 'value'], ['set'], ['a', 'b', 'c'], ['x']]
    hyp = [['get', 'get', 'name'], [], ['c', 'b', 'a'], ['y', 'z']]
    vocab = {w: i for i, w in enumerate(sorted({w for s in ref + hyp for w in s}))}

    def pad(seqs):
        out = torch.full((len(seqs), 3), -1)
        for i, s in enumerate(seqs):
            out[i, :len(s)] = torch.tensor([vocab[w] for w in s], dtype=torch.long)
        return out

    expected = Evaluator('ogbg-code2').eval({'seq_ref': ref, 'seq_pred': hyp})['F1']
    assert METRICS['f1_subtoken'](pad(hyp), pad(ref)) == pytest.approx(expected)
