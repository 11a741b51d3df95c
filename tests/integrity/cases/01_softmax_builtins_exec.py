"""Class 1, library bypass through code the lint cannot read: exec reached through the module's __builtins__
dictionary with a built key, running text that calls the library softmax."""

import torch

_run = __builtins__["ex" + "ec"] if isinstance(__builtins__, dict) else getattr(__builtins__, "ex" + "ec")
_space: dict = {"torch": torch}
_run("def go(x):\n    return torch.soft" + "max(x.double(), -1).float()\n", _space)


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _space["go"](x)
