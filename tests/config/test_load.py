"""Building the full config: validation messages, names, accelerator."""
import pytest
import torch

from graphgps_ext.config import ConfigError
from graphgps_ext.config.load import (config_name, finalize_cfg, load_cfg,
                                      resolve_accelerator)
from graphgps_ext.loader.task import TaskInfo


def test_config_name():
    assert config_name('configs/geaet/zinc.yaml') == 'geaet-zinc'
    assert config_name('/x/y/configs/quickstart.yaml') == 'quickstart'
    assert config_name('configs/a/b/c.yml') == 'a-b-c'
    assert config_name('/tmp/my_exp.yaml') == 'my_exp'


def test_defaults_overrides_and_derived_keys(tmp_path):
    path = tmp_path / 'exp.yaml'
    path.write_text('gt:\n  dim_hidden: 48\noptim:\n  base_lr: 0.005\n')
    cfg = load_cfg(str(path), ['optim.max_epoch', '7', 'wandb.mode', 'offline'])
    assert cfg.gt.dim_hidden == 48 and cfg.gnn.dim_inner == 48
    assert cfg.optim.base_lr == 0.005 and cfg.optim.max_epoch == 7
    assert cfg.run_name == 'exp' and cfg.out_dir == 'results'
    assert cfg.wandb.entity == '' and cfg.wandb.mode == 'offline'
    assert cfg.accelerator in ('cpu', 'cuda')
    assert load_cfg(str(path), ['run_name', 'mine']).run_name == 'mine'
    # set_cfg resets: nothing leaks from the previous load
    assert load_cfg(None).optim.max_epoch == 200


@pytest.mark.parametrize('opts,message', [
    (['optim.base_rl', '0.1'], "unknown config key 'optim.base_rl' on the command line; did you mean 'optim.base_lr'"),
    (['optim.scheduler', 'cosine'], "bad value 'cosine' for 'optim.scheduler'; valid values: 'none'"),
    (['optim.optimizer', 'adamax'], "bad value 'adamax' for 'optim.optimizer'; valid values: 'adam', 'adamW', 'sgd'; did you mean 'adam'"),
    (['wandb.mode', 'off'], "bad value 'off' for 'wandb.mode'"),
    (['model.loss_fun', 'l2'], "bad value 'l2' for 'model.loss_fun'"),
    (['metric_best', 'acc'], "bad value 'acc' for 'metric_best'"),
    (['optim.max_epoch'], 'KEY VALUE pairs'),
    (['train.eval_period', '0'], 'train.eval_period must be >= 1'),
    (['run_name', 'a/b'], 'plain folder name'),
    (['gt.layer_type', 'GCN+Transformr+None'], "unknown global branch 'Transformr'"),
    (['gnn.head', 'graph_mpl'], "unknown head 'graph_mpl' (gnn.head); did you mean 'graph_mlp'"),
    (['model.type', 'Foo'], "unknown model.type 'Foo'"),
])
def test_bad_overrides(opts, message):
    with pytest.raises(ConfigError) as err:
        load_cfg(None, opts)
    assert message in str(err.value)


def test_unknown_key_in_file(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text('optim:\n  warmup_epochs: 5\n')
    with pytest.raises(ConfigError, match=r"unknown config key 'optim.warmup_epochs' in .*bad.yaml; did you mean '(optim.)?num_warmup_epochs'"):
        load_cfg(str(path))
    with pytest.raises(ConfigError, match='does not exist'):
        load_cfg(str(tmp_path / 'missing.yaml'))


def test_accelerator(monkeypatch):
    assert resolve_accelerator('cpu') == 'cpu'
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    assert resolve_accelerator('auto') == 'cpu'
    with pytest.raises(ConfigError, match="accelerator 'cuda' was asked for but CUDA is not available.*accelerator cpu"):
        resolve_accelerator('gpu')
    with pytest.raises(ConfigError, match="valid values: 'auto', 'cpu'"):
        resolve_accelerator('tpu')


def test_finalize_from_task():
    cfg = load_cfg(None)
    task = TaskInfo(name='z', task='graph', task_type='regression', num_outputs=1,
                    loss='l1', metric='mae', metric_direction='min', metrics=['mae'])
    assert finalize_cfg(cfg, task) == ('mae', 'min')
    assert cfg.metric_agg == 'argmin' and cfg.model.loss_fun == 'l1'
    cfg = load_cfg(None, ['metric_best', 'mse', 'model.loss_fun', 'mse'])
    assert finalize_cfg(cfg, task) == ('mse', 'min') and cfg.model.loss_fun == 'mse'
