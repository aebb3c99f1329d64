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


# ------------------------------------------------------------- row mask --
#: (loss, pred shape, label kind) of every loss and head output it meets:
#: graph or node rows alike (the mask is over the rows of ``pred``).
MASKED_CASES = {
    'l1': ('l1', (1, ), 'real'), 'l1-multi': ('l1', (3, ), 'real'),
    'mse': ('mse', (1, ), 'real'), 'mse-multi': ('mse', (3, ), 'real'),
    'cross_entropy': ('cross_entropy', (4, ), 'class'),
    'cross_entropy-binary': ('cross_entropy', (1, ), 'binary'),
    'weighted_cross_entropy': ('weighted_cross_entropy', (4, ), 'class'),
    'weighted_cross_entropy-binary': ('weighted_cross_entropy', (1, ), 'binary'),
    'bce': ('bce', (3, ), 'multilabel'),
}


def _labels(kind, rows, width, gen):
    if kind == 'real':  # regression targets, some missing (NaN)
        y = torch.randn(rows, width, generator=gen, dtype=torch.float64)
        y[torch.rand(rows, width, generator=gen) < 0.2] = float('nan')
        return y.view(-1) if width == 1 else y
    if kind == 'class':  # classes 0..2 (class 3 only in the padding rows)
        return torch.randint(0, 3, (rows, ), generator=gen)
    if kind == 'binary':
        return torch.randint(0, 2, (rows, 1), generator=gen)
    y = torch.randint(0, 2, (rows, width), generator=gen).double()
    y[torch.rand(rows, width, generator=gen) < 0.3] = float('nan')
    return y


def _padded(kind, true, pad, gen):
    """``true`` with ``pad`` padding rows as a static-shape batch pads them
    (zeros), or (``gen``) with values that a trimmed loss would never see:
    a class the real rows lack, labels of the other kind."""
    filler = true.new_zeros((pad, ) + tuple(true.shape[1:]))
    if gen is not None and pad:
        if kind == 'class':
            filler.fill_(3)
        elif true.is_floating_point():
            filler = torch.randn(filler.shape, generator=gen, dtype=true.dtype)
        else:
            filler.fill_(1)
    return torch.cat([true, filler])


@pytest.mark.parametrize('pad', [0, 1, 5, 17])
@pytest.mark.parametrize('odd_padding', [False, True])
@pytest.mark.parametrize('case', list(MASKED_CASES))
def test_masked_loss_equals_the_loss_of_the_real_rows(case, pad, odd_padding):
    """In float64, the loss of a padded output with the mask of its real rows
    is the loss of the real rows cut by a slice (the eager path), and so is
    its gradient; the padding rows get a zero gradient."""
    name, shape, kind = MASKED_CASES[case]
    fn = LOSSES[name]
    gen = torch.Generator().manual_seed(len(case) * 31 + pad)
    real = 11
    true = _labels(kind, real, shape[0], gen)
    padded_true = _padded(kind, true, pad, gen if odd_padding else None)
    pred = torch.randn((real + pad, ) + shape, generator=gen,
                       dtype=torch.float64) * 3
    if pad:
        pred.data[real:] *= 100  # padding rows far off: they must not count
    mask = torch.arange(real + pad) < real
    full = pred.clone().requires_grad_()
    cut = pred[:real].clone().requires_grad_()
    masked = fn(full, padded_true, mask=mask)
    ref = fn(cut, true)
    assert torch.isfinite(ref)
    torch.testing.assert_close(masked, ref, rtol=1e-13, atol=0)
    masked.backward()
    ref.backward()
    torch.testing.assert_close(full.grad[:real], cut.grad, rtol=1e-12, atol=1e-15)
    assert torch.equal(full.grad[real:], torch.zeros_like(full.grad[real:]))


@pytest.mark.parametrize('case', list(MASKED_CASES))
def test_non_finite_padding_rows_do_not_reach_the_loss(case):
    name, shape, kind = MASKED_CASES[case]
    gen = torch.Generator().manual_seed(1)
    true = _padded(kind, _labels(kind, 6, shape[0], gen), 3, None)
    pred = torch.randn((9, ) + shape, generator=gen, dtype=torch.float64)
    mask = torch.arange(9) < 6
    ref = LOSSES[name](pred[:6], true[:6])
    for bad in (float('nan'), float('inf'), -float('inf')):
        pred[6:] = bad
        got = LOSSES[name](pred, true, mask=mask)
        torch.testing.assert_close(got, ref, rtol=1e-13, atol=0)


def test_weighted_cross_entropy_counts_only_real_rows():
    # Real rows: 3 of class 0, 1 of class 1, none of class 2; 4 padding rows
    # of class 2 (and 0): the weights stay (1/4, 3/4, 0), the batch's own.
    pred = torch.randn(8, 3, dtype=torch.float64)
    true = torch.tensor([0, 0, 0, 1, 2, 2, 2, 0])
    mask = torch.arange(8) < 4
    logp = F.log_softmax(pred[:4], -1)
    nll = -logp[torch.arange(4), true[:4]]
    w = torch.tensor([0.25, 0.25, 0.25, 0.75], dtype=torch.float64)
    expected = (w * nll).sum() / w.sum()
    got = LOSSES['weighted_cross_entropy'](pred, true, mask=mask)
    torch.testing.assert_close(got, expected, rtol=1e-13, atol=0)


@pytest.mark.parametrize('case', list(MASKED_CASES))
def test_without_a_mask_the_loss_is_unchanged(case):
    """``mask=None`` (the eager, unpadded path) gives the loss bit for bit
    as a call without it, and an all-true mask the same loss up to the
    order of the sums."""
    name, shape, kind = MASKED_CASES[case]
    gen = torch.Generator().manual_seed(2)
    true = _labels(kind, 7, shape[0], gen)
    pred = torch.randn((7, ) + shape, generator=gen)
    fn = LOSSES[name]
    assert torch.equal(fn(pred, true, mask=None), fn(pred, true))
    torch.testing.assert_close(fn(pred, true, mask=torch.ones(7, dtype=torch.bool)),
                               fn(pred, true), rtol=1e-6, atol=0)


def test_every_loss_takes_the_row_mask():
    from graphgps_ext.train.loss import takes_mask
    assert all(takes_mask(fn) for fn in LOSSES.values())
    assert not takes_mask(lambda pred, true: (pred - true).abs().mean())
    assert not takes_mask(len)  # a builtin without a signature: no mask
