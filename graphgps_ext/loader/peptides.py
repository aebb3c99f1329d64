"""LRGB Peptides-func / Peptides-struct in the original LRGB release layout
(csv.gz + split pickle), as read by GraphGPS's ``PeptidesFunctionalDataset``
and ``PeptidesStructuralDataset`` (``dataset.format: OGB``)::

    <root>/peptides-functional/
    ├── 701eb743e899f4d793f0e13c8fa5a1b4          release marker (md5 of the csv.gz)
    ├── splits_random_stratified_peptide.pickle
    ├── raw/peptide_multi_class_dataset.csv.gz
    └── processed/                                 written here

Molecules are featurised with :func:`ogb.utils.smiles2graph` (9 atom and 3
bond integer features, both edge directions).  Differences from the GraphGPS
class: it never asks on stdin (a missing marker is replaced by an md5 check
of the csv), loads under torch >= 2.6, and can process only the first
``max_graphs`` rows of each split (``dataset.max_graphs``), which keeps the
real split file but featurises a fraction of the 15,535 molecules (~60 s on
2 cores for all of them).
"""
import hashlib
import io
import os.path as osp
from typing import TYPE_CHECKING, Dict, List, Optional

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data, InMemoryDataset

from graphgps_ext.loader import splits as split_utils
from graphgps_ext.loader.errors import DataCorruptError, DatasetNotFoundError
from graphgps_ext.loader.integrity import RawFiles
from graphgps_ext.loader.safe_pickle import load_file, load_pickle, read_gzip

if TYPE_CHECKING:
    import pandas as pd

VARIANTS = {
    'peptides-functional': dict(
        csv='peptide_multi_class_dataset.csv.gz',
        version='701eb743e899f4d793f0e13c8fa5a1b4',
        url='https://www.dropbox.com/s/ol2v01usvaxbsr8/'
            'peptide_multi_class_dataset.csv.gz?dl=1',
        split='splits_random_stratified_peptide.pickle',
        split_md5='5a0114bdadc80b94fc7ae974f13ef061',
        split_url='https://www.dropbox.com/s/j4zcnx2eipuo0xz/'
                  'splits_random_stratified_peptide.pickle?dl=1'),
    'peptides-structural': dict(
        csv='peptide_structure_normalized_dataset.csv.gz',
        version='c240c1c15466b5c907c63e180fa8aa89',
        url='https://www.dropbox.com/s/0d4aalmq4b4e2nh/'
            'peptide_structure_normalized_dataset.csv.gz?dl=1',
        split='splits_random_stratified_peptide_structure.pickle',
        split_md5='5a0114bdadc80b94fc7ae974f13ef061',
        split_url='https://www.dropbox.com/s/9dfifzft1hqgow6/'
                  'splits_random_stratified_peptide_structure.pickle?dl=1'),
}
#: Peptides-func: binary labels per molecule.
FUNC_LABELS = 10
#: The longest text cell read from the csv (the release's longest SMILES
#: has 1,043 characters).
MAX_CELL = 20_000
STRUCT_TARGETS = ['Inertia_mass_a', 'Inertia_mass_b', 'Inertia_mass_c',
                  'Inertia_valence_a', 'Inertia_valence_b', 'Inertia_valence_c',
                  'length_a', 'length_b', 'length_c', 'Spherocity',
                  'Plane_best_fit']


def md5sum(path: str) -> str:
    with open(path, 'rb') as f:
        return hashlib.md5(f.read()).hexdigest()


def read_split(folder: str, name: str,
               num_rows: Optional[int] = None) -> Dict[str, Tensor]:
    """The LRGB split pickle: ``{'train', 'val', 'test'}`` -> row indices,
    checked (:func:`~graphgps_ext.loader.splits.checked_indices`: integers,
    none negative, none beyond ``num_rows``, no row twice or in two
    splits)."""
    path = osp.join(folder, VARIANTS[name]['split'])
    split = split_utils.checked_indices(load_pickle(path, name), path, name, num_rows)
    return {k: split[k] for k in split_utils.SPLITS}


