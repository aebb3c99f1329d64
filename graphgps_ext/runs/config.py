"""The resolved config of a run: loaded, checked against the registries,
completed from the dataset.

:func:`load_cfg` declares every config check and registers every module
(:func:`graphgps_ext.register.register_all`), resets GraphGym's global
``cfg`` to its defaults plus this project's groups (``set_cfg``), merges a
YAML file (read with a safe loader; ``.yaml`` / ``.yml`` only) and ``KEY
VALUE`` overrides, runs every check the groups
declare (:func:`graphgps_ext.config.validate`) and those that need the
registries (model, branch, head, encoder, loss and dataset names; each
branch of ``gt.layer_type`` is built once), resolves ``accelerator`` and
``run_name`` and keeps ``gnn.dim_inner`` equal to ``gt.dim_hidden``. Every
problem raises :class:`~graphgps_ext.config.ConfigError` (``main.py`` exit
code 2) naming the key and what to change, before any data is read.
:func:`finalize_cfg` fills in what depends on the dataset (``metric_best:
auto``, ``metric_agg``, ``model.loss_fun: auto``) once its
:class:`TaskInfo` is known, and logs the config's warnings.
"""
import os
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch_geometric.graphgym.register as gg
from torch_geometric.graphgym.config import cfg as graphgym_cfg
from torch_geometric.graphgym.config import set_cfg
from yacs.config import CfgNode

from graphgps_ext.branches import (HeadsError, catalogue as branch_catalogue,
                                   divisors, parse_layer_type)
from graphgps_ext.compat import merge_config_file
from graphgps_ext.config import (COMMAND_LINE, ConfigError, UnknownKeys, closest,
                                 config_warnings, did_you_mean, get_key,
                                 merge_list, sizes, validate)
from graphgps_ext.config.posenc import node_encoder_parts, pe_names
from graphgps_ext.head import GRAPHGYM_HEADS
from graphgps_ext.loader.sources import check_dataset, spec_of
from graphgps_ext.logger import get_logger
from graphgps_ext.metrics import direction
from graphgps_ext.register import register_all
from graphgps_ext.results.tree import RunDir, run_name_path
from graphgps_ext.task import TaskInfo
from graphgps_ext.train.loss import LOSSES


def config_name(path: str) -> str:
    """The results name of a config file: its path below a ``configs``
    directory with ``/`` -> ``-`` and no extension
    (``configs/geaet/zinc.yaml`` -> ``geaet-zinc``), else the file stem."""
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    stem = os.path.splitext(parts[-1])[0]
    if 'configs' in parts[:-1]:
        i = len(parts) - 1 - parts[::-1].index('configs')
        return '-'.join(parts[i + 1:-1] + [stem])
    return stem


def resolve_accelerator(name: str) -> str:
    """``auto`` -> ``cuda`` if available else ``cpu``; ``gpu`` means ``cuda``.
    Raises :class:`ConfigError` when CUDA is asked for but absent."""
    name = str(name)
    if name == 'auto':
        return 'cuda' if torch.cuda.is_available() else 'cpu'
    if name == 'gpu':
        name = 'cuda'
    if name == 'cpu':
        return name
    if name == 'cuda' or name.startswith('cuda:'):
        if not torch.cuda.is_available():
            raise ConfigError(
                f"accelerator '{name}' was asked for but CUDA is not available "
                f"(torch {torch.__version__}, CUDA build: "
                f"{torch.version.cuda or 'no'}); use 'accelerator cpu' or "
                "'accelerator auto', or install a CUDA build of torch")
        if ':' in name and int(name.split(':')[1]) >= torch.cuda.device_count():
            raise ConfigError(f"accelerator '{name}': only "
                              f'{torch.cuda.device_count()} CUDA device(s) visible')
        return name
    raise ConfigError(f"bad value '{name}' for 'accelerator'; valid values: "
                      "'auto', 'cpu', 'cuda', 'cuda:<index>'")


_DEFAULTS: Dict[Tuple, CfgNode] = {}


def default_cfg() -> CfgNode:
    """GraphGym's defaults plus this project's groups, nothing merged (a
    private copy per set of registered groups; the reference for which keys
    a config sets)."""
    register_all()
    key = tuple(gg.config_dict.items())
    if key not in _DEFAULTS:
        defaults = CfgNode()
        set_cfg(defaults)
        _DEFAULTS[key] = defaults
    return _DEFAULTS[key]


