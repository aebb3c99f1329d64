"""The speed switches applied where a model is run."""
import torch

from graphgps_ext.runs.config import load_cfg
from graphgps_ext.train.speed import autocast, compile_model


def test_helpers_follow_the_switches():
    cfg = load_cfg(None)
    model = torch.nn.Linear(2, 2)
    assert compile_model(model, cfg) is model  # plain path kept
    with autocast(cfg, 'cpu'):
        assert not torch.is_autocast_enabled('cpu')
    cfg.train.amp = 'bf16'
    with autocast(cfg, 'cpu'):
        assert torch.is_autocast_enabled('cpu')
        assert model(torch.ones(1, 2)).dtype == torch.bfloat16
    cfg.train.compile = True  # wrapping is lazy: nothing compiles until called
    compiled = compile_model(model, cfg)
    assert compiled is not model and compiled._orig_mod is model
