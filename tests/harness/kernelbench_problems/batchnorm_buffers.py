"""Level-1 style: BatchNorm1d in training mode (buffers, an int64 0-d one among them) and a bool mask input."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x, mask):
        return self.bn(x).masked_fill(mask, 0.0), mask.logical_not()


batch_size = 8
features = 6


def get_inputs():
    return [torch.randn(batch_size, features), torch.rand(batch_size, features) > 0.5]


def get_init_inputs():
    return [features]
