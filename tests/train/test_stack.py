"""The stacked model (graphgps_ext.train.stack): every seed of a stack gets
what its separate run gets.

For every branch family, encoder and head, K models (float64, dropout
off) built from their own seeds and run as one stacked model on K
different batches give each seed the loss, the gradient of every parameter
and the BatchNorm running statistics of its separate forward and backward
pass on its own unpadded batch, and the separate evaluation outputs on a
shared batch. Dropout draws different masks per seed. The compiled stack
(aot_eager) equals the eager one.
"""
import copy

import pytest
import torch
from torch_geometric.data import Batch

from graphgps_ext.loader.pad import Capacities, Capacity
from graphgps_ext.network import GPSModel
from graphgps_ext.runs.config import load_cfg
from graphgps_ext.task import TaskInfo
from graphgps_ext.train import speed
from graphgps_ext.train.loss import LOSSES
from graphgps_ext.train.stack import (StackError, StackedModel, check_memory,
                                      check_same_structure, common_capacity,
                                      estimate_memory, stack_batches,
                                      stack_unsupported)
from graphgps_ext.transform.precompute import EncodedList, precompute_encodings

from molecules import GRAPH_TASK, as_double, molecule

NODE_TASK = TaskInfo(name='pattern-like', task='node', task_type='classification',
                     num_outputs=3, loss='cross_entropy', metric='accuracy',
                     metric_direction='max', metrics=['accuracy'],
                     node_encoder='TypeDictNode', node_dim=1, node_num_types=28,
                     edge_encoder='TypeDictEdge', edge_dim=1, edge_num_types=4,
                     head='inductive_node')

RWSE = ['posenc_RWSE.enable', 'True', 'posenc_RWSE.kernel.times', '[1, 2, 3, 4]',
        'posenc_RWSE.dim_pe', '4']
LAPPE = ['posenc_LapPE.enable', 'True', 'posenc_LapPE.dim_pe', '4',
         'posenc_LapPE.eigen.max_freqs', '3', 'posenc_LapPE.raw_norm_type',
         'BatchNorm']

#: Every family (GEAET, GPS, CSA, MNA-GT, GT, the MPNNs) with batch norms,
#: the hand-written attention backward, the encoders and the heads.
FAMILIES = {
    'GEAET': ('GatedGCN+Transformer+GEANet', RWSE + ['gea.edge_norm', 'batch',
                                                     'gt.norm', 'batch']),
    'GEANet-batch-softmax': ('GCN+None+GEANet',
                             RWSE + ['gea.parity_batch_softmax', 'True']),
    'GPS': ('GINE+Transformer+None', RWSE + ['gt.norm', 'batch']),
    'GPS-LapPE-Transformer': ('GINE+Transformer+None', LAPPE + [
        'posenc_LapPE.model', 'Transformer']),
    'CSA': ('None+CSA+None', []),
    'CSA-spd-rings': ('None+CSA+None', ['pairenc.rpe', 'spd', 'pairenc.rings',
                                        'True']),
    'MNA': ('None+MNA+None', RWSE + ['gt.pre_norm', 'True']),
    'GT-sparse-edges': ('None+GT+None', RWSE + ['gtlayer.edge_features', 'True',
                                                'gt.norm', 'batch']),
    'GT-full': ('None+GT+None', RWSE + ['gtlayer.full_graph', 'True']),
    'GCN': ('GCN+None+None', RWSE),
    'GIN': ('GIN+None+None', RWSE),
    'GatedGCN-EquivStableLapPE': ('GatedGCN+None+None', [
        'posenc_EquivStableLapPE.enable', 'True',
        'posenc_EquivStableLapPE.raw_norm_type', 'BatchNorm',
        'mpnn.equivstable_pe', 'True']),
    'encoder-bn-pool-add': ('GINE+None+None', RWSE + [
        'dataset.node_encoder', 'True',
        'dataset.node_encoder_name', 'TypeDictNode+RWSE',
        'dataset.edge_encoder_name', 'TypeDictEdge',
        'dataset.node_encoder_bn', 'True', 'dataset.edge_encoder', 'True',
        'dataset.edge_encoder_bn', 'True', 'head.pool', 'add']),
    'pool-max': ('GINE+None+None', RWSE + ['head.pool', 'max']),
    'graph-node-mlp': ('GINE+None+None', RWSE + ['gnn.head', 'graph_node_mlp']),
    'virtual-node': ('None+Transformer+None', RWSE + ['head.pool',
                                                      'virtual_node']),
}

SIZES = (7, 12, 5, 9, 15, 6, 8, 11, 4, 13)
K = 3


def build(layer_type, extra, task=GRAPH_TASK, dropout=0.0, layers=2):
    cfg = load_cfg(None, ['gt.layer_type', layer_type, 'gt.layers', str(layers),
                          'gt.dim_hidden', '16'] + extra).clone()
    cfg.defrost()
    cfg.gt.n_heads, cfg.gt.dropout, cfg.gt.attn_dropout = 2, dropout, dropout
    cfg.posenc_LapPE.sign_flip = False  # one sign per graph: padding draws more
    models = []
    for seed in range(K):
        torch.manual_seed(seed)
        model = GPSModel(cfg, task).double()
        for m in model.modules():  # LapPE's torch Transformer: its own dropout
            if isinstance(m, torch.nn.Dropout):
                m.p = dropout
            if isinstance(m, torch.nn.MultiheadAttention):
                m.dropout = dropout
        models.append(model)
    return cfg, models


