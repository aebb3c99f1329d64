"""Run identity: the fingerprint ignores paths, logging, threads and speed
switches, names what differs, and classifies resume changes."""
import json

from graphgps_ext import identity as ident
from graphgps_ext.run_config import load_cfg

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
