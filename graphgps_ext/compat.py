r"""Configs of GraphGPS, GEAET and CSA, translated to this project's keys.

A YAML file written for the GraphGPS code base (Rampášek et al.), or for the
GEAET or CSA authors' code built on it, runs here unchanged:
:func:`graphgps_ext.run_config.load_cfg` asks :func:`merge_config_file` to
merge it, which recognises the source from the file's keys
(:func:`detect`), translates every key with the rules of that source
(:func:`translate`) and merges the result like one of this project's
configs. Command-line overrides are merged afterwards, in this project's keys.

Every key of the file gets one of four answers, each logged on one line
(logger ``graphgps_ext.compat``, printed by ``main.py`` and ``--dry-run``):

- **translated** to the key(s) with the same effect here
  (``GEANet.unit_size 16 -> gea.num_slots 16``); where the source's code
  relies on a default that differs from this project's, that default is
  written out too (``gt.n_heads (GraphGPS default) 8 -> gt.n_heads 8``);
- **kept**: a GraphGym key with the same meaning in both (``optim.base_lr``,
  ``train.batch_size`` ...; not logged one by one);
- **inert**: the source's code does not read it for this config (e.g.
  ``gnn.layers_post_mp`` with ``gnn.head: san_graph``, ``train.mode:
  custom``, ``wandb.name``); accepted with a note saying why;
- **refused**: it would build or train a different model and this project
  has no equivalent (a Performer branch, a pre-MP stack ...):
  :class:`~graphgps_ext.config.ConfigError` naming the key (``main.py``
  exits with code 2).

The translation reproduces the model the source's code builds from the file,
parameter for parameter: the authors' parity switches of this project are set
where their code differs from the papers (``gea.parity_*``,
``csa.parity_edge_bias``), GraphGym's single output for two-class
classification is kept (``dataset.binary_single_logit``), and the heads are
written out explicitly (``head.*``). The translated config is what a run
saves as ``config.yaml``, so the run is reproducible from that file alone.
``docs/compat.md`` lists every rule.

API: :func:`detect` (source name or ``None``), :func:`translate`
(:class:`Translation`), :func:`translate_file`, :func:`merge_config_file`
(the hook used by ``load_cfg``), :func:`last_translation`.
"""
import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from graphgps_ext.config import (ConfigError, closest, flatten, key_matches,
                                 merge_data, read_yaml, unflatten)
from graphgps_ext.config.posenc import parse_times

GRAPHGPS, GEAET, CSA = 'GraphGPS', 'GEAET', 'CSA'
SOURCES = (GRAPHGPS, GEAET, CSA)

log = logging.getLogger('graphgps_ext.compat')

# --------------------------------------------------------------- detection --
# Keys that only the source code bases have (dotted; ``group.*`` = any key of
# the group). GEAET and CSA are checked first: both extend GraphGPS.
_GEAET_MARKERS = ('GEANet.*', 'gt.ffn_dropout', 'gt.global_dropout',
                  'gt.local_dropout', 'gt.external_dropout', 'gt.use_ffn',
                  'gt.local_out_act')
_CSA_MARKERS = ('dataset.edge_encoder_shared', 'dataset.rings',
                'dataset.rings_max_length', 'dataset.rings_coalesce_edges',
                'dataset.spd', 'dataset.spd_max_length',
                'dataset.edge_encoder_dense', 'posenc_RWSE.precompute',
                'posenc_RWSE.enable_edges')
_GRAPHGPS_MARKERS = ('train.mode', 'name_tag', 'train.finetune',
                     'train.freeze_pretrained', 'train.ckpt_best',
                     'dataset.node_encoder_num_types',
                     'dataset.edge_encoder_num_types',
                     'dataset.slic_compactness', 'dataset.split_index',
                     'dataset.split_dir', 'run_multiple_splits',
                     'optim.batch_accumulation', 'gt.layer_norm',
                     'gt.batch_norm', 'gt.full_graph', 'gt.gamma',
                     'gt.pna_degrees', 'gt.bigbird.*', 'posenc_SignNet.*',
                     'posenc_HKdiagSE.*', 'posenc_ElstaticSE.*',
                     'posenc_LapPE.eigen.eigvec_norm',
                     'posenc_EquivStableLapPE.eigen.eigvec_norm',
                     'pretrained.*', 'gnn.residual')


