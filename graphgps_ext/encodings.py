r"""The encoding catalogue: every precomputed positional, structural and
relative encoding, declared once.

An entry of :data:`ENCODINGS` says what an encoding precomputes (its
``kind``, the function that computes it, whether that function works on
the dense adjacency of a group of equal-size graphs, in the one pass over a
dataset's size groups), and, for a node encoding, its node encoder and its
options (the config group ``posenc_<name>``). Everything else derives from
these entries: the ``posenc_*`` config groups with their checks
(:mod:`graphgps_ext.config.posenc`), the names ``dataset.node_encoder_name``
takes, what the precompute attaches for a config
(:func:`graphgps_ext.config.posenc.wanted_encodings`), the precompute table
(:mod:`graphgps_ext.transform.precompute`) and the encoder lookup with each
encoder's ``from_cfg`` (:mod:`graphgps_ext.encoder`).

A compute function is, for a dense encoding, ``fn(adj, memo, **params)``:
``adj`` ``[G, n, n]`` counting adjacency of ``G`` graphs of ``n`` nodes
(float64), ``memo`` a dict shared by the encodings of the group (for work
they share, e.g. one eigendecomposition), returning ``{attribute: [G, n,
...]}`` (node attributes) or a :class:`~graphgps_ext.transform.dense.Pairs`
(pair attributes); otherwise ``fn(store, num_workers, progress, **params)
-> {attribute: (values, ptr)}`` on the whole
:class:`~graphgps_ext.transform.dense.GraphStore`. ``params`` are exactly
what changes the values (they key the on-disk cache).

Adding an encoding: its module (the compute function and, for a node
encoding, its encoder class with ``from_cfg =
classmethod(graphgps_ext.encodings.from_cfg)``) and one entry here.

Plain Python on the package's ground floor.
"""
import importlib
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from graphgps_ext import branches
from graphgps_ext.options import WIDTH, Option, OptionGroup, entry_for_class, resolve

#: The most random-walk steps of RWSE and of CSA's relative encoding.
RWSE_MAX_STEPS = 1000
#: ``raw_norm_type`` values (GraphGPS spells BatchNorm both ways).
RAW_NORMS = ('none', 'BatchNorm', 'batchnorm')

#: The options of every node encoding's group: whether it is used
#: (``dataset.node_encoder: False``), and for one whose encoder's output
#: joins the node embedding, its width and how it joins.
ENABLE = Option('enable', False, 'Use the encoding (with dataset.node_encoder False; '
                'with True, dataset.node_encoder_name selects the encodings).', arg=None)
DIM_PE = Option('dim_pe', 16, 'Width of the encoding in the node embedding (with '
                'combine concat).', min=1, max=2 ** 16, arg=None)
COMBINE = Option('combine', 'concat', "'concat': dim_pe of gt.dim_hidden's channels "
                 "(the type embedding gets the rest); 'add': mapped to gt.dim_hidden "
                 'and added.', choices=('concat', 'add'), arg=None)


def _raw_norm(value) -> bool:
    return str(value).lower() == 'batchnorm'


def parse_times(times: List[int], times_func: str = '') -> List[int]:
    r"""The RWSE step list from ``kernel.times`` or a GraphGPS-style
    ``kernel.times_func`` string ``'range(a, b[, step])'``."""
    if times_func:
        m = re.fullmatch(r'\s*range\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?(?:,\s*(\d+)\s*)?\)\s*',
                         times_func)
        if m is None:
            raise ValueError(f"kernel.times_func '{times_func}' must look like "
                             "'range(1, 21)'")
        args = [int(a) for a in m.groups() if a is not None]
        if len(range(*args)) > RWSE_MAX_STEPS:
            raise ValueError(f"kernel.times_func '{times_func}' gives "
                             f'{len(range(*args)):,} walk lengths; at most '
                             f'{RWSE_MAX_STEPS:,}')
        return list(range(*args))
    return [int(t) for t in times]


def rwse_times(cfg) -> List[int]:
    """The walk lengths of ``posenc_RWSE``."""
    k = cfg.posenc_RWSE.kernel
    return parse_times(list(k.times), str(k.times_func) if not k.times else '')


