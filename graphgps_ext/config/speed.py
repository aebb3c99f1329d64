"""Config group ``speed``: optional speed-ups of training and evaluation.

Adds keys to GraphGym's ``train`` group. Everything is off by default (the
plain eager float32 path); each switch is checked to give the plain path's
outputs within tolerance (``tests/bench/test_bench.py``):

- ``train.compile``: wrap the model in :func:`torch.compile`
  (``train.compile_mode``; ``train.compile_dynamic`` marks shapes dynamic,
  which graph batches need: node and edge counts change every batch, so a
  static compile would recompile for each new shape);
- ``train.amp``: autocast precision of the forward pass: ``none`` (float32),
  ``bf16`` (bfloat16 autocast; fast on CUDA GPUs with bf16 units, on most
  CPUs slower than float32).

The two helpers apply the switches where a model is built and run (the
training loop, the benchmark): :func:`compile_model` and :func:`autocast`.
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
