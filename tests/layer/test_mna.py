import math

import pytest
import torch
from branch_checks import chord_path
from torch_geometric.data import Batch, Data
from yacs.config import CfgNode as CN

from graphgps_ext.config.gt import gt_cfg
from graphgps_ext.branches import MNA_OPTIONS
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.hybrid import HybridLayer
from graphgps_ext.layer.mna import MNA, normalized_adjacency

DIM, HEADS = 8, 2
F64 = torch.float64  # layers run in float64; references compared to 1e-5


def make_graph(n, seed, isolated=False):
    return chord_path(n, DIM, seed, isolated)


def collate(graphs):
    batch = Batch.from_data_list([
        Data(x=g['x'], edge_index=g['edge_index'], num_nodes=g['x'].size(0))
        for g in graphs])
    return batch.x, GraphContext.from_batch(batch)


GRAPHS = [make_graph(6, 0), make_graph(1, 1), make_graph(4, 2, isolated=True)]


def dense_adj(g, norm):
    n = g['x'].size(0)
    a = torch.zeros(n, n, dtype=F64)
    a[g['edge_index'][1], g['edge_index'][0]] = 1.0  # A_ij: edge j -> i
    a = a + torch.eye(n, dtype=F64)
    deg = a.sum(1)
    if norm == 'sym':
        return deg.pow(-0.5)[:, None] * a * deg.pow(-0.5)[None, :]
    return a / deg[:, None]


def reference(layer, g, norm):
    """Eq. 7-10 for one graph with the layer's weights."""
    x, a_hat = g['x'], dense_adj(g, norm)
    dh, m = layer.head_dim, layer.heads
    zs = []
    for k in range(layer.kernels):
        p = torch.linalg.matrix_power(a_hat, k) @ x
        q, kk, v = (p @ layer.weight_q[k], p @ layer.weight_k[k],
                    x @ layer.weight_v[k])
        heads = []
        for h in range(m):
            blk = slice(h * dh, (h + 1) * dh)
            att = torch.softmax(q[:, blk] @ kk[:, blk].T / math.sqrt(dh), dim=1)
            heads.append(att @ v[:, blk])
        zs.append(torch.cat(heads, dim=1) @ layer.weight_o[k])
    z = torch.stack(zs, dim=1)  # [n, K, d]
    if layer.fusion == 'sum':
        out = z.sum(1)
    elif layer.fusion == 'mean':
        out = z.mean(1)
    elif layer.fusion == 'concat':
        out = z.reshape(x.size(0), -1) @ layer.lin_fuse.weight.T
    else:
        s = torch.tanh(z @ layer.lin_fuse.weight.T) @ layer.fuse_vec
        out = (torch.softmax(s, dim=1)[..., None] * z).sum(1)
    return out, a_hat @ x


@pytest.mark.parametrize('norm', ['sym', 'rw'])
@pytest.mark.parametrize('fusion', ['adaptive', 'sum', 'mean', 'concat'])
def test_matches_dense_reference(norm, fusion):
    torch.manual_seed(0)
    layer = MNA(DIM, HEADS, hops=2, adj_norm=norm, fusion=fusion).double().eval()
    x, ctx = collate(GRAPHS)
    out, e = layer(x, None, ctx)
    skip = layer.skip(x, ctx)
    assert e is None and out.shape == x.shape
    start = 0
    for g in GRAPHS:
        n = g['x'].size(0)
        ref, ref_skip = reference(layer, g, norm)
        assert torch.allclose(out[start:start + n], ref, atol=1e-5)
        assert torch.allclose(skip[start:start + n], ref_skip, atol=1e-5)
        start += n


def test_adjacency_is_normalised_and_cached():
    x, ctx = collate(GRAPHS)
    ei, w = normalized_adjacency(ctx.edge_index, ctx.num_nodes, 'rw')
    row = torch.zeros(ctx.num_nodes).index_add_(0, ei[1], w.float())
    assert torch.allclose(row, torch.ones(ctx.num_nodes))  # D^-1 (A+I): rows sum to 1
    layer = MNA(DIM, HEADS).double()
    first = layer.adjacency(ctx)
    layer(x, None, ctx)
    assert layer.adjacency(ctx) is first and 'mna/adj/sym' in ctx.extras
    with pytest.raises(ValueError, match='mna.adj_norm'):
        normalized_adjacency(ctx.edge_index, ctx.num_nodes, 'lap')


def test_kernel_zero_is_plain_attention():
    """hops=0 leaves one kernel (X, X, X): a Transformer with W_O."""
    torch.manual_seed(1)
    layer = MNA(DIM, HEADS, hops=0, fusion='sum').double().eval()
    g = GRAPHS[0]
    x, ctx = collate([g])
    mha = torch.nn.MultiheadAttention(DIM, HEADS, bias=False,
                                      batch_first=True).double().eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([layer.weight_q[0].T,
                                            layer.weight_k[0].T,
                                            layer.weight_v[0].T]))
        mha.out_proj.weight.copy_(layer.weight_o[0].T)
    ref = mha(x[None], x[None], x[None], need_weights=False)[0][0]
    assert torch.allclose(layer(x, None, ctx)[0], ref, atol=1e-10)


