r"""Feature encoders: node (type + PE), edge, and CSA pair encoders.

The encoder classes by name are in :mod:`~graphgps_ext.encoder.tables`
(:func:`node_encoders`, :data:`EDGE_ENCODERS`; registered in GraphGym by
:mod:`graphgps_ext.register`).

Selection rules:

- **Node**: with ``dataset.node_encoder: True`` the ``+``-separated
  ``dataset.node_encoder_name`` (``'TypeDictNode+RWSE'``,
  ``'Atom+LapPE'``, ``'LinearNode+LapPE+RWSE'``, ``'default+RWSE'``; the type
  part ``default`` is the dataset's own encoder ``task.node_encoder``) and
  ``dataset.node_encoder_bn``; with ``node_encoder: False`` (GraphGym's
  default) the dataset's own encoder plus every ``posenc_*`` group with
  ``enable: True``, no BatchNorm.
- **Edge**: :mod:`~graphgps_ext.encoder.edge` (the configured or the
  dataset's own encoder, only when a branch reads the edge stream).
- **Pair**: :class:`PairEncoder` when ``gt.layer_type`` has a ``CSA`` branch
  or ``pairenc.enable``; else ``None``.
"""
from typing import Optional

from torch import nn

from graphgps_ext import encodings
from graphgps_ext.config.posenc import node_encoder_parts, pair_encoder_needed
from graphgps_ext.encoder.composite import CompositeNodeEncoder
from graphgps_ext.encoder.edge import (build_edge_encoder, edge_encoder_name,  # noqa: F401
                                       make_edge_encoder)
from graphgps_ext.encoder.pair import PairEncoder
from graphgps_ext.encoder.tables import (EDGE_ENCODERS, TYPE_ENCODERS, lookup,
                                         node_encoders)
from graphgps_ext.layer.norm import MaskedBatchNorm1d

#: The node encoders of the package (:func:`node_encoders` at import).
NODE_ENCODERS = node_encoders()

__all__ = ['NODE_ENCODERS', 'EDGE_ENCODERS', 'TYPE_ENCODERS', 'node_encoders',
           'build_node_encoder', 'build_edge_encoder', 'build_pair_encoder',
           'CompositeNodeEncoder', 'PairEncoder']


def build_node_encoder(cfg, task, dim: int) -> nn.Module:
    r"""``Module(batch) -> [N, dim]`` (see the module docstring for the rules)."""
    type_name, pes = node_encoder_parts(cfg, task.node_encoder)
    if type_name is None:
        raise ValueError(f"dataset '{task.name}' has no default node encoder; "
                         'set dataset.node_encoder True and '
                         'dataset.node_encoder_name')
    concat, add, side, width = [], [], [], 0
    table = encodings.node_encodings()
    for name in pes:
        cls = lookup('node_encoder_dict', name, 'node PE')
        if not table[name].embeds:  # prepares inputs of the layers
            side.append(cls.from_cfg(cfg, task, dim))
            continue
        group = cfg[table[name].group.name]
        if group.combine == 'add':
            add.append(cls.from_cfg(cfg, task, dim))
        else:
            concat.append(cls.from_cfg(cfg, task, int(group.dim_pe)))
            width += int(group.dim_pe)
    if dim - width < 1:
        raise ValueError(f'the PE widths (dim_pe, total {width}) leave no room '
                         f'for the node type embedding in gt.dim_hidden={dim}')
    type_enc = lookup('node_encoder_dict', type_name, 'node').from_cfg(
        cfg, task, dim - width)
    explicit = bool(getattr(cfg.dataset, 'node_encoder', False))
    norm = (MaskedBatchNorm1d(dim) if explicit and cfg.dataset.node_encoder_bn
            else None)
    if not (concat or add or side or norm is not None):
        return type_enc
    return CompositeNodeEncoder(type_enc, concat, add, side, norm)


def build_pair_encoder(cfg, task, dim: int) -> Optional[nn.Module]:
    r"""``Module(batch, ctx) -> [B, n_max, n_max, dim]`` or ``None``."""
    if not pair_encoder_needed(cfg):
        return None
    return PairEncoder.from_cfg(cfg, task, dim)
