"""A KernelBench-format problem (written for KernelSeek's examples): level 2, Linear, a scale, then GELU."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x) * self.scale)


batch_size = 128
in_features = 1024
out_features = 512
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
