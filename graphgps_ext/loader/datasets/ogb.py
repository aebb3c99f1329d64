"""OGB graph datasets (``ogbg-*``; molpcba and code2 known without data) and
OGB-LSC PCQM4Mv2 (``PCQM4Mv2-full``, ``PCQM4Mv2-subset``)."""
import os.path as osp
from typing import List

import torch

from graphgps_ext.loader.datasets import (GRAPH_MULTILABEL, GRAPH_REGRESSION,
                                          MOLECULE, Dataset, Format)
from graphgps_ext.loader.datasets.graphs import graph, molecule

CODE2 = dict(num_vocab=5000, max_seq_len=5, max_depth=20, num_nodetypes=98,
             num_nodeattributes=10030)


def ogb_master():
    """The installed OGB's table of graph datasets (``master.csv``: one
    column per dataset)."""
    import pandas as pd
    import ogb
    return pd.read_csv(osp.join(osp.dirname(ogb.__file__), 'graphproppred',
                                'master.csv'), index_col=0, keep_default_na=False)


def ogb_graph_names() -> List[str]:
    """Every graph dataset of the installed OGB."""
    return list(ogb_master().keys())


FORMATS = [Format('OGB', 'graphgps_ext.loader.sources:ogb_format',
                  more_names=ogb_graph_names)]


def _code2(gen, n, cfg, outputs):
    x = torch.stack([torch.randint(0, CODE2['num_nodetypes'], (n,), generator=gen),
                     torch.randint(0, CODE2['num_nodeattributes'], (n,),
                                   generator=gen)], 1)
    d = graph(n, x, lambda e: torch.rand(e, 2, generator=gen))
    d.node_depth = torch.randint(0, CODE2['max_depth'], (n, 1), generator=gen)
    d.y_arr = torch.randint(0, outputs, (1, CODE2['max_seq_len']), generator=gen)
    return d


DATASETS = [
    Dataset('ogbg-molpcba', dict(GRAPH_MULTILABEL, **MOLECULE, num_outputs=128),
            names={'OGB': ('ogbg-molpcba', )},
            graph=molecule(lambda g, k: torch.randint(0, 2, (1, k), generator=g).float())),
    Dataset('ogbg-code2', dict(task='graph', task_type='sequence',
                               loss='cross_entropy', metric='f1_subtoken',
                               metrics=['f1_subtoken'], head='code2_sequence',
                               node_encoder='ASTNode', edge_encoder='LinearEdge',
                               num_outputs=None),
            names={'OGB': ('ogbg-code2', )}, graph=_code2,
            # the vocabulary plus __UNK__ and __EOS__
            extras=lambda cfg: dict(CODE2, num_outputs=CODE2['num_vocab'] + 2)),
    # Any other ogbg-* dataset, by the task type in OGB's master.csv.
    Dataset('ogbg-mol-classification', dict(GRAPH_MULTILABEL, **MOLECULE,
                                            num_outputs=None)),
    Dataset('ogbg-mol-regression', dict(GRAPH_REGRESSION, **MOLECULE,
                                        num_outputs=None)),
    Dataset('PCQM4Mv2', dict(GRAPH_REGRESSION, **MOLECULE, num_outputs=1),
            names={'OGB': ('PCQM4Mv2-full', 'PCQM4Mv2-subset')},
            graph=molecule(lambda g, k: torch.randn(1, k, generator=g))),
]
