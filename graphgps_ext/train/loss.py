r"""Loss functions by the name used in ``model.loss_fun``.

Every entry is ``fn(pred, true, mask=None) -> scalar Tensor`` on the
``(pred, true)`` pair a head returns, and is registered in GraphGym's
``loss_dict`` by :func:`graphgps_ext.register.register_all`.
``model.loss_fun: auto`` picks the dataset's default (:attr:`TaskInfo.loss`).

Shapes: regression ``pred, true [B, T]`` (``true`` may be ``[B]`` when
``T = 1``); multi-class ``pred [B, C]`` logits, ``true [B]`` long; binary
``pred [B]`` or ``[B, 1]`` logits, ``true [B]``; multi-label ``pred, true
[B, T]`` with ``NaN`` marking missing labels.

Row mask: every loss also takes ``mask``, a boolean ``[B]`` over the rows of
``pred`` (``True`` at the real rows of a static-shape batch,
:func:`graphgps_ext.loader.pad.row_mask`). The loss is then the loss of the
real rows alone, computed on the whole padded output: a padding row adds 0
to every sum and nothing to any count, and every mean divides by a count
made on the device (no host read, and no Python number that a compiled
graph would specialise on). With :math:`m_i \in \{0, 1\}` the mask,

.. math::
    \mathcal{L}(\hat y, y; m) = \mathcal{L}(\hat y_{\{i : m_i = 1\}},
    y_{\{i : m_i = 1\}}),

equal to the loss of the rows cut by a slice up to the order of the float
sums. Padding rows are left out by selection (``torch.where``, the
``ignore_index`` of the cross-entropy), not multiplied by 0, so a
non-finite value in a padding row does not reach the loss. Without
``mask`` each loss runs the operators it ran before the argument existed.
"""
import inspect
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor


def _like(pred: Tensor, true: Tensor) -> Tensor:
    """``true`` reshaped to ``pred`` when only the shape differs ([B] vs [B, 1])."""
    if true.shape != pred.shape and true.numel() == pred.numel():
        true = true.view_as(pred)
    return true.to(pred.dtype)


def _rows(mask: Tensor, like: Tensor) -> Tensor:
    """The row mask ``[B]`` shaped to broadcast over ``like [B, ...]``."""
    return mask.view([-1] + [1] * (like.dim() - 1))


def _masked(pred: Tensor, true: Tensor, rows: Optional[Tensor] = None):
    """``(difference, labels, mask)``: ``pred - true`` with 0 at the
    unlabelled entries (and the rows outside ``rows``), ``true`` with 0
    there, and the mask of the entries that count. Masked by value, not by
    boolean indexing, so the shapes never depend on the data (no host
    synchronisation on a GPU), and no ``NaN`` reaches the gradient."""
    true = _like(pred, true)
    mask = ~torch.isnan(true)
    if rows is not None:
        mask = mask & _rows(rows, mask)
    true = torch.where(mask, true, 0.0)
    return torch.where(mask, pred - true, 0.0), true, mask


