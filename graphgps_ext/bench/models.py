r"""Suite ``paper-zinc``: whole-model training and evaluation throughput at
the authors' ZINC configuration (the anchor configuration of
``docs/performance.md``).

Every row is a :class:`~graphgps_ext.network.model.GPSModel` built from the
project's config (:func:`graphgps_ext.runs.config.load_cfg` with the row's
overrides) at the authors' ZINC settings: 10 layers, hidden 64, RWSE-20 node
PE (``TypeDictNode+RWSE``, ``dim_pe`` 28, BatchNorm on the raw PE), bond
types through ``TypeDictEdge``, attention dropout 0.5, batch 32, AdamW
(lr 1e-3, weight decay 1e-5) with gradient clipping at norm 1 and a
three-layer halving head with sum pooling (GraphGPS ``san_graph``).

The data are synthetic ZINC-size graphs (:mod:`graphgps_ext.bench.data`:
ZINC's size distribution, 23.1 ± 4.45 nodes, 50 directed edges on average,
28 atom and 4 bond types) with RWSE-20
precomputed once by the package's encoding precompute
(:func:`graphgps_ext.transform.precompute_encodings`). A *train pass* is
what a training epoch does: iterate a shuffled PyG ``DataLoader`` over the
graphs (collation included), move the batch to the device, forward, L1
loss, backward, clip, AdamW step, read the loss value. An *eval pass*
iterates the same graphs in order under ``torch.inference_mode`` in eval mode.

Reported per row: parameters (and the authors' count), train and eval
graphs/s (medians over ``--repeats`` passes, rows interleaved so that load
changes hit every row alike), the ratio of train graphs/s to the anchor
measured with the authors' code (``docs/performance.md``; only when this
run is on the anchor's device with its thread count, :func:`anchor_ratio`:
a CUDA throughput over a CPU anchor compares nothing), and the peak
memory of one training step
(:func:`~graphgps_ext.bench.common.peak_step_memory`).
"""
import gc
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from graphgps_ext.bench import common
from graphgps_ext.bench.data import EDGE_TYPES, FAMILIES, NODE_TYPES, make_graphs
from graphgps_ext.train.speed import autocast, clip_grad_norm_


def make_cfg(opts: Sequence = ()):
    """A validated config: defaults + this package's groups + ``opts``
    (``KEY VALUE`` pairs, values of any type). A private clone of
    GraphGym's global ``cfg``."""
    from graphgps_ext.config import check_values, merge_list
    from graphgps_ext.runs.config import load_cfg
    cfg = load_cfg(None, [])
    merge_list(cfg, [str(o) for o in opts])
    check_values(cfg)
    cfg.gnn.dim_inner = cfg.gt.dim_hidden
    return cfg.clone()


def zinc_task():
    """The :class:`TaskInfo` of ZINC (graph regression, L1, MAE)."""
    from graphgps_ext.task import TaskInfo
    return TaskInfo(name='ZINC', task='graph', task_type='regression',
                    num_outputs=1, loss='l1', metric='mae',
                    metric_direction='min', metrics=['mae'],
                    node_encoder='TypeDictNode', node_dim=1,
                    node_num_types=NODE_TYPES, edge_encoder='TypeDictEdge',
                    edge_dim=1, edge_num_types=EDGE_TYPES, head='graph_mlp')


# The authors' ZINC settings shared by every row (GraphGPS zinc-GPS+RWSE).
ZINC_BASE = (
    'dataset.node_encoder', True,
    'dataset.node_encoder_name', 'TypeDictNode+RWSE',
    'dataset.node_encoder_bn', False,
    'dataset.edge_encoder', True,
    'dataset.edge_encoder_name', 'TypeDictEdge',
    'dataset.edge_encoder_bn', False,
    'posenc_RWSE.enable', True,
    'posenc_RWSE.model', 'linear',
    'posenc_RWSE.dim_pe', 28,
    'posenc_RWSE.raw_norm_type', 'BatchNorm',
    'posenc_RWSE.kernel.times_func', 'range(1, 21)',
    'gt.layers', 10,
    'gt.dim_hidden', 64,
    'gt.n_heads', 4,
    'gt.dropout', 0.0,
    'gt.attn_dropout', 0.5,
    'gt.norm', 'batch',
    'model.graph_pooling', 'add',
    'head.layers', 3,
    'head.width', 'halving',
    'optim.optimizer', 'adamW',
    'optim.base_lr', 0.001,
    'optim.weight_decay', 1e-5,
    'optim.clip_grad_norm', True,
    'optim.clip_grad_norm_value', 1.0,
    'train.batch_size', 32,
)


