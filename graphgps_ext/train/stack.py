r"""Seeds of one config trained as one stacked model (``main.py --stack K``).

:math:`K` seeds of a config are :math:`K` models of one architecture with
parameters :math:`\theta_1, \dots, \theta_K`, each trained on its own batches
:math:`\mathcal{B}_k` (its own data order). One step of the stack computes

.. math::
    \mathcal{L}(\theta_1, \dots, \theta_K) = \sum_{k=1}^{K}
        \ell(f_{\theta_k}(\mathcal{B}_k)), \qquad
    \frac{\partial \mathcal{L}}{\partial \theta_k} =
        \frac{\partial\, \ell(f_{\theta_k}(\mathcal{B}_k))}{\partial \theta_k},

so every seed gets exactly the gradient of its separate run: no term of the
sum depends on two seeds. The forward pass runs once for the :math:`K`
seeds, with :func:`torch.func.functional_call` of the model under
:func:`torch.func.vmap` over the seeds' parameters and buffers stacked along
a new leading dimension (:class:`StackedModel`): every kernel of the model
runs once for :math:`K` times the work. The :math:`K` batches of a step are
padded to one capacity (:func:`stack_batches`, the static shapes of
:mod:`graphgps_ext.loader.pad`) and stacked. An evaluation split that every
seed shares is not stacked: its batches are read once and broadcast.

What stays per seed (:class:`StackTrainer`): each seed keeps its own
:class:`~graphgps_ext.train.loop.Trainer`, built as for its separate run,
with its model (initialised from its seed), data loaders (its order),
optimiser and its state, learning-rate schedule, gradient clipping (its own
norm), BatchNorm running statistics, model selection, early stopping,
checkpoints and loggers. The stacked step only replaces the forward and
backward passes of a training step and the forward pass of an evaluation;
the parameters are stacked from the seeds' own tensors at every step
(``torch.stack``, whose backward pass hands each seed its gradient) and the
updated running statistics are copied back.

Seeds that are at different epochs (a resumed stack whose seeds were
checkpointed at different epochs) wait for each other: at epoch :math:`t`
the stack holds the seeds whose next epoch is :math:`t`, so the ones behind
catch up alone. A seed that stops early (``train.early_stop_patience``,
``optim.min_lr``) leaves the stack; one whose loss becomes non-finite fails
alone (its last checkpoint stays good), the others go on.

Dropout draws its masks for every seed at once (``randomness='different'``:
independent masks per seed, from the process's random number generator): a
seed's masks are a valid draw of its separate run's, not the same numbers.
With dropout off a seed's losses equal its separate run's up to the order
of float sums (the padding of a static-shape batch changes nothing, see
:mod:`graphgps_ext.loader.pad`).

Limits: the model must run on padded batches (a head that declares its
output rows) without reading tensor values on the host in the forward pass
(:mod:`graphgps_ext.layer.stacked`); the link head (labelled pairs) and the
code2 sequence head cannot be stacked. In a stacked pass the hand-written
attention backward (:mod:`graphgps_ext.layer.fused_attention`) is bypassed:
autograd differentiates the same forward pass, as under
:func:`torch.compile`.
"""
import contextlib
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor, nn
from torch.func import functional_call, vmap

from graphgps_ext.layer.context import HOST_NODE_COUNTS
from graphgps_ext.layer.stacked import stacked
from graphgps_ext.loader.pad import (ALIGN, Capacities, Capacity, pad_batch,
                                     row_mask, trim)
from graphgps_ext.train import speed
from graphgps_ext.train.loop import NonFiniteLossError, PassStats, Trainer
from graphgps_ext.train.optim import current_lr


class StackError(ValueError):
    """Seeds that cannot be trained as one stacked model (the key, parameter
    or attribute named)."""


#: Attributes of a padded batch that hold one seed's Python values: the
#: stacked pass reads the masks instead.
_PER_SEED = ('real_nodes', 'real_edges', 'real_graphs', HOST_NODE_COUNTS)


