"""The seed folder's lock (one live owner, released by the OS on any exit)
and the replacement of an old run that is undone after a failed or killed
start."""
import json
import os
import signal
import subprocess
import sys

import pytest

from graphgps_ext.logger import STATS_FILE
from graphgps_ext.results import seed_folder as sf
from graphgps_ext.results.tree import RunFileError, UnsafePath

from run_checks import snapshot


def make_run(folder):
    """A finished run's entries plus a file of the user's."""
    for split in ('train', 'val', 'test'):
        (folder / split).mkdir(parents=True)
        (folder / split / STATS_FILE).write_text(f'{{"epoch": 0, "{split}": 1}}\n')
    (folder / 'ckpt').mkdir()
    (folder / 'ckpt' / 'last.pt').write_bytes(b'old weights')
    for name in ('config.yaml', 'logging.log', 'best.json', 'done', 'data.json'):
        (folder / name).write_text(f'old {name}\n')
    (folder / 'notes.txt').write_text('mine\n')
    return snapshot(folder)


def test_second_owner_is_refused_and_told_who_holds_it(tmp_path):
    run_dir = tmp_path / 'results' / 'x' / '0'
    with sf.SeedLock(str(run_dir)) as lock:
        info = json.loads((run_dir / 'lock').read_text())
        assert info['pid'] == os.getpid() and info['host'] and info['started']
        assert sf.lock_holder(str(run_dir))['pid'] == os.getpid()
        with pytest.raises(sf.SeedLocked, match=rf'in use by another run: pid '
                                                 rf'{os.getpid()} on host'):
            sf.SeedLock(str(run_dir)).acquire()
        assert lock.fd is not None
    # Released: the lock file and the folders it created are gone.
    assert sf.lock_holder(str(run_dir)) is None
    assert not (tmp_path / 'results').exists()


def test_lock_of_a_killed_process_does_not_block(tmp_path):
    run_dir = tmp_path / '0'
    code = ('import sys, time; from graphgps_ext.results.seed_folder import SeedLock; '
            f'SeedLock({str(run_dir)!r}).acquire(); print("held", flush=True); '
            'time.sleep(60)')
    proc = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == 'held'
        assert sf.lock_holder(str(run_dir))['pid'] == proc.pid
        with pytest.raises(sf.SeedLocked, match=f'pid {proc.pid}'):
            sf.SeedLock(str(run_dir)).acquire()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert (run_dir / 'lock').exists()  # left behind by the killed process
    assert sf.lock_holder(str(run_dir)) is None
    with sf.SeedLock(str(run_dir)):
        assert sf.lock_holder(str(run_dir))['pid'] == os.getpid()


def test_replacement_commits_only_run_entries(tmp_path):
    run = tmp_path / '0'
    make_run(run)
    rep = sf.Replacement(str(run))
    moved = rep.aside()
    assert moved[0] == 'done' and 'notes.txt' not in moved
    assert sorted(os.listdir(run)) == ['.replacing', 'notes.txt']
    (run / 'config.yaml').write_text('new\n')
    rep.commit()
    assert sorted(os.listdir(run)) == ['config.yaml', 'notes.txt']


def test_rollback_restores_the_old_run_exactly(tmp_path):
    run = tmp_path / '0'
    before = make_run(run)
    rep = sf.Replacement(str(run))
    rep.aside()
    (run / 'config.yaml').write_text('new\n')  # the new run's first files
    (run / 'train').mkdir()
    (run / 'split_indices.pt').write_bytes(b'new')
    rep.rollback()
    assert snapshot(run) == before and '.replacing' not in os.listdir(run)


@pytest.mark.parametrize('moved', [0, 3, 'all'])
def test_killed_replacement_is_restored_by_the_next_start(tmp_path, moved):
    """A process killed after moving ``moved`` entries aside (and, once all
    are moved, after writing new files) leaves ``.replacing/``;
    :func:`recover` brings back the old run exactly."""
    run = tmp_path / '0'
    before = make_run(run)
    names = sf.run_entries(str(run))
    pending = run / '.replacing'
    pending.mkdir()
    (pending / 'manifest.json').write_text(json.dumps(names))
    count = len(names) if moved == 'all' else moved
    for name in names[:count]:
        os.replace(run / name, pending / name)
    if moved == 'all':
        (run / 'config.yaml').write_text('new\n')
        (run / 'logging.log').write_text('new log\n')
    assert sf.recover(str(run)) == names[:count]
    assert snapshot(run) == before and '.replacing' not in os.listdir(run)
    assert sf.recover(str(run)) == []  # nothing left to do


