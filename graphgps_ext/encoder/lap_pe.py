r"""Laplacian eigenvector PE encoder (GraphGPS ``LapPE``; GT linear LapPE).

Inputs (precomputed by :mod:`graphgps_ext.transform.lappe`): ``pe_lap_vec``
``[N, k]`` = :math:`u_r(i)` and ``pe_lap_val`` ``[N, k]`` = :math:`\lambda_r`,
NaN where graph ``i`` belongs to has fewer than ``k`` eigenpairs.

Training only (``sign_flip``): every eigenvector of every graph gets an
independent random sign, :math:`u_r \leftarrow s_{b,r} u_r`,
:math:`s_{b,r} \in \{\pm 1\}` (eigenvectors are defined up to sign).

- ``DeepSet`` (GraphGPS):
  :math:`p_i = \mathrm{post}\big(\sum_{r \,\text{valid}} \phi([u_r(i), \lambda_r])\big)`,
  :math:`\phi` = ``Linear(2, .)`` followed by ReLU-MLP layers;
- ``Transformer`` (GraphGPS): the ``k`` tokens :math:`W[u_r(i), \lambda_r]`
  of node ``i`` go through a TransformerEncoder with the padded (NaN)
  frequencies masked, then are sum-pooled over valid tokens;
- ``linear`` (GT): :math:`p_i = W [u_1(i), \dots, u_k(i)]` (padding = 0).

Optional ``BatchNorm1d(k)`` on the raw ``[N, k, 2]`` inputs (``raw_norm``).
Output: ``[N, dim_out]`` (``dim_pe`` when concatenated to the type
embedding, ``d`` when added).
"""
import torch
from torch import Tensor, nn
from torch_geometric.nn.inits import reset

from graphgps_ext import encodings
from graphgps_ext.layer.norm import MaskedBatchNorm1d, normalize, prefix_rows


def _mlp(dims, final_act=True) -> nn.Sequential:
    layers = []
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    if not final_act and layers:
        layers.pop()
    return nn.Sequential(*layers)


def random_sign(vec: Tensor, batch_vec: Tensor, num_graphs: int) -> Tensor:
    r"""``vec [N, k]`` times an independent sign per (graph, column)."""
    k = vec.size(1)
    s = torch.randint(0, 2, (num_graphs, k), device=vec.device).to(vec.dtype) * 2 - 1
    return vec * s[batch_vec]


def batch_vector(batch, num_nodes: int, device) -> tuple:
    b = getattr(batch, 'batch', None)
    if b is None:
        return torch.zeros(num_nodes, dtype=torch.long, device=device), 1
    return b, int(getattr(batch, 'num_graphs', int(b.max()) + 1 if b.numel() else 1))


class LapPE(nn.Module):
    r"""``(pe_lap_vec [N, k], pe_lap_val [N, k])`` -> ``[N, dim_out]``."""

    def __init__(self, dim_out: int, max_freqs: int, model: str = 'DeepSet',
                 layers: int = 2, n_heads: int = 4, post_layers: int = 0,
                 raw_norm: bool = False, sign_flip: bool = True,
                 pass_as_var: bool = False):
        super().__init__()
        if model not in ('DeepSet', 'Transformer', 'linear'):
            raise ValueError(f"posenc_LapPE.model '{model}' must be 'DeepSet', "
                             "'Transformer' or 'linear'")
        self.model, self.k, self.sign_flip = model, max_freqs, sign_flip
        self.pass_as_var = pass_as_var
        self.raw_norm = MaskedBatchNorm1d(max_freqs) if raw_norm else None
        if model == 'linear':
            self.lin = nn.Linear(max_freqs, dim_out)
        elif model == 'Transformer':
            if dim_out % n_heads:
                raise ValueError(f'LapPE Transformer: width {dim_out} must be '
                                 f'divisible by posenc_LapPE.n_heads={n_heads}')
            self.lin = nn.Linear(2, dim_out)
            layer = nn.TransformerEncoderLayer(dim_out, n_heads, batch_first=True)
            self.pe_encoder = nn.TransformerEncoder(layer, num_layers=layers,
                                                    enable_nested_tensor=False)
        else:
            hidden = 2 * dim_out if layers > 1 else dim_out
            self.lin = nn.Linear(2, hidden)
            dims = [hidden] + [2 * dim_out] * max(0, layers - 2) + (
                [dim_out] if layers > 1 else [])
            self.pe_encoder = nn.Sequential(nn.ReLU(), *_mlp(dims))
        self.post_mlp = None
        if post_layers > 0 and model != 'linear':
            dims = ([dim_out, dim_out] if post_layers == 1 else
                    [dim_out] + [2 * dim_out] * (post_layers - 1) + [dim_out])
            self.post_mlp = _mlp(dims)

    from_cfg = classmethod(encodings.from_cfg)

    def reset_parameters(self):
        for child in self.children():
            reset(child)

    def forward(self, batch) -> Tensor:
        if not hasattr(batch, 'pe_lap_vec'):
            raise ValueError('LapPE needs precomputed eigenvectors (pe_lap_vec); '
                             'load the dataset with posenc_LapPE.enable True')
        vec, val = batch.pe_lap_vec, batch.pe_lap_val
        if vec.size(1) != self.k:
            raise ValueError(f'pe_lap_vec has {vec.size(1)} columns but '
                             f'posenc_LapPE.eigen.max_freqs={self.k}')
        empty = torch.isnan(vec)  # [N, k]
        vec = vec.masked_fill(empty, 0.0)
        val = val.masked_fill(torch.isnan(val), 0.0)
        if self.training and self.sign_flip:
            b, B = batch_vector(batch, vec.size(0), vec.device)
            vec = random_sign(vec, b, B)
        if self.model == 'linear':
            pe = normalize(self.raw_norm, vec, getattr(batch, 'node_mask', None),
                      prefix_rows(batch, 'real_nodes'))
            out = self.lin(pe)
        else:
            pe = torch.stack([vec, val], dim=2)  # [N, k, 2]
            pe = normalize(self.raw_norm, pe, getattr(batch, 'node_mask', None),
                      prefix_rows(batch, 'real_nodes'))
            pe = self.lin(pe)  # [N, k, h]
            if self.model == 'Transformer':
                # keep one token: no all-masked rows
                first = torch.arange(empty.size(1), device=empty.device) == 0
                mask = empty & ~(first & empty.all(1, keepdim=True))
                pe = self.pe_encoder(pe, src_key_padding_mask=mask)
            else:
                pe = self.pe_encoder(pe)
            out = pe.masked_fill(empty.unsqueeze(2), 0.0).sum(1)
            if self.post_mlp is not None:
                out = self.post_mlp(out)
        if self.pass_as_var:
            batch.pe_LapPE = out
        return out
