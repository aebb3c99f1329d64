import pytest
from yacs.config import CfgNode as CN

from graphgps_ext.config.gt import gt_cfg
from graphgps_ext.config.posenc import posenc_cfg


@pytest.fixture
def make_cfg():
    """A fresh config with the groups the encodings read (no global state)."""
    def make():
        c = CN()
        c.dataset = CN(dict(node_encoder=False, node_encoder_name='Atom',
                            node_encoder_bn=True, edge_encoder=False,
                            edge_encoder_name='Bond', edge_encoder_bn=True))
        gt_cfg(c)
        posenc_cfg(c)
        c.posenc.progress = False
        return c
    return make
