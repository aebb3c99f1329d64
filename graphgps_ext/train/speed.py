"""The speed switches of the config group ``speed``
(:mod:`graphgps_ext.config.speed`) applied where a model is run: the
training loop and the benchmark: compile, autocast, clipping, TF32, and the
choice of the fast path (static shapes + compile) with its one-batch check
against the eager path.
"""
import contextlib
import inspect
import math
import os
import warnings
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import torch
from torch import nn

from graphgps_ext.loader.pad import row_mask, trim


def autocast(cfg, device_type: str):
    """The autocast context of ``train.amp`` on ``device_type``
    (``'cpu'`` or ``'cuda'``); a no-op context for ``none``."""
    if cfg.train.amp == 'none':
        return contextlib.nullcontext()
    return torch.autocast(device_type=device_type, dtype=torch.bfloat16)


def clip_grad_norm_(parameters, max_norm: float, cfg):
    """``torch.nn.utils.clip_grad_norm_`` (``foreach`` with ``optim.fused``).
    No host read: the norm :math:`\\|g\\|_2` over every gradient entry and the
    factor :math:`\\min(1, c / (\\|g\\|_2 + 10^{-6}))` stay on the device
    (no ``error_if_nonfinite``)."""
    return torch.nn.utils.clip_grad_norm_(
        parameters, max_norm,
        foreach=True if cfg.optim.fused else None)


def compile_step_wanted(cfg, static: bool) -> bool:
    """``train.compile_step`` resolved: the optimiser update (clipping and
    the optimiser step) compiled beside the forward pass. Only under
    ``train.compile``; ``auto``: with static-shape batches (``static``)."""
    if not cfg.train.compile:
        return False
    value = cfg.train.compile_step
    return bool(static) if value == 'auto' else bool(value)


class Update:
    """The update of a training step after the backward pass: gradient
    clipping (``optim.clip_grad_norm``, read from the config at every call)
    and the optimiser step, eager or through :func:`torch.compile`.

    Compiled (``compiled``): one compilation of the update (its shapes are
    the parameters', whatever the batch: the same graphs for every
    capacity), replayed as CUDA graphs under ``train.compile_mode
    reduce-overhead``. The optimiser then keeps its step counters on the
    device (``capturable`` Adam/AdamW on CUDA, see
    :func:`graphgps_ext.train.optim.build_optimizer`) and the clipping reads
    nothing back. A learning rate changed by the schedule does not
    recompile. If compiling or running the compiled update fails, the
    update runs eagerly from then on, with one warning naming why
    (``reason``), on the same gradients. (The optimiser step is split into
    a few graphs around its grad mode, each compiled at its first call: a
    failure in a later one finds the gradients already clipped, and
    clipping again changes them by at most a factor :math:`c / (c +
    10^{-6})`.)

    This is the check of the update: :func:`choose_fast_path` checks the
    forward and backward pass on one batch before training, the update is
    checked at its first call (a throw-away copy of the optimiser would
    compile the update's code a second time, a recompilation)."""

    def __init__(self, optimizer, cfg, compiled: bool = False, log=None):
        from graphgps_ext.train.optim import stepped_params
        self.optimizer = optimizer
        self.cfg = cfg
        self.params = stepped_params(optimizer)
        self.log = log
        self.reason: Optional[str] = None
        self.compiled = None
        if compiled:
            self.compiled = _compile(self._update, cfg, dynamic=False)

    def _update(self, max_norm: Optional[float]):
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_(
                self.params, max_norm,
                foreach=True if self.cfg.optim.fused else None)
        self.optimizer.step()

    def __call__(self):
        optim = self.cfg.optim
        max_norm = (float(optim.clip_grad_norm_value)
                    if optim.clip_grad_norm else None)
        if self.compiled is None:
            return self._update(max_norm)
        try:
            return self.compiled(max_norm)
        except Exception as e:  # compilation or CUDA graph capture
            self.compiled = None
            eager_update_settings(self.optimizer)
            self.reason = (f'the compiled optimiser update failed '
                           f'({type(e).__name__}: {e})')
            message = f'compiled update off, updating eagerly: {self.reason}'
            if self.log is not None:
                self.log.warning(message)
            else:
                warnings.warn(message, RuntimeWarning, stacklevel=2)
            return self._update(max_norm)


