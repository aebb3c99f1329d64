"""The operator and host-synchronisation counter
(:mod:`graphgps_ext.bench.dispatch_count`) on the CPU."""
import pytest
import torch

from graphgps_ext.bench.dispatch_count import (DispatchCounter, cuda_sync_count,
                                               optimizer_host_tensors)


def count(fn, host=()):
    with DispatchCounter() as c:
        c.mark_host(host)
        fn()
    return c


@pytest.mark.parametrize('reason, fn', [
    ('item', lambda t, m: t.sum().item()),
    ('item', lambda t, m: float(t[0])),
    ('item', lambda t, m: bool((t > 0).any())),
    ('nonzero', lambda t, m: m.nonzero()),
    ('nonzero', lambda t, m: torch.where(m)),
    ('boolean index', lambda t, m: t[m]),
    ('boolean index', lambda t, m: t.clone().__setitem__(m, 0.0)),
    ('masked_select', lambda t, m: t.masked_select(m)),
    ('unique', lambda t, m: t.unique()),
    ('repeat_interleave', lambda t, m: torch.arange(4).repeat_interleave(
        torch.tensor([1, 0, 2, 1]))),
    ('bincount', lambda t, m: torch.bincount(m.long())),
    ('equal', lambda t, m: torch.equal(t, t)),
    ('tolist', lambda t, m: t.tolist()),
    ('cpu', lambda t, m: t.cpu()),
])
def test_counts_every_kind_of_host_read(reason, fn):
    t = torch.tensor([1.0, -2.0, 3.0, 0.5])
    m = t > 0
    c = count(lambda: fn(t, m))
    assert c.syncs >= 1 and reason in c.reasons, dict(c.reasons)


def test_sync_free_code_counts_operators_only():
    t = torch.randn(6, 3, requires_grad=True)
    index = torch.tensor([0, 0, 1, 2, 2, 2])

    def step():
        out = torch.zeros(3, 3).index_add(0, index, t * 2)
        torch.where(torch.isnan(out), 0.0, out).sum().backward()
        torch.arange(3).repeat_interleave(torch.tensor([1, 2, 3]),
                                          output_size=6)
    c = count(step)
    assert c.syncs == 0 and c.ops >= 6


def test_host_tensors_and_what_is_computed_from_them_are_host_work():
    sizes = torch.tensor([5, 3, 3, 1])
    device = torch.randn(4)

    def host():
        s, _ = torch.sort(sizes, descending=True)
        cuts = torch.nonzero(s[1:] != s[:-1])
        return int(s[0]), cuts.tolist()
    c = count(host, host=[sizes])
    assert c.syncs == 0 and c.ops == 0 and c.host_ops > 0
    # A device tensor mixed in makes it device work again.
    c = count(lambda: int((sizes + device).argmax()), host=[sizes])
    assert c.syncs == 1


def test_optimizer_step_counters_are_host_tensors():
    p = torch.nn.Parameter(torch.randn(3))
    opt = torch.optim.AdamW([p], foreach=False)
    p.grad = torch.ones(3)
    opt.step()
    assert optimizer_host_tensors(opt) == [opt.state[p]['step']]
    with DispatchCounter() as c:
        c.mark_host(optimizer_host_tensors(opt))
        opt.step()
    assert c.syncs == 0
    with DispatchCounter() as c:  # unmarked, the step counter's read counts
        opt.step()
    assert c.reasons['item'] >= 1
    fused = torch.optim.AdamW([p], fused=True)
    fused.step()
    assert optimizer_host_tensors(fused) == []


def test_patches_are_undone():
    original = torch.Tensor.tolist
    with DispatchCounter():
        assert torch.Tensor.tolist is not original
    assert torch.Tensor.tolist is original


def test_cuda_sync_count_is_none_off_cuda():
    with cuda_sync_count(torch.device('cpu')) as n:
        torch.ones(2).sum().item()
    assert n == [None]


def test_on_a_gpu_cpu_tensors_are_host_work():
    # A counter for a CUDA step treats CPU tensors as host tensors (no
    # CUDA needed to check the rule).
    t = torch.tensor([3.0, 1.0])
    with DispatchCounter(device=torch.device('cuda')) as c:
        t.sum().item()
        t.tolist()
    assert c.syncs == 0 and c.host_ops >= 2
