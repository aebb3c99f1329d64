r"""Sequence head of ogbg-code2 (``code2_sequence``).

Vocabulary convention (OGB's ``examples/graphproppred/code2/utils.py``, and
:mod:`graphgps_ext.loader.code2`): ``task.extra['num_vocab']`` (5000) most
frequent subtokens, then ``__UNK__`` (index ``num_vocab``) and ``__EOS__``
(index ``num_vocab + 1``), so each position has ``V = num_vocab + 2`` classes
(``task.num_outputs``; 5002 is the constant of GraphGPS's ``ogb_code_graph``
head).  Targets are OGB's ``y_arr`` ``[B, max_seq_len]``: the method name's
first ``max_seq_len`` subtokens, out-of-vocabulary ones as ``__UNK__``, padded
with ``__EOS__``.  The F1 metric is :func:`graphgps_ext.metrics.f1_subtoken`
on the sequences of :meth:`Code2SequenceHead.metric_inputs`.
"""
import torch
from torch import Tensor, nn

from graphgps_ext.head.base import pool_name, resolve_pool

PAD = -1


class Code2SequenceHead(nn.Module):
    r"""Pooled graph embedding, then ``L`` independent linear classifiers, one
    per position of the method name (OGB's code2 baseline).

    .. math::
        g_b = \mathrm{POOL}_{i \in G_b}\, x_i, \qquad
        \hat{y}_{b,l} = W_l\, g_b + c_l \in \mathbb{R}^{V}, \quad l = 1..L

    Loss: the ``cross_entropy`` loss on ``pred [B*L, V]`` and
    ``true [B*L]`` (row ``b*L + l`` is position ``l`` of graph ``b``).  This
    is the mean over ``B*L`` terms, i.e. OGB's sum over positions of per-
    position mean losses divided by ``L`` (a constant factor).

    Args:
        dim_in: node width ``d``.
        num_classes: ``V`` (vocabulary + ``__UNK__`` + ``__EOS__``).
        max_seq_len: ``L`` (5 in OGB).
        pool: ``'mean' | 'add' | 'max'``.

    Shapes: ``x [N, d]``, ``batch.y_arr [B, L]`` -> ``pred [B*L, V]``,
    ``true [B*L]``.
    """

    def __init__(self, dim_in: int, num_classes: int, max_seq_len: int = 5,
                 pool: str = 'mean'):
        super().__init__()
        if num_classes < 3:
            raise ValueError(f'num_classes={num_classes} must count at least '
                             'one subtoken plus __UNK__ and __EOS__')
        self.num_classes = num_classes
        self.max_seq_len = max_seq_len
        self.pool_name = pool
        self.pool = resolve_pool(pool)
        self.classifiers = nn.ModuleList(
            [nn.Linear(dim_in, num_classes) for _ in range(max_seq_len)])

    @property
    def unk_index(self) -> int:
        return self.num_classes - 2

    @property
    def eos_index(self) -> int:
        return self.num_classes - 1

    @classmethod
    def from_cfg(cls, cfg, task, dim: int) -> 'Code2SequenceHead':
        if 'num_vocab' not in task.extra:
            raise ValueError("code2_sequence head needs task.extra['num_vocab'] "
                             '(subtoken vocabulary size, 5000 for ogbg-code2)')
        num_classes = int(task.extra['num_vocab']) + 2
        if task.num_outputs and task.num_outputs != num_classes:
            raise ValueError(
                f"task.num_outputs={task.num_outputs} disagrees with "
                f"task.extra['num_vocab']={task.extra['num_vocab']} + 2 "
                '(__UNK__, __EOS__)')
        return cls(dim, num_classes, int(task.extra.get('max_seq_len', 5)),
                   pool=pool_name(cfg))

    def reset_parameters(self):
        for lin in self.classifiers:
            lin.reset_parameters()

    def forward(self, x: Tensor, batch, ctx):
        g = self.pool(x, ctx.batch, size=ctx.num_graphs)
        pred = torch.stack([lin(g) for lin in self.classifiers], dim=1)
        y_arr = getattr(batch, 'y_arr', None)
        if y_arr is None:
            raise ValueError('code2_sequence head needs batch.y_arr '
                             '[B, max_seq_len] (OGB encode_y_to_arr)')
        if y_arr.shape != (ctx.num_graphs, self.max_seq_len):
            raise ValueError(
                f'batch.y_arr has shape {tuple(y_arr.shape)}; expected '
                f'({ctx.num_graphs}, {self.max_seq_len}) (task.extra max_seq_len)')
        if y_arr.numel() and int(y_arr.max()) >= self.num_classes:
            raise ValueError(
                f'batch.y_arr holds index {int(y_arr.max())} >= '
                f'{self.num_classes} classes: check task.extra num_vocab')
        return pred.reshape(-1, self.num_classes), y_arr.reshape(-1)

    def metric_inputs(self, pred: Tensor, true: Tensor, batch=None):
        r"""Decode to subtoken id sequences for the ``f1_subtoken`` metric.

        Returns ``(pred_seq [B, L], true_seq [B, L])`` long: the argmax
        sequence and the target, each cut at its first ``__EOS__`` (it and the
        rest set to ``-1``, padding).  A predicted ``__UNK__`` becomes ``V``,
        an id no target holds: as in OGB, where the string ``'__UNK__'``
        counts as a predicted subtoken that matches no real one.
        """
        L = self.max_seq_len
        pred_seq = _cut_at_eos(pred.detach().argmax(dim=-1).view(-1, L),
                               self.eos_index)
        pred_seq = pred_seq.masked_fill(pred_seq == self.unk_index,
                                        self.num_classes)
        return pred_seq, _cut_at_eos(true.detach().view(-1, L), self.eos_index)


def _cut_at_eos(seq: Tensor, eos: int) -> Tensor:
    """Set the first ``eos`` of each row and everything after it to ``PAD``."""
    after = (seq == eos).long().cumsum(dim=1) > 0
    return seq.masked_fill(after, PAD)
