r"""Recording attention from a model, and per-node attention scores.

:func:`record_attention` runs any :class:`~graphgps_ext.network.model.GPSModel`
(or a model with the same ``forward(batch, record=dict)``) in eval mode with
recording on. The branches offer their maps to
:meth:`~graphgps_ext.layer.context.GraphContext.log`, once per layer, so every
key maps to a list with one tensor per layer that has the branch:

=================  =============================  ==============================
key                shape                          normalisation
=================  =============================  ==============================
``gea/node``       ``[N, H, S]``                  GEAET eq. 3: sums to 1 over the
                                                  ``S`` slots of every node/head
``gea/node_col``   ``[N, H, S]``                  :math:`\hat\alpha`: sums to 1
                                                  over the nodes of each graph,
                                                  for every head and slot
``gea/edge``       ``[E, H, S]``                  sums to 1 over the slots
``transformer``    ``[B, H, n_max, n_max]``       row ``i`` (query) sums to 1
                                                  over the keys of its graph
``gt``             ``[B, H, n_max, n_max]``       as ``transformer``; the sparse
                                                  GT layer's ``[E, H]`` weights
                                                  are scattered to this layout
                                                  (query = target of the edge)
``csa``            ``[B, n_max, n_max, H, C]``    for every channel ``(h, c)``,
                                                  row ``i`` sums to 1 (``C`` =
                                                  :math:`d_h`, or 1 for mono)
``mna/alpha``      ``[N, c + 1]``                 sums to 1 over the kernels
=================  =============================  ==============================

Padded rows/columns of the dense maps are zero. :func:`node_scores` reduces
these to one score per node, the quantity drawn on the molecules (GEAET
Fig. 4/8); :func:`graph_maps` cuts a graph's ``[channels, n, n]`` maps out of
a dense map (CSA Fig. 3/4). :func:`load_run` rebuilds a trained run from its
``config.yaml`` and checkpoint.
"""
import os
from dataclasses import dataclass
from typing import Dict, List, Sequence, Union

import torch
from torch import Tensor
from torch_geometric.utils import scatter

from graphgps_ext import branches
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.results.tree import RunDir

#: Branch name -> the record key its per-node score is computed from (the
#: ``record`` trait of the branch catalogue).
BRANCH_KEYS = {name: b.record for name, b in branches.recording().items()}


def record_attention(model: torch.nn.Module, batch) -> Dict[str, List[Tensor]]:
    """Run ``model(batch, record=...)`` in eval mode without gradients and
    return ``{key: [tensor per layer]}`` (CPU tensors, shapes in the module
    docstring). The model's train/eval mode is restored afterwards; the
    batch is moved to the model's device."""
    param = next(model.parameters(), None)
    if param is not None:
        batch = batch.to(param.device)
    was_training = model.training
    record: Dict[str, List[Tensor]] = {}
    model.eval()
    try:
        with torch.no_grad():
            model(batch, record=record)
    finally:
        model.train(was_training)
    if 'gt' in record:
        record['gt'] = [sparse_to_dense(a, batch.cpu()) if a.dim() == 2 else a
                        for a in record['gt']]
    return record


def sparse_to_dense(weights: Tensor, batch) -> Tensor:
    """Edge weights ``[E, H]`` (edge ``j -> i`` = query ``i``, key ``j``) ->
    ``[B, H, n_max, n_max]`` (parallel edges are summed)."""
    ctx = GraphContext.from_batch(batch)
    layout = ctx.layout
    b, src, dst = layout.pair_index(ctx.edge_index)
    B, n, H = layout.num_graphs, layout.n_max, weights.size(1)
    out = weights.new_zeros(B, n, n, H)
    out.index_put_((b, dst, src), weights, accumulate=True)
    return out.permute(0, 3, 1, 2).contiguous()


