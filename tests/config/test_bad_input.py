"""Every bad input a user can give at start, and the answer it must get.

One table: a config file (``None`` = ``configs/quickstart.yaml``; text = a
file written for the case, named by ``FILES``), ``KEY VALUE`` overrides and
the fragments the :class:`ConfigError` message must hold (the key, the bad
value, what to change). Each row runs in-process through
:func:`load_cfg` (before any data is read); a few run through ``main.py`` to
check the exit code 2, that no traceback is printed and that no run folder
is written. The checks that need the dataset's task (losses and metrics that
do not fit it) run at start where the task table knows the dataset, else in
:func:`finalize_cfg` (:data:`LATE`).
"""
import os
import subprocess
import sys

import pytest
import torch

from graphgps_ext.config import ConfigError
from graphgps_ext.runs.config import default_cfg, finalize_cfg, load_cfg
from graphgps_ext.task import TaskInfo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUICKSTART = os.path.join(ROOT, 'configs', 'quickstart.yaml')
GEA = ['gt.layer_type', 'GCN+Transformer+GEANet']
CSA = ['gt.layer_type', 'None+CSA+None']
MNA = ['gt.layer_type', 'None+MNA+None']
GT = ['gt.layer_type', 'None+GT+None']
RWSE = ['posenc_RWSE.enable', 'True']

# name -> file content (bytes or text) written to tmp_path / name.
FILES = {
    'evil.py': "open('PWNED', 'w').write('code ran')\ncfg = None\n",
    'evil.yaml': "gt: !!python/object/apply:os.system ['touch PWNED']\n",
    'empty.yaml': '',
    'comments.yaml': '# nothing but a comment\n',
    'braces.yaml': '{}\n',
    'list.yaml': '- gt\n- optim\n',
    'scalar.yaml': 'hello\n',
    'syntax.yaml': 'gt:\n  layers: 3\n dim_hidden: 4\n',
    'unknown.yaml': 'gt:\n  layer: 3\n',
    'badtype.yaml': 'gt:\n  layers: two\n',
    'binary.yaml': b'\xff\xfe\x00garbage\x00',
    'quickstart.txt': 'gt:\n  layers: 2\n',
    'adir.yaml/': None,
    'groupscalar.yaml': 'gt: 3\n',
    'date.yaml': 'run_name: 2024-01-01\n',
    'slots.yaml': ('gt:\n  layer_type: GCN+Transformer+GEANet\n  dim_hidden: 64\n'
                   'gea:\n  num_slots: 32\n  parity_slots_eq_head_dim: true\n'),
    'graphgym.yaml': 'gnn:\n  layers_mp: 4\n',
    'split-nan.yaml': 'dataset:\n  split: [0.8, .nan, 0.1]\n',
    'rwse-walks.yaml': ('posenc_RWSE:\n  enable: true\n  kernel:\n    times: ['
                        + ', '.join(map(str, range(1, 1_502))) + ']\n'),
    # Keys given twice: YAML keeps the last silently.
    'dup-group.yaml': ('optim:\n  base_lr: 0.003\n  optimizer: adamW\ngt:\n  layers: 2\n'
                       'optim:\n  max_epoch: 3\n'),
    'dup-key.yaml': 'gt:\n  layers: 2\n  dim_hidden: 16\n  layers: 3\n',
    'dup-deep.yaml': ('posenc_LapPE:\n  eigen:\n    max_freqs: 4\n    laplacian_norm: none\n'
                      '    max_freqs: 8\n'),
    'dup-flow.yaml': 'gt: {layers: 2, layers: 3}\n',
    'dup-top-scalar.yaml': 'run_name: a\nseed: 1\nrun_name: b\n',
    # Aliases: bounded expansion, no recursion.
    'laughs.yaml': ''.join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9) if p else ', '.join(['lol'] * 9)}]\n"
        for p, c in zip([''] + list('abcdefgh'), 'abcdefghi')),
    'recursive.yaml': 'gt: &a\n  x: *a\n',
    'deep.yaml': 'gt: ' + '[' * 100 + ']' * 100 + '\n',
    'two-part.yaml': 'gt:\n  layer_type: GCN+Transformer\n',
}