# GEANet as in the authors' ZINC runs: 4 external heads, node, edge and
# shared units; their units are affine and have no output projection W_o
# (the parity switches that change the parameter count, so that the model
# has the authors' 604,837 / 477,477 parameters). The slot softmax stays per
# graph (the paper).
GEAET_UNITS = ('gea.n_heads', 4, 'gea.node_unit', True, 'gea.edge_unit', True,
               'gea.shared_unit', True, 'gea.parity_no_out_proj', True,
               'gea.parity_unit_bias', True)


#: Where the anchors (:attr:`ModelRow.anchor`) were measured: the authors'
#: code on a 2-core x86-64 CPU with 2 torch threads (``docs/performance.md``).
ANCHOR_DEVICE = 'cpu'
ANCHOR_THREADS = 2


def anchor_ratio(train: float, anchor: Optional[float], device: torch.device,
                 threads: int) -> Tuple[Optional[float], Optional[str]]:
    """``(train / anchor, None)`` when the anchor was measured on the kind
    of device and with the thread count of this run, else ``(None, why)``:
    a throughput measured on a GPU divided by one measured on a CPU (or
    with another thread count) says nothing about the two codes."""
    if not anchor:
        return None, None
    if device.type != ANCHOR_DEVICE or threads != ANCHOR_THREADS:
        return None, (f"the authors' figure was measured on {ANCHOR_DEVICE} "
                      f"with {ANCHOR_THREADS} threads, this run on "
                      f"{device.type} with {threads}: no ratio")
    return train / anchor, None


@dataclass(frozen=True)
class ModelRow:
    """A row of the anchor table.

    Attributes:
        key: short name for ``--rows``.
        name: row label.
        overrides: config overrides on top of :data:`ZINC_BASE`.
        anchor: train graphs/s of the authors' code
            (``docs/performance.md``), if measured, on
            :data:`ANCHOR_DEVICE` with :data:`ANCHOR_THREADS` threads
            (ratios only for runs on the same, :func:`anchor_ratio`).
        anchor_params: parameter count of the authors' model.
        param_differences: ``(ours - authors', reason)`` for every module in
            which the row's model differs from the authors' (the row's count
            is ``anchor_params + sum``; ``tests/bench`` checks it).
    """
    key: str
    name: str
    overrides: Tuple = ()
    anchor: Optional[float] = None
    anchor_params: Optional[int] = None
    param_differences: Tuple[Tuple[int, str], ...] = ()


PAPER_ZINC_ROWS: Dict[str, ModelRow] = {r.key: r for r in [
    ModelRow('gps-gine', 'GPS GINE+Transformer',
             ('gt.layer_type', 'GINE+Transformer+None'), 242, 423_717),
    ModelRow('gps-gatedgcn', 'GPS GatedGCN+Transformer',
             ('gt.layer_type', 'GatedGCN+Transformer+None'), 179, 551_077),
    ModelRow('geaet-gatedgcn', 'GEAET GatedGCN+Transformer+GEANet',
             ('gt.layer_type', 'GatedGCN+Transformer+GEANet') + GEAET_UNITS,
             152, 604_837),
    ModelRow('geaet-gine', 'GEAET GINE+Transformer+GEANet',
             ('gt.layer_type', 'GINE+Transformer+GEANet') + GEAET_UNITS,
             194, 477_477),
    # The authors' GEANet code normalises the slots over the whole
    # mini-batch; the rows above use the paper's per-graph softmax.
    ModelRow('geaet-gatedgcn-batchsm',
             'GEAET GatedGCN+Transformer+GEANet, batch softmax',
             ('gt.layer_type', 'GatedGCN+Transformer+GEANet') + GEAET_UNITS
             + ('gea.parity_batch_softmax', True), 152, 604_837),
    ModelRow('geaet-gine-batchsm', 'GEAET GINE+Transformer+GEANet, batch softmax',
             ('gt.layer_type', 'GINE+Transformer+GEANet') + GEAET_UNITS
             + ('gea.parity_batch_softmax', True), 194, 477_477),
    ModelRow('csa', 'CSA (RWSE, shared edges, 8 heads)',
             ('gt.layer_type', 'None+CSA+None', 'gt.n_heads', 8,
              'csa.share_edge_params', True,
              'csa.attn_dropout_mode', 'connection',
              'csa.parity_edge_bias', True,
              'pairenc.rpe', 'rwse', 'pairenc.steps', 20), 91, 347_557,
             ((-1_280, "norm1_local: the authors' GPSLayer allocates a BatchNorm "
                       "(2 x 64) per layer that CSA's forward never uses"),
              (-32, "the third row of the authors' DenseEdge table (E^self, "
                    "E^n-c), its padding index 0, always zero"))),
    ModelRow('mna', 'MNA-GT (3 kernels, 4 heads)',
             ('gt.layer_type', 'None+MNA+None', 'gt.pre_norm', True,
              'gt.norm', 'layer', 'gt.act', 'gelu', 'mna.hops', 2)),
    ModelRow('gt', 'GT (sparse, edge features, 8 heads)',
             ('gt.layer_type', 'None+GT+None', 'gt.n_heads', 8,
              'gtlayer.edge_features', True)),
]}


