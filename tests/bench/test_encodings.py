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
