import pytest
from yacs.config import CfgNode as CN

from graphgps_ext.config import ConfigError, check_values, merge_list
from graphgps_ext.config.head import head_cfg
from graphgps_ext.head import HEADS


def _cfg():
    c = CN()
    head_cfg(c)
    return c


def test_defaults_and_choices():
    c = _cfg()
    assert c.head.pool == 'default' and c.head.layers == -1
    assert c.head.width == 'auto' and c.head.link_train == 'sampled'
    check_values(c)
    merge_list(c, ['head.pool', 'max', 'head.link_ties', 'pessimistic'])
    check_values(c)
    c.head.pool = 'maxx'
    with pytest.raises(ConfigError, match="did you mean 'max'"):
        check_values(c)
    with pytest.raises(ConfigError, match='head.pool'):
        merge_list(_cfg(), ['head.pooling', 'mean'])


def test_reused_graphgym_keys_exist():
    from torch_geometric.graphgym.config import set_cfg
    from graphgps_ext.register import register_all
    register_all()
    full = CN()
    set_cfg(full)
    assert 'graph_pooling' in full.model
    assert 'layers_post_mp' in full.gnn
    # the `head` group is exactly ours: no GraphGym key of that name clashes
    assert full.head == _cfg().head


def test_contract_head_names():
    assert set(HEADS) == {'graph_mlp', 'graph_node_mlp', 'inductive_node',
                          'inductive_link', 'code2_sequence', 'root_node'}
    for cls in HEADS.values():
        assert callable(getattr(cls, 'from_cfg'))
