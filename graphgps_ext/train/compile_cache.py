r"""Compilation paid once per config (``train.compile``).

A cold :func:`torch.compile` of a model traces it (dynamo), differentiates
it (AOT autograd) and generates and builds kernels (inductor): minutes for
one capacity of a 10-layer model. Inductor keeps what it built in an
on-disk cache (``TORCHINDUCTOR_CACHE_DIR``, by default a folder in the
machine's ``/tmp``): a second process that compiles the same graphs finds
them there and only traces. Two things make that hold for the seeds of a
sweep, wherever they run:

- :func:`sweep_env`: the launcher (``python -m graphgps_ext.sweep``, on
  this machine and in its SLURM scripts) points ``TORCHINDUCTOR_CACHE_DIR``
  of the runs it starts at ``<out_dir>/_compile_cache``
  (:attr:`graphgps_ext.results.tree.Results.COMPILE_CACHE`), unless the
  environment sets it (the user's choice wins): every run of a results
  tree shares one cache, on the shared file system where SLURM array
  tasks on other nodes write their results;
- :func:`save_artefacts` and :func:`load_artefacts`: torch's portable
  cache artefacts (:func:`torch.compiler.save_cache_artifacts`, the
  compiled graphs and kernels of this process in one file) are written to
  ``<out_dir>/_compile_cache/artefacts/<run_name>.bin`` once the first
  epoch has compiled its variants, and loaded by every later run of that
  config before it compiles: a run whose inductor cache is elsewhere
  (``main.py`` started by hand, a node-local ``TORCHINDUCTOR_CACHE_DIR``)
  starts warm too.
"""
import os
from typing import Dict, Optional

#: The environment variable of inductor's cache folder.
CACHE_ENV = 'TORCHINDUCTOR_CACHE_DIR'
#: Folder of the portable artefacts inside the results tree's cache.
ARTEFACTS = 'artefacts'


def cache_folder(out_dir: str) -> str:
    """``<out_dir>/_compile_cache``, absolute."""
    from graphgps_ext.results.tree import Results
    return os.path.abspath(Results(out_dir).compile_cache)


def sweep_env(out_dir: str, environ=None) -> Dict[str, str]:
    """The environment a launcher adds for a run in ``out_dir``:
    ``{TORCHINDUCTOR_CACHE_DIR: <out_dir>/_compile_cache}``, or nothing when
    ``environ`` (default: this process's) sets it already."""
    environ = os.environ if environ is None else environ
    return {} if environ.get(CACHE_ENV) else {CACHE_ENV: cache_folder(out_dir)}


def artefacts_path(out_dir: str, run_name: str) -> str:
    """``<out_dir>/_compile_cache/artefacts/<run_name>.bin``."""
    return os.path.join(cache_folder(out_dir), ARTEFACTS,
                        run_name.replace(os.sep, '-') + '.bin')


def load_artefacts(path: str) -> Optional[str]:
    """Load the portable cache artefacts in ``path`` into this process's
    caches (:func:`torch.compiler.load_cache_artifacts`); a note of what
    was loaded, or ``None`` when there is no file. An unreadable file (a
    torch that wrote another format) is a note, not an error: the run then
    compiles as a cold one."""
    import torch
    load = getattr(torch.compiler, 'load_cache_artifacts', None)
    if load is None or not os.path.isfile(path):  # (torch before 2.7: none)
        return None
    try:
        with open(path, 'rb') as f:
            data = f.read()
        info = load(data)
    except Exception as err:  # the run compiles cold, nothing is lost
        return f'compile artefacts {path} not loaded ({type(err).__name__}: {err})'
    return f'compile artefacts loaded from {path} ({len(data) / 2**20:.1f} MiB)' \
        if info is not None else None


def save_artefacts(path: str) -> Optional[int]:
    """Write this process's portable cache artefacts
    (:func:`torch.compiler.save_cache_artifacts`) to ``path``, atomically;
    the bytes written, or ``None`` when torch has none."""
    import torch

    from graphgps_ext.files import atomic_write_bytes
    save = getattr(torch.compiler, 'save_cache_artifacts', None)
    out = save() if save is not None else None
    if not out or not out[0]:
        return None
    data = out[0]
    atomic_write_bytes(path, lambda f: f.write(data))
    return len(data)


def start(out_dir: str, run_name: str, log=None) -> str:
    """Before a compiled run compiles: load the config's artefacts
    (:func:`load_artefacts`) and log where inductor's cache is; returns the
    artefacts' path (for :class:`ArtefactSaver`)."""
    path = artefacts_path(out_dir, run_name)
    note = load_artefacts(path)
    if log is not None:
        folder = os.environ.get(CACHE_ENV)
        log.info(f'compile cache: {folder or "torch default"} ({CACHE_ENV})'
                 + (f'; {note}' if note else ''))
    return path


class ArtefactSaver:
    """A trainer callback (``fn(trainer, epoch, records)``) that writes the
    portable cache artefacts (:func:`save_artefacts`) after an epoch that
    compiled new variants (the trainer's
    :class:`~graphgps_ext.train.compile_watch.CompileWatch`): usually once,
    after the first epoch. Only the main process writes."""

    def __init__(self, path: str, log=None):
        self.path, self.log, self.saved = path, log, None

    def __call__(self, trainer, epoch: int, records):
        from graphgps_ext import dist
        watch = getattr(trainer, 'watch', None)
        if watch is None or not dist.is_main_process():
            return
        count = len(watch.variants)
        if count == self.saved:
            return
        self.saved = count
        size = save_artefacts(self.path)
        if size is not None and self.log is not None:
            self.log.info(f'compile artefacts of {count} variant(s) written to '
                          f'{self.path} ({size / 2**20:.1f} MiB)')
