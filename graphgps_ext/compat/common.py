"""The translation machinery shared by the three sources, and the GraphGym
keys they all read.

:class:`Translator` reads the flat source keys (:meth:`Translator.get`),
writes the flat target keys and one note per translated, defaulted or inert
key. Its rules cover what GraphGPS, GEAET and CSA configs have in common
(GraphGym's dataset, encoder, head, loss, optimiser and training keys, the
GraphGPS layer); each source's module subclasses it with its own tables
(markers, defaults, layer parts) and the rules of its own keys.
"""
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from graphgps_ext.branches import MPNN_OPTIONS
from graphgps_ext.config import ConfigError, closest, unflatten
from graphgps_ext.encodings import parse_times

GRAPHGPS, GEAET, CSA = 'GraphGPS', 'GEAET', 'CSA'

# ------------------------------------------------------------- translation --
@dataclass
class Translation:
    """A foreign config translated to this project's keys.

    Attributes:
        source: ``'GraphGPS'``, ``'GEAET'`` or ``'CSA'``.
        path: the file it was read from (or ``''``).
        config: the translated config, nested ``{group: {key: value}}``.
        notes: one line per translated, defaulted or inert key.
        kept: source keys merged unchanged (GraphGym keys with the same
            meaning here).
    """
    source: str
    path: str
    config: Dict[str, Any]
    notes: List[str] = field(default_factory=list)
    kept: List[str] = field(default_factory=list)


# GraphGym / GraphGPS defaults the sources' code falls back on when a key is
# absent from the file, where this project's default differs or where the
# translation needs the value.
GRAPHGYM_DEFAULTS: Dict[str, Any] = {
    'model.type': 'gnn', 'model.loss_fun': 'cross_entropy',
    'model.graph_pooling': 'add', 'model.edge_decoding': 'dot',
    'dataset.format': 'PyG', 'dataset.name': 'Cora', 'dataset.task': 'node',
    'dataset.task_type': 'classification', 'dataset.node_encoder': False,
    'dataset.node_encoder_name': 'Atom', 'dataset.edge_encoder': False,
    'dataset.edge_encoder_name': 'Bond', 'dataset.slic_compactness': 10,
    'gnn.head': 'default', 'gnn.layers_pre_mp': 0, 'gnn.layers_post_mp': 0,
    'gnn.dim_inner': 16, 'gnn.act': 'relu', 'metric_best': 'auto',
    'gt.layer_type': 'SANLayer', 'gt.layers': 3, 'gt.n_heads': 8,
    'gt.dim_hidden': 64, 'gt.dropout': 0.0, 'gt.attn_dropout': 0.0,
    'gt.layer_norm': False, 'gt.batch_norm': True,
}
for _g in ('posenc_LapPE', 'posenc_RWSE', 'posenc_EquivStableLapPE',
           'posenc_SignNet', 'posenc_HKdiagSE', 'posenc_ElstaticSE'):
    GRAPHGYM_DEFAULTS.update({
        f'{_g}.enable': False, f'{_g}.model': 'none', f'{_g}.dim_pe': 16,
        f'{_g}.layers': 3, f'{_g}.n_heads': 4, f'{_g}.post_layers': 0,
        f'{_g}.raw_norm_type': 'none', f'{_g}.pass_as_var': False,
        f'{_g}.eigen.laplacian_norm': 'sym', f'{_g}.eigen.eigvec_norm': 'L2',
        f'{_g}.eigen.max_freqs': 10, f'{_g}.kernel.times': [],
        f'{_g}.kernel.times_func': ''})

# Keys copied unchanged (GraphGym / GraphGPS keys with the same meaning here).
_SAME = {
    'out_dir', 'seed', 'metric_agg', 'print', 'round', 'num_threads',
    'num_workers', 'train.batch_size', 'train.eval_period',
    'train.auto_resume', 'optim.optimizer', 'optim.base_lr',
    'optim.weight_decay', 'optim.momentum', 'optim.max_epoch', 'optim.steps',
    'optim.lr_decay', 'optim.num_warmup_epochs', 'optim.clip_grad_norm',
    'optim.clip_grad_norm_value', 'optim.reduce_factor',
    'optim.schedule_patience', 'optim.min_lr', 'model.graph_pooling',
    'dataset.dir', 'dataset.split', 'dataset.node_encoder',
    'dataset.node_encoder_bn', 'dataset.edge_encoder',
    'dataset.edge_encoder_bn', 'gt.layers', 'gt.n_heads', 'gt.attn_dropout',
    'wandb.use', 'wandb.project', 'wandb.entity', 'wandb.name',
}

