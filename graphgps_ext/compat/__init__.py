r"""Configs of GraphGPS, GEAET and CSA, translated to this project's keys.

A YAML file written for the GraphGPS code base (Rampášek et al.), or for the
GEAET or CSA authors' code built on it, runs here unchanged:
:func:`graphgps_ext.runs.config.load_cfg` asks :func:`merge_config_file` to
merge it, which recognises the source from the file's keys
(:func:`detect`), translates every key with the rules of that source
(:func:`translate`) and merges the result like one of this project's
configs. Command-line overrides are merged afterwards, in this project's keys.

Every key of the file gets one of four answers, each logged on one line
(logger ``graphgps_ext.compat``, printed by ``main.py`` and ``--dry-run``):

- **translated** to the key(s) with the same effect here
  (``GEANet.unit_size 16 -> gea.num_slots 16``); where the source's code
  relies on a default that differs from this project's, that default is
  written out too (``gt.n_heads (GraphGPS default) 8 -> gt.n_heads 8``);
- **kept**: a GraphGym key with the same meaning in both (``optim.base_lr``,
  ``train.batch_size`` ...; not logged one by one);
- **inert**: the source's code does not read it for this config (e.g.
  ``gnn.layers_post_mp`` with ``gnn.head: san_graph``, ``train.mode:
  custom``, ``view_emb``); accepted with a note saying why;
- **refused**: it would build or train a different model and this project
  has no equivalent (a Performer branch, a pre-MP stack ...):
  :class:`~graphgps_ext.config.ConfigError` naming the key (``main.py``
  exits with code 2).

The translation reproduces the model the source's code builds from the file,
parameter for parameter: the authors' parity switches of this project are set
where their code differs from the papers (``gea.parity_*``,
``csa.parity_edge_bias``), GraphGym's single output for two-class
classification is kept (``dataset.binary_single_logit``), and the heads are
written out explicitly (``head.*``). The translated config is what a run
saves as ``config.yaml``, so the run is reproducible from that file alone.
``docs/compat.md`` lists every rule.

API: :func:`detect` (source name or ``None``), :func:`translate`
(:class:`Translation`), :func:`translate_file`, :func:`merge_config_file`
(the hook used by ``load_cfg``), :func:`last_translation`.

Modules: :mod:`~graphgps_ext.compat.common` (the translator and the GraphGym
keys every source reads), one module per source with its tables and rules
(:mod:`~graphgps_ext.compat.graphgps`, :mod:`~graphgps_ext.compat.geaet`,
:mod:`~graphgps_ext.compat.csa`).
"""
import contextlib
import logging
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from graphgps_ext.compat.common import CSA, GEAET, GRAPHGPS, Translation
from graphgps_ext.compat.csa import CSATranslator, authors_count, has_csa_branch
from graphgps_ext.compat.geaet import GEAETTranslator
from graphgps_ext.compat.graphgps import GraphGPSTranslator
from graphgps_ext.config import flatten, key_matches, merge_data, read_yaml

__all__ = ['GRAPHGPS', 'GEAET', 'CSA', 'SOURCES', 'Translation', 'detect',
           'translate', 'translate_file', 'merge_config_file', 'quiet',
           'last_translation', 'log_translation', 'authors_count',
           'has_csa_branch']

#: source name -> its translator.
TRANSLATORS = {t.source: t for t in (GraphGPSTranslator, GEAETTranslator,
                                     CSATranslator)}
SOURCES = (GRAPHGPS, GEAET, CSA)

log = logging.getLogger('graphgps_ext.compat')


# Detection: GEAET and CSA are checked first, both extend GraphGPS.
def detect(raw: Any) -> Optional[str]:
    """The code base a parsed YAML config was written for: ``'GEAET'``,
    ``'CSA'``, ``'GraphGPS'``, or ``None`` (this project's own config).

    GEAET configs have a ``GEANet`` group or per-branch dropouts; CSA
    configs CSA's dataset keys (``edge_encoder_shared``, ``rings*``,
    ``spd*``) or a ``CSA`` global branch in a two-part ``gt.layer_type``;
    GraphGPS configs a two-part ``gt.layer_type`` (``GINE+Transformer``) or
    one of GraphGPS's own keys (``train.mode``, ``name_tag``,
    ``gt.batch_norm``, ``posenc_*.eigen.eigvec_norm`` ...).
    """
    if not isinstance(raw, dict) or not raw:
        return None
    flat = flatten(raw, keep_empty=True)
    keys = list(flat)
    if str(flat.get('model.type', '')) == 'GEAET' or \
            any(key_matches(k, GEAETTranslator.markers) for k in keys):
        return GEAET
    layer_type = flat.get('gt.layer_type')
    parts = str(layer_type).split('+') if isinstance(layer_type, str) else []
    if any(key_matches(k, CSATranslator.markers) for k in keys) or \
            (len(parts) == 2 and parts[1] == 'CSA'):
        return CSA
    if len(parts) == 2 or any(key_matches(k, GraphGPSTranslator.markers) for k in keys):
        return GRAPHGPS
    return None



