r"""What :func:`torch.compile` compiles during a run (``train.compile``): the
compiled variants, the seconds their compilation took, and any
recompilation after warm-up.

A compiled function has one *variant* (a graph with its guards) per input
signature it has met: on static-shape batches one per capacity and mode
(training, evaluation) for the forward pass, and one set for the update
(:class:`~graphgps_ext.train.speed.Update`), whatever the capacity. A
step is *warm* once its variant has run: the same capacity in the same
mode, or an update after the first. :class:`CompileWatch` is told the
variant of every compiled call (:meth:`CompileWatch.call`) and counts what
dynamo compiles during it:

- in a call of a new variant, the compilation is its warm-up (counted, its
  wall time added to :attr:`CompileWatch.seconds`);
- in a warm call, anything dynamo compiles is a *recompilation after
  warm-up* (a guard that a value which changes during the run failed, a
  data-dependent shape, a global switch that flipped): one warning in the
  run's log naming dynamo's reason, and in :attr:`CompileWatch.late`.

The reasons are dynamo's own (its ``recompiles`` log, caught by a filter on
that logger: the messages of the expected variants are not printed; with
``TORCH_LOGS`` set by the user they are printed as usual and, unless it
names ``recompiles``, the warnings give no reason). A run whose compiled
code hits dynamo's recompile limit (past which a function runs eagerly)
gets a warning too. :func:`recompile_limit` sets that limit from the
number of capacities.

The counts come from ``torch._dynamo.utils.counters`` (``frames``: the
frames dynamo converted; ``stats``/``unique_graphs``: the graphs it
compiled), which this version of torch fills.
"""
import logging
import os
import time
from collections import Counter
from contextlib import contextmanager
from typing import Hashable, List, Optional, Set

#: Dynamo's logger of recompilation reasons (its ``recompiles`` artifact).
RECOMPILES_LOGGER = 'torch._dynamo.guards.__recompiles'
#: Dynamo's logger of the recompile-limit warning.
LIMIT_LOGGER = 'torch._dynamo.convert_frame'
#: Variants allowed per compiled function beyond the capacities' count.
LIMIT_SLACK = 4


def recompile_limit(train_capacities: int, eval_capacities: int) -> int:
    """Dynamo's recompile limit for a forward pass compiled on static
    shapes: one variant per training capacity and per evaluation capacity
    (each in its own mode), plus :data:`LIMIT_SLACK`, and never below
    dynamo's default of 8. With the default limit, 4 training and 5
    evaluation capacities would leave one capacity running eagerly."""
    return max(8, int(train_capacities) + int(eval_capacities) + LIMIT_SLACK)


def _counter(group: str, key: str) -> int:
    from torch._dynamo.utils import counters
    return int(counters[group].get(key, 0))


def _graph_breaks() -> int:
    from torch._dynamo.utils import counters
    return int(sum(counters['graph_break'].values()))


def variant(mode: str, batch, static: bool) -> tuple:
    """The variant of a compiled call: its ``mode`` (``'train'``,
    ``'eval'``, ...) and, on static-shape batches (``static``), the batch's
    capacity (nodes, edges, graphs)."""
    if not static:
        return (mode, )
    return (mode, int(batch.num_nodes), int(batch.edge_index.size(1)),
            int(batch.num_graphs))


class _Catch(logging.Filter):
    """A logging filter that hands dynamo's messages to the watch and lets
    them through only when ``passthrough``."""

    def __init__(self, fn, passthrough: bool):
        super().__init__()
        self.fn, self.passthrough = fn, passthrough

    def filter(self, record) -> bool:
        self.fn(record.getMessage())
        return self.passthrough