# (id, config file, overrides, fragments of the message)
CASES = [
    # ---- the config file: YAML only, never code, never empty ------------------
    ('cfg-python-file', 'evil.py', [], ['evil.py', 'is not a YAML file', '.yaml or .yml']),
    ('cfg-python-yaml-tag', 'evil.yaml', [], ['evil.yaml', 'is not valid YAML (line 1',
                                              'python/object/apply']),
    ('cfg-empty', 'empty.yaml', [], ['empty.yaml', 'is empty', 'package defaults']),
    ('cfg-comments-only', 'comments.yaml', [], ['is empty']),
    ('cfg-empty-mapping', 'braces.yaml', [], ['is empty']),
    ('cfg-list', 'list.yaml', [], ['must be a mapping', 'not a list']),
    ('cfg-scalar', 'scalar.yaml', [], ['must be a mapping', 'not a str']),
    ('cfg-syntax', 'syntax.yaml', [], ['syntax.yaml', 'is not valid YAML (line 3']),
    ('cfg-unknown-key', 'unknown.yaml', [], ["unknown config key 'gt.layer'",
                                             "did you mean 'gt.layers'"]),
    ('cfg-bad-type', 'badtype.yaml', [], ["bad value 'two' for 'gt.layers'",
                                          'badtype.yaml', 'expected an integer']),
    ('cfg-binary', 'binary.yaml', [], ['binary.yaml', 'is not UTF-8']),
    ('cfg-txt-extension', 'quickstart.txt', [], ['is not a YAML file']),
    ('cfg-missing', 'missing.yaml', [], ['missing.yaml', 'does not exist']),
    ('cfg-directory', 'adir.yaml/', [], ['is a directory']),
    ('cfg-group-as-value', 'groupscalar.yaml', [], ["'gt'", 'is a group of keys']),
    ('cfg-date-value', 'date.yaml', [], ["'run_name'", 'expected a string']),
    ('cfg-ineffective-in-file', 'slots.yaml', [],
     ["'gea.num_slots' = 32", 'slots.yaml', 'gea.parity_slots_eq_head_dim is True',
      'the run uses 16']),
    ('cfg-graphgym-key-in-file', 'graphgym.yaml', [],
     ["'gnn.layers_mp'", 'graphgym.yaml', 'does not read', "use 'gt.layers'"]),
    ('cfg-duplicate-group', 'dup-group.yaml', [],
     ['dup-group.yaml', "key 'optim' is given twice (lines 1 and 6)", 'merge the two']),
    ('cfg-duplicate-key', 'dup-key.yaml', [], ["key 'gt.layers' is given twice (lines 2 and 4)"]),
    ('cfg-duplicate-deep', 'dup-deep.yaml', [],
     ["key 'posenc_LapPE.eigen.max_freqs' is given twice (lines 3 and 5)"]),
    ('cfg-duplicate-flow', 'dup-flow.yaml', [], ["key 'gt.layers' is given twice (line 1)"]),
    ('cfg-duplicate-top-key', 'dup-top-scalar.yaml', [],
     ["key 'run_name' is given twice (lines 1 and 3)"]),
    ('cfg-alias-bomb', 'laughs.yaml', [], ['laughs.yaml', 'is refused', 'aliases expand to more '
                                           'than 100,000 values']),
    ('cfg-alias-recursive', 'recursive.yaml', [], ['anchored at line 1', 'recursive alias']),
    ('cfg-too-deep', 'deep.yaml', [], ['nests deeper than 64 levels']),
    # ---- command line ---------------------------------------------------------
    ('odd-overrides', None, ['optim.max_epoch'], ['KEY VALUE pairs']),
    ('unknown-key', None, ['optim.base_rl', '0.1'],
     ["unknown config key 'optim.base_rl' on the command line",
      "did you mean 'optim.base_lr'"]),
    ('unknown-key-case', None, ['optim.Base_LR', '0.1'], ["did you mean 'optim.base_lr'"]),
    ('unknown-keys-all-at-once', 'unknown.yaml', ['optim.base_rl', '0.1', 'gt.layerz', '3'],
     ['3 problems:', "  - unknown config key 'gt.layer' in ",
      "  - unknown config key 'optim.base_rl' on the command line",
      "  - unknown config key 'gt.layerz' on the command line; did you mean 'gt.layers'"]),
    ('type-float-for-int', None, ['gt.layers', '2.5'],
     ["bad value 2.5 for 'gt.layers' (on the command line)", 'expected an integer']),
    ('type-str-for-float', None, ['optim.base_lr', 'fast'],
     ["bad value 'fast' for 'optim.base_lr'", 'expected a number']),
    ('type-str-for-int', None, ['seed', 'abc'], ["'seed'", 'expected an integer']),
    ('type-int-for-bool', None, ['gt.ffn', '1'], ["'gt.ffn'", 'expected a boolean']),
    ('type-list-for-str', None, ['gt.norm', '[1]'], ["'gt.norm'", 'expected a string']),
    # ---- probabilities in [0, 1) ----------------------------------------------
    ('attn-dropout-2', None, ['gt.attn_dropout', '2.0'],
     ["bad value 2.0 for 'gt.attn_dropout' (on the command line)",
      'a probability in [0, 1)']),
    ('attn-dropout-1', None, ['gt.attn_dropout', '1.0'], ["'gt.attn_dropout'", '[0, 1)']),
    ('dropout-negative', None, ['gt.dropout', '-0.1'], ["'gt.dropout'", '[0, 1)']),
    ('dropout-1', None, ['gt.dropout', '1'], ["bad value 1.0 for 'gt.dropout'"]),
    ('head-dropout', None, ['head.dropout', '1.5'], ["'head.dropout'", '[0, 1)']),
    ('graphgym-dropout', None, ['gnn.dropout', '0.5'],
     ["'gnn.dropout'", 'GraphGym key', "use 'gt.dropout'"]),
    # ---- positive counts and sizes --------------------------------------------
    ('layers-0', None, ['gt.layers', '0'], ["bad value 0 for 'gt.layers'", 'must be >= 1']),
    ('layers-negative', None, ['gt.layers', '-1'], ["bad value -1 for 'gt.layers'"]),
    ('dim-hidden-0', None, ['gt.dim_hidden', '0'], ["'gt.dim_hidden'", '>= 1']),
    ('heads-0', None, ['gt.n_heads', '0'], ["bad value 0 for 'gt.n_heads'"]),
    ('ffn-mult-0', None, ['gt.ffn_mult', '0'], ["bad value 0.0 for 'gt.ffn_mult'",
                                                'must be positive']),
    ('max-epoch-0', None, ['optim.max_epoch', '0'], ["bad value 0 for 'optim.max_epoch'"]),
    ('max-epoch-negative', None, ['optim.max_epoch', '-3'], ["'optim.max_epoch'"]),
    ('batch-size-0', None, ['train.batch_size', '0'], ["bad value 0 for 'train.batch_size'"]),
    ('batch-size-negative', None, ['train.batch_size', '-8'], ["'train.batch_size'"]),
    ('eval-period-0', None, ['train.eval_period', '0'], ["'train.eval_period'", '>= 1']),
    ('base-lr-0', None, ['optim.base_lr', '0'], ["bad value 0.0 for 'optim.base_lr'"]),
    ('base-lr-negative', None, ['optim.base_lr', '-0.001'], ["'optim.base_lr'"]),
    ('base-lr-inf', None, ['optim.base_lr', '1e999'],
     ["bad value inf for 'optim.base_lr'", 'a finite number']),
    ('base-lr-nan', None, ['optim.base_lr', "float('nan')"], ["'optim.base_lr'"]),
    ('weight-decay-negative', None, ['optim.weight_decay', '-1'],
     ["'optim.weight_decay'", '>= 0']),
    ('warmup-negative', None, ['optim.num_warmup_epochs', '-1'],
     ["'optim.num_warmup_epochs'", '>= 0']),
    ('clip-value-0', None, ['optim.clip_grad_norm', 'True', 'optim.clip_grad_norm_value', '0'],
     ["'optim.clip_grad_norm_value'", 'positive']),
    ('reduce-factor', None, ['optim.scheduler', 'reduce_on_plateau',
                             'optim.reduce_factor', '1.5'], ["'optim.reduce_factor'", '(0, 1)']),
    ('seed-negative', None, ['seed', '-1'], ["'seed'", 'NumPy seed']),
    ('max-graphs-negative', None, ['dataset.max_graphs', '-5'], ["'dataset.max_graphs'"]),
    ('tree-depth-1', None, ['dataset.tree_depth', '1'], ["'dataset.tree_depth'", '2..8']),
    ('head-layers-0', None, ['head.layers', '0'], ["'head.layers'", '-1 (= gnn.layers_post_mp)']),
    ('gea-heads-0', None, GEA + ['gea.n_heads', '0'], ["'gea.n_heads'"]),
    ('gea-slots-0', None, GEA + ['gea.num_slots', '0'], ["'gea.num_slots'"]),
    ('mna-hops-negative', None, MNA + ['mna.hops', '-1'], ["'mna.hops'", '>= 0']),
    ('mna-head-dim-negative', None, MNA + ['mna.head_dim', '-4'], ["'mna.head_dim'"]),
    ('rwse-dim-pe-0', None, RWSE + ['posenc_RWSE.dim_pe', '0'], ["'posenc_RWSE.dim_pe'"]),
    ('lappe-max-freqs-0', None, ['posenc_LapPE.enable', 'True',
                                 'posenc_LapPE.eigen.max_freqs', '0'],
     ["'posenc_LapPE.eigen.max_freqs'"]),
    # ---- heads divide widths, and other rules across keys -----------------------
    ('heads-divide-transformer', None, ['gt.n_heads', '3'],
     ['gt.n_heads 3 does not divide gt.dim_hidden 32', 'Transformer', '[1, 2, 4, 8, 16, 32]']),
    ('heads-divide-csa', None, CSA + ['gt.n_heads', '5'], ['gt.n_heads 5', 'CSA']),
    ('heads-divide-gt', None, GT + ['gt.n_heads', '6'], ['gt.n_heads 6', 'GT']),
    ('heads-divide-mna', None, MNA + ['gt.n_heads', '3'], ['gt.n_heads 3', 'MNA']),
    ('heads-divide-gea', None, GEA + ['gea.n_heads', '3'],
     ['gea.n_heads 3 does not divide gt.dim_hidden 32', 'GEANet']),
    ('heads-divide-lappe', None, ['posenc_LapPE.enable', 'True', 'posenc_LapPE.model',
                                  'Transformer', 'posenc_LapPE.n_heads', '3'],
     ['posenc_LapPE.n_heads 3', 'posenc_LapPE.dim_pe']),
    ('no-branch', None, ['gt.layer_type', 'None+None+None'], ['has no branch']),
    ('gea-no-unit', None, GEA + ['gea.node_unit', 'False', 'gea.edge_unit', 'False'],
     ['gea.node_unit and gea.edge_unit are both False']),
    ('pe-wider-than-hidden', None, RWSE + ['posenc_RWSE.dim_pe', '32'],
     ['posenc_RWSE.dim_pe = 32', 'gt.dim_hidden 32']),
    ('rwse-times-func', None, RWSE + ['posenc_RWSE.kernel.times_func', 'range(1,'],
     ['posenc_RWSE.kernel', "'range(1, 21)'"]),
    ('rwse-times-0', None, RWSE + ['posenc_RWSE.kernel.times_func', 'range(0, 4)'],
     ['posenc_RWSE.kernel', '>= 1']),
    ('split-two-parts', None, ['dataset.split', '[0.5, 0.5]'], ['dataset.split', 'three']),
    ('split-not-summing-to-1', None, ['dataset.split', '[0.8, 0.8, 0.8]'],
     ['dataset.split [0.8, 0.8, 0.8] sums to 2.4, not 1', 'not rescaled']),
    ('split-short-of-1', None, ['dataset.split', '[0.5, 0.2, 0.2]'],
     ['sums to 0.9, not 1']),
    ('split-zero-val', None, ['dataset.split', '[0.8, 0.0, 0.2]'],
     ['every fraction must be in (0, 1)', 'val is not']),
    ('split-all-train', None, ['dataset.split', '[1.0, 0.0, 0.0]'],
     ['val, test is not']),
    ('split-negative', None, ['dataset.split', '[1.2, -0.1, -0.1]'],
     ['train, val, test is not']),
    ('split-nan', 'split-nan.yaml', [], ['dataset.split must be three finite fractions']),
    ('rwse-too-many-walks', 'rwse-walks.yaml', [],
     ['posenc_RWSE.kernel gives 1,501 walk lengths', 'at most 1,000']),
    ('rwse-too-long-walk', None, RWSE + ['posenc_RWSE.kernel.times', '[1, 2, 50000]'],
     ['walk lengths up to 50,000']),
    ('global-batch-and-lr-scaling', None, ['train.batch_size_global', '64',
                                           'optim.lr_scaling', 'linear'],
     ['train.batch_size_global', "optim.lr_scaling must be 'none'"]),
    # ---- keys made ineffective by another key -----------------------------------
    ('slots-with-parity', None, GEA + ['gea.parity_slots_eq_head_dim', 'True',
                                       'gea.num_slots', '32'],
     ["'gea.num_slots' = 32 (on the command line) has no effect",
      'gea.parity_slots_eq_head_dim is True', 'the run uses 8',
      'set gea.parity_slots_eq_head_dim False']),
    ('gea-key-without-gea', None, ['gea.num_slots', '32'],
     ["'gea.num_slots' = 32 (on the command line) has no effect", 'no GEANet branch']),
    ('shared-width-without-shared', None, GEA + ['gea.shared_unit', 'False',
                                                 'gea.shared_width', 'head'],
     ["'gea.shared_width'", 'gea.shared_unit is False']),
    ('edge-norm-without-edge-unit', None, GEA + ['gea.edge_unit', 'False',
                                                 'gea.edge_norm', 'layer'],
     ["'gea.edge_norm'", 'gea.edge_unit is False']),
    ('csa-edge-bias-without-sharing', None, CSA + ['csa.parity_edge_bias', 'True'],
     ["'csa.parity_edge_bias'", 'csa.share_edge_params is False']),
    ('csa-key-without-csa', None, ['csa.mono', 'True'], ["'csa.mono'", 'no CSA branch']),
    ('gt-no-eps-without-clamp', None, GT + ['gtlayer.parity_no_eps', 'True'],
     ["'gtlayer.parity_no_eps'", 'gtlayer.parity_clamp_exp']),
    ('mna-fusion-act-without-adaptive', None, MNA + ['mna.fusion', 'sum',
                                                     'mna.fusion_act', 'relu'],
     ["'mna.fusion_act'", "mna.fusion is 'sum'"]),
    ('gt-heads-without-attention', None, ['gt.layer_type', 'GCN+None+GEANet',
                                          'gt.n_heads', '8'],
     ["'gt.n_heads' = 8", 'no attention branch', 'gea.n_heads']),
    ('ffn-mult-without-ffn', None, ['gt.ffn', 'False', 'gt.ffn_mult', '4'],
     ["'gt.ffn_mult'", 'gt.ffn is False']),
    ('dim-inner', None, ['gnn.dim_inner', '128'],
     ["'gnn.dim_inner' = 128", 'gt.dim_hidden', 'the run uses 32']),
    ('momentum-with-adamw', None, ['optim.momentum', '0.5'],
     ["'optim.momentum'", "optim.optimizer is 'adamW'"]),
    ('warmup-with-cos', None, ['optim.scheduler', 'cos', 'optim.num_warmup_epochs', '5'],
     ["'optim.num_warmup_epochs'", "optim.scheduler is 'cos'"]),
    ('clip-value-without-clip', None, ['optim.clip_grad_norm_value', '3'],
     ["'optim.clip_grad_norm_value' = 3.0", 'optim.clip_grad_norm is False']),
    ('pe-enable-not-named', None, RWSE + ['dataset.node_encoder', 'True',
                                          'dataset.node_encoder_name', 'MultiTypeNode'],
     ["'posenc_RWSE.enable' = True", "dataset.node_encoder_name 'MultiTypeNode'"]),
    ('post-mp-with-head-layers', None, ['head.layers', '2', 'gnn.layers_post_mp', '3'],
     ["'gnn.layers_post_mp'", 'head.layers is 2']),
    ('pooling-with-head-pool', None, ['head.pool', 'mean', 'model.graph_pooling', 'max'],
     ["'model.graph_pooling'", "head.pool is 'mean'"]),
    ('compile-mode-without-compile', None, ['train.compile_mode', 'max-autotune'],
     ["'train.compile_mode'", 'train.compile is False']),
    ('node-encoder-name-without-node-encoder', None,
     ['dataset.node_encoder_name', 'Atom+RWSE'],
     ["'dataset.node_encoder_name' = 'Atom+RWSE'", 'dataset.node_encoder is False',
      'set dataset.node_encoder True']),
    ('graphgym-layers-mp', None, ['gnn.layers_mp', '6'],
     ["'gnn.layers_mp' (on the command line) is a GraphGym key", "use 'gt.layers'"]),
    ('graphgym-batchnorm', None, ['gnn.batchnorm', 'False'], ["'gnn.batchnorm'", 'gt.norm']),
    ('graphgym-transform', None, ['dataset.transform', 'ego'],
     ["'dataset.transform'", 'remove it']),
    # ---- names: choices offer only what works; suggestions ignore case ----------
    ('head-node', None, ['gnn.head', 'node'],
     ["gnn.head 'node' is a GraphGym built-in head", "did you mean 'inductive_node'",
      'graph_mlp']),
    ('head-graph', None, ['gnn.head', 'graph'], ["'graph'", "did you mean 'graph_mlp'"]),
    ('head-typo', None, ['gnn.head', 'nodee'],
     ["unknown head 'nodee' (gnn.head); did you mean 'inductive_node'"]),
    ('head-typo-2', None, ['gnn.head', 'graph_mpl'], ["did you mean 'graph_mlp'"]),
    ('optimizer-adamw', None, ['optim.optimizer', 'adamw'],
     ["bad value 'adamw' for 'optim.optimizer'", "did you mean 'adamW'"]),
    ('optimizer-Adam', None, ['optim.optimizer', 'Adam'], ["did you mean 'adam'"]),
    ('scheduler-cosine', None, ['optim.scheduler', 'cosine'],
     ["bad value 'cosine' for 'optim.scheduler'", "'cosine_with_warmup'"]),
    ('norm-Batch', None, ['gt.norm', 'Batch'], ["did you mean 'batch'"]),
    ('wandb-mode', None, ['wandb.mode', 'off'], ["bad value 'off' for 'wandb.mode'"]),
    ('loss-unknown', None, ['model.loss_fun', 'l2'],
     ["bad value 'l2' for 'model.loss_fun'", "'cross_entropy'"]),
    ('metrics-unknown', None, ['dataset.metrics', "['accuracy', 'f1']"],
     ["bad value 'f1' for 'dataset.metrics'", "did you mean 'f1_macro'"]),
    ('metric-unknown', None, ['metric_best', 'acc'],
     ["bad value 'acc' for 'metric_best'", "did you mean 'accuracy'"]),
    ('model-graphgym', None, ['model.type', 'gnn'],
     ["unknown network 'gnn' (model.type)", 'Valid: GPSModel']),
    ('layer-type-two-parts', None, ['gt.layer_type', 'GCN+Transformer'],
     ['three', '<local>+<global>+<external>']),
    ('layer-type-case', None, ['gt.layer_type', 'gcn+Transformer+None'],
     ["unknown local branch 'gcn'", "did you mean 'GCN'"]),
    ('layer-type-graphgym', None, ['gt.layer_type', 'gcnconv+Transformer+None'],
     ["unknown local branch 'gcnconv'", 'Valid: CSA, GCN']),
    ('layer-type-typo', None, ['gt.layer_type', 'GCN+Transformr+None'],
     ["unknown global branch 'Transformr'", "did you mean 'Transformer'"]),
    ('format-case', None, ['dataset.format', 'pyg-zinc'], ["did you mean 'PyG-ZINC'"]),
    ('dataset-name', None, ['dataset.name', 'TreeNeighbor'],
     ["unknown dataset.name 'TreeNeighbor'", "did you mean 'TreeNeighbourMatch'"]),
    ('dataset-name-zinc', None, ['dataset.format', 'PyG-ZINC', 'dataset.name', 'Subset'],
     ["unknown dataset.name 'Subset'", "did you mean 'subset'"]),
    ('node-encoder', None, ['dataset.node_encoder', 'True', 'dataset.node_encoder_name', 'Atomm'],
     ["unknown node encoder 'Atomm'", "did you mean 'Atom'"]),
    ('node-encoder-two-types', None, ['dataset.node_encoder', 'True',
                                      'dataset.node_encoder_name', 'Atom+TypeDictNode'],
     ['several type encoders']),
    ('edge-encoder', None, ['dataset.edge_encoder', 'True', 'dataset.edge_encoder_name', 'bond'],
     ["unknown edge encoder 'bond'", "did you mean 'Bond'"]),
    ('accelerator', None, ['accelerator', 'tpu'], ["bad value 'tpu' for 'accelerator'"]),
    # ---- sizes: sane upper bounds, the key named --------------------------------
    ('layers-huge', None, ['gt.layers', '1000000000000'],
     ["bad value 1000000000000 for 'gt.layers' (on the command line)", 'at most 1,000']),
    ('dim-hidden-huge', None, ['gt.dim_hidden', '1048576', 'gt.n_heads', '1'],
     ["'gt.dim_hidden'", 'at most 65,536']),
    ('heads-huge', None, ['gt.n_heads', '4096'], ["'gt.n_heads'", 'at most 1,024']),
    ('batch-size-huge', None, ['train.batch_size', '100000000000'],
     ["'train.batch_size'", 'at most 10,000,000']),
    ('max-epoch-huge', None, ['optim.max_epoch', '10000000000'], ["'optim.max_epoch'"]),
    ('ffn-mult-huge', None, ['gt.ffn_mult', '1e9'], ["'gt.ffn_mult'", 'at most 64']),
    ('gea-slots-huge', None, GEA + ['gea.num_slots', '10000000'], ["'gea.num_slots'"]),
    ('rwse-dim-huge', None, RWSE + ['posenc_RWSE.dim_pe', '10000000'], ["'posenc_RWSE.dim_pe'"]),
    ('lappe-freqs-huge', None, ['posenc_LapPE.enable', 'True',
                                'posenc_LapPE.eigen.max_freqs', '100000000'],
     ["'posenc_LapPE.eigen.max_freqs'"]),
    ('rwse-times-huge', None, RWSE + ['posenc_RWSE.kernel.times_func', 'range(1, 10000000000)'],
     ['posenc_RWSE.kernel', 'walk lengths; at most 1,000']),
    ('head-layers-huge', None, ['head.layers', '100000'], ["'head.layers'", 'at most 100']),
    ('mna-hops-huge', None, MNA + ['mna.hops', '100000'], ["'mna.hops'", 'at most 64']),
    ('run-name', None, ['run_name', 'a/b'], ['plain folder name']),
    ('layer-type-two-parts-in-file', 'two-part.yaml', [],
     ["gt.layer_type 'GCN+Transformer' has two parts", "'GCN+Transformer+None'"]),
    # ---- paths: usable folders, checked at start ----------------------------------
    ('run-name-newline', None, ['run_name', 'a\nb'], ["run_name 'a\\nb'", 'no newline']),
    ('run-name-too-long', None, ['run_name', 'x' * 300],
     ['run_name is 300 bytes long', 'at most 255']),
    ('out-dir-empty', None, ['out_dir', "''"], ['out_dir is empty', 'working directory']),
    ('dataset-dir-empty', None, ['dataset.dir', "''"], ['dataset.dir is empty']),
    ('out-dir-is-a-file', None, ['out_dir', 'afile'], ["out_dir 'afile' is a file"]),
    ('out-dir-below-a-file', None, ['out_dir', 'afile/results'],
     ["out_dir 'afile/results' lies below the file"]),
    ('dataset-dir-is-a-file', None, ['dataset.dir', 'afile'],
     ["dataset.dir 'afile' is a file", 'ZINC/raw/']),
    ('branch-dropout-range', None, ['gt.dropout_global', '1.5'],
     ['gt.dropout_global 1.5', 'a probability in [0, 1), or -1 for gt.dropout']),
    ('graph-norm-on-gt-edges', None, GT + ['gtlayer.edge_features', 'True',
                                           'gt.norm', 'graphnorm'],
     ["gt.norm 'graphnorm'", 'gtlayer.edge_features True', 'set gt.norm batch or layer']),
    ('head-input-dropout-range', None, ['head.input_dropout', '1.0'],
     ['head.input_dropout']),
]

