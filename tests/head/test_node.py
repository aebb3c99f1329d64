import torch

from graphgps_ext.head import HEADS


def test_shapes_and_per_node_mlp(cfg, make_task, make_batch):
    cfg.gnn.layers_post_mp = 3
    head = HEADS['inductive_node'].from_cfg(
        cfg, make_task('classification', 6), 8)
    assert [l.out_features for l in head.mlp.lins] == [8, 8, 6]  # constant
    batch, ctx = make_batch([4, 3], y=lambda g, n: torch.arange(n) % 6)
    pred, true = head(batch.x, batch, ctx)
    assert pred.shape == (7, 6) and true.shape == (7, )
    assert torch.allclose(pred, head.mlp(batch.x))
    assert torch.equal(true, batch.y)


def test_multilabel_node_targets(cfg, make_task, make_batch):
    head = HEADS['inductive_node'].from_cfg(
        cfg, make_task('classification_multilabel', 3), 8)
    batch, ctx = make_batch([2, 3], y=lambda g, n: torch.ones(n, 3))
    pred, true = head(batch.x, batch, ctx)
    assert pred.shape == true.shape == (5, 3)


def test_independent_of_batch_and_gradients(cfg, make_task, make_batch):
    cfg.head.dropout = 0.3
    head = HEADS['inductive_node'].from_cfg(
        cfg, make_task('classification', 2), 8)
    batch, ctx = make_batch([3, 2], y=lambda g, n: torch.zeros(n, dtype=torch.long))
    alone, actx = make_batch([3], y=lambda g, n: torch.zeros(n, dtype=torch.long))
    head.eval()
    assert torch.allclose(head(batch.x, batch, ctx)[0][:3],
                          head(alone.x, alone, actx)[0], atol=1e-6)
    head.train()
    pred, true = head(batch.x, batch, ctx)
    torch.nn.functional.cross_entropy(pred, true).backward()
    for name, p in head.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
