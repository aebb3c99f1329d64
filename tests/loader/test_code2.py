"""ogbg-code2 helpers: vocabulary, target encoding, edge augmentation."""
import torch
from torch_geometric.data import Data

from graphgps_ext.loader.code2 import (EOS, UNK, Code2Transform,
                                       encode_sequence, vocab_mapping)


def test_vocab_and_encoding():
    v2i, i2v = vocab_mapping([['a', 'b', 'a'], ['c', 'a', 'b']], num_vocab=2)
    assert i2v == ['a', 'b', UNK, EOS]
    assert encode_sequence(['a', 'c', 'b'], v2i, 5).tolist() == [[0, 2, 1, 3, 3]]
    assert encode_sequence(list('abababab'), v2i, 5).shape == (1, 5)


def test_transform_edges_and_clipping():
    # AST: 0 -> 1, 0 -> 2, 2 -> 3; attributed leaves 1, 3
    data = Data(x=torch.zeros(4, 2, dtype=torch.long),
                edge_index=torch.tensor([[0, 0, 2], [1, 2, 3]]),
                node_is_attributed=torch.tensor([[0], [1], [0], [1]]),
                node_depth=torch.tensor([[0], [1], [1], [2]]), y=['a', 'b'])
    v2i, _ = vocab_mapping([['a']])
    out = Code2Transform(v2i, 3, max_nodes=0)(data.clone())
    pairs = {(int(s), int(d), tuple(a.tolist())) for s, d, a in
             zip(out.edge_index[0], out.edge_index[1], out.edge_attr)}
    assert pairs == {(0, 1, (0., 0.)), (0, 2, (0., 0.)), (2, 3, (0., 0.)),
                     (1, 0, (0., 1.)), (2, 0, (0., 1.)), (3, 2, (0., 1.)),
                     (1, 3, (1., 0.)), (3, 1, (1., 1.))}
    assert out.y_arr.tolist() == [[0, 1, 2]]  # 'a', UNK, EOS
    clipped = Code2Transform(v2i, 3, max_nodes=3)(data.clone())
    assert clipped.num_nodes == 3 and int(clipped.edge_index.max()) < 3