# (id, overrides, fragments): losses and metrics must fit the dataset's task,
# known at start for the datasets of the task table (here the quickstart's
# TreeNeighbourMatch, a classification) ...
CASES += [
    ('metric-mae-on-classes', None, ['metric_best', 'mae'],
     ["metric_best 'mae' does not fit TreeNeighbourMatch's classification task",
      'accuracy']),
    ('loss-l1-on-classes', None, ['model.loss_fun', 'l1'],
     ["model.loss_fun 'l1' does not fit", 'cross_entropy']),
    ('metrics-mae-on-classes', None, ['dataset.metrics', "['accuracy', 'mae']"],
     ["dataset.metrics 'mae' does not fit"]),
    ('loss-ce-on-regression', None, ['dataset.format', 'PyG-ZINC', 'dataset.name', 'subset',
                                     'model.loss_fun', 'cross_entropy'],
     ["model.loss_fun 'cross_entropy' does not fit subset's regression task (1 outputs)",
      'l1, mse']),
]
# ... and once the data is read otherwise (an OGB dataset outside the table).
MOLHIV = ['dataset.format', 'OGB', 'dataset.name', 'ogbg-molhiv', 'metric_best', 'auto']
HIV = TaskInfo(name='ogbg-molhiv', task='graph', task_type='classification_multilabel',
               num_outputs=1, loss='bce', metric='auroc', metric_direction='max',
               metrics=['auroc'])
