"""Importable on a small machine: a linear layer whose weight alone takes 64 GiB (131072 x 131072 float32). Its
shapes come from the meta device and its data checks run with the model's own sizes reduced too; nothing is
allocated at its sizes."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch_size = 8
in_features = 131072
out_features = 131072


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
