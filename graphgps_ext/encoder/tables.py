"""The encoder classes by name: the package's tables, which
:mod:`graphgps_ext.register` registers in GraphGym's ``node_encoder_dict``
/ ``edge_encoder_dict``, and :func:`lookup`, which finds a name there or in
the registry (a user-registered encoder is selected by name like a built-in
one; every class has ``from_cfg(cfg, task, dim)``).

- :func:`node_encoders`: the type encoders of :data:`TYPE_ENCODERS`
  (``TypeDictNode``, ``MultiTypeNode``, ``Atom``, ``LinearNode``,
  ``OneHotNode``, ``ASTNode``) and the node encoder of every node encoding
  of the encoding catalogue (:mod:`graphgps_ext.encodings`), by its name.
- :data:`EDGE_ENCODERS`: ``TypeDictEdge``, ``Bond``, ``LinearEdge``,
  ``DummyEdge``.
"""
import torch_geometric.graphgym.register as register

from graphgps_ext import encodings
from graphgps_ext.config import closest
from graphgps_ext.encoder.ast import ASTNode
from graphgps_ext.encoder.dummy_edge import DummyEdge
from graphgps_ext.encoder.linear import LinearEdge, LinearNode, OneHotNode
from graphgps_ext.encoder.multi_type import MultiTypeNode
from graphgps_ext.encoder.ogb import Atom, Bond
from graphgps_ext.encoder.type_dict import TypeDictEdge, TypeDictNode

#: The node type encoders, by name.
TYPE_ENCODERS = {
    'TypeDictNode': TypeDictNode,
    'MultiTypeNode': MultiTypeNode,
    'Atom': Atom,
    'LinearNode': LinearNode,
    'OneHotNode': OneHotNode,
    'ASTNode': ASTNode,
}

#: The edge encoders, by name.
EDGE_ENCODERS = {
    'TypeDictEdge': TypeDictEdge,
    'Bond': Bond,
    'LinearEdge': LinearEdge,
    'DummyEdge': DummyEdge,
}


def node_encoders():
    """``{name: class}`` of the node encoders: the type encoders and the
    encoders of the catalogue's node encodings (read at call time)."""
    return {**TYPE_ENCODERS, **{name: e.load() for name, e in
                                encodings.node_encodings().items()}}


def lookup(table_name: str, name: str, role: str):
    """The class of encoder ``name`` (``role``: what it encodes, for the
    message) in the package's table, else in GraphGym's ``table_name``
    registry. Raises ``ValueError`` naming the known ones."""
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
