import copy
import math

import pytest
import torch
from torch_geometric.data import Batch, Data
from yacs.config import CfgNode as CN

from graphgps_ext.branches import CSA_OPTIONS
from graphgps_ext.config.gt import gt_cfg
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer import csa
from graphgps_ext.layer.csa import CSA
from graphgps_ext.layer.hybrid import HybridLayer

DIM, HEADS = 8, 2
F64 = torch.float64  # layers run in float64; references compared to 1e-5


def make_graph(n, seed, isolated=False):
    g = torch.Generator().manual_seed(seed)
    m = n - 1 if isolated else n  # the last node stays isolated
    src = torch.arange(max(m - 1, 0))
    ei = torch.stack([src, src + 1])
    if m > 2:
        ei = torch.cat([ei, torch.tensor([[0], [m - 1]])], dim=1)
    ei = torch.cat([ei, ei.flip(0)], dim=1)
    return dict(x=torch.randn(n, DIM, generator=g, dtype=F64), edge_index=ei,
                pair=torch.randn(n, n, DIM, generator=g, dtype=F64))


def collate(graphs):
    """Batch + context with dense pair features (padding filled with junk)."""
    batch = Batch.from_data_list([
        Data(x=g['x'], edge_index=g['edge_index'], num_nodes=g['x'].size(0))
        for g in graphs])
    ctx = GraphContext.from_batch(batch)
    n = ctx.layout.n_max
    pair = torch.full((len(graphs), n, n, DIM), 1e3, dtype=F64)
    for b, g in enumerate(graphs):
        k = g['x'].size(0)
        pair[b, :k, :k] = g['pair']
    ctx.pair = pair
    return batch.x, ctx


def reference(layer, x, pair):
    """Eq. 5-7 for one graph, channel by channel, with the layer's weights."""
    n, dh = x.size(0), layer.head_dim
    q, k, v = layer.lin_q(x), layer.lin_k(x), layer.lin_v(x)
    e_att = layer.lin_edge_att(pair)
    e_val = (layer.lin_edge_val(pair) if layer.lin_edge_val is not None
             else torch.zeros(n, n, DIM, dtype=F64))
    out = torch.zeros(n, DIM, dtype=F64)
    for c in range(DIM):
        h = c // dh
        blk = slice(h * dh, (h + 1) * dh)
        bias = e_att[:, :, h] if layer.mono else e_att[:, :, c]
        a = torch.exp(q[:, blk] @ k[:, blk].T / math.sqrt(dh) + bias)
        a = a / a.sum(dim=1, keepdim=True)  # l1 over the nodes j
        out[:, c] = (a * (v[None, :, c] + e_val[:, :, c])).sum(dim=1)
    return layer.lin_out(out) if layer.lin_out is not None else out


GRAPHS = [make_graph(5, 0), make_graph(1, 1), make_graph(4, 2, isolated=True)]


@pytest.fixture(params=['one-block', 'size-blocks'])
def size_blocks(request, monkeypatch):
    """The graphs padded together (one block at these sizes) or in one size
    block per graph size (no cost per block)."""
    if request.param == 'size-blocks':
        monkeypatch.setattr(csa, 'BLOCK_OVERHEAD', 0)
    return request.param


@pytest.mark.parametrize('mono', [False, True])
@pytest.mark.parametrize('out_proj,edge_value', [(True, True), (False, True),
                                                 (True, False)])
def test_matches_dense_reference(mono, out_proj, edge_value, size_blocks):
    torch.manual_seed(0)
    layer = CSA(DIM, HEADS, mono=mono, out_proj=out_proj,
                edge_value=edge_value).double().eval()
    assert (layer.lin_edge_val is None) == (not edge_value)
    x, ctx = collate(GRAPHS)
    out, e = layer(x, None, ctx)
    plan = layer._plan(ctx)
    assert [(b.graphs, b.n) for b in plan.blocks] == (
        [(3, 5)] if size_blocks == "one-block" else [(1, 5), (1, 4), (1, 1)])
    assert e is None and out.shape == (x.size(0), DIM)
    start = 0
    for g in GRAPHS:
        n = g['x'].size(0)
        ref = reference(layer, g['x'], g['pair'])
        assert torch.allclose(out[start:start + n], ref, atol=1e-5)
        start += n


