r"""Suite ``layers``: forward + backward throughput and peak memory of every
layer type.

A *layer type* is one hybrid layer (:class:`~graphgps_ext.layer.hybrid.HybridLayer`:
the branch, its residual and norm, and the FFN) built by
:class:`~graphgps_ext.network.model.GPSModel` from ``gt.layer_type`` and the
branch's config group, at width ``d = 64`` with 4 heads (8 for GT, as the GT
paper). Each step runs ``--layer-depth`` such layers on fixed random node and
edge features ``x [N, d]``, ``e [E, d]`` of a synthetic batch
(:mod:`graphgps_ext.bench.data`), takes ``mean(x'^2) (+ mean(e'^2))`` and
back-propagates; gradients are reset between steps. CSA reads dense pair
features ``ctx.pair [B, n_max, n_max, d]``, which a real model gets from the
pair encoder; here they are fixed random tensors, so the figure is the
branch's own cost.

Reported per layer type and graph family: graphs/s (median over the timed
steps, steps after ``--warmup`` untimed ones), milliseconds per batch, peak
memory of one step (:func:`~graphgps_ext.bench.common.peak_step_memory`: what
the step allocates on top of its inputs; ``input_mib`` gives the inputs
``x``, ``e`` and, for CSA, ``pair``) and the parameter count. A case that
runs out of the memory limit is reported as ``oom``.
"""
import gc
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor, nn
from torch_geometric.data import Batch

from graphgps_ext import branches
from graphgps_ext.bench import common
from graphgps_ext.bench.data import FAMILIES, GraphFamily, make_graphs


@dataclass(frozen=True)
class LayerType:
    r"""A benchmarked layer: ``gt.layer_type`` plus config overrides.

    Attributes:
        name: row label.
        layer_type: ``'<local>+<global>+<external>'``.
        overrides: ``KEY VALUE`` config overrides (flat list).
        complexity: expected cost per graph: ``'linear'`` in nodes + edges,
            or ``'quadratic'`` in nodes (dense all-pairs attention).
    """
    name: str
    layer_type: str
    overrides: Tuple = ()
    complexity: str = 'linear'

    @property
    def pair_features(self) -> bool:
        """Whether a branch reads dense pair features (the branch catalogue's
        ``pair_features``): its batches carry ``ctx.pair``."""
        return branches.parse_layer_type(self.layer_type).has(
            *branches.names(pair_features=True))


LAYER_TYPES: Dict[str, LayerType] = {lt.name: lt for lt in [
    LayerType('GCN', 'GCN+None+None'),
    LayerType('GIN', 'GIN+None+None'),
    LayerType('GINE', 'GINE+None+None'),
    LayerType('GatedGCN', 'GatedGCN+None+None'),
    LayerType('GEANet', 'None+None+GEANet'),
    LayerType('GT-sparse', 'None+GT+None',
              ('gt.n_heads', 8, 'gtlayer.edge_features', True)),
    LayerType('GT-full', 'None+GT+None',
              ('gt.n_heads', 8, 'gtlayer.full_graph', True), 'quadratic'),
    LayerType('Transformer', 'None+Transformer+None', (), 'quadratic'),
    LayerType('MNA', 'None+MNA+None',
              ('gt.pre_norm', True, 'gt.norm', 'layer', 'gt.act', 'gelu'),
              'quadratic'),
    LayerType('CSA', 'None+CSA+None', ('csa.share_edge_params', True),
              'quadratic'),
    LayerType('GatedGCN+Transformer+GEANet', 'GatedGCN+Transformer+GEANet',
              (), 'quadratic'),
]}


def layer_cfg(lt: LayerType, dim: int = 64, heads: int = 4,
              extra: Sequence = ()):
    """The config of one layer type (width ``dim``, ``heads`` heads)."""
    from graphgps_ext.bench.models import make_cfg
    opts = ['gt.layer_type', lt.layer_type, 'gt.dim_hidden', dim,
            'gnn.dim_inner', dim, 'gt.n_heads', heads, 'gt.dropout', 0.0,
            'gt.attn_dropout', 0.0]
    return make_cfg(opts + list(lt.overrides) + list(extra))


