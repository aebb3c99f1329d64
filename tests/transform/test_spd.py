import torch

from graphgps_ext.transform.dense import GraphStore
from graphgps_ext.transform.spd import UNREACHABLE, pair_spd_group, shortest_path_dense


def path_store(n):
    i = torch.arange(n - 1)
    ei = torch.cat([torch.stack([i, i + 1]), torch.stack([i + 1, i])], 1)
    return GraphStore(ei, torch.tensor([0, n]), torch.tensor([0, ei.size(1)]))


def test_spd_path_all_distances():
    st = path_store(7)
    A = st.dense_adj(torch.tensor([0]), 7, 'simple')
    d = shortest_path_dense(A)[0]
    assert d[0].tolist() == [0, 1, 2, 3, 4, 5, 6]
    idx = torch.arange(7)
    assert torch.equal(d, (idx.view(-1, 1) - idx.view(1, -1)).abs())


def test_spd_disconnected_and_cutoff():
    # 0-1-2 and 3-4: pairs across components are unreachable
    ei = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 0, 2, 1, 4, 3]])
    st = GraphStore(ei, torch.tensor([0, 5]), torch.tensor([0, 6]))
    A = st.dense_adj(torch.tensor([0]), 5, 'simple')
    d = shortest_path_dense(A)[0]
    assert d[0].tolist() == [0, 1, 2, UNREACHABLE, UNREACHABLE]
    assert d[3].tolist() == [UNREACHABLE, UNREACHABLE, UNREACHABLE, 0, 1]
    cut = shortest_path_dense(A, max_dist=1)[0]
    assert cut[0].tolist() == [0, 1, UNREACHABLE, UNREACHABLE, UNREACHABLE]
    b, i, j, v = pair_spd_group(A, 1)
    assert set(zip(i.tolist(), j.tolist())) == {
        (0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (0, 1), (1, 0), (1, 2), (2, 1),
        (3, 4), (4, 3)}
    assert v.dtype == torch.int16 and int(v.max()) == 1


def test_spd_directed():
    ei = torch.tensor([[0, 1], [1, 2]])  # 0 -> 1 -> 2
    st = GraphStore(ei, torch.tensor([0, 3]), torch.tensor([0, 2]))
    d = shortest_path_dense(st.dense_adj(torch.tensor([0]), 3, 'simple'))[0]
    assert d[0].tolist() == [0, 1, 2]
    assert d[2].tolist() == [UNREACHABLE, UNREACHABLE, 0]
