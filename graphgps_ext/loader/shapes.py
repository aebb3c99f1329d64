r"""Dataset shapes without the data: what a model needs to be built.

:data:`~graphgps_ext.task.SPECS` holds what a benchmark fixes (loss,
metric, encoders, head); the loader completes a
:class:`~graphgps_ext.task.TaskInfo` from one graph of the data
(feature widths, vocabularies, classes). This module knows those shapes per
dataset, so that a model can be built **without loading the data**:

- :func:`task_without_data(cfg) <task_without_data>`: the ``TaskInfo`` the
  loader would derive, with the config's overrides applied (``main.py
  --dry-run``, :mod:`graphgps_ext.dry_run`);
- :func:`sample_graphs(cfg, num) <sample_graphs>`: a few small random graphs
  with the dataset's attributes, shapes and dtypes, enough to run a model
  forward and backward (the config tests).

Known: ZINC, MNIST, CIFAR10, PATTERN, CLUSTER (PyG or generated),
TreeNeighbourMatch, NCI1, NCI109, COLLAB, Peptides-func / -struct (LRGB or
OGB layout), PascalVOC-SP, COCO-SP, PCQM-Contact, ogbg-molpcba, ogbg-code2,
PCQM4Mv2. Other datasets (any other TU or OGB name) need their data:
:class:`ShapesUnknown`.

Shapes: molecules use OGB's atom / bond feature dimensions
(``ogb.utils.features``); superpixel graphs ``x`` = pixel features and
position (MNIST 3, CIFAR10 5, VOC/COCO 14), edge features 1 (MNIST, CIFAR10)
or 2 (VOC/COCO); ZINC 28 atom and 4 bond types; SBM graphs one-hot
communities (PATTERN 3, CLUSTER 7); ogbg-code2 98 node types, 10,030 node
attributes, 5,000 words (+2), sequences of 5, depth 20; COLLAB node type =
degree (491 + 1).
"""
from typing import Callable, Dict, List, Tuple

import torch
from torch_geometric.data import Data

from graphgps_ext.task import TaskInfo, apply_overrides, build_task

CODE2 = dict(num_vocab=5000, max_seq_len=5, max_depth=20, num_nodetypes=98,
             num_nodeattributes=10030)
COLLAB_DEGREES = 492  # max degree 491 + 1 (degree as node type)

# (SPECS key, graph builder(generator, num_nodes, cfg) -> Data, TaskInfo extras)
Spec = Tuple[str, Callable, Dict]


class ShapesUnknown(ValueError):
    """The dataset's shapes cannot be known without its data."""


def _ogb_dims():
    from ogb.utils.features import get_atom_feature_dims, get_bond_feature_dims
    return get_atom_feature_dims(), get_bond_feature_dims()


def _cat(gen, n, sizes) -> torch.Tensor:
    return torch.stack([torch.randint(0, s, (n,), generator=gen) for s in sizes], 1)


