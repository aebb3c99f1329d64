"""Config group ``dataset_ext``: extra keys on GraphGym's ``cfg.dataset``.

GraphGym's own keys are reused with GraphGPS meaning: ``dataset.format``
(``PyG-ZINC``, ``PyG-GNNBenchmarkDataset``, ``PyG-TUDataset``,
``PyG-LRGBDataset``, ``OGB``, ``synthetic``), ``dataset.name``,
``dataset.dir`` (root of the local files) and ``dataset.split`` (fractions of
random splits, used where a dataset has no standard split). The task keys
below default to ``'auto'`` = derived from the dataset
(:mod:`graphgps_ext.loader.tasks` documents the convention).
"""
from graphgps_ext.config import choices


def dataset_cfg(cfg):
    ds = cfg.dataset
    # A default that runs offline anywhere (96 generated graphs); GraphGym's
    # 'PyG' / 'Cora' is not supported.
    ds.format = 'synthetic'
    ds.name = 'TreeNeighbourMatch'
    # ---- task metadata overrides ('auto' / -1 / [] = from the dataset) ------
    # Replaces GraphGym's defaults 'node' / 'classification'.
    ds.task = 'auto'
    ds.task_type = 'auto'
    # Used when dataset.node_encoder / edge_encoder is True (GraphGPS style);
    # 'default' = the dataset's own encoder (TaskInfo), e.g. 'default+RWSE'.
    # Replaces GraphGym's defaults 'Atom' / 'Bond'.
    ds.node_encoder_name = 'default'
    ds.edge_encoder_name = 'default'
    ds.num_outputs = -1
    # GraphGym's convention: a two-class classification task predicts one
    # logit (binary cross-entropy) instead of two class logits.
    ds.binary_single_logit = False
    # Metrics to log; the selection metric is the top-level `metric_best`.
    ds.metrics = []

    # ---- size -----------------------------------------------------------------
    # > 0: use only about this many graphs, keeping the split proportions
    # (first graphs of each split; generators draw fewer graphs; Peptides
    # featurises only those rows of the real split). 0 = all.
    ds.max_graphs = 0

    # ---- offline ------------------------------------------------------------
    # Never try to download (as the environment variable GRAPHGPS_EXT_OFFLINE=1).
    ds.offline = False

    # ---- generators (dataset.format: synthetic) -----------------------------
    # Seed of the generated data (TreeNeighbourMatch, PATTERN, CLUSTER); 11 as
    # in the bottleneck reference. Independent of the run seed `seed`.
    ds.generator_seed = 11
    # TreeNeighbourMatch depth r (2..8).
    ds.tree_depth = 2
    # 'mlpmixer': GEAET / Graph ViT sizes, no self-loops, 60/20/20 split;
    # 'bottleneck': Alon & Yahav sizes, self-loops, 80/20 (val = test).
    ds.tree_variant = 'mlpmixer'

    # ---- dataset-specific -----------------------------------------------------
    # COLLAB (TU graphs without node labels): node type = min(degree, cap);
    # -1 = the largest degree in the dataset.
    ds.max_degree = -1
    # ogbg-code2: ASTs larger than this are cut to their first nodes (GraphGPS:
    # 1000; 0 = keep whole graphs).
    ds.code2_max_nodes = 1000


choices('dataset.format', ['PyG-ZINC', 'PyG-GNNBenchmarkDataset',
                           'PyG-TUDataset', 'PyG-LRGBDataset', 'OGB',
                           'synthetic'])
choices('dataset.task', ['auto', 'graph', 'node', 'edge', 'link'])
choices('dataset.task_type', ['auto', 'regression', 'classification',
                              'classification_multilabel', 'ranking',
                              'sequence'])
choices('dataset.tree_variant', ['mlpmixer', 'bottleneck'])
