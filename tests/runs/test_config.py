"""Building the full config: names, defaults, accelerator, dataset-dependent
values (every bad input and its message: ``tests/config/test_bad_input.py``)."""
import pytest
import torch

from graphgps_ext.config import ConfigError
from graphgps_ext.runs.config import (config_name, finalize_cfg, load_cfg,
                                      resolve_accelerator)
from graphgps_ext.task import TaskInfo


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
    cfg = load_cfg(None, ['dataset.format', 'PyG-ZINC', 'dataset.name', 'subset',
                          'metric_best', 'mse', 'model.loss_fun', 'mse'])
    assert finalize_cfg(cfg, task) == ('mse', 'min') and cfg.model.loss_fun == 'mse'
