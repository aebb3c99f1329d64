"""The branch catalogue and ``gt.layer_type`` parsing; the constructors'
defaults and ``from_cfg`` follow the entries' options; a toy branch added by
its file plus one catalogue entry reaches the registry, the config checks,
the model and the attention pictures."""
import pytest
import torch
from torch_geometric.data import Batch, Data
from yacs.config import CfgNode as CN

from graphgps_ext import branches, register
from graphgps_ext.branches import Branch, LayerType, parse_layer_type
from graphgps_ext.config import ConfigError, has_branch
from graphgps_ext.config.gt import attention_branches
from graphgps_ext.config.posenc import pair_encoder_needed
from graphgps_ext.options import defaults_of
from graphgps_ext.task import TaskInfo

from toys import add_toy_branch


def test_parse_layer_type():
    lt = parse_layer_type('GatedGCN+None+GEANet')
    assert lt == LayerType('GatedGCN', None, 'GEANet')
    assert lt.present == ('GatedGCN', 'GEANet')
    assert lt.has('GEANet', 'CSA') and not lt.has('CSA')
    assert list(lt.kinds()) == [('local', 'GatedGCN'), ('global', None),
                                ('external', 'GEANet')]
    assert parse_layer_type('none++None').present == ()
    for bad in ('GINE+Transformer', 'A+B+C+D', ''):
        with pytest.raises(ValueError, match='three'):
            parse_layer_type(bad)


def _hand_splits(path):
    """Lines where ``path`` splits something named ``layer_type`` at ``+``."""
    import ast
    text = open(path, encoding='utf-8').read()
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == 'split' and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == '+' \
                and 'layer_type' in ast.get_source_segment(text, node.func.value):
            found.append(node.lineno)
    return found


def test_layer_type_is_split_by_the_catalogues_parser_only():
    """Outside the parser, only compat's readers of foreign formats (two-part
    GraphGPS / CSA values) split ``gt.layer_type`` themselves."""
    import os
    import graphgps_ext
    root = os.path.dirname(graphgps_ext.__file__)
    found = {}
    for folder, _, files in os.walk(root):
        for f in files:
            path = os.path.join(folder, f)
            rel = os.path.relpath(path, root)
            lines = _hand_splits(path) if f.endswith('.py') else []
            if lines:
                found[rel] = lines
    # (the check sees them: the foreign readers are found)
    assert set(found) == {'compat/__init__.py', 'compat/common.py'}


def test_the_catalogue_matches_the_package():
    table = branches.catalogue()
    assert list(table) == ['GCN', 'GIN', 'GINE', 'GatedGCN', 'GEANet',
                           'Transformer', 'GT', 'CSA', 'MNA']
    for name, branch in table.items():
        cls = branch.load()
        assert cls.__name__ == name and hasattr(cls, 'from_cfg'), name
        # a branch's options live in a config group of the package
        assert branch.group is None or branch.group in register.config_groups()
    assert attention_branches() == ('Transformer', 'GT', 'CSA', 'MNA')
    assert branches.names(group='mpnn') == ('GCN', 'GIN', 'GINE', 'GatedGCN')
    assert branches.names(pair_features=True) == ('CSA', )
    # every branch is benchmarked on its own
    from graphgps_ext.bench.layers import LAYER_TYPES
    alone = {lt.layer_type for lt in LAYER_TYPES.values()}
    for name in table:
        assert alone & {f'{name}+None+None', f'None+{name}+None',
                        f'None+None+{name}'}, name


def test_constructors_take_the_entries_options_with_their_defaults():
    """Every option a branch reads is a constructor argument whose default is
    the option's (as the class receives it); every other argument with a
    default is read from a shared key or is the class's own detail."""
    own = {'GatedGCN': {'eps'}}
    for name, entry in branches.catalogue().items():
        defaults = defaults_of(entry.load())
        read = {o.argument: o.as_argument(o.default) for o in entry.read()
                if o.argument is not None}
        assert {k: defaults.get(k, '<no default>') for k in read} == read, name
        assert set(defaults) - set(read) - set(entry.args) == own.get(name, set()), name


def _full_cfg():
    from graphgps_ext.runs.config import default_cfg
    return default_cfg().clone()


def _other(option):
    """A valid value of ``option`` other than its default."""
    if option.choices:
        return next(c for c in option.choices if c != option.default)
    if isinstance(option.default, bool):
        return not option.default
    return option.default + 1


def test_from_cfg_reads_every_option_of_the_entry():
    """Changing one option changes exactly its constructor argument (an
    option with unmet needs gets the value the run uses)."""
    register.register_all()
    for name, entry in branches.catalogue().items():
        cfg = _full_cfg()
        base = entry.arguments(cfg, 32)
        for opt in entry.read():
            if opt.argument is None:
                continue
            changed = _full_cfg()
            group = changed[entry.group]
            *path, leaf = opt.name.split('.')
            for part in path:
                group = group[part]
            group[leaf] = _other(opt)
            for key, want in entry.options.needs(opt).items():  # meet its needs
                *parents, last = key.split('.')
                node = changed
                for part in parents:
                    node = node[part]
                node[last] = 0.5 if callable(want) else want
            args = entry.arguments(changed, 32)
            diff = {k for k in args if args[k] != base[k]}
            assert opt.argument in diff, (name, opt.name)
        # and the class is built from them
        assert isinstance(entry.load().from_cfg(cfg, 32), entry.load())
    cfg = _full_cfg()
    cfg.gea.parity_slots_eq_head_dim, cfg.gea.num_slots = True, 5
    geanet = branches.catalogue()['GEANet'].load().from_cfg(cfg, 32)
    assert geanet.num_slots == 32 // cfg.gea.n_heads  # the value the run uses


