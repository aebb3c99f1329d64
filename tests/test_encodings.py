"""The encoding catalogue (:mod:`graphgps_ext.encodings`): one entry per
encoding, from which the ``posenc_*`` groups, what the precompute attaches
(with the parameters that key its cache) and the node encoders' arguments
derive; the RWSE step list."""
import functools

import pytest

from graphgps_ext import encodings
from graphgps_ext.config.posenc import pe_names, rpe_values, wanted_encodings
from graphgps_ext.encodings import Encoding, parse_times
from graphgps_ext.options import defaults_of


@functools.lru_cache(maxsize=None)
def _strings(path):
    """The string constants of ``path``, docstrings aside."""
    import ast
    tree = ast.parse(open(path, encoding='utf-8').read())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant):
            docs.add(id(node.body[0].value))
    return frozenset(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                     and isinstance(n.value, str) and id(n) not in docs)


def _spelled(path, words):
    """The string constants of ``path`` (docstrings aside) among ``words``."""
    return _strings(path) & words


def _spelling_modules(words):
    import os
    import graphgps_ext
    root = os.path.dirname(graphgps_ext.__file__)
    found = {}
    for folder, _, files in os.walk(root):
        for f in files:
            path = os.path.join(folder, f)
            rel = os.path.relpath(path, root)
            if f.endswith('.py') and not rel.startswith('compat'):
                spelled = _spelled(path, words)
                if spelled:
                    found[rel] = spelled
    return found


#: Precompute kinds that other words happen to equal: a value of
#: ``pairenc.rpe`` (Edge-RWSE), and an attribute the SPD encoding stores.
HOMONYMS = {'rwse', 'pair_spd'}


def test_the_encodings_names_are_spelled_in_one_module():
    """Their names, config groups and precompute kinds are written in the
    catalogue only; everything else derives from it (compat's readers of
    foreign formats aside: GraphGPS's and CSA's keys are their own)."""
    words = set()
    for e in encodings.ENCODINGS:
        words |= {e.name, e.kind} | ({e.group.name} if e.group is not None else set())
    found = _spelling_modules(words - HOMONYMS)
    assert list(found) == ['encodings.py'], found
    assert {e.name for e in encodings.ENCODINGS} <= found['encodings.py']
    # (the check sees a spelling: the homonyms are written where they mean
    # something else)
    assert 'encoder/pair.py' in _spelling_modules(HOMONYMS)


def test_parse_times():
    assert parse_times([], 'range(1, 5)') == [1, 2, 3, 4]
    assert parse_times([2, 4], '') == [2, 4]
    with pytest.raises(ValueError, match='range'):
        parse_times([], 'list(1)')


def test_the_catalogue_matches_the_package():
    table = encodings.catalogue()
    assert [(e.name, e.kind, e.dense) for e in table.values()] == [
        ('LapPE', 'lappe', True), ('EquivStableLapPE', 'eslappe', True),
        ('RWSE', 'rwse', True), ('EdgeRWSE', 'pair_rwse', True),
        ('SPD', 'pair_spd', True), ('Rings', 'rings', False)]
    assert pe_names() == ('LapPE', 'EquivStableLapPE', 'RWSE')
    assert rpe_values() == ('rwse', 'spd', 'none')
    for entry in table.values():
        assert callable(entry.function())
        if entry.encoder is not None:
            assert entry.load().__name__ == entry.name
            assert entry.group.name == f'posenc_{entry.name}'
    with pytest.raises(ValueError, match='node encoder, or'):
        Encoding('X', 'x', 'm:f')


def test_declaring_twice_is_refused(monkeypatch):
    monkeypatch.setattr(encodings, 'ENCODINGS', encodings.ENCODINGS + [
        Encoding('RWSE2', 'rwse', 'm:f', rpe='x')])
    with pytest.raises(ValueError, match="'RWSE2' \\(rwse\\) is declared twice"):
        encodings.catalogue()


def _cfg(**keys):
    from graphgps_ext.runs.config import default_cfg
    cfg = default_cfg().clone()
    for key, value in keys.items():
        node = cfg
        *path, leaf = key.split('.')
        for part in path:
            node = node[part]
        node[leaf] = value
    return cfg


def test_what_the_precompute_attaches_and_its_cache_parameters():
    """The kinds and parameters (the cache keys of the files already on
    users' disks) of each selection."""
    assert wanted_encodings(_cfg()) == {}
    cfg = _cfg(**{'posenc_LapPE.enable': True, 'posenc_EquivStableLapPE.enable': True,
                  'posenc_RWSE.enable': True, 'gt.layer_type': 'None+CSA+None',
                  'pairenc.on_the_fly': False, 'pairenc.rings': True})
    assert wanted_encodings(cfg) == {
        'lappe': {'k': 10, 'norm': 'none', 'skip_trivial': False},
        'eslappe': {'k': 8, 'norm': 'none', 'skip_trivial': False},
        'rwse': {'times': list(range(1, 21))},
        'pair_rwse': {'steps': 16},
        'rings': {'max_size': 18}}
    cfg.pairenc.rpe, cfg.pairenc.steps = 'spd', 5
    cfg.posenc_RWSE.kernel.times = [2, 4]
    assert wanted_encodings(cfg)['pair_spd'] == {'steps': 5}
    assert wanted_encodings(cfg)['rwse'] == {'times': [2, 4]}
    cfg.pairenc.on_the_fly = True  # the pair encoder computes them per batch
    assert 'pair_spd' not in wanted_encodings(cfg)
    # named in dataset.node_encoder_name: selected whatever the enable flags
    cfg = _cfg(**{'dataset.node_encoder': True,
                  'dataset.node_encoder_name': 'TypeDictNode+RWSE'})
    assert list(wanted_encodings(cfg)) == ['rwse']


def test_node_encoders_take_the_entries_options_with_their_defaults():
    for name, entry in encodings.node_encodings().items():
        defaults = defaults_of(entry.load())
        read = {o.argument: o.as_argument(o.default) for o in entry.group.options
                if o.argument is not None}
        given = {k: defaults[k] for k in read if k in defaults}
        assert given == {k: read[k] for k in given}, name
        # every constructor argument comes from the entry
        import inspect
        params = set(inspect.signature(entry.load().__init__).parameters) - {'self'}
        args = set(read) | set(entry.encoder_args) | {'dim_out'}
        assert params <= args, (name, params - args)


def test_from_cfg_reads_the_options():
    from graphgps_ext.task import TaskInfo
    task = TaskInfo(name='t', task='graph', task_type='regression', num_outputs=1,
                    loss='l1', metric='mae', metric_direction='min')
    lap = encodings.catalogue()['LapPE'].load()
    enc = lap.from_cfg(_cfg(**{'posenc_LapPE.model': 'linear',
                               'posenc_LapPE.eigen.max_freqs': 3,
                               'posenc_LapPE.raw_norm_type': 'BatchNorm'}), task, 8)
    assert (enc.model, enc.k, enc.lin.in_features, enc.lin.out_features) == \
        ('linear', 3, 3, 8)
    assert enc.raw_norm is not None
    rwse = encodings.catalogue()['RWSE'].load()
    enc = rwse.from_cfg(_cfg(**{'posenc_RWSE.kernel.times_func': 'range(1, 6)'}), task, 4)
    assert (enc.K, enc.enc.out_features) == (5, 4)
    eslap = encodings.catalogue()['EquivStableLapPE'].load()
    enc = eslap.from_cfg(_cfg(**{'posenc_EquivStableLapPE.model': 'linear'}), task, 6)
    assert (enc.k, enc.lin.out_features) == (8, 6)
