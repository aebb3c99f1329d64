"""Config group ``speed``: registered keys, defaults, choices."""
import pytest
from yacs.config import CfgNode as CN

from graphgps_ext.config import ConfigError
from graphgps_ext.config.speed import DEFAULTS, speed_cfg
from graphgps_ext.run_config import load_cfg


def test_keys_are_registered_with_their_defaults(tmp_path):
    cfg = load_cfg(None)
    assert cfg.train.compile is False and cfg.train.compile_mode == 'default'
    assert cfg.train.compile_dynamic is True and cfg.train.amp == 'none'
    assert cfg.optim.fused is True and cfg.train.data_placement == 'auto'
    path = tmp_path / 'exp.yaml'
    path.write_text('train:\n  amp: bf16\n  compile: true\noptim:\n  fused: false\n')
    cfg = load_cfg(str(path), ['train.compile_mode', 'max-autotune'])
    assert cfg.train.amp == 'bf16' and cfg.train.compile is True
    assert cfg.optim.fused is False and cfg.train.compile_mode == 'max-autotune'


@pytest.mark.parametrize('opts,message', [
    (['train.amp', 'fp16'], "bad value 'fp16' for 'train.amp'; valid values: 'none', 'bf16'"),
    (['train.compile_mode', 'fast'], "bad value 'fast' for 'train.compile_mode'"),
    (['train.compil', 'True'], "did you mean 'train.compile'"),
    (['train.data_placement', 'gpu'],
     "bad value 'gpu' for 'train.data_placement'; valid values: 'auto', 'device', 'host'"),
])
def test_bad_values_are_rejected(opts, message):
    with pytest.raises(ConfigError, match=message):
        load_cfg(None, opts)


def test_group_sets_its_defaults():
    cfg = CN({'train': CN(), 'optim': CN()})
    speed_cfg(cfg)
    assert {k: cfg[k.split('.')[0]][k.split('.')[1]] for k in DEFAULTS} == DEFAULTS
