"""Unimportable: the forward returns a dict."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return {"y": x * 2}


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
