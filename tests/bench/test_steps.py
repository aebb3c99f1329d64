"""The ``steps`` suite: operators and host synchronisations per training
step of every ``paper-zinc`` row, at small sizes on the CPU."""
import json

import torch

from graphgps_ext.bench import main, steps
from graphgps_ext.bench.models import PAPER_ZINC_ROWS, make_dataset, row_cfg
from graphgps_ext.layer.context import HOST_NODE_COUNTS

SMALL = ['gt.layers', 1, 'train.batch_size', 6]


def test_no_host_sync_in_a_training_step_of_any_layer_family():
    # One row per family: GINE, GatedGCN, GEANet (both softmaxes),
    # Transformer, CSA, MNA-GT, GT.
    res = steps.run(torch.device('cpu'), steps=2, opts=SMALL, log=lambda *a: None)
    assert [r['key'] for r in res['rows']] == list(PAPER_ZINC_ROWS)
    for r in res['rows']:
        assert r['syncs_per_step'] == 0, (r['key'], r['sync_reasons'])
        assert r['ops_per_step'] > 100
        # The static-shape path (train.static_shapes True): padded batches,
        # masked batch norms, the loss inside the forward pass on the
        # padded output with the row mask.
        assert r['static_syncs_per_step'] == 0, (r['key'],
                                                 r['static_sync_reasons'])
        assert r['static_ops_per_step'] > 100
        # Between the forward and the backward pass: the L1 loss on the
        # unpadded path, nothing on the static-shape path.
        assert r['between_ops_per_step'] >= 10
        assert r['static_between_ops_per_step'] == 0
    assert '| host syncs / step, static shapes |' in res['markdown']
    assert '| ops between forward and backward (unpadded; static shapes) |' \
        in res['markdown']


def padded_trainer(row: str, opts=SMALL, graphs: int = 18):
    """A trainer of ``row`` and its first batches, padded as the steps
    suite's static-shape path pads them."""
    from graphgps_ext.bench.models import build_model
    from graphgps_ext.loader.dataloader import graph_loader
    from graphgps_ext.loader.pad import Capacities
    from graphgps_ext.train.loss import LOSSES
    from graphgps_ext.train.speed import FastPath, static_net
    cfg = row_cfg(PAPER_ZINC_ROWS[row], opts)
    dataset, _ = make_dataset(cfg, graphs, 0)
    caps = Capacities.from_dataset(dataset, cfg.train.batch_size)
    loader = graph_loader(dataset, batch_size=cfg.train.batch_size,
                          capacities=caps)
    model = build_model(cfg, torch.device('cpu'))
    net, inside = static_net(model, LOSSES['l1'], cfg, 'cpu')
    trainer = steps.make_trainer(cfg, model, loader, torch.device('cpu'),
                                 FastPath(caps, net, loss_inside=inside))
    return trainer, list(loader), caps


def test_static_path_counts_padded_batches():
    trainer, batches, caps = padded_trainer('geaet-gatedgcn')
    sizes = {(c.nodes, c.graphs) for c in caps.buckets}
    for b in batches:
        assert (b.num_nodes, b.num_graphs) in sizes
        assert b.real_nodes < b.num_nodes and b.node_mask.sum() == b.real_nodes
    res = steps.count_steps(trainer, batches, torch.device('cpu'), warmup=2)
    assert res['syncs_per_step'] == 0, res['sync_reasons']


def test_static_layout_needs_no_host_sizes():
    # The dense layout of a static-shape batch is the capacity's: the
    # attention plans nothing from the graph sizes, so even without the
    # collater's host copy of the node counts nothing is read back ...
    trainer, batches, _ = padded_trainer('gps-gine')
    for b in batches:
        del b._store.__dict__[HOST_NODE_COUNTS]
        assert b.graph_nodes > 0
    res = steps.count_steps(trainer, batches, torch.device('cpu'), warmup=2)
    assert res['syncs_per_step'] == 0, res['sync_reasons']
    # ... while without the fixed width (layout and blocks planned from the
    # sizes) the counter sees the reads.
    trainer, batches, _ = padded_trainer('gps-gine')
    for b in batches:
        del b._store.__dict__[HOST_NODE_COUNTS]
        del b.graph_nodes
    res = steps.count_steps(trainer, batches, torch.device('cpu'), warmup=2)
    assert res['syncs_per_step'] >= 2 and 'tolist' in res['sync_reasons']


def test_pyg_collater_path_is_sync_free_too():
    res = steps.run(torch.device('cpu'), rows=['geaet-gatedgcn', 'csa'], steps=1,
                    opts=SMALL + ['train.fast_collate', False],
                    log=lambda *a: None)
    assert [r['syncs_per_step'] for r in res['rows']] == [0, 0]
    assert [r['static_syncs_per_step'] for r in res['rows']] == [0, 0]


def test_without_the_host_sizes_the_counter_sees_the_reads():
    # The count can fail: batches without the collater's host copy of the
    # node counts make the attention read its sizes from the device.
    from graphgps_ext.bench.models import build_model
    from graphgps_ext.loader.dataloader import graph_loader
    cfg = row_cfg(PAPER_ZINC_ROWS['gps-gine'], SMALL)
    dataset, _ = make_dataset(cfg, 18, 0)
    loader = graph_loader(dataset, batch_size=6)
    trainer = steps.make_trainer(cfg, build_model(cfg, torch.device('cpu')),
                                 loader, torch.device('cpu'))
    batches = list(loader)
    for b in batches:
        del b._store.__dict__[HOST_NODE_COUNTS]
    res = steps.count_steps(trainer, batches, torch.device('cpu'), warmup=2)
    assert res['syncs_per_step'] >= 2 and 'tolist' in res['sync_reasons']


def test_steps_suite_writes_its_figures(tmp_path):
    out = tmp_path / 'steps.json'
    assert main(['--suite', 'steps', '--rows', 'gt', '--count-steps', '1',
                 '--opts', 'gt.layers', '1', 'train.batch_size', '4',
                 '--threads', '0', '--mem-limit-gib', '0',
                 '--out', str(out)]) == 0
    rows = json.loads(out.read_text())['suites']['steps']['rows']
    assert rows[0]['key'] == 'gt'
    assert rows[0]['syncs_per_step'] == 0 and rows[0]['ops_per_step'] > 0
    assert rows[0]['static_syncs_per_step'] == 0
    assert rows[0]['static_ops_per_step'] > 0
    assert rows[0]['static_between_ops_per_step'] == 0


def test_virtual_node_readout_is_sync_free_too():
    res = steps.run(torch.device('cpu'), rows=['mna'], steps=1,
                    opts=SMALL + ['model.graph_pooling', 'virtual_node',
                                  'dataset.edge_encoder', False],
                    log=lambda *a: None)
    assert res['rows'][0]['syncs_per_step'] == 0, res['rows'][0]['sync_reasons']
    assert res['rows'][0]['static_syncs_per_step'] == 0, \
        res['rows'][0]['static_sync_reasons']
