import pytest
import torch
from torch import nn
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

from graphgps_ext.encoder import (EDGE_ENCODERS, NODE_ENCODERS, build_edge_encoder,
                                  build_node_encoder, build_pair_encoder)
from graphgps_ext.encoder.ast import ASTNode
from graphgps_ext.encoder.composite import CompositeNodeEncoder
from graphgps_ext.encoder.dummy_edge import DummyEdge
from graphgps_ext.encoder.linear import LinearEdge, LinearNode, OneHotNode
from graphgps_ext.encoder.multi_type import MultiTypeNode
from graphgps_ext.encoder.ogb import Atom, Bond
from graphgps_ext.encoder.type_dict import TypeDictEdge, TypeDictNode
from graphgps_ext.task import TaskInfo
from graphgps_ext.transform import precompute_encodings


def task(**kw):
    base = dict(name='toy', task='graph', task_type='regression', num_outputs=1,
                loss='l1', metric='mae', metric_direction='min',
                node_encoder='TypeDictNode', node_num_types=5,
                edge_encoder='TypeDictEdge', edge_num_types=3)
    base.update(kw)
    return TaskInfo(**base)


def graphs(num=4):
    g = torch.Generator().manual_seed(0)
    out = []
    for n in [2, 5, 7, 9][:num]:
        i = torch.arange(n)
        ring = torch.stack([i, (i + 1) % n])
        ei = torch.cat([ring, ring.flip(0)], 1)
        out.append(Data(x=torch.randint(0, 5, (n, 1), generator=g), edge_index=ei,
                        edge_attr=torch.randint(0, 3, (ei.size(1), ), generator=g),
                        y=torch.zeros(1, 1)))
    return out


def batch_for(cfg, data=None):
    ds = precompute_encodings(data or graphs(), cfg, None)
    return next(iter(DataLoader(ds, batch_size=4)))


def test_tables_have_from_cfg():
    assert set(NODE_ENCODERS) == {'TypeDictNode', 'MultiTypeNode', 'Atom', 'LinearNode',
                                  'OneHotNode', 'ASTNode', 'LapPE', 'EquivStableLapPE',
                                  'RWSE'}
    assert set(EDGE_ENCODERS) == {'TypeDictEdge', 'Bond', 'LinearEdge', 'DummyEdge'}
    for cls in list(NODE_ENCODERS.values()) + list(EDGE_ENCODERS.values()):
        assert hasattr(cls, 'from_cfg')


@pytest.mark.parametrize('name,parts', [
    ('TypeDictNode+RWSE', {'RWSE': 6}),
    ('TypeDictNode+LapPE', {'LapPE': 8}),
    ('TypeDictNode+LapPE+RWSE', {'LapPE': 8, 'RWSE': 6}),
    ('default+RWSE', {'RWSE': 6}),
])
def test_composite_concat_dims(make_cfg, name, parts):
    cfg = make_cfg()
    cfg.dataset.node_encoder = True
    cfg.dataset.node_encoder_name = name
    cfg.dataset.node_encoder_bn = False
    cfg.posenc_RWSE.dim_pe = 6
    cfg.posenc_LapPE.dim_pe = 8
    cfg.posenc_LapPE.eigen.max_freqs = 4
    batch = batch_for(cfg)
    enc = build_node_encoder(cfg, task(), 32)
    assert isinstance(enc, CompositeNodeEncoder)
    assert enc.type_encoder.emb.embedding_dim == 32 - sum(parts.values())
    assert [m.__class__.__name__ for m in enc.concat] == list(parts)
    h = enc(batch)
    assert h.shape == (batch.num_nodes, 32) and torch.isfinite(h).all()


