import math

import pytest
import torch

from graphgps_ext.layer.dropout import Dropout, dropout, dropout_mask, keep_scale


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64, torch.bool])
def test_dropout_mask_rate_and_scale(dtype):
    torch.manual_seed(2)
    for p in (0.1, 0.5, 0.9):
        keep = dropout_mask((200, 1000), p, dtype)
        assert keep.dtype == dtype and keep.shape == (200, 1000)
        assert set(keep.unique().tolist()) <= {0, 1}
        assert abs(keep.float().mean().item() - (1 - p)) < 0.005
        assert keep_scale(p) == pytest.approx(1 / (1 - p), rel=1e-4)
    assert dropout_mask((10, 10), 0.0, dtype).all()
    assert not dropout_mask((10, 10), 1.0, dtype).any()
    assert keep_scale(1.0) == 0.0
    # Every 16-bit lane of a 64-bit draw is uniform (no lane biased by a
    # modulo or a sign bit) and the lanes are independent of each other.
    keep = dropout_mask((40000, ), 0.5, dtype).view(-1, 4).float()
    assert (keep.mean(0) - 0.5).abs().max() < 0.02
    both = (keep[:, :3] * keep[:, 1:]).mean(0)
    assert (both - 0.25).abs().max() < 0.02
    # p off a multiple of 2^-16 is rounded to the nearest one.
    assert abs(dropout_mask((400000, ), 0.3).mean().item() - 0.7) < 0.003


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


def test_dropout_under_torch_compile():
    """``train.compile``: the int16 view of the fast mask cannot be traced, so
    compiled code draws a uniform mask at the same rounded probability (it
    used to fail in AOT autograd, e.g. in the GT branch's attention dropout)."""
    x = torch.ones(64, 250, requires_grad=True)
    fn = torch.compile(lambda t: dropout(t, 0.25, training=True), dynamic=True)
    out = fn(x)
    kept = out != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.02
    torch.testing.assert_close(out[kept], torch.full_like(out[kept], 1 / 0.75))
    out.sum().backward()
    torch.testing.assert_close(x.grad, kept.float() / 0.75)
