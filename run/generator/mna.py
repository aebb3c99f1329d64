"""MNA-GT (Li, Chen, He, *Adaptive Multi-Neighborhood Attention based
Transformer for Graph Representation Learning*): Tables 2-4, Figures 2-4.

The paper has no public code; what it states and what is guessed:

- stated (§4.1-4.2, eq. 5-12): kernels (Â^k X, Â^k X, X) for k = 0..c with
  their own projections, adaptive fusion (eq. 9-10), pre-LayerNorm layers with
  the residual ÂX and a two-layer GELU FFN; a pooling layer and an MLP;
- stated (§4.3): "MNA-GT usually sets the number of kernels as c = 3" and
  m = 2 or 3 heads per kernel: 3 kernels (mna.hops 2, k = 0, 1, 2; Figure 1
  draws three) with m = 2;
- stated (§5.2): grid layers {2, 3, 4, 5}, kernels {2, 3, 4}, width {128, 256,
  300}; lr 2e-4, weight decay 1e-5, dropout 0.2, AdamW with the Transformer
  warm-up (optim.scheduler transformer_warmup); TU: 100 epochs, batch 256, 10
  seeds, random 8:1:1 splits; OGB: 30 epochs, batch 16 or 32, 5 seeds;
- head width: eq. 8 writes W_O in R^{(m d_v) x d_v}, i.e. heads d_v = d wide,
  but Table 5's 0.4M for NCI1 rules that out: the smallest full-width model
  of the grid (2 layers, 2 kernels, d 128, m = 2, FFN d) has 646,018
  parameters, with 3 kernels 908,162; heads of d/m channels (the Transformer
  convention) are used, full width is mna.head_dim = d;
- guessed: FFN width d (gt.ffn_mult 1), warm-up length, the readout (sum on
  the TU sets, mean on OGB), the 2-layer head MLP, the layers and width of
  each dataset (Table 5 sizes);
- searched: NCI1's layers and kernels (run/grids/mna-nci1-cpu.txt, the
  search and its final runs in docs/results.md);
- beyond the paper: mna/nci1-long.yaml, NCI1's model trained for 300
  epochs, because 100 leave it under-trained (docs/results.md).
"""
from typing import Any, Dict

from .common import BENCH_SEEDS, Config, Registry, Row, data, head, merge, optim, stack, train

P = 'mna'
TU = {'NCI1': ('PyG-TUDataset', 'NCI1', 'LinearNode', None),
      'NCI109': ('PyG-TUDataset', 'NCI109', 'LinearNode', None),
      'COLLAB': ('PyG-TUDataset', 'COLLAB', 'TypeDictNode', None)}
# 2 layers, d 128, 3 kernels (c = 2), m = 2 heads of d/m per kernel.
TU_ARCH = dict(layers=2, dim=128, heads=2, hops=2)
# NCI1: the point chosen by the search over run/grids/mna-nci1-cpu.txt (best mean
# validation accuracy over 2 seeds of 30 epochs; table in docs/results.md):
# 3 layers, 4 kernels (mna.hops 3), d 128.
SEARCHED = {'NCI1': dict(layers=3, dim=128, heads=2, hops=3)}
# NCI1 trained to convergence (beyond the paper's 100 epochs): runs of 190 epochs
# reach their best validation accuracy at epochs 154-160 (docs/results.md).
LONG, LONG_EPOCHS = 'nci1-long.yaml', 300
# Warm-up epochs of the Transformer schedule (not published).
WARMUP_TU, WARMUP_OGB = 10, 2


def mna_stack(*, layers: int, dim: int, heads: int, hops: int, fusion: str = 'adaptive',
              head_dim: int = 0, dropout: float = 0.2) -> Dict[str, Any]:
    """The MNA-GT layer of eq. 11-12: pre-LayerNorm, GELU FFN of width d."""
    m = {'hops': hops, 'adj_norm': 'sym', 'fusion': fusion}
    if fusion == 'adaptive':
        m['fusion_act'] = 'tanh'
    if head_dim:
        m['head_dim'] = head_dim
    return merge(stack('None+MNA+None', layers=layers, dim=dim, heads=heads, dropout=dropout,
                       attn_dropout=0.0, norm='layer', act='gelu', pre_norm=True,
                       ffn_mult=1.0), {'mna': m})


def protocol(*, batch: int, epochs: int, warmup: int) -> Dict[str, Any]:
    return merge(train(batch=batch), optim(lr=2e-4, epochs=epochs, warmup=warmup, wd=1e-5,
                                           scheduler='transformer_warmup'))


