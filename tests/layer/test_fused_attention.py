"""The fast attention kernels (graphgps_ext.layer.fused_attention) against
the readable dense reference (graphgps_ext.layer.reference_attention), which
is itself checked against a per-graph loop."""
import itertools

import pytest
import torch
from torch_geometric.data import Batch, Data

from graphgps_ext.layer import fused_attention as attention
from graphgps_ext.layer.context import GraphContext
from graphgps_ext.layer.fused_attention import node_attention
from graphgps_ext.layer.reference_attention import dense_node_attention, key_mask

SIZES = [4, 1, 6, 3]


def make_ctx(sizes=SIZES):
    data = [Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=n)
            for n in sizes]
    return GraphContext.from_batch(Batch.from_data_list(data))


def loop_reference(qkv, sizes, scale):
    """Per graph and head: softmax(q k^T scale) v with plain loops."""
    out = torch.zeros_like(qkv[0])
    start = 0
    for n in sizes:
        sl = slice(start, start + n)
        q, k, v = qkv[0][..., sl, :], qkv[1][..., sl, :], qkv[2][..., sl, :]
        a = torch.softmax(q @ k.transpose(-1, -2) * scale, dim=-1)
        out[..., sl, :] = a @ v
        start += n
    return out


def reference(qkv, sizes, scale):
    """The package's readable reference (dense padded layout)."""
    return dense_node_attention(qkv, make_ctx(sizes), scale=scale)


@pytest.mark.parametrize('heads', [(2, ), (3, 2)])
def test_dense_reference_is_the_per_graph_softmax(heads):
    torch.manual_seed(5)
    sizes = [4, 1, 6, 0, 3]
    qkv = torch.randn((3, ) + heads + (sum(sizes), 4), dtype=torch.float64)
    torch.testing.assert_close(reference(qkv, sizes, 0.7),
                               loop_reference(qkv, sizes, 0.7))


@pytest.mark.parametrize('explicit_max', [64, 0])  # explicit path / SDPA path
@pytest.mark.parametrize('heads', [(2, ), (3, 2)])
@pytest.mark.parametrize('overhead', [attention.BLOCK_OVERHEAD, 0])
def test_node_attention_matches_per_graph_softmax(monkeypatch, explicit_max,
                                                  heads, overhead):
    monkeypatch.setattr(attention, 'EXPLICIT_MAX_NODES', explicit_max)
    # overhead 0: every batch is split into several size blocks.
    monkeypatch.setattr(attention, 'BLOCK_OVERHEAD', overhead)
    torch.manual_seed(0)
    N, dh = sum(SIZES), 4
    qkv = torch.randn((3, ) + heads + (N, dh), dtype=torch.float64)
    ctx = make_ctx()
    out = node_attention(qkv, ctx)
    blocks = attention.attention_blocks(ctx).blocks
    assert len(blocks) == (1 if overhead else attention.MAX_BLOCKS)
    assert out.shape == heads + (N, dh)
    torch.testing.assert_close(out, reference(qkv, SIZES, dh ** -0.5))
    # Strided inputs (e.g. a permuted projection) give the same result.
    strided = qkv.transpose(-1, -2).contiguous().transpose(-1, -2)
    torch.testing.assert_close(node_attention(strided, make_ctx()), out)


@pytest.mark.parametrize('overhead', [attention.BLOCK_OVERHEAD, 0])
def test_node_attention_gradients_and_dropout_in_training(monkeypatch,
                                                          overhead):
    monkeypatch.setattr(attention, 'BLOCK_OVERHEAD', overhead)
    torch.manual_seed(1)
    N, dh = sum(SIZES), 4
    qkv = torch.randn(3, 2, N, dh, dtype=torch.float64, requires_grad=True)
    out = node_attention(qkv, make_ctx(), p=0.5, training=True)
    out.square().sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(qkv.grad).all()
    # Eval (or p = 0) ignores the dropout rate.
    torch.testing.assert_close(node_attention(qkv, make_ctx(), p=0.5),
                               reference(qkv.detach(), SIZES, dh ** -0.5))


def fixed_masks(monkeypatch):
    """Make the attention dropout masks a fixed function of their shape (so
    that node_attention is deterministic, for gradcheck)."""
    def mask(shape, p, dtype=torch.float32, device=None):
        gen = torch.Generator().manual_seed(sum(shape))
        return (torch.rand(shape, generator=gen) >= p).to(dtype)
    monkeypatch.setattr(attention, 'dropout_mask', mask)


