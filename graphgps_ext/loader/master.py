"""``load_dataset(cfg)``: read the configured dataset, derive its task
metadata, precompute encodings and return the train/val/test splits."""
import logging
import os.path as osp
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import torch
from torch import Tensor
from torch_geometric.data import Dataset

from graphgps_ext.loader import splits as split_utils
from graphgps_ext.loader import datasets
from graphgps_ext.loader.fingerprint import content_fingerprint
from graphgps_ext.loader.labels import check_labels
from graphgps_ext.loader.sources import Source, check_dataset
from graphgps_ext.task import TaskInfo, apply_overrides, build_task
from graphgps_ext.transform import precompute

log = logging.getLogger(__name__)


@dataclass
class DatasetBundle:
    """The loaded dataset.

    Attributes:
        splits: ``train`` / ``val`` / ``test`` datasets.
        task: task metadata (derived, then config overrides applied).
        split_indices: indices of each split into the dataset as stored on
            disk (Peptides in the LRGB layout: csv rows), to save with the
            run; ``None`` when the splits are separate files (ZINC,
            GNNBenchmarkDataset, LRGBDataset, generated SBMs).
        info: format, name, folder, load time, graph counts, ``stand_in``,
            ``fingerprint`` (the content of the graphs and of the
            dataset's own split as read, before ``dataset.max_graphs`` and a
            seed's random split select from them:
            :func:`graphgps_ext.loader.fingerprint.content_fingerprint`).
    """
    splits: Dict[str, Dataset]
    task: TaskInfo
    split_indices: Optional[Dict[str, Tensor]] = None
    info: Dict[str, Any] = field(default_factory=dict)


def data_fingerprint(bundle: 'DatasetBundle') -> str:
    """The content fingerprint of the data a run reads: the loader's
    (``bundle.info['fingerprint']``: the graphs and the dataset's own split
    as read, before ``dataset.max_graphs``, a seed's random split and the
    encodings), else computed from the bundle's splits and split indices
    (:func:`graphgps_ext.loader.fingerprint.content_fingerprint`). Two runs
    read the same data exactly when their fingerprints are equal, whatever
    folder it came from."""
    info = getattr(bundle, 'info', None) or {}
    if isinstance(info.get('fingerprint'), str):
        return info['fingerprint']
    return content_fingerprint(bundle.splits, getattr(bundle, 'split_indices', None))


def _limit(src: Source, max_graphs: int):
    """Apply ``dataset.max_graphs`` to a source that has not done so."""
    if max_graphs <= 0 or src.limited:
        return
    if 'all' in src.parts:
        kept = split_utils.limit(src.indices, max_graphs)
        keep = torch.cat([kept[k] for k in split_utils.SPLITS])
        src.parts['all'] = src.parts['all'][keep]
        src.source_indices = kept
        src.indices = split_utils.contiguous(
            {k: int(v.numel()) for k, v in kept.items()})
    else:
        sizes = {k: torch.arange(len(v)) for k, v in src.parts.items()}
        kept = split_utils.limit(sizes, max_graphs)
        src.parts = {k: v[:int(kept[k].numel())] for k, v in src.parts.items()}
    src.limited = True


def _precompute(src: Source, cfg):
    size = f'_max{cfg.dataset.max_graphs}' if cfg.dataset.max_graphs > 0 else ''
    for part, ds in list(src.parts.items()):
        cache = osp.join(src.folder, 'encodings', f'{part}{size}')
        src.parts[part] = precompute.precompute_encodings(ds, cfg, cache)


def load_dataset(cfg) -> DatasetBundle:
    """Load ``cfg.dataset.format`` / ``cfg.dataset.name`` from
    ``cfg.dataset.dir``.

    Steps: read (or generate / download when missing and online) the data;
    apply ``dataset.max_graphs``; derive :class:`TaskInfo` and apply config
    overrides; check every split's labels against the loss
    (:func:`graphgps_ext.loader.labels.check_labels`); precompute encodings (:func:`graphgps_ext.transform.precompute.
    precompute_encodings`, cached under the dataset's folder); split.

    Raises:
        ValueError: unknown format or name (with the valid ones).
        graphgps_ext.loader.errors.DatasetNotFoundError: files missing and
            no network (within seconds).
        graphgps_ext.loader.errors.DataCorruptError: raw files that cannot
            be processed or give inconsistent data, labels the loss cannot
            take (the processed files are rebuilt at the next run).
        graphgps_ext.config.ConfigError: a configured loss that does not fit
            the labels; generated data beyond the machine's memory.
    """
    start = time.perf_counter()
    fmt = cfg.dataset.format
    check_dataset(cfg)
    src = datasets.reader(fmt)(cfg)
    # What was read, before the config and the seed select from it.
    content = content_fingerprint(src.parts, src.indices if 'all' in src.parts
                                  and src.standard_split else None)
    _limit(src, int(cfg.dataset.max_graphs))

    if 'all' in src.parts:
        train0 = src.parts['all'][int(src.indices['train'][0])]
    else:
        train0 = src.parts['train'][0]
    task = build_task(src.name or cfg.dataset.name, datasets.spec(src.spec_key), train0,
                      num_outputs=src.num_outputs,
                      node_num_types=src.node_num_types, extra=src.extra)
    apply_overrides(task, cfg)
    if 'all' in src.parts:
        read = {k: src.parts['all'][src.indices[k]] for k in split_utils.SPLITS}
    else:
        read = dict(src.parts)
    own_loss = datasets.spec(src.spec_key).get('loss')
    check_labels(read, task, src.name or cfg.dataset.name, src.labels_from,
                 chosen_loss=cfg.model.loss_fun not in ('auto', own_loss))

    _precompute(src, cfg)
    if 'all' in src.parts:
        base = src.parts['all']
        out = {k: base[src.indices[k]] for k in split_utils.SPLITS}
        split_indices = src.source_indices or src.indices
    else:
        out = dict(src.parts)
        split_indices = None
    seconds = time.perf_counter() - start
    sizes = {k: len(v) for k, v in out.items()}
    info = dict(format=fmt, name=cfg.dataset.name, folder=src.folder,
                load_seconds=round(seconds, 3), sizes=sizes,
                standard_split=src.standard_split,
                stand_in=bool(src.extra.get('stand_in', False)), fingerprint=content)
    if info['stand_in']:
        info['stand_in_reason'] = src.extra.get('stand_in_reason', '')
    log.info('[*] %s / %s: %s graphs (train/val/test) in %.1f s; task %s '
                 '(%s, %d outputs, loss %s, metric %s/%s)', fmt,
                 cfg.dataset.name, '/'.join(str(v) for v in sizes.values()),
                 seconds, task.task, task.task_type, task.num_outputs,
                 task.loss, task.metric, task.metric_direction)
    if info['stand_in']:
        log.warning('%s: %s', cfg.dataset.name, info['stand_in_reason']
                    or 'a STAND-IN, not the published benchmark files')
    return DatasetBundle(out, task, split_indices, info)
