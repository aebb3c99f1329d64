r"""Normalisation layers that know which rows of a batch are real.

A static-shape batch (``train.static_shapes``) carries padding rows: nodes,
edges or graphs appended so that every batch has one of a few fixed sizes.
Row-wise layers (Linear, LayerNorm) are unaffected by them; a batch norm in
training mode is not, because its statistics are means over the rows.
:class:`MaskedBatchNorm1d` takes a row mask :math:`m \in \{0, 1\}^N` and
computes the statistics over the real rows only,

.. math::
    \mu = \frac{\sum_i m_i x_i}{n}, \qquad
    \sigma^2 = \frac{\sum_i m_i (x_i - \mu)^2}{n}, \qquad
    n = \textstyle\sum_i m_i \cdot \prod_{k \ge 2} s_k,

    y_i = \gamma\,\frac{x_i - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta,

with the running statistics updated as :class:`torch.nn.BatchNorm1d` does
(momentum, or the cumulative average when ``momentum is None``; the running
variance is the unbiased :math:`\sigma^2 n / (n - 1)`). With fewer than two
real values (:class:`~torch.nn.BatchNorm1d` would raise) the running
statistics are left as they are and the output stays finite. For an input
``[N, C, *S]`` the statistics run over the rows and the trailing dimensions
``S``, as in :class:`~torch.nn.BatchNorm1d`. Padding rows are normalised with
the real rows' statistics (finite, and ignored downstream). Without a mask
the module *is* :class:`~torch.nn.BatchNorm1d` (same parameters, buffers,
state-dict keys and kernel), so the eager path is unchanged.
"""
from typing import Optional

import torch
from torch import Tensor, nn


class MaskedBatchNorm1d(nn.BatchNorm1d):
    r""":class:`~torch.nn.BatchNorm1d` whose batch statistics skip masked rows.

    ``forward(x [N, C, *S], mask [N] bool | None, real: int | None)``: with
    ``mask`` (and in training mode, or without running statistics) only the
    rows where ``mask`` is ``True`` enter :math:`\mu`, :math:`\sigma^2` and
    the running statistics. ``mask=None``: plain batch norm.

    ``real``: the real rows are the first ``real`` (a count known on the
    host, as for a static-shape batch's nodes and edges). Eagerly, the
    module then runs PyTorch's batch norm kernel on those rows and pads the
    output with zero rows: three operators instead of the masked sums'
    twenty, and bit-identical to the unpadded batch. Under
    ``torch.compile`` (where a varying ``real`` would specialise the graph)
    the masked sums run instead, which the compiler fuses.
    """

    def forward(self, x: Tensor, mask: Optional[Tensor] = None,
                real: Optional[int] = None) -> Tensor:
        use_batch = self.training or not self.track_running_stats
        if mask is None or not use_batch:
            return super().forward(x)
        if real is not None and not torch.compiler.is_compiling():
            out = super().forward(x[:real])
            pad = [0, 0] * (x.dim() - 1) + [0, x.size(0) - real]
            return torch.nn.functional.pad(out, pad)
        dtype = x.dtype  # half-precision inputs (autocast): float32 statistics
        if dtype in (torch.float16, torch.bfloat16):
            x = x.float()
        shape = (-1, ) + (1, ) * (x.dim() - 1)
        keep = mask.view(shape)
        dims = [0] + list(range(2, x.dim()))
        per_row = 1
        for s in x.shape[2:]:
            per_row *= s
        count = mask.sum().to(x.dtype) * per_row
        denom = count.clamp(min=1)  # no real row: finite zeros, not NaN
        mean = torch.where(keep, x, 0).sum(dims) / denom
        stat_shape = (1, -1) + (1, ) * (x.dim() - 2)
        diff = torch.where(keep, x - mean.view(stat_shape), 0)
        var = diff.pow(2).sum(dims) / denom
        if self.training and self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                if self.momentum is None:
                    factor = 1.0 / self.num_batches_tracked.to(x.dtype)
                else:
                    factor = self.momentum
                # Fewer than two real values: the running statistics stay
                # (a device-side choice, no host sync).
                factor = (count > 1).to(x.dtype) * factor
                unbiased = var * count / (count - 1).clamp(min=1)
                self.running_mean.mul_(1 - factor).add_(
                    factor * mean.to(self.running_mean.dtype))
                self.running_var.mul_(1 - factor).add_(
                    factor * unbiased.to(self.running_var.dtype))
        out = (x - mean.view(stat_shape)) * torch.rsqrt(
            var.view(stat_shape) + self.eps)
        if self.affine:
            out = out * self.weight.view(stat_shape) + self.bias.view(stat_shape)
        return out.to(dtype)


def normalize(norm: Optional[nn.Module], x: Tensor,
              mask: Optional[Tensor] = None, real: Optional[int] = None) -> Tensor:
    """``norm(x)``, passing the row ``mask`` (and the count ``real`` of
    leading real rows, when they are a prefix) to a :class:`MaskedBatchNorm1d`.

    Raises ``ValueError`` for a mask and another batch norm (e.g. a
    ``SyncBatchNorm``), whose statistics would include the padding rows."""
    if norm is None:
        return x
    if mask is None:
        return norm(x)
    if isinstance(norm, MaskedBatchNorm1d):
        return norm(x, mask, real)
    if isinstance(norm, nn.modules.batchnorm._BatchNorm):
        raise ValueError(
            f'{type(norm).__name__} cannot skip the padding rows of a '
            'static-shape batch; set train.static_shapes False')
    return norm(x)


def prefix_rows(data, name: str) -> Optional[int]:
    """``data.<name>`` (``real_nodes`` / ``real_edges``: the count of leading
    real rows of a static-shape batch), or ``None``. Always ``None`` under
    ``torch.compile``: a Python int that changes from batch to batch would be
    specialised into the compiled graph (one recompilation per value)."""
    if torch.compiler.is_compiling():
        return None
    return getattr(data, name, None)
