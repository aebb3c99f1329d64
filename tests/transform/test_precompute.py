import os

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

import graphgps_ext.transform.precompute as T
from graphgps_ext.transform import EncodedList, graph_store, precompute_encodings
from graphgps_ext.transform.dense import GraphStore
from graphgps_ext.transform.edge_rwse import edge_rwse_dense
from graphgps_ext.transform.lappe import laplacian_eigen
from graphgps_ext.transform.rwse import rwse_dense
from graphgps_ext.transform.spd import shortest_path_dense


def random_graphs(num=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(num):
        n = int(torch.randint(2, 9, (1, ), generator=g))
        A = torch.rand(n, n, generator=g) < 0.4
        A = (A | A.t()) & ~torch.eye(n, dtype=torch.bool)
        ei = A.nonzero().t()
        out.append(Data(x=torch.randint(0, 5, (n, 1), generator=g), edge_index=ei,
                        edge_attr=torch.randint(0, 3, (ei.size(1), ), generator=g),
                        y=torch.randn(1, 1)))
    return out


def one_store(d):
    return GraphStore(d.edge_index, torch.tensor([0, d.num_nodes]),
                      torch.tensor([0, d.edge_index.size(1)]))


def test_node_encodings_match_single_graph_computation(make_cfg):
    cfg = make_cfg()
    cfg.posenc_LapPE.enable = True
    cfg.posenc_LapPE.eigen.max_freqs = 4
    cfg.posenc_RWSE.enable = True
    cfg.posenc_RWSE.kernel.times_func = 'range(1, 6)'
    graphs = random_graphs()
    ds = precompute_encodings(graphs, cfg, None)
    assert isinstance(ds, EncodedList) and len(ds) == len(graphs)
    for d, ref in zip(ds, graphs):
        n = ref.num_nodes
        st = one_store(ref)
        A = st.dense_adj(torch.tensor([0]), n, 'count')
        assert torch.allclose(d.pe_rwse, rwse_dense(A, range(1, 6))[0].float())
        vec, val = laplacian_eigen(st.dense_adj(torch.tensor([0]), n, 'undirected'),
                                   4, 'none')
        assert torch.allclose(d.pe_lap_vec, vec[0].float(), equal_nan=True)
        assert torch.allclose(d.pe_lap_val, val.expand(n, -1).float(), equal_nan=True)
        assert torch.equal(d.x, ref.x)


@pytest.mark.parametrize('rpe', ['rwse', 'spd'])
def test_pair_storage_collates_to_dense_values(make_cfg, rpe):
    cfg = make_cfg()
    cfg.gt.layer_type = 'None+CSA+None'
    cfg.pairenc.update(rpe=rpe, steps=3, on_the_fly=False, rings=True,
                       ring_max_size=6)
    graphs = random_graphs(6, seed=1)
    ds = precompute_encodings(graphs, cfg, None)
    batch = next(iter(DataLoader(ds, batch_size=6)))
    assert batch.pair_index.max() < batch.num_nodes
    for g, ref in enumerate(graphs):
        n = ref.num_nodes
        st = one_store(ref)
        off = int(batch.ptr[g])
        sel = batch.batch[batch.pair_index[0]] == g
        i, j = batch.pair_index[:, sel] - off
        if rpe == 'rwse':
            dense = torch.zeros(n, n, 3)
            dense[i, j] = batch.pair_rw[sel]
            ref_rw = edge_rwse_dense(st.dense_adj(torch.tensor([0]), n), 3)[0].float()
            assert torch.allclose(dense, ref_rw)
        else:
            dense = torch.full((n, n), -1, dtype=torch.long)
            dense[i, j] = batch.pair_spd[sel].long()
            ref_d = shortest_path_dense(st.dense_adj(torch.tensor([0]), n, 'simple'), 3)[0]
            assert torch.equal(dense, ref_d)


def test_inmemory_dataset_modified_in_place_and_views_share(make_cfg):
    cfg = make_cfg()
    cfg.posenc_RWSE.enable = True
    ds = EncodedList(random_graphs())
    view = ds[torch.tensor([3, 1])]
    out = precompute_encodings(ds, cfg, None)
    assert out is ds
    assert view[0].pe_rwse.shape == (random_graphs()[3].num_nodes, 20)
    assert graph_store(ds).num_graphs == 12


def test_cache_reused_and_invalidated(make_cfg, tmp_path, monkeypatch):
    cfg = make_cfg()
    cfg.posenc_RWSE.enable = True
    cfg.posenc_RWSE.kernel.times_func = 'range(1, 4)'
    cache = str(tmp_path / 'enc')
    first = precompute_encodings(random_graphs(), cfg, cache)
    files = sorted(os.listdir(cache))
    assert len(files) == 1 and files[0].startswith('rwse-')

    calls = []
    real = T.compute_entries
    monkeypatch.setattr(T, 'compute_entries', lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    again = precompute_encodings(random_graphs(), cfg, cache)
    assert calls == []  # loaded, not recomputed
    assert torch.equal(first._data.pe_rwse, again._data.pe_rwse)

    cfg.posenc_RWSE.kernel.times_func = 'range(1, 5)'  # new parameters
    changed = precompute_encodings(random_graphs(), cfg, cache)
    assert list(calls[-1]) == ['rwse'] and changed[0].pe_rwse.size(1) == 4
    assert len(os.listdir(cache)) == 2

    calls.clear()
    other = precompute_encodings(random_graphs(seed=5), cfg, cache)  # other data
    assert list(calls[-1]) == ['rwse'] and len(os.listdir(cache)) == 3
    assert other[0].pe_rwse.size(1) == 4

    cfg.posenc.cache = False
    calls.clear()
    precompute_encodings(random_graphs(), cfg, cache)
    assert len(calls) == 1


def test_workers_give_same_result(make_cfg):
    cfg = make_cfg()
    cfg.posenc_LapPE.enable = True
    cfg.posenc_RWSE.enable = True
    serial = precompute_encodings(random_graphs(20), cfg, None)
    cfg.posenc.num_workers = 2
    par = precompute_encodings(random_graphs(20), cfg, None)
    for key in ('pe_rwse', 'pe_lap_vec', 'pe_lap_val'):
        assert torch.allclose(serial._data[key], par._data[key], equal_nan=True)
        assert torch.equal(serial.slices[key], par.slices[key])


def test_nothing_requested_returns_input(make_cfg):
    graphs = random_graphs(2)
    assert precompute_encodings(graphs, make_cfg(), None) is graphs
