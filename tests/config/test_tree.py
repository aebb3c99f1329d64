"""Dotted keys over nested mappings: ``flatten``, ``unflatten``, ``set_key``."""
import pytest

from graphgps_ext.config import flatten, set_key, unflatten


def test_unflatten_inverts_flatten():
    tree = {'gt': {'layers': 3, 'dim_hidden': 64}, 'optim': {'base_lr': 1e-3}, 'seed': 0}
    flat = flatten(tree)
    assert flat == {'gt.layers': 3, 'gt.dim_hidden': 64, 'optim.base_lr': 1e-3, 'seed': 0}
    assert unflatten(flat) == tree


def test_set_key_creates_groups_and_keeps_siblings():
    tree = {'gt': {'layers': 3}}
    set_key(tree, 'gt.dim_hidden', 64)
    set_key(tree, 'posenc_RWSE.kernel.times', [1, 2])
    assert tree == {'gt': {'layers': 3, 'dim_hidden': 64},
                    'posenc_RWSE': {'kernel': {'times': [1, 2]}}}


def test_set_key_under_a_value_names_the_part():
    with pytest.raises(TypeError, match="'layers' of 'gt.layers.x' is not a group"):
        set_key({'gt': {'layers': 3}}, 'gt.layers.x', 1)
