"""Config group ``train_ext``: training loop, optimiser, logging and run keys.

Extends GraphGym's ``train`` and ``optim`` groups (GraphGPS names where they
exist) and adds ``wandb``, ``tensorboard``, ``dist`` (multi-process data
parallel training, see :mod:`graphgps_ext.dist`) and the top-level
``run_name``.
GraphGym keys reused as they are: ``optim.optimizer``, ``optim.base_lr``,
``optim.weight_decay``, ``optim.momentum``, ``optim.max_epoch``,
``optim.steps``, ``optim.lr_decay``, ``train.batch_size``,
``train.eval_period``, ``train.auto_resume``, ``seed``, ``out_dir``,
``accelerator``, ``metric_best``, ``metric_agg``, ``model.loss_fun``.
"""
import importlib.util

from graphgps_ext.config.rules import (advice, at_most, bounded, choices, ignored,
                                       non_negative, positive, resumable, rule, unused,
                                       volatile)
from graphgps_ext.metrics import METRICS


def train_cfg(cfg):
    from yacs.config import CfgNode as CN

    # ---- run --------------------------------------------------------------
    # Results go to <out_dir>/<run_name>/<seed>/. Empty: derived from the
    # config path (configs/geaet/zinc.yaml -> geaet-zinc; elsewhere the stem).
    cfg.run_name = ''

    # ---- network and loss ---------------------------------------------------
    # Network class in GraphGym's network_dict (user-registered ones work too).
    cfg.model.type = 'GPSModel'
    # 'auto' = the dataset's default loss (TaskInfo.loss).
    cfg.model.loss_fun = 'auto'

    # ---- train ------------------------------------------------------------
    # Stop when the best validation metric has not improved for this many
    # evaluations (every train.eval_period epochs; 0: off).
    cfg.train.early_stop_patience = 0
    # train.batch_size is per process. With batch_size_global > 0 the batch
    # per process is batch_size_global / world_size instead (it must
    # divide), so that a config keeps its effective batch on any number of
    # processes. 0: off (effective batch = train.batch_size x world_size).
    cfg.train.batch_size_global = 0

    # ---- optim (GraphGPS names) -------------------------------------------
    # Linear warm-up epochs of 'cosine_with_warmup' and 'transformer_warmup'.
    cfg.optim.num_warmup_epochs = 50
    # ReduceLROnPlateau (on the validation loss): factor and patience (in
    # evaluations); the run stops once the lr falls below min_lr (GT).
    cfg.optim.reduce_factor = 0.1
    cfg.optim.schedule_patience = 10
    cfg.optim.min_lr = 0.0
    # Clip the global gradient norm to clip_grad_norm_value.
    cfg.optim.clip_grad_norm = False
    cfg.optim.clip_grad_norm_value = 1.0
    # Learning rate under data parallelism: 'none' keeps optim.base_lr on any
    # number of processes; 'linear' uses base_lr x world_size (Goyal et al.'s
    # rule for an effective batch that grows with the number of processes;
    # not allowed together with train.batch_size_global).
    cfg.optim.lr_scaling = 'none'

    # ---- dist: data parallel training (torchrun / SLURM) -------------------
    cfg.dist = CN()
    # How the processes were launched: 'auto' (torchrun's RANK/WORLD_SIZE,
    # else an srun step with several tasks, else one process), 'torchrun',
    # 'slurm' or 'none' (always one process).
    cfg.dist.launcher = 'auto'
    # Process-group backend: 'auto' (nccl on CUDA, gloo on CPU), 'nccl', 'gloo'.
    cfg.dist.backend = 'auto'
    # DistributedDataParallel's find_unused_parameters: needed when some
    # parameters get no gradient (e.g. the last layer's edge-stream
    # parameters of GatedGCN/GEANet/CSA stacks). False is a little faster
    # when every parameter is used (PyTorch warns when none was unused).
    cfg.dist.find_unused_parameters = True
    # Convert BatchNorm layers to SyncBatchNorm (batch statistics over all
    # processes; CUDA only).
    cfg.dist.sync_batchnorm = False
    # Timeout of collective operations (minutes), e.g. while rank 0
    # preprocesses a dataset and the other processes wait for it.
    cfg.dist.timeout_min = 60

    # ---- TensorBoard ------------------------------------------------------
    cfg.tensorboard = CN()
    # Write tensorboardX event files into the run directory.
    cfg.tensorboard.use = False

    # ---- Weights & Biases ---------------------------------------------------
    cfg.wandb = CN()
    cfg.wandb.use = False
    cfg.wandb.project = 'graphgps_ext'
    # W&B entity (user or team); '' = your default entity.
    cfg.wandb.entity = ''
    # The run's name (GraphGPS's key); '' = <run_name>-s<seed>. The group is
    # the run_name, so the seeds of a config are grouped.
    cfg.wandb.name = ''
    # wandb.init's tags (a list), notes (free text) and job_type ('' = none).
    cfg.wandb.tags = []
    cfg.wandb.notes = ''
    cfg.wandb.job_type = ''
    # online | offline | disabled. Online without an API key falls back to
    # offline (files under <run dir>/wandb, upload later with `wandb sync`).
    cfg.wandb.mode = 'online'
    # Log ckpt/best.pt as the W&B artifact model-<run id> (type 'model')
    # when the run finishes.
    cfg.wandb.log_model = False


