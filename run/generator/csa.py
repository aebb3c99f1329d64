"""CSA (Menegaux, Jehanno, Selosse, Mairal, *Self-Attention in Colors*):
Tables 1-5 and 7, with the hyper-parameters of its Table 6."""
from typing import Any, Dict, Optional, Tuple

from .common import (ATOM_ROWS, BENCH_SEEDS, DS, PE_NOTE, ZINC, Config, Registry, Row,
                     dataset_block, head, merge, optim, rwse, stack, train)

P = 'csa'
SRC = 'the authors\' model built from their configs/CSA/{}'
# The authors' models are GraphGPS GPSLayers with the CSA global model: each
# layer allocates ``norm1_local`` for a local model that CSA does not use.
BINARY = {'dataset': {'num_outputs': 1}}


def norm1_local(layers: int, dim: int) -> Tuple[int, str]:
    return (-layers * 2 * dim,
            f'the authors\' GraphGPS layer allocates norm1_local (BatchNorm, 2 x {dim}) in '
            f'each of the {layers} layers; without a local model its forward never uses it')


def padding_row(width: int) -> Tuple[int, str]:
    return (-width,
            f'the authors\' DenseEdge table (E^self, E^n-c) has a third row, its padding '
            f'index 0 (always zero, never trained: {width} parameters)')


def csa_stack(*, layers: int, dim: int, heads: int, dropout: float = 0.0,
              act: str = 'relu', share: bool = False, mono: bool = False) -> Dict[str, Any]:
    """CSA layers as in the authors' configs: attention dropout 0.5 on whole
    connections; with shared edge maps, the biases of their SharedEdgeEncoder
    (``csa.parity_edge_bias``)."""
    c = {'share_edge_params': share, 'mono': mono, 'attn_dropout_mode': 'connection'}
    if share:
        c['parity_edge_bias'] = True
    return merge(stack('None+CSA+None', layers=layers, dim=dim, heads=heads,
                       dropout=dropout, attn_dropout=0.5, act=act), {'csa': c})


SHARED_NOTE = ('shared edge maps W_EA, W_EV with biases, as the authors\' SharedEdgeEncoder '
               '(csa.parity_edge_bias; the E^att bias cancels in the softmax)')


def pairenc(*, rpe: str, steps: int, rings: bool = False, ring_mode: str = 'categorical',
            ring_max: int = 18) -> Dict[str, Any]:
    p = {'rpe': rpe, 'steps': steps, 'combine': 'concat', 'rings': rings}
    if rings:
        p.update({'ring_mode': ring_mode, 'ring_max_size': ring_max})
    p['on_the_fly'] = True
    return {'pairenc': p}