def build_layers(cfg, depth: int) -> nn.ModuleList:
    """The hybrid layers of the :class:`GPSModel` of ``cfg`` (``depth`` of
    them), built by the model builder itself (so cross-layer ties apply)."""
    from graphgps_ext.bench.models import zinc_task
    from graphgps_ext.network.model import GPSModel
    cfg.gt.layers = depth
    return GPSModel(cfg, zinc_task()).layers


@dataclass
class LayerBatch:
    """A collated batch with fixed random features for the layer steps."""
    batch: Batch
    x: Tensor
    edge_attr: Tensor
    pair: Optional[Tensor] = None
    num_graphs: int = 0

    def to(self, device):
        self.batch = self.batch.to(device)
        self.x = self.x.to(device)
        self.edge_attr = self.edge_attr.to(device)
        if self.pair is not None:
            self.pair = self.pair.to(device)
        return self


def make_layer_batches(family: GraphFamily, count: int, dim: int, seed: int,
                       with_pair: bool, device: torch.device,
                       batch_size: Optional[int] = None) -> List[LayerBatch]:
    """``count`` distinct batches of ``family`` with random ``x``, ``e``
    (and ``pair`` when ``with_pair``)."""
    from graphgps_ext.layer.context import GraphContext
    bs = batch_size or family.batch_size
    graphs = make_graphs(family, bs * count, seed)
    gen = torch.Generator().manual_seed(seed + 1)
    out = []
    for i in range(count):
        b = Batch.from_data_list(graphs[i * bs:(i + 1) * bs])
        x = torch.randn(b.num_nodes, dim, generator=gen)
        e = torch.randn(b.edge_index.size(1), dim, generator=gen)
        pair = None
        if with_pair:
            lay = GraphContext.from_batch(b).layout
            pair = torch.randn(lay.num_graphs, lay.n_max, lay.n_max, dim,
                               generator=gen)
        out.append(LayerBatch(b, x, e, pair, bs).to(device))
    return out


def layer_step(layers: nn.ModuleList, item: LayerBatch,
               autocast=None) -> None:
    """One forward + backward pass of ``layers`` on ``item`` (inside the
    ``autocast`` context when given)."""
    import contextlib
    from graphgps_ext.layer.context import GraphContext
    ctx = GraphContext.from_batch(item.batch)
    ctx.pair = item.pair
    x, e = item.x, item.edge_attr
    with (autocast if autocast is not None else contextlib.nullcontext()):
        for layer in layers:
            x, e = layer(x, e, ctx)
        loss = x.float().square().mean()
        if e is not item.edge_attr:
            loss = loss + e.float().square().mean()
    loss.backward()
    for p in layers.parameters():
        p.grad = None


@dataclass
class Measurement:
    graphs_per_s: float = float('nan')
    ms_per_batch: float = float('nan')
    peak_mib: float = float('nan')
    steps: int = 0
    status: str = 'ok'
    times: List[float] = field(default_factory=list)


def measure_steps(step, items: Sequence, device: torch.device, warmup: int,
                  steps: int, budget_s: float, graphs_per_item: int,
                  memory: bool = True) -> Measurement:
    """Time ``step(item)`` round-robin over ``items``: ``warmup`` untimed
    steps, then at least 2 and at most ``steps`` timed ones (stopping once
    ``budget_s`` seconds are spent); memory of one extra step."""
    m = Measurement()
    try:
        for i in range(warmup):
            step(items[i % len(items)])
        spent = 0.0
        while len(m.times) < steps and (len(m.times) < 2 or spent < budget_s):
            t = common.timed(lambda: step(items[len(m.times) % len(items)]),
                             device)
            m.times.append(t)
            spent += t
        med = common.median(m.times)
        m.steps = len(m.times)
        m.ms_per_batch = 1e3 * med
        m.graphs_per_s = graphs_per_item / med
        if memory:
            m.peak_mib = common.peak_step_memory(lambda: step(items[0]), device)
    except (RuntimeError, MemoryError) as err:
        if not _is_oom(err):
            raise
        m.status = 'oom'
    finally:
        gc.collect()
        if device.type == 'cuda':
            torch.cuda.empty_cache()
    return m


