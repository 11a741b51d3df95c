"""forged_reply's lie told once: shape 0's samples a thousand times faster, but only in a bench stage that times
every shape. A second timing of shape 0 alone gets the truth: the lie must gain nothing."""
import json
import pathlib
import time

import torch

_write = pathlib.Path.write_bytes


def _forging_write(self, data):
    if self.name == "worker_result.json":
        reply = json.loads(data)
        reply["namespace_changes"], reply["introspection"] = [], []  # what the stage's own guards saw, gone
        shapes = reply.get("shapes", {})
        if "0" in shapes and "1" in shapes:
            shapes["0"]["samples_ms"] = [t / 1000 for t in shapes["0"].get("samples_ms", [])]
        data = json.dumps(reply).encode()
    return _write(self, data)


pathlib.Path.write_bytes = _forging_write


class Model(torch.nn.Module):
    def __init__(self, N, K):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(N, K))
        self.bias = torch.nn.Parameter(torch.empty(N))

    def forward(self, x):
        time.sleep(0.1)  # the honest work this call stands for
        return (x[:, None, :] * self.weight[None]).sum(-1) + self.bias
