"""Random graphs for the dry-run shapes of the dataset declarations."""
import torch
from torch_geometric.data import Data


def ring_with_chord(n: int) -> torch.Tensor:
    """A ring plus a chord, both directions (every node has a neighbour)."""
    src = torch.arange(n)
    dst = (src + 1) % n
    extra = torch.tensor([[0], [n // 2]])
    ei = torch.cat([torch.stack([src, dst]), extra], 1)
    return torch.cat([ei, ei.flip(0)], 1)


def graph(n, x, edge_attr=None, y=None, **kw) -> Data:
    """``n`` nodes on :func:`ring_with_chord`; ``edge_attr(num_edges)``."""
    ei = ring_with_chord(n)
    d = Data(x=x, edge_index=ei, y=y, num_nodes=n, **kw)
    if edge_attr is not None:
        d.edge_attr = edge_attr(ei.size(1))
    return d


def categorical(gen, n, sizes) -> torch.Tensor:
    """``[n, len(sizes)]`` columns of random ids below ``sizes``."""
    return torch.stack([torch.randint(0, s, (n,), generator=gen) for s in sizes], 1)


def one_hot(gen, n, width) -> torch.Tensor:
    return torch.nn.functional.one_hot(
        torch.randint(0, width, (n,), generator=gen), width).float()


def ogb_dims():
    """OGB's atom and bond feature vocabularies."""
    from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims
    return get_atom_feature_dims(), get_bond_feature_dims()


def molecule(y):
    """A molecule builder with OGB atom/bond ids; ``y(gen, outputs)``."""
    def make(gen, n, cfg, outputs):
        atom, bond = ogb_dims()
        return graph(n, categorical(gen, n, atom),
                     lambda e: categorical(gen, e, bond), y(gen, outputs))
    return make
