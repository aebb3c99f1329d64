"""Running a config's seeds: what ``main.py`` does between its command line
and the results tree. Modules (imported one by one; this package imports
none of them, so that a command loads only what it uses):

- :mod:`~graphgps_ext.runs.config`: a run's resolved config: the YAML file
  and ``KEY VALUE`` overrides loaded, checked against the config groups
  (:mod:`graphgps_ext.config` declares the keys) and the registries,
  completed from the dataset (``load_cfg``, ``finalize_cfg``,
  ``default_cfg``, ``config_name``);
- :mod:`~graphgps_ext.runs.seed_lists`: the seed-list grammar of
  ``--seeds`` and the seeds a run trains (``--seeds`` / ``--repeat``);
- :mod:`~graphgps_ext.runs.seed`: one seed's run (``run_seed``: claim,
  decide, prepare, start, train, finish);
- :mod:`~graphgps_ext.runs.stack`: the seeds of one config trained as one
  stacked model (``main.py --stack K``).

What a run leaves on disk, and how it is checked, is
:mod:`graphgps_ext.results`.
"""
