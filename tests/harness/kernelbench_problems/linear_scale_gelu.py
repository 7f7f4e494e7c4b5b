"""Level-2 style: Linear, a scale given to the constructor, GELU; a buffer and a scalar input too."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale
        self.register_buffer("shift", torch.linspace(-1.0, 1.0, out_features))

    def forward(self, x, alpha):
        return torch.nn.functional.gelu(self.linear(x) * self.scale + self.shift * alpha)


batch_size = 10
in_features = 32
out_features = 16
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features), 0.25]


def get_init_inputs():
    return [in_features, out_features, scale]
