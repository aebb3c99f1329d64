"""Train/val/test index splits."""
import math
from typing import Dict, Sequence

import numpy as np
import torch
from torch import Tensor

from graphgps_ext.task import SPLITS


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
    if len(ratios) != 3 or any(r < 0 for r in ratios):
        raise ValueError(f'dataset.split must be three non-negative fractions '
                         f'(train, val, test), got {list(ratios)}')
    total = float(sum(ratios))
    train_r, val_r, test_r = (r / total for r in ratios)
    labels = y.view(-1).cpu().numpy()
    idx = np.arange(labels.shape[0])
    train, rest = train_test_split(idx, train_size=train_r, stratify=labels,
                                   random_state=seed, shuffle=True)
    if test_r == 0:
        val, test = rest, rest[:0]
    elif val_r == 0:
        val, test = rest[:0], rest
    else:
        val, test = train_test_split(rest, test_size=test_r / (val_r + test_r),
                                     stratify=labels[rest], random_state=seed,
                                     shuffle=True)
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
