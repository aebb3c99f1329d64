"""Configuration: GraphGym's ``cfg`` extended with this project's groups.

Each group lives in its own module of this package, with two functions: the
group function adds its keys and defaults, and ``declare()`` declares their
checks, which :func:`load_cfg <graphgps_ext.run_config.load_cfg>` runs at
start, before any data is read. Both are listed once, in
:data:`graphgps_ext.config.groups.GROUPS`: :func:`graphgps_ext.register.register_all`
registers the group functions in GraphGym, and
:func:`~graphgps_ext.config.groups.declare_all` runs the declarations, each
once. Nothing is declared by importing a module; every reader of the
declarations gets them from :func:`declarations`, which runs
``declare_all`` first. The declarations:

- :func:`choices`: the allowed values of an enumerated key (a bad value gets
  the closest valid ones, compared case-insensitively);
- :func:`probability`, :func:`positive`, :func:`non_negative`,
  :func:`bounded`: the range of a numeric key; :func:`at_most`: a sane upper
  bound on a size or count;
- :func:`rule`: a check across keys (e.g. heads must divide the width);
- :func:`ignored`: a key that another key makes ineffective (e.g.
  ``gea.num_slots`` under ``gea.parity_slots_eq_head_dim``): setting it to a
  value the run would not use is an error, or, for keys of an alternative
  that is not selected (another branch, another scheduler) set in a file, a
  warning in the run's log;
- :func:`unused`: a GraphGym key this project does not read (setting it is
  an error that names the key to use instead);
- :func:`advice`: a warning for a config that runs but probably not as meant
  (e.g. a run shorter than its learning-rate warm-up);
- :func:`volatile`, :func:`resumable`: keys outside the run fingerprint, and
  keys a resumed run may change (:mod:`graphgps_ext.identity`).

A key counts as *set* when the config file or the command line gives it a
value other than its default (so a resolved ``config.yaml`` reloads as it
ran). This package imports nothing from the layers above it (the
registries, the model, the loaders, training): checks that need the
registries (model, branch, head, encoder, loss, metric and dataset names)
live one level up, in :mod:`graphgps_ext.run_config` and
:mod:`graphgps_ext.register`, whose ``register_all`` declares the keys that
take metric names (``tests/config/test_layering.py``).

The machinery, by concern (all re-exported here):
:mod:`~graphgps_ext.config.keys` (``ConfigError``, dotted-key utilities),
:mod:`~graphgps_ext.config.rules` (the declarations above and their
store), :mod:`~graphgps_ext.config.yaml_io` (reading YAML files and
overrides, type coercion, merging) and :mod:`~graphgps_ext.config.validation`
(running the declared checks). The list of groups,
:mod:`~graphgps_ext.config.groups`, imports every group module and is not
re-exported.
"""
from graphgps_ext.config.keys import (COMMAND_LINE, ConfigError, UnknownKeys, all_keys,
                                      closest, did_you_mean, flatten, get_key,
                                      key_matches, leaf_keys, set_key,
                                      unflatten)
from graphgps_ext.config.rules import (Declarations, Ignored, Text, advice,
                                       at_most, auto_or_bool, bounded, choices,
                                       declarations, declared, has_branch,
                                       ignored, non_negative, positive,
                                       probability, resumable, resumable_keys,
                                       rule, run_declarations, unused,
                                       volatile, volatile_keys)
from graphgps_ext.config.validation import (check_key, check_values,
                                            config_warnings, effective_values,
                                            set_keys, validate)
from graphgps_ext.config.yaml_io import (YAML_MAX_DEPTH, YAML_MAX_NODES,
                                         check_overrides, coerce, merge_data,
                                         merge_file, merge_list, read_yaml)

__all__ = [
    'COMMAND_LINE', 'ConfigError', 'UnknownKeys', 'all_keys', 'closest', 'did_you_mean',
    'flatten', 'get_key', 'key_matches', 'leaf_keys', 'set_key', 'unflatten',
    'Declarations', 'Ignored', 'Text', 'advice', 'at_most', 'auto_or_bool',
    'bounded', 'choices', 'declarations', 'declared', 'has_branch', 'ignored',
    'non_negative', 'positive', 'probability', 'resumable', 'resumable_keys',
    'rule', 'run_declarations', 'unused', 'volatile', 'volatile_keys',
    'check_key', 'check_values',
    'config_warnings', 'effective_values', 'set_keys', 'validate',
    'YAML_MAX_DEPTH', 'YAML_MAX_NODES', 'check_overrides', 'coerce',
    'merge_data', 'merge_file', 'merge_list', 'read_yaml']
