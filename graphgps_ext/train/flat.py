r"""Flat parameters (``optim.flat_params``): the trainable parameters of a
model as views of one contiguous buffer per (device, dtype), their
gradients as views of one gradient buffer.

The optimiser then updates one tensor per buffer and gradient clipping
takes one norm. For the 192 parameter tensors (424k values) of a 10-layer
GPS model on one CPU core, a fused AdamW step takes 0.6 ms instead of
2.6 ms and the clipping norm 0.4 ms instead of 1.9 ms: per-tensor overhead,
not arithmetic. The update is the same: Adam, AdamW and SGD act on every
entry independently with the same hyper-parameters, and the clipping norm
is the 2-norm of all gradient entries either way.

With parameters :math:`\theta_1, \dots, \theta_P` of sizes :math:`n_i`,
buffer :math:`\Theta = [\mathrm{vec}\,\theta_1 \Vert \dots \Vert
\mathrm{vec}\,\theta_P]` (and :math:`G` likewise for the gradients);
:math:`\theta_i` is the view :math:`\Theta[o_i : o_i + n_i]` with
:math:`o_i = \sum_{j<i} n_j`, so an in-place update of :math:`\Theta` is an
update of every :math:`\theta_i`, and autograd accumulates each
:math:`\partial L / \partial \theta_i` straight into :math:`G`.

Differences from the per-parameter path:

- gradients are zeroed in place, never set to ``None``: a parameter that
  gets no gradient in a step is updated with a zero gradient (weight decay
  and moment decay still apply) rather than skipped;
- the optimiser's ``state_dict`` is written in the per-parameter layout and
  read back from it (:func:`flat_optimizer`), so checkpoints of either path
  load into the other;
- moving the model to another device after flattening would break the
  views: build the optimiser after ``model.to(device)``.
"""
from typing import Dict, List, Sequence, Tuple, Type

import torch
from torch import Tensor, nn

# (index of the parameter in the flattened list, offset, numel, shape)
Member = Tuple[int, int, int, torch.Size]


def flatten_parameters(params: Sequence[Tensor]) -> List[Tuple[nn.Parameter,
                                                              List[Member]]]:
    """Make ``params`` views of new flat buffers, one per (device, dtype),
    with gradients that are views of one zeroed gradient buffer each.

    Returns ``[(flat parameter, members)]``; the flat parameter's ``grad``
    is the gradient buffer."""
    groups: Dict[Tuple[torch.device, torch.dtype], List[int]] = {}
    for i, p in enumerate(params):
        groups.setdefault((p.device, p.dtype), []).append(i)
    out = []
    for index in groups.values():
        data = torch.cat([params[i].detach().reshape(-1) for i in index])
        grad = torch.zeros_like(data)
        members, offset = [], 0
        for i in index:
            p, n = params[i], params[i].numel()
            p.data = data[offset:offset + n].view_as(p)
            p.grad = grad[offset:offset + n].view_as(p)
            members.append((i, offset, n, p.shape))
            offset += n
        flat = nn.Parameter(data)
        flat.grad = grad
        out.append((flat, members))
    return out


def _split_state(state: dict, members: List[Member], numel: int) -> Dict[int, dict]:
    """Per-parameter states from the state of a flat buffer."""
    out = {}
    for i, offset, n, shape in members:
        out[i] = {k: (v[offset:offset + n].view(shape).clone()
                      if isinstance(v, Tensor) and v.dim() == 1 and v.numel() == numel
                      else v.clone() if isinstance(v, Tensor) else v)
                  for k, v in state.items()}
    return out


def _join_state(states: Dict[int, dict], members: List[Member],
                flat: Tensor) -> dict:
    """The state of a flat buffer from per-parameter states (zeros and the
    latest step where a parameter has none)."""
    present = [states[i] for i, *_ in members if i in states]
    if not present:
        return {}
    out = {}
    for key, value in present[0].items():
        if isinstance(value, Tensor) and value.dim() > 0:
            parts = []
            for i, _, n, _ in members:
                v = states.get(i, {}).get(key)
                parts.append(v.reshape(-1).to(flat.device) if v is not None
                             else flat.new_zeros(n, dtype=value.dtype))
            out[key] = torch.cat(parts)
        elif key == 'step':
            out[key] = max((s[key] for s in present),
                           key=lambda s: float(s))
        else:
            out[key] = value
    return out


class _ZeroInPlace:
    """Optimiser mixin: ``zero_grad`` zeroes the gradient buffers in place
    (setting them to ``None`` would detach the parameters' gradient views)."""

    def zero_grad(self, set_to_none: bool = True):
        for group in self.param_groups:
            for p in group['params']:
                p.grad.zero_()


_CLASSES: Dict[type, type] = {}


def _flat_class(cls: Type[torch.optim.Optimizer]) -> type:
    if cls not in _CLASSES:
        _CLASSES[cls] = type('Flat' + cls.__name__, (_ZeroInPlace, cls), {})
    return _CLASSES[cls]


def flat_optimizer(cls: Type[torch.optim.Optimizer], params: Sequence[Tensor],
                   **kwargs) -> torch.optim.Optimizer:
    """``cls`` over flat buffers of the trainable ``params``
    (:func:`flatten_parameters`; parameters without ``requires_grad`` are
    left out, as a per-parameter optimiser never updates them).

    The optimiser's ``state_dict()`` is in the layout of a per-parameter
    ``cls(params)`` (one param group, parameter ids in the order of the
    trainable ``params``), and ``load_state_dict`` accepts that layout."""
    params = [p for p in params if p.requires_grad]
    flats = flatten_parameters(params)
    optimizer = _flat_class(cls)([f for f, _ in flats], **kwargs)
    count = len(params)

    def to_params(opt, state_dict):
        state = {}
        for k, (flat, members) in enumerate(flats):
            if k in state_dict['state']:
                state.update(_split_state(state_dict['state'][k], members,
                                          flat.numel()))
        group = dict(state_dict['param_groups'][0], params=list(range(count)))
        return {'state': state, 'param_groups': [group]}

    def to_flat(opt, state_dict):
        groups = state_dict['param_groups']
        if len(groups) != 1 or len(groups[0]['params']) != count:
            raise ValueError(
                f'optimizer state for {sum(len(g["params"]) for g in groups)} '
                f'parameters in {len(groups)} groups cannot load into this '
                f'model ({count} trainable parameters, one group)')
        ids = groups[0]['params']
        states = {pos: state_dict['state'][pid] for pos, pid in enumerate(ids)
                  if pid in state_dict['state']}
        state = {}
        for k, (flat, members) in enumerate(flats):
            joined = _join_state(states, members, flat)
            if joined:
                state[k] = joined
        group = dict(groups[0], params=list(range(len(flats))))
        return {'state': state, 'param_groups': [group]}

    optimizer.register_state_dict_post_hook(to_params)
    optimizer.register_load_state_dict_pre_hook(to_flat)
    return optimizer
