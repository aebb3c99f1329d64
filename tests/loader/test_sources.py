"""Every reader on a few graphs written in that reader's own raw format (no
network): GNNBenchmarkDataset, LRGBDataset, TUDataset without node labels
(COLLAB-style), OGB graph property prediction (molpcba, code2), PCQM4Mv2."""
import os
import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from torch_geometric.loader import DataLoader

from graphgps_ext.loader import DatasetNotFoundError, load_dataset
from graphgps_ext.loader.sources import pcqm4mv2_splits

from .conftest import make_cfg

SMILES = ['CC(=O)O', 'c1ccccc1O', 'CCN(CC)CC', 'OC(=O)C(N)C', 'CCOC(=O)C',
          'C1CCCCC1', 'CC#N', 'O=C=O', 'CCO', 'c1ccncc1', 'CC(C)O', 'NCC(=O)O']


def _ring(n, offset=0):
    src = torch.arange(n)
    dst = (src + 1) % n
    return torch.stack([torch.cat([src, dst]), torch.cat([dst, src])]) + offset


def _mol(smiles):
    from ogb.utils import smiles2graph
    g = smiles2graph(smiles)
    return (torch.from_numpy(g['node_feat']).long(),
            torch.from_numpy(g['edge_feat']).long(),
            torch.from_numpy(g['edge_index']).long())


