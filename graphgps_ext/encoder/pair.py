r"""Dense pair features :math:`E^{(0)}` of CSA (CSA eq. 8-12, §3.4).

**Semantic part** (eq. 8), width ``d_b``:

.. math::
    E^{\mathrm{bond}}_{ij} = \begin{cases}
      \mathrm{BondEnc}(e_{ij}) & (i \to j) \text{ is an edge} \\
      E^{\mathrm{self}} & i = j \\
      E^{\mathrm{n\text{-}c}} & \text{otherwise} \end{cases}

``BondEnc`` is the dataset's edge encoder (``TypeDictEdge``, ``Bond``,
``LinearEdge``) or a learned constant (``DummyEdge``) when the data has no
edge features. A self-loop edge in the data takes precedence over
:math:`E^{\mathrm{self}}` ("if not already given").

**Relative encoding** (eq. 10-12), width ``d_r``:

- ``rwse``: :math:`E^{\mathrm{RPE}}_{ij} = W [(P^1)_{ij}, \dots, (P^p)_{ij}] + b`,
  :math:`P = D^{-1}A`;
- ``spd``: :math:`E^{\mathrm{RPE}}_{ij} = W_{\mathrm{SPDE}}[t_{ij}]` with
  :math:`t_{ij} = \phi(i,j) \in \{0\ (\text{self}), 1, \dots, p\}` and
  :math:`t_{ij} = p + 1` ("farther than p or unreachable"), i.e. ``p + 2``
  learned types;
- ``none``: no RPE.

**Combination** (eq. 9): ``concat``: :math:`E^{(0)} = E^{\mathrm{bond}} \|
E^{\mathrm{RPE}}` with ``d_r = pairenc.dim_rpe or d // 2``, ``d_b = d - d_r``;
``add``: :math:`E^{(0)} = E^{\mathrm{bond}} + E^{\mathrm{RPE}}` (both ``d``).

**Rings** (§3.4), with the ring relation :math:`r_{ij} = \mathbb{1}(i \approx
j)` (:mod:`graphgps_ext.transform.rings`, diagonal = "node on a ring"):

- ``categorical`` (Cartesian product with the bond categories):
  :math:`E^{\mathrm{bond}}_{ij} = \mathrm{Embed}((c_{ij}, r_{ij}))` — for
  bonded pairs two copies of the bond encoder, chosen by :math:`r_{ij}`;
  for self / non-connected pairs four learned vectors
  :math:`E^{\mathrm{self}}_{r}, E^{\mathrm{n\text{-}c}}_{r}`;
- ``boolean``: :math:`E^{\mathrm{bond}}_{ij} \mathrel{+}= R[r_{ij}]`,
  :math:`R[0] = 0` (paper's generic form);
- ``additive`` (authors' code, ``RingEdge``): :math:`E^{\mathrm{bond}}_{ij}
  \mathrel{+}= R[\tau_{ij}]` with :math:`\tau = 0` (no ring), ``1`` (ring and
  bonded), ``2`` (ring, not bonded), :math:`R[0] = 0`.

Ring pairs are **not** treated as connected in eq. 8 (the paper; the
authors' code never marks them connected either).

**Output contract** (consumed by the CSA branch as ``ctx.pair``):
``forward(batch, ctx) -> E`` float ``[B, n_max, n_max, d]`` in the dense
layout ``ctx.layout`` (graph ``b``, node slots in batch order:
``E[b, i, j]`` is the pair (source ``i``, target ``j``) = the edge
``edge_index[:, e] = (i, j)`` direction). Entries involving padding slots
(``~ctx.layout.mask``) are exactly 0. ``E`` is *not* symmetrised (it is for
undirected inputs with symmetric edge features). :math:`E^{\mathrm{att}} = W_{EA}E`
and :math:`E^{\mathrm{val}} = W_{EV}E` belong to the CSA branch.

**Sources of the RW / SPD values**: ``on_the_fly`` computes them per batch
on the model's device from the dense ``[B, n_max, n_max]`` adjacency
(:func:`~graphgps_ext.transform.edge_rwse.edge_rwse_dense`,
:func:`~graphgps_ext.transform.spd.shortest_path_dense`, ``p`` bmm's);
otherwise they are read from the precomputed ``pair_index`` / ``pair_rw`` /
``pair_spd`` (pairs within ``p`` hops; all others are 0 / "farther"). Both give
the same values. Rings always come from the precomputed ``ring_index``.
"""
from typing import Optional

