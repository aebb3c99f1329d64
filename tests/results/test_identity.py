"""Run identity: the fingerprint ignores paths, logging, threads and speed
switches, names what differs, and classifies resume changes."""
import os

from graphgps_ext.results import identity as ident
from graphgps_ext.runs.config import load_cfg

from run_checks import seal

QUICK = 'configs/quickstart.yaml'


def _ident(*opts):
    return ident.identity(load_cfg(QUICK, list(opts)))


def test_volatile_keys_do_not_change_the_fingerprint():
    base = ident.fingerprint(_ident())
    same = _ident('out_dir', '/elsewhere', 'dataset.dir', '/data',
                  'posenc.num_workers', '2', 'wandb.use', 'True',
                  'train.compile', 'True', 'optim.fused', 'False',
                  'gt.fused_attention', 'False', 'seed', '7',
                  'train.auto_resume', 'True', 'run_name', 'other')
    assert ident.fingerprint(same) == base


def test_results_keys_change_the_fingerprint_and_are_named():
    old, new = _ident(), _ident('optim.base_lr', '0.0005', 'gt.layers', '3')
    assert ident.fingerprint(old) != ident.fingerprint(new)
    changes = ident.diff(old, new)
    assert changes == [('gt.layers', 2, 3), ('optim.base_lr', 0.003, 0.0005)]
    assert ident.format_changes(changes) == 'gt.layers 2 -> 3, optim.base_lr 0.003 -> 0.0005'
    assert ident.format_changes(changes, limit=1) == 'gt.layers 2 -> 3, (+1 more)'


def test_resume_changes_split_optimiser_keys_from_the_rest():
    allowed, refused = ident.resume_changes(
        _ident(), _ident('optim.base_lr', '0.0001', 'optim.weight_decay', '0.1',
                         'gt.dim_hidden', '64', 'dataset.max_graphs', '100'))
    assert [k for k, _, _ in allowed] == ['optim.base_lr', 'optim.weight_decay']
    assert [k for k, _, _ in refused] == ['dataset.max_graphs', 'gnn.dim_inner',
                                          'gt.dim_hidden']


def test_seed_status(tmp_path):
    run_dir = tmp_path / '0'
    me = _ident()
    fp = ident.fingerprint(me)
    assert ident.seed_status(str(run_dir), me).state == 'new'
    run_dir.mkdir()
    (run_dir / 'train').mkdir()
    (run_dir / 'train' / 'stats.json').write_text('{"epoch": 0}\n')
    assert ident.seed_status(str(run_dir), me).state == 'unfinished'
    seal(run_dir, fingerprint=fp, identity=me)
    (run_dir / 'config.yaml').write_text('seed: 0\n')  # of another run
    damaged = ident.seed_status(str(run_dir), me)
    assert damaged.state == 'damaged' and 'config.yaml was changed' in damaged.describe()
    (run_dir / 'config.yaml').unlink()
    seal(run_dir, fingerprint=fp, identity=me)
    assert ident.seed_status(str(run_dir), me).state == 'complete'
    other = _ident('optim.base_lr', '0.001')
    status = ident.seed_status(str(run_dir), other)
    assert status.state == 'stale'
    assert status.describe() == 'stale: optim.base_lr 0.003 -> 0.001'
    (run_dir / 'done').write_text('{"epochs": 4}')  # written before fingerprints
    assert ident.seed_status(str(run_dir), me).describe() == \
        'stale: finished without a recorded fingerprint'


def test_switches_that_change_the_draws_join_the_identity_with_dropout():
    """With dropout, static shapes and compile draw other masks: other
    numbers, another fingerprint. Without dropout, or at their defaults,
    they stay out (the fingerprints of earlier versions hold)."""
    plain = ident.fingerprint(_ident())
    assert ident.fingerprint(_ident('train.static_shapes', 'True')) == plain
    drop = _ident('gt.dropout', '0.1')
    assert 'train.static_shapes' not in drop and 'train.compile' not in drop
    assert ident.fingerprint(_ident('gt.dropout', '0.1', 'train.static_shapes', 'auto',
                                    'train.compile', 'False')) == ident.fingerprint(drop)
    for key, value in (('train.static_shapes', 'True'), ('train.static_shapes', 'False'),
                       ('train.compile', 'True')):
        other = _ident('gt.dropout', '0.1', key, value)
        assert ident.diff(drop, other) == [(key, ident.MISSING, value == 'True')]
    # a head's dropout counts as well; so does a resume that changes it
    assert 'train.compile' in _ident('head.dropout', '0.2', 'train.compile', 'True')
    _, refused = ident.resume_changes(drop, _ident('gt.dropout', '0.1', 'train.compile',
                                                   'True'))
    assert [k for k, _, _ in refused] == ['train.compile']


def test_the_data_a_seed_read_decides_complete_or_stale(tmp_path):
    me = _ident()
    fp = ident.fingerprint(me)
    run_dir = tmp_path / '0'
    (run_dir / 'train').mkdir(parents=True)
    (run_dir / 'train' / 'stats.json').write_text('{"epoch": 0}\n')
    seal(run_dir, fingerprint=fp, identity=me, data='a1')  # read from /data

    def status(**data):
        return ident.seed_status(str(run_dir), me, data)
    assert ident.seed_status(str(run_dir), me).state == 'complete'  # not compared
    assert status(dir='/data').state == 'complete'
    moved = status(dir='/moved')
    assert moved.describe() == 'stale: dataset.dir /data -> /moved' and moved.data_moved
    assert status(dir='/moved', fingerprint='a1').state == 'complete'  # same content
    other = status(dir='/data', fingerprint='b2')
    assert other.describe() == 'stale: data fingerprint a1 -> b2' and not other.data_moved
    assert status(dir='/sample', fingerprint='b2').describe() == \
        'stale: data fingerprint a1 -> b2, dataset.dir /data -> /sample'
    seal(run_dir, fingerprint=fp, identity=me, data=None)  # an earlier version
    old = status(dir='/data')
    assert old.state == 'stale' and 'without a record of the data it read' in old.describe()
    (run_dir / 'done').write_text('[' * 100000)  # unreadable: damaged, named
    assert status().describe().startswith(f"damaged: seed folder {run_dir}: 'done' cannot")


def test_weight_decay_is_bounded():
    import pytest

    from graphgps_ext.config import ConfigError
    with pytest.raises(ConfigError, match=r"'optim.weight_decay'.*at most 1"):
        _ident('optim.weight_decay', '1e300')
    assert _ident('optim.weight_decay', '0.5')['optim.weight_decay'] == 0.5


def test_a_seed_folder_reached_through_a_link_is_damaged(tmp_path):
    me = _ident()
    run = tmp_path / 'results' / 'q'
    (run / '0' / 'train').mkdir(parents=True)
    (run / '0' / 'train' / 'stats.json').write_text('{"epoch": 0}\n')
    seal(run / '0', fingerprint=ident.fingerprint(me), identity=me)
    os.symlink('0', run / '1')
    status = ident.seed_status(str(run / '1'), me)
    assert status.state == 'damaged' and 'q/1 is a symbolic link (to 0)' in status.problem
