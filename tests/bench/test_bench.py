"""Smoke tests of the benchmark harness (``python -m graphgps_ext.bench``).

Tiny settings only: the suites must run end to end and write valid JSON;
no timing is asserted. Plus the exact parts of the harness: the synthetic
graph families, the RWSE fallback, the slope fit, the memory measurement,
and the speed switches (``train.amp``; ``train.compile`` is documented but
not compiled here: inductor needs minutes on 2 cores).
"""
import json
import math

import pytest
import torch
from torch_geometric.utils import coalesce, contains_self_loops, is_undirected

from graphgps_ext.bench import common, main
from graphgps_ext.bench.data import FAMILIES, make_graphs, scaling_family
from graphgps_ext.bench.models import ANCHOR_THREADS, anchor_ratio, markdown
from graphgps_ext.bench.scaling import fit_slope

QUIET = ['--threads', '0', '--mem-limit-gib', '0']


def _load(path):
    with open(path) as f:
        return json.load(f)


def test_zinc_family_has_the_anchor_shapes():
    graphs = make_graphs(FAMILIES['zinc'], 400, seed=3)
    sizes = torch.tensor([g.num_nodes for g in graphs], dtype=torch.float)
    edges = torch.tensor([g.edge_index.size(1) for g in graphs],
                         dtype=torch.float)
    assert int(sizes.min()) >= 9 and int(sizes.max()) <= 37
    assert abs(float(sizes.mean()) - 23.1) < 0.6
    assert abs(float(sizes.std()) - 4.45) < 0.6
    assert abs(float(edges.mean()) - 50) < 1.5
    for g in graphs[:50]:
        n, m = g.num_nodes, g.edge_index.size(1)
        assert 2 * (n - 1) <= m <= 2 * (n + 2)  # tree + up to 3 closures
        assert is_undirected(g.edge_index)
        assert not contains_self_loops(g.edge_index)
        assert coalesce(g.edge_index).size(1) == m  # no multi-edges
        assert g.x.shape == (n, 1) and g.x.dtype == torch.long
        assert g.edge_attr.shape == (m, ) and int(g.edge_attr.max()) < 4
        # Both directions of an edge carry the same bond type.
        ei = g.edge_index
        fwd = dict(zip(map(tuple, ei.t().tolist()), g.edge_attr.tolist()))
        assert all(fwd[(j, i)] == t for (i, j), t in fwd.items())


def test_families_are_deterministic_and_sized():
    a = make_graphs(FAMILIES['peptides'], 8, seed=1)
    b = make_graphs(FAMILIES['peptides'], 8, seed=1)
    c = make_graphs(FAMILIES['peptides'], 8, seed=2)
    assert all(torch.equal(x.edge_index, y.edge_index) for x, y in zip(a, b))
    assert any(x.num_nodes != y.num_nodes or
               not torch.equal(x.edge_index, y.edge_index)
               for x, y in zip(a, c))
    assert all(120 <= g.num_nodes <= 180 for g in a)
    knn = make_graphs(FAMILIES['superpixel'], 2, seed=0)
    for g in knn:
        assert 450 <= g.num_nodes <= 510
        indeg = torch.bincount(g.edge_index[1], minlength=g.num_nodes)
        assert bool((indeg == 8).all())
        assert not contains_self_loops(g.edge_index)
    g = make_graphs(scaling_family(40, 4), 1, seed=0)[0]
    assert g.num_nodes == 40 and g.edge_index.size(1) == 2 * (39 + 3)


def test_the_benchmark_rwse_is_the_packages_and_matches_pyg():
    """The model rows' graphs carry the package's own RWSE (the precompute a
    run uses), which equals PyG's ``AddRandomWalkPE``."""
    from torch_geometric.transforms import AddRandomWalkPE
    from graphgps_ext.bench.models import PAPER_ZINC_ROWS, make_dataset, row_cfg
    cfg = row_cfg(PAPER_ZINC_ROWS['gps-gine'])
    dataset, source = make_dataset(cfg, 3, seed=0)
    assert source.startswith('graphgps_ext.transform.precompute_encodings')
    graphs = make_graphs(FAMILIES['zinc'], 3, seed=0)
    for g, d in zip(graphs, dataset):
        ref = AddRandomWalkPE(20, 'pe')(g.clone()).pe
        assert torch.allclose(d.pe_rwse, ref, atol=1e-6)


def test_fit_slope_recovers_power_laws():
    sizes = [25, 50, 100, 200, 400]
    assert fit_slope(sizes, [3.0] * 5) == pytest.approx(0.0, abs=1e-12)
    assert fit_slope(sizes, [0.01 * n for n in sizes]) == pytest.approx(1.0)
    assert fit_slope(sizes, [n ** 1.5 for n in sizes]) == pytest.approx(1.5)
    assert math.isnan(fit_slope([25], [1.0]))


def test_peak_step_memory_sees_live_tensors():
    n = 1 << 20  # 4 MiB of float32

    def step():
        a = torch.ones(n)
        b = a * 2  # a and b alive together: >= 8 MiB
        return float(b.sum())

    peak = common.peak_step_memory(step, torch.device('cpu'))
    assert 7.9 <= peak < 64


