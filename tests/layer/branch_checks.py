"""Shared checks for hybrid-layer branches (used by tests/layer/test_*.py).

A branch is called as ``branch(x, edge_attr, ctx)``; these helpers build tiny
batches, run a branch on them and check the properties every branch must
have: permutation equivariance, independence of the batch (eval mode),
gradients reaching every parameter, finite outputs on degenerate graphs.
"""
from typing import Iterable, List, Optional, Sequence

import torch
from torch_geometric.data import Batch, Data

from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.gatedgcn import EQUIVSTABLE_PE_KEY

PE_DIM = 3


def random_graph(n: int, dim: int, p: float = 0.5, isolated: int = 0,
                 gen: Optional[torch.Generator] = None,
                 dtype=torch.float64) -> Data:
    """Undirected simple graph on ``n`` nodes (both directions stored), the
    last ``isolated`` nodes without edges, random node/edge features and
    EquivStableLapPE-like positions ``pe_equiv``."""
    m = n - isolated
    iu = torch.triu_indices(m, m, offset=1)
    keep = torch.rand(iu.size(1), generator=gen) < p
    und = iu[:, keep]
    ei = torch.cat([und, und.flip(0)], dim=1)
    # A random edge order, so that tests do not depend on a sorted layout.
    ei = ei[:, torch.randperm(ei.size(1), generator=gen)]
    return Data(x=torch.randn(n, dim, generator=gen, dtype=dtype),
                edge_index=ei,
                edge_attr=torch.randn(ei.size(1), dim, generator=gen,
                                      dtype=dtype),
                pe_equiv=torch.randn(n, PE_DIM, generator=gen, dtype=dtype),
                num_nodes=n)


def chord_path(n: int, dim: int, seed: int, isolated: bool = False,
               edge_features: bool = False, dtype=torch.float64) -> dict:
    """The path ``0 - 1 - ... - (m-1)`` plus the chord ``0 - 2`` when
    ``m > 3`` (both directions), ``m = n - 1`` with ``isolated`` (the last
    node has no edges), as a dict of ``x`` (and ``edge_attr``) with random
    features and ``edge_index`` (small graphs whose dense references are
    easy to write by hand)."""
    g = torch.Generator().manual_seed(seed)
    m = n - 1 if isolated else n
    src = torch.arange(max(m - 1, 0))
    ei = torch.stack([src, src + 1])
    if m > 3:
        ei = torch.cat([ei, torch.tensor([[0], [2]])], dim=1)
    ei = torch.cat([ei, ei.flip(0)], dim=1)
    out = dict(x=torch.randn(n, dim, generator=g, dtype=dtype), edge_index=ei)
    if edge_features:
        out['edge_attr'] = torch.randn(ei.size(1), dim, generator=g, dtype=dtype)
    return out


def graphs(sizes: Sequence[int], dim: int, seed: int = 0, isolated: int = 0,
           dtype=torch.float64) -> List[Data]:
    gen = torch.Generator().manual_seed(seed)
    return [random_graph(n, dim, isolated=min(isolated, n), gen=gen,
                         dtype=dtype) for n in sizes]


def context(batch) -> GraphContext:
    ctx = GraphContext.from_batch(batch)
    ctx.extras[EQUIVSTABLE_PE_KEY] = batch.pe_equiv
    return ctx


def run(branch, data_list: Iterable[Data], record: Optional[dict] = None):
    """``(x_out, edge_out | None, batch)`` of ``branch`` on a batch of graphs."""
    batch = Batch.from_data_list(list(data_list))
    ctx = context(batch)
    ctx.record = record
    x, e = branch(batch.x, batch.edge_attr, ctx)
    return x, e, batch


def permute_graph(g: Data, gen: torch.Generator):
    """Relabel the nodes and reorder the edges of ``g``; returns the new graph
    and ``(node_perm, edge_perm)`` with ``new.x = g.x[node_perm]``."""
    n, m = g.num_nodes, g.edge_index.size(1)
    perm = torch.randperm(n, generator=gen)
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(n)
    eperm = torch.randperm(m, generator=gen)
    new = Data(x=g.x[perm], edge_index=inv[g.edge_index[:, eperm]],
               edge_attr=g.edge_attr[eperm], pe_equiv=g.pe_equiv[perm],
               num_nodes=n)
    return new, perm, eperm


