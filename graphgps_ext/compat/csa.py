"""CSA configs (the CSA authors' code, built on GraphGPS): the markers,
defaults and tables of CSA's keys, the rules of its attention branch and
pair (edge) encoder, and the parameter count its code builds."""
from typing import List, Tuple

from graphgps_ext.branches import parse_layer_type
from graphgps_ext.compat.common import (CSA, GLOBAL_MODELS, GRAPHGYM_DEFAULTS,
                                        Translation, Translator)

#: Keys only CSA configs have.
MARKERS = ('dataset.edge_encoder_shared', 'dataset.rings',
           'dataset.rings_max_length', 'dataset.rings_coalesce_edges',
           'dataset.spd', 'dataset.spd_max_length', 'dataset.edge_encoder_dense',
           'posenc_RWSE.precompute', 'posenc_RWSE.enable_edges')

#: CSA's defaults of its own keys.
DEFAULTS = dict(GRAPHGYM_DEFAULTS, **{
    'dataset.edge_encoder_shared': False, 'dataset.rings': False,
    'dataset.rings_max_length': 6, 'dataset.rings_coalesce_edges': False,
    'dataset.spd': False, 'dataset.spd_max_length': 6,
    'dataset.edge_encoder_dense': True, 'posenc_RWSE.precompute': True,
    'posenc_RWSE.enable_edges': True})

#: The bond types of CSA's edge encoder ``<type>+<RPE>``.
TYPE_EDGE = {'TypeDictEdge': 'TypeDictEdge', 'Bond': 'Bond',
             'LinearEdge': 'LinearEdge', 'Dummy': 'DummyEdge'}


class CSATranslator(Translator):
    """CSA's ``GPSModel`` with a ``CSA`` global branch (or GraphGPS's)."""
    source = CSA
    markers = MARKERS
    defaults = DEFAULTS
    global_models = dict(GLOBAL_MODELS, CSA='CSA')
    graph_norm = None  # CSA's layer with graph-wise norms: not translated
    san_graph_head = 'graph_node_mlp'  # CSA's san_graph: MLP on the nodes, then pool
    san_graph_act = True

    def _layer_branches(self):
        self.copy('gt.dropout')
        self.put('gt.ffn', True)
        self.put('mpnn.out_act', False)
        if self.local == 'GatedGCN' and self.act != 'relu':
            self.fail('gnn.act', "CSA's GatedGCN always uses ReLU, its "
                      'FFN gnn.act; one activation serves both here')
        self.translate('gnn.act', {'gt.act': self.act, 'mpnn.act': self.act})
        if self.glob == 'CSA':
            self._csa_branch()

    def _rule_edge_encoder(self):
        if self.glob != 'CSA':
            super()._rule_edge_encoder()
            return
        self.copy('dataset.edge_encoder')
        self._csa_pair_encoder(str(self.get('dataset.edge_encoder_name')))

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

    def _csa_pair_encoder(self, name: str):
        if self.local != 'None':
            self.fail('gt.layer_type', f"CSA's {self.src.get('gt.layer_type')} "
                      'feeds the local model the sparse edges of the CSA edge '
                      'encoder (bond types || relative encoding); the local '
                      'branch here has its own edge encoder')
        parts = name.split('+')
        if len(parts) != 2 or parts[0] not in TYPE_EDGE or \
                parts[1] not in ('RWSE', 'SPDE', 'None'):
            self.fail('dataset.edge_encoder_name', "CSA's edge encoder here is "
                      "'<type>+<RPE>' with a type in " + ', '.join(TYPE_EDGE)
                      + ' and an RPE in RWSE, SPDE, None')
        bond, rpe = TYPE_EDGE[parts[0]], parts[1]
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
    extra, reasons = 0, []
    if parse_layer_type(cfg.gt.layer_type).local is None and cfg.gt.norm == 'batch':
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
    """Whether the translated config (our format) has a CSA branch."""
    return parse_layer_type(cfg.gt.layer_type).has('CSA')
