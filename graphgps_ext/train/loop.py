"""The training loop: epochs, evaluation, model selection, checkpoints.

One :class:`Trainer` trains one seed. Per epoch ``t`` (numbered from 0, in
the files and the log alike, :mod:`graphgps_ext.logger`):

1. train over ``loaders['train']`` (optimiser step per batch, optional
   gradient-norm clipping), collecting predictions for the train metrics;
2. on evaluation epochs (``(t + 1) % train.eval_period == 0``, the first and
   the last epoch) evaluate ``val`` and ``test`` in eval mode;
3. model selection: a strictly better validation value of ``metric_best``
   (direction ``min``/``max`` from the task; NaN, a metric undefined on the
   split, ranks below every number) makes ``t`` the best epoch and
   writes ``ckpt/best.pt`` and ``best.json`` (without a ``val`` split the
   train split selects); then the epoch's stats, TensorBoard and W&B records and log line are
   written (:meth:`~graphgps_ext.logger.RunLogger.log_epoch`, with the best
   epoch so far and the training time for the ETA);
4. scheduler step (``reduce_on_plateau`` on the validation loss);
5. stop early after ``train.early_stop_patience`` evaluations without improvement
   (``0``: never), or (``reduce_on_plateau``) once the lr is below
   ``optim.min_lr``;
6. write ``ckpt/last.pt`` (the state that continues the run exactly; the
   one it replaces is kept as ``ckpt/last.prev.pt``).

The caller writes the initial state (:meth:`Trainer.save_last` before
:meth:`Trainer.fit`), so that a run is resumable from its start.

A training batch of a single node cannot be normalised by a BatchNorm layer
in training mode (its variance over one value is undefined): in a model
with BatchNorm such a batch is skipped (no optimiser step), counted and
reported once per epoch.

On resume, :meth:`Trainer.retune` makes changed optimiser hyper-parameters
take effect: the parameter groups get the new weight decay and momentum;
a changed schedule (base lr, epochs, warm-up, steps, decay) is rebuilt
with the new values and fast-forwarded to the current epoch, so the lr is
the one a run started with the new values would have there
(``reduce_on_plateau`` keeps its state: its reductions so far apply to the
new ``optim.base_lr``).

No host synchronisation inside a training step (on a GPU the host runs
ahead and queues the next steps): every batch's loss and metric inputs
stay on the device (:class:`PassStats`) and are read once, at the end of
the pass. The epoch's loss is the same sum of the same per-batch values as
a read per step. A non-finite loss raises :class:`NonFiniteLossError` at
the end of its pass, naming its batch, before any checkpoint or best model
of that epoch is written, so no checkpoint ever holds NaN weights;
``last.pt`` stays at the last good epoch. Parameters that become
non-finite raise it too. A single-node batch is known from its shape; its
loss is read (checked) before it is skipped.

Data parallel (``model`` a :class:`~torch.nn.parallel.DistributedDataParallel`
replica, see :mod:`graphgps_ext.dist`): every process runs the same loop on
its shard; the train sampler is set to the epoch, gradients are averaged by
DDP, a non-finite loss on any process stops all of them, and each split's
loss (as sum and count) and metric inputs (gathered from all processes) are
reduced so that the stats are those of the whole split; the processes agree
on a non-finite loss or a skipped batch before the optimiser step (one
collective, and so one loss read, per batch). Rank 0 computes the
metrics and sends the record to the others, so model selection, scheduler and
early stopping decide identically everywhere; only rank 0 writes files.
Evaluation runs the unwrapped module with rank 0's buffers.

Speed switches (config group ``speed``, :mod:`graphgps_ext.config.speed`):
``train.compile`` runs the forward passes through :func:`torch.compile`
(checkpoints still hold the plain module's state, so they load into an
eager model); ``train.compile_step`` compiles the update after the
backward pass too (clipping and the optimiser step,
:class:`~graphgps_ext.train.speed.Update`); ``train.amp bf16`` runs the forward pass under bfloat16
autocast, in training and evaluation, and computes the loss in float32;
``optim.fused`` builds a fused Adam/AdamW and clips with ``foreach``.
With static-shape batches (``train.static_shapes``) the loss is computed
inside the forward pass, on the padded output with the mask of the real
rows (:class:`~graphgps_ext.train.speed.ForwardLoss`): compiled, a
training step is the compiled forward pass and loss, its compiled
backward and the compiled update, with no operator between the forward
and the backward pass; the rows for the metrics are cut after the step.
"""
import math
import sys
import time
import warnings
from contextlib import contextmanager, nullcontext
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