class CompileWatch:
    """Counts the compiled variants of a run and warns on a recompilation
    after warm-up (see the module docstring).

    Args:
        log: the run's logger (warnings and the summary go there).

    Attributes:
        variants: the variants met (their keys).
        calls: calls per variant.
        seconds: wall seconds of the calls that compiled.
        late: ``(variant, reason)`` of every recompilation after warm-up.
        limit_hits: dynamo's recompile-limit warnings.
    """

    def __init__(self, log: Optional[logging.Logger] = None):
        self.log = log
        self.variants: Set[Hashable] = set()
        self.calls: Counter = Counter()
        self.seconds = 0.0
        self.late: List[tuple] = []
        self.limit_hits: List[str] = []
        self._reasons: List[str] = []
        self._start_graphs = _counter('stats', 'unique_graphs')
        self._start_frames = _counter('frames', 'total')
        self._start_breaks = _graph_breaks()
        self._filters = []
        self._catch_reasons()

    # ---------------------------------------------------------- logging --
    def _catch_reasons(self):
        user = os.environ.get('TORCH_LOGS')
        if not user:  # dynamo logs its reasons only when asked to
            import torch
            torch._logging.set_logs(recompiles=True)
        passthrough = bool(user)
        for name, fn in ((RECOMPILES_LOGGER, self._reasons.append),
                         (LIMIT_LOGGER, self._limit)):
            catch = _Catch(fn, passthrough or name == LIMIT_LOGGER)
            logging.getLogger(name).addFilter(catch)
            self._filters.append((name, catch))

    def _limit(self, message: str):
        if message.startswith('torch._dynamo hit config.'):
            self.limit_hits.append(message)
            self._warn('dynamo hit its recompile limit; the function below '
                       'runs eagerly from now on: ' + message.split('\n')[0]
                       + ' ' + ' '.join(line.strip()
                                        for line in message.split('\n')[1:3]))

    def close(self):
        """Remove the logging filters and dynamo's logging switched on for
        them (the run is over)."""
        for name, catch in self._filters:
            logging.getLogger(name).removeFilter(catch)
        if self._filters and not os.environ.get('TORCH_LOGS'):
            import torch
            torch._logging.set_logs()
        self._filters = []

    def _warn(self, message: str):
        if self.log is not None:
            self.log.warning(message)
        else:
            import warnings
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    # ------------------------------------------------------------ calls --
    @contextmanager
    def call(self, variant: Hashable, also: Optional[Hashable] = None):
        """Around one call of compiled code whose variant is ``variant``
        (e.g. ``('train', nodes, edges, graphs)``, :func:`variant`);
        ``also``: a second compiled function the call runs (a training
        step's update, ``('update', )``)."""
        keys = [variant] + ([also] if also is not None else [])
        self.calls.update(keys)
        frames = _counter('frames', 'total')
        reasons = len(self._reasons)
        start = time.perf_counter()
        yield
        new = [k for k in keys if k not in self.variants]
        self.variants.update(keys)
        if _counter('frames', 'total') == frames:
            return
        self.seconds += time.perf_counter() - start
        if new:  # a warm-up
            return
        reason = ' | '.join(' '.join(r.split()) for r in self._reasons[reasons:])
        self.late.append((variant, reason))
        self._warn(f'torch.compile recompiled after warm-up (variant '
                   f'{variant}): '
                   + (reason or 'dynamo gave no reason (set TORCH_LOGS='
                      'recompiles to see it)'))

    # ---------------------------------------------------------- summary --
    @property
    def graphs(self) -> int:
        """Graphs compiled since the watch started."""
        return _counter('stats', 'unique_graphs') - self._start_graphs

    @property
    def frames(self) -> int:
        """Frames dynamo converted since the watch started."""
        return _counter('frames', 'total') - self._start_frames

    @property
    def graph_breaks(self) -> int:
        return _graph_breaks() - self._start_breaks

    def summary(self) -> str:
        """One line: variants, graphs, compile seconds, graph breaks, and
        whether anything was recompiled after warm-up."""
        late = (f'{len(self.late)} recompilation(s) after warm-up (see the '
                'warnings)' if self.late else
                'none recompiled after warm-up')
        limit = (f'; dynamo hit its recompile limit {len(self.limit_hits)} '
                 'time(s)' if self.limit_hits else '')
        return (f'torch.compile: {len(self.variants)} variant(s) compiled '
                f'({self.graphs} graph(s), {self.graph_breaks} graph '
                f'break(s)) in {self.seconds:.1f} s of compiling calls; '
                f'{late}{limit}')
