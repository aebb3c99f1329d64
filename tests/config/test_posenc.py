"""Config groups of the encodings: the RWSE step list."""
import pytest

from graphgps_ext.config.posenc import parse_times


def test_parse_times():
    assert parse_times([], 'range(1, 5)') == [1, 2, 3, 4]
    assert parse_times([2, 4], '') == [2, 4]
    with pytest.raises(ValueError, match='range'):
        parse_times([], 'list(1)')