# Keys never read for the models these sources build (GraphGym's own GNN
# stack, loaders and samplers, logging): ``key -> reason``.
_INERT_ALWAYS = {
    'train.mode': "the training loop here is GraphGPS's 'custom' loop",
    'train.ckpt_period': 'checkpoints here are written every epoch '
                         '(ckpt/last.pt) and at the best epoch (ckpt/best.pt)',
    'train.ckpt_best': 'the best epoch is always checkpointed here '
                       '(ckpt/best.pt)',
    'train.enable_ckpt': 'checkpoints are always written here',
    'train.ckpt_clean': 'checkpoints here are ckpt/last.pt and ckpt/best.pt',
    'train.skip_train_eval': 'training metrics come from the training pass',
    'tensorboard_each_run': 'TensorBoard here is tensorboard.use',
    'tensorboard_agg': 'TensorBoard here is tensorboard.use',
    'view_emb': 'not read by the training loop',
    'gpu_mem': 'not read by the training loop',
    'mem.inplace': 'not read by these models',
    'dataset.transductive': 'the datasets of these models are inductive',
    'dataset.resample_negative': 'negatives are redrawn every pass here '
                                 "(head.link_train 'sampled')",
    'dataset.encoder_dim': "GraphGym's encoder keys; this model reads "
                           'dataset.node_encoder_name',
    'dataset.edge_dim': "GraphGym's edge width; edges here have width "
                        'gt.dim_hidden',
    'gnn.agg': "GraphGym's own GNN stack, not built by this model",
    'gnn.normalize_adj': "GraphGym's own GNN stack, not built by this model",
    'gnn.layers_mp': "GraphGym's own GNN stack, not built by this model",
    'gnn.layer_type': "GraphGym's own GNN stack, not built by this model",
    'gnn.stage_type': "GraphGym's own GNN stack, not built by this model",
    'gnn.skip_every': "GraphGym's own GNN stack, not built by this model",
    'gnn.msg_direction': "GraphGym's own GNN stack, not built by this model",
    'gnn.self_msg': "GraphGym's own GNN stack, not built by this model",
    'gnn.att_heads': "GraphGym's own GNN stack, not built by this model",
    'gnn.l2norm': "GraphGym's own GNN stack, not built by this model",
    'gnn.keep_edge': "GraphGym's own GNN stack, not built by this model",
    'gnn.batchnorm': "read by GraphGym's GNN stack and pre-MP layers only; "
                     "GraphGym's head MLPs have no BatchNorm",
    'gnn.dropout': "read by GraphGym's GNN stack and pre-MP layers only; "
                   "GraphGym's head MLPs have no dropout",
    'gt.residual': "GraphGPS's layer always adds its residuals",
    'gt.full_graph': 'read by the SAN model only',
    'gt.gamma': 'read by the SAN model only',
    'model.thresh': 'GraphGym evaluation threshold, not used by these metrics',
    'gnn.residual': "read by GraphGPS's custom_gnn only",
    'train.eval_smoothing_metrics': "GEAET's logger smooths the reported "
                                    'metrics; the results here are per epoch',
}

# The local, global and external models of the sources' layers, and the
# options of this project's branches that make them the sources' modules.
LOCAL_MODELS = {'None': 'None', 'CustomGatedGCN': 'GatedGCN', 'GINE': 'GINE'}
LAYER_PARITY = {
    'gt.pre_norm': False, 'gt.residual': True, 'gt.ffn_mult': 2.0,
    'mpnn.node_norm': 'batch',       # GatedGCNLayer's bn_node_x
    'mpnn.edge_norm': 'batch',       # GatedGCNLayer's bn_edge_e
    'mpnn.gin_mlp': 'graphgps',      # GIN's MLP: Linear-act-Linear
    'mpnn.gin_train_eps': False,     # PyG's GINConv / GINEConv default
}
GLOBAL_MODELS = {'None': 'None', 'Transformer': 'Transformer'}


def layer_parity(local: str) -> dict:
    """:data:`LAYER_PARITY` without the ``mpnn`` options that the local
    branch ``local`` does not read (they would have no effect)."""
    readers = {f'mpnn.{o.name}': o.readers for o in MPNN_OPTIONS.options}
    return {key: value for key, value in LAYER_PARITY.items()
            if not readers.get(key) or local in readers[key]}
_TYPE_NODE = {'TypeDictNode': 'TypeDictNode', 'Atom': 'Atom',
              'LinearNode': 'LinearNode', 'VOCNode': 'LinearNode',
              'COCONode': 'LinearNode', 'ASTNode': 'ASTNode'}
_TYPE_EDGE = {'TypeDictEdge': 'TypeDictEdge', 'Bond': 'Bond',
              'LinearEdge': 'LinearEdge', 'VOCEdge': 'LinearEdge',
              'COCOEdge': 'LinearEdge', 'DummyEdge': 'DummyEdge',
              'ASTEdge': 'LinearEdge'}
_PES = ('LapPE', 'RWSE', 'EquivStableLapPE')
_ACTS = {'relu': 'relu', 'gelu': 'gelu', 'elu': 'elu', 'swish': 'silu',
         'silu': 'silu', 'lrelu_01': 'leaky_relu', 'tanh': 'tanh'}
