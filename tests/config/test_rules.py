"""The declaration store of ``graphgps_ext/config/rules.py``: nothing is
declared by importing a module, each declaration step runs once (also from
several threads), a failed step adds nothing, and every reader sees the
whole set however the program was entered."""
import os
import subprocess
import sys
import threading
import time

import pytest

from graphgps_ext.config import (Declarations, choices, declarations, declared,
                                 ignored, positive, rule, run_declarations)
from graphgps_ext.config import groups, rules

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter (nothing imported yet); its stdout."""
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture
def fresh_store(monkeypatch):
    """An empty store, as in a program that has declared nothing yet."""
    monkeypatch.setattr(rules, '_by_step', {})
    monkeypatch.setattr(rules, '_all', Declarations())
    monkeypatch.setattr(groups, '_done', False)


def test_importing_declares_nothing():
    """Every module of graphgps_ext/config, the registry and the config
    loader imported: the store is still empty."""
    out = _python(
        'import importlib, pkgutil\n'
        'import graphgps_ext.config as config\n'
        'names = [m.name for m in pkgutil.iter_modules(config.__path__)]\n'
        'for name in names:\n'
        '    importlib.import_module(f"graphgps_ext.config.{name}")\n'
        'import graphgps_ext.register, graphgps_ext.run_config, graphgps_ext.identity\n'
        'from graphgps_ext.config import rules\n'
        'print(len(names), len(rules.declared()), len(rules._all))\n')
    count, steps, made = map(int, out.split())
    assert count >= 14  # the eleven groups and the machinery
    assert (steps, made) == (0, 0)


def test_a_declaration_outside_a_step_is_refused(fresh_store):
    with pytest.raises(RuntimeError, match="declare()"):
        choices('toy.key', ['a'])
    with pytest.raises(RuntimeError, match='not when a module is imported'):
        rule(lambda cfg: None)
    assert declared() == {}


def test_a_step_runs_once_and_in_order(fresh_store):
    calls = []

    def first():
        calls.append('first')
        choices('toy.kind', ['a', 'b'])
        positive('toy.size')

    def second():
        calls.append('second')
        choices('toy.kind', ['a', 'b', 'c'])  # declared again: new values, same place
        ignored('toy.size', unless=lambda cfg: False, why='toy')

    run_declarations([('first', first), ('second', second)])
    run_declarations([('second', second), ('first', first)])
    assert calls == ['first', 'second']
    assert list(declared()) == ['first', 'second']
    found = rules._all
    assert dict(found.choices) == {'toy.kind': ('a', 'b', 'c')}
    assert [key for key, _, _ in found.bounds] == ['toy.size']
    assert [dec.keys for dec in found.ignored] == [('toy.size',)]
    assert len(found) == 3 and len(declared()['first']) == 2
    assert found == declared()['first'] + declared()['second']
    with pytest.raises(TypeError):
        found.choices['toy.other'] = ('x',)  # read-only


def test_a_failed_step_adds_nothing_and_can_run_again(fresh_store):
    fail = [True]

    def step():
        choices('toy.kind', ['a'])
        if fail[0]:
            raise ValueError('broken declaration')

    with pytest.raises(ValueError, match='broken'):
        run_declarations([('toy', step)])
    assert declared() == {} and len(rules._all) == 0
    fail[0] = False
    run_declarations([('toy', step)])
    assert dict(rules._all.choices) == {'toy.kind': ('a',)}


def test_a_step_cannot_start_or_read_inside_another(fresh_store):
    def nested():
        run_declarations([('inner', lambda: None)])

    with pytest.raises(RuntimeError, match="inside the step 'outer'"):
        run_declarations([('outer', nested)])

    def reader():
        declarations()

    with pytest.raises(RuntimeError, match="inside the step 'reader'"):
        run_declarations([('reader', reader)])
    assert declared() == {}


def _summary(found: Declarations):
    """What two runs of the same declarations share (the functions they
    declare are new objects each run)."""
    return (dict(found.choices), found.auto_bool, found.volatile, found.resumable,
            [(key, req) for key, _, req in found.bounds],
            [fn.__qualname__ for fn in found.rules],
            [fn.__qualname__ for fn in found.advice],
            [(d.keys, d.in_file, d.why if isinstance(d.why, str) else None)
             for d in found.ignored],
            dict(found.unused))


def test_declare_all_is_idempotent(fresh_store):
    groups.declare_all()
    once = declarations()
    steps = declared()
    groups.declare_all()
    assert declarations() is once and declared() == steps
    assert list(steps) == list(groups.GROUPS)
    assert once == sum(steps.values(), Declarations())
    # no declaration twice: every range, rule and ignored-declaration once
    assert len({id(fn) for fn in once.rules + once.advice}) == len(once.rules + once.advice)
    assert len({id(dec) for dec in once.ignored}) == len(once.ignored)
    bounds = [(key, req) for key, _, req in once.bounds]
    assert len(set(bounds)) == len(bounds)


def test_every_run_declares_the_same(fresh_store):
    groups.declare_all()
    first = {name: _summary(found) for name, found in declared().items()}
    rules._by_step.clear()
    rules._all = Declarations()
    groups._done = False
    groups.declare_all()
    assert {name: _summary(found) for name, found in declared().items()} == first


def test_threads_see_one_complete_set(fresh_store, monkeypatch):
    """Readers in several threads of a program that has declared nothing:
    every group's step runs once and every reader gets the whole set."""
    calls = {name: 0 for name in groups.GROUPS}

    def counted(name, declare):
        def run():
            calls[name] += 1
            time.sleep(0.01)  # a slow step: the other threads arrive meanwhile
            declare()
        return run

    monkeypatch.setattr(groups, 'GROUPS', {
        name: groups.Group(g.cfg, counted(name, g.declare))
        for name, g in groups.GROUPS.items()})
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(declarations()))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == {name: 1 for name in groups.GROUPS}
    assert len(seen) == 6 and all(found is seen[0] for found in seen)
    assert list(declared()) == list(groups.GROUPS)


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
