r"""The branch catalogue and ``gt.layer_type``, parsed once.

A *branch* is one part of the hybrid layer
(:class:`~graphgps_ext.layer.hybrid.HybridLayer`). Everything the rest of the
package needs to know about a branch without building it is declared here,
once, in :data:`CATALOGUE`: the class that implements it, its config group,
whether it is attention that splits ``gt.dim_hidden`` into ``gt.n_heads``
heads, whether it reads the dense pair features of the pair encoder, and what
it offers to the attention pictures (:mod:`graphgps_ext.viz.record`).
The config groups, the encoder builder, the registry, the pictures and the
benchmarks read these traits; none keeps a list of branch names of its own.

Adding a branch: its module under ``graphgps_ext/layer/`` (a class with a
plain-argument constructor and ``from_cfg(cfg, dim)``) and one entry here.

This module is on the package's ground floor: plain Python, no torch, so that
:mod:`graphgps_ext.config` can read it.
"""
import importlib
from dataclasses import dataclass
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

#: The positions of ``gt.layer_type``, in order.
KINDS = ('local', 'global', 'external')

#: How a branch's recorded attention is laid out (``GraphContext.log``):
#: ``'slots'`` ``[N, H, S]`` node-to-slot maps (per-node score: the mass on
#: the node); ``'dense'`` ``[B, H, n_max, n_max]`` node-pair maps;
#: ``'channels'`` ``[B, n_max, n_max, H, C]`` node-pair maps per channel;
#: ``'kernels'`` ``[N, c + 1]`` per-node kernel weights.
RECORD_LAYOUTS = ('slots', 'dense', 'channels', 'kernels')


@dataclass(frozen=True)
class Branch:
    """What is declared once about a branch.

    Attributes:
        name: its name in ``gt.layer_type`` (and GraphGym's ``layer_dict``).
        cls: ``'module:Class'`` of the implementation (imported on use).
        group: the config group of its own options (``gea``, ``mpnn``, ...),
            or ``None`` when it reads only ``gt.*``.
        attention: splits ``gt.dim_hidden`` into ``gt.n_heads`` heads and
            drops attention weights with ``gt.attn_dropout``.
        pair_features: reads the dense pair features ``ctx.pair`` that the
            pair encoder builds (``pairenc.*``).
        record: the key under which it offers attention maps to
            ``GraphContext.log`` for the pictures, or ``None``.
        record_layout: the layout of those maps (:data:`RECORD_LAYOUTS`).
        heads_key: the config key of the heads that split its width (its
            constructor raises :class:`HeadsError` when they do not divide
            it), or ``None``.
    """
    name: str
    cls: str
    group: Optional[str] = None
    attention: bool = False
    pair_features: bool = False
    record: Optional[str] = None
    record_layout: Optional[str] = None
    heads_key: Optional[str] = None

    def __post_init__(self):
        if (self.record is None) != (self.record_layout is None):
            raise ValueError(f'branch {self.name}: give record and record_layout '
                             'together')
        if self.record_layout not in (None, ) + RECORD_LAYOUTS:
            raise ValueError(f'branch {self.name}: record_layout '
                             f"'{self.record_layout}' is not one of "
                             f"{', '.join(RECORD_LAYOUTS)}")

    def load(self):
        """The implementing class."""
        module, _, name = self.cls.partition(':')
        return getattr(importlib.import_module(module), name)


