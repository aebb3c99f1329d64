r"""Shortest-path distances (SPD) for the SPDE relative encoding (CSA eq. 11).

:math:`\phi(i, j)` is the number of edges on a shortest directed path
``i -> j`` in the binary adjacency without self-loops
(``structure='simple'``); :math:`\phi(i, i) = 0`. It is computed by a
breadth-first search run for all sources and all graphs of a size group at
once: with the frontier :math:`F_0 = I`,

.. math::
    F_d = \mathbb{1}\big[(F_{d-1} A)_{ij} > 0\big] \wedge \neg R_{d-1},
    \qquad R_d = R_{d-1} \vee F_d, \qquad \phi(i,j) = d \text{ where } (F_d)_{ij}

one batched ``bmm`` per distance, stopping when no pair is newly reached
(exact for **all** distances: a 7-node path gives row 0 = 0..6) or at
``max_dist``. Unreachable pairs (and, with ``max_dist``, pairs farther than
``max_dist``) get :data:`UNREACHABLE` ``= -1``.

Storage for CSA (:func:`pair_spd_group`): only the pairs with
:math:`\phi \le p` (diagonal included) are kept as ``pair_index`` ``[2, P]``
(graph-local) with ``pair_spd`` ``[P]`` int16; every other pair is "farther
than p or unreachable" by construction.
"""
from typing import Optional

import torch
from torch import Tensor

from graphgps_ext.transform.dense import Pairs, derive_adj
from graphgps_ext.layer.stacked import host_reads_allowed


UNREACHABLE = -1


def shortest_path_dense(adj: Tensor, max_dist: Optional[int] = None) -> Tensor:
    r"""``[G, n, n]`` binary adjacency -> ``[G, n, n]`` long distances (−1 unreachable)."""
    G, n = adj.shape[:2]
    eye = torch.eye(n, dtype=torch.bool, device=adj.device).expand(G, n, n)
    dist = torch.where(eye, 0, UNREACHABLE)
    reach = eye
    frontier = eye.to(adj.dtype)
    limit = n - 1 if max_dist is None else min(int(max_dist), n - 1)
    for d in range(1, limit + 1):
        new = (torch.bmm(frontier, adj) > 0) & ~reach
        # (a stacked pass cannot read whether a seed's frontier is empty:
        # it runs every step, which adds nothing once none is new)
        if host_reads_allowed() and not bool(new.any()):
            break
        dist = torch.where(new, d, dist)
        reach = reach | new
        frontier = new.to(adj.dtype)
    return dist


def pair_spd_group(adj: Tensor, steps: int):
    r"""Pairs within ``steps`` hops of a ``[G, n, n]`` simple adjacency:
    ``(b, i, j, spd [P] int16)``."""
    dist = shortest_path_dense(adj, steps)
    b, i, j = (dist >= 0).nonzero(as_tuple=True)
    return b, i, j, dist[b, i, j].to(torch.int16)


def pair_spd_pairs(adj: Tensor, memo: dict, steps: int) -> Pairs:
    r"""The stored SPD of a size group (from its counting adjacency): the
    pairs within ``steps`` hops with ``pair_spd`` ``[P]`` int16."""
    b, i, j, dist = pair_spd_group(derive_adj(adj, 'simple'), steps)
    return Pairs(b, i, j, {'pair_spd': dist})
