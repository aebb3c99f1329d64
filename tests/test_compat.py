"""GraphGPS, GEAET and CSA configs run here unchanged (:mod:`graphgps_ext.compat`).

The fixtures are unmodified configs of the three code bases. GraphGPS's and
CSA's ship in ``tests/foreign_configs`` (MIT; README there: provenance and
the parameter counts the authors' code builds from each file). GEAET's carry
no licence and do not ship: they are read from ``GRAPHGPS_EXT_FOREIGN_CONFIGS``
(by default the ``compat`` folder of the project's material beside the
checkout) and their tests skip, naming that folder, where it is absent. Every
fixture either builds a model with exactly the authors' count (or the stated
difference) or is refused with the key named; those on the shipped data
samples (ZINC, Peptides-func) train one epoch through ``main.py``.
"""
import copy
import os
import re

import pytest
import yaml

from graphgps_ext import compat
from graphgps_ext.config import ConfigError, set_key
from graphgps_ext.logger import STATS_FILE

import model_records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = os.path.join(ROOT, 'tests', 'foreign_configs')
UNSHIPPED = os.environ.get('GRAPHGPS_EXT_FOREIGN_CONFIGS',
                           os.path.join(ROOT, os.pardir, 'shared', 'compat'))
DATA = os.path.join(ROOT, 'tests', 'data')
# Each source's folder: the shipped ones, and GEAET's where it is present.
FOLDERS = {'graphgps': SHIPPED, 'csa': SHIPPED, 'geaet': UNSHIPPED}