def detect(raw: Any) -> Optional[str]:
    """The code base a parsed YAML config was written for: ``'GEAET'``,
    ``'CSA'``, ``'GraphGPS'``, or ``None`` (this project's own config).

    GEAET configs have a ``GEANet`` group or per-branch dropouts; CSA
    configs CSA's dataset keys (``edge_encoder_shared``, ``rings*``,
    ``spd*``) or a ``CSA`` global branch in a two-part ``gt.layer_type``;
    GraphGPS configs a two-part ``gt.layer_type`` (``GINE+Transformer``) or
    one of GraphGPS's own keys (``train.mode``, ``name_tag``,
    ``gt.batch_norm``, ``posenc_*.eigen.eigvec_norm`` ...).
    """
    if not isinstance(raw, dict) or not raw:
        return None
    flat = flatten(raw, keep_empty=True)
    keys = list(flat)
    if str(flat.get('model.type', '')) == 'GEAET' or \
            any(key_matches(k, _GEAET_MARKERS) for k in keys):
        return GEAET
    layer_type = flat.get('gt.layer_type')
    parts = str(layer_type).split('+') if isinstance(layer_type, str) else []
    if any(key_matches(k, _CSA_MARKERS) for k in keys) or \
            (len(parts) == 2 and parts[1] == 'CSA'):
        return CSA
    if len(parts) == 2 or any(key_matches(k, _GRAPHGPS_MARKERS) for k in keys):
        return GRAPHGPS
    return None


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
_GRAPHGYM_DEFAULTS: Dict[str, Any] = {
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
    _GRAPHGYM_DEFAULTS.update({
        f'{_g}.enable': False, f'{_g}.model': 'none', f'{_g}.dim_pe': 16,
        f'{_g}.layers': 3, f'{_g}.n_heads': 4, f'{_g}.post_layers': 0,
        f'{_g}.raw_norm_type': 'none', f'{_g}.pass_as_var': False,
        f'{_g}.eigen.laplacian_norm': 'sym', f'{_g}.eigen.eigvec_norm': 'L2',
        f'{_g}.eigen.max_freqs': 10, f'{_g}.kernel.times': [],
        f'{_g}.kernel.times_func': ''})

_DEFAULTS: Dict[str, Dict[str, Any]] = {
    GRAPHGPS: dict(_GRAPHGYM_DEFAULTS),
    GEAET: dict(_GRAPHGYM_DEFAULTS, **{
        'gt.use_ffn': True, 'gt.ffn_dropout': 0.0, 'gt.global_dropout': 0.0,
        'gt.local_dropout': 0.0, 'gt.external_dropout': 0.0,
        'gt.local_out_act': False, 'GEANet.n_heads': 4,
        'GEANet.unit_size': 4, 'GEANet.edge_unit': False,
        'GEANet.shared_unit': False}),
    CSA: dict(_GRAPHGYM_DEFAULTS, **{
        'dataset.edge_encoder_shared': False, 'dataset.rings': False,
        'dataset.rings_max_length': 6, 'dataset.rings_coalesce_edges': False,
        'dataset.spd': False, 'dataset.spd_max_length': 6,
        'dataset.edge_encoder_dense': True, 'posenc_RWSE.precompute': True,
        'posenc_RWSE.enable_edges': True}),
}

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
    'wandb.use', 'wandb.project', 'wandb.entity',
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
    'wandb.name': 'W&B runs are named <run_name>-s<seed> here',
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
_LOCAL = {'None': 'None', 'CustomGatedGCN': 'GatedGCN', 'GINE': 'GINE'}
_LAYER_PARITY = {
    'gt.pre_norm': False, 'gt.residual': True, 'gt.ffn_mult': 2.0,
    'mpnn.node_norm': 'batch',       # GatedGCNLayer's bn_node_x
    'mpnn.edge_norm': 'batch',       # GatedGCNLayer's bn_edge_e
    'mpnn.gin_mlp': 'graphgps',      # GIN's MLP: Linear-act-Linear
    'mpnn.gin_train_eps': False,     # PyG's GINConv / GINEConv default
}
_LOCAL_GEAET = dict(_LOCAL, GCN='GCN', GIN='GIN')
_GLOBAL = {'None': 'None', 'Transformer': 'Transformer'}
_TYPE_NODE = {'TypeDictNode': 'TypeDictNode', 'Atom': 'Atom',
              'LinearNode': 'LinearNode', 'VOCNode': 'LinearNode',
              'COCONode': 'LinearNode', 'ASTNode': 'ASTNode'}
_TYPE_EDGE = {'TypeDictEdge': 'TypeDictEdge', 'Bond': 'Bond',
              'LinearEdge': 'LinearEdge', 'VOCEdge': 'LinearEdge',
              'COCOEdge': 'LinearEdge', 'DummyEdge': 'DummyEdge',
              'ASTEdge': 'LinearEdge'}
_CSA_TYPE_EDGE = {'TypeDictEdge': 'TypeDictEdge', 'Bond': 'Bond',
                  'LinearEdge': 'LinearEdge', 'Dummy': 'DummyEdge'}
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


class _Translator:
    """One translation: reads the flat source keys (:meth:`get`), writes the
    flat target keys and the notes. Every key of the file must be consumed by
    a rule (translated, kept or inert); :meth:`_rest` refuses the others."""

    def __init__(self, source: str, flat: Dict[str, Any], path: str,
                 ours: Optional[Dict[str, Any]] = None,
                 overrides: Sequence[str] = ()):
        self.source, self.src, self.path = source, flat, path
        self.ours = ours or {}  # this project's defaults (flat)
        self.overrides = set(overrides)  # keys set on the command line
        self.custom = False  # GraphGPS's custom_gnn (an MPNN stack)
        self.defaults = _DEFAULTS[source]
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
        wanted = 'GEAET' if self.source == GEAET else 'GPSModel'
        self.custom = self.source == GRAPHGPS and mtype == 'custom_gnn'
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
                      f"'{wanted}'" + (" and GraphGPS's 'custom_gnn'"
                                       if self.source == GRAPHGPS else '')
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

    def _custom_gnn_layers(self):
        """GraphGPS's custom_gnn: ``gnn.layers_mp`` GatedGCN or GINE layers
        (residual ``gnn.residual``, dropout ``gnn.dropout``), no attention,
        no FFN, no layer norms."""
        conv = {'gatedgcnconv': 'GatedGCN', 'gineconv': 'GINE'}.get(
            str(self.get('gnn.layer_type', 'generalconv')))
        if conv is None:
            self.fail('gnn.layer_type', "custom_gnn's layers here: "
                      'gatedgcnconv, gineconv')
        self.local, self.glob, self.ext = conv, 'None', 'None'
        self.translate('gnn.layer_type', {'gt.layer_type': f'{conv}+None+None'})
        self.translate('gnn.layers_mp', {'gt.layers': int(self.get('gnn.layers_mp', 2))})
        self.translate('gnn.dropout', {'gt.dropout': float(self.get('gnn.dropout', 0.0))})
        self.translate('gnn.residual', {'gt.residual': bool(self.get('gnn.residual', False))})
        for key, value in dict(_LAYER_PARITY, **{
                'gt.ffn': False, 'gt.norm': 'none', 'gt.act': 'relu',
                'gt.parity_norm_without_ffn': False, 'mpnn.act': 'relu',
                'mpnn.out_act': conv == 'GINE'}).items():
            self.put(key, value)
        self.act = 'relu'
        self.inert('gnn.act', "GraphGPS's GatedGCN and GINE layers always use ReLU")
        for key in [k for k in self.src if k.startswith('gt.')]:
            self.inert(key, 'custom_gnn reads gnn.*')

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
        n = 3 if self.source == GEAET else 2
        if len(parts) != n:
            self.fail('gt.layer_type', f"the {self.source} code expects {n} "
                      "'+'-separated parts")
        local_map = _LOCAL_GEAET if self.source == GEAET else _LOCAL
        global_map = dict(_GLOBAL, CSA='CSA') if self.source == CSA else _GLOBAL
        maps = (local_map, global_map, {'None': 'None', 'GEANet': 'GEANet'})
        out = []
        for kind, part, table in zip(('local', 'global', 'external'), parts, maps):
            if part not in table:
                self.fail('gt.layer_type', f"the {kind} model '{part}' is not "
                          'available here (' + ', '.join(sorted(table)) + ')')
            out.append(table[part])
        return tuple(out + ['None'] * (3 - len(out)))

    def _rule_layers(self):
        if self.custom:
            self._custom_gnn_layers()
            return
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
        if layer_norm and self.source == CSA:
            self.fail('gt.layer_norm', "CSA's layer with its graph-wise norms "
                      'is not translated here; set gt.layer_norm False and '
                      'gt.batch_norm True for its BatchNorm')
        graphnorm = ("GraphNorm (GraphGPS's layer: a per-graph norm with a "
                     'learned mean scale)')
        graph_layer = ("PyG's graph-wise LayerNorm (GEAET's layer: mean and "
                       'variance over the nodes and channels of each graph)')
        norm = (('graph_layer' if self.source == GEAET else 'graphnorm')
                if layer_norm else 'batch' if batch_norm else 'none')
        self.translate(('gt.layer_norm', 'gt.batch_norm'), {'gt.norm': norm},
                       (graph_layer if self.source == GEAET else graphnorm)
                       if layer_norm else '')
        for key, value in _LAYER_PARITY.items():
            self.put(key, value)
        self.put('gt.parity_norm_without_ffn', False)
        if self.source == GRAPHGPS:
            self.act = 'relu'
            self.inert('gnn.act', "GraphGPS's layer and heads always use ReLU")
        else:
            act = str(self.get('gnn.act'))
            if act not in _ACTS:
                self.fail('gnn.act', 'activations here: ' + ', '.join(sorted(_ACTS)))
            self.act = _ACTS[act]
        if self.source == GEAET:
            self._geaet_layer()
        else:
            self.copy('gt.dropout')
            self.put('gt.ffn', True)
            self.put('mpnn.out_act', False)
            if self.source == CSA:
                if local == 'GatedGCN' and self.act != 'relu':
                    self.fail('gnn.act', "CSA's GatedGCN always uses ReLU, its "
                              'FFN gnn.act; one activation serves both here')
                self.translate('gnn.act', {'gt.act': self.act, 'mpnn.act': self.act})
            else:
                self.put('gt.act', 'relu')
                self.put('mpnn.act', 'relu')
        if self.source == CSA and glob == 'CSA':
            self._csa_branch()
        self.inert('gt.pna_degrees', 'read by PNA only')
        for key in [k for k in self.src if k.startswith('gt.bigbird.')]:
            self.inert(key, 'read by BigBird only')

    def _geaet_layer(self):
        use_ffn = bool(self.get('gt.use_ffn'))
        self.translate('gt.use_ffn', {'gt.ffn': use_ffn,
                                      'gt.parity_norm_without_ffn': not use_ffn},
                       '' if use_ffn else "GEAET's layer still applies the "
                       "FFN's norm to the sum of the branches")
        self.translate('gnn.act', {'gt.act': self.act, 'mpnn.act': self.act})
        # The dropouts that act in GEAET's layer for this stack: the FFN's
        # (ffn_dropout, also GatedGCN's own dropout of its node and edge
        # updates), then one per branch on its output.
        ffn = float(self.get('gt.ffn_dropout'))
        branch = {}
        if self.local == 'GatedGCN':
            branch['local'] = ('gt.ffn_dropout', ffn)
        elif self.local != 'None':
            branch['local'] = ('gt.local_dropout', float(self.get('gt.local_dropout')))
        if self.glob != 'None':
            branch['global'] = ('gt.global_dropout', float(self.get('gt.global_dropout')))
        if self.ext != 'None':
            branch['external'] = ('gt.external_dropout',
                                  float(self.get('gt.external_dropout')))
        if use_ffn or self.local == 'GatedGCN':
            base, keys = ffn, ['gt.ffn_dropout']
        else:  # no FFN: the first branch's rate serves as gt.dropout
            base, keys = next(iter(branch.values()), ('', 0.0))[1], []
        target = {'gt.dropout': base}
        for kind, (key, rate) in branch.items():
            if key not in keys:
                keys.append(key)
            if rate != base:
                target[f'gt.dropout_{kind}'] = rate
        self.translate(tuple(keys), target, '' if len(target) == 1 else
                       'gt.dropout' + (' for the FFN' + (' and GatedGCN' if
                                                        self.local == 'GatedGCN'
                                                        else '')
                                       if keys and keys[0] == 'gt.ffn_dropout'
                                       else '') +
                       ', gt.dropout_<branch> where a branch differs')
        self.inert('gt.local_dropout', "GatedGCN applies gt.ffn_dropout "
                   "itself in GEAET's code" if self.local == 'GatedGCN'
                   else 'no local branch')
        for key in ('gt.ffn_dropout', 'gt.global_dropout', 'gt.external_dropout'):
            self.inert(key, 'no such block in this layer')
        if self.local in ('GCN', 'GIN', 'GINE'):
            self.translate('gt.local_out_act',
                           {'mpnn.out_act': bool(self.get('gt.local_out_act'))})
        else:
            self.put('mpnn.out_act', False)
            self.inert('gt.local_out_act', 'read for GCN, GIN and GINE only')
        if self.ext == 'GEANet':
            self._geanet()
        for key in [k for k in self.src if k.startswith('GEANet.')]:
            self.inert(key, 'no GEANet branch in gt.layer_type')

    def _geanet(self):
        heads, unit = int(self.get('GEANet.n_heads')), int(self.get('GEANet.unit_size'))
        edge, shared = bool(self.get('GEANet.edge_unit')), bool(self.get('GEANet.shared_unit'))
        dim = int(self.get('gt.dim_hidden'))
        if unit * heads != dim:
            self.fail('GEANet.unit_size', f'GEAET requires unit_size x n_heads '
                      f'({unit} x {heads}) == gt.dim_hidden ({dim})')
        if shared and not edge:
            self.fail('GEANet.shared_unit', "GEAET's code builds the shared "
                      'unit only with GEANet.edge_unit True')
        self.translate('GEANet.n_heads', {'gea.n_heads': heads})
        self.translate('GEANet.unit_size', {'gea.num_slots': unit,
                                            'gea.parity_slots_eq_head_dim': True})
        self.translate('GEANet.edge_unit', {'gea.edge_unit': edge})
        self.translate('GEANet.shared_unit', {'gea.shared_unit': shared})
        self.put('gea.node_unit', True)
        if shared:
            self.put('gea.shared_width', 'full')
        parity = ('gea.parity_unit_bias', 'gea.parity_no_out_proj',
                  'gea.parity_batch_softmax')
        if edge:  # the edge stream's options exist only with an edge unit
            self.put('gea.edge_norm', 'none')
            parity += ('gea.parity_strided_edge_heads', 'gea.parity_edge_no_skip')
        for key in parity:
            self.put(key, True)
        self.note('GEANet as in the GEAET code -> ' + ', '.join(
            f'{k} True' for k in parity) + ' (affine units, no output maps, '
            'slot softmax over the mini-batch, strided edge heads, new edges '
            'without skip)')

    def _csa_branch(self):
        shared = bool(self.get('dataset.edge_encoder_shared'))
        self.translate('dataset.edge_encoder_shared', {
            'csa.share_edge_params': shared, 'csa.parity_edge_bias': shared})
        for key, value in (('csa.mono', False), ('csa.out_proj', True),
                           ('csa.edge_value', True),
                           ('csa.attn_dropout_mode', 'connection')):
            self.put(key, value)
        if not bool(self.get('dataset.edge_encoder_dense')):
            self.fail('dataset.edge_encoder_dense', "CSA's dense pair "
                      'features are always built here')
        self.inert('dataset.edge_encoder_dense', 'dense pair features, as here')

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
        if self.source == CSA and self.glob == 'CSA':
            self._csa_pair_encoder(name)
            return
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

    def _csa_pair_encoder(self, name: str):
        if self.local != 'None':
            self.fail('gt.layer_type', f"CSA's {self.src.get('gt.layer_type')} "
                      'feeds the local model the sparse edges of the CSA edge '
                      'encoder (bond types || relative encoding); the local '
                      'branch here has its own edge encoder')
        parts = name.split('+')
        if len(parts) != 2 or parts[0] not in _CSA_TYPE_EDGE or \
                parts[1] not in ('RWSE', 'SPDE', 'None'):
            self.fail('dataset.edge_encoder_name', "CSA's edge encoder here is "
                      "'<type>+<RPE>' with a type in " + ', '.join(_CSA_TYPE_EDGE)
                      + ' and an RPE in RWSE, SPDE, None')
        bond, rpe = _CSA_TYPE_EDGE[parts[0]], parts[1]
        target = {'dataset.edge_encoder_name': bond, 'pairenc.combine': 'concat',
                  'pairenc.dim_rpe': 0, 'pairenc.on_the_fly': True}
        keys = ['dataset.edge_encoder_name']
        if rpe == 'RWSE':
            times = self._rwse_times()
            if times != list(range(1, len(times) + 1)):
                self.fail('posenc_RWSE.kernel.times_func',
                          'the Edge-RWSE here uses the walk lengths 1..p')
            target.update({'pairenc.rpe': 'rwse', 'pairenc.steps': len(times)})
        elif rpe == 'SPDE':
            keys.append('dataset.spd_max_length')
            target.update({'pairenc.rpe': 'spd',
                           'pairenc.steps': int(self.get('dataset.spd_max_length'))})
        else:
            target['pairenc.rpe'] = 'none'
        self.translate(tuple(keys), target, 'half the width for the bond '
                       'types, half for the relative encoding'
                       if rpe != 'None' else '')
        self.inert('dataset.spd', 'distances are computed when pairenc.rpe is spd')
        self.inert('dataset.spd_max_length', 'no SPDE in the edge encoder')
        if bool(self.get('dataset.rings')):
            coalesce = bool(self.get('dataset.rings_coalesce_edges'))
            self.translate(('dataset.rings', 'dataset.rings_max_length',
                            'dataset.rings_coalesce_edges'),
                           {'pairenc.rings': True,
                            'pairenc.ring_max_size': int(self.get('dataset.rings_max_length')),
                            'pairenc.ring_mode': 'categorical' if coalesce else 'additive'},
                           'bond type x ring membership' if coalesce else
                           "CSA's RingEdge embeddings added")
        else:
            self.translate('dataset.rings', {'pairenc.rings': False})
            for key in ('dataset.rings_max_length', 'dataset.rings_coalesce_edges'):
                self.inert(key, 'dataset.rings is False')

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
            name = 'graph_node_mlp' if self.source == CSA else 'graph_mlp'
            target = {'gnn.head': name, 'head.layers': 3, 'head.width': 'halving'}
            if self.source == CSA:  # CSA's san_graph: MLP on the nodes, then pool
                mlp['head.act'] = self.act
            self.translate('gnn.head', dict(target, **mlp))
            self.inert('gnn.layers_post_mp', 'san_graph always has 3 layers')
        elif head in ('graph', 'node', 'inductive_node'):
            name = 'graph_mlp' if head == 'graph' else 'inductive_node'
            self.translate(keys, dict({'gnn.head': name, 'head.layers': post,
                                       'head.width': 'constant'}, **mlp))
        elif head == 'mlp_graph' and self.source == GEAET:
            # GEAET's own head: pool, then (Dropout, Linear, act) x (L-1),
            # Dropout, Linear: gnn.dropout before every Linear layer.
            rate = float(self.get('gnn.dropout'))
            mlp.update({'head.act': self.act, 'head.dropout': rate,
                        'head.input_dropout': rate})
            self.translate(keys + ('gnn.dropout',), dict(
                {'gnn.head': 'graph_mlp', 'head.layers': post,
                 'head.width': 'constant'}, **mlp))
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
                      'ogb_code_graph' + (', mlp_graph' if self.source == GEAET else ''))
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


