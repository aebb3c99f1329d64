"""The one list of what graphgps_ext registers in GraphGym's registries.

Nothing is registered by import side effects elsewhere: every config group,
encoder, branch, head and loss is named here (via the explicit tables of each
sub-package) and registered once by :func:`register_all`. The config keys
whose values are the names of a table (``metric_best``, ``dataset.metrics``)
are declared here too, so that :mod:`graphgps_ext.config` needs no table of
the layers above it.
"""
import torch_geometric.graphgym.register as gg

from graphgps_ext import encoder, head, layer
from graphgps_ext.config import (choices, csa, dataset, gea, gt, gtlayer,
                                 head as head_cfg, mna, mpnn, posenc, speed,
                                 train as train_cfg)
from graphgps_ext.metrics import METRICS
from graphgps_ext.network.model import GPSModel
from graphgps_ext.train import loss

CONFIG_GROUPS = {
    'gt': gt.gt_cfg,
    'dataset_ext': dataset.dataset_cfg,
    'posenc': posenc.posenc_cfg,
    'mpnn': mpnn.mpnn_cfg,
    'gea': gea.gea_cfg,
    'csa': csa.csa_cfg,
    'mna': mna.mna_cfg,
    'gtlayer': gtlayer.gtlayer_cfg,
    'head': head_cfg.head_cfg,
    'train_ext': train_cfg.train_cfg,
    'speed': speed.speed_cfg,
}

choices('metric_best', ['auto'] + list(METRICS))
choices('dataset.metrics', list(METRICS))

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
    """Register every module of the package (idempotent)."""
    global _done
    if _done:
        return
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
