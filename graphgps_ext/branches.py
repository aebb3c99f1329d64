r"""The branch catalogue and ``gt.layer_type``, parsed once.

A *branch* is one part of the hybrid layer
(:class:`~graphgps_ext.layer.hybrid.HybridLayer`). Everything the rest of the
package needs to know about a branch without building it is declared here,
once, in :data:`CATALOGUE`: the class that implements it, its options (the
config group of its own keys, with their defaults, ranges or choices and
help: :class:`~graphgps_ext.options.OptionGroup`), the shared keys it reads
(``gt.n_heads`` ...), whether it is attention that splits ``gt.dim_hidden``
into ``gt.n_heads`` heads, whether it reads the dense pair features of the
pair encoder, and what it offers to the attention pictures
(:mod:`graphgps_ext.viz.record`). The config groups and their checks
(:mod:`graphgps_ext.config.options`), the branches' ``from_cfg``
(:func:`from_cfg`), the encoder builder, the registry, the pictures and the
benchmarks read these declarations; none keeps a list of branch names or
options of its own.

Adding a branch: its module under ``graphgps_ext/layer/`` (a class with a
plain-argument constructor whose defaults are its options' defaults, and
``from_cfg = classmethod(graphgps_ext.branches.from_cfg)``) and one entry
here.

This module is on the package's ground floor: plain Python, no torch, so that
:mod:`graphgps_ext.config` can read it.
"""
import importlib
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Tuple

from graphgps_ext.options import WIDTH, Above, Option, OptionGroup, entry_for_class, resolve

#: The positions of ``gt.layer_type``, in order.
KINDS = ('local', 'global', 'external')

#: How a branch's recorded attention is laid out (``GraphContext.log``):
#: ``'slots'`` ``[N, H, S]`` node-to-slot maps (per-node score: the mass on
#: the node); ``'dense'`` ``[B, H, n_max, n_max]`` node-pair maps;
#: ``'channels'`` ``[B, n_max, n_max, H, C]`` node-pair maps per channel;
#: ``'kernels'`` ``[N, c + 1]`` per-node kernel weights.
RECORD_LAYOUTS = ('slots', 'dense', 'channels', 'kernels')