def test_auto_mode_uses_enabled_groups_and_add(make_cfg):
    cfg = make_cfg()
    cfg.posenc_LapPE.update(enable=True, model='linear', combine='add')
    cfg.posenc_LapPE.eigen.update(max_freqs=3, laplacian_norm='sym', skip_trivial=True)
    batch = batch_for(cfg)
    enc = build_node_encoder(cfg, task(), 16)
    assert enc.type_encoder.emb.embedding_dim == 16 and len(enc.add) == 1
    enc.eval()
    h = enc(batch)
    manual = enc.type_encoder(batch) + enc.add[0].lin(batch.pe_lap_vec.nan_to_num(0.0))
    assert torch.allclose(h, manual, atol=1e-6)
    assert isinstance(build_node_encoder(make_cfg(), task(), 16), TypeDictNode)


def test_equivstable_sets_batch_attribute(make_cfg):
    cfg = make_cfg()
    cfg.posenc_EquivStableLapPE.enable = True
    cfg.posenc_EquivStableLapPE.eigen.max_freqs = 3
    batch = batch_for(cfg)
    enc = build_node_encoder(cfg, task(), 16)
    h = enc(batch)
    assert h.shape == (batch.num_nodes, 16)
    assert batch.pe_equiv.shape == (batch.num_nodes, 3) and torch.isfinite(batch.pe_equiv).all()
    cfg.posenc_EquivStableLapPE.model = 'linear'
    build_node_encoder(cfg, task(), 16)(batch)
    assert batch.pe_equiv.shape == (batch.num_nodes, 16)


def test_pe_too_wide_is_an_error(make_cfg):
    cfg = make_cfg()
    cfg.posenc_RWSE.update(enable=True, dim_pe=16)
    with pytest.raises(ValueError, match='no room'):
        build_node_encoder(cfg, task(), 16)


def test_edge_builder_rules(make_cfg):
    from graphgps_ext.register import register_all
    register_all()  # the builder asks the registered branches whether they read edges
    cfg = make_cfg()
    assert isinstance(build_edge_encoder(cfg, task(), 8), TypeDictEdge)
    for layer_type in ('None+CSA+None', 'GCN+Transformer+None', 'None+MNA+None'):
        cfg.gt.layer_type = layer_type  # no branch reads the edge stream
        assert build_edge_encoder(cfg, task(), 8) is None
    cfg.gt.layer_type = 'GINE+Transformer+None'
    no_edges = task(edge_encoder=None)
    cfg.gt.layer_type = 'GCN+Transformer+None'
    assert build_edge_encoder(cfg, no_edges, 8) is None
    cfg.gt.layer_type = 'GINE+Transformer+None'
    assert isinstance(build_edge_encoder(cfg, no_edges, 8), DummyEdge)
    cfg.dataset.edge_encoder = True
    cfg.dataset.edge_encoder_name = 'LinearEdge'
    enc = build_edge_encoder(cfg, task(edge_dim=3), 8)
    assert isinstance(enc.enc, LinearEdge) and isinstance(enc.norm, nn.BatchNorm1d)
    cfg.dataset.edge_encoder_name = 'Bnd'
    with pytest.raises(ValueError, match="did you mean 'Bond'"):
        build_edge_encoder(cfg, task(), 8)


def test_pair_builder_only_for_csa(make_cfg):
    cfg = make_cfg()
    assert build_pair_encoder(cfg, task(), 8) is None
    cfg.gt.layer_type = 'None+CSA+None'
    assert build_pair_encoder(cfg, task(), 8) is not None


def _grads_ok(module):
    for name, p in module.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


@pytest.mark.parametrize('model', ['DeepSet', 'Transformer', 'linear'])
def test_lap_pe_gradients_and_padding(make_cfg, model):
    cfg = make_cfg()
    cfg.posenc_LapPE.update(enable=True, model=model, dim_pe=8, n_heads=2,
                            raw_norm_type='BatchNorm', post_layers=1 if model != 'linear' else 0)
    cfg.posenc_LapPE.eigen.max_freqs = 4  # the 2-node graph is NaN-padded
    batch = batch_for(cfg)
    assert torch.isnan(batch.pe_lap_vec).any()
    enc = NODE_ENCODERS['LapPE'].from_cfg(cfg, task(), 8)
    out = enc(batch)
    assert out.shape == (batch.num_nodes, 8) and torch.isfinite(out).all()
    out.pow(2).sum().backward()
    _grads_ok(enc)