def eager_update_settings(optimizer):
    """Make an optimiser built for the compiled update step eagerly: the
    learning rate a float again and, on devices where PyTorch's eager
    optimisers cannot be ``capturable`` (the CPU), ``capturable`` off
    (the step counters are read from wherever they are)."""
    for group in optimizer.param_groups:
        if isinstance(group.get('lr'), torch.Tensor):
            group['lr'] = float(group['lr'])
        if group.get('capturable') and any(
                p.device.type not in ('cuda', 'xpu', 'hpu')
                for p in group['params']):
            group['capturable'] = False


# ------------------------------------------------------------ fast path --
def _auto(value, device_type: str) -> bool:
    return device_type == 'cuda' if value == 'auto' else bool(value)


def prefetch_wanted(cfg, device_type: str) -> bool:
    """``train.prefetch`` resolved: ``auto`` is on for CUDA only."""
    return _auto(cfg.train.prefetch, device_type)


def static_shapes_wanted(cfg, device_type: str) -> bool:
    """``train.static_shapes`` resolved: ``auto`` is on for CUDA only."""
    return _auto(cfg.train.static_shapes, device_type)


def static_shapes_unsupported(module, world_size: int = 1) -> Optional[str]:
    """Why ``module`` cannot train on padded batches, or ``None``."""
    if world_size > 1:
        return 'data-parallel runs keep unpadded batches'
    head = getattr(module, 'head', None)
    rows = getattr(head, 'output_rows', None)
    if rows not in ('graph', 'node', 'pairs'):
        return (f"the head {type(head).__name__} does not declare which output "
                "rows a padded batch adds (output_rows 'graph', 'node' or 'pairs')")
    return None


def apply_tf32(cfg, device_type: str):
    """``train.tf32``: TensorFloat-32 matmuls and cuDNN convolutions on CUDA
    (a no-op on other devices)."""
    if device_type == 'cuda':
        torch.backends.cuda.matmul.allow_tf32 = bool(cfg.train.tf32)
        torch.backends.cudnn.allow_tf32 = bool(cfg.train.tf32)


def compile_model(model, cfg, static: bool = False,
                  recompile_limit: Optional[int] = None):
    """``torch.compile(model)`` when ``train.compile``, else ``model``.

    With static shapes (``static``) and a model whose shapes the capacity
    fixes (:func:`capacity_static`), the shapes are marked static
    (``dynamic=False``): one compilation per capacity bucket (and per
    training / evaluation mode), never a recompilation after warm-up; a
    model with the link head keeps ``train.compile_dynamic``. On
    CUDA, ``train.compile_mode reduce-overhead`` replays each compiled
    graph as a CUDA graph (inductor keeps dropout's random numbers
    graph-safe: a Philox seed and offset per replay). ``recompile_limit``:
    dynamo's limit of variants per compiled function
    (:func:`~graphgps_ext.train.compile_watch.recompile_limit`; ``None``:
    dynamo's default)."""
    if not cfg.train.compile:
        return model
    if static and capacity_static(model):
        dynamic = False
    else:
        dynamic = cfg.train.compile_dynamic
    return _compile(model, cfg, dynamic=dynamic,
                    recompile_limit=recompile_limit)


#: The :func:`torch.compile` backend of ``train.compile``: inductor, unless
#: the environment variable ``GRAPHGPS_EXT_COMPILE_BACKEND`` names another
#: (``aot_eager``: dynamo and AOT autograd without code generation, what
#: the CPU tests and the CPU rehearsal of ``run/gpu_check.sh`` use).
BACKEND = os.environ.get('GRAPHGPS_EXT_COMPILE_BACKEND') or 'inductor'


