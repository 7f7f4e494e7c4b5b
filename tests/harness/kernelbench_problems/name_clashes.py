"""Importable: names that clash (an input and a parameter both `weight`) or are C keywords (`double`)."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, weight, double):
        return weight * self.weight * double


batch_size = 3
dim = 5


def get_inputs():
    return [torch.randn(batch_size, dim), 1.5]


def get_init_inputs():
    return [dim]
