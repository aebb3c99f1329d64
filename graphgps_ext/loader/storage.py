"""Vectorised edits of an :class:`~torch_geometric.data.InMemoryDataset`'s
collated storage (``dataset._data`` + ``dataset.slices``).

PyG keeps all graphs of an in-memory dataset concatenated along dim 0 with
per-attribute offsets in ``slices``.  Reshaping or adding a per-node /
per-graph attribute is therefore one tensor operation on the whole dataset,
with no Python loop over graphs.
"""
from typing import Optional

import torch
from torch import Tensor
from torch_geometric.data import InMemoryDataset


def _reset_cache(dataset: InMemoryDataset):
    # InMemoryDataset caches separated graphs; drop the cache after an edit.
    dataset._data_list = None


def node_slices(dataset: InMemoryDataset) -> Tensor:
    """Per-graph node offsets ``[G + 1]`` of the collated storage."""
    data, slices = dataset._data, dataset.slices
    for key in ('x', 'pos', 'y_node', 'root_mask'):
        if slices is not None and key in slices and data[key] is not None \
                and data[key].size(0) == data.num_nodes:
            return slices[key]
    counts = getattr(data, '_num_nodes', None)
    if counts is None:
        raise ValueError('cannot infer per-graph node counts of '
                         f'{dataset!r}: it has no node-level attribute')
    counts = torch.as_tensor(counts, dtype=torch.long)
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])


def set_attr(dataset: InMemoryDataset, key: str, value: Tensor,
             slices: Optional[Tensor] = None):
    """Set the collated attribute ``key`` (all graphs concatenated along dim
    0). ``slices`` defaults to the attribute's existing offsets."""
    if slices is None:
        slices = dataset.slices[key]
    dataset._data[key] = value
    dataset.slices[key] = slices
    _reset_cache(dataset)


def graph_y_as_rows(dataset: InMemoryDataset):
    """Graph-level regression targets stored as ``[G]`` become ``[G, 1]`` so
    that a batch's ``y`` is ``[B, T]`` like the model output."""
    y = dataset._data.y
    if y is not None and y.dim() == 1 and y.is_floating_point():
        set_attr(dataset, 'y', y.view(-1, 1))


def edge_attr_as_columns(dataset: InMemoryDataset):
    """Continuous edge features stored as ``[E]`` become ``[E, 1]``."""
    ea = dataset._data.get('edge_attr')
    if ea is not None and ea.dim() == 1 and ea.is_floating_point():
        set_attr(dataset, 'edge_attr', ea.view(-1, 1))


def concat_node_attrs(dataset: InMemoryDataset, first: str, second: str):
    """``x <- [first || second]`` as float (MNIST/CIFAR10: pixel + position,
    the GraphGPS convention)."""
    a = dataset._data[first].float().view(dataset._data[first].size(0), -1)
    b = dataset._data[second].float().view(a.size(0), -1)
    set_attr(dataset, 'x', torch.cat([a, b], dim=-1),
             slices=dataset.slices[first])


def degree_as_node_type(dataset: InMemoryDataset, cap: int = -1) -> int:
    """Give every node ``x = min(degree, cap)`` as a LongTensor ``[N, 1]``.

    Categorical degree fed to an embedding is the one-hot degree feature of
    GIN (Xu et al., 2019) for graphs without node labels, without storing
    the ``[N, max_degree + 1]`` one-hot matrix.  ``cap < 0``: the largest
    degree in the dataset.  Returns the number of types ``cap + 1``.
    """
    data, slices = dataset._data, dataset.slices
    nslices = node_slices(dataset)
    eslices = slices['edge_index']
    # Global node id of every edge source: local id + its graph's offset.
    per_graph_edges = eslices[1:] - eslices[:-1]
    offset = torch.repeat_interleave(nslices[:-1], per_graph_edges)
    src = data.edge_index[0] + offset
    deg = torch.bincount(src, minlength=int(nslices[-1]))
    top = int(deg.max()) if deg.numel() else 0
    cap = top if cap < 0 else cap
    x = deg.clamp(max=cap).view(-1, 1)
    set_attr(dataset, 'x', x, slices=nslices)
    return cap + 1


def graph_indices(dataset: InMemoryDataset) -> Tensor:
    """The graphs of the collated storage that ``dataset`` (a view made
    with ``dataset[idx]``, or the whole) holds, in its order."""
    idx = dataset.indices()
    if isinstance(idx, range):
        return torch.arange(idx.start, idx.stop, idx.step, dtype=torch.long)
    return torch.as_tensor(idx, dtype=torch.long).view(-1)
