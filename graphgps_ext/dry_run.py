r"""Check a config before launching it: ``python main.py --cfg FILE --dry-run``.

For any config (this project's, or a GraphGPS / GEAET / CSA one, translated
by :mod:`graphgps_ext.compat`) with its ``KEY VALUE`` overrides,
:func:`check`

1. loads and validates it exactly as a run would (``load_cfg``);
2. derives the dataset's task from its known shapes, without reading any
   data (:func:`graphgps_ext.loader.shapes.task_without_data`), and resolves
   the ``auto`` values (loss, selection metric);
3. builds the model and counts its parameters;

and :func:`main` prints the translation notes (for a foreign config), the
resolved layer stack with the parameters of each part, the total, and the
results folder of every seed with what it holds now (``new``,
``unfinished``, ``complete`` or ``stale: <changed keys>``, see
:func:`graphgps_ext.results.identity.seed_status`). Nothing is written.

Exit codes (as ``main.py``): 0 the config is valid (and the model was built,
unless the dataset's shapes need its data: then only the config was
checked, and the output says so); 2 a config error (the message names the
key).

A launcher can call :func:`check` directly: it returns a :class:`DryRun`
(``params``, ``layers``, ``run_name`` ...) or raises
:class:`~graphgps_ext.config.ConfigError`.
"""
import sys
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import torch
from torch import nn

from graphgps_ext.results.tree import RunDir


@dataclass
class DryRun:
    """What :func:`check` found.

    Attributes:
        cfg: the resolved config (``auto`` values filled in when the task
            is known).
        ident: the run identity (:func:`graphgps_ext.results.identity.identity`) of
            the config as loaded.
        translation: the :class:`~graphgps_ext.compat.Translation` of a
            foreign config, else ``None``.
        task: the dataset's :class:`~graphgps_ext.task.TaskInfo`, or
            ``None`` when its shapes need the data (``unknown`` says why).
        model: the built model (``None`` with ``task``).
        params: its trainable parameter count (``None`` with ``task``).
        layers: the layer stack, one line per part.
    """
    cfg: object
    ident: dict
    translation: object = None
    task: object = None
    model: Optional[nn.Module] = None
    params: Optional[int] = None
    layers: List[str] = field(default_factory=list)
    unknown: str = ''

    @property
    def run_name(self) -> str:
        return self.cfg.run_name

    def run_dir(self, seed: int) -> str:
        return RunDir.of(self.cfg.out_dir, self.cfg.run_name, seed).path


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _parts(module: nn.Module) -> List[str]:
    """Class names of the parameterised children (lists expanded)."""
    out = []
    for child in module.children():
        if isinstance(child, (nn.ModuleList, nn.ModuleDict, nn.Sequential)):
            out += _parts(child)
        elif _count(child):
            out.append(type(child).__name__)
    return out


def _name(module: nn.Module) -> str:
    """What a top-level part is: ``CompositeNodeEncoder(TypeDictNode, RWSE)``,
    ``GraphMLPHead(Linear 64-32-16-1)``, else the class name."""
    name = type(module).__name__
    lins = getattr(getattr(module, 'mlp', None), 'lins', None)
    if lins is not None:
        dims = [lins[0].in_features] + [lin.out_features for lin in lins]
        return f"{name}(Linear {'-'.join(map(str, dims))})"
    parts = _parts(module)
    if name.startswith('Composite') and parts:
        return f"{name}({', '.join(parts)})"
    return name


def _layer(module: nn.Module) -> str:
    """A hybrid layer as ``local GINE 8,320 + global Transformer 16,640 | ...``."""
    branches = getattr(module, 'branches', None)
    if branches is None:
        return _name(module)
    parts = [f'{kind} {type(b).__name__} {_count(b):,}' for kind, b in branches.items()]
    rest = _count(module) - sum(_count(b) for b in branches.values())
    ffn = getattr(module, 'ffn', None)
    extra = ('FFN' if ffn is not None else 'no FFN') + ' and norms'
    return ' + '.join(parts) + f' | {extra} {rest:,}'


