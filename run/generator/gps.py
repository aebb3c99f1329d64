"""GraphGPS (Rampášek et al., *Recipe for a General, Powerful, Scalable Graph
Transformer*, NeurIPS 2022): the GPS models of the datasets the other papers
compare on, as the authors' configs/GPS."""
from .common import (BENCH_SEEDS, CIFAR10, CLUSTER, LRGB_SEEDS, METRIC, MNIST, PATTERN,
                     PE_NOTE, PEP_FUNC, PEP_STRUCT, VOC, ZINC, Config, Registry, Row,
                     dataset_block, head, lappe, merge, optim, rwse, stack, train)

P = 'gps'
SRC = 'the authors\' model built from GraphGPS configs/GPS/{}'


def _gps(ds, pe, pe_cfg, *, layers, dim, heads, dropout=0.0, hd, batch, lr, epochs,
         warmup=5, wd=0.0, extra=None):
    return merge(dataset_block(ds, pe=pe), pe_cfg,
                 stack('GatedGCN+Transformer+None', layers=layers, dim=dim, heads=heads,
                       dropout=dropout, attn_dropout=0.5),
                 hd, train(batch=batch), optim(lr=lr, epochs=epochs, warmup=warmup, wd=wd),
                 extra or {})


def build(reg: Registry):
    lap8, lap10 = lappe(k=8, dim=8), lappe(k=10, dim=16)
    specs = {
        'zinc': ('ZINC', 'zinc-GPS+RWSE.yaml', 423717, merge(
            dataset_block(ZINC, pe='RWSE'), rwse(steps=20, dim=28),
            stack('GINE+Transformer+None', layers=10, dim=64, heads=4, dropout=0.0,
                  attn_dropout=0.5),
            head(layers=3, pool='add', width='halving'), train(batch=32),
            optim(lr=1e-3, epochs=2000, warmup=50, wd=1e-5))),
        'cifar10': ('CIFAR10', 'cifar10-GPS.yaml', 112726, _gps(
            CIFAR10, 'LapPE', lap8, layers=3, dim=52, heads=4,
            hd=head(layers=2, pool='mean', width='constant'), batch=16, lr=1e-3, epochs=100,
            wd=1e-5)),
        'mnist': ('MNIST', 'mnist-GPS.yaml', 115394, _gps(
            MNIST, 'LapPE', lap8, layers=3, dim=52, heads=4,
            hd=head(layers=3, pool='mean', width='constant'), batch=16, lr=1e-3, epochs=100,
            wd=1e-5)),
        'pattern': ('PATTERN', 'pattern-GPS.yaml', 337201, _gps(
            PATTERN, 'LapPE', lap10, layers=6, dim=64, heads=4,
            hd=head(layers=3, width='constant'), batch=32, lr=5e-4, epochs=100, wd=1e-5,
            extra={'dataset': {'num_outputs': 1}})),
        'cluster': ('CLUSTER', 'cluster-GPS.yaml', 502054, _gps(
            CLUSTER, 'LapPE', lap10, layers=16, dim=48, heads=8, dropout=0.1,
            hd=head(layers=3, width='constant'), batch=16, lr=1e-3, epochs=100, wd=1e-5)),
        'peptides-func': ('Peptides-func', 'peptides-func-GPS.yaml', 504442, _gps(
            PEP_FUNC, 'LapPE', lap10, layers=4, dim=96, heads=4,
            hd=head(layers=1, pool='mean'), batch=128, lr=3e-4, epochs=200, warmup=10)),
        'peptides-struct': ('Peptides-struct', 'peptides-struct-GPS.yaml', 504539, _gps(
            PEP_STRUCT, 'LapPE', lap10, layers=4, dim=96, heads=4,
            hd=head(layers=1, pool='mean'), batch=128, lr=3e-4, epochs=200, warmup=10)),
        'voc': ('PascalVOC-SP', 'vocsuperpixels-GPS.yaml', 510453, _gps(
            VOC, 'LapPE', lap10, layers=4, dim=96, heads=8,
            hd=head(layers=3, width='constant'), batch=32, lr=5e-4, epochs=300, warmup=10)),
    }
    for key, (name, src, params, cfg) in specs.items():
        budget = 100000 if name in ('MNIST', 'CIFAR10') else 500000
        lrgb = name in ('Peptides-func', 'Peptides-struct', 'PascalVOC-SP')
        notes = ['the GraphGPS authors\' configs/GPS model and protocol']
        if name == 'PATTERN':
            notes.append('one output logit (GraphGym\'s binary convention, '
                         'dataset.num_outputs 1), as the authors\' model')
        notes += [PE_NOTE[name]] if name in PE_NOTE else []
        reg.add(Config(f'gps/{key}.yaml', f'GraphGPS (GPS) on {name}', cfg, params,
                       SRC.format(src), budget,
                       'Benchmarking GNNs ~100k' if budget == 100000 else
                       ('LRGB 500k' if lrgb else 'Benchmarking GNNs 500k'),
                       notes=notes,
                       rows=[Row(P, 'baselines', LRGB_SEEDS if lrgb else BENCH_SEEDS, name,
                                 'GPS', METRIC[name])]))