def translate(raw: Dict[str, Any], source: Optional[str] = None,
              path: str = '', ours: Optional[Dict[str, Any]] = None,
              overrides: Sequence[str] = ()) -> Translation:
    """Translate a parsed foreign config (``source`` detected when ``None``).

    ``ours``: this project's defaults as a flat ``{dotted key: value}``
    (optional): a source default equal to ours is then not logged.
    ``overrides``: the keys the command line sets (they settle the few
    choices the translation cannot make, e.g. ``gt.dropout`` for GEAET's
    unequal per-branch dropouts).
    Raises :class:`~graphgps_ext.config.ConfigError` for a refused key."""
    source = source or detect(raw)
    if source not in SOURCES:
        raise ValueError('not a GraphGPS, GEAET or CSA config')
    return _Translator(source, flatten(raw, keep_empty=True), path, ours, overrides).run()


def translate_file(path: str, ours: Optional[Dict[str, Any]] = None,
                   overrides: Sequence[str] = ()) -> Optional[Translation]:
    """The :class:`Translation` of a foreign config file, ``None`` for one of
    this project's configs (``ours``, ``overrides`` as in :func:`translate`)."""
    raw = read_yaml(path)
    source = detect(raw)
    return None if source is None else translate(raw, source, path, ours, overrides)