def test_committed_leftovers_are_deleted(tmp_path):
    run = tmp_path / '0'
    (run / '.replaced' / 'ckpt').mkdir(parents=True)
    (run / 'config.yaml').write_text('new\n')
    assert sf.recover(str(run)) == []
    assert os.listdir(run) == ['config.yaml']


def test_stopped_before_the_manifest_nothing_is_touched(tmp_path):
    run = tmp_path / '0'
    before = make_run(run)
    (run / '.replacing').mkdir()
    (run / '.replacing' / 'manifest.json.tmp').write_text('["do')
    assert sf.recover(str(run)) == []
    assert snapshot(run) == before and '.replacing' not in os.listdir(run)


# ------------------------------------------------------------- the jail --
def _victim(tmp_path):
    victim = tmp_path / 'outside' / 'victim.txt'
    victim.parent.mkdir(exist_ok=True)
    victim.write_text('not yours\n')
    return victim


def test_a_lock_that_is_a_link_is_refused_and_its_target_untouched(tmp_path):
    victim = _victim(tmp_path)
    run_dir = tmp_path / 'results' / 'x' / '0'
    run_dir.mkdir(parents=True)
    os.symlink(victim, run_dir / 'lock')
    with pytest.raises(UnsafePath, match='lock is a symbolic link'):
        sf.SeedLock(str(run_dir)).acquire()
    os.symlink(tmp_path / 'outside' / 'created-by-a-dangling-link', run_dir / 'l2')
    os.replace(run_dir / 'l2', run_dir / 'lock')  # dangling: open would create it
    with pytest.raises(UnsafePath):
        sf.SeedLock(str(run_dir)).acquire()
    assert victim.read_text() == 'not yours\n'
    assert os.listdir(tmp_path / 'outside') == ['victim.txt']
    assert sf.lock_holder(str(run_dir)) is None


def test_a_left_lock_hard_linked_outside_is_replaced_not_written(tmp_path):
    """A ``lock`` left behind (no holder) is replaced by a file the new
    holder creates: a hard link to an outside file is unlinked, the file
    keeps its bytes."""
    victim = _victim(tmp_path)
    run_dir = tmp_path / 'results' / 'x' / '0'
    run_dir.mkdir(parents=True)
    os.link(victim, run_dir / 'lock')
    with sf.SeedLock(str(run_dir)):
        assert sf.lock_holder(str(run_dir))['pid'] == os.getpid()
        assert os.stat(run_dir / 'lock').st_ino != os.stat(victim).st_ino
    assert victim.read_text() == 'not yours\n'


@pytest.mark.parametrize('manifest', [['../../../outside/victim.txt'],
                                      ['done', '../../outside/victim.txt'],
                                      ['/outside/victim.txt'], ['done/../../x']])
def test_recovery_never_moves_what_a_manifest_names_outside(tmp_path, manifest):
    victim = _victim(tmp_path)
    run = tmp_path / 'results' / 'x' / '0'
    before = make_run(run)
    (run / '.replacing').mkdir()
    (run / '.replacing' / 'manifest.json').write_text(json.dumps(manifest))
    with pytest.raises(RunFileError, match='not only names of run entries'):
        sf.recover(str(run))
    assert victim.read_text() == 'not yours\n'
    # Nothing moved: the folder is left as it was, for the user to inspect.
    assert {k: v for k, v in snapshot(run).items()
            if not k.startswith('.replacing')} == before


def test_a_pending_folder_that_is_a_link_is_refused(tmp_path):
    victim = _victim(tmp_path)
    run = tmp_path / 'results' / 'x' / '0'
    make_run(run)
    (tmp_path / 'outside' / 'manifest.json').write_text('["victim.txt"]')
    os.symlink(tmp_path / 'outside', run / '.replacing')
    with pytest.raises(UnsafePath, match='.replacing is a symbolic link'):
        sf.recover(str(run))
    assert victim.read_text() == 'not yours\n'
    assert sorted(os.listdir(tmp_path / 'outside')) == ['manifest.json', 'victim.txt']


def test_linked_entries_are_moved_and_deleted_as_links(tmp_path):
    """A run entry that is a link (``ckpt`` -> a folder elsewhere) is moved
    aside and deleted as a link: what it points to is untouched."""
    victim = _victim(tmp_path)
    run = tmp_path / 'results' / 'x' / '0'
    run.mkdir(parents=True)
    os.symlink(tmp_path / 'outside', run / 'ckpt')
    os.symlink(victim, run / 'done')
    rep = sf.Replacement(str(run))
    assert rep.aside() == ['done', 'ckpt']
    rep.commit()
    assert os.listdir(run) == [] and victim.read_text() == 'not yours\n'
