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
(:mod:`graphgps_ext.transform.dense_pass`). Graphs of equal size are solved by
one batched ``torch.linalg.eigh`` in float64.

**A function of the graph alone.** An eigenvector is defined up to its sign,
and where an eigenvalue repeats only its eigenspace is defined: LAPACK's
choice of vectors there depends on rounding, hence on thread counts and on
which graphs share a batched call. :func:`canonical_eigenbasis` replaces
each eigenspace's vectors by a basis that depends on the eigenspace alone:
for an eigenspace of multiplicity :math:`m` with projector
:math:`P = U U^\top`, the Gram-Schmidt orthonormalisation (in order) of
:math:`P r_1, \dots, P r_m`, with :math:`r_t` fixed probe vectors (standard
normal, drawn from a generator seeded with the graph size). For a simple
eigenvalue this fixes the sign: :math:`u \cdot \mathrm{sign}(u^\top r_1)`.
"""
from typing import Dict, Tuple

import torch
from torch import Tensor

from graphgps_ext.transform.dense import derive_adj


LAPLACIAN_NORMS = ('none', 'sym', 'rw')

#: Eigenvalues closer than this (relative to ``max(1, |lambda|_max)``) form
#: one eigenspace; LAPACK returns repeated eigenvalues within ~1e-14.
EIGEN_TOL = 1e-8


def _probes(n: int, dtype: torch.dtype) -> Tensor:
    """``[n, n]`` fixed standard-normal probe vectors (columns) for size ``n``."""
    gen = torch.Generator().manual_seed(n)
    return torch.randn(n, n, generator=gen, dtype=torch.float64).to(dtype)


def canonical_eigenbasis(val: Tensor, vec: Tensor, tol: float = EIGEN_TOL) -> Tensor:
    r"""Eigenvectors that depend only on the eigenspaces, not on the solver.

    Args:
        val: ``[G, n]`` ascending eigenvalues of symmetric matrices.
        vec: ``[G, n, n]`` orthonormal eigenvectors (columns).
        tol: relative tolerance under which consecutive eigenvalues are one
            eigenspace.

    Returns:
        ``[G, n, n]``: column :math:`i` of eigenspace :math:`c` (its
        :math:`t`-th column) is the Gram-Schmidt orthonormalisation, in
        order, of :math:`P_c r_0, \dots, P_c r_t` with :math:`P_c` the
        eigenspace's projector and :math:`r_t` the fixed probes of
        :func:`_probes`. Computed for every eigenspace at once: probes
        projected with a block mask, then one Cholesky factorisation of the
        block-diagonal Gram matrix (Gram-Schmidt in closed form:
        :math:`W = Q R`, :math:`W^	op W = R^	op R`).
    """
    G, n = val.shape
    if n == 0:
        return vec
    scale = val.abs().amax(-1, keepdim=True).clamp_min(1.0)
    starts = torch.ones(G, n, dtype=torch.bool)
    starts[:, 1:] = (val[:, 1:] - val[:, :-1]) > tol * scale
    space = starts.cumsum(-1)  # eigenspace id of each column
    pos = torch.arange(n).expand(G, n)
    first = torch.where(starts, pos, torch.zeros_like(pos)).cummax(-1).values
    t = pos - first  # rank of each column within its eigenspace
    same = space.unsqueeze(-1) == space.unsqueeze(-2)  # [G, i, j]
    # W[:, :, i] = P_c r_t(i) = sum_{j in c} u_j (u_j . r_t(i))
    dots = vec.transpose(-1, -2) @ _probes(n, vec.dtype)  # [G, j, t]
    coef = same.transpose(-1, -2) * dots.gather(-1, t.unsqueeze(1).expand(G, n, n))
    W = vec @ coef
    gram = (W.transpose(-1, -2) @ W) * same
    chol = torch.linalg.cholesky(gram)  # R^T, lower triangular
    return torch.linalg.solve_triangular(chol, W.transpose(-1, -2),
                                         upper=False).transpose(-1, -2)


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
    vec = canonical_eigenbasis(val, vec)
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


def _eigen(adj: Tensor, memo: dict, k: int, norm: str, skip_trivial: bool):
    """:func:`laplacian_eigen` of the undirected group adjacency, once per
    group and parameters (``memo``: shared by the encodings of a group)."""
    key = ('eigen', k, norm, skip_trivial)
    if key not in memo:
        if 'undirected' not in memo:
            memo['undirected'] = derive_adj(adj, 'undirected')
        memo[key] = laplacian_eigen(memo['undirected'], k, norm, skip_trivial)
    return memo[key]


def lappe_nodes(adj: Tensor, memo: dict, k: int, norm: str,
                skip_trivial: bool) -> Dict[str, Tensor]:
    r"""The LapPE of a size group (counting adjacency ``[G, n, n]``):
    ``pe_lap_vec`` ``[G, n, k]`` and ``pe_lap_val`` ``[G, n, k]`` (every node
    of a graph holds its graph's eigenvalues), float32."""
    vec, val = _eigen(adj, memo, k, norm, skip_trivial)
    n = adj.size(1)
    return {'pe_lap_vec': vec.float(),
            'pe_lap_val': val.unsqueeze(1).expand(-1, n, -1).float()}


def eslappe_nodes(adj: Tensor, memo: dict, k: int, norm: str,
                  skip_trivial: bool) -> Dict[str, Tensor]:
    r"""The EquivStableLapPE eigenvectors of a size group: ``pe_eslap_vec``
    ``[G, n, k]``, float32 (the same eigenpairs as LapPE's for the same
    parameters, computed once)."""
    vec, _ = _eigen(adj, memo, k, norm, skip_trivial)
    return {'pe_eslap_vec': vec.float()}