def _rwse_times_rule(cfg):
    try:
        times = rwse_times(cfg)
    except ValueError as err:
        return f'posenc_RWSE.kernel: {err}'
    if not times or min(times) < 1:
        return (f'posenc_RWSE.kernel gives the walk lengths {times}: they must be '
                "non-empty and >= 1, e.g. times_func 'range(1, 21)'")
    if len(times) > RWSE_MAX_STEPS or max(times) > RWSE_MAX_STEPS:
        return (f'posenc_RWSE.kernel gives {len(times):,} walk lengths up to '
                f'{max(times):,}: at most {RWSE_MAX_STEPS:,} of them, each at most '
                f"{RWSE_MAX_STEPS:,} steps, e.g. times_func 'range(1, 21)'")
    return None


def _lappe_heads_rule(cfg):
    pc = cfg.posenc_LapPE
    if pc.model == 'Transformer':
        width = pc.dim_pe if pc.combine == 'concat' else cfg.gt.dim_hidden
        if width % pc.n_heads:
            return (f'posenc_LapPE.n_heads {pc.n_heads} does not divide the '
                    f'LapPE Transformer width {width} ('
                    + ('posenc_LapPE.dim_pe' if pc.combine == 'concat'
                       else 'gt.dim_hidden, combine add') + ')')
    return None


def pair_encoder_needed(cfg) -> bool:
    """``pairenc.enable``, or a branch of ``gt.layer_type`` that the branch
    catalogue declares to read pair features (CSA)."""
    layer_type = branches.layer_type_of(cfg)
    return bool(cfg.pairenc.enable) or (
        layer_type is not None
        and layer_type.has(*branches.names(pair_features=True)))


@dataclass(frozen=True, eq=False)
class Encoding:
    """What is declared once about an encoding.

    Attributes:
        name: its name (in ``dataset.node_encoder_name`` and its group
            ``posenc_<name>``, for a node encoding).
        kind: what the precompute calls it (and names its cache files).
        compute: ``'module:function'`` that computes it (see the module
            docstring).
        help: what it is (one line).
        dense: computed per group of equal-size graphs from their dense
            adjacency, in the one pass that all dense encodings share.
        encoder: ``'module:Class'`` of its node encoder, or ``None`` (an
            encoding read by another module, e.g. the pair encoder).
        embeds: its encoder's output joins the node embedding (options
            ``dim_pe``, ``combine``); ``False``: the encoder prepares inputs
            of the layers and returns ``None``.
        options: the options of its group beside ``enable`` (and ``dim_pe``,
            ``combine`` when it embeds); an option with a ``param`` enters
            what is precomputed, one with an ``arg`` the encoder.
        encoder_args: encoder arguments read from elsewhere: ``{argument:
            dotted key | fn(cfg, dim) | WIDTH}``; the width the encoder is
            built with goes to ``dim_out`` unless one is ``WIDTH``.
        params: ``params(cfg) -> dict`` of what changes the values, where
            the options' ``param`` do not say it.
        rpe: for an encoding without a node encoder, the value of
            ``pairenc.rpe`` that stores it (when ``pairenc.on_the_fly`` is
            off), or ``None``.
        selected: for an encoding without a node encoder and without
            ``rpe``: ``selected(cfg) -> bool``.
        rules: checks across its options, ``fn(cfg) -> message or None``
            (run when it is selected).
        width: ``width(params) -> int``, the values it stores per node (per
            node pair for an encoding stored per pair, ``rpe``), from what is
            precomputed; ``None``: not estimated before it is computed.
        size_key: the config key that sets ``width`` (named when the
            encoding would not fit in memory).
    """
    name: str
    kind: str
    compute: str
    help: str = ''
    dense: bool = True
    encoder: Optional[str] = None
    embeds: bool = True
    options: Tuple[Option, ...] = ()
    encoder_args: Mapping[str, Any] = field(default_factory=dict)
    params: Optional[Callable[[Any], Dict[str, Any]]] = None
    rpe: Optional[str] = None
    selected: Optional[Callable[[Any], bool]] = None
    rules: Tuple[Callable, ...] = ()
    width: Optional[Callable[[Dict[str, Any]], int]] = None
    size_key: str = ''

    def __post_init__(self):
        if (self.encoder is None) == (self.rpe is None and self.selected is None):
            raise ValueError(f'encoding {self.name}: give a node encoder, or (for an '
                             'encoding another module reads) rpe or selected')

    @cached_property
    def group(self) -> Optional[OptionGroup]:
        """Its config group ``posenc_<name>`` (a node encoding), or ``None``."""
        if self.encoder is None:
            return None
        standard = (ENABLE, DIM_PE, COMBINE) if self.embeds else (ENABLE, )
        return OptionGroup(f'posenc_{self.name}', standard + tuple(self.options),
                           self.help)

    def function(self) -> Callable:
        """Its compute function."""
        return _load(self.compute)

    def load(self):
        """Its node encoder class."""
        return _load(self.encoder)

    def parameters(self, cfg) -> Dict[str, Any]:
        """What changes its values, read from ``cfg`` (the cache key)."""
        if self.params is not None:
            return self.params(cfg)
        return self.group.params(cfg)

    def arguments(self, cfg, dim: int) -> Dict[str, Any]:
        """Its encoder's keyword arguments from ``cfg``, built ``dim`` wide."""
        args = dict(self.encoder_args)
        if not any(v is WIDTH for v in args.values()):
            args['dim_out'] = WIDTH
        out = resolve(args, cfg, dim)
        out.update(self.group.arguments(cfg, dim))
        return out