def test_markdown_table():
    text = common.markdown_table(['a', 'b'], [['x', 1234.5], ['y', None]])
    assert text.splitlines()[0] == '| a | b |'
    assert '| x | 1,234.5 |' in text and '| y | – |' in text


def test_check_names():
    known = {'a': 1, 'b': 2}
    assert common.check_names([], known, 'rows') == ['a', 'b']
    assert common.check_names(['b'], known, 'rows') == ['b']
    with pytest.raises(ValueError, match=r"unknown rows \['c'\]; choose from a, b"):
        common.check_names(['a', 'c'], known, 'rows')


def test_paper_zinc_smoke(tmp_path):
    out = tmp_path / 'bench.json'
    assert main(['--suite', 'paper-zinc', '--graphs', '64', '--rows',
                 'gps-gine', 'csa', '--opts', 'gt.layers', '2',
                 '--out', str(out)] + QUIET) == 0
    payload = _load(out)
    rows = payload['suites']['paper-zinc']['rows']
    assert [r['key'] for r in rows] == ['gps-gine', 'csa']
    for r in rows:
        assert r['params'] > 0
        assert r['train_graphs_per_s'] > 0 and r['eval_graphs_per_s'] > 0
        assert r['peak_step_mib'] > 0
        # The anchors were measured with 2 threads: a ratio only then.
        if payload['meta']['threads'] == ANCHOR_THREADS:
            assert r['ratio_to_anchor'] == pytest.approx(
                r['train_graphs_per_s'] / r['anchor_train_graphs_per_s'])
        else:
            assert r['ratio_to_anchor'] is None and 'no ratio' in r['ratio_note']
    assert 'GPS GINE+Transformer' in payload['suites']['paper-zinc']['markdown']
    assert payload['meta']['torch'] == torch.__version__
    for probe in (payload['meta']['host_start'], payload['meta']['host_end']):
        assert probe['copy_gb_s'] > 0 and probe['matmul_gflop_s'] > 0
    for r in rows:  # a probe before every pass
        assert len(r['host']) == 1 and r['host'][0]['copy_gb_s'] > 0
    assert 'host_warning' in payload['meta']


def test_host_probe_converts_its_timings(monkeypatch):
    # 64 MiB read + 64 MiB written in 12.5 ms is 10.7 GB/s; 20 products of
    # 13.1 MFLOP in 2 ms is 131 GFLOP/s (the probe takes the best of 5).
    from graphgps_ext.bench import common
    times = iter([0.02, 0.0125, 0.03, 0.0125, 0.0125] + [0.002] * 5)
    monkeypatch.setattr(common, 'timed', lambda fn, device: next(times))
    probe = common.host_probe(torch.device('cpu'))
    assert probe == {'copy_gb_s': pytest.approx(10.74, abs=0.01),
                     'matmul_gflop_s': pytest.approx(131.1, abs=0.1)}
    assert common.describe_host(probe) == 'memory copy 10.7 GB/s, matmul 131 GFLOP/s'


def test_host_warning_flags_a_host_that_changed_speed():
    from graphgps_ext.bench import common
    steady = [{'copy_gb_s': 9.7, 'matmul_gflop_s': 110.0},
              {'copy_gb_s': 8.5, 'matmul_gflop_s': 95.0}]
    assert common.host_warning(steady) is None
    starved = steady + [{'copy_gb_s': 2.8, 'matmul_gflop_s': 100.0}]
    warning = common.host_warning(starved)
    assert '2.8-9.7 GB/s memory copy' in warning and 'matmul' not in warning
    assert '--ab' in warning
    assert common.host_warning(steady, tolerance=0.1) is not None


def test_paper_zinc_ab_alternates_default_and_variant(tmp_path):
    out = tmp_path / 'bench.json'
    assert main(['--suite', 'paper-zinc', '--graphs', '32', '--rows',
                 'gps-gine', '--repeats', '2', '--opts', 'gt.layers', '1',
                 '--ab', 'gt.fused_attention', 'False', '--out', str(out)]
                + QUIET) == 0
    res = _load(out)['suites']['paper-zinc']
    variant = 'gps-gine [gt.fused_attention False]'
    assert [r['key'] for r in res['rows']] == ['gps-gine', variant]
    assert all(len(r['train_runs']) == 2 for r in res['rows'])
    (pair, ) = res['ab']
    assert pair['key'] == 'gps-gine' and pair['variant'] == variant
    assert pair['variant_over_default'] == pytest.approx(
        res['rows'][1]['train_graphs_per_s']
        / res['rows'][0]['train_graphs_per_s'])
    assert pair['default_wins'] + pair['variant_wins'] <= pair['passes'] == 2
    assert 'passes won' in res['markdown']
    assert res['settings']['ab'] == ['gt.fused_attention', 'False']


