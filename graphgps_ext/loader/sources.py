"""The readers of the datasets selected by ``dataset.format`` /
``dataset.name`` (GraphGPS conventions), read through PyG / OGB classes
wherever they exist. Which reader, names and task spec belong together is
declared once per dataset family in :mod:`graphgps_ext.loader.datasets`;
the name checks and the task spec known without data derive from there.

==========================  ====================================  ===========================================
``dataset.format``          ``dataset.name``                      files under ``dataset.dir``
==========================  ====================================  ===========================================
``PyG-ZINC``                ``subset`` (ZINC-12k), ``full``       ``ZINC/raw/{train,val,test}.{pickle,index}``
``PyG-GNNBenchmarkDataset`` ``MNIST CIFAR10 PATTERN CLUSTER``     ``GNNBenchmarkDataset/<NAME>/raw/<NAME>_v2.pt``
``PyG-TUDataset``           ``NCI1 NCI109 COLLAB`` (any TU name)  ``TUDataset/<NAME>/raw/<NAME>_*.txt``
``PyG-LRGBDataset``         ``Peptides-func Peptides-struct``     ``LRGBDataset/<name lower-cased>/raw/``
                            ``PascalVOC-SP COCO-SP PCQM-Contact``
``OGB``                     ``peptides-functional``,              ``peptides-functional/`` (LRGB original
                            ``peptides-structural``               layout, :mod:`.peptides`)
``OGB``                     ``ogbg-molpcba``, ``ogbg-code2``      ``ogbg_molpcba/``, ``ogbg_code2/`` (OGB)
``OGB``                     ``PCQM4Mv2-full``, ``PCQM4Mv2-subset`` ``pcqm4m-v2/`` (OGB-LSC)
``synthetic``               ``TreeNeighbourMatch``,               generated into ``synthetic/``
                            ``PATTERN``, ``CLUSTER``
==========================  ====================================  ===========================================
"""
import os.path as osp
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Dataset

from graphgps_ext.config import did_you_mean, sizes
from graphgps_ext.loader import datasets
from graphgps_ext.loader import splits as split_utils
from graphgps_ext.loader import storage
from graphgps_ext.loader.errors import DataError, DatasetNotFoundError
from graphgps_ext.loader.integrity import ProcessedCache, RawFiles
from graphgps_ext.loader.offline import no_prompt
from graphgps_ext.loader.safe_pickle import guarded, load_file, load_pickle

# GraphGPS: PCQM4Mv2 holds out 150k random training molecules (rng 42) as
# validation and tests on the official 'valid' split; the subset keeps 10 %
# of the remaining training molecules and 50k of the held-out ones.
PCQM_HOLDOUT, PCQM_SUBSET_RATIO, PCQM_SUBSET_VAL, PCQM_SEED = 150_000, 0.1, 50_000, 42
ZINC_FULL_TRAIN = 220_011
# A ZINC-12k train split that is not the benchmark's (a known offline
# stand-in: 10,000 ZINC-full validation molecules) is recognised by its
# source list beside raw/ or by the SHA-1 of its train.pickle.
ZINC_STAND_IN_MARKER = 'train_standin_sources.csv.gz'
ZINC_STAND_IN_SHA1 = {'5aac378dfdaf508982c904e379770128e86f8e56'}


@dataclass
class Source:
    """What a format reader returns: either three split datasets (``parts``
    with keys ``train``/``val``/``test``) or one dataset ``parts['all']``
    with ``indices`` per split."""
    parts: Dict[str, Dataset]
    indices: Optional[Dict[str, Tensor]]
    folder: str
    spec_key: str
    # Display name (TaskInfo.name) when dataset.name alone is unclear.
    name: Optional[str] = None
    num_outputs: Optional[int] = None
    node_num_types: Optional[int] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    limited: bool = False          # dataset.max_graphs applied already
    standard_split: bool = True
    # After dataset.max_graphs: the kept indices into the stored dataset.
    source_indices: Optional[Dict[str, Tensor]] = None
    # The file(s) the labels come from (named when they are unusable); ''
    # for generated data.
    labels_from: str = ''


