"""Building the full config of a run.

:func:`load_cfg` registers every module (:func:`graphgps_ext.register.register_all`),
resets GraphGym's global ``cfg`` to its defaults plus this project's groups
(``set_cfg``), merges a YAML file and ``KEY VALUE`` overrides (unknown keys
and bad values raise :class:`~graphgps_ext.config.ConfigError` naming the
closest valid ones), resolves ``accelerator`` and ``run_name`` and keeps
``gnn.dim_inner`` equal to ``gt.dim_hidden``. :func:`finalize_cfg` fills in
what depends on the dataset (``metric_best: auto``, ``metric_agg``,
``model.loss_fun: auto``) once its :class:`TaskInfo` is known.
"""
import os
from typing import Optional, Sequence, Tuple

import torch
from yacs.config import CfgNode

from graphgps_ext.compat import merge_config_file
from graphgps_ext.config import ConfigError, check_values, merge_list


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


def load_cfg(cfg_file: Optional[str] = None,
             opts: Optional[Sequence[str]] = None) -> CfgNode:
    """GraphGym's global ``cfg`` reset to defaults, with ``cfg_file`` and
    ``opts`` merged and validated. Raises :class:`ConfigError`."""
    from torch_geometric.graphgym.config import cfg, set_cfg

    from graphgps_ext.register import register_all

    register_all()
    set_cfg(cfg)
    if cfg_file is not None:
        if not os.path.isfile(cfg_file):
            raise ConfigError(f"config file '{cfg_file}' does not exist")
        merge_config_file(cfg, cfg_file, opts)  # GraphGPS/GEAET/CSA: translated
    merge_list(cfg, opts)
    check_values(cfg)
    cfg.accelerator = resolve_accelerator(cfg.accelerator)
    if not cfg.run_name:
        cfg.run_name = config_name(cfg_file) if cfg_file else 'default'
    if '/' in cfg.run_name or cfg.run_name in ('.', '..'):
        raise ConfigError(f"run_name '{cfg.run_name}' must be a plain folder name")
    if cfg.train.eval_period < 1:
        raise ConfigError('train.eval_period must be >= 1')
    cfg.gnn.dim_inner = cfg.gt.dim_hidden
    cfg.cfg_dest = 'config.yaml'
    _check_modules(cfg)
    return cfg


def _check_modules(cfg: CfgNode):
    """Fail at start (not after loading data) on unknown registered names."""
    import torch_geometric.graphgym.register as gg

    from graphgps_ext.config import closest
    from graphgps_ext.network.model import parse_layer_type
    if cfg.model.type not in gg.network_dict:
        raise ConfigError(f"unknown model.type '{cfg.model.type}'; registered: "
                          + ', '.join(sorted(gg.network_dict)))
    try:
        parse_layer_type(cfg.gt.layer_type)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if cfg.gnn.head != 'default' and cfg.gnn.head not in gg.head_dict:
        hint = closest(cfg.gnn.head, list(gg.head_dict))
        raise ConfigError(f"unknown head '{cfg.gnn.head}' (gnn.head)"
                          + (f"; did you mean '{hint[0]}'?" if hint else '')
                          + f" (registered: {', '.join(sorted(gg.head_dict))})")


def finalize_cfg(cfg: CfgNode, task) -> Tuple[str, str]:
    """Resolve the dataset-dependent ``auto`` values from ``task``
    (:class:`~graphgps_ext.loader.task.TaskInfo`); returns
    ``(metric_best, direction)``."""
    from graphgps_ext.metrics import direction

    if cfg.metric_best == 'auto':
        cfg.metric_best = task.metric
    metric = cfg.metric_best
    mode = task.metric_direction if metric == task.metric else direction(metric)
    cfg.metric_agg = 'argmin' if mode == 'min' else 'argmax'
    if cfg.model.loss_fun == 'auto':
        cfg.model.loss_fun = task.loss
    return metric, mode


def dump_cfg(cfg: CfgNode, path: str):
    """Write the resolved config as YAML (atomically)."""
    from graphgps_ext.train.checkpoint import atomic_write_bytes
    data = cfg.dump().encode()
    atomic_write_bytes(path, lambda f: f.write(data))
