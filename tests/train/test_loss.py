"""Losses of ``model.loss_fun`` against direct computations."""
import math

import pytest
import torch
import torch.nn.functional as F

from graphgps_ext.train.loss import LOSSES


def test_registry_names():
    assert set(LOSSES) == {'l1', 'mse', 'cross_entropy', 'weighted_cross_entropy', 'bce'}


def test_regression_losses_accept_flat_targets_and_skip_nan():
    pred = torch.tensor([[1.0], [2.0], [4.0]])
    true = torch.tensor([0.0, float('nan'), 1.0])
    assert LOSSES['l1'](pred, true).item() == pytest.approx(2.0)
    assert LOSSES['mse'](pred, true).item() == pytest.approx(5.0)


def test_cross_entropy_multiclass_and_binary():
    pred = torch.randn(5, 3)
    true = torch.tensor([0, 2, 1, 1, 0])
    assert torch.allclose(LOSSES['cross_entropy'](pred, true), F.cross_entropy(pred, true))
    logit = torch.randn(4, 1)
    y = torch.tensor([1, 0, 1, 1])
    assert torch.allclose(LOSSES['cross_entropy'](logit, y),
                          F.binary_cross_entropy_with_logits(logit.view(-1), y.float()))


def test_weighted_cross_entropy_weights_rare_classes_up():
    # 3 nodes of class 0, 1 of class 1, none of class 2: w = (1/4, 3/4, 0).
    pred = torch.randn(4, 3)
    true = torch.tensor([0, 0, 0, 1])
    logp = F.log_softmax(pred, -1)
    nll = -logp[torch.arange(4), true]
    w = torch.tensor([0.25, 0.25, 0.25, 0.75])
    expected = (w * nll).sum() / w.sum()
    assert LOSSES['weighted_cross_entropy'](pred, true).item() == pytest.approx(expected.item(), rel=1e-5)


def test_bce_masks_missing_labels():
    pred = torch.tensor([[0.0, 2.0], [1.0, -1.0]])
    true = torch.tensor([[1.0, float('nan')], [0.0, 1.0]])
    expected = (math.log(2) + math.log(1 + math.e) + math.log(1 + math.e)) / 3
    assert LOSSES['bce'](pred, true).item() == pytest.approx(expected, rel=1e-5)
    assert torch.isfinite(LOSSES['bce'](pred, true))