def _dir(cfg) -> str:
    return osp.abspath(osp.expanduser(cfg.dataset.dir))


def _three(factory: Callable[[str], Dataset]) -> Dict[str, Dataset]:
    with no_prompt():
        return {s: factory(s) for s in split_utils.SPLITS}


# --------------------------------------------------------------------- PyG --
def _check_zinc_full(num_train: int, raw: str):
    # A ZINC-12k folder would silently give a 10k-graph "ZINC-full".
    if num_train < ZINC_FULL_TRAIN:
        raise DataError(
            f'ZINC-full needs the 220,011-molecule train.pickle of '
            f'molecules.zip, but {raw} holds {num_train} training graphs (a '
            "ZINC-12k-only folder). Use dataset.name 'subset', or point "
            'dataset.dir at a folder with the full molecules.zip files.')


def zinc_stand_in(root: str, cache: ProcessedCache) -> Optional[str]:
    """Why the ZINC train split under ``root`` is a stand-in, or ``None``."""
    marker = osp.join(root, ZINC_STAND_IN_MARKER)
    train = osp.join(root, 'raw', 'train.pickle')
    if osp.exists(marker):
        why = f'{marker} lists the molecules it holds instead'
    elif osp.exists(train) and cache.sha1(train) in ZINC_STAND_IN_SHA1:
        why = f'{train} is the known stand-in file'
    else:
        return None
    readme = osp.join(root, 'README.md')
    return ('the ZINC train split is a STAND-IN, not the ZINC-12k benchmark '
            f'train split ({why}'
            + (f'; see {readme}' if osp.exists(readme) else '') + '). '
            'Results are not comparable with published ZINC numbers; for the '
            'benchmark, point dataset.dir at a folder with the original '
            f'molecules.zip files ({_zinc_urls()[0]})')


def _zinc_urls() -> List[str]:
    from torch_geometric.datasets import ZINC
    return [ZINC.url] + [ZINC.split_url.format(s) for s in split_utils.SPLITS]


def zinc(cfg) -> Source:
    from torch_geometric.datasets import ZINC
    name = cfg.dataset.name
    root = osp.join(_dir(cfg), 'ZINC')
    raw = osp.join(root, 'raw')
    files = RawFiles(
        "'ZINC' (PyG-ZINC)",
        [osp.join(raw, f'{s}.{ext}') for ext in ('pickle', 'index')
         for s in split_utils.SPLITS],
        _zinc_urls(), raw, inputs=[raw],
        how="Unzip molecules.zip and rename its folder 'molecules' "
            f"to {raw}; put the three .index files there too.")
    files.require(cfg)
    if name == 'full' and not osp.exists(osp.join(root, 'full', 'processed',
                                                  'train.pt')):
        _check_zinc_full(len(load_pickle(osp.join(raw, 'train.pickle'), 'ZINC')), raw)
    cache = ProcessedCache(files, osp.join(root, name, 'processed'))
    parts = cache.load(lambda: _three(
        lambda s: ZINC(root, subset=name == 'subset', split=s)))
    if name == 'full':
        _check_zinc_full(len(parts['train']), raw)
    for ds in parts.values():
        storage.graph_y_as_rows(ds)
    stand_in = zinc_stand_in(root, cache)
    extra = {'stand_in': True, 'stand_in_reason': stand_in} if stand_in else {}
    return Source(parts, None, osp.join(root, name), 'ZINC',
                  name=f'ZINC ({name})', extra=extra,
                  labels_from=osp.join(raw, '{train,val,test}.pickle'))