def _edges(n: int) -> torch.Tensor:
    """A ring plus a chord, both directions (every node has a neighbour)."""
    src = torch.arange(n)
    dst = (src + 1) % n
    extra = torch.tensor([[0], [n // 2]])
    ei = torch.cat([torch.stack([src, dst]), extra], 1)
    return torch.cat([ei, ei.flip(0)], 1)


def _tree(r: int):
    """Complete binary tree of depth r, DFS pre-order, child -> parent edges."""
    n = 2 ** (r + 1) - 1
    edges = []

    def build(v, m):
        if v == m:
            return
        left = v + 1
        right = v + 1 + (m - v) // 2
        edges.append((left, v))
        edges.append((right, v))
        build(left, right - 1)
        build(right, m)

    build(0, n - 1)
    return n, torch.tensor(edges, dtype=torch.long).t()


def _graph(n, x, edge_attr=None, y=None, **kw):
    ei = _edges(n)
    d = Data(x=x, edge_index=ei, y=y, num_nodes=n, **kw)
    if edge_attr is not None:
        d.edge_attr = edge_attr(ei.size(1))
    return d


def _zinc(gen, n, cfg):
    return _graph(n, torch.randint(0, 28, (n, 1), generator=gen),
                  lambda e: torch.randint(1, 4, (e,), generator=gen),
                  torch.randn(1, 1, generator=gen))


def _superpixel_graph(width):
    def make(gen, n, cfg):
        return _graph(n, torch.rand(n, width, generator=gen),
                      lambda e: torch.rand(e, 1, generator=gen),
                      torch.randint(0, 10, (1,), generator=gen))
    return make


def _sbm(width, classes):
    def make(gen, n, cfg):
        x = torch.nn.functional.one_hot(
            torch.randint(0, width, (n,), generator=gen), width).float()
        return _graph(n, x, None, torch.randint(0, classes, (n,), generator=gen))
    return make


def _superpixel_node(classes):
    def make(gen, n, cfg):
        return _graph(n, torch.rand(n, 14, generator=gen),
                      lambda e: torch.rand(e, 2, generator=gen),
                      torch.randint(0, classes, (n,), generator=gen))
    return make


def _tu(width, classes=2):
    def make(gen, n, cfg):
        x = torch.nn.functional.one_hot(
            torch.randint(0, width, (n,), generator=gen), width).float()
        return _graph(n, x, None, torch.randint(0, classes, (1,), generator=gen))
    return make


def _collab(gen, n, cfg):
    return _graph(n, torch.randint(0, COLLAB_DEGREES, (n, 1), generator=gen), None,
                  torch.randint(0, 3, (1,), generator=gen))


def _mol(y_fn):
    def make(gen, n, cfg):
        atom, bond = _ogb_dims()
        return _graph(n, _cat(gen, n, atom), lambda e: _cat(gen, e, bond),
                      y_fn(gen))
    return make


def _contact(gen, n, cfg):
    atom, bond = _ogb_dims()
    d = _graph(n, _cat(gen, n, atom), lambda e: _cat(gen, e, bond))
    pos = torch.tensor([[0, 1, 2, 3], [2, 3, 0, 1]]) % n
    d.edge_label_index = pos
    d.edge_label = torch.ones(pos.size(1))
    return d


def _code2(gen, n, cfg):
    x = torch.stack([torch.randint(0, CODE2['num_nodetypes'], (n,), generator=gen),
                     torch.randint(0, CODE2['num_nodeattributes'], (n,),
                                   generator=gen)], 1)
    d = _graph(n, x, lambda e: torch.rand(e, 2, generator=gen))
    d.node_depth = torch.randint(0, CODE2['max_depth'], (n, 1), generator=gen)
    d.y_arr = torch.randint(0, CODE2['num_vocab'] + 2, (1, CODE2['max_seq_len']),
                            generator=gen)
    return d


def _tree_graph(gen, n, cfg):
    r = int(cfg.dataset.tree_depth)
    n, ei = _tree(r)
    k = 2 ** r
    x = torch.zeros(n, 2, dtype=torch.long)
    leaves = torch.tensor([v for v in range(n) if v not in set(ei[1].tolist())])
    perm = torch.randperm(k, generator=gen) + 1
    x[leaves, 0] = torch.arange(1, k + 1)
    x[leaves, 1] = perm
    key = int(torch.randint(1, k + 1, (1,), generator=gen))
    x[0, 0] = key
    root_mask = torch.zeros(n, dtype=torch.bool)
    root_mask[0] = True
    return Data(x=x, edge_index=ei, y=perm[key - 1].view(1) - 1,
                root_mask=root_mask, num_nodes=n)


def spec_of(cfg) -> Spec:
    """``(SPECS key, graph builder, TaskInfo extras)`` of ``cfg.dataset``.
    Raises :class:`ShapesUnknown` for a dataset not listed above."""
    fmt, name = cfg.dataset.format, cfg.dataset.name
    if fmt == 'PyG-ZINC':
        return 'ZINC', _zinc, {}
    if name in ('MNIST', 'CIFAR10'):
        return name, _superpixel_graph(3 if name == 'MNIST' else 5), {}
    if name in ('PATTERN', 'CLUSTER'):
        return name, _sbm(3, 2) if name == 'PATTERN' else _sbm(7, 6), {}
    if name == 'TreeNeighbourMatch':
        r = int(cfg.dataset.tree_depth)
        return 'TreeNeighbourMatch', _tree_graph, dict(
            node_type_dims=[2 ** r + 1] * 2, tree_depth=r, num_outputs=2 ** r)
    if name in ('NCI1', 'NCI109'):
        return name, _tu(37 if name == 'NCI1' else 38), {}
    if name == 'COLLAB':
        return 'COLLAB', _collab, dict(node_num_types=COLLAB_DEGREES)
    lower = name.lower()
    if lower in ('peptides-func', 'peptides-functional'):
        return 'peptides-func', _mol(
            lambda g: torch.randint(0, 2, (1, 10), generator=g).float()), {}
    if lower in ('peptides-struct', 'peptides-structural'):
        return 'peptides-struct', _mol(lambda g: torch.randn(1, 11, generator=g)), {}
    if lower in ('pascalvoc-sp', 'coco-sp'):
        return lower, _superpixel_node(21 if lower == 'pascalvoc-sp' else 81), {}
    if lower == 'pcqm-contact':
        return 'pcqm-contact', _contact, {}
    if name == 'ogbg-molpcba':
        return name, _mol(
            lambda g: torch.randint(0, 2, (1, 128), generator=g).float()), {}
    if name == 'ogbg-code2':
        return name, _code2, dict(CODE2, num_outputs=CODE2['num_vocab'] + 2)
    if name.startswith('PCQM4Mv2'):
        return 'PCQM4Mv2', _mol(lambda g: torch.randn(1, 1, generator=g)), {}
    raise ShapesUnknown(f"the shapes of dataset '{name}' ({fmt}) are not known "
                        'without its data')


def sample_graphs(cfg, num: int = 4, seed: int = 0) -> List[Data]:
    """``num`` small random graphs (5, 7, 9, ... nodes) shaped like the
    dataset's graphs (attributes, widths, dtypes, targets)."""
    _, make, _ = spec_of(cfg)
    gen = torch.Generator().manual_seed(seed)
    return [make(gen, 5 + 2 * i, cfg) for i in range(num)]


def task_without_data(cfg) -> TaskInfo:
    """The :class:`TaskInfo` the loader would derive for ``cfg``'s dataset,
    with the config's overrides applied (no data read). Raises
    :class:`ShapesUnknown`."""
    key, make, extra = spec_of(cfg)
    extra = dict(extra)
    num_outputs = extra.pop('num_outputs', None)
    node_types = extra.pop('node_num_types', None)
    sample = make(torch.Generator().manual_seed(0), 6, cfg)
    task = build_task(cfg.dataset.name, key, sample, num_outputs=num_outputs,
                      node_num_types=node_types, extra=extra)
    return apply_overrides(task, cfg)
