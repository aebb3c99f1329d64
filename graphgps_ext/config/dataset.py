"""Config group ``dataset_ext``: extra keys on GraphGym's ``cfg.dataset``.

GraphGym's own keys are reused with GraphGPS meaning: ``dataset.format``
and ``dataset.name`` (those of the dataset declarations,
:mod:`graphgps_ext.loader.datasets`, checked by the run's config check),
``dataset.dir`` (root of the local files) and ``dataset.split`` (fractions of
random splits, used where a dataset has no standard split). The task keys
below default to ``'auto'`` = derived from the dataset
(:mod:`graphgps_ext.task` documents the convention).
"""
import math
from typing import Optional

from graphgps_ext.config.rules import (at_most, bounded, choices, ignored, non_negative,
                                       rule, unused)
from graphgps_ext.metrics import METRICS


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
    # Parity (GraphGPS's and GEAET's FeatureEncoder): with edge_encoder True,
    # build the edge encoder even when no branch of gt.layer_type reads the
    # edge stream (its parameters are then allocated and never trained).
    ds.parity_unused_edge_encoder = False
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


#: How far from 1 the fractions of ``dataset.split`` may sum.
SPLIT_TOLERANCE = 1e-6


def split_problem(split) -> Optional[str]:
    """Why ``split`` is not three fractions (train, val, test), each in
    (0, 1), summing to 1 (within :data:`SPLIT_TOLERANCE`), else ``None``:
    every split gets graphs, and no fraction is silently renormalised."""
    parts = list(split) if isinstance(split, (list, tuple)) else [split]
    example = 'e.g. [0.8, 0.1, 0.1]'
    if len(parts) != 3 or any(isinstance(r, bool) or not isinstance(r, (int, float))
                              or not math.isfinite(r) for r in parts):
        return (f'dataset.split must be three finite fractions (train, val, test), '
                f'{example}; got {parts}')
    if any(not 0 < r < 1 for r in parts):
        which = [name for name, r in zip(('train', 'val', 'test'), parts) if not 0 < r < 1]
        return (f'dataset.split {parts}: every fraction must be in (0, 1), so that '
                f"each split gets graphs ({', '.join(which)} is not); {example}")
    total = math.fsum(parts)
    if abs(total - 1) > SPLIT_TOLERANCE:
        return (f'dataset.split {parts} sums to {total:g}, not 1: give the fractions '
                f'of train, val and test (they are not rescaled), {example}')
    return None


def _split(cfg):
    return split_problem(cfg.dataset.split)


def _tree(cfg) -> bool:
    return (cfg.dataset.format == 'synthetic'
            and cfg.dataset.name == 'TreeNeighbourMatch')


def declare():
    """Declare the checks of the ``dataset`` keys."""
    # dataset.format and dataset.name: checked against the dataset
    # declarations (graphgps_ext.loader.datasets) by the run's config check.
    choices('dataset.metrics', list(METRICS))
    choices('dataset.task', ['auto', 'graph', 'node', 'edge', 'link'])
    choices('dataset.task_type', ['auto', 'regression', 'classification',
                                  'classification_multilabel', 'ranking',
                                  'sequence'])
    choices('dataset.tree_variant', ['mlpmixer', 'bottleneck'])
    non_negative('dataset.max_graphs', 'dataset.code2_max_nodes')
    at_most(10 ** 6, 'dataset.num_outputs', 'dataset.max_degree')
    bounded('dataset.tree_depth', lambda v: 2 <= v <= 8, 'in 2..8')
    bounded('dataset.max_degree', lambda v: v >= -1,
            '-1 (= the largest degree) or >= 0')
    bounded('dataset.num_outputs', lambda v: v == -1 or v >= 1,
            '-1 (= from the dataset) or >= 1')
    rule(_split)
    ignored('dataset.tree_depth', 'dataset.tree_variant', unless=_tree,
            why="the dataset is not dataset.format 'synthetic' / dataset.name "
                "'TreeNeighbourMatch'", in_file='warn')
    ignored('dataset.generator_seed',
            unless=lambda cfg: cfg.dataset.format == 'synthetic',
            why="dataset.format is not 'synthetic' (real data is not generated)",
            in_file='warn')
    ignored('dataset.split', unless=lambda cfg: cfg.dataset.format == 'PyG-TUDataset',
            why=lambda cfg: f"dataset.format '{cfg.dataset.format}' has a standard "
                            'split (dataset.split is used by PyG-TUDataset)',
            in_file='warn')
    ignored('dataset.code2_max_nodes',
            unless=lambda cfg: cfg.dataset.name == 'ogbg-code2',
            why="dataset.name is not 'ogbg-code2'", in_file='warn')
    ignored('dataset.node_encoder_name', unless=lambda cfg: cfg.dataset.node_encoder,
            why="dataset.node_encoder is False (the dataset's own node encoder and the "
                'posenc_*.enable flags are used)', fix='set dataset.node_encoder True')
    ignored('dataset.edge_encoder_name', unless=lambda cfg: cfg.dataset.edge_encoder,
            why="dataset.edge_encoder is False (the dataset's own edge encoder is used)",
            fix='set dataset.edge_encoder True')
    ignored('dataset.parity_unused_edge_encoder',
            unless=lambda cfg: cfg.dataset.edge_encoder,
            why='dataset.edge_encoder is False', fix='set dataset.edge_encoder True')
    # GraphGym's data keys that the readers of graphgps_ext.loader do not use.
    unused('dataset.transductive', 'dataset.shuffle_split', 'dataset.split_mode',
           'dataset.encoder', 'dataset.encoder_name', 'dataset.encoder_bn',
           'dataset.encoder_dim', 'dataset.edge_dim', 'dataset.edge_train_mode',
           'dataset.edge_message_ratio', 'dataset.edge_negative_sampling_ratio',
           'dataset.resample_disjoint', 'dataset.resample_negative',
           'dataset.transform', 'dataset.cache_save', 'dataset.cache_load',
           'dataset.remove_feature', 'dataset.tu_simple', 'dataset.to_undirected',
           'dataset.location', 'dataset.label_table', 'dataset.label_column')
