r"""Vectorised mini-batch collation straight from an in-memory dataset's
storage (``train.fast_collate``).

PyG's :class:`~torch_geometric.loader.DataLoader` separates every graph of
a batch into its own :class:`~torch_geometric.data.Data` (one slice per
attribute) and concatenates them again in
:meth:`~torch_geometric.data.Batch.from_data_list`: a Python loop over the
graphs and attributes: 2.6 ms for 32 ZINC graphs on one CPU core once
the dataset caches the separated graphs, 7 ms before (this module: 0.8 ms). An
:class:`~torch_geometric.data.InMemoryDataset` already keeps all graphs
concatenated along each attribute's concatenation dimension, with
per-graph offsets ``slices[key]`` (``[G + 1]``) and index attributes stored
graph-local. A batch of graphs :math:`g_1, \dots, g_B` is therefore one
gather per attribute:

.. math::
    \mathrm{rows}(key) = \mathop{\Vert}_{b=1}^{B}
        [\,s_{key}[g_b],\ s_{key}[g_b + 1]\,), \qquad
    v_{batch} = v[\mathrm{rows}] + \mathrm{inc},

where the increment of an index attribute (``*index*``, ``face``) is the
number of nodes of the graphs before it in the batch (:math:`\sum_{c<b}
n_{g_c}`, repeated over the graph's entries) and 0 otherwise, plus the
``batch`` vector and ``ptr``. :class:`FastCollater` builds exactly the
:class:`~torch_geometric.data.Batch` that PyG's collater builds (same
attributes, ``batch``, ``ptr``, ``num_graphs`` and the ``_slice_dict`` /
``_inc_dict`` that :meth:`~torch_geometric.data.Batch.get_example` reads;
``tests/loader/test_collate.py`` compares them on every dataset of the
package), with a handful of tensor operations whatever the batch size.

Datasets it cannot serve exactly (a ``transform`` applied on access,
non-tensor or sparse attributes, a ``Data`` subclass with its own
``__inc__`` / ``__cat_dim__``, ``*batch*`` attributes) are reported by
:func:`fast_collate_supported` and keep PyG's loader.
"""
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data, InMemoryDataset
from torch_geometric.utils import cumsum, is_sparse

from graphgps_ext.layer.context import HOST_NODE_COUNTS
from graphgps_ext.loader.storage import node_slices


def fast_collate_supported(dataset) -> Optional[str]:
    """``None`` when :class:`FastCollater` serves ``dataset`` exactly,
    else the reason it does not."""
    if not isinstance(dataset, InMemoryDataset):
        return f'{type(dataset).__name__} is not an InMemoryDataset'
    if dataset.transform is not None:
        return 'the dataset applies a transform on access'
    data, slices = dataset._data, dataset.slices
    if type(data) is not Data:
        return f'its graphs are {type(data).__name__}, not Data'
    if slices is None:
        return 'the dataset holds no collated storage'
    try:
        node_slices(dataset)
    except ValueError as e:
        return str(e)
    for key in data.keys():
        value = data[key]
        if key == 'num_nodes':
            continue
        if not isinstance(value, Tensor) or is_sparse(value):
            return f"attribute '{key}' is not a dense tensor"
        if 'batch' in key:
            return f"attribute '{key}' is a batch vector"
        if key not in slices:
            return f"attribute '{key}' has no slices"
    return None


def _ranges(start: Tensor, count: Tensor, total: int) -> Tensor:
    """``cat([arange(s, s + c) for s, c in zip(start, count)])``."""
    shift = (start - cumsum(count)[:-1]).repeat_interleave(
        count, output_size=total)
    return torch.arange(total, device=start.device) + shift