def gnn_benchmark(cfg, root: Optional[str] = None, stand_in: bool = False
                  ) -> Source:
    from torch_geometric.datasets import GNNBenchmarkDataset
    name = cfg.dataset.name
    root = root or osp.join(_dir(cfg), 'GNNBenchmarkDataset')
    raw = osp.join(root, name, 'raw')
    files = RawFiles(f"'{name}' (PyG-GNNBenchmarkDataset)",
                     [osp.join(raw, f'{name}_v2.pt')],
                     [GNNBenchmarkDataset.urls[name]], raw, inputs=[raw],
                     how=f'Unzip {name}_v2.zip there. Without network, '
                         'PATTERN/CLUSTER can be generated instead: '
                         "dataset.format 'synthetic'.")
    files.require(cfg)
    parts = ProcessedCache(files, osp.join(root, name, 'processed')).load(
        lambda: _three(lambda s: GNNBenchmarkDataset(root, name, split=s)))
    if name in ('MNIST', 'CIFAR10'):
        for ds in parts.values():  # GraphGPS: x <- [pixel || position]
            storage.concat_node_attrs(ds, 'x', 'pos')
            storage.edge_attr_as_columns(ds)
    extra = {'stand_in': stand_in}
    if stand_in:
        extra['stand_in_reason'] = (
            f'{name} is GENERATED here (dataset.format synthetic), not the '
            'published benchmark files')
    return Source(parts, None, osp.join(root, name), name, extra=extra,
                  limited=stand_in, labels_from=files.required[0])


def _tu_table(path: str, columns: Optional[int] = None) -> np.ndarray:
    """The integers of a TU text file (``1, 2`` per line) as ``[rows, columns]``."""
    import pandas as pd
    table = pd.read_csv(path, header=None, skipinitialspace=True, dtype=np.int64,
                        skip_blank_lines=True)
    if columns is not None and table.shape[1] != columns:
        raise ValueError(f'{table.shape[1]} columns, not {columns}')
    return table.to_numpy()


def _tu_lines(path: str) -> int:
    with open(path, 'rb') as f:
        return sum(1 for line in f if line.strip())


def check_tu_files(raw: str, name: str) -> Optional[str]:
    """Why the TU text files of ``name`` in ``raw`` do not describe graphs,
    else ``None``. The format numbers graphs and nodes from 1:
    ``<name>_graph_indicator.txt`` gives each node's graph (ids from 1, never
    decreasing: nodes are listed graph by graph); each line of
    ``<name>_A.txt`` is an edge between two node ids in ``1..N`` of one
    graph; a label or attribute file has one line per node, edge or graph.
    (PyG's reader drops an edge to node 0, and mixes unsorted graphs up,
    without a word.)"""
    def path(kind):
        return osp.join(raw, f'{name}_{kind}.txt')
    try:
        graph = _tu_table(path('graph_indicator'), 1)[:, 0]
    except (ValueError, OSError) as err:
        return (f"{path('graph_indicator')} is not one integer graph id per line "
                f'({err})')
    if graph.size == 0 or graph.min() < 1:
        return (f"{path('graph_indicator')} holds graph id "
                f'{int(graph.min()) if graph.size else "none"} (TU graph ids start at 1)')
    if (np.diff(graph) < 0).any():
        line = int(np.nonzero(np.diff(graph) < 0)[0][0]) + 2
        return (f"{path('graph_indicator')} line {line}: graph ids must not decrease "
                '(nodes are listed graph by graph)')
    nodes, graphs = graph.size, int(graph.max())
    try:
        edges = _tu_table(path('A'), 2)
    except (ValueError, OSError) as err:
        return f"{path('A')} is not two integer node ids per line ({err})"
    bad = (edges < 1) | (edges > nodes)
    if bad.any():
        line = int(np.nonzero(bad.any(1))[0][0])
        return (f"{path('A')} line {line + 1}: node id {int(edges[line][bad[line]][0])} "
                f'(TU node ids run from 1 to the {nodes:,} nodes of '
                f"{osp.basename(path('graph_indicator'))})")
    apart = graph[edges[:, 0] - 1] != graph[edges[:, 1] - 1]
    if apart.any():
        line = int(np.nonzero(apart)[0][0])
        i, j = (int(v) for v in edges[line])
        return (f"{path('A')} line {line + 1}: the edge {i}, {j} joins graph "
                f'{int(graph[i - 1])} and graph {int(graph[j - 1])}')
    counts = {'graph_labels': graphs, 'graph_attributes': graphs,
              'node_labels': nodes, 'node_attributes': nodes,
              'edge_labels': len(edges), 'edge_attributes': len(edges)}
    for kind, want in counts.items():
        if osp.exists(path(kind)):
            got = _tu_lines(path(kind))
            if got != want:
                return (f'{path(kind)} has {got:,} lines, not one per '
                        f"{kind.split('_')[0]} ({want:,})")
    return None


