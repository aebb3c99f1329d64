"""Configuration: GraphGym's ``cfg`` extended with this project's groups.

A group has two functions: the group function adds its keys and defaults,
and ``declare()`` declares their checks, which :func:`load_cfg
<graphgps_ext.runs.config.load_cfg>` runs at start, before any data is read.
The groups of the catalogue entries (a branch's options, an encoding's
``posenc_<name>``) derive from their entries' options
(:mod:`graphgps_ext.config.options`); the others are modules of this
package. :func:`graphgps_ext.config.groups.groups` lists them all, once:
:func:`graphgps_ext.register.register_all` registers the group functions in
GraphGym, and :func:`declarations` collects every ``declare()`` the first
time a check reads them (nothing is declared by importing a module). The
declarations:

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
  keys a resumed run may change (:mod:`graphgps_ext.results.identity`).

A key counts as *set* when the config file or the command line gives it a
value other than its default (so a resolved ``config.yaml`` reloads as it
ran). This package imports nothing from the layers above it (the
registries, the model, the loaders, training), only the ground floor beside
it (the catalogues and the metric table): checks that need the registries
(model, branch, head, encoder, loss and dataset names) live one level up,
in :mod:`graphgps_ext.runs.config` (``tests/config/test_layering.py``).

The machinery, by concern (all re-exported here):
:mod:`~graphgps_ext.config.keys` (``ConfigError``, dotted-key utilities),
:mod:`~graphgps_ext.config.rules` (the declarations above, collected per
group), :mod:`~graphgps_ext.config.groups` (the list of groups and their
collected declarations), :mod:`~graphgps_ext.config.yaml_io` (reading YAML
files and overrides, type coercion, merging) and
:mod:`~graphgps_ext.config.validation` (running the declared checks). Not
re-exported: :mod:`~graphgps_ext.config.sizes`, the memory that keys ask for
as a product, checked before it is allocated where it is allocated.
"""
from graphgps_ext.config.keys import (COMMAND_LINE, ConfigError, UnknownKeys, all_keys,
                                      closest, did_you_mean, flatten, get_key,
                                      key_matches, leaf_keys, set_key,
                                      unflatten)
from graphgps_ext.config.groups import (declarations, declared, resumable_keys,
                                        volatile_keys)
from graphgps_ext.config.rules import (Declarations, Ignored, Text, advice,
                                       at_most, auto_or_bool, bounded, choices,
                                       collect, has_branch, ignored, non_negative,
                                       positive, probability, resumable, rule,
                                       unused, volatile)
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
    'rule', 'collect', 'unused', 'volatile', 'volatile_keys',
    'check_key', 'check_values',
    'config_warnings', 'effective_values', 'set_keys', 'validate',
    'YAML_MAX_DEPTH', 'YAML_MAX_NODES', 'check_overrides', 'coerce',
    'merge_data', 'merge_file', 'merge_list', 'read_yaml']
