r"""Inverted dropout with a fast random mask, used by every layer and head.

:func:`torch.nn.functional.dropout` draws one Bernoulli sample per entry
(``bernoulli_``), which on CPU costs about 20 ns per entry: 24 ms for a
``[7700, 128]`` NCI1 batch, more than the layer's matrix products.
:func:`dropout_keep` instead takes 16 random bits per entry from 64-bit
integer draws (four entries per draw) and compares them with a threshold,
about five times cheaper. The drop probability is :math:`p` rounded to a
multiple of :math:`2^{-16}` (exact for 0.5, 0.25, ...; off by at most
:math:`7.7 \cdot 10^{-6}` otherwise) and the kept entries are scaled by the
exact inverse of the keep probability (:func:`keep_scale`), so

.. math::
    \mathrm{Drop}_p(x) = x \odot m / P(m = 1), \qquad
    \mathbb{E}[\mathrm{Drop}_p(x)] = x.

:class:`Dropout` is a drop-in replacement of :class:`torch.nn.Dropout`
(identity in eval mode and for ``p = 0``).
"""
import math

import torch
from torch import Tensor, nn


def dropout_keep(shape, p: float, device=None) -> Tensor:
    r"""Boolean keep mask of ``shape``: ``True`` with probability
    :math:`1 - \lfloor 2^{16} p \rceil / 2^{16}`."""
    threshold = round(p * 65536) - 32768  # drop the int16 values below it
    if threshold > 32767:  # p = 1 (the int16 comparison would overflow)
        return torch.zeros(shape, dtype=torch.bool, device=device)
    numel = math.prod(shape)
    draws = torch.randint(-2 ** 63, 2 ** 63 - 1, ((numel + 3) // 4, ),
                          dtype=torch.int64, device=device)
    bits = draws.view(torch.int16)[:numel].view(shape)
    return bits >= threshold


def keep_scale(p: float) -> float:
    """``1 / P(keep)`` of :func:`dropout_keep` (0 when everything drops)."""
    keep = 1.0 - round(p * 65536) / 65536
    return 1.0 / keep if keep > 0 else 0.0


def dropout(x: Tensor, p: float, training: bool, scale: bool = True) -> Tensor:
    """Inverted dropout of ``x`` with :func:`dropout_keep`; ``x`` itself when
    not training or ``p = 0``. With ``scale=False`` the kept entries are not
    rescaled (the caller multiplies a smaller tensor downstream by
    :func:`keep_scale`)."""
    if not training or p == 0.0:
        return x
    # A float 0/1 mask: multiplying by it (and by it again in the backward)
    # is several times cheaper on CPU than ``where`` or a bool operand.
    keep = dropout_keep(x.shape, p, x.device).to(x.dtype)
    out = x * keep
    return out.mul_(keep_scale(p)) if scale else out


class Dropout(nn.Module):
    """:class:`torch.nn.Dropout` with the fast mask of :func:`dropout`.

    Args:
        p: drop probability.
    """

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f'dropout probability must be in [0, 1], got {p}')
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f'p={self.p}'
