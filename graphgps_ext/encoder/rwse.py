r"""RWSE node encoder (GraphGPS ``RWSE`` / kernel PE encoder).

Input ``pe_rwse`` ``[N, K]`` = :math:`[(P^{k})_{ii}]_{k}` with
:math:`P = D^{-1}A` (:mod:`graphgps_ext.transform.rwse`).

.. math::
    p_i = \mathrm{enc}\big(\mathrm{BN}(\mathrm{RWSE}_i)\big), \qquad
    \mathrm{enc} = W \cdot \ (\texttt{linear}) \ \text{or}\
    \mathrm{ReLU\text{-}MLP}\ (\texttt{mlp}: K \to 2d' \to \dots \to d')

Output ``[N, dim_out]`` (``dim_pe`` when concatenated, ``d`` when added).
"""
from torch import Tensor, nn
from torch_geometric.nn.inits import reset

from graphgps_ext import encodings
from graphgps_ext.encoder.lap_pe import _mlp
from graphgps_ext.layer.norm import MaskedBatchNorm1d, normalize, prefix_rows


class RWSE(nn.Module):
    r"""``pe_rwse [N, K]`` -> ``[N, dim_out]``."""

    def __init__(self, num_steps: int, dim_out: int, model: str = 'linear',
                 layers: int = 2, raw_norm: bool = True):
        super().__init__()
        if model not in ('linear', 'mlp'):
            raise ValueError(f"posenc_RWSE.model '{model}' must be 'linear' or 'mlp'")
        self.K = num_steps
        self.raw_norm = MaskedBatchNorm1d(num_steps) if raw_norm else None
        if model == 'linear' or layers <= 1:
            self.enc = nn.Linear(num_steps, dim_out)
        else:
            self.enc = _mlp([num_steps] + [2 * dim_out] * (layers - 1) + [dim_out])

    from_cfg = classmethod(encodings.from_cfg)

    def reset_parameters(self):
        for child in self.children():
            reset(child)

    def forward(self, batch) -> Tensor:
        if not hasattr(batch, 'pe_rwse'):
            raise ValueError('RWSE needs precomputed pe_rwse; load the dataset '
                             'with posenc_RWSE.enable True')
        x = batch.pe_rwse
        if x.size(1) != self.K:
            raise ValueError(f'pe_rwse has {x.size(1)} steps, the encoder '
                             f'expects {self.K} (posenc_RWSE.kernel)')
        x = normalize(self.raw_norm, x, getattr(batch, 'node_mask', None),
                      prefix_rows(batch, 'real_nodes'))
        return self.enc(x)
