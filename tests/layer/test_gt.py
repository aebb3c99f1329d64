import math

import pytest
import torch
from branch_checks import chord_path
from torch_geometric.data import Batch, Data
from yacs.config import CfgNode as CN

from graphgps_ext.config.gt import gt_cfg
from graphgps_ext.branches import GTLAYER_OPTIONS
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.gt import GT

DIM, HEADS = 8, 2
F64 = torch.float64  # layers run in float64; references compared to 1e-5


def make_graph(n, seed, isolated=False):
    return chord_path(n, DIM, seed, isolated, edge_features=True)


def collate(graphs):
    batch = Batch.from_data_list([
        Data(x=g['x'], edge_index=g['edge_index'], edge_attr=g['edge_attr'],
             num_nodes=g['x'].size(0)) for g in graphs])
    return batch.x, batch.edge_attr, GraphContext.from_batch(batch)


GRAPHS = [make_graph(5, 0), make_graph(1, 1), make_graph(4, 2, isolated=True)]
VARIANTS = [dict(), dict(edge_features=True), dict(full_graph=True)]


def normalise(s, valid, clamp_exp, eps=1e-6):
    """softmax over valid j (rows without any give 0), or the parity rule."""
    if clamp_exp:
        ex = s.clamp(-5, 5).exp() * valid
        return ex / (ex.sum(-1, keepdim=True) + eps)
    s = s.masked_fill(~valid, float('-inf'))
    return torch.nan_to_num(torch.softmax(s, dim=-1), nan=0.0)


def reference(layer, g, clamp_exp=False):
    """Eq. 4-5 / 9-18 for one graph, densely, with the layer's weights."""
    x, ei, ea = g['x'], g['edge_index'], g['edge_attr']
    n, dk = x.size(0), layer.head_dim
    valid = torch.zeros(n, n, dtype=torch.bool)  # valid[i, j]: j -> i
    if layer.full_graph:
        valid[:] = True
        valid.fill_diagonal_(False)
    else:
        valid[ei[1], ei[0]] = True
    q, k, v = layer.lin_q(x), layer.lin_k(x), layer.lin_v(x)
    e_dense = torch.zeros(n, n, DIM, dtype=F64)
    if layer.edge_features:
        e_dense[ei[1], ei[0]] = layer.lin_e(ea)
    heads, w_hat_all = [], torch.zeros(n, n, DIM, dtype=F64)
    for h in range(layer.heads):
        blk = slice(h * dk, (h + 1) * dk)
        prod = q[:, None, blk] * k[None, :, blk] / math.sqrt(dk)  # [i, j, c]
        if layer.edge_features:
            prod = prod * e_dense[:, :, blk]
            w_hat_all[:, :, blk] = prod
        w = normalise(prod.sum(-1), valid, clamp_exp)
        heads.append(w @ v[:, blk])
    out = layer.lin_o(torch.cat(heads, dim=1))
    if not layer.edge_features:
        return out, None
    e = ea + layer.lin_oe(w_hat_all[ei[1], ei[0]])
    e = layer.norm1_e(e)
    e = layer.norm2_e(e + layer.ffn_e(e))
    return out, e


@pytest.mark.parametrize('variant', VARIANTS)
@pytest.mark.parametrize('clamp_exp', [False, True])
def test_matches_dense_reference(variant, clamp_exp):
    torch.manual_seed(0)
    layer = GT(DIM, HEADS, norm='layer', clamp_exp=clamp_exp,
               **variant).double().eval()
    if clamp_exp:  # large scores so that the clamp matters
        with torch.no_grad():
            layer.lin_q.weight.mul_(6.0)
    x, ea, ctx = collate(GRAPHS)
    out, e = layer(x, ea, ctx)
    start, estart = 0, 0
    for g in GRAPHS:
        n, m = g['x'].size(0), g['edge_index'].size(1)
        ref, ref_e = reference(layer, g, clamp_exp)
        assert torch.allclose(out[start:start + n], ref, atol=1e-5)
        if layer.edge_features:
            assert torch.allclose(e[estart:estart + m], ref_e, atol=1e-5)
        start, estart = start + n, estart + m
    assert (e is None) == (not layer.edge_features)


def test_isolated_node_gets_zero_message_and_parity_nan():
    torch.manual_seed(1)
    x, ea, ctx = collate(GRAPHS)
    isolated = x.size(0) - 1  # last node of the last graph
    for variant in VARIANTS:
        layer = GT(DIM, HEADS, **variant).double().eval()
        out = layer(x, ea, ctx)[0]
        assert torch.isfinite(out).all()
        # No neighbour: O_h applied to 0 gives the bias (sparse variants).
        if not layer.full_graph:
            assert torch.allclose(out[isolated], layer.lin_o.bias)
        # Single-node graph: no other node in the full graph either.
        assert torch.allclose(out[5], layer.lin_o.bias)
    parity = GT(DIM, HEADS, clamp_exp=True, no_eps=True).double().eval()
    out = parity(x, ea, ctx)[0]
    assert torch.isnan(out[isolated]).all() and torch.isfinite(out[:5]).all()
    # The edge layer keeps the authors' epsilon even with no_eps.
    edge = GT(DIM, HEADS, edge_features=True, clamp_exp=True,
              no_eps=True).double().eval()
    assert torch.isfinite(edge(x, ea, ctx)[0]).all()