GUESSES = ('guesses (not published): {arch}; FFN width d; readout {pool} then a 2-layer MLP; '
           'warm-up {warmup} epochs of the Transformer schedule')
NCI1_SIZE = ('MNA-GT Table 5 gives 0.4M for NCI1; the searched point has {n:,}, the only '
             'grid point near 0.4M is 2 layers, 2 kernels, d 128 (383,874), which ranked 4th '
             'of 6 in the search (docs/results.md)')


def nci1_long(reg: Registry, paper: Config):
    """The model of ``mna/nci1.yaml`` trained to convergence: the paper's 100
    epochs (1,300 steps at batch 256) leave it under-trained (docs/results.md);
    only ``optim.max_epoch`` changes, the run keeps the epoch of best
    validation accuracy."""
    reg.add(Config(f'mna/{LONG}', f'MNA-GT on NCI1 trained to convergence: the model and '
                   f'optimiser of configs/mna/nci1.yaml for {LONG_EPOCHS} epochs instead of the '
                   'paper\'s 100, test accuracy at the epoch of best validation accuracy',
                   merge(paper.cfg, {'optim': {'max_epoch': LONG_EPOCHS}}), paper.params,
                   paper.params_src, paper.budget, paper.budget_src,
                   notes=paper.notes + [f'not the paper\'s protocol: {LONG_EPOCHS} epochs; the '
                                        'learning rate of the Transformer schedule depends on the '
                                        'epoch only, so its first 100 epochs have those of '
                                        'configs/mna/nci1.yaml'],
                   rows=[Row(P, 'table2', BENCH_SEEDS, 'NCI1', 'MNA-GT', 'accuracy')]))


