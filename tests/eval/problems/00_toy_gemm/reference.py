"""Toy GEMM with bias, for the grader's tests."""
import torch


class Model(torch.nn.Module):
    def __init__(self, N: int, K: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(N, K) / K ** 0.5)
        self.bias = torch.nn.Parameter(torch.randn(N))

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias)


def get_init_kwargs(shape: dict) -> dict:
    return {"N": shape["N"], "K": shape["K"]}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape["M"], shape["K"], generator=gen)
    if case == "heavy_tailed":
        x = x * torch.empty_like(x).exponential_(generator=gen) ** 2
    return [(x * scale).to(device)]