@dataclass(frozen=True, eq=False)
class Branch:
    """What is declared once about a branch.

    Attributes:
        name: its name in ``gt.layer_type`` (and GraphGym's ``layer_dict``).
        cls: ``'module:Class'`` of the implementation (imported on use).
        options: its own config keys (several branches may share a group, each
            reading the options whose :attr:`~graphgps_ext.options.Option.readers`
            name it), or ``None`` when it reads only shared keys.
        args: the constructor arguments read from shared keys: ``{argument:
            dotted key | fn(cfg, dim) | WIDTH}``.
        rules: checks across its options, ``fn(cfg) -> message or None``
            (run when the branch is in ``gt.layer_type``).
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
    options: Optional[OptionGroup] = None
    args: Mapping[str, Any] = field(default_factory=dict)
    rules: Tuple[Callable, ...] = ()
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

    @property
    def group(self) -> Optional[str]:
        """The name of its config group, or ``None``."""
        return self.options.name if self.options is not None else None

    def load(self):
        """The implementing class."""
        module, _, name = self.cls.partition(':')
        return getattr(importlib.import_module(module), name)

    def read(self) -> Tuple[Option, ...]:
        """The options of its group that it reads."""
        return self.options.read_by(self.name) if self.options is not None else ()

    def arguments(self, cfg, dim: int) -> Dict[str, Any]:
        """Its constructor's keyword arguments from ``cfg`` (the width ``dim``
        is the first positional argument)."""
        out = resolve(self.args, cfg, dim)
        if self.options is not None:
            out.update(self.options.arguments(cfg, dim, self.name))
        return out


def branch_dropout(cfg, kind: str) -> float:
    """The dropout rate on the output of the ``kind`` branch (``'local'``,
    ``'global'``, ``'external'``): ``gt.dropout_<kind>``, or ``gt.dropout``
    where that is -1."""
    value = float(cfg.gt[f'dropout_{kind}'])
    return float(cfg.gt.dropout) if value == -1 else value


ACTIVATIONS = ('relu', 'gelu', 'elu', 'leaky_relu', 'silu', 'tanh')
NORMS = ('batch', 'layer', 'none')

#: Options of the local message-passing branches (GCN, GIN, GINE, GatedGCN).
MPNN_OPTIONS = OptionGroup('mpnn', (
    Option('act', 'relu', 'Activation inside the GIN/GINE MLPs and of the GatedGCN '
           'outputs.', choices=ACTIVATIONS),
    Option('out_act', False, "Apply mpnn.act to the branch output (GEAET's "
           'gt.local_out_act; GatedGCN always applies it).',
           readers=('GCN', 'GIN', 'GINE')),
    Option('gin_mlp', 'gin', 'MLP of the GIN update: gin = Linear-BN-act-Linear (the '
           "GIN paper, PyG's GIN), graphgps = Linear-act-Linear (GraphGPS's and "
           "GEAET's GIN).", choices=('gin', 'graphgps'), arg='mlp', readers=('GIN', )),
    Option('gin_train_eps', False, 'Learn the epsilon of (1 + eps) x_i (fixed at 0 '
           'otherwise).', arg='train_eps', readers=('GIN', 'GINE')),
    Option('equivstable_pe', False, 'Scale every message by MLP(||p_i - p_j||^2) of '
           'the EquivStableLapPE positions p (needs the EquivStableLapPE node '
           "encoder, which provides them to the layers as ctx.extras['pe_equiv']).",
           readers=('GINE', 'GatedGCN')),
    Option('node_norm', 'batch', "Norm of the GatedGCN node update before its "
           "activation (GraphGPS's GatedGCNLayer bn_node_x, also in the GEAET and CSA "
           'code: batch).', choices=NORMS, readers=('GatedGCN', )),
    Option('edge_norm', 'batch', 'Norm on the GatedGCN edge stream (Bresson & '
           'Laurent / GraphGPS: batch).', choices=NORMS, readers=('GatedGCN', )),
), 'options of the local message-passing branches')


def _gea_some_unit(cfg):
    if not (cfg.gea.node_unit or cfg.gea.edge_unit):
        return ('gea.node_unit and gea.edge_unit are both False: GEANet would '
                "do nothing; set one of them True, or use 'None' as the "
                "external branch of gt.layer_type (GEAET Table 4, row 'none')")
    return None


#: Options of the GEANet external branch (GEAET eq. 2-5); the ``parity_*``
#: switches reproduce the authors' public code where it differs from the
#: paper (all off = the paper).
GEA_OPTIONS = OptionGroup('gea', (
    Option('n_heads', 4, 'External attention heads H (GEAET Table 6 "External '
           'Heads"); divides gt.dim_hidden.', min=1, max=1024),
    Option('num_slots', 16, 'Slots S of every external unit (U_nk, U_nv, U_ek, U_ev '
           'in R^{S x d/H}), independent of d/H (see parity_slots_eq_head_dim).',
           min=1, max=2 ** 16, needs={'parity_slots_eq_head_dim': False},
           because='S = gt.dim_hidden / gea.n_heads',
           used=lambda cfg, dim: dim // cfg.gea.n_heads),
    Option('node_unit', True, 'External node units (GEAET Table 4 ablation; its '
           '"none" row is the external branch None in gt.layer_type).'),
    Option('edge_unit', True, 'External edge units (GEAET Table 4 ablation).'),
    Option('shared_unit', True, 'The unit U_s shared by nodes and edges (GEAET '
           'Table 4 ablation).'),
    Option('shared_width', 'full', "Shared unit U_s: 'full' = d x d before the head "
           "split (eq. 4), 'head' = d/H x d/H applied to every head.",
           choices=('full', 'head'), needs={'shared_unit': True},
           because='no shared unit'),
    Option('edge_norm', 'none', 'Norm on the new edge stream E_G = Norm(E + GEA(E)).',
           choices=('batch', 'layer', 'none'), needs={'edge_unit': True},
           because='GEANet leaves the edge stream alone'),
    Option('parity_batch_softmax', False, 'Parity: slot softmax over all nodes/edges '
           'of the mini-batch instead of over those of each graph (a graph\'s output '
           'then depends on its batch).', arg='batch_softmax'),
    Option('parity_slots_eq_head_dim', False, 'Parity: force S = d / H (the authors\' '
           '"Unit Size"), ignoring gea.num_slots.', arg=None),
    Option('parity_unit_bias', False, 'Parity: units and U_s are affine maps with '
           'biases.', arg='unit_bias'),
    Option('parity_no_out_proj', False, 'Parity: no output projections W_o (nodes) / '
           'W_eo (edges).', arg='out_proj', to_arg=operator.not_),
    Option('parity_strided_edge_heads', False, 'Parity: edge heads take channels h, '
           'h+H, h+2H, ... and the permutation is not undone when the heads are '
           'concatenated.', arg='strided_edge_heads', needs={'edge_unit': True},
           because='GEANet leaves the edge stream alone'),
    Option('parity_edge_no_skip', False, 'Parity: E_G = GEA(E) replaces the edge '
           'stream with no skip connection.', arg='edge_skip', to_arg=operator.not_,
           needs={'edge_unit': True}, because='GEANet leaves the edge stream alone'),
), 'the GEANet external branch (GEAET eq. 2-5)')

#: Options of the Graph Transformer branch of Dwivedi & Bresson (heads,
#: attention dropout, norm, residual and dropout come from ``gt.*``).
GTLAYER_OPTIONS = OptionGroup('gtlayer', (
    Option('full_graph', False, 'Attend over all other nodes of the graph (True) or '
           "over the graph neighbours only (False, the paper's sparse graph)."),
    Option('edge_features', False, 'Edge-feature layer (eq. 9-18): edge features '
           'modulate the scores and are updated by their own residual, norm and FFN '
           'stream.'),
    Option('parity_clamp_exp', False, 'Parity: exp(clamp(s, -5, 5)) / (sum + 1e-6) '
           "instead of a softmax, as the authors' code.", arg='clamp_exp'),
    Option('parity_no_eps', False, "Parity (node layer): divide without the 1e-6, as "
           "the authors' node layer (a node with no neighbour gives NaN).",
           arg='no_eps', needs={'parity_clamp_exp': True, 'edge_features': False},
           because='it applies to the node layer with exp-clamped scores'),
), 'the Graph Transformer branch of Dwivedi & Bresson')

#: Options of the Chromatic Self-Attention branch (CSA §3, eq. 5-9; heads and
#: attention dropout from ``gt.*``, the pair features from ``pairenc.*``).
CSA_OPTIONS = OptionGroup('csa', (
    Option('mono', False, 'CSA-mono: one scalar edge bias per head instead of one per '
           'channel.'),
    Option('share_edge_params', False, 'Share the edge maps W_EA, W_EV (and hence '
           'E^att, E^val) by all layers ("edge parameter sharing", CSA Appendix A / '
           'Table 6).'),
    Option('attn_dropout_mode', 'connection', 'What attention dropout silences, after '
           'the per-channel softmax: connection = whole pairs (i, j) for all channels '
           "(edge-ablation, the authors' configs), node = whole key nodes j, channel = "
           'single entries.', choices=('connection', 'node', 'channel'),
           needs={'gt.attn_dropout': Above(0)}, because='no attention dropout',
           in_file='warn'),
    Option('out_proj', True, "Output projection W_O (with bias) after the attention, "
           "as the authors' linear_attn; counted in the paper's parameter budgets "
           '(Table 6).'),
    Option('edge_value', True, 'The value-edge term E^val of eq. 7 (False: the "no '
           'edge value" rows of CSA Table 5; W_EV is then not built).'),
    Option('parity_edge_bias', False, "Parity: biases on the shared edge maps W_EA, "
           "W_EV as in the authors' SharedEdgeEncoder (the E^att bias cancels in the "
           'softmax).', arg='edge_bias', needs={'share_edge_params': True},
           because='the bias belongs to the shared edge maps'),
    Option('chunk_elems', 2 ** 26, 'Memory bound for large graphs: above this many '
           "entries of the filter tensors [g, n, n, H, C] of a batch's size blocks, the "
           'query rows are processed in chunks under activation checkpointing (same '
           'results; 0 = never).', min=0, max=2 ** 34),
), 'the Chromatic Self-Attention branch (CSA §3, eq. 5-9)')

#: Options of the Multi-Neighborhood Attention branch (MNA-GT §4, eq. 5-12;
#: the heads per kernel ``m`` are ``gt.n_heads``; the MNA-GT layer of eq.
#: 11-12 is the hybrid layer with ``gt.pre_norm True``, ``gt.norm layer``
#: and ``gt.act gelu``).
MNA_OPTIONS = OptionGroup('mna', (
    Option('hops', 2, 'Largest propagation step c: kernels (Â^k X, Â^k X, X) for '
           'k = 0..c, i.e. c + 1 attention kernels.', min=0, max=64),
    Option('adj_norm', 'sym', 'Normalisation of Â: sym = D^-1/2 (A+I) D^-1/2, rw = '
           'D^-1 (A+I).', choices=('sym', 'rw')),
    Option('fusion', 'adaptive', 'Fusion of the kernel outputs Z^k: adaptive (eq. '
           '9-10), or the Table 4 ablations sum, mean, concat (concatenation, then a '
           'linear map to d).', choices=('adaptive', 'sum', 'mean', 'concat')),
    Option('fusion_act', 'tanh', 'The activation sigma of eq. 10 (the paper does not '
           'name it).', choices=('tanh', 'sigmoid', 'relu', 'gelu', 'elu',
                                 'leaky_relu', 'identity'),
           needs={'fusion': 'adaptive'},
           because="the activation belongs to the 'adaptive' fusion of eq. 10"),
    Option('head_dim', 0, 'Width of each head; 0 means d / gt.n_heads.', min=0,
           max=2 ** 16, to_arg=lambda v: v or None),
), 'the Multi-Neighborhood Attention branch (MNA-GT §4, eq. 5-12)')

#: Shared keys of the attention branches.
_ATTENTION = {'heads': 'gt.n_heads', 'attn_dropout': 'gt.attn_dropout'}


#: Every branch of the package, one entry each.
CATALOGUE: List[Branch] = [
    Branch('GCN', 'graphgps_ext.layer.gcn:GCN', options=MPNN_OPTIONS),
    Branch('GIN', 'graphgps_ext.layer.gin:GIN', options=MPNN_OPTIONS),
    Branch('GINE', 'graphgps_ext.layer.gine:GINE', options=MPNN_OPTIONS),
    Branch('GatedGCN', 'graphgps_ext.layer.gatedgcn:GatedGCN', options=MPNN_OPTIONS,
           args={'dropout': lambda cfg, dim: branch_dropout(cfg, 'local'),
                 'edge_residual': 'gt.residual'}),
    Branch('GEANet', 'graphgps_ext.layer.gea:GEANet', options=GEA_OPTIONS,
           rules=(_gea_some_unit, ), record='gea/node_col', record_layout='slots',
           heads_key='gea.n_heads'),
    Branch('Transformer', 'graphgps_ext.layer.transformer:Transformer',
           args={'n_heads': 'gt.n_heads', 'attn_dropout': 'gt.attn_dropout',
                 'fused': 'gt.fused_attention'},
           attention=True, record='transformer', record_layout='dense',
           heads_key='gt.n_heads'),
    Branch('GT', 'graphgps_ext.layer.gt:GT', options=GTLAYER_OPTIONS,
           args={**_ATTENTION, 'dropout': 'gt.dropout', 'norm': 'gt.norm',
                 'residual': 'gt.residual'},
           attention=True, record='gt', record_layout='dense', heads_key='gt.n_heads'),
    Branch('CSA', 'graphgps_ext.layer.csa:CSA', options=CSA_OPTIONS,
           args={**_ATTENTION, 'pair_dim': WIDTH}, attention=True,
           pair_features=True, record='csa', record_layout='channels',
           heads_key='gt.n_heads'),
    Branch('MNA', 'graphgps_ext.layer.mna:MNA', options=MNA_OPTIONS,
           args={**_ATTENTION, 'fused': 'gt.fused_attention'}, attention=True,
           record='mna/alpha', record_layout='kernels', heads_key='gt.n_heads'),
]


def entry_of(cls) -> Branch:
    """The catalogue entry of a branch class (or of the nearest base class
    that has one)."""
    return entry_for_class(cls, {b.cls: b for b in CATALOGUE},
                           'branch catalogue (graphgps_ext.branches.CATALOGUE)')


def from_cfg(cls, cfg, dim: int):
    """``cls(dim, **arguments)`` with the arguments its catalogue entry reads
    from ``cfg``: its options (the values the run uses) and the shared keys
    of :attr:`Branch.args`. A branch class takes it as its class method:
    ``from_cfg = classmethod(graphgps_ext.branches.from_cfg)``."""
    return cls(dim, **entry_of(cls).arguments(cfg, dim))


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
