r"""Config of the encodings: how they are selected and precomputed.

The groups ``posenc_<name>`` of the node encodings (``posenc_LapPE``,
``posenc_EquivStableLapPE``, ``posenc_RWSE``, ...) derive from the encoding
catalogue (:mod:`graphgps_ext.encodings`: one entry per encoding, with its
options; :mod:`graphgps_ext.config.options`). This module's group adds

- ``pairenc``: the dense pair features of CSA (:mod:`graphgps_ext.encoder.pair`);
- ``posenc``: how the precompute runs (cache, workers, threads);

and declares the checks across encodings. Which node encodings are used:
with ``dataset.node_encoder: True`` (GraphGPS configs) those named in the
``+``-separated ``dataset.node_encoder_name`` (``'TypeDictNode+RWSE'``; the
type part may be ``default`` = the dataset's own encoder); otherwise the
dataset's own type encoder plus every encoding group with ``enable: True``.
An encoding named in ``node_encoder_name`` is precomputed even if its
``enable`` flag is off.
"""
from typing import Callable, Dict, List, Optional, Tuple

from graphgps_ext import encodings
from graphgps_ext.config.rules import (at_most, bounded, choices, ignored, non_negative,
                                       positive, rule, volatile)
from graphgps_ext.encodings import (RWSE_MAX_STEPS, pair_encoder_needed,  # noqa: F401
                                    parse_times, rwse_times)


def pe_names() -> Tuple[str, ...]:
    """The names of the node encodings (those ``dataset.node_encoder_name``
    takes beside a type encoder), in catalogue order."""
    return tuple(encodings.node_encodings())


def posenc_cfg(cfg):
    from yacs.config import CfgNode as CN

    cfg.pairenc = CN()
    # Build the pair encoder even without a CSA branch (it is built whenever
    # gt.layer_type contains CSA).
    cfg.pairenc.enable = False
    # Relative encoding: 'rwse' (Edge-RWSE, eq. 12), 'spd' (SPDE, eq. 11), 'none'.
    cfg.pairenc.rpe = 'rwse'
    # p: walk steps 1..p (rwse) or largest distance with its own type (spd).
    cfg.pairenc.steps = 16
    # Width of the RPE part when combine='concat' (0 -> d // 2).
    cfg.pairenc.dim_rpe = 0
    # E^(0) = E^bond || E^RPE ('concat', eq. 9) or E^bond + E^RPE ('add').
    cfg.pairenc.combine = 'concat'
    # Ring relation (CSA §3.4).
    cfg.pairenc.rings = False
    cfg.pairenc.ring_max_size = 18
    # 'categorical' (Cartesian product with the bond categories), 'boolean'
    # (Embed(1[i~j]) added) or 'additive' (authors' code: ring&bonded,
    # ring&not-bonded embeddings added).
    cfg.pairenc.ring_mode = 'categorical'
    # Compute RW/SPD per batch on the model's device from the dense adjacency
    # instead of storing n^2 p values per graph.
    cfg.pairenc.on_the_fly = True

    cfg.posenc = CN()
    # Cache precomputed encodings on disk (keyed by data and parameters).
    cfg.posenc.cache = True
    # Worker processes for the precompute (0: in-process).
    cfg.posenc.num_workers = 0
    # BLAS / torch threads during the precompute (numpy/OpenBLAS and torch
    # pools fight over the cores when both are multi-threaded).
    cfg.posenc.blas_threads = 1
    # tqdm progress bar (only shown on a TTY).
    cfg.posenc.progress = True


def encodings_cfg(cfg):
    """Every key of the encodings: the node encodings' groups
    (``posenc_<name>``, from the catalogue) and this module's (``pairenc``,
    ``posenc``); for code that builds a config without the registry."""
    for entry in encodings.node_encodings().values():
        entry.group(cfg)
    posenc_cfg(cfg)


def _selected_pes(cfg) -> List[str]:
    try:
        return node_encoder_parts(cfg)[1]
    except ValueError:  # reported by load_cfg's encoder-name check
        return []


def pe_selected(name: str) -> Callable:
    """``fn(cfg)``: whether the node encoding ``name`` is selected."""
    return lambda cfg: name in _selected_pes(cfg)