def row_cfg(row: ModelRow, extra: Sequence = ()):
    return make_cfg(list(ZINC_BASE) + list(row.overrides) + list(extra))


def build_model(cfg, device: torch.device) -> nn.Module:
    from graphgps_ext.network.model import GPSModel
    return GPSModel(cfg, zinc_task()).to(device)


def make_dataset(cfg, num_graphs: int, seed: int):
    """Synthetic ZINC-size graphs with the encodings ``cfg`` asks for (the
    package's precompute, as a run computes them)."""
    from graphgps_ext.transform.precompute import precompute_encodings
    graphs = make_graphs(FAMILIES['zinc'], num_graphs, seed)
    start = time.perf_counter()
    dataset = precompute_encodings(graphs, cfg, None)
    return dataset, ('graphgps_ext.transform.precompute_encodings '
                     f'({time.perf_counter() - start:.2f} s)')


class Runner:
    """Model, optimiser and loaders of one row; :meth:`train_pass` and
    :meth:`eval_pass` return graphs/s over the whole dataset."""

    def __init__(self, row: ModelRow, dataset, device: torch.device,
                 seed: int = 0, use_compile: bool = False, bf16: bool = False,
                 opts: Sequence = ()):
        from graphgps_ext.train.speed import compile_model
        from graphgps_ext.loader.dataloader import graph_loader
        from graphgps_ext.train.optim import build_optimizer, stepped_params
        from graphgps_ext.train.loss import LOSSES

        self.row, self.device = row, device
        extra = ['train.compile', use_compile,
                 'train.amp', 'bf16' if bf16 else 'none'] + list(opts)
        self.cfg = cfg = row_cfg(row, extra)
        torch.manual_seed(seed)
        self.model = build_model(cfg, device)
        self.params = common_params(self.model)
        self.net = compile_model(self.model, cfg)
        self.optimizer = build_optimizer(cfg, self.model.parameters())
        self.stepped = stepped_params(self.optimizer)
        self.loss_fn = LOSSES['l1']
        self.clip = (cfg.optim.clip_grad_norm_value
                     if cfg.optim.clip_grad_norm else None)
        bs = cfg.train.batch_size
        gen = torch.Generator().manual_seed(seed)
        fast = bool(cfg.train.fast_collate)
        self.train_loader = graph_loader(dataset, fast, batch_size=bs,
                                         shuffle=True, generator=gen)
        self.eval_loader = graph_loader(dataset, fast, batch_size=bs,
                                        shuffle=False)

    def train_step(self, batch) -> float:
        batch = batch.to(self.device)
        with autocast(self.cfg, self.device.type):
            pred, true = self.net(batch)
            loss = self.loss_fn(pred.float(), true)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.clip is not None:
            clip_grad_norm_(self.stepped, self.clip, self.cfg)
        self.optimizer.step()
        return float(loss.detach())

    def train_pass(self, limit: Optional[int] = None) -> float:
        self.model.train()
        count = 0

        def run():
            nonlocal count
            for i, batch in enumerate(self.train_loader):
                if limit is not None and i >= limit:
                    break
                self.train_step(batch)
                count += batch.num_graphs
        seconds = common.timed(run, self.device)
        return count / seconds

    @torch.inference_mode()
    def eval_pass(self, limit: Optional[int] = None) -> float:
        self.model.eval()
        count = 0

        def run():
            nonlocal count
            for i, batch in enumerate(self.eval_loader):
                if limit is not None and i >= limit:
                    break
                batch = batch.to(self.device)
                with autocast(self.cfg, self.device.type):
                    pred, _ = self.net(batch)
                pred.float().sum().item()
                count += batch.num_graphs
        seconds = common.timed(run, self.device)
        return count / seconds

    def step_memory(self) -> float:
        """Peak MiB of one training step on the first batch."""
        self.model.train()
        batch = next(iter(self.eval_loader))
        return common.peak_step_memory(lambda: self.train_step(batch),
                                       self.device)