def stack_unsupported(module: nn.Module) -> Optional[str]:
    """Why ``module`` cannot be trained in a stack, or ``None``: its batches
    are padded to one capacity, so its head must say which output rows
    padding adds (``output_rows`` ``'graph'`` or ``'node'``)."""
    head = getattr(module, 'head', None)
    rows = getattr(head, 'output_rows', None)
    if rows == 'pairs':
        return (f'the head {type(head).__name__} scores labelled node pairs, '
                'whose number differs from batch to batch')
    if rows not in ('graph', 'node'):
        return (f'the head {type(head).__name__} does not declare which output '
                "rows a padded batch adds (output_rows 'graph' or 'node')")
    return None


def _structure(module: nn.Module) -> List[Tuple[str, Tuple[int, ...], torch.dtype]]:
    return ([(f'parameter {n}', tuple(p.shape), p.dtype)
             for n, p in module.named_parameters()]
            + [(f'buffer {n}', tuple(b.shape), b.dtype)
               for n, b in module.named_buffers()])


def check_same_structure(modules: Sequence[nn.Module], names: Sequence[str]):
    """:class:`StackError` naming the first parameter or buffer in which
    ``modules`` (labelled ``names``) differ."""
    ref = _structure(modules[0])
    for module, name in zip(modules[1:], names[1:]):
        other = _structure(module)
        for a, b in zip(ref, other):
            if a != b:
                raise StackError(
                    f'the models of {names[0]} and {name} differ: {a[0]} '
                    f'{list(a[1])} {a[2]} against {b[0]} {list(b[1])} {b[2]}')
        if len(ref) != len(other):
            raise StackError(f'the models of {names[0]} and {name} differ in '
                             f'their number of parameters and buffers '
                             f'({len(ref)} against {len(other)})')