def check_permutation_equivariance(branch, data_list: List[Data],
                                   atol: float = 1e-8):
    """Permuting nodes (and edges) within graphs and the order of the graphs
    permutes the outputs accordingly (eval mode)."""
    branch.eval()
    gen = torch.Generator().manual_seed(123)
    x_ref, e_ref, _ = run(branch, data_list)
    node_off = torch.tensor([0] + [g.num_nodes for g in data_list]).cumsum(0)
    edge_off = torch.tensor([0] + [g.edge_index.size(1)
                                   for g in data_list]).cumsum(0)
    order = list(range(len(data_list)))[::-1]
    permuted, node_map, edge_map = [], [], []
    for k in order:
        new, perm, eperm = permute_graph(data_list[k], gen)
        permuted.append(new)
        node_map.append(perm + node_off[k])
        edge_map.append(eperm + edge_off[k])
    x_new, e_new, _ = run(branch, permuted)
    node_map, edge_map = torch.cat(node_map), torch.cat(edge_map)
    torch.testing.assert_close(x_new, x_ref[node_map], atol=atol, rtol=1e-6)
    if e_ref is not None:
        torch.testing.assert_close(e_new, e_ref[edge_map], atol=atol, rtol=1e-6)


def batch_dependence(branch, data_list: List[Data]) -> float:
    """Largest difference between each graph's output alone and in the batch
    (eval mode)."""
    branch.eval()
    x_all, e_all, batch = run(branch, data_list)
    worst = 0.0
    node_off = edge_off = 0
    for g in data_list:
        x, e, _ = run(branch, [g])
        n, m = g.num_nodes, g.edge_index.size(1)
        worst = max(worst, (x - x_all[node_off:node_off + n]).abs().max().item())
        if e is not None and m:
            worst = max(worst, (e - e_all[edge_off:edge_off + m]).abs().max().item())
        node_off, edge_off = node_off + n, edge_off + m
    return worst


def check_gradients(branch, data_list: List[Data], zero_ok: Sequence[str] = ()):
    """Every parameter gets a finite gradient, non-zero except for the names
    in ``zero_ok`` (parameters the output is invariant to, e.g. key biases
    under a softmax)."""
    branch.train()
    branch.zero_grad()
    x, e, _ = run(branch, data_list)
    gen = torch.Generator().manual_seed(7)
    loss = (x * torch.randn(x.shape, generator=gen, dtype=x.dtype)).sum()
    if e is not None:
        loss = loss + (e * torch.randn(e.shape, generator=gen,
                                       dtype=e.dtype)).sum()
    loss.backward()
    for name, p in branch.named_parameters():
        assert p.grad is not None, f'no gradient reaches {name}'
        assert torch.isfinite(p.grad).all(), f'non-finite gradient for {name}'
        if name not in zero_ok:
            assert p.grad.abs().sum() > 0, f'zero gradient for {name}'


def check_degenerate(branch, dim: int):
    """Isolated nodes, graphs without edges and single-node graphs give
    finite outputs and gradients, in train and eval mode."""
    data = graphs([4, 1, 3, 1], dim, seed=5, isolated=2)
    data[0] = random_graph(4, dim, p=1.0, isolated=1,
                           gen=torch.Generator().manual_seed(1))
    for train in (True, False):
        branch.train(train)
        for dl in (data, data[1:2]):
            x, e, batch = run(branch, dl)
            assert x.shape == batch.x.shape and torch.isfinite(x).all()
            if e is not None:
                assert e.shape == batch.edge_attr.shape
                assert torch.isfinite(e).all()
    branch.train()
    branch.zero_grad()
    x, e, _ = run(branch, data)
    (x.sum() + (e.sum() if e is not None else 0)).backward()
    for name, p in branch.named_parameters():
        assert p.grad is None or torch.isfinite(p.grad).all(), name


def dense_adjacency(batch) -> torch.Tensor:
    """``[N, N]`` with ``A[i, j] = 1`` for every edge ``j -> i``."""
    N = batch.num_nodes
    A = torch.zeros(N, N, dtype=batch.x.dtype)
    A[batch.edge_index[1], batch.edge_index[0]] = 1.0
    return A


def randomise_batchnorms(module):
    """Non-trivial affine weights and running statistics of every
    BatchNorm1d of ``module`` (eval-mode checks)."""
    with torch.no_grad():
        for bn in module.modules():
            if isinstance(bn, torch.nn.BatchNorm1d):
                bn.running_mean.uniform_(-1, 1)
                bn.running_var.uniform_(0.5, 2)
                bn.weight.uniform_(0.5, 2)
                bn.bias.uniform_(-1, 1)