_METRICS = {'accuracy-SBM': 'accuracy_sbm', 'auc': 'auroc', 'mae': 'mae',
            'mse': 'mse', 'accuracy': 'accuracy', 'ap': 'ap', 'mrr': 'mrr',
            'hits@1': 'hits@1', 'hits@3': 'hits@3', 'hits@10': 'hits@10',
            'auto': 'auto'}
_SCHEDULERS = {'none': 'none', 'step': 'steps', 'cos': 'cos',
               'cosine_with_warmup': 'cosine_with_warmup',
               'reduce_on_plateau': 'reduce_on_plateau'}
_OPTIMIZERS = {'adam': 'adam', 'adamW': 'adamW', 'sgd': 'sgd'}
# GraphGPS formats whose data here is read by another reader.
_LRGB_SUPERPIXELS = {'PyG-VOCSuperpixels': 'PascalVOC-SP',
                     'PyG-COCOSuperpixels': 'COCO-SP'}
_OWN_FORMATS = ('PyG-ZINC', 'PyG-GNNBenchmarkDataset', 'PyG-TUDataset', 'OGB')


def _fmt(value) -> str:
    return str(value) if not isinstance(value, str) or value else "''"


_GRAPHNORM = ('graphnorm', "GraphNorm (GraphGPS's layer: a per-graph norm "
              'with a learned mean scale)')


