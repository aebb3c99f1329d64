r"""Synthetic mini-batches with the shapes of the benchmark datasets.

The benchmark needs graphs of the right *size* (nodes, directed edges,
degree, feature types, batch size), not real molecules, so every family is
generated here from a seed, vectorised over the graphs of one size:

- ``zinc``: molecule-like, sizes drawn from a normal law with ZINC's mean
  and spread (23.1 ± 4.45 nodes, clipped to 9-37) and ``2 (n + 2)``
  directed edges (mean 50) per graph (a random recursive tree plus 3
  ring-closing edges, both directions), 28 atom types, 4 bond types,
  batch 32. The spread matters: dense attention pads every graph to the
  largest of its batch (about 33 nodes for ZINC batches of 32);
- ``peptides``: molecule-like, 120-180 nodes (mean 150), a tree plus 4 ring
  closures, batch 128 (Peptides-func averages 150.9 nodes, 307 directed
  edges);
- ``superpixel``: 450-510 nodes (mean 480), every node receives an edge
  from each of its 8 nearest neighbours among random points of the unit
  square (kNN degree 8), batch 32 (PascalVOC-SP averages 479 nodes);
- ``scaling``: molecule-like graphs of one given size ``n`` with the same
  edge density as ZINC (``m = n + 2`` undirected edges for ``n >= 4``).

Every graph is a :class:`torch_geometric.data.Data` with ``x`` ``[n, 1]``
long, ``edge_index`` ``[2, E]``, ``edge_attr`` ``[E]`` long, ``y``
``[1, 1]`` float (ZINC conventions), so the ZINC encoders
(``TypeDictNode``, ``TypeDictEdge``) apply to every family. Their
encodings (RWSE, ...) are the package's own precompute
(:func:`graphgps_ext.transform.precompute_encodings`), as a run computes
them.
"""
from dataclasses import dataclass
from typing import Dict, List, Optional

import torch
from torch import Tensor
from torch_geometric.data import Data

NODE_TYPES = 28
EDGE_TYPES = 4


@dataclass(frozen=True)
class GraphFamily:
    r"""Size statistics of a benchmark dataset.

    Attributes:
        name: family name.
        n_min, n_max: graph sizes are drawn uniformly from ``[n_min, n_max]``,
            or, with ``n_std > 0``, from a rounded normal law
            ``N(n_mean, n_std^2)`` clipped to that range.
        batch_size: graphs per mini-batch of the dataset's usual config.
        kind: ``'molecule'`` (tree + ring closures) or ``'knn'``.
        extra_edges: ring-closing undirected edges per molecule-like graph.
        k: in-degree of the kNN graphs.
    """
    name: str
    n_min: int
    n_max: int
    batch_size: int
    kind: str = 'molecule'
    extra_edges: int = 3
    k: int = 8
    n_mean: float = 0.0
    n_std: float = 0.0

    @property
    def label(self) -> str:
        if self.n_min == self.n_max:
            n = f'n={self.n_min}'
        else:
            mean = self.n_mean if self.n_std > 0 else \
                (self.n_min + self.n_max) / 2
            n = f'n≈{mean:.0f}'
        return f'{self.name} ({n}, batch {self.batch_size})'

    def sizes(self, num: int, gen: torch.Generator) -> Tensor:
        """``[num]`` graph sizes."""
        if self.n_std > 0:
            n = torch.randn(num, generator=gen) * self.n_std + self.n_mean
            return n.round().long().clamp(self.n_min, self.n_max)
        return torch.randint(self.n_min, self.n_max + 1, (num, ),
                             generator=gen)


FAMILIES: Dict[str, GraphFamily] = {
    'zinc': GraphFamily('zinc', 9, 37, 32, 'molecule', extra_edges=3,
                        n_mean=23.1, n_std=4.45),
    'peptides': GraphFamily('peptides', 120, 180, 128, 'molecule',
                            extra_edges=4),
    'superpixel': GraphFamily('superpixel', 450, 510, 32, 'knn', k=8),
}


def scaling_family(n: int, batch_size: int) -> GraphFamily:
    """Molecule-like graphs of exactly ``n`` nodes and ZINC's edge density."""
    return GraphFamily(f'n{n}', n, n, batch_size, 'molecule',
                       extra_edges=3 if n >= 4 else 0)


def _molecule_edges(num: int, n: int, extra: int,
                    gen: torch.Generator) -> List[Tensor]:
    """Undirected edge lists ``[2, m]`` of ``num`` graphs with ``n`` nodes:
    a random recursive tree (node ``i`` attaches to a uniform earlier node)
    plus ``extra`` ring closures ``(i, j)`` with ``j < parent(i)``, which can
    neither repeat a tree edge nor each other."""
    if n == 1:
        return [torch.empty(2, 0, dtype=torch.long) for _ in range(num)]
    child = torch.arange(1, n)
    parent = (torch.rand(num, n - 1, generator=gen) * child).long()
    tree = torch.stack([child.expand(num, -1), parent], dim=1)  # [G, 2, n-1]
    if extra == 0:
        return list(tree.unbind(0))
    # Ring closures start at distinct nodes whose parent is not the root.
    score = torch.rand(num, n - 1, generator=gen)
    score[parent == 0] = -1.0
    top, pick = score.topk(min(extra, n - 1), dim=1)
    anc = parent.gather(1, pick)
    far = (torch.rand(pick.shape, generator=gen) * anc).long()
    closing = torch.stack([child[pick], far], dim=1)  # [G, 2, extra]
    ok = top >= 0
    return [torch.cat([tree[g], closing[g][:, ok[g]]], dim=1)
            for g in range(num)]


def _knn_edges(num: int, n: int, k: int, gen: torch.Generator) -> List[Tensor]:
    """Directed kNN edges ``j -> i`` (``j`` among the ``k`` nearest
    neighbours of ``i``) on ``n`` uniform random points per graph."""
    pos = torch.rand(num, n, 2, generator=gen)
    dist = torch.cdist(pos, pos)
    dist.diagonal(dim1=1, dim2=2).fill_(float('inf'))
    nbr = dist.topk(min(k, n - 1), dim=2, largest=False).indices  # [G, n, k]
    dst = torch.arange(n).view(1, n, 1).expand_as(nbr)
    return [torch.stack([nbr[g].reshape(-1), dst[g].reshape(-1)])
            for g in range(num)]


def make_graphs(family: GraphFamily, num_graphs: int, seed: int = 0,
                node_types: int = NODE_TYPES,
                edge_types: int = EDGE_TYPES) -> List[Data]:
    """``num_graphs`` random graphs of ``family``, deterministic in ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    sizes = family.sizes(num_graphs, gen)
    graphs: List[Optional[Data]] = [None] * num_graphs
    for n in sizes.unique().tolist():
        where = (sizes == n).nonzero().view(-1).tolist()
        if family.kind == 'knn':
            edges = _knn_edges(len(where), n, family.k, gen)
            undirected = False
        else:
            edges = _molecule_edges(len(where), n, family.extra_edges, gen)
            undirected = True
        for g, e in zip(where, edges):
            etype = torch.randint(0, edge_types, (e.size(1), ), generator=gen)
            if undirected:
                e = torch.cat([e, e.flip(0)], dim=1)
                etype = torch.cat([etype, etype])
            graphs[g] = Data(
                x=torch.randint(0, node_types, (n, 1), generator=gen),
                edge_index=e, edge_attr=etype,
                y=torch.randn(1, 1, generator=gen), num_nodes=n)
    return graphs