def test_lap_pe_sign_flip_only_in_training(make_cfg):
    cfg = make_cfg()
    cfg.posenc_LapPE.update(enable=True, model='linear', dim_pe=4)
    cfg.posenc_LapPE.eigen.max_freqs = 2
    batch = batch_for(cfg)
    enc = NODE_ENCODERS['LapPE'].from_cfg(cfg, task(), 4)
    nn.init.zeros_(enc.lin.bias)
    enc.eval()
    ref = enc(batch)
    assert torch.equal(enc(batch), ref)
    enc.train()
    W = enc.lin.weight
    vec = batch.pe_lap_vec.nan_to_num(0.0)
    seen = set()
    for seed in range(8):
        torch.manual_seed(seed)
        out = enc(batch)
        # out = (s_b ⊙ u_i) W^T: recover the signs per node and check they are
        # constant within each graph
        s = torch.sign(torch.linalg.pinv(W) @ out.T).T * torch.sign(vec)
        for g in range(batch.num_graphs):
            rows = s[(batch.batch == g) & (vec != 0).all(1)]
            assert (rows == rows[0]).all()
            seen.add(tuple(rows[0].tolist()))
    assert len(seen) > 1  # different signs across calls


@pytest.mark.parametrize('model', ['linear', 'mlp'])
def test_rwse_gradients(make_cfg, model):
    cfg = make_cfg()
    cfg.posenc_RWSE.update(enable=True, model=model, dim_pe=8)
    batch = batch_for(cfg)
    enc = NODE_ENCODERS['RWSE'].from_cfg(cfg, task(), 8)
    enc(batch).pow(2).sum().backward()
    _grads_ok(enc)


def test_type_encoders_gradients():
    g = torch.Generator().manual_seed(0)
    cases = [
        (TypeDictNode(5, 4), Data(x=torch.randint(0, 5, (6, 1), generator=g))),
        (MultiTypeNode([3, 4], 4), Data(x=torch.stack([torch.arange(6) % 3,
                                                         torch.arange(6) % 4], 1))),
        (Atom(4), Data(x=torch.zeros(6, 9, dtype=torch.long))),
        (LinearNode(3, 4), Data(x=torch.randn(6, 3))),
        (ASTNode(4, 5, 7, 3), Data(x=torch.stack([torch.arange(6) % 5, torch.arange(6)], 1),
                                   node_depth=torch.arange(6).view(-1, 1))),
        (TypeDictEdge(3, 4), Data(edge_attr=torch.arange(6) % 3)),
        (Bond(4), Data(edge_attr=torch.zeros(6, 3, dtype=torch.long))),
        (LinearEdge(2, 4), Data(edge_attr=torch.randn(6, 2))),
        (DummyEdge(4), Data(edge_index=torch.zeros(2, 6, dtype=torch.long))),
    ]
    for enc, data in cases:
        out = enc(data)
        assert out.shape == (6, 4), enc
        out.pow(2).sum().backward()
        _grads_ok(enc)


def test_one_hot_node_is_an_embedding_table():
    """OneHotNode on one-hot types = the rows of an nn.Embedding (the GT and
    Benchmarking-GNNs SBM encoder): F d parameters, d fewer than LinearNode."""
    torch.manual_seed(0)
    enc = OneHotNode(3, 8)
    types = torch.tensor([2, 0, 1, 1])
    batch = Data(x=torch.nn.functional.one_hot(types, 3).float())
    torch.testing.assert_close(enc(batch), enc.lin.weight.t()[types])
    count = lambda m: sum(p.numel() for p in m.parameters())
    assert count(enc) == 3 * 8 == count(LinearNode(3, 8)) - 8
