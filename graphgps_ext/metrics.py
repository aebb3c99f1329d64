r"""Evaluation metrics by the name used in ``metric_best`` / ``TaskInfo.metrics``.

``METRICS[name](pred, true) -> float`` works on the predictions of a whole
epoch, concatenated along dim 0 (after a head's ``metric_inputs`` when it
defines one). All values are fractions (accuracy 0.87, not 87 %).
:data:`DIRECTIONS` says whether larger (``max``) or smaller (``min``) is better,
:data:`RANGES` which values a metric takes.

Input conventions:

- ``mae``, ``mse``: ``pred, true [B, T]`` (or ``[B]``); ``NaN`` targets skipped.
- ``accuracy``, ``accuracy_sbm``, ``f1_macro``: ``pred [B, C]`` logits (argmax)
  or ``[B]`` / ``[B, 1]`` binary logits (``> 0``); ``true [B]`` class ids.
- ``ap``, ``auroc``: ``pred, true [B, T]`` (multi-label logits / 0-1 targets,
  ``NaN`` = missing), mean over the labels that have both classes (OGB
  convention, as the ``ogbg-molpcba`` / ``ogbg-molhiv`` Evaluators).
  ``auroc`` on ``[B, C]`` multi-class logits with ``true [B]`` is one-vs-rest.
- ``mrr``, ``mrr_filtered``, ``hits@k``: ``pred [Q, 2]`` ranks of the true
  candidate per query (column 0 raw, column 1 filtered), as the link head's
  ``metric_inputs`` returns; ``true`` is ``None`` (plain mean over queries)
  or per-query float weights ``[Q]`` (``1 / #queries of the graph``: the
  weighted mean is the per-graph average of LRGB). ``hits@k`` uses raw ranks
  (LRGB PCQM-Contact convention).
- ``f1_subtoken``: ``pred, true [B, L]`` token ids padded with negative values;
  per-graph F1 of the predicted vs reference sub-token *sets*, averaged
  (OGB ``ogbg-code2`` Evaluator).
"""
from typing import Dict, Iterable

import numpy as np
import torch
from torch import Tensor


def _flat_pair(pred: Tensor, true: Tensor):
    pred = pred.float()
    true = true.float()
    if true.shape != pred.shape and true.numel() == pred.numel():
        true = true.view_as(pred)
    mask = ~torch.isnan(true)
    return pred[mask], true[mask]


def mae(pred: Tensor, true: Tensor) -> float:
    pred, true = _flat_pair(pred, true)
    return float((pred - true).abs().mean())


def mse(pred: Tensor, true: Tensor) -> float:
    pred, true = _flat_pair(pred, true)
    return float(((pred - true)**2).mean())


def _labels(pred: Tensor) -> Tensor:
    if pred.dim() == 1 or pred.size(-1) == 1:
        return (pred.view(-1) > 0).long()
    return pred.argmax(dim=-1)


def accuracy(pred: Tensor, true: Tensor) -> float:
    return float((_labels(pred) == true.view(-1).long()).float().mean())


def accuracy_sbm(pred: Tensor, true: Tensor) -> float:
    r"""Class-balanced accuracy of benchmarking-gnns (PATTERN, CLUSTER):

    .. math:: \frac{1}{|\mathcal{C}|}\sum_{c \in \mathcal{C}}
              \frac{|\{i: \hat y_i = y_i = c\}|}{|\{i: y_i = c\}|},

    with :math:`\mathcal{C}` the classes occurring in the targets or the
    predictions (a class only predicted counts with recall 0), as a fraction.
    """
    true = true.view(-1).long()
    pred = _labels(pred)
    classes = torch.unique(torch.cat([true, pred]))
    num = int(classes.max()) + 1
    hits = torch.bincount(true[pred == true], minlength=num)[classes].float()
    counts = torch.bincount(true, minlength=num)[classes].float()
    recall = torch.where(counts > 0, hits / counts.clamp(min=1),
                         torch.zeros_like(hits))
    return float(recall.mean())


def f1_macro(pred: Tensor, true: Tensor) -> float:
    """Macro F1 over the classes present in targets or predictions (sklearn,
    as GraphGPS for PascalVOC-SP / COCO-SP)."""
    from sklearn.metrics import f1_score
    return float(f1_score(true.view(-1).long().numpy(), _labels(pred).numpy(),
                          average='macro', zero_division=0))


def _per_label(pred: Tensor, true: Tensor, score_fn) -> float:
    pred = pred.float()
    true = true.float()
    if pred.dim() == 1:
        pred, true = pred.view(-1, 1), true.view(-1, 1)
    true = true.view_as(pred)
    scores = []
    for t in range(true.size(1)):  # labels, not graphs: OGB's loop
        labelled = ~torch.isnan(true[:, t])
        y = true[labelled, t]
        if (y == 1).any() and (y == 0).any():
            scores.append(score_fn(y.numpy(), pred[labelled, t].numpy()))
    # No label with both classes (e.g. a tiny split): undefined, as NaN.
    return float(np.mean(scores)) if scores else float('nan')