def tu(cfg) -> Source:
    from torch_geometric.datasets import TUDataset
    name = cfg.dataset.name
    root = osp.join(_dir(cfg), 'TUDataset')
    raw = osp.join(root, name, 'raw')
    files = RawFiles(
        f"'{name}' (PyG-TUDataset)",
        [osp.join(raw, f'{name}_{k}.txt') for k in ('A', 'graph_indicator')],
        [f'{TUDataset.url}/{name}.zip'], raw, inputs=[raw],
        how=f'Unzip it so that the {name}_*.txt files sit directly in {raw}.',
        roles={'edge_index': f'{name}_A.txt',
               'x': f'{name}_node_labels.txt / {name}_graph_indicator.txt',
               'y': f'{name}_graph_labels.txt',
               'edge_attr': f'{name}_edge_labels.txt'},
        validate=lambda: check_tu_files(raw, name))
    files.require(cfg)

    def build():
        with no_prompt():
            return TUDataset(root, name)

    ds = ProcessedCache(files, osp.join(root, name, 'processed')).load(build)
    node_types, extra = None, {}
    if ds._data.get('x') is None:  # COLLAB, IMDB-*: degree as node type
        node_types = storage.degree_as_node_type(ds, cfg.dataset.max_degree)
        extra['node_feature'] = 'degree'
    y = ds._data.y
    indices = split_utils.stratified_split(y, cfg.dataset.split, cfg.seed)
    known = datasets.find('PyG-TUDataset', name, any_name=False)
    if known is not None:
        key = known.key
    else:
        key = 'TU-degree' if node_types is not None else 'TU'
    return Source({'all': ds}, indices, osp.join(root, name), key,
                  num_outputs=int(y.max()) + 1, node_num_types=node_types,
                  extra=extra, standard_split=False,
                  labels_from=osp.join(raw, files.roles['y']))


def lrgb(cfg) -> Source:
    from torch_geometric.datasets import LRGBDataset
    lower = cfg.dataset.name.lower()
    root = osp.join(_dir(cfg), 'LRGBDataset')
    raw = osp.join(root, lower, 'raw')
    ext = 'pickle' if lower.endswith('-sp') else 'pt'
    files = RawFiles(f"'{cfg.dataset.name}' (PyG-LRGBDataset)",
                     [osp.join(raw, f'{s}.{ext}') for s in split_utils.SPLITS],
                     [LRGBDataset.urls[lower]], raw, inputs=[raw],
                     how=f'Unzip it into {root} and rename its folder '
                         f"'{LRGBDataset.dwnld_file_name[lower]}' to {raw}.")
    files.require(cfg)
    parts = ProcessedCache(files, osp.join(root, lower, 'processed')).load(
        lambda: _three(lambda s: LRGBDataset(root, lower, split=s)))
    return Source(parts, None, osp.join(root, lower), lower,
                  labels_from=osp.join(raw, f'{{train,val,test}}.{ext}'))


# --------------------------------------------------------------------- OGB --
def _ogb_release(folder: str, version, urls, dataset: str):
    # OGB asks on stdin when the folder exists without its release marker.
    tag = osp.join(folder, f'RELEASE_v{version}.txt')
    if osp.isdir(folder) and not osp.exists(tag):
        raise DatasetNotFoundError(
            f'{dataset}: {folder} exists but has no release marker {tag}. If '
            'its files are the current OGB release, create that (empty) file; '
            f'otherwise delete the folder (download: {urls[0]}).')


