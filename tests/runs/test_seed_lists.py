"""``graphgps_ext.runs.seed_lists``: the seed-list grammar shared by
main.py, the launcher and run/tables.tsv, its bound, and the seeds a run
trains."""
from types import SimpleNamespace

import pytest

from graphgps_ext.config import ConfigError
from graphgps_ext.runs.seed_lists import MAX_SEEDS, TooManySeeds, parse_seeds, seed_list
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


def test_lists_are_bounded_before_they_are_built():
    assert parse_seeds(f'0-{MAX_SEEDS - 1}') == list(range(MAX_SEEDS))
    assert parse_seeds('5-9,0-9,3') == [5, 6, 7, 8, 9, 0, 1, 2, 3, 4]  # first seen order
    for spec in ('0-999999', '0-9999999999', f'0-{MAX_SEEDS - 1},{MAX_SEEDS}',
                 ','.join(['1'] * (MAX_SEEDS + 1))):
        with pytest.raises(TooManySeeds, match='names more than 10,000 seeds'):
            parse_seeds(spec)
    with pytest.raises(ValueError, match='longer than 10 digits'):
        parse_seeds('1' * 5000)  # no int() of a 5000-digit number
    with pytest.raises(SweepError, match=r"bad value 4294967296 for 'seed' \(from --seeds\)"):
        sweep_seeds('0,4294967296')


def test_repeat_is_bounded_before_the_list_is_built():
    cfg = SimpleNamespace(seed=0)
    assert seed_list(cfg, None, 3) == [0, 1, 2]
    with pytest.raises(ConfigError, match='names more than 10,000 seeds'):
        seed_list(cfg, None, 10 ** 9)
    with pytest.raises(ConfigError, match="bad value 4999999999 for 'seed'"):
        seed_list(cfg, None, 5 * 10 ** 9)
