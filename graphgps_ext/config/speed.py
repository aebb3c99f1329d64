"""Config group ``speed``: optional speed-ups of training and evaluation.

Adds keys to GraphGym's ``train`` and ``optim`` groups (listed as the group
``speed`` in :data:`graphgps_ext.config.groups.MODULES`). Each switch keeps
the plain path available and gives the plain path's results within tolerance
(``tests/train/test_optim.py``, ``tests/train/test_loop.py``):

- ``optim.fused`` (on by default): Adam/AdamW with ``fused=True`` (one
  multi-tensor kernel instead of a Python loop over the parameters; about
  3x cheaper on CPU for the 190 tensors of a 10-layer model) and gradient
  clipping with ``foreach=True``; ``False`` is PyTorch's default
  per-parameter loop. The optimiser is built by
  :func:`graphgps_ext.train.optim.build_optimizer`;
- ``train.compile``: run the forward passes through :func:`torch.compile`
  (``train.compile_mode``; ``train.compile_dynamic`` marks shapes dynamic,
  which graph batches need: node and edge counts change every batch, so a
  static compile would recompile for each new shape). Checkpoints hold the
  plain module's state;
- ``optim.flat_params`` (on by default): the trainable parameters become
  views of one contiguous buffer and their gradients views of one gradient
  buffer (:mod:`graphgps_ext.train.flat`), so the optimiser step and the
  gradient clipping each work on one tensor (about 4x cheaper on CPU for a
  10-layer model); gradients are zeroed in place instead of set to ``None``.
  Single-process runs only (data-parallel runs keep per-parameter tensors);
- ``train.fast_collate`` (on by default): loaders gather each batch from
  the in-memory dataset's concatenated storage with a few tensor operations
  (:class:`graphgps_ext.loader.collate.FastCollater`) instead of separating
  and re-concatenating every graph (PyG's collater, kept for datasets it
  cannot serve and when ``False``); the batches are identical;
- ``train.data_placement``: where the batches are made. ``device``: the
  datasets' concatenated storage is moved to the run's device once, after
  precompute, and each batch is gathered there by index
  (:class:`graphgps_ext.loader.collate.FastCollater` with a ``device``; only
  the gather indices cross from the CPU, from pinned memory, without
  waiting; collation then runs in the main process, ``num_workers`` 0);
  ``host``: batches collated on the CPU (by the loader workers), on CUDA in
  pinned memory and copied with ``non_blocking``; ``auto`` (default):
  ``device`` on CUDA when the fast collater serves every split and the
  storage takes at most a quarter of the free device memory
  (:func:`graphgps_ext.loader.dataloader.placement`), else ``host``. The
  batches are the same either way; on a CPU ``auto`` is ``host``;
- ``gt.fused_attention`` (in the ``gt`` group beside the attention
  options, on by default): the dense node attention of the Transformer and
  MNA branches has a hand-written backward in training
  (:class:`graphgps_ext.layer.fused_attention._BlockAttention`: the gradients of
  every size block written into one buffer and gathered back once);
  ``False`` differentiates the same forward with autograd;
- ``train.compile_step`` (``auto``: with static-shape batches; ``True``;
  ``False``): under ``train.compile``, the update after the backward pass
  (gradient clipping, the optimiser step) is compiled too, Adam/AdamW
  ``capturable`` on CUDA (step counters on the device), so that the whole
  step replays as CUDA graphs under ``train.compile_mode reduce-overhead``;
  a failed compilation falls back to the eager update with one warning;
- ``train.amp``: autocast precision of the forward pass: ``none`` (float32),
  ``bf16`` (bfloat16 autocast; fast on CUDA GPUs with bf16 units, on most
  CPUs slower than float32). The loss is computed in float32;
- ``train.static_shapes`` (``auto``: on for CUDA, off on CPU; ``True``;
  ``False``): every batch is padded to one of a few capacities (nodes, edges,
  graphs) chosen from the training split's sizes, with masks so that the
  padding changes nothing (:mod:`graphgps_ext.loader.pad`): the kernels of
  a step then have a few fixed shapes, which ``torch.compile`` compiles once
  per capacity (``dynamic=False``) and CUDA graphs can replay. Results equal
  the unpadded batches' (``tests/loader/test_pad.py``); with dropout the
  masks are drawn for the padded tensors (same distribution, other draws);
- ``train.fast_path_check`` (``auto``: on CUDA when static shapes or
  ``train.compile`` are on; ``True``: always; ``False``: never): before
  training, one batch of the training split runs through the fast path
  (static shapes, compile) and through the eager path; a loss that differs
  beyond tolerance, or a fast path that fails (compilation, capture),
  switches the run to the eager path with one warning naming why;
- ``train.prefetch`` (``auto``: on CUDA; ``True``; ``False``): the
  batches of a pass are made ahead in a background thread
  (:class:`graphgps_ext.loader.prefetch.Prefetcher`): batch n+1 is
  collated, padded and copied to the device while step n runs; the same
  batches in the same order;
- ``train.tf32``: TensorFloat-32 matmuls and convolutions on CUDA (about
  10 significant bits in the products; float32 elsewhere). No effect on the
  CPU. It changes the arithmetic, so it is part of the run fingerprint.

:mod:`graphgps_ext.train.speed` applies the switches where a model is run
(the training loop, the benchmark).
"""
from graphgps_ext.config.rules import auto_or_bool, choices, ignored, volatile