def seed_batches(cfg, node_y=False):
    """K batches of different graphs (different sizes per seed), and one
    batch every seed shares."""
    data = precompute_encodings(
        EncodedList([molecule(n, i, node_y) for i, n in enumerate(SIZES)]), cfg)
    items = [data[i] for i in range(len(data))]
    own = [as_double(Batch.from_data_list(items[k:k + 4 + k])) for k in range(K)]
    shared = as_double(Batch.from_data_list(items[3:9]))
    return own, shared


def separate(model, batch, loss_fn, rows):
    """Loss, gradients and buffers of one eager training pass."""
    model.train()
    model.zero_grad()
    pred, true = model(batch)
    loss = loss_fn(pred, true)
    loss.backward()
    return (loss.detach(),
            {n: p.grad.clone() for n, p in model.named_parameters()
             if p.grad is not None},
            {n: b.clone() for n, b in model.named_buffers()})


def check_family(layer_type, extra, task=GRAPH_TASK, compiled=False, layers=2,
                 evaluate=True):
    cfg, models = build(layer_type, extra, task, layers=layers)
    loss_fn = LOSSES[task.loss]
    own, shared = seed_batches(cfg, node_y=task.task == 'node')
    copies = [copy.deepcopy(m) for m in models]
    rows = models[0].head.output_rows
    ref = [separate(m, copy.copy(b), loss_fn, rows) for m, b in zip(copies, own)]
    run_cfg = cfg.clone()
    if compiled:
        run_cfg.train.compile = True
    stack = StackedModel(models, loss_fn, run_cfg)
    for m in models:
        m.zero_grad()
    data, padded = stack_batches([copy.copy(b) for b in own])
    _, _, loss = stack.run(list(range(K)), padded[0], True, data)
    loss.sum().backward()
    for k in range(K):
        torch.testing.assert_close(loss[k].detach(), ref[k][0], rtol=1e-10,
                                   atol=1e-12)
        grads = {n: p.grad for n, p in models[k].named_parameters()
                 if p.grad is not None}
        assert grads.keys() == ref[k][1].keys()
        for name, grad in grads.items():
            torch.testing.assert_close(grad, ref[k][1][name], rtol=1e-9,
                                       atol=1e-11, msg=f'seed {k}: {name}')
        for name, buf in models[k].named_buffers():
            torch.testing.assert_close(buf, ref[k][2][name], rtol=1e-10,
                                       atol=1e-12, msg=f'seed {k}: {name}')
    if not evaluate:
        return
    # evaluation (running statistics) on a batch every seed reads
    with torch.no_grad():
        pred, _, _ = stack.run(list(range(K)), copy.copy(shared), False)
        for k in range(K):
            copies[k].eval()
            want = copies[k](copy.copy(shared))[0]
            torch.testing.assert_close(pred[k], want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize('family', list(FAMILIES))
def test_each_seed_gets_its_separate_step(family, one_thread):
    check_family(*FAMILIES[family])


def test_node_head(one_thread):
    check_family('GatedGCN+Transformer+GEANet', RWSE, NODE_TASK)


def test_root_node_head_and_fused_attention(one_thread):
    from graphgps_ext.head.root import RootNodeHead
    root_task = TaskInfo(name='tree', task='graph', task_type='classification',
                         num_outputs=3, loss='cross_entropy', metric='accuracy',
                         metric_direction='max', metrics=['accuracy'],
                         node_encoder='TypeDictNode', node_dim=1,
                         node_num_types=28, edge_encoder='TypeDictEdge',
                         edge_dim=1, edge_num_types=4, head='root_node')
    cfg, models = build('GCN+Transformer+None', ['gt.fused_attention', 'True'],
                        root_task)
    assert isinstance(models[0].head, RootNodeHead)
    data = [molecule(n, i) for i, n in enumerate(SIZES)]
    for i, d in enumerate(data):
        d.root_mask = torch.arange(d.num_nodes) == i % d.num_nodes
        d.y = torch.tensor([i % 3])
    own = [as_double(Batch.from_data_list(data[k:k + 4 + k])) for k in range(K)]
    loss_fn = LOSSES['cross_entropy']
    copies = [copy.deepcopy(m) for m in models]
    # the separate pass runs the hand-written attention backward
    ref = [separate(m, copy.copy(b), loss_fn, 'graph') for m, b in zip(copies, own)]
    stack = StackedModel(models, loss_fn, cfg)
    data_, padded = stack_batches([copy.copy(b) for b in own])
    _, _, loss = stack.run(list(range(K)), padded[0], True, data_)
    loss.sum().backward()
    for k in range(K):
        torch.testing.assert_close(loss[k].detach(), ref[k][0])
        for name, p in models[k].named_parameters():
            torch.testing.assert_close(p.grad, ref[k][1][name], rtol=1e-9,
                                       atol=1e-11, msg=name)


def test_dropout_draws_per_seed(one_thread):
    cfg, models = build('GINE+Transformer+None', RWSE, dropout=0.5)
    for m in models[1:]:  # the same weights: only the masks can differ
        m.load_state_dict(models[0].state_dict())
    own, shared = seed_batches(cfg)
    stack = StackedModel(models, LOSSES['l1'], cfg)
    with torch.no_grad():  # no dropout in evaluation: the seeds agree
        ev, _, _ = stack.run(list(range(K)), copy.copy(shared), False)
    for k in range(1, K):
        torch.testing.assert_close(ev[k], ev[0])
    data, padded = stack_batches([copy.copy(shared) for _ in range(K)])
    torch.manual_seed(0)
    pred, _, _ = stack.run(list(range(K)), padded[0], True, data)
    for k in range(1, K):  # independent masks
        assert not torch.allclose(pred[0], pred[k])
    torch.manual_seed(0)
    again, _, _ = stack.run(list(range(K)), padded[0], True, data)
    torch.testing.assert_close(again, pred)  # from the process's generator


def test_stacked_dropout_masks_keep_the_rate():
    from torch.func import vmap
    from graphgps_ext.layer.dropout import dropout_mask
    from graphgps_ext.layer.stacked import stacked
    torch.manual_seed(0)
    x = torch.ones(K, 100_000)
    with stacked():
        masks = vmap(lambda t: dropout_mask(t.shape, 0.25, t.dtype),
                     randomness='different')(x)
    assert masks.shape == x.shape
    for k in range(K):
        assert abs(1 - float(masks[k].mean()) - 0.25) < 0.01
    assert not torch.equal(masks[0], masks[1])


def test_compiled_stack_equals_eager(monkeypatch, one_thread):
    monkeypatch.setattr(speed, 'BACKEND', 'aot_eager')
    torch._dynamo.reset()
    try:  # one layer: the compilation is what takes the time
        check_family('GCN+Transformer+None', ['gt.norm', 'batch'],
                     compiled=True, layers=1, evaluate=False)
    finally:
        torch._dynamo.reset()


def test_batches_stack_to_one_capacity():
    cfg, _ = build('None+CSA+None', ['pairenc.rpe', 'spd', 'pairenc.rings',
                                     'True', 'pairenc.on_the_fly', 'False'])
    own, _ = seed_batches(cfg)
    cap = common_capacity(own, None)
    assert cap.nodes == max(b.num_nodes for b in own) + 1
    assert cap.graphs == max(b.num_graphs for b in own) + 1
    assert cap.graph_nodes % 8 == 0 and cap.graph_nodes >= max(SIZES)
    data, padded = stack_batches([copy.copy(b) for b in own])
    assert data['x'].shape[:2] == (K, cap.nodes)
    # pair attributes that padding leaves alone are extended to the longest
    assert data['pair_index'].shape[0] == K
    for k, b in enumerate(padded):
        n = own[k].pair_index.size(1)
        assert torch.equal(data['pair_index'][k, :, :n], own[k].pair_index)
        assert (data['pair_index'][k, :, n:] == own[k].num_nodes).all()
    # the bucket of fixed shapes when there is one
    caps = Capacities([Capacity(64, 128, 9, 16), Capacity(128, 256, 9, 16)])
    assert common_capacity(own, caps) == Capacity(64, 128, 9, 16)


def test_models_of_another_structure_are_refused():
    _, models = build('GCN+None+None', RWSE)
    _, other = build('GIN+None+None', RWSE)
    with pytest.raises(StackError, match='seed 0 and seed 1 differ'):
        check_same_structure([models[0], other[0]], ['seed 0', 'seed 1'])
    check_same_structure(models, ['a', 'b', 'c'])


def test_heads_without_padded_rows_are_refused():
    from torch import nn
    model = nn.Module()
    model.head = nn.Linear(2, 2)
    assert 'output_rows' in stack_unsupported(model)
    model.head.output_rows = 'pairs'
    assert 'labelled node pairs' in stack_unsupported(model)
    _, models = build('GCN+None+None', RWSE)
    assert stack_unsupported(models[0]) is None


def test_memory_estimate_names_the_largest_stack(one_thread):
    cfg, models = build('GatedGCN+Transformer+GEANet', RWSE)
    own, _ = seed_batches(cfg)
    before = {k: v.clone() for k, v in models[0].state_dict().items()}
    est = estimate_memory(models[0], own[0], LOSSES['l1'], cfg,
                          torch.device('cpu'))
    assert est.activations > 0 and est.state > 0
    for k, v in models[0].state_dict().items():  # left as it was
        assert torch.equal(v, before[k]), k
    assert all(p.grad is None for p in models[0].parameters())
    est.free = 5 * est.per_seed
    assert check_memory(est, 4, torch.device('cpu')) is None
    message = check_memory(est, 10, torch.device('cpu'))
    assert 'the largest stack that fits is --stack 4' in message
    est.free = est.per_seed
    assert 'without --stack' in check_memory(est, 2, torch.device('cpu'))