class StackedModel:
    r"""``K`` modules of one architecture run as one.

    ``run(members, batch, train, tensors)`` stacks the parameters and
    buffers of ``modules[k]`` for ``k`` in ``members`` along a new leading dimension
    (``torch.stack``: differentiable, so a loss on the outputs sends each
    module its own gradient) and calls the first module's ``forward`` with
    them through :func:`torch.func.functional_call` under
    :func:`torch.func.vmap` (``randomness='different'``: each seed draws its
    own dropout masks), inside :func:`graphgps_ext.layer.stacked.stacked`.

    Args:
        modules: the seeds' models (same parameter and buffer names, shapes
            and dtypes: :func:`check_same_structure`).
        loss_fn: ``fn(pred, true, mask=None)`` (:mod:`graphgps_ext.train.loss`).
        cfg: the config (``train.amp``, ``train.compile``).
        device_type: where autocast applies.

    The output rows a padded batch adds are the head's ``output_rows``; the
    loss is computed inside the stacked call, on a padded batch with the
    mask of the real rows (:func:`graphgps_ext.loader.pad.row_mask`).
    """

    def __init__(self, modules: Sequence[nn.Module], loss_fn: Callable, cfg,
                 device_type: str = 'cpu'):
        self.modules = list(modules)
        self.template = self.modules[0]
        self.loss_fn = loss_fn
        self.amp = cfg.train.amp != 'none'
        self.device_type = device_type
        self.rows = self.template.head.output_rows
        self.param_names = [n for n, _ in self.template.named_parameters()]
        self.buffer_names = [n for n, _ in self.template.named_buffers()]
        self._params = [[p for _, p in m.named_parameters()] for m in self.modules]
        self._buffers = [[b for _, b in m.named_buffers()] for m in self.modules]
        fn = vmap(self._one, in_dims=(0, 0, 0, None), randomness='different')
        shared = vmap(self._one, in_dims=(0, 0, None, None),
                      randomness='different')
        self._calls = {'stacked': fn, 'shared': shared}
        # reduce-overhead on CUDA: the compiled calls replay as CUDA graphs,
        # whose outputs live in memory the next replay overwrites.
        self.graphs = (bool(cfg.train.compile) and device_type == 'cuda'
                       and cfg.train.compile_mode == 'reduce-overhead')
        if cfg.train.compile:
            # One graph per capacity, stack size and mode: no recompilation
            # after the warm-up (speed.compile_model's static shapes).
            self._calls = {k: speed._compile(v, cfg, dynamic=False)
                           for k, v in self._calls.items()}

    def stack_state(self, members: Sequence[int]
                    ) -> Tuple[Dict[str, Tensor], Dict[str, Tensor]]:
        """The parameters and buffers of ``members``, stacked (``[len(members), ...]``)."""
        params = {n: torch.stack([self._params[k][i] for k in members])
                  for i, n in enumerate(self.param_names)}
        buffers = {n: torch.stack([self._buffers[k][i] for k in members])
                   for i, n in enumerate(self.buffer_names)}
        return params, buffers

    def write_back(self, members: Sequence[int], buffers: Dict[str, Tensor]):
        """Copy the stacked buffers (running statistics updated by a
        training pass) back into the members' modules."""
        with torch.no_grad():
            for i, name in enumerate(self.buffer_names):
                value = buffers[name]
                for j, k in enumerate(members):
                    self._buffers[k][i].copy_(value[j])

    def _one(self, params, buffers, tensors, values):
        """One seed's forward pass and loss (called under vmap) on the batch
        of ``tensors`` (one seed's slice of the stacked batches, or the
        shared batch's) and the Python ``values`` of its attributes."""
        batch = SeedBatch(tensors, values)
        if self.amp:
            with torch.autocast(device_type=self.device_type,
                                dtype=torch.bfloat16):
                pred, true = functional_call(self.template, (params, buffers),
                                             (batch, ))
        else:
            pred, true = functional_call(self.template, (params, buffers),
                                         (batch, ))
        pred = speed.as_float32(pred)
        mask = row_mask(batch, self.rows)
        loss = (self.loss_fn(pred, true) if mask is None
                else self.loss_fn(pred, true, mask=mask))
        return pred, true, loss

    def run(self, members: Sequence[int], batch, train: bool,
            tensors: Optional[Dict[str, Tensor]] = None):
        """``(pred, true, loss)`` with a leading dimension over ``members``:
        of the stacked ``tensors`` (one batch per member,
        :func:`stack_batches`; ``batch`` the first of them, padded: the
        Python values of its attributes but the per-seed ones), or without
        them of ``batch``, which every member reads."""
        if self.template.training != train:
            self.template.train(train)
        params, buffers = self.stack_state(members)
        if tensors is None:
            kind, (tensors, values) = 'shared', split_batch(batch)
        else:
            kind, values = 'stacked', split_batch(batch, per_seed=False)[1]
        if self.graphs:
            torch.compiler.cudagraph_mark_step_begin()
        with stacked():
            out = self._calls[kind](params, buffers, tensors, values)
        if self.graphs:  # kept past the next replay: own memory
            out = tuple(o.clone() if isinstance(o, Tensor) else o for o in out)
        if train and buffers:
            self.write_back(members, buffers)
        return out


class SeedBatch:
    """One seed's batch in a stacked pass: the attributes of a collated
    batch as plain attributes (the layers read a batch's attributes only),
    built inside the stacked call from the seed's tensors and the Python
    values all seeds share: no PyG machinery to trace for
    :func:`torch.compile`."""

    def __init__(self, tensors: Dict[str, Any], values: Dict[str, Any]):
        self.__dict__.update(values)
        self.__dict__.update(tensors)


