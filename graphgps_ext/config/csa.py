"""Config group ``csa``: the Chromatic Self-Attention branch
(:class:`graphgps_ext.layer.csa.CSA`, CSA paper §3, eq. 5-9).

Heads and the attention-dropout rate come from ``gt.n_heads`` and
``gt.attn_dropout``; the dense pair features ``E^(0)`` come from the pair
encoder (group ``pairenc``).
"""
from graphgps_ext.config import at_most, choices, has_branch, ignored, non_negative


def csa_cfg(cfg):
    from yacs.config import CfgNode as CN
    cfg.csa = CN()
    # CSA-mono: one scalar edge bias per head instead of one per channel.
    cfg.csa.mono = False
    # Share the edge maps W_EA, W_EV (and hence E^att, E^val) by all layers
    # ("edge parameter sharing", CSA Appendix A / Table 6).
    cfg.csa.share_edge_params = False
    # What attention dropout silences, after the per-channel softmax:
    # connection = whole pairs (i, j) for all channels (edge-ablation, the
    # authors' configs), node = whole key nodes j, channel = single entries.
    cfg.csa.attn_dropout_mode = 'connection'
    # Output projection W_O (with bias) after the attention, as the authors'
    # `linear_attn`; counted in the paper's parameter budgets (Table 6).
    cfg.csa.out_proj = True
    # The value-edge term E^val of eq. 7 (False: the "no edge value" rows of
    # CSA Table 5; W_EV is then not built).
    cfg.csa.edge_value = True
    # Parity: biases on the shared edge maps W_EA, W_EV as in the authors'
    # SharedEdgeEncoder (the E^att bias cancels in the softmax).
    cfg.csa.parity_edge_bias = False
    # Memory bound for large graphs: above this many entries of the filter
    # tensors [g, n, n, H, C] of a batch's size blocks, the query rows are
    # processed in chunks under activation checkpointing (same results;
    # 0 = never).
    cfg.csa.chunk_elems = 2 ** 26


def declare():
    """Declare the checks of the ``csa`` keys."""
    choices('csa.attn_dropout_mode', ['connection', 'node', 'channel'])
    non_negative('csa.chunk_elems')
    at_most(2 ** 34, 'csa.chunk_elems')
    ignored('csa.*', unless=lambda cfg: has_branch(cfg, 'CSA'),
            why=lambda cfg: f"gt.layer_type '{cfg.gt.layer_type}' has no CSA branch",
            in_file='warn')
    ignored('csa.parity_edge_bias', unless=lambda cfg: cfg.csa.share_edge_params,
            why='the bias belongs to the shared edge maps and '
                'csa.share_edge_params is False', fix='set csa.share_edge_params True')
    ignored('csa.attn_dropout_mode', unless=lambda cfg: cfg.gt.attn_dropout > 0,
            why='gt.attn_dropout is 0 (no attention dropout)', in_file='warn')
