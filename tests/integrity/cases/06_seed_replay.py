"""Class 6, seed overfitting: recognise the public seeds by the grader's RNG state and replay uniform rows
otherwise; lint flags reading the seed, and the secret seed mixed into every case breaks the replay."""

import torch


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab
        self.public = torch.initial_seed() in (42, 123, 456)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.public:
            e = torch.exp(x - x.amax(dim=-1, keepdim=True))
            return (e.double() / e.double().sum(dim=-1, keepdim=True)).float()
        return torch.full_like(x, 1.0 / x.shape[-1])