def ap(pred: Tensor, true: Tensor) -> float:
    """Average precision, mean over labels (OGB ``ogbg-molpcba`` convention)."""
    from sklearn.metrics import average_precision_score
    return _per_label(pred, true, average_precision_score)


def auroc(pred: Tensor, true: Tensor) -> float:
    """ROC-AUC, mean over labels (OGB ``ogbg-molhiv``); one-vs-rest on
    multi-class logits with ``true [B]``."""
    from sklearn.metrics import roc_auc_score
    if pred.dim() == 2 and pred.size(1) > 1 and true.dim() == 1:
        prob = torch.softmax(pred.float(), dim=-1).numpy()
        return float(roc_auc_score(true.long().numpy(), prob,
                                   multi_class='ovr',
                                   labels=np.arange(pred.size(1))))
    return _per_label(pred, true, roc_auc_score)


def _ranks(pred: Tensor, column: int) -> Tensor:
    if pred.dim() != 2 or pred.size(1) != 2:
        raise ValueError('rank metrics expect [Q, 2] ranks (raw, filtered) '
                         f'from the head\'s metric_inputs, got {tuple(pred.shape)}')
    return pred[:, column].float()


def _query_mean(values: Tensor, weight: Tensor = None) -> float:
    """Mean over queries, weighted when per-query float weights are given."""
    if (isinstance(weight, Tensor) and weight.is_floating_point()
            and weight.numel() == values.numel()):
        weight = weight.view(-1).float()
        return float((weight * values).sum() / weight.sum())
    return float(values.mean())


def mrr(pred: Tensor, true: Tensor = None) -> float:
    """Mean reciprocal rank of the true candidate (raw ranks)."""
    return _query_mean(1.0 / _ranks(pred, 0), true)


def mrr_filtered(pred: Tensor, true: Tensor = None) -> float:
    """Mean reciprocal rank with the other true candidates filtered out."""
    return _query_mean(1.0 / _ranks(pred, 1), true)


def _hits(k: int):
    def hits(pred: Tensor, true: Tensor = None) -> float:
        return _query_mean((_ranks(pred, 0) <= k).float(), true)
    hits.__name__ = f'hits@{k}'
    hits.__doc__ = f'Fraction of queries whose true candidate ranks <= {k} (raw).'
    return hits


def f1_subtoken(pred: Tensor, true: Tensor) -> float:
    """Mean per-graph F1 of predicted vs reference sub-token sets (OGB code2)."""
    pred, true = pred.long(), true.long()
    num_graphs = true.size(0)
    vocab = int(max(pred.max(), true.max(), 0)) + 1

    def token_set(seq):
        row = torch.arange(seq.size(0)).view(-1, 1).expand_as(seq)
        keep = seq >= 0
        return torch.unique(row[keep] * vocab + seq[keep])

    ref, hyp = token_set(true), token_set(pred)
    tp = torch.bincount(hyp[torch.isin(hyp, ref)] // vocab,
                        minlength=num_graphs).float()
    n_hyp = torch.bincount(hyp // vocab, minlength=num_graphs).float()
    n_ref = torch.bincount(ref // vocab, minlength=num_graphs).float()
    precision = torch.where(n_hyp > 0, tp / n_hyp.clamp(min=1), 0.)
    recall = torch.where(n_ref > 0, tp / n_ref.clamp(min=1), 0.)
    denom = precision + recall
    f1 = torch.where(denom > 0, 2 * precision * recall / denom.clamp(min=1e-12), 0.)
    return float(f1.mean())


METRICS = {
    'mae': mae,
    'mse': mse,
    'accuracy': accuracy,
    'accuracy_sbm': accuracy_sbm,
    'ap': ap,
    'f1_macro': f1_macro,
    'auroc': auroc,
    'mrr': mrr,
    'mrr_filtered': mrr_filtered,
    'hits@1': _hits(1),
    'hits@3': _hits(3),
    'hits@10': _hits(10),
    'f1_subtoken': f1_subtoken,
}

DIRECTIONS = {name: ('min' if name in ('mae', 'mse') else 'max')
              for name in METRICS}


#: The values a metric takes: errors (``mae``, ``mse``) are non-negative,
#: every other metric is a fraction in [0, 1].
RANGES = {name: ((0.0, float('inf')) if name in ('mae', 'mse') else (0.0, 1.0))
          for name in METRICS}


def direction(name: str) -> str:
    """``'min'`` or ``'max'``: which way ``name`` improves."""
    if name not in DIRECTIONS:
        raise KeyError(f"unknown metric '{name}'; known: {', '.join(METRICS)}")
    return DIRECTIONS[name]


def compute_metrics(names: Iterable[str], pred: Tensor,
                    true: Tensor) -> Dict[str, float]:
    """``{name: METRICS[name](pred, true)}`` for every name (CPU tensors)."""
    out = {}
    for name in names:
        if name not in METRICS:
            raise KeyError(f"unknown metric '{name}'; known: {', '.join(METRICS)}")
        out[name] = METRICS[name](pred, true)
    return out


def is_better(value: float, best: float, mode: str) -> bool:
    """Strict improvement of ``value`` over ``best`` (``None``: always)."""
    if best is None:
        return True
    return value < best if mode == 'min' else value > best
