r"""Whether a forward pass runs for a stack of seeds.

Training :math:`K` seeds of one config as one stacked model
(:mod:`graphgps_ext.train.stack`) runs the model once under
:func:`torch.func.vmap`: every parameter, buffer and batch tensor has a
leading seed dimension that the layers do not see. Inside such a pass a
layer must not

- read a tensor's value on the host (``int(t)``, ``bool(t)``, ``.item()``,
  ``.tolist()``, a shape that depends on values such as ``nonzero`` or a
  boolean index): the values differ from seed to seed;
- write in place into a tensor it made from a factory function
  (``torch.zeros(n)[index] = value``) with an operand that carries the seed
  dimension: make it from a batch tensor instead (``index.new_zeros(n)``);
- draw random numbers in place into such a tensor (``torch.empty(n).random_()``):
  every seed would get the same numbers.

These are the constraints of a compiled forward pass too (no host read, no
value-dependent shape): a layer checks :func:`host_reads_allowed` where it
has a faster eager path that reads the host. :func:`stacked` marks the
stacked pass for the layers.
"""
from contextlib import contextmanager

import torch

_depth = 0


@contextmanager
def stacked():
    """The forward passes inside the context run for a stack of seeds."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1


def is_stacked() -> bool:
    """Whether the current forward pass runs for a stack of seeds
    (inside :func:`stacked`)."""
    return _depth > 0


def host_reads_allowed() -> bool:
    """Whether a layer may read tensor values on the host: not under
    :func:`torch.compile` (a read would break the graph or specialise it)
    nor in a stacked pass (the values differ per seed)."""
    return not (torch.compiler.is_compiling() or _depth > 0)
