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


def _rotate_within_eigenspaces(val, vec, seed=0):
    """The same eigenspaces in another basis: a random orthogonal mix (with
    sign flips) inside every group of equal eigenvalues."""
    g = torch.Generator().manual_seed(seed)
    out = vec.clone()
    for b in range(val.size(0)):
        i = 0
        while i < val.size(1):
            j = i + 1
            while j < val.size(1) and abs(val[b, j] - val[b, i]) < 1e-8:
                j += 1
            q, _ = torch.linalg.qr(torch.randn(j - i, j - i, generator=g,
                                               dtype=torch.float64))
            out[b, :, i:j] = vec[b, :, i:j] @ q
            i = j
    return out


def _graphs_with_repeated_eigenvalues():
    """A 6-cycle (double eigenvalues), a star (eigenvalue 1 of multiplicity
    4), a complete graph (multiplicity 4) and two disjoint triangles."""
    star = torch.zeros(6, 6, dtype=torch.float64)
    star[0, 1:] = star[1:, 0] = 1
    complete = 1 - torch.eye(6, dtype=torch.float64)
    tri = torch.zeros(6, 6, dtype=torch.float64)
    for a, b in ((0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5)):
        tri[a, b] = tri[b, a] = 1
    return torch.stack([cycle_adj(6)[0], star, complete, tri])


@pytest.mark.parametrize('norm', ['none', 'sym'])
def test_canonical_basis_depends_on_the_eigenspaces_only(norm):
    from graphgps_ext.transform.lappe import canonical_eigenbasis
    A = torch.cat([_graphs_with_repeated_eigenvalues(), random_adj(3, 6, seed=4)])
    L = laplacian(A, norm)
    val, vec = torch.linalg.eigh(L)
    ref = canonical_eigenbasis(val, vec)
    for seed in range(3):
        other = canonical_eigenbasis(val, _rotate_within_eigenspaces(val, vec, seed))
        assert torch.allclose(other, ref, atol=1e-10)
    eye = torch.eye(6, dtype=torch.float64).expand_as(ref)
    assert torch.allclose(ref.transpose(1, 2) @ ref, eye, atol=1e-10)
    assert torch.allclose(L @ ref, ref * val.unsqueeze(1), atol=1e-10)


def _projectors(val, vec):
    """``{(eigenvalue rounded): projector}`` of one graph's eigenspaces."""
    out = {}
    for i in range(val.numel()):
        key = round(float(val[i]), 6)
        out[key] = out.get(key, 0) + torch.outer(vec[:, i], vec[:, i])
    return out


def test_encoding_of_a_graph_does_not_depend_on_its_batch():
    """Solved alone, in a batch, or in another order: the same vectors; and
    the same eigenspaces as an independent solver (NumPy)."""
    import numpy as np
    A = torch.cat([_graphs_with_repeated_eigenvalues(), random_adj(5, 6, seed=2)])
    vec, val = laplacian_eigen(A, 6, 'sym')
    perm = torch.randperm(A.size(0), generator=torch.Generator().manual_seed(0))
    vec_p, val_p = laplacian_eigen(A[perm], 6, 'sym')
    assert torch.allclose(vec_p, vec[perm], atol=1e-10)
    for b in range(A.size(0)):
        alone, _ = laplacian_eigen(A[b:b + 1], 6, 'sym')
        assert torch.allclose(alone[0], vec[b], atol=1e-10)
        np_val, np_vec = np.linalg.eigh(laplacian(A[b:b + 1], 'sym')[0].numpy())
        ours = _projectors(val[b], vec[b])
        theirs = _projectors(torch.from_numpy(np_val).clamp_min(0),
                             torch.from_numpy(np_vec))
        assert ours.keys() == theirs.keys()
        for key in ours:
            assert torch.allclose(ours[key], theirs[key], atol=1e-9)