def common_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def run(device: torch.device, rows: Optional[Sequence[str]] = None,
        graphs: int = 10_000, repeats: int = 1, warmup_batches: int = 3,
        seed: int = 0, use_compile: bool = False, bf16: bool = False,
        opts: Sequence = (), ab: Sequence = (),
        log=print) -> Dict[str, object]:
    """Run the suite; returns ``{'rows': [...], 'markdown': str, ...}``.

    ``rows``: keys of :data:`PAPER_ZINC_ROWS` (default all); ``opts``:
    config overrides applied to every row (e.g. ``['gt.layers', 2]``).

    ``ab``: more overrides (model and training keys, e.g.
    ``['gt.fused_attention', False]``) for a back-to-back comparison: every
    row is also built with ``opts + ab`` in the same process, the two
    models' passes alternate (A B, then B A, ...), and the result gets an
    ``'ab'`` list with both medians, their ratio and how many paired passes
    each side won. On a host whose speed drifts from minute to minute this
    compares a switch far more reliably than two separate runs."""
    names = common.check_names(rows, PAPER_ZINC_ROWS, 'paper-zinc rows')
    # One dataset for every row (all rows ask for RWSE-20; CSA's pair
    # encodings are computed per batch by its pair encoder).
    dataset, source = make_dataset(row_cfg(PAPER_ZINC_ROWS[names[0]], opts),
                                   graphs, seed)
    log(f'  [paper-zinc] {len(dataset)} graphs, encodings: {source}')
    ab = [str(o) for o in ab]
    # (row key, label, overrides): the label tells the A/B variant apart.
    cases = [(name, name, list(opts)) for name in names]
    if ab:
        cases = [case for name in names for case in (
            (name, name, list(opts)),
            (name, f'{name} [{" ".join(ab)}]', list(opts) + ab))]
    runners: Dict[str, Runner] = {}
    results: Dict[str, dict] = {}
    for name, label, case_opts in cases:
        runner = Runner(PAPER_ZINC_ROWS[name], dataset, device, seed,
                        use_compile, bf16, case_opts)
        start = time.perf_counter()
        runner.train_pass(limit=warmup_batches)  # warm-up (and compile)
        runner.eval_pass(limit=warmup_batches)
        warm = time.perf_counter() - start
        runners[label] = runner
        results[label] = {'train': [], 'eval': [], 'warmup_s': warm,
                          'load': [], 'host': []}
    labels = [label for _, label, _ in cases]
    for rep in range(repeats):
        # A/B pairs alternate their order from one pass to the next.
        order = labels if not ab or rep % 2 == 0 else [
            label for pair in zip(labels[1::2], labels[::2]) for label in pair]
        for label in order:
            runner, res = runners[label], results[label]
            res['load'].append(common.load_average())
            res['host'].append(common.host_probe(device))
            res['train'].append(runner.train_pass())
            res['eval'].append(runner.eval_pass())
            log(f'  [paper-zinc] pass {rep + 1}/{repeats} {label:15s} train '
                f'{res["train"][-1]:7.1f}  eval {res["eval"][-1]:7.1f} graphs/s'
                f'  (memory copy {res["host"][-1]["copy_gb_s"]:.1f} GB/s)')
    out_rows = []
    for name, label, _ in cases:
        runner, res, row = runners[label], results[label], PAPER_ZINC_ROWS[name]
        mem = runner.step_memory()
        train = common.median(res['train'])
        ratio, ratio_note = anchor_ratio(train, row.anchor, device,
                                         torch.get_num_threads())
        out_rows.append({
            'key': label, 'model': row.name + label[len(name):],
            'layer_type': runner.cfg.gt.layer_type,
            'params': runner.params, 'anchor_params': row.anchor_params,
            'param_differences': [list(d) for d in row.param_differences],
            'train_graphs_per_s': train,
            'eval_graphs_per_s': common.median(res['eval']),
            'train_runs': res['train'], 'eval_runs': res['eval'],
            'anchor_train_graphs_per_s': row.anchor,
            'anchor_device': ANCHOR_DEVICE if row.anchor else None,
            'anchor_threads': ANCHOR_THREADS if row.anchor else None,
            'ratio_to_anchor': ratio, 'ratio_note': ratio_note,
            'peak_step_mib': mem, 'warmup_s': res['warmup_s'],
            'load_average_1min': res['load'], 'host': res['host'],
        })
    batch_size = runners[labels[0]].cfg.train.batch_size
    del runners
    gc.collect()
    pairs = ab_pairs(out_rows) if ab else []
    text = markdown(out_rows) + ('\n\n' + ab_markdown(pairs) if pairs else '')
    return {'rows': out_rows, 'markdown': text, 'ab': pairs,
            'settings': {'graphs': len(dataset), 'repeats': repeats,
                         'batch_size': batch_size, 'encodings': source,
                         'compile': use_compile, 'bf16': bf16,
                         'opts': [str(o) for o in opts], 'ab': ab}}


