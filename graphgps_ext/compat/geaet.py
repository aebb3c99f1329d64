"""GEAET configs (the GEAET authors' code, built on GraphGPS): the markers,
defaults and tables of GEAET's keys, and the rules of its layer (per-branch
dropouts, optional FFN), its GEANet branch and its ``mlp_graph`` head."""
from graphgps_ext.compat.common import (GEAET, GRAPHGYM_DEFAULTS, LOCAL_MODELS,
                                        Translator)

#: Keys only GEAET configs have (``GEANet.*``: any key of the group).
MARKERS = ('GEANet.*', 'gt.ffn_dropout', 'gt.global_dropout',
           'gt.local_dropout', 'gt.external_dropout', 'gt.use_ffn',
           'gt.local_out_act')

#: GEAET's defaults of its own keys.
DEFAULTS = dict(GRAPHGYM_DEFAULTS, **{
    'gt.use_ffn': True, 'gt.ffn_dropout': 0.0, 'gt.global_dropout': 0.0,
    'gt.local_dropout': 0.0, 'gt.external_dropout': 0.0,
    'gt.local_out_act': False, 'GEANet.n_heads': 4, 'GEANet.unit_size': 4,
    'GEANet.edge_unit': False, 'GEANet.shared_unit': False})


class GEAETTranslator(Translator):
    """GEAET's ``GEAET`` network: ``<local>+<global>+<external>`` layers."""
    source = GEAET
    markers = MARKERS
    defaults = DEFAULTS
    model_type = 'GEAET'
    layer_parts = 3
    local_models = dict(LOCAL_MODELS, GCN='GCN', GIN='GIN')
    graph_norm = ('graph_layer', "PyG's graph-wise LayerNorm (GEAET's layer: mean "
                  'and variance over the nodes and channels of each graph)')
    extra_heads = ('mlp_graph',)

    def _extra_head(self, head: str, keys, mlp, post: int):
        """GEAET's own ``mlp_graph`` head: pool, then (Dropout, Linear, act)
        x (L-1), Dropout, Linear: gnn.dropout before every Linear layer."""
        rate = float(self.get('gnn.dropout'))
        mlp.update({'head.act': self.act, 'head.dropout': rate,
                    'head.input_dropout': rate})
        self.translate(keys + ('gnn.dropout',), dict(
            {'gnn.head': 'graph_mlp', 'head.layers': post,
             'head.width': 'constant'}, **mlp))

    def _layer_branches(self):
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