@pytest.mark.parametrize('p', [0.0, 0.5])
@pytest.mark.parametrize('heads', [(2, ), (3, 2)])
@pytest.mark.parametrize('overhead', [attention.BLOCK_OVERHEAD, 0])
def test_hand_written_backward_matches_finite_differences(monkeypatch, p,
                                                          heads, overhead):
    monkeypatch.setattr(attention, 'BLOCK_OVERHEAD', overhead)
    fixed_masks(monkeypatch)
    calls = []
    apply = attention._BlockAttention.apply
    monkeypatch.setattr(attention._BlockAttention, 'apply',
                        lambda *a: calls.append(1) or apply(*a))
    torch.manual_seed(2)
    sizes = [4, 1, 6, 0, 3]
    qkv = torch.randn((3, ) + heads + (sum(sizes), 3), dtype=torch.float64,
                      requires_grad=True)
    ctx = make_ctx(sizes)
    assert torch.autograd.gradcheck(
        lambda t: node_attention(t, ctx, p=p, training=True), (qkv, ))
    assert calls  # the custom backward was the one checked
    if p == 0.0:  # and it is the reference attention
        torch.testing.assert_close(
            node_attention(qkv, ctx, training=True),
            reference(qkv.detach(), sizes, 3 ** -0.5))


@pytest.mark.parametrize('p', [0.0, 0.5])
def test_fused_switch_keeps_the_plain_autograd_path(monkeypatch, p):
    # gt.fused_attention False: autograd through the same forward; equal
    # outputs and gradients (the same dropout masks).
    monkeypatch.setattr(attention, 'BLOCK_OVERHEAD', 0)
    fixed_masks(monkeypatch)
    torch.manual_seed(4)
    qkv = torch.randn(3, 3, 2, sum(SIZES), 4, dtype=torch.float64,
                      requires_grad=True)
    results = []
    for fused in (True, False):
        out = node_attention(qkv, make_ctx(), p, training=True, fused=fused)
        results.append((out, torch.autograd.grad(out.square().sum(), qkv)[0]))
    torch.testing.assert_close(results[0], results[1])


def test_training_without_dropout_on_large_blocks_uses_autograd(monkeypatch):
    # Blocks above EXPLICIT_MAX_NODES without dropout take the fused SDPA
    # kernel, differentiated by autograd; same gradients as the explicit path.
    torch.manual_seed(3)
    qkv = torch.randn(3, 2, sum(SIZES), 4, dtype=torch.float64,
                      requires_grad=True)
    grads = []
    for explicit_max in (64, 0):
        monkeypatch.setattr(attention, 'EXPLICIT_MAX_NODES', explicit_max)
        out = node_attention(qkv, make_ctx(), training=True)
        grads.append(torch.autograd.grad(out.square().sum(), qkv)[0])
    torch.testing.assert_close(grads[0], grads[1])


def test_head_layout_round_trip(monkeypatch):
    monkeypatch.setattr(attention, 'BLOCK_OVERHEAD', 0)
    sizes, G, dh = [5, 2, 0, 4, 4], 3, 2
    ctx = make_ctx(sizes)
    layout = attention.head_layout(ctx, G)
    N = sum(sizes)
    rows = torch.randn(N * 3 * G, dh)
    buf = rows.index_select(0, layout.take)
    assert buf.size(0) == sum(layout.in_sizes)
    assert torch.equal(buf.index_select(0, layout.back), rows)
    # out_back is the inverse of out at the real rows, N G at padding.
    assert torch.equal(layout.out_back[layout.out], torch.arange(N * G))
    padding = sum(layout.out_sizes) - N * G
    assert int((layout.out_back == N * G).sum()) == padding
    assert attention.head_layout(ctx, G) is layout  # cached per batch


def test_key_mask_is_cached_and_never_empty():
    ctx = make_ctx([2, 3])
    mask = key_mask(ctx)
    assert mask.shape == (2, 1, 1, 3)
    assert mask[0, 0, 0].tolist() == [True, True, False]
    assert key_mask(ctx) is mask