def test_fusion_modes():
    torch.manual_seed(2)
    x, ctx = collate(GRAPHS)
    base = MNA(DIM, HEADS, hops=2, fusion='sum').double().eval()
    z = base.kernels_out(x, ctx)
    assert z.shape == (x.size(0), 3, DIM)
    assert torch.allclose(base.fuse(z), z.sum(1))
    mean = MNA(DIM, HEADS, hops=2, fusion='mean').double().eval()
    mean.load_state_dict(base.state_dict())
    assert torch.allclose(mean(x, None, ctx)[0], z.sum(1) / 3)
    concat = MNA(DIM, HEADS, hops=2, fusion='concat').double()
    assert concat.lin_fuse.weight.shape == (DIM, 3 * DIM)
    adaptive = MNA(DIM, HEADS, hops=2, fusion='adaptive').double().eval()
    ctx.record = {}
    adaptive.fuse(z, ctx)
    alpha = ctx.record['mna/alpha'][0]
    assert alpha.shape == (x.size(0), 3)
    assert torch.allclose(alpha.sum(1), torch.ones(x.size(0), dtype=F64))
    assert alpha.std(0).sum() > 0  # per node, not one global weight
    with torch.no_grad():  # w = 0: uniform alpha, i.e. the mean
        adaptive.fuse_vec.zero_()
    assert torch.allclose(adaptive.fuse(z), z.mean(1))


def _permute(g, perm):
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(perm.numel())
    return dict(x=g['x'][perm], edge_index=inv[g['edge_index']])


def test_permutation_equivariance():
    torch.manual_seed(3)
    layer = MNA(DIM, HEADS, hops=3).double().eval()
    perms = [torch.randperm(g['x'].size(0)) for g in GRAPHS]
    x, ctx = collate(GRAPHS)
    xp, ctxp = collate([_permute(g, p) for g, p in zip(GRAPHS, perms)])
    offset, full = 0, []
    for p in perms:
        full.append(p + offset)
        offset += p.numel()
    idx = torch.cat(full)
    assert torch.allclose(layer(x, None, ctx)[0][idx], layer(xp, None, ctxp)[0],
                          atol=1e-10)
    assert torch.allclose(layer.skip(x, ctx)[idx], layer.skip(xp, ctxp),
                          atol=1e-10)


def test_graph_alone_equals_graph_in_batch():
    torch.manual_seed(4)
    layer = MNA(DIM, HEADS, attn_dropout=0.5).double().eval()
    x, ctx = collate(GRAPHS)
    out = layer(x, None, ctx)[0]
    xa, ctxa = collate([GRAPHS[0]])
    assert torch.allclose(out[:GRAPHS[0]['x'].size(0)],
                          layer(xa, None, ctxa)[0], atol=1e-10)


@pytest.mark.parametrize('fusion', ['adaptive', 'sum', 'mean', 'concat'])
def test_gradients_reach_every_parameter(fusion):
    torch.manual_seed(5)
    layer = MNA(DIM, HEADS, fusion=fusion).double().train()
    x, ctx = collate(GRAPHS)
    layer(x, None, ctx)[0].square().sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_isolated_and_single_node_graphs_are_finite():
    torch.manual_seed(6)
    layer = MNA(DIM, HEADS, attn_dropout=0.2).double().train()
    x, ctx = collate([make_graph(1, 7), make_graph(3, 8, isolated=True)])
    x.requires_grad_(True)
    out = layer(x, None, ctx)[0] + layer.skip(x, ctx)
    out.square().sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(x.grad).all()


def test_hybrid_pre_norm_layer_is_eq_11_12():
    torch.manual_seed(7)
    layer = HybridLayer(DIM, glob=MNA(DIM, HEADS), norm='layer', pre_norm=True,
                        ffn_mult=2.0, act='gelu').double().eval()
    x, ctx = collate(GRAPHS)
    mna, ln1 = layer.branches['global'], layer.norms['global']
    z = mna(ln1(x), None, ctx)[0] + mna.skip(x, ctx)  # eq. 11
    ref = z + layer.ffn(layer.ffn_norm(z))  # eq. 12
    assert torch.allclose(layer(x, None, ctx)[0], ref, atol=1e-10)


def test_from_cfg_head_dim_and_errors():
    cfg = CN()
    gt_cfg(cfg)
    MNA_OPTIONS(cfg)
    cfg.gt.n_heads, cfg.mna.hops, cfg.mna.fusion = 3, 1, 'concat'
    with pytest.raises(ValueError, match='mna.head_dim'):
        MNA.from_cfg(cfg, DIM)  # 8 is not divisible by 3
    cfg.mna.head_dim = 5
    layer = MNA.from_cfg(cfg, DIM)
    assert (layer.heads, layer.head_dim, layer.kernels) == (3, 5, 2)
    assert layer.fused
    cfg.gt.fused_attention = False
    assert not MNA.from_cfg(cfg, DIM).fused
    assert layer.weight_q.shape == (2, DIM, 15)
    x, ctx = collate([{k: v.float() if v.is_floating_point() else v
                       for k, v in GRAPHS[0].items()}])
    assert layer(x, None, ctx)[0].shape == x.shape
    with pytest.raises(ValueError, match='mna.fusion'):
        MNA(DIM, HEADS, fusion='max')
