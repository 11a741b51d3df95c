"""Class 14, the Kahan leak: a warp-per-row softmax without compensation (32 lanes, each summing its strided
elements in fp32, then a tree over the lanes). Elementwise tolerances pass on random rows; on the adversarial
absorb rows the lane that meets a maximum first drops every tiny term after it, and the row sums miss the
bound against the fp64 oracle."""

import torch

LANES = 32


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, n = x.shape
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        padded = torch.zeros(rows, -(-n // LANES) * LANES, dtype=torch.float32, device=x.device)
        padded[:, :n] = e
        lanes = torch.zeros(rows, LANES, dtype=torch.float32, device=x.device)
        for step in padded.view(rows, -1, LANES).unbind(dim=1):
            lanes = lanes + step
        return e / lanes.sum(dim=-1, keepdim=True)