class Translator:
    """One translation: reads the flat source keys (:meth:`get`), writes the
    flat target keys and the notes. Every key of the file must be consumed by
    a rule (translated, kept or inert); :meth:`_rest` refuses the others.

    The rules here are GraphGPS's (GEAET and CSA both extend its code); a
    source's subclass sets the tables below and overrides the rules of its
    own keys.

    Attributes:
        source: the code base's name (``'GraphGPS'``, ``'GEAET'``, ``'CSA'``).
        markers: dotted keys only this source's configs have (``group.*``:
            any key of the group), read by :func:`graphgps_ext.compat.detect`.
        defaults: the values its code falls back on for absent keys.
        model_type: its ``model.type`` of a GPS-style network.
        custom_model: a second ``model.type`` it builds (an MPNN-only stack)
            or ``None``.
        layer_parts: how many ``'+'``-separated parts its ``gt.layer_type``
            has.
        local_models, global_models: its local and global models -> this
            project's branch names.
        graph_norm: ``(gt.norm, why)`` its layer uses with ``gt.layer_norm``
            True, or ``None`` where that layer is not translated.
        san_graph_head: the ``gnn.head`` of its ``san_graph`` head.
        san_graph_act: whether that head's activation is ``gnn.act`` (else
            ReLU).
        extra_heads: ``gnn.head`` values of its own, translated by its
            ``_extra_head``.
    """
    source: str = ''
    markers: Tuple[str, ...] = ()
    defaults: Dict[str, Any] = GRAPHGYM_DEFAULTS
    model_type: str = 'GPSModel'
    custom_model: Optional[str] = None
    layer_parts: int = 2
    local_models: Dict[str, str] = LOCAL_MODELS
    global_models: Dict[str, str] = GLOBAL_MODELS
    graph_norm: Optional[Tuple[str, str]] = _GRAPHNORM
    san_graph_head: str = 'graph_mlp'
    san_graph_act: bool = False
    extra_heads: Tuple[str, ...] = ()

    def __init__(self, flat: Dict[str, Any], path: str,
                 ours: Optional[Dict[str, Any]] = None,
                 overrides: Sequence[str] = ()):
        self.src, self.path = flat, path
        self.ours = ours or {}  # this project's defaults (flat)
        self.overrides = set(overrides)  # keys set on the command line
        self.custom = False  # the source's custom_model (an MPNN stack)
        self.out: Dict[str, Any] = {}
        self.notes: List[str] = []
        self.kept: List[str] = []
        self.consumed: set = set()

    # -- helpers ---------------------------------------------------------------
    def has(self, key: str) -> bool:
        return key in self.src

    def get(self, key: str, default: Any = None) -> Any:
        """The file's value, else the source's default, else ``default``."""
        if key in self.src:
            return self.src[key]
        return self.defaults.get(key, default)

    def shown(self, key: str) -> str:
        """``'key value'``, or ``'key (GraphGPS default) value'`` when absent."""
        value = self.get(key)
        if key in self.src:
            return f'{key} {_fmt(value)}'
        return f'{key} ({self.source} default) {_fmt(value)}'

    def put(self, key: str, value: Any):
        self.out[key] = value

    def note(self, text: str):
        self.notes.append(text)

    def fail(self, key: str, why: str):
        value = self.get(key)
        where = f'{self.path}: ' if self.path else ''
        raise ConfigError(
            f"{where}{self.source} config key '{key}' ({_fmt(value)}) has no "
            f'equivalent here: {why}')

    def translate(self, keys, targets: Dict[str, Any], why: str = ''):
        """Set ``targets`` from the source ``keys`` (a key or a tuple) and log
        ``k1 v1, k2 v2 -> t1 v1, t2 v2 (why)``; a key copied unchanged is
        counted as kept instead."""
        keys = (keys,) if isinstance(keys, str) else tuple(keys)
        self.consumed.update(keys)
        for k, v in targets.items():
            self.put(k, v)
        if len(keys) == 1 and keys[0] in self.src and \
                targets == {keys[0]: self.src[keys[0]]}:
            self.kept.append(keys[0])
            return
        if not any(k in self.src for k in keys) and all(
                k in self.ours and self.ours[k] == v for k, v in targets.items()):
            return  # the source's default is this project's default
        lhs = ', '.join(self.shown(k) for k in keys)
        rhs = ', '.join(f'{k} {_fmt(v)}' for k, v in targets.items())
        self.note(f'{lhs} -> {rhs}' + (f' ({why})' if why else ''))

    def copy(self, key: str):
        """The key with its (file or source default) value, unchanged."""
        self.translate(key, {key: self.get(key)})

    def inert(self, key: str, why: str):
        """Accept ``key`` with a note: the source's code does not read it."""
        if key in self.consumed:
            return
        self.consumed.add(key)
        if key in self.src:
            self.note(f'{key} {_fmt(self.src[key])}: inert ({why})')

    # -- the rules -------------------------------------------------------------
    def run(self) -> Translation:
        self._rule_model()
        self._rule_dataset()
        self._rule_layers()
        self._rule_node_encoder()
        self._rule_edge_encoder()
        self._rule_posenc()
        self._rule_head()
        self._rule_loss_metric()
        self._rule_optim_train()
        self._rule_misc()
        self._rest()
        # Translations first, then the inert keys (each in rule order).
        notes = sorted(self.notes, key=lambda n: ': inert (' in n)
        return Translation(self.source, self.path, unflatten(self.out), notes,
                           self.kept)

    def _rule_model(self):
        mtype = self.get('model.type')
        wanted = self.model_type
        self.custom = self.custom_model is not None and mtype == self.custom_model
        parts = str(self.src.get('gt.layer_type', '')).split('+')
        if 'model.type' not in self.src and len(parts) == 2:
            # Read as a GraphGPS config only for its two-part layer type: most
            # likely one of ours with a part missing.
            where = f'{self.path}: ' if self.path else ''
            raise ConfigError(
                f"{where}gt.layer_type '{self.src['gt.layer_type']}' has two parts, "
                "GraphGPS's <local>+<global>: this project's configs name three, "
                f"<local>+<global>+<external>, e.g. '{parts[0]}+{parts[1]}+None'. "
                '(A GraphGPS config with two parts also sets model.type GPSModel.)')
        if mtype != wanted and not self.custom:
            self.fail('model.type', f"this translation builds {self.source}'s "
                      f"'{wanted}'" + (f" and {self.source}'s '{self.custom_model}'"
                                       if self.custom_model else '')
                      + f' networks; {mtype!r} is another one')
        self.translate('model.type', {'model.type': 'GPSModel'},
                       'a stack of MPNN-only layers' if self.custom else '')
        if int(self.get('gnn.layers_pre_mp')) > 0:
            self.fail('gnn.layers_pre_mp', 'no GraphGym pre-MP layers are '
                      'built before the first layer here')
        self.inert('gnn.layers_pre_mp', 'no pre-MP layers')
        hidden, inner = int(self.get('gt.dim_hidden')), int(self.get('gnn.dim_inner'))
        if self.custom:
            self.translate('gnn.dim_inner', {'gt.dim_hidden': inner})
            return
        if hidden != inner:
            self.fail('gnn.dim_inner', f'the source model requires '
                      f'gt.dim_hidden ({hidden}) == gnn.dim_inner ({inner})')
        self.copy('gt.dim_hidden')
        self.inert('gnn.dim_inner', 'equal to gt.dim_hidden')

    def _rule_dataset(self):
        fmt, name = self.get('dataset.format'), str(self.get('dataset.name'))
        if fmt in _LRGB_SUPERPIXELS:
            slic = int(self.get('dataset.slic_compactness'))
            if name != 'edge_wt_region_boundary' or slic != 30:
                self.fail('dataset.name', f'{fmt} {name} with SLIC '
                          f"compactness {slic}: only LRGB's released version "
                          '(edge_wt_region_boundary, dataset.slic_compactness '
                          '30) is read here')
            self.translate(('dataset.format', 'dataset.name',
                            'dataset.slic_compactness'),
                           {'dataset.format': 'PyG-LRGBDataset',
                            'dataset.name': _LRGB_SUPERPIXELS[fmt]})
        elif fmt == 'OGB' and name.startswith('PCQM4Mv2Contact'):
            if name != 'PCQM4Mv2Contact-shuffle':
                self.fail('dataset.name', "only LRGB's released split "
                          "'PCQM4Mv2Contact-shuffle' (PCQM-Contact) is read here")
            self.translate(('dataset.format', 'dataset.name'),
                           {'dataset.format': 'PyG-LRGBDataset',
                            'dataset.name': 'PCQM-Contact'})
        elif fmt in _OWN_FORMATS:
            self.copy('dataset.format')
            self.copy('dataset.name')
        else:
            self.fail('dataset.format', 'the datasets read here are '
                      'PyG-ZINC, PyG-GNNBenchmarkDataset, PyG-TUDataset, '
                      'PyG-VOCSuperpixels / PyG-COCOSuperpixels (LRGB) and OGB '
                      '(peptides, ogbg-*, PCQM4Mv2, PCQM4Mv2Contact)')
        self.inert('dataset.slic_compactness', 'read for VOC / COCO superpixels only')
        if str(self.get('dataset.task_type')) == 'classification':
            # GraphGym's create_model: two classes -> one output.
            self.translate('dataset.task_type', {'dataset.binary_single_logit': True},
                           'GraphGym predicts two classes with one logit; the '
                           'task itself is read from the dataset here')
        else:
            self.inert('dataset.task_type', 'the task is read from the dataset here')
        self.inert('dataset.task', "the level is read from the dataset here "
                   "(GraphGPS sets 'graph' for every inductive dataset); it "
                   "only resolves gnn.head 'default'")
        if self.get('dataset.split_mode', 'standard') != 'standard':
            self.fail('dataset.split_mode', "only the datasets' standard "
                      'splits (dataset.split fractions for TU) are used here')
        self.inert('dataset.split_mode', 'the standard split')
        for key, neutral in (('dataset.split_index', 0),
                             ('dataset.split_dir', './splits'),
                             ('run_multiple_splits', [])):
            if self.get(key, neutral) not in (neutral, '', None):
                self.fail(key, 'cross-validation splits are not used here')
            self.inert(key, 'the standard split')
        for key in ('dataset.node_encoder_num_types',
                    'dataset.edge_encoder_num_types'):
            self.inert(key, 'the vocabulary size is read from the dataset here')

    def _layer_parts(self) -> Tuple[str, str, str]:
        parts = str(self.get('gt.layer_type')).split('+')
        n = self.layer_parts
        if len(parts) != n:
            self.fail('gt.layer_type', f"the {self.source} code expects {n} "
                      "'+'-separated parts")
        maps = (self.local_models, self.global_models,
                {'None': 'None', 'GEANet': 'GEANet'})
        out = []
        for kind, part, table in zip(('local', 'global', 'external'), parts, maps):
            if part not in table:
                self.fail('gt.layer_type', f"the {kind} model '{part}' is not "
                          'available here (' + ', '.join(sorted(table)) + ')')
            out.append(table[part])
        return tuple(out + ['None'] * (3 - len(out)))

    def _rule_layers(self):
        local, glob, ext = self._layer_parts()
        self.local, self.glob, self.ext = local, glob, ext
        self.translate('gt.layer_type', {'gt.layer_type': f'{local}+{glob}+{ext}'})
        for key in ('gt.layers', 'gt.n_heads', 'gt.attn_dropout'):
            if glob == 'None' and key != 'gt.layers':
                self.inert(key, 'no global attention branch')
            else:
                self.copy(key)
        layer_norm, batch_norm = (bool(self.get('gt.layer_norm')),
                                  bool(self.get('gt.batch_norm')))
        if layer_norm and batch_norm:
            self.fail('gt.layer_norm', f"the {self.source} code's layer refuses "
                      'both norms together ("Cannot apply two types of '
                      'normalization together"); set gt.batch_norm False in '
                      "the file for its graph-wise norm, or gt.layer_norm "
                      'False for its BatchNorm')
        if layer_norm and self.graph_norm is None:
            self.fail('gt.layer_norm', f"{self.source}'s layer with its graph-wise "
                      'norms is not translated here; set gt.layer_norm False and '
                      'gt.batch_norm True for its BatchNorm')
        norm = (self.graph_norm[0] if layer_norm else
                'batch' if batch_norm else 'none')
        self.translate(('gt.layer_norm', 'gt.batch_norm'), {'gt.norm': norm},
                       self.graph_norm[1] if layer_norm else '')
        for key, value in layer_parity(local).items():
            self.put(key, value)
        self.put('gt.parity_norm_without_ffn', False)
        self.act = self._activation()
        self._layer_branches()
        self.inert('gt.pna_degrees', 'read by PNA only')
        for key in [k for k in self.src if k.startswith('gt.bigbird.')]:
            self.inert(key, 'read by BigBird only')

    def _activation(self) -> str:
        """The activation of the layers and heads (``gnn.act``)."""
        act = str(self.get('gnn.act'))
        if act not in _ACTS:
            self.fail('gnn.act', 'activations here: ' + ', '.join(sorted(_ACTS)))
        return _ACTS[act]

    def _layer_branches(self):
        """The branches' dropout, FFN and activations: GraphGPS's layer
        (ReLU everywhere, one dropout)."""
        self.copy('gt.dropout')
        self.put('gt.ffn', True)
        self.put('mpnn.out_act', False)
        self.put('gt.act', 'relu')
        self.put('mpnn.act', 'relu')

    def _rule_node_encoder(self):
        if not bool(self.get('dataset.node_encoder')):
            self.fail('dataset.node_encoder', 'the source model then has no '
                      'node encoder and needs raw features of width '
                      'gt.dim_hidden; set dataset.node_encoder True')
        self.copy('dataset.node_encoder')
        name = str(self.get('dataset.node_encoder_name'))
        parts = [p.strip() for p in name.split('+')]
        if parts[0] in _PES:  # a PE encoder alone projects x with a Linear
            parts = ['LinearNode'] + parts
        if parts[0] not in _TYPE_NODE:
            self.fail('dataset.node_encoder_name', f"node encoder '{parts[0]}' "
                      'is not available here (' + ', '.join(_TYPE_NODE) + ')')
        for pe in parts[1:]:
            if pe not in _PES:
                self.fail('dataset.node_encoder_name', f"PE encoder '{pe}' is "
                          'not available here (' + ', '.join(_PES) + ')')
        self.node_pes = parts[1:]
        self.translate('dataset.node_encoder_name', {
            'dataset.node_encoder_name': '+'.join([_TYPE_NODE[parts[0]]] + parts[1:])})

    def _rule_edge_encoder(self):
        self.copy('dataset.edge_encoder')
        name = str(self.get('dataset.edge_encoder_name'))
        if name not in _TYPE_EDGE:
            self.fail('dataset.edge_encoder_name', 'edge encoders here: '
                      + ', '.join(_TYPE_EDGE))
        self.translate('dataset.edge_encoder_name',
                       {'dataset.edge_encoder_name': _TYPE_EDGE[name]})
        if bool(self.get('dataset.edge_encoder')):
            # The sources' FeatureEncoder builds the edge encoder whenever
            # dataset.edge_encoder is True, whether a branch reads it or not.
            self.put('dataset.parity_unused_edge_encoder', True)
            reads = self.local in ('GatedGCN', 'GINE') or (
                self.ext == 'GEANet' and bool(self.get('GEANet.edge_unit')))
            if not reads:
                self.note(f'dataset.edge_encoder True, gt.layer_type '
                          f"{self.src.get('gt.layer_type')} -> "
                          'dataset.parity_unused_edge_encoder True (the '
                          f"{self.source} code builds the {name} encoder although "
                          'no branch reads the edges: allocated, never trained)')
        for key in ('dataset.rings', 'dataset.rings_max_length',
                    'dataset.rings_coalesce_edges', 'dataset.spd',
                    'dataset.spd_max_length', 'dataset.edge_encoder_shared',
                    'dataset.edge_encoder_dense'):
            self.inert(key, 'read by the CSA branch only')

    def _rwse_times(self) -> List[int]:
        func = str(self.get('posenc_RWSE.kernel.times_func') or '')
        times = list(self.get('posenc_RWSE.kernel.times') or [])
        try:
            steps = parse_times(times, func)
        except ValueError as err:
            self.fail('posenc_RWSE.kernel.times_func', str(err))
        if not steps:
            self.fail('posenc_RWSE.kernel.times', 'RWSE needs walk lengths '
                      "(kernel.times_func, e.g. 'range(1,21)')")
        return steps

    def _rule_posenc(self):
        used = set(self.node_pes)
        es = bool(self.get('posenc_EquivStableLapPE.enable'))
        if es and self.custom:
            self.fail('posenc_EquivStableLapPE.enable', "GraphGPS's custom_gnn "
                      'layers do not read the EquivStableLapPE')
        if es and 'EquivStableLapPE' not in used:
            self.fail('posenc_EquivStableLapPE.enable', "the source's layers "
                      'then read an EquivStableLapPE that no encoder computes; '
                      'name it in dataset.node_encoder_name')
        if 'EquivStableLapPE' in used:
            self._eslappe(es)
        self.put('mpnn.equivstable_pe', es)
        for group in ('posenc_SignNet', 'posenc_HKdiagSE', 'posenc_ElstaticSE'):
            if bool(self.get(f'{group}.enable')):
                self.fail(f'{group}.enable', f'{group[7:]} is not available here')
            for key in [k for k in self.src if k.startswith(group + '.')]:
                self.inert(key, f'{group[7:]} is not enabled')
        if 'LapPE' in used:
            self._lappe()
        edge_rwse = self.out.get('pairenc.rpe') == 'rwse'
        if 'RWSE' in used or edge_rwse:
            self._rwse(node='RWSE' in used)
        for group, pe in (('posenc_LapPE', 'LapPE'), ('posenc_RWSE', 'RWSE'),
                          ('posenc_EquivStableLapPE', 'EquivStableLapPE')):
            for key in [k for k in self.src if k.startswith(group + '.')]:
                self.inert(key, f'{pe} is not in dataset.node_encoder_name')

    def _eigen(self, group: str):
        if self.get(f'{group}.eigen.eigvec_norm') != 'L2':
            self.fail(f'{group}.eigen.eigvec_norm', 'eigenvectors here are '
                      'L2-normalised')
        self.inert(f'{group}.eigen.eigvec_norm', 'L2, as here')
        self.copy(f'{group}.eigen.laplacian_norm')
        self.copy(f'{group}.eigen.max_freqs')
        self.put(f'{group}.eigen.skip_trivial', False)
        self.inert(f'{group}.enable', 'the encodings named in '
                   'dataset.node_encoder_name are computed')
        self.put(f'{group}.enable', True)

    def _lappe(self):
        g = 'posenc_LapPE'
        if self.get(f'{g}.model') not in ('DeepSet', 'Transformer'):
            self.fail(f'{g}.model', "GraphGPS's LapPE encoder is 'DeepSet' or "
                      "'Transformer'")
        for key in ('model', 'dim_pe', 'layers', 'n_heads', 'post_layers',
                    'raw_norm_type', 'pass_as_var'):
            self.copy(f'{g}.{key}')
        self.put(f'{g}.combine', 'concat')
        self.put(f'{g}.sign_flip', True)
        self._eigen(g)

    def _eslappe(self, enabled: bool):
        g = 'posenc_EquivStableLapPE'
        if enabled:
            self.translate(f'{g}.enable', {f'{g}.enable': True,
                                           'mpnn.equivstable_pe': True},
                           'the local branch gates its messages with the '
                           'EquivStableLapPE distances')
        self.note(f'{g}: the GraphGPS encoder maps the eigenvectors to '
                  f'gt.dim_hidden -> {g}.model linear')
        self.put(f'{g}.model', 'linear')
        self.copy(f'{g}.raw_norm_type')
        self._eigen(g)

    def _rwse(self, node: bool):
        g = 'posenc_RWSE'
        self._rwse_times()  # checks them
        self.copy(f'{g}.kernel.times_func')
        self.copy(f'{g}.kernel.times')
        self.inert(f'{g}.enable', 'the encodings named in '
                   'dataset.node_encoder_name are computed')
        for key in ('precompute', 'enable_edges'):
            self.inert(f'{g}.{key}', 'the walk statistics are computed as needed')
        if not node:
            for key in ('model', 'dim_pe', 'layers', 'raw_norm_type',
                        'pass_as_var', 'n_heads', 'post_layers'):
                self.inert(f'{g}.{key}', 'RWSE feeds the pair encoder only')
            return
        model = str(self.get(f'{g}.model')).lower()
        if model not in ('linear', 'mlp'):
            self.fail(f'{g}.model', "GraphGPS's RWSE encoder is 'Linear' or 'mlp'")
        self.translate(f'{g}.model', {f'{g}.model': model})
        for key, value in (('combine', 'concat'), ('enable', True)):
            self.put(f'{g}.{key}', value)
        for key in ('dim_pe', 'layers', 'raw_norm_type'):
            self.copy(f'{g}.{key}')
        for key in ('n_heads', 'post_layers', 'pass_as_var'):
            self.inert(f'{g}.{key}', 'not read by the RWSE encoder')

    def _rule_head(self):
        head = str(self.get('gnn.head'))
        post = max(1, int(self.get('gnn.layers_post_mp')))
        mlp = {'head.pool': 'default', 'head.dropout': 0.0, 'head.bias': True,
               'head.act': 'relu'}
        if head == 'default':  # GraphGym: the head of dataset.task
            head = str(self.get('dataset.task'))
        keys = ('gnn.head', 'gnn.layers_post_mp')
        if head == 'san_graph':
            target = {'gnn.head': self.san_graph_head, 'head.layers': 3,
                      'head.width': 'halving'}
            if self.san_graph_act:
                mlp['head.act'] = self.act
            self.translate('gnn.head', dict(target, **mlp))
            self.inert('gnn.layers_post_mp', 'san_graph always has 3 layers')
        elif head in ('graph', 'node', 'inductive_node'):
            name = 'graph_mlp' if head == 'graph' else 'inductive_node'
            self.translate(keys, dict({'gnn.head': name, 'head.layers': post,
                                       'head.width': 'constant'}, **mlp))
        elif head in self.extra_heads:
            self._extra_head(head, keys, mlp, post)
        elif head == 'inductive_edge':
            score = {'dot': 'dot', 'cosine_similarity': 'cosine'}.get(
                str(self.get('model.edge_decoding')))
            if score is None:
                self.fail('model.edge_decoding', "link scores here are 'dot' "
                          "and 'cosine_similarity'")
            self.translate(keys + ('model.edge_decoding',), dict(
                {'gnn.head': 'inductive_link', 'head.layers': post,
                 'head.width': 'constant', 'head.link_score': score,
                 'head.link_train': 'sampled'}, **mlp))
        elif head == 'ogb_code_graph':
            self.translate('gnn.head', {'gnn.head': 'code2_sequence'})
            self.inert('gnn.layers_post_mp', 'ogb_code_graph has its own layers')
        else:
            self.fail('gnn.head', 'heads here: default (graph or node), '
                      'san_graph, inductive_node, inductive_edge, '
                      'ogb_code_graph' + ''.join(f', {h}' for h in self.extra_heads))
        self.inert('model.edge_decoding', 'read by inductive_edge only')

    def _rule_loss_metric(self):
        loss = str(self.get('model.loss_fun'))
        if loss == 'cross_entropy':  # GraphGym: BCE on 0/1 targets
            binary = (str(self.get('dataset.task_type')) ==
                      'classification_multilabel' or
                      self.out.get('gnn.head') == 'inductive_link')
            new = 'bce' if binary else 'cross_entropy'
        elif loss in ('l1', 'mse', 'weighted_cross_entropy'):
            new = loss
        else:
            self.fail('model.loss_fun', 'losses here: l1, mse, cross_entropy, '
                      'weighted_cross_entropy')
        self.translate('model.loss_fun', {'model.loss_fun': new},
                       "GraphGym's cross_entropy on 0/1 targets (multi-label, "
                       'links)' if new != loss else '')
        metric = str(self.get('metric_best'))
        if metric == 'f1':
            new_m = ('f1_subtoken' if str(self.get('dataset.name')) == 'ogbg-code2'
                     else 'f1_macro')
        elif metric in _METRICS:
            new_m = _METRICS[metric]
        else:
            self.fail('metric_best', 'metrics here: ' + ', '.join(_METRICS))
        self.translate('metric_best', {'metric_best': new_m})

    def _rule_optim_train(self):
        sched = self.get('optim.scheduler', 'cos')
        if sched not in _SCHEDULERS:
            self.fail('optim.scheduler', 'schedulers here: ' + ', '.join(_SCHEDULERS))
        if self.has('optim.scheduler'):
            self.translate('optim.scheduler', {'optim.scheduler': _SCHEDULERS[sched]})
        if self.get('optim.optimizer', 'adam') not in _OPTIMIZERS:
            self.fail('optim.optimizer', 'optimizers here: ' + ', '.join(_OPTIMIZERS))
        if int(self.get('optim.batch_accumulation', 1)) != 1:
            self.fail('optim.batch_accumulation', 'gradients are not '
                      'accumulated over batches here')
        self.inert('optim.batch_accumulation', 'one batch per step, as here')
        mode = self.get('train.mode', 'custom')
        if mode not in ('custom', 'standard'):
            self.fail('train.mode', f"GraphGPS's '{mode}' mode (inference or "
                      'attention logging) is not a training run here')
        for key in ('train.finetune', 'train.freeze_pretrained'):
            if self.get(key, '') not in ('', False, None):
                self.fail(key, 'fine-tuning a pretrained model is not supported here')
            self.inert(key, 'no pretrained model')
        if str(self.get('model.size_average', 'mean')) != 'mean':
            self.fail('model.size_average', 'losses here average over the batch')
        self.inert('model.size_average', 'losses average over the batch, as here')
        for key, default in (('bn.eps', 1e-5), ('bn.mom', 0.1)):
            if float(self.get(key, default)) != default:
                self.fail(key, "the encoders' BatchNorms use PyTorch's defaults here")
            self.inert(key, "PyTorch's default, as here")

    def _rule_misc(self):
        if self.has('accelerator'):
            self.translate('accelerator', {'accelerator': 'auto'},
                           'the device of the machine the config was written '
                           "for; set 'accelerator' on the command line to pin one")
        tag = str(self.get('name_tag', '') or '')
        if tag:
            name = f'{_stem(self.path)}-{tag}' if self.path else tag
            self.translate('name_tag', {'run_name': name},
                           "GraphGPS's results folder <config>-<name_tag>")
        else:
            self.inert('name_tag', 'empty')
        for key in [k for k in self.src if k.startswith('pretrained.')]:
            if key == 'pretrained.dir' and self.src[key]:
                self.fail(key, 'fine-tuning a pretrained model is not supported here')
            self.inert(key, 'no pretrained model')
        for key in [k for k in self.src if k.startswith('share.')]:
            self.inert(key, "GraphGym's run-time values, set from the data")
        for key, why in _INERT_ALWAYS.items():
            self.inert(key, why)

    def _rest(self):
        """Keys no rule consumed: GraphGym keys with the same meaning here
        are kept; any other key is refused."""
        for key, value in self.src.items():
            if key in self.consumed:
                continue
            if key in _SAME:
                self.put(key, value)
                self.kept.append(key)
                continue
            hint = closest(key, sorted(set(_SAME) | set(_INERT_ALWAYS)))
            where = f'{self.path}: ' if self.path else ''
            raise ConfigError(
                f"{where}{self.source} config key '{key}' ({_fmt(value)}) is "
                'not one this translation knows, and it may change the model: '
                'refused' + (f" (did you mean '{hint[0]}'?)" if hint else ''))


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]

