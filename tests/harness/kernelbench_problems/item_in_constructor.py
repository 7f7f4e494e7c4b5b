"""Importable with every scenario: the constructor reads a value with .item() (a stochastic-depth schedule, as
KernelBench level 3's Swin models do), which the meta device cannot; the model is built on CPU, moved there."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, dim, depth):
        super().__init__()
        rates = [r.item() for r in torch.linspace(0, 0.5, depth)]
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in rates)
        self.scales = rates

    def forward(self, x):
        for layer, scale in zip(self.layers, self.scales, strict=True):
            x = x + (1 - scale) * torch.relu(layer(x))
        return x


batch_size = 8
dim = 16
depth = 3


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, depth]
