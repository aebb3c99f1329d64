r"""ogbg-code2: subtoken vocabulary, target sequences and AST edge augmentation
(the conventions of OGB's ``examples/graphproppred/code2``).

* Vocabulary: the ``num_vocab = 5000`` most frequent subtokens of the
  *training* targets, then ``__UNK__`` and ``__EOS__``
  (``len(idx2vocab) = num_vocab + 2`` output classes per position).
* Target: ``y_arr`` Long ``[1, max_seq_len]`` (``max_seq_len = 5``), the first
  5 subtokens mapped to ids (unknown -> ``__UNK__``), padded with ``__EOS__``;
  the raw subtoken list stays in ``y`` for the F1 metric.
* Edges: the AST edges plus next-token edges between attributed nodes in
  DFS order, each with its inverse; ``edge_attr`` Float ``[E, 2]`` =
  (is next-token edge, is inverse edge).
* Node features: ``x`` Long ``[N, 2]`` = (node type, node attribute),
  ``node_depth`` ``[N, 1]`` (the AST encoder caps it at ``max_depth = 20``).
"""
from collections import Counter
from typing import Dict, List, Sequence, Tuple

import torch
from torch import Tensor
from torch_geometric.data import Data

NUM_VOCAB = 5000
MAX_SEQ_LEN = 5
MAX_DEPTH = 20
UNK, EOS = '__UNK__', '__EOS__'


def vocab_mapping(sequences: Sequence[Sequence[str]],
                  num_vocab: int = NUM_VOCAB) -> Tuple[Dict[str, int], List[str]]:
    """``(vocab2idx, idx2vocab)`` of the ``num_vocab`` most frequent
    subtokens (ties broken by first occurrence), then ``__UNK__``,
    ``__EOS__``."""
    counts = Counter(tok for seq in sequences for tok in seq)
    idx2vocab = [tok for tok, _ in counts.most_common(num_vocab)]
    idx2vocab += [UNK, EOS]
    return {tok: i for i, tok in enumerate(idx2vocab)}, idx2vocab


def encode_sequence(seq: Sequence[str], vocab2idx: Dict[str, int],
                    max_seq_len: int = MAX_SEQ_LEN) -> Tensor:
    """Subtokens -> ids ``[1, max_seq_len]`` (truncated, ``__EOS__``-padded)."""
    seq = list(seq[:max_seq_len]) + [EOS] * max(0, max_seq_len - len(seq))
    unk = vocab2idx[UNK]
    return torch.tensor([[vocab2idx.get(tok, unk) for tok in seq]],
                        dtype=torch.long)


def augment_edges(data: Data) -> Data:
    """Add inverse AST edges and (both directions of) next-token edges."""
    ast = data.edge_index
    attributed = torch.nonzero(data.node_is_attributed.view(-1) == 1).view(-1)
    nxt = torch.stack([attributed[:-1], attributed[1:]])
    blocks = [(ast, (0., 0.)), (ast.flip(0), (0., 1.)),
              (nxt, (1., 0.)), (nxt.flip(0), (1., 1.))]
    data.edge_index = torch.cat([e for e, _ in blocks], dim=1)
    data.edge_attr = torch.cat([torch.tensor(a).repeat(e.size(1), 1)
                                for e, a in blocks], dim=0)
    return data


class Code2Transform:
    r"""Per-graph transform: clip to the first ``max_nodes`` nodes (GraphGPS
    clips ASTs at 1,000 nodes; ``0`` = off), augment edges, add ``y_arr``.

    Args:
        vocab2idx: subtoken -> id (:func:`vocab_mapping`).
        max_seq_len: predicted sequence length.
        max_nodes: node limit (``dataset.code2_max_nodes``).
    """

    def __init__(self, vocab2idx: Dict[str, int], max_seq_len: int = MAX_SEQ_LEN,
                 max_nodes: int = 1000):
        self.vocab2idx, self.max_seq_len = vocab2idx, max_seq_len
        self.max_nodes = max_nodes

    def __call__(self, data: Data) -> Data:
        if self.max_nodes > 0 and data.num_nodes > self.max_nodes:
            data = data.subgraph(torch.arange(self.max_nodes))
        data = augment_edges(data)
        data.y_arr = encode_sequence(data.y, self.vocab2idx, self.max_seq_len)
        return data

    def __repr__(self) -> str:
        return (f'{self.__class__.__name__}(vocab={len(self.vocab2idx)}, '
                f'max_seq_len={self.max_seq_len}, max_nodes={self.max_nodes})')