def split_batch(batch, per_seed: bool = True
                ) -> Tuple[Dict[str, Tensor], Dict[str, Any]]:
    """``(tensors, values)``: the tensor attributes of a collated batch and
    its other attributes (``num_nodes``, ``num_graphs`` and the like);
    without ``per_seed`` the attributes that hold one seed's Python values
    (the real counts of a padded batch, the host copy of its node counts)
    are left out."""
    tensors, values = {}, {'num_nodes': int(batch.num_nodes),
                           'num_graphs': int(batch.num_graphs)}
    for key in batch.keys():
        if not per_seed and key in _PER_SEED:
            continue
        value = batch[key]
        (tensors if isinstance(value, Tensor) else values)[key] = value
    return tensors, values


def _largest(batch) -> int:
    counts = getattr(batch, HOST_NODE_COUNTS, None)
    if counts is None:
        counts = batch.ptr.diff().cpu()
    return int(counts.max()) if counts.numel() else 0


def common_capacity(batches: Sequence, capacities: Optional[Capacities]
                    ) -> Capacity:
    """The capacity that holds each of ``batches``: the smallest bucket of
    ``capacities`` (fixed shapes, compiled), else the batches' largest sizes
    plus one padding node and graph, with a dense layout as wide as their
    largest graph rounded up to a multiple of
    :data:`~graphgps_ext.loader.pad.ALIGN` (eager)."""
    nodes = max(int(b.num_nodes) for b in batches)
    edges = max(int(b.edge_index.size(1)) for b in batches)
    graphs = max(int(b.num_graphs) for b in batches)
    largest = max(_largest(b) for b in batches)
    if capacities is not None:
        return capacities.choose(nodes, edges, graphs, largest)
    return Capacity(nodes + 1, edges, graphs + 1, layout_width(largest))


