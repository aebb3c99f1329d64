r"""Config groups of the positional / structural / relative encodings.

Groups (GraphGPS key names where they exist):

- ``posenc_LapPE``: Laplacian eigenvector PE (:mod:`graphgps_ext.encoder.lap_pe`);
- ``posenc_EquivStableLapPE``: eigenvectors for the GatedGCN/GINE gate
  (:mod:`graphgps_ext.encoder.equiv_lap_pe`);
- ``posenc_RWSE``: random-walk return probabilities
  (:mod:`graphgps_ext.encoder.rwse`);
- ``pairenc``: dense pair features of CSA (:mod:`graphgps_ext.encoder.pair`);
- ``posenc``: how the precompute runs (cache, workers, threads).

Which node PEs are used: with ``dataset.node_encoder: True`` (GraphGPS
configs) the ``+``-separated ``dataset.node_encoder_name``
(``'TypeDictNode+RWSE'``; the type part may be ``default`` = the dataset's
own encoder); otherwise the dataset's own type encoder plus every PE group
with ``enable: True``. A PE named in ``node_encoder_name`` is precomputed
even if its ``enable`` flag is off.
"""
import re
from typing import Dict, List, Optional, Tuple

from graphgps_ext import branches
from graphgps_ext.branches import layer_type_of
from graphgps_ext.config import (at_most, bounded, choices, ignored, non_negative, positive,
                                 rule, volatile)

PE_NAMES = ('LapPE', 'EquivStableLapPE', 'RWSE')
#: The most random-walk steps of RWSE and of CSA's relative encoding.
RWSE_MAX_STEPS = 1000


def _eigen(cn, max_freqs: int):
    from yacs.config import CfgNode as CN
    cn.eigen = CN()
    # Laplacian: 'none' (D - A), 'sym' (I - D^-1/2 A D^-1/2), 'rw' (I - D^-1 A).
    cn.eigen.laplacian_norm = 'none'
    # Number of eigenpairs k kept (NaN-padded for graphs with fewer).
    cn.eigen.max_freqs = max_freqs
    # Drop the first (trivial, eigenvalue 0) eigenpair (GT).
    cn.eigen.skip_trivial = False


def posenc_cfg(cfg):
    from yacs.config import CfgNode as CN

    cfg.posenc_LapPE = CN()
    cfg.posenc_LapPE.enable = False
    # 'DeepSet' | 'Transformer' over (eigvec, eigval) pairs (GraphGPS), or
    # 'linear': W u_i on the eigenvectors (GT, usually with combine: add).
    cfg.posenc_LapPE.model = 'DeepSet'
    cfg.posenc_LapPE.dim_pe = 16
    cfg.posenc_LapPE.layers = 2
    cfg.posenc_LapPE.n_heads = 4
    cfg.posenc_LapPE.post_layers = 0
    # 'none' | 'BatchNorm' on the raw (eigvec, eigval) inputs.
    cfg.posenc_LapPE.raw_norm_type = 'none'
    # Also keep the PE as ``batch.pe_LapPE``.
    cfg.posenc_LapPE.pass_as_var = False
    # Random sign flip of every eigenvector of every graph (training only).
    cfg.posenc_LapPE.sign_flip = True
    # 'concat' (type part gets d - dim_pe) or 'add' (PE mapped to d and added).
    cfg.posenc_LapPE.combine = 'concat'
    _eigen(cfg.posenc_LapPE, 10)

    cfg.posenc_EquivStableLapPE = CN()
    cfg.posenc_EquivStableLapPE.enable = False
    # 'none': batch.pe_equiv = eigenvectors [N, k] (PEG); 'linear': W u_i [N, d]
    # (GraphGPS).
    cfg.posenc_EquivStableLapPE.model = 'none'
    cfg.posenc_EquivStableLapPE.raw_norm_type = 'none'
    _eigen(cfg.posenc_EquivStableLapPE, 8)

    cfg.posenc_RWSE = CN()
    cfg.posenc_RWSE.enable = False
    # 'linear' | 'mlp'.
    cfg.posenc_RWSE.model = 'linear'
    cfg.posenc_RWSE.dim_pe = 16
    cfg.posenc_RWSE.layers = 2
    cfg.posenc_RWSE.raw_norm_type = 'BatchNorm'
    cfg.posenc_RWSE.combine = 'concat'
    cfg.posenc_RWSE.kernel = CN()
    # Walk lengths k: an explicit list, or GraphGPS's 'range(a, b)' string
    # (used when non-empty).
    cfg.posenc_RWSE.kernel.times = []
    cfg.posenc_RWSE.kernel.times_func = 'range(1, 21)'

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


