"""Memory asked for as a product of keys each within its own bound is
estimated before it is allocated and refused (exit code 2) naming the keys:
generated data, the model, a static-shape batch, precomputed encodings.
The budget is fixed here, so the answers do not depend on the machine;
nothing large is ever allocated."""
import os

import pytest
import torch

from graphgps_ext.config import ConfigError, sizes
from graphgps_ext.config.sizes import Need, check
from graphgps_ext.loader.generators.tree_neighbours import (memory_need,
                                                            num_graphs)
from graphgps_ext.runs.config import load_cfg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICKSTART = os.path.join(ROOT, 'configs', 'quickstart.yaml')
GB = 2 ** 30


@pytest.fixture
def budget(monkeypatch):
    """The machine offers 8 GB (whatever this one has)."""
    monkeypatch.setattr(sizes, 'memory_budget', lambda device='cpu': 8 * GB)
    return 8 * GB


def test_check_names_the_keys_the_estimate_and_the_budget():
    need = Need('the widgets', 3 * GB, ('a.b 7', 'c.d 9'), '7 x 9 widgets x 48 MB')
    check([need], budget=4 * GB)
    with pytest.raises(ConfigError) as err:
        check([need], budget=2 * GB)
    message = str(err.value)
    for fragment in ('a.b 7, c.d 9: the widgets would need about 3.0 GB',
                     '(7 x 9 widgets x 48 MB)', 'more than the 2.0 GB this machine',
                     'Lower a.b or c.d.'):
        assert fragment in message, message
    host = sizes.host_memory()
    assert host is None or host > 0


def test_tree_neighbour_match_memory_is_a_product():
    assert num_graphs(2) == 96 and num_graphs(7) == 512_000 and num_graphs(8) == 640_000
    small = memory_need(2, 'mlpmixer', 0, generating=False)
    assert small.nbytes == 96 * (17 * 7 + 16 * 6 + 8)
    assert memory_need(2).nbytes == 3 * small.nbytes  # PyG saves through copies
    deep = memory_need(8)
    assert deep.nbytes > 30 * GB and 'dataset.tree_depth 8' in deep.keys
    assert memory_need(8, max_graphs=4096).nbytes < GB  # what max_graphs is for
    assert memory_need(4, 'bottleneck').nbytes < memory_need(4).nbytes


def test_tree_depth_8_is_refused_before_anything_is_drawn(tmp_path, budget, monkeypatch):
    from graphgps_ext.loader import load_dataset
    from graphgps_ext.loader.generators import tree_neighbours

    def never(*args, **kwargs):
        raise AssertionError('generated although refused')
    monkeypatch.setattr(tree_neighbours, 'generate', never)
    cfg = load_cfg(QUICKSTART, ['dataset.format', 'synthetic', 'dataset.name',
                                'TreeNeighbourMatch', 'dataset.tree_depth', '8',
                                'dataset.max_graphs', '0', 'dataset.dir', str(tmp_path)])
    with pytest.raises(ConfigError) as err:
        load_dataset(cfg)
    message = str(err.value)
    assert message.startswith('dataset.tree_depth 8, dataset.max_graphs 0: the '
                              'TreeNeighbourMatch graphs would need about')
    assert '640,000 graphs x (511 nodes x 17' in message and 'dataset.max_graphs' in message


def test_a_model_too_large_to_train_is_refused_at_config_load(budget):
    with pytest.raises(ConfigError) as err:
        load_cfg(QUICKSTART, ['gt.layers', '1000', 'gt.dim_hidden', '2048',
                              'gt.n_heads', '8'])
    message = str(err.value)
    assert message.startswith('gt.layers 1000, gt.dim_hidden 2048: training the '
                              'branches of 1000 layers would need about')
    assert "x 16 bytes (weights, gradients and Adam's two moments)" in message
    load_cfg(QUICKSTART, ['gt.layers', '10', 'gt.dim_hidden', '256'])


def test_the_whole_model_is_counted_on_the_meta_device(budget, monkeypatch):
    from graphgps_ext.loader.shapes import task_without_data
    from graphgps_ext.runs.config import finalize_cfg
    from graphgps_ext.runs.seed import build_model
    cfg = load_cfg(QUICKSTART, ['gt.dim_hidden', '64'])
    task = task_without_data(cfg)
    finalize_cfg(cfg, task)
    torch.manual_seed(0)
    before = torch.get_rng_state()
    params = sum(p.numel() for p in build_model(cfg, task).parameters())
    torch.manual_seed(0)
    assert torch.equal(before, torch.get_rng_state())  # the count draws nothing
    monkeypatch.setattr(sizes, 'memory_budget', lambda device='cpu': 16 * params - 1)
    with pytest.raises(ConfigError, match=f'{params:,} parameters x 16 bytes'):
        build_model(cfg, task)


def test_dry_run_refuses_before_building(budget, capsys):
    from graphgps_ext.dry_run import main
    code = main(QUICKSTART, ['gt.layers', '1000', 'gt.dim_hidden', '2048',
                             'gt.n_heads', '8'])
    assert code == 2 and 'gt.layers 1000, gt.dim_hidden 2048' in capsys.readouterr().err


def test_static_shape_batches_are_sized_before_padding(budget):
    from graphgps_ext.loader.pad import Capacities
    nodes = torch.randint(10, 38, (10_000,))
    cfg = load_cfg(QUICKSTART, ['train.batch_size', '2000000'])
    top = Capacities.from_sizes(nodes, 2 * nodes, 2_000_000).buckets[-1]
    need = sizes.static_batch_need(top.nodes, top.graphs, top.graph_nodes, cfg)
    assert top.graphs == 2_000_001 and need.nbytes > 8 * GB
    with pytest.raises(ConfigError, match='train.batch_size 2000000, gt.dim_hidden'):
        check([need])
    cfg = load_cfg(QUICKSTART, ['train.batch_size', '128'])
    top = Capacities.from_sizes(nodes, 2 * nodes, 128).buckets[-1]
    check([sizes.static_batch_need(top.nodes, top.graphs, top.graph_nodes, cfg)])


def test_encodings_are_sized_before_they_are_computed(budget, monkeypatch):
    from graphgps_ext.transform import precompute
    from graphgps_ext.transform.dense import GraphStore
    ptr = torch.arange(0, 300_001, 30)  # 10,000 graphs of 30 nodes
    store = GraphStore(torch.zeros(2, 0, dtype=torch.long), ptr, torch.zeros_like(ptr))
    (need,) = precompute.encoding_needs({'rwse': {'times': list(range(1, 1001))}}, store)
    assert need.nbytes == 300_000 * 1000 * 4
    assert need.keys == ('posenc_RWSE.kernel (1,000 values per node)',)
    monkeypatch.setattr(sizes, 'memory_budget', lambda device='cpu': GB)
    with pytest.raises(ConfigError, match='the RWSE encodings of this dataset'):
        check([need])
    small = precompute.encoding_needs({'rwse': {'times': [1, 2, 3]},
                                       'lappe': {'k': 8}}, store)
    assert [n.nbytes for n in small] == [300_000 * 3 * 4, 300_000 * 16 * 4]
