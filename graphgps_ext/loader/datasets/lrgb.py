"""The Long Range Graph Benchmark (PyG's ``LRGBDataset``; the Peptides sets
also in the original LRGB layout, ``dataset.format OGB``)."""
import torch

from graphgps_ext.loader.datasets import (GRAPH_MULTILABEL, GRAPH_REGRESSION,
                                          MOLECULE, Dataset, Format)
from graphgps_ext.loader.datasets.graphs import (categorical, graph, molecule,
                                                 ogb_dims)

FORMATS = [Format('PyG-LRGBDataset', 'graphgps_ext.loader.sources:lrgb',
                  ignore_case=True)]

SUPERPIXEL_NODE = dict(task='node', task_type='classification',
                       loss='weighted_cross_entropy', metric='f1_macro',
                       metrics=['f1_macro', 'accuracy'], head='inductive_node',
                       node_encoder='LinearNode', edge_encoder='LinearEdge')


def _superpixel_nodes(gen, n, cfg, outputs):
    return graph(n, torch.rand(n, 14, generator=gen),
                 lambda e: torch.rand(e, 2, generator=gen),
                 torch.randint(0, outputs, (n,), generator=gen))


def _contact(gen, n, cfg, outputs):
    atom, bond = ogb_dims()
    d = graph(n, categorical(gen, n, atom), lambda e: categorical(gen, e, bond))
    pos = torch.tensor([[0, 1, 2, 3], [2, 3, 0, 1]]) % n
    d.edge_label_index = pos
    d.edge_label = torch.ones(pos.size(1))
    return d


DATASETS = [
    Dataset('peptides-func', dict(GRAPH_MULTILABEL, **MOLECULE, num_outputs=10),
            names={'PyG-LRGBDataset': ('Peptides-func', ),
                   'OGB': ('peptides-functional', )},
            graph=molecule(lambda g, k: torch.randint(0, 2, (1, k), generator=g).float())),
    Dataset('peptides-struct', dict(GRAPH_REGRESSION, **MOLECULE, num_outputs=11),
            names={'PyG-LRGBDataset': ('Peptides-struct', ),
                   'OGB': ('peptides-structural', )},
            graph=molecule(lambda g, k: torch.randn(1, k, generator=g))),
    Dataset('pascalvoc-sp', dict(SUPERPIXEL_NODE, num_outputs=21),
            names={'PyG-LRGBDataset': ('PascalVOC-SP', )}, graph=_superpixel_nodes),
    Dataset('coco-sp', dict(SUPERPIXEL_NODE, num_outputs=81),
            names={'PyG-LRGBDataset': ('COCO-SP', )}, graph=_superpixel_nodes),
    Dataset('pcqm-contact', dict(MOLECULE, task='link', task_type='ranking',
                                 loss='bce', metric='mrr_filtered', num_outputs=1,
                                 metrics=['mrr_filtered', 'mrr', 'hits@1', 'hits@3',
                                          'hits@10'], head='inductive_link'),
            names={'PyG-LRGBDataset': ('PCQM-Contact', )}, graph=_contact),
]