def test_declarations_are_checked(monkeypatch):
    with pytest.raises(ValueError, match='together'):
        Branch('X', 'm:X', record='x')
    with pytest.raises(ValueError, match='record_layout'):
        Branch('X', 'm:X', record='x', record_layout='sparse')
    monkeypatch.setattr(branches, 'CATALOGUE',
                        branches.CATALOGUE + [Branch('GCN', 'm:GCN')])
    with pytest.raises(ValueError, match="'GCN' is declared twice"):
        branches.catalogue()


def test_has_branch_reads_the_parsed_layer_type(tiny_cfg):
    tiny_cfg.pairenc = CN({'enable': False})
    tiny_cfg.gt.layer_type = 'GINE+CSA+None'
    assert has_branch(tiny_cfg, 'CSA') and not has_branch(tiny_cfg, 'GIN')
    assert pair_encoder_needed(tiny_cfg)
    tiny_cfg.gt.layer_type = 'GINE+CSA'  # reported by the gt group's check
    assert not has_branch(tiny_cfg, 'CSA') and not pair_encoder_needed(tiny_cfg)


TASK = TaskInfo(name='rings', task='graph', task_type='regression', num_outputs=1,
                loss='l1', metric='mae', metric_direction='min', metrics=['mae'],
                node_encoder='TypeDictNode', node_dim=1, node_num_types=4,
                edge_encoder='TypeDictEdge', edge_dim=1, edge_num_types=4,
                head='graph_mlp')


def rings(sizes):
    """Rings with random atom and bond types (ZINC-style ids)."""
    g = torch.Generator().manual_seed(0)
    out = []
    for n in sizes:
        src = torch.arange(n)
        ei = torch.cat([torch.stack([src, (src + 1) % n]),
                        torch.stack([(src + 1) % n, src])], 1)
        bond = torch.randint(1, 4, (n, ), generator=g)
        out.append(Data(x=torch.randint(0, 4, (n, 1), generator=g), edge_index=ei,
                        edge_attr=torch.cat([bond, bond]), y=torch.randn(1, 1)))
    return out


@pytest.fixture
def toy_branch(tmp_path, monkeypatch):
    """Adding a branch: its file and one catalogue entry (:mod:`toys`)."""
    return add_toy_branch(tmp_path, monkeypatch)


def test_a_toy_branch_is_one_file_and_one_entry(toy_branch):
    from graphgps_ext.network import GPSModel
    from graphgps_ext.runs.config import load_cfg
    from graphgps_ext.viz import graph_maps, node_scores, record_attention

    # config checks read its traits: its constructor's heads check is
    # reported under the key it declares
    with pytest.raises(ConfigError, match=r'gt.n_heads 3 does not divide '
                                          r'gt.dim_hidden 16: the Toy branch .*'
                                          r'use gt.n_heads in \[1, 2, 4, 8, 16\]'):
        load_cfg(None, ['gt.layer_type', 'GINE+Toy+None', 'gt.dim_hidden', '16',
                        'gt.n_heads', '3'])
    with pytest.raises(ConfigError, match="did you mean 'Toy'"):
        load_cfg(None, ['gt.layer_type', 'GINE+Tyo+None'])
    # its option: a config group with its default, range and did-you-mean,
    # which has no effect without the branch
    assert load_cfg(None, []).toy.rounds == 1
    with pytest.raises(ConfigError, match=r"bad value 9 for 'toy.rounds' .*at most 4"):
        load_cfg(None, ['gt.layer_type', 'GINE+Toy+None', 'toy.rounds', '9'])
    with pytest.raises(ConfigError, match="did you mean 'toy.rounds'"):
        load_cfg(None, ['gt.layer_type', 'GINE+Toy+None', 'toy.ronuds', '2'])
    with pytest.raises(ConfigError, match="'toy.rounds' = 2 .*has no Toy branch"):
        load_cfg(None, ['toy.rounds', '2'])
    cfg = load_cfg(None, ['gt.layer_type', 'GINE+Toy+None', 'gt.dim_hidden', '16',
                          'gt.n_heads', '2', 'gt.layers', '2', 'toy.rounds', '2'])
    assert not pair_encoder_needed(cfg)

    torch.manual_seed(0)
    model = GPSModel(cfg, TASK)
    batch = Batch.from_data_list(rings([5, 7, 4]))
    pred, _ = model(batch)
    assert pred.shape == (3, 1)
    assert [layer.branches['global'].rounds for layer in model.layers] == [2, 2]
    model.reset_parameters()

    # the pictures read what it records
    record = record_attention(model, batch)
    assert len(record['toy']) == 2
    scores = node_scores(record, 'Toy', batch)
    sums = torch.zeros(3).index_add_(0, batch.batch, scores)
    torch.testing.assert_close(sums, torch.ones(3))
    assert graph_maps(record, 'Toy', batch, graph=1).shape == (2, 7, 7)