def ab_pairs(rows: List[dict]) -> List[dict]:
    """Per row of an A/B run (``rows`` alternate default, variant): both
    train medians, variant / default, and the paired passes each won."""
    pairs = []
    for a, b in zip(rows[::2], rows[1::2]):
        runs = list(zip(a['train_runs'], b['train_runs']))
        pairs.append({
            'key': a['key'], 'variant': b['key'],
            'default_train_graphs_per_s': a['train_graphs_per_s'],
            'variant_train_graphs_per_s': b['train_graphs_per_s'],
            'variant_over_default': b['train_graphs_per_s']
            / a['train_graphs_per_s'],
            'default_wins': sum(x > y for x, y in runs),
            'variant_wins': sum(y > x for x, y in runs),
            'passes': len(runs)})
    return pairs


def ab_markdown(pairs: List[dict]) -> str:
    headers = ['row', 'default train graphs/s', 'variant', 'variant train graphs/s',
               'variant / default', 'passes won (default : variant)']
    table = [[p['key'], p['default_train_graphs_per_s'], p['variant'],
              p['variant_train_graphs_per_s'],
              f"{p['variant_over_default']:.3f}",
              f"{p['default_wins']} : {p['variant_wins']} of {p['passes']}"]
             for p in pairs]
    return common.markdown_table(headers, table)


def markdown(rows: List[dict]) -> str:
    headers = ['model', 'params (authors)', 'train graphs/s', 'eval graphs/s',
               f"authors' train graphs/s ({ANCHOR_DEVICE}, {ANCHOR_THREADS} "
               'threads)', 'ratio', 'peak MiB / step']
    table, notes = [], []
    for r in rows:
        params = f"{r['params']:,}" + (f" ({r['anchor_params']:,})"
                                       if r['anchor_params'] else '')
        diffs = r.get('param_differences') or []
        if r['anchor_params'] and (diffs or r['params'] != r['anchor_params']):
            marks = '*' * (len(notes) + 1)
            params += marks
            explained = r['anchor_params'] + sum(n for n, _ in diffs)
            text = '; '.join(f'{n:+,}: {why}' for n, why in diffs)
            if r['params'] != explained:
                text += (f'{"; " if text else ""}{r["params"] - explained:+,} '
                         'not explained')
            notes.append(f'{marks} {r["model"]}: {text}')
        ratio = (f"{r['ratio_to_anchor']:.2f}×" if r['ratio_to_anchor']
                 else '–')
        table.append([r['model'], params, r['train_graphs_per_s'],
                      r['eval_graphs_per_s'],
                      float(r['anchor_train_graphs_per_s'])
                      if r['anchor_train_graphs_per_s'] else None,
                      ratio, r['peak_step_mib']])
    out = common.markdown_table(headers, table)
    why = next((r.get('ratio_note') for r in rows if r.get('ratio_note')), None)
    if why:
        out += f'\n\nNo ratio to the authors\' code: {why}.\n'
    if notes:
        out += '\n\nParameters that differ from the authors\' count:\n\n' + '\n'.join(
            f'- {n}' for n in notes) + '\n'
    return out
