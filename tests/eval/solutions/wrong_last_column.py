"""Wrong: skips the last input column (a partial computation)."""
import torch


class Model(torch.nn.Module):
    def __init__(self, N, K):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(N, K))
        self.bias = torch.nn.Parameter(torch.empty(N))

    def forward(self, x):
        return (x[:, None, :-1] * self.weight[None, :, :-1]).sum(-1) + self.bias
