import math

import pytest
import torch

from graphgps_ext.layer.dropout import Dropout, dropout, dropout_keep, keep_scale


def test_dropout_keep_rate_and_scale():
    torch.manual_seed(2)
    for p in (0.1, 0.5, 0.9):
        keep = dropout_keep((200, 1000), p)
        assert keep.dtype == torch.bool
        assert abs(keep.float().mean().item() - (1 - p)) < 0.005
        assert keep_scale(p) == pytest.approx(1 / (1 - p), rel=1e-4)
    assert dropout_keep((10, 10), 0.0).all()
    assert not dropout_keep((10, 10), 1.0).any()
    assert keep_scale(1.0) == 0.0
    # The mask is not periodic across the 16-bit lanes of a 64-bit draw.
    keep = dropout_keep((4000, ), 0.5).view(-1, 4).float()
    assert (keep.mean(0) - 0.5).abs().max() < 0.05


def test_dropout_is_inverted_dropout():
    torch.manual_seed(3)
    attn = torch.rand(50, 40, 30)
    assert dropout(attn, 0.5, training=False) is attn
    assert dropout(attn, 0.0, training=True) is attn
    out = dropout(attn, 0.25, training=True)
    kept = out != 0
    torch.testing.assert_close(out[kept], attn[kept] / 0.75)
    assert abs(kept.float().mean().item() - 0.75) < 0.01
    assert math.isclose(out.mean().item(), attn.mean().item(), rel_tol=0.02)
    unscaled = dropout(attn, 0.25, training=True, scale=False)
    assert torch.equal(unscaled[unscaled != 0], attn[unscaled != 0])


def test_dropout_module_matches_function_and_backward():
    module = Dropout(0.5)
    x = torch.rand(30, 8, requires_grad=True)
    torch.manual_seed(5)
    out = module(x)
    torch.manual_seed(5)
    torch.testing.assert_close(out, dropout(x, 0.5, True))
    out.sum().backward()
    # d out / d x is the scaled mask: 2 where kept, 0 where dropped.
    torch.testing.assert_close(x.grad, (out != 0).float() * 2)
    module.eval()
    assert module(x) is x
    with pytest.raises(ValueError, match='probability'):
        Dropout(1.5)
