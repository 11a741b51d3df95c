"""Takes host memory without end while it is checked."""
import torch


class Model(torch.nn.Module):
    def __init__(self, N, K):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(N, K))
        self.bias = torch.nn.Parameter(torch.empty(N))

    def forward(self, x):
        hoard = [bytearray(1 << 28) for _ in range(1000)]
        return (x[:, None, :] * self.weight[None]).sum(-1) + self.bias + len(hoard) * 0
