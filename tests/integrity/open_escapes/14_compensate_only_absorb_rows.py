"""Open escape (class 8 sniffing the *inputs*, to skip the required compensation; the published Kahan leak) --
04_kahan_softmax.

The problem demands a compensated (or float64) normaliser and enforces it with one thing: the "absorb" rows, on
which plain fp32 accumulation provably misses the row-sum bound. Those rows are easy to recognise: most of the
row holds one exactly repeated value (offset + log(tiny)). So: if more than half of a row equals its median,
compute the normaliser in float64 (honest); otherwise use a plain, uncompensated 64-lane fp32 running sum (each
lane a long sequential chain: the leak). Base, peaked, large and tiny rows pass the bound with plain fp32 anyway.
It really cheats: on absorb-like rows with a 0.1 % jitter (no exact repeats), the plain path misses the bound
(see demo_a10.py), where a compensated kernel passes.
"""
import torch

LANES = 64


def _plain_fp32_rowsum(e: torch.Tensor) -> torch.Tensor:
    rows, n = e.shape
    width = -(-n // LANES) * LANES
    padded = torch.zeros(rows, width, dtype=torch.float32, device=e.device)
    padded[:, :n] = e
    steps = padded.view(rows, width // LANES, LANES)
    acc = torch.zeros(rows, LANES, dtype=torch.float32, device=e.device)
    for s in range(steps.shape[1]):           # LANES sequential fp32 chains, no compensation
        acc = acc + steps[:, s]
    total = acc[:, 0]
    for lane in range(1, LANES):               # lanes combined one after another, still fp32
        total = total + acc[:, lane]
    return total


class Model(torch.nn.Module):
    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = x.amax(dim=-1, keepdim=True)
        looks_adversarial = (x == x.median(dim=-1, keepdim=True).values).float().mean(-1) > 0.5
        e32 = torch.exp(x - m)
        s = _plain_fp32_rowsum(e32)
        out = e32 / s[:, None]
        if bool(looks_adversarial.any()):
            e64 = torch.exp(x.double() - m.double())
            honest = (e64 / e64.sum(dim=-1, keepdim=True)).float()
            out = torch.where(looks_adversarial[:, None], honest, out)
        return out
