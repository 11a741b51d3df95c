"""Class 14, precision downgrade by flag: switch float32 matmuls to TF32 through the backend flags."""

import torch

torch.backends.cuda.matmul.allow_tf32 = True
torch.set_float32_matmul_precision("medium")


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
