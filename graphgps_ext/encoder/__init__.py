r"""Feature encoders: node (type + PE), edge, and CSA pair encoders.

Tables (registered in GraphGym's ``node_encoder_dict`` / ``edge_encoder_dict``
by :mod:`graphgps_ext.register`; every class has
``from_cfg(cfg, task, dim)``, so a user-registered encoder is selected by
name like a built-in one):

- :func:`node_encoders`: the type encoders of :data:`TYPE_ENCODERS`
  (``TypeDictNode``, ``MultiTypeNode``, ``Atom``, ``LinearNode``,
  ``OneHotNode``, ``ASTNode``) and the node encoder of every node encoding
  of the encoding catalogue (:mod:`graphgps_ext.encodings`), by its name.
- :data:`EDGE_ENCODERS`: ``TypeDictEdge``, ``Bond``, ``LinearEdge``,
  ``DummyEdge``.

Selection rules:

- **Node**: with ``dataset.node_encoder: True`` the ``+``-separated
  ``dataset.node_encoder_name`` (``'TypeDictNode+RWSE'``,
  ``'Atom+LapPE'``, ``'LinearNode+LapPE+RWSE'``, ``'default+RWSE'``; the type
  part ``default`` is the dataset's own encoder ``task.node_encoder``) and
  ``dataset.node_encoder_bn``; with ``node_encoder: False`` (GraphGym's
  default) the dataset's own encoder plus every ``posenc_*`` group with
  ``enable: True``, no BatchNorm.
- **Edge**: with ``dataset.edge_encoder: True`` the encoder
  ``dataset.edge_encoder_name`` (``default`` = ``task.edge_encoder``) and
  ``dataset.edge_encoder_bn``; otherwise ``task.edge_encoder``. When that is
  ``None`` (no edge features) a :class:`DummyEdge` is built. No edge encoder
  at all is built unless a branch of ``gt.layer_type`` reads the edge stream
  (its class method ``uses_edges(cfg)``: GINE, GatedGCN, GEANet with its
  edge unit, GT's edge-feature layer) or ``dataset.parity_unused_edge_encoder``
  (with ``edge_encoder: True``) asks for it.
- **Pair**: :class:`PairEncoder` when ``gt.layer_type`` has a ``CSA`` branch
  or ``pairenc.enable``; else ``None``.
"""
from typing import Optional

from torch import nn
import torch_geometric.graphgym.register as register
from torch_geometric.nn.inits import reset

from graphgps_ext import encodings
from graphgps_ext.branches import layer_type_of
from graphgps_ext.config import closest
from graphgps_ext.config.posenc import node_encoder_parts, pair_encoder_needed
from graphgps_ext.encoder.ast import ASTNode
from graphgps_ext.encoder.composite import CompositeNodeEncoder
from graphgps_ext.encoder.dummy_edge import DummyEdge
from graphgps_ext.encoder.linear import LinearEdge, LinearNode, OneHotNode
from graphgps_ext.encoder.multi_type import MultiTypeNode
from graphgps_ext.encoder.ogb import Atom, Bond
from graphgps_ext.encoder.pair import PairEncoder
from graphgps_ext.encoder.type_dict import TypeDictEdge, TypeDictNode
from graphgps_ext.layer.norm import MaskedBatchNorm1d, normalize, prefix_rows

#: The node type encoders, by name.
TYPE_ENCODERS = {
    'TypeDictNode': TypeDictNode,
    'MultiTypeNode': MultiTypeNode,
    'Atom': Atom,
    'LinearNode': LinearNode,
    'OneHotNode': OneHotNode,
    'ASTNode': ASTNode,
}


def node_encoders():
    """``{name: class}`` of the node encoders: the type encoders and the
    encoders of the catalogue's node encodings (read at call time)."""
    return {**TYPE_ENCODERS, **{name: e.load() for name, e in
                                encodings.node_encodings().items()}}


#: The node encoders of the package (:func:`node_encoders` at import).
NODE_ENCODERS = node_encoders()

EDGE_ENCODERS = {
    'TypeDictEdge': TypeDictEdge,
    'Bond': Bond,
    'LinearEdge': LinearEdge,
    'DummyEdge': DummyEdge,
}

__all__ = ['NODE_ENCODERS', 'EDGE_ENCODERS', 'TYPE_ENCODERS', 'node_encoders',
           'build_node_encoder',
           'build_edge_encoder', 'build_pair_encoder', 'CompositeNodeEncoder',
           'PairEncoder']


