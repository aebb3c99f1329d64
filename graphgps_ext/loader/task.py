"""Task metadata derived from a dataset, so that configs need not repeat it."""
from dataclasses import dataclass, field, asdict
from typing import Any, Dict, List, Optional


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
