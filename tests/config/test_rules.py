"""The declarations of ``graphgps_ext/config/rules.py``: nothing is
declared by importing a module, a group's ``declare()`` is collected into a
value (also from several threads at once), and every reader sees every
group's declarations, collected once, however the program was entered."""
import os
import subprocess
import sys
import threading

import pytest

from graphgps_ext.config import (Declarations, choices, collect, declarations, declared,
                                 ignored, positive, rule)
from graphgps_ext.config import groups

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter (nothing imported yet); its stdout."""
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_importing_declares_nothing():
    """Every module of graphgps_ext/config, the registry and the config
    loader imported: no declaration has been collected."""
    out = _python(
        'import importlib, pkgutil\n'
        'import graphgps_ext.config as config\n'
        'names = [m.name for m in pkgutil.iter_modules(config.__path__)]\n'
        'for name in names:\n'
        '    importlib.import_module(f"graphgps_ext.config.{name}")\n'
        'import graphgps_ext.register, graphgps_ext.runs.config, graphgps_ext.results.identity\n'
        'from graphgps_ext.config import groups\n'
        'print(len(names), groups._collected.cache_info().currsize)\n')
    count, collected = map(int, out.split())
    assert count >= 10  # the group modules and the machinery
    assert collected == 0


def test_a_declaration_outside_a_declare_is_refused():
    with pytest.raises(RuntimeError, match="declare()"):
        choices('toy.key', ['a'])
    with pytest.raises(RuntimeError, match='not when a module is imported'):
        rule(lambda cfg: None)


def test_collect_returns_what_a_declare_declares_in_order():
    def first():
        choices('toy.kind', ['a', 'b'])
        positive('toy.size')

    def second():
        choices('toy.kind', ['a', 'b', 'c'])  # declared again: new values, same place
        ignored('toy.size', unless=lambda cfg: False, why='toy')

    a, b = collect(first), collect(second)
    found = a + b
    assert dict(found.choices) == {'toy.kind': ('a', 'b', 'c')}
    assert [key for key, _, _ in found.bounds] == ['toy.size']
    assert [dec.keys for dec in found.ignored] == [('toy.size',)]
    assert len(found) == 3 and len(a) == 2
    assert _summary(collect(first)) == _summary(a)  # collecting again: the same
    with pytest.raises(TypeError):
        found.choices['toy.other'] = ('x',)  # read-only


def test_collections_nest_and_a_failed_one_leaves_nothing_open():
    def inner():
        choices('toy.inner', ['x'])

    def outer():
        choices('toy.outer', ['y'])
        assert dict(collect(inner).choices) == {'toy.inner': ('x',)}
        positive('toy.size')

    found = collect(outer)
    assert dict(found.choices) == {'toy.outer': ('y',)}
    assert [key for key, _, _ in found.bounds] == ['toy.size']

    def broken():
        choices('toy.kind', ['a'])
        raise ValueError('broken declaration')

    with pytest.raises(ValueError, match='broken'):
        collect(broken)
    with pytest.raises(RuntimeError, match='declare()'):
        choices('toy.key', ['a'])  # the failed collection is closed


def _summary(found: Declarations):
    """What two collections of the same declarations share (the functions
    they declare may be new objects each time)."""
    return (dict(found.choices), found.auto_bool, found.volatile, found.resumable,
            [(key, req) for key, _, req in found.bounds],
            [fn.__qualname__ for fn in found.rules],
            [fn.__qualname__ for fn in found.advice],
            [(d.keys, d.in_file, d.why if isinstance(d.why, str) else None)
             for d in found.ignored],
            dict(found.unused))


def test_the_groups_are_collected_once_in_order():
    once = declarations()
    steps = declared()
    assert declarations() is once and list(steps) == list(groups.groups())
    assert once == sum(steps.values(), Declarations())
    # no declaration twice: every range, rule and ignored-declaration once
    assert len({id(fn) for fn in once.rules + once.advice}) == len(once.rules + once.advice)
    assert len({id(dec) for dec in once.ignored}) == len(once.ignored)
    bounds = [(key, req) for key, _, req in once.bounds]
    assert len(set(bounds)) == len(bounds)
    # collecting every group again declares the same
    again = {name: _summary(collect(g.declare)) for name, g in groups.groups().items()}
    assert again == {name: _summary(found) for name, found in steps.items()}


def test_threads_collect_at_once_without_mixing():
    """Several threads collecting different groups at once: each gets its
    own group's declarations, whole."""
    wanted = {name: _summary(collect(g.declare)) for name, g in groups.groups().items()}
    seen, barrier = {}, threading.Barrier(len(wanted))

    def run(name, declare):
        barrier.wait()
        seen[name] = _summary(collect(declare))

    threads = [threading.Thread(target=run, args=(name, g.declare))
               for name, g in groups.groups().items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == wanted


def test_a_reader_entered_from_one_group_sees_every_group():
    """A program that imports one group module only (as tests/config/test_head.py
    does) still checks every group's keys and coerces every 'auto'-or-boolean
    key: the readers run the declarations first."""
    out = _python(
        'from yacs.config import CfgNode\n'
        'from graphgps_ext.config import ConfigError, check_values, coerce\n'
        'from graphgps_ext.config.head import head_cfg\n'
        'from graphgps_ext.config.gt import gt_cfg\n'
        'cfg = CfgNode()\n'
        'head_cfg(cfg)\n'
        'gt_cfg(cfg)\n'
        "cfg.gt.norm = 'batchnorm'\n"
        'try:\n'
        '    check_values(cfg)\n'
        'except ConfigError as err:\n'
        '    print(err)\n'
        "print(coerce('train.static_shapes', 'TRUE', 'auto', 'here'))\n")
    assert "bad value 'batchnorm' for 'gt.norm'" in out
    assert out.strip().endswith('True')