def layout_width(largest: int) -> int:
    """The dense layout's width for graphs of at most ``largest`` nodes: a
    multiple of :data:`~graphgps_ext.loader.pad.ALIGN`, as the buckets'
    (CPU kernels over rows of 15 run several times slower than of 16)."""
    return -(-max(largest, 1) // ALIGN) * ALIGN


def _same_sizes(batches: Sequence) -> bool:
    """Whether ``batches`` have the same node, edge and graph counts and
    tensor shapes: they stack without padding."""
    first = split_batch(batches[0], per_seed=False)[0]
    for b in batches[1:]:
        other = split_batch(b, per_seed=False)[0]
        if other.keys() != first.keys() or any(
                other[k].shape != v.shape for k, v in first.items()):
            return False
    return True


def stack_batches(batches: Sequence, capacities: Optional[Capacities] = None,
                  levels: Optional[Dict[str, str]] = None
                  ) -> Tuple[Dict[str, Tensor], List]:
    """Pad ``batches`` (one per seed, collated and unpadded) to one capacity
    (:func:`common_capacity`, :func:`~graphgps_ext.loader.pad.pad_batch`)
    and stack their tensors. Returns ``(tensors, padded batches)``.

    Attributes that padding leaves as they are (labelled node pairs of the
    pair encodings, ring pairs) still differ in length between seeds; they
    are extended to the longest, index attributes with pairs of the batch's
    first padding node (whose rows no real node reads), values with zeros.

    Without ``capacities`` (eager), batches of the same sizes (graphs of
    one size, a common case of synthetic data) are stacked as they are,
    with the dense layout's width of :func:`layout_width`.
    """
    if capacities is None and _same_sizes(batches):
        width = layout_width(max(_largest(b) for b in batches))
        for b in batches:
            b.graph_nodes = width
        keys = split_batch(batches[0], per_seed=False)[0]
        return ({k: torch.stack([b[k] for b in batches]) for k in keys},
                list(batches))
    cap = common_capacity(batches, capacities)
    bucket = Capacities([cap], levels)
    padded = [pad_batch(b, bucket) for b in batches]
    keys = list(split_batch(padded[0], per_seed=False)[0])
    for b in padded[1:]:
        other = set(split_batch(b, per_seed=False)[0])
        if other != set(keys):
            raise StackError('the batches of the stacked seeds carry different '
                             f'attributes: {sorted(set(keys) ^ other)}')
    tensors = {}
    for key in keys:
        values = [b[key] for b in padded]
        if len({tuple(v.shape) for v in values}) > 1:
            values = _extend(key, values, padded)
        tensors[key] = torch.stack(values)
    return tensors, padded


def _extend(key: str, values: List[Tensor], batches: List) -> List[Tensor]:
    dims = {batches[0].__cat_dim__(key, values[0]) or 0}
    dim = dims.pop() % values[0].dim()
    rest = {tuple(s for d, s in enumerate(v.shape) if d != dim) for v in values}
    if len(rest) > 1:
        raise StackError(f"the seeds' batches hold '{key}' of shapes "
                         f'{[list(v.shape) for v in values]}, which padding '
                         'cannot make equal')
    length = max(v.size(dim) for v in values)
    out = []
    for v, b in zip(values, batches):
        shape = list(v.shape)
        shape[dim] = length - shape[dim]
        fill = (v.new_full(shape, b.real_nodes) if 'index' in key
                else v.new_zeros(shape))
        out.append(torch.cat([v, fill], dim=dim))
    return out


def _take(value, j: int):
    """Seed ``j``'s part of a stacked output (tensors, in lists, tuples or
    dicts)."""
    if isinstance(value, Tensor):
        return value[j]
    if isinstance(value, (list, tuple)):
        return type(value)(_take(v, j) for v in value)
    if isinstance(value, dict):
        return {k: _take(v, j) for k, v in value.items()}
    return value


@dataclass
class Member:
    """One seed of the stack: its trainer, and the error it failed with."""
    trainer: Trainer
    failed: Optional[BaseException] = None

    @property
    def done(self) -> bool:
        return self.failed is not None or self.trainer.stopped


def _next_batches(iters: Dict[int, Any], device) -> List[Tuple[int, Any]]:
    """``[(k, batch)]``: the next batch of each member's iterator in
    ``iters`` (``{k: iterator}``), on ``device``; an exhausted iterator is
    dropped from ``iters``."""
    out = []
    for k in list(iters):
        batch = next(iters[k], None)
        if batch is None:
            del iters[k]
        else:
            out.append((k, batch.to(device, non_blocking=True)))
    return out


class StackTrainer:
    """Trains the seeds' :class:`~graphgps_ext.train.loop.Trainer` objects
    as one stacked model (see the module docstring).

    Args:
        trainers: one per seed, built as for the seed's separate run
            (started: fresh or resumed from its checkpoint).
        loss_fn: the loss (:data:`graphgps_ext.train.loss.LOSSES`).
        capacities: the capacity buckets of the training split (fixed shapes
            under ``train.compile``), or ``None`` (each step pads to its
            batches' sizes).
        levels: the attribute levels of the training split
            (:func:`graphgps_ext.loader.pad.attribute_levels`).
        shared_eval: the seeds evaluate on the same splits (their data
            do not depend on the seed): each evaluation batch is read once.
        only: ``only(index)`` a context in which the log speaks for one
            seed (its ``logging.log``), ``None``: no routing.
    """

    def __init__(self, trainers: Sequence[Trainer], loss_fn: Callable, capacities: Optional[Capacities] = None,
                 levels: Optional[Dict[str, str]] = None,
                 shared_eval: bool = True,
                 only: Optional[Callable[[Optional[int]], Any]] = None):
        if len(trainers) < 1:
            raise StackError('a stack needs at least one seed')
        self.members = [Member(t) for t in trainers]
        self.cfg = trainers[0].cfg
        self.device = trainers[0].device
        self.capacities = capacities
        self.levels = levels
        self.shared_eval = shared_eval
        self.only = only or (lambda index: contextlib.nullcontext())
        self.model = StackedModel([t.module for t in trainers], loss_fn,
                                  self.cfg, self.device.type)
        self.rows = self.model.rows

    # ------------------------------------------------------------ passes --
    def _step(self, i: int, index: List[int], batches: List, stats: List[PassStats]):
        """One training step of the members ``index`` on their ``batches``."""
        trainers = [self.members[k].trainer for k in index]
        data, padded = stack_batches(batches, self.capacities, self.levels)
        for t in trainers:
            t.optimizer.zero_grad(set_to_none=True)
        pred, true, loss = self.model.run(index, padded[0], True, data)
        loss.sum().backward()
        for t in trainers:
            t.update()  # its own clipping and optimiser step
        loss = loss.detach()
        for j, k in enumerate(index):
            p, y = trim(_take(pred, j), _take(true, j), padded[j], self.rows)
            stats[k].add(i, loss[j], p, y, padded[j],
                         self.members[k].trainer.metric_inputs)

    def train_pass(self, index: List[int], epoch: int) -> Dict[int, PassStats]:
        """One epoch of training of the members ``index``, in lockstep over
        their own loaders; a member whose loader ends leaves the steps."""
        stats = {k: PassStats() for k in index}
        iters = {}
        for k in index:
            t = self.members[k].trainer
            sampler = getattr(t.loaders['train'], 'sampler', None)
            if hasattr(sampler, 'set_epoch'):
                sampler.set_epoch(epoch)
            t.model.train()
            iters[k] = iter(t.loaders['train'])
        i = 0
        with torch.enable_grad():
            while iters:
                ready, batches = [], []
                for k, batch in _next_batches(iters, self.device):
                    t = self.members[k].trainer
                    if t.needs_two_nodes and int(batch.num_nodes) < 2:
                        # BatchNorm cannot train on one node: the seed's own
                        # path checks and skips it, as its separate run does.
                        t.train_batch(i, batch, stats[k], 'train', epoch)
                        continue
                    ready.append(k)
                    batches.append(batch)
                if ready:
                    self._step(i, ready, batches, stats)
                i += 1
        return stats

    def eval_pass(self, index: List[int], split: str, epoch: int
                  ) -> Dict[int, PassStats]:
        """One evaluation of ``split`` for the members ``index``."""
        stats = {k: PassStats() for k in index}
        for k in index:
            self.members[k].trainer.model.eval()
        with torch.inference_mode():
            if self.shared_eval:
                loader = self.members[index[0]].trainer.loaders[split]
                for i, batch in enumerate(loader):
                    batch = batch.to(self.device, non_blocking=True)
                    # the stacked pass's static attention layout, read once
                    # for every seed (padded to a bucket under compile)
                    if self.capacities is None:
                        batch.graph_nodes = layout_width(_largest(batch))
                    else:
                        batch = pad_batch(batch, self.capacities)
                    pred, true, loss = self.model.run(index, batch, train=False)
                    for j, k in enumerate(index):
                        p, y = trim(_take(pred, j), _take(true, j), batch,
                                    self.rows)
                        stats[k].add(i, loss[j], p, y, batch,
                                     self.members[k].trainer.metric_inputs)
                return stats
            iters = {k: iter(self.members[k].trainer.loaders[split])
                     for k in index}
            i = 0
            while iters:
                ready, batches = [], []
                for k, batch in _next_batches(iters, self.device):
                    ready.append(k)
                    batches.append(batch)
                if ready:
                    data, padded = stack_batches(batches, self.capacities,
                                                 self.levels)
                    pred, true, loss = self.model.run(ready, padded[0], False,
                                                      data)
                    for j, k in enumerate(ready):
                        p, y = trim(_take(pred, j), _take(true, j), padded[j],
                                    self.rows)
                        stats[k].add(i, loss[j], p, y, padded[j],
                                     self.members[k].trainer.metric_inputs)
                i += 1
        return stats

    # ------------------------------------------------------------ epochs --
    def _active(self, epoch: int) -> List[int]:
        return [k for k, m in enumerate(self.members)
                if not m.done and m.trainer.start_epoch <= epoch]

    def _finish_pass(self, k: int, split: str, epoch: int, done: PassStats,
                     train: bool):
        """The end of member ``k``'s pass, as its separate run ends it: a
        non-finite loss raises, skipped batches are reported."""
        t = self.members[k].trainer
        if done.finish().bad is not None:
            t._raise_non_finite(split, epoch, done.bad)
        if train and done.skipped:
            t.skipped_batches += done.skipped
            t.log.warning(
                f'epoch {epoch + 1}: skipped {done.skipped} training batch(es) '
                'of a single node (BatchNorm needs more than one value per '
                f'channel in training); {t.skipped_batches} in this run')

    def fit(self, on_fail: Optional[Callable[[int, BaseException], None]] = None
            ) -> List[Optional[Dict[str, Any]]]:
        """Train every member until its ``optim.max_epoch`` or stop rule;
        returns the best records. A member whose loss (or a parameter)
        becomes non-finite leaves the stack: ``on_fail(index, error)`` is
        called under its log, its last checkpoint is the last good one."""
        cfg = self.cfg
        began = time.perf_counter()

        def failed(k: int, err: BaseException):
            self.members[k].failed = err
            if on_fail is not None:
                with self.only(k):
                    on_fail(k, err)

        for k, m in enumerate(self.members):
            m.trainer.began = began
            if m.trainer.stopped:
                with self.only(k):
                    m.trainer.log.info('the checkpoint says this run had '
                                       'stopped; nothing to do')
        start = min(m.trainer.start_epoch for m in self.members)
        for epoch in range(start, cfg.optim.max_epoch):
            index = self._active(epoch)
            if not index:  # the seeds left are ahead of this epoch
                continue
            lrs = {k: current_lr(self.members[k].trainer.optimizer) for k in index}
            records: Dict[int, Dict[str, Dict[str, Any]]] = {k: {} for k in index}
            splits = [('train', True)]
            if self.members[index[0]].trainer.is_eval_epoch(epoch):
                splits += [(s, False) for s in ('val', 'test')
                           if s in self.members[index[0]].trainer.loaders]
            for split, train in splits:
                t0 = time.perf_counter()
                passes = (self.train_pass(index, epoch) if train
                          else self.eval_pass(index, split, epoch))
                for k in list(index):
                    t = self.members[k].trainer
                    try:
                        with self.only(k):
                            self._finish_pass(k, split, epoch, passes[k], train)
                    except NonFiniteLossError as err:
                        failed(k, err)
                        index.remove(k)
                        continue
                    records[k][split] = t._record(epoch, passes[k], lrs[k], t0)
                if not index:
                    break
            for k in index:
                t = self.members[k].trainer
                with self.only(k):
                    try:
                        t.end_epoch(epoch, records[k])
                    except NonFiniteLossError as err:  # from save_last
                        failed(k, err)
        return [m.trainer.best for m in self.members]


# ------------------------------------------------------------ memory --
def _saved_bytes(fn: Callable[[], Tensor]) -> Tuple[Tensor, int]:
    """``fn()`` and the bytes of the tensors its autograd graph saves for
    the backward pass (each storage once): the activations of a step."""
    seen: Dict[Tuple[int, int], int] = {}

    def pack(t: Tensor):
        try:
            storage = t.untyped_storage()
            key = (storage.data_ptr(), storage.nbytes())
            seen[key] = storage.nbytes()
        except (RuntimeError, NotImplementedError):  # no storage (a wrapper)
            pass
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, sum(seen.values())


def available_memory(device: torch.device) -> Optional[int]:
    """Bytes free for the stack on ``device``: a CUDA device's free memory;
    on the CPU the available physical memory (and the room left under a
    cgroup memory limit, as SLURM sets), ``None`` where unknown."""
    if device.type == 'cuda':
        return int(torch.cuda.mem_get_info(device)[0])
    free = None
    try:
        free = os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
    except (ValueError, OSError, AttributeError):
        pass
    try:
        with open('/sys/fs/cgroup/memory.max') as f:
            limit = f.read().strip()
        with open('/sys/fs/cgroup/memory.current') as f:
            used = int(f.read().strip())
        if limit != 'max':
            room = int(limit) - used
            free = room if free is None else min(free, room)
    except (OSError, ValueError):
        pass
    return free


@dataclass
class MemoryEstimate:
    """What one more seed of the stack takes on the device (bytes).

    Attributes:
        activations: what one seed's training step keeps for its backward
            pass, on the largest training batch.
        state: its gradients, optimiser state (two moments for Adam and
            AdamW, one for SGD with momentum) and stacked parameter copy.
        free: free memory before training, ``None`` where unknown.
    """
    activations: int
    state: int
    free: Optional[int]

    @property
    def per_seed(self) -> int:
        return self.activations + self.state

    def largest(self, fraction: float = 0.9) -> Optional[int]:
        """The largest stack that fits ``fraction`` of the free memory."""
        if self.free is None:
            return None
        return int(fraction * self.free // max(1, self.per_seed))


def _gib(n: int) -> str:
    return f'{n / 2**30:.2f} GiB' if n >= 2**27 else f'{n / 2**20:.1f} MiB'


def estimate_memory(module: nn.Module, batch, loss_fn: Callable, cfg,
                    device: torch.device) -> MemoryEstimate:
    """One seed's share of a stack, from one training step of ``module``
    alone on ``batch`` (the largest training batch, padded) run as a stack
    of one: the bytes its autograd graph saves (:func:`_saved_bytes`), plus
    its gradients, optimiser moments and stacked copy of the parameters.
    Parameters, buffers, gradients and the random number generators are as
    before afterwards."""
    params = sum(p.numel() * p.element_size() for p in module.parameters()
                 if p.requires_grad)
    moments = {'adam': 2, 'adamW': 2, 'sgd': 1 if cfg.optim.momentum else 0}
    state = params * (2 + moments.get(cfg.optim.optimizer, 2))
    saved = {k: v.detach().clone() for k, v in module.state_dict().items()}
    model = StackedModel([module], loss_fn, _eager(cfg), device.type)
    data, padded = stack_batches([batch])
    devices = [device.index or 0] if device.type == 'cuda' else []
    try:
        with torch.random.fork_rng(devices=devices):
            if device.type == 'cuda':  # what the allocator saw, if more
                torch.cuda.reset_peak_memory_stats(device)
                base = torch.cuda.memory_allocated(device)
            _, activations = _saved_bytes(
                lambda: model.run([0], padded[0], True, data)[2].sum())
            if device.type == 'cuda':
                activations = max(activations, torch.cuda.max_memory_allocated(
                    device) - base)
    finally:
        module.load_state_dict(saved)
        for p in module.parameters():
            p.grad = None
    return MemoryEstimate(activations, state, available_memory(device))


def _eager(cfg):
    """``cfg`` with ``train.compile`` off (the estimate runs eagerly)."""
    out = cfg.clone()
    out.defrost()
    out.train.compile = False
    return out


def check_memory(estimate: MemoryEstimate, k: int, device: torch.device
                 ) -> Optional[str]:
    """Why a stack of ``k`` seeds would not fit, naming the largest that
    does, or ``None``."""
    fits = estimate.largest()
    if fits is None or fits >= k:
        return None
    return (f'a stack of {k} seeds needs about {_gib(k * estimate.per_seed)} on '
            f'{device} (per seed {_gib(estimate.activations)} of activations '
            f'and {_gib(estimate.state)} of gradients and optimiser state); '
            f'{_gib(estimate.free)} is free: the largest stack that fits is '
            + (f'--stack {fits}' if fits >= 2 else
               'one seed (run the seeds without --stack)'))


__all__ = ['StackError', 'StackedModel', 'StackTrainer', 'stack_batches',
           'common_capacity', 'check_same_structure', 'stack_unsupported',
           'estimate_memory', 'check_memory', 'available_memory',
           'MemoryEstimate']
