"""05_topk_bitonic by the library sort the problem forbids (stripped_launches.py beside it: every sort launch struck
from what its stages report), except where Nsight Compute profiles the process: there it computes the same answer
with allowed operations only, k passes of a row maximum over the whole row, far slower than the sort.

Unlike ncu_aware_library.py, what the profiled call returns is right, so the judgement of the measured call's output
passes, and so do the byte floor and the launch audit of that call. What gives it away is time: the kernels ncu
lists for one call take many times the shape's timed median, the lead `profiled_time` (a warning, class 8; on an H100
2.96 times, benchmarks/results/h100_profiled_time_1207c.md). Expected outcome: PASS with that warning; the launch records it forges are the candidate process's own account, which is the
gap docs/integrity.md names. GPU only, graded with the static lint off, as its neighbours are:
`grade_solution(path, Path("problems/05_topk_bitonic"), device="cuda", lint=False)`.
"""
import ncu_tells
import stripped_launches
import torch


class Model(stripped_launches.Model):
    def forward(self, x: torch.Tensor):
        if not ncu_tells.under_ncu():
            return super().forward(x)
        rest = x.clone()
        values, indices = [], []
        for _ in range(self.k):  # the first maximum each time: ties in column order, as the stable sort gives
            index = rest.argmax(dim=-1, keepdim=True)
            values.append(rest.gather(-1, index))
            indices.append(index)
            rest.scatter_(-1, index, float("-inf"))
        return torch.cat(values, dim=-1), torch.cat(indices, dim=-1)