def test_paper_zinc_rows_build_at_the_authors_size():
    from graphgps_ext.bench.models import (PAPER_ZINC_ROWS, build_model,
                                           common_params, markdown, row_cfg)
    # Exactly the authors' parameter counts, or their stated differences.
    for row in PAPER_ZINC_ROWS.values():
        if row.anchor_params is None:
            continue
        model = build_model(row_cfg(row), torch.device('cpu'))
        explained = row.anchor_params + sum(n for n, _ in row.param_differences)
        assert common_params(model) == explained, row.key
        assert row_cfg(row).gt.layers == 10
    text = markdown([{'model': 'CSA', 'params': 346_245, 'anchor_params': 347_557,
                      'param_differences': [(-1_280, 'a'), (-30, 'b')],
                      'train_graphs_per_s': 1.0, 'eval_graphs_per_s': 1.0,
                      'anchor_train_graphs_per_s': None, 'ratio_to_anchor': None,
                      'peak_step_mib': 1.0}])
    assert '346,245 (347,557)*' in text and '-1,280: a' in text
    assert '-2 not explained' in text


def test_layers_and_scaling_smoke(tmp_path):
    out = tmp_path / 'b.json'
    assert main(['--suite', 'layers', '--families', 'zinc', '--layer-types',
                 'GINE', 'CSA', 'GEANet', '--steps', '2', '--out', str(out)]
                + QUIET) == 0
    rows = _load(out)['suites']['layers']['rows']
    assert {r['layer'] for r in rows} == {'GINE', 'CSA', 'GEANet'}
    assert all(r['status'] == 'ok' and r['graphs_per_s'] > 0 for r in rows)

    out = tmp_path / 's.json'
    assert main(['--suite', 'scaling', '--layer-types', 'GCN', 'Transformer',
                 '--sizes', '8', '16', '--scaling-batch-nodes', '32',
                 '--scaling-batches', '2', '--scaling-repeats', '1',
                 '--out', str(out)] + QUIET) == 0
    res = _load(out)['suites']['scaling']
    assert len(res['rows']) == 4
    assert all(math.isfinite(f['slope']) for f in res['fits'])
    assert (tmp_path / 's_scaling.png').stat().st_size > 0


def test_bf16_autocast_stays_close_to_float32():
    from graphgps_ext.bench.models import (PAPER_ZINC_ROWS, build_model,
                                           make_dataset, row_cfg)
    from graphgps_ext.train.speed import autocast
    from torch_geometric.loader import DataLoader
    cfg = row_cfg(PAPER_ZINC_ROWS['gps-gine'],
                  ['gt.layers', 2, 'train.amp', 'bf16'])
    torch.manual_seed(0)
    model = build_model(cfg, torch.device('cpu')).eval()
    data, _ = make_dataset(cfg, 8, seed=0)
    batch = next(iter(DataLoader(data, batch_size=8)))
    with torch.no_grad():
        ref, _ = model(batch)
        with autocast(cfg, 'cpu'):
            low, _ = model(batch)
    assert low.float().shape == ref.shape
    assert torch.allclose(low.float(), ref, rtol=0.1, atol=0.1 * ref.abs().max())


def test_speed_switches_are_config_keys():
    from graphgps_ext.bench.models import make_cfg
    from graphgps_ext.config import ConfigError
    from graphgps_ext.train.speed import autocast, compile_model
    cfg = make_cfg()
    assert cfg.train.compile is False and cfg.train.amp == 'none'
    model = torch.nn.Linear(2, 2)
    assert compile_model(model, cfg) is model  # plain path kept
    with autocast(cfg, 'cpu'):
        assert not torch.is_autocast_enabled('cpu')
    cfg = make_cfg(['train.amp', 'bf16'])
    with autocast(cfg, 'cpu'):
        assert torch.is_autocast_enabled('cpu')
    with pytest.raises(ConfigError):
        make_cfg(['train.amp', 'fp8'])


def test_ratio_to_the_authors_code_only_on_the_anchors_device():
    cpu, cuda = torch.device('cpu'), torch.device('cuda')
    assert anchor_ratio(484.0, 242, cpu, ANCHOR_THREADS) == (2.0, None)
    # A CUDA throughput over a CPU anchor (the old table printed 2.70x).
    ratio, why = anchor_ratio(653.4, 242, cuda, ANCHOR_THREADS)
    assert ratio is None and 'cuda' in why and 'cpu' in why
    ratio, why = anchor_ratio(300.0, 242, cpu, ANCHOR_THREADS + 1)
    assert ratio is None and f'{ANCHOR_THREADS} threads' in why
    assert anchor_ratio(300.0, None, cuda, 1) == (None, None)
    row = {'model': 'GPS', 'params': 10, 'anchor_params': 10,
           'train_graphs_per_s': 653.4, 'eval_graphs_per_s': 900.0,
           'anchor_train_graphs_per_s': 242, 'ratio_to_anchor': None,
           'ratio_note': why, 'peak_step_mib': 1.0}
    text = markdown([row])
    assert '×' not in text and "No ratio to the authors' code" in text
