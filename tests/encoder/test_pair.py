import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.loader import DataLoader

from graphgps_ext.encoder.pair import PairEncoder
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.task import TaskInfo
from graphgps_ext.transform import precompute_encodings


def molecules():
    def und(edges):
        e = torch.tensor(edges).t()
        return torch.cat([e, e.flip(0)], 1)
    benzene = und([(i, (i + 1) % 6) for i in range(6)] + [(0, 6)])  # + methyl
    chain = und([(0, 1), (1, 2), (2, 3)])
    two = und([(0, 1), (2, 3)])  # two components
    out = []
    for n, ei in ((7, benzene), (4, chain), (4, two)):
        out.append(Data(x=torch.zeros(n, 1, dtype=torch.long), edge_index=ei,
                        edge_attr=torch.arange(ei.size(1)) % 3, y=torch.zeros(1, 1)))
    return out


def task():
    return TaskInfo(name='toy', task='graph', task_type='regression', num_outputs=1,
                    loss='l1', metric='mae', metric_direction='min',
                    node_encoder='TypeDictNode', node_num_types=5,
                    edge_encoder='TypeDictEdge', edge_num_types=3)


def batch_for(cfg):
    ds = precompute_encodings(molecules(), cfg, None)
    return next(iter(DataLoader(ds, batch_size=3)))


@pytest.mark.parametrize('rpe', ['rwse', 'spd'])
def test_on_the_fly_equals_precomputed(make_cfg, rpe):
    cfg = make_cfg()
    cfg.gt.layer_type = 'None+CSA+None'
    cfg.pairenc.update(rpe=rpe, steps=4, on_the_fly=False, rings=True,
                       ring_max_size=6)
    batch = batch_for(cfg)
    torch.manual_seed(0)
    stored = PairEncoder.from_cfg(cfg, task(), 16).eval()
    fly = PairEncoder.from_cfg(cfg, task(), 16).eval()
    fly.load_state_dict(stored.state_dict())
    fly.on_the_fly = True
    ctx = GraphContext.from_batch(batch)
    valid = ctx.layout.mask.unsqueeze(2) & ctx.layout.mask.unsqueeze(1)
    a = stored.relative_values(batch, ctx)[valid]
    b = fly.relative_values(batch, ctx)[valid]
    if rpe == 'rwse':
        assert torch.allclose(a, b, atol=1e-6)
    else:
        assert torch.equal(a, b)
    assert torch.allclose(stored(batch, ctx), fly(batch, ctx), atol=1e-6)


def test_spde_types_self_distance_and_unreachable(make_cfg):
    cfg = make_cfg()
    cfg.pairenc.update(enable=True, rpe='spd', steps=2)
    batch = batch_for(cfg)
    enc = PairEncoder.from_cfg(cfg, task(), 8)
    ctx = GraphContext.from_batch(batch)
    t = enc.relative_values(batch, ctx)
    assert t[1, 0, :4].tolist() == [0, 1, 2, 3]  # chain: 3 hops > p=2 -> type p+1
    assert t[2, 0, :4].tolist() == [0, 1, 3, 3]  # other component: unreachable
    assert t[0].diagonal().tolist() == [0] * 7


def test_eq8_structure_and_padding(make_cfg):
    cfg = make_cfg()
    cfg.pairenc.update(enable=True, rpe='none')
    batch = batch_for(cfg)
    enc = PairEncoder.from_cfg(cfg, task(), 8).eval()
    ctx = GraphContext.from_batch(batch)
    E = enc(batch, ctx)
    assert E.shape == (3, 7, 7, 8)
    nc, me = enc.special.weight
    assert torch.equal(E[1, 0, 2], nc) and torch.equal(E[1, 3, 3], me)
    bond = enc.bond.emb.weight
    e01 = int(batch.edge_attr[0])  # first edge of graph 0 is 0 -> 1
    assert torch.equal(E[0, 0, 1], bond[e01])
    assert torch.equal(E[1, 4:], torch.zeros(3, 7, 8))  # padding rows
    assert torch.equal(E[1, :, 4:], torch.zeros(7, 3, 8))


@pytest.mark.parametrize('mode', ['categorical', 'boolean', 'additive'])
@pytest.mark.parametrize('combine', ['concat', 'add'])
def test_ring_modes_shapes_and_gradients(make_cfg, mode, combine):
    cfg = make_cfg()
    cfg.gt.layer_type = 'None+CSA+None'
    cfg.pairenc.update(rings=True, ring_mode=mode, combine=combine, steps=3,
                       ring_max_size=6)
    batch = batch_for(cfg)
    enc = PairEncoder.from_cfg(cfg, task(), 12)
    ctx = GraphContext.from_batch(batch)
    E = enc(batch, ctx)
    assert E.shape == (3, 7, 7, 12)
    (E ** 2).sum().backward()
    for name, p in enc.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_categorical_rings_cartesian_product(make_cfg):
    cfg = make_cfg()
    cfg.pairenc.update(enable=True, rpe='none', rings=True, ring_mode='categorical',
                       ring_max_size=6)
    batch = batch_for(cfg)
    enc = PairEncoder.from_cfg(cfg, task(), 8).eval()
    E = enc(batch, GraphContext.from_batch(batch))
    spec = enc.special.weight  # index = category (0 n-c, 1 self) + 2 * ring
    assert torch.equal(E[0, 0, 0], spec[1 + 2])  # ring atom, self
    assert torch.equal(E[0, 6, 6], spec[1])  # methyl carbon, self
    assert torch.equal(E[0, 0, 3], spec[0 + 2])  # same ring, not bonded
    assert torch.equal(E[0, 6, 3], spec[0])  # not bonded, not bound
    ei, ea = batch.edge_index, batch.edge_attr
    e01 = int(((ei[0] == 0) & (ei[1] == 1)).nonzero())
    e06 = int(((ei[0] == 0) & (ei[1] == 6)).nonzero())
    assert torch.equal(E[0, 0, 1], enc.bond_ring.emb.weight[ea[e01]])  # ring bond
    assert torch.equal(E[0, 0, 6], enc.bond.emb.weight[ea[e06]])  # side bond


def test_additive_rings_types(make_cfg):
    cfg = make_cfg()
    cfg.pairenc.update(enable=True, rpe='none', rings=True, ring_mode='additive',
                       ring_max_size=6)
    batch = batch_for(cfg)
    enc = PairEncoder.from_cfg(cfg, task(), 8).eval()
    E = enc(batch, GraphContext.from_batch(batch))
    spec, R = enc.special.weight, enc.ring_emb.weight
    assert torch.equal(R[0], torch.zeros(8))
    assert torch.allclose(E[0, 0, 3], spec[0] + R[2])  # ring, not bonded
    assert torch.allclose(E[0, 6, 3], spec[0])  # no ring
    ea = batch.edge_attr[((batch.edge_index[0] == 0) & (batch.edge_index[1] == 1))]
    assert torch.allclose(E[0, 0, 1], enc.bond.emb.weight[ea[0]] + R[1])  # ring & bonded


def test_missing_ring_index_is_a_clear_error(make_cfg):
    cfg = make_cfg()
    cfg.pairenc.update(enable=True, rings=False)
    batch = batch_for(cfg)
    cfg.pairenc.rings = True
    enc = PairEncoder.from_cfg(cfg, task(), 8)
    with pytest.raises(ValueError, match='pairenc.rings True'):
        enc(batch, GraphContext.from_batch(batch))
