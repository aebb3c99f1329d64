"""The one list of what graphgps_ext registers in GraphGym's registries.

Nothing is registered by import side effects: every config group, encoder,
branch, head and loss is named here (via the explicit tables of each
sub-package; the config groups via :func:`graphgps_ext.config.groups.groups`,
the branches and encodings via their catalogues) and registered by
:func:`register_all`, once per content of the catalogues.
"""
from functools import lru_cache
from typing import Callable, Dict, Tuple

import torch_geometric.graphgym.register as gg

from graphgps_ext import branches, encoder, encodings, head, layer
from graphgps_ext.config.groups import groups
from graphgps_ext.network.model import GPSModel
from graphgps_ext.train import loss


def config_groups() -> Dict[str, Callable]:
    """Config group name -> group function, as GraphGym's ``config_dict``
    takes them (from :func:`graphgps_ext.config.groups.groups`)."""
    return {name: group.cfg for name, group in groups().items()}


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
    """Register every config group and module of the package (idempotent:
    once per content of the catalogues; a catalogue entry added since is
    registered at the next call)."""
    _register(tuple(branches.CATALOGUE) + tuple(encodings.ENCODINGS))


@lru_cache(maxsize=4)
def _register(catalogues: Tuple) -> None:
    for name, fn in config_groups().items():
        _put(gg.config_dict, name, fn)
    for name, cls in encoder.node_encoders().items():
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
