"""The GNN benchmark datasets (PyG's ``GNNBenchmarkDataset``): superpixel
graphs MNIST and CIFAR10 (``x`` = pixel features and position), SBM graphs
PATTERN and CLUSTER (also generated: ``dataset.format synthetic``)."""
import torch

from graphgps_ext.loader.datasets import GRAPH_CLASSIFICATION, Dataset, Format
from graphgps_ext.loader.datasets.graphs import graph, one_hot

FORMATS = [Format('PyG-GNNBenchmarkDataset',
                  'graphgps_ext.loader.sources:gnn_benchmark')]

SBM = dict(task='node', task_type='classification',
           loss='weighted_cross_entropy', metric='accuracy_sbm',
           metrics=['accuracy_sbm', 'accuracy'], head='inductive_node',
           node_encoder='LinearNode', edge_encoder='DummyEdge')


def _superpixels(width):
    def make(gen, n, cfg, outputs):
        return graph(n, torch.rand(n, width, generator=gen),
                     lambda e: torch.rand(e, 1, generator=gen),
                     torch.randint(0, outputs, (1,), generator=gen))
    return make


def _sbm(width):
    def make(gen, n, cfg, outputs):
        return graph(n, one_hot(gen, n, width), None,
                     torch.randint(0, outputs, (n,), generator=gen))
    return make


def _superpixel_dataset(name, width):
    return Dataset(name, dict(GRAPH_CLASSIFICATION, num_outputs=10,
                              node_encoder='LinearNode', edge_encoder='LinearEdge'),
                   names={'PyG-GNNBenchmarkDataset': (name, )},
                   graph=_superpixels(width))


def _sbm_dataset(name, communities, classes):
    return Dataset(name, dict(SBM, num_outputs=classes),
                   names={'PyG-GNNBenchmarkDataset': (name, ), 'synthetic': (name, )},
                   graph=_sbm(communities))


DATASETS = [
    _superpixel_dataset('MNIST', 3),
    _superpixel_dataset('CIFAR10', 5),
    _sbm_dataset('PATTERN', 3, 2),
    _sbm_dataset('CLUSTER', 7, 6),
]
