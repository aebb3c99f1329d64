"""Precomputed structural encodings (Laplacian eigenvectors, random-walk
landing probabilities, pairwise random walks and shortest paths, rings),
attached to a dataset once and cached: :func:`precompute_encodings`
(:mod:`.precompute`, the pipeline); :mod:`.dense_pass` computes every dense
kind in one pass over the size groups of a dataset (:mod:`.dense`: the
collated graph storage); one module per encoding (:mod:`.lappe`,
:mod:`.rwse`, :mod:`.edge_rwse`, :mod:`.spd`, :mod:`.rings`); :mod:`.cache`
keeps them on disk.
"""
from graphgps_ext.transform.precompute import (EncodedList, compute_entries,
                                               graph_store, precompute_encodings,
                                               thread_limit)

__all__ = ['EncodedList', 'compute_entries', 'graph_store',
           'precompute_encodings', 'thread_limit']
