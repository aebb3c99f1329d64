from math import comb

import pytest
import torch

from adjacency import cycle_adj
from graphgps_ext.transform.rwse import rwse_dense


def cycle_return_probability(n, k):
    # closed walks of length k on C_n: right - left steps = m n for some integer m
    walks = sum(comb(k, (k + m * n) // 2) for m in range(-k, k + 1)
                if (k + m * n) % 2 == 0 and 0 <= (k + m * n) // 2 <= k)
    return walks / 2 ** k


@pytest.mark.parametrize('n', [5, 6])
def test_rwse_cycle_exact(n):
    times = list(range(1, 13))
    out = rwse_dense(cycle_adj(n), times)
    expected = torch.tensor([cycle_return_probability(n, k) for k in times],
                            dtype=torch.float64)
    assert out.shape == (1, n, len(times))
    # every node of a cycle has the same return probabilities
    assert torch.allclose(out[0], expected.expand(n, -1), atol=1e-12)
    assert out[0, 0, 1] == 0.5  # k = 2: go and come back
    if n == 6:
        assert out[0, 0, 5] == pytest.approx(22 / 64)  # k = 6


def test_rwse_star_and_isolated_node():
    m = 4  # centre 0, leaves 1..4, isolated node 5
    A = torch.zeros(1, 6, 6, dtype=torch.float64)
    A[0, 0, 1:5] = 1
    A[0, 1:5, 0] = 1
    times = [1, 2, 3, 4, 7, 16]
    out = rwse_dense(A, times)[0]
    even = torch.tensor([k % 2 == 0 for k in times], dtype=torch.float64)
    assert torch.equal(out[0], even)  # centre: back at every even step
    for leaf in range(1, 5):
        assert torch.allclose(out[leaf], even / m)
    assert torch.equal(out[5], torch.zeros(len(times), dtype=torch.float64))
    assert not torch.isnan(out).any()


def test_rwse_non_consecutive_times_match_matrix_powers():
    torch.manual_seed(0)
    A = (torch.rand(3, 9, 9) < 0.35).double()
    A = ((A + A.transpose(1, 2)) > 0).double()
    A.diagonal(dim1=1, dim2=2).zero_()
    times = [3, 1, 8, 5]
    out = rwse_dense(A, times)
    deg = A.sum(-1, keepdim=True)
    P = torch.where(deg > 0, A / deg.clamp_min(1), torch.zeros_like(A))
    for c, k in enumerate(times):
        ref = torch.linalg.matrix_power(P, k).diagonal(dim1=1, dim2=2)
        assert torch.allclose(out[..., c], ref, atol=1e-12)


def test_times_must_be_positive():
    with pytest.raises(ValueError, match='positive'):
        rwse_dense(cycle_adj(4), [0, 1])