_last: Optional[Translation] = None
_logged: Dict[str, Tuple[float, int]] = {}
_quiet = [False]


@contextlib.contextmanager
def quiet():
    """Within it, :func:`merge_config_file` does not log the notes (a caller
    that prints them itself, e.g. ``--dry-run``)."""
    before, _quiet[0] = _quiet[0], True
    try:
        yield
    finally:
        _quiet[0] = before


def last_translation() -> Optional[Translation]:
    """The translation of the last file merged by :func:`merge_config_file`
    (``None`` if it was this project's own config)."""
    return _last


def merge_config_file(cfg, path: str, opts: Optional[Sequence[str]] = None
                      ) -> Tuple[Optional[Translation], List[str]]:
    """Merge the config file ``path`` into ``cfg``: a GraphGPS, GEAET or CSA
    config is translated first (its notes logged once per file and
    process); this project's own configs are merged unchanged. ``opts``: the
    command line's ``KEY VALUE`` list (merged later by the caller; its keys
    settle the choices a translation cannot make). Returns the
    :class:`Translation` (or ``None``) and the dotted keys the file sets."""
    global _last
    raw = read_yaml(path)
    source = detect(raw)
    translation = None if source is None else translate(
        raw, source, path, flatten(cfg, keep_empty=True), list(opts or [])[0::2])
    _last = translation
    keys = merge_data(cfg, raw if translation is None else translation.config, path)
    if translation is not None:
        stamp = os.stat(path)
        key = os.path.abspath(path)
        if not _quiet[0] and _logged.get(key) != (stamp.st_mtime, stamp.st_size):
            _logged[key] = (stamp.st_mtime, stamp.st_size)
            log_translation(translation)
    return translation, keys


