"""Class 1, library bypass through the grader's own process: no import, no sys.modules, no file. The check stage
has loaded the reference module to build its weights; its Model is one of torch.nn.Module's subclasses, found by
walking the class hierarchy, and the candidate delegates to it."""

import torch


def _reference_class():
    for klass in torch.nn.Module.__subclasses__():
        if klass.__name__ == "Model" and klass.__module__ != __name__ and klass.__module__ != "__main__":
            return klass
    return None


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        found = _reference_class()
        return found.forward(self, x)
