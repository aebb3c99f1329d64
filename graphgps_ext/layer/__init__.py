"""Branches of the hybrid layer, by the name used in ``gt.layer_type``.

The branches are those of the branch catalogue
(:data:`graphgps_ext.branches.CATALOGUE`); every entry is registered in
GraphGym's ``layer_dict`` by :func:`graphgps_ext.register.register_all`.
"""
from graphgps_ext.branches import catalogue
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



def branch_classes():
    """``{name: branch class}`` of the branch catalogue (each class has
    ``from_cfg(cfg, dim)``), read at call time."""
    return {name: b.load() for name, b in catalogue().items()}


#: name -> branch class, as the catalogue declares them.
BRANCHES = branch_classes()

__all__ = ['BRANCHES', 'CSA', 'DenseLayout', 'GCN', 'GEANet', 'GIN', 'GINE',
           'GT', 'GatedGCN', 'GraphContext', 'HybridLayer', 'MNA',
           'Transformer', 'branch_classes']