def _global_batch_and_scaling(cfg):
    if cfg.train.batch_size_global > 0 and cfg.optim.lr_scaling != 'none':
        return ('train.batch_size_global keeps the effective batch fixed, so '
                f"optim.lr_scaling must be 'none' (got '{cfg.optim.lr_scaling}')")
    return None


def _wandb_installed(cfg):
    if cfg.wandb.use and importlib.util.find_spec('wandb') is None:
        return ('wandb.use is True but the wandb package is not installed: '
                'pip install -e ".[wandb]" (or set wandb.use False)')
    return None


def _scheduler(*names):
    return dict(unless=lambda cfg: cfg.optim.scheduler in names,
                why=lambda cfg: f"optim.scheduler is '{cfg.optim.scheduler}' "
                                f"(used by {' / '.join(names)})",
                in_file='warn')


def short_run_warmup(max_epoch: int) -> int:
    """The warm-up the warning suggests for a run of ``max_epoch`` epochs
    shorter than its config's warm-up: a tenth of the run (none below 10
    epochs), so that a short trial reaches ``optim.base_lr`` and decays.
    The config's own warm-up is never changed behind the user's back: the
    papers' and GraphGPS's configs run as written."""
    return max_epoch // 10


def _shorter_than_warmup(cfg):
    # The warm-up multipliers of the first and the last epoch (train/optim.py):
    # cosine_with_warmup max(1e-6, t / W), transformer_warmup (t + 1) / W.
    o = cfg.optim
    w, n = o.num_warmup_epochs, o.max_epoch
    if o.scheduler == 'cosine_with_warmup' and n <= w:
        first, last, cmp = 1e-6, max(1e-6, (n - 1) / w), '<='
    elif o.scheduler == 'transformer_warmup' and n < w:
        first, last, cmp = 1 / w, n / w, '<'
    else:
        return None
    return (f'optim.max_epoch {n} {cmp} optim.num_warmup_epochs {w}: the learning rate '
            f'never leaves the linear warm-up; it goes from {o.base_lr * first:.2g} to '
            f'{o.base_lr * last:.2g} and never reaches optim.base_lr {o.base_lr:g}. For a '
            f'short trial add `optim.num_warmup_epochs {short_run_warmup(n)}` to the command '
            'line (a warm-up of a tenth of the run, then the schedule over the rest)')


