"""What a model and the training loop know about a dataset's task.

:class:`TaskInfo` is built per dataset from its task spec, what the
benchmark fixes (loss, metric, encoders, head; declared with the dataset in
:mod:`graphgps_ext.loader.datasets`), completed by what is
read from the data (widths, vocabularies, classes) (:func:`build_task`),
then overridden by config keys (:func:`apply_overrides`). Every dataset is
split into :data:`SPLITS` (trained on ``train``, selected on ``val``,
reported on ``test``); a results folder has one sub-folder per split. A
metric's direction (``min`` or ``max``) is
:func:`graphgps_ext.metrics.direction`.

Override convention (``'auto'`` = derived from the dataset):

========================  ===================  =================================
config key                ``auto`` default     overrides
========================  ===================  =================================
``dataset.task``          ``auto``             ``TaskInfo.task``
``dataset.task_type``     ``auto``             ``TaskInfo.task_type``
``dataset.num_outputs``   ``-1``               ``TaskInfo.num_outputs`` (if > 0)
``model.loss_fun``        ``auto``             ``TaskInfo.loss``
``metric_best``           ``auto``             ``TaskInfo.metric`` (+ direction)
``dataset.metrics``       ``[]``               ``TaskInfo.metrics``
``gnn.head``              ``default``          ``TaskInfo.head`` (read by the
                                               model)
========================  ===================  =================================

``dataset.binary_single_logit: True`` (GraphGym's convention, set by the
translation of GraphGPS configs) makes a two-class ``classification`` task
predict one logit: ``TaskInfo.num_outputs`` 2 -> 1.

Encoders are chosen by :mod:`graphgps_ext.encoder` from
``TaskInfo.node_encoder`` / ``edge_encoder`` unless ``dataset.node_encoder``
/ ``dataset.edge_encoder`` is ``True`` (GraphGPS convention; then
``dataset.node_encoder_name`` / ``edge_encoder_name``, where the token
``default`` stands for the TaskInfo value, e.g. ``default+RWSE``).
"""
import copy
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from graphgps_ext.metrics import direction

if TYPE_CHECKING:
    from torch_geometric.data import Data

#: The splits of every dataset, in order.
SPLITS = ('train', 'val', 'test')


@dataclass
class TaskInfo:
    r"""What a model and the training loop need to know about a dataset.

    Attributes:
        name: dataset name as in the config.
        task: prediction level: ``graph``, ``node``, ``edge`` (edge-level
            classification) or ``link`` (inductive link ranking, PCQM-Contact).
        task_type: ``regression``, ``classification``,
            ``classification_multilabel``, ``ranking`` or ``sequence``.
        num_outputs: width of the model output (classes, targets, labels).
        loss: loss name registered in :mod:`graphgps_ext.train.loss`.
        metric: the model-selection metric (``metric_best``).
        metric_direction: ``min`` or ``max`` for :attr:`metric`.
        metrics: every metric to log, :attr:`metric` included.
        node_encoder: default node type encoder (``TypeDictNode``, ``Atom``,
            ``LinearNode``, ...).
        node_dim: number of node feature columns (categorical) or the feature
            width (continuous).
        node_num_types: vocabulary size of a categorical node feature (0 if
            continuous). For several categorical columns: the per-column sizes
            in :attr:`extra` (``node_type_dims``).
        edge_encoder: default edge encoder, or ``None`` when the dataset has
            no edge features.
        edge_dim / edge_num_types: as for nodes.
        head: default head name.
        extra: anything dataset-specific (code2 vocabularies, class weights, ...).
    """
    name: str
    task: str
    task_type: str
    num_outputs: int
    loss: str
    metric: str
    metric_direction: str
    metrics: List[str] = field(default_factory=list)
    node_encoder: str = 'LinearNode'
    node_dim: int = 1
    node_num_types: int = 0
    edge_encoder: Optional[str] = None
    edge_dim: int = 0
    edge_num_types: int = 0
    head: str = 'graph_mlp'
    extra: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def build_task(name: str, spec: Dict[str, Any], sample: 'Data',
               num_outputs: Optional[int] = None,
               node_num_types: Optional[int] = None,
               extra: Optional[Dict[str, Any]] = None) -> TaskInfo:
    """TaskInfo of a benchmark's task spec completed from a sample graph.

    Args:
        name: the configured dataset name (kept in ``TaskInfo.name``).
        spec: the fields the benchmark fixes (a dataset declaration's
            ``spec``, :mod:`graphgps_ext.loader.datasets`); not modified.
        sample: one graph of the training split.
        num_outputs: from the data, where the table leaves it open.
        node_num_types: categorical node vocabulary from the data (e.g.
            COLLAB degrees), where the table leaves it open.
        extra: dataset-specific extras.
    """
    spec = copy.deepcopy(dict(spec))
    outputs = spec.pop('num_outputs')
    outputs = outputs if outputs is not None else num_outputs
    if outputs is None:
        raise ValueError(f'{name}: number of outputs unknown; set '
                         'dataset.num_outputs')
    x = sample.get('x')
    node_dim = 1 if x is None or x.dim() == 1 else int(x.size(1))
    ea = sample.get('edge_attr')
    edge_dim = 0 if ea is None else (1 if ea.dim() == 1 else int(ea.size(1)))
    if spec.get('edge_encoder') in ('LinearEdge', 'TypeDictEdge', 'Bond') \
            and ea is None:  # no edge features: the encoder builder decides
        spec['edge_encoder'] = None
    types = spec.pop('node_num_types', None) or node_num_types or 0
    return TaskInfo(name=name, num_outputs=int(outputs),
                    metric_direction=direction(spec['metric']),
                    node_dim=node_dim, node_num_types=int(types),
                    edge_dim=edge_dim, extra=dict(extra or {}), **spec)


def apply_overrides(task: TaskInfo, cfg) -> TaskInfo:
    """Apply the config overrides of the module docstring (in place)."""
    ds = cfg.dataset
    if ds.task != 'auto':
        task.task = ds.task
    if ds.task_type != 'auto':
        task.task_type = ds.task_type
    if ds.num_outputs > 0:
        task.num_outputs = int(ds.num_outputs)
    if getattr(ds, 'binary_single_logit', False) and \
            task.task_type == 'classification' and task.num_outputs == 2:
        task.num_outputs = 1
    if cfg.model.loss_fun != 'auto':
        task.loss = cfg.model.loss_fun
    if len(ds.metrics) > 0:
        task.metrics = list(ds.metrics)
    if cfg.metric_best != 'auto':
        task.metric = cfg.metric_best
        task.metric_direction = direction(task.metric)
    if task.metric not in task.metrics:
        task.metrics = [task.metric] + list(task.metrics)
    return task
