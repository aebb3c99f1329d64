"""The one list of what graphgps_ext registers in GraphGym's registries.

Nothing is registered or declared by import side effects: every config
group, encoder, branch, head and loss is named here (via the explicit tables
of each sub-package; the config groups via
:data:`graphgps_ext.config.groups.GROUPS`) and registered once by
:func:`register_all`, which also runs every config declaration
(:func:`~graphgps_ext.config.groups.declare_all`). The config keys whose
values are the names of a table above :mod:`graphgps_ext.config`
(``metric_best``, ``dataset.metrics``) are declared here, by
:func:`declare_names`, which :func:`register_all` runs, so that
:mod:`graphgps_ext.config` needs no table of the layers above it.
"""
import torch_geometric.graphgym.register as gg

from graphgps_ext import encoder, head, layer
from graphgps_ext.config import choices, run_declarations
from graphgps_ext.config.groups import GROUPS, declare_all
from graphgps_ext.metrics import METRICS
from graphgps_ext.network.model import GPSModel
from graphgps_ext.train import loss

#: Config group name -> group function, as GraphGym's ``config_dict`` takes
#: them (derived from :data:`graphgps_ext.config.groups.GROUPS`).
CONFIG_GROUPS = {name: group.cfg for name, group in GROUPS.items()}


def _names():
    choices('metric_best', ['auto'] + list(METRICS))
    choices('dataset.metrics', list(METRICS))


def declare_names():
    """Declare the keys that take the names of the metric table, after every
    config group's declarations (idempotent)."""
    declare_all()
    run_declarations([('metric names', _names)])


_done = False


def _put(mapping, key, module):
    # Idempotent: re-registering the same object is a no-op. GraphGym's own
    # built-ins of the same name (e.g. its 'Atom'/'Bond' encoders, which read
    # the global cfg) are replaced by ours; any other clash is an error.
    old = mapping.get(key)
    if old is module:
        return
    if old is not None and not getattr(old, '__module__', '').startswith(
            'torch_geometric.graphgym'):
        raise KeyError(f"'{key}' is already registered by {old!r}")
    mapping[key] = module


def register_all():
    """Declare every config check and register every module of the
    package (idempotent)."""
    global _done
    if _done:
        return
    declare_names()
    for name, fn in CONFIG_GROUPS.items():
        _put(gg.config_dict, name, fn)
    for name, cls in encoder.NODE_ENCODERS.items():
        _put(gg.node_encoder_dict, name, cls)
    for name, cls in encoder.EDGE_ENCODERS.items():
        _put(gg.edge_encoder_dict, name, cls)
    for name, cls in layer.branch_classes().items():
        _put(gg.layer_dict, name, cls)
    for name, cls in head.HEADS.items():
        _put(gg.head_dict, name, cls)
    for name, fn in loss.LOSSES.items():
        _put(gg.loss_dict, name, fn)
    _put(gg.network_dict, 'GPSModel', GPSModel)
    _done = True
