"""Task heads, by the name used in ``gnn.head``.

A head has ``from_cfg(cfg, task, dim)`` and ``forward(x, batch, ctx) -> (pred, true)``;
heads whose metrics need other tensors than ``(pred, true)`` also define
``metric_inputs(pred, true, batch) -> (pred_m, true_m)``.
"""
from graphgps_ext.head.code2 import Code2SequenceHead
from graphgps_ext.head.graph import GraphMLPHead, GraphNodeMLPHead
from graphgps_ext.head.link import InductiveLinkHead
from graphgps_ext.head.node import InductiveNodeHead
from graphgps_ext.head.root import RootNodeHead
from graphgps_ext.head.virtual_node import VirtualNode

HEADS = {
    'graph_mlp': GraphMLPHead,
    'graph_node_mlp': GraphNodeMLPHead,
    'inductive_node': InductiveNodeHead,
    'inductive_link': InductiveLinkHead,
    'code2_sequence': Code2SequenceHead,
    'root_node': RootNodeHead,
}

# GraphGym's built-in heads (registered by GraphGym, without ``from_cfg``)
# -> the head of this package that does their job ('' = none).
GRAPHGYM_HEADS = {
    'node': 'inductive_node',
    'graph': 'graph_mlp',
    'edge': '',
    'link_pred': 'inductive_link',
}

__all__ = ['HEADS', 'GRAPHGYM_HEADS', 'GraphMLPHead', 'GraphNodeMLPHead',
           'InductiveNodeHead', 'InductiveLinkHead', 'Code2SequenceHead',
           'RootNodeHead', 'VirtualNode']
