"""Config group ``speed``: registered keys, defaults, choices."""
import pytest
from yacs.config import CfgNode as CN

from graphgps_ext.config import ConfigError
from graphgps_ext.config.speed import DEFAULTS, speed_cfg
from graphgps_ext.runs.config import load_cfg


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


@pytest.mark.parametrize('value,expected', [
    ('auto', 'auto'), ('True', True), ('true', True), ('False', False),
    ('false', False)])
def test_auto_or_bool_keys(value, expected):
    cfg = load_cfg(None, ['train.static_shapes', value,
                          'train.fast_path_check', value])
    assert cfg.train.static_shapes == expected
    assert cfg.train.fast_path_check == expected


def test_auto_or_bool_keys_in_a_file(tmp_path):
    path = tmp_path / 'exp.yaml'
    path.write_text('train:\n  static_shapes: true\n  fast_path_check: auto\n')
    cfg = load_cfg(str(path))
    assert cfg.train.static_shapes is True and cfg.train.fast_path_check == 'auto'
    path.write_text('train:\n  static_shapes: 1\n')
    with pytest.raises(ConfigError, match="'train.static_shapes'.*'auto', True or False"):
        load_cfg(str(path))


@pytest.mark.parametrize('value', ['yes', 'on', '1'])
def test_auto_or_bool_keys_refuse_other_values(value):
    with pytest.raises(ConfigError, match="train.static_shapes"):
        load_cfg(None, ['train.static_shapes', value])


def test_static_shapes_and_check_are_outside_the_fingerprint_tf32_inside():
    from graphgps_ext.config import volatile_keys
    from graphgps_ext.config import key_matches
    keys = volatile_keys()
    assert key_matches('train.static_shapes', keys)
    assert key_matches('train.fast_path_check', keys)
    assert key_matches('train.compile_step', keys)
    assert not key_matches('train.tf32', keys)


@pytest.mark.parametrize('value,static,expected', [
    ('auto', True, True), ('auto', False, False), ('True', False, True),
    ('False', True, False)])
def test_compile_step_resolves_under_compile(value, static, expected):
    from graphgps_ext.train.speed import compile_step_wanted
    cfg = load_cfg(None, ['train.compile', 'True', 'train.compile_step', value])
    assert compile_step_wanted(cfg, static) is expected
    assert compile_step_wanted(load_cfg(None, []), static) is False


def test_compile_step_without_compile_is_refused():
    with pytest.raises(ConfigError, match="'train.compile_step'.*train.compile is False"):
        load_cfg(None, ['train.compile_step', 'True'])


def test_tf32_applies_on_cuda_only(monkeypatch):
    """``apply_tf32`` sets torch's two TF32 switches on CUDA only. Tested on
    a stand-in for ``torch`` (the module's own name replaced), so that the
    test neither changes torch's process-wide settings nor depends on how a
    torch release implements them."""
    from types import SimpleNamespace

    from graphgps_ext.train import speed
    backends = SimpleNamespace(cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False)),
                               cudnn=SimpleNamespace(allow_tf32=False))
    monkeypatch.setattr(speed, 'torch', SimpleNamespace(backends=backends))
    cfg = load_cfg(None, ['train.tf32', 'True'])
    speed.apply_tf32(cfg, 'cpu')
    assert backends.cuda.matmul.allow_tf32 is False and backends.cudnn.allow_tf32 is False
    speed.apply_tf32(cfg, 'cuda')
    assert backends.cuda.matmul.allow_tf32 is True and backends.cudnn.allow_tf32 is True
    speed.apply_tf32(load_cfg(None, ['train.tf32', 'False']), 'cuda')
    assert backends.cuda.matmul.allow_tf32 is False and backends.cudnn.allow_tf32 is False
