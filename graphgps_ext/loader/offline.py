"""Offline-safe dataset access: fail fast with instructions, never prompt.

Every loader checks its raw files with :func:`require_files` *before* it
constructs a PyG/OGB dataset class.  When a file is missing, a quick network
probe decides what happens:

* network reachable: the dataset class downloads as usual (inside
  :func:`no_prompt`, so OGB's "This will download N GB. Proceed? (y/N)" is
  answered *yes* instead of blocking on stdin);
* no network (probe fails within :data:`PROBE_TIMEOUT` seconds), or the
  environment variable ``GRAPHGPS_EXT_OFFLINE=1`` is set, or
  ``dataset.offline: True``: a :class:`DatasetNotFoundError` names the missing
  files, the download URL(s) and the exact folder to put them in.
"""
import builtins
import contextlib
import logging
import os
import os.path as osp
import socket
import threading
from typing import List, Sequence
from urllib.parse import urlparse

from graphgps_ext.loader.errors import DatasetNotFoundError

OFFLINE_ENV = 'GRAPHGPS_EXT_OFFLINE'
PROBE_TIMEOUT = 2.0
log = logging.getLogger(__name__)


def offline_forced(cfg=None) -> bool:
    """``True`` when ``GRAPHGPS_EXT_OFFLINE`` is set (not ``0``/``false``) or
    ``cfg.dataset.offline`` is true."""
    env = os.environ.get(OFFLINE_ENV, '').strip().lower()
    if env not in ('', '0', 'false', 'no'):
        return True
    return bool(cfg is not None and cfg.dataset.get('offline', False))


def network_available(url: str, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether a TCP connection to ``url``'s host can be opened within
    ``timeout`` seconds (name resolution included; never blocks longer)."""
    parsed = urlparse(url)
    host = parsed.hostname
    if host is None:
        return False
    port = parsed.port or (443 if parsed.scheme == 'https' else 80)
    result: List[bool] = []

    def probe():
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result.append(True)
        except OSError:
            result.append(False)

    # A daemon thread bounds the wait even if name resolution hangs.
    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])


def require_files(files: Sequence[str], *, dataset: str, urls: Sequence[str],
                  folder: str, how: str = '', cfg=None):
    """Return if every path in ``files`` exists or a download is possible.

    Raises:
        DatasetNotFoundError: files are missing and there is no network (or
            offline mode is forced). The message lists the missing files, the
            URL(s) to fetch and the folder where they belong.
    """
    missing = [f for f in files if not osp.exists(f)]
    if not missing:
        return
    if offline_forced(cfg):
        reason = (f'offline mode is on ({OFFLINE_ENV}=1 or dataset.offline: '
                  'True)')
    else:
        if urls and network_available(urls[0]):
            log.info('%s: missing %s, downloading from %s', dataset,
                         ', '.join(missing), urls[0])
            return
        host = urlparse(urls[0]).hostname if urls else '?'
        reason = (f'no network connection ({host} not reachable within '
                  f'{PROBE_TIMEOUT:.0f} s)')
    lines = [f"Dataset {dataset} is not available: {reason}.",
             'Missing file(s):']
    lines += [f'  {m}' for m in missing]
    lines.append('Download from:')
    lines += [f'  {u}' for u in urls]
    lines.append(f'and put the files into: {folder}')
    if how:
        lines.append(how)
    lines.append('(or point dataset.dir at a folder that already holds them)')
    raise DatasetNotFoundError('\n'.join(lines))


def _answer_prompt(prompt: str = '') -> str:
    text = str(prompt)
    if 'download' in text.lower():
        log.info('answering yes to: %s', text.strip())
        return 'y'
    raise DatasetNotFoundError(
        'a dataset class asked on stdin: ' + text.strip()
        + '\nThe dataset folder is incomplete or from another release: delete '
        'it (or add the release marker file it expects) and run again.')


@contextlib.contextmanager
def no_prompt():
    """Replace :func:`input` while dataset classes run: download questions are
    answered *yes* (the network was checked already), any other question
    (e.g. OGB's "update the dataset?") raises instead of blocking."""
    original = builtins.input
    builtins.input = _answer_prompt
    try:
        yield
    finally:
        builtins.input = original
