"""Recorder: shapes and normalisation of every branch's attention
(GEAET eq. 3, Transformer / GT / CSA softmax rows, MNA eq. 10)."""
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.utils import scatter

from graphgps_ext.task import TaskInfo
from graphgps_ext.viz import graph_maps, node_scores, record_attention
from graphgps_ext.viz.record import sparse_to_dense

D, H, LAYERS = 16, 4, 2


def zinc_like(sizes, seed=0):
    """Ring-with-chords molecules with ZINC-style ids (x [N, 1], bonds 1..3)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        src = torch.arange(n)
        dst = (src + 1) % n
        if n > 4:
            src, dst = torch.cat([src, src[:1]]), torch.cat([dst, dst[2:3]])
        ei = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], 1)
        bond = torch.randint(1, 4, (src.numel(),), generator=g)
        out.append(Data(x=torch.randint(0, 28, (n, 1), generator=g),
                        edge_index=ei, edge_attr=torch.cat([bond, bond]),
                        y=torch.randn(1, 1, generator=g)))
    return out


def zinc_task():
    return TaskInfo(name='subset', task='graph', task_type='regression',
                    num_outputs=1, loss='l1', metric='mae', metric_direction='min',
                    metrics=['mae'], node_encoder='TypeDictNode', node_dim=1,
                    node_num_types=28, edge_encoder='TypeDictEdge', edge_dim=1,
                    edge_num_types=4)


def build(layer_type, *opts):
    from graphgps_ext.runs.config import load_cfg
    from graphgps_ext.network.model import GPSModel
    cfg = load_cfg(None, ['gt.layer_type', layer_type, 'gt.layers', str(LAYERS),
                          'gt.dim_hidden', str(D), 'gt.n_heads', str(H),
                          'accelerator', 'cpu'] + list(opts))
    torch.manual_seed(0)
    return GPSModel(cfg, zinc_task())


def batch_of(sizes=(3, 6, 8)):
    return Batch.from_data_list(zinc_like(sizes))


def per_graph_sum(s, batch):
    return scatter(s, batch.batch, 0, dim_size=batch.num_graphs, reduce='sum')


def check_dense_rows(maps, batch, exclude_self=False):
    """Real query rows sum to 1 over the keys of their graph, the rest is 0."""
    counts = torch.bincount(batch.batch)
    n = int(counts.max())
    mask = torch.arange(n)[None, :] < counts[:, None]  # [B, n]
    rows = maps.sum(-1)  # [B, H, n]
    expect = mask[:, None, :].expand_as(rows).to(rows.dtype)
    if exclude_self:  # full-graph GT: a single-node graph has no key
        expect = expect * (counts > 1)[:, None, None]
    torch.testing.assert_close(rows, expect)
    assert (maps * ~mask[:, None, None, :]).abs().max() == 0


def test_gea_and_transformer_maps():
    model, batch = build('GINE+Transformer+GEANet'), batch_of()
    model.train()
    rec = record_attention(model, batch)
    assert model.training  # mode restored
    N, E = batch.num_nodes, batch.edge_index.size(1)
    assert len(rec['gea/node']) == len(rec['transformer']) == LAYERS
    S = rec['gea/node'][0].size(-1)
    for a, col, e in zip(rec['gea/node'], rec['gea/node_col'], rec['gea/edge']):
        assert a.shape == col.shape == (N, H, S) and e.shape == (E, H, S)
        torch.testing.assert_close(a.sum(-1), torch.ones(N, H))  # L1 over slots
        torch.testing.assert_close(e.sum(-1), torch.ones(E, H))
        torch.testing.assert_close(per_graph_sum(col, batch),  # softmax over nodes
                                   torch.ones(batch.num_graphs, H, S))
        # alpha is the row-L1 normalisation of alpha-hat (eq. 3)
        torch.testing.assert_close(a, col / col.sum(-1, keepdim=True))
    for t in rec['transformer']:
        assert t.shape == (3, H, 8, 8)
        check_dense_rows(t, batch)
    for branch in ('GEANet', 'Transformer'):
        s = node_scores(rec, branch, batch)
        assert s.shape == (N,) and (s >= 0).all()
        torch.testing.assert_close(per_graph_sum(s, batch), torch.ones(3))
    s_mean = node_scores(rec, 'GEANet', batch, layer='mean')
    torch.testing.assert_close(per_graph_sum(s_mean, batch), torch.ones(3))
    assert graph_maps(rec, 'Transformer', batch, 0).shape == (H, 3, 3)
    with pytest.raises(ValueError, match='layer 5'):
        node_scores(rec, 'GEANet', batch, layer=5)
    with pytest.raises(KeyError, match='no CSA branch'):
        node_scores(rec, 'CSA', batch)


def test_recording_does_not_change_predictions():
    model, batch = build('GINE+Transformer+GEANet'), batch_of()
    model.eval()
    with torch.no_grad():
        plain, _ = model(batch)
        recorded, _ = model(batch, record={})
    torch.testing.assert_close(plain, recorded)


def test_csa_per_channel_rows():
    model, batch = build('None+CSA+None'), batch_of()
    rec = record_attention(model, batch)
    assert len(rec['csa']) == LAYERS
    for a in rec['csa']:
        assert a.shape == (3, 8, 8, H, D // H)
        per_channel = a.reshape(3, 8, 8, D).permute(0, 3, 1, 2)  # [B, C, n, n]
        counts = torch.bincount(batch.batch)
        real = (torch.arange(8)[None, :] < counts[:, None])
        # every channel's row sums to 1 over the real keys
        torch.testing.assert_close(per_channel.sum(-1)[real[:, None, :].expand(3, D, 8)],
                                   torch.ones(int(real.sum()) * D))
        assert (per_channel * ~real[:, None, None, :]).abs().max() < 1e-6
    maps = graph_maps(rec, 'CSA', batch, 2)
    assert maps.shape == (D, 8, 8)
    torch.testing.assert_close(maps.sum(-1), torch.ones(D, 8))
    s = node_scores(rec, 'CSA', batch)
    torch.testing.assert_close(per_graph_sum(s, batch), torch.ones(3))


def test_mna_alpha_sums_to_one_over_kernels():
    model, batch = build('None+MNA+None', 'gt.pre_norm', 'True', 'mna.hops', '2'), batch_of()
    rec = record_attention(model, batch)
    assert len(rec['mna/alpha']) == LAYERS
    for a in rec['mna/alpha']:
        assert a.shape == (batch.num_nodes, 3)
        torch.testing.assert_close(a.sum(-1), torch.ones(batch.num_nodes))
    assert node_scores(rec, 'MNA', batch).shape == (batch.num_nodes, 3)


@pytest.mark.parametrize('full_graph', [False, True])
def test_gt_rows_sum_to_one(full_graph):
    model = build('None+GT+None', 'gtlayer.full_graph', str(full_graph))
    batch = batch_of((1, 6, 8)) if full_graph else batch_of()
    rec = record_attention(model, batch)
    for a in rec['gt']:
        assert a.shape == (3, H, 8, 8)
        check_dense_rows(a, batch, exclude_self=full_graph)
        if not full_graph:  # only neighbours j -> i carry weight
            adj = torch.zeros(3, 8, 8, dtype=torch.bool)
            ptr = batch.ptr
            src, dst = batch.edge_index
            b = batch.batch[src]
            adj[b, dst - ptr[b], src - ptr[b]] = True
            assert (a * ~adj[:, None]).abs().max() == 0
    s = node_scores(rec, 'GT', batch)
    torch.testing.assert_close(per_graph_sum(s, batch)[batch.ptr.diff() > 1],
                               torch.ones(int((batch.ptr.diff() > 1).sum())))


def test_sparse_to_dense_places_query_rows():
    data = Data(x=torch.zeros(3, 1), edge_index=torch.tensor([[0, 1, 2], [1, 2, 1]]))
    batch = Batch.from_data_list([data])
    w = torch.tensor([[1.0], [0.5], [0.25]])
    dense = sparse_to_dense(w, batch)
    assert dense.shape == (1, 1, 3, 3)
    assert dense[0, 0, 1, 0] == 1.0 and dense[0, 0, 2, 1] == 0.5
    assert dense[0, 0, 1, 2] == 0.25 and dense.sum() == 1.75
