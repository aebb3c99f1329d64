"""GT (Dwivedi & Bresson, *A Generalization of Transformer Networks to
Graphs*): Table 1, {sparse, full} graph x {BatchNorm, LayerNorm} x {LapPE,
no PE} on ZINC, PATTERN and CLUSTER, as the authors' 500k configs."""
from .common import (CLUSTER, PATTERN, PE_NOTE, ZINC, Config, Registry, Row, data, head,
                     merge, plateau, stack)

P = 'gt'
SRC = 'the authors\' model (graphdeeplearning/graphtransformer, {} 500k config), counted'
# name: (dataset, d, LapPE k, batch, lr, plateau patience, authors' count)
MODELS = {
    'zinc': ('ZINC', ZINC, 64, 8, 128, 7e-4, 15, 588929),
    'pattern': ('PATTERN', PATTERN, 80, 2, 26, 5e-4, 10, 522982),
    'cluster': ('CLUSTER', CLUSTER, 80, 10, 32, 5e-4, 10, 524026),
}


def build(reg: Registry):
    for key, (name, ds, dim, k, batch, lr, patience, params) in MODELS.items():
        for graph in ('sparse', 'full'):
            for norm in ('bn', 'ln'):
                for pe in ('lappe', 'nope'):
                    main = graph == 'sparse' and norm == 'bn' and pe == 'lappe'
                    edge = name == 'ZINC' and graph == 'sparse'
                    fmt, dname, node, edge_enc = ds
                    # The SBM node labels through an embedding table (no bias), as
                    # the authors' nn.Embedding(in_dim, d).
                    if name in ('PATTERN', 'CLUSTER'):
                        node = 'OneHotNode'
                    dblock = data(fmt, dname, node + ('+LapPE' if pe == 'lappe' else ''),
                                  edge_enc if edge else None)
                    cfg = merge({'dataset': dblock},
                                stack('None+GT+None', layers=10, dim=dim, heads=8,
                                      dropout=0.0, attn_dropout=0.0,
                                      norm='batch' if norm == 'bn' else 'layer'),
                                {'gtlayer': {'full_graph': graph == 'full',
                                             'edge_features': edge}},
                                head(layers=3, pool='mean' if name == 'ZINC' else None,
                                     width='halving'),
                                plateau(lr=lr, epochs=1000, patience=patience, batch=batch,
                                        min_lr=1e-6))
                    if pe == 'lappe':
                        cfg = merge(cfg, {'posenc_LapPE': {
                            'enable': True, 'model': 'linear', 'dim_pe': dim,
                            'combine': 'add', 'sign_flip': True, 'raw_norm_type': 'none',
                            'eigen': {'laplacian_norm': 'sym', 'max_freqs': k,
                                      'skip_trivial': True}}})
                    label = (f'GT {graph} {"LapPE" if pe == "lappe" else "noPE"} '
                             f'{norm.upper()}' + (' (edge features)' if edge else ''))
                    metric = 'mae' if name == 'ZINC' else 'accuracy_sbm'
                    row = (Row(P, 'table1', '0-3', name, label, metric) if main else
                           Row(P, 'table1', '0-3', name, label))
                    path = f'gt/{key}.yaml' if main else f'gt/{key}-{graph}-{norm}-{pe}.yaml'
                    notes = [f'authors\' {name} 500k config: 10 layers, 8 heads, d {dim}, '
                             f'LapPE k = {k} (linear map added to the embedding, random sign '
                             f'flips), Adam lr {lr}, plateau x0.5 (patience {patience}) down '
                             f'to 1e-6, batch {batch}, 4 seeds']
                    if name in ('PATTERN', 'CLUSTER'):
                        notes.append('node labels embedded by a table (OneHotNode: a '
                                     'bias-free map of the one-hot labels), as the authors\' '
                                     'nn.Embedding')
                    if name == 'ZINC' and graph == 'full':
                        notes.append('full graph: edge features dropped (node layer), as '
                                     'the paper')
                    notes += [PE_NOTE[name]] if name in PE_NOTE else []
                    src = SRC.format(name)
                    reg.add(Config(path, f'GT ({graph} graph, {norm.upper()}, '
                                         f'{"LapPE" if pe == "lappe" else "no PE"}) on {name} '
                                         '(GT Table 1)', cfg,
                                   params if main else None, src if main else 'not published',
                                   params, 'the authors\' 500k-budget model', notes=notes,
                                   rows=[row]))
