import pytest
import torch
from torch_geometric.data import Batch
from yacs.config import CfgNode as CN

from branch_checks import (batch_dependence, check_degenerate, check_gradients,
                           check_permutation_equivariance, context, graphs, run)
from graphgps_ext.branches import GEA_OPTIONS
from graphgps_ext.layer.gea import GEANet, double_norm

D, H, S = 8, 2, 5


def lin(m, x):
    """Apply ``nn.Linear`` ``m`` explicitly: ``x W^T (+ b)``."""
    y = x @ m.weight.T
    return y if m.bias is None else y + m.bias


def gea_reference(x, key, value, heads, strided=False):
    """Multi-head GEA (eq. 2, 3, 5 without W_o) on one group of rows ``x``
    ``[n, d]`` (a graph, or the whole batch): the paper's equation."""
    n, d = x.shape
    dh = d // heads
    outs = []
    for h in range(heads):
        cols = torch.arange(h, d, heads) if strided else torch.arange(h * dh, (h + 1) * dh)
        a_tilde = lin(key, x[:, cols])                       # [n, S]
        a_hat = a_tilde.exp() / a_tilde.exp().sum(0, keepdim=True)  # over rows
        alpha = a_hat / a_hat.sum(1, keepdim=True)           # over slots
        outs.append(lin(value, alpha))                       # alpha U_v
    return torch.cat(outs, dim=1)


def geanet_reference(m: GEANet, batch, per_graph=True, strided=False):
    """GEANet outputs ``(X_G, E_G)`` computed graph by graph with explicit loops."""
    x, e = batch.x, batch.edge_attr
    if m.shared is not None:
        assert m.shared_width == 'full'
        xs, e_s = lin(m.shared, x), lin(m.shared, e)
    else:
        xs, e_s = x, e
    edge_graph = batch.batch[batch.edge_index[0]]
    groups = range(batch.num_graphs) if per_graph else [None]
    x_out = torch.zeros_like(x)
    e_out = torch.zeros_like(e)
    for g in groups:
        nm = batch.batch == g if g is not None else torch.ones_like(batch.batch, dtype=torch.bool)
        em = edge_graph == g if g is not None else torch.ones_like(edge_graph, dtype=torch.bool)
        if m.node_key is not None:
            x_out[nm] = gea_reference(xs[nm], m.node_key, m.node_value, m.n_heads)
        if m.edge_key is not None and em.any():
            e_out[em] = gea_reference(e_s[em], m.edge_key, m.edge_value,
                                      m.n_heads, strided)
    if m.node_out is not None:
        x_out = lin(m.node_out, x_out)
    if m.edge_out is not None:
        e_out = lin(m.edge_out, e_out)
    if m.edge_skip:
        e_out = e + e_out
    return x_out, e_out


def data(seed=0):
    return graphs([4, 6, 3], D, seed=seed)


def test_matches_dense_reference():
    torch.manual_seed(0)
    m = GEANet(D, H, S).double().eval()
    x, e, batch = run(m, data())
    x_ref, e_ref = geanet_reference(m, batch)
    torch.testing.assert_close(x, x_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e, e_ref, atol=1e-5, rtol=1e-5)


def test_all_parity_switches_match_authors_reference():
    """All switches on = the authors' GEANet code: batch softmax,
    S = d/H, biased units, no W_o, strided edge heads, no edge skip."""
    torch.manual_seed(0)
    m = GEANet(D, H, D // H, batch_softmax=True, unit_bias=True,
               out_proj=False, strided_edge_heads=True,
               edge_skip=False).double().eval()
    x, e, batch = run(m, data())
    x_ref, e_ref = geanet_reference(m, batch, per_graph=False, strided=True)
    torch.testing.assert_close(x, x_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e, e_ref, atol=1e-5, rtol=1e-5)
    # The authors' parameter count: node and edge units S x S (+ S biases)
    # each, U_s d x d + d.
    s = D // H
    assert sum(p.numel() for p in m.parameters()) == 4 * (s * s + s) + D * D + D