import torch
from torch import Tensor, nn

from graphgps_ext import dist
from graphgps_ext.logger import RunLogger, get_logger
from graphgps_ext.loader.prefetch import (Prefetcher, made_batches,
                                          prefetch_safe)
from graphgps_ext.loader.pad import trim
from graphgps_ext.metrics import compute_metrics, is_better
from graphgps_ext.results.tree import RunDir
from graphgps_ext.train import checkpoint as ckpt
from graphgps_ext.train import speed
from graphgps_ext.train.compile_watch import CompileWatch, variant
from graphgps_ext.train.optim import (build_optimizer, build_scheduler,
                                      current_lr, load_optimizer_state,
                                      plain_lrs, set_lr)
from graphgps_ext.train.rng import rng_state, seed_everything, set_rng_state


class NonFiniteLossError(RuntimeError):
    """A NaN or infinite loss (or parameter) stopped training. ``key`` and
    ``value``: the config key to change on resume and a value to try
    (``key`` ``None``: the cause is not a setting, e.g. the data)."""

    def __init__(self, message: str, key: Optional[str] = 'optim.base_lr',
                 value: Optional[float] = None):
        super().__init__(message)
        self.key, self.value = key, value


def concat(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenate along dim 0, padding trailing dims that differ (``-1`` for
    integer tensors, ``NaN`` for floating ones; e.g. decoded sequences)."""
    if not tensors:
        return torch.empty(0)
    shapes = {tuple(t.shape[1:]) for t in tensors}
    if len(shapes) > 1:
        size = [max(s[i] for s in shapes) for i in range(len(next(iter(shapes))))]
        fill = float('nan') if tensors[0].is_floating_point() else -1
        padded = []
        for t in tensors:
            out = t.new_full([t.size(0)] + size, fill)
            out[tuple([slice(None)] + [slice(0, n) for n in t.shape[1:]])] = t
            padded.append(out)
        tensors = padded
    return torch.cat(tensors, dim=0)


def _copied(*values):
    """``values`` with every tensor copied: outputs of a CUDA graph replay,
    kept past the next replay, which overwrites the replay's memory."""
    return tuple(v.clone() if isinstance(v, Tensor) else v for v in values)


def _count(pred: Tensor, true: Optional[Tensor]) -> int:
    ref = true if isinstance(true, Tensor) and true.dim() > 0 else pred
    return int(ref.size(0)) if ref.dim() > 0 else 1


@contextmanager
def batchnorm_eval(module: nn.Module):
    """BatchNorm layers of ``module`` in eval mode (running statistics)
    for the duration: a forward pass over a single node then does not
    fail, and the statistics are not updated."""
    norms = [m for m in module.modules()
             if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training]
    for m in norms:
        m.train(False)
    try:
        yield
    finally:
        for m in norms:
            m.train(True)


def all_finite(module: nn.Module) -> bool:
    """Whether every parameter and buffer of ``module`` is finite."""
    for t in list(module.parameters()) + list(module.buffers()):
        if t.is_floating_point() and not torch.isfinite(t).all():
            return False
    return True


class PassStats:
    """What one pass over a split collects, on the device: every batch's
    loss and its count (the loss as sum and count), the metric inputs, and
    the skipped batches. Nothing is read back to the host during the pass
    (a GPU runs ahead of Python); :meth:`finish` reads the losses once, at
    the end, and finds the first non-finite one."""

    def __init__(self):
        self.losses: List[Tensor] = []
        self.counts: List[int] = []
        self.preds: List[Tensor] = []
        self.trues: List[Tensor] = []
        self.bad = None  # (batch index, 'NaN' | 'infinite')
        self.skipped = 0
        self.total, self.count = 0.0, 0
        self._index: List[int] = []

    def non_finite(self, i: int, loss: Tensor) -> bool:
        """Read ``loss`` of batch ``i`` now (a host synchronisation; the
        data-parallel path, where the processes must agree before the
        optimiser step) and record it if it is not finite."""
        if bool(torch.isfinite(loss)):
            return False
        if self.bad is None:
            self.bad = (i, 'NaN' if torch.isnan(loss) else 'infinite')
        return True

    def add(self, i: int, loss: Tensor, pred, true, batch, metric_inputs):
        """Keep the loss of batch ``i`` and its metric inputs (on the
        device)."""
        self._index.append(i)
        self.losses.append(loss.detach())
        self.counts.append(_count(pred, true))
        pred, true = pred.detach(), true.detach() if true is not None else None
        if metric_inputs is not None:
            pred, true = metric_inputs(pred, true, batch)
        self.preds.append(pred)
        self.trues.append(true if true is not None
                          else torch.zeros(pred.size(0), dtype=torch.long,
                                           device=pred.device))

    def finish(self) -> 'PassStats':
        """Read the losses back (once) into ``total`` / ``count``, the sum
        of loss x count in the order of the batches, and record the first
        non-finite loss in ``bad`` (only finite losses before it count)."""
        if not self.losses:
            return self
        # float64 holds every float32/bf16 loss exactly: the values are
        # those a per-step float(loss) would have read.
        values = torch.stack([l.reshape(()) for l in self.losses]).double().cpu()
        for i, value, n in zip(self._index, values.tolist(), self.counts):
            if not math.isfinite(value):
                if self.bad is None or i < self.bad[0]:
                    self.bad = (i, 'NaN' if math.isnan(value) else 'infinite')
                break
            self.total += value * n
            self.count += n
        self.losses, self._index = [], []
        return self

    def metric_inputs(self):
        """The predictions and labels of the pass on the CPU (one copy)."""
        return concat(self.preds).cpu(), concat(self.trues).cpu()


class Trainer:
    """Trains ``model`` on ``loaders`` under ``cfg`` and writes results.

    Args:
        cfg: the resolved config (``optim.*``, ``train.*``).
        model: returns ``(pred, true)`` for a batch; a ``head`` attribute
            with ``metric_inputs(pred, true, batch)`` is used for metrics.
            May be a DDP replica (:func:`graphgps_ext.dist.wrap_model`);
            checkpoints hold the unwrapped module's state. Forward passes
            go through :func:`torch.compile` under ``train.compile``.
        loaders: ``{'train': ..., 'val': ..., 'test': ...}`` (``val``/``test``
            optional).
        loss_fn: ``fn(pred, true) -> scalar``.
        metric: the model-selection metric, ``mode``: ``'min'``/``'max'``.
        metrics: every metric to log.
        run_dir: where ``ckpt/`` goes.
        logger: the run's :class:`~graphgps_ext.logger.RunLogger`.
        device: where batches go.
        callbacks: ``fn(trainer, epoch, records)`` called after each epoch's
            checkpoint.
        fast_path: the :class:`~graphgps_ext.train.speed.FastPath` chosen
            for the run (its ``net`` runs the forward passes; on padded
            batches, with ``loss_inside``, the loss too: a
            :class:`~graphgps_ext.train.speed.ForwardLoss`; otherwise padded
            outputs are cut to their real rows before the loss); ``None``:
            forward passes as ``train.compile`` says.
    """

    def __init__(self, cfg, model: nn.Module, loaders: Dict[str, Any],
                 loss_fn: Callable, metric: str, mode: str,
                 metrics: Iterable[str], run_dir: str, logger: RunLogger,
                 device: torch.device,
                 callbacks: Sequence[Callable] = (),
                 fast_path: Optional[speed.FastPath] = None):
        self.cfg = cfg
        self.model = model
        self.module = dist.unwrap(model)
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        self.loaders = loaders
        self.loss_fn = loss_fn
        self.metric = metric
        self.mode = mode
        self.metrics = list(dict.fromkeys(list(metrics) + [metric]))
        self.run_dir = run_dir
        self.logger = logger
        self.device = device
        self.callbacks = list(callbacks)
        self.log = get_logger()
        # Forward passes (compiled under train.compile); checkpoints and
        # parameters use self.model / self.module, never the compiled wrapper.
        if fast_path is not None:
            self.train_net = fast_path.net
        else:
            self.train_net = speed.compile_model(model, cfg)
        # The loss computed inside the forward pass (speed.ForwardLoss).
        self.loss_inside = fast_path is not None and fast_path.loss_inside
        if self.loss_inside and self.module is not model:
            raise ValueError('the loss inside the forward pass (static '
                             'shapes) needs a single process')
        self.eval_net = (self.train_net if self.module is model
                         else speed.compile_model(self.module, cfg))
        # train.compile_step: the update (clipping, optimiser step) compiled
        # too, the optimiser capturable on CUDA (speed.Update).
        compile_step = self.world_size == 1 and (
            fast_path.compile_step if fast_path is not None
            else speed.compile_step_wanted(cfg, static=False))
        # Flat parameters (optim.flat_params) but under the compiled update:
        # there the gradients the compiled backward returns become the
        # parameters' .grad without a kernel (set_to_none), and the foreach
        # update is fused by the compiler; flat views would add one eager
        # accumulation kernel per parameter to every step.
        self.optimizer = build_optimizer(
            cfg, model.parameters(), dist.lr_scale(cfg, self.world_size),
            flat=(cfg.optim.flat_params and self.world_size == 1
                  and not compile_step),
            compiled=compile_step)
        self.update = speed.Update(self.optimizer, cfg, compiled=compile_step,
                                   log=self.log)
        # train.compile: what is compiled when (compile_watch); static: the
        # variants of the forward pass are its capacities.
        self.static = fast_path is not None and fast_path.capacities is not None
        self.watch = (fast_path.watch if fast_path is not None
                      else CompileWatch(self.log) if cfg.train.compile else None)
        # train.prefetch: batches made ahead in a background thread.
        self.prefetch = speed.prefetch_wanted(cfg, device.type)
        # reduce-overhead on CUDA: compiled graphs replay as CUDA graphs,
        # whose outputs live in memory the next replay overwrites.
        self.graphs_replayed = (cfg.train.compile and device.type == 'cuda'
                                and cfg.train.compile_mode == 'reduce-overhead')
        self.scheduler = build_scheduler(cfg, self.optimizer)
        self.generator = getattr(loaders['train'], 'generator', None)
        self.select_split = 'val' if 'val' in loaders else 'train'
        self.params = sum(p.numel() for p in self.module.parameters()
                          if p.requires_grad)
        self.start_epoch = 0
        self.best: Optional[Dict[str, Any]] = None
        self.stopped = False
        # Seconds of training of the earlier segments of a resumed run (up to
        # their last checkpoint) and the start of this one: elapsed().
        self.seconds_before, self.began = 0.0, time.perf_counter()
        self.last_epoch = -1
        head = getattr(self.module, 'head', None)
        self.metric_inputs = getattr(head, 'metric_inputs', None)
        # Which output rows a padded batch adds (train.static_shapes).
        self.output_rows = getattr(head, 'output_rows', None)
        self.progress = sys.stderr.isatty() and dist.is_main_process()
        # BatchNorm in training mode needs batches of two nodes or more.
        self.needs_two_nodes = any(isinstance(m, nn.modules.batchnorm._BatchNorm)
                                   for m in self.module.modules())
        self.skipped_batches = 0
        # The run's identity (graphgps_ext.results.identity), kept in last.pt.
        self.identity: Optional[Dict[str, Any]] = None

    # ------------------------------------------------------------ state --
    @property
    def last_path(self) -> str:
        return RunDir(self.run_dir).last_ckpt

    @property
    def best_path(self) -> str:
        return RunDir(self.run_dir).best_ckpt

    def state_dict(self) -> Dict[str, Any]:
        """The resumable state (a collective call in a process group: the
        RNG states of every process are gathered into ``rng_ranks``)."""
        rng = rng_state(self.generator)
        return {
            'epoch': self.last_epoch,
            'model': self.module.state_dict(),
            'optimizer': self.optimizer.state_dict(),
            'scheduler': (plain_lrs(self.scheduler.state_dict())
                          if self.scheduler is not None else None),
            'rng': rng,
            'rng_ranks': (dist.all_gather_object(rng)
                          if self.world_size > 1 else None),
            'world_size': self.world_size,
            'best': self.best,
            'stopped': self.stopped,
            'wandb_id': self.logger.wandb_id,
            'identity': self.identity,
            'seconds': self.elapsed(),
        }

    def elapsed(self) -> float:
        """Seconds of training over every segment of the run."""
        return self.seconds_before + time.perf_counter() - self.began

    def load_state_dict(self, state: Dict[str, Any]):
        """Continue from a ``last.pt`` (RNG states restored last).

        A checkpoint of another number of processes resumes too: the model,
        optimiser and scheduler states do not depend on it; rank 0 restores
        the saved rank-0 RNG states and the other ranks draw fresh streams.
        """
        try:
            self.module.load_state_dict(state['model'])
        except RuntimeError as err:
            raise RuntimeError(
                f'{self.last_path} does not fit the model built from the '
                'current config (was the config changed?). Restore the old '
                'config, or start afresh with --overwrite.\n'
                f'{err}') from None
        load_optimizer_state(self.optimizer, state['optimizer'])
        if self.scheduler is not None and state['scheduler'] is not None:
            self.scheduler.load_state_dict(state['scheduler'])
        self.best = state['best']
        self.stopped = state['stopped']
        self.seconds_before = float(state.get('seconds') or 0.0)
        self.last_epoch = state['epoch']
        self.start_epoch = state['epoch'] + 1
        saved = state.get('world_size', 1)
        ranks = state.get('rng_ranks')
        if ranks is not None and len(ranks) == self.world_size:
            set_rng_state(ranks[self.rank], self.generator)
        else:
            set_rng_state(state['rng'], self.generator)
            if self.rank > 0:
                seed_everything(dist.rank_seed(
                    self.cfg.seed + state['epoch'] + 1, self.rank))
        if saved != self.world_size:
            self.log.info(f'the checkpoint was written by {saved} process(es), '
                          f'resuming in {self.world_size}'
                          + ('; the learning rate continues from the checkpoint '
                             '(optim.lr_scaling linear is not re-applied)'
                             if self.cfg.optim.lr_scaling == 'linear' else ''))

    def save_last(self):
        if not all_finite(self.model):
            text, key, value = self._non_finite_cause(first_batch=False)
            raise NonFiniteLossError(
                f'parameters became non-finite after epoch {self.last_epoch}. '
                f'{text}; {self.last_path} keeps the last good state.', key, value)
        state = self.state_dict()  # collective: on every process
        if dist.is_main_process():
            ckpt.save(state, self.last_path, keep_previous=True)

    #: Resumable keys that change the learning-rate schedule.
    SCHEDULE_KEYS = ('optim.base_lr', 'optim.max_epoch', 'optim.num_warmup_epochs',
                     'optim.steps', 'optim.lr_decay', 'optim.reduce_factor',
                     'optim.schedule_patience')

    def retune(self, changes: Sequence[tuple]):
        """Make changed optimiser hyper-parameters take effect after
        :meth:`load_state_dict` (``changes``: ``(key, old, new)`` of
        resumable keys, :func:`graphgps_ext.results.identity.resume_changes`);
        ``self.cfg`` holds the new values. Keys the loop reads from the
        config each epoch (clipping, ``optim.min_lr``, early stopping,
        evaluation period) need nothing here."""
        keys = {k for k, _, _ in changes}
        optim = self.cfg.optim
        for group in self.optimizer.param_groups:
            if 'optim.weight_decay' in keys:
                group['weight_decay'] = optim.weight_decay
            if 'optim.momentum' in keys and 'momentum' in group:
                group['momentum'] = optim.momentum
        if keys & set(self.SCHEDULE_KEYS):
            old = {k: a for k, a, _ in changes}
            self._rebuild_schedule(old.get('optim.base_lr', optim.base_lr))

    def _rebuild_schedule(self, old_base_lr: float):
        base = self.cfg.optim.base_lr * dist.lr_scale(self.cfg, self.world_size)
        groups = self.optimizer.param_groups
        if self.cfg.optim.scheduler == 'reduce_on_plateau':
            # Its reductions so far carry over to the new base lr.
            for group in groups:
                set_lr(group, 'lr', float(group['lr']) * self.cfg.optim.base_lr
                       / old_base_lr if old_base_lr else base)
            self.scheduler.factor = self.cfg.optim.reduce_factor
            self.scheduler.patience = self.cfg.optim.schedule_patience
            self.scheduler._last_lr = [float(g['lr']) for g in groups]
            return
        for group in groups:  # a compiled update's lr stays its tensor
            set_lr(group, 'lr', base)
            group['initial_lr'] = base
        self.scheduler = build_scheduler(self.cfg, self.optimizer)
        if self.scheduler is not None:
            with warnings.catch_warnings():  # stepped without optimiser steps
                warnings.simplefilter('ignore', UserWarning)
                for _ in range(self.start_epoch):
                    self.scheduler.step()

    # ------------------------------------------------------------ epochs --
    def is_eval_epoch(self, epoch: int) -> bool:
        return ((epoch + 1) % self.cfg.train.eval_period == 0 or epoch == 0
                or epoch + 1 == self.cfg.optim.max_epoch)

    def run_split(self, split: str, epoch: int, train: bool) -> Dict[str, Any]:
        """One pass over ``split`` (training or evaluation); returns its
        stats record."""
        lr = current_lr(self.optimizer)
        start = time.perf_counter()
        done = (self._train_pass(split, epoch) if train
                else self._eval_pass(split, epoch))
        return self._record(epoch, done, lr, start)

    def _batches(self, split: str, epoch: int):
        """The batches of ``split``, on the device: made ahead in a
        background thread under ``train.prefetch``
        (:class:`~graphgps_ext.loader.prefetch.Prefetcher`), else one by one
        between the steps."""
        loader = self.loaders[split]
        if self.prefetch and prefetch_safe(loader):
            batches = Prefetcher(loader, self.device)
        else:
            batches = made_batches(loader, self.device)
        if not self.progress:
            return batches
        from tqdm import tqdm
        return tqdm(batches, desc=f'{split} epoch {epoch}', leave=False,
                    file=sys.stderr, total=len(loader))

    def _forward(self, net, batch):
        """``(pred, true, loss)`` of ``batch`` (loss in float32 under
        ``train.amp``). With the loss inside the forward pass
        (``loss_inside``), the outputs of ``net`` as they are: ``pred`` and
        ``true`` padded, and (under CUDA graph replays) in the replay's
        memory; :meth:`_kept` cuts and copies them after the backward pass,
        so that nothing runs between the compiled forward and backward
        passes. Otherwise ``pred`` and ``true`` cut to the real rows and the
        loss computed here."""
        graphs = self.graphs_replayed and net is not self.model
        if graphs:  # a new step: earlier replays' outputs may be reused
            torch.compiler.cudagraph_mark_step_begin()
        if self.loss_inside:
            return net(batch)
        with speed.autocast(self.cfg, self.device.type):
            pred, true = net(batch)
        if graphs:  # kept past the next replay (PassStats): own memory
            pred, true = _copied(pred, true)
        pred, true = trim(speed.as_float32(pred), true, batch, self.output_rows)
        return pred, true, self.loss_fn(pred, true)

    def _kept(self, pred, true, loss: Tensor, batch):
        """What a pass keeps of a step whose loss was computed inside the
        forward pass: ``pred`` and ``true`` cut to the real rows (a view by
        counts known on the CPU) and, when the graphs are replayed as CUDA
        graphs, the three copied out of the replay's memory (the next
        replay overwrites it). Unchanged on the other paths
        (:meth:`_forward` did both)."""
        if not self.loss_inside:
            return pred, true, loss
        pred, true = trim(pred, true, batch, self.output_rows)
        if self.graphs_replayed:
            pred, true, loss = _copied(pred, true, loss)
        return pred, true, loss

    def _train_pass(self, split: str, epoch: int) -> PassStats:
        sampler = getattr(self.loaders[split], 'sampler', None)
        if hasattr(sampler, 'set_epoch'):
            sampler.set_epoch(epoch)
        self.model.train()
        done = PassStats()
        with torch.enable_grad():
            for i, batch in enumerate(self._batches(split, epoch)):
                self.train_batch(i, batch, done, split, epoch)
        if done.finish().bad is not None:
            # No checkpoint is written: last.pt keeps the last good state.
            self._raise_non_finite(split, epoch, done.bad)
        if done.skipped:
            self.skipped_batches += done.skipped
            self.log.warning(
                f'epoch {epoch}: skipped {done.skipped} training batch(es) '
                'of a single node (BatchNorm needs more than one value per '
                f'channel in training); {self.skipped_batches} in this run')
        return done

    def train_batch(self, i: int, batch, done: PassStats, split: str = 'train',
                    epoch: int = 0):
        """One training step on ``batch`` (on the device): forward, loss,
        non-finite check, backward, clipping, optimiser step, and the loss
        and metric inputs added to ``done``."""
        # A static-shape batch counts its real nodes only.
        single = self.needs_two_nodes and getattr(
            batch, 'real_nodes', batch.num_nodes) < 2
        with self._watched(batch, 'train-bn-eval' if single else 'train'):
            with batchnorm_eval(self.module) if single else nullcontext():
                pred, true, loss = self._forward(self.train_net, batch)
            if self.world_size > 1 or single:
                # Read now (the rare single-node batch is checked, then
                # skipped; data parallel: the processes agree before the
                # step).
                stop, skip = self._agree(done.non_finite(i, loss), single)
                if stop:  # before the step: last.pt keeps the last good state
                    self._raise_non_finite(split, epoch, done.bad)
                if skip:
                    done.skipped += 1
                    return
            self._step(loss)
        pred, true, loss = self._kept(pred, true, loss, batch)
        done.add(i, loss, pred, true, batch, self.metric_inputs)

    def _watched(self, batch, mode: str):
        """The compile watch (``train.compile``) around one call of the
        compiled code: its variant is the mode and, on static shapes, the
        batch's capacity; a training step's first call of the update is
        its warm-up too."""
        if self.watch is None:
            return nullcontext()
        key = variant(mode, batch, self.static)
        return self.watch.call(key, ('update', ) if mode != 'eval' else None)

    def _agree(self, bad: bool, single: bool):
        """``(stop, skip)``: whether any process had a non-finite loss, or a
        single-node batch, in this step (every process steps or none does)."""
        if self.world_size == 1:
            return bad, single
        flags = dist.all_reduce_sum(torch.tensor([float(bad), float(single)]))
        stop, skip = flags.tolist()
        return stop > 0, skip > 0

    def _step(self, loss: Tensor):
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.update()  # clipping and optimiser step (speed.Update)

    def _eval_pass(self, split: str, epoch: int) -> PassStats:
        # No gradient sync (shards may differ in length): the plain module
        # with rank 0's buffers (BatchNorm statistics). Inference mode: no
        # autograd graph and no version counters on the activations (about
        # 6 % faster than no_grad on CPU for ZINC-size batches).
        dist.sync_buffers(self.module)
        self.model.eval()
        done = PassStats()
        with torch.inference_mode():
            for i, batch in enumerate(self._batches(split, epoch)):
                with self._watched(batch, 'eval'):
                    out = self._forward(self.eval_net, batch)
                pred, true, loss = self._kept(*out, batch)
                done.add(i, loss, pred, true, batch, self.metric_inputs)
        bad = done.finish().bad is not None
        if dist.any_true(bad) if self.world_size > 1 else bad:
            self._raise_non_finite(split, epoch, done.bad)
        return done

    def _record(self, epoch: int, done: PassStats, lr: float,
                start: float) -> Dict[str, Any]:
        """The split's stats over every process (rank 0 computes the
        metrics and sends the record to the others)."""
        total, count = done.total, done.count
        if self.world_size > 1:
            total, count = dist.all_reduce_sum(
                torch.tensor([total, count], dtype=torch.float64)).tolist()
        preds, trues = done.metric_inputs()
        pred_all = dist.all_gather_cat(preds)
        true_all = dist.all_gather_cat(trues)
        record = None
        if dist.is_main_process():
            record = {'epoch': epoch, 'loss': total / max(count, 1)}
            record.update(compute_metrics(self.metrics, pred_all, true_all))
            record['lr'] = lr
            record['time_epoch'] = time.perf_counter() - start
            record['params'] = self.params
        return dist.broadcast_object(record)

    def _raise_non_finite(self, split: str, epoch: int, bad):
        where = (f'{bad[1]} loss in {split} at epoch {epoch}, batch {bad[0]}'
                 if bad is not None else
                 f'non-finite loss in {split} at epoch {epoch} on another process')
        # Before the first optimiser step of the run no setting of the
        # optimiser can be the cause.
        first = (split == 'train' and epoch == 0 and self.start_epoch == 0
                 and bad is not None and bad[0] == 0)
        text, key, value = self._non_finite_cause(first)
        raise NonFiniteLossError(
            f'{where}. {text}; {self.last_path} keeps the last good state.', key, value)

    def _non_finite_cause(self, first_batch: bool):
        """``(advice, key, value)`` for a non-finite loss: its likely cause in
        words, the key to change on resume and a value to try."""
        o = self.cfg.optim
        if first_batch:
            return ('It is the first batch, before any optimiser step: the cause '
                    'is the data (an input or a label that is NaN or infinite) or '
                    "the model's initialisation, not optim.base_lr", None, None)
        lr, wd = float(o.base_lr), float(o.weight_decay)
        if wd > 0 and (wd >= 1 or lr * wd >= 0.1):
            return (f'Likely cause: optim.weight_decay {wd:g} (with optim.base_lr '
                    f'{lr:g}, each step shrinks the weights by base_lr x weight_decay '
                    f'= {lr * wd:.3g} of themselves, or adds weight_decay x weights to '
                    'the gradient): lower optim.weight_decay (usual values: 0 to 0.1)',
                    'optim.weight_decay', 0.01 if wd > 0.1 else wd / 10)
        return ('Lower optim.base_lr or set optim.clip_grad_norm True '
                '(optim.clip_grad_norm_value)', 'optim.base_lr', lr / 10)

    def fit(self) -> Optional[Dict[str, Any]]:
        """Train until ``optim.max_epoch`` or a stop rule; returns the best record."""
        cfg = self.cfg
        if self.stopped:
            self.log.info('the checkpoint says this run had stopped; nothing to do')
            return self.best
        self.began = time.perf_counter()
        for epoch in range(self.start_epoch, cfg.optim.max_epoch):
            records = {'train': self.run_split('train', epoch, train=True)}
            records.update(self.evaluate(epoch))
            self.end_epoch(epoch, records)
            if self.stopped:
                break
        if self.watch is not None:  # what was compiled, once
            self.log.info(self.watch.summary())
            self.watch.close()
        return self.best

    def end_epoch(self, epoch: int, records: Dict[str, Dict[str, Any]]):
        """Steps 3-6 of an epoch whose ``records`` are made: select, log,
        schedule, stop rule, ``last.pt``, callbacks (also called by a stack
        of seeds, :mod:`graphgps_ext.train.stack`, for each of its seeds)."""
        self._select(epoch, records)
        self.logger.log_epoch(epoch, records, self.best, self.elapsed())
        self._step_scheduler(records)
        self.stopped = self._should_stop(epoch)
        self.last_epoch = epoch
        self.save_last()
        for fn in self.callbacks:
            fn(self, epoch, records)

    def evaluate(self, epoch: int) -> Dict[str, Dict[str, Any]]:
        """``{'val': ..., 'test': ...}`` records on evaluation epochs."""
        if not self.is_eval_epoch(epoch):
            return {}
        return {split: self.run_split(split, epoch, train=False)
                for split in ('val', 'test') if split in self.loaders}

    def _select(self, epoch: int, records: Dict[str, Dict[str, Any]]):
        sel = records.get(self.select_split)
        if sel is None:
            return
        value = sel[self.metric]
        # NaN (a metric undefined on this split) is a value, ranked below
        # every number: the first evaluation is the best until a number comes.
        best = None if self.best is None else self.best['value']
        if best is not None and (math.isnan(value) or not (
                math.isnan(best) or is_better(value, best, self.mode))):
            return
        self.best = {'epoch': epoch, 'metric': self.metric, 'mode': self.mode,
                     'split': self.select_split, 'value': value}
        self.best.update({s: r for s, r in records.items()})
        if dist.is_main_process():
            ckpt.save({'model': self.module.state_dict(), 'epoch': epoch,
                       'metric': self.metric, 'value': value}, self.best_path)
        self.logger.log_best(self.best)

    def _step_scheduler(self, records):
        if self.scheduler is None:
            return
        if self.cfg.optim.scheduler == 'reduce_on_plateau':
            rec = records.get('val', records.get('train'))
            if 'val' in records or 'val' not in self.loaders:
                self.scheduler.step(rec['loss'])
        else:
            self.scheduler.step()

    def _should_stop(self, epoch: int) -> bool:
        cfg = self.cfg
        patience = cfg.train.early_stop_patience
        # Patience counts evaluations without improvement: an epoch that was
        # not evaluated (train.eval_period > 1) says nothing.
        if patience > 0 and self.best is not None and sum(
                self.is_eval_epoch(e) for e in range(self.best['epoch'] + 1, epoch + 1)
        ) >= patience:
            self.log.info(f'early stop after epoch {epoch}: no better '
                          f'{self.select_split} {self.metric} in {patience} '
                          'evaluations')
            return True
        if (cfg.optim.scheduler == 'reduce_on_plateau'
                and current_lr(self.optimizer) < cfg.optim.min_lr):
            self.log.info(f'stop after epoch {epoch}: lr '
                          f'{current_lr(self.optimizer):.3g} < optim.min_lr '
                          f'{cfg.optim.min_lr:g}')
            return True
        return False
