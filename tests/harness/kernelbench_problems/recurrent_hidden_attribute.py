"""Importable: a recurrent cell whose hidden state is a plain tensor attribute made in the constructor from a
module-level size, overwritten from the forward's initial_hidden and assigned again by the forward (the habit of
KernelBench level 3's vanilla RNN). The attribute becomes a buffer, an input of the kernel."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, x, initial_hidden):
        self.hidden.copy_(initial_hidden)
        self.hidden = self.hidden.to(x.device)
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))
        return self.h2o(self.hidden)


batch_size = 4
input_size = 12
hidden_size = 10
output_size = 6


def get_inputs():
    return [torch.rand(batch_size, input_size), torch.rand(batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