def _compile(fn, cfg, dynamic, recompile_limit: Optional[int] = None):
    """:func:`torch.compile` of ``fn`` with its own variants
    (``isolate_recompiles``: the compiled code of another model or
    optimiser in this process, of the same Python functions, neither
    serves it nor counts against its ``recompile_limit``). A torch whose
    :func:`torch.compile` takes neither keyword gets the limit as dynamo's
    global one (raised, never lowered)."""
    mode = cfg.train.compile_mode
    kwargs = {'dynamic': dynamic}
    takes = inspect.signature(torch.compile).parameters
    if 'isolate_recompiles' in takes:
        kwargs['isolate_recompiles'] = True
    if recompile_limit is not None:
        if 'recompile_limit' in takes:
            kwargs['recompile_limit'] = recompile_limit
        else:
            config = torch._dynamo.config
            name = ('recompile_limit' if hasattr(config, 'recompile_limit')
                    else 'cache_size_limit')
            setattr(config, name, max(getattr(config, name), recompile_limit))
    if BACKEND != 'inductor':  # other backends take no inductor mode
        return torch.compile(fn, backend=BACKEND, **kwargs)
    return torch.compile(fn, mode=mode, **kwargs)


def capacity_static(model) -> bool:
    """Whether every kernel shape of ``model`` on a static-shape batch is
    fixed by the batch's capacity: no module declares ``static_shape =
    False`` (the link head, whose shapes follow the labelled pairs). The
    dense attention layout (Transformer, CSA, MNA, full-graph GT, the pair
    encoder) is ``[graphs, graph_nodes]`` of the capacity
    (:class:`~graphgps_ext.loader.pad.Capacity`)."""
    return all(getattr(m, 'static_shape', True) for m in model.modules())


def as_float32(pred):
    """``pred`` in float32 when autocast made it a half-precision float."""
    if isinstance(pred, torch.Tensor) and pred.dtype in (torch.bfloat16,
                                                         torch.float16):
        return pred.float()
    return pred


class ForwardLoss(nn.Module):
    r"""The forward pass of ``model`` and its loss as one module, for
    static-shape batches: ``batch -> (pred, true, loss)``.

    The loss is computed on the whole padded output with the mask of the
    head's real rows (:func:`graphgps_ext.loader.pad.row_mask`, the
    ``mask`` argument of :mod:`graphgps_ext.train.loss`): no slice by the
    batch's real count, whose Python value a compiled graph would
    specialise on. Compiled (:func:`compile_model`), the loss is part of
    the forward graph, so that AOT autograd's backward graph covers it too:
    a training step is the compiled forward and loss, its compiled
    backward and the compiled update (:class:`Update`), with no eager
    operator between the forward and the backward pass. ``pred`` and
    ``true`` are returned padded; the training loop cuts them to the real
    rows for the metrics (a view, after the backward pass). Under
    ``train.amp bf16`` the forward pass runs under autocast and the loss
    in float32, as on the eager path.

    Args:
        model: returns ``(pred, true)`` for a batch (its ``head`` declares
            ``output_rows``).
        loss_fn: a loss that takes the row mask (``fn(pred, true, mask)``).
        amp: ``train.amp`` is ``bf16``.
        device_type: where autocast applies (``'cpu'``, ``'cuda'``).
    """

    def __init__(self, model: nn.Module, loss_fn, amp: bool = False,
                 device_type: str = 'cpu'):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.rows = getattr(getattr(model, 'head', None), 'output_rows', None)
        self.amp = bool(amp)
        self.device_type = device_type

    def forward(self, batch):
        if self.amp:
            with torch.autocast(device_type=self.device_type,
                                dtype=torch.bfloat16):
                pred, true = self.model(batch)
        else:
            pred, true = self.model(batch)
        pred = as_float32(pred)
        return pred, true, self.loss_fn(pred, true,
                                        mask=row_mask(batch, self.rows))


