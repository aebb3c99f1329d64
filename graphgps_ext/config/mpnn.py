"""Config group ``mpnn``: options of the local message-passing branches
(:mod:`graphgps_ext.layer.gcn`, ``gin``, ``gine``, ``gatedgcn``).
"""
from graphgps_ext import branches
from graphgps_ext.config import choices, has_branch, ignored


def mpnn_cfg(cfg):
    from yacs.config import CfgNode as CN
    cfg.mpnn = CN()
    # Activation inside the GIN/GINE MLPs and of the GatedGCN outputs.
    cfg.mpnn.act = 'relu'
    # GCN/GIN/GINE: apply mpnn.act to the branch output (GEAET's
    # gt.local_out_act; GatedGCN always applies it).
    cfg.mpnn.out_act = False
    # GIN: MLP of the update: gin = Linear-BN-act-Linear (the GIN paper, PyG's
    # GIN), graphgps = Linear-act-Linear (GraphGPS's and GEAET's GIN).
    cfg.mpnn.gin_mlp = 'gin'
    # GIN/GINE: learn the epsilon of (1 + eps) x_i (fixed at 0 otherwise).
    cfg.mpnn.gin_train_eps = False
    # GatedGCN/GINE: scale every message by MLP(||p_i - p_j||^2) of the
    # EquivStableLapPE positions p (needs the EquivStableLapPE node encoder,
    # which provides them to the layers as ctx.extras['pe_equiv']).
    cfg.mpnn.equivstable_pe = False
    # GatedGCN: norm of the node update before its activation (GraphGPS's
    # GatedGCNLayer bn_node_x, also in the GEAET and CSA code: batch).
    cfg.mpnn.node_norm = 'batch'
    # GatedGCN: norm on the edge stream (Bresson & Laurent / GraphGPS: batch).
    cfg.mpnn.edge_norm = 'batch'


def _only(*names):
    """Keys read only by the branches ``names`` (all branches of this group
    when none is named)."""
    def which():
        return names or branches.names(group='mpnn')
    return dict(unless=lambda cfg: has_branch(cfg, *which()),
                why=lambda cfg: f"gt.layer_type '{cfg.gt.layer_type}' has no "
                                f"{' / '.join(which())} branch",
                in_file='warn')


def declare():
    """Declare the checks of the ``mpnn`` keys."""
    choices('mpnn.act', ['relu', 'gelu', 'elu', 'leaky_relu', 'silu', 'tanh'])
    choices('mpnn.gin_mlp', ['gin', 'graphgps'])
    choices('mpnn.node_norm', ['batch', 'layer', 'none'])
    choices('mpnn.edge_norm', ['batch', 'layer', 'none'])
    ignored('mpnn.*', **_only())
    ignored('mpnn.out_act', **_only('GCN', 'GIN', 'GINE'))
    ignored('mpnn.gin_train_eps', **_only('GIN', 'GINE'))
    ignored('mpnn.equivstable_pe', **_only('GINE', 'GatedGCN'))
    ignored('mpnn.edge_norm', **_only('GatedGCN'))