def load_cfg(cfg_file: Optional[str] = None,
             opts: Optional[Sequence[str]] = None) -> CfgNode:
    """GraphGym's global ``cfg`` reset to defaults, with the YAML file
    ``cfg_file`` and ``opts`` merged and validated: every check declared by
    the config groups (:mod:`graphgps_ext.config`) and the names of
    registered modules and datasets. Raises :class:`ConfigError` listing the
    problems, before any data is read."""
    register_all()
    cfg = graphgym_cfg
    cfg.clear()  # no key left from an earlier load (or a group since removed)
    set_cfg(cfg)
    sources, unknown = {}, []
    if cfg_file is not None:
        try:
            _, keys = merge_config_file(cfg, cfg_file, opts)  # foreign: translated
            sources.update((k, f'in {cfg_file}') for k in keys)
        except UnknownKeys as err:  # listed with the command line's
            unknown += err.problems
    try:
        sources.update((k, COMMAND_LINE) for k in merge_list(cfg, opts))
    except UnknownKeys as err:
        unknown += err.problems
    if unknown:
        raise ConfigError.listing(unknown)
    validate(cfg, default_cfg(), sources)
    cfg.accelerator = resolve_accelerator(cfg.accelerator)
    if not cfg.run_name:
        cfg.run_name = config_name(cfg_file) if cfg_file else 'default'
    # One folder for the composed and the decomposed spelling of a name.
    cfg.run_name = run_name_path(str(cfg.run_name))
    _check_paths(cfg)
    cfg.gnn.dim_inner = cfg.gt.dim_hidden
    cfg.cfg_dest = RunDir.CONFIG
    _check_modules(cfg)
    return cfg


#: The longest file name most file systems take (bytes, NAME_MAX).
NAME_MAX = 255