def _load(path: str):
    module, _, name = path.partition(':')
    return getattr(importlib.import_module(module), name)


#: Every encoding of the package, one entry each, in the order the
#: precompute attaches them.
ENCODINGS: List[Encoding] = [
    Encoding(
        'LapPE', 'lappe', 'graphgps_ext.transform.lappe:lappe_nodes',
        help='Laplacian eigenvector PE (GraphGPS LapPE; GT linear LapPE)',
        encoder='graphgps_ext.encoder.lap_pe:LapPE',
        options=(
            Option('model', 'DeepSet', "'DeepSet' | 'Transformer' over (eigvec, eigval) "
                   "pairs (GraphGPS), or 'linear': W u_i on the eigenvectors (GT, "
                   'usually with combine add).', choices=('DeepSet', 'Transformer', 'linear')),
            Option('layers', 2, 'Layers of the DeepSet / Transformer.', min=1, max=100),
            Option('n_heads', 4, 'Heads of the Transformer.', min=1, max=1024),
            Option('post_layers', 0, 'Layers of the MLP after the pooling.', min=0,
                   max=100),
            Option('raw_norm_type', 'none', "'none' | 'BatchNorm' on the raw "
                   '(eigvec, eigval) inputs.', choices=RAW_NORMS, arg='raw_norm',
                   to_arg=_raw_norm),
            Option('pass_as_var', False, 'Also keep the PE as batch.pe_LapPE.'),
            Option('sign_flip', True, 'Random sign flip of every eigenvector of every '
                   'graph (training only).'),
            Option('eigen.laplacian_norm', 'none', "Laplacian: 'none' (D - A), 'sym' "
                   "(I - D^-1/2 A D^-1/2), 'rw' (I - D^-1 A).",
                   choices=('none', 'sym', 'rw'), arg=None, param='norm'),
            Option('eigen.max_freqs', 10, 'Number of eigenpairs k kept (NaN-padded for '
                   'graphs with fewer).', min=1, max=10_000, param='k'),
            Option('eigen.skip_trivial', False, 'Drop the first (trivial, eigenvalue 0) '
                   'eigenpair (GT).', arg=None, param='skip_trivial'),
        ),
        rules=(_lappe_heads_rule, ),
        width=lambda p: 2 * p['k'], size_key='posenc_LapPE.eigen.max_freqs'),
    Encoding(
        'EquivStableLapPE', 'eslappe', 'graphgps_ext.transform.lappe:eslappe_nodes',
        help='eigenvectors for the GatedGCN/GINE gate (PEG; GraphGPS EquivStableLapPE)',
        encoder='graphgps_ext.encoder.equiv_lap_pe:EquivStableLapPE', embeds=False,
        encoder_args={'dim': WIDTH},
        options=(
            Option('model', 'none', "'none': batch.pe_equiv = eigenvectors [N, k] (PEG); "
                   "'linear': W u_i [N, d] (GraphGPS).", choices=('none', 'linear')),
            Option('raw_norm_type', 'none', "'none' | 'BatchNorm' on the eigenvectors.",
                   choices=RAW_NORMS, arg='raw_norm', to_arg=_raw_norm),
            Option('eigen.laplacian_norm', 'none', "Laplacian: 'none' (D - A), 'sym' "
                   "(I - D^-1/2 A D^-1/2), 'rw' (I - D^-1 A).",
                   choices=('none', 'sym', 'rw'), arg=None, param='norm'),
            Option('eigen.max_freqs', 8, 'Number of eigenpairs k kept (NaN-padded for '
                   'graphs with fewer).', min=1, max=10_000, param='k'),
            Option('eigen.skip_trivial', False, 'Drop the first (trivial, eigenvalue 0) '
                   'eigenpair.', arg=None, param='skip_trivial'),
        ),
        width=lambda p: p['k'], size_key='posenc_EquivStableLapPE.eigen.max_freqs'),
    Encoding(
        'RWSE', 'rwse', 'graphgps_ext.transform.rwse:rwse_nodes',
        help='random-walk return probabilities (GraphGPS RWSE)',
        encoder='graphgps_ext.encoder.rwse:RWSE',
        encoder_args={'num_steps': lambda cfg, dim: len(rwse_times(cfg))},
        params=lambda cfg: {'times': rwse_times(cfg)},
        options=(
            Option('model', 'linear', "'linear' | 'mlp'.", choices=('linear', 'mlp')),
            Option('layers', 2, 'Layers of the MLP.', min=1, max=100),
            Option('raw_norm_type', 'BatchNorm', "'none' | 'BatchNorm' on the raw "
                   'return probabilities.', choices=RAW_NORMS, arg='raw_norm',
                   to_arg=_raw_norm),
            Option('kernel.times', (), 'Walk lengths k (used when non-empty).', arg=None),
            Option('kernel.times_func', 'range(1, 21)', "Walk lengths as GraphGPS's "
                   "'range(a, b)' string.", arg=None, needs={'kernel.times': []},
                   because='an explicit list of walk lengths wins'),
        ),
        rules=(_rwse_times_rule, ),
        width=lambda p: len(p['times']), size_key='posenc_RWSE.kernel'),
    Encoding(
        'EdgeRWSE', 'pair_rwse', 'graphgps_ext.transform.edge_rwse:pair_rwse_pairs',
        help="random-walk probabilities of node pairs (CSA's Edge-RWSE), stored",
        rpe='rwse', params=lambda cfg: {'steps': int(cfg.pairenc.steps)},
        width=lambda p: p['steps'], size_key='pairenc.steps'),
    Encoding(
        'SPD', 'pair_spd', 'graphgps_ext.transform.spd:pair_spd_pairs',
        help="shortest-path distances of node pairs (CSA's SPDE), stored",
        rpe='spd', params=lambda cfg: {'steps': int(cfg.pairenc.steps)},
        width=lambda p: 1, size_key='pairenc.steps'),
    Encoding(
        'Rings', 'rings', 'graphgps_ext.transform.rings:rings_entry', dense=False,
        help="node pairs on a common chordless cycle (CSA §3.4)",
        selected=lambda cfg: pair_encoder_needed(cfg) and bool(cfg.pairenc.rings),
        params=lambda cfg: {'max_size': int(cfg.pairenc.ring_max_size)}),
]


