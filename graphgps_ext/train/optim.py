r"""Optimisers and learning-rate schedules (stepped once per epoch).

``optim.optimizer``: ``adam``, ``adamW`` (decoupled weight decay) or ``sgd``
(with ``optim.momentum``), all at ``optim.base_lr`` with
``optim.weight_decay`` (times the number of processes with
``optim.lr_scaling linear``). With ``optim.fused`` (config group
``speed``, on by default) Adam and AdamW run their fused multi-tensor kernel
when every parameter is a floating CPU or CUDA tensor (the same update up to
float rounding); :func:`load_optimizer_state` keeps that choice when a run
resumes from a checkpoint written with the other one. With
``optim.flat_params`` (on by default) the optimiser works on flat buffers
of the parameters (:mod:`graphgps_ext.train.flat`); gradient clipping then
takes the gradients of :func:`stepped_params`.

``optim.scheduler``:

- ``none``: constant learning rate;
- ``cosine_with_warmup`` (GraphGPS): with :math:`W` warm-up epochs
  (``optim.num_warmup_epochs``) and :math:`T` = ``optim.max_epoch``, the lr of
  epoch :math:`t` is ``base_lr`` times

  .. math:: \max(10^{-6}, t / W) \ \ (t < W), \qquad
            \tfrac12\bigl(1 + \cos(\pi\,\tfrac{t - W}{T - W})\bigr)\ \ (t \ge W);

- ``transformer_warmup`` (Vaswani et al., *Attention Is All You Need*,
  §5.3; the "standard warmup strategy suggested for Transformers" of MNA-GT
  §5.2): linear warm-up over :math:`W` = ``optim.num_warmup_epochs`` epochs,
  then decay with the inverse square root of the epoch count. Counted in
  epochs (the schedule steps once per epoch, as every schedule here), the lr
  of epoch :math:`t = 0, 1, \dots` is ``base_lr`` times

  .. math:: \min\Bigl(\frac{t + 1}{W},\ \sqrt{\frac{W}{t + 1}}\Bigr),

  i.e. Vaswani's :math:`\min(s / W, \sqrt{W / s})` at step :math:`s = t + 1`
  with ``base_lr`` the peak, reached at epoch :math:`W - 1`. The multiplier
  depends only on the epoch, so a resumed run continues the schedule exactly;
- ``cos``: cosine annealing from ``base_lr`` to 0 over ``optim.max_epoch``
  epochs (GraphGym);
- ``steps``: multiply by ``optim.lr_decay`` at the epochs ``optim.steps``;
- ``reduce_on_plateau`` (GT, GraphGPS): multiply by ``optim.reduce_factor``
  when the validation loss has not improved for ``optim.schedule_patience``
  evaluations; the run stops once the lr is below ``optim.min_lr`` (GT).
"""
import math
from typing import Any, Dict, List, Optional

import torch
from torch.optim import lr_scheduler

from graphgps_ext.train.flat import flat_optimizer


def _tensors(params) -> List[torch.Tensor]:
    """The parameters of ``params`` (tensors or param-group dicts)."""
    out = []
    for p in params:
        out.extend(p['params'] if isinstance(p, dict) else [p])
    return out


def fused_kwargs(cfg, params) -> Dict[str, bool]:
    """Constructor keywords of ``optim.fused`` for ``params``:
    ``{'fused': True}`` for Adam/AdamW when every parameter is a floating
    CPU or CUDA tensor, else ``{}`` (PyTorch's default implementation)."""
    if not cfg.optim.fused or cfg.optim.optimizer not in ('adam', 'adamW'):
        return {}
    ok = all(p.is_floating_point() and p.device.type in ('cpu', 'cuda')
             for p in _tensors(params))
    return {'fused': True} if ok else {}


def compiled_kwargs(cfg, params) -> Dict[str, bool]:
    """Constructor keywords of Adam/AdamW for a compiled update
    (``train.compile_step``): the ``foreach`` implementation, which
    :func:`torch.compile` turns into a few fused kernels, and
    ``capturable=True`` (step counters on the parameters' device: the step
    reads nothing back, so it can be replayed as a CUDA graph; and the
    learning rate can be a tensor, :func:`lr_tensor`)."""
    if cfg.optim.optimizer not in ('adam', 'adamW'):
        return {}
    return {'foreach': True, 'capturable': True}


def lr_tensor(lr: float, params) -> torch.Tensor:
    """The learning rate of a compiled update: a 0-dim tensor on the
    parameters' device, in their dtype. A Python float would be a constant
    of the compiled optimiser step, guarded on its value: every new value
    of the schedule would compile the step again (and past dynamo's
    recompile limit run it eagerly). The schedulers and
    :func:`set_lr` change the tensor in place."""
    first = next(iter(_tensors(params)), None)
    dtype = (first.dtype if first is not None and first.is_floating_point()
             else torch.float32)
    return torch.tensor(float(lr), dtype=dtype,
                        device=first.device if first is not None else None)


def set_lr(group: Dict[str, Any], key: str, value: float):
    """``group[key] = value``, in place when ``group[key]`` is a tensor
    (:func:`lr_tensor`): the compiled update keeps reading the same
    tensor."""
    old = group.get(key)
    if isinstance(old, torch.Tensor):
        old.fill_(float(value))
    else:
        group[key] = value