def static_net(model, loss_fn, cfg, device_type: str,
               recompile_limit: Optional[int] = None):
    """``(net, loss_inside)``: the module a static-shape run's forward
    passes go through. With a loss that takes the row mask
    (:func:`~graphgps_ext.train.loss.takes_mask`) it is
    :class:`ForwardLoss` (``loss_inside``), else ``model``; compiled under
    ``train.compile`` (:func:`compile_model`)."""
    from graphgps_ext.train.loss import takes_mask
    inside = takes_mask(loss_fn)
    net = (ForwardLoss(model, loss_fn, cfg.train.amp != 'none', device_type)
           if inside else model)
    return compile_model(net, cfg, static=True,
                         recompile_limit=recompile_limit), inside


@dataclass
class FastPath:
    """What :func:`choose_fast_path` decided.

    Attributes:
        capacities: the capacity buckets of padded batches, ``None`` for
            unpadded batches.
        net: the module to run forward passes with (compiled or plain).
        reason: why the fast path was turned off (``None``: it was not).
        compile_step: whether the update (clipping, optimiser step) is
            compiled too (``train.compile_step``, :class:`Update`).
        loss_inside: ``net`` is a :class:`ForwardLoss`: it returns
            ``(pred, true, loss)`` with the loss on the padded output.
        watch: the run's
            :class:`~graphgps_ext.train.compile_watch.CompileWatch` under
            ``train.compile`` (the check's compilations are its first
            variants).
    """
    capacities: Optional[Any]
    net: Any
    reason: Optional[str] = None
    compile_step: bool = False
    loss_inside: bool = False
    watch: Optional[Any] = None


#: Relative tolerance of the self-check's loss (float32; bf16 autocast).
CHECK_RTOL = {'none': 1e-3, 'bf16': 3e-2}


def _loss(net, batch, loss_fn, rows, cfg, device_type, loss_inside=False):
    if loss_inside:  # a ForwardLoss: the masked loss on the padded output
        return net(batch)[2]
    with autocast(cfg, device_type):
        pred, true = net(batch)
    pred, true = trim(as_float32(pred), true, batch, rows)
    return loss_fn(pred, true)


def _graphs_replayed(cfg, device_type: str) -> bool:
    """Whether compiled graphs replay as CUDA graphs (``train.compile_mode
    reduce-overhead`` on CUDA)."""
    return (bool(cfg.train.compile) and device_type == 'cuda'
            and cfg.train.compile_mode == 'reduce-overhead')


#: Calls of each compiled function in the check when its graphs replay as
#: CUDA graphs: CUDA graph trees run a function's first call as a warm-up,
#: record it on a later one and replay it from then on.
REPLAY_CALLS = 3