def catalogue() -> Dict[str, Encoding]:
    """``{name: Encoding}`` of :data:`ENCODINGS` (read at call time)."""
    out: Dict[str, Encoding] = {}
    kinds = set()
    for entry in ENCODINGS:
        if entry.name in out or entry.kind in kinds:
            raise ValueError(f"encoding '{entry.name}' ({entry.kind}) is declared twice")
        out[entry.name] = entry
        kinds.add(entry.kind)
    return out


def by_kind() -> Dict[str, Encoding]:
    """``{kind: Encoding}``: the precompute table."""
    return {e.kind: e for e in catalogue().values()}


def node_encodings() -> Dict[str, Encoding]:
    """``{name: Encoding}`` of the encodings with a node encoder."""
    return {n: e for n, e in catalogue().items() if e.encoder is not None}


def entry_of(cls) -> Encoding:
    """The catalogue entry of a node encoder class (or of the nearest base
    class that has one)."""
    return entry_for_class(cls, {e.encoder: e for e in ENCODINGS if e.encoder is not None},
                           'encoding catalogue (graphgps_ext.encodings.ENCODINGS)')


def from_cfg(cls, cfg, task, dim: int):
    """``cls(**arguments)`` with the arguments its catalogue entry reads from
    ``cfg``, built ``dim`` wide. A node encoder class takes it as its class
    method: ``from_cfg = classmethod(graphgps_ext.encodings.from_cfg)``."""
    return cls(**entry_of(cls).arguments(cfg, dim))