def _bad_table(name: str, path: str, what: str) -> DataCorruptError:
    return DataCorruptError(
        f"Dataset '{name}': the table {path} {what}. Replace it with the LRGB "
        f"release file ({VARIANTS[name]['url']}); the processed data is rebuilt "
        'at the next run.')


def read_table(folder: str, name: str) -> 'pd.DataFrame':
    """The csv.gz table, decompressed within
    :func:`~graphgps_ext.loader.safe_pickle.gzip_limit` of its size; every
    text cell at most :data:`MAX_CELL` characters."""
    import pandas as pd  # only where Peptides is read: not on every run's path
    path = osp.join(folder, 'raw', VARIANTS[name]['csv'])
    df = pd.read_csv(io.BytesIO(read_gzip(path, name)))
    needed = ['smiles'] + (['labels'] if name == 'peptides-functional' else STRUCT_TARGETS)
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise _bad_table(name, path, f"has no column {', '.join(missing)}")
    for column in df.columns:
        if not pd.api.types.is_numeric_dtype(df[column]):
            longest = int(df[column].astype(str).str.len().max() or 0)
            if longest > MAX_CELL:
                raise _bad_table(name, path, f"has a '{column}' cell of {longest:,} "
                                             f'characters (at most {MAX_CELL:,})')
    return df


def _label_row(text, name: str, path: str, row: int) -> np.ndarray:
    """One Peptides-func label cell, ``'[0, 1, ...]'``: exactly
    :data:`FUNC_LABELS` values, each 0 or 1 (read without evaluating it)."""
    parts = str(text).strip()
    if not (parts.startswith('[') and parts.endswith(']')):
        raise _bad_table(name, path, f'in row {row}: the labels {parts[:40]!r} '
                                     'are not a bracketed list')
    try:
        values = np.array([float(v) for v in parts[1:-1].replace(',', ' ').split()],
                          dtype=np.float32)
    except ValueError:
        raise _bad_table(name, path, f'in row {row}: the labels {parts[:40]!r} '
                                     'are not numbers') from None
    if values.size != FUNC_LABELS or not np.isin(values, (0.0, 1.0)).all():
        raise _bad_table(name, path, f'in row {row}: the labels {parts[:40]!r} '
                                     f'are not {FUNC_LABELS} values of 0 or 1 '
                                     '(binary labels for the bce loss)')
    return values


def labels_of(df: 'pd.DataFrame', name: str, path: str = '') -> Tensor:
    """Targets of the rows of ``df``: ``[G, 10]`` 0/1 floats (func) or
    ``[G, 11]`` standardised regression targets (struct), each finite.
    Raises :class:`~graphgps_ext.loader.errors.DataCorruptError` naming
    ``path`` and the row."""
    if name == 'peptides-functional':
        return torch.from_numpy(np.stack([
            _label_row(s, name, path, int(r)) for r, s in zip(df.index, df['labels'])]))
    y = torch.tensor(df[STRUCT_TARGETS].to_numpy(dtype=np.float64), dtype=torch.float)
    bad = ~torch.isfinite(y)
    if bool(bad.any()):
        r, c = (int(i) for i in bad.nonzero()[0])
        raise _bad_table(name, path, f'in row {int(df.index[r])}: the target '
                                     f'{STRUCT_TARGETS[c]} is {float(y[r, c])} '
                                     '(every target must be a finite number)')
    return y