class FastCollater:
    """Collate a list of dataset indices into a
    :class:`~torch_geometric.data.Batch` by gathering from ``dataset``'s
    storage (see the module docstring).

    Args:
        dataset: an :class:`~torch_geometric.data.InMemoryDataset`
            (possibly an index view such as ``dataset[split_idx]``) for which
            :func:`fast_collate_supported` returns ``None``.

    ``collater(indices)`` returns the batch of ``dataset[i]`` for ``i`` in
    ``indices`` (positions in ``dataset``, as a DataLoader's sampler yields
    them).

    With a ``device``, the storage is held there (moved once) and batched
    there by index (``train.data_placement``; ``shared``, a dict, lets the
    collaters of several splits of one storage share its device copy): the gather indices are
    computed on the CPU, where the offsets live, and only they cross to the
    device (from pinned memory, without waiting); the features never leave
    the device. The batch is the same, on ``device``.
    """

    def __init__(self, dataset: InMemoryDataset,
                 device: Optional[torch.device] = None,
                 shared: Optional[Dict[int, Tensor]] = None):
        reason = fast_collate_supported(dataset)
        if reason is not None:
            raise ValueError(f'train.fast_collate cannot serve {dataset!r}: '
                             f'{reason}; set train.fast_collate False')
        data = dataset._data
        self.store = {key: data[key] for key in data.keys()
                      if key != 'num_nodes'}
        self.cat_dim = {}
        for key, value in self.store.items():
            dim = data.__cat_dim__(key, value)
            self.cat_dim[key] = 0 if dim is None else dim % value.dim()
        self.increment = {key: 'index' in key or key == 'face'
                          for key in self.store}
        # Attributes with equal offsets (all node-level ones, all edge-level
        # ones) share one gather index per batch.
        self.groups: List[Tuple[Tensor, List[str]]] = []
        for key in self.store:
            s = dataset.slices[key]
            for slices, keys in self.groups:
                if torch.equal(slices, s):
                    keys.append(key)
                    break
            else:
                self.groups.append((s, [key]))
        self.node_slices = node_slices(dataset)
        self.explicit_num_nodes = 'num_nodes' in data.keys()
        self.indices = torch.as_tensor(dataset.indices(), dtype=torch.long)
        self.device = None if device is None else torch.device(device)
        if self.device is not None:
            # ``shared``: device copies by host tensor, so that the splits
            # of one dataset (views of one storage) hold it once.
            shared = {} if shared is None else shared
            for key, value in self.store.items():
                if id(value) not in shared:
                    shared[id(value)] = value.to(self.device)
                self.store[key] = shared[id(value)]

    def _to_device(self, t: Tensor) -> Tensor:
        """A CPU index tensor on the storage's device (asynchronously from
        pinned memory on CUDA)."""
        if self.device is None or self.device.type == 'cpu':
            return t
        if self.device.type == 'cuda':
            return t.pin_memory().to(self.device, non_blocking=True)
        return t.to(self.device)

    def __call__(self, indices: Sequence[int]) -> Batch:
        graphs = self.indices[torch.as_tensor(indices, dtype=torch.long)]
        B = graphs.numel()
        start = self.node_slices[graphs]
        nodes = self.node_slices[graphs + 1] - start
        node_offset = cumsum(nodes)
        num_nodes = int(node_offset[-1])
        batch = Batch(_base_cls=Data)
        slice_dict: Dict[str, Tensor] = {}
        inc_dict: Dict[str, Tensor] = {}
        no_inc = torch.zeros(B, dtype=torch.long)
        for s, keys in self.groups:
            first = s[graphs]
            count = s[graphs + 1] - first
            sizes = cumsum(count)
            total = int(sizes[-1])
            rows = self._to_device(_ranges(first, count, total))
            shift = None
            for key in keys:
                dim = self.cat_dim[key]
                out = self.store[key].index_select(dim, rows)
                if self.increment[key]:
                    if shift is None:
                        shift = self._to_device(node_offset[:-1].repeat_interleave(
                            count, output_size=total))
                    shape = [1] * out.dim()
                    shape[dim] = -1
                    out += shift.view(shape)
                batch[key] = out
                slice_dict[key] = sizes
                inc_dict[key] = node_offset[:-1] if self.increment[key] else no_inc
        if self.explicit_num_nodes:
            batch._store._num_nodes = nodes.tolist()
            batch.num_nodes = num_nodes
        batch.batch = self._to_device(torch.arange(B).repeat_interleave(
            nodes, output_size=num_nodes))
        batch.ptr = self._to_device(node_offset)
        setattr(batch, HOST_NODE_COUNTS, nodes)
        batch._num_graphs = B
        batch._slice_dict = slice_dict
        batch._inc_dict = inc_dict
        return batch




def storage_bytes(dataset) -> int:
    """Bytes of the concatenated storage of an in-memory ``dataset`` (what
    holding it on a device costs)."""
    data = dataset._data
    return sum(data[key].numel() * data[key].element_size()
               for key in data.keys() if isinstance(data[key], Tensor))


def add_host_sizes(batch: Batch) -> Batch:
    """Give ``batch`` (on the CPU, before the transfer) the host copy of its
    graphs' node counts (:data:`graphgps_ext.layer.context.HOST_NODE_COUNTS`,
    from ``ptr``), which the layers read instead of the device's; PyG's
    collater path. :class:`FastCollater` sets it itself."""
    ptr = getattr(batch, 'ptr', None)
    if isinstance(ptr, Tensor) and ptr.device.type == 'cpu':
        setattr(batch, HOST_NODE_COUNTS, ptr[1:] - ptr[:-1])
    return batch


class HostSizesCollater:
    """Wrap a collate function so that its batches carry
    :func:`add_host_sizes` (picklable, for loader workers)."""

    def __init__(self, collate):
        self.collate = collate

    def __call__(self, items):
        batch = self.collate(items)
        return add_host_sizes(batch) if isinstance(batch, Batch) else batch
