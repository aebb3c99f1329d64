"""Train/val/test index splits: drawn (:func:`stratified_split`), read from
a split file and checked (:func:`checked_indices`), cut to
``dataset.max_graphs`` (:func:`limit`)."""
import math
from typing import Any, Dict, Optional, Sequence

import numpy as np
import torch
from torch import Tensor

from graphgps_ext.config.dataset import split_problem
from graphgps_ext.loader.errors import DataCorruptError, DataError
from graphgps_ext.task import SPLITS


def checked_indices(raw: Any, path: str, dataset: str,
                    num_items: Optional[int] = None,
                    names: Sequence[str] = SPLITS) -> Dict[str, Tensor]:
    """The index arrays ``{name: indices}`` of a split file, as LongTensors,
    once checked: a mapping with every one of ``names``; each a 1-D array of
    integers, none negative, none ``>= num_items`` (when known), none twice;
    no index in two splits (every key of the file counts). Raises
    :class:`~graphgps_ext.loader.errors.DataCorruptError` naming ``path``,
    the split and what is wrong."""
    def bad(what: str) -> DataCorruptError:
        return DataCorruptError(
            f'Dataset {dataset}: the split file {path} {what}. Replace it with '
            "the original file from the dataset's download.")
    if not isinstance(raw, dict):
        raise bad(f'holds a {type(raw).__name__}, not a dict of index arrays')
    missing = [n for n in names if n not in raw]
    if missing:
        raise bad(f"has no {', '.join(repr(m) for m in missing)} split "
                  f'(it has {sorted(map(str, raw))})')
    arrays = {}
    for key, value in raw.items():
        array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
        if array.ndim != 1 or not (array.dtype.kind in 'iu' or array.size == 0):
            raise bad(f"has a {key!r} split that is not a list of integer indices "
                      f'(shape {list(array.shape)}, dtype {array.dtype})')
        arrays[key] = array.astype(np.int64)
    for key, array in arrays.items():
        if array.size and array.min() < 0:
            raise bad(f'has negative indices in its {key!r} split (first '
                      f'{int(array[array < 0][0])})')
        if num_items is not None and array.size and array.max() >= num_items:
            raise bad(f'has indices beyond the {num_items:,} items of the data in '
                      f'its {key!r} split (largest {int(array.max()):,})')
        if np.unique(array).size != array.size:
            raise bad(f'lists an index twice in its {key!r} split')
    every = np.concatenate(list(arrays.values())) if arrays else np.zeros(0, np.int64)
    if np.unique(every).size != every.size:
        seen: Dict[int, str] = {}
        for key, array in arrays.items():
            both = np.intersect1d(array, np.fromiter(seen, np.int64, len(seen)))
            if both.size:
                raise bad(f'puts index {int(both[0])} in both its '
                          f'{seen[int(both[0])]!r} and {key!r} splits (the splits '
                          'must not overlap)')
            seen.update((int(i), key) for i in array)
    return {k: torch.from_numpy(v) for k, v in arrays.items()}


def stratified_split(y: Tensor, ratios: Sequence[float],
                     seed: int) -> Dict[str, Tensor]:
    r"""Random split stratified by the class label ``y`` ``[G]``.

    ``ratios`` = (train, val, test) fractions (e.g. GraphGym's
    ``dataset.split = [0.8, 0.1, 0.1]``, the MNA-GT 8:1:1 protocol).  Drawn
    with :func:`sklearn.model_selection.train_test_split` (``stratify=y``):
    first train vs. rest, then the rest into val and test, both with
    ``random_state=seed``.  Different seeds give different splits; the same
    seed gives the same split.  NCI1 (4,110 graphs): 3,288 / 411 / 411.
    Indices come in random order.
    """
    from sklearn.model_selection import train_test_split
    problem = split_problem(ratios)
    if problem:
        raise ValueError(problem)
    total = float(sum(ratios))  # 1 within rounding (as the splits have always been drawn)
    train_r, val_r, test_r = (r / total for r in ratios)
    labels = y.view(-1).cpu().numpy()
    idx = np.arange(labels.shape[0])
    try:
        train, rest = train_test_split(idx, train_size=train_r, stratify=labels,
                                       random_state=seed, shuffle=True)
        val, test = train_test_split(rest, test_size=test_r / (val_r + test_r),
                                     stratify=labels[rest], random_state=seed,
                                     shuffle=True)
    except ValueError as err:  # too few graphs of a class for a split
        raise DataError(
            f'dataset.split {list(ratios)} cannot split the {labels.shape[0]} '
            f'graphs stratified by class: {err}. Use fractions that give every '
            'split at least one graph of each class, or a larger dataset') from None
    # Shuffled order (not sorted), so that the first indices of a split
    # (dataset.max_graphs) are a random sample of it.
    return {k: torch.from_numpy(np.asarray(v)).long()
            for k, v in zip(SPLITS, (train, val, test))}


def limit(indices: Dict[str, Tensor], max_graphs: int) -> Dict[str, Tensor]:
    """Keep the first ``ceil(max_graphs * n_split / n_total)`` indices of each
    split (``max_graphs <= 0``: everything). Proportions are preserved, so a
    subset of a standard split still comes from that split."""
    total = sum(int(v.numel()) for v in indices.values())
    if max_graphs <= 0 or max_graphs >= total:
        return indices
    return {k: v[:math.ceil(max_graphs * v.numel() / total)]
            for k, v in indices.items()}


def contiguous(sizes: Dict[str, int]) -> Dict[str, Tensor]:
    """Consecutive index ranges for splits stored one after the other."""
    out, start = {}, 0
    for k in SPLITS:
        out[k] = torch.arange(start, start + sizes[k])
        start += sizes[k]
    return out
