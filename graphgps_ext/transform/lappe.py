r"""Laplacian eigenvector positional encodings (LapPE, EquivStableLapPE).

With :math:`A` the binary, symmetrised adjacency without self-loops
(:meth:`~graphgps_ext.transform.dense.GraphStore.dense_adj`,
``structure='undirected'``) and :math:`D` its degree matrix:

.. math::
    L_{\mathrm{none}} = D - A, \qquad
    L_{\mathrm{sym}} = I - D^{-1/2} A D^{-1/2}, \qquad
    L_{\mathrm{rw}} = I - D^{-1} A

(:math:`D^{-1/2}_{ii} = 0` for an isolated node, so :math:`L_{ii} = 1` there,
PyG's convention.) The eigenpairs :math:`L u_r = \lambda_r u_r` are sorted by
ascending :math:`\lambda`; the encoding keeps the ``k`` smallest, after
dropping the first (trivial, :math:`\lambda_0 = 0`) pair when
``skip_trivial`` (GT: "the k smallest non-trivial eigenvectors").
Eigenvectors have unit L2 norm. :math:`L_{\mathrm{rw}}` is not symmetric: its
eigenvalues are those of :math:`L_{\mathrm{sym}}` and its eigenvectors are
:math:`D^{-1/2} u_r` (renormalised), computed exactly from the symmetric
problem. Eigenvalues are clamped at 0 (round-off only).

Shapes (per graph with ``n`` nodes): ``vec`` ``[n, k]`` (column ``r`` =
eigenvector ``r``), ``val`` ``[n, k]`` (eigenvalue ``r`` repeated on every
row). When the graph has fewer than ``k`` (non-trivial) eigenpairs the missing
columns are **NaN** (encoders mask them). The dataset precompute returns
``pe_lap_vec`` / ``pe_lap_val`` ``[N, k]`` float32
(:mod:`graphgps_ext.transform.precompute`). Graphs of equal size are solved by
one batched ``torch.linalg.eigh`` in float64.
"""
from typing import Tuple

import torch
from torch import Tensor


LAPLACIAN_NORMS = ('none', 'sym', 'rw')


def laplacian(adj: Tensor, norm: str = 'sym') -> Tensor:
    r"""``[G, n, n]`` symmetric Laplacian (:math:`L_{\mathrm{sym}}` for ``'rw'``)."""
    if norm not in LAPLACIAN_NORMS:
        raise ValueError(f"unknown laplacian_norm '{norm}': use one of "
                         f"{', '.join(LAPLACIAN_NORMS)}")
    deg = adj.sum(-1)
    if norm == 'none':
        return torch.diag_embed(deg) - adj
    dis = torch.where(deg > 0, deg.clamp_min(1e-300).rsqrt(), torch.zeros_like(deg))
    eye = torch.eye(adj.size(-1), dtype=adj.dtype).expand_as(adj)
    return eye - dis.unsqueeze(-1) * adj * dis.unsqueeze(-2)


def laplacian_eigen(adj: Tensor, k: int, norm: str = 'sym',
                    skip_trivial: bool = False) -> Tuple[Tensor, Tensor]:
    r"""The ``k`` smallest eigenpairs of the graphs in ``adj``.

    Args:
        adj: ``[G, n, n]`` binary symmetric adjacency (float64 recommended).
        k: number of eigenpairs kept (``max_freqs``).
        norm: ``'none'``, ``'sym'`` or ``'rw'``.
        skip_trivial: drop the first (smallest) eigenpair.

    Returns:
        ``vec [G, n, k]``, ``val [G, k]``, NaN-padded beyond the available
        eigenpairs.
    """
    G, n = adj.shape[:2]
    L = laplacian(adj, norm)
    val, vec = torch.linalg.eigh(L)
    val = val.clamp_min(0.0)
    if norm == 'rw':
        deg = adj.sum(-1)
        scale = torch.where(deg > 0, deg.clamp_min(1e-300).rsqrt(),
                            torch.ones_like(deg))
        vec = vec * scale.unsqueeze(-1)
        vec = vec / vec.norm(dim=1, keepdim=True).clamp_min(1e-300)
    start = 1 if skip_trivial else 0
    val, vec = val[:, start:start + k], vec[:, :, start:start + k]
    if val.size(1) < k:
        pad = k - val.size(1)
        val = torch.cat([val, val.new_full((G, pad), float('nan'))], 1)
        vec = torch.cat([vec, vec.new_full((G, n, pad), float('nan'))], 2)
    return vec, val
