"""Forks without end (each child forks again) while it is checked."""
import os
import time

import torch


class Model(torch.nn.Module):
    def __init__(self, N, K):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(N, K))
        self.bias = torch.nn.Parameter(torch.empty(N))

    def forward(self, x):
        for _ in range(100000):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                while True:
                    try:
                        os.fork()
                    except OSError:
                        time.sleep(0.1)
        return (x[:, None, :] * self.weight[None]).sum(-1) + self.bias
