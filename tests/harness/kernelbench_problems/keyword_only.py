"""Unimportable: forward has a keyword-only argument."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, *, scale):
        return x * scale


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