def declare():
    """Declare the checks of the ``train_ext`` keys."""
    choices('optim.optimizer', ['adam', 'adamW', 'sgd'])
    choices('optim.scheduler', ['none', 'steps', 'cos', 'cosine_with_warmup',
                                'transformer_warmup', 'reduce_on_plateau'])
    # model.loss_fun is checked against the registered losses by load_cfg.
    choices('optim.lr_scaling', ['none', 'linear'])
    choices('dist.launcher', ['auto', 'torchrun', 'slurm', 'none'])
    choices('dist.backend', ['auto', 'nccl', 'gloo'])
    choices('wandb.mode', ['online', 'offline', 'disabled'])
    choices('metric_agg', ['argmax', 'argmin'])
    choices('metric_best', ['auto'] + list(METRICS))

    # Where and how a run executes, not what it computes (GraphGym's keys
    # included): outside the run fingerprint.
    volatile('out_dir', 'run_name', 'seed', 'dataset.dir', 'accelerator',
             'devices', 'num_threads', 'num_workers', 'print', 'round', 'cfg_dest',
             'tensorboard_each_run', 'tensorboard_agg', 'gpu_mem', 'benchmark',
             'mem.*', 'view_emb', 'train.auto_resume', 'train.epoch_resume',
             'train.ckpt_period', 'train.enable_ckpt', 'train.ckpt_clean',
             'dist.launcher', 'dist.backend', 'dist.timeout_min',
             'dist.find_unused_parameters', 'tensorboard.*', 'wandb.*')
    # Optimiser hyper-parameters that a resumed run may change: the optimiser
    # and the scheduler continue from the current epoch with the new values.
    resumable('optim.base_lr', 'optim.weight_decay', 'optim.momentum',
              'optim.max_epoch', 'optim.num_warmup_epochs', 'optim.steps',
              'optim.lr_decay', 'optim.reduce_factor', 'optim.schedule_patience',
              'optim.min_lr', 'optim.clip_grad_norm', 'optim.clip_grad_norm_value',
              'train.early_stop_patience', 'train.eval_period')
    positive('train.batch_size', 'train.eval_period', 'train.ckpt_period',
             'optim.max_epoch', 'optim.base_lr', 'optim.lr_decay',
             'optim.clip_grad_norm_value', 'dist.timeout_min')
    non_negative('optim.weight_decay', 'optim.momentum', 'optim.num_warmup_epochs',
                 'optim.schedule_patience', 'optim.min_lr',
                 'train.early_stop_patience', 'train.batch_size_global',
                 'num_workers', 'num_threads')
    bounded('optim.weight_decay', lambda v: v <= 1,
            'at most 1 (each step shrinks the weights by optim.base_lr x '
            'optim.weight_decay of themselves; usual values are 0 to 0.1)')
    at_most(10 ** 7, 'train.batch_size', 'train.batch_size_global')
    at_most(10 ** 6, 'optim.max_epoch', 'optim.num_warmup_epochs')
    at_most(1024, 'num_workers', 'num_threads')
    bounded('optim.reduce_factor', lambda v: 0 < v < 1, 'in (0, 1)')
    bounded('seed', lambda v: 0 <= v < 2 ** 32, 'in 0 .. 2**32 - 1 (a NumPy seed)')
    rule(_global_batch_and_scaling)
    rule(_wandb_installed)
    ignored('optim.num_warmup_epochs', **_scheduler('cosine_with_warmup', 'transformer_warmup'))
    ignored('optim.steps', 'optim.lr_decay', **_scheduler('steps'))
    ignored('optim.reduce_factor', 'optim.schedule_patience', 'optim.min_lr',
            **_scheduler('reduce_on_plateau'))
    ignored('optim.momentum', unless=lambda cfg: cfg.optim.optimizer == 'sgd',
            why=lambda cfg: f"optim.optimizer is '{cfg.optim.optimizer}' (momentum "
                            "is SGD's)", in_file='warn')
    ignored('optim.clip_grad_norm_value', unless=lambda cfg: cfg.optim.clip_grad_norm,
            why='optim.clip_grad_norm is False', fix='set optim.clip_grad_norm True')
    advice(_shorter_than_warmup)
    # GraphGym's training keys that the training loop of graphgps_ext does not use.
    unused('train.sampler', 'train.sample_node', 'train.node_per_graph',
           'train.radius', 'train.skip_train_eval', 'train.iter_per_epoch',
           'train.walk_length', 'train.neighbor_sizes', 'val.sample_node',
           'val.sampler', 'val.node_per_graph', 'val.radius', 'model.match_upper',
           'model.size_average', 'model.thresh', 'model.edge_decoding',
           'custom_metrics', 'share.dim_in', 'share.dim_out', 'share.num_splits')
