"""The results tree (``out_dir``, default ``results/``) and what a seed's
results are. Modules (imported one by one; this package imports none of
them):

- :mod:`~graphgps_ext.results.tree`: every file name and format of the
  tree (``Results``, ``RunRoot``, ``RunDir``, ``SearchDir``) and its jail
  (no path leaves ``out_dir`` or follows a symbolic link);
- :mod:`~graphgps_ext.results.seed_folder`: a seed folder's owner (its
  lock), the replacement of an old run by a new one and its recovery, and
  the checks that the folder's files agree;
- :mod:`~graphgps_ext.results.identity`: which config and which data a
  seed's results belong to (identity, fingerprint, data record), and a
  seed's status (complete, stale, ...) for a launcher.

The training loop and the logger write through these modules, so they sit
below :mod:`graphgps_ext.runs` and :mod:`graphgps_ext.train`.
"""
