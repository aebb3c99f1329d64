import math

import pytest
import torch
from torch_geometric.data import Batch, Data

from graphgps_ext.layer import attention
from graphgps_ext.layer.attention import (attention_dropout, dropout_keep,
                                          keep_scale, key_mask, node_attention)
from graphgps_ext.layer.context import GraphContext

SIZES = [4, 1, 6, 3]


def make_ctx(sizes=SIZES):
    data = [Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=n)
            for n in sizes]
    return GraphContext.from_batch(Batch.from_data_list(data))


def reference(qkv, sizes, scale):
    """Per graph and head: softmax(q k^T scale) v with plain loops."""
    out = torch.zeros_like(qkv[0])
    start = 0
    for n in sizes:
        sl = slice(start, start + n)
        q, k, v = qkv[0][..., sl, :], qkv[1][..., sl, :], qkv[2][..., sl, :]
        a = torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1)
        out[..., sl, :] = a @ v
        start += n
    return out


@pytest.mark.parametrize('explicit_max', [64, 0])  # explicit path / SDPA path
@pytest.mark.parametrize('heads', [(2, ), (3, 2)])
def test_node_attention_matches_per_graph_softmax(monkeypatch, explicit_max,
                                                  heads):
    monkeypatch.setattr(attention, 'EXPLICIT_MAX_NODES', explicit_max)
    torch.manual_seed(0)
    N, dh = sum(SIZES), 4
    qkv = torch.randn((3, ) + heads + (N, dh), dtype=torch.float64)
    ctx = make_ctx()
    out = node_attention(qkv, ctx)
    assert out.shape == heads + (N, dh)
    torch.testing.assert_close(out, reference(qkv, SIZES, dh ** -0.5))
    # Strided inputs (e.g. a permuted projection) give the same result.
    strided = qkv.transpose(-1, -2).contiguous().transpose(-1, -2)
    torch.testing.assert_close(node_attention(strided, make_ctx()), out)


def test_node_attention_gradients_and_dropout_in_training():
    torch.manual_seed(1)
    N, dh = sum(SIZES), 4
    qkv = torch.randn(3, 2, N, dh, dtype=torch.float64, requires_grad=True)
    out = node_attention(qkv, make_ctx(), p=0.5, training=True)
    out.square().sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(qkv.grad).all()
    # Eval (or p = 0) ignores the dropout rate.
    torch.testing.assert_close(node_attention(qkv, make_ctx(), p=0.5),
                               reference(qkv.detach(), SIZES, dh ** -0.5))


def test_key_mask_is_cached_and_never_empty():
    ctx = make_ctx([2, 3])
    mask = key_mask(ctx)
    assert mask.shape == (2, 1, 1, 3)
    assert mask[0, 0, 0].tolist() == [True, True, False]
    assert key_mask(ctx) is mask


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


def test_attention_dropout_is_inverted_dropout():
    torch.manual_seed(3)
    attn = torch.rand(50, 40, 30)
    assert attention_dropout(attn, 0.5, training=False) is attn
    assert attention_dropout(attn, 0.0, training=True) is attn
    out = attention_dropout(attn, 0.25, training=True)
    kept = out != 0
    torch.testing.assert_close(out[kept], attn[kept] / 0.75)
    assert abs(kept.float().mean().item() - 0.75) < 0.01
    assert math.isclose(out.mean().item(), attn.mean().item(), rel_tol=0.02)
    unscaled = attention_dropout(attn, 0.25, training=True, scale=False)
    assert torch.equal(unscaled[unscaled != 0], attn[unscaled != 0])