LATE = [
    ('metric-mae-on-labels', ['metric_best', 'mae'],
     ["metric_best 'mae' does not fit ogbg-molhiv's classification_multilabel task "
      '(1 outputs)', 'ap, auroc']),
    ('loss-ce-on-labels', ['model.loss_fun', 'cross_entropy'],
     ["model.loss_fun 'cross_entropy' does not fit", 'bce']),
    ('metrics-accuracy-on-labels', ['dataset.metrics', "['accuracy']"],
     ["dataset.metrics 'accuracy' does not fit"]),
]


def _write(tmp_path, name):
    path = tmp_path / name.rstrip('/')
    content = FILES.get(name)
    if name.endswith('/'):
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    return str(path)


@pytest.mark.parametrize('cfg_file,opts,fragments', [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_gets_a_clear_config_error(tmp_path, monkeypatch, cfg_file, opts,
                                             fragments):
    monkeypatch.chdir(tmp_path)  # a config that ran code would write here
    (tmp_path / 'afile').write_text('a file, not a folder\n')
    path = QUICKSTART if cfg_file is None else _write(tmp_path, cfg_file)
    with pytest.raises(ConfigError) as err:
        load_cfg(path, opts)
    message = str(err.value)
    for fragment in fragments:
        assert fragment in message, f'{fragment!r} not in: {message}'
    assert not (tmp_path / 'PWNED').exists()


@pytest.mark.parametrize('opts,fragments', [c[1:] for c in LATE],
                         ids=[c[0] for c in LATE])
def test_loss_and_metrics_must_fit_the_task_once_known(opts, fragments):
    import copy
    cfg = load_cfg(QUICKSTART, MOLHIV + opts)
    with pytest.raises(ConfigError) as err:
        finalize_cfg(cfg, copy.deepcopy(HIV))
    for fragment in fragments:
        assert fragment in str(err.value)


def test_every_declared_range_is_enforced():
    """Beyond the table: each key with a declared range, given a value
    outside it, gets an error naming the key."""
    from graphgps_ext import config
    defaults = default_cfg()
    checked = 0
    for key, test, requirement in config.declarations().bounds:
        default = config.get_key(defaults, key)
        kind = type(default)
        bad = next(v for v in (-2, -1, 0, 1, 1.5, 9, 2 ** 32, 10 ** 15) if not test(kind(v)))
        with pytest.raises(ConfigError) as err:
            load_cfg(QUICKSTART, [key, str(kind(bad))])
        assert f"for '{key}'" in str(err.value) and requirement.split()[0] in \
            str(err.value).replace('>= 1', 'positive'), str(err.value)
        checked += 1
    assert checked >= 40


def test_good_inputs_still_load(tmp_path):
    """What the checks must not refuse: an int for a float key, the shipped
    quickstart, a resolved config.yaml written by a run, and a file whose
    options of an unselected branch only get a warning."""
    cfg = load_cfg(QUICKSTART, ['optim.base_lr', '1', 'gt.dropout', '0'])
    assert cfg.optim.base_lr == 1.0 and isinstance(cfg.optim.base_lr, float)
    dumped = tmp_path / 'config.yaml'
    dumped.write_text(load_cfg(QUICKSTART, ['gt.layer_type', 'GCN+Transformer+GEANet',
                                            'gea.parity_slots_eq_head_dim', 'True',
                                            'gt.dim_hidden', '64']).dump())
    again = load_cfg(str(dumped))
    assert again.gea.parity_slots_eq_head_dim and again.gt.dim_hidden == 64
    # A file with GEANet options; the command line drops the branch (an
    # ablation): a warning naming both keys, not an error.
    path = tmp_path / 'ablation.yaml'
    path.write_text('gt:\n  layer_type: GCN+Transformer+GEANet\ngea:\n  num_slots: 8\n')
    cfg = load_cfg(str(path), ['gt.layer_type', 'GCN+Transformer+None'])
    from graphgps_ext.config import config_warnings
    warnings = config_warnings(cfg, default_cfg())
    assert any("'gea.num_slots' = 8 has no effect" in w and 'no GEANet branch' in w
               for w in warnings), warnings


def test_a_run_shorter_than_its_warmup_is_warned_at_start(caplog):
    cfg = load_cfg(QUICKSTART, MOLHIV + ['optim.max_epoch', '2', 'optim.num_warmup_epochs',
                                         '50', 'optim.base_lr', '0.001'])
    with caplog.at_level('WARNING', logger='graphgps_ext'):
        finalize_cfg(cfg, HIV)
    text = caplog.text
    assert 'optim.max_epoch 2 <= optim.num_warmup_epochs 50' in text
    assert 'never leaves the linear warm-up' in text
    assert '1e-09' in text
    assert 'For a short trial add `optim.num_warmup_epochs 0` to the command line' in text
    caplog.clear()
    cfg = load_cfg(QUICKSTART, MOLHIV + ['optim.max_epoch', '20',
                                         'optim.num_warmup_epochs', '2'])
    with caplog.at_level('WARNING', logger='graphgps_ext'):
        finalize_cfg(cfg, HIV)
    assert 'warm-up' not in caplog.text
    # The Transformer schedule reaches base_lr at epoch W - 1 (train/optim.py).
    caplog.clear()
    short = ['optim.scheduler', 'transformer_warmup', 'optim.base_lr', '0.001',
             'optim.num_warmup_epochs', '10']
    cfg = load_cfg(QUICKSTART, MOLHIV + short + ['optim.max_epoch', '5'])
    with caplog.at_level('WARNING', logger='graphgps_ext'):
        finalize_cfg(cfg, HIV)
    assert 'optim.max_epoch 5 < optim.num_warmup_epochs 10' in caplog.text
    assert 'goes from 0.0001 to 0.0005' in caplog.text
    caplog.clear()
    cfg = load_cfg(QUICKSTART, MOLHIV + short + ['optim.max_epoch', '10'])
    with caplog.at_level('WARNING', logger='graphgps_ext'):
        finalize_cfg(cfg, HIV)
    assert 'warm-up' not in caplog.text


def test_warmup_epochs_are_used_by_both_warmup_schedules(tmp_path):
    from graphgps_ext.config import config_warnings
    path = tmp_path / 'warmup.yaml'
    for scheduler, warned in (('cosine_with_warmup', False), ('transformer_warmup', False),
                              ('cos', True), ('none', True)):
        path.write_text(f'optim:\n  scheduler: {scheduler}\n  num_warmup_epochs: 10\n')
        warnings = config_warnings(load_cfg(str(path), []), default_cfg())
        assert any("'optim.num_warmup_epochs'" in w for w in warnings) == warned, \
            (scheduler, warnings)


def test_branches_are_built_at_start_without_touching_the_rng():
    torch.manual_seed(0)
    before = torch.get_rng_state()
    load_cfg(QUICKSTART, GEA)
    assert torch.equal(before, torch.get_rng_state())


def _main(args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS='1')
    return subprocess.run([sys.executable, os.path.join(ROOT, 'main.py')] + args,
                          capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def _main_here(args, capsys):
    """``main.main(args)`` in this process, as :func:`_main` reports it."""
    import importlib.util
    from types import SimpleNamespace
    spec = importlib.util.spec_from_file_location('main', os.path.join(ROOT, 'main.py'))
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    code = main.main(args)
    out = capsys.readouterr()
    return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


# The file cases and one command line run as a process (what a user sees,
# tracebacks included); the other command lines in this one (an uncaught
# exception fails the test as a traceback would).
@pytest.mark.parametrize('name,opts,fragment,process', [
    ('evil.py', [], 'is not a YAML file', True),
    ('laughs.yaml', [], 'aliases expand to more than', True),
    ('dup-group.yaml', [], "key 'optim' is given twice", True),
    (None, ['gt.layers', '2', 'gt.layers', '3'],
     "config key 'gt.layers' is given twice on the command line ('2' and '3')", True),
    (None, ['--seeds', '0,4294967296'], "bad value 4294967296 for 'seed' (from --seeds)",
     False),
    (None, ['--repeat', '3', 'seed', '4294967294'],
     "bad value 4294967296 for 'seed' (from seed 4294967294 with --repeat 3)", False),
    (None, ['--dry-run', '--seeds', '4294967296'], "for 'seed' (from --seeds)", False),
    (None, ['--dry-run', 'optim.max_epoch', '1', 'optim.max_epoch', '2'], 'given twice',
     False),
    (None, ['--dry-run', 'gt.layers', '1000000000000'], 'at most 1,000', False),
    (None, ['gt.attn_dropout', '2.0', 'optim.max_epoch', '0'],
     "bad value 2.0 for 'gt.attn_dropout'", False),
])
def test_main_exits_2_without_traceback_or_results(tmp_path, capsys, name, opts,
                                                   fragment, process):
    import time
    path = QUICKSTART if name is None else _write(tmp_path, name)
    out = tmp_path / 'results'
    start = time.monotonic()
    args = ['--cfg', path, 'out_dir', str(out)] + opts
    proc = _main(args, tmp_path) if process else _main_here(args, capsys)
    assert proc.returncode == 2, proc.stderr
    assert time.monotonic() - start < 60  # refused at start (an alias bomb: a minute)
    assert 'Traceback' not in proc.stdout + proc.stderr
    assert proc.stderr.startswith('config error: ') and fragment in proc.stderr
    if 'gt.attn_dropout' in opts:
        assert "'optim.max_epoch'" in proc.stderr  # every problem at once
    assert not out.exists() and not (tmp_path / 'PWNED').exists()


def test_wandb_without_its_package_exits_2_naming_the_extra(tmp_path, monkeypatch,
                                                            capsys):
    import importlib.util
    import re
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name, *args: (
        None if name == 'wandb' else real(name, *args)))
    with pytest.raises(ConfigError, match=re.escape('pip install -e ".[wandb]"')):
        load_cfg(QUICKSTART, ['wandb.use', 'True'])
    load_cfg(QUICKSTART, ['wandb.use', 'False'])
    spec = importlib.util.spec_from_file_location('main', os.path.join(ROOT, 'main.py'))
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    out = tmp_path / 'results'
    assert main.main(['--cfg', QUICKSTART, 'out_dir', str(out), 'wandb.use', 'True']) == 2
    err = capsys.readouterr().err
    assert err.startswith('config error: wandb.use is True but the wandb package')
    assert not out.exists()
