r"""Dataset shapes without the data: what a model needs to be built.

A dataset's declaration (:mod:`graphgps_ext.loader.datasets`) holds what a
benchmark fixes (loss, metric, encoders, head) and a builder of random graphs
shaped like its own; the loader completes a
:class:`~graphgps_ext.task.TaskInfo` from one graph of the data
(feature widths, vocabularies, classes). From the declarations, a model can be
built **without loading the data**:

- :func:`task_without_data(cfg) <task_without_data>`: the ``TaskInfo`` the
  loader would derive, with the config's overrides applied (``main.py
  --dry-run``, :mod:`graphgps_ext.dry_run`);
- :func:`sample_graphs(cfg, num) <sample_graphs>`: a few small random graphs
  with the dataset's attributes, shapes and dtypes, enough to run a model
  forward and backward (the config tests).

Known: every declared dataset with a graph builder (ZINC, MNIST, CIFAR10,
PATTERN, CLUSTER (PyG or generated), TreeNeighbourMatch, NCI1, NCI109,
COLLAB, Peptides-func / -struct (LRGB or OGB layout), PascalVOC-SP, COCO-SP,
PCQM-Contact, ogbg-molpcba, ogbg-code2, PCQM4Mv2). Other datasets (any other
TU or OGB name) need their data: :class:`ShapesUnknown`.

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

from graphgps_ext.loader import datasets
from graphgps_ext.task import TaskInfo, apply_overrides, build_task

# (dataset key, graph builder(generator, num_nodes, cfg) -> Data, TaskInfo extras)
Spec = Tuple[str, Callable, Dict]


class ShapesUnknown(ValueError):
    """The dataset's shapes cannot be known without its data."""


def spec_of(cfg) -> Spec:
    """``(dataset key, graph builder, TaskInfo extras)`` of ``cfg.dataset``.
    Raises :class:`ShapesUnknown` for a dataset without a graph builder."""
    fmt, name = cfg.dataset.format, cfg.dataset.name
    ds = datasets.find(fmt, name)
    if ds is None or ds.graph is None:
        raise ShapesUnknown(f"the shapes of dataset '{name}' ({fmt}) are not "
                            'known without its data')
    extras = ds.extras(cfg) if ds.extras is not None else {}
    outputs = ds.outputs(cfg)

    def make(gen, n, cfg):
        return ds.graph(gen, n, cfg, outputs)
    return ds.key, make, extras


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
    task = build_task(cfg.dataset.name, datasets.spec(key), sample,
                      num_outputs=num_outputs, node_num_types=node_types,
                      extra=extra)
    return apply_overrides(task, cfg)