def _pe_widths(cfg):
    """Concatenated PEs take dim_pe channels each out of gt.dim_hidden."""
    table = encodings.node_encodings()
    groups = [table[p].group.name for p in _selected_pes(cfg) if table[p].embeds]
    groups = [g for g in groups if cfg[g].combine == 'concat']
    width = sum(int(cfg[g].dim_pe) for g in groups)
    if groups and width >= cfg.gt.dim_hidden:
        keys = ' + '.join(f'{g}.dim_pe' for g in groups)
        return (f'{keys} = {width} leaves no channel of gt.dim_hidden '
                f'{cfg.gt.dim_hidden} for the node type embedding (the PEs are '
                'concatenated to it); lower dim_pe, raise gt.dim_hidden or set '
                "combine 'add'")
    return None


def rpe_values() -> Tuple[str, ...]:
    """The values of ``pairenc.rpe``: the relative encodings of the
    catalogue, and ``'none'``."""
    return tuple(e.rpe for e in encodings.ENCODINGS if e.rpe is not None) + ('none', )


def declare():
    """Declare the checks of the ``pairenc`` and ``posenc`` keys, and those
    across the node encodings."""
    choices('pairenc.rpe', rpe_values())
    choices('pairenc.combine', ['concat', 'add'])
    choices('pairenc.ring_mode', ['categorical', 'boolean', 'additive'])
    # How the encodings are computed and cached, not what they are.
    volatile('posenc.*')
    positive('pairenc.steps', 'posenc.blas_threads')
    non_negative('pairenc.dim_rpe', 'posenc.num_workers')
    bounded('pairenc.ring_max_size', lambda v: v >= 3, '>= 3 (a ring has 3 atoms or more)')
    at_most(2 ** 16, 'pairenc.dim_rpe')
    at_most(1024, 'posenc.num_workers', 'posenc.blas_threads')
    at_most(RWSE_MAX_STEPS, 'pairenc.steps')
    at_most(1000, 'pairenc.ring_max_size')
    rule(_pe_widths)
    ignored('pairenc.*', unless=lambda cfg: pair_encoder_needed(cfg),
            why="gt.layer_type has no CSA branch and pairenc.enable is False",
            in_file='warn')
    ignored('pairenc.ring_max_size', 'pairenc.ring_mode',
            unless=lambda cfg: cfg.pairenc.rings, why='pairenc.rings is False')
    ignored('pairenc.dim_rpe', unless=lambda cfg: cfg.pairenc.combine == 'concat'
            and cfg.pairenc.rpe != 'none',
            why="it is the width of the concatenated RPE part (pairenc.combine "
                "'concat', pairenc.rpe not 'none')")
    ignored('pairenc.steps', 'pairenc.on_the_fly',
            unless=lambda cfg: cfg.pairenc.rpe != 'none', why="pairenc.rpe is 'none'")


def node_encoder_parts(cfg, default_type: Optional[str] = None
                       ) -> Tuple[Optional[str], List[str]]:
    r"""``(type encoder name, [node encoding names])`` selected by the config.

    ``default_type`` replaces a ``default`` (or missing) type part.
    """
    ds = cfg.dataset
    names = pe_names()
    if bool(getattr(ds, 'node_encoder', False)):
        parts = [p.strip() for p in str(ds.node_encoder_name).split('+') if p.strip()]
        pes = [p for p in parts if p in names]
        types = [p for p in parts if p not in names]
        if len(types) > 1:
            raise ValueError(
                f"dataset.node_encoder_name '{ds.node_encoder_name}' names "
                f"several type encoders {types}; use one type encoder followed "
                f"by PE encoders ({', '.join(names)}), e.g. 'TypeDictNode+RWSE'")
        type_name = types[0] if types else 'default'
    else:
        table = encodings.node_encodings()
        pes = [p for p in names if cfg[table[p].group.name].enable]
        type_name = 'default'
    if type_name == 'default':
        type_name = default_type
    return type_name, pes


def wanted_encodings(cfg) -> Dict[str, dict]:
    r"""``{kind: params}`` of everything the precompute must attach, in
    catalogue order: the selected node encodings, and what the pair encoder
    reads from storage (its relative encoding, unless computed on the fly;
    rings).

    ``params`` hold exactly what changes the values (they key the cache).
    """
    _, pes = node_encoder_parts(cfg)
    pairs = pair_encoder_needed(cfg)
    out: Dict[str, dict] = {}
    for entry in encodings.ENCODINGS:
        if entry.encoder is not None:
            wanted = entry.name in pes
        elif entry.rpe is not None:
            pe = cfg.pairenc
            wanted = pairs and not pe.on_the_fly and pe.rpe == entry.rpe
        else:
            wanted = pairs and entry.selected(cfg)
        if wanted:
            out[entry.kind] = entry.parameters(cfg)
    return out