def _selected_pes(cfg) -> List[str]:
    try:
        return node_encoder_parts(cfg)[1]
    except ValueError:  # reported by load_cfg's encoder-name check
        return []


def _pe_widths(cfg):
    """Concatenated PEs take dim_pe channels each out of gt.dim_hidden."""
    pes = [p for p in _selected_pes(cfg) if p != 'EquivStableLapPE'
           and cfg[f'posenc_{p}'].combine == 'concat']
    width = sum(int(cfg[f'posenc_{p}'].dim_pe) for p in pes)
    if pes and width >= cfg.gt.dim_hidden:
        keys = ' + '.join(f'posenc_{p}.dim_pe' for p in pes)
        return (f'{keys} = {width} leaves no channel of gt.dim_hidden '
                f'{cfg.gt.dim_hidden} for the node type embedding (the PEs are '
                'concatenated to it); lower dim_pe, raise gt.dim_hidden or set '
                "combine 'add'")
    return None


def _lappe_heads(cfg):
    pc = cfg.posenc_LapPE
    if 'LapPE' in _selected_pes(cfg) and pc.model == 'Transformer':
        width = pc.dim_pe if pc.combine == 'concat' else cfg.gt.dim_hidden
        if width % pc.n_heads:
            return (f'posenc_LapPE.n_heads {pc.n_heads} does not divide the '
                    f'LapPE Transformer width {width} ('
                    + ('posenc_LapPE.dim_pe' if pc.combine == 'concat'
                       else 'gt.dim_hidden, combine add') + ')')
    return None


def _rwse_times(cfg):
    if 'RWSE' not in _selected_pes(cfg):
        return None
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


def _pe_used(name):
    return lambda cfg: name in _selected_pes(cfg)


