import random

import networkx as nx
import pytest
import torch

from graphgps_ext.transform.dense import GraphStore
from graphgps_ext.transform.rings import chordless_cycles, compute_rings, ring_pairs


def undirected(edges):
    e = torch.tensor(edges).t()
    return torch.cat([e, e.flip(0)], 1)


def cycle_edges(nodes):
    return [(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))]


def as_set(pairs):
    return set(zip(pairs[0].tolist(), pairs[1].tolist()))


def test_benzene_all_pairs():
    pairs = ring_pairs(6, undirected(cycle_edges(list(range(6)))), 18)
    assert as_set(pairs) == {(i, j) for i in range(6) for j in range(6)}


def test_naphthalene_two_rings_not_the_perimeter():
    # rings 0-1-2-3-4-5 and 4-5-6-7-8-9 share the bond 4-5; the 10-cycle
    # around both has that bond as a chord, so it is not a ring.
    edges = cycle_edges([0, 1, 2, 3, 4, 5]) + [(5, 6), (6, 7), (7, 8), (8, 9), (9, 4)]
    ei = undirected(edges)
    cycles = chordless_cycles(10, ei, 18)
    assert sorted(sorted(c) for c in cycles) == [[0, 1, 2, 3, 4, 5], [4, 5, 6, 7, 8, 9]]
    rel = as_set(ring_pairs(10, ei, 18))
    a, b = set(range(6)), {4, 5, 6, 7, 8, 9}
    expected = {(i, j) for i in a for j in a} | {(i, j) for i in b for j in b}
    assert rel == expected
    assert (0, 9) not in rel and (4, 5) in rel


def test_ring_larger_than_max_size_and_chain():
    ei = undirected(cycle_edges(list(range(8))))
    assert ring_pairs(8, ei, 6).size(1) == 0
    assert ring_pairs(8, ei, 8).size(1) == 64
    chain = undirected([(i, i + 1) for i in range(6)])
    assert ring_pairs(7, chain, 18).size(1) == 0


def test_side_chain_atoms_are_not_bound():
    # cyclopropane 0-1-2 with a tail 2-3-4
    ei = undirected(cycle_edges([0, 1, 2]) + [(2, 3), (3, 4)])
    rel = as_set(ring_pairs(5, ei, 6))
    assert rel == {(i, j) for i in range(3) for j in range(3)}


def test_matches_networkx_on_random_graphs():
    rng = random.Random(0)
    for t in range(60):
        n = rng.randint(3, 11)
        G = nx.gnp_random_graph(n, rng.choice([0.2, 0.35]), seed=t)
        K = rng.randint(3, 8)
        ei = torch.tensor(list(G.edges()), dtype=torch.long).t().reshape(2, -1)
        mine = {frozenset(c) for c in chordless_cycles(n, ei, K)}
        ref = {frozenset(c) for c in nx.chordless_cycles(G, length_bound=K)
               if len(c) >= 3}
        assert mine == ref


@pytest.mark.parametrize('workers', [0, 2])
def test_compute_rings_collated(workers):
    g1 = undirected(cycle_edges([0, 1, 2]))
    g2 = undirected([(0, 1), (1, 2)])
    g3 = undirected(cycle_edges([0, 1, 2, 3]))
    ei = torch.cat([g1, g2, g3], 1)
    st = GraphStore(ei, torch.tensor([0, 3, 6, 10]), torch.tensor([0, 6, 10, 18]))
    index, ptr = compute_rings(st, 6, num_workers=workers)
    assert ptr.tolist() == [0, 9, 9, 25]
    assert as_set(index[:, 9:]) == {(i, j) for i in range(4) for j in range(4)}