def self_check(module, net, plain, padded, loss_fn, cfg,
               device_type: str, loss_inside: bool = False,
               watch=None, static: bool = True,
               train_batch=None) -> Optional[str]:
    """Compare the fast path with the eager path on one batch: ``None`` when
    they agree, else why not.

    In evaluation mode the loss of ``net`` on the padded batch must equal
    the eager ``module``'s on the unpadded one (relative tolerance
    :data:`CHECK_RTOL`); then training-mode forward and backward passes of
    ``net`` on ``train_batch`` (default ``padded``; the compilation of the
    training step) must give a finite loss. When compiled graphs replay as
    CUDA graphs, each mode runs
    :data:`REPLAY_CALLS` times (warm-up, recording, replay; the replayed
    loss is the one compared), so that a failed capture is caught here.
    ``loss_inside``: ``net`` is a :class:`ForwardLoss` (its loss, computed
    inside the compiled forward pass on the padded output, is the one
    compared). ``watch`` (a
    :class:`~graphgps_ext.train.compile_watch.CompileWatch`) is told the
    variants (``static``: keyed by capacity). Parameters, buffers,
    gradients, the mode and the random number generators are restored
    afterwards."""
    from graphgps_ext.train.compile_watch import variant
    rows = getattr(getattr(module, 'head', None), 'output_rows', None)
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    was_training = module.training
    devices = [torch.cuda.current_device()] if device_type == 'cuda' else []
    replayed = _graphs_replayed(cfg, device_type)
    calls = REPLAY_CALLS if replayed else 1

    def run(mode: str):
        batch = padded if mode == 'eval' or train_batch is None else train_batch
        if replayed:
            torch.compiler.cudagraph_mark_step_begin()
        watched = (watch.call(variant(mode, batch, static))
                   if watch is not None else contextlib.nullcontext())
        with watched:
            loss = _loss(net, batch, loss_fn, rows, cfg, device_type,
                         loss_inside)
            if mode == 'train':
                for p in module.parameters():
                    p.grad = None
                loss.backward()
        return float(loss.detach())

    try:
        with torch.random.fork_rng(devices=devices):
            module.eval()
            with torch.inference_mode():
                ref = float(_loss(module, plain, loss_fn, rows, cfg, device_type))
                for _ in range(calls):
                    got = run('eval')
            module.train()
            for _ in range(calls):
                trained = run('train')
    except Exception as e:  # compilation, capture or kernel failure
        return f'the fast path failed on one batch ({type(e).__name__}: {e})'
    finally:
        module.load_state_dict(state)
        for p in module.parameters():
            p.grad = None
        module.train(was_training)
    tol = CHECK_RTOL.get(cfg.train.amp, 1e-3)
    if not (math.isfinite(ref) and math.isfinite(got) and math.isfinite(trained)):
        return (f'non-finite loss on one batch (eager {ref:.6g}, fast path '
                f'{got:.6g}, fast path in training {trained:.6g})')
    if abs(got - ref) > tol * max(1.0, abs(ref)):
        return (f'its loss {got:.8g} on one batch differs from the eager '
                f'loss {ref:.8g} by more than {tol:g} (relative)')
    return None


def check_batches(dataset, cfg, capacities):
    """``(plain, padded)``: the first ``train.batch_size`` graphs of
    ``dataset`` as the run's loader batches them
    (:func:`~graphgps_ext.loader.dataloader.graph_loader`, its collate
    function and padding), unpadded and padded to ``capacities``
    (``None``: unpadded too). On the CPU; the loader's own batch carries
    every attribute the compiled code is guarded on, so the check's
    variants are ones training reuses."""
    from graphgps_ext.loader.dataloader import graph_loader
    n = min(int(cfg.train.batch_size), len(dataset))
    fast = bool(cfg.train.fast_collate)
    plain = next(iter(graph_loader(dataset, fast, batch_size=n)))
    padded = next(iter(graph_loader(dataset, fast, capacities=capacities,
                                    batch_size=n)))
    return plain, padded