# The group's keys and defaults (dotted key -> default).
DEFAULTS = {
    # torch.compile the model (plain eager when False).
    'train.compile': False,
    # torch.compile mode: default | reduce-overhead | max-autotune.
    'train.compile_mode': 'default',
    # Compile with dynamic shapes (graph batches change size every step).
    'train.compile_dynamic': True,
    # Compile the update (clipping, optimiser step) too (auto: with static
    # shapes).
    'train.compile_step': 'auto',
    # Autocast of the forward pass: none | bf16.
    'train.amp': 'none',
    # Fused Adam/AdamW kernels and foreach gradient clipping.
    'optim.fused': True,
    # The optimiser and clipping work on one flat buffer of all parameters.
    'optim.flat_params': True,
    # Batches gathered from the in-memory storage (PyG's collater when False).
    'train.fast_collate': True,
    # Where batches are made: auto | device | host.
    'train.data_placement': 'auto',
    # Pad batches to capacity buckets (auto: on CUDA, off on CPU).
    'train.static_shapes': 'auto',
    # One-batch check of the fast path against eager (auto: on CUDA).
    'train.fast_path_check': 'auto',
    # Batches made ahead in a background thread (auto: on CUDA).
    'train.prefetch': 'auto',
    # TensorFloat-32 matmuls on CUDA.
    'train.tf32': False,
}


def speed_cfg(cfg):
    for key, value in DEFAULTS.items():
        group, name = key.split('.')
        cfg[group][name] = value


def declare():
    """Declare the checks of the ``speed`` keys."""
    choices('train.compile_mode', ['default', 'reduce-overhead', 'max-autotune'])
    choices('train.amp', ['none', 'bf16'])
    choices('train.data_placement', ['auto', 'device', 'host'])
    auto_or_bool('train.static_shapes')
    auto_or_bool('train.fast_path_check')
    auto_or_bool('train.compile_step')
    auto_or_bool('train.prefetch')
    # Same results as the plain path (within float tolerance): outside the run
    # fingerprint. ``train.amp`` changes the arithmetic, so it stays in.
    volatile('train.compile', 'train.compile_mode', 'train.compile_dynamic',
             'train.compile_step',
             'optim.fused', 'optim.flat_params', 'train.fast_collate',
             'train.data_placement', 'train.static_shapes', 'train.fast_path_check',
             'train.prefetch')
    ignored('train.compile_mode', 'train.compile_dynamic', 'train.compile_step',
            unless=lambda cfg: cfg.train.compile, why='train.compile is False',
            in_file='warn')