def _csv_gz(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pd.DataFrame(rows).to_csv(path, header=False, index=False,
                              compression='gzip')


# ---------------------------------------------------- GNNBenchmarkDataset --
def test_gnn_benchmark_mnist_layout(tmp_path):
    raw = tmp_path / 'GNNBenchmarkDataset' / 'MNIST' / 'raw'
    raw.mkdir(parents=True)
    splits = []
    for count in (4, 2, 2):
        graphs = []
        for i in range(count):
            n = 5 + i
            ei = _ring(n)
            graphs.append({'x': torch.rand(n, 1), 'pos': torch.rand(n, 2),
                           'edge_index': ei, 'edge_attr': torch.rand(ei.size(1)),
                           'y': torch.tensor([i % 10])})
        splits.append(graphs)
    torch.save(splits, raw / 'MNIST_v2.pt')
    b = load_dataset(make_cfg(tmp_path, **{
        'dataset.format': 'PyG-GNNBenchmarkDataset', 'dataset.name': 'MNIST'}))
    assert {k: len(v) for k, v in b.splits.items()} == \
        {'train': 4, 'val': 2, 'test': 2}
    g = b.splits['train'][1]
    assert g.x.shape == (6, 3)  # GraphGPS: pixel || position
    assert torch.equal(g.x[:, 1:], splits[0][1]['pos'])
    assert g.edge_attr.shape == (12, 1)
    t = b.task
    assert (t.node_encoder, t.node_dim, t.edge_encoder, t.edge_dim) == \
        ('LinearNode', 3, 'LinearEdge', 1)
    assert (t.num_outputs, t.loss, t.metric) == (10, 'cross_entropy', 'accuracy')


def test_gnn_benchmark_pattern_layout(tmp_path):
    # The generator writes PyG's raw file; read it as the real format.
    from graphgps_ext.loader.generators import sbm
    sbm.write_raw(str(tmp_path / 'GNNBenchmarkDataset'), 'PATTERN', 0, 14)
    b = load_dataset(make_cfg(tmp_path, **{
        'dataset.format': 'PyG-GNNBenchmarkDataset', 'dataset.name': 'PATTERN'}))
    assert {k: len(v) for k, v in b.splits.items()} == \
        {'train': 10, 'val': 2, 'test': 2}
    t = b.task
    assert (t.task, t.head, t.loss, t.metric) == \
        ('node', 'inductive_node', 'weighted_cross_entropy', 'accuracy_sbm')
    assert (t.node_encoder, t.node_dim, t.edge_encoder) == \
        ('LinearNode', 3, 'DummyEdge')
    assert b.info['stand_in'] is False  # read as the benchmark format


# ------------------------------------------------------------ LRGBDataset --
def test_lrgb_peptides_pt_tuples(tmp_path):
    raw = tmp_path / 'LRGBDataset' / 'peptides-func' / 'raw'
    raw.mkdir(parents=True)
    for s, mols in (('train', SMILES[:4]), ('val', SMILES[4:6]),
                    ('test', SMILES[6:8])):
        graphs = [(*_mol(m), torch.randint(0, 2, (1, 10)).float()) for m in mols]
        torch.save(graphs, raw / f'{s}.pt')
    b = load_dataset(make_cfg(tmp_path, **{
        'dataset.format': 'PyG-LRGBDataset', 'dataset.name': 'Peptides-func'}))
    assert [len(b.splits[k]) for k in ('train', 'val', 'test')] == [4, 2, 2]
    t = b.task
    assert (t.node_encoder, t.edge_encoder, t.loss, t.metric, t.num_outputs) == \
        ('Atom', 'Bond', 'bce', 'ap', 10)
    assert b.splits['val'][0].y.shape == (1, 10)


def test_lrgb_voc_pickles(tmp_path):
    raw = tmp_path / 'LRGBDataset' / 'pascalvoc-sp' / 'raw'
    raw.mkdir(parents=True)
    for s in ('train', 'val', 'test'):
        graphs = []
        for n in (6, 7):
            ei = _ring(n)
            graphs.append((torch.rand(n, 14), torch.rand(ei.size(1), 2), ei,
                           torch.randint(0, 21, (n,)).tolist()))
        with open(raw / f'{s}.pickle', 'wb') as f:
            pickle.dump(graphs, f)
    b = load_dataset(make_cfg(tmp_path, **{
        'dataset.format': 'PyG-LRGBDataset', 'dataset.name': 'PascalVOC-SP'}))
    t = b.task
    assert (t.task, t.num_outputs, t.metric, t.head) == \
        ('node', 21, 'f1_macro', 'inductive_node')
    assert (t.node_encoder, t.node_dim, t.edge_encoder, t.edge_dim) == \
        ('LinearNode', 14, 'LinearEdge', 2)
    assert b.splits['train'][1].y.shape == (7,)


def test_lrgb_pcqm_contact_pt_tuples(tmp_path):
    raw = tmp_path / 'LRGBDataset' / 'pcqm-contact' / 'raw'
    raw.mkdir(parents=True)
    for s in ('train', 'val', 'test'):
        graphs = []
        for m in SMILES[:3]:
            x, ea, ei = _mol(m)
            n = x.size(0)
            lab_index = torch.randint(0, n, (2, 5))
            graphs.append((x, ea, ei, lab_index, torch.randint(0, 2, (5,))))
        torch.save(graphs, raw / f'{s}.pt')
    b = load_dataset(make_cfg(tmp_path, **{
        'dataset.format': 'PyG-LRGBDataset', 'dataset.name': 'PCQM-Contact'}))
    t = b.task
    assert (t.task, t.task_type, t.head, t.metric) == \
        ('link', 'ranking', 'inductive_link', 'mrr_filtered')
    assert {'mrr', 'hits@1', 'hits@3', 'hits@10'} <= set(t.metrics)
    g = b.splits['test'][2]
    assert g.edge_label_index.shape == (2, 5) and g.edge_label.shape == (5,)


# -------------------------------------------------------------- TUDataset --
def test_tu_without_node_labels_gets_degree_types(tmp_path):
    raw = tmp_path / 'TUDataset' / 'COLLAB' / 'raw'
    raw.mkdir(parents=True)
    rng = np.random.default_rng(0)
    edges, indicator, labels, offset, graphs = [], [], [], 0, []
    for gid in range(40):
        n = int(rng.integers(4, 9))
        pairs = {(i, j) for i in range(n) for j in range(i + 1, n)
                 if rng.random() < 0.5} | {(i, i + 1) for i in range(n - 1)}
        for i, j in sorted(pairs):
            edges += [(i + offset + 1, j + offset + 1),
                      (j + offset + 1, i + offset + 1)]
        indicator += [gid + 1] * n
        labels.append(gid % 3 + 1)
        graphs.append((n, pairs))
        offset += n
    np.savetxt(raw / 'COLLAB_A.txt', np.array(edges), fmt='%d', delimiter=', ')
    np.savetxt(raw / 'COLLAB_graph_indicator.txt', indicator, fmt='%d')
    np.savetxt(raw / 'COLLAB_graph_labels.txt', labels, fmt='%d')
    cfg = make_cfg(tmp_path, **{'dataset.format': 'PyG-TUDataset',
                                'dataset.name': 'COLLAB'})
    b = load_dataset(cfg)
    assert {k: len(v) for k, v in b.splits.items()} == \
        {'train': 32, 'val': 4, 'test': 4}
    max_deg = max(max(sum(1 for p in pairs if v in p) for v in range(n))
                  for n, pairs in graphs)
    t = b.task
    assert (t.node_encoder, t.node_num_types, t.num_outputs) == \
        ('TypeDictNode', max_deg + 1, 3)
    gid = int(b.split_indices['test'][0])
    n, pairs = graphs[gid]
    want = torch.tensor([sum(1 for p in pairs if v in p) for v in range(n)])
    g = b.splits['test'][0]
    assert g.x.dtype == torch.long and torch.equal(g.x.view(-1), want)
    # a degree cap
    cfg.dataset.max_degree = 2
    assert load_dataset(cfg).task.node_num_types == 3


def _tu_files(raw, name='TOY', edges=((1, 2), (2, 1), (4, 5), (5, 4)),
              indicator=(1, 1, 1, 2, 2), labels=(1, 2), node_labels=None):
    raw.mkdir(parents=True, exist_ok=True)
    (raw / f'{name}_A.txt').write_text(''.join(', '.join(map(str, e)) + '\n'
                                               for e in edges))
    (raw / f'{name}_graph_indicator.txt').write_text(
        ''.join(f'{g}\n' for g in indicator))
    (raw / f'{name}_graph_labels.txt').write_text(''.join(f'{y}\n' for y in labels))
    if node_labels is not None:
        (raw / f'{name}_node_labels.txt').write_text(
            ''.join(f'{v}\n' for v in node_labels))


@pytest.mark.parametrize('change,words', [
    (dict(edges=((1, 2), (2, 0))), 'TOY_A.txt line 2: node id 0 (TU node ids run from 1'),
    (dict(edges=((1, 2), (9, 1))), 'line 2: node id 9 (TU node ids run from 1 to the 5 nodes'),
    (dict(edges=((1, 2), (3, 4))), 'line 2: the edge 3, 4 joins graph 1 and graph 2'),
    (dict(edges=((1, 2), (2, 'x'))), 'TOY_A.txt is not two integer node ids per line'),
    (dict(edges=((1, 2, 3),)), 'TOY_A.txt is not two integer node ids per line'),
    (dict(indicator=(1, 2, 1, 2, 2)), 'line 3: graph ids must not decrease'),
    (dict(indicator=(0, 1, 1, 2, 2)), 'holds graph id 0 (TU graph ids start at 1)'),
    (dict(labels=(1, 2, 1)), 'TOY_graph_labels.txt has 3 lines, not one per graph (2)'),
    (dict(node_labels=(1, 2, 3)), 'TOY_node_labels.txt has 3 lines, not one per node (5)'),
])
def test_tu_files_are_checked_before_pyg_reads_them(tmp_path, change, words):
    """PyG drops an edge to node 0 and mixes graphs up without a word:
    each is refused, naming the file and line."""
    from graphgps_ext.loader.errors import DataCorruptError
    from graphgps_ext.loader.sources import check_tu_files
    raw = tmp_path / 'TUDataset' / 'TOY' / 'raw'
    _tu_files(raw)
    assert check_tu_files(str(raw), 'TOY') is None
    _tu_files(raw, **change)
    assert words in check_tu_files(str(raw), 'TOY')
    with pytest.raises(DataCorruptError, match='the raw files give unusable data') as err:
        load_dataset(make_cfg(tmp_path, **{'dataset.format': 'PyG-TUDataset',
                                           'dataset.name': 'TOY',
                                           'dataset.split': [0.5, 0.25, 0.25]}))
    assert words in str(err.value) and 'TOY.zip' in str(err.value)


# ------------------------------------------------------------------- OGB --
def _ogb_folder(root, graphs, labels, split_type, extra_node=None):
    """Write OGB's raw csv layout: graphs = [(x, edge_feat|None, edge_index
    one direction)], labels = rows of graph-label.csv.gz."""
    raw = os.path.join(root, 'raw')
    _csv_gz(os.path.join(raw, 'edge.csv.gz'),
            torch.cat([g[2] for g in graphs], 1).t().numpy())
    _csv_gz(os.path.join(raw, 'num-node-list.csv.gz'),
            [g[0].size(0) for g in graphs])
    _csv_gz(os.path.join(raw, 'num-edge-list.csv.gz'),
            [g[2].size(1) for g in graphs])
    _csv_gz(os.path.join(raw, 'node-feat.csv.gz'),
            torch.cat([g[0] for g in graphs]).numpy())
    if graphs[0][1] is not None:
        _csv_gz(os.path.join(raw, 'edge-feat.csv.gz'),
                torch.cat([g[1] for g in graphs]).numpy())
    _csv_gz(os.path.join(raw, 'graph-label.csv.gz'), labels)
    for key, values in (extra_node or {}).items():
        _csv_gz(os.path.join(raw, f'{key}.csv.gz'), values)
    n = len(graphs)
    for s, idx in (('train', range(n - 4)), ('valid', range(n - 4, n - 2)),
                   ('test', range(n - 2, n))):
        _csv_gz(os.path.join(root, 'split', split_type, f'{s}.csv.gz'),
                list(idx))
    open(os.path.join(root, 'RELEASE_v1.txt'), 'w').close()


def test_ogb_molpcba_layout(tmp_path):
    graphs = []
    for m in SMILES[:8]:
        x, ea, ei = _mol(m)
        keep = ei[0] < ei[1]  # OGB stores one direction (add_inverse_edge)
        graphs.append((x, ea[keep], ei[:, keep]))
    labels = np.random.default_rng(0).integers(0, 2, (8, 128)).astype(float)
    labels[0, :5] = np.nan
    _ogb_folder(str(tmp_path / 'ogbg_molpcba'), graphs, labels, 'scaffold')
    b = load_dataset(make_cfg(tmp_path, **{'dataset.format': 'OGB',
                                           'dataset.name': 'ogbg-molpcba'}))
    assert [len(b.splits[k]) for k in ('train', 'val', 'test')] == [4, 2, 2]
    g = b.splits['train'][0]
    assert g.y.shape == (1, 128) and torch.isnan(g.y[0, :5]).all()
    assert g.edge_index.size(1) == 2 * graphs[0][2].size(1)  # both directions
    t = b.task
    assert (t.node_encoder, t.edge_encoder, t.loss, t.metric, t.num_outputs) == \
        ('Atom', 'Bond', 'bce', 'ap', 128)
    # processed file written by OGB's torch.save loads again (weights_only)
    again = load_dataset(make_cfg(tmp_path, **{'dataset.format': 'OGB',
                                               'dataset.name': 'ogbg-molpcba'}))
    assert torch.equal(again.splits['test'][1].x, b.splits['test'][1].x)


def test_ogb_folder_without_release_marker_is_not_prompted(tmp_path):
    graphs = [(_mol(m)[0], _mol(m)[1][::2], _mol(m)[2][:, ::2])
              for m in SMILES[:6]]
    folder = tmp_path / 'ogbg_molpcba'
    _ogb_folder(str(folder), graphs, np.zeros((6, 128)), 'scaffold')
    os.remove(folder / 'RELEASE_v1.txt')
    with pytest.raises(DatasetNotFoundError, match='RELEASE_v1.txt'):
        load_dataset(make_cfg(tmp_path, **{'dataset.format': 'OGB',
                                           'dataset.name': 'ogbg-molpcba'}))


def test_ogb_code2_layout(tmp_path):
    rng = np.random.default_rng(0)
    graphs, attributed, depth, dfs, seqs = [], [], [], [], []
    for i in range(8):
        n = 6 + i
        parent = torch.tensor([int(rng.integers(0, j)) for j in range(1, n)])
        ei = torch.stack([parent, torch.arange(1, n)])  # AST parent -> child
        x = torch.stack([torch.from_numpy(rng.integers(0, 5, n)),
                         torch.from_numpy(rng.integers(0, 7, n))], 1)
        graphs.append((x, None, ei))
        att = (rng.random(n) < 0.6).astype(int)
        att[:2] = 1
        attributed += att.tolist()
        depth += rng.integers(0, 30, n).tolist()
        dfs += list(range(n))
        seqs.append('onlytest name' if i == 7 else ' '.join(
            ['get', 'name'] if i % 2 else
            ['set', 'value', 'of', 'thing', 'x', 'y', 'z']))
    folder = tmp_path / 'ogbg_code2'
    _ogb_folder(str(folder), graphs, seqs, 'project',
                extra_node={'node_is_attributed': attributed,
                            'node_dfs_order': dfs, 'node_depth': depth})
    os.makedirs(folder / 'mapping', exist_ok=True)
    pd.DataFrame({'type': list('abcdefghi')}).to_csv(
        folder / 'mapping' / 'typeidx2type.csv.gz', index=False)
    pd.DataFrame({'attr': [f'a{i}' for i in range(11)]}).to_csv(
        folder / 'mapping' / 'attridx2attr.csv.gz', index=False)
    b = load_dataset(make_cfg(tmp_path, **{'dataset.format': 'OGB',
                                           'dataset.name': 'ogbg-code2'}))
    t = b.task
    ex = t.extra
    assert (t.task_type, t.head, t.node_encoder, t.metric) == \
        ('sequence', 'code2_sequence', 'ASTNode', 'f1_subtoken')
    assert (ex['num_nodetypes'], ex['num_nodeattributes'], ex['max_depth'],
            ex['max_seq_len'], ex['num_vocab']) == (9, 11, 20, 5, 5000)
    # vocabulary from the 4 training graphs only ('onlytest' is in test)
    vocab = set(ex['idx2vocab'][:-2])
    assert vocab == {'get', 'name', 'set', 'value', 'of', 'thing', 'x', 'y', 'z'}
    assert ex['idx2vocab'][-2:] == ['__UNK__', '__EOS__']
    assert t.num_outputs == len(ex['idx2vocab'])
    g = b.splits['train'][0]  # 'set value of thing x y z' -> first 5
    assert [ex['idx2vocab'][i] for i in g.y_arr.view(-1).tolist()] == \
        ['set', 'value', 'of', 'thing', 'x']
    g = b.splits['train'][1]
    assert [ex['idx2vocab'][i] for i in g.y_arr.view(-1).tolist()] == \
        ['get', 'name', '__EOS__', '__EOS__', '__EOS__']
    assert g.y == ['get', 'name']
    n_ast = graphs[1][2].size(1)
    n_att = int(np.sum(attributed[6:6 + 7]))
    assert g.edge_index.size(1) == 2 * n_ast + 2 * (n_att - 1)
    assert g.edge_attr.shape == (g.edge_index.size(1), 2)
    assert (t.edge_encoder, t.edge_dim) == ('LinearEdge', 2)
    batch = next(iter(DataLoader(b.splits['train'], batch_size=3)))
    assert batch.y_arr.shape == (3, 5) and len(batch.y) == 3


# ---------------------------------------------------------------- PCQM4Mv2 --
def test_pcqm4mv2_layout_and_graphgps_splits(tmp_path):
    folder = tmp_path / 'pcqm4m-v2'
    (folder / 'raw').mkdir(parents=True)
    n_train, n_valid = 20, 4
    smiles = [SMILES[i % len(SMILES)] for i in range(n_train + n_valid + 4)]
    gap = np.arange(len(smiles), dtype=float)
    gap[n_train + n_valid:] = np.nan  # test-dev / test-challenge: no labels
    pd.DataFrame({'idx': range(len(smiles)), 'smiles': smiles,
                  'homolumogap': gap}).to_csv(folder / 'raw' / 'data.csv.gz',
                                              index=False)
    split = {'train': np.arange(n_train),
             'valid': np.arange(n_train, n_train + n_valid),
             'test-dev': np.arange(24, 26), 'test-challenge': np.arange(26, 28)}
    torch.save(split, folder / 'split_dict.pt')
    open(folder / 'RELEASE_v1.txt', 'w').close()
    full = load_dataset(make_cfg(tmp_path, **{'dataset.format': 'OGB',
                                              'dataset.name': 'PCQM4Mv2-full'}))
    assert {k: len(v) for k, v in full.splits.items()} == \
        {'train': 18, 'val': 2, 'test': 4}
    want = pcqm4mv2_splits({k: torch.from_numpy(v) for k, v in split.items()},
                           subset=False)
    assert all(torch.equal(full.split_indices[k], want[k]) for k in want)
    g = full.splits['test'][0]
    assert g.y.shape == (1, 1) and float(g.y) == n_train
    t = full.task
    assert (t.node_encoder, t.edge_encoder, t.loss, t.metric) == \
        ('Atom', 'Bond', 'l1', 'mae')
    sub = load_dataset(make_cfg(tmp_path, **{'dataset.format': 'OGB',
                                             'dataset.name': 'PCQM4Mv2-subset'}))
    assert {k: len(v) for k, v in sub.splits.items()} == \
        {'train': 1, 'val': 2, 'test': 4}
    assert torch.equal(sub.split_indices['train'], full.split_indices['train'][:1])


def test_pcqm4mv2_split_rule_at_full_scale():
    train = torch.arange(3_378_606)
    s = pcqm4mv2_splits({'train': train, 'valid': torch.arange(73_545)}, False)
    assert (s['val'].numel(), s['train'].numel()) == (150_000, 3_228_606)
    sub = pcqm4mv2_splits({'train': train, 'valid': torch.arange(73_545)}, True)
    assert (sub['train'].numel(), sub['val'].numel(), sub['test'].numel()) == \
        (322_860, 50_000, 73_545)
    assert torch.equal(sub['train'], s['train'][:322_860])
