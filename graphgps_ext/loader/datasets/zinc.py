"""ZINC (PyG's ``ZINC``): ``subset`` (ZINC-12k) and ``full``."""
import torch

from graphgps_ext.loader.datasets import GRAPH_REGRESSION, Dataset, Format
from graphgps_ext.loader.datasets.graphs import graph

ATOM_TYPES, BOND_TYPES = 28, 4

FORMATS = [Format('PyG-ZINC', 'graphgps_ext.loader.sources:zinc')]


def _graph(gen, n, cfg, outputs):
    return graph(n, torch.randint(0, ATOM_TYPES, (n, 1), generator=gen),
                 lambda e: torch.randint(1, BOND_TYPES, (e,), generator=gen),
                 torch.randn(1, outputs, generator=gen))


DATASETS = [
    Dataset('ZINC', dict(GRAPH_REGRESSION, num_outputs=1,
                         node_encoder='TypeDictNode', node_num_types=ATOM_TYPES,
                         edge_encoder='TypeDictEdge', edge_num_types=BOND_TYPES),
            names={'PyG-ZINC': ('subset', 'full')}, graph=_graph),
]
