r"""What each loss accepts as labels, checked when the data is loaded.

A loss fed labels outside its domain trains on nonsense (a label 3 in
binary cross-entropy), or fails epochs later with a non-finite loss whose
message points at the learning rate (an ``inf`` label). :func:`check_labels`
reads the labels of every split once, vectorised, before anything trains:

=========================================  ==========================================
loss                                       every label (``y``; ``edge_label`` for links)
=========================================  ==========================================
``bce``                                    0 or 1; ``NaN`` (a missing label) in a
                                           multi-label task
``cross_entropy``,                         an integer class in ``0 .. C-1``
``weighted_cross_entropy``                 (:math:`C` = the outputs, at least 2)
``l1``, ``mse``                            a finite number; ``NaN`` (missing) where a
                                           graph has several targets
any other                                  not infinite
=========================================  ==========================================

Sequence tasks (``ogbg-code2``) are their head's business. A problem raises
:class:`~graphgps_ext.loader.errors.DataCorruptError` (``main.py`` exit
code 5) naming the dataset, the split, the graph, the value and the file the
labels come from; when the loss is not the dataset's own (``model.loss_fun``
set in the config), :class:`~graphgps_ext.config.ConfigError` (exit code 2)
naming that key instead.
"""
from typing import Dict, Optional

import torch
from torch import Tensor
from torch_geometric.data import Dataset, InMemoryDataset

from graphgps_ext.config import ConfigError
from graphgps_ext.loader.errors import DataCorruptError
from graphgps_ext.loader.storage import graph_indices
from graphgps_ext.task import TaskInfo

CLASSES = ('cross_entropy', 'weighted_cross_entropy')
REGRESSION = ('l1', 'mse')


def label_key(task: TaskInfo) -> Optional[str]:
    """The attribute holding the labels the loss reads (``None``: not
    checked here)."""
    if task.task_type == 'sequence':
        return None
    return 'edge_label' if task.task == 'link' else 'y'


def stored_rows(dataset: Dataset, key: str) -> Optional[Tensor]:
    """The rows of attribute ``key`` of every graph of ``dataset`` (a view
    or subset of an in-memory dataset: only its graphs), without separating
    graphs; ``None`` when the dataset does not have it."""
    if isinstance(dataset, InMemoryDataset) and dataset._data is not None:
        value = dataset._data.get(key) if hasattr(dataset._data, 'get') else None
        if not isinstance(value, Tensor):
            return None
        slices = (dataset.slices or {}).get(key)
        graphs = graph_indices(dataset)
        if slices is None:  # a single graph
            return value
        dim = dataset._data.__cat_dim__(key, value)
        dim = 0 if dim is None else dim % max(1, value.dim())
        if graphs.numel() == slices.numel() - 1 and bool(
                (graphs == torch.arange(graphs.numel())).all()):
            return value
        start = slices[graphs]
        counts = slices[graphs + 1] - start
        before = torch.cumsum(counts, 0) - counts  # rows of the graphs before
        index = torch.arange(int(counts.sum())) + torch.repeat_interleave(
            start - before, counts)
        return value.index_select(dim, index)
    values = [getattr(dataset[i], key, None) for i in range(len(dataset))]
    values = [v for v in values if isinstance(v, Tensor)]
    return torch.cat([v.reshape(-1) for v in values]) if values else None


def _problem(y: Tensor, loss: str, outputs: int, multi: bool) -> Optional[str]:
    """What is wrong with the labels ``y`` for ``loss`` (the first bad one),
    else ``None``."""
    if y.numel() == 0:
        return None
    flat = y.reshape(-1)
    if loss in CLASSES:
        if flat.is_floating_point():
            bad = ~torch.isfinite(flat) | (flat != flat.round())
            if bool(bad.any()):
                return (f'{_first(flat, bad)}; {loss} takes integer classes '
                        f'0 .. {max(outputs, 2) - 1}')
        bad = (flat < 0) | (flat >= max(outputs, 2))
        if bool(bad.any()):
            return (f'{_first(flat, bad)}, outside the classes 0 .. '
                    f'{max(outputs, 2) - 1} of the {max(outputs, 2)} outputs')
        return None
    if not flat.is_floating_point():
        flat = flat.double()
    missing = torch.isnan(flat)
    unlabelled = missing if not multi else torch.zeros_like(missing)
    if loss == 'bce':
        bad = unlabelled | (~missing & (flat != 0) & (flat != 1))
        if bool(bad.any()):
            return (f'{_first(flat, bad)}; bce takes binary labels 0 or 1'
                    + (' (NaN: missing)' if multi else ''))
        return None
    if loss in REGRESSION:
        bad = torch.isinf(flat) | unlabelled
        if bool(bad.any()):
            return (f'{_first(flat, bad)}; {loss} takes finite targets'
                    + (' (NaN: missing)' if multi else ''))
        return None
    bad = torch.isinf(flat)
    return f'{_first(flat, bad)}; labels must not be infinite' if bool(bad.any()) else None


def _first(flat: Tensor, bad: Tensor) -> str:
    where = int(bad.nonzero()[0, 0])
    return (f'{int(bad.sum()):,} label value(s) are unusable, the first '
            f'{flat[where].item()!r} (value {where:,} of the split)')


def check_labels(splits: Dict[str, Dataset], task: TaskInfo, dataset: str,
                 source: str = '', chosen_loss: bool = False):
    """Raise unless the labels of every split of ``splits`` fit
    ``task.loss`` (see the module docstring). ``source``: the file(s) they
    come from; ``chosen_loss``: the loss is not the dataset's own."""
    key = label_key(task)
    if key is None:
        return
    multi = task.task_type == 'classification_multilabel' or (
        task.loss in REGRESSION and task.num_outputs > 1)
    for split, ds in splits.items():
        y = stored_rows(ds, key)
        if y is None:
            continue
        problem = _problem(y, task.loss, int(task.num_outputs), multi)
        if problem is None:
            continue
        where = f"the {split} split of dataset '{dataset}'"
        if chosen_loss:
            raise ConfigError(
                f"model.loss_fun '{task.loss}' does not fit the labels ({key}) of "
                f"{where}: {problem}. Use model.loss_fun 'auto' (the dataset's own "
                'loss) or one that takes these labels')
        raise DataCorruptError(
            f'Dataset {dataset}: the labels ({key}) of {where} are unusable for '
            f'its {task.loss} loss: {problem}. They come from '
            f"{source or 'the generated data'}: replace "
            + ("it with the original file from the dataset's download"
               if source else 'it (delete its processed folder and run again)')
            + '; the processed data is rebuilt at the next run.')
