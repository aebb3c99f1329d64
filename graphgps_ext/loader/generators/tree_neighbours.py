r"""TreeNeighbourMatch (Alon & Yahav, ICLR 2021), generated and cached on disk.

A complete binary tree of depth :math:`r` (:math:`n = 2^{r+1}-1` nodes, DFS
pre-order ids, root 0, leaves :math:`j = 1..2^r` left to right) with
directed child :math:`\to` parent edges.  Node features ``x`` ``[n, 2]`` =
(key, value), 0 = empty: the root holds :math:`(k, 0)`, leaf :math:`j` holds
:math:`(j, \pi(j))` for a permutation :math:`\pi` of :math:`1..2^r`, inner
nodes :math:`(0, 0)`.  The label is the value of the leaf whose key is the
root's key, shifted to start at 0:

.. math::
    y = \pi(k) - 1 \in \{0, \dots, 2^r - 1\}.

Every drawn permutation yields one graph per key :math:`k = 1..2^r`, so the
label histogram is exactly uniform.

Variants (``variant``):

* ``'mlpmixer'`` (default; Graph ViT/MLP-Mixer, used by GEAET):
  :math:`\min(4000, (2^r)!)` distinct permutations for :math:`r \le 3`, else
  :math:`\min(4000, \lfloor 640000 / 2^r \rfloor)` random ones, i.e. 96 /
  32,000 / 64,000 / 128,000 / 256,000 / 512,000 graphs for r = 2..7; no
  self-loops; stratified 60/20/20 train/val/test split.
* ``'bottleneck'`` (Alon & Yahav): caps 1000 and 32,000, one self-loop per
  node (:math:`2^{r+2}-3` edges), stratified 80/20 train/test; there is no
  validation set, so ``val`` is the test split.

Per graph: ``x`` Long ``[n, 2]``, ``edge_index`` ``[2, 2^{r+1}-2]`` (plus
``n`` self-loops for ``'bottleneck'``), ``y`` Long ``[1]``, ``root_mask``
Bool ``[n]`` (node 0).  Generation is vectorised over all graphs (no
per-graph ``Data`` objects). Its memory, :func:`memory_need`, is checked
against the machine's before anything is drawn
(:func:`graphgps_ext.config.sizes.check`).
"""
import itertools
import math
import os.path as osp
from typing import Dict, Tuple

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, InMemoryDataset
from torch_geometric.io import fs

from graphgps_ext.config.sizes import Need, product
from graphgps_ext.loader.safe_pickle import load_file

VARIANTS = {
    # name: (permutation cap, total-graph cap, self-loops)
    'mlpmixer': (4000, 640_000, False),
    'bottleneck': (1000, 32_000, True),
}
# Fewest permutations a stratified split with >= 1 graph per class and split
# needs (the test fifth must hold every class once).
MIN_PERMUTATIONS = 5


def tree_structure(depth: int) -> Tuple[Tensor, Tensor]:
    """``(edge_index [2, n-1] child->parent, leaves [2^r])`` of the complete
    binary tree of depth ``depth`` in DFS pre-order numbering."""
    n = 2 ** (depth + 1) - 1
    parent = np.full(n, -1, dtype=np.int64)
    leaves = []
    stack = [(0, n - 1)]  # (node, last id of its subtree)
    while stack:
        v, m = stack.pop()
        if v == m:
            leaves.append(v)
            continue
        left, right = v + 1, v + 1 + (m - v) // 2
        parent[left] = parent[right] = v
        stack.append((right, m))
        stack.append((left, right - 1))
    child = np.arange(1, n)
    edge_index = torch.from_numpy(np.stack([child, parent[1:]]))
    return edge_index, torch.tensor(sorted(leaves))


