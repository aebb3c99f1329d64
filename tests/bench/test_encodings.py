"""The encodings benchmark reads real molecules from a data folder in the
loaders' layout, and stops at once, naming the files, when they are absent."""
import os

import pytest

from graphgps_ext.bench import encodings

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'data')


def test_missing_data_is_named_at_once(tmp_path):
    (tmp_path / 'ZINC' / 'raw').mkdir(parents=True)
    with pytest.raises(SystemExit) as err:
        encodings.run('cpu', graphs=4, data_dir=str(tmp_path))
    msg = str(err.value)
    assert os.path.join('ZINC', 'raw', 'val.pickle') in msg
    assert 'peptide_multi_class_dataset.csv.gz' in msg and str(tmp_path) in msg
    assert '--encoding-data' in msg


def test_the_shipped_samples_have_the_layout():
    encodings.check_data(SAMPLES)
    graphs = encodings.peptides_graphs(3, SAMPLES)
    assert len(graphs) == 3 and graphs[0].x.size(1) == 9


def test_each_row_asks_for_its_encoding():
    """The rows' configs ask the precompute for the kinds and parameters
    their labels name."""
    assert {label: encodings.wanted(o) for label, o in encodings.ROWS.items()} == {
        'LapPE-10': {'lappe': {'k': 10, 'norm': 'none', 'skip_trivial': False}},
        'RWSE-20': {'rwse': {'times': list(range(1, 21))}},
        'LapPE-10 + RWSE-20': {'lappe': {'k': 10, 'norm': 'none', 'skip_trivial': False},
                               'rwse': {'times': list(range(1, 21))}},
        'Edge-RWSE-16 (stored pairs)': {'pair_rwse': {'steps': 16}},
        'Edge-RWSE-20 (stored pairs)': {'pair_rwse': {'steps': 20}},
        'SPD-8 (stored pairs)': {'pair_spd': {'steps': 8}},
        'SPD-10 (stored pairs)': {'pair_spd': {'steps': 10}},
        'rings <= 18': {'rings': {'max_size': 18}}}
