"""Datasets: readers, generators, splits and data loaders.

``load_dataset(cfg) -> DatasetBundle`` and ``make_loaders(cfg, bundle)`` are
the interface used by the training loop, ``data_fingerprint(bundle)`` the
content identity of the data a bundle holds; :mod:`.sources` lists the
supported ``dataset.format`` / ``dataset.name`` values.
"""
from graphgps_ext.loader.dataloader import make_loaders
from graphgps_ext.loader.master import DatasetBundle, data_fingerprint, load_dataset
from graphgps_ext.loader.offline import DatasetNotFoundError

__all__ = ['DatasetBundle', 'DatasetNotFoundError', 'data_fingerprint',
           'load_dataset', 'make_loaders']
