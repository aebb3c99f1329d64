"""Branches of the hybrid layer, by the name used in ``gt.layer_type``.

Every entry is registered in GraphGym's ``layer_dict`` by
:func:`graphgps_ext.register.register_all`.
"""
from graphgps_ext.layer.context import DenseLayout, GraphContext
from graphgps_ext.layer.hybrid import HybridLayer
from graphgps_ext.layer.csa import CSA
from graphgps_ext.layer.gt import GT
from graphgps_ext.layer.mna import MNA
from graphgps_ext.layer.gatedgcn import GatedGCN
from graphgps_ext.layer.gcn import GCN
from graphgps_ext.layer.gea import GEANet
from graphgps_ext.layer.gin import GIN
from graphgps_ext.layer.gine import GINE
from graphgps_ext.layer.transformer import Transformer

# name -> branch class (each has ``from_cfg(cfg, dim)``); filled explicitly.
BRANCHES = {
    'GCN': GCN,
    'GIN': GIN,
    'GINE': GINE,
    'GatedGCN': GatedGCN,
    'Transformer': Transformer,
    'GEANet': GEANet,
    'CSA': CSA,
    'MNA': MNA,
    'GT': GT,
}

__all__ = ['BRANCHES', 'DenseLayout', 'GraphContext', 'HybridLayer']
