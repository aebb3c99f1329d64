"""Atomic writes and their temporary files."""
import contextlib
import errno
import io
import os

import pytest

from graphgps_ext.files import (ResultsWriteError, loads, read_jsonl, remove_temp_files,
                                write_text)


def test_stale_temp_files_are_found_and_removed(tmp_path):
    (tmp_path / 'ckpt').mkdir()
    for name in ('ckpt/last.pt.tmp4242', 'best.json.tmp7', 'ckpt/last.pt',
                 'notes.tmp', 'train.tmpx'):
        (tmp_path / name).write_bytes(b'x')
    removed = remove_temp_files(str(tmp_path))
    assert [os.path.relpath(p, tmp_path) for p in removed] == [
        'best.json.tmp7', 'ckpt/last.pt.tmp4242']
    assert sorted(os.listdir(tmp_path)) == ['ckpt', 'notes.tmp', 'train.tmpx']


@pytest.mark.parametrize('code,words', [
    (errno.ENOSPC, 'The disk is full: free some space'),
    (errno.EDQUOT, 'quota there is used up'),
    (errno.EROFS, 'mounted read-only: set out_dir to a writable location'),
    (errno.EACCES, 'You may not write there'),
    (errno.EPERM, 'You may not write there'),
    (errno.ENOTDIR, 'A file stands where a folder is needed'),
    (errno.EIO, 'input/output error'),
    (errno.EBUSY, 'The operating system refused (EBUSY)'),
])
def test_write_errors_are_advised_by_their_cause(tmp_path, code, words):
    err = ResultsWriteError(str(tmp_path / 'x'), OSError(code, os.strerror(code)))
    assert words in err.advice
    if code not in (errno.ENOSPC, errno.EDQUOT):
        assert 'free some space' not in err.advice.lower()


def test_a_path_too_long_says_so(tmp_path):
    """A long out_dir fails with ENAMETOOLONG: the advice is to shorten it,
    not to free space; main.py prints it with the resume command."""
    import main
    path = str(tmp_path / ('d' * 300) / 'done')
    with pytest.raises(ResultsWriteError) as err:
        write_text(path, 'x')
    assert err.value.errno == errno.ENAMETOOLONG
    assert 'its longest name has 300' in err.value.advice
    assert 'use a shorter out_dir or run_name' in err.value.advice
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        assert main.answer(err.value, 'python main.py ...', main.failures()) == 4
    assert 'too long' in buf.getvalue() and 'Free some space' not in buf.getvalue()


def test_temporary_files_are_created_exclusively_never_through_a_link(tmp_path):
    victim = tmp_path / 'victim'
    victim.write_text('not yours\n')
    target = tmp_path / 'done'
    os.symlink(victim, f'{target}.tmp{os.getpid()}')  # planted where the write goes
    write_text(str(target), 'mine\n')
    assert target.read_text() == 'mine\n' and victim.read_text() == 'not yours\n'
    os.symlink(victim, tmp_path / 'link')
    write_text(str(tmp_path / 'link'), 'replaced\n')  # the link is replaced
    assert not os.path.islink(tmp_path / 'link') and victim.read_text() == 'not yours\n'


def test_json_nesting_is_bounded(tmp_path):
    assert loads('{"a": [1, {"b": "[[[["}], "c": NaN}')['a'][1] == {'b': '[[[['}
    assert loads('"' + '[' * 1000 + '"') == '[' * 1000  # inside a string: not nesting
    for text in ('[' * 100_000 + ']' * 100_000, '{"a":' * 70 + '1' + '}' * 70):
        with pytest.raises(ValueError, match='levels deep'):
            loads(text)
    assert loads('[' * 64 + ']' * 64) is not None
    lines = tmp_path / 'history.jsonl'  # JSON lines: read up to the deep one
    lines.write_text('{"a": 1}\n' + '[' * 100_000 + ']' * 100_000 + '\n{"b": 2}\n')
    assert read_jsonl(str(lines)) == [{'a': 1}]
