"""Small dense adjacencies shared by the encoding tests."""
import torch


def cycle_adj(n):
    """``[1, n, n]`` float64 adjacency of the cycle on ``n`` nodes."""
    A = torch.zeros(1, n, n, dtype=torch.float64)
    i = torch.arange(n)
    A[0, i, (i + 1) % n] = 1
    A[0, (i + 1) % n, i] = 1
    return A