def declare():
    """Declare the checks of the ``posenc`` keys (and of ``posenc_*`` and
    ``pairenc``)."""
    for group in ('posenc_LapPE', 'posenc_EquivStableLapPE'):
        choices(f'{group}.eigen.laplacian_norm', ['none', 'sym', 'rw'])
        choices(f'{group}.raw_norm_type', ['none', 'BatchNorm', 'batchnorm'])
    choices('posenc_LapPE.model', ['DeepSet', 'Transformer', 'linear'])
    choices('posenc_LapPE.combine', ['concat', 'add'])
    choices('posenc_EquivStableLapPE.model', ['none', 'linear'])
    choices('posenc_RWSE.model', ['linear', 'mlp'])
    choices('posenc_RWSE.raw_norm_type', ['none', 'BatchNorm', 'batchnorm'])
    choices('posenc_RWSE.combine', ['concat', 'add'])
    choices('pairenc.rpe', ['rwse', 'spd', 'none'])
    choices('pairenc.combine', ['concat', 'add'])
    choices('pairenc.ring_mode', ['categorical', 'boolean', 'additive'])
    # How the encodings are computed and cached, not what they are.
    volatile('posenc.*')
    positive('posenc_LapPE.dim_pe', 'posenc_LapPE.layers', 'posenc_LapPE.n_heads',
             'posenc_LapPE.eigen.max_freqs', 'posenc_EquivStableLapPE.eigen.max_freqs',
             'posenc_RWSE.dim_pe', 'posenc_RWSE.layers', 'pairenc.steps',
             'posenc.blas_threads')
    non_negative('posenc_LapPE.post_layers', 'pairenc.dim_rpe', 'posenc.num_workers')
    bounded('pairenc.ring_max_size', lambda v: v >= 3, '>= 3 (a ring has 3 atoms or more)')
    at_most(2 ** 16, 'posenc_LapPE.dim_pe', 'posenc_RWSE.dim_pe', 'pairenc.dim_rpe')
    at_most(100, 'posenc_LapPE.layers', 'posenc_LapPE.post_layers', 'posenc_RWSE.layers')
    at_most(1024, 'posenc_LapPE.n_heads', 'posenc.num_workers', 'posenc.blas_threads')
    at_most(RWSE_MAX_STEPS, 'pairenc.steps')
    at_most(10_000, 'posenc_LapPE.eigen.max_freqs', 'posenc_EquivStableLapPE.eigen.max_freqs')
    at_most(1000, 'pairenc.ring_max_size')
    rule(_pe_widths)
    rule(_lappe_heads)
    rule(_rwse_times)
    for name in PE_NAMES:
        ignored(f'posenc_{name}.enable', unless=_pe_used(name),
                why=lambda cfg: "dataset.node_encoder is True, so the PEs are those "
                                "named in dataset.node_encoder_name "
                                f"'{cfg.dataset.node_encoder_name}'")
        ignored(f'posenc_{name}.*', unless=_pe_used(name),
                why=(f'{name} is not selected: add it to dataset.node_encoder_name '
                     f'(dataset.node_encoder True) or set posenc_{name}.enable True'),
                in_file='warn')
    ignored('posenc_RWSE.kernel.times_func',
            unless=lambda cfg: not cfg.posenc_RWSE.kernel.times,
            why='posenc_RWSE.kernel.times is set and wins')
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
    r"""``(type encoder name, [PE names])`` selected by the config.

    ``default_type`` replaces a ``default`` (or missing) type part.
    """
    ds = cfg.dataset
    if bool(getattr(ds, 'node_encoder', False)):
        parts = [p.strip() for p in str(ds.node_encoder_name).split('+') if p.strip()]
        pes = [p for p in parts if p in PE_NAMES]
        types = [p for p in parts if p not in PE_NAMES]
        if len(types) > 1:
            raise ValueError(
                f"dataset.node_encoder_name '{ds.node_encoder_name}' names "
                f"several type encoders {types}; use one type encoder followed "
                f"by PE encoders ({', '.join(PE_NAMES)}), e.g. 'TypeDictNode+RWSE'")
        type_name = types[0] if types else 'default'
    else:
        pes = [p for p in PE_NAMES if cfg[f'posenc_{p}'].enable]
        type_name = 'default'
    if type_name == 'default':
        type_name = default_type
    return type_name, pes


def pair_encoder_needed(cfg) -> bool:
    """``pairenc.enable``, or a branch of ``gt.layer_type`` that the branch
    catalogue declares to read pair features (CSA)."""
    layer_type = layer_type_of(cfg)
    return bool(cfg.pairenc.enable) or (
        layer_type is not None
        and layer_type.has(*branches.names(pair_features=True)))


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
    k = cfg.posenc_RWSE.kernel
    return parse_times(list(k.times), str(k.times_func) if not k.times else '')


def wanted_encodings(cfg) -> Dict[str, dict]:
    r"""``{kind: params}`` of everything the precompute must attach.

    ``params`` hold exactly what changes the values (they key the cache).
    """
    _, pes = node_encoder_parts(cfg)
    out: Dict[str, dict] = {}

    def eig(group):
        e = cfg[group].eigen
        return {'k': int(e.max_freqs), 'norm': str(e.laplacian_norm),
                'skip_trivial': bool(e.skip_trivial)}

    if 'LapPE' in pes:
        out['lappe'] = eig('posenc_LapPE')
    if 'EquivStableLapPE' in pes:
        out['eslappe'] = eig('posenc_EquivStableLapPE')
    if 'RWSE' in pes:
        out['rwse'] = {'times': rwse_times(cfg)}
    if pair_encoder_needed(cfg):
        pe = cfg.pairenc
        if not pe.on_the_fly and pe.rpe != 'none':
            out[f'pair_{pe.rpe}'] = {'steps': int(pe.steps)}
        if pe.rings:
            out['rings'] = {'max_size': int(pe.ring_max_size)}
    return out