#: Every branch of the package, one entry each.
CATALOGUE: List[Branch] = [
    Branch('GCN', 'graphgps_ext.layer.gcn:GCN', group='mpnn'),
    Branch('GIN', 'graphgps_ext.layer.gin:GIN', group='mpnn'),
    Branch('GINE', 'graphgps_ext.layer.gine:GINE', group='mpnn'),
    Branch('GatedGCN', 'graphgps_ext.layer.gatedgcn:GatedGCN', group='mpnn'),
    Branch('GEANet', 'graphgps_ext.layer.gea:GEANet', group='gea',
           record='gea/node_col', record_layout='slots', heads_key='gea.n_heads'),
    Branch('Transformer', 'graphgps_ext.layer.transformer:Transformer',
           attention=True, record='transformer', record_layout='dense',
           heads_key='gt.n_heads'),
    Branch('GT', 'graphgps_ext.layer.gt:GT', group='gtlayer', attention=True,
           record='gt', record_layout='dense', heads_key='gt.n_heads'),
    Branch('CSA', 'graphgps_ext.layer.csa:CSA', group='csa', attention=True,
           pair_features=True, record='csa', record_layout='channels',
           heads_key='gt.n_heads'),
    Branch('MNA', 'graphgps_ext.layer.mna:MNA', group='mna', attention=True,
           record='mna/alpha', record_layout='kernels', heads_key='gt.n_heads'),
]


class HeadsError(ValueError):
    """A branch constructor's ``heads`` do not divide its width ``dim``
    (the one check of this invariant; the config check reports it under
    the branch's :attr:`Branch.heads_key`)."""

    def __init__(self, message: str, dim: int, heads: int):
        super().__init__(message)
        self.dim, self.heads = dim, heads


def divisors(n: int) -> List[int]:
    """The head counts that divide a width ``n``."""
    return [k for k in range(1, n + 1) if n % k == 0]


def catalogue() -> Dict[str, Branch]:
    """``{name: Branch}`` of :data:`CATALOGUE` (read at call time)."""
    out: Dict[str, Branch] = {}
    for branch in CATALOGUE:
        if branch.name in out:
            raise ValueError(f"branch '{branch.name}' is declared twice")
        out[branch.name] = branch
    return out


def names(**traits) -> Tuple[str, ...]:
    """The names of the branches whose traits equal ``traits``, e.g.
    ``names(attention=True)`` or ``names(group='mpnn')``."""
    return tuple(b.name for b in CATALOGUE
                 if all(getattr(b, k) == v for k, v in traits.items()))


def recording() -> Dict[str, Branch]:
    """``{name: Branch}`` of the branches that record attention maps."""
    return {b.name: b for b in CATALOGUE if b.record is not None}


class LayerType(NamedTuple):
    """``gt.layer_type`` parsed: the branch name of each position, ``None``
    where absent (:func:`parse_layer_type`)."""
    local: Optional[str]
    glob: Optional[str]
    external: Optional[str]

    @property
    def present(self) -> Tuple[str, ...]:
        """The names of the branches present, in layer order."""
        return tuple(n for n in self if n is not None)

    def has(self, *names: str) -> bool:
        """Whether one of ``names`` is a branch of the layer."""
        return any(n in names for n in self.present)

    def kinds(self) -> Iterator[Tuple[str, Optional[str]]]:
        """``(position, name or None)`` in layer order."""
        return zip(KINDS, self)


_ABSENT = ('None', 'none', '')


def parse_layer_type(text) -> LayerType:
    """``'GatedGCN+Transformer+GEANet'`` -> ``LayerType('GatedGCN',
    'Transformer', 'GEANet')``, with ``None`` for a part written ``None``
    (or ``none``, or empty). Names are not looked up here (a user may
    register branches of their own). Raises ``ValueError`` when the text is
    not three ``+``-separated parts."""
    parts = str(text).split('+')
    if len(parts) != 3:
        raise ValueError(
            f"gt.layer_type '{text}' must have three '+'-separated parts "
            "<local>+<global>+<external>, e.g. 'GatedGCN+Transformer+GEANet' "
            "or 'None+CSA+None'")
    return LayerType(*(None if p in _ABSENT else p for p in parts))


def layer_type_of(cfg) -> Optional[LayerType]:
    """``cfg.gt.layer_type`` parsed, or ``None`` when the config has no
    ``gt`` group or the value is not three parts (reported by the config
    check)."""
    if 'gt' not in cfg:
        return None
    try:
        return parse_layer_type(cfg.gt.layer_type)
    except ValueError:
        return None
