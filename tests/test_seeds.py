"""The seed-list grammar shared by main.py, the launcher and run/tables.tsv."""
import pytest

from graphgps_ext.seeds import parse_seeds
from graphgps_ext.sweep.plan import SweepError
from graphgps_ext.sweep.plan import parse_seeds as sweep_seeds


def test_ranges_and_lists():
    assert parse_seeds('0-3,8,2') == [0, 1, 2, 3, 8]
    assert parse_seeds(' 07 , 1-2 ') == [7, 1, 2]


@pytest.mark.parametrize('bad,why', [('', 'bad --seeds'), ('3-1', 'start > end'),
                                     ('1,,2', 'bad --seeds'), ('a', 'bad --seeds'),
                                     ('-1', 'bad --seeds')])
def test_bad_lists_say_what_to_write(bad, why):
    with pytest.raises(ValueError, match=why):
        parse_seeds(bad)
    with pytest.raises(SweepError, match=why):  # the launcher's exit-2 error
        sweep_seeds(bad)
