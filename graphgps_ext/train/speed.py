"""The speed switches of the config group ``speed``
(:mod:`graphgps_ext.config.speed`) applied where a model is run: the
training loop and the benchmark.
"""
import contextlib

import torch


def compile_model(model, cfg):
    """``torch.compile(model)`` when ``train.compile``, else ``model``."""
    if not cfg.train.compile:
        return model
    return torch.compile(model, mode=cfg.train.compile_mode,
                         dynamic=cfg.train.compile_dynamic)


def autocast(cfg, device_type: str):
    """The autocast context of ``train.amp`` on ``device_type``
    (``'cpu'`` or ``'cuda'``); a no-op context for ``none``."""
    if cfg.train.amp == 'none':
        return contextlib.nullcontext()
    return torch.autocast(device_type=device_type, dtype=torch.bfloat16)


def clip_grad_norm_(parameters, max_norm: float, cfg):
    """``torch.nn.utils.clip_grad_norm_`` (``foreach`` with ``optim.fused``)."""
    return torch.nn.utils.clip_grad_norm_(
        parameters, max_norm,
        foreach=True if cfg.optim.fused else None)
