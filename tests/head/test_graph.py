import pytest
import torch

from graphgps_ext.head import HEADS
from graphgps_ext.head.graph import GraphMLPHead, GraphNodeMLPHead


def _pool_ref(x, sizes, mode):
    out, start = [], 0
    for n in sizes:
        block = x[start:start + n]
        start += n
        if mode == 'mean':
            out.append(block.sum(0) / n)
        elif mode == 'add':
            out.append(block.sum(0))
        else:
            out.append(block.max(0).values)
    return torch.stack(out)


@pytest.mark.parametrize('mode', ['mean', 'add', 'max'])
def test_pooling_against_reference(mode, make_batch):
    sizes = [3, 1, 5]
    batch, ctx = make_batch(sizes, y=lambda g, n: torch.zeros(1, 2))
    head = GraphMLPHead(8, 2, pool=mode, num_layers=2, width='halving')
    pred, _ = head(batch.x, batch, ctx)
    assert torch.allclose(pred, head.mlp(_pool_ref(batch.x, sizes, mode)),
                          atol=1e-6)


@pytest.mark.parametrize('mode', ['mean', 'add', 'max'])
def test_graph_node_mlp_is_mlp_then_pool(mode, make_batch):
    sizes = [2, 4]
    batch, ctx = make_batch(sizes, y=lambda g, n: torch.tensor([1.0]))
    head = GraphNodeMLPHead(8, 3, pool=mode, task_type='regression',
                            num_layers=2)
    batch.y = torch.randn(2, 3)
    pred, true = head(batch.x, batch, ctx)
    ref = _pool_ref(head.mlp(batch.x), sizes, mode)
    assert torch.allclose(pred, ref, atol=1e-6)
    assert torch.equal(true, batch.y)


@pytest.mark.parametrize('task_type,T,y_fn,true_shape', [
    ('regression', 1, lambda g, n: torch.tensor([0.5 * g]), (3, 1)),  # ZINC y [B]
    ('regression', 11, lambda g, n: torch.randn(1, 11), (3, 11)),
    ('classification', 10, lambda g, n: torch.tensor([g]), (3, )),
    ('classification', 1, lambda g, n: torch.tensor([[g % 2]]), (3, 1)),
    ('classification_multilabel', 4, lambda g, n: torch.ones(1, 4), (3, 4)),
])
@pytest.mark.parametrize('name', ['graph_mlp', 'graph_node_mlp'])
def test_shapes_per_task_type(name, task_type, T, y_fn, true_shape, cfg,
                              make_task, make_batch):
    batch, ctx = make_batch([3, 2, 4], y=y_fn)
    head = HEADS[name].from_cfg(cfg, make_task(task_type, T), 8)
    pred, true = head(batch.x, batch, ctx)
    assert pred.shape == (3, T)
    assert true.shape == true_shape
    if true.dim() == 1:  # multi-class: the loss takes [B, C] logits vs [B]
        torch.nn.functional.cross_entropy(pred, true)
    else:
        assert pred.shape == true.shape


@pytest.mark.parametrize('name', ['graph_mlp', 'graph_node_mlp'])
@pytest.mark.parametrize('pool', ['mean', 'add', 'max'])
def test_graph_independent_of_batch(name, pool, cfg, make_task, make_batch):
    cfg.head.pool = pool
    cfg.head.dropout = 0.5
    head = HEADS[name].from_cfg(cfg, make_task('regression', 2), 8).eval()
    batch, ctx = make_batch([3, 5, 2], y=lambda g, n: torch.zeros(1, 2))
    alone, actx = make_batch([5], seed=1, y=lambda g, n: torch.zeros(1, 2))
    batch.x[3:8] = alone.x
    pred, _ = head(batch.x, batch, ctx)
    pred_alone, _ = head(alone.x, alone, actx)
    assert torch.allclose(pred[1], pred_alone[0], atol=1e-6)


@pytest.mark.parametrize('name', ['graph_mlp', 'graph_node_mlp'])
def test_gradients_reach_every_parameter(name, cfg, make_task, make_batch):
    cfg.head.layers = 3
    head = HEADS[name].from_cfg(cfg, make_task('regression', 1), 8)
    batch, ctx = make_batch([3, 2], y=lambda g, n: torch.tensor([1.0]))
    pred, true = head(batch.x, batch, ctx)
    (pred - true).abs().mean().backward()
    for pname, p in head.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, pname


def test_reset_parameters_changes_weights(cfg, make_task):
    head = HEADS['graph_mlp'].from_cfg(cfg, make_task(), 8)
    w = head.mlp.lins[0].weight.clone()
    head.reset_parameters()
    assert not torch.equal(w, head.mlp.lins[0].weight)
