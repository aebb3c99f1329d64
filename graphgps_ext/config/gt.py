"""Config group ``gt``: the stack of hybrid layers (:mod:`graphgps_ext.layer.hybrid`).

``gt.layer_type`` is ``"<local>+<global>+<external>"``; each part is a branch
name registered in :data:`graphgps_ext.layer.BRANCHES` or ``None``.  Branch-
specific options live in their own groups (``gea``, ``csa``, ``mna``,
``gtlayer``, ``mpnn``).
"""
from graphgps_ext.config import (at_most, choices, has_branch, ignored, positive,
                                 probability, rule, unused, volatile)

# Branches that split gt.dim_hidden into gt.n_heads heads and drop attention
# weights with gt.attn_dropout (MNA only with mna.head_dim 0).
ATTENTION_BRANCHES = ('Transformer', 'GT', 'CSA', 'MNA')


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

positive('gt.layers', 'gt.dim_hidden', 'gt.n_heads', 'gt.ffn_mult')
at_most(1000, 'gt.layers')
at_most(2 ** 16, 'gt.dim_hidden')
at_most(1024, 'gt.n_heads')
at_most(64, 'gt.ffn_mult')
probability('gt.dropout', 'gt.attn_dropout')


def divisors(n: int):
    return [k for k in range(1, n + 1) if n % k == 0]


@rule
def _one_branch(cfg):
    parts = str(cfg.gt.layer_type).split('+')
    if len(parts) == 3 and all(p in ('None', 'none', '') for p in parts):
        return (f"gt.layer_type '{cfg.gt.layer_type}' has no branch: name at "
                "least one, e.g. 'GINE+Transformer+None'")
    return None


@rule
def _heads_divide_width(cfg):
    d, heads = cfg.gt.dim_hidden, cfg.gt.n_heads
    split = [b for b in ATTENTION_BRANCHES if has_branch(cfg, b)
             and not (b == 'MNA' and cfg.mna.head_dim > 0)]
    if split and d % heads:
        return (f'gt.n_heads {heads} does not divide gt.dim_hidden {d}: the '
                f"{'/'.join(split)} branch splits the width into gt.n_heads "
                f'heads; use gt.n_heads in {divisors(d)} or change gt.dim_hidden')
    return None


ignored('gt.n_heads', 'gt.attn_dropout',
        unless=lambda cfg: has_branch(cfg, *ATTENTION_BRANCHES),
        why=lambda cfg: f"gt.layer_type '{cfg.gt.layer_type}' has no attention "
                        f"branch ({', '.join(ATTENTION_BRANCHES)})"
                        + ('; GEANet has its own gea.n_heads'
                           if has_branch(cfg, 'GEANet') else ''),
        in_file='warn')
ignored('gt.ffn_mult', unless=lambda cfg: cfg.gt.ffn,
        why='gt.ffn is False (no FFN block)', in_file='warn')
ignored('gnn.dim_inner', unless=lambda cfg: False,
        used=lambda cfg: cfg.gt.dim_hidden,
        why='graphgps_ext keeps it equal to gt.dim_hidden; set gt.dim_hidden')
# GraphGym's model keys that the hybrid stack replaces.
unused('gnn.layers_mp', instead='gt.layers')
unused('gnn.layer_type', instead='gt.layer_type')
unused('gnn.dropout', instead='gt.dropout')
unused('gnn.act', instead='gt.act (mpnn.act inside the message-passing branches)')
unused('gnn.batchnorm', instead='gt.norm')
unused('gnn.att_heads', instead='gt.n_heads')
unused('gnn.agg', 'gnn.layers_pre_mp', 'gnn.stage_type', 'gnn.skip_every',
       'gnn.normalize_adj', 'gnn.msg_direction', 'gnn.self_msg',
       'gnn.att_final_linear', 'gnn.att_final_linear_bn', 'gnn.l2norm',
       'gnn.keep_edge', 'gnn.clear_feature', 'bn.eps', 'bn.mom', 'mem.inplace')
