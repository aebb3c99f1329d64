"""YAML merges (``<<``) in config files: a value a merge would lose
silently is refused, naming the key, as a key given twice is; merges that
lose nothing, and values set beside a merge, load as YAML reads them."""
import pytest

from graphgps_ext.config import ConfigError
from graphgps_ext.config.yaml_io import read_yaml

ANCHORS = 'optim: &a {max_epoch: 3}\ntrain: &b {batch_size: 8}\n'


@pytest.mark.parametrize('text,message', [
    # Two merges of one mapping set one key: YAML keeps the first.
    ('gt: &a {layers: 2}\nmna: &b {layers: 3}\nposenc_RWSE: {<<: [*a, *b]}\n',
     "key 'posenc_RWSE.layers' is set by two merged mappings ('<<', the mappings at lines 1 "
     "and 2)"),
    ('gt: &a {layers: 2}\nmna: &b {layers: 3}\ncsa:\n  <<: *a\n  <<: *b\n',
     "key 'csa.layers' is set by two merged mappings"),
    # The key comes through a merge of a merge.
    ('gt: &a {layers: 2}\nmna: &c {<<: *a, hops: 1}\noptim: &b {layers: 4}\n'
     'csa: {<<: [*c, *b]}\n', "key 'csa.layers' is set by two merged mappings"),
    # Deeper in the file.
    ('gt:\n  a: &a {x: 1}\n  b: &b {x: 2}\n  c:\n    <<: [*a, *b]\n',
     "key 'gt.c.x' is set by two merged mappings ('<<', the mappings at lines 2 and 3)"),
    # A group beside a merge replaces the merged group whole (a merge is shallow).
    ('base: &a {optim: {base_lr: 0.1, max_epoch: 2}}\nrun:\n  <<: *a\n  optim: {max_epoch: 5}\n',
     "group 'run.optim' (line 4) replaces the group 'optim' merged in by '<<' (line 1) whole"),
])
def test_a_value_a_merge_would_lose_is_refused(tmp_path, text, message):
    path = tmp_path / 'merge.yaml'
    path.write_text(text)
    with pytest.raises(ConfigError, match='merge.yaml') as err:
        read_yaml(str(path))
    assert message in str(err.value)


@pytest.mark.parametrize('text,expected', [
    # Disjoint merges, and a scalar set beside the merges (it wins, as YAML says).
    (ANCHORS + 'x: {<<: [*a, *b]}\n', {'max_epoch': 3, 'batch_size': 8}),
    ('gt: &a {layers: 2}\nmna: &b {layers: 3}\nx:\n  <<: [*a, *b]\n  layers: 5\n',
     {'layers': 5}),
    # The same mapping merged twice sets each key once.
    ('gt: &a {layers: 2}\nx: {<<: [*a, *a]}\n', {'layers': 2}),
])
def test_merges_that_lose_nothing_load(tmp_path, text, expected):
    path = tmp_path / 'merge.yaml'
    path.write_text(text)
    assert read_yaml(str(path))['x'] == expected


def test_one_anchor_merged_through_two_paths_loses_nothing(tmp_path):
    path = tmp_path / 'merge.yaml'
    path.write_text('gt: &a {layers: 2}\nmna: &c {<<: *a, hops: 1}\noptim: &d {<<: *a}\n'
                    'x: {<<: [*c, *d]}\n')
    assert read_yaml(str(path))['x'] == {'layers': 2, 'hops': 1}