def ogb_graph(cfg) -> Source:
    from ogb.graphproppred import PygGraphPropPredDataset
    from graphgps_ext.loader.datasets.ogb import ogb_master
    name = cfg.dataset.name
    meta = ogb_master()[name]
    base = _dir(cfg)
    folder = osp.join(base, '_'.join(name.split('-')))
    if osp.exists(folder + '_pyg'):
        folder += '_pyg'
    raw = osp.join(folder, 'raw')
    if meta['binary'] == 'True':
        files = ['data.npz', 'graph-label.npz']
    else:
        files = ['edge.csv.gz', 'graph-label.csv.gz']
        files += ['node-feat.csv.gz'] if meta['has_node_attr'] == 'True' else []
        files += ['edge-feat.csv.gz'] if meta['has_edge_attr'] == 'True' else []
        if meta['additional node files'] != 'None':
            files += [f'{f}.csv.gz'
                      for f in meta['additional node files'].split(',')]
    split_dir = osp.join(folder, 'split', meta['split'])
    paths = [osp.join(raw, f) for f in files]
    paths += [osp.join(split_dir, f'{s}.csv.gz')
              for s in ('train', 'valid', 'test')]
    how = (f"Unzip {meta['download_name']}.zip into {base} and rename its "
           f"folder '{meta['download_name']}' to {folder} (keep its "
           f"RELEASE_v{meta['version']}.txt, raw/ and split/).")
    files = RawFiles(f"'{name}' (OGB)", paths, [meta['url']], folder, how=how,
                     inputs=[raw, split_dir])
    files.require(cfg)
    if all(osp.exists(p) for p in paths):
        _ogb_release(folder, meta['version'], [meta['url']], name)

    def build():
        with no_prompt():
            return PygGraphPropPredDataset(name, root=base)

    ds = ProcessedCache(files, osp.join(folder, 'processed')).load(build)
    with guarded(files.dataset):  # OGB reads a split_dict.pt with torch.load
        split = ds.get_idx_split()
    indices = {'train': split['train'], 'val': split['valid'],
               'test': split['test']}
    if name == 'ogbg-code2':
        return _code2(cfg, ds, indices)
    known = datasets.find('OGB', name, any_name=False)
    if known is not None:  # ogbg-molpcba
        key = known.key
    elif 'classification' in meta['task type']:
        key = 'ogbg-mol-classification'
    else:
        key = 'ogbg-mol-regression'
    if 'classification' in meta['task type'] and \
            not ds._data.y.is_floating_point():  # bce wants 0/1 floats
        storage.set_attr(ds, 'y', ds._data.y.float())
    return Source({'all': ds}, indices, ds.root, key,
                  num_outputs=int(meta['num tasks']),
                  extra={'ogb_eval_metric': meta['eval metric']},
                  labels_from=osp.join(raw, 'graph-label.npz' if meta['binary'] == 'True'
                                       else 'graph-label.csv.gz'))


def _mapping_size(folder: str, file: str, fallback: int) -> int:
    import pandas as pd
    path = osp.join(folder, 'mapping', file)
    return len(pd.read_csv(path)) if osp.exists(path) else fallback


def _code2(cfg, ds, indices) -> Source:
    from graphgps_ext.loader import code2
    ys = ds._data.y
    vocab2idx, idx2vocab = code2.vocab_mapping(
        [ys[i] for i in indices['train'].tolist()], code2.NUM_VOCAB)
    ds.transform = code2.Code2Transform(vocab2idx, code2.MAX_SEQ_LEN,
                                        cfg.dataset.code2_max_nodes)
    x = ds._data.x
    extra = dict(
        num_vocab=code2.NUM_VOCAB, max_seq_len=code2.MAX_SEQ_LEN,
        max_depth=code2.MAX_DEPTH, idx2vocab=idx2vocab,
        num_nodetypes=_mapping_size(ds.root, 'typeidx2type.csv.gz',
                                    int(x[:, 0].max()) + 1),
        num_nodeattributes=_mapping_size(ds.root, 'attridx2attr.csv.gz',
                                         int(x[:, 1].max()) + 1))
    return Source({'all': ds}, indices, ds.root, 'ogbg-code2',
                  num_outputs=len(idx2vocab), extra=extra)


