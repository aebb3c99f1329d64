"""Config group ``speed``: optional speed-ups of training and evaluation.

Adds keys to GraphGym's ``train`` and ``optim`` groups. Each switch keeps
the plain path available and is checked to give its results within
tolerance (``tests/bench/test_bench.py``):

- ``optim.fused`` (on by default): Adam/AdamW with ``fused=True`` (one
  multi-tensor kernel instead of a Python loop over the parameters; about
  3x cheaper on CPU for the 190 tensors of a 10-layer model) and gradient
  clipping with ``foreach=True``; ``False`` is PyTorch's default
  per-parameter loop;

- ``train.compile``: wrap the model in :func:`torch.compile`
  (``train.compile_mode``; ``train.compile_dynamic`` marks shapes dynamic,
  which graph batches need: node and edge counts change every batch, so a
  static compile would recompile for each new shape);
- ``train.amp``: autocast precision of the forward pass: ``none`` (float32),
  ``bf16`` (bfloat16 autocast; fast on CUDA GPUs with bf16 units, on most
  CPUs slower than float32).

The helpers apply the switches where a model is built and run (the
training loop, the benchmark): :func:`build_optimizer`,
:func:`clip_grad_norm_`, :func:`compile_model` and :func:`autocast`.
"""
import contextlib

from graphgps_ext.config import choices


def speed_cfg(cfg):
    # torch.compile the model (plain eager when False).
    cfg.train.compile = False
    # torch.compile mode: default | reduce-overhead | max-autotune.
    cfg.train.compile_mode = 'default'
    # Compile with dynamic shapes (graph batches change size every step).
    cfg.train.compile_dynamic = True
    # Autocast of the forward pass: none | bf16.
    cfg.train.amp = 'none'
    # Fused Adam/AdamW kernels and foreach gradient clipping.
    cfg.optim.fused = True


choices('train.compile_mode', ['default', 'reduce-overhead', 'max-autotune'])
choices('train.amp', ['none', 'bf16'])


def compile_model(model, cfg):
    """``torch.compile(model)`` when ``cfg.train.compile``, else ``model``."""
    if not cfg.train.compile:
        return model
    import torch
    return torch.compile(model, mode=cfg.train.compile_mode,
                         dynamic=cfg.train.compile_dynamic)


def autocast(cfg, device_type: str):
    """The autocast context of ``cfg.train.amp`` on ``device_type``
    (``'cpu'`` or ``'cuda'``); a no-op context for ``none``."""
    if cfg.train.amp == 'none':
        return contextlib.nullcontext()
    import torch
    return torch.autocast(device_type=device_type, dtype=torch.bfloat16)


def optimizer_kwargs(cfg, params) -> dict:
    """Constructor keywords of ``optim.fused`` for the parameters ``params``:
    ``{'fused': True}`` for Adam/AdamW when every parameter is a floating
    CPU or CUDA tensor, else ``{}``."""
    if not cfg.optim.get('fused', False) or \
            cfg.optim.optimizer not in ('adam', 'adamW'):
        return {}
    ok = all(p.is_floating_point() and p.device.type in ('cpu', 'cuda')
             for p in params)
    return {'fused': True} if ok else {}


def build_optimizer(cfg, params):
    """The optimiser of :func:`graphgps_ext.train.optim.build_optimizer`
    (``optim.optimizer``, ``base_lr``, ``weight_decay``) with the
    :func:`optimizer_kwargs` of ``optim.fused``."""
    from graphgps_ext.train.optim import build_optimizer as plain
    params = list(params)
    opt = plain(cfg, params)
    kwargs = optimizer_kwargs(cfg, params)
    if not kwargs or all(opt.defaults.get(k) == v for k, v in kwargs.items()):
        return opt
    return type(opt)(params, lr=cfg.optim.base_lr,
                     weight_decay=cfg.optim.weight_decay, **kwargs)


def clip_grad_norm_(parameters, max_norm: float, cfg):
    """``torch.nn.utils.clip_grad_norm_`` (``foreach`` with ``optim.fused``)."""
    import torch
    return torch.nn.utils.clip_grad_norm_(
        parameters, max_norm,
        foreach=True if cfg.optim.get('fused', False) else None)