def run_main(*argv) -> int:
    """``main.py``'s ``main(argv)`` in this process."""
    import importlib.util
    spec = importlib.util.spec_from_file_location('main', os.path.join(ROOT, 'main.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(list(argv))


def _published():
    """``{'graphgps/zinc-GPS+RWSE.yaml': 423717, ...}`` from the READMEs of
    the folders, each row kept for the source its folder serves."""
    counts = {}
    for folder in set(FOLDERS.values()):
        path = os.path.join(folder, 'README.md')
        if os.path.exists(path):
            with open(path) as f:
                counts.update({k: int(v.replace(',', '')) for k, v in re.findall(
                    r'^\| (\S+\.yaml) \| ([\d,]+) \|$', f.read(), re.M)
                    if FOLDERS[k.split('/')[0]] == folder})
    return counts


def _fixtures():
    found = []
    for source, folder in FOLDERS.items():
        sub = os.path.join(folder, source)
        if os.path.isdir(sub):
            found += [f'{source}/{f}' for f in os.listdir(sub) if f.endswith('.yaml')]
    return sorted(found)


FIXTURES = _fixtures()
PUBLISHED = {k: v for k, v in _published().items() if k in FIXTURES}
# Fixtures refused at start, and the key their message must name.
REFUSED = {'graphgps/ogbg-code2-GPS.yaml': "'gt.layer_type' (CustomGatedGCN+Performer)",
           'csa/zinc-CSA+GINE.yaml': "'gt.layer_type' (GINE+CSA)"}
SOURCE = {'graphgps': compat.GRAPHGPS, 'geaet': compat.GEAET, 'csa': compat.CSA}
_no_geaet = pytest.mark.skipif(
    not os.path.isdir(os.path.join(UNSHIPPED, 'geaet')),
    reason=f"GEAET's configs do not ship (no licence); {UNSHIPPED}/geaet not available")


def needs_geaet(test):
    """A test of GEAET's configs: extra (they do not ship), skipped without
    them."""
    return pytest.mark.extra_data(_no_geaet(test))


def cases(rels):
    """``rels`` as parameters, GEAET's marked extra."""
    return [pytest.param(r, marks=pytest.mark.extra_data) if r.startswith('geaet/')
            else r for r in rels]


def fixture(rel: str) -> str:
    return os.path.join(FOLDERS[rel.split('/')[0]], rel)


def raw(rel: str) -> dict:
    with open(fixture(rel)) as f:
        return yaml.safe_load(f)


def write(tmp_path, data: dict, name: str = 'foreign.yaml') -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return str(path)


pytestmark = pytest.mark.usefixtures('one_thread')


# ---------------------------------------------------------------- detection --
@pytest.mark.parametrize('rel', cases(FIXTURES))
def test_source_detected_from_the_keys(rel):
    assert compat.detect(raw(rel)) == SOURCE[rel.split('/')[0]]


def test_own_configs_are_not_translated():
    import glob
    paths = glob.glob(os.path.join(ROOT, 'configs', '**', '*.yaml'), recursive=True)
    assert len(paths) > 100
    for path in paths:
        with open(path) as f:
            assert compat.detect(yaml.safe_load(f)) is None, path


# ------------------------------------------------------------ model parity --
# Differences from the authors' count, each with the module that causes it
# and its exact size from the translated config (none: exact parity).
def _csa_unused(cfg):
    d, rings = cfg.gt.dim_hidden, cfg.pairenc.rings and cfg.pairenc.ring_mode == 'categorical'
    return cfg.gt.layers * 2 * d + (-1 if rings else 1) * (d // 2)


_CSA = ("CSA's GPSLayer allocates norm1_local (a BatchNorm, 2 d per layer) that "
        "its forward never uses without a local model, and CSA's "
        'DenseEdgeEncoder has 3 rows of d/2 where the pair encoder has 2 '
        '(4 with categorical rings)', _csa_unused)
DIFFERENCES = {
    'csa/zinc-CSA+RWSE.yaml': _CSA, 'csa/zinc-CSA+Rings.yaml': _CSA,
    'csa/zinc-CSA+SPDE.yaml': _CSA, 'csa/pattern-CSA.yaml': _CSA,
    'csa/mnist-CSA.yaml': _CSA, 'csa/cluster-CSA.yaml': _CSA,
    'csa/cifar10-CSA.yaml': _CSA,
}


@pytest.mark.parametrize('rel', cases(sorted(PUBLISHED)))
def test_dry_run_builds_the_authors_parameter_count(rel):
    from graphgps_ext.dry_run import check
    result = check(fixture(rel), [])
    assert result.translation is not None and result.translation.source == \
        SOURCE[rel.split('/')[0]]
    why, size = DIFFERENCES.get(rel, ('', lambda cfg: 0))
    assert PUBLISHED[rel] - result.params == size(result.cfg), \
        f"{rel}: {result.params:,} parameters, the authors' code builds " \
        f'{PUBLISHED[rel]:,}' + (f' (expected difference: {why})' if why else '')
    # --dry-run prints the authors' count beside ours, with the reasons.
    theirs, reasons = compat.authors_count(result.translation, result.cfg, result.params)
    assert theirs == PUBLISHED[rel] and bool(reasons) == (rel in DIFFERENCES)
    model_records.check(rel, result.model)  # the model recorded for this file


@pytest.mark.parametrize('rel,lines', [
    ('csa/zinc-CSA+RWSE.yaml', ["parameters: 346,245",
                                "the CSA authors' code builds 347,557 parameters from this "
                                'file (+1,312', '+1,280: norm1_local', "+32: the padding row"]),
    ('csa/zinc-CSA+Rings.yaml', ["builds 347,685 parameters", '-32: the pair encoder here']),
    ('graphgps/zinc-GPS+RWSE.yaml', ["parameters: 423,717", "the GraphGPS authors' code builds "
                                     'the same modules: 423,717 parameters']),
])
def test_dry_run_prints_the_authors_count_and_why_it_differs(rel, lines, capsys):
    assert run_main('--cfg', fixture(rel), '--dry-run') == 0
    out = capsys.readouterr().out
    for line in lines:
        assert line in out, out


@pytest.mark.parametrize('rel', cases([r for r in FIXTURES if r not in PUBLISHED]))
def test_other_fixtures_build_or_are_refused_naming_the_key(rel, capsys):
    code = run_main('--cfg', fixture(rel), '--dry-run')
    out, err = capsys.readouterr()
    if rel in REFUSED:
        assert code == 2 and REFUSED[rel] in err, err
    else:
        assert code == 0, err
        assert re.search(r'^parameters: [\d,]+$', out, re.M), out
        from graphgps_ext.dry_run import check
        model_records.check(rel, check(fixture(rel), []).model)


def test_translation_equals_the_shipped_graphgps_zinc_config():
    """The translated GraphGPS ZINC config builds the same parameters, tensor
    by tensor, as configs/gps/zinc.yaml (written from the authors' model)."""
    from graphgps_ext.dry_run import check
    ours = check(os.path.join(ROOT, 'configs', 'gps', 'zinc.yaml'), []).model
    theirs = check(fixture('graphgps/zinc-GPS+RWSE.yaml'), []).model
    shapes = lambda m: [(k, tuple(v.shape)) for k, v in m.state_dict().items()]  # noqa: E731
    assert shapes(theirs) == shapes(ours)


def test_two_class_tasks_predict_one_logit_as_graphgym():
    from graphgps_ext.dry_run import check
    theirs = check(fixture('graphgps/pattern-GPS.yaml'), [])
    assert theirs.task.num_outputs == 1
    assert theirs.cfg.dataset.binary_single_logit
    two = check(fixture('graphgps/pattern-GPS.yaml'),
                ['dataset.binary_single_logit', 'False'])
    assert two.task.num_outputs == 2 and two.params == theirs.params + 65
    ten = check(fixture('graphgps/cifar10-GPS.yaml'), [])
    assert ten.task.num_outputs == 10


# -------------------------------------------------------------------- notes --
@needs_geaet
def test_notes_name_each_translated_and_inert_key():
    notes = compat.translate(raw('geaet/pattern.yaml'), path='pattern.yaml').notes
    assert 'GEANet.unit_size 16 -> gea.num_slots 16, ' \
           'gea.parity_slots_eq_head_dim True' in notes
    assert any(n.startswith('gt.layer_type CustomGatedGCN+Transformer+GEANet -> '
                            'gt.layer_type GatedGCN+Transformer+GEANet') for n in notes)
    assert any(n.startswith('train.mode custom: inert') for n in notes)
    assert any(n.startswith('train.ckpt_period 100: inert') for n in notes)
    assert any(n.startswith('accelerator cuda:1 -> accelerator auto') for n in notes)
    assert any(n.startswith('gt.ffn_dropout 0.13, gt.global_dropout 0.13, '
                            'gt.external_dropout 0.13 -> gt.dropout 0.13') for n in notes)
    zinc = compat.translate(raw('graphgps/zinc-GPS+RWSE.yaml')).notes
    assert 'gnn.layers_post_mp 3: inert (san_graph always has 3 layers)' in zinc
    assert any(n.startswith('posenc_RWSE.layers (GraphGPS default) 3 -> ')
               for n in zinc)


def test_name_tag_and_wandb_name(tmp_path):
    data = raw('graphgps/zinc-GPS+RWSE.yaml')
    data['name_tag'] = 'run7'
    data['wandb']['name'] = 'my-run'
    t = compat.translate(data, path=str(tmp_path / 'zinc-GPS+RWSE.yaml'))
    assert t.config['run_name'] == 'zinc-GPS+RWSE-run7'
    assert t.config['wandb']['name'] == 'my-run'  # GraphGPS's key, same meaning
    assert not any(n.startswith('wandb.name') for n in t.notes)


@needs_geaet
def test_load_cfg_logs_the_notes_once_per_file(capsys):
    from graphgps_ext.runs.config import load_cfg
    path = fixture('geaet/mnist.yaml')
    compat._logged.pop(os.path.abspath(path), None)
    load_cfg(path, [])
    load_cfg(path, ['seed', '3'])
    out = capsys.readouterr().out
    assert out.count('GEAET config, translated') == 1
    assert '  GEANet.unit_size 10 -> gea.num_slots 10' in out


# ----------------------------------------------------------------- refusals --
def _zinc_with(**changes):
    data = copy.deepcopy(raw('graphgps/zinc-GPS+RWSE.yaml'))
    for key, value in changes.items():
        set_key(data, key, value)
    return data


REFUSALS = [
    ({'gt.layer_type': 'GINE+Performer'}, "'gt.layer_type'"),
    ({'gt.layer_type': 'PNA+Transformer'}, "'gt.layer_type'"),
    ({'gt.layer_norm': True, 'gt.batch_norm': True}, "'gt.layer_norm'"),
    ({'gnn.layers_pre_mp': 1}, "'gnn.layers_pre_mp'"),
    ({'gnn.dim_inner': 32}, "'gnn.dim_inner'"),
    ({'model.type': 'SANTransformer'}, "'model.type'"),
    ({'dataset.format': 'PyG-Planetoid'}, "'dataset.format'"),
    ({'optim.batch_accumulation': 2}, "'optim.batch_accumulation'"),
    ({'optim.scheduler': 'linear_with_warmup'}, "'optim.scheduler'"),
    ({'train.mode': 'inference-only'}, "'train.mode'"),
    ({'posenc_SignNet.enable': True}, "'posenc_SignNet.enable'"),
    ({'posenc_RWSE.model': 'none'}, "'posenc_RWSE.model'"),
    ({'dataset.node_encoder_name': 'TypeDictNode+SignNet'},
     "'dataset.node_encoder_name'"),
    ({'gnn.head': 'graphormer_graph'}, "'gnn.head'"),
    ({'model.loss_fun': 'smoothl1'}, "'model.loss_fun'"),
    ({'gt.bogus_key': 1}, "'gt.bogus_key'"),
]


@pytest.mark.parametrize('changes,named', REFUSALS,
                         ids=[next(iter(c)) for c, _ in REFUSALS])
def test_what_would_change_the_model_is_refused_at_start(tmp_path, capsys,
                                                         changes, named):
    path = write(tmp_path, _zinc_with(**changes))
    assert run_main('--cfg', path, '--dry-run') == 2
    err = capsys.readouterr().err
    assert err.startswith('config error: ') and named in err, err


def test_geaet_refusals():
    """What GEAET's own code cannot build is refused with the key named."""
    bad = _geaet(GEANet={'n_heads': 4, 'unit_size': 8})
    with pytest.raises(ConfigError, match=r"'GEANet\.unit_size' \(8\).*8 x 4"):
        compat.translate(bad)
    bad = _geaet(GEANet={'edge_unit': False, 'shared_unit': True})
    with pytest.raises(ConfigError, match=r"'GEANet\.shared_unit'"):
        compat.translate(bad)
    bad = _geaet(gt={'layer_norm': True, 'batch_norm': True})
    with pytest.raises(ConfigError, match=r"'gt\.layer_norm'.*both norms together"):
        compat.translate(bad)


# ------------------------------------------------- overrides, config.yaml --
@needs_geaet
def test_overrides_in_our_keys_apply_after_the_translation():
    from graphgps_ext.dry_run import check
    r = check(fixture('geaet/pattern.yaml'), ['gea.parity_batch_softmax', 'False',
                                              'gt.layers', '2'])
    assert r.cfg.gea.parity_batch_softmax is False and r.cfg.gt.layers == 2
    assert r.cfg.gea.num_slots == 16


# ---------------------------------------------------------- one epoch each --
TRAINED = ['graphgps/zinc-GPS+RWSE.yaml', 'csa/zinc-CSA+RWSE.yaml',
           'csa/zinc-CSA+Rings.yaml', 'csa/zinc-CSA+SPDE.yaml',
           'graphgps/peptides-func-GPS.yaml']


@pytest.fixture(scope='module')
def data_root(tmp_path_factory):
    """The shipped ZINC and Peptides-func samples copied once for the module
    (processed once)."""
    import shutil
    root = tmp_path_factory.mktemp('data')
    for name in ('ZINC', 'peptides-functional'):
        shutil.copytree(os.path.join(DATA, name), root / name)
    return str(root)


@pytest.mark.parametrize('rel', TRAINED)
def test_fixture_trains_one_epoch_and_config_yaml_reproduces_it(rel, data_root,
                                                                tmp_path, capsys):
    import json
    from graphgps_ext.dry_run import check
    out = tmp_path / 'results'
    code = run_main('--cfg', fixture(rel), 'dataset.dir', data_root,
                    'dataset.max_graphs', '48', 'optim.max_epoch', '1',
                    'train.batch_size', '16', 'wandb.use', 'False',
                    'out_dir', str(out), 'num_threads', '1')
    assert code == 0, capsys.readouterr()
    run_dir = out / os.path.splitext(os.path.basename(rel))[0] / '0'
    with open(run_dir / 'val' / STATS_FILE) as f:
        stats = [json.loads(line) for line in f]
    assert len(stats) == 1 and all(v == v for v in stats[0].values())
    # config.yaml is this project's config: it builds the same model alone.
    saved = str(run_dir / 'config.yaml')
    with open(saved) as f:
        assert compat.detect(yaml.safe_load(f)) is None
    again = check(saved, [])
    assert again.translation is None
    assert again.params == stats[0]['params'] == check(fixture(rel), []).params


# ---------------------------------------------- other configs of the sources --
def test_graphgps_custom_gnn_is_an_mpnn_stack():
    """GraphGPS's MPNN baselines (model.type custom_gnn): gnn.layers_mp
    GatedGCN layers with gnn.residual and gnn.dropout, no attention, FFN or
    layer norm."""
    from graphgps_ext.dry_run import check
    data = raw('graphgps/peptides-func-GPS.yaml')
    data['model']['type'] = 'custom_gnn'
    del data['gt']
    data['gnn'].update(layer_type='gatedgcnconv', layers_mp=5, residual=True,
                       dim_inner=138, dropout=0.1)
    t = compat.translate(data)
    assert t.config['gt']['layer_type'] == 'GatedGCN+None+None'
    assert (t.config['gt']['layers'], t.config['gt']['dim_hidden'],
            t.config['gt']['dropout'], t.config['gt']['residual'],
            t.config['gt']['ffn'], t.config['gt']['norm']) == (5, 138, 0.1, True, False, 'none')
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'peptides-func-GatedGCN.yaml')
        with open(path, 'w') as f:
            yaml.safe_dump(data, f)
        result = check(path, [])
    layer = result.model.layers[0]
    assert list(layer.branches) == ['local'] and layer.ffn is None
    d = 138  # A..E, node and edge BatchNorms; Atom/Bond encoders; 1-layer head
    assert sum(p.numel() for p in layer.parameters()) == 5 * (d * d + d) + 4 * d


# -------------------------------------- GEAET keys on a config of our own --
def _geaet(**groups) -> dict:
    """A small GEAET-style config (our own text, written for these tests)
    with the GEAET keys in question; ``groups`` update its groups."""
    data = {
        'metric_best': 'mae', 'metric_agg': 'argmin',
        'dataset': {'format': 'OGB', 'name': 'peptides-structural',
                    'task': 'graph', 'task_type': 'regression',
                    'node_encoder': True, 'node_encoder_name': 'Atom',
                    'node_encoder_bn': False, 'edge_encoder': True,
                    'edge_encoder_name': 'Bond', 'edge_encoder_bn': False},
        'train': {'mode': 'custom', 'batch_size': 32},
        'model': {'type': 'GEAET', 'loss_fun': 'l1', 'graph_pooling': 'mean'},
        'gt': {'layer_type': 'CustomGatedGCN+Transformer+GEANet', 'layers': 2,
               'n_heads': 4, 'dim_hidden': 64, 'ffn_dropout': 0.1,
               'global_dropout': 0.1, 'local_dropout': 0.1,
               'external_dropout': 0.1, 'attn_dropout': 0.2,
               'layer_norm': False, 'batch_norm': True},
        'GEANet': {'n_heads': 4, 'unit_size': 16, 'edge_unit': True,
                   'shared_unit': True},
        'gnn': {'head': 'mlp_graph', 'layers_pre_mp': 0, 'layers_post_mp': 2,
                'dim_inner': 64, 'act': 'relu', 'dropout': 0.0},
        'optim': {'optimizer': 'adamW', 'base_lr': 0.001, 'max_epoch': 2},
    }
    for group, values in groups.items():
        data[group].update(values)
    return data


def _count(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_geaet_layer_norm_is_pyg_graph_wise_layer_norm(tmp_path):
    """gt.layer_norm True (batch_norm False): GEAET's layer normalises each
    branch and the branch sum with PyG's graph-wise LayerNorm (2 d each, the
    count of the BatchNorms it replaces)."""
    from torch_geometric.nn.norm import LayerNorm
    from graphgps_ext.dry_run import check
    from graphgps_ext.layer.hybrid import GraphLayerNorm
    t = compat.translate(_geaet(gt={'layer_norm': True, 'batch_norm': False}))
    assert t.config['gt']['norm'] == 'graph_layer'
    assert any(n.startswith('gt.layer_norm True, gt.batch_norm False -> gt.norm '
                            "graph_layer (PyG's graph-wise LayerNorm") for n in t.notes)
    ln = check(write(tmp_path, _geaet(gt={'layer_norm': True, 'batch_norm': False}),
                     'ln.yaml'), [])
    bn = check(write(tmp_path, _geaet(), 'bn.yaml'), [])
    layer = ln.model.layers[0]
    norms = list(layer.norms.values()) + [layer.ffn_norm]
    assert len(norms) == 4 and all(isinstance(n, GraphLayerNorm) for n in norms)
    assert all(isinstance(n, LayerNorm) and n.mode == 'graph' for n in norms)
    assert ln.params == bn.params


def test_graphgps_layer_norm_is_graphnorm(tmp_path):
    """GraphGPS's layer normalises with GraphNorm under gt.layer_norm (3 d per
    norm: 3 norms of 64 channels per layer, 10 layers, d more each than the
    BatchNorms)."""
    from graphgps_ext.dry_run import check
    from graphgps_ext.layer.hybrid import GraphNorm
    path = write(tmp_path, _zinc_with(**{'gt.layer_norm': True,
                                         'gt.batch_norm': False}), 'zinc-ln.yaml')
    r = check(path, [])
    assert r.cfg.gt.norm == 'graphnorm'
    assert isinstance(r.model.layers[0].ffn_norm, GraphNorm)
    assert r.params == PUBLISHED_GRAPHGPS_ZINC + 10 * 3 * 64


PUBLISHED_GRAPHGPS_ZINC = 423_717


def test_geaet_per_branch_dropouts_map_to_the_branches(tmp_path):
    """Unequal per-branch rates build a model: gt.dropout is the FFN's rate
    (GatedGCN drops out with it in GEAET's code, gt.local_dropout is inert),
    a branch whose rate differs gets gt.dropout_<branch>."""
    from graphgps_ext.dry_run import check
    data = _geaet(gt={'ffn_dropout': 0.1, 'global_dropout': 0.3,
                      'external_dropout': 0.05, 'local_dropout': 0.7})
    t = compat.translate(data)
    assert t.config['gt']['dropout'] == 0.1
    assert t.config['gt']['dropout_global'] == 0.3
    assert t.config['gt']['dropout_external'] == 0.05
    assert 'dropout_local' not in t.config['gt']
    assert any(n.startswith('gt.local_dropout 0.7: inert (GatedGCN applies '
                            'gt.ffn_dropout') for n in t.notes)
    layer = check(write(tmp_path, data), []).model.layers[0]
    assert {k: d.p for k, d in layer.dropouts.items()} == {
        'local': 0.1, 'global': 0.3, 'external': 0.05}
    assert layer.ffn.dropout.p == 0.1 and layer.branches['local'].dropout.p == 0.1


def test_geaet_gcn_without_ffn_builds_the_authors_modules(tmp_path, capsys):
    """GCN+None+GEANet without FFN, unequal dropouts, an edge encoder no branch
    reads, and the mlp_graph head with gnn.dropout: runs unchanged. GEAET's
    code builds the Bond encoder (13 rows x d, never trained) and drops out
    the head's input as well as its hidden layers."""
    data = _geaet(gt={'layer_type': 'GCN+None+GEANet', 'use_ffn': False,
                      'local_dropout': 0.1, 'external_dropout': 0.05,
                      'ffn_dropout': 0.05, 'global_dropout': 0.0,
                      'local_out_act': True},
                  GEANet={'edge_unit': False, 'shared_unit': False},
                  gnn={'dropout': 0.1, 'layers_post_mp': 3})
    path = write(tmp_path, data, 'gcn.yaml')
    assert run_main('--cfg', path, '--dry-run') == 0
    out = capsys.readouterr().out
    assert 'gt.local_dropout 0.1, gt.external_dropout 0.05 -> gt.dropout 0.1, ' \
           'gt.dropout_external 0.05' in out
    assert 'dataset.parity_unused_edge_encoder True' in out
    assert 'edge_encoder: Bond 832' in out  # 13 bond-feature rows x 64
    assert 'head.dropout 0.1' in out and 'head.input_dropout 0.1' in out
    assert 'gt.use_ffn False -> gt.ffn False, gt.parity_norm_without_ffn True' in out
    from graphgps_ext.dry_run import check
    r = check(path, [])
    layer = r.model.layers[0]
    assert {k: d.p for k, d in layer.dropouts.items()} == {'local': 0.1,
                                                          'external': 0.05}
    assert r.model.edge_encoder is not None
    # Without the parity switch no branch reads the edges: no encoder.
    r = check(path, ['dataset.parity_unused_edge_encoder', 'False'])
    assert r.model.edge_encoder is None