def _first_existing(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def _check_paths(cfg: CfgNode):
    """``out_dir``, ``run_name`` and ``dataset.dir`` name usable folders:
    refused at start (:class:`ConfigError`), before any data is read, rather
    than as a write error after the data has loaded."""
    name = str(cfg.run_name)
    if '/' in name or name in ('.', '..') or any(c < ' ' or c == '\x7f' for c in name):
        raise ConfigError(f'run_name {name!r} must be a plain folder name (no '
                          "'/', no newline or other control character)")
    if len(name.encode()) > NAME_MAX:
        raise ConfigError(f'run_name is {len(name.encode())} bytes long; a folder name '
                          f'takes at most {NAME_MAX}: give a shorter run_name')
    for key in ('out_dir', 'dataset.dir'):
        value = str(get_key(cfg, key))
        if not value.strip():
            example = 'results' if key == 'out_dir' else 'datasets'
            raise ConfigError(f"{key} is empty: it would write into the working "
                              f"directory; give a folder (e.g. '{example}')")
        if any(c < ' ' for c in value):
            raise ConfigError(f'{key} {value!r} holds a newline or another control '
                              'character')
        found = _first_existing(value)
        if not os.path.isdir(found):
            what = 'is a file' if found == os.path.abspath(value) else \
                f'lies below the file {found}'
            raise ConfigError(
                f"{key} '{value}' {what}, not a folder: point {key} at a folder"
                + (" (the one that holds the dataset's folders, e.g. ZINC/raw/)"
                   if key == 'dataset.dir' else ''))


def _buildable(table: dict, method: str = 'from_cfg') -> List[str]:
    """Names in a GraphGym registry whose class this project can build
    (GraphGym's own built-ins have no ``from_cfg``)."""
    return sorted(k for k, v in table.items() if hasattr(v, method))


def _unknown(what: str, key: str, name: str, valid: Sequence[str]) -> ConfigError:
    return ConfigError(f"unknown {what} '{name}' ({key})" + (did_you_mean(name, valid) or '.')
                       + f" Valid: {', '.join(valid)}")


def _unknown_head(name: str, valid: Sequence[str]) -> ConfigError:
    """GraphGym's built-in head names point to this package's equivalent."""
    hint = closest(name, list(valid) + list(GRAPHGYM_HEADS), 1)
    hint = [GRAPHGYM_HEADS.get(h, h) for h in hint if GRAPHGYM_HEADS.get(h, h)]
    if name in GRAPHGYM_HEADS:
        msg = (f"gnn.head '{name}' is a GraphGym built-in head, which "
               'graphgps_ext does not build')
    else:
        msg = f"unknown head '{name}' (gnn.head)"
    msg += f"; did you mean '{hint[0]}'?" if hint else '.'
    return ConfigError(msg + f" Valid: {', '.join(valid)} ('default' = the "
                       "dataset's own head)")


def _check_modules(cfg: CfgNode):
    """Fail at start (not after loading data) on names that the registries
    or the dataset readers do not know, and on branches that cannot be built
    from this config."""
    networks = sorted(k for k, v in gg.network_dict.items()
                      if not getattr(v, '__module__', '').startswith('torch_geometric'))
    if cfg.model.type not in networks:
        raise _unknown('network', 'model.type', cfg.model.type, networks)
    if cfg.model.loss_fun != 'auto' and cfg.model.loss_fun not in LOSSES:
        raise ConfigError(f"bad value {cfg.model.loss_fun!r} for 'model.loss_fun'; "
                          "valid values: 'auto', " + ', '.join(map(repr, LOSSES))
                          + did_you_mean(cfg.model.loss_fun, list(LOSSES)))
    heads = ['default'] + _buildable(gg.head_dict)
    if cfg.gnn.head not in heads:
        raise _unknown_head(cfg.gnn.head, heads)
    _check_encoders(cfg)
    _check_dataset(cfg)
    _check_branches(cfg)


def _check_encoders(cfg: CfgNode):
    """The names of ``dataset.node_encoder_name`` / ``edge_encoder_name``
    (used with ``dataset.node_encoder`` / ``edge_encoder``)."""
    if cfg.dataset.node_encoder:
        try:
            node_encoder_parts(cfg)
        except ValueError as err:  # several type encoders
            raise ConfigError(str(err)) from None
        pes = pe_names()
        encoders = [n for n in _buildable(gg.node_encoder_dict) if n not in pes]
        for part in str(cfg.dataset.node_encoder_name).split('+'):
            part = part.strip()
            if part not in pes and part != 'default' and part not in encoders:
                raise _unknown('node encoder', 'dataset.node_encoder_name', part,
                               ['default'] + encoders + list(pes))
    if cfg.dataset.edge_encoder:
        encoders = _buildable(gg.edge_encoder_dict)
        name = str(cfg.dataset.edge_encoder_name)
        if name != 'default' and name not in encoders:
            raise _unknown('edge encoder', 'dataset.edge_encoder_name', name,
                           ['default'] + encoders)


def _check_dataset(cfg: CfgNode):
    """``dataset.format`` / ``dataset.name``, and the loss and metrics where
    the task table knows the dataset's task before it is read."""
    try:
        check_dataset(cfg)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    spec = spec_of(cfg)
    if spec is not None:
        ds = cfg.dataset
        _check_task_fit(cfg, ds.name,
                        spec['task_type'] if ds.task_type == 'auto' else ds.task_type,
                        ds.num_outputs if ds.num_outputs > 0 else spec['num_outputs'])


def _check_branches(cfg: CfgNode):
    """The branches of ``gt.layer_type``: names this project can build, and
    each built once on the ``meta`` device (no memory, a forked RNG) so that
    its own argument checks fail at start, and its parameters times
    ``gt.layers`` fit the accelerator's memory in training
    (:func:`graphgps_ext.config.sizes.model_need`). A constructor's
    :class:`HeadsError` is reported under the key the branch catalogue names
    (``gt.n_heads``, ``gea.n_heads``)."""
    branches = _buildable(gg.layer_dict)
    try:
        layer_type = parse_layer_type(cfg.gt.layer_type)
    except ValueError as err:  # not three parts
        raise ConfigError(str(err)) from None
    for kind, name in layer_type.kinds():
        if name is not None and name not in branches:
            raise ConfigError(
                f"unknown {kind} branch '{name}' in gt.layer_type "
                f"'{cfg.gt.layer_type}'" + (did_you_mean(name, branches) or '.')
                + f" Valid: {', '.join(branches)} or None")
    params = 0
    with torch.random.fork_rng(devices=[]), torch.device('meta'):
        for name in layer_type.present:
            try:
                branch = gg.layer_dict[name].from_cfg(cfg, int(cfg.gt.dim_hidden))
                params += sum(p.numel() for p in branch.parameters())
            except HeadsError as err:
                declared = branch_catalogue().get(name)
                key = declared.heads_key if declared is not None else None
                if key is None:
                    raise ConfigError(f'gt.layer_type: the {name} branch cannot be '
                                      f'built from this config: {err}') from None
                raise ConfigError(
                    f'{key} {err.heads} does not divide gt.dim_hidden {err.dim}: '
                    f'the {name} branch splits the width into {key} heads; use '
                    f'{key} in {divisors(err.dim)} or change gt.dim_hidden') from None
            except NotImplementedError:  # an op meta tensors lack: no count
                continue
            except (ValueError, RuntimeError) as err:
                raise ConfigError(f"gt.layer_type: the {name} branch cannot be "
                                  f'built from this config: {err}') from None
    sizes.check([sizes.model_need(params * int(cfg.gt.layers), cfg,
                                  f'the branches of {cfg.gt.layers} layers')],
                str(cfg.accelerator))


# Losses and metrics that fit the predictions and targets of a task type
# (others fail on shapes or measure nothing); ranking and sequence tasks are
# their heads' business.
_FITS = {
    'regression': (('l1', 'mse'), ('mae', 'mse')),
    'classification': (('cross_entropy', 'weighted_cross_entropy'),
                       ('accuracy', 'accuracy_sbm', 'f1_macro', 'auroc')),
    'classification_multilabel': (('bce',), ('ap', 'auroc')),
}


def _check_task_fit(cfg: CfgNode, name: str, task_type: str,
                    num_outputs: Optional[int]):
    """``model.loss_fun``, ``metric_best`` and ``dataset.metrics`` fit the
    task type (binary classification with one output, or an output count
    not known yet, also takes ``bce`` / ``ap``). Raises :class:`ConfigError`."""
    if task_type not in _FITS:
        return
    losses, metrics = _FITS[task_type]
    if task_type == 'classification' and num_outputs in (None, 1):
        losses, metrics = losses + ('bce',), metrics + ('ap',)
    what = f"{name}'s {task_type} task" + (f' ({num_outputs} outputs)'
                                            if num_outputs else '')
    if cfg.model.loss_fun not in ('auto',) + losses:
        raise ConfigError(f"model.loss_fun '{cfg.model.loss_fun}' does not fit "
                          f"{what}: use one of {', '.join(losses)} or 'auto' "
                          "(the dataset's own loss)")
    asked = [('metric_best', cfg.metric_best)] + [
        ('dataset.metrics', m) for m in cfg.dataset.metrics]
    for key, metric in asked:
        if metric != 'auto' and metric not in metrics:
            raise ConfigError(f"{key} '{metric}' does not fit {what}: use one of "
                              f"{', '.join(metrics)}"
                              + (" or 'auto' (the dataset's own metric)"
                                 if key == 'metric_best' else ''))


def finalize_cfg(cfg: CfgNode, task: TaskInfo, warn: bool = True) -> Tuple[str, str]:
    """Resolve the dataset-dependent ``auto`` values from ``task``
    (:class:`~graphgps_ext.task.TaskInfo`) and log the config's
    warnings (:func:`~graphgps_ext.config.config_warnings`: keys a file sets
    that have no effect, a run shorter than its warm-up, ...; ``warn``
    False: not logged, for a reader of a finished run such as the attention
    pictures, to which they do not apply); returns ``(metric_best,
    direction)``."""
    warnings = config_warnings(cfg, default_cfg())
    _check_task_fit(cfg, task.name, task.task_type, task.num_outputs)
    if cfg.metric_best == 'auto':
        cfg.metric_best = task.metric
    metric = cfg.metric_best
    mode = task.metric_direction if metric == task.metric else direction(metric)
    agg = 'argmin' if mode == 'min' else 'argmax'
    if cfg.metric_agg not in (agg, default_cfg().metric_agg):
        warnings.append(f"'metric_agg' = {cfg.metric_agg!r} has no effect: it "
                        f"follows metric_best '{metric}' ({agg}); remove it")
    cfg.metric_agg = agg
    if cfg.model.loss_fun == 'auto':
        cfg.model.loss_fun = task.loss
    for msg in warnings if warn else ():
        get_logger().warning(msg)
    return metric, mode