def layer_stack(model: nn.Module) -> List[str]:
    """One line per top-level part of ``model``: name, what it is and its
    parameters; a list of identical layers is one line ``L x ...``."""
    lines = []
    for name, child in model.named_children():
        if isinstance(child, nn.ModuleList) and len(child) > 0:
            each = _count(child[0])
            lines.append(f'{name}: {len(child)} x [{_layer(child[0])}] = '
                         f'{len(child)} x {each:,} = {_count(child):,}')
        else:
            lines.append(f'{name}: {_name(child)} {_count(child):,}')
    return lines


def check(cfg_file: str, opts: Sequence[str] = ()) -> DryRun:
    """Validate ``cfg_file`` with ``opts`` and build its model from the
    dataset's known shapes. Raises :class:`~graphgps_ext.config.ConfigError`."""
    from graphgps_ext import compat
    from graphgps_ext.config import ConfigError
    from graphgps_ext.runs.config import finalize_cfg, load_cfg
    from graphgps_ext.results.identity import identity
    from graphgps_ext.loader.shapes import ShapesUnknown, task_without_data
    from graphgps_ext.runs.seed import build_model
    from graphgps_ext.train.loss import LOSSES

    with compat.quiet():  # the caller prints the notes (DryRun.translation)
        cfg = load_cfg(cfg_file, list(opts))
    out = DryRun(cfg, identity(cfg), compat.last_translation())
    try:
        task = task_without_data(cfg)
    except ShapesUnknown as err:
        out.unknown = str(err)
        return out
    finalize_cfg(cfg, task)
    if cfg.model.loss_fun not in LOSSES:
        raise ConfigError(f"unknown model.loss_fun '{cfg.model.loss_fun}'; "
                          f"valid: {', '.join(LOSSES)}")
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        model = build_model(cfg, task)
    except ValueError as err:  # a builder's check of the config's values
        raise ConfigError(str(err)) from None
    finally:
        torch.random.set_rng_state(state)
    out.task, out.model, out.params = task, model, _count(model)
    out.layers = layer_stack(model)
    return out


def main(cfg_file: str, opts: Sequence[str] = (),
         seeds: Optional[Sequence[int]] = None, repeat: int = 1,
         emit: Callable[[str], None] = print) -> int:
    """``main.py --dry-run``: print what :func:`check` found; returns the
    exit code (0, or 2 for a config error)."""
    from graphgps_ext import compat
    from graphgps_ext.config import ConfigError, check_overrides
    from graphgps_ext.results.identity import data_record, seed_status
    from graphgps_ext.runs.seed_lists import seed_list as run_seeds
    try:
        check_overrides(opts)
        result = check(cfg_file, opts)
        cfg = result.cfg
        seed_list = run_seeds(cfg, seeds, repeat)
    except ConfigError as err:
        print(f'config error: {err}', file=sys.stderr)
        return 2
    if result.translation is not None:
        compat.log_translation(result.translation, emit)
    emit(f'config {cfg_file}: valid')
    if result.task is None:
        emit(f'model not built: {result.unknown}; the config was checked, '
             'the model is built when the data is loaded')
    else:
        task = result.task
        emit(f'dataset {cfg.dataset.format} {cfg.dataset.name}: '
             f'{task.task}-level {task.task_type}, '
             f'{task.num_outputs} output(s); loss {cfg.model.loss_fun}, '
             f'selecting on {cfg.metric_best} ({cfg.metric_agg})')
        emit(f'model {cfg.model.type}, d {cfg.gt.dim_hidden}, '
             f'{cfg.gt.layers} x {cfg.gt.layer_type}:')
        for line in result.layers:
            emit(f'  {line}')
        emit(f'parameters: {result.params:,}')
        if result.translation is not None:
            theirs, reasons = compat.authors_count(result.translation, cfg, result.params)
            source = result.translation.source
            if reasons:
                emit(f"the {source} authors' code builds {theirs:,} parameters from this "
                     f'file ({theirs - result.params:+,}; the model computes the same):')
                for line in reasons:
                    emit(f'  {line}')
            else:
                emit(f"the {source} authors' code builds the same modules: "
                     f'{theirs:,} parameters')
    emit('results:')
    for seed in seed_list:
        run_dir = result.run_dir(seed)
        status = seed_status(run_dir, result.ident, data_record(cfg))
        emit(f'  {run_dir}  {status.describe()}')
    return 0
