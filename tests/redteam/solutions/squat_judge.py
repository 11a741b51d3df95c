"""A wrong answer, and the judge's reply path squatted with a folder, so that the judge cannot write its reply and
the grading blames the reference instead of the candidate."""
import pathlib

import torch

try:
    (pathlib.Path.cwd() / "judge" / "worker_result.json").mkdir(parents=True)
except OSError:
    pass


class Model(torch.nn.Module):
    def __init__(self, N, K):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(N, K))
        self.bias = torch.nn.Parameter(torch.empty(N))

    def forward(self, x):
        return torch.zeros(x.shape[0], self.weight.shape[0])