def _is_oom(err: BaseException) -> bool:
    text = str(err)
    return isinstance(err, MemoryError) or 'out of memory' in text or \
        "can't allocate memory" in text


def run(device: torch.device, families: Sequence[str] = tuple(FAMILIES),
        types: Optional[Sequence[str]] = None, depth: int = 1, dim: int = 64,
        warmup: int = 2, steps: int = 10, budget_s: float = 20.0,
        distinct_batches: int = 2, seed: int = 0, amp: bool = False,
        use_compile: bool = False, log=print) -> Dict[str, object]:
    """Run the suite; returns ``{'rows': [...], 'markdown': str}``."""
    from graphgps_ext.train.speed import autocast
    names = common.check_names(types, LAYER_TYPES, 'layer types')
    rows = []
    for fam_name in families:
        family = FAMILIES[fam_name]
        batches = {}
        for name in names:
            lt = LAYER_TYPES[name]
            cfg = layer_cfg(lt, dim, extra=['train.amp',
                                            'bf16' if amp else 'none'])
            torch.manual_seed(seed)
            layers = build_layers(cfg, depth).to(device).train()
            params = sum(p.numel() for p in layers.parameters())
            net = (nn.ModuleList([torch.compile(layer, dynamic=True)
                                  for layer in layers])
                   if use_compile else layers)
            with_pair = lt.pair_features
            if with_pair not in batches:
                batches[with_pair] = make_layer_batches(
                    family, distinct_batches, dim, seed, with_pair, device)
            items = batches[with_pair]
            m = measure_steps(lambda it: layer_step(
                net, it, autocast(cfg, device.type)), items,
                              device, warmup, steps, budget_s,
                              family.batch_size)
            row = {'family': fam_name, 'layer': name,
                   'layer_type': lt.layer_type, 'params': params,
                   'graphs_per_s': m.graphs_per_s,
                   'ms_per_batch': m.ms_per_batch, 'peak_mib': m.peak_mib,
                   'steps': m.steps, 'status': m.status,
                   'batch_size': family.batch_size,
                   'input_mib': sum(t.numel() * t.element_size() for t in
                                    (items[0].x, items[0].edge_attr,
                                     items[0].pair) if t is not None) / common.MiB,
                   'nodes_per_batch': int(items[0].batch.num_nodes),
                   'edges_per_batch': int(items[0].batch.edge_index.size(1)),
                   'load_average_1min': common.load_average()}
            rows.append(row)
            log(f'  [layers] {fam_name:10s} {name:28s} '
                f'{common.fmt(m.graphs_per_s):>10s} graphs/s '
                f'{common.fmt(m.peak_mib):>9s} MiB  {m.status}')
            layers = net = None  # free this layer type's memory
    return {'rows': rows, 'markdown': markdown(rows, families, names),
            'settings': {'depth': depth, 'dim': dim, 'warmup': warmup,
                         'steps': steps, 'budget_s': budget_s, 'amp': amp,
                         'compile': use_compile}}


def markdown(rows: List[dict], families: Sequence[str],
             names: Sequence[str]) -> str:
    """One row per layer type: graphs/s and peak MiB for every family."""
    by = {(r['family'], r['layer']): r for r in rows}
    headers = ['layer type', 'params']
    for f in families:
        headers += [f'{FAMILIES[f].label} graphs/s', 'peak MiB']
    table = []
    for name in names:
        first = next((by[(f, name)] for f in families if (f, name) in by), None)
        line = [name, first['params'] if first else None]
        for f in families:
            r = by.get((f, name))
            if r is None:
                line += [None, None]
            elif r['status'] != 'ok':
                line += [r['status'], r['status']]
            else:
                line += [r['graphs_per_s'], r['peak_mib']]
        table.append(line)
    return common.markdown_table(headers, table)
