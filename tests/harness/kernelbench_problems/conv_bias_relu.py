"""Level-2 style: Conv2d, plus a bias parameter of the problem's own, then ReLU."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x):
        return torch.relu(self.conv(x) + self.bias)


batch_size = 4
in_channels = 3
out_channels = 8
height, width = 12, 12
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
