"""The launcher: configs x seeds on this machine or on SLURM, and searches.

``python -m graphgps_ext.sweep [options] CONFIG|GLOB... [-- KEY VALUE ...]``
(``run/sweep.sh`` is a wrapper; ``--help`` lists the options) and
``python -m graphgps_ext.sweep.reproduce <paper> [<table>]``
(``run/reproduce.sh``). Modules:

- :mod:`~graphgps_ext.sweep.plan`: configs and seeds resolved as ``main.py``
  resolves them (results folder, identity), sorted into runs to do, complete
  and stale seeds;
- :mod:`~graphgps_ext.sweep.local`: sequential runs or a GPU queue, one log
  per run;
- :mod:`~graphgps_ext.sweep.slurm`: the array job and the dependent
  aggregation job;
- :mod:`~graphgps_ext.sweep.grid`: GraphGym grid files, the points of a
  search and their ranking;
- :mod:`~graphgps_ext.sweep.reproduce`: a paper's tables (``run/tables.tsv``)
  as a sweep;
- :mod:`~graphgps_ext.sweep.cli`: the command line.
"""
