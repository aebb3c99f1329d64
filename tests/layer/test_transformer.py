import math

import pytest
import torch
from yacs.config import CfgNode as CN

from branch_checks import (batch_dependence, check_degenerate, check_gradients,
                           check_permutation_equivariance, graphs, run)
from graphgps_ext.config.gt import gt_cfg
from graphgps_ext.layer.transformer import Transformer

D, H = 8, 2


def reference(m: Transformer, batch):
    """Eq. 1 per graph and head, with an explicit softmax."""
    out = torch.zeros_like(batch.x)
    dh = D // H
    Wq, Wk, Wv = m.qkv.weight.chunk(3, dim=0)
    bq, bk, bv = m.qkv.bias.chunk(3)
    for g in range(batch.num_graphs):
        idx = (batch.batch == g).nonzero().view(-1)
        X = batch.x[idx]
        heads = []
        for h in range(H):
            sl = slice(h * dh, (h + 1) * dh)
            Q = X @ Wq[sl].T + bq[sl]
            K = X @ Wk[sl].T + bk[sl]
            V = X @ Wv[sl].T + bv[sl]
            A = torch.softmax(Q @ K.T / math.sqrt(dh), dim=1)
            heads.append(A @ V)
        out[idx] = torch.cat(heads, 1) @ m.out.weight.T + m.out.bias
    return out


def data():
    return graphs([4, 6, 1, 3], D, seed=0)


def test_matches_dense_reference():
    torch.manual_seed(0)
    m = Transformer(D, H).double().eval()
    x, e, batch = run(m, data())
    assert e is None
    torch.testing.assert_close(x, reference(m, batch), atol=1e-5, rtol=1e-5)


def test_recorded_path_matches_and_logs_masked_map():
    torch.manual_seed(0)
    m = Transformer(D, H).double().eval()
    x, _, batch = run(m, data())
    rec = {}
    x_rec, _, _ = run(m, data(), record=rec)
    torch.testing.assert_close(x_rec, x)
    attn = rec['transformer'][0]
    assert attn.shape == (4, H, 6, 6)
    # Rows of real nodes sum to 1 over the real nodes; padding is zero.
    sizes = torch.tensor([4, 6, 1, 3])
    for b, n in enumerate(sizes.tolist()):
        torch.testing.assert_close(attn[b, :, :n, :n].sum(-1),
                                   torch.ones(H, n, dtype=attn.dtype))
        assert attn[b, :, n:, :].abs().sum() == 0
        assert attn[b, :, :, n:].abs().sum() == 0


def test_permutation_equivariance():
    torch.manual_seed(0)
    check_permutation_equivariance(Transformer(D, H).double(), data())


def test_batch_independence():
    torch.manual_seed(0)
    assert batch_dependence(Transformer(D, H).double(), data()) < 1e-10


def test_gradients_reach_every_parameter():
    torch.manual_seed(0)
    m = Transformer(D, H, attn_dropout=0.2).double()
    # The key bias only shifts each query's scores by a constant: no gradient.
    check_gradients(m, data(), zero_ok=('qkv.bias', ))
    dk = m.qkv.bias.grad[D:2 * D]
    assert dk.abs().max() < 1e-10 and m.qkv.bias.grad[:D].abs().sum() > 0


def test_degenerate_graphs_are_finite():
    torch.manual_seed(0)
    check_degenerate(Transformer(D, H, attn_dropout=0.1).double(), D)


def test_padded_queries_do_not_make_nan_gradients():
    torch.manual_seed(0)
    m = Transformer(D, H).double()
    dl = graphs([1, 7], D, seed=3)
    x, _, batch = run(m, dl)
    x.pow(2).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters())


def test_attn_dropout_only_in_training():
    torch.manual_seed(0)
    m = Transformer(D, H, attn_dropout=0.5).double()
    m.eval()
    a, _, _ = run(m, data())
    b, _, _ = run(m, data())
    assert torch.equal(a, b)
    m.train()
    c, _, _ = run(m, data())
    assert not torch.allclose(a, c)


def test_fused_attention_switch_trains_the_same():
    # Same seed, same dropout masks: gt.fused_attention on and off give the
    # same outputs and parameter gradients in training.
    torch.manual_seed(0)
    m = Transformer(D, H, attn_dropout=0.5).double().train()
    results = []
    for fused in (True, False):
        m.fused = fused
        m.zero_grad()
        torch.manual_seed(1)
        x, _, _ = run(m, data())
        x.square().sum().backward()
        results.append([x] + [p.grad.clone() for p in m.parameters()])
    torch.testing.assert_close(results[0], results[1])


def test_from_cfg_and_errors():
    cfg = CN()
    gt_cfg(cfg)
    cfg.gt.n_heads, cfg.gt.attn_dropout = 8, 0.3
    m = Transformer.from_cfg(cfg, 64)
    assert m.n_heads == 8 and m.attn_dropout == 0.3 and m.fused
    cfg.gt.fused_attention = False
    assert not Transformer.from_cfg(cfg, 64).fused
    # Same parameter count as torch.nn.MultiheadAttention (GraphGPS).
    ref = torch.nn.MultiheadAttention(64, 8, batch_first=True)
    assert sum(p.numel() for p in m.parameters()) == \
        sum(p.numel() for p in ref.parameters())
    with pytest.raises(ValueError, match='gt.n_heads'):
        Transformer(10, 4)
