"""Level-1 style: C = A @ B of two inputs, no parameters."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 24
K = 40
N = 16


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
