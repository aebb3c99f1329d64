import math

import pytest
import torch

from adjacency import cycle_adj
from graphgps_ext.transform.lappe import laplacian, laplacian_eigen


def random_adj(G, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    A = (torch.rand(G, n, n, generator=g) < 0.3).double()
    A = ((A + A.transpose(1, 2)) > 0).double()
    A.diagonal(dim1=1, dim2=2).zero_()
    return A


@pytest.mark.parametrize('norm', ['none', 'sym'])
def test_orthonormal_eigenvectors(norm):
    A = random_adj(4, 9)
    vec, val = laplacian_eigen(A, 9, norm)
    eye = torch.eye(9, dtype=torch.float64).expand(4, 9, 9)
    assert torch.allclose(vec.transpose(1, 2) @ vec, eye, atol=1e-10)
    L = laplacian(A, norm)
    assert torch.allclose(L @ vec, vec * val.unsqueeze(1), atol=1e-10)
    assert (val[:, 1:] >= val[:, :-1]).all() and (val >= 0).all()


def test_rw_eigenvectors_are_right_eigenvectors():
    A = random_adj(3, 8, seed=1)
    vec, val = laplacian_eigen(A, 8, 'rw')
    deg = A.sum(-1, keepdim=True)
    Lrw = torch.eye(8, dtype=torch.float64) - torch.where(deg > 0, A / deg.clamp_min(1), 0 * A)
    assert torch.allclose(Lrw @ vec, vec * val.unsqueeze(1), atol=1e-10)
    assert torch.allclose(vec.norm(dim=1), torch.ones(3, 8, dtype=torch.float64))


@pytest.mark.parametrize('n', [6, 7])
def test_cycle_eigenvalues(n):
    k = torch.arange(n, dtype=torch.float64)
    comb = torch.sort(2 - 2 * torch.cos(2 * math.pi * k / n)).values
    _, val = laplacian_eigen(cycle_adj(n), n, 'none')
    assert torch.allclose(val[0], comb, atol=1e-12)
    _, val = laplacian_eigen(cycle_adj(n), n, 'sym')
    assert torch.allclose(val[0], comb / 2, atol=1e-12)
    _, val = laplacian_eigen(cycle_adj(n), 3, 'none', skip_trivial=True)
    assert torch.allclose(val[0], comb[1:4], atol=1e-12)


def test_padding_for_small_graphs():
    A = cycle_adj(3)
    vec, val = laplacian_eigen(A, 5, 'sym')
    assert vec.shape == (1, 3, 5) and val.shape == (1, 5)
    assert torch.isnan(vec[0, :, 3:]).all() and torch.isnan(val[0, 3:]).all()
    assert not torch.isnan(vec[0, :, :3]).any()
    vec, val = laplacian_eigen(A, 5, 'sym', skip_trivial=True)
    assert torch.isnan(val[0, 2:]).all() and not torch.isnan(val[0, :2]).any()


def test_isolated_node_is_finite():
    A = torch.zeros(1, 3, 3, dtype=torch.float64)
    A[0, 0, 1] = A[0, 1, 0] = 1
    for norm in ('none', 'sym', 'rw'):
        vec, val = laplacian_eigen(A, 3, norm)
        assert torch.isfinite(vec).all() and torch.isfinite(val).all()