def test_slots_are_independent_of_head_width():
    m = GEANet(D, H, num_slots=11)
    assert m.node_key.weight.shape == (11, D // H)
    assert m.node_value.weight.shape == (D // H, 11)
    x, e, _ = run(m.double(), data())
    assert x.shape == (13, D)


def test_batch_independent_by_default_and_parity_switch_shows_dependence():
    torch.manual_seed(0)
    m = GEANet(D, H, S).double()
    assert batch_dependence(m, data()) < 1e-10
    m.batch_softmax = True
    assert batch_dependence(m, data()) > 1e-3


@pytest.mark.parametrize('kw', [
    {}, dict(shared_width='head'), dict(edge_norm='batch'),
    dict(batch_softmax=False, unit_bias=True, out_proj=False,
         strided_edge_heads=True, edge_skip=False),
    dict(node_unit=False), dict(edge_unit=False),
])
def test_permutation_equivariance(kw):
    torch.manual_seed(0)
    check_permutation_equivariance(GEANet(D, H, S, **kw).double(), data())


def test_batch_softmax_is_equivariant_too():
    torch.manual_seed(0)
    check_permutation_equivariance(
        GEANet(D, H, S, batch_softmax=True).double(), data())


@pytest.mark.parametrize('kw', [{}, dict(shared_width='head', edge_norm='layer')])
def test_gradients_reach_every_parameter(kw):
    torch.manual_seed(0)
    check_gradients(GEANet(D, H, S, **kw).double(), data())


def test_key_bias_gets_no_gradient_with_parity_unit_bias():
    """A per-slot key bias is a constant shift under the softmax over nodes:
    the authors' key biases are inert (documented fact, checked here)."""
    torch.manual_seed(0)
    m = GEANet(D, H, S, unit_bias=True).double()
    check_gradients(m, data(), zero_ok=('node_key.bias', 'edge_key.bias'))
    assert m.node_key.bias.grad.abs().max() < 1e-10


def test_degenerate_graphs_are_finite():
    torch.manual_seed(0)
    check_degenerate(GEANet(D, H, S).double(), D)
    check_degenerate(GEANet(D, H, S, edge_norm='batch').double(), D)


def test_double_norm_is_stable_for_large_scores():
    scores = torch.tensor([[[0.0, 200.0]], [[-200.0, 0.0]]])  # [2, 1, 2]
    group = torch.zeros(2, dtype=torch.long)
    out = double_norm(scores, group, 1)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.sum(-1), torch.ones(2, 1))
    # Row 1's slot-0 mass (exp(-200)/...) vanishes next to its slot-1 mass.
    ref = double_norm(scores.double(), group, 1)
    torch.testing.assert_close(out.double(), ref)


def test_table4_switches_change_parameter_set():
    names = lambda m: {n.split('.')[0] for n, _ in m.named_parameters()}
    assert names(GEANet(D, H, S, edge_unit=False, shared_unit=False)) == \
        {'node_key', 'node_value', 'node_out'}
    assert names(GEANet(D, H, S, shared_unit=False)) == \
        {'node_key', 'node_value', 'node_out', 'edge_key', 'edge_value', 'edge_out'}
    assert names(GEANet(D, H, S)) == \
        {'node_key', 'node_value', 'node_out', 'edge_key', 'edge_value',
         'edge_out', 'shared'}
    assert names(GEANet(D, H, S, node_unit=False)) == \
        {'edge_key', 'edge_value', 'edge_out', 'shared'}
    full = GEANet(D, H, S)
    assert full.shared.weight.shape == (D, D)
    assert GEANet(D, H, S, shared_width='head').shared.weight.shape == (D // H, D // H)
    assert sum(p.numel() for p in full.parameters()) == \
        2 * (2 * S * (D // H) + D * D) + D * D
    with pytest.raises(ValueError, match="external branch in gt.layer_type"):
        GEANet(D, H, S, node_unit=False, edge_unit=False)


def test_unit_switch_semantics():
    torch.manual_seed(0)
    dl = data()
    x, e, batch = run(GEANet(D, H, S, edge_unit=False).double(), dl)
    assert e is None  # edge stream left unchanged
    x, e, batch = run(GEANet(D, H, S, node_unit=False).double(), dl)
    assert torch.equal(x, torch.zeros_like(x)) and e is not None
    m = GEANet(D, H, S, shared_unit=False).double().eval()
    x, e, batch = run(m, dl)
    x_ref, e_ref = geanet_reference(m, batch)
    torch.testing.assert_close(x, x_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e, e_ref, atol=1e-5, rtol=1e-5)


def test_head_shared_unit_is_applied_to_every_head():
    torch.manual_seed(0)
    m = GEANet(D, H, S, shared_width='head').double().eval()
    x, _, batch = run(m, data())
    W = m.shared.weight
    blockdiag = torch.block_diag(*[W] * H)
    ref_m = GEANet(D, H, S).double().eval()
    ref_m.load_state_dict({k: v for k, v in m.state_dict().items()
                           if not k.startswith('shared')}, strict=False)
    ref_m.shared.weight.data.copy_(blockdiag)
    x_ref, _ = geanet_reference(ref_m, batch)
    torch.testing.assert_close(x, x_ref, atol=1e-5, rtol=1e-5)


def test_strided_edge_heads_permute_channels():
    torch.manual_seed(0)
    m = GEANet(D, H, S, edge_skip=False, out_proj=False).double().eval()
    _, e_default, batch = run(m, data())
    m.strided_edge_heads = True
    _, e_strided, _ = run(m, data())
    assert not torch.allclose(e_default, e_strided)
    _, e_ref = geanet_reference(m, batch, strided=True)
    torch.testing.assert_close(e_strided, e_ref, atol=1e-5, rtol=1e-5)


def test_edge_skip_switch():
    torch.manual_seed(0)
    m = GEANet(D, H, S).double().eval()
    _, e_skip, batch = run(m, data())
    m.edge_skip = False
    _, e_plain, _ = run(m, data())
    torch.testing.assert_close(e_skip - e_plain, batch.edge_attr)


def test_missing_edge_features_error():
    m = GEANet(D, H, S)
    batch = Batch.from_data_list(graphs([3], D, dtype=torch.float32))
    with pytest.raises(ValueError, match='DummyEdge'):
        m(batch.x, None, context(batch))
    x, e = GEANet(D, H, S, edge_unit=False)(batch.x, None, context(batch))
    assert e is None


def test_attention_maps_are_logged():
    m = GEANet(D, H, S).double()
    rec = {}
    x, e, batch = run(m, data(), record=rec)
    assert rec['gea/node'][0].shape == (batch.num_nodes, H, S)
    assert rec['gea/edge'][0].shape == (batch.edge_index.size(1), H, S)
    torch.testing.assert_close(rec['gea/node'][0].sum(-1),
                               torch.ones(batch.num_nodes, H, dtype=torch.float64))


def _cfg(**gea):
    cfg = CN()
    GEA_OPTIONS(cfg)
    for k, v in gea.items():
        cfg.gea[k] = v
    return cfg


def test_from_cfg_parity_switches():
    m = GEANet.from_cfg(_cfg(), 64)
    assert m.num_slots == 16 and m.node_out is not None and not m.batch_softmax
    m = GEANet.from_cfg(_cfg(parity_batch_softmax=True,
                             parity_slots_eq_head_dim=True,
                             parity_unit_bias=True, parity_no_out_proj=True,
                             parity_strided_edge_heads=True,
                             parity_edge_no_skip=True), 64)
    assert m.num_slots == 64 // 4
    assert m.batch_softmax and m.strided_edge_heads and not m.edge_skip
    assert m.node_out is None and m.edge_out is None
    assert m.node_key.bias is not None and m.shared.bias is not None
    m = GEANet.from_cfg(_cfg(n_heads=8, parity_slots_eq_head_dim=True), 224)
    assert m.num_slots == 28  # GEAET Table 6, Peptides-struct


def test_indivisible_heads_error():
    with pytest.raises(ValueError, match='gea.n_heads'):
        GEANet(10, 4, S)