def _mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean of ``values`` over the ``mask``ed entries (``NaN`` for none,
    as the mean of an empty tensor)."""
    return values.sum() / mask.sum()


def l1(pred: Tensor, true: Tensor, mask: Optional[Tensor] = None) -> Tensor:
    r""":math:`\frac{1}{n}\sum |\hat y - y|` over the labelled entries."""
    diff, _, mask = _masked(pred, true, mask)
    return _mean(diff.abs(), mask)


def mse(pred: Tensor, true: Tensor, mask: Optional[Tensor] = None) -> Tensor:
    r""":math:`\frac{1}{n}\sum (\hat y - y)^2` over the labelled entries."""
    diff, _, mask = _masked(pred, true, mask)
    return _mean(diff.square(), mask)


def _is_binary(pred: Tensor) -> bool:
    return pred.dim() == 1 or pred.size(-1) == 1


#: The class index :func:`F.cross_entropy` and :func:`F.nll_loss` skip
#: (their default ``ignore_index``): the label of a masked row.
IGNORE = -100


def _mean_rows(values: Tensor, mask: Tensor) -> Tensor:
    """Mean of the per-row ``values [B]`` over the rows of ``mask``."""
    return _mean(torch.where(mask, values, 0.0), mask)


def cross_entropy(pred: Tensor, true: Tensor,
                  mask: Optional[Tensor] = None) -> Tensor:
    r"""Softmax cross-entropy on ``[B, C]`` logits; BCE-with-logits when the
    head has a single output (binary classification, GraphGym convention)."""
    if _is_binary(pred):
        if mask is None:
            return F.binary_cross_entropy_with_logits(
                pred.view(-1), true.view(-1).to(pred.dtype))
        return _mean_rows(F.binary_cross_entropy_with_logits(
            pred.view(-1), true.view(-1).to(pred.dtype), reduction='none'),
            mask)
    true = true.view(-1).long()
    if mask is not None:  # masked rows are ignored, the mean is over the rest
        true = torch.where(mask, true, IGNORE)
    return F.cross_entropy(pred, true)


def weighted_cross_entropy(pred: Tensor, true: Tensor,
                           mask: Optional[Tensor] = None) -> Tensor:
    r"""Cross-entropy with class weights computed from the batch (SBM
    PATTERN/CLUSTER, benchmarking-gnns and GraphGPS):

    .. math::
        w_c = \frac{V - n_c}{V}\,[n_c > 0],

    where :math:`V` is the number of labelled nodes and :math:`n_c` the
    number of them in class :math:`c`. Binary heads weight each target by
    :math:`w_{y_i}`. With a row mask, :math:`V` and :math:`n_c` count the
    real rows only (a device count).
    """
    true = true.view(-1).long()
    num_classes = 2 if _is_binary(pred) else pred.size(-1)
    if mask is None:
        # Class counts by a scatter (a bincount reads its size from the device).
        counts = pred.new_zeros(num_classes).index_add_(
            0, true, pred.new_ones(true.numel()))
        weight = (true.numel() - counts) / true.numel() * (counts > 0)
        if _is_binary(pred):
            return F.binary_cross_entropy_with_logits(
                pred.view(-1), true.to(pred.dtype), weight=weight[true])
        return F.nll_loss(F.log_softmax(pred, dim=-1), true, weight=weight)
    real = mask.to(pred.dtype)
    counts = pred.new_zeros(num_classes).index_add_(0, true, real)
    total = real.sum()
    weight = (total - counts) / total * (counts > 0)
    if _is_binary(pred):
        return _mean_rows(F.binary_cross_entropy_with_logits(
            pred.view(-1), true.to(pred.dtype), weight=weight[true],
            reduction='none'), mask)
    return F.nll_loss(F.log_softmax(pred, dim=-1),
                      torch.where(mask, true, IGNORE), weight=weight)


def bce(pred: Tensor, true: Tensor, mask: Optional[Tensor] = None) -> Tensor:
    r"""Binary cross-entropy with logits, averaged over the labelled entries
    (``NaN`` targets, e.g. ogbg-molpcba's missing labels, are ignored)."""
    rows = mask
    _, true, mask = _masked(pred, true, rows)
    values = F.binary_cross_entropy_with_logits(
        pred, true, weight=mask.to(pred.dtype), reduction='none')
    if rows is not None:  # a padding row's value, whatever it is, is left out
        values = torch.where(mask, values, 0.0)
    return _mean(values, mask)


LOSSES = {
    'l1': l1,
    'mse': mse,
    'cross_entropy': cross_entropy,
    'weighted_cross_entropy': weighted_cross_entropy,
    'bce': bce,
}


def takes_mask(loss_fn) -> bool:
    """Whether ``loss_fn`` takes the row mask (a ``mask`` argument, as every
    loss of :data:`LOSSES`)."""
    try:
        return 'mask' in inspect.signature(loss_fn).parameters
    except (TypeError, ValueError):
        return False


__all__ = ['LOSSES', 'takes_mask'] + list(LOSSES)
