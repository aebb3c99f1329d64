"""Config group ``head``: the task heads (:mod:`graphgps_ext.head`).

Which head runs is GraphGym's ``gnn.head`` (``default`` = the dataset's
:attr:`TaskInfo.head <graphgps_ext.task.TaskInfo>`).  Two GraphGym keys
are reused so that GraphGPS configs keep their meaning:

- ``model.graph_pooling`` is the pooling when ``head.pool: default``;
- ``gnn.layers_post_mp`` is the number of Linear layers of the head MLP when
  ``head.layers: -1`` (GraphGym convention: values below 1 mean 1).

Note that GraphGPS's ``san_graph`` head ignores ``gnn.layers_post_mp`` and
always has three Linear layers of halving width; its exact equivalent is
``head.layers: 3, head.width: halving`` (``halving`` is what ``auto`` picks
for the graph heads).
"""
from graphgps_ext.config.rules import at_most, bounded, choices, ignored, positive, probability


def head_cfg(cfg):
    from yacs.config import CfgNode as CN
    cfg.head = CN()
    # Graph pooling of graph_mlp / graph_node_mlp / code2_sequence:
    # default (= model.graph_pooling) | mean | add | max | virtual_node (a
    # node per graph connected to all its nodes, inserted before the first
    # layer; its final state is the graph representation: MNA-GT §4.2).
    cfg.head.pool = 'default'
    # Linear layers of the head MLP (>= 1); -1 = gnn.layers_post_mp.
    cfg.head.layers = -1
    # Hidden widths of the head MLP: halving (d, d/2, d/4, ...: GraphGPS
    # san_graph), constant (d, d, ...: GraphGym MLP), or auto (halving for the
    # graph-level heads, constant for the node-level ones).
    cfg.head.width = 'auto'
    # Activation and dropout after every hidden Linear layer.
    cfg.head.act = 'relu'
    cfg.head.dropout = 0.0
    # Dropout on the head MLP's input (GEAET's mlp_graph drops out the pooled
    # graph representation before its first Linear layer too).
    cfg.head.input_dropout = 0.0
    # Bias of the head's Linear layers (root_node of the bottleneck reference
    # has none: set False).
    cfg.head.bias = True
    # --- inductive_link (PCQM-Contact) ---
    # Pair score from the per-node embeddings h: dot (h_i . h_j) | cosine.
    cfg.head.link_score = 'dot'
    # Training signal:
    #  sampled   positives + link_num_neg negatives per positive drawn among the
    #            non-positive partners of the same head node (LRGB's structured
    #            negative sampling, redrawn every forward), BCE -> loss bce;
    #  labeled   the pairs of edge_label_index with their edge_label (needs
    #            negatives stored in the data), BCE -> loss bce;
    #  all       every ordered pair i != j of each graph, BCE -> loss bce;
    #  query_ce  per positive (i, j), softmax over the graph's nodes with the
    #            other positives of i removed -> loss cross_entropy.
    cfg.head.link_train = 'sampled'
    cfg.head.link_num_neg = 2
    # Ties in the rank metrics: optimistic (rank = 1 + #strictly better, what
    # LRGB's stable argsort gives) | pessimistic (1 + #better-or-equal).
    cfg.head.link_ties = 'optimistic'
    # Also remove the self-pair (i, i) from the filtered candidates and from
    # the sampled/all negatives (Tönshoff et al.'s "extended filter").
    cfg.head.link_filter_self = False


def declare():
    """Declare the checks of the ``head`` keys."""
    choices('head.pool', ['default', 'mean', 'add', 'max', 'virtual_node'])
    choices('head.width', ['auto', 'halving', 'constant'])
    choices('head.act', ['relu', 'gelu', 'elu', 'leaky_relu', 'silu', 'tanh'])
    choices('head.link_score', ['dot', 'cosine'])
    choices('head.link_train', ['sampled', 'labeled', 'all', 'query_ce'])
    choices('head.link_ties', ['optimistic', 'pessimistic'])
    probability('head.dropout', 'head.input_dropout')
    bounded('head.layers', lambda v: v == -1 or v >= 1,
            '-1 (= gnn.layers_post_mp) or >= 1')
    positive('head.link_num_neg')
    at_most(100, 'head.layers', 'gnn.layers_post_mp')
    at_most(10_000, 'head.link_num_neg')
    ignored('gnn.layers_post_mp', unless=lambda cfg: cfg.head.layers == -1,
            why=lambda cfg: f'head.layers is {cfg.head.layers} (gnn.layers_post_mp '
                            'counts the head layers only when head.layers is -1)')
    ignored('model.graph_pooling', unless=lambda cfg: cfg.head.pool == 'default',
            why=lambda cfg: f"head.pool is '{cfg.head.pool}' (model.graph_pooling is "
                            "the pooling only when head.pool is 'default')")