def pcqm4mv2_splits(split: Dict[str, Tensor], subset: bool
                    ) -> Dict[str, Tensor]:
    """GraphGPS's PCQM4Mv2 splits: a random (``default_rng(42)``) 150k of the
    official train split becomes ``val``, the official ``valid`` split is
    ``test``; ``subset``: the first 10 % of the remaining train molecules and
    the first 50k of ``val``.  (For a training split below 1.5M molecules,
    i.e. test data, the held-out part is 10 % of it instead of 150k.)"""
    train = torch.as_tensor(np.asarray(split['train'])).long()
    perm = torch.from_numpy(np.random.default_rng(PCQM_SEED).permutation(
        train.numpy()))
    holdout = min(PCQM_HOLDOUT, perm.numel() // 10)
    val, train = perm[:holdout], perm[holdout:]
    test = torch.as_tensor(np.asarray(split['valid'])).long()
    if subset:
        train = train[:int(PCQM_SUBSET_RATIO * train.numel())]
        val = val[:PCQM_SUBSET_VAL]
    return {'train': train, 'val': val, 'test': test}


def pcqm4mv2(cfg) -> Source:
    from ogb.lsc import PygPCQM4Mv2Dataset
    variant = cfg.dataset.name.split('-', 1)[1]
    base = _dir(cfg)
    folder = osp.join(base, 'pcqm4m-v2')
    url = 'https://dgl-data.s3-accelerate.amazonaws.com/dataset/OGB-LSC/pcqm4m-v2.zip'
    paths = [osp.join(folder, 'raw', 'data.csv.gz'),
             osp.join(folder, 'split_dict.pt')]
    files = RawFiles(f"'{cfg.dataset.name}' (OGB-LSC)", paths, [url], folder,
                     how=f'Unzip pcqm4m-v2.zip into {base} (it holds '
                         'pcqm4m-v2/raw/data.csv.gz, split_dict.pt and '
                         'RELEASE_v1.txt).')
    files.require(cfg)
    if all(osp.exists(p) for p in paths):
        _ogb_release(folder, 1, [url], cfg.dataset.name)

    class PCQM4Mv2(PygPCQM4Mv2Dataset):
        # split_dict.pt (NumPy arrays in a torch file) read by the one reader,
        # its indices checked (against the molecules once they are loaded).
        def get_idx_split(self):
            path = osp.join(self.root, 'split_dict.pt')
            loaded = getattr(self, 'slices', None) is not None
            return split_utils.checked_indices(
                load_file(path, files.dataset), path, files.dataset,
                len(self) if loaded else None, names=('train', 'valid'))

    def build():
        with no_prompt():
            return PCQM4Mv2(root=base)

    ds = ProcessedCache(files, osp.join(folder, 'processed')).load(build)
    storage.graph_y_as_rows(ds)
    indices = pcqm4mv2_splits(ds.get_idx_split(), variant == 'subset')
    return Source({'all': ds}, indices, folder, 'PCQM4Mv2', labels_from=paths[0])


def ogb_format(cfg) -> Source:
    from graphgps_ext.loader.peptides import VARIANTS, PeptidesDataset
    name = cfg.dataset.name
    if name in VARIANTS:
        files = PeptidesDataset.raw_files(_dir(cfg), name)
        files.require(cfg)
        ds = ProcessedCache(files, osp.join(_dir(cfg), name, 'processed')).load(
            lambda: PeptidesDataset(_dir(cfg), name, cfg.dataset.max_graphs))
        key = datasets.find('OGB', name).key
        return Source({'all': ds}, ds.split_idx, ds.root, key, limited=True,
                      extra={'full_split_sizes': ds.full_split_sizes},
                      source_indices=ds.split_rows, labels_from=files.required[0])
    if name.startswith('ogbg-'):
        return ogb_graph(cfg)
    return pcqm4mv2(cfg)


# --------------------------------------------------------------- generated --
def synthetic(cfg) -> Source:
    from graphgps_ext.loader.datasets.synthetic import tree_facts
    from graphgps_ext.loader.generators import sbm
    from graphgps_ext.loader.generators.tree_neighbours import (
        TreeNeighbourMatch, cache_root, memory_need, tag)
    name, ds_cfg = cfg.dataset.name, cfg.dataset
    seed, max_graphs = int(ds_cfg.generator_seed), int(ds_cfg.max_graphs)
    if name == 'TreeNeighbourMatch':
        r, root = int(ds_cfg.tree_depth), cache_root(_dir(cfg))
        files = RawFiles("'TreeNeighbourMatch' (synthetic)", [], [], root,
                         how=f'Delete {osp.join(root, "processed")} and run again.')

        stored = osp.join(root, 'processed',
                          f'{tag(r, ds_cfg.tree_variant, seed, max_graphs)}.pt')
        sizes.check([memory_need(r, ds_cfg.tree_variant, max_graphs,
                                 generating=not osp.exists(stored))])
        ds = ProcessedCache(files, osp.join(root, 'processed')).load(
            lambda: TreeNeighbourMatch(root, r, ds_cfg.tree_variant, seed, max_graphs))
        facts = tree_facts(r)
        extra = dict(node_type_dims=facts['node_type_dims'], tree_depth=r,
                     tree_variant=ds_cfg.tree_variant)
        return Source({'all': ds}, ds.split_idx, ds.processed_dir,
                      'TreeNeighbourMatch', num_outputs=facts['num_outputs'],
                      extra=extra, limited=True)
    root = sbm.cache_root(_dir(cfg), name, seed, max_graphs)  # PATTERN, CLUSTER
    sbm.write_raw(root, name, seed, max_graphs)
    return gnn_benchmark(cfg, root=root, stand_in=True)


def dataset_names(fmt: str) -> Optional[List[str]]:
    """The ``dataset.name`` values of ``dataset.format`` ``fmt`` (``None``:
    any name, e.g. the TU collection, or an unknown format)."""
    if fmt not in datasets.formats():
        return None
    return datasets.names(fmt)


def check_dataset(cfg):
    """Raise ``ValueError`` (naming the valid values) for a ``dataset.format``
    or ``dataset.name`` that no reader knows; reads no data."""
    fmt, name = cfg.dataset.format, str(cfg.dataset.name)
    formats = datasets.formats()
    if fmt not in formats:
        raise ValueError(f"unknown dataset.format '{fmt}'" + (did_you_mean(fmt, list(formats)) or '.')
                         + f" Valid: {', '.join(formats)}")
    names = dataset_names(fmt)
    ok = (name.lower() in [n.lower() for n in names] if formats[fmt].ignore_case
          else names is None or name in names)
    if not ok:
        shown = names if len(names) <= 12 else names[:12] + ['...']
        raise ValueError(f"unknown dataset.name '{name}' for dataset.format "
                         f"'{fmt}'" + (did_you_mean(name, names) or '.')
                         + f" Valid: {', '.join(shown)}")
    if fmt == 'PyG-TUDataset' and (not name or '/' in name or name in ('.', '..')):
        raise ValueError(f"dataset.name '{name}' is not a TU dataset name "
                         "(e.g. 'NCI1', 'NCI109', 'COLLAB')")


def spec_of(cfg) -> Optional[Dict[str, Any]]:
    """The task spec (a dataset declaration's ``spec``) of the configured
    dataset where it is known without reading data, else ``None`` (e.g. an
    ``ogbg-*`` dataset other than molpcba and code2)."""
    ds = datasets.find(cfg.dataset.format, str(cfg.dataset.name))
    return datasets.spec(ds.key) if ds is not None else None
