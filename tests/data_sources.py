"""Real benchmark data for the tests, and what each copy holds.

- ``samples``: the small real-data samples shipped in ``tests/data`` (see its
  README), in each loader's original raw format: on every clone;
- ``offline``: full copies of the same files where a folder of them is
  present (``GRAPHGPS_EXT_SHARED_DATA``, by default the ``data`` folder of
  the project's material beside the checkout): extra coverage, never needed.

Tests that read a dataset run once per available source (a source that is
absent is not a test, so nothing is skipped for missing data), and take the
numbers they check from :data:`FACTS`.
"""
import os
import shutil

TESTS = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(TESTS, 'data')
OFFLINE = os.environ.get('GRAPHGPS_EXT_SHARED_DATA',
                         os.path.join(TESTS, os.pardir, os.pardir, 'shared', 'data'))
SOURCES = {'samples': SAMPLES}
if os.path.isdir(OFFLINE):
    SOURCES['offline'] = OFFLINE

# Per source: split sizes, the statistics of the exact ZINC val/test graphs
# (mean nodes, mean undirected edges, min and max nodes, mean and population
# std of y), NCI1's graph count and class-1 fraction, Peptides' split sizes,
# those of ``dataset.max_graphs 40``, atoms and directed bonds per graph.
FACTS = {
    'samples': dict(
        zinc_sizes={'train': 200, 'val': 20, 'test': 20},
        zinc_stats={'val': (23.85, 25.75, 13, 35, -0.1336, 1.9053),
                    'test': (22.50, 24.20, 16, 29, -0.8416, 1.9324)},
        nci1_graphs=318, nci1_positive=158 / 318,
        peptides_sizes={'train': 210, 'val': 45, 'test': 45},
        peptides_max40={'train': 28, 'val': 6, 'test': 6},
        peptides_nodes=44_454, peptides_edges_per_graph=301.45),
    'offline': dict(
        zinc_sizes={'train': 10_000, 'val': 1_000, 'test': 1_000},
        zinc_stats={'val': (23.08, 24.85, 10, 36, 0.0315, 1.9846),
                    'test': (23.12, 24.86, 11, 37, 0.0124, 2.0170)},
        nci1_graphs=4110, nci1_positive=2057 / 4110,
        peptides_sizes={'train': 10_873, 'val': 2_331, 'test': 2_331},
        peptides_max40={'train': 28, 'val': 7, 'test': 7},
        peptides_nodes=2_344_859, peptides_edges_per_graph=307.30),
}


def copy_data(dst, *names, source: str = 'samples') -> str:
    """Copy the folders ``names`` (``'ZINC'``, ``'TUDataset'``,
    ``'peptides-functional'``) of ``source`` into ``dst``, writable (loaders
    write ``processed/`` beside ``raw/``); return ``dst``."""
    for name in names:
        target = os.path.join(dst, name)
        shutil.copytree(os.path.join(SOURCES[source], name), target,
                        dirs_exist_ok=True)
        for base, dirs, files in os.walk(target):
            for d in dirs:
                os.chmod(os.path.join(base, d), 0o755)
            for f in files:
                os.chmod(os.path.join(base, f), 0o644)
    return str(dst)
