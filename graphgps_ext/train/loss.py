r"""Loss functions by the name used in ``model.loss_fun``.

Every entry is ``fn(pred, true) -> scalar Tensor`` on the ``(pred, true)``
pair a head returns, and is registered in GraphGym's ``loss_dict`` by
:func:`graphgps_ext.register.register_all`. ``model.loss_fun: auto`` picks
the dataset's default (:attr:`TaskInfo.loss`).

Shapes: regression ``pred, true [B, T]`` (``true`` may be ``[B]`` when
``T = 1``); multi-class ``pred [B, C]`` logits, ``true [B]`` long; binary
``pred [B]`` or ``[B, 1]`` logits, ``true [B]``; multi-label ``pred, true
[B, T]`` with ``NaN`` marking missing labels.
"""
import torch
import torch.nn.functional as F
from torch import Tensor


def _like(pred: Tensor, true: Tensor) -> Tensor:
    """``true`` reshaped to ``pred`` when only the shape differs ([B] vs [B, 1])."""
    if true.shape != pred.shape and true.numel() == pred.numel():
        true = true.view_as(pred)
    return true.to(pred.dtype)


def _masked(pred: Tensor, true: Tensor):
    """``(difference, labels, mask)``: ``pred - true`` with 0 at the
    unlabelled entries, ``true`` with 0 there, and the labelled-entry mask.
    Masked by value, not by boolean indexing, so the shapes never depend on
    the data (no host synchronisation on a GPU), and no ``NaN`` reaches the
    gradient."""
    true = _like(pred, true)
    mask = ~torch.isnan(true)
    true = torch.where(mask, true, 0.0)
    return torch.where(mask, pred - true, 0.0), true, mask


def _mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean of ``values`` over the ``mask``ed entries (``NaN`` for none,
    as the mean of an empty tensor)."""
    return values.sum() / mask.sum()


def l1(pred: Tensor, true: Tensor) -> Tensor:
    r""":math:`\frac{1}{n}\sum |\hat y - y|` over the labelled entries."""
    diff, _, mask = _masked(pred, true)
    return _mean(diff.abs(), mask)


def mse(pred: Tensor, true: Tensor) -> Tensor:
    r""":math:`\frac{1}{n}\sum (\hat y - y)^2` over the labelled entries."""
    diff, _, mask = _masked(pred, true)
    return _mean(diff.square(), mask)


def _is_binary(pred: Tensor) -> bool:
    return pred.dim() == 1 or pred.size(-1) == 1


def cross_entropy(pred: Tensor, true: Tensor) -> Tensor:
    r"""Softmax cross-entropy on ``[B, C]`` logits; BCE-with-logits when the
    head has a single output (binary classification, GraphGym convention)."""
    if _is_binary(pred):
        return F.binary_cross_entropy_with_logits(pred.view(-1),
                                                  true.view(-1).to(pred.dtype))
    return F.cross_entropy(pred, true.view(-1).long())


def weighted_cross_entropy(pred: Tensor, true: Tensor) -> Tensor:
    r"""Cross-entropy with class weights computed from the batch (SBM
    PATTERN/CLUSTER, benchmarking-gnns and GraphGPS):

    .. math::
        w_c = \frac{V - n_c}{V}\,[n_c > 0],

    where :math:`V` is the number of labelled nodes and :math:`n_c` the
    number of them in class :math:`c`. Binary heads weight each target by
    :math:`w_{y_i}`.
    """
    true = true.view(-1).long()
    num_classes = 2 if _is_binary(pred) else pred.size(-1)
    # Class counts by a scatter (a bincount reads its size from the device).
    counts = pred.new_zeros(num_classes).index_add_(
        0, true, pred.new_ones(true.numel()))
    weight = (true.numel() - counts) / true.numel() * (counts > 0)
    if _is_binary(pred):
        return F.binary_cross_entropy_with_logits(
            pred.view(-1), true.to(pred.dtype), weight=weight[true])
    return F.nll_loss(F.log_softmax(pred, dim=-1), true, weight=weight)


def bce(pred: Tensor, true: Tensor) -> Tensor:
    r"""Binary cross-entropy with logits, averaged over the labelled entries
    (``NaN`` targets, e.g. ogbg-molpcba's missing labels, are ignored)."""
    _, true, mask = _masked(pred, true)
    return _mean(F.binary_cross_entropy_with_logits(
        pred, true, weight=mask.to(pred.dtype), reduction='none'), mask)


LOSSES = {
    'l1': l1,
    'mse': mse,
    'cross_entropy': cross_entropy,
    'weighted_cross_entropy': weighted_cross_entropy,
    'bce': bce,
}

__all__ = ['LOSSES'] + list(LOSSES)