def brute_force_partition(sizes, max_blocks, overhead):
    best = None
    B = len(sizes)
    for k in range(1, min(max_blocks, B) + 1):
        for cuts in itertools.combinations(range(1, B), k - 1):
            bounds = [0, *cuts, B]
            cost = sum((hi - lo) * sizes[lo] ** 2
                       for lo, hi in zip(bounds[:-1], bounds[1:]))
            cost += k * overhead
            if best is None or cost < best[0]:
                best = (cost, bounds)
    return best


@pytest.mark.parametrize('overhead', [0, 30, 500])
def test_partition_sizes_is_optimal(overhead):
    gen = torch.Generator().manual_seed(overhead)
    for _ in range(20):
        sizes = torch.randint(0, 30, (9, ), generator=gen).sort(
            descending=True).values
        bounds = attention.partition_sizes(sizes, 4, overhead)
        cost, _ = brute_force_partition(sizes.tolist(), 4, overhead)
        got = sum((hi - lo) * sizes[lo].item() ** 2
                  for lo, hi in zip(bounds[:-1], bounds[1:]))
        assert bounds[0] == 0 and bounds[-1] == 9
        assert got + (len(bounds) - 1) * overhead == cost


def test_attention_blocks_pad_similar_sizes_together(monkeypatch):
    monkeypatch.setattr(attention, 'BLOCK_OVERHEAD', 100)
    sizes = [30, 2, 3, 29, 2, 0, 3]
    ctx = make_ctx(sizes)
    plan = attention.attention_blocks(ctx)
    # Splitting 30 from 29 or 3 from 2 saves less than the overhead.
    assert [(b.graphs, b.n) for b in plan.blocks] == [(2, 30), (5, 3)]
    assert plan.blocks[1].keep[:, 0].tolist() == [
        [True] * 3, [True] * 3, [True, True, False], [True, True, False],
        [True] * 3]  # the empty graph keeps every key (no empty softmax)
    assert plan.total == 2 * 30 + 5 * 3
    # Every node has its own row, inside its graph's block, and the buffer
    # row of a node copies that node.
    assert plan.slot.unique().numel() == plan.slot.numel() == sum(sizes)
    assert plan.gather.numel() == plan.total
    assert torch.equal(plan.gather[plan.slot], torch.arange(sum(sizes)))
    rows = torch.randn(sum(sizes), 3)
    parts = plan.to_blocks(rows)
    assert [part.shape[0] for part in parts] == [2 * 30, 5 * 3]
    assert torch.equal(plan.to_nodes(parts), rows)
    big = torch.tensor([n > 10 for n in sizes]).repeat_interleave(
        torch.tensor(sizes))
    assert bool((plan.slot[big] < 2 * 30).all())
    assert bool((plan.slot[~big] >= 2 * 30).all())
    # The padded cost is far below padding every graph to 30 nodes.
    padded = sum(b.graphs * b.n ** 2 for b in plan.blocks)
    assert padded < len(sizes) * 30 ** 2 / 3


def test_partition_sizes_with_many_distinct_sizes(monkeypatch):
    monkeypatch.setattr(attention, 'MAX_CANDIDATES', 8)
    sizes = torch.arange(100, 0, -1)  # 99 places where the size changes
    bounds = attention.partition_sizes(sizes, 4, 0.0)
    assert bounds[0] == 0 and bounds[-1] == 100 and len(bounds) == 5
    assert bounds == sorted(set(bounds))
    # Cheaper than one padded block even with the subsampled candidates.
    cost = sum((hi - lo) * sizes[lo].item() ** 2
               for lo, hi in zip(bounds[:-1], bounds[1:]))
    assert cost < 0.6 * 100 * 100 ** 2


def test_block_table_goes_to_a_gpu_without_a_host_wait(monkeypatch):
    """The block table of the unpadded attention is built on the host and
    copied from pinned memory with ``non_blocking`` (a tensor made from
    Python lists straight on a GPU is a blocking copy, a host
    synchronisation per batch)."""
    from graphgps_ext.layer import fused_attention
    calls = []
    monkeypatch.setattr(torch.Tensor, 'pin_memory',
                        lambda self: calls.append('pin') or self)
    real_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        calls.append(('to', str(args[0]), kwargs.get('non_blocking')))
        return real_to(self, 'cpu')
    monkeypatch.setattr(torch.Tensor, 'to', to)
    out = fused_attention._to_device(torch.arange(3), torch.device('cuda'))
    assert calls == ['pin', ('to', 'cuda', True)] and out.tolist() == [0, 1, 2]
