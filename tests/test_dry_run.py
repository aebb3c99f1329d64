"""``main.py --dry-run`` (:mod:`graphgps_ext.dry_run`): validate a config and
build its model from the dataset's known shapes, without data or writes."""
import os
import re

import pytest
import torch

from graphgps_ext.dry_run import check, layer_stack
from graphgps_ext.config import ConfigError

from toys import add_toy_branch, add_toy_encoding

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def config(rel):
    return os.path.join(ROOT, 'configs', rel)


def run_main(*argv) -> int:
    import importlib.util
    spec = importlib.util.spec_from_file_location('main', os.path.join(ROOT, 'main.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(list(argv))


pytestmark = pytest.mark.usefixtures('one_thread')


@pytest.mark.parametrize('rel', ['quickstart.yaml', 'gps/zinc.yaml',
                                 'geaet/peptides-func-gcn-geanet.yaml', 'csa/zinc-rings.yaml',
                                 'mna/nci1.yaml', 'gt/pattern.yaml'])
def test_prints_layers_parameters_and_results_folder(rel, tmp_path, capsys):
    code = run_main('--cfg', config(rel), '--dry-run', '--seeds', '0,3',
                    'out_dir', str(tmp_path / 'results'))
    out = capsys.readouterr().out
    assert code == 0
    result = check(config(rel), ['out_dir', str(tmp_path / 'results')])
    assert f'parameters: {result.params:,}' in out
    assert result.params == sum(p.numel() for p in result.model.parameters())
    assert re.search(r'^  layers: \d+ x \[', out, re.M)
    for seed in (0, 3):
        assert f'{tmp_path}/results/{result.run_name}/{seed}  new' in out
    assert not (tmp_path / 'results').exists()  # nothing written


def test_layer_stack_lines_add_up():
    result = check(config('gps/zinc.yaml'), [])
    total = 0
    for line in result.layers:
        total += int(line.rsplit(' ', 1)[1].replace(',', ''))
    assert total == result.params == 423717
    assert result.layers[2].startswith('layers: 10 x [local GINE ')


def test_overrides_and_seed_status(tmp_path, capsys):
    run_dir = tmp_path / 'results' / 'gps-zinc' / '1'
    run_dir.mkdir(parents=True)
    (run_dir / 'config.yaml').write_text('seed: 1\n')
    code = run_main('--cfg', config('gps/zinc.yaml'), '--dry-run', '--repeat', '2',
                    'out_dir', str(tmp_path / 'results'), 'gt.layers', '2')
    out = capsys.readouterr().out
    assert code == 0
    assert 'model GPSModel, d 64, 2 x GINE+Transformer+None:' in out
    assert f'{run_dir}  unfinished' in out
    assert f'{tmp_path}/results/gps-zinc/0  new' in out


def test_config_errors_exit_2_naming_the_key(tmp_path, capsys):
    assert run_main('--cfg', config('gps/zinc.yaml'), '--dry-run',
                    'gt.layer_type', 'GINE+Transformr+None') == 2
    assert "unknown global branch 'Transformr'" in capsys.readouterr().err
    assert run_main('--cfg', config('gps/zinc.yaml'), '--dry-run',
                    'posenc_RWSE.dim_pe', '64') == 2  # leaves no room for types
    assert 'dim_pe' in capsys.readouterr().err
    with pytest.raises(SystemExit) as bad_seeds:  # argparse: usage + exit 2
        run_main('--cfg', config('gps/zinc.yaml'), '--dry-run', '--seeds', 'a')
    assert bad_seeds.value.code == 2
    assert '--seeds' in capsys.readouterr().err
    with pytest.raises(ConfigError, match='gt.lyers'):
        check(config('gps/zinc.yaml'), ['gt.lyers', '3'])


def test_dataset_whose_shapes_need_the_data(capsys):
    code = run_main('--cfg', config('mna/nci1.yaml'), '--dry-run',
                    'dataset.name', 'PROTEINS')
    out = capsys.readouterr().out
    assert code == 0
    assert "model not built: the shapes of dataset 'PROTEINS'" in out
    assert 'parameters:' not in out


def test_layer_stack_of_a_plain_module():
    net = torch.nn.Sequential()
    net.add_module('enc', torch.nn.Linear(3, 4))
    net.add_module('layers', torch.nn.ModuleList([torch.nn.Linear(4, 4)] * 2))
    assert layer_stack(net) == ['enc: Linear 16', 'layers: 2 x [Linear] = 2 x 20 = 20']


TOYS = """gt:
  layer_type: GINE+Toy+None
  dim_hidden: 16
  n_heads: 2
  layers: 2
toy:
  rounds: 2
posenc_Toy:
  enable: true
  dim_pe: 4
  cap: 3
"""


def test_a_toy_branch_and_a_toy_encoding_each_one_file_and_one_entry(
        tmp_path, monkeypatch, capsys):
    """Each with one option of its own, added as a newcomer adds them
    (:mod:`toys`): ``--dry-run`` checks their options (ranges, with
    did-you-mean on a misspelled key) and builds them; the precompute
    attaches the toy encoding and the model runs on it."""
    add_toy_branch(tmp_path, monkeypatch)
    add_toy_encoding(tmp_path, monkeypatch)
    path = tmp_path / 'toys.yaml'
    path.write_text(TOYS)
    out_dir = ['out_dir', str(tmp_path / 'results')]
    for opts, message in [
            (['toy.rounds', '9'], "bad value 9 for 'toy.rounds' (on the command line): "
                                  'must be at most 4'),
            (['posenc_Toy.cap', '0'], "bad value 0 for 'posenc_Toy.cap' (on the command "
                                      'line): must be >= 1'),
            (['toy.ronuds', '2'], "did you mean 'toy.rounds'"),
            (['posenc_Toy.cpa', '2'], "did you mean 'posenc_Toy.cap'"),
            (['gt.layer_type', 'GINE+Transformer+None', 'toy.rounds', '3'],
             "'toy.rounds' = 3 (on the command line) has no effect: gt.layer_type "
             "'GINE+Transformer+None' has no Toy branch"),
            (['dataset.node_encoder', 'True', 'dataset.node_encoder_name', 'default',
              'posenc_Toy.cap', '5'],
             "'posenc_Toy.cap' = 5 (on the command line) has no effect: Toy is not "
             'selected'),
    ]:
        assert run_main('--cfg', str(path), '--dry-run', *out_dir, *opts) == 2, opts
        assert message in capsys.readouterr().err, opts
    assert run_main('--cfg', str(path), '--dry-run', *out_dir) == 0
    out = capsys.readouterr().out
    assert 'node_encoder: CompositeNodeEncoder(MultiTypeNode, ToyPE)' in out
    assert re.search(r'^  layers: 2 x \[local GINE [\d,]+ \+ global Toy [\d,]+ ', out, re.M)

    from graphgps_ext.loader.shapes import sample_graphs
    from graphgps_ext.transform import precompute_encodings
    from torch_geometric.data import Batch
    result = check(str(path), out_dir)
    assert [layer.branches['global'].rounds for layer in result.model.layers] == [2, 2]
    graphs = precompute_encodings(sample_graphs(result.cfg, 3), result.cfg, None)
    batch = Batch.from_data_list([graphs[i] for i in range(len(graphs))])
    assert batch.pe_toy.shape == (batch.num_nodes, 4)  # cap 3: degrees 0..3
    pred, _ = result.model(batch)
    assert torch.isfinite(pred).all()