import torch
from torch import Tensor, nn
from torch_geometric.nn.inits import reset

from graphgps_ext.encoder.edge import edge_encoder_name, make_edge_encoder
from graphgps_ext.transform.dense import layout_adj
from graphgps_ext.transform.edge_rwse import edge_rwse_dense
from graphgps_ext.transform.spd import shortest_path_dense

N_C, SELF, BONDED = 0, 1, 2


class PairEncoder(nn.Module):
    r"""``(batch, ctx)`` -> dense pair features ``[B, n_max, n_max, d]``.

    Args:
        dim: output width ``d``.
        bond_encoder: edge encoder ``batch -> [E, d_b]``.
        bond_encoder_ring: second copy used for ring pairs
            (``ring_mode='categorical'`` only).
        rpe: ``'rwse'``, ``'spd'`` or ``'none'``.
        steps: ``p``.
        dim_rpe: ``d_r`` (concat only).
        combine: ``'concat'`` or ``'add'``.
        rings: use the precomputed ring relation.
        ring_mode: ``'categorical'``, ``'boolean'`` or ``'additive'``.
        on_the_fly: compute RW / SPD per batch instead of reading storage.
    """

    def __init__(self, dim: int, bond_encoder: nn.Module,
                 bond_encoder_ring: Optional[nn.Module] = None,
                 rpe: str = 'rwse', steps: int = 16, dim_rpe: int = 0,
                 combine: str = 'concat', rings: bool = False,
                 ring_mode: str = 'categorical', on_the_fly: bool = True):
        super().__init__()
        if rpe not in ('rwse', 'spd', 'none'):
            raise ValueError(f"pairenc.rpe '{rpe}' must be 'rwse', 'spd' or 'none'")
        if combine not in ('concat', 'add'):
            raise ValueError(f"pairenc.combine '{combine}' must be 'concat' or 'add'")
        if ring_mode not in ('categorical', 'boolean', 'additive'):
            raise ValueError(f"pairenc.ring_mode '{ring_mode}' must be "
                             "'categorical', 'boolean' or 'additive'")
        if rings and ring_mode == 'categorical' and bond_encoder_ring is None:
            raise ValueError('categorical ring encoding needs bond_encoder_ring')
        self.dim, self.rpe, self.steps = dim, rpe, steps
        self.combine, self.rings, self.ring_mode = combine, rings, ring_mode
        self.on_the_fly = on_the_fly
        self.dim_rpe = self.rpe_width(dim, rpe, dim_rpe, combine)
        self.dim_bond = dim - self.dim_rpe if (rpe != 'none' and combine == 'concat') else dim
        self.bond = bond_encoder
        self.bond_ring = bond_encoder_ring if (rings and ring_mode == 'categorical') else None
        n_special = 4 if self.bond_ring is not None else 2
        self.special = nn.Embedding(n_special, self.dim_bond)  # E^n-c, E^self (x ring)
        self.ring_emb = None
        if rings and ring_mode != 'categorical':
            self.ring_emb = nn.Embedding(2 if ring_mode == 'boolean' else 3,
                                         self.dim_bond, padding_idx=0)
        if rpe == 'rwse':
            self.rpe_enc = nn.Linear(steps, self.dim_rpe)
        elif rpe == 'spd':
            self.rpe_enc = nn.Embedding(steps + 2, self.dim_rpe)
        else:
            self.rpe_enc = None

    @staticmethod
    def rpe_width(dim: int, rpe: str, dim_rpe: int, combine: str) -> int:
        if rpe == 'none':
            return 0
        if combine == 'add':
            return dim
        d_r = dim_rpe if dim_rpe > 0 else dim // 2
        if not 0 < d_r < dim:
            raise ValueError(f'pairenc.dim_rpe={d_r} must be in 1..{dim - 1} '
                             f'(hidden width {dim})')
        return d_r

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'PairEncoder':
        pe = cfg.pairenc
        d_r = cls.rpe_width(dim, pe.rpe, int(pe.dim_rpe), pe.combine)
        d_b = dim - d_r if (pe.rpe != 'none' and pe.combine == 'concat') else dim
        name = edge_encoder_name(cfg, task, need=True)
        bond = make_edge_encoder(name, cfg, task, d_b)
        ring_bond = None
        if pe.rings and pe.ring_mode == 'categorical':
            ring_bond = make_edge_encoder(name, cfg, task, d_b)
        return cls(dim, bond, ring_bond, pe.rpe, int(pe.steps), d_r, pe.combine,
                   bool(pe.rings), pe.ring_mode, bool(pe.on_the_fly))

    def reset_parameters(self):
        for child in self.children():
            reset(child)

    # -- raw relative values -------------------------------------------------
    def _dense_from_storage(self, batch, layout, attr: str, fill) -> Tensor:
        if not hasattr(batch, attr) or not hasattr(batch, 'pair_index'):
            raise ValueError(
                f"pair encoder: the batch has no '{attr}'; precompute it "
                f'(pairenc.on_the_fly False with pairenc.rpe={self.rpe}) or set '
                'pairenc.on_the_fly True')
        B, n = layout.num_graphs, layout.n_max
        val = getattr(batch, attr)
        out = val.new_full((B, n, n) + tuple(val.shape[1:]), fill)
        b, i, j = layout.pair_index(batch.pair_index)
        out[b, i, j] = val
        return out

    def relative_values(self, batch, ctx) -> Tensor:
        r"""RW ``[B, n, n, p]`` (float) or SPD types ``[B, n, n]`` (long)."""
        layout = ctx.layout
        if self.rpe == 'rwse':
            if self.on_the_fly:
                adj = layout_adj(ctx.edge_index, layout, 'count')
                return edge_rwse_dense(adj, self.steps)
            return self._dense_from_storage(batch, layout, 'pair_rw', 0.0).float()
        if self.on_the_fly:
            adj = layout_adj(ctx.edge_index, layout, 'simple')
            spd = shortest_path_dense(adj, self.steps)
        else:
            spd = self._dense_from_storage(batch, layout, 'pair_spd', -1).long()
        return torch.where(spd < 0, torch.full_like(spd, self.steps + 1), spd)

    def ring_relation(self, batch, layout) -> Tensor:
        r"""``[B, n, n]`` boolean :math:`i \approx j`."""
        if not hasattr(batch, 'ring_index'):
            raise ValueError("pair encoder: the batch has no 'ring_index'; load "
                             'the dataset with pairenc.rings True')
        B, n = layout.num_graphs, layout.n_max
        b, i, j = layout.pair_index(batch.ring_index)
        rel = b.new_zeros(B, n, n, dtype=torch.bool)
        rel[b, i, j] = True
        return rel

    # -- forward -------------------------------------------------------------
    def forward(self, batch, ctx) -> Tensor:
        layout = ctx.layout
        B, n = layout.num_graphs, layout.n_max
        eb, ei, ej = layout.pair_index(ctx.edge_index)
        cat = eb.new_full((B, n, n), N_C)
        cat.diagonal(dim1=1, dim2=2).fill_(SELF)
        cat[eb, ei, ej] = BONDED
        ring = self.ring_relation(batch, layout) if self.rings else None

        spec_idx = cat.clamp(max=SELF)
        if self.bond_ring is not None:
            spec_idx = spec_idx + 2 * ring.long()
        E = self.special(spec_idx)  # [B, n, n, d_b]
        bond = self.bond(batch)  # [E, d_b]
        if self.bond_ring is not None:
            bond = torch.where(ring[eb, ei, ej].unsqueeze(1),
                               self.bond_ring(batch), bond)
        E = E.index_put((eb, ei, ej), bond.to(E.dtype))
        if self.ring_emb is not None:
            if self.ring_mode == 'boolean':
                tau = ring.long()
            else:
                tau = ring.long() * torch.where(cat == BONDED, 1, 2)
            E = E + self.ring_emb(tau)

        if self.rpe_enc is not None:
            rel = self.relative_values(batch, ctx)
            R = self.rpe_enc(rel.to(E.dtype) if self.rpe == 'rwse' else rel)
            E = torch.cat([E, R], dim=-1) if self.combine == 'concat' else E + R
        valid = layout.mask.unsqueeze(2) & layout.mask.unsqueeze(1)
        return E * valid.unsqueeze(-1).to(E.dtype)