class PeptidesDataset(InMemoryDataset):
    r"""Peptides-func (10 binary labels, ``y`` ``[1, 10]``) or Peptides-struct
    (11 regression targets, ``y`` ``[1, 11]``) from the original LRGB files.

    Each graph: ``x`` Long ``[N, 9]`` (OGB atom features), ``edge_index``
    ``[2, E]``, ``edge_attr`` Long ``[E, 3]`` (OGB bond features), ``y``.

    Args:
        root: the folder that holds ``peptides-functional/`` (``dataset.dir``).
        name: ``'peptides-functional'`` or ``'peptides-structural'``.
        max_graphs: ``> 0``: process only the first
            ``ceil(max_graphs * n_split / 15535)`` rows of each split.
        cfg: the run config, for the offline switch of
            :func:`~graphgps_ext.loader.offline.require_files`.

    Attributes:
        split_idx: ``{'train', 'val', 'test'}`` indices into this dataset.
        split_rows: the csv rows of those graphs (= ``split_idx`` unless
            ``max_graphs`` is set).
        full_split_sizes: split sizes of the whole split file.
    """

    def __init__(self, root: str, name: str = 'peptides-functional',
                 max_graphs: int = 0, transform=None, cfg=None):
        if name not in VARIANTS:
            raise ValueError(f"unknown peptides dataset '{name}'; use one of "
                             f'{list(VARIANTS)}')
        self.name, self.max_graphs, self.meta = name, int(max_graphs), VARIANTS[name]
        folder = osp.join(root, name)
        self.raw_files(root, name).require(cfg)
        super().__init__(folder, transform)
        self.load(self.processed_paths[0])
        saved = load_file(self.processed_paths[1], name)
        self.split_idx, self.split_rows = saved['split'], saved['rows']
        self.full_split_sizes = {k: int(v.numel())
                                 for k, v in read_split(folder, name).items()}

    @staticmethod
    def raw_files(root: str, name: str) -> RawFiles:
        """The csv.gz and the split pickle of ``name`` under ``root``, with
        their URLs."""
        meta, folder = VARIANTS[name], osp.join(root, name)
        return RawFiles(
            f"'{name}' (dataset.format OGB, LRGB original layout)",
            [osp.join(folder, 'raw', meta['csv']), osp.join(folder, meta['split'])],
            [meta['url'], meta['split_url']], folder,
            how=(f"Put the csv.gz into {osp.join(folder, 'raw')}/ and the "
                 f'split pickle into {folder}/ (an empty file named '
                 f"{meta['version']} marks the release)."))

    @property
    def raw_file_names(self) -> List[str]:
        return [self.meta['csv']]

    @property
    def processed_file_names(self) -> List[str]:
        tag = f'_max{self.max_graphs}' if self.max_graphs > 0 else ''
        return [f'geometric_data{tag}.pt', f'split{tag}.pt']

    def download(self):
        from torch_geometric.data import download_url
        path = download_url(self.meta['url'], self.raw_dir)
        if md5sum(path) != self.meta['version']:
            raise DatasetNotFoundError(f'{path}: unexpected md5, expected '
                                       f"{self.meta['version']}")
        open(osp.join(self.root, self.meta['version']), 'w').close()
        split = download_url(self.meta['split_url'], self.root)
        if md5sum(split) != self.meta['split_md5']:
            raise DatasetNotFoundError(f'{split}: unexpected md5, expected '
                                       f"{self.meta['split_md5']}")

    def _check_release(self):
        # GraphGPS asks on stdin when the marker is missing; we verify the
        # csv instead and never prompt.
        if osp.exists(osp.join(self.root, self.meta['version'])):
            return
        csv = self.raw_paths[0]
        found = md5sum(csv)
        if found != self.meta['version']:
            raise DatasetNotFoundError(
                f"{csv} has md5 {found}, not the LRGB release "
                f"{self.meta['version']}: replace it with the file from "
                f"{self.meta['url']} or, for your own file, create the empty "
                f"marker file {osp.join(self.root, self.meta['version'])}")

    def process(self):
        from ogb.utils import smiles2graph
        self._check_release()
        table = read_table(self.root, self.name)
        full = read_split(self.root, self.name, len(table))
        kept = split_utils.limit(full, self.max_graphs)
        rows = torch.cat([kept[k] for k in split_utils.SPLITS])
        df = table.iloc[rows.numpy()]
        y = labels_of(df, self.name, self.raw_paths[0])
        data_list = []
        # RDKit featurisation, once, at processing time.
        for r, smiles in enumerate(df['smiles'].tolist()):
            g = smiles2graph(smiles)
            data_list.append(Data(
                x=torch.from_numpy(g['node_feat']).long(),
                edge_index=torch.from_numpy(g['edge_index']).long(),
                edge_attr=torch.from_numpy(g['edge_feat']).long(),
                y=y[r].view(1, -1)))
        self.save(data_list, self.processed_paths[0])
        sizes = {k: int(v.numel()) for k, v in kept.items()}
        torch.save({'split': split_utils.contiguous(sizes), 'rows': kept},
                   self.processed_paths[1])