def log_translation(translation: Translation, emit: Optional[Callable] = None):
    """Log (or ``emit``) the notes of a translation, one line each."""
    emit = emit or _info
    emit(f'{translation.path}: {translation.source} config, translated '
         f'({len(translation.notes)} notes, {len(translation.kept)} keys kept '
         'as they are):')
    for line in translation.notes:
        emit(f'  {line}')


def _info(msg: str):
    if logging.getLogger('graphgps_ext').handlers:
        log.info(msg)
    else:  # before the run's logging is set up (main.py loads the config first)
        print(msg, flush=True)


def authors_count(translation: Translation, cfg, params: int) -> Tuple[int, List[str]]:
    """``(count, reasons)``: the parameter count the authors' code builds
    from the foreign config of ``translation``, given ``params``, the count
    of the model built here from its translation, and one line per module
    that makes them differ. GraphGPS and GEAET configs build the same
    modules here (no reason). CSA's layer allocates modules it never uses:
    ``norm1_local``, a BatchNorm of the local branch (2 d per layer), built
    even without a local model; and a third row of its dense edge table
    (d / 2), the padding index, never trained. With categorical rings the
    pair encoder here has one learned row more than CSA's table instead."""
    if translation.source != CSA or not has_csa_branch(cfg):
        return params, []
    d, layers = int(cfg.gt.dim_hidden), int(cfg.gt.layers)
    local = str(cfg.gt.layer_type).split('+')[0]
    extra, reasons = 0, []
    if local in ('None', 'none', '') and cfg.gt.norm == 'batch':
        extra += 2 * d * layers
        reasons.append(f'+{2 * d * layers:,}: norm1_local, the BatchNorm of a local '
                       f'branch (2 x {d} per layer, x {layers} layers), which CSA\'s '
                       'layer allocates without a local model and never uses')
    half = d // 2
    if cfg.pairenc.rings and cfg.pairenc.ring_mode == 'categorical':
        extra -= half
        reasons.append(f'-{half}: the pair encoder here learns one row more than '
                       f"CSA's edge table with categorical rings ({d}/2)")
    else:
        extra += half
        reasons.append(f"+{half}: the padding row of CSA's dense edge table "
                       f'({d}/2), allocated and never trained')
    return params + extra, reasons


def has_csa_branch(cfg) -> bool:
    return 'CSA' in str(cfg.gt.layer_type).split('+')
