"""Importable: forward has a keyword-only argument with a default, which get_inputs() never gives (the model runs
with the default, as KernelBench calls it); only one without a default is refused."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, *, scale=2.0):
        return x * scale


batch_size = 16


def get_inputs():
    return [torch.randn(batch_size, 8)]


def get_init_inputs():
    return []