def zinc(reg: Registry):
    zinc_base = merge(dataset_block(ZINC, pe='RWSE'), rwse(steps=20, dim=28),
                      csa_stack(layers=10, dim=64, heads=4, share=True),
                      pairenc(rpe='rwse', steps=20),
                      head(layers=3, pool='add', width='halving'), train(batch=32),
                      optim(lr=1e-3, epochs=2000, warmup=50, wd=1e-5))
    zinc_note = ('ZINC model of CSA Table 6: 10 layers, d 64, 4 heads, attention dropout 0.5 '
                 'on whole connections, RWSE-20 node PE (28 ch.), Edge-RWSE-20 RPE, shared '
                 'edge maps, batch 32, lr 1e-3, 2000 epochs')
    budget = (500000, 'Benchmarking GNNs 500k; CSA Table 6 ~350k')
    reg.add(Config('csa/zinc.yaml', 'CSA (Edge-RWSE RPE, no rings) on ZINC (CSA Tables 1 and 4)',
                   zinc_base, 347557, SRC.format('zinc-CSA+RWSE.yaml'), *budget,
                   differences=[norm1_local(10, 64), padding_row(32)],
                   notes=[zinc_note, SHARED_NOTE],
                   rows=[Row(P, 'table1', BENCH_SEEDS, 'ZINC', 'CSA', 'mae'),
                         Row(P, 'table4', '0-3', 'ZINC', 'CSA RPE=RWSE', 'mae')]))
    rings = pairenc(rpe='rwse', steps=20, rings=True, ring_mode='categorical', ring_max=18)
    ring_table = (32, 'the pair-category table has 4 rows here (E^self, E^n-c, each with and '
                      'without the ring relation: the paper\'s Cartesian product, §3.4, whose '
                      'diagonal marks nodes on a ring) against 3 in the authors\' DenseEdge '
                      'table (padding row 0, E^self, E^n-c; their non-bonded ring pairs take '
                      'a row of the doubled bond table, the diagonal has no ring category)')
    zr = reg.add(Config(
        'csa/zinc-rings.yaml',
        'CSA-rings (Edge-RWSE RPE + categorical rings <= 18) on ZINC (CSA Tables 1, 4, 5, 7)',
        merge(zinc_base, rings), 347685, SRC.format('zinc-CSA+Rings.yaml'), *budget,
        differences=[norm1_local(10, 64), ring_table], notes=[zinc_note, SHARED_NOTE],
        rows=[Row(P, 'table1', BENCH_SEEDS, 'ZINC', 'CSA-rings', 'mae'),
              Row(P, 'table4', '0-3', 'ZINC', 'CSA RPE=RWSE rings', 'mae'),
              Row(P, 'table5', '0-3', 'ZINC', 'CSA color=yes edge-value=yes', 'mae')]))
    # SPDE: unshared edge maps and p = 10 as the authors' zinc-CSA+SPDE.yaml
    # (spd_max_length 10; the paper gives no p for this ablation).
    spde = merge(zinc_base, {'csa': {'share_edge_params': False}}, pairenc(rpe='spd', steps=10))
    spde['csa'].pop('parity_edge_bias')
    spde_note = zinc_note.replace('Edge-RWSE-20 RPE, shared edge maps',
                                  'SPDE RPE with p = 10 (the authors\' spd_max_length; the '
                                  'paper gives none for this ablation), unshared edge maps '
                                  'as the authors\' SPDE config')
    reg.add(Config('csa/zinc-spde.yaml', 'CSA with SPDE RPE on ZINC (CSA Table 4)', spde, 420869,
                   SRC.format('zinc-CSA+SPDE.yaml'), 500000, 'Benchmarking GNNs 500k',
                   differences=[norm1_local(10, 64), padding_row(32)], notes=[spde_note],
                   rows=[Row(P, 'table4', '0-3', 'ZINC', 'CSA RPE=SPDE', 'mae')]))
    reg.add(Config('csa/zinc-spde-rings.yaml', 'CSA with SPDE RPE and rings on ZINC (CSA Table 4)',
                   merge(spde, pairenc(rpe='spd', steps=10, rings=True, ring_max=18)), None,
                   'not published', 500000, 'Benchmarking GNNs 500k',
                   notes=['the SPDE model plus categorical rings <= 18'],
                   rows=[Row(P, 'table4', '0-3', 'ZINC', 'CSA RPE=SPDE rings', 'mae')]))
    # Table 5 (ZINC): colour off = CSA-mono, edge value off = csa.edge_value
    # False (no W_EV, no E^val term in the messages).
    reg.add(Config('csa/zinc-rings-mono.yaml',
                   'CSA-mono (one edge bias per head) with rings on ZINC (CSA Table 5)',
                   merge(zr.cfg, {'csa': {'mono': True}}), None, 'not published', 500000,
                   'Benchmarking GNNs 500k', notes=['the CSA-rings model with csa.mono'],
                   rows=[Row(P, 'table5', '0-3', 'ZINC', 'CSA color=no edge-value=yes',
                             'mae')]))
    no_value(reg, zr, 'ZINC', 'test', 500000, 'Benchmarking GNNs 500k')
    # Table 7 (ZINC, with rings): heads 1 / 8 (best for d = 64) / h = d, colour on/off.
    for h in (1, 8, 64):
        for mono in (False, True):
            if h == 64 and not mono:
                continue  # h = d: colour and mono are the same model
            label = {1: '1', 8: 'best', 64: 'h=d'}[h]
            model = f"CSA{'-mono' if mono else ''} heads={label}"
            name = f"csa/zinc-rings{'-mono' if mono else ''}-h{h}.yaml"
            reg.add(Config(name, f'{model} ({h} heads) with rings on ZINC (CSA Table 7)',
                           merge(zr.cfg, {'csa': {'mono': mono}, 'gt': {'n_heads': h}}), None,
                           'not published', 500000, 'Benchmarking GNNs 500k',
                           notes=['the CSA-rings model with other heads'
                                  + (' and csa.mono' if mono else '')],
                           rows=[Row(P, 'table7', '0-3', 'ZINC', model, 'mae')]))