def num_permutations(depth: int, variant: str) -> int:
    perm_cap, total_cap, _ = VARIANTS[variant]
    k = 2 ** depth
    count = min(perm_cap, math.factorial(k))
    if depth > 3:
        count = min(count, total_cap // k)
    return count


def num_graphs(depth: int, variant: str = 'mlpmixer', max_graphs: int = 0) -> int:
    """The number of graphs :func:`generate` draws."""
    count = num_permutations(depth, variant)
    if max_graphs > 0:
        count = min(count, max(MIN_PERMUTATIONS, max_graphs // 2 ** depth))
    return count * 2 ** depth


def memory_need(depth: int, variant: str = 'mlpmixer', max_graphs: int = 0,
                generating: bool = True) -> Need:
    r"""The memory of the dataset: per graph ``x`` (:math:`16n` bytes),
    ``root_mask`` (:math:`n`), ``edge_index`` (:math:`16E`) and ``y``;
    ``generating``: three times that (PyG saves the graphs through two
    in-memory copies, more than the drawing takes)."""
    n = 2 ** (depth + 1) - 1
    edges = n - 1 + (n if VARIANTS[variant][2] else 0)
    graphs = num_graphs(depth, variant, max_graphs)
    copies = 3 if generating else 1
    how = (f'{graphs:,} graphs x ({n:,} nodes x 17 + {edges:,} edges x 16 + 8) bytes'
           + (', x 3 while PyG saves them' if generating else ''))
    return Need('the TreeNeighbourMatch graphs',
                product(copies, graphs, 17 * n + 16 * edges + 8),
                (f'dataset.tree_depth {depth}', f'dataset.max_graphs {max_graphs}'),
                how, 'Lower dataset.tree_depth, or set dataset.max_graphs to '
                     'generate fewer graphs')


def draw_permutations(depth: int, variant: str, rng: np.random.Generator,
                      count: int) -> np.ndarray:
    """``[count, 2^r]`` permutations of ``1..2^r``: distinct (sampled without
    replacement from all of them) for r <= 3, independent for r > 3."""
    k = 2 ** depth
    if depth <= 3:
        every = np.array(list(itertools.permutations(range(1, k + 1))))
        pick = rng.choice(every.shape[0], size=count, replace=False)
        return every[pick]
    return np.argsort(rng.random((count, k)), axis=1) + 1


def split_indices(y: np.ndarray, variant: str, seed: int) -> Dict[str, Tensor]:
    """Stratified split (sklearn): 80/20 train/test; ``mlpmixer`` then splits
    the train part 75/25 into train/val (60/20/20 overall)."""
    from sklearn.model_selection import train_test_split
    idx = np.arange(y.shape[0])
    train, test = train_test_split(idx, train_size=0.8, stratify=y,
                                   random_state=seed, shuffle=True)
    if variant == 'mlpmixer':
        train, val = train_test_split(train, train_size=0.75,
                                      stratify=y[train], random_state=seed,
                                      shuffle=True)
    else:
        val = test
    return {k: torch.from_numpy(np.sort(v)).long()
            for k, v in (('train', train), ('val', val), ('test', test))}


def generate(depth: int, variant: str = 'mlpmixer', seed: int = 11,
             max_graphs: int = 0) -> Tuple[Data, Dict[str, Tensor],
                                           Dict[str, Tensor]]:
    """All graphs in PyG's collated in-memory layout: ``(data, slices,
    split)``.  ``max_graphs > 0`` draws fewer permutations:
    ``max(5, max_graphs // 2^r)`` of them (labels stay exactly uniform)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown TreeNeighbourMatch variant '{variant}' "
                         f"(dataset.tree_variant); use one of {list(VARIANTS)}")
    if depth < 2:
        raise ValueError(f'dataset.tree_depth must be >= 2, got {depth}')
    rng = np.random.default_rng(seed)
    k = 2 ** depth
    count = num_permutations(depth, variant)
    if max_graphs > 0:
        count = min(count, max(MIN_PERMUTATIONS, max_graphs // k))
    perms = draw_permutations(depth, variant, rng, count)        # [P, K]

    template, leaves = tree_structure(depth)
    n = 2 ** (depth + 1) - 1
    if VARIANTS[variant][2]:
        loops = torch.arange(n).repeat(2, 1)
        template = torch.cat([template, loops], dim=1)
    num_graphs = count * k
    perms_t = torch.from_numpy(perms).long()
    keys = torch.arange(1, k + 1).repeat(count)                   # [G]
    x = torch.zeros(num_graphs, n, 2, dtype=torch.long)
    x[:, 0, 0] = keys
    x[:, leaves, 0] = torch.arange(1, k + 1)
    x[:, leaves, 1] = perms_t.repeat_interleave(k, dim=0)
    y = perms_t.repeat_interleave(k, dim=0).gather(
        1, (keys - 1).view(-1, 1)).view(-1) - 1
    root_mask = torch.zeros(num_graphs, n, dtype=torch.bool)
    root_mask[:, 0] = True

    num_edges = template.size(1)
    data = Data(x=x.view(-1, 2), edge_index=template.repeat(1, num_graphs),
                y=y, root_mask=root_mask.view(-1))
    steps = torch.arange(num_graphs + 1)
    slices = {'x': steps * n, 'edge_index': steps * num_edges, 'y': steps,
              'root_mask': steps * n}
    split = split_indices(y.numpy(), variant, seed)
    return data, slices, split


class TreeNeighbourMatch(InMemoryDataset):
    r"""The generated TreeNeighbourMatch dataset of depth ``depth`` (see the
    module docstring), cached as ``<root>/processed/<tag>.pt``.

    Args:
        root: cache folder (the loader uses
            ``<dataset.dir>/synthetic/TreeNeighbourMatch``).
        depth: tree depth :math:`r \ge 2` (``dataset.tree_depth``).
        variant: ``'mlpmixer'`` or ``'bottleneck'``
            (``dataset.tree_variant``).
        seed: generator seed (``dataset.generator_seed``).
        max_graphs: ``> 0`` for a smaller set (tests, smoke runs).

    Attributes:
        split_idx: ``{'train', 'val', 'test'}`` index tensors.
    """

    def __init__(self, root: str, depth: int, variant: str = 'mlpmixer',
                 seed: int = 11, max_graphs: int = 0, transform=None):
        self.depth, self.variant = int(depth), variant
        self.seed, self.max_graphs = int(seed), int(max_graphs)
        super().__init__(root, transform)
        self.load(self.processed_paths[0])
        self.split_idx = load_file(self.processed_paths[1])

    @property
    def tag(self) -> str:
        return tag(self.depth, self.variant, self.seed, self.max_graphs)

    @property
    def raw_file_names(self):
        return []

    @property
    def processed_file_names(self):
        return [f'{self.tag}.pt', f'{self.tag}_split.pt']

    def process(self):
        data, slices, split = generate(self.depth, self.variant, self.seed,
                                       self.max_graphs)
        fs.torch_save((data.to_dict(), slices, Data), self.processed_paths[0])
        fs.torch_save(split, self.processed_paths[1])

    @property
    def num_keys(self) -> int:
        return 2 ** self.depth

    def __repr__(self) -> str:
        return (f'TreeNeighbourMatch(r={self.depth}, {self.variant}, '
                f'{len(self)})')


def tag(depth: int, variant: str, seed: int, max_graphs: int = 0) -> str:
    """The name of the processed file of a generation."""
    size = f'_max{max_graphs}' if max_graphs > 0 else ''
    return f'r{depth}_{variant}_seed{seed}{size}'


def cache_root(base: str) -> str:
    return osp.join(base, 'synthetic', 'TreeNeighbourMatch')