def translate(raw: Dict[str, Any], source: Optional[str] = None,
              path: str = '', ours: Optional[Dict[str, Any]] = None,
              overrides: Sequence[str] = ()) -> Translation:
    """Translate a parsed foreign config (``source`` detected when ``None``).

    ``ours``: this project's defaults as a flat ``{dotted key: value}``
    (optional): a source default equal to ours is then not logged.
    ``overrides``: the keys the command line sets (they settle the few
    choices the translation cannot make, e.g. ``gt.dropout`` for GEAET's
    unequal per-branch dropouts).
    Raises :class:`~graphgps_ext.config.ConfigError` for a refused key."""
    source = source or detect(raw)
    if source not in SOURCES:
        raise ValueError('not a GraphGPS, GEAET or CSA config')
    return TRANSLATORS[source](flatten(raw, keep_empty=True), path, ours,
                               overrides).run()


def translate_file(path: str, ours: Optional[Dict[str, Any]] = None,
                   overrides: Sequence[str] = ()) -> Optional[Translation]:
    """The :class:`Translation` of a foreign config file, ``None`` for one of
    this project's configs (``ours``, ``overrides`` as in :func:`translate`)."""
    raw = read_yaml(path)
    source = detect(raw)
    return None if source is None else translate(raw, source, path, ours, overrides)


_last: Optional[Translation] = None
_logged: Dict[str, Tuple[float, int]] = {}
_quiet = [False]


@contextlib.contextmanager
def quiet():
    """Within it, :func:`merge_config_file` does not log the notes (a caller
    that prints them itself, e.g. ``--dry-run``)."""
    before, _quiet[0] = _quiet[0], True
    try:
        yield
    finally:
        _quiet[0] = before


def last_translation() -> Optional[Translation]:
    """The translation of the last file merged by :func:`merge_config_file`
    (``None`` if it was this project's own config)."""
    return _last


def merge_config_file(cfg, path: str, opts: Optional[Sequence[str]] = None
                      ) -> Tuple[Optional[Translation], List[str]]:
    """Merge the config file ``path`` into ``cfg``: a GraphGPS, GEAET or CSA
    config is translated first (its notes logged once per file and
    process); this project's own configs are merged unchanged. ``opts``: the
    command line's ``KEY VALUE`` list (merged later by the caller; its keys
    settle the choices a translation cannot make). Returns the
    :class:`Translation` (or ``None``) and the dotted keys the file sets."""
    global _last
    raw = read_yaml(path)
    source = detect(raw)
    translation = None if source is None else translate(
        raw, source, path, flatten(cfg, keep_empty=True), list(opts or [])[0::2])
    _last = translation
    keys = merge_data(cfg, raw if translation is None else translation.config, path)
    if translation is not None:
        stamp = os.stat(path)
        key = os.path.abspath(path)
        if not _quiet[0] and _logged.get(key) != (stamp.st_mtime, stamp.st_size):
            _logged[key] = (stamp.st_mtime, stamp.st_size)
            log_translation(translation)
    return translation, keys


def log_translation(translation: Translation, emit: Optional[Callable] = None):
    """Log (or ``emit``) the notes of a translation, one line each."""
    emit = emit or _info
    emit(f'{translation.path}: {translation.source} config, translated '
         f'({len(translation.notes)} notes, {len(translation.kept)} keys kept '
         'as they are):')
    for line in translation.notes:
        emit(f'  {line}')


def _info(msg: str):
    if logging.getLogger('graphgps_ext').handlers:
        log.info(msg)
    else:  # before the run's logging is set up (main.py loads the config first)
        print(msg, flush=True)

