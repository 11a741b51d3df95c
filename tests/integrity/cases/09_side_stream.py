"""Class 9, side streams (GPU): launch the work on another CUDA stream and return without joining it, so events
recorded on the default stream miss the work. The grader's device-wide synchronise inside the timed interval
counts it anyway."""

import torch

_stream = None


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _stream
        if _stream is None:
            _stream = torch.cuda.Stream()
        out = torch.empty_like(x)
        _stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(_stream):
            for _ in range(20):  # enough work that skipping it would show in the timing
                e = torch.exp(x - x.amax(dim=-1, keepdim=True))
                out.copy_((e.double() / e.double().sum(dim=-1, keepdim=True)).float())
        return out
