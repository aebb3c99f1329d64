r"""Building blocks shared by the task heads: the head MLP, the graph pooling
functions, the reading of the ``head`` config group, and the reshaping of
targets to the shape of the predictions.
"""
from typing import Callable, Dict

from torch import Tensor, nn
from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool
from torch_geometric.nn.resolver import activation_resolver

from graphgps_ext.head.virtual_node import virtual_node_pool
from graphgps_ext.layer.dropout import Dropout

#: Graph readouts: PyG's global poolings and the virtual node's state
#: (:mod:`graphgps_ext.head.virtual_node`; the model inserts the virtual nodes).
POOLS: Dict[str, Callable] = {
    'mean': global_mean_pool,
    'add': global_add_pool,
    'max': global_max_pool,
    'virtual_node': virtual_node_pool,
}


def resolve_pool(name: str) -> Callable:
    """``'mean' | 'add' | 'max' | 'virtual_node'`` -> the pooling function
    ``(x [N, d], batch [N], size) -> [B, d]``."""
    if name not in POOLS:
        raise ValueError(f"unknown graph pooling '{name}': set head.pool (or "
                         f"model.graph_pooling) to one of {', '.join(POOLS)}")
    return POOLS[name]


class HeadMLP(nn.Module):
    r"""The MLP of a head: ``num_layers`` Linear layers, activation and dropout
    after each hidden one.

    .. math::
        h_0 = \mathrm{Drop}_{in}(x),\quad h_{l+1} = \mathrm{Drop}(\sigma(W_l h_l + b_l))
        \ (l < L-1),\qquad \mathrm{out} = W_{L-1} h_{L-1} + b_{L-1}

    Hidden widths: ``'constant'`` keeps ``dim_in`` (GraphGym's ``MLP``),
    ``'halving'`` uses ``dim_in / 2^{l+1}`` for hidden layer ``l`` (GraphGPS's
    ``san_graph``: ``d -> d/2 -> d/4 -> out`` for ``num_layers=3``).

    Args:
        dim_in: input width ``d``.
        dim_out: output width.
        num_layers: number of Linear layers ``L >= 1``.
        width: ``'constant'`` or ``'halving'``.
        act: activation name (PyG :func:`activation_resolver`).
        dropout: dropout after each hidden activation.
        input_dropout: dropout on the input, before the first Linear layer.
        bias: bias of every Linear layer.

    Shapes: ``[*, dim_in] -> [*, dim_out]``.
    """

    def __init__(self, dim_in: int, dim_out: int, num_layers: int = 1,
                 width: str = 'constant', act: str = 'relu',
                 dropout: float = 0.0, bias: bool = True,
                 input_dropout: float = 0.0):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f'a head MLP needs at least one Linear layer, got '
                             f'num_layers={num_layers} (head.layers)')
        if width == 'constant':
            hidden = [dim_in] * (num_layers - 1)
        elif width == 'halving':
            hidden = [dim_in // 2**(l + 1) for l in range(num_layers - 1)]
            if hidden and hidden[-1] < 1:
                raise ValueError(
                    f'{num_layers} halving layers shrink width {dim_in} to 0: '
                    "use fewer head.layers or head.width 'constant'")
        else:
            raise ValueError(f"unknown head MLP width '{width}': use "
                             "'constant' or 'halving' (head.width)")
        dims = [dim_in] + hidden + [dim_out]
        self.lins = nn.ModuleList([
            nn.Linear(a, b, bias=bias) for a, b in zip(dims[:-1], dims[1:])
        ])
        self.act = activation_resolver(act)
        self.dropout = Dropout(dropout)
        self.input_dropout = Dropout(input_dropout)

    def reset_parameters(self):
        for lin in self.lins:
            lin.reset_parameters()

    def forward(self, x: Tensor) -> Tensor:
        x = self.input_dropout(x)
        for lin in self.lins[:-1]:
            x = self.dropout(self.act(lin(x)))
        return self.lins[-1](x)


def mlp_kwargs(cfg, level: str) -> dict:
    """Keyword arguments of :class:`HeadMLP` from the ``head`` config group.

    ``level`` (``'graph'`` or ``'node'``) decides what ``head.width: auto``
    means: halving for graph-level heads, constant for node-level ones.
    """
    layers = cfg.head.layers
    if layers == -1:
        layers = max(1, cfg.gnn.layers_post_mp)
    width = cfg.head.width
    if width == 'auto':
        width = 'halving' if level == 'graph' else 'constant'
    return dict(num_layers=layers, width=width, act=cfg.head.act,
                dropout=cfg.head.dropout, bias=cfg.head.bias,
                input_dropout=cfg.head.input_dropout)


def pool_name(cfg) -> str:
    """``head.pool``, with ``'default'`` meaning GraphGym's ``model.graph_pooling``."""
    return cfg.model.graph_pooling if cfg.head.pool == 'default' else cfg.head.pool


def align_target(y: Tensor, rows: int, task_type: str, num_outputs: int,
                 what: str = 'graph') -> Tensor:
    r"""Reshape a collated target to the shape the losses expect.

    - multi-class classification (``task_type == 'classification'`` and
      ``num_outputs > 1``): ``[rows]`` class indices (``[rows, 1]`` accepted);
    - otherwise (regression, binary or multi-label classification):
      ``[rows, num_outputs]`` (ZINC's ``[B]`` becomes ``[B, 1]``).
    """
    if y is None:
        raise ValueError(f'the batch has no target y; the {what} head needs one')
    if task_type == 'classification' and num_outputs > 1:
        if y.numel() != rows:
            raise ValueError(
                f'{what} target y of shape {tuple(y.shape)} does not hold one '
                f'class index per {what} ({rows}); check dataset.task_type / '
                'task.num_outputs')
        return y.reshape(rows)
    if y.numel() != rows * num_outputs:
        raise ValueError(
            f'{what} target y of shape {tuple(y.shape)} does not hold '
            f'{num_outputs} value(s) per {what} ({rows} {what}s); check '
            'task.num_outputs / dataset.task_type')
    return y.reshape(rows, num_outputs)


__all__ = ['HeadMLP', 'POOLS', 'resolve_pool', 'mlp_kwargs', 'pool_name',
           'align_target']
