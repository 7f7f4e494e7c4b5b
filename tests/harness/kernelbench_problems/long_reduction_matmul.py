"""Level-1 style, KernelBench level 1 #6's kind of problem: C = A @ B with a long K (torch.rand inputs), a float32
reduction of 524,288 terms per output element."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 8
N = 8
K = 524288


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