def choose_fast_path(cfg, model, train_dataset, device, loss_fn,
                     world_size: int = 1, log=None,
                     eval_datasets: Sequence = (),
                     capacities=None) -> FastPath:
    """Decide how batches are shaped and forward passes run.

    Static shapes as ``train.static_shapes`` resolves on ``device`` (and
    the model supports, else unpadded with a note; ``True`` on a model that
    cannot raises :class:`~graphgps_ext.config.ConfigError`); compile as
    ``train.compile``, with dynamo's recompile limit set from the number
    of capacities of the training split and of ``eval_datasets``
    (:func:`~graphgps_ext.train.compile_watch.recompile_limit`), and a
    :class:`~graphgps_ext.train.compile_watch.CompileWatch`. With
    ``train.fast_path_check`` (``auto``: on CUDA) and a fast path in use,
    :func:`self_check` runs the first batch of the first evaluation split
    (the training split without one) in evaluation mode and the first
    training batch in training mode, made by the loader's own collate
    function and padding (:func:`check_batches`); if it fails the run goes
    eager (unpadded, not compiled) with one warning naming why.
    ``capacities``: the capacity buckets of static shapes (default: from
    ``train_dataset``, :meth:`~graphgps_ext.loader.pad.Capacities.from_dataset`)."""
    from graphgps_ext import dist
    from graphgps_ext.config import ConfigError, sizes
    from graphgps_ext.loader.pad import Capacities, used_capacities
    from graphgps_ext.train.compile_watch import CompileWatch, recompile_limit
    device_type = torch.device(device).type
    apply_tf32(cfg, device_type)
    module = dist.unwrap(model)
    static = static_shapes_wanted(cfg, device_type)
    if static:
        why = static_shapes_unsupported(module, world_size)
        if why is not None:
            if cfg.train.static_shapes is True:
                raise ConfigError(f'train.static_shapes True: {why}; set '
                                  "train.static_shapes 'auto' or False")
            static = False
    given, capacities, limit = capacities, None, None
    batch_size = int(cfg.train.batch_size)
    if static:
        capacities = (given if given is not None else
                      Capacities.from_dataset(train_dataset, batch_size))
        top = capacities.buckets[-1]
        sizes.check([sizes.static_batch_need(top.nodes, top.graphs,
                                             top.graph_nodes, cfg)], str(device))
        evals = set()
        for data in eval_datasets:
            evals |= used_capacities(capacities, data, batch_size)
        limit = recompile_limit(len(capacities.buckets), len(evals))
        if log is not None:
            log.info('static shapes: batches padded to nodes/edges/graphs '
                     + ', '.join(f'{c.nodes}/{c.edges}/{c.graphs}'
                                 for c in capacities.buckets)
                     + '; dense attention layout [graphs, '
                     f'{capacities.buckets[-1].graph_nodes}]'
                     + (f'; {len(evals)} evaluation capacities'
                        if eval_datasets else ''))
    if static:  # the loss inside the (compiled) forward pass
        net, inside = static_net(model, loss_fn, cfg, device_type, limit)
    else:
        net, inside = compile_model(model, cfg), False
    step = compile_step_wanted(cfg, static) and world_size == 1
    watch = CompileWatch(log) if cfg.train.compile else None
    fast = static or bool(cfg.train.compile)
    if not (fast and _auto(cfg.train.fast_path_check, device_type)):
        return FastPath(capacities, net, compile_step=step, loss_inside=inside,
                        watch=watch)
    # Evaluation mode on the first batch of the first evaluation split,
    # training mode on the first training batch: both variants are ones
    # the run uses.
    plain, padded = check_batches(
        next((d for d in eval_datasets if len(d)), train_dataset), cfg,
        capacities)
    _, train_batch = check_batches(train_dataset, cfg, capacities)
    reason = self_check(module, net, plain.to(device), padded.to(device),
                        loss_fn, cfg, device_type, inside, watch=watch,
                        static=capacities is not None,
                        train_batch=train_batch.to(device))
    if reason is None:
        if log is not None:
            log.info('fast path checked on one batch: '
                     + ', '.join(p for p, on in (('static shapes', static),
                                                 ('compile', cfg.train.compile),
                                                 ('loss in the forward pass',
                                                  inside),
                                                 ('compiled update', step),
                                                 ('CUDA graphs replayed',
                                                  _graphs_replayed(
                                                      cfg, device_type)))
                                 if on))
        return FastPath(capacities, net, compile_step=step, loss_inside=inside,
                        watch=watch)
    if watch is not None:
        watch.close()
    message = f'fast path off, training eagerly: {reason}'
    if log is not None:
        log.warning(message)
    else:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    return FastPath(None, model, reason)
