r"""Batches made ahead of the training step (``train.prefetch``).

Without it the main thread makes every batch between two steps: the
collate function (and the padding of static shapes) and the copy to the
device. On a GPU the device then waits for the host between steps.
:class:`Prefetcher` iterates a loader in a background thread, ``depth``
batches ahead: batch :math:`n+1` is collated, padded and copied (from
pinned memory, ``non_blocking``) while step :math:`n` runs, and the main
thread only takes the finished batch from a queue.

The batches (ordinary tensors, never inference tensors: the thread does
not inherit the caller's ``torch.inference_mode``; :func:`made_batches`
makes the same without a thread) and their order are the loader's: the
iterator (and with it
the sampler's order and the loader's seed draw) is made in the calling
thread; the thread only calls ``next`` on it. Nothing else in the thread
draws random numbers, unless a dataset applies a random transform on
access (:func:`prefetch_safe` says when a loader is prefetched). Device
work of the thread goes to the same stream as the main thread's (the
current stream of the device), so a batch is complete before any kernel
the main thread queues after receiving it, and its memory is never
reused early. A failure in the thread is raised in the main thread at
the batch where it happened.
"""
import queue
import threading
from typing import Iterable, Iterator, Optional

import torch

#: Batches made ahead of the one in use.
DEPTH = 2
#: Seconds between checks of the stop flag while the queue is full.
POLL_S = 0.1

_END = object()


def to_device(batch, device: Optional[torch.device]):
    """``batch`` on ``device`` (``non_blocking``: from pinned memory the
    host does not wait for the copy)."""
    if device is None or not hasattr(batch, 'to'):
        return batch
    return batch.to(device, non_blocking=True)


def made_batches(loader: Iterable, device: Optional[torch.device] = None
                 ) -> Iterator:
    """The batches of ``loader`` on ``device``, made one by one when asked
    for, as ordinary tensors even inside ``torch.inference_mode`` (an
    evaluation pass): the same kind of tensors as a :class:`Prefetcher`'s
    thread makes and the fast-path check runs, so that compiled code
    guarded on them serves both."""
    source = iter(loader)
    while True:
        with torch.inference_mode(False):
            try:
                batch = next(source)
            except StopIteration:
                return
            batch = to_device(batch, device)
        yield batch


def prefetch_safe(loader) -> bool:
    """Whether ``loader`` can be iterated in a background thread with the
    same results: its dataset applies no transform on access (a transform
    could draw from the global random number generator, which the training
    step draws from too)."""
    return getattr(getattr(loader, 'dataset', None), 'transform', None) is None


class Prefetcher:
    """Iterate ``loader`` in a background thread, ``depth`` batches ahead,
    each moved to ``device`` (see the module docstring).

    Args:
        loader: any iterable of batches (a data loader).
        device: where the batches go (``None``: left where they are).
        depth: batches made ahead.
    """

    def __init__(self, loader: Iterable, device: Optional[torch.device] = None,
                 depth: int = DEPTH):
        self.loader, self.device, self.depth = loader, device, max(1, int(depth))

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator:
        source = iter(self.loader)  # in this thread: the sampler, the seed
        items: 'queue.Queue' = queue.Queue(maxsize=self.depth)
        stop = threading.Event()

        def put(item) -> bool:
            while not stop.is_set():
                try:
                    items.put(item, timeout=POLL_S)
                    return True
                except queue.Full:
                    continue
            return False

        def work():
            try:
                for batch in source:
                    if not put((to_device(batch, self.device), None)):
                        return
                put((_END, None))
            except BaseException as err:  # raised in the main thread
                put((None, err))

        thread = threading.Thread(target=work, name='graphgps-prefetch',
                                  daemon=True)
        thread.start()
        try:
            while True:
                batch, err = items.get()
                if err is not None:
                    raise err
                if batch is _END:
                    return
                yield batch
        finally:
            stop.set()
            thread.join()
