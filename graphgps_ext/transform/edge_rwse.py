r"""Edge-RWSE: pairwise random-walk landing probabilities (CSA eq. 10, 12).

.. math::
    P = D^{-1} A, \qquad \mathrm{RW}_{ij} = \big[(P^1)_{ij}, \dots, (P^p)_{ij}\big]
    \in \mathbb{R}^p

with the same adjacency and isolated-node convention as the node RWSE
(:mod:`graphgps_ext.transform.rwse`: counting adjacency, zero rows for
out-degree 0). The index of the first non-zero component is the shortest-path
distance, so :math:`\mathrm{RW}_{ij} = 0` whenever :math:`\phi(i, j) > p`.

Shapes: :func:`edge_rwse_dense` ``[G, n, n]`` -> ``[G, n, n, p]``.
Storage (:func:`pair_rwse_group`): only the pairs within ``p`` hops (diagonal
included) — exactly the pairs that can be non-zero — as ``pair_index``
``[2, P]`` (graph-local) and ``pair_rw`` ``[P, p]`` float32. The pair
encoder scatters them into the dense ``[B, n_max, n_max, p]`` tensor (zeros
elsewhere), or recomputes :func:`edge_rwse_dense` per batch on the device
(``pairenc.on_the_fly``), which gives the same values.
"""
import torch
from torch import Tensor

from graphgps_ext.transform.dense import Pairs
from graphgps_ext.transform.rwse import transition_matrix, walk_powers


def edge_rwse_dense(adj: Tensor, steps: int) -> Tensor:
    r"""``[G, n, n]`` counting adjacency -> ``[G, n, n, steps]``."""
    if steps < 1:
        raise ValueError(f'Edge-RWSE needs steps >= 1, got {steps}')
    P = transition_matrix(adj)
    return torch.stack([Pk for _, Pk in walk_powers(P, steps)], dim=-1)


def pair_rwse_group(adj: Tensor, steps: int):
    r"""Pairs within ``steps`` hops of a ``[G, n, n]`` group:
    ``(b, i, j, rw [P, steps])`` (diagonal always kept)."""
    rw = edge_rwse_dense(adj, steps)
    keep = (rw != 0).any(-1)
    keep |= torch.eye(adj.size(1), dtype=torch.bool).unsqueeze(0)
    b, i, j = keep.nonzero(as_tuple=True)
    return b, i, j, rw[b, i, j].float()


def pair_rwse_pairs(adj: Tensor, memo: dict, steps: int) -> Pairs:
    r"""The stored Edge-RWSE of a size group: the pairs within ``steps`` hops
    with ``pair_rw`` ``[P, steps]``."""
    b, i, j, rw = pair_rwse_group(adj, steps)
    return Pairs(b, i, j, {'pair_rw': rw})
