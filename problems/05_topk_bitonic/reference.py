"""Top-k per row: the k largest values of each row in descending order, and their column indices.

Ties may be broken either way: `compare` accepts any indices that are distinct, in range and point at values
equal to the expected ones, and requires the values themselves exactly (they are input elements).
"""

from __future__ import annotations

import torch


class Model(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (batch, n) float32 -> values (batch, k) float32 descending, indices (batch, k) int64."""
        values, indices = torch.sort(x, dim=-1, descending=True, stable=True)
        return values[:, : self.k].contiguous(), indices[:, : self.k].contiguous()


def get_init_kwargs(shape: dict) -> dict:
    return {"k": shape["k"]}


def get_inputs(shape: dict, seed: int, device, case: str = "base", scale: float = 1.0) -> list:
    gen = torch.Generator().manual_seed(seed)
    batch, n = shape["batch"], shape["n"]
    if case in ("base", "normal"):
        x = torch.randn(batch, n, generator=gen)
    elif case == "ties":
        # few distinct values: the k-th place is shared by many columns
        x = torch.randint(0, 8, (batch, n), generator=gen).float()
    elif case == "presorted":
        # ascending rows: the winners sit at the very end of each row
        x = torch.sort(torch.randn(batch, n, generator=gen), dim=-1).values
    elif case == "heavy_tailed":
        x = torch.randn(batch, n, generator=gen) * torch.exp(3.0 * torch.randn(batch, n, generator=gen))
    else:
        raise ValueError(f"unknown case {case!r} (base, ties, presorted, heavy_tailed)")
    return [(x * scale).to(device)]


def compare(out, expected, inputs, tolerance) -> list[str]:
    """Values exactly equal; indices distinct, in range, and pointing at the returned values."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        return ["output must be a tuple (values, indices)"]
    values, indices = out
    want_values, want_indices = expected
    for name, got, want in (("values", values, want_values), ("indices", indices, want_indices)):
        if type(got) is not torch.Tensor or got.shape != want.shape or got.dtype != want.dtype:
            return [f"{name} must be a {want.dtype} tensor of shape {tuple(want.shape)}"]
    values, indices, x = values.cpu(), indices.cpu(), inputs[0].cpu()
    problems = []
    wrong = (values != want_values.cpu()).nonzero()
    if len(wrong):
        r, c = wrong[0].tolist()
        problems.append(f"values: {len(wrong)} wrong; first at [{r}, {c}]: got {values[r, c].item()!r}, "
                        f"expected {want_values[r, c].item()!r} (exact match required)")
    if ((indices < 0) | (indices >= x.shape[-1])).any():
        return problems + ["indices: out of range"]
    if (torch.gather(x, 1, indices) != values).any():
        problems.append("indices: x[row, index] differs from the returned value")
    if (indices.sort(dim=-1).values.diff(dim=-1) == 0).any():
        problems.append("indices: a column is returned twice in one row")
    return problems
