r"""The network: feature encoder -> L hybrid layers -> task head.

.. math::
    X^{(0)} = \mathrm{NodeEnc}(x) \;[\,\|\,\mathrm{PE}],\quad
    E^{(0)} = \mathrm{EdgeEnc}(e),\quad
    \mathcal{E} = \mathrm{PairEnc}(\cdot)\ \text{(CSA only)}

    X^{(l+1)}, E^{(l+1)} = \mathrm{HybridLayer}_l(X^{(l)}, E^{(l)}),
    \qquad \hat{y} = \mathrm{Head}(X^{(L)})

With the virtual-node readout (``head.pool: virtual_node``) a node per graph,
connected to all its nodes, is inserted after the encoders
(:class:`~graphgps_ext.head.virtual_node.VirtualNode`).

Modules are looked up by name in GraphGym's registries
(``node_encoder_dict``, ``edge_encoder_dict``, ``layer_dict``, ``head_dict``),
so a user-registered module is selected by config like a built-in one.
"""
from typing import Optional

from torch import nn
import torch_geometric.graphgym.register as register
from torch_geometric.nn.inits import reset

from graphgps_ext.branches import LayerType, branch_dropout, parse_layer_type
from graphgps_ext.config import closest
from graphgps_ext.head.base import pool_name
from graphgps_ext.head.virtual_node import VirtualNode
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.hybrid import HybridLayer
from graphgps_ext.task import TaskInfo


def registered_layer_type(layer_type: str) -> LayerType:
    """``'GatedGCN+Transformer+GEANet'`` parsed
    (:func:`~graphgps_ext.branches.parse_layer_type`), every branch looked
    up in GraphGym's ``layer_dict``. Raises ``ValueError`` naming valid
    branches."""
    parsed = parse_layer_type(layer_type)
    for kind, name in parsed.kinds():
        if name is not None and name not in register.layer_dict:
            hint = closest(name, list(register.layer_dict))
            raise ValueError(
                f"unknown {kind} branch '{name}' in gt.layer_type "
                f"'{layer_type}'" + (f"; did you mean '{hint[0]}'?" if hint else '')
                + f" (registered: {', '.join(sorted(register.layer_dict))})")
    return parsed


def build_branch(name: Optional[str], cfg, dim: int) -> Optional[nn.Module]:
    if name is None:
        return None
    return register.layer_dict[name].from_cfg(cfg, dim)


class GPSModel(nn.Module):
    r"""Encoder, ``cfg.gt.layers`` hybrid layers and a head.

    Args:
        cfg: the resolved config.
        task: the dataset's :class:`~graphgps_ext.task.TaskInfo`.

    ``forward(batch)`` returns ``(pred, true)`` as GraphGym heads do.
    """

    def __init__(self, cfg, task: TaskInfo):
        super().__init__()
        from graphgps_ext.encoder import (build_edge_encoder, build_node_encoder,
                                          build_pair_encoder)
        dim = cfg.gt.dim_hidden
        local, glob, ext = registered_layer_type(cfg.gt.layer_type)
        self.node_encoder = build_node_encoder(cfg, task, dim)
        self.edge_encoder = build_edge_encoder(cfg, task, dim)
        self.pair_encoder = build_pair_encoder(cfg, task, dim)
        self.layers = nn.ModuleList([
            HybridLayer(dim, build_branch(local, cfg, dim),
                        build_branch(glob, cfg, dim),
                        build_branch(ext, cfg, dim), norm=cfg.gt.norm,
                        pre_norm=cfg.gt.pre_norm, residual=cfg.gt.residual,
                        dropout=cfg.gt.dropout, ffn=cfg.gt.ffn,
                        ffn_mult=cfg.gt.ffn_mult, act=cfg.gt.act,
                        norm_without_ffn=cfg.gt.parity_norm_without_ffn,
                        branch_dropout={k: branch_dropout(cfg, k) for k in
                                        ('local', 'global', 'external')})
            for _ in range(cfg.gt.layers)
        ])
        # Parameter sharing across layers (e.g. CSA's shared edge maps): a
        # branch that defines ``tie_to(first)`` is tied to the same-kind
        # branch of the first layer.
        for layer in list(self.layers)[1:]:
            for kind, branch in layer.branches.items():
                if hasattr(branch, 'tie_to'):
                    branch.tie_to(self.layers[0].branches[kind])
        self.virtual_node = None
        if pool_name(cfg) == 'virtual_node':
            if task.task != 'graph':
                raise ValueError(
                    f"the virtual-node readout (head.pool / model.graph_pooling "
                    f"'virtual_node') is for graph-level tasks; '{task.name}' is a "
                    f"{task.task}-level task")
            self.virtual_node = VirtualNode(dim)
        head = cfg.gnn.head if cfg.gnn.head != 'default' else task.head
        if head not in register.head_dict:
            raise ValueError(f"unknown head '{head}' (gnn.head); registered: "
                             + ', '.join(sorted(register.head_dict)))
        self.head = register.head_dict[head].from_cfg(cfg, task, dim)

    def reset_parameters(self):
        """Re-initialise every module: encoders, layers, virtual node, head
        (branches tied to the first layer's are re-initialised with it)."""
        for module in (self.node_encoder, self.edge_encoder, self.pair_encoder,
                       self.virtual_node, self.head):
            if module is not None:
                reset(module)
        for layer in self.layers:
            layer.reset_parameters()

    def encode(self, batch, record: Optional[dict] = None):
        """Run the feature encoders; returns ``(x, edge_attr, ctx)``.

        ``record``: a dict in which branches store attention tensors
        (:meth:`GraphContext.log`), or ``None`` (training).
        """
        ctx = GraphContext.from_batch(batch)
        ctx.record = record
        x = self.node_encoder(batch)
        pe = getattr(batch, 'pe_equiv', None)  # EquivStableLapPE gate input
        if pe is not None:
            ctx.extras['pe_equiv'] = pe
        edge_attr = self.edge_encoder(batch) if self.edge_encoder is not None else None
        if self.pair_encoder is not None:
            ctx.pair = self.pair_encoder(batch, ctx)
        return x, edge_attr, ctx

    def forward(self, batch, record: Optional[dict] = None):
        x, edge_attr, ctx = self.encode(batch, record)
        if self.virtual_node is not None:
            x, ctx = self.virtual_node.attach(x, edge_attr, ctx)
        for layer in self.layers:
            x, edge_attr = layer(x, edge_attr, ctx)
        return self.head(x, batch, ctx)


def num_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