@pytest.mark.parametrize('variant', VARIANTS)
def test_isolated_and_single_node_graphs_are_finite_with_gradients(variant):
    torch.manual_seed(2)
    layer = GT(DIM, HEADS, attn_dropout=0.2, dropout=0.2, **variant).double()
    x, ea, ctx = collate([make_graph(1, 3), make_graph(4, 4, isolated=True)])
    x.requires_grad_(True)
    out, e = layer(x, ea, ctx)
    loss = out.square().sum() + (e.square().sum() if e is not None else 0)
    loss.backward()
    assert torch.isfinite(out).all() and torch.isfinite(x.grad).all()


def _permute(g, perm):
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(perm.numel())
    return dict(x=g['x'][perm], edge_index=inv[g['edge_index']],
                edge_attr=g['edge_attr'])


@pytest.mark.parametrize('variant', VARIANTS)
def test_permutation_equivariance(variant):
    torch.manual_seed(5)
    layer = GT(DIM, HEADS, **variant).double().eval()
    perms = [torch.randperm(g['x'].size(0)) for g in GRAPHS]
    x, ea, ctx = collate(GRAPHS)
    xp, eap, ctxp = collate([_permute(g, p) for g, p in zip(GRAPHS, perms)])
    offset, full = 0, []
    for p in perms:
        full.append(p + offset)
        offset += p.numel()
    out, e = layer(x, ea, ctx)
    outp, ep = layer(xp, eap, ctxp)
    assert torch.allclose(out[torch.cat(full)], outp, atol=1e-10)
    if e is not None:  # edges keep their order, only endpoints are relabelled
        assert torch.allclose(e, ep, atol=1e-10)


@pytest.mark.parametrize('variant', VARIANTS)
def test_graph_alone_equals_graph_in_batch(variant):
    torch.manual_seed(6)
    layer = GT(DIM, HEADS, norm='batch', attn_dropout=0.5, **variant).double()
    x, ea, ctx = collate(GRAPHS)
    layer.train()
    layer(x, ea, ctx)  # move BatchNorm running statistics off their init
    layer.eval()
    out, e = layer(x, ea, ctx)
    xa, eaa, ctxa = collate([GRAPHS[0]])
    alone, e_alone = layer(xa, eaa, ctxa)
    n, m = GRAPHS[0]['x'].size(0), GRAPHS[0]['edge_index'].size(1)
    assert torch.allclose(out[:n], alone, atol=1e-10)
    if e is not None:
        assert torch.allclose(e[:m], e_alone, atol=1e-10)


@pytest.mark.parametrize('variant', VARIANTS)
def test_gradients_reach_every_parameter(variant):
    torch.manual_seed(7)
    layer = GT(DIM, HEADS, **variant).double().train()
    x, ea, ctx = collate(GRAPHS)
    out, e = layer(x, ea, ctx)
    (out.square().sum() + (e.square().sum() if e is not None else 0)).backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_attention_is_logged_and_sums_to_one():
    torch.manual_seed(8)
    layer = GT(DIM, HEADS).double().eval()
    x, ea, ctx = collate(GRAPHS)
    ctx.record = {}
    layer(x, ea, ctx)
    w = ctx.record['gt'][0]  # [E, H]
    assert w.shape == (ctx.edge_index.size(1), HEADS)
    sums = torch.zeros(x.size(0), HEADS, dtype=F64).index_add_(
        0, ctx.edge_index[1], w)
    has_in = torch.bincount(ctx.edge_index[1], minlength=x.size(0)) > 0
    assert torch.allclose(sums[has_in], torch.ones(1, dtype=F64))


def test_errors_and_from_cfg():
    with pytest.raises(ValueError, match='gtlayer.edge_features'):
        GT(DIM, HEADS, full_graph=True, edge_features=True)
    layer = GT(DIM, HEADS, edge_features=True).double()
    x, ea, ctx = collate(GRAPHS)
    with pytest.raises(ValueError, match='edge encoder'):
        layer(x, None, ctx)
    cfg = CN()
    gt_cfg(cfg)
    GTLAYER_OPTIONS(cfg)
    cfg.gt.n_heads, cfg.gt.norm = HEADS, 'layer'
    cfg.gtlayer.edge_features, cfg.gtlayer.parity_clamp_exp = True, True
    layer = GT.from_cfg(cfg, DIM)
    assert layer.edge_features and layer.clamp_exp and layer.heads == HEADS
    assert isinstance(layer.norm1_e, torch.nn.LayerNorm)
    assert layer.lin_q.bias is None and layer.lin_o.bias is not None
