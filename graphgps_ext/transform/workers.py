"""Worker processes of the encoding precompute.

:func:`fork_pool` is a :class:`multiprocessing.pool.Pool` of forked workers
(they share the parent's graphs without pickling them) that can always be
stopped: each worker starts with the default SIGTERM and SIGINT actions. A
handler inherited from the parent (``main.py`` turns SIGTERM into an
interrupt, and ignores a second one while it stops) would otherwise keep a
worker that waits on the task queue alive when the pool terminates it.
"""
import multiprocessing as mp
import signal


def _default_signals():
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def fork_pool(num_workers: int):
    """A pool of ``num_workers`` forked workers with default signal actions
    (use as a context manager)."""
    return mp.get_context('fork').Pool(num_workers, initializer=_default_signals)
