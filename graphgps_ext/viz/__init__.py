"""Attention pictures (GEAET Fig. 4/8, CSA Fig. 3/4): record attention from a
trained model and draw it. Command line: ``python -m graphgps_ext.viz``."""
from graphgps_ext.viz.record import (BRANCH_KEYS, LoadedRun, graph_maps,
                                     load_run, node_scores, record_attention,
                                     recorded_branches)

__all__ = ['BRANCH_KEYS', 'LoadedRun', 'graph_maps', 'load_run', 'node_scores',
           'record_attention', 'recorded_branches']
