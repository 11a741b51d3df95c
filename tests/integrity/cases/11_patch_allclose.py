"""Class 11, in-process tampering: patch the comparison functions a checker in the same process would use,
then return garbage. The verdict is taken in another process from saved tensors."""

import torch

torch.allclose = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