def plain_lrs(state: Dict[str, Any]) -> Dict[str, Any]:
    """An optimiser's or scheduler's ``state_dict`` with learning rates as
    Python floats (a tensor learning rate, :func:`lr_tensor`, is saved as
    its value): checkpoints are the same whether the update was compiled,
    and load into either kind of run. The step counters stay tensors."""
    for group in state.get('param_groups', ()):
        for key in ('lr', 'initial_lr'):
            if isinstance(group.get(key), torch.Tensor):
                group[key] = float(group[key])
    for key in ('base_lrs', '_last_lr'):
        if isinstance(state.get(key), list):
            state[key] = [float(v) if isinstance(v, torch.Tensor) else v
                          for v in state[key]]
    return state


def build_optimizer(cfg, params, lr_scale: float = 1.0,
                    flat: Optional[bool] = None,
                    compiled: bool = False) -> torch.optim.Optimizer:
    """The optimiser of ``optim.optimizer`` at ``optim.base_lr`` x ``lr_scale``
    (``lr_scale``: the data-parallel factor of ``optim.lr_scaling``, see
    :func:`graphgps_ext.dist.lr_scale`), fused under ``optim.fused``
    (:func:`fused_kwargs`). ``params``: tensors or param-group dicts.

    ``flat`` (default ``optim.flat_params``): when ``params`` are tensors,
    the optimiser works on flat buffers of them
    (:func:`graphgps_ext.train.flat.flat_optimizer`); clip the gradients of
    :func:`stepped_params` then.

    ``compiled``: the update is compiled (``train.compile_step``): Adam and
    AdamW take :func:`compiled_kwargs` instead of ``optim.fused``, and the
    learning rate is a tensor (:func:`lr_tensor`): a schedule changes it
    without a recompilation. ``state_dict()`` still writes it as a float
    (:func:`plain_lrs`)."""
    name = cfg.optim.optimizer
    lr, wd = cfg.optim.base_lr * lr_scale, cfg.optim.weight_decay
    # Groups' parameter iterators are read more than once below.
    params = [dict(p, params=list(p['params'])) if isinstance(p, dict) else p
              for p in params]
    classes = {'adam': torch.optim.Adam, 'adamW': torch.optim.AdamW,
               'sgd': torch.optim.SGD}
    if name not in classes:
        raise ValueError(f"unknown optim.optimizer '{name}': use adam, adamW or sgd")
    kwargs = dict(lr=lr_tensor(lr, params) if compiled else lr,
                  weight_decay=wd)
    if name == 'sgd':
        kwargs['momentum'] = cfg.optim.momentum
    else:
        kwargs.update(compiled_kwargs(cfg, params) if compiled
                      else fused_kwargs(cfg, params))
    flat = cfg.optim.flat_params if flat is None else flat
    if flat and all(isinstance(p, torch.Tensor) for p in params):
        optimizer = flat_optimizer(classes[name], params, **kwargs)
    else:
        optimizer = classes[name](params, **kwargs)
    if compiled:
        optimizer.register_state_dict_post_hook(
            lambda opt, state: plain_lrs(state))
    return optimizer


def stepped_params(optimizer: torch.optim.Optimizer) -> List[torch.Tensor]:
    """The tensors ``optimizer`` updates (the flat buffers under
    ``optim.flat_params``): clipping their gradients clips the model's."""
    return [p for group in optimizer.param_groups for p in group['params']]


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: Dict[str, Any]):
    """``optimizer.load_state_dict(state)`` keeping ``optimizer``'s own
    implementation switches (``fused``/``foreach``: ``optim.fused`` may
    differ between a run and its resume; the update is the same). The step
    counters move where that implementation keeps them (the parameter's
    device when fused or capturable, the CPU otherwise). The learning rate
    keeps ``optimizer``'s kind: a tensor (:func:`lr_tensor`, the same
    tensor, filled with the saved value) or a float."""
    lrs = [group['lr'] for group in optimizer.param_groups]
    optimizer.load_state_dict(state)
    keys = [k for k in ('fused', 'foreach', 'capturable')
            if k in optimizer.defaults]
    for group, lr in zip(optimizer.param_groups, lrs):
        for k in keys:
            group[k] = optimizer.defaults[k]
        if isinstance(lr, torch.Tensor):  # the compiled update's tensor
            lr.fill_(float(group['lr']))
            group['lr'] = lr
        elif isinstance(group['lr'], torch.Tensor):
            group['lr'] = float(group['lr'])
        fused = bool(group.get('fused')) or bool(group.get('capturable'))
        for p in group['params']:
            step = optimizer.state.get(p, {}).get('step')
            if isinstance(step, torch.Tensor):
                optimizer.state[p]['step'] = step.to(
                    p.device if fused else 'cpu',
                    torch.float32 if fused else step.dtype)


def cosine_with_warmup(num_warmup: int, num_total: int):
    """The lr multiplier of epoch ``t`` for ``cosine_with_warmup``."""

    def factor(t: int) -> float:
        if t < num_warmup:
            return max(1e-6, t / max(1, num_warmup))
        progress = (t - num_warmup) / max(1, num_total - num_warmup)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

    return factor


def transformer_warmup(num_warmup: int):
    """The lr multiplier of epoch ``t`` for ``transformer_warmup``."""
    w = max(1, num_warmup)

    def factor(t: int) -> float:
        s = t + 1
        return min(s / w, math.sqrt(w / s))

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
    if name == 'transformer_warmup':
        return lr_scheduler.LambdaLR(
            optimizer, transformer_warmup(cfg.optim.num_warmup_epochs))
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