def test_mono_shapes_and_equivalence_with_head_constant_bias():
    torch.manual_seed(1)
    mono = CSA(DIM, HEADS, mono=True).double().eval()
    assert mono.lin_edge_att.out_features == HEADS
    color = CSA(DIM, HEADS, mono=False).double().eval()
    color.load_state_dict({k: v for k, v in mono.state_dict().items()
                           if 'edge_att' not in k}, strict=False)
    # Paper §3.2: (4) and (5) coincide when E_ij is constant on a head's channels.
    with torch.no_grad():
        color.lin_edge_att.weight.copy_(
            mono.lin_edge_att.weight.repeat_interleave(DIM // HEADS, dim=0))
    x, ctx = collate(GRAPHS)
    attn = mono.attention(x, ctx)
    assert attn.shape[-2:] == (HEADS, 1)
    assert torch.allclose(mono(x, None, ctx)[0], color(x, None, ctx)[0],
                          atol=1e-10)


def _permute(g, perm):
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(perm.numel())
    return dict(x=g['x'][perm], edge_index=inv[g['edge_index']],
                pair=g['pair'][perm][:, perm])


def test_permutation_equivariance(size_blocks):
    torch.manual_seed(2)
    layer = CSA(DIM, HEADS).double().eval()
    perms = [torch.randperm(g['x'].size(0)) for g in GRAPHS]
    x, ctx = collate(GRAPHS)
    xp, ctxp = collate([_permute(g, p) for g, p in zip(GRAPHS, perms)])
    out, outp = layer(x, None, ctx)[0], layer(xp, None, ctxp)[0]
    offset, full = 0, []
    for p in perms:
        full.append(p + offset)
        offset += p.numel()
    assert torch.allclose(out[torch.cat(full)], outp, atol=1e-10)


def test_graph_alone_equals_graph_in_batch(size_blocks):
    torch.manual_seed(3)
    layer = CSA(DIM, HEADS, attn_dropout=0.5).double().eval()
    x, ctx = collate(GRAPHS)
    out = layer(x, None, ctx)[0]
    alone = layer(*_alone(GRAPHS[2]))[0]
    assert torch.allclose(out[-GRAPHS[2]['x'].size(0):], alone, atol=1e-10)


def _alone(g):
    x, ctx = collate([g])
    return x, None, ctx


def test_isolated_and_single_node_graphs_are_finite(size_blocks):
    torch.manual_seed(4)
    layer = CSA(DIM, HEADS, attn_dropout=0.3).double().train()
    x, ctx = collate([make_graph(1, 5), make_graph(3, 6, isolated=True)])
    x.requires_grad_(True)
    out = layer(x, None, ctx)[0]
    out.square().sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(x.grad).all()


def _stack(share, layers=3):
    torch.manual_seed(5)
    stack = torch.nn.ModuleList(
        HybridLayer(DIM, glob=CSA(DIM, HEADS, share_edge_params=share),
                    norm='layer') for _ in range(layers)).double()
    for layer in list(stack)[1:]:  # as GPSModel does
        layer.branches['global'].tie_to(stack[0].branches['global'])
    return stack


def _run(stack, graphs):
    x, ctx = collate(graphs)
    for layer in stack:
        x, _ = layer(x, None, ctx)
    return x, ctx


def test_gradients_reach_every_parameter_and_shared_edges_sum_over_layers(size_blocks):
    untied = _stack(share=False)
    # Give layers 2..3 of the untied stack layer 1's edge maps, then load the
    # same weights into a stack whose edge maps are shared.
    for layer in list(untied)[1:]:
        for attr in ('lin_edge_att', 'lin_edge_val'):
            getattr(layer.branches['global'], attr).load_state_dict(
                getattr(untied[0].branches['global'], attr).state_dict())
    tied = _stack(share=True)
    tied.load_state_dict(untied.state_dict())
    first = tied[0].branches['global']
    for layer in tied:
        assert layer.branches['global'].lin_edge_att is first.lin_edge_att
        assert layer.branches['global'].lin_edge_val is first.lin_edge_val
    n_tied = sum(p.numel() for p in tied.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    assert n_untied - n_tied == 2 * 2 * (DIM * DIM)  # W_EA, W_EV of layers 2, 3
    out_t, ctx = _run(tied, GRAPHS)
    out_u, _ = _run(untied, GRAPHS)
    assert torch.allclose(out_t, out_u, atol=1e-10)
    assert len([k for k in ctx.extras if k.startswith('csa/edge')]) == 1
    out_t.square().sum().backward()
    out_u.square().sum().backward()
    for name, p in tied.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    # The shared maps collect the gradient of all three layers.
    for attr in ('lin_edge_att', 'lin_edge_val'):
        total = sum(getattr(layer.branches['global'], attr).weight.grad
                    for layer in untied)
        assert torch.allclose(getattr(first, attr).weight.grad, total,
                              atol=1e-8)


def test_shared_edge_terms_computed_once_per_batch():
    stack = _stack(share=True)
    calls = []
    stack[0].branches['global'].lin_edge_att.register_forward_hook(
        lambda *a: calls.append(1))
    _run(stack, GRAPHS)
    assert len(calls) == 1
    unshared = _stack(share=False)
    calls.clear()
    for layer in unshared:
        layer.branches['global'].lin_edge_att.register_forward_hook(
            lambda *a: calls.append(1))
    _run(unshared, GRAPHS)
    assert len(calls) == 3


def _train_attention(mode, mono=False, p=0.5):
    torch.manual_seed(7)
    layer = CSA(DIM, HEADS, mono=mono, attn_dropout=p,
                attn_dropout_mode=mode).double().train()
    graphs = [make_graph(6, 8), make_graph(5, 9)]
    x, ctx = collate(graphs)
    layer.eval()
    clean = layer.attention(x, ctx)
    layer.train()
    torch.manual_seed(8)
    dropped = layer.attention(x, ctx)
    real = ctx.layout.mask[:, :, None] & ctx.layout.mask[:, None, :]
    return clean, dropped, real


def test_connection_dropout_zeroes_whole_pairs_across_channels():
    clean, dropped, real = _train_attention('connection')
    zero = (dropped == 0).flatten(3)  # [B, n, n, d]
    pair_zero = zero.all(-1)
    assert torch.equal(zero.any(-1)[real], pair_zero[real])  # all or nothing
    assert pair_zero[real].any() and (~pair_zero[real]).any()
    kept = ~pair_zero & real
    assert torch.allclose(dropped[kept], 2 * clean[kept])  # 1 / (1 - p)


def test_node_dropout_zeroes_whole_key_nodes():
    clean, dropped, real = _train_attention('node')
    zero = (dropped == 0).flatten(3).all(-1)  # [B, i, j]
    b, j = torch.nonzero(real.any(1), as_tuple=True)
    for bb, jj in zip(b.tolist(), j.tolist()):
        col = zero[bb, real[bb, :, jj], jj]
        assert col.all() or not col.any()
    assert zero[real].any() and (~zero[real]).any()


@pytest.mark.parametrize('mono', [False, True])
def test_channel_dropout_is_elementwise(mono):
    clean, dropped, real = _train_attention('channel', mono=mono)
    assert dropped.shape[-1] == DIM // HEADS
    zero = (dropped == 0).flatten(3)[real]  # [P, d]
    mixed = zero.any(-1) & ~zero.all(-1)
    assert mixed.any()  # some pairs lose only some channels
    kept = dropped != 0
    assert torch.allclose(dropped[kept], 2 * clean.expand_as(dropped)[kept])


def test_eval_mode_has_no_dropout():
    torch.manual_seed(9)
    layer = CSA(DIM, HEADS, attn_dropout=0.9).double().eval()
    x, ctx = collate(GRAPHS)
    attn = layer.attention(x, ctx)
    assert torch.allclose(attn.sum(dim=2)[ctx.layout.mask],
                          torch.ones(1, dtype=F64))


def test_missing_pair_features_and_bad_config():
    layer = CSA(DIM, HEADS)
    x, ctx = collate(GRAPHS)
    ctx.pair = None
    with pytest.raises(ValueError, match='pairenc'):
        layer(x, None, ctx)
    with pytest.raises(ValueError, match='divisible'):
        CSA(DIM, 3)
    with pytest.raises(ValueError, match='attn_dropout_mode'):
        CSA(DIM, HEADS, attn_dropout_mode='edges')


def test_from_cfg_and_recording(size_blocks):
    cfg = CN()
    gt_cfg(cfg)
    CSA_OPTIONS(cfg)
    cfg.gt.n_heads, cfg.gt.attn_dropout = HEADS, 0.25
    cfg.csa.mono, cfg.csa.share_edge_params = True, True
    cfg.csa.parity_edge_bias = True
    layer = CSA.from_cfg(cfg, DIM).double()
    assert (layer.heads, layer.attn_dropout, layer.mono) == (HEADS, 0.25, True)
    assert layer.lin_edge_att.bias is not None
    layer.eval()
    x, ctx = collate(GRAPHS)
    ctx.record = {}
    layer(x, None, ctx)
    recorded = ctx.record['csa'][0]
    assert recorded.shape == (3, 5, 5, HEADS, 1)
    # The dense map is the per-graph softmax, zero at padding.
    torch.testing.assert_close(recorded, layer.attention(x, ctx).detach())
    real = ctx.layout.mask[:, :, None] & ctx.layout.mask[:, None, :]
    assert torch.all(recorded[~real] == 0)
    sums = recorded.sum(dim=2)[ctx.layout.mask]
    torch.testing.assert_close(sums, torch.ones_like(sums))
    # reset_parameters re-draws the weights.
    before = copy.deepcopy(layer.lin_q.weight)
    layer.reset_parameters()
    assert not torch.equal(before, layer.lin_q.weight)


@pytest.mark.parametrize('mono', [False, True])
@pytest.mark.parametrize('mode', ['connection', 'node'])
def test_row_blocks_give_the_same_outputs_and_gradients(mono, mode, size_blocks):
    """``chunk_elems``: query-row blocks under checkpointing = one pass."""
    p = 0.5 if mode == 'node' else 0.0  # node masks are drawn once: same RNG
    whole = CSA(DIM, HEADS, mono=mono, attn_dropout=p,
                attn_dropout_mode=mode).double().train()
    chunked = copy.deepcopy(whole)
    chunked.chunk_elems = 1  # one query row per chunk
    x, ctx = collate(GRAPHS)
    assert chunked._block_rows(ctx.layout.num_graphs, ctx.layout.n_max) == 1
    outs, grads = [], []
    for layer in (whole, chunked):
        xg = x.clone().requires_grad_(True)
        _, c = collate(GRAPHS)
        torch.manual_seed(11)
        out = layer(xg, None, c)[0]
        out.square().sum().backward()
        outs.append(out)
        grads.append([xg.grad] + [q.grad for q in layer.parameters()])
    torch.testing.assert_close(outs[0], outs[1])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)
    with torch.no_grad():
        whole.eval(), chunked.eval()
        torch.testing.assert_close(whole(x, None, ctx)[0],
                                   chunked(x, None, ctx)[0])
