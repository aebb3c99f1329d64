r"""Equivariant-and-stable Laplacian PE (PEG; GraphGPS ``EquivStableLapPE``).

This encoder adds **nothing** to the node embedding. It prepares the
positional input of the gate of the local MPNN (GatedGCN / GINE with
``mpnn.equivstable_pe``) and stores it on the batch:

.. math::
    Z = [u_1, \dots, u_k] \in \mathbb{R}^{N \times k}
    \ (\text{NaN padding} \to 0), \qquad
    \texttt{batch.pe\_equiv} = \begin{cases} Z & \texttt{model: none} \\
    Z W^\top \in \mathbb{R}^{N \times d} & \texttt{model: linear} \end{cases}

(optionally after ``BatchNorm1d(k)``). The layer then gates each message
with a function of :math:`\lVert \texttt{pe\_equiv}_i -
\texttt{pe\_equiv}_j \rVert^2`, which with ``model: none`` is invariant to
the sign and basis of the eigenvectors (PEG). Eigenvectors are unit-norm per
graph (:mod:`graphgps_ext.transform.lappe`, attribute ``pe_eslap_vec``).
No random sign flip is applied (the distance makes it unnecessary).

Contract for the MPNN branches: read ``batch.pe_equiv`` ``[N, k]`` or
``[N, d]`` (width-agnostic); it is set by the node encoder before the layers
run (``GPSModel.encode``). ``forward`` returns ``None`` (no embedding part).
"""
import torch
from torch import nn

from graphgps_ext import encodings
from graphgps_ext.layer.norm import MaskedBatchNorm1d, normalize, prefix_rows

ATTR = 'pe_equiv'


class EquivStableLapPE(nn.Module):
    r"""``pe_eslap_vec [N, k]`` -> sets ``batch.pe_equiv`` (``[N, k]`` or ``[N, d]``)."""

    def __init__(self, max_freqs: int, dim: int, model: str = 'none',
                 raw_norm: bool = False):
        super().__init__()
        if model not in ('none', 'linear'):
            raise ValueError(f"posenc_EquivStableLapPE.model '{model}' must be "
                             "'none' or 'linear'")
        self.k = max_freqs
        self.raw_norm = MaskedBatchNorm1d(max_freqs) if raw_norm else None
        self.lin = nn.Linear(max_freqs, dim) if model == 'linear' else None

    from_cfg = classmethod(encodings.from_cfg)

    def reset_parameters(self):
        for m in (self.raw_norm, self.lin):
            if m is not None:
                m.reset_parameters()

    def forward(self, batch):
        if not hasattr(batch, 'pe_eslap_vec'):
            raise ValueError('EquivStableLapPE needs precomputed eigenvectors '
                             '(pe_eslap_vec); load the dataset with '
                             'posenc_EquivStableLapPE.enable True')
        z = batch.pe_eslap_vec
        z = z.masked_fill(torch.isnan(z), 0.0)
        z = normalize(self.raw_norm, z, getattr(batch, 'node_mask', None),
                      prefix_rows(batch, 'real_nodes'))
        if self.lin is not None:
            z = self.lin(z)
        setattr(batch, ATTR, z)
        return None