def _pick_layer(maps: List[Tensor], layer: Union[int, str]) -> Tensor:
    if layer == 'mean':
        return torch.stack(maps).mean(dim=0)
    layer = int(layer)
    if not -len(maps) <= layer < len(maps):
        raise ValueError(f'layer {layer} does not exist: the model has '
                         f'{len(maps)} layer(s) with this branch')
    return maps[layer]


def received(dense: Tensor, batch) -> Tensor:
    r"""Attention received by every node, ``[B, H, n, n]`` -> ``[N]``:

    .. math:: r_j = \frac{1}{H\,|Q|}\sum_{h}\sum_{i \in Q} a^{h}_{ij}

    averaged over the heads (channels) ``h`` and the query nodes ``i`` of the
    graph that attend to something (``Q``: rows with a non-zero sum; all
    nodes except for the sparse GT, where a node without in-neighbours has
    an empty row). :math:`\sum_j r_j = 1` for every graph."""
    layout = GraphContext.from_batch(batch).layout
    dense = dense * layout.mask[:, None, :, None]  # drop padded queries (CSA)
    rows = dense.sum(dim=-1)  # [B, H, n]
    active = (rows > 0).to(dense.dtype)
    per_head = dense.sum(dim=-2) / active.sum(-1, keepdim=True).clamp(min=1)
    return layout.to_sparse(per_head.mean(dim=1).unsqueeze(-1)).squeeze(-1)


def node_scores(record: Dict[str, List[Tensor]], branch: str, batch,
                layer: Union[int, str] = -1) -> Tensor:
    r"""One attention score per node for ``branch`` at ``layer`` (an index,
    ``-1`` = last, or ``'mean'`` over layers):

    - ``GEANet``: the mass the external node unit puts on the node,
      :math:`s_i = \frac{1}{HS}\sum_{h,k}\hat\alpha^{h}_{ik}` with
      :math:`\hat\alpha` the per-slot softmax over the nodes of the graph
      (the column step of GEAET eq. 3; the row-normalised :math:`\alpha`
      sums to 1 for every node and so cannot single out nodes). Sums to 1 over
      the nodes of each graph (with ``parity_batch_softmax`` the softmax ran
      over the batch; the scores are renormalised per graph).
    - ``Transformer``, ``GT``: the attention each node *receives*,
      averaged over heads and queries (:func:`received`); sums to 1 per graph.
    - ``CSA``: the same, averaged over all channels of all heads.
    - ``MNA``: the kernel weights :math:`\alpha_{v,k}`, ``[N, c + 1]``
      (MNA-GT eq. 10), rows sum to 1.

    Returns ``[N]`` (``[N, c + 1]`` for MNA), on the CPU.
    """
    recording = branches.recording()
    if branch not in recording:
        raise ValueError(f"unknown branch '{branch}': use one of "
                         f"{', '.join(recording)}")
    key, layout = recording[branch].record, recording[branch].record_layout
    if key not in record:
        raise KeyError(f"no '{key}' attention was recorded: the model has no "
                       f"{branch} branch (recorded: {', '.join(record) or 'none'})")
    maps = _pick_layer(record[key], layer)
    batch = batch.cpu()
    if layout == 'kernels':
        return maps
    if layout == 'slots':
        s = maps.mean(dim=(1, 2))
        total = scatter(s, batch.batch, 0, dim_size=batch.num_graphs,
                        reduce='sum')
        return s / total[batch.batch]
    if layout == 'channels':  # [B, n, n, H, C] -> [B, H*C, n, n]
        B, n = maps.shape[:2]
        maps = maps.reshape(B, n, n, -1).permute(0, 3, 1, 2)
    return received(maps, batch)


