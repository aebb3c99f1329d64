"""Atomic writes and their temporary files."""
import os

from graphgps_ext.files import remove_temp_files


def test_stale_temp_files_are_found_and_removed(tmp_path):
    (tmp_path / 'ckpt').mkdir()
    for name in ('ckpt/last.pt.tmp4242', 'best.json.tmp7', 'ckpt/last.pt',
                 'notes.tmp', 'train.tmpx'):
        (tmp_path / name).write_bytes(b'x')
    removed = remove_temp_files(str(tmp_path))
    assert [os.path.relpath(p, tmp_path) for p in removed] == [
        'best.json.tmp7', 'ckpt/last.pt.tmp4242']
    assert sorted(os.listdir(tmp_path)) == ['ckpt', 'notes.tmp', 'train.tmpx']
