"""Config group ``gtlayer``: the Graph Transformer branch of Dwivedi &
Bresson (:class:`graphgps_ext.layer.gt.GT`).

Heads, attention dropout, norm, residual and dropout come from ``gt.*``.
"""
from graphgps_ext.config import has_branch, ignored


def gtlayer_cfg(cfg):
    from yacs.config import CfgNode as CN
    cfg.gtlayer = CN()
    # Attend over all other nodes of the graph (True) or over the graph
    # neighbours only (False, the paper's sparse graph).
    cfg.gtlayer.full_graph = False
    # Edge-feature layer (eq. 9-18): edge features modulate the scores and
    # are updated by their own residual, norm and FFN stream.
    cfg.gtlayer.edge_features = False
    # Parity: exp(clamp(s, -5, 5)) / (sum + 1e-6) instead of a softmax, as
    # the authors' code.
    cfg.gtlayer.parity_clamp_exp = False
    # Parity (with parity_clamp_exp, node layer): divide without the 1e-6,
    # as the authors' node layer (a node with no neighbour gives NaN).
    cfg.gtlayer.parity_no_eps = False


def declare():
    """Declare the checks of the ``gtlayer`` keys."""
    ignored('gtlayer.*', unless=lambda cfg: has_branch(cfg, 'GT'),
            why=lambda cfg: f"gt.layer_type '{cfg.gt.layer_type}' has no GT branch",
            in_file='warn')
    ignored('gtlayer.parity_no_eps',
            unless=lambda cfg: (cfg.gtlayer.parity_clamp_exp
                                and not cfg.gtlayer.edge_features),
            why='it applies to the node layer with gtlayer.parity_clamp_exp True '
                'and gtlayer.edge_features False',
            fix='set gtlayer.parity_clamp_exp True (node layer)')
