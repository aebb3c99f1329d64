"""GraphGPS configs (Rampášek et al.): the markers, and the rules of the
keys GEAET and CSA do not share (its ReLU-only layer, ``custom_gnn``)."""
from graphgps_ext.compat.common import (GRAPHGPS, GRAPHGYM_DEFAULTS,
                                        Translator, layer_parity)

#: Keys only GraphGPS configs (or those of the code bases built on it) have.
MARKERS = ('train.mode', 'name_tag', 'train.finetune',
           'train.freeze_pretrained', 'train.ckpt_best',
           'dataset.node_encoder_num_types', 'dataset.edge_encoder_num_types',
           'dataset.slic_compactness', 'dataset.split_index',
           'dataset.split_dir', 'run_multiple_splits',
           'optim.batch_accumulation', 'gt.layer_norm', 'gt.batch_norm',
           'gt.full_graph', 'gt.gamma', 'gt.pna_degrees', 'gt.bigbird.*',
           'posenc_SignNet.*', 'posenc_HKdiagSE.*', 'posenc_ElstaticSE.*',
           'posenc_LapPE.eigen.eigvec_norm',
           'posenc_EquivStableLapPE.eigen.eigvec_norm', 'pretrained.*',
           'gnn.residual')


class GraphGPSTranslator(Translator):
    """GraphGPS's ``GPSModel`` and ``custom_gnn`` networks."""
    source = GRAPHGPS
    markers = MARKERS
    defaults = dict(GRAPHGYM_DEFAULTS)
    custom_model = 'custom_gnn'

    def _rule_layers(self):
        if self.custom:
            self._custom_gnn_layers()
        else:
            super()._rule_layers()

    def _activation(self) -> str:
        self.inert('gnn.act', "GraphGPS's layer and heads always use ReLU")
        return 'relu'

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
        for key, value in dict(layer_parity(conv), **{
                'gt.ffn': False, 'gt.norm': 'none', 'gt.act': 'relu',
                'gt.parity_norm_without_ffn': False, 'mpnn.act': 'relu',
                'mpnn.out_act': conv == 'GINE'}).items():
            self.put(key, value)
        self.act = 'relu'
        self.inert('gnn.act', "GraphGPS's GatedGCN and GINE layers always use ReLU")
        for key in [k for k in self.src if k.startswith('gt.')]:
            self.inert(key, 'custom_gnn reads gnn.*')