def graph_maps(record: Dict[str, List[Tensor]], branch: str, batch,
               graph: int, layer: Union[int, str] = -1) -> Tensor:
    """The dense maps of one graph of the batch, ``[channels, n_g, n_g]``
    (query rows, key columns): the heads of ``Transformer`` / ``GT`` or the
    ``H * C`` channels of ``CSA`` (channel ``h * C + c``)."""
    pairs = {name: b for name, b in branches.recording().items()
             if b.record_layout in ('dense', 'channels')}
    if branch not in pairs:
        names = list(pairs)
        raise ValueError(f"'{branch}' has no node-pair maps; use "
                         f"{', '.join(names[:-1])} or {names[-1]}")
    key = pairs[branch].record
    if key not in record:
        raise KeyError(f"no '{key}' attention was recorded: the model has no "
                       f'{branch} branch')
    maps = _pick_layer(record[key], layer)
    if pairs[branch].record_layout == 'channels':
        B, n = maps.shape[:2]
        maps = maps.reshape(B, n, n, -1).permute(0, 3, 1, 2)
    n_g = int((batch.batch.cpu() == graph).sum())
    return maps[graph, :, :n_g, :n_g]


def recorded_branches(record: Dict[str, List[Tensor]]) -> List[str]:
    """The branches (``BRANCH_KEYS`` names) present in ``record``."""
    return [name for name, b in branches.recording().items() if b.record in record]


@dataclass
class LoadedRun:
    """A trained run rebuilt from disk (:func:`load_run`)."""
    run_dir: str
    label: str
    cfg: object
    model: torch.nn.Module
    bundle: object
    checkpoint: dict


def load_run(run_dir: str, ckpt: str = 'best', device: str = 'cpu',
             opts: Sequence[str] = ()) -> LoadedRun:
    """Rebuild the model of ``<run_dir>`` (``results/<name>/<seed>``) from its
    ``config.yaml`` and ``ckpt/<ckpt>.pt`` (``best`` or ``last``) and load its
    dataset with :func:`graphgps_ext.loader.load_dataset`. ``opts`` are
    ``KEY VALUE`` overrides of the saved config (e.g. ``dataset.dir`` when
    the data moved). The model is returned in eval mode on ``device``.

    The checkpoint is read with the project's one reader of pickled files
    (:func:`graphgps_ext.train.checkpoint.load`): a file that would run
    code raises :class:`~graphgps_ext.train.checkpoint.UnsafeCheckpointError`
    unread."""
    from graphgps_ext.runs.config import finalize_cfg, load_cfg
    from graphgps_ext.runs.seed import build_model, load_dataset
    from graphgps_ext.train import checkpoint

    folder = RunDir(run_dir)
    cfg_path = folder.config
    if not os.path.isfile(cfg_path):
        raise FileNotFoundError(
            f'{cfg_path} not found: --run must be a seed folder written by '
            'main.py, e.g. results/<run_name>/<seed>')
    if ckpt not in ('best', 'last'):
        raise ValueError(f"ckpt must be 'best' or 'last', got {ckpt!r}")
    ckpt_path = folder.ckpt(ckpt)
    if not os.path.isfile(ckpt_path):
        raise FileNotFoundError(
            f'{ckpt_path} not found: the run has not saved a {ckpt} checkpoint '
            "yet (try --ckpt last, or train longer)")
    # load_cfg resets GraphGym's global cfg: keep a private copy per run.
    cfg = load_cfg(cfg_path, ['accelerator', device] + list(opts)).clone()
    bundle = load_dataset(cfg)
    # The config's warnings are about training it (a short warm-up, ...):
    # the run they concern has logged them already.
    finalize_cfg(cfg, bundle.task, warn=False)
    model = build_model(cfg, bundle.task).to(cfg.accelerator)
    state = checkpoint.load(ckpt_path, map_location=cfg.accelerator)
    model.load_state_dict(state['model'])
    model.eval()
    parent = os.path.basename(os.path.dirname(os.path.abspath(run_dir)))
    label = f'{parent}/{os.path.basename(os.path.abspath(run_dir))}'
    return LoadedRun(run_dir, label, cfg, model, bundle, state)
