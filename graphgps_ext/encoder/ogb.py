r"""OGB molecular feature encoders (``ogb.graphproppred.mol_encoder``).

.. math::
    h_i = \sum_{c=1}^{9} W^{\mathrm{atom}}_c[x_{i,c}], \qquad
    e_{ij} = \sum_{c=1}^{3} W^{\mathrm{bond}}_c[a_{ij,c}]

Shapes: ``batch.x`` ``[N, 9]`` long -> ``[N, d]``; ``batch.edge_attr``
``[E, 3]`` long -> ``[E, d]`` (vocabularies from ``ogb.utils.features``).
"""
from torch import Tensor, nn


class Atom(nn.Module):
    r"""OGB ``AtomEncoder``: ``[N, 9]`` -> ``[N, d]``."""

    def __init__(self, dim: int):
        super().__init__()
        from ogb.graphproppred.mol_encoder import AtomEncoder
        self.enc = AtomEncoder(dim)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'Atom':
        return cls(dim)

    def reset_parameters(self):
        for emb in self.enc.atom_embedding_list:
            nn.init.xavier_uniform_(emb.weight.data)

    def forward(self, batch) -> Tensor:
        x = batch.x.long()
        return self.enc(x.unsqueeze(1) if x.dim() == 1 else x)


class Bond(nn.Module):
    r"""OGB ``BondEncoder``: ``[E, 3]`` -> ``[E, d]``."""

    def __init__(self, dim: int):
        super().__init__()
        from ogb.graphproppred.mol_encoder import BondEncoder
        self.enc = BondEncoder(dim)

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'Bond':
        return cls(dim)

    def reset_parameters(self):
        for emb in self.enc.bond_embedding_list:
            nn.init.xavier_uniform_(emb.weight.data)

    def forward(self, batch) -> Tensor:
        a = batch.edge_attr.long()
        return self.enc(a.unsqueeze(1) if a.dim() == 1 else a)
