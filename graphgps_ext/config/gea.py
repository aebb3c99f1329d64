"""Config group ``gea``: the GEANet external branch (:mod:`graphgps_ext.layer.gea`).

Defaults follow the GEAET paper (eq. 2-5). The ``parity_*`` switches reproduce
the authors' public code where it differs from the paper; they are
off by default.
"""
from graphgps_ext.config import (at_most, choices, has_branch, ignored, positive,
                                 rule)


def gea_cfg(cfg):
    from yacs.config import CfgNode as CN
    cfg.gea = CN()
    # External attention heads H (GEAET Table 6 "External Heads"); divides d.
    cfg.gea.n_heads = 4
    # Slots S of every external unit (U_nk, U_nv, U_ek, U_ev in R^{S x d/H}),
    # independent of d/H (see parity_slots_eq_head_dim).
    cfg.gea.num_slots = 16
    # GEAET Table 4 ablation: external node units, edge units, shared unit.
    # Table 4's "none" row is the external branch 'None' in gt.layer_type.
    cfg.gea.node_unit = True
    cfg.gea.edge_unit = True
    cfg.gea.shared_unit = True
    # Shared unit U_s: 'full' = d x d before the head split (eq. 4),
    # 'head' = d/H x d/H applied to every head (like the other units).
    cfg.gea.shared_width = 'full'
    # Norm on the new edge stream E_G = Norm(E + GEA(E)): batch | layer | none.
    cfg.gea.edge_norm = 'none'
    # --- Parity with the authors' code (all off = the paper) ---
    # Slot softmax over all nodes/edges of the mini-batch instead of over the
    # nodes/edges of each graph (a graph's output then depends on its batch).
    cfg.gea.parity_batch_softmax = False
    # Force S = d / H (the authors' "Unit Size"), ignoring gea.num_slots.
    cfg.gea.parity_slots_eq_head_dim = False
    # Units and U_s are affine maps with biases.
    cfg.gea.parity_unit_bias = False
    # No output projections W_o (nodes) / W_eo (edges).
    cfg.gea.parity_no_out_proj = False
    # Edge heads take channels h, h+H, h+2H, ... and the permutation is not
    # undone when the heads are concatenated.
    cfg.gea.parity_strided_edge_heads = False
    # E_G = GEA(E) replaces the edge stream with no skip connection.
    cfg.gea.parity_edge_no_skip = False


def _gea(cfg) -> bool:
    return has_branch(cfg, 'GEANet')


def _some_unit(cfg):
    if _gea(cfg) and not (cfg.gea.node_unit or cfg.gea.edge_unit):
        return ('gea.node_unit and gea.edge_unit are both False: GEANet would '
                "do nothing; set one of them True, or use 'None' as the "
                "external branch of gt.layer_type (GEAET Table 4, row 'none')")
    return None


def declare():
    """Declare the checks of the ``gea`` keys."""
    choices('gea.shared_width', ['full', 'head'])
    choices('gea.edge_norm', ['batch', 'layer', 'none'])
    positive('gea.n_heads', 'gea.num_slots')
    at_most(1024, 'gea.n_heads')
    at_most(2 ** 16, 'gea.num_slots')
    rule(_some_unit)
    ignored('gea.*', unless=_gea,
            why=lambda cfg: f"gt.layer_type '{cfg.gt.layer_type}' has no GEANet "
                            'branch', in_file='warn')
    ignored('gea.num_slots', unless=lambda cfg: not cfg.gea.parity_slots_eq_head_dim,
            used=lambda cfg: cfg.gt.dim_hidden // cfg.gea.n_heads,
            why='gea.parity_slots_eq_head_dim is True, so S = gt.dim_hidden / '
                'gea.n_heads', fix='set gea.parity_slots_eq_head_dim False')
    ignored('gea.shared_width', unless=lambda cfg: cfg.gea.shared_unit,
            why='gea.shared_unit is False (no shared unit)',
            fix='set gea.shared_unit True')
    ignored('gea.edge_norm', 'gea.parity_strided_edge_heads',
            'gea.parity_edge_no_skip', unless=lambda cfg: cfg.gea.edge_unit,
            why='gea.edge_unit is False (GEANet leaves the edge stream alone)',
            fix='set gea.edge_unit True')
