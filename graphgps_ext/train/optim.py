r"""Optimisers and learning-rate schedules (stepped once per epoch).

``optim.optimizer``: ``adam``, ``adamW`` (decoupled weight decay) or ``sgd``
(with ``optim.momentum``), all at ``optim.base_lr`` with
``optim.weight_decay`` (times the number of processes with
``optim.lr_scaling linear``).

``optim.scheduler``:

- ``none``: constant learning rate;
- ``cosine_with_warmup`` (GraphGPS): with :math:`W` warm-up epochs
  (``optim.num_warmup_epochs``) and :math:`T` = ``optim.max_epoch``, the lr of
  epoch :math:`t` is ``base_lr`` times

  .. math:: \max(10^{-6}, t / W) \ \ (t < W), \qquad
            \tfrac12\bigl(1 + \cos(\pi\,\tfrac{t - W}{T - W})\bigr)\ \ (t \ge W);

- ``cos``: cosine annealing from ``base_lr`` to 0 over ``optim.max_epoch``
  epochs (GraphGym);
- ``steps``: multiply by ``optim.lr_decay`` at the epochs ``optim.steps``;
- ``reduce_on_plateau`` (GT, GraphGPS): multiply by ``optim.reduce_factor``
  when the validation loss has not improved for ``optim.schedule_patience``
  evaluations; the run stops once the lr is below ``optim.min_lr`` (GT).
"""
import math

import torch
from torch.optim import lr_scheduler


def build_optimizer(cfg, params, lr_scale: float = 1.0) -> torch.optim.Optimizer:
    """The optimiser of ``optim.optimizer`` at ``optim.base_lr`` x ``lr_scale``
    (``lr_scale``: the data-parallel factor of ``optim.lr_scaling``, see
    :func:`graphgps_ext.dist.lr_scale`)."""
    name = cfg.optim.optimizer
    lr, wd = cfg.optim.base_lr * lr_scale, cfg.optim.weight_decay
    if name == 'adam':
        return torch.optim.Adam(params, lr=lr, weight_decay=wd)
    if name == 'adamW':
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    if name == 'sgd':
        return torch.optim.SGD(params, lr=lr, weight_decay=wd,
                               momentum=cfg.optim.momentum)
    raise ValueError(f"unknown optim.optimizer '{name}': use adam, adamW or sgd")


def cosine_with_warmup(num_warmup: int, num_total: int):
    """The lr multiplier of epoch ``t`` for ``cosine_with_warmup``."""

    def factor(t: int) -> float:
        if t < num_warmup:
            return max(1e-6, t / max(1, num_warmup))
        progress = (t - num_warmup) / max(1, num_total - num_warmup)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

    return factor


def build_scheduler(cfg, optimizer):
    """The scheduler of ``optim.scheduler``, or ``None`` for ``none``."""
    name = cfg.optim.scheduler
    if name == 'none':
        return None
    if name == 'cosine_with_warmup':
        return lr_scheduler.LambdaLR(
            optimizer, cosine_with_warmup(cfg.optim.num_warmup_epochs,
                                          cfg.optim.max_epoch))
    if name == 'cos':
        return lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg.optim.max_epoch)
    if name == 'steps':
        return lr_scheduler.MultiStepLR(optimizer, milestones=list(cfg.optim.steps),
                                        gamma=cfg.optim.lr_decay)
    if name == 'reduce_on_plateau':
        # No min_lr here: the loop stops once lr < optim.min_lr (GT).
        return lr_scheduler.ReduceLROnPlateau(
            optimizer, mode='min', factor=cfg.optim.reduce_factor,
            patience=cfg.optim.schedule_patience)
    raise ValueError(f"unknown optim.scheduler '{name}'")


def current_lr(optimizer) -> float:
    return float(optimizer.param_groups[0]['lr'])
