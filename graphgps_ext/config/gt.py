"""Config group ``gt``: the stack of hybrid layers (:mod:`graphgps_ext.layer.hybrid`).

``gt.layer_type`` is ``"<local>+<global>+<external>"``; each part is a branch
name of the branch catalogue (:data:`graphgps_ext.branches.CATALOGUE`) or
``None``, parsed by :func:`graphgps_ext.branches.parse_layer_type`.  Branch-
specific options live in the config group each branch declares there
(``gea``, ``csa``, ``mna``, ``gtlayer``, ``mpnn``), declared with its
catalogue entry. :func:`~graphgps_ext.branches.branch_dropout` reads the
per-branch dropout rates.
"""
from graphgps_ext import branches
from graphgps_ext.branches import KINDS, branch_dropout, layer_type_of  # noqa: F401
from graphgps_ext.config.rules import (at_most, choices, has_branch, ignored, positive,
                                       probability, rule, unused, volatile)


def attention_branches():
    """The branches that split gt.dim_hidden into gt.n_heads heads and drop
    attention weights with gt.attn_dropout (MNA only with mna.head_dim 0):
    those the catalogue declares ``attention``."""
    return branches.names(attention=True)


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
    # Dropout on one branch's output instead (GEAET's per-branch rates;
    # GatedGCN also drops its edge update with it); -1 = gt.dropout.
    cfg.gt.dropout_local = -1.0
    cfg.gt.dropout_global = -1.0
    cfg.gt.dropout_external = -1.0
    # Dropout on attention weights (global branches).
    cfg.gt.attn_dropout = 0.0
    # Hand-written backward of the Transformer / MNA node attention (a speed
    # switch: False differentiates the same forward with autograd).
    cfg.gt.fused_attention = True
    # Norm of every branch and of the FFN: batch | layer (per node) |
    # graph_layer (PyG's graph-wise LayerNorm: statistics over the nodes and
    # channels of each graph; GEAET's gt.layer_norm) | graphnorm (GraphNorm,
    # Cai et al.; GraphGPS's gt.layer_norm) | none.
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


GRAPH_NORMS = ('graph_layer', 'graphnorm')


def _graph_norms_on_nodes(cfg):
    if cfg.gt.norm in GRAPH_NORMS and has_branch(cfg, 'GT') and \
            bool(cfg.gtlayer.edge_features):
        return (f"gt.norm '{cfg.gt.norm}' normalises the nodes of each graph; "
                "GT's edge stream (gtlayer.edge_features True) needs a norm "
                "per row: set gt.norm batch or layer")
    return None


BRANCH_DROPOUTS = ('gt.dropout_local', 'gt.dropout_global', 'gt.dropout_external')


def _branch_dropouts(cfg):
    for key in BRANCH_DROPOUTS:
        value = float(cfg.gt[key.split('.')[1]])
        if value != -1 and not 0 <= value < 1:
            return (f'{key} {value}: a probability in [0, 1), or -1 for '
                    'gt.dropout')
    return None


def _has_position(cfg, index: int) -> bool:
    """Whether ``gt.layer_type`` has a branch at position ``index`` (a value
    that is not three parts is reported by :func:`_one_branch`)."""
    layer_type = layer_type_of(cfg)
    return layer_type is None or layer_type[index] is not None


def _one_branch(cfg):
    try:
        layer_type = branches.parse_layer_type(cfg.gt.layer_type)
    except ValueError as err:
        return str(err)
    if not layer_type.present:
        return (f"gt.layer_type '{cfg.gt.layer_type}' has no branch: name at "
                "least one, e.g. 'GINE+Transformer+None'")
    return None


def declare():
    """Declare the checks of the ``gt`` keys."""
    choices('gt.norm', ['batch', 'layer', 'graph_layer', 'graphnorm', 'none'])
    choices('gt.act', ['relu', 'gelu', 'elu', 'leaky_relu', 'silu', 'tanh'])
    # The hand-written attention backward equals autograd's: a speed switch.
    volatile('gt.fused_attention')

    positive('gt.layers', 'gt.dim_hidden', 'gt.n_heads', 'gt.ffn_mult')
    at_most(1000, 'gt.layers')
    at_most(2 ** 16, 'gt.dim_hidden')
    at_most(1024, 'gt.n_heads')
    at_most(64, 'gt.ffn_mult')
    probability('gt.dropout', 'gt.attn_dropout')
    rule(_graph_norms_on_nodes)
    rule(_branch_dropouts)
    rule(_one_branch)
    # gt.n_heads must divide gt.dim_hidden for the branches that split the
    # width: checked once, by their constructors, and reported under the key
    # by the run's branch check (graphgps_ext.runs.config).
    ignored('gt.n_heads', 'gt.attn_dropout',
            unless=lambda cfg: has_branch(cfg, *attention_branches()),
            why=lambda cfg: f"gt.layer_type '{cfg.gt.layer_type}' has no attention "
                            f"branch ({', '.join(attention_branches())})"
                            + ('; GEANet has its own gea.n_heads'
                               if has_branch(cfg, 'GEANet') else ''),
            in_file='warn')
    for index, kind in enumerate(KINDS):
        ignored(f'gt.dropout_{kind}', unless=lambda cfg, i=index: _has_position(cfg, i),
                why=f'gt.layer_type has no {kind} branch', in_file='warn')
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
