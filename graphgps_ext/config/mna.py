"""Config group ``mna``: the Multi-Neighborhood Attention branch
(:class:`graphgps_ext.layer.mna.MNA`, MNA-GT paper §4, eq. 5-12).

The number of heads per kernel ``m`` is ``gt.n_heads``; the MNA-GT layer of
eq. 11-12 is the hybrid layer with ``gt.pre_norm True``, ``gt.norm layer``
and ``gt.act gelu``.
"""
from graphgps_ext.config import at_most, choices, has_branch, ignored, non_negative


def mna_cfg(cfg):
    from yacs.config import CfgNode as CN
    cfg.mna = CN()
    # Largest propagation step c: kernels (Â^k X, Â^k X, X) for k = 0..c,
    # i.e. c + 1 attention kernels.
    cfg.mna.hops = 2
    # Normalisation of Â: sym = D^-1/2 (A+I) D^-1/2, rw = D^-1 (A+I).
    cfg.mna.adj_norm = 'sym'
    # Fusion of the kernel outputs Z^k: adaptive (eq. 9-10), or the Table 4
    # ablations sum, mean, concat (concatenation, then a linear map to d).
    cfg.mna.fusion = 'adaptive'
    # The activation sigma of eq. 10 (the paper does not name it).
    cfg.mna.fusion_act = 'tanh'
    # Width of each head; 0 means d / gt.n_heads.
    cfg.mna.head_dim = 0


def declare():
    """Declare the checks of the ``mna`` keys."""
    choices('mna.adj_norm', ['sym', 'rw'])
    choices('mna.fusion', ['adaptive', 'sum', 'mean', 'concat'])
    choices('mna.fusion_act', ['tanh', 'sigmoid', 'relu', 'gelu', 'elu',
                               'leaky_relu', 'identity'])
    non_negative('mna.hops', 'mna.head_dim')
    at_most(64, 'mna.hops')
    at_most(2 ** 16, 'mna.head_dim')
    ignored('mna.*', unless=lambda cfg: has_branch(cfg, 'MNA'),
            why=lambda cfg: f"gt.layer_type '{cfg.gt.layer_type}' has no MNA branch",
            in_file='warn')
    ignored('mna.fusion_act', unless=lambda cfg: cfg.mna.fusion == 'adaptive',
            why=lambda cfg: f"mna.fusion is '{cfg.mna.fusion}' (the activation "
                            "belongs to the 'adaptive' fusion of eq. 10)")
