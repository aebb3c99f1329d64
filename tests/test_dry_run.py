"""``main.py --dry-run`` (:mod:`graphgps_ext.dry_run`): validate a config and
build its model from the dataset's known shapes, without data or writes."""
import os
import re

import pytest
import torch

from graphgps_ext.dry_run import check, layer_stack
from graphgps_ext.config import ConfigError

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