def tu(reg: Registry):
    for name, ds in TU.items():
        key = name.lower()
        a = SEARCHED.get(name, TU_ARCH)
        size = ('chosen by a search over the paper\'s grid at d 128: run/grids/mna-nci1-cpu.txt, '
                'docs/results.md' if name in SEARCHED else
                'the smallest of the paper\'s grid, the nearest to Table 5\'s 0.4M')
        arch = (f'{a["layers"]} layers, {a["hops"] + 1} kernels, d {a["dim"]} ({size}); heads of '
                'd/m channels (Table 5 rules out eq. 8\'s full-width heads, see docs/layers.md)')
        notes = ['MNA-GT §5.2: AdamW lr 2e-4, weight decay 1e-5, dropout 0.2, Transformer '
                 'warm-up; TU datasets 100 epochs, batch 256, random 8:1:1 split per seed; '
                 f'§4.3: usually 3 kernels, m = {a["heads"]} heads per kernel',
                 GUESSES.format(arch=arch, pool='sum', warmup=WARMUP_TU)]
        base = merge({'dataset': data(*ds[:3], split=[0.8, 0.1, 0.1])},
                     mna_stack(**a), head(layers=2, pool='add', width='constant'),
                     protocol(batch=256, epochs=100, warmup=WARMUP_TU))
        if name == 'NCI1':
            budget, bsrc = None, NCI1_SIZE.format(n=958_210)
        elif name == 'NCI109':
            budget, bsrc = None, 'none stated (Table 5 has NCI1 only)'
        else:
            budget, bsrc = None, ('none stated (Table 5 has NCI1 only; COLLAB adds a '
                                  '492-degree embedding)')
        title = f'MNA-GT on {name} (MNA-GT Table 2)'
        if name == 'NCI1':
            title = ('MNA-GT on NCI1, the paper\'s protocol of 100 epochs (MNA-GT Table 2); the '
                     f'same model trained to convergence: configs/mna/{LONG}')
        reg.add(Config(f'mna/{key}.yaml', title, base, None,
                       'no public code; Table 5 rounds to 0.1M', budget, bsrc, notes=notes,
                       rows=[Row(P, 'table2', BENCH_SEEDS, name, 'MNA-GT', 'accuracy')]))
        if name == 'NCI1':
            nci1_long(reg, reg['mna/nci1.yaml'])
        if name == 'COLLAB':
            for fusion in ('sum', 'mean', 'concat'):
                cfg = merge(base, {'mna': {'fusion': fusion}})
                cfg['mna'].pop('fusion_act')
                reg.add(Config(f'mna/collab-fusion-{fusion}.yaml',
                               f'MNA-GT with {fusion} fusion on COLLAB (MNA-GT Table 4)', cfg,
                               None, 'not published', None, 'none stated',
                               notes=notes[:1] + [notes[1] + f'; mna.fusion {fusion}'],
                               rows=[Row(P, 'table4', BENCH_SEEDS, 'COLLAB',
                                         f'MNA-GT fusion={fusion}', 'accuracy')]))
            reg['mna/collab.yaml'].rows.append(
                Row(P, 'table4', BENCH_SEEDS, 'COLLAB', 'MNA-GT fusion=adaptive', 'accuracy'))
        # Figures 2-4: propagation steps k, heads per kernel m, layers L.
        for fig, what, values in (('fig2', 'hops', (1, 2, 3, 4, 5)),
                                  ('fig3', 'heads', (2, 3, 4, 6, 8)),
                                  ('fig4', 'layers', (1, 2, 3, 4, 5))):
            for v in values:
                if what == 'hops':
                    upd = {'mna': {'hops': v}}
                    label = f'k={v} ({v + 1} kernels)'
                elif what == 'heads':
                    upd = {'gt': {'n_heads': v}}
                    if a['dim'] % v:
                        upd['mna'] = {'head_dim': a['dim'] // v}
                    label = f'm={v} heads per kernel'
                else:
                    upd = {'gt': {'layers': v}}
                    label = f'L={v} layers'
                default = {'hops': a['hops'], 'heads': a['heads'], 'layers': a['layers']}[what]
                if v == default:
                    reg[f'mna/{key}.yaml'].rows.append(
                        Row(P, fig, BENCH_SEEDS, name, f'MNA-GT {label}'))
                    continue
                reg.add(Config(f'mna/{key}-{what}{v}.yaml',
                               f'MNA-GT on {name} with {label} (MNA-GT Figure {fig[3:]})',
                               merge(base, upd), None, 'not published', None,
                               'none (parameter study)',
                               notes=notes[:1] + [notes[1] + f'; here {label}'
                                                  + ('; head width d // m (d not divisible '
                                                     'by m)' if what == 'heads' and a['dim'] % v
                                                     else '')],
                               rows=[Row(P, fig, BENCH_SEEDS, name, f'MNA-GT {label}')]))


def ogb(reg: Registry):
    """Table 3: OGB (30 epochs, batch 32, 5 seeds)."""
    for key, name, ds, arch, budget, metric, extra in (
            ('molpcba', 'ogbg-molpcba', ('OGB', 'ogbg-molpcba', 'Atom', 'Bond'),
             dict(layers=4, dim=256, heads=2, hops=2), 3900000, 'ap', ''),
            ('code2', 'ogbg-code2', ('OGB', 'ogbg-code2', 'ASTNode', None),
             dict(layers=4, dim=168, heads=2, hops=2), 7600000, 'f1_subtoken',
             '; d 168 is outside the paper\'s width grid: the code2 head alone has 5 x 5002 x d '
             'weights and the AST encoder a 10,030-row attribute table, so 128 gives 5.5M and '
             '256 13.0M at 4 layers')):
        cfg = merge({'dataset': data(*ds[:3])}, mna_stack(**arch),
                    head(layers=2 if key == 'molpcba' else 1, pool='mean',
                         width='constant' if key == 'molpcba' else None),
                    protocol(batch=32, epochs=30, warmup=WARMUP_OGB))
        a = (f'{arch["layers"]} layers, d {arch["dim"]}, sized to Table 5{extra}; heads of d/m '
             'channels')
        reg.add(Config(f'mna/{key}.yaml', f'MNA-GT on {name} (MNA-GT Table 3)', cfg, None,
                       'no public code; Table 5 rounds to 0.1M', budget,
                       f'MNA-GT Table 5: {budget / 1e6:.1f}M',
                       notes=['MNA-GT §5.2-5.3: 30 epochs, batch 32, AdamW lr 2e-4, Transformer '
                              f'warm-up, 5 seeds; §4.3: {arch["hops"] + 1} kernels (mna.hops '
                              f'{arch["hops"]}), m = {arch["heads"]} heads per kernel',
                              GUESSES.format(arch=a, pool='mean', warmup=WARMUP_OGB)
                              .replace('then a 2-layer MLP', 'then a 2-layer MLP'
                                       if key == 'molpcba' else 'then the code2 sequence '
                                       'head')],
                       rows=[Row(P, 'table3', '0-4', name, 'MNA-GT', metric),
                             Row(P, 'table3', '0-4', name, 'MNA-GT', metric, split='val')]))


def build(reg: Registry):
    tu(reg)
    ogb(reg)
