"""Config group ``gt``: the stack of hybrid layers (:mod:`graphgps_ext.layer.hybrid`).

``gt.layer_type`` is ``"<local>+<global>+<external>"``; each part is a branch
name registered in :data:`graphgps_ext.layer.BRANCHES` or ``None``.  Branch-
specific options live in their own groups (``gea``, ``csa``, ``mna``,
``gtlayer``, ``mpnn``).
"""
from graphgps_ext.config import choices, volatile


def gt_cfg(cfg):
    from yacs.config import CfgNode as CN
    cfg.gt = CN()
    # Branches: local MPNN + global attention + external attention.
    cfg.gt.layer_type = 'GINE+Transformer+None'
    cfg.gt.layers = 3
    # Hidden width d (GraphGym's gnn.dim_inner is kept equal to it).
    cfg.gt.dim_hidden = 64
    # Attention heads of the global branch (Transformer, CSA, MNA, GT).
    cfg.gt.n_heads = 4
    # Dropout on every branch output and inside the FFN.
    cfg.gt.dropout = 0.0
    # Dropout on attention weights (global branches).
    cfg.gt.attn_dropout = 0.0
    # Hand-written backward of the Transformer / MNA node attention (a speed
    # switch: False differentiates the same forward with autograd).
    cfg.gt.fused_attention = True
    # Norm of every branch and of the FFN: batch | layer | none.
    cfg.gt.norm = 'batch'
    # Pre-norm blocks (MNA-GT eq. 11-12) instead of post-norm (GraphGPS).
    cfg.gt.pre_norm = False
    # Residual connection around each branch.
    cfg.gt.residual = True
    # FFN block after the branch sum, its width multiple and activation.
    cfg.gt.ffn = True
    cfg.gt.ffn_mult = 2.0
    # Parity (GEAET's code, use_ffn: False): post-norm layers without FFN
    # still apply the FFN's norm to the sum of the branches (two norms back
    # to back for one branch). Off: the layer output is that sum.
    cfg.gt.parity_norm_without_ffn = False
    cfg.gt.act = 'relu'


choices('gt.norm', ['batch', 'layer', 'none'])
choices('gt.act', ['relu', 'gelu', 'elu', 'leaky_relu', 'silu', 'tanh'])
# The hand-written attention backward equals autograd's: a speed switch.
volatile('gt.fused_attention')