def _lookup(table_name: str, name: str, role: str):
    table = getattr(register, table_name)
    own = node_encoders() if table_name == 'node_encoder_dict' else EDGE_ENCODERS
    # Own tables first: GraphGym pre-registers its own 'Atom' / 'Bond'
    # (without ``from_cfg``); the registry adds user-registered encoders.
    cls = own.get(name, table.get(name))
    if cls is None:
        known = sorted(set(table) | set(own))
        hint = closest(name, known)
        raise ValueError(f"unknown {role} encoder '{name}'"
                         + (f"; did you mean '{hint[0]}'?" if hint else '')
                         + f" (known: {', '.join(known)})")
    if not hasattr(cls, 'from_cfg'):
        raise ValueError(f"{role} encoder '{name}' ({cls.__name__}) has no "
                         'from_cfg(cfg, task, dim) class method')
    return cls


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
        cls = _lookup('node_encoder_dict', name, 'node PE')
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
    type_enc = _lookup('node_encoder_dict', type_name, 'node').from_cfg(
        cfg, task, dim - width)
    explicit = bool(getattr(cfg.dataset, 'node_encoder', False))
    norm = (MaskedBatchNorm1d(dim) if explicit and cfg.dataset.node_encoder_bn
            else None)
    if not (concat or add or side or norm is not None):
        return type_enc
    return CompositeNodeEncoder(type_enc, concat, add, side, norm)


def _needs_edge_stream(cfg) -> bool:
    """Whether a branch of ``gt.layer_type`` reads the sparse edge stream: a
    branch class says so with a class method ``uses_edges(cfg) -> bool``
    (absent: it does not)."""
    layer_type = layer_type_of(cfg)
    for name in layer_type.present if layer_type is not None else ():
        cls = register.layer_dict.get(name)
        uses = getattr(cls, 'uses_edges', None)
        if uses is not None and uses(cfg):
            return True
    return False


def edge_encoder_name(cfg, task, need: Optional[bool] = None) -> Optional[str]:
    r"""The edge encoder name selected by ``cfg`` for ``task``.

    ``need``: force (``True``) a :class:`DummyEdge` when the dataset has no
    edge features; ``None`` decides from ``gt.layer_type``.
    """
    name = None
    if bool(getattr(cfg.dataset, 'edge_encoder', False)):
        name = str(cfg.dataset.edge_encoder_name)
        if name == 'default':
            name = task.edge_encoder
    else:
        name = task.edge_encoder
    if name is None:
        if need is None:
            need = _needs_edge_stream(cfg)
        name = 'DummyEdge' if need else None
    return name


def make_edge_encoder(name: str, cfg, task, dim: int) -> nn.Module:
    return _lookup('edge_encoder_dict', name, 'edge').from_cfg(cfg, task, dim)


class _EdgeWithNorm(nn.Module):
    """An edge encoder followed by BatchNorm (GraphGPS ``edge_encoder_bn``)."""

    def __init__(self, enc: nn.Module, dim: int):
        super().__init__()
        self.enc, self.norm = enc, MaskedBatchNorm1d(dim)

    def reset_parameters(self):
        reset(self.enc)
        self.norm.reset_parameters()

    def forward(self, batch):
        return normalize(self.norm, self.enc(batch),
                         getattr(batch, 'edge_mask', None),
                         prefix_rows(batch, 'real_edges'))


def build_edge_encoder(cfg, task, dim: int) -> Optional[nn.Module]:
    r"""``Module(batch) -> [E, dim]``, or ``None`` when no branch reads the
    edge stream (CSA embeds bonds in its own pair encoder), unless
    ``dataset.parity_unused_edge_encoder`` asks for the configured encoder
    anyway (GraphGPS's and GEAET's code build it, unused)."""
    explicit = bool(getattr(cfg.dataset, 'edge_encoder', False))
    if not _needs_edge_stream(cfg) and not (
            explicit and cfg.dataset.parity_unused_edge_encoder):
        return None
    name = edge_encoder_name(cfg, task)
    if name is None:
        return None
    enc = make_edge_encoder(name, cfg, task, dim)
    if explicit and cfg.dataset.edge_encoder_bn:
        return _EdgeWithNorm(enc, dim)
    return enc


def build_pair_encoder(cfg, task, dim: int) -> Optional[nn.Module]:
    r"""``Module(batch, ctx) -> [B, n_max, n_max, dim]`` or ``None``."""
    if not pair_encoder_needed(cfg):
        return None
    return PairEncoder.from_cfg(cfg, task, dim)
