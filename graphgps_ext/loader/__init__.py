"""Datasets: readers, generators, splits and data loaders.

``load_dataset(cfg) -> DatasetBundle`` and ``make_loaders(cfg, bundle)`` are
the interface used by the training loop; :mod:`.sources` lists the supported
``dataset.format`` / ``dataset.name`` values.
"""
from graphgps_ext.loader.dataloader import make_loaders
from graphgps_ext.loader.master import DatasetBundle, load_dataset
from graphgps_ext.loader.offline import DatasetNotFoundError

__all__ = ['DatasetBundle', 'DatasetNotFoundError', 'load_dataset',
           'make_loaders']
