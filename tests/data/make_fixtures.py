"""Write the small real-data fixtures of ``tests/data`` from full copies of
the public benchmark files (see ``tests/data/README.md``)::

    python tests/data/make_fixtures.py --src DIR

``DIR`` holds ``ZINC/raw/`` (molecules.zip's pickles and the subset index
files), ``TUDataset/NCI1/raw/`` (the TU text files) and
``peptides-functional/`` (the LRGB csv.gz and split pickle). Each fixture is
a deterministic selection, written in the original raw format so that the
project's loaders read it exactly as they read the full files.
"""
import argparse
import csv
import gzip
import io
import os
import os.path as osp
import pickle
import shutil

import numpy as np

HERE = osp.dirname(osp.abspath(__file__))
ZINC_SIZES = {'train': 200, 'val': 20, 'test': 20}       # 10:1:1 as ZINC-12k
NCI1_PER_CLASS = 150
PEPTIDES_SIZES = {'train': 210, 'val': 45, 'test': 45}    # 70:15:15 as LRGB
PEPTIDES_RELEASE = '701eb743e899f4d793f0e13c8fa5a1b4'


def _index_text(n):
    return ','.join(str(i) for i in range(n)) + '\n'


def zinc(src, dst):
    """The first graphs of each subset split; train keeps its source list
    when the full folder has one (the offline train split is a stand-in)."""
    raw_in, raw_out = osp.join(src, 'ZINC', 'raw'), osp.join(dst, 'ZINC', 'raw')
    os.makedirs(raw_out, exist_ok=True)
    for split, n in ZINC_SIZES.items():
        with open(osp.join(raw_in, f'{split}.pickle'), 'rb') as f:
            mols = pickle.load(f)
        with open(osp.join(raw_in, f'{split}.index')) as f:
            index = [int(x) for x in f.read()[:-1].split(',')][:n]
        with open(osp.join(raw_out, f'{split}.pickle'), 'wb') as f:
            pickle.dump([mols[i] for i in index], f)
        with open(osp.join(raw_out, f'{split}.index'), 'w') as f:
            f.write(_index_text(n))
    for name in ('atom_dict.pickle', 'bond_dict.pickle'):
        shutil.copy(osp.join(raw_in, name), raw_out)
    marker = osp.join(src, 'ZINC', 'train_standin_sources.csv.gz')
    if osp.exists(marker):
        with gzip.open(marker, 'rt') as f:
            rows = f.read().splitlines()[:ZINC_SIZES['train'] + 1]
        with gzip.GzipFile(osp.join(dst, 'ZINC', osp.basename(marker)), 'wb',
                           mtime=0) as f:
            f.write(('\n'.join(rows) + '\n').encode())


def nci1(src, dst):
    """The first ``NCI1_PER_CLASS`` graphs of each class, plus the first graph
    holding each node label they lack (so that the one-hot width is the full
    dataset's), in file order, renumbered (TU format: 1-based node and graph
    ids)."""
    raw_in = osp.join(src, 'TUDataset', 'NCI1', 'raw')
    raw_out = osp.join(dst, 'TUDataset', 'NCI1', 'raw')
    os.makedirs(raw_out, exist_ok=True)

    def read(name):
        return np.loadtxt(osp.join(raw_in, f'NCI1_{name}.txt'), delimiter=',',
                          dtype=np.int64, ndmin=1)
    labels, indicator = read('graph_labels'), read('graph_indicator')
    node_labels, edges = read('node_labels'), read('A').reshape(-1, 2)
    keep = np.zeros(len(labels), dtype=bool)
    for c in np.unique(labels):
        keep[np.flatnonzero(labels == c)[:NCI1_PER_CLASS]] = True
    for label in np.setdiff1d(node_labels, node_labels[keep[indicator - 1]]):
        keep[indicator[np.flatnonzero(node_labels == label)[0]] - 1] = True
    new_graph = np.cumsum(keep) * keep              # old graph -> new id (0: dropped)
    node_kept = keep[indicator - 1]
    new_node = np.cumsum(node_kept) * node_kept     # old node -> new id (0: dropped)
    edges = edges[node_kept[edges[:, 0] - 1]]

    def write(name, rows):
        np.savetxt(osp.join(raw_out, f'NCI1_{name}.txt'), rows, fmt='%d',
                   delimiter=',')
    write('graph_labels', labels[keep])
    write('graph_indicator', new_graph[indicator[node_kept] - 1])
    write('node_labels', node_labels[node_kept])
    write('A', new_node[edges - 1])


def peptides(src, dst):
    """The first rows of each LRGB split, the csv renumbered, the split
    pickle pointing at the new rows (``numpy.int64`` arrays as in the
    release) and the empty release marker (the csv is not the release file,
    whose md5 the loader checks otherwise)."""
    name = 'peptides-functional'
    f_in, f_out = osp.join(src, name), osp.join(dst, name)
    os.makedirs(osp.join(f_out, 'raw'), exist_ok=True)
    with open(osp.join(f_in, 'splits_random_stratified_peptide.pickle'), 'rb') as f:
        split = pickle.load(f)
    picked = {k: np.asarray(split[k][:n]) for k, n in PEPTIDES_SIZES.items()}
    rows = np.concatenate(list(picked.values()))
    with gzip.open(osp.join(f_in, 'raw', 'peptide_multi_class_dataset.csv.gz'),
                   'rt', newline='') as f:
        table = list(csv.reader(f))
    header, body = table[0], table[1:]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(header)
    for new, old in enumerate(rows):
        writer.writerow([str(new)] + body[old][1:])
    with gzip.GzipFile(osp.join(f_out, 'raw', 'peptide_multi_class_dataset.csv.gz'),
                       'wb', mtime=0) as f:
        f.write(out.getvalue().encode())
    new_split, start = {}, 0
    for k, idx in picked.items():
        new_split[k] = np.arange(start, start + len(idx), dtype=np.int64)
        start += len(idx)
    with open(osp.join(f_out, 'splits_random_stratified_peptide.pickle'), 'wb') as f:
        pickle.dump(new_split, f, protocol=4)
    open(osp.join(f_out, PEPTIDES_RELEASE), 'w').close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--src', required=True, help='folder with the full files')
    p.add_argument('--dst', default=HERE, help='where to write (default: here)')
    args = p.parse_args()
    for make in (zinc, nci1, peptides):
        make(args.src, args.dst)


if __name__ == '__main__':
    main()
