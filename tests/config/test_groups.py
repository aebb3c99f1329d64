"""The list of config groups (``graphgps_ext/config/groups.py``): one entry
per group module, and one group per catalogue entry with options, each with
its group function and its declarations, which are the groups'
registration in GraphGym and the declarations' one source."""
import importlib
import pkgutil
from types import MappingProxyType

import pytest

import torch_geometric.graphgym.register as gg
from torch_geometric.graphgym.config import set_cfg
from yacs.config import CfgNode

import graphgps_ext.config as config
from graphgps_ext import branches, encodings, register
from graphgps_ext.config import Declarations, declarations, declared, leaf_keys
from graphgps_ext.config.groups import MODULES, groups
from graphgps_ext.metrics import METRICS

# Declarations of a group's keys made outside its group (none).
CROSS_GROUP = {}


def _graphgym_keys(monkeypatch) -> set:
    """The leaf keys of GraphGym's own config (no group of ours)."""
    monkeypatch.setattr(gg, 'config_dict', {})
    base = CfgNode()
    set_cfg(base)
    return set(leaf_keys(base))


def _own_keys(graphgym: set, monkeypatch) -> dict:
    """``{group: the leaf keys its group function adds}``."""
    out = {}
    for name, group in groups().items():
        monkeypatch.setattr(gg, 'config_dict', {name: group.cfg})
        cfg = CfgNode()
        set_cfg(cfg)
        out[name] = set(leaf_keys(cfg)) - graphgym
    return out


def _expand(key: str, keys: set) -> set:
    if key.endswith('.*'):
        found = {k for k in keys if k.startswith(key[:-1])}
        assert found, f"'{key}' matches no key"
        return found
    assert key in keys, f"'{key}' is no config key"
    return {key}


def test_every_group_module_is_listed_once():
    machinery = {'keys', 'rules', 'validation', 'yaml_io', 'groups', 'options', 'sizes'}
    modules = {m.name for m in pkgutil.iter_modules(config.__path__)} - machinery
    listed = [group.cfg.__module__ for group in MODULES.values()]
    assert sorted(listed) == sorted(f'graphgps_ext.config.{m}' for m in modules)
    for group in MODULES.values():
        module = importlib.import_module(group.cfg.__module__)
        assert group.declare is module.declare


def test_the_catalogue_entries_bring_their_groups():
    names = list(groups())
    assert names[:3] == ['gt', 'dataset_ext', 'posenc']
    assert names[-3:] == ['head', 'train_ext', 'speed']
    pes = [e.group.name for e in encodings.ENCODINGS if e.group is not None]
    assert pes == ['posenc_LapPE', 'posenc_EquivStableLapPE', 'posenc_RWSE']
    assert names[3:-3] == pes + list(dict.fromkeys(
        b.group for b in branches.CATALOGUE if b.group is not None))
    for entry in branches.CATALOGUE:
        if entry.options is not None:
            assert groups()[entry.group].cfg is entry.options
    for entry in encodings.node_encodings().values():
        assert groups()[entry.group.name].cfg is entry.group


def test_the_registry_registers_the_listed_groups():
    assert register.config_groups() == {name: g.cfg for name, g in groups().items()}
    register.register_all()
    for name, group in groups().items():
        assert gg.config_dict[name] is group.cfg


def test_the_declarations_are_the_groups_in_order():
    steps = declared()
    assert list(steps) == list(groups())
    assert declarations() == sum(steps.values(), Declarations())
    assert declarations() is declarations()  # collected once
    assert declarations().choices['metric_best'] == ('auto', *METRICS)
    assert declarations().choices['dataset.metrics'] == tuple(METRICS)


def _outside(name: str, found: Declarations, own: dict, graphgym: set) -> list:
    """The keys that the step ``name`` declares but that are neither its
    group's nor GraphGym's (nor a documented cross-group key)."""
    every = graphgym.union(*own.values())
    allowed = own.get(name, set()) | graphgym | CROSS_GROUP.get(name, set())
    return sorted(k for key in found.keys() for k in _expand(key, every) - allowed)


def test_each_group_declares_checks_of_its_own_keys(monkeypatch):
    """Every group declares something, and only of its own keys or of
    GraphGym's keys it reuses: a key that exists nowhere (a typo would make
    its check silently never run) or another group's key is refused."""
    steps = declared()
    graphgym = _graphgym_keys(monkeypatch)
    own = _own_keys(graphgym, monkeypatch)
    assert all(own.values())
    for name, found in steps.items():
        assert len(found) > 0, name
        assert _outside(name, found, own, graphgym) == [], name


def test_the_check_sees_a_misplaced_or_missing_key(monkeypatch):
    graphgym = _graphgym_keys(monkeypatch)
    own = _own_keys(graphgym, monkeypatch)
    other = Declarations(choices=MappingProxyType({'csa.mono': (True,)}),
                         volatile=('mna.*', 'optim.base_lr'))
    assert _outside('gea', other, own, graphgym) == ['csa.mono', *sorted(own['mna'])]
    assert _outside('csa', Declarations(volatile=('csa.*',)), own, graphgym) == []
    with pytest.raises(AssertionError, match="'gea.n_head' is no config key"):
        _outside('gea', Declarations(bounds=(('gea.n_head', bool, ''),)), own, graphgym)
