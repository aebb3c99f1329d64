"""Labels a loss cannot take are refused when the data is loaded, naming
the split, the value and the file (a data error, exit code 5), or the key
when the loss was chosen in the config (exit code 2); legitimate missing
labels (NaN in multi-label and multi-target tasks) pass."""
import math

import pytest
import torch
from torch_geometric.data import Data, InMemoryDataset

from graphgps_ext.config import ConfigError
from graphgps_ext.loader import load_dataset
from graphgps_ext.loader.errors import DataCorruptError
from graphgps_ext.loader.labels import check_labels, stored_rows
from graphgps_ext.task import TaskInfo

from .conftest import make_cfg

INF, NAN = math.inf, math.nan


class _Mem(InMemoryDataset):
    def __init__(self, ys):
        super().__init__(None)
        self.data, self.slices = self.collate([
            Data(x=torch.zeros(2, 1), edge_index=torch.tensor([[0], [1]]),
                 y=torch.as_tensor(y)) for y in ys])


def _task(loss, task_type, outputs=1, task='graph'):
    return TaskInfo(name='toy', task=task, task_type=task_type, num_outputs=outputs,
                    loss=loss, metric='mae', metric_direction='min')


# (id, labels of one split, loss, task type, outputs, refused?, words)
CASES = [
    ('bce-0-1', [[[0., 1.]], [[1., 0.]]], 'bce', 'classification_multilabel', 2, False, ''),
    ('bce-missing-multilabel', [[[NAN, 1.]]], 'bce', 'classification_multilabel', 2,
     False, ''),
    ('bce-label-2', [[[0., 2.]]], 'bce', 'classification_multilabel', 2, True,
     'binary labels 0 or 1'),
    ('bce-negative', [[-1.]], 'bce', 'classification', 1, True, '-1.0'),
    ('bce-nan-single-label', [[NAN]], 'bce', 'classification', 1, True, 'nan'),
    ('ce-classes', [0, 1, 2], 'cross_entropy', 'classification', 3, False, ''),
    ('ce-class-out-of-range', [0, 3], 'cross_entropy', 'classification', 3, True,
     'outside the classes 0 .. 2'),
    ('ce-negative-class', [-1, 0], 'cross_entropy', 'classification', 2, True, '-1'),
    ('ce-float-class', [[0.5], [1.0]], 'cross_entropy', 'classification', 2, True,
     'integer classes'),
    ('l1-finite', [[1.5], [-2.]], 'l1', 'regression', 1, False, ''),
    ('l1-inf', [[1.5], [INF]], 'l1', 'regression', 1, True, 'finite targets'),
    ('mse-minus-inf', [[-INF]], 'mse', 'regression', 1, True, '-inf'),
    ('l1-nan-single-target', [[NAN]], 'l1', 'regression', 1, True, 'nan'),
    ('l1-nan-multi-target', [[[NAN, 1.]]], 'l1', 'regression', 2, False, ''),
    ('other-loss-inf', [[INF]], 'my_loss', 'regression', 1, True, 'not be infinite'),
]


@pytest.mark.parametrize('ys,loss,kind,outputs,refused,words', [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_labels_against_the_loss(ys, loss, kind, outputs, refused, words):
    splits = {'train': _Mem(ys)}
    task = _task(loss, kind, outputs)
    if not refused:
        check_labels(splits, task, 'toy', 'toy/raw/labels.txt')
        return
    with pytest.raises(DataCorruptError) as err:
        check_labels(splits, task, 'toy', 'toy/raw/labels.txt')
    message = str(err.value)
    assert words in message and 'the train split' in message
    assert 'toy/raw/labels.txt' in message and f'its {loss} loss' in message
    with pytest.raises(ConfigError, match=f"model.loss_fun '{loss}' does not fit"):
        check_labels(splits, task, 'toy', chosen_loss=True)


def test_only_the_graphs_of_a_split_are_read():
    """A view holds some graphs of the storage: the others' labels (e.g.
    PCQM4Mv2's unlabelled test-dev molecules) are not its business."""
    ds = _Mem([[1.], [NAN], [3.], [INF]])
    view = ds[torch.tensor([2, 0])]
    assert stored_rows(view, 'y').view(-1).tolist() == [3., 1.]
    check_labels({'train': view}, _task('l1', 'regression'), 'toy')
    with pytest.raises(DataCorruptError, match='value 1 of the split'):
        check_labels({'test': ds[torch.tensor([0, 3])]}, _task('l1', 'regression'), 'toy')


def test_link_labels_and_sequences():
    ds = _Mem([[1.], [1.]])
    ds._data.edge_label = torch.tensor([0., 5.])
    ds.slices['edge_label'] = torch.tensor([0, 1, 2])
    with pytest.raises(DataCorruptError, match=r'labels \(edge_label\)'):
        check_labels({'val': ds}, _task('bce', 'ranking', task='link'), 'toy')
    check_labels({'val': ds}, _task('x', 'sequence'), 'toy')  # the head's business


def test_inf_label_in_a_raw_file_is_refused_at_load_naming_it(tmp_path):
    """An inf target in LRGB's raw train.pt: refused at load, the file
    named (no NaN loss and 'lower optim.base_lr' epochs later)."""
    raw = tmp_path / 'LRGBDataset' / 'peptides-struct' / 'raw'
    raw.mkdir(parents=True)
    for split in ('train', 'val', 'test'):
        y = torch.zeros(1, 11)
        if split == 'val':
            y[0, 3] = INF
        graphs = [(torch.zeros(2, 9).long(), torch.zeros(2, 3).long(),
                   torch.tensor([[0, 1], [1, 0]]), y)]
        torch.save(graphs, raw / f'{split}.pt')
    with pytest.raises(DataCorruptError) as err:
        load_dataset(make_cfg(tmp_path, **{'dataset.format': 'PyG-LRGBDataset',
                                           'dataset.name': 'Peptides-struct'}))
    message = str(err.value)
    assert 'the val split' in message and 'inf' in message
    assert str(raw) in message and 'optim.base_lr' not in message