def sbm(reg: Registry):
    """Table 2: PATTERN and CLUSTER."""
    for key, name, layers, dim, heads, drop, batch, params in (
            ('pattern', 'PATTERN', 6, 64, 4, 0.0, 32, 259153),
            ('cluster', 'CLUSTER', 16, 48, 8, 0.1, 16, 382382)):
        cfg = merge(dataset_block(DS[name], pe='RWSE'),
                    BINARY if name == 'PATTERN' else {}, rwse(steps=16, dim=16),
                    csa_stack(layers=layers, dim=dim, heads=heads, dropout=drop),
                    pairenc(rpe='rwse', steps=16),
                    head(layers=3, width='constant'), train(batch=batch),
                    optim(lr=5e-4, epochs=100, warmup=5, wd=1e-5))
        notes = [f'{name} model of CSA Table 6: {layers} layers, d {dim}, {heads} heads, '
                 f'dropout {drop}, RWSE-16 node PE and RPE, unshared edge maps, batch '
                 f'{batch}, lr 5e-4, 100 epochs']
        if name == 'PATTERN':
            notes.append('one output logit (GraphGym\'s binary convention in the authors\' '
                         'code, dataset.num_outputs 1), as the published count')
        reg.add(Config(f'csa/{key}.yaml', f'CSA on {name} (CSA Table 2)', cfg, params,
                       SRC.format(f'{key}-CSA.yaml'), 500000, 'Benchmarking GNNs 500k',
                       differences=[norm1_local(layers, dim), padding_row(dim // 2)],
                       notes=notes + [PE_NOTE[name]],
                       rows=[Row(P, 'table2', BENCH_SEEDS, name, 'CSA', 'accuracy_sbm')]))


def node_pe(dim: int) -> Tuple[int, str]:
    """CSA-small / -deep without the node RWSE of the authors' PCQM4Mv2 configs."""
    dim_pe, steps = 20, 16
    theirs = ATOM_ROWS * (dim - dim_pe) + 2 * steps + steps * dim_pe + dim_pe
    ours = ATOM_ROWS * dim
    return (ours - theirs,
            f'no node PE (CSA Table 6: None); the authors\' config adds RWSE-{steps} in '
            f'{dim_pe} channels: Atom table {ATOM_ROWS} x {dim} = {ours:,} here against '
            f'{ATOM_ROWS} x {dim - dim_pe} + RWSE (BatchNorm 2 x {steps} + Linear '
            f'{steps} x {dim_pe} + {dim_pe}) = {theirs:,}')


def pcqm(reg: Registry):
    """Table 3: PCQM4Mv2 (validation MAE), CSA-small and CSA-deep, and the
    10 % subset ablations of Tables 5 and 7."""
    pcqm_ds = ('OGB', 'PCQM4Mv2-full', 'Atom', 'Bond')
    small = merge(dataset_block(pcqm_ds),
                  csa_stack(layers=5, dim=256, heads=16, act='gelu', share=True),
                  pairenc(rpe='rwse', steps=16), head(layers=3, pool='mean', width='halving'),
                  train(batch=256), optim(lr=5e-4, epochs=300, warmup=10, wd=0.0))
    small_src = SRC.format('pcqm4m-CSA+RWSE-shared-e300.yaml')
    small_diffs = [norm1_local(5, 256), padding_row(128), node_pe(256)]
    small_note = ('5 layers as the authors\' config (Table 6 prints 16; Table 3\'s 2.8M is the '
                  '5-layer model), d 256, 16 heads, Edge-RWSE-16 RPE, shared edge maps, no '
                  'node PE (Table 6; the authors\' config adds RWSE), batch 256, lr 5e-4, 300 '
                  'epochs; single seed')
    reg.add(Config('csa/pcqm4mv2-small.yaml', 'CSA-small on PCQM4Mv2 (CSA Table 3)', small,
                   2852701, small_src, None, 'none stated (CSA Table 3: 2.8M)',
                   differences=small_diffs, notes=[small_note, SHARED_NOTE],
                   rows=[Row(P, 'table3', '0', 'PCQM4Mv2', 'CSA-small', 'mae', split='val')]))
    deep = merge(small, csa_stack(layers=16, dim=256, heads=16, act='gelu', share=True),
                 pairenc(rpe='spd', steps=8, rings=True, ring_mode='additive', ring_max=6),
                 optim(lr=1e-4, epochs=150, warmup=10, wd=0.0))
    rpe = (1280 + 384 - 2176,
           'RPE: SPDE-8 (a table of 8 + 2 rows x 128 = 1,280) and additive rings (3 x 128 = '
           '384) here, as CSA Table 6, against the Edge-RWSE-16 map (Linear 16 x 128 + 128 = '
           '2,176) of the authors\' counted config')
    reg.add(Config('csa/pcqm4mv2-deep.yaml', 'CSA-deep on PCQM4Mv2 (CSA Table 3)', deep, 8648029,
                   SRC.format('pcqm4m-CSADeep+RWSE-shared-e150.yaml') + ' (Edge-RWSE RPE, '
                   'RWSE node PE, no rings)', None, 'none stated (CSA Table 3: 8.3M)',
                   differences=[norm1_local(16, 256), padding_row(128), node_pe(256), rpe],
                   notes=['16 layers, d 256, 16 heads, SPDE-8 RPE, additive rings <= 6, shared '
                          'edge maps, batch 256, lr 1e-4, 150 epochs (CSA Table 6); single '
                          'seed', SHARED_NOTE],
                   rows=[Row(P, 'table3', '0', 'PCQM4Mv2', 'CSA-deep', 'mae', split='val')]))
    sub = merge(small, {'dataset': {'name': 'PCQM4Mv2-subset'}})
    sub_note = 'CSA-small on the 10 % PCQM4Mv2 training subset (full validation set)'
    subset = reg.add(Config(
        'csa/pcqm4mv2-subset.yaml', 'CSA-small on PCQM4Mv2-subset (CSA Tables 5, 7)', sub,
        2852701, small_src, None, 'none stated', differences=small_diffs,
        notes=[sub_note, SHARED_NOTE],
        rows=[Row(P, 'table5', '0-3', 'PCQM4Mv2-subset', 'CSA color=yes edge-value=yes',
                  'mae', split='val'),
              Row(P, 'table7', '0-3', 'PCQM4Mv2-subset', 'CSA heads=best', 'mae',
                  split='val')]))
    reg.add(Config('csa/pcqm4mv2-subset-mono.yaml',
                   'CSA-mono on PCQM4Mv2-subset (CSA Tables 5, 7)',
                   merge(sub, {'csa': {'mono': True}}), None, 'not published', None,
                   'none stated', notes=[sub_note + ', csa.mono'],
                   rows=[Row(P, 'table5', '0-3', 'PCQM4Mv2-subset',
                             'CSA color=no edge-value=yes', 'mae', split='val'),
                         Row(P, 'table7', '0-3', 'PCQM4Mv2-subset', 'CSA-mono heads=best',
                             'mae', split='val')]))
    no_value(reg, subset, 'PCQM4Mv2-subset', 'val', None, 'none stated')
    for h, mono in ((1, False), (1, True), (256, True)):
        label = {1: '1', 256: 'h=d'}[h]
        model = f"CSA{'-mono' if mono else ''} heads={label}"
        reg.add(Config(f"csa/pcqm4mv2-subset{'-mono' if mono else ''}-h{h}.yaml",
                       f'{model} ({h} heads) on PCQM4Mv2-subset (CSA Table 7)',
                       merge(sub, {'csa': {'mono': mono}, 'gt': {'n_heads': h}}), None,
                       'not published', None, 'none stated',
                       notes=[sub_note + f', {h} heads' + (', csa.mono' if mono else '')],
                       rows=[Row(P, 'table7', '0-3', 'PCQM4Mv2-subset', model, 'mae',
                                 split='val')]))


def no_value(reg: Registry, base: Config, dataset: str, split: str, budget: Optional[int],
             budget_src: str):
    """CSA Table 5's "no edge value" rows: ``base`` (colour on) and its
    CSA-mono version without the value-edge term (``csa.edge_value``)."""
    stem = base.path[:-len('.yaml')]
    for mono in (False, True):
        color = 'no' if mono else 'yes'
        name = 'CSA-mono' if mono else 'CSA'
        reg.add(Config(f"{stem}{'-mono' if mono else ''}-novalue.yaml",
                       f'{name} without edge values on {dataset} (CSA Table 5)',
                       merge(base.cfg, {'csa': {'mono': mono, 'edge_value': False}}), None,
                       'not published', budget, budget_src,
                       notes=[f'the {base.path} model with csa.edge_value False (no W_EV: '
                              'messages V_j only, eq. 7 without E^val)'
                              + (' and csa.mono (colour off)' if mono else '')],
                       rows=[Row(P, 'table5', '0-3', dataset,
                                 f'CSA color={color} edge-value=no', 'mae', split=split)]))


def build(reg: Registry):
    zinc(reg)
    sbm(reg)
    pcqm(reg)
