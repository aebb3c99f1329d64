"""TU datasets (PyG's ``TUDataset``): NCI1, NCI109, COLLAB and any other TU
name (classes read from the data; node type = degree without node labels)."""
import torch

from graphgps_ext.loader.datasets import GRAPH_CLASSIFICATION, Dataset, Format
from graphgps_ext.loader.datasets.graphs import graph, one_hot

FORMATS = [Format('PyG-TUDataset', 'graphgps_ext.loader.sources:tu')]

COLLAB_DEGREES = 492  # max degree 491 + 1 (degree as node type)


def _labelled(width):
    def make(gen, n, cfg, outputs):
        return graph(n, one_hot(gen, n, width), None,
                     torch.randint(0, outputs, (1,), generator=gen))
    return make


def _collab(gen, n, cfg, outputs):
    return graph(n, torch.randint(0, COLLAB_DEGREES, (n, 1), generator=gen), None,
                 torch.randint(0, outputs, (1,), generator=gen))


def _tu(name, node_labels, classes=2):
    return Dataset(name, dict(GRAPH_CLASSIFICATION, num_outputs=classes,
                              node_encoder='LinearNode', edge_encoder=None),
                   names={'PyG-TUDataset': (name, )}, graph=_labelled(node_labels))


DATASETS = [
    _tu('NCI1', 37),
    _tu('NCI109', 38),
    Dataset('COLLAB', dict(GRAPH_CLASSIFICATION, num_outputs=3,
                           node_encoder='TypeDictNode', edge_encoder=None),
            names={'PyG-TUDataset': ('COLLAB', )}, graph=_collab,
            extras=lambda cfg: dict(node_num_types=COLLAB_DEGREES)),
    # Any other TU name; with degrees as node types when it has no node labels.
    Dataset('TU', dict(GRAPH_CLASSIFICATION, num_outputs=None,
                       node_encoder='LinearNode', edge_encoder=None),
            names={'PyG-TUDataset': None}),
    Dataset('TU-degree', dict(GRAPH_CLASSIFICATION, num_outputs=None,
                              node_encoder='TypeDictNode', edge_encoder=None)),
]
